"""A machine switching between two states during an interleaved comparison (bench/judge/machine_states.py): named,
and judged within one state rather than averaged into a wide interval; simulated on the states one quiet host showed
(processes 1.7-1.9x apart, each side in both), and on a machine of one state, where nothing changes."""
import math
import random

from test_compare import cell_result

from bench.base import stats
from bench.judge import Judge
from bench.judge.machine_states import FAST, machine_states, samples_within_state, within_state
from bench.run.interleaved import judged_pair

TRIALS = 2000
PROCESSES = 8  # a side, the rule's cap


def side(rng: random.Random, level: float, apart: float, spread: float = 0.04, p_fast: float = 0.6) -> list:
    """A side's processes' steps: each process in the fast state (probability p_fast) or `apart` slower."""
    out = []
    for _ in range(PROCESSES):
        median = level * (1 if rng.random() < p_fast else apart) * math.exp(rng.gauss(0, spread))
        out.append([median * math.exp(rng.gauss(0, 0.03)) for _ in range(20)])
    return out


def rates(effect: float, apart: float, seed: int = 3, **kw) -> tuple[float, float, float]:
    """Over TRIALS pairs (B `effect` times A): the share called different (effect 1) or slower (otherwise), within a
    state by the rule, and over every process pooled; and the share of pairs whose states were named."""
    rng = random.Random(seed)
    within = pooled = named = 0
    wanted = (stats.FASTER, stats.SLOWER) if effect == 1 else (stats.SLOWER,)
    for _ in range(TRIALS):
        samples = {"A": side(rng, 7.0, apart, **kw), "B": side(rng, 7.0 * effect, apart, **kw)}
        states, ratio = samples_within_state(samples)
        named += states is not None
        within += stats.verdict(ratio) in wanted
        pooled += stats.verdict(stats.ratio(stats.estimate(samples["A"]), stats.estimate(samples["B"]))) in wanted
    return within / TRIALS, pooled / TRIALS, named / TRIALS


def test_on_a_machine_of_two_states_identical_code_is_called_different_at_most_5_percent_of_the_time():
    within, _, named = rates(1.0, apart=1.8)
    assert within <= 0.05 and named > 0.9


def test_on_a_machine_of_two_states_a_20_percent_slowdown_is_found_where_pooling_misses_it():
    within, pooled, _ = rates(1.2, apart=1.8)
    assert within >= 0.85 and pooled <= 0.3, (within, pooled)


def test_on_a_machine_of_one_state_no_state_is_named_and_the_answer_is_the_pooled_one():
    for effect in (1.0, 1.2):
        within, pooled, named = rates(effect, apart=1.0, spread=0.10)
        assert named == 0 and within == pooled


def test_a_side_moved_wholly_away_is_a_change_not_a_state():
    slow_b = {"A": [7.0, 7.1, 6.9, 7.2], "B": [12.6, 12.8, 12.5, 12.7]}
    assert machine_states(slow_b) is None
    both = {"A": [7.0, 7.1, 12.6, 12.8, 6.9], "B": [8.4, 8.5, 15.1, 15.3, 8.3]}
    states = machine_states(both)
    assert states is not None and states.judged == FAST and [len(g) for g in states.groups["A"]] == [3, 2]
    unlike = {"A": [7.0, 7.1, 12.6, 12.8], "B": [7.0, 7.2, 21.0, 21.5]}  # B's slow processes 3x, A's 1.8x
    assert machine_states(unlike) is None


def test_the_judge_compares_like_with_like_and_names_the_states():
    fast, slow = [7.0, 7.05, 6.95, 7.1], [12.6, 13.0]
    a = cell_result("jax", "bert", "fit", fast + slow, seed=1)
    b = cell_result("jax", "bert", "fit", [m * 1.2 for m in fast] + [m * 1.2 for m in slow[:1]] + [13.4],
                    seed=2)  # fmt: skip
    judge = Judge([a, b], across_processors=True)
    pooled = judge.ratio(a, b)
    assert stats.verdict(pooled) == stats.INCONCLUSIVE
    states, within = within_state(judge, a, b)
    assert states.judged == FAST and stats.verdict(within) == stats.SLOWER
    assert 1.15 < within.value < 1.25 and "switched between two states" in within.note
    assert judged_pair(judge, a, b) == within
    # where only A's processes met the slow state, B's all ran fast: compared with A's fast ones
    one_state = cell_result("jax", "bert", "fit", fast + [7.02, 6.98], seed=3)
    states, within = within_state(Judge([a, one_state], across_processors=True), a, one_state)
    assert [len(g) for g in states.groups["B"]] == [6, 0] and stats.verdict(within) == stats.SAME
    again = cell_result("jax", "bert", "fit", fast + [7.02, 6.98], seed=4)
    assert within_state(Judge([again, one_state], across_processors=True), again, one_state) is None
