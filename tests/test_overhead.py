"""The framework-overhead study (issue 30, bench/overhead/): its sizes and published ratios, the output comparison
that refuses another computation, and a smoke-sized run of all eight columns in both envs end to end."""

import numpy as np
import pytest
from conftest import env_python

from bench.overhead.models import parameter_counts
from bench.overhead.run import compare_outputs, overhead_cell, run_overhead
from bench.overhead.spec import (
    BENCHMARKS,
    COLUMNS,
    FINDINGS,
    REFERENCE_COLUMN,
    get_size,
    holds,
    published,
    published_ratio,
)
from bench.report.overhead import load_overhead, render_overhead


def test_the_default_size_is_the_published_workload():
    """The issue's "~114K" CNN and "~2.1M" 2-layer LM, at batch 4, sequence 64, 32 new tokens, 10 + 50 calls."""
    size = get_size("default")
    assert parameter_counts(size) == {"cnn": 113_866, "llm": 2_093_032}
    assert (size.batch, size.sequence, size.new_tokens, size.layers, size.warmup, size.timed) == (4, 64, 32, 2, 10, 50)


def test_published_ratios_come_from_the_csv_and_the_verdict_is_a_factor_either_way():
    figures = published()
    assert len(figures) == 42  # 18 rows of the issue, 24 of the pull request
    pr = next(f for f in FINDINGS if f.numerator == "pure_jax_eager" and f.denominator == "pure_torch_eager")
    assert published_ratio(pr) == pytest.approx(
        figures[("pr-22660", "llm_generate_32", "pure_jax_eager")]
        / figures[("pr-22660", "llm_generate_32", "pure_torch_eager")]
    )
    assert (
        holds(2.9, 2.0) and holds(1.4, 2.0) and not holds(3.1, 2.0) and not holds(1.3, 2.0) and holds(None, 2.0) is None
    )
    # every finding names columns and benchmarks the study runs, and every Keras column has its plain baseline
    assert all(f.benchmark in BENCHMARKS and {f.numerator, f.denominator} <= set(COLUMNS) for f in FINDINGS)
    assert all(COLUMNS[c].baseline in COLUMNS for c, spec in COLUMNS.items() if spec.keras)


def test_another_computation_is_refused(tmp_path):
    reference = np.linspace(-2, 2, 24, dtype="float32").reshape(2, 3, 4)
    np.save(tmp_path / f"llm_forward__{REFERENCE_COLUMN}.npy", reference)
    np.save(tmp_path / "llm_forward__keras_jax_jit.npy", reference + 1e-6)
    np.save(tmp_path / "llm_forward__pure_jax_jit.npy", reference + 1e-2)
    assert compare_outputs("llm_forward", "keras_jax_jit", tmp_path)["parity"] == "within tolerance"
    assert compare_outputs("llm_forward", "pure_jax_jit", tmp_path)["parity"] == "mismatch"
    ids = np.arange(8).reshape(2, 4)
    np.save(tmp_path / f"llm_generate_32__{REFERENCE_COLUMN}.npy", ids)
    np.save(tmp_path / "llm_generate_32__keras_torch_eager.npy", ids.astype("int32"))
    swapped = ids.copy()
    swapped[1, 3] = 0
    np.save(tmp_path / "llm_generate_32__pure_jax_eager.npy", swapped)
    assert compare_outputs("llm_generate_32", "keras_torch_eager", tmp_path)["parity"] == "same token ids"
    assert compare_outputs("llm_generate_32", "pure_jax_eager", tmp_path)["tokens_differing"] == 1


def test_result_cells_name_benchmark_column_and_env():
    cell = overhead_cell("llm_generate_32", "keras_jax_jit", get_size("smoke"))
    assert (cell.backend, cell.model, cell.task, cell.variant, cell.profile) == (
        "jax",
        "llm_generate_32",
        "generate",
        "keras_jax_jit",
        "overhead-smoke",
    )


@pytest.mark.envs
@pytest.mark.slow
@pytest.mark.duration_s(120)
def test_smoke_run_times_every_column_on_the_same_computation(tmp_path):
    env_python("torch"), env_python("jax")
    results = run_overhead(get_size("smoke"), tmp_path, say=lambda line: None)
    assert len(results) == len(BENCHMARKS) * len(COLUMNS) == 24
    assert [(r.cell.model, r.cell.variant) for r in results if r.status != "ok"] == []
    for r in results:
        settings = r.runs[0].settings
        assert settings["parity"] in ("within tolerance", "same token ids"), (r.cell.key, settings)
        assert len(r.runs[0].timed_ms) == get_size("smoke").timed and r.runs[0].first_step_ms > 0
    (group,) = load_overhead(tmp_path)
    assert all(group.ratio(f.benchmark, f.numerator, f.denominator) for f in FINDINGS)
    page = render_overhead(tmp_path).read_text()
    assert "## smoke" in page and page.count("holds") + page.count("does not hold") >= len(FINDINGS)
