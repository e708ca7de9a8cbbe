"""A machine that switches between two states during an interleaved comparison, named and judged within one state.

On these shared 2-core hosts a cell's processes can fall in two groups 1.7-1.9x apart (6.8-7.0 ms and 11.6-13.5 ms
on one native eager BERT fit) while nothing else runs: the machine, not the code, moved between a fast and a slow
state. Pooled, the two groups make a process spread of 30% or more, and an interleaved +20% comes out "inconclusive,
0.7-2.5". Taking turns (A B, B A, ...) puts both sides in both states, so comparing like with like, each side's
processes of the same state, answers the question the pooled interval cannot.

The states are read from both sides' processes together (their sorted medians split at their largest gap, beyond
STATE_GAP, at least two processes a group), and named only where both sides split so and their two states lie as
far apart (within SAME_STATES of each other): a split on one side alone is that side's, a change or a slow
minority (stats.process_groups names it). The state compared is chosen by the counts alone, before any ratio: the
one with the most processes on its smaller side, at least MIN_IN_STATE a side."""
from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.base import stats

if TYPE_CHECKING:
    from bench.judge import Judge
    from bench.record.results import Result

STATE_GAP = 1.3  # beyond a process spread's tail (4-12% here); states 1.7-1.9x apart leave 1.4x between them at +20%
SAME_STATES = 1.25  # the slow state over the fast one, on side B against side A, within this either way
MIN_IN_STATE = 3  # processes a side in the state compared: its own spread, with two degrees of freedom
FAST, SLOW = "fast", "slow"


def split(medians: list[float]) -> float | None:
    """Where processes' medians split in a fast and a slow group: the midpoint (geometric) of their largest gap,
    where that gap is beyond STATE_GAP and each group holds two or more. None: one state."""
    ordered = sorted(medians)
    if len(ordered) < 4:
        return None
    gap, at = max((ordered[i + 1] / ordered[i], i + 1) for i in range(1, len(ordered) - 2))
    return (ordered[at - 1] * ordered[at]) ** 0.5 if gap > STATE_GAP else None


@dataclass(frozen=True)
class MachineStates:
    """Each side's processes in the machine's fast and slow state, and the state a comparison is judged in."""

    groups: dict[str, tuple[list[int], list[int]]]  # side -> indices of its fast and its slow processes
    medians: dict[str, tuple[float | None, float | None]]  # side -> its fast and its slow processes' median
    judged: str | None  # FAST, SLOW, or None: no state holds MIN_IN_STATE processes on each side

    def apart(self) -> float:
        """The slow state over the fast one: the mean over the sides with processes in both."""
        fast = statistics.median(m for m, _ in self.medians.values() if m)
        slow = statistics.median(m for _, m in self.medians.values() if m)
        return slow / fast

    def chosen(self, side: str) -> list[int]:
        fast, slow = self.groups[side]
        return fast if self.judged == FAST else slow

    def to_dict(self) -> dict:
        return {"apart": self.apart(), "judged": self.judged,
                "processes": {side: {FAST: len(fast), SLOW: len(slow)} for side, (fast, slow) in self.groups.items()},
                "medians": {side: {FAST: fast, SLOW: slow} for side, (fast, slow) in self.medians.items()}}

    def text(self, unit: str = "ms") -> str:
        counts = ", ".join(f"{side} {len(fast)} + {len(slow)}" for side, (fast, slow) in self.groups.items())
        near = "; ".join(f"{side} near " + " and ".join(f"{m:.4g}" if m else "none" for m in pair) + f" {unit}"
                         for side, pair in self.medians.items())
        out = (f"the machine switched between two states {self.apart():.2f}x apart during the comparison ({near}; "
               f"processes fast + slow: {counts})")
        if self.judged is None:
            return out + f": no state held {MIN_IN_STATE} processes of each side, so none is compared"
        return out + f": judged within its {self.judged} state"


def machine_states(medians: dict[str, list[float]]) -> MachineStates | None:
    """The machine's two states where the sides' processes, together, split in two groups far apart and one group
    holds processes of every side (a change that moved one side wholly away is not a state); a side's processes of
    both groups must lie as far apart as another side's. None otherwise (module docstring)."""
    cut = split([m for values in medians.values() for m in values])
    if cut is None or len(medians) < 2:
        return None
    groups = {side: ([i for i, m in enumerate(values) if m < cut], [i for i, m in enumerate(values) if m >= cut])
              for side, values in medians.items()}  # fmt: skip
    if not any(all(g[k] for g in groups.values()) for k in (0, 1)):
        return None
    centre = lambda side, k: statistics.median(medians[side][i] for i in groups[side][k]) if groups[side][k] else None
    centres = {side: (centre(side, 0), centre(side, 1)) for side in groups}
    aparts = [slow / fast for fast, slow in centres.values() if fast and slow]
    if aparts and max(aparts) / min(aparts) > SAME_STATES:
        return None
    sizes = {state: min(len(g[k]) for g in groups.values()) for k, state in enumerate((FAST, SLOW))}
    judged = max((FAST, SLOW), key=lambda s: (sizes[s], s == FAST))
    return MachineStates(groups, centres, judged if sizes[judged] >= MIN_IN_STATE else None)  # type: ignore[arg-type]


def within_state(judge: Judge, a: Result, b: Result) -> tuple[MachineStates, stats.Ratio | None] | None:
    """B / A judged within the machine's state (its processes of one state a side, each gate the Judge applies), and
    the states, where the machine switched between two during an interleaved comparison; None where it did not. The
    ratio is None where no state holds enough processes of both sides."""
    kept = {"A": judge.kept_runs(a)[0], "B": judge.kept_runs(b)[0]}
    states = machine_states({side: [statistics.median(run.timed_ms) for run in runs] for side, runs in kept.items()})
    if states is None:
        return None
    if states.judged is None:
        return states, None
    within = {side: dataclasses.replace(result, runs=[kept[side][i] for i in sorted(states.chosen(side))])
              for side, result in (("A", a), ("B", b))}  # fmt: skip
    found = judge.ratio(within["A"], within["B"])
    pooled = judge.ratio(a, b)
    if found is not None:
        found = found.noted(states.text(a.unit) + (f"; all processes pooled: {stats.fmt_ratio(pooled)}" if pooled
                                                   else ""))
    return states, found


def samples_within_state(samples: dict[str, list[list[float]]]) -> tuple[MachineStates | None, stats.Ratio | None]:
    """The same rule on bare step times (side -> its processes' steps), for simulating its rates: B / A within the
    chosen state where the machine switched, else over every process."""
    states = machine_states({side: [statistics.median(s) for s in steps] for side, steps in samples.items()})
    if states is not None and states.judged is None:
        return states, None
    chosen = {side: [steps[i] for i in sorted(states.chosen(side))] if states else steps
              for side, steps in samples.items()}  # fmt: skip
    a, b = stats.estimate(chosen["A"]), stats.estimate(chosen["B"])
    return states, stats.ratio(a, b) if a and b else None
