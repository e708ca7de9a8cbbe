"""Time to a decided table: the sequential rule (bench/judge/replication.py), what GPU processes have cost
(bench/run/measured.py), and the matrix's plans on 1, 8 and 64 GPUs (bench/run/decided.py)."""
import math
import random
import statistics

import pytest
from committed import committed_results

from bench.base import stats
from bench.base.published import published_ms
from bench.catalogue.cost import expected_timed_steps
from bench.catalogue.profiles import get_profile
from bench.catalogue.registry import plan_cells
from bench.judge.replication import SequentialRule, decided_at, processes_needed, rule_of
from bench.record.results import Run
from bench.run.decided import comparisons, plans, rows_of
from bench.run.measured import Measured, folders_of, measure, process_overhead_s


def test_the_paper_profile_replicates_sequentially_and_each_look_is_stricter():
    rule = rule_of(get_profile("paper"))
    assert (rule.first, rule.cap, rule.looks) == (3, 8, 6) and rule.sequential
    assert rule.confidence == pytest.approx(1 - 0.05 / 6)
    fixed = rule_of(get_profile("smoke"))
    assert not fixed.sequential and fixed.looks == 1 and fixed.confidence == pytest.approx(0.95)
    with pytest.raises(ValueError):
        SequentialRule(3, 2)


def test_what_decides_a_comparison_and_what_never_does():
    rule = SequentialRule(3, 8)
    assert processes_needed(math.log(3.0), (0.02, 0.02), rule) == 3  # Keras 3 PyTorch against JAX: at once
    assert processes_needed(math.log(1.0), (0.005, 0.005), rule) == 3  # the same, within the band: at once
    slower = processes_needed(math.log(1.10), (0.03, 0.03), rule)
    assert slower is not None and 3 < slower <= 8  # a 10% difference at a 3% spread: a few more processes
    # 2% apart at a 3% spread: neither within the 5% band nor clear of 1 by the cap: no count decides it
    assert processes_needed(math.log(1.02), (0.03, 0.03), rule) is None
    assert not decided_at(math.log(3.0), (0.0, 0.0), 1, 0.95)  # one process has no spread of its own


def test_the_sequential_rule_keeps_an_aa_comparisons_false_calls_within_its_alpha():
    """Identical cells (A/A), looked at after every round from 3 to 8 processes, stopped at the first look that
    calls them different: with each look at 1 - 5%/6 the false calls stay within 5%; at 95% each they would not."""
    rng = random.Random(7)
    rule = SequentialRule(3, 8)

    def any_look_calls_different(confidence: float) -> bool:
        a = [rng.gauss(0, 0.03) for _ in range(rule.cap)]
        b = [rng.gauss(0, 0.03) for _ in range(rule.cap)]
        for n in range(rule.first, rule.cap + 1):
            ea = stats.estimate([[math.exp(x)] * 7 for x in a[:n]])
            eb = stats.estimate([[math.exp(x)] * 7 for x in b[:n]])
            low, high = stats.ratio(ea, eb).interval(confidence)
            if low > 1 or high < 1:
                return True
        return False

    trials = 1200
    sequential = sum(any_look_calls_different(rule.confidence) for _ in range(trials)) / trials
    naive = sum(any_look_calls_different(0.95) for _ in range(trials)) / trials
    assert sequential <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / trials), sequential
    assert naive > 0.08, naive  # looking six times at 95% each: the inflation the rule removes


def test_a_process_overhead_is_its_wall_time_beyond_its_steps():
    run = Run(status="ok", first_step_ms=10_000, warmup_ms=[100, 100], timed_ms=[100] * 10, wall_s=30.0)
    assert process_overhead_s(run) == pytest.approx(30.0 - 0.2 - 1.0 - 0.1)  # the first step counts as a typical one
    pair = Run(status="ok", first_step_ms=5.0, warmup_ms=[5.0], timed_ms=[5.0] * 2, wall_s=10.0, derived=True,
               windows_ms=[1000, 500, 1000, 500, 1000, 500, 1000, 500])  # fmt: skip
    assert process_overhead_s(pair, windows_per_step=2) == pytest.approx(10.0 - 4.5 - 1.5)  # raw windows count
    assert process_overhead_s(Run(status="timeout", wall_s=99.0)) is None


def test_the_committed_gpu_processes_replace_the_assumptions_where_they_exist():
    measured = measure(folders_of(committed_results()))
    assert measured.machines == {"1x NVIDIA H200"}
    (jax_fit,) = plan_cells("paper", backends=["jax"], models=["bert"], tasks=["fit"])
    seconds, source = measured.overhead(jax_fit)
    assert 20 < seconds < 60 and source == "jax fit, 4 processes"  # 2 cells of 2 processes
    (jax_generate,) = plan_cells("paper", backends=["jax"], models=["gemma"], tasks=["generate"], batch_size=1)
    assert "other tasks" in measured.overhead(jax_generate)[1]  # borrowed within its backend
    (tf_fit,) = plan_cells("paper", backends=["tensorflow"], models=["bert"], tasks=["fit"])
    assert measured.overhead(tf_fit) is None  # never across backends: TensorFlow's set-up is not JAX's
    torch_spread = measured.spread(plan_cells("paper", backends=["torch"], models=["bert"], tasks=["fit"])[0])
    every = measured.spread(tf_fit)
    assert torch_spread[0] > every[0] and "every GPU cell" in every[2]  # its own where larger, else the pool's
    assert expected_timed_steps(jax_fit, measured) >= jax_fit.timed_steps  # never fewer than the fewest
    assert expected_timed_steps(jax_fit, Measured()) == jax_fit.timed_steps  # nothing measured: the fewest


def test_a_row_compares_the_fastest_keras3_backend_with_each_column_the_table_sets_beside_it():
    figures = published_ms()
    row = rows_of(plan_cells("paper", models=["bert"], tasks=["fit"]))[("bert", "fit", 32)]
    found = comparisons(row, figures[("bert", "fit", 32)])
    pairs = {(a.backend, f"{b.backend}/{b.variant}"): log_ratio for a, b, log_ratio in found}
    assert {a for a, _ in pairs} == {"tensorflow"}  # 214.49 ms, the published fastest
    assert {b for _, b in pairs} == {"jax/default", "torch/default", "keras2/default", "native-torch/eager",
                                     "native-torch/compiled"}  # fmt: skip
    assert pairs[("tensorflow", "jax/default")] == pytest.approx(math.log(222.37 / 214.49))


def test_the_decided_plan_adds_processes_only_where_a_comparison_needs_them():
    decided, exact, fixed = plans(Measured())[0]  # every figure assumed
    rule = rule_of(get_profile("paper"))
    assert set(decided.processes) == set(exact.processes) == set(fixed.processes)
    assert all(rule.first <= n <= rule.cap for n in decided.processes.values())
    assert all(n == 1 for n in exact.processes.values()) and all(n == rule.first for n in fixed.processes.values())
    assert all(decided.seconds[k] >= fixed.seconds[k] for k in decided.seconds)
    assert decided.wall_s(8) < decided.wall_s(1) and statistics.fmean(decided.processes.values()) > rule.first
    # a published near-tie (SAM fit: TensorFlow 355.25, JAX 361.69 ms) stays undecided and adds nothing to JAX, whose
    # only comparison it is; TensorFlow, the row's fastest, gets what its decidable comparison with Keras 2 needs
    assert any(row.startswith("SegmentAnything fit") for row in decided.undecided_rows)
    assert decided.processes["jax__sam__fit__bs1__default"] == rule.first
    assert decided.processes["tensorflow__sam__fit__bs1__default"] > rule.first


def test_a_run_and_a_slurm_submission_say_what_they_expect_before_they_start():
    from bench.run.decided import expected_line, task_line

    cells = plan_cells("paper", backends=["jax", "torch"], models=["bert"])
    line = expected_line(cells, rule_of(get_profile("paper")))
    assert line.startswith("expected time to a decided table: ~") and "on one GPU at the published A100 speeds" in line
    assert "3 processes a cell" in task_line(cells, 3) and "none is added" in task_line(cells, 3)
    smoke = plan_cells("smoke", backends=["jax"], models=["bert"])
    assert expected_line(smoke, rule_of(get_profile("smoke"))) is None and task_line(smoke, 3) is None
