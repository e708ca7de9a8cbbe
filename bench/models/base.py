"""The uniform interface every implementation provides (one class per model x family).

A workload builds its model and data in setup() and exposes what its task's driver (bench/measure/drivers.py, chosen by
the task spec) needs: `step()` for "steps", `call(num_steps)` for "step-pairs", `model` + `data` for the Keras
loops, `model` + `training_dataset()` + `trainer_arguments()` for "trainer". It never reads the clock.
"""
from __future__ import annotations

import abc
from typing import Any

from bench.catalogue.backends import get_backend
from bench.catalogue.registry import Cell

SEED = 1234  # every workload's seed (frameworks, data, the Trainer): stated here only
COMPILED_TRAIN_STEP = (
    "train_step (forward, loss, backward, Adam)"  # settings' compiled_function of a compiled native fit
)


class Workload(abc.ABC):
    seed = SEED

    def __init__(self, cell: Cell, shape: Any):
        self.cell = cell
        self.shape = shape
        self.task = cell.task_spec
        self.driver = self.task.driver(get_backend(cell.backend).family)
        self.steps_run = 0  # set after the driver ran: the number of steps (first + warm-up + timed) it took
        # the "generate" driver's timer of the one-token and partial calls (bench/base/generate_split.py)
        self.split_timer = None

    @property
    def unit(self) -> str:
        return self.task.unit

    @property
    @abc.abstractmethod
    def timing_device(self):
        """The framework's bench.base.timing.Device (sync, barrier, compile counter)."""

    @abc.abstractmethod
    def setup(self) -> None:
        """Build the model and the synthetic data; not timed as a step."""

    def watch_compiles(self) -> None:
        """Point the device's compile counter at functions created lazily by a framework loop (TensorFlow)."""

    def step(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no step() for the 'steps' driver")

    def call(self, num_steps: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no call() for the 'step-pairs' driver")

    def generate(self, new_tokens: int) -> Any:
        """One generate call writing `new_tokens` new tokens per sequence on the whole call's prompt, padded length
        and compiled function: the "generate" driver's one-token and partial calls (bench/base/generate_split.py)."""
        raise NotImplementedError(f"{type(self).__name__} has no generate() for the 'generate' driver")

    def generate_work(self) -> dict[str, Any]:
        """What each phase of a generate call computes in this library (the run's generate_split): `prompt_tokens`,
        `prefill_positions` (padding included), `decode_steps_per_call`, `decode_attends_over` (per decode step,
        the key/value length its attention spans) and `split_calls` (how the one-token and partial calls ran)."""
        return {}

    def tokens_per_step(self) -> int | None:
        """Generated tokens per step, for generate tasks (reported as tokens/s)."""
        count = self.task.tokens_per_step
        return count(self.shape, self.cell.batch_size) if count else None

    def settings(self) -> dict[str, Any]:
        """Effective settings of this run: jit_compile, dtypes, precision, parameter counts, shapes."""
        return {}

    def cuda_graph_problems(self, steadiness) -> list[str]:
        """Why the cell's CUDA graphs did not replay in its timed steps (a compiled GPU cell: bench/models/torch_common.py);
        none for a workload that records no CUDA graphs."""
        return []

    def check(self) -> None:
        """Post-run assertions (e.g. generated length); raise on a violated invariant."""
