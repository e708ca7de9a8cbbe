"""Pooled runs a side and comparisons across separate runs: the run spread's two time scales read from the committed
noise studies, a simulation of back-to-back pooled runs on them judged by the rule `make compare` applies, and
`make compare` of two committed runs of identical code (its verdicts no looser than before, and the command that
would decide them printed)."""
import dataclasses
import math
import random
from datetime import UTC, datetime, timedelta

import pytest
from committed import committed_results

from bench.base import stats
from bench.judge import across_runs
from bench.judge.noise_file import machine_run_spread, read_noise_file
from bench.report.compare import compare_sides, folder_side, pooled_side, run

INTEL = "noise/cpu-intel-r-xeon-r-processor-2-cores--9f54d01d90ed.json"
INVOCATIONS = "noise/invocations/20261128T214512Z"  # four `make bench-all` runs of one commit, 8-9 minutes apart
PROCESS_SPREAD = 0.04  # a cell of 4% process spread, as the statistician's simulation took
TRIALS = 3000


def intel_parts() -> across_runs.RunSpreadParts:
    machine = read_noise_file(committed_results() / INTEL)["machine"]
    total = machine_run_spread(committed_results(), machine)
    return across_runs.machine_run_spread_parts(committed_results(), machine, total)


def test_the_run_spread_splits_into_a_short_and_a_slow_part_from_the_committed_studies():
    parts = intel_parts()
    assert parts.total.dof == 72 and 0.14 < parts.total.log_sd < 0.15  # the 14.4% over both studies
    # each study's own runs (rounds and delay pairs, minutes apart) differ by less than runs of both studies do
    assert 0.05 < parts.short_log_sd < parts.total.log_sd and parts.slow_log_sd > 0.05
    assert math.isclose(parts.short_log_sd**2 + parts.slow_log_sd**2, parts.total.log_sd**2)
    assert 55 * 60 < parts.scale_s < 66 * 60  # the longer of its two studies, 65 minutes
    one_run = parts.side_variance([1])
    assert math.isclose(one_run, parts.total.log_sd**2)  # one run a side: the whole spread, as before
    assert math.isclose(parts.side_variance([4]), parts.short_log_sd**2 / 4 + parts.slow_log_sd**2)
    assert math.isclose(parts.side_variance([1, 1, 1, 1]), parts.total.log_sd**2 / 4)


def test_without_a_study_spanning_time_the_scale_is_the_stated_default():
    total = stats.ProcessSpread(0.1, 10, "test")
    parts = across_runs.split_run_spread([], total)
    assert parts.scale_s == across_runs.DEFAULT_SHORT_SCALE_S and "default" in parts.scale_source
    assert parts.short_log_sd == 0.1 and parts.slow_log_sd == 0  # no claim that runs average out a slow part


def test_runs_count_as_independent_only_beyond_the_time_scale():
    t0 = datetime(2026, 11, 28, 21, 45, tzinfo=UTC)
    back_to_back = [t0 + timedelta(minutes=9 * i) for i in range(4)]
    assert across_runs.clusters_of(back_to_back, 3600) == [4]
    apart = [t0 + timedelta(hours=3 * i) for i in range(4)]
    assert across_runs.clusters_of(apart, 3600) == [1, 1, 1, 1]
    assert sorted(across_runs.clusters_of([*back_to_back[:2], apart[2], None], 3600)) == [1, 1, 2]


def simulated_false_calls(rule: str, runs: int = 4, repeats: int = 3, seed: int = 11) -> float:
    """Identical code, `runs` runs a side measured back to back (each side's runs sharing one draw of the slow
    drift, the two sides hours apart), `repeats` processes a run: the share of pairs called faster or slower at 95%
    under `rule` ('new': the rule the Judge applies; 'old': the run spread over k on the whole)."""
    parts = intel_parts()
    rng = random.Random(seed)
    t0 = datetime(2026, 11, 28, 21, 45, tzinfo=UTC)
    starts = [t0 + timedelta(minutes=9 * i) for i in range(runs)]  # as the committed invocations ran
    clusters = across_runs.clusters_of(starts, parts.scale_s)
    calls = 0
    for _ in range(TRIALS):
        sides = []
        for _side in "AB":
            slow = rng.gauss(0, parts.slow_log_sd)
            side = []
            for _run in range(runs):
                level = 10.0 * math.exp(slow + rng.gauss(0, parts.short_log_sd))
                side.append([[level * math.exp(rng.gauss(0, PROCESS_SPREAD))] for _ in range(repeats)])
            sides.append(stats.estimate_across_runs(side))
        found = stats.ratio(*sides)
        if rule == "new":
            judged = across_runs.with_clustered_run_spread(found, parts, (clusters, clusters))
        else:
            judged = found.with_run_spread(parts.total, (runs, runs))
        calls += stats.verdict(judged) in (stats.FASTER, stats.SLOWER)
    return calls / TRIALS


def test_back_to_back_pooled_runs_call_at_most_5_percent_of_identical_pairs_different():
    assert simulated_false_calls("new") <= 0.05


def test_the_old_rule_calls_back_to_back_pooled_runs_different_far_more_often():
    # the run spread's 1/k over the whole, as if the runs were independent: what the new rule mends
    assert simulated_false_calls("old") > 0.15


def test_independent_pooled_runs_still_narrow_the_interval():
    parts = intel_parts()
    found = stats.Ratio(1.0, 0.02, 20)
    apart = across_runs.with_clustered_run_spread(found, parts, ([1, 1, 1, 1], [1, 1, 1, 1]))
    together = across_runs.with_clustered_run_spread(found, parts, ([4], [4]))
    one = across_runs.with_clustered_run_spread(found, parts, ([1], [1]))
    assert apart.interval()[1] < together.interval()[1] < one.interval()[1]
    assert math.isclose(apart.log_se, found.with_run_spread(parts.total, (4, 4)).log_se)


def invocation(name: str):
    return committed_results() / INVOCATIONS / name


def old_rule(judged: stats.Ratio) -> stats.Ratio:
    """The same comparison as the rule before pooled runs were told apart judged it: the run spread over k."""
    weight = judged.run_weight if judged.run_weight is not None else stats.runs_weight(judged.run_counts)
    processes = judged.log_se**2 - weight * judged.runs.log_sd**2
    log_se = math.sqrt(processes + stats.runs_weight(judged.run_counts) * judged.runs.log_sd**2)
    return dataclasses.replace(judged, log_se=log_se, run_weight=None)


@pytest.mark.parametrize("a, b", [(["1a"], ["1b"]), (["2a"], ["2b"]), (["1a", "2a"], ["1b", "2b"])])
def test_compare_of_separate_runs_of_identical_code_is_no_looser_and_says_what_decides_it(a, b):
    side = lambda names: folder_side(invocation(names[0])) if len(names) == 1 else pooled_side(
        [invocation(n) for n in names])
    comparison = compare_sides(side(a), side(b))
    assert len(comparison.pairs) == 8
    counts = comparison.counts()
    assert counts["faster"] == counts["slower"] == 0  # identical code: nothing called different
    for pair in comparison.pairs:
        before = old_rule(pair.judged)
        low, high = pair.judged.interval()
        old_low, old_high = before.interval()
        assert low <= old_low * (1 + 1e-9) and high >= old_high * (1 - 1e-9)  # as wide or wider
        assert pair.verdict in (stats.verdict(before), stats.INCONCLUSIVE)
        assert pair.reason.startswith("undecided across runs")
        # one commit, the same package versions: an A/A, for which the machine's noise study is the honest command
        assert pair.decide_with == f"make noise PROFILE=smoke CELLS={pair.a.cell.key}"
    if len(a) > 1:  # runs 8-9 minutes apart share the slow drift: pooling them narrows only the short part
        assert all(p.judged.runs_floor() > old_rule(p.judged).runs_floor() for p in comparison.pairs)
        assert all("0 of 2 independent" not in p.judged.note and "1 of 2 independent" in p.judged.note
                   for p in comparison.pairs)


def test_make_compare_prints_the_command_that_would_decide_it(tmp_path):
    written = run(invocation("1a"), invocation("1b"), tmp_path / "compare.md")
    assert "## Undecided across runs: what would decide it" in written.text
    assert "`make noise PROFILE=smoke CELLS=jax__bert__fit__bs2__default`" in written.text
    assert "an A/A comparison of one code" in written.text
    assert "More runs a side narrow a comparison only where they are independent" in written.text
    assert "more runs a side would narrow it" not in written.text


def test_the_decider_names_the_commits_or_the_package_that_differ():
    a = folder_side(invocation("1a")).results[0]

    def with_code(result, commit=None, packages=None):
        git = {**result.provenance["git"], **({"commit": commit} if commit else {})}
        provenance = {**result.provenance, "git": git}
        runs = result.runs
        if packages:
            runs = [dataclasses.replace(r, process={**r.process, "packages": {**r.process["packages"], **packages}})
                    for r in runs]
        return dataclasses.replace(result, provenance=provenance, runs=runs)

    b = with_code(a, commit="0123456789abcdef0123")
    found = across_runs.decider(a, b)
    commit = a.provenance["git"]["commit"]
    assert found.command == f"make ab A={commit[:12]} B=0123456789ab CELL={a.cell.key} PROFILE=smoke"
    version = a.runs[0].process["packages"]["keras"]
    found = across_runs.decider(a, with_code(a, packages={"keras": "9.9.9"}))
    assert found.command == f"make ab A=keras=={version} B=keras==9.9.9 CELL={a.cell.key} PROFILE=smoke"
    assert across_runs.decider(a, a).aa
