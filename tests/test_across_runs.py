"""Judging across runs: the run as a level of variance. The committed noise studies' processes (identical code, in
rounds minutes apart and studies hours apart) re-split into A/A comparisons as `make compare` judges them; a Judge
of cells from two runs widens by the machine's run-to-run spread, or decides nothing without one."""
import json
import math
import random
import shutil

import pytest
from committed import committed_results

from bench.base import stats
from bench.base.errors import BenchError
from bench.judge import Judge
from bench.judge.noise_file import read_noise_file, run_spread_of, study_files
from bench.record.results import load

STUDY = "noise/cpu-amd-epyc-2-cores--64dc9908f650.json"
TRIALS = 100


def committed_studies() -> list[dict]:
    return [read_noise_file(p) for p in study_files(committed_results() / STUDY)]


def test_the_run_to_run_spread_is_read_from_every_study_of_the_machine():
    studies = committed_studies()
    log_sd, dof, rounds, cells = run_spread_of(studies)
    assert len(studies) == 3 and (rounds, cells) == (6, 8) and dof == 40  # 8 cells x (6 rounds - 1)
    assert 0.03 < log_sd < 0.10  # as large as a process's spread on this machine: a level of its own
    assert run_spread_of([studies[0]])[1] == 8  # one study: its two rounds
    assert run_spread_of([{"cells": []}]) is None


def aa_false_calls(across: bool, with_run_spread: bool) -> float:
    """A/A compares of the studies' 8 cells, 3 processes a side, each judged with the others (Benjamini-Hochberg) as
    `make compare` judges them: within a round (one run) or across its two rounds (two runs)."""
    studies = committed_studies()
    log_sd, dof, _, _ = run_spread_of(studies)
    run = stats.ProcessSpread(log_sd, dof, "make noise")
    rng, calls, total = random.Random(3), 0, 0
    for _ in range(TRIALS):
        for study in studies:
            ratios = []
            for cell in study["cells"]:
                first, second = [r["medians_ms"]["A"] + r["medians_ms"]["B"] for r in cell["rounds"][:2]]
                if across:
                    a, b = rng.sample(first, 3), rng.sample(second, 3)
                else:
                    shuffled = rng.sample(first, 6)
                    a, b = shuffled[:3], shuffled[3:]
                found = stats.ratio(stats.estimate([[m] for m in a]), stats.estimate([[m] for m in b]))
                ratios.append(found.with_run_spread(run) if across and with_run_spread else found)
            threshold = stats.benjamini_hochberg([stats.p_value(r) for r in ratios])
            for found in ratios:
                calls += stats.verdict(stats.family_judged(found, threshold)) in (stats.FASTER, stats.SLOWER)
                total += 1
    return calls / total


def test_identical_code_compared_across_runs_is_called_different_at_most_5_percent_of_the_time():
    assert aa_false_calls(across=True, with_run_spread=True) <= 0.05
    assert aa_false_calls(across=False, with_run_spread=False) <= 0.05  # within one run, as before


def test_without_the_run_spread_the_same_re_splits_fail_that_bound():
    # each pair judged alone and without the runs' spread, the way cross-run comparisons were judged before
    studies = committed_studies()
    rng, calls, total = random.Random(3), 0, 0
    for _ in range(TRIALS // 3):
        for study in studies:
            for cell in study["cells"]:
                first, second = [r["medians_ms"]["A"] + r["medians_ms"]["B"] for r in cell["rounds"][:2]]
                found = stats.ratio(stats.estimate([[m] for m in rng.sample(first, 3)]),
                                    stats.estimate([[m] for m in rng.sample(second, 3)]))  # fmt: skip
                calls += stats.verdict(found) in (stats.FASTER, stats.SLOWER)
                total += 1
    assert calls / total > 0.10


def two_runs(tmp_path, noise: bool):
    """The committed round-1 and round-2 results of one study's cell (identical code, separate runs)."""
    source = committed_results() / "noise" / "runs" / "20261125T180246Z"
    a = load(next((source / "round-1" / "A").rglob("jax__bert__fit__bs2__default.json")))
    b = load(next((source / "round-2" / "B").rglob("jax__bert__fit__bs2__default.json")))
    b.provenance["run_id"] = "another run"  # the study's rounds share one id: here they stand for two invocations
    folder = tmp_path / "results"
    if noise:
        shutil.copytree(committed_results() / "noise", folder / "noise", ignore=shutil.ignore_patterns("runs"))
    else:
        (folder / "noise").mkdir(parents=True)
    return a, b, folder


@pytest.mark.parametrize("noise", [True, False])
def test_a_judge_of_two_runs_carries_the_run_spread_or_decides_nothing(tmp_path, monkeypatch, noise):
    import bench.judge.noise_file

    a, b, folder = two_runs(tmp_path, noise)
    monkeypatch.setattr(bench.judge.noise_file, "REPO_ROOT", tmp_path)  # no fallback to the checkout's own noise study
    judge = Judge([a, b], folder)
    across = judge.ratio(a, b)
    same_run = stats.ratio(judge.estimate(a), judge.estimate(b))
    if noise:
        assert across.log_se > same_run.log_se and "separate runs" in across.note
        # the two rounds' drift probes read apart, and the cell's interval holds their shift: the machine moved it
        assert across.decidable or "the cell moved no more than the machine" in across.reason
        assert math.isclose(across.log_se**2, same_run.log_se**2 + 2 * judge.run_spread(a).log_sd ** 2, rel_tol=1e-9)
    else:
        assert not across.decidable and "run-to-run spread is unmeasured" in across.reason


def test_a_folder_inside_a_results_folder_is_judged_by_that_results_folders_noise_study(tmp_path, monkeypatch):
    """One side of a compare, or a noise study's runs, inside a results folder kept anywhere (RESULTS=): the machine's
    study in that results folder's noise/ gives the run-to-run spread, not only a study in the side's own folder."""
    import bench.judge.noise_file

    a, b, folder = two_runs(tmp_path, noise=True)
    monkeypatch.setattr(bench.judge.noise_file, "REPO_ROOT", tmp_path / "elsewhere")
    inner = folder / "noise" / "invocations" / "20261128T000000Z" / "1a"
    inner.mkdir(parents=True)
    found = Judge([a, b], inner).ratio(a, b)
    assert "separate runs" in found.note and "run-to-run spread is unmeasured" not in found.reason


def scaled(result, timed: float, probe: float):
    """The result as if its run's machine read the drift probe `probe` times slower and its steps took `timed`x."""
    import dataclasses

    runs = [dataclasses.replace(run, timed_ms=[t * timed for t in run.timed_ms],
                                reference={k: v * probe for k, v in (run.reference or {}).items()})
            for run in result.runs]  # fmt: skip
    return dataclasses.replace(result, runs=runs, provenance=dict(result.provenance))


@pytest.mark.parametrize("moved,decided", [(1.28, False), (1.0, False), (2.0, True)])
def test_a_machine_that_ran_at_another_speed_in_one_run_qualifies_the_comparison(tmp_path, monkeypatch, moved, decided):
    """The drift probe read 1.25x slower through B's run (0.55 vs 0.44 ms): a cell that moved 1.28x, or not at all,
    is within what the machine's shift and the runs' spread allow and decides nothing, saying why; one that moved 2x
    moved beyond it and is called slower, the shift noted."""
    import bench.judge.noise_file

    a, b, folder = two_runs(tmp_path, noise=True)
    monkeypatch.setattr(bench.judge.noise_file, "REPO_ROOT", tmp_path)
    b = scaled(a, moved, 1.25)
    b.provenance["run_id"] = "another run"
    found = Judge([a, b], folder).ratio(a, b)
    assert "the machine itself ran 1.25x between the runs" in (found.reason if not found.decidable else found.note)
    assert found.decidable is decided, found
    if moved == 2.0:
        assert stats.verdict(found) == stats.SLOWER


def test_a_run_that_found_the_machine_slow_throughout_decides_nothing(tmp_path, monkeypatch):
    """Both runs' probes read 2.5x the machine's quiet value from its noise study: alike, so only the machine's own
    quiet value shows that neither ran on the machine the study measured."""
    import bench.judge.noise_file

    a, b, folder = two_runs(tmp_path, noise=True)
    monkeypatch.setattr(bench.judge.noise_file, "REPO_ROOT", tmp_path)
    a, b = scaled(a, 1.0, 2.5), scaled(b, 1.0, 2.5)
    b.provenance["run_id"] = "another run"
    found = Judge([a, b], folder).ratio(a, b)
    assert not found.decidable and "A's run found the machine slow throughout" in found.reason


def test_a_comparison_the_runs_alone_keep_wide_says_more_runs_would_narrow_it_not_more_processes(tmp_path, monkeypatch):
    """Identical figures from two runs of a machine whose runs move 6.5% (the committed study): the interval cannot
    come within ±5% at any number of processes, and the reason says so instead of asking for processes."""
    import bench.judge.noise_file
    from bench.report import compare

    a, _, folder = two_runs(tmp_path, noise=True)
    monkeypatch.setattr(bench.judge.noise_file, "REPO_ROOT", tmp_path / "elsewhere")
    b = scaled(a, 1.0, 1.0)
    b.provenance["run_id"] = "another run"
    a.write(folder / "A")
    b.write(folder / "B")
    (pair,) = compare.compare(folder / "A", folder / "B").pairs  # both inside the results folder holding the study
    assert pair.verdict == stats.INCONCLUSIVE and pair.judged.runs_floor() > 1.15
    assert pair.reason.startswith("undecided across runs") and "separate runs" in pair.reason
    assert "interleaved in one invocation" in pair.reason and "more processes would narrow it" not in pair.reason
    assert pair.decide_with.startswith("make noise PROFILE=")  # one code in both runs: an A/A


def test_several_runs_a_side_carry_the_run_spread_over_their_number_and_decide_what_one_run_cannot(tmp_path,
                                                                                                  monkeypatch):
    """Four separate runs a side of a cell whose B is 1.2x slower, on a machine whose runs move 6.5% (the committed
    study): one run a side cannot call it (the runs alone keep the interval about ±30% wide), four pooled a side call
    it slower, their interval the runs' spread over four a side, and `make compare A=a1,a2,... B=...` reads them so."""
    import dataclasses
    import random

    import bench.judge.noise_file
    from bench.cli_parsers import folder_or_run
    from bench.judge import pool_runs, runs_in
    from bench.report import compare

    base, _, folder = two_runs(tmp_path, noise=True)
    monkeypatch.setattr(bench.judge.noise_file, "REPO_ROOT", tmp_path / "elsewhere")
    rng = random.Random(11)

    def a_run(name: str, factor: float, hour: int):
        shift = math.exp(rng.gauss(0, 0.03))  # this run's own level, as runs of the machine move
        result = scaled(base, factor * shift, 1.0)
        result.provenance["run_id"] = name
        # hours apart, beyond the machine's short time scale: independent runs, whose mean carries the spread over k
        result.created_at = f"2026-11-29T{hour:02d}:00:00+00:00"
        return dataclasses.replace(result, runs=[dataclasses.replace(run, timed_ms=[t * math.exp(rng.gauss(0, 0.02))
                                                                                    for t in run.timed_ms])
                                                 for run in result.runs])  # fmt: skip

    sides = {side: [a_run(f"{side}{k}", 1.0 if side == "A" else 1.2, 3 * k + (side == "B")) for k in range(4)]
             for side in "AB"}
    for side, results in sides.items():
        for k, result in enumerate(results):
            result.write(folder / f"{side}{k}")
    one = compare.compare(folder / "A0", folder / "B0").pairs[0]
    assert one.verdict == stats.INCONCLUSIVE and "(one run a side)" in one.reason, one.reason
    a, b = (pool_runs(sides[s]) for s in "AB")
    assert runs_in(a) == runs_in(b) == 4 and len(a.runs) == 4 * len(base.runs)
    found = Judge([a, b], folder).ratio(a, b)
    spread = Judge([a, b], folder).run_spread(a).log_sd
    within = stats.ratio(Judge([a, b], folder).estimate(a), Judge([a, b], folder).estimate(b))
    assert math.isclose(found.log_se**2, within.log_se**2 + 2 * spread**2 / 4, rel_tol=1e-9)
    assert found.run_counts == (4, 4) and "4 and 4 runs a side" in found.note
    pooled = compare.compare_sides(compare.pooled_side([folder / f"A{k}" for k in range(4)]),
                                   compare.pooled_side([folder / f"B{k}" for k in range(4)])).pairs[0]  # fmt: skip
    assert pooled.verdict == stats.SLOWER and 1.1 < pooled.ratio < 1.3, (pooled.ratio, pooled.interval)
    assert folder_or_run(f"{folder / 'A0'},{folder / 'A1'}") == [folder / "A0", folder / "A1"]
    from bench.cli import main

    out = tmp_path / "pooled.md"
    given = [",".join(str(folder / f"{s}{k}") for k in range(4)) for s in "AB"]
    assert main(["compare", *given, "--out", str(out)]) == 0
    (written,) = json.loads(out.with_suffix(".json").read_text())["pairs"]
    assert written["verdict"] == stats.SLOWER and "(4 runs)" in json.loads(out.with_suffix(".json").read_text())["a"]
    assert main(["compare", given[0], f"{folder / 'B0'},{folder / 'A1'}", "--out", str(out)]) != 0  # A1 twice
    with pytest.raises(BenchError, match="same run"):
        pool_runs([sides["A"][0], sides["A"][0]])
    failed = dataclasses.replace(sides["A"][1], runs=[dataclasses.replace(sides["A"][1].runs[0], status="oom")])
    kept = pool_runs([sides["A"][0], failed, sides["A"][2]])  # a run whose cell failed is left out, and named
    assert runs_in(kept) == 2 and kept.status == "ok" and kept.provenance["pooled_left_out"][0]["status"] == "oom"


def test_a_side_pooled_from_runs_takes_its_process_spread_within_the_runs_and_keeps_the_false_call_rate():
    """Two runs a side, three processes a run, runs moving 10% and processes 5%: the side's interval holds the
    processes' spread within their runs (not across, which already holds part of the run spread that the run level
    adds), so it is narrower than over all processes together, and identical code is still called faster or slower
    in at most 5% of pairs at 95%."""
    rng = random.Random(5)
    run = stats.ProcessSpread(0.10, 1000, "simulated")

    def side() -> list[list[list[float]]]:
        runs = []
        for _ in range(2):
            level = math.exp(rng.gauss(0, 0.10))
            runs.append([[level * math.exp(rng.gauss(0, 0.05)) * (1 + rng.gauss(0, 0.002)) for _ in range(20)]
                         for _ in range(3)])  # fmt: skip
        return runs

    calls, narrower, trials = 0, 0, 2000
    for _ in range(trials):
        a, b = side(), side()
        found = stats.ratio(stats.estimate_across_runs(a), stats.estimate_across_runs(b)).with_run_spread(run, (2, 2))
        calls += stats.verdict(found) in (stats.FASTER, stats.SLOWER)
        flat = stats.ratio(*(stats.estimate([p for r in s for p in r]) for s in (a, b))).with_run_spread(run, (2, 2))
        narrower += found.log_se < flat.log_se
    assert calls / trials <= 0.05 + 0.01, calls / trials  # 0.01: two binomial sd of 2000 trials
    assert narrower / trials > 0.6, narrower / trials
    one = stats.estimate_across_runs([[[1.0, 1.0]], [[2.0, 2.0], [2.0, 2.0]]])
    assert one.dof == 1 and math.isclose(one.center, math.sqrt(2))  # each run weighs the same, whatever its processes
    assert stats.estimate_across_runs([[[1.0]], [[2.0]]]).dof == 1  # one process a run: no spread within, all of them


def test_a_pooled_side_groups_its_kept_processes_by_run():
    import dataclasses

    from bench.judge import pooled_groups
    from bench.record.results import Run

    runs = [Run(status="ok", timed_ms=[float(i)]) for i in range(5)]
    result = dataclasses.make_dataclass("R", ["runs", "provenance"])(runs, {"pooled_runs": [{"processes": 3},
                                                                                            {"processes": 2}]})
    assert pooled_groups(result, [runs[0], runs[2], runs[3]]) == [[[0.0], [2.0]], [[3.0]]]
    assert pooled_groups(result, runs) == [[[0.0], [1.0], [2.0]], [[3.0], [4.0]]]
    result.provenance["pooled_runs"] = [{"processes": 3}, {"processes": 3}]  # counts that do not match: no groups
    assert pooled_groups(result, runs) is None
