"""The whole smoke matrix, as `make bench-all` runs it: every supported cell `ok`, the rest `unsupported`.

BERT's cells are run by tests/test_bench_bert.py through `make bench`; this test runs the other four models on
all five backends through the same orchestrator, and checks what each kind of cell must show.
"""
import subprocess
import sys

import pytest

from bench.models.llm import CausalLMShape
from bench.results import load_all
from bench.workloads import get_model, plan_cells
from conftest import REPO, env_python

pytestmark = [pytest.mark.envs, pytest.mark.slow]
MODELS = ["sam", "stable_diffusion", "gemma", "mistral"]


def test_smoke_matrix(tmp_path):
    for backend in ("keras2", "tensorflow", "jax", "torch", "native-torch"):
        env_python(backend)
    results = tmp_path / "results"
    out = subprocess.run(
        [sys.executable, "-m", "bench", "run", "--profile", "smoke", "--model", ",".join(MODELS), "--results-dir", str(results)],
        cwd=REPO, capture_output=True, text=True, timeout=4 * 3600,
    )
    print(out.stdout[-6000:])
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-3000:]
    found = {r.cell.key: r for r in load_all(results)}
    planned = plan_cells("smoke", models=MODELS)
    assert sorted(found) == sorted(c.key for c in planned)

    for key, r in found.items():
        cell, run = r.cell, r.runs[0]
        if get_model(cell.model).why_unsupported(cell.backend):
            assert cell.backend == "keras2" and cell.model in ("gemma", "mistral") and r.status == "unsupported", key
            continue
        assert r.status == "ok", f"{key}: {r.message}"
        assert len(run.timed_ms) == cell.timed_steps and run.first_step_ms > 0, key
        settings = run.settings
        if cell.backend == "native-torch":
            # The compiled variant ran graphs dynamo captured (the cell fails otherwise); eager compiled nothing.
            assert (settings["compiled_graphs"] > 0) == (cell.variant == "compiled"), (key, settings["dynamo_counters"])
        else:
            assert settings["keras_version"].startswith(f"{2 if cell.backend == 'keras2' else 3}."), key
        if cell.task == "generate":
            shape: CausalLMShape = get_model(cell.model).shape("smoke")
            assert r.unit == "ms/call" and run.tokens_per_step == cell.batch_size * shape.new_tokens, key
            assert r.tokens_per_s() > 0
        if cell.model == "stable_diffusion" and cell.task == "predict":
            assert r.unit == "ms/denoising step" and len(run.windows_ms) == 2 * cell.total_steps, key
        if cell.model in ("gemma", "mistral"):
            dtypes = settings.get("parameter_dtypes") or [settings["backbone_dtype_policy"]]
            assert any("bfloat16" in d for d in dtypes), (key, dtypes)
