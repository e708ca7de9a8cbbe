"""The orchestrator's noise gates at write time, its run id, and the line it shows after a cell."""
import re

from fakes import bench_env, run_bench, smoke_run

from bench.catalogue.registry import Cell
from bench.record.results import Result, Run, load_all
from bench.run.runner import record_noise


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
    # every reading beside a process says how it settled (bench/measure/drift.py), the figure it recorded its settled
    # one
    for run in (run for r in loaded for run in r.runs):
        settling = run.reference["settling"]
        assert (settling["before"]["ms"], settling["after"]["ms"]) == (run.reference["before_ms"],
                                                                       run.reference["after_ms"])  # fmt: skip
        assert all(side["blocks"] >= 2 or not side["settled"] for side in settling.values())
    assert re.search(r"-> \S+: ok, \S+ ms/step, 95% interval \S+–\S+ \(2 processes\)", out.stdout), out.stdout
    again = run_bench(args, bench_env(venvs))  # another invocation: another run id
    assert again.returncode == 0
    assert {r.provenance["run_id"] for r in load_all(results)}.isdisjoint(run_ids | {loaded[0].provenance["run_id"]})


# ---------------------------------------------------------------- the start reading, the device, the throttle

H200 = "env-current/py3.12-torch2.11.0-jax0.11.2-22dd5d6b"


def test_no_committed_h200_process_is_set_aside_by_its_runs_cold_start_reading():
    """The first GPU session's drift probe read 4.1-4.9x its quiet value as each orchestrator process started, and
    within 1.64x after every process: the first process of each run is judged on the reading after it."""
    from committed import committed_results

    from bench.judge import Judge

    for folder in (committed_results() / H200, committed_results() / "gpu-check" / "1x-nvidia-h200" / "cells"):
        results = load_all(folder)
        judge = Judge(results)
        for result in results:
            start = result.start_ms()
            assert not judge.noise(result).noisy and judge.set_aside(result) == [], (result.cell.key, start)
            first = result.runs[0]
            if first.reference["before_ms"] == start and start > 0.4:  # a cold start reading, recorded
                assert first.gated_reference(start, first=True) == {"after_ms": first.reference["after_ms"]}


def test_a_reading_still_warming_up_gates_nothing_and_an_old_records_start_reading_neither():
    settled = {"ms": 0.35, "cold_ms": 0.4, "blocks": 2, "settled": True}
    cold = ok_run(0.35)  # the before reading still speeding up when its warm-up ended: cold, recorded, not gated
    cold.reference = {"before_ms": 3.0, "after_ms": 0.35, "settling": {
        "before": {"ms": 3.0, "cold_ms": 9.0, "blocks": 12, "settled": False}, "after": settled}}  # fmt: skip
    assert not cold.noise_gates(0.3).noisy
    loaded = ok_run(0.35)  # a loaded machine settles where it is: its slow reading gates the process
    loaded.reference = {"before_ms": 3.0, "after_ms": 0.35, "settling": {
        "before": {"ms": 3.0, "cold_ms": 3.1, "blocks": 2, "settled": True}, "after": settled}}  # fmt: skip
    assert loaded.noise_gates(0.3).noisy
    assert loaded.noise_gates(0.3, start_ms=3.0, first=True).noisy  # a warmed record: no start-reading rule
    old = ok_run(0.35)  # a record from before readings were warmed: its first process's before reading is its start
    old.reference = {"before_ms": 3.0, "after_ms": 0.35}
    assert not old.noise_gates(0.3, start_ms=3.0, first=True).noisy
    assert old.noise_gates(0.3, start_ms=3.0).noisy and old.noise_gates(0.3, start_ms=2.9, first=True).noisy
    late = ok_run(3.0)  # the reading after a process gates it, whatever came before
    assert late.noise_gates(0.3, start_ms=0.3, first=True).noisy


def test_a_gpu_cells_device_reference_and_throttle_reasons_gate_it():
    def gpu_run(before, after, throttle="0x0000000000000000"):
        run = ok_run(0.3)
        run.device_reference = {"before": {"ms": before}, "after": {"ms": after}}
        state = {"clocks_throttle_reasons.active": throttle}
        run.gpu_state = {"gpu": "GPU-0", "start": state, "end": state}
        return run

    steady, slow = gpu_run(0.200, 0.204), gpu_run(0.201, 0.262)
    record_noise([steady, slow], [0.3])
    assert steady.noise["noisy"] is False and steady.noise["device_quiet_ms"] == 0.2
    assert slow.noise["noisy"] and "the device reference read 0.262 ms beside it, 1.31x its quiet 0.2 ms" in \
        slow.noise["reasons"][0]  # fmt: skip
    hot, capped = gpu_run(0.2, 0.2, "0x0000000000000020"), gpu_run(0.2, 0.2, "0x0000000000000004")
    record_noise([hot, capped], [0.3])
    assert hot.noise["noisy"] and "sw_thermal_slowdown" in hot.noise["reasons"][0]
    assert not capped.noise["noisy"]  # the power cap a GPU at full load runs at: recorded, not a disturbance
