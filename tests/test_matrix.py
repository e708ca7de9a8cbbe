"""The whole smoke matrix, as `make bench-all` runs it, one test per cell named by its key: every supported cell
`ok`, the rest `unsupported`.

BERT's cells are run by tests/test_bench_bert.py through `make bench`; this runs the other four models on all
five backends through the same orchestrator, one cell per test, and checks what each kind of cell must show.

The 2024 stack's whole matrix (BERT included; marker stack2024) is its own tier, `make test-stack2024`: `make test`
would pass CI's hour with it. BENCH_KEEP_RESULTS=<dir> keeps every cell's result there (the tier's KEEP_RESULTS=),
so the committed 2024 results are the ones these tests checked.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, assert_paper_settings, env_python

from bench.catalogue.backends import get_backend
from bench.catalogue.registry import get_model, paper_models, plan_cells
from bench.models.llm import CausalLMShape
from bench.record.results import load_all

pytestmark = [pytest.mark.envs, pytest.mark.slow]
CELLS = plan_cells(
    "smoke", models=[m for m in paper_models() if m != "bert"]
)  # BERT: tests/test_bench_bert.py; the tuning study: tests/test_tuning.py
CELLS_2024 = plan_cells("smoke", stack="2024")


def duration_hint(cell) -> float:
    """Seconds the cell takes on a 2-core CPU: keras-cv's StableDiffusion cells (at the smoke widths, measured
    2026-12-01 beside other jobs: predict 122 to 217 s, fit 75 to 88 s; at SD v1's widths they took 400 and 80) and
    the rest, under about a minute."""
    if keras_cv_stable_diffusion(cell):
        return 150.0 if cell.task == "predict" else 80.0
    return 60.0 if cell.model == "stable_diffusion" or get_backend(cell.backend).family == "native-torch" else 0.0


def keras_cv_stable_diffusion(cell) -> bool:
    return cell.model == "stable_diffusion" and get_backend(cell.backend).family != "native-torch"


def repeats_a_ci_code_path(cell) -> bool:
    """Cells `make test` leaves to `make test-extended`, so that CI's run stays within its time: each repeats a code
    path another cell of CI's run takes. keras-cv's StableDiffusion on Keras 3 TensorFlow and torch (the same keras-cv
    model and harness code CI runs on JAX; those backends run the other models in CI); generate at batch 1 (CI
    runs the same generate loop at batch 2); native PyTorch's compiled training and predict steps
    (`TorchWorkload.training_step` and the compiled predict step) on StableDiffusion, Mistral, Gemma fit and SAM:
    native BERT's compiled fit and predict run them in CI (tests/test_bench_bert.py's shared run), on models whose
    eager cells CI runs, and native Gemma's compiled generate runs the compiled generate loop of transformers' causal
    LMs; Mistral on Keras 3 TensorFlow and torch (the Keras 3 causal LM's fit step and generate loop that Gemma runs
    on those backends in CI, on a model CI builds and runs on JAX); Gemma fit on Keras 3 JAX (the same Keras 3 fit
    step CI runs for Gemma on TensorFlow and torch, and JAX's fit loop that Mistral and BERT take in CI); Keras SAM
    on every Keras 3 backend but SAM fit on TensorFlow and SAM predict on JAX (the same Keras SAM for each task, and
    each backend's fit and predict loops that its other cells take in CI)."""
    return (
        (keras_cv_stable_diffusion(cell) and cell.backend in ("tensorflow", "torch"))
        or (cell.task == "generate" and cell.batch_size == 1)
        or (cell.variant == "compiled" and (cell.model, cell.task) != ("gemma", "generate"))
        or (cell.model == "mistral" and cell.backend in ("tensorflow", "torch"))
        or (cell.model == "gemma" and cell.task == "fit" and cell.backend == "jax")
        or (cell.model == "sam" and get_backend(cell.backend).keras_major == 3
            and (cell.backend, cell.task) not in (("tensorflow", "fit"), ("jax", "predict")))
    )


def params():
    """keras-cv's StableDiffusion cells carry the marker keras_cv_sd: `make test` runs them one after another beside
    the other slow tests. Two of them side by side on 2 cores took 15 min each instead of 6 (measured 2026-11-23, at
    SD v1's widths: they take the smoke widths since).
    The marker extended: not in `make test` (see repeats_a_ci_code_path), and every 2024-stack cell."""
    today = [
        pytest.param(
            c,
            id=c.key,
            marks=[pytest.mark.duration_s(duration_hint(c))]
            + ([pytest.mark.keras_cv_sd] if keras_cv_stable_diffusion(c) else [])
            + ([pytest.mark.extended] if repeats_a_ci_code_path(c) else []),
        )
        for c in CELLS
    ]
    return today + [pytest.param(c, id=c.key, marks=[pytest.mark.stack2024, pytest.mark.extended]) for c in CELLS_2024]


@pytest.mark.parametrize("cell", params())
def test_smoke_cell(cell, tmp_path):
    reason = get_model(cell.model).why_cell_unsupported(cell)
    if not reason:
        env_python(cell.env)
    results = Path(os.environ.get("BENCH_KEEP_RESULTS") or tmp_path / "results")
    args = [
        "--profile",
        "smoke",
        "--repeats",  # one process: the test checks the cell's code path, not the spread across processes
        "1",
        "--stack",
        cell.stack,
        "--backend",
        cell.backend,
        "--model",
        cell.model,
        "--task",
        cell.task,
        "--batch-size",
        str(cell.batch_size),
    ]
    backend = get_backend(cell.backend)
    if len(backend.variants) > 1:
        args += ["--variant", cell.variant]
    out = subprocess.run(
        [sys.executable, "-m", "bench", "run", *args, "--results-dir", str(results)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=2400,
    )  # beyond the smoke cell timeout (1800 s): a hung cell is a recorded status
    found = [r for r in load_all(results) if r.cell.key == cell.key]  # the key names the stack
    # `bench run` exits 1 for an unsteady cell too, which is reported (below), not a failure
    assert out.returncode == 0 or [r.status for r in found] == ["unsteady"], out.stdout[-6000:] + out.stderr[-3000:]
    (r,) = found
    assert r.unit == cell.task_spec.unit
    if reason:
        # Only the cells the model's spec declares unsupported (as published, or by a rule of its own with its
        # reason), never a missing implementation.
        spec = get_model(cell.model)
        declared = cell.backend in spec.unsupported or any(rule.matches(cell) for rule in spec.unsupported_cells)
        assert declared and r.status == "unsupported" and r.message == reason, r.message
        return
    run = r.runs[0]
    if r.status == "unsteady":  # a derived median that noise made impossible: reported, raw windows kept
        assert cell.task_spec.derivation and run.windows_ms, r.message
        return
    assert r.status == "ok", r.message
    # sampled to the profile's precision: the loop (a framework's too) ran past the fewest steps and stopped early
    sampling = run.sampling
    assert len(run.timed_ms) == sampling["steps"] and cell.timed_steps <= sampling["steps"] <= cell.max_timed_steps
    assert sampling["reached"] or sampling["stopped_by"] in ("max_s", "max_steps"), sampling
    assert run.first_step_ms > 0
    assert run.first_step_contains == cell.task_spec.first_step_contains
    steps_run = 1 + run.steadiness["warmup_steps_run"] + len(run.timed_ms)
    assert len(run.compile_events) == steps_run * cell.task_spec.windows_per_step
    settings = run.settings
    assert settings["driver"] == cell.task_spec.driver(backend.family)
    if backend.family == "native-torch":
        # The compiled variant ran graphs dynamo captured (the cell fails otherwise); eager compiled nothing.
        assert (settings["compiled_graphs"] > 0) == (cell.variant == "compiled"), settings["dynamo_counters"]
        assert settings["compile"]["graphs"] == settings["compiled_graphs"], settings["compile"]
    else:
        assert settings["keras_version"].startswith(f"{backend.keras_major}.")
    assert_paper_settings(cell, settings)  # what v0.0.5 ran, recorded
    if cell.task == "generate":
        shape: CausalLMShape = get_model(cell.model).shape("smoke")
        assert r.unit == "ms/call" and run.tokens_per_step == cell.batch_size * shape.new_tokens
        assert r.tokens_per_s() > 0
        assert_generate_split(run, shape, backend.family)
    if cell.model == "stable_diffusion" and cell.task == "predict":
        assert r.unit == "ms/denoising step" and run.derived and len(run.windows_ms) == 2 * steps_run
    if getattr(get_model(cell.model).shape("smoke"), "dtype", None) == "bfloat16":
        dtypes = settings.get("parameter_dtypes") or [settings["backbone_dtype_policy"]]
        assert any("bfloat16" in d for d in dtypes), dtypes


def assert_generate_split(run, shape, family: str) -> None:
    """Every generate result carries TTFT, TPOT and the agreement check, from raw windows it keeps, and
    the work each phase did (keras-hub's prefill computes the whole padded length, transformers' the prompt)."""
    split = run.generate_split
    assert split and split["ttft_ms"] > 0 and split["tpot_ms"] is not None, split
    assert split["whole_call_ms"] == run.stats().median  # the published ms/call figure is the whole call's, unchanged
    agreement = split["agreement"]
    assert agreement["tolerance"] > 0 and agreement["relative_error"] >= 0 and isinstance(agreement["agrees"], bool)
    parts = len(split["split_tokens"])
    timed_parts = split["sampling"]["steps"]  # the one-token and partial calls sample on their own (drive_generate)
    assert len(split["windows_ms"]) == len(split["tags"]) == parts * (1 + split["warmup_steps_run"] + timed_parts)
    assert split["prompt_tokens"] == shape.prompt_length
    assert split["prefill_positions"] == (shape.generate_length if family == "keras" else shape.prompt_length)
    assert len(split["decode_attends_over"]) == split["decode_steps_per_call"]
