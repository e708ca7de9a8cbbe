"""The orchestrator's noise gates at write time, its run id, and the line it shows after a cell."""
import re

from fakes import bench_env, run_bench, smoke_run

from bench.registry import Cell
from bench.results import Result, Run, load_all
from bench.runner import record_noise


def ok_run(after_ms: float, timed=(10.0, 10.5, 11.0, 10.2, 10.8, 10.4)) -> Run:
    return Run(status="ok", timed_ms=list(timed), first_step_ms=400.0,
               reference={"before_ms": 0.3, "after_ms": after_ms})


def test_each_ok_run_is_judged_against_the_quietest_reading_so_far():
    quiet, disturbed = ok_run(0.35), ok_run(3.0)
    failed = Run(status="oom", message="out of memory")
    record_noise([quiet, disturbed, failed], [0.5, 0.3, 0.35, 3.0])
    assert quiet.noise == {"noisy": False, "reasons": [], "quiet_reference_ms": 0.3}
    assert disturbed.noise["noisy"] and disturbed.noise["quiet_reference_ms"] == 0.3
    assert "the drift probe read 3 ms beside it, 10.0x its quiet 0.3 ms" in disturbed.noise["reasons"][0]
    assert failed.noise is None
    spread = ok_run(0.3, timed=(10.0, 30.0, 10.0, 31.0, 10.0, 29.0))  # steps 3x apart: a spread gate
    record_noise([spread], [0.3])
    assert spread.noise["noisy"] and "p10-p90 spread" in spread.noise["reasons"][0]


def test_describe_shows_the_interval_the_sampling_outcome_and_the_noise():
    runs = [ok_run(0.3), ok_run(3.0), ok_run(0.3, timed=(10.1, 10.6, 11.1, 10.3, 10.9, 10.5))]
    runs[0].sampling = {"rule": {"target_half_width": 0.02, "min_steps": 3, "min_s": 0.5, "max_steps": 2000,
                                 "max_s": 5.0}, "steps": 6, "timed_s": 0.06, "half_width": 0.015,
                        "interval": [10.2, 10.8], "reached": True, "stopped_by": "precision"}
    runs[1].sampling = {**runs[0].sampling, "reached": False, "stopped_by": "max_s"}
    record_noise(runs, [0.3])
    cell = Cell("jax", "bert", "fit", 2, "smoke", "default", 1, 6)
    provenance = {"git": {}, "machine": {}, "repeats_planned": 3}
    result = Result(cell, runs, "ms/step", provenance, "2026-11-25T03:00:00+00:00")
    line = result.describe()
    low, high = result.estimate().interval()
    assert f"{result.figure():.4g} ms/step, 95% interval {low:.4g}–{high:.4g} (3 processes)" in line
    assert "sampling: reached 2% (1 of 2), target not reached: capped at 5 s (1 of 2)" in line
    assert "noisy: process 2: the drift probe read 3 ms" in line
    one = Result(cell, [ok_run(0.3)], "ms/step", {"git": {}, "machine": {}}, "2026-11-25T03:00:00+00:00")
    assert "(one process, steps only)" in one.describe() and "noisy" not in one.describe()


def test_a_run_records_its_noise_gates_and_one_run_id_in_every_result(venvs, tmp_path):
    results = tmp_path / "results"
    args = smoke_run("--backend", "jax,torch", "--model", "bert", "--repeats", "2", results=results)
    out = run_bench(args, bench_env(venvs))
    assert out.returncode == 0, out.stderr + out.stdout
    loaded = load_all(results)
    assert len(loaded) == 4
    run_ids = {r.provenance["run_id"] for r in loaded}
    assert len(run_ids) == 1 and re.fullmatch("[0-9a-f]{32}", run_ids.pop())
    for result in loaded:
        readings = [result.provenance["reference"]["start_ms"]] + [r.reference["after_ms"] for r in result.runs]
        for run in result.runs:
            assert set(run.noise) == {"noisy", "reasons", "quiet_reference_ms"}
            assert 0 < run.noise["quiet_reference_ms"] <= min(readings)
    assert re.search(r"-> \S+ ms/step, 95% interval \S+–\S+ \(2 processes\)", out.stdout), out.stdout
    again = run_bench(args, bench_env(venvs))  # another invocation: another run id
    assert again.returncode == 0
    assert {r.provenance["run_id"] for r in load_all(results)}.isdisjoint(run_ids | {loaded[0].provenance["run_id"]})
