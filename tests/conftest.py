import os
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from lanes import duration_hint, keep_lane  # noqa: E402

from bench.base.provenance import ENV_STAMP, venvs_dir  # noqa: E402  (after the path, so the checkout's bench is found)

VENVS = venvs_dir()  # where the orchestrator looks too
IN_CI = os.environ.get("CI") == "true" or bool(os.environ.get("BENCH_REQUIRE_ENVS"))
# The tests check code paths, not compile times: every cell they run shares one compile cache, kept across sessions
# (each cell's first process would otherwise compile torch.compile's smoke models cold, about 40 s a cell here).
os.environ.setdefault("BENCH_COMPILE_CACHE_DIR", str(Path(tempfile.gettempdir()) / "bench-test-compile-cache"))


def env_python(backend: str) -> Path:
    """The env's interpreter; in CI a missing env fails the test, locally it skips with the reason."""
    python = VENVS / backend / "bin" / "python"
    if not (VENVS / backend / ENV_STAMP).exists():
        if IN_CI:
            pytest.fail(f"environment {backend} is not built ({VENVS / backend}); run `make envs`")
        pytest.skip(f"environment {backend} is not built; run `make env BACKEND={backend}`")
    return python


def assert_paper_settings(cell, settings: dict) -> None:
    """The paper-relevant settings a cell's result records: what its model says v0.0.5 ran
    (ModelSpec.expected_settings, declared in bench/models/<name>/), and on native PyTorch the attention it used."""
    from bench.catalogue.registry import get_model

    if cell.backend == "native-torch":
        assert settings["attention_implementation"], settings
    for name, want in get_model(cell.model).expected_settings(cell).items():
        got = settings[name]
        assert (got is want) if isinstance(want, bool) or want is None else (got == want), (name, got, want, settings)


def pytest_addoption(parser):
    parser.addoption("--lane", default=None, metavar="K/N",
                     help="run lane K of N of the selected tests, as make test does (tests/lanes.py)")
    parser.addoption("--lanes-json", default=None, metavar="PATH",
                     help="with --lane: write the selected tests and every lane's tests to PATH (one collection "
                          "shows the whole split)")


@pytest.hookimpl(trylast=True)  # after -m's selection, so that a lane splits what was selected
def pytest_collection_modifyitems(config, items):
    """Longest first (marker duration_s, else 0), otherwise in collection order: in `make test`'s two processes the
    long tests then start early and do not leave one process running alone at the end. With --lane K/N, only that
    lane's tests (tests/lanes.py)."""
    items.sort(key=lambda item: -(duration_hint(item) or 0.0))  # stable: equal hints keep their order
    if config.getoption("--lane"):
        keep_lane(config, items, config.getoption("--lane"), config.getoption("--lanes-json"))


@pytest.fixture
def venvs(tmp_path):
    """Fake envs of every backend (tests/fakes.py): the orchestrator's tests without a framework."""
    from fakes import make_fake_envs

    from bench.catalogue.backends import BACKENDS

    return make_fake_envs(tmp_path / "venvs", list(BACKENDS))


class SharedRuns:
    """The shared smoke runs of this test run (tests/shared_run.py), each run at most once and read by many tests."""

    def __init__(self):
        self.mine = {}

    def __call__(self, name: str):
        """The shared run `name` (a backend, or jax-2024), its env checked first as a test's own would be."""
        from shared_run import RUNS, env_name, shared_run

        env_python(env_name(*RUNS[name]))  # fails in CI, skips locally, when the env is missing
        return shared_run(name, mine=self.mine)


@pytest.fixture(scope="session")
def shared_smoke():
    """`shared_smoke("jax")`: the shared smoke run of BERT on that backend, read-only (SharedRun.copy to write).
    tests/lanes.py keeps the tests using it in one lane, so that one lane runs it and none waits for it."""
    return SharedRuns()
