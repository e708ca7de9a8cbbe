"""Processes until decided: the sequential rule a profile replicates its cells under, and how many processes a
comparison needs under it.

A cell starts with `first` processes (the profile's `repeats`); after each round every comparison the table makes is
judged, and the cells of an undecided one get one more process, up to `cap` (the profile's `max_repeats`). Looking
after every round and stopping when decided would call a difference by chance more often than a fixed design's 5%:
each look is judged at 1 - alpha / looks instead of 1 - alpha (Bonferroni over the looks, a conservative alpha
spending), so each comparison's chance of a false call stays at most alpha whatever round it stops in. A profile
whose cap equals its first count replicates a fixed number of processes, judged at 1 - alpha.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from bench.judge import Judge
from bench.results import Result
from bench.stats import CONFIDENCE, EQUIVALENCE_BAND, INCONCLUSIVE, Estimate, Ratio, t_quantile, verdict, welch_dof

PLANNING_POWER = 0.8  # a comparison counts as decided at the processes where it is decided this often


@dataclass(frozen=True)
class SequentialRule:
    first: int  # processes a cell starts with
    cap: int  # the most processes a cell gets
    alpha: float = 1 - CONFIDENCE  # the chance of a false call allowed each comparison, over all its looks

    def __post_init__(self) -> None:
        if self.first < 1 or self.cap < self.first or not 0 < self.alpha < 1:
            raise ValueError(f"invalid sequential rule: {self}")

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
            f"(Bonferroni), so a comparison's chance of a false call stays at most {self.alpha:.0%}"
        )

    def to_dict(self) -> dict:
        return {"first": self.first, "cap": self.cap, "alpha": self.alpha, "looks": self.looks,
                "confidence": self.confidence}  # fmt: skip


def rule_of(profile) -> SequentialRule:
    """The profile's rule (bench/profiles.toml repeats and max_repeats)."""
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


def spread_of(found: Estimate | None) -> float | None:
    """A cell's process-to-process spread: the standard deviation of its log process medians (its log standard error
    times the square root of its processes); None with fewer than two processes."""
    if found is None or found.log_se is None or found.processes < 2:
        return None
    return found.log_se * math.sqrt(found.processes)


def undecided_against(judge: Judge, a: Result, b: Result, rule: SequentialRule) -> bool:
    """Whether one more process of B, this run's cell, could help decide B / A, where A is the same cell in another
    folder (an earlier run, a reviewer's): the comparison is undecided, decidable (no gate, one processor, like work),
    B is below the cap, and at the cap it would be decided (PLANNING_POWER of the time) at the ratio measured so far,
    A's processes as they are and the runs' spread the Judge carries between separate runs, which more processes of B
    do not shrink."""
    ratio = open_ratio(judge, a, b)
    if ratio is None or ratio.log_se is None:
        return False
    ea, eb = judge.estimate(a), judge.estimate(b)
    spread = spread_of(eb)
    if spread is None or ea.log_se is None or eb.processes >= rule.cap:
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
    any verdict (a noisy side, two processors, unlike work), or undecidable even at the rule's cap at the ratio and
    spreads measured so far; else each side still below the cap."""
    ratio = open_ratio(judge, a, b)
    if ratio is None:
        return []
    spreads = (spread_of(judge.estimate(a)), spread_of(judge.estimate(b)))
    if None in spreads or processes_needed(math.log(ratio.value), spreads, rule) is None:
        return []
    return [side for side in (a, b) if len(judge.kept_runs(side)[0]) < rule.cap]
