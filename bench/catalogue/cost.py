"""How long a cell takes: every formula of a cell's time, for the progress bar's ETA, the per-cell timeout, Slurm's
--time, the budget and the paper matrix's time on 1, 8 and 64 GPUs (bench/run/decided.py, `python -m bench estimate`,
the table in docs/CLUSTER.md). What the formulas are fed, the GPU processes measured (bench/run/measured.py) and this
machine's earlier results (bench/run/budget.py), is gathered where it is read.

A cell's cost is its driver's real work at the published speed: each step runs `units_per_step` of the published
figure's unit (one step for most tasks; StableDiffusion predict's step is a pair of calls at the high and the low
denoising-step count, each with a text encoder and a VAE decoder around its denoising steps), for 1 first step +
warm-up + timed steps, plus a per-process overhead (process start-up, model build, trace and compile; more for
torch.compile variants): assumed here, the figures a timeout is sized with; the ETA and the matrix's time take the
GPU processes measured where any exist (bench/run/measured.py). The expected cost counts the
planned warm-up and the fewest timed steps; the worst case counts warm-up extended to its cap and, for a cell that
samples to a precision, the timed steps run to their cap (in steps, or in seconds: the cap's seconds and the one
step that crosses it, never fewer than the fewest steps), and the timeout is a multiple of that. A cell's processes
(its profile's repeats) each get that timeout; a Slurm task runs them all, and its --time counts every one.
Cells run in the matrix's order, each on the first GPU to free up (bench/run/gpus.py's schedule, what
`run --jobs N` and a Slurm array with N GPUs do); Slurm queue waits are not counted.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Protocol

from bench.base.published import published_ms
from bench.catalogue.backends import get_backend
from bench.catalogue.profiles import get_profile
from bench.catalogue.registry import Cell

ASSUMED_OVERHEAD_S = 120  # an assumption: start-up + build + trace/compile per cell process
ASSUMED_COMPILE_OVERHEAD_S = 300  # an assumption: torch.compile's extra first-step time (inductor, CUDA graph capture)
# An assumption: per call, a StableDiffusion pipeline's text encoder + VAE decoder + call overhead cost about this
# many denoising steps (the VAE decode of a 512x512 image is the bulk). The pair difference removes it from the
# figure, not from the time the cell takes.
SD_CALL_OVERHEAD_DENOISE_STEPS = 3
# The timeout guards against a hung cell, not a slow one: this multiple of the worst-case cost at the published
# speed (a GPU slower than the A100, a framework slower than published), and never below the profile's timeout_s.
TIMEOUT_FACTOR = 3
GPU_COUNTS = (1, 8, 64)
# Native PyTorch has no published column: its cells are costed at Keras 3 (PyTorch)'s figure, an assumption
# (same framework, eager).
COSTED_AS = {"native-torch": "torch"}


def compile_overhead_s(cell: Cell) -> float:
    """The assumed extra first-step time of a torch.compile variant (none for any other)."""
    return ASSUMED_COMPILE_OVERHEAD_S if cell.variant == "compiled" else 0


def assumed_overhead_s(cell: Cell) -> float:
    """A process's assumed time beyond its steps, where no GPU process of its class was measured."""
    return ASSUMED_OVERHEAD_S + compile_overhead_s(cell)


def planned_steps(cell: Cell) -> int:
    """The steps a process runs as planned: 1 first + the planned warm-up + the fewest timed steps."""
    return 1 + cell.warmup_steps + cell.timed_steps


def seconds_at(cell: Cell, ms_per_step: float) -> float:
    """A process's planned steps at this many ms a step (a cell's earlier median, where the table has no figure)."""
    return ms_per_step * planned_steps(cell) / 1000


def repeated_s(walls: list[float], repeats: int) -> float:
    """A cell's `repeats` processes, each as long as the mean of its earlier ones (their wall times)."""
    return repeats * statistics.fmean(walls)


def units_per_step(cell: Cell) -> float:
    """How many of the published figure's units one step of the cell's driver runs: 1, except for a driver of call
    pairs (StableDiffusion predict: the published figure is per denoising step, a step is a call at the high and
    one at the low count, and each call also encodes the prompt and decodes the image)."""
    driver = cell.task_spec.driver(get_backend(cell.backend).family)
    if driver == "step-pairs":
        shape = cell.spec.shape(cell.profile)
        return shape.denoise_steps_high + shape.denoise_steps_low + 2 * SD_CALL_OVERHEAD_DENOISE_STEPS
    return 1.0


@dataclass(frozen=True)
class CellCost:
    """One cell process's cost at the published speed: steps x units per step x published ms, plus its overhead."""

    published_ms: float  # per unit (ms/step, ms/denoising step, ms/call)
    units_per_step: float
    steps_expected: int  # 1 first + planned warm-up + the fewest timed steps
    steps_worst: int  # 1 first + warm-up at its cap + the most timed steps
    overhead_s: float
    # A cell that samples to a precision: its most timed steps (within steps_worst), its fewest, and its cap in timed
    # seconds (None: none, or a fixed count). Its timed steps end at the first step that crosses the cap in seconds,
    # so they cost at most the cap plus one step, never less than the fewest steps, never more than the most.
    timed_steps_most: int = 0
    timed_steps_least: int = 0
    max_timed_s: float | None = None

    @property
    def step_s(self) -> float:
        return self.published_ms * self.units_per_step / 1000

    @property
    def expected_s(self) -> float:
        return self.step_s * self.steps_expected + self.overhead_s

    @property
    def worst_s(self) -> float:
        if self.max_timed_s is None:
            return self.step_s * self.steps_worst + self.overhead_s
        timed = self.timed_s(self.timed_steps_most)
        return self.step_s * (self.steps_worst - self.timed_steps_most) + timed + self.overhead_s

    def timed_s(self, steps: int) -> float:
        """`steps` timed steps, cut where the cell samples to a cap in seconds: at the step that crosses it (itself
        included), never below the fewest timed steps."""
        timed = self.step_s * steps
        if self.max_timed_s is None:
            return timed
        return min(timed, max(self.max_timed_s + self.step_s, self.step_s * self.timed_steps_least))


def cell_cost(cell: Cell, figures=None, overhead_s: float = ASSUMED_OVERHEAD_S) -> CellCost | None:
    """The cost of one of the cell's processes at the published speed; None when no published figure applies (a
    batch size or profile the table does not have, an NA column, a cell recorded as unsupported without running)."""
    if cell.spec.why_cell_unsupported(cell):
        return None
    row = (figures or published_ms()).get((cell.model, cell.task, cell.batch_size))
    ms = row and row.get(COSTED_AS.get(cell.backend, cell.backend))
    if ms is None:
        return None
    plan = cell.window_plan()
    return CellCost(
        ms,
        units_per_step(cell),
        planned_steps(cell),
        1 + plan.warmup_cap + plan.timed_cap,
        overhead_s + compile_overhead_s(cell),
        timed_steps_most=plan.timed_cap,
        timed_steps_least=plan.timed_steps,
        max_timed_s=None if plan.fixed else plan.max_timed_s,
    )


def cell_seconds(cell: Cell, figures=None, overhead_s: float = ASSUMED_OVERHEAD_S) -> float:
    """Expected wall time of one cell; 0 for cells that are recorded as unsupported without running."""
    if cell.spec.why_cell_unsupported(cell):
        return 0.0
    cost = cell_cost(cell, figures, overhead_s)
    if cost is None:
        raise ValueError(f"no published figure for {cell.key}")
    return cost.expected_s


def cell_timeout_s(cell: Cell, figures=None) -> int:
    """The timeout of each of the cell's processes: TIMEOUT_FACTOR x its worst-case cost at the published speed
    (warm-up and timed steps at their caps) where it has one, and never less than its profile's timeout_s (the only
    figure for cells the published table does not cost)."""
    floor = get_profile(cell.profile).timeout_s
    cost = cell_cost(cell, figures)
    return max(floor, math.ceil(TIMEOUT_FACTOR * cost.worst_s)) if cost else floor


def task_timeout_s(cell: Cell, figures=None) -> int:
    """The longest a Slurm task that runs the cell may take: each of its profile's processes (the task's `bench run
    --repeats` runs exactly that many, one after another) up to its timeout."""
    return get_profile(cell.profile).repeats * cell_timeout_s(cell, figures)


def process_seconds(cell: Cell, overhead_s: float, timed_steps: int) -> float | None:
    """One process of the cell at the published speed: its overhead (cell_cost's, with overhead_s as its base), its
    first and warm-up steps, and `timed_steps` timed ones, cut at the cell's cap in seconds; None without a
    published figure."""
    cost = cell_cost(cell, overhead_s=overhead_s)
    if cost is None:
        return None
    return cost.overhead_s + cost.step_s * (1 + cell.warmup_steps) + cost.timed_s(timed_steps)


class Measurements(Protocol):
    """What GPU processes have cost, measured (bench/run/measured.py Measured)."""

    def overhead(self, cell: Cell) -> tuple[float, str] | None: ...

    def median_timed_steps(self) -> int | None: ...


def expected_timed_steps(cell: Cell, measured: Measurements) -> int:
    """The timed steps a sampled process is expected to take: the median of the sampled GPU processes measured,
    within the cell's fewest and most (the fewest where none is measured)."""
    plan = cell.window_plan()
    typical = measured.median_timed_steps() or plan.timed_steps
    return min(max(typical, plan.timed_steps), plan.timed_cap)


def overhead_of(cell: Cell, measured: Measurements) -> tuple[float, str]:
    """A process's time beyond its steps: measured for its class where any GPU process was, else assumed."""
    own = measured.overhead(cell)
    if own is not None:
        return own[0], f"measured ({own[1]})"
    return assumed_overhead_s(cell), "assumed"


def expected_process_s(cell: Cell, measured: Measurements) -> float | None:
    """One process of a paper cell, expected (the progress bar's, the budget's and the decided table's), with the GPU
    processes measured; None without a published figure."""
    return process_seconds(cell, overhead_of(cell, measured)[0], expected_timed_steps(cell, measured))


if __name__ == "__main__":
    import sys

    sys.exit("the paper matrix's time is `python -m bench estimate` (bench/run/decided.py)")
