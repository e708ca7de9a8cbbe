"""The uniform interface every implementation provides (one class per model x family)."""
from __future__ import annotations

import abc
from typing import Any

from bench.timing import StepTimer, run_steps
from bench.workloads import Cell


class Workload(abc.ABC):
    """One (model, task) on one framework: built once by setup(), then driven for cell.total_steps steps.

    Subclasses implement setup(), sync() and either step() (the plain loop drives it) or drive()
    (a framework's own loop, such as Keras fit, calls timer.begin()/end() from its callbacks).
    """

    unit = "ms/step"

    def __init__(self, cell: Cell, shape: Any):
        self.cell = cell
        self.shape = shape

    @abc.abstractmethod
    def setup(self) -> None:
        """Build the model and the synthetic data; not timed as a step."""

    @abc.abstractmethod
    def sync(self, value: Any) -> None:
        """Block until the device has finished the work that produced `value` (and all earlier work)."""

    def step(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} drives its own loop")

    def drive(self, timer: StepTimer, count: int) -> None:
        run_steps(self.step, timer, count)

    def derive(self, windows_ms: list[float]) -> list[float]:
        """Turn the measured windows into per-step figures (identity unless a workload times pairs)."""
        return windows_ms

    def tokens_per_step(self) -> int | None:
        """Generated tokens per step, for generate tasks (reported as tokens/s)."""
        return None

    def settings(self) -> dict[str, Any]:
        """Effective settings of this run: jit_compile, dtypes, precision, parameter counts, shapes."""
        return {}

    def check(self) -> None:
        """Post-run assertions (e.g. generated length); raise on a violated invariant."""
