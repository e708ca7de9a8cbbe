import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.provenance import ENV_STAMP  # noqa: E402  (after the path, so the checkout's bench is found)

VENVS = Path(os.environ.get("BENCH_VENVS_DIR", REPO / ".venvs"))  # where the orchestrator looks too
IN_CI = os.environ.get("CI") == "true" or bool(os.environ.get("BENCH_REQUIRE_ENVS"))


def env_python(backend: str) -> Path:
    """The env's interpreter; in CI a missing env fails the test, locally it skips with the reason."""
    python = VENVS / backend / "bin" / "python"
    if not (VENVS / backend / ENV_STAMP).exists():
        if IN_CI:
            pytest.fail(f"environment {backend} is not built ({VENVS / backend}); run `make envs`")
        pytest.skip(f"environment {backend} is not built; run `make env BACKEND={backend}`")
    return python
