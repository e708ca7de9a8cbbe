"""Many GPUs, one box: which cell runs on which GPU. Pure: no processes, no clocks of its own.

A cell takes the lowest free GPU and holds it until it ends, so two cells never share a GPU (they would
disturb each other's timing and memory); the next cell in order starts as soon as any GPU frees up.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass


class GpuPool:
    """Free GPU indices; thread-safe, so orchestrator threads can take and give back slots."""

    def __init__(self, indices: list[int]):
        if len(set(indices)) != len(indices) or not indices:
            raise ValueError(f"need distinct GPU indices, got {indices}")
        self._free = sorted(indices)
        self._cond = threading.Condition()

    def take(self) -> int:
        """The lowest free GPU, waiting for one if all are busy."""
        with self._cond:
            self._cond.wait_for(lambda: self._free)
            return self._free.pop(0)

    def give_back(self, gpu: int) -> None:
        with self._cond:
            if gpu in self._free:
                raise ValueError(f"GPU {gpu} given back twice")
            self._free.append(gpu)
            self._free.sort()
            self._cond.notify()

    @property
    def free(self) -> list[int]:
        with self._cond:
            return list(self._free)


@dataclass(frozen=True)
class Slot:
    cell: int  # the cell's position in the list
    gpu: int
    start: float
    end: float


def schedule(durations: list[float], gpus: list[int]) -> list[Slot]:
    """The timeline run_cells_parallel produces for cells of these durations, in order: each cell starts when
    the earliest GPU frees (the lowest index on a tie, as GpuPool.take gives). For tests and for estimating a
    matrix's wall time on N GPUs."""
    if len(set(gpus)) != len(gpus) or not gpus:
        raise ValueError(f"need distinct GPU indices, got {gpus}")
    free_at = {gpu: 0.0 for gpu in gpus}
    slots = []
    for index, duration in enumerate(durations):
        start = min(free_at.values())
        gpu = min(g for g, t in free_at.items() if t == start)
        free_at[gpu] = start + duration
        slots.append(Slot(index, gpu, start, start + duration))
    return slots


def makespan(durations: list[float], gpus: int) -> float:
    """Wall time of cells run in order on this many GPUs, one cell per GPU at a time."""
    slots = schedule(durations, list(range(gpus)))
    return max((s.end for s in slots), default=0.0)


def refuse_jobs(jobs: int, gpu_count: int) -> str | None:
    """Why `--jobs` cannot be honoured here, as one line; None when it can."""
    if jobs <= 1 or jobs <= gpu_count:
        return None
    return (f"--jobs {jobs} needs a GPU per job, and {gpu_count} GPU{'s are' if gpu_count != 1 else ' is'} visible: "
            "parallel cells on a CPU (or sharing a GPU) would disturb each other's timing")  # fmt: skip
