"""The timing core: the only code that reads the clock around a step, and the statistics of what it read.

A window opens after the device has finished all earlier work (`Device.barrier`) and closes after the step's own
work has finished (`Device.sync(result)`). Framework loops tile their windows (`lap`): a window closes at a step's
end and the next one opens at once, so whatever the loop does between two steps (taking the next batch from its
input, its own bookkeeping) is in some step's window on every backend alike.

Warm-up is decided online: at least `warmup_steps`, and more (up to `max_warmup_steps`) while the last window
still compiled (the framework's compile/retrace counter moved). What still looks unsteady in the timed windows
(compile events, a step far above the median, an impossible derived value) is reported, never hidden.
"""
from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from bench.stats import percentile  # noqa: F401  (the timing core's statistics use it; others import it from here)

OUTLIER_FACTOR = 5.0  # a timed step above this multiple of the median is "far above" it


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
    `max_warmup_steps` while compiling), then `timed_steps`. `windows_per_step` > 1 groups windows into one step
    (StableDiffusion's high/low call pair)."""

    warmup_steps: int
    timed_steps: int
    max_warmup_steps: int | None = None
    windows_per_step: int = 1

    def __post_init__(self) -> None:
        if self.timed_steps < 1 or self.warmup_steps < 0 or self.windows_per_step < 1:
            raise ValueError(f"invalid window plan: {self}")
        if self.max_warmup_steps is not None and self.max_warmup_steps < self.warmup_steps:
            raise ValueError(f"max_warmup_steps {self.max_warmup_steps} is below warmup_steps {self.warmup_steps}")

    @property
    def warmup_cap(self) -> int:
        return self.warmup_steps if self.max_warmup_steps is None else self.max_warmup_steps

    @property
    def max_steps(self) -> int:
        """The most steps a driver may have to run (a framework loop is started with this many and stopped early)."""
        return 1 + self.warmup_cap + self.timed_steps


class StepTimer:
    """Collects synchronised windows; drivers call begin()/end() around a step, or lap() between steps of a loop."""

    def __init__(self, device: Device, plan: WindowPlan, clock: Callable[[], int] = time.perf_counter_ns):
        self._device, self.plan, self._clock = device, plan, clock
        self._started: int | None = None
        self._compiles_at_begin = 0
        self.windows_ns: list[int] = []
        self.compile_events: list[int] = []  # per window
        self.tags: list[Any] = []  # per window, what the driver said it was (e.g. a call's step count)
        self.warmup_run: int | None = None  # decided online, once warm-up ends

    # -- the windows
    @property
    def is_open(self) -> bool:
        return self._started is not None

    @property
    def done(self) -> bool:
        return (
            self.steps_done
            >= 1 + (self.warmup_run if self.warmup_run is not None else self.plan.warmup_cap) + self.plan.timed_steps
        )

    @property
    def steps_done(self) -> int:
        return len(self.windows_ns) // self.plan.windows_per_step

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
        if len(self.windows_ns) % self.plan.windows_per_step == 0:
            self._decide_warmup()

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
        expected = 1 + self.warmup_run + self.plan.timed_steps
        steps = len(self.windows_ns) // self.plan.windows_per_step
        if len(values) != expected or steps != expected:
            raise RuntimeError(
                f"expected {expected} steps (1 first + {self.warmup_run} warm-up + {self.plan.timed_steps} timed), got {len(values)}"
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
        if outliers:
            reasons.append(f"{len(outliers)} timed step(s) above {OUTLIER_FACTOR:g}x the median")
        return Steadiness(not reasons, reasons, self.warmup_run or 0, events, outliers)


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
            raise ValueError(f"step times must be finite and non-negative: {values}")
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
