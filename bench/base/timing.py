"""The timing core: the only code that reads the clock around a step, and the statistics of what it read.

A window opens after the device has finished all earlier work (`Device.barrier`) and closes after the step's own
work has finished (`Device.sync(result)`). Framework loops tile their windows (`lap`): a window closes at a step's
end and the next one opens at once, so whatever the loop does between two steps (taking the next batch from its
input, its own bookkeeping) is in some step's window on every backend alike.

Warm-up is decided online: at least `warmup_steps`, and more (up to `max_warmup_steps`) while the last window
still compiled (the framework's compile/retrace counter moved). What still looks unsteady in the timed windows
(compile events, a step far above the median, an impossible derived value) is reported, never hidden.

So is the end of the timed steps (the sampling rule), decided once after each whole timed step: a fixed plan takes
exactly `timed_steps`; a sampling plan stops once it has at least `timed_steps` steps and `min_timed_s` seconds
and its median's 95% interval (bench/base/stats.py, distribution-free) is within `target_half_width` of the median,
or at its cap (`max_timed_steps` steps or `max_timed_s` seconds, never before the minimum steps). A cheap, quiet
step reaches the target in a fraction of a second; a noisy one runs to the cap and says so.
"""
from __future__ import annotations

import bisect
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from bench.base.stats import (
    median_interval,
    percentile,  # noqa: F401  (the timing core's statistics use it; others import it from here)
    relative_half_width,
)

OUTLIER_FACTOR = 5.0  # a timed step above this multiple of the median is "far above" it
# A cell that samples hundreds of steps on a shared machine meets the odd preempted one, which moves no median: the
# steps are unsteady when more than this share of them is far above the median (with a few steps, one is enough).
OUTLIER_SHARE = 0.01

# What ended a process's timed steps (a run's `sampling.stopped_by`).
PRECISION, MAX_STEPS, MAX_S, FIXED = "precision", "max_steps", "max_s", "fixed"


class Device(Protocol):
    def sync(self, result: Any) -> None:
        """Block until the work that produced `result` has finished."""

    def barrier(self) -> None:
        """Block until every piece of work dispatched so far has finished."""

    def compile_count(self) -> int:
        """A monotonic count of the compiles/retraces the framework has done so far (0 if it cannot tell)."""


class HostDevice:
    """Work that is synchronous by construction (plain Python, NumPy): nothing to wait for, nothing compiles."""

    def sync(self, result: Any = None) -> None:
        pass

    def barrier(self) -> None:
        pass

    def compile_count(self) -> int:
        return 0


@dataclass(frozen=True)
class WindowPlan:
    """How many windows a cell takes: 1 first (trace + compile), warm-up (at least `warmup_steps`, extended up to
    `max_warmup_steps` while compiling), then the timed steps. `windows_per_step` > 1 groups windows into one step
    (StableDiffusion's high/low call pair).

    The timed steps: exactly `timed_steps` when `max_timed_steps` is None or equal to it (a fixed count); else at
    least `timed_steps` and `min_timed_s` seconds, then until the median's relative 95% half-width is at most
    `target_half_width`, or `max_timed_steps` steps, or `max_timed_s` seconds (None: no cap in seconds). A fixed
    plan still measures its interval against `target_half_width` (None: no target to report against)."""

    warmup_steps: int
    timed_steps: int
    max_warmup_steps: int | None = None
    windows_per_step: int = 1
    max_timed_steps: int | None = None
    target_half_width: float | None = None
    min_timed_s: float = 0.0
    max_timed_s: float | None = None

    def __post_init__(self) -> None:
        if self.timed_steps < 1 or self.warmup_steps < 0 or self.windows_per_step < 1:
            raise ValueError(f"invalid window plan: {self}")
        if self.max_warmup_steps is not None and self.max_warmup_steps < self.warmup_steps:
            raise ValueError(f"max_warmup_steps {self.max_warmup_steps} is below warmup_steps {self.warmup_steps}")
        if self.max_timed_steps is not None and self.max_timed_steps < self.timed_steps:
            raise ValueError(f"max_timed_steps {self.max_timed_steps} is below timed_steps {self.timed_steps}")
        if self.target_half_width is not None and not 0 < self.target_half_width < 1:
            raise ValueError(f"target_half_width must be a share between 0 and 1, got {self.target_half_width}")
        if not self.fixed and self.target_half_width is None:
            raise ValueError("a plan that samples to a precision needs a target_half_width")
        if self.min_timed_s < 0 or (self.max_timed_s is not None and self.max_timed_s <= 0):
            raise ValueError(f"invalid timed seconds: min {self.min_timed_s}, max {self.max_timed_s}")

    @property
    def fixed(self) -> bool:
        """Whether the plan takes exactly `timed_steps` (no sampling to a precision)."""
        return self.max_timed_steps is None or self.max_timed_steps == self.timed_steps

    @property
    def warmup_cap(self) -> int:
        return self.warmup_steps if self.max_warmup_steps is None else self.max_warmup_steps

    @property
    def timed_cap(self) -> int:
        """The most timed steps the plan may take."""
        return self.timed_steps if self.fixed else self.max_timed_steps

    @property
    def max_steps(self) -> int:
        """The most steps a driver may have to run (a framework loop is started with this many and stopped early)."""
        return 1 + self.warmup_cap + self.timed_cap

    def rule(self) -> dict[str, Any]:
        """The sampling rule as a run records it (`sampling.rule`): a fixed count has equal min_steps and max_steps
        and no seconds bounds."""
        if self.fixed:
            return {"target_half_width": self.target_half_width, "min_steps": self.timed_steps, "min_s": 0.0,
                    "max_steps": self.timed_steps, "max_s": None}  # fmt: skip
        return {"target_half_width": self.target_half_width, "min_steps": self.timed_steps, "min_s": self.min_timed_s,
                "max_steps": self.max_timed_steps, "max_s": self.max_timed_s}  # fmt: skip


class StepTimer:
    """Collects synchronised windows; drivers call begin()/end() around a step, or lap() between steps of a loop.

    `derive`: a task whose figure is derived from its windows (StableDiffusion's pair difference, bench/measure/drivers.py
    DERIVATIONS) gives the derivation, applied to one step's windows and tags at a time, so that the sampling rule
    judges the figures the cell reports. Without it, a step's figure is its windows' sum."""

    def __init__(
        self,
        device: Device,
        plan: WindowPlan,
        clock: Callable[[], int] = time.perf_counter_ns,
        derive: Callable[[list[float], list[Any]], list[float]] | None = None,
    ):
        self._device, self.plan, self._clock, self._derive = device, plan, clock, derive
        self._started: int | None = None
        self._compiles_at_begin = 0
        self.windows_ns: list[int] = []
        self.compile_events: list[int] = []  # per window
        self.tags: list[Any] = []  # per window, what the driver said it was (e.g. a call's step count)
        self.warmup_run: int | None = None  # decided online, once warm-up ends
        self.stopped_by: str | None = None  # decided online, once the timed steps end (PRECISION, MAX_STEPS, ...)
        self.timed_figures: list[float] = []  # one per timed step, in order: what the sampling rule judges
        self._timed_sorted: list[float] = []  # the same, sorted (the rule asks for the median's interval each step)
        self._timed_ns = 0  # every window of the timed steps, summed

    def companion(self, plan: WindowPlan) -> StepTimer:
        """A second timer on this one's device and clock, with a plan of its own (a driver that times two things in
        one loop, as generate times its whole calls and their prefill/decode parts): both read the same clock."""
        return StepTimer(self._device, plan, clock=self._clock)

    # -- the windows
    @property
    def is_open(self) -> bool:
        return self._started is not None

    @property
    def done(self) -> bool:
        return self.stopped_by is not None

    @property
    def steps_done(self) -> int:
        return len(self.windows_ns) // self.plan.windows_per_step

    @property
    def timed_steps_done(self) -> int:
        return 0 if self.warmup_run is None else max(0, self.steps_done - 1 - self.warmup_run)

    @property
    def timed_s(self) -> float:
        """Seconds in the timed steps' windows (every window of each, pairs included)."""
        return self._timed_ns / 1e9

    def begin(self) -> None:
        if self._started is not None:
            raise RuntimeError("StepTimer.begin() called twice without end()")
        self._device.barrier()  # earlier work must not leak into this window
        self._compiles_at_begin = self._device.compile_count()
        self._started = self._clock()

    def end(self, result: Any = None, tag: Any = None) -> None:
        if self._started is None:
            raise RuntimeError("StepTimer.end() called without begin()")
        if self.done:
            raise RuntimeError("StepTimer.end() after every planned window was taken")
        self._device.sync(result)  # the step's own work must be finished inside this window
        self.windows_ns.append(self._clock() - self._started)
        self._started = None
        self.compile_events.append(self._device.compile_count() - self._compiles_at_begin)
        self.tags.append(tag)
        if len(self.windows_ns) % self.plan.windows_per_step == 0:  # after the clock: the decisions are in no window
            self._decide_warmup()
            self._decide_stop()

    def lap(self, result: Any = None, tag: Any = None) -> bool:
        """Close this window and, unless every window is taken, open the next at once. Returns whether one is open."""
        self.end(result, tag)
        if self.done:
            return False
        self.begin()
        return True

    def _decide_warmup(self) -> None:
        """After each whole step: the first step after the minimum warm-up that compiled nothing is the first timed
        step (it shows the steady state has begun); at the cap, warm-up ends whatever the last step did."""
        if self.warmup_run is not None:
            return
        k = self.steps_done - 1  # index of the step just finished, counted after the first
        if k < 1:
            return
        per = self.plan.windows_per_step
        if sum(self.compile_events[-per:]) == 0 and k - 1 >= self.plan.warmup_steps:
            self.warmup_run = k - 1
        elif k >= self.plan.warmup_cap:
            self.warmup_run = self.plan.warmup_cap

    def _step_figure(self) -> float:
        """The figure of the step just finished: its derived value, or its windows' sum."""
        per = self.plan.windows_per_step
        windows = [ns / 1e6 for ns in self.windows_ns[-per:]]
        if self._derive is None:
            return sum(windows)
        [figure] = self._derive(windows, self.tags[-per:])
        return figure

    def _decide_stop(self) -> None:
        """After each whole step: whether the timed steps end here (the module docstring's rule)."""
        if self.stopped_by is not None or self.timed_steps_done == 0:
            return
        per, plan = self.plan.windows_per_step, self.plan
        self._timed_ns += sum(self.windows_ns[-per:])
        figure = self._step_figure()
        self.timed_figures.append(figure)
        bisect.insort(self._timed_sorted, figure)
        steps, seconds = self.timed_steps_done, self.timed_s
        if plan.fixed:
            self.stopped_by = FIXED if steps >= plan.timed_steps else None
        elif steps < plan.timed_steps:
            return
        elif seconds >= plan.min_timed_s and self.reached():
            self.stopped_by = PRECISION
        elif steps >= plan.max_timed_steps:
            self.stopped_by = MAX_STEPS
        elif plan.max_timed_s is not None and seconds >= plan.max_timed_s:
            self.stopped_by = MAX_S

    def half_width(self) -> float | None:
        """The timed figures' median 95% interval, its wider side as a share of the median (None: fewer than 6
        steps, or a median of zero or less)."""
        return relative_half_width(self._timed_sorted)

    def reached(self) -> bool:
        found = self.half_width()
        return found is not None and self.plan.target_half_width is not None and found <= self.plan.target_half_width

    def sampling(self) -> dict[str, Any]:
        """How the timed steps were chosen, as a run records it (`sampling`, docs/schema/result-v2.schema.json)."""
        if not self.done:
            raise RuntimeError("the timed steps have not ended: no sampling to record")
        interval = median_interval(self._timed_sorted)
        return {
            "rule": self.plan.rule(),
            "steps": self.timed_steps_done,
            "timed_s": round(self.timed_s, 6),
            "half_width": self.half_width(),
            "interval": [interval[0], interval[1]] if interval else None,
            "reached": self.reached(),
            "stopped_by": self.stopped_by,
        }

    # -- what was measured
    @property
    def windows_ms(self) -> list[float]:
        return [ns / 1e6 for ns in self.windows_ns]

    def split(self, values: list[float] | None = None) -> Split:
        """Split per-step values (the windows, or figures derived one per step) into first, warm-up and timed."""
        if not self.done or self.warmup_run is None:
            raise RuntimeError(
                f"the driver stopped after {self.steps_done} steps; the plan needs {1 + self.plan.warmup_steps + self.plan.timed_steps} or more"
            )
        values = self.windows_ms if values is None else values
        timed = self.timed_steps_done
        expected = 1 + self.warmup_run + timed
        if len(values) != expected or self.steps_done != expected:
            raise RuntimeError(
                f"expected {expected} steps (1 first + {self.warmup_run} warm-up + {timed} timed), got {len(values)}"
            )
        return Split(values[0], values[1 : 1 + self.warmup_run], values[1 + self.warmup_run :])

    def timed_compile_events(self) -> int:
        per = self.plan.windows_per_step
        return sum(self.compile_events[(1 + (self.warmup_run or 0)) * per :])

    def steadiness(self, timed: list[float]) -> Steadiness:
        """What in the timed steps says the cell had not reached a steady state."""
        reasons = []
        events = self.timed_compile_events()
        if events:
            reasons.append(f"{events} compile/retrace event(s) inside the timed steps")
        per = self.plan.windows_per_step
        last_warm = self.compile_events[self.warmup_run * per : (1 + self.warmup_run) * per] if self.warmup_run else []
        if self.warmup_run and self.warmup_run >= self.plan.warmup_cap and sum(last_warm):
            reasons.append(f"warm-up stopped at its cap of {self.plan.warmup_cap} steps while still compiling")
        impossible = [i for i, v in enumerate(timed) if v <= 0]
        if impossible:
            reasons.append(
                f"{len(impossible)} derived step figure(s) of zero or less (noise larger than the difference)"
            )
        positive = [v for v in timed if v > 0]
        mid = statistics.median(positive) if positive else 0.0
        outliers = [i for i, v in enumerate(timed) if mid > 0 and v > OUTLIER_FACTOR * mid]
        if outliers and len(outliers) > OUTLIER_SHARE * len(timed):
            reasons.append(
                f"{len(outliers)} of {len(timed)} timed steps above {OUTLIER_FACTOR:g}x the median "
                f"(more than {OUTLIER_SHARE:.0%})"
            )
        return Steadiness(not reasons, reasons, self.warmup_run or 0, events, outliers)


def describe_sampling(sampling: dict[str, Any], median_ms: float) -> str:
    """A run's sampling in one line, e.g. "timed 412 steps in 0.51 s: median 1.23 ms ±1.1% (target 2%, reached)"."""
    rule, stopped_by = sampling["rule"], sampling["stopped_by"]
    fixed = " (a fixed count)" if stopped_by == FIXED else ""
    head = f"timed {sampling['steps']} steps in {sampling['timed_s']:.2f} s{fixed}: median {median_ms:.4g} ms"
    width = sampling["half_width"]
    head += f" ±{width:.1%}" if width is not None else ", no interval (too few steps, or a median of zero or less)"
    target = rule.get("target_half_width")
    if target is None:
        return head
    if sampling["reached"]:
        return f"{head} (target {target * 100:g}%, reached)"
    cap = ""  # a fixed count has no cap in seconds (max_s None): each cap is formatted only when it stopped the run
    if stopped_by == MAX_STEPS:
        cap = f": capped at {rule['max_steps']} steps"
    elif stopped_by == MAX_S:
        cap = f": capped at {rule['max_s']:g} s"
    return f"{head} (target {target * 100:g}%, not reached{cap})"


@dataclass(frozen=True)
class Steadiness:
    steady: bool
    reasons: list[str]
    warmup_steps_run: int
    compile_events_timed: int
    outliers: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Split:
    """Per-step figures split into the first step (trace + compile), warm-up, and the timed steps."""

    first_ms: float
    warmup_ms: list[float]
    timed_ms: list[float]


class Stopwatch:
    """Seconds since construction, for set-up and wall times (never a step window)."""

    def __init__(self) -> None:
        self._start = time.perf_counter()

    def seconds(self) -> float:
        return round(time.perf_counter() - self._start, 3)


@dataclass(frozen=True)
class Stats:
    """Summary of a sample of step times (ms). p10/p90 by linear interpolation; cv = stdev/mean."""

    count: int
    median: float
    mean: float
    stdev: float
    p10: float
    p90: float
    min: float
    max: float
    cv: float

    @classmethod
    def of(cls, values: list[float], allow_negative: bool = False) -> Stats:
        """`allow_negative`: derived figures (a difference of two windows) may be zero or negative under noise."""
        if not values:
            raise ValueError("no values to summarise")
        if any(not math.isfinite(v) or (v < 0 and not allow_negative) for v in values):
            bad = [(i, v) for i, v in enumerate(values) if not math.isfinite(v) or (v < 0 and not allow_negative)]
            shown = ", ".join(f"#{i} {v}" for i, v in bad[:3]) + (f" and {len(bad) - 3} more" if len(bad) > 3 else "")
            raise ValueError(  # the offending windows, not all of them (a result's 31 KB once filled the line)
                f"step times must be finite and non-negative: {len(bad)} of {len(values)} are not ({shown})"
            )
        mean = statistics.fmean(values)
        stdev = statistics.stdev(values) if len(values) > 1 else 0.0
        return cls(
            count=len(values),
            median=statistics.median(values),
            mean=mean,
            stdev=stdev,
            p10=percentile(values, 10),
            p90=percentile(values, 90),
            min=min(values),
            max=max(values),
            cv=stdev / mean if mean > 0 else 0.0,
        )

    def to_dict(self) -> dict[str, float]:
        return asdict(self)
