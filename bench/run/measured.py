"""What paper cells on a GPU have cost, measured: a process's time beyond its steps (start-up, the model's build, the
first step's trace and compile), the process-to-process spread of a cell's figure, and how many timed steps sampling
took. The estimator (bench/catalogue/cost.py, decided.py) uses these in place of its assumptions as soon as any
GPU result exists, in the results folder given or the committed results/, and says which figure came from where.

A measurement is borrowed by the nearest cell class that has one: the same backend, variant kind (compiled or not)
and task; else the same backend and variant kind at any task; else nothing is borrowed across backends (a Keras 2 or
TensorFlow process's set-up is not a JAX one's) and the assumption stands. Spreads pool over a backend and variant
kind, else over every GPU cell measured.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from bench.base.errors import BenchError
from bench.base.provenance import REPO_ROOT
from bench.catalogue.registry import Cell

PAPER_SHAPES = ("paper",)  # profiles whose cells run the published shapes on a GPU
MIN_KIND_DOF = 6  # a backend's own process spread is planned with alone from this many degrees of freedom


def cell_kind(cell: Cell) -> tuple[str, str]:
    """The backend and its variant kind: torch.compile's processes pay a compile eager ones do not."""
    return cell.backend, "compiled" if cell.variant == "compiled" else "default"


def kind_label(kind: tuple[str, str]) -> str:
    return kind[0] if kind[1] == "default" else f"{kind[0]} {kind[1]}"


@dataclass
class Measured:
    """Per (backend, variant kind, task): each process's seconds beyond its steps; per (backend, variant kind): each
    cell's log process medians; every process's timed steps; where each came from."""

    overhead_s: dict[tuple[str, str, str], list[float]] = field(default_factory=dict)
    log_medians: dict[tuple[str, str], list[list[float]]] = field(default_factory=dict)
    timed_steps: list[int] = field(default_factory=list)
    machines: set[str] = field(default_factory=set)
    folders: set[str] = field(default_factory=set)

    def add(self, result, folder: str) -> None:
        kind = cell_kind(result.cell)
        medians = []
        for run in result.runs:
            per_step = result.cell.task_spec.windows_per_step if run.windows_ms else 1  # a pair design's windows
            extra = process_overhead_s(run, per_step)
            if extra is None:
                continue
            self.overhead_s.setdefault((*kind, result.cell.task), []).append(extra)
            if result.cell.procedure == "sampled":  # a fixed count says nothing of how many steps sampling takes
                self.timed_steps.append(len(run.timed_ms))
            medians.append(math.log(statistics.median(run.timed_ms)))
        if len(medians) >= 2:
            self.log_medians.setdefault(kind, []).append(medians)
        gpus = (result.provenance.get("machine") or {}).get("gpus") or []
        self.machines.add(f"{len(gpus)}x {gpus[0].get('name', 'GPU')}")
        self.folders.add(folder)

    @property
    def source(self) -> str:
        return f"measured on {', '.join(sorted(self.machines))} ({', '.join(sorted(self.folders))})"

    def overhead(self, cell: Cell) -> tuple[float, str] | None:
        """The median seconds a process of this cell's class spent beyond its steps, and which class it is from."""
        kind = cell_kind(cell)
        exact = self.overhead_s.get((*kind, cell.task))
        if exact:
            return statistics.median(exact), f"{kind_label(kind)} {cell.task}, {len(exact)} processes"
        same = [v for (b, v_kind, _), values in self.overhead_s.items() if (b, v_kind) == kind for v in values]
        if same:
            return statistics.median(same), f"{kind_label(kind)} at other tasks, {len(same)} processes"
        return None

    def spread(self, cell: Cell) -> tuple[float, float, str] | None:
        """The standard deviation of ln(a process's median) to plan this cell with, its degrees of freedom, and what
        it pools: its kind's pooled spread where that has MIN_KIND_DOF degrees of freedom, else the larger of its
        kind's and every GPU cell's (a spread from two or three processes can be small by chance)."""
        every = pooled([m for groups in self.log_medians.values() for m in groups])
        if every is None:
            return None
        own = pooled(self.log_medians.get(cell_kind(cell), []))
        label = kind_label(cell_kind(cell))
        if own is not None and (own[1] >= MIN_KIND_DOF or own[0] >= every[0]):
            return own[0], own[1], f"{label}: {own[2]}"
        why = f"{label}'s own, {own[0]:.2%} from {own[2]}, is smaller" if own else f"{label} has none of its own"
        return every[0], every[1], f"every GPU cell: {every[2]} ({why})"

    def median_timed_steps(self) -> int | None:
        return int(statistics.median(self.timed_steps)) if self.timed_steps else None


def pooled(cells: list[list[float]]) -> tuple[float, int, str] | None:
    """The pooled standard deviation of cells' log process medians, its degrees of freedom, and what it pools."""
    dof = sum(len(m) - 1 for m in cells)
    if not dof:
        return None
    variance = sum((len(m) - 1) * statistics.variance(m) for m in cells) / dof
    return math.sqrt(variance), dof, f"{len(cells)} cells, {dof} degrees of freedom"


def process_overhead_s(run, windows_per_step: int = 1) -> float | None:
    """A process's wall time beyond its steps at their typical speed: start-up, the build, and the first step's excess
    over a typical step (its trace and compile). None for a process that did not end ok with its wall time."""
    if run.status != "ok" or not run.timed_ms or not run.wall_s or run.first_step_ms is None:
        return None
    if run.windows_ms:  # a derived figure (a pair of calls a step): its raw windows are what the process spent
        later_s = sum(run.windows_ms[windows_per_step:]) / 1000  # every step after the first
        typical_s = later_s / (len(run.warmup_ms) + len(run.timed_ms))
    else:
        later_s = (sum(run.warmup_ms) + sum(run.timed_ms)) / 1000
        typical_s = statistics.median(run.timed_ms) / 1000
    return max(run.wall_s - later_s - typical_s, 0.0)


def is_gpu_paper_result(result) -> bool:
    gpus = (result.provenance.get("machine") or {}).get("gpus") or []
    return result.cell.profile in PAPER_SHAPES and bool(gpus) and result.status == "ok"


def measure(folders: list[Path]) -> Measured:
    """Every GPU paper result's processes under these folders (history/ left out: what stands today)."""
    from bench.record.results import load, result_files

    found = Measured()
    for folder in folders:
        for path in result_files(folder):
            if "paper" not in path.relative_to(folder).parts:
                continue
            try:
                result = load(path)
            except BenchError:
                continue  # an unreadable file is `make validate`'s to name, not the estimate's
            if is_gpu_paper_result(result):
                found.add(result, _shown(folder))
    return found


def _shown(folder: Path) -> str:
    try:
        return str(folder.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(folder)


def folders_of(results_dir: Path) -> list[Path]:
    """A results folder and the short paper cells `make gpu-check` keeps under it (gpu-check/<machine>/cells)."""
    return [results_dir, *sorted((results_dir / "gpu-check").glob("*/cells"))]


@cache
def committed() -> Measured:
    """What the checkout's results/ holds (read once per process)."""
    return measure(folders_of(REPO_ROOT / "results"))
