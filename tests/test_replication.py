"""Processes until decided, as the orchestrator runs them (bench/run/runner.py with a sequential rule): fake cells whose
processes differ the same way in every run (tests/fakes.py FAKE_SCALE_<BACKEND>, FAKE_JITTER)."""
import math

import pytest
from fakes import make_fake_envs

from bench.base import stats
from bench.catalogue.registry import plan_cells
from bench.judge import Judge
from bench.judge.replication import SequentialRule
from bench.measure.drift import Reading
from bench.record.results import load_all

RULE = SequentialRule(3, 6)


def run(tmp_path, monkeypatch, scale: float, jitter: float, rule=RULE, disturb_torch: str = ""):
    from bench.run import runner

    # 60 steps a process: the step noise of the fake's 10, 11, 12 ms pattern well below the processes' spread
    cells = plan_cells("smoke", backends=["jax", "torch"], models=["bert"], tasks=["fit"], timed_steps=60)
    monkeypatch.setattr("bench.run.env_lookup.VENVS_DIR", make_fake_envs(tmp_path / "venvs", ["jax", "torch"]))
    # a loaded machine's drift gate is not what this tests
    monkeypatch.setattr(runner, "reading", lambda: Reading(1.0, 1.0, 2, True))
    monkeypatch.setenv("FAKE_SCALE_TORCH", str(scale))
    monkeypatch.setenv("FAKE_JITTER", str(jitter))
    monkeypatch.setenv("FAKE_DISTURB_TORCH", disturb_torch)
    lines = []
    runner.run_cells(cells, tmp_path / "results", runner.RunOptions(repeats=rule.first, echo=lines.append, rule=rule))
    results = {r.cell.backend: r for r in load_all(tmp_path / "results")}
    return results, lines


def test_a_comparison_decided_at_the_first_look_gets_no_more_processes(tmp_path, monkeypatch):
    results, lines = run(tmp_path, monkeypatch, scale=3.0, jitter=0.03)
    assert [len(r.runs) for r in results.values()] == [3, 3]
    assert not any("one more process" in line for line in lines)
    assert all(r.provenance["replication"] == RULE.to_dict() for r in results.values())


def test_an_undecided_comparison_that_the_cap_can_decide_gets_one_more_process_a_round(tmp_path, monkeypatch):
    # 9% apart, each cell's processes 3% apart: at 3 processes the 99.2% interval still covers 1; at 4 it does not
    results, lines = run(tmp_path, monkeypatch, scale=1.09, jitter=0.03)
    assert [len(r.runs) for r in results.values()] == [4, 4]
    assert sum("one more process, for Keras 3 (JAX) vs Keras 3 (PyTorch) (undecided)" in line for line in lines) == 2
    header = next(line for line in lines if "repeat 4" in line)
    assert "repeat 4 (up to 6, while undecided)" in header
    judge = Judge(list(results.values()))
    found = judge.ratio(results["jax"], results["torch"])
    assert found.confidence == pytest.approx(RULE.confidence) and stats.verdict(found) == stats.SLOWER
    assert found.to_dict()["confidence"] == pytest.approx(1 - 0.05 / 4)


def test_a_comparison_that_has_ruled_out_a_difference_worth_finding_adds_no_more(tmp_path, monkeypatch):
    # 2% apart with 4% between processes: neither within the 5% band nor clear of 1 at any count up to the cap; it
    # goes on while its interval holds the rule's 10% planning effect, and stops, before the cap, once it does not
    results, lines = run(tmp_path, monkeypatch, scale=1.02, jitter=0.04)
    counts = [len(r.runs) for r in results.values()]
    assert counts[0] == counts[1] < RULE.cap
    judge = Judge(list(results.values()))
    found = judge.ratio(results["jax"], results["torch"])
    assert stats.verdict(found) == stats.INCONCLUSIVE
    low, high = found.interval()
    assert 1 / (1 + RULE.planning_effect) <= low and high <= 1 + RULE.planning_effect


def test_a_fixed_count_is_judged_at_95_percent_as_before(tmp_path, monkeypatch):
    results, _ = run(tmp_path, monkeypatch, scale=1.12, jitter=0.03, rule=SequentialRule(3, 3))
    assert [len(r.runs) for r in results.values()] == [3, 3]
    found = Judge(list(results.values())).ratio(results["jax"], results["torch"])
    assert found.confidence == pytest.approx(0.95) and math.isclose(found.value, 1.12, rel_tol=0.02)


def test_a_run_ends_saying_which_rows_are_decided_and_why_the_others_are_not(tmp_path):
    import re

    from fakes import bench_env, run_bench, smoke_run

    venvs = make_fake_envs(tmp_path / "venvs", ["jax", "torch"])
    env = {**bench_env(venvs), "FAKE_SCALE_TORCH": "1.02", "FAKE_JITTER": "0.05"}
    out = run_bench(smoke_run("--backend", "jax,torch", "--model", "bert", results=tmp_path / "r"), env)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "processes: 3 processes a cell, judged at 95%" in out.stdout
    tail = out.stdout[out.stdout.index("rows decided:"):].splitlines()
    assert re.match(r"rows decided: 0 of 2 \(smoke profile — ", tail[0])  # 2% apart, processes 5% apart
    assert len(tail) == 3 and all(line.startswith("  undecided: BERT ") for line in tail[1:])


def test_the_rows_decided_are_the_tables_own_verdicts(tmp_path):
    from test_table import make, write_all

    from bench.judge.comparisons import decided_lines

    results = write_all(tmp_path / "results", [
        make("jax", "bert", "fit", 32, 110.0), make("tensorflow", "bert", "fit", 32, 165.0),
        make("jax", "bert", "predict", 256, 110.0), make("tensorflow", "bert", "predict", 256, 112.2),
    ])  # fmt: skip
    lines = decided_lines(results, plan_cells("paper", backends=["jax", "tensorflow"], models=["bert"]))
    assert lines[0] == "rows decided: 1 of 2 (paper profile — 1x NVIDIA A100-SXM4-40GB)"
    assert lines[1].startswith("  undecided: BERT predict (batch 256): Keras 3 (JAX) vs Keras 3 (TensorFlow): 1.02x")
    assert lines[1].endswith("neither clear of 1 nor within 5%") and len(lines) == 2


def test_a_disturbed_process_is_replaced_and_set_aside_not_the_whole_comparison(tmp_path, monkeypatch):
    # torch's second process runs its second half 1.5x slow: its noise gate trips. One more process takes its
    # place (3 + 1), it is set aside when judged, and the 12% difference is decided on the other three.
    results, lines = run(tmp_path, monkeypatch, scale=1.12, jitter=0.01, disturb_torch="1")
    assert [len(r.runs) for r in results.values()] == [3, 4]
    assert sum("one more process, in place of 1 disturbed one" in line for line in lines) == 1
    judge = Judge(list(results.values()))
    kept, aside = judge.kept_runs(results["torch"])
    assert len(kept) == 3 and aside == [next(a for a in aside if a.startswith("process 2 set aside (its second half"))]
    assert results["torch"].noise().noisy and not judge.noise(results["torch"]).noisy
    found = judge.ratio(results["jax"], results["torch"])
    assert stats.verdict(found) == stats.SLOWER and math.isclose(found.value, 1.12, rel_tol=0.02), found
    assert "B: process 2 set aside" in found.note
    # a fixed count stays fixed: nothing replaces the disturbed process, and two undisturbed ones are too few to
    # judge on alone (a Welch interval of a degree of freedom or two), so the cell is noisy, as before
    results, lines = run(tmp_path / "fixed", monkeypatch, scale=1.12, jitter=0.01, rule=SequentialRule(3, 3),
                         disturb_torch="1")
    assert [len(r.runs) for r in results.values()] == [3, 3] and not any("in place of" in line for line in lines)
    judge = Judge(list(results.values()))
    assert judge.set_aside(results["torch"]) == [] and judge.noise(results["torch"]).noisy
    # one unsteady process of three is a disturbance, not a change of the side: "noisy", not "possible change"
    assert judge.ratio(results["jax"], results["torch"]).reason.startswith("B noisy: process 2: its second half")


def test_a_cell_disturbed_throughout_on_one_side_is_a_possible_change_not_noise(tmp_path, monkeypatch):
    # every torch process disturbed: none can be set aside; the replacements stop at the cap (6), which counts them
    results, lines = run(tmp_path, monkeypatch, scale=1.0, jitter=0.01, disturb_torch=",".join(map(str, range(12))))
    assert [len(r.runs) for r in results.values()] == [3, 6]
    judge = Judge(list(results.values()))
    assert judge.set_aside(results["torch"]) == [] and judge.noise(results["torch"]).noisy
    found = judge.ratio(results["jax"], results["torch"])
    assert stats.verdict(found) == stats.INCONCLUSIVE
    assert found.reason.startswith("possible change on B, or noise: process 1: its second half"), found.reason
    assert found.reason.endswith("A steady")


def run_against(tmp_path, monkeypatch, scale: float, jitter: float) -> tuple[list, list[str]]:
    """A: the torch BERT fit cell at scale 1 (6 processes: B's added ones can narrow only B's part of the interval);
    then B at `scale`, run against A's folder under RULE.
    A's folder holds a noise study of this machine whose rounds agree (no run-to-run spread), so that the two runs
    are judged as `make compare` judges them and nothing else keeps them apart."""
    import json

    from bench.base.provenance import machine_info
    from bench.judge.noise_file import NOISE_DIR, NOISE_FORMAT, noise_file_name
    from bench.run import runner

    cells = plan_cells("smoke", backends=["torch"], models=["bert"], tasks=["fit"], timed_steps=60)
    monkeypatch.setattr("bench.run.env_lookup.VENVS_DIR", make_fake_envs(tmp_path / "venvs", ["torch"]))
    monkeypatch.setattr(runner, "reading", lambda: Reading(1.0, 1.0, 2, True))
    monkeypatch.setenv("FAKE_JITTER", str(jitter))
    monkeypatch.setenv("FAKE_SCALE_TORCH", "1.0")
    runner.run_cells(cells, tmp_path / "a", runner.RunOptions(repeats=6, echo=lambda line: None))
    study = tmp_path / "a" / NOISE_DIR / noise_file_name(machine_info())
    study.parent.mkdir(parents=True)
    rounds = [{"medians_ms": {"A": [10.0, 10.2, 9.8], "B": [10.1, 9.9, 10.0]}} for _ in range(3)]
    study.write_text(json.dumps({"format": NOISE_FORMAT, "settings": {"profile": "smoke"},
                                 "process_spread": {"log_sd": 0.03, "dof": 20},
                                 "cells": [{"key": cells[0].key, "rounds": rounds}]}))  # fmt: skip
    monkeypatch.setenv("FAKE_SCALE_TORCH", str(scale))
    lines: list[str] = []
    options = runner.RunOptions(repeats=RULE.first, echo=lines.append, rule=RULE, against=tmp_path / "a")
    runner.run_cells(cells, tmp_path / "b", options)
    return load_all(tmp_path / "b"), lines


def test_a_cell_compared_with_an_earlier_run_gets_processes_while_that_comparison_is_undecided(tmp_path, monkeypatch):
    # 4% slower than the earlier run's 6 processes, processes 2% apart: undecided with B's 3, decided before its cap
    (b,), lines = run_against(tmp_path, monkeypatch, scale=1.04, jitter=0.02)
    assert 3 < len(b.runs) <= RULE.cap, lines
    assert any(f"one more process, for its comparison with {tmp_path / 'a'}" in line for line in lines), lines
    (a,) = load_all(tmp_path / "a")
    found = Judge([a, b], tmp_path / "a").ratio(a, b)
    assert stats.verdict(found) == stats.SLOWER and "separate runs" in found.note, found


def test_a_comparison_with_an_earlier_run_that_the_cap_cannot_decide_adds_nothing(tmp_path, monkeypatch):
    (b,), lines = run_against(tmp_path, monkeypatch, scale=1.02, jitter=0.04)
    assert len(b.runs) == RULE.first and not any("one more process" in line for line in lines), lines


def test_against_refuses_a_missing_folder_and_the_runs_own_in_one_line(tmp_path):
    from fakes import bench_env, run_bench, smoke_run

    venvs = make_fake_envs(tmp_path / "venvs", ["torch"])
    for against, said in ((tmp_path / "nowhere", "no such results folder"), (tmp_path / "r", "own results folder")):
        (tmp_path / "r").mkdir(exist_ok=True)
        out = run_bench(smoke_run("--backend", "torch", "--model", "bert", "--against", str(against),
                                  results=tmp_path / "r"), bench_env(venvs))  # fmt: skip
        assert out.returncode == 2 and said in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
