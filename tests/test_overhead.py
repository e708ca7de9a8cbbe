"""The framework-overhead study (bench/studies/overhead/): its sizes and published ratios, the output comparison
that refuses another computation, and a smoke-sized run of all eight columns in both envs end to end."""

import math
import re

import numpy as np
import pytest
from conftest import env_python
from fakes import write_noise_study

from bench.base.stats import Ratio, t_quantile
from bench.judge import claims
from bench.judge.claims import HOLDS_FACTOR
from bench.record.results import Result, Run
from bench.studies.overhead.models import parameter_counts
from bench.studies.overhead.page import OverheadGroup, findings_table, load_overhead, render_overhead
from bench.studies.overhead.run import compare_outputs, overhead_cell, run_overhead
from bench.studies.overhead.spec import (
    BENCHMARKS,
    COLUMNS,
    FINDINGS,
    REFERENCE_COLUMN,
    get_size,
    published,
    published_ratio,
)


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
    # every finding names columns and benchmarks the study runs, and every Keras column has its plain baseline
    assert all(f.benchmark in BENCHMARKS and {f.numerator, f.denominator} <= set(COLUMNS) for f in FINDINGS)
    assert all(COLUMNS[c].baseline in COLUMNS for c, spec in COLUMNS.items() if spec.keras)


def with_interval(low, high, decidable=True, reason=""):
    """A ratio whose 95% interval is [low, high] (normal quantile: infinite degrees of freedom)."""
    half = (math.log(high) - math.log(low)) / 2
    return Ratio(math.sqrt(low * high), half / t_quantile(0.975, math.inf), math.inf, decidable, reason)


def test_a_published_ratio_holds_only_when_our_whole_interval_is_within_its_band():
    claimed = 2.0  # within 1.5x (1.33x to 3x) and its size within 1.5x (2 ** (1/1.5) to 2 ** 1.5): 1.59x to 2.83x
    assert claims.within(with_interval(1.7, 2.7), claimed, HOLDS_FACTOR) == "holds"
    assert claims.within(with_interval(1.4, 1.55), claimed, HOLDS_FACTOR) == "does not hold"  # within 1.5x, too small
    assert claims.within(with_interval(3.1, 4.0), claimed, HOLDS_FACTOR) == "does not hold"
    assert claims.within(with_interval(1.0, 1.3), claimed, HOLDS_FACTOR) == "does not hold"
    straddles = claims.within(with_interval(2.5, 3.5), claimed, HOLDS_FACTOR)  # reaches past 2.83x
    assert straddles.startswith("inconclusive (the interval reaches across an edge of 1.59–2.83×"), straddles
    assert claims.within(with_interval(1.5, 1.7), claimed, HOLDS_FACTOR).startswith("inconclusive")  # past 1.59x
    assert claims.within(None, claimed, HOLDS_FACTOR) == "not measured"
    # a ratio the Judge kept out of verdicts says why, however well its interval sits
    assert claims.within(with_interval(1.9, 2.1, False, "A noisy"), claimed, HOLDS_FACTOR) == "inconclusive (A noisy)"
    assert claims.above(with_interval(2.1, 3.0), 2.0) == "holds"
    assert claims.above(with_interval(1.5, 1.9), 2.0) == "does not hold"
    assert claims.above(with_interval(1.5, 2.5), 2.0) == "inconclusive (the interval contains 2.00×)"
    # ours: the interval where the ratio decides, the value alone where it does not
    assert claims.ours(with_interval(1.5, 2.8)) == "2.05× (1.50–2.80)"
    assert claims.ours(with_interval(0.0015, 0.0028, False, "why")) == "0.00205×"


def overhead_results(machine, ms=None):
    """The LLM generate columns of the study, each one process of 50 quiet calls (a 1% spread)."""
    ms = ms or {"pure_torch_eager": 20.0, "keras_torch_eager": 41.0, "pure_jax_eager": 420.0,
                "pure_torch_compile": 61.0, "pure_jax_jit": 70.0, "keras_jax_jit": 98.0}
    out = []
    for column, figure in ms.items():
        steps = [figure * (1 + 0.01 * ((i * 7) % 11 - 5) / 5) for i in range(50)]
        out.append(Result(overhead_cell("llm_generate_32", column, get_size("default")),
                          [Run(status="ok", timed_ms=steps, settings={"parity": "same token ids"})],
                          "ms/call", {"machine": machine}, "2026-01-01T00:00:00+00:00"))
    return out


def test_one_process_columns_are_inconclusive_until_the_machine_spread_is_measured(tmp_path, monkeypatch):
    import bench.judge.noise_file

    # only this test's own noise study
    monkeypatch.setattr(bench.judge.noise_file, "REPO_ROOT", tmp_path / "no-checkout")
    machine = {"os": "Linux", "cpu": "AMD EPYC", "logical_cpus": 2, "memory_gib": 23.5, "gpus": []}
    group = OverheadGroup("default", "CPU AMD EPYC (2 cores)", overhead_results(machine), results_dir=tmp_path)
    ratio = group.ratio("llm_generate_32", "keras_torch_eager", "pure_torch_eager")
    assert ratio.value == pytest.approx(41.0 / 20.0, rel=0.01) and not ratio.decidable
    table = "\n".join(findings_table(group))
    # the six findings of the benchmark measured here
    # the reason said once, under the table
    assert table.count("inconclusive [1]") == 6 and table.count(f"[1] {claims.ONE_PROCESS_COLUMN}") == 1
    assert "holds" not in table.replace("does not hold", "")
    assert claims.ours(ratio) in table and "2.05× (" not in table  # no interval that covers steps only
    write_noise_study(tmp_path, machine, "overhead-default", dof=40)
    group = OverheadGroup("default", "CPU AMD EPYC (2 cores)", overhead_results(machine), results_dir=tmp_path)
    rows = {line.split("|")[1].strip(): line.split("|")[-2].strip() for line in findings_table(group)[0].splitlines()}
    assert rows["Keras[torch] eager is about 2x pure torch eager on LLM generate"] == "holds"  # 2.05x (published 2.07)
    assert rows["pure JAX eager generate is about 20x pure torch eager"] == "holds"  # 21x
    assert rows["Keras[torch] eager is about 4.8x pure torch eager on LLM generate (before the PR)"] == "does not hold"
    assert rows["JAX jit is about 6x faster than JAX eager on LLM generate"] == "holds"  # 6.0x
    assert rows["Keras[jax] jit is about 1.4x pure JAX jit (LLM forward)"] == "not measured"  # no forward results


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
    verdicts = [line.split("|")[-2].strip() for line in findings_table(group)[0].splitlines()[2:]]
    assert "## smoke" in page and len(verdicts) == len(FINDINGS)
    # an inconclusive verdict gives its reason, or the number of the note under the table that says it once
    said = ("holds", "does not hold")
    assert all(v in said or re.match(r"inconclusive (\(|\[\d+\]$)", v) for v in verdicts), verdicts
    notes = findings_table(group)[2:]
    assert all(f"[{n}] " in "\n".join(notes) for n in re.findall(r"\[(\d+)\]", "".join(verdicts)))
