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


def assert_paper_settings(cell, settings: dict) -> None:
    """The paper-relevant settings (issue 13) a cell's result records, against its shape: what v0.0.5 ran."""
    from bench.registry import get_model

    shape = get_model(cell.model).shape(cell.profile)
    native = cell.backend == "native-torch"
    if native:
        assert settings["attention_implementation"], settings
    if native and cell.model == "bert":
        expected = "sdpa" if cell.variant == "sdpa" else shape.attention_implementation  # sdpa: issue 13's variant
        assert settings["attention_implementation"] == expected, settings
    if native and cell.model in ("sam", "stable_diffusion") and cell.task == "fit":
        compiled = "train_step (forward, loss, backward, Adam)" if cell.variant == "compiled" else None
        assert settings["compiled_function"] == compiled, settings
    if cell.model == "sam" and cell.task == "predict":  # v0.0.5's two points and labels [1, 2] (F8)
        assert (settings["prompt_points"], settings["prompt_labels"]) == (shape.prompt_points, shape.prompt_labels), settings
    if not native and cell.model == "bert":  # v0.0.5 asked for XLA (use_jit()) except on Keras 3's torch
        assert settings["jit_compile"] is (cell.backend != "torch"), settings
    if cell.model in ("gemma", "mistral"):
        if native and cell.task == "fit":
            assert settings["lora_dtypes"] == [shape.dtype], settings  # peft 0.9.0's adapters in the base dtype
        if not native:
            assert settings["global_dtype_policy"] == shape.dtype, settings  # v0.0.5 set the policy globally (F5)
            assert settings["keras_fused_attention"] == shape.keras_fused_attention, settings
            if not shape.keras_fused_attention and cell.variant != "fused-attention":
                assert settings["fused_attention"] is False, settings
        if cell.task == "generate":
            assert (settings["prompt_length"], settings["bos_token_id"]) == (shape.prompt_length, shape.bos_token_id)


def pytest_collection_modifyitems(items):
    """Longest first (marker duration_s, else 0), otherwise in collection order: in `make test`'s two slow
    processes the long tests then start early and do not leave one process running alone at the end."""
    def hint(item) -> float:
        marker = item.get_closest_marker("duration_s")
        return float(marker.args[0]) if marker else 0.0

    items.sort(key=lambda item: -hint(item))  # stable: equal hints keep their order
