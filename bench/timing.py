"""The timing core: synchronised per-step windows on a monotonic clock, and their statistics.

Every timed window starts after the device has finished earlier work and ends after the
step's own work has finished: `sync` is called at both edges. Without the closing sync an
asynchronously dispatched step (JAX, CUDA) reads as the time to enqueue it, not to run it.
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable

Sync = Callable[[Any], None]


def no_sync(_: Any = None) -> None:
    """For work that is synchronous by construction (plain Python, NumPy)."""


class StepTimer:
    """Collects one synchronised window per step; drivers call begin()/end() around each step.

    A driver may be a plain loop (`run_steps`) or a framework's own loop with callbacks
    (Keras fit/predict, the transformers Trainer): the windows are measured the same way.
    """

    def __init__(self, sync: Sync, clock: Callable[[], int] = time.perf_counter_ns):
        self._sync = sync
        self._clock = clock
        self._started: int | None = None
        self.windows_ns: list[int] = []

    def begin(self, pending: Any = None) -> None:
        if self._started is not None:
            raise RuntimeError("StepTimer.begin() called twice without end()")
        self._sync(pending)  # earlier work must not leak into this window
        self._started = self._clock()

    def end(self, result: Any = None) -> None:
        if self._started is None:
            raise RuntimeError("StepTimer.end() called without begin()")
        self._sync(result)  # the step's own work must be finished inside this window
        self.windows_ns.append(self._clock() - self._started)
        self._started = None

    @property
    def windows_ms(self) -> list[float]:
        return [ns / 1e6 for ns in self.windows_ns]


def run_steps(step: Callable[[], Any], timer: StepTimer, count: int) -> None:
    """The plain driver: `count` calls of `step`, each in its own synchronised window."""
    for _ in range(count):
        timer.begin()
        result = step()
        timer.end(result)


@dataclass(frozen=True)
class Split:
    """Raw windows split into the first step (trace + compile), warm-up, and the timed steps."""

    first_ms: float
    warmup_ms: list[float]
    timed_ms: list[float]

    @classmethod
    def of(cls, windows_ms: list[float], warmup: int, timed: int) -> "Split":
        expected = 1 + warmup + timed
        if len(windows_ms) != expected:
            raise RuntimeError(f"expected {expected} timed windows (1 first + {warmup} warm-up + {timed}), got {len(windows_ms)}")
        return cls(windows_ms[0], windows_ms[1 : 1 + warmup], windows_ms[1 + warmup :])


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
    def of(cls, values: list[float]) -> "Stats":
        if not values:
            raise ValueError("no values to summarise")
        if any(not math.isfinite(v) or v < 0 for v in values):
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


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile with linear interpolation between order statistics (NumPy's default)."""
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be in [0, 100], got {q}")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
