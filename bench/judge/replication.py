"""Processes until decided: the sequential rule a profile replicates its cells under, and how many processes a
comparison needs under it.

A cell starts with `first` processes (the profile's `repeats`); after each round every comparison the table makes is
judged, and the cells of an undecided one get one more process, up to `cap` (the profile's `max_repeats`). Looking
after every round and stopping when decided would call a difference by chance more often than a fixed design's 5%:
each look is judged at 1 - alpha / looks instead of 1 - alpha (Bonferroni over the looks, a conservative alpha
spending). That bound holds only while a side is looked at no more than `looks` times, so the cap counts every process
a side ran, a disturbed one set aside when judged as well as its replacement (SequentialRule.another_allowed, which
every loop that adds processes asks): a disturbed process is replaced only below the cap, never past it. So each
comparison's chance of a false call stays at most alpha whatever round it stops in. A profile whose cap equals its
first count replicates a fixed number of processes, judged at 1 - alpha.

The futility stop is judged at the rule's planning effect, the smallest difference worth finding (PLANNING_EFFECT
unless stated): an undecided comparison gets more processes, up to the cap, while its interval still holds a
difference of that size either way, and none once the interval rules one out (worth_more). The ratio observed after
a few processes is no guide to whether the cap can decide: on a cell of 10% process spread a real +20% often reads
near 1 at three processes, and a stop judged on that ratio left it undecided where the cap would have found it.
Stopping without a call never adds a false one, so the stop leaves the alpha spending as it is.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from bench.base.stats import CONFIDENCE, EQUIVALENCE_BAND, INCONCLUSIVE, Estimate, Ratio, t_quantile, verdict, welch_dof
from bench.judge import Judge
from bench.record.results import Result

PLANNING_POWER = 0.8  # a comparison counts as decided at the processes where it is decided this often
PLANNING_EFFECT = 0.10  # the smallest difference worth finding, unless a rule states its own


@dataclass(frozen=True)
class SequentialRule:
    first: int  # processes a cell starts with
    cap: int  # the most processes a cell gets
    alpha: float = 1 - CONFIDENCE  # the chance of a false call allowed each comparison, over all its looks
    planning_effect: float = PLANNING_EFFECT  # the smallest difference worth finding: what the futility stop plans for

    def __post_init__(self) -> None:
        if self.first < 1 or self.cap < self.first or not 0 < self.alpha < 1 or not self.planning_effect > 0:
            raise ValueError(f"invalid sequential rule: {self}")

    def another_allowed(self, processes: int) -> bool:
        """Whether a side that has run `processes` processes (every one: those set aside when judged, a disturbed
        one and any that failed, count as well) may run one more: below the cap. Past it a look would be one more
        than the looks the confidence spends alpha over."""
        return processes < self.cap

    @property
    def sequential(self) -> bool:
        return self.cap > self.first

    @property
    def looks(self) -> int:
        """The rounds after which comparisons are judged: one per process count from first to cap."""
        return self.cap - self.first + 1

    @property
    def confidence(self) -> float:
        """The confidence each look's verdict is judged at."""
        return 1 - self.alpha / self.looks

    def describe(self) -> str:
        if not self.sequential:
            return f"{self.first} processes a cell, judged at {1 - self.alpha:.0%}"
        return (
            f"{self.first} processes a cell, one more after each round while a comparison it takes part in is "
            f"undecided, up to {self.cap}; each of the {self.looks} looks judged at {self.confidence:.2%} "
            f"(Bonferroni), so a comparison's chance of a false call stays at most {self.alpha:.0%}; the cap counts "
            f"every process, a replaced one too; none once the interval rules out a {self.planning_effect:.0%} "
            "difference"
        )

    def to_dict(self) -> dict:
        return {"first": self.first, "cap": self.cap, "alpha": self.alpha, "looks": self.looks,
                "confidence": self.confidence, "planning_effect": self.planning_effect}  # fmt: skip


def rule_of(profile) -> SequentialRule:
    """The profile's rule (bench/catalogue/profiles.toml repeats and max_repeats)."""
    return SequentialRule(profile.repeats, max(profile.max_repeats, profile.repeats))


def decided_at(
    log_ratio: float,
    spreads: tuple[float, float],
    processes: int,
    confidence: float,
    power: float = PLANNING_POWER,
    band: float = EQUIVALENCE_BAND,
) -> bool:
    """Whether a comparison whose true ratio is exp(log_ratio) is decided, `power` of the time, with `processes` a
    side whose log medians spread by `spreads`: its interval then clears 1 (a difference) or lies within the band
    (the same)."""
    n = processes
    if n < 2:
        return False  # one process: no spread of its own, no verdict
    return decided_with(log_ratio, [s * s / n for s in spreads], [n - 1, n - 1], confidence, power, band)


def decided_with(
    log_ratio: float,
    variances: list[float],
    dofs: list[float],
    confidence: float,
    power: float = PLANNING_POWER,
    band: float = EQUIVALENCE_BAND,
) -> bool:
    """Whether a comparison whose true ratio is exp(log_ratio) is decided, `power` of the time, by an interval whose
    log variance is the sum of `variances`, each estimated with its `dofs` (Welch-Satterthwaite)."""
    se = math.sqrt(sum(variances))
    if se == 0:
        return True
    dof = welch_dof(variances, dofs)
    reach = (t_quantile(1 - (1 - confidence) / 2, dof) + t_quantile(power, dof)) * se
    return abs(log_ratio) >= reach or abs(log_ratio) + reach <= math.log(1 + band)


def processes_needed(log_ratio: float, spreads: tuple[float, float], rule: SequentialRule) -> int | None:
    """The fewest processes a side at which the rule decides this comparison (PLANNING_POWER of the time); None when
    even its cap does not (a true ratio too near the equivalence band's edge, or spreads too wide)."""
    for n in range(max(rule.first, 2), rule.cap + 1):
        if decided_at(log_ratio, spreads, n, rule.confidence):
            return n
    return None


def worth_more(ratio: Ratio, rule: SequentialRule) -> bool:
    """The futility stop's test: whether an undecided comparison's interval so far (at its look's confidence) still
    holds a difference of the rule's planning effect, either way. Where it lies within ±planning_effect, a
    difference worth finding is ruled out and more processes are not worth taking; else they are, up to the cap.
    The observed ratio alone takes no part: after a few processes it is what the processes are taken to find out."""
    interval = ratio.interval()
    if interval is None:
        return False
    edge = 1 + rule.planning_effect
    return interval[0] < 1 / edge or interval[1] > edge


def spread_of(found: Estimate | None) -> float | None:
    """A cell's process-to-process spread: the standard deviation of its log process medians (its log standard error
    times the square root of its processes); None with fewer than two processes."""
    if found is None or found.log_se is None or found.processes < 2:
        return None
    return found.log_se * math.sqrt(found.processes)


def undecided_against(judge: Judge, a: Result, b: Result, rule: SequentialRule) -> bool:
    """Whether one more process of B, this run's cell, could help decide B / A, where A is the same cell in another
    folder (an earlier run, a reviewer's): the comparison is undecided, decidable (no gate, one processor, like work),
    B has run fewer processes than the cap (every one counted: SequentialRule.another_allowed), and at the cap it
    would be decided (PLANNING_POWER of the time) at the ratio measured so far, A's processes as they are and the runs'
    spread the Judge carries between separate runs, which more processes of B do not shrink."""
    ratio = open_ratio(judge, a, b)
    if ratio is None or ratio.log_se is None:
        return False
    ea, eb = judge.estimate(a), judge.estimate(b)
    spread = spread_of(eb)
    if spread is None or ea.log_se is None or not rule.another_allowed(len(b.runs)):
        return False
    runs = judge.run_spread(b)  # the part between the runs, where the Judge carried one
    variances = [ea.log_se**2, spread**2 / rule.cap, max(ratio.log_se**2 - ea.log_se**2 - eb.log_se**2, 0.0)]
    return decided_with(math.log(ratio.value), variances, [ea.dof, rule.cap - 1, runs.dof if runs else math.inf],
                        rule.confidence)  # fmt: skip


def open_ratio(judge: Judge, a: Result, b: Result) -> Ratio | None:
    """B / A where more processes could still change its verdict: judged inconclusive, yet decidable (no noisy side,
    one processor, like work); None otherwise."""
    ratio = judge.ratio(a, b)
    if ratio is None or not ratio.decidable or not ratio.comparable or ratio.value <= 0:
        return None
    return ratio if verdict(ratio) == INCONCLUSIVE else None


def undecided_sides(judge: Judge, a: Result, b: Result, rule: SequentialRule) -> list[Result]:
    """The sides of B / A that one more process could help decide: none where the comparison is decided, kept out of
    any verdict (a noisy side, two processors, unlike work), a side of one process (no spread of its own), or one
    whose interval already rules out a difference of the rule's planning effect (worth_more); else each side the cap
    allows another
    process, every process it ran counted, those set aside when judged too (SequentialRule.another_allowed)."""
    ratio = open_ratio(judge, a, b)
    if ratio is None:
        return []
    spreads = (spread_of(judge.estimate(a)), spread_of(judge.estimate(b)))
    if None in spreads or not worth_more(ratio, rule):
        return []
    return [side for side in (a, b) if rule.another_allowed(len(side.runs))]
