"""How long the paper matrix takes on 1, 8 and 64 GPUs, from the published per-step figures.

    python -m bench.cluster.estimate          # the Markdown table in docs/CLUSTER.md

Each cell costs its published ms/step x (1 first + warm-up + timed steps) of the paper profile, plus a fixed
per-cell overhead (ASSUMED_OVERHEAD_S: process start-up, model build, compile; not measured on the A100).
Cells run in the matrix's order, each on the first GPU to free up (bench/cluster/gpus.py's schedule, what
`run --jobs N` and a Slurm array with N GPUs do); Slurm queue waits are not counted.
"""
from __future__ import annotations

from bench.cluster.gpus import makespan
from bench.profiles import get_profile
from bench.progress import hms
from bench.published import published_ms
from bench.registry import Cell, get_model, plan_cells

ASSUMED_OVERHEAD_S = 120  # an assumption: start-up + build + trace/compile per cell process
GPU_COUNTS = (1, 8, 64)
# Native PyTorch has no published column: its cells are costed at Keras 3 (PyTorch)'s figure, an assumption
# (same framework, eager).
COSTED_AS = {"native-torch": "torch"}


def cell_seconds(cell: Cell, figures=None, overhead_s: float = ASSUMED_OVERHEAD_S) -> float:
    """Estimated wall time of one cell; 0 for cells that are recorded as unsupported without running."""
    if get_model(cell.model).why_cell_unsupported(cell):
        return 0.0
    ms = (figures or published_ms())[(cell.model, cell.task, cell.batch_size)][COSTED_AS.get(cell.backend, cell.backend)]
    if ms is None:
        raise ValueError(f"no published figure for {cell.key}")
    return ms * (1 + cell.warmup_steps + cell.timed_steps) / 1000 + overhead_s  # at the least warm-up


def matrix_estimate(gpu_counts=GPU_COUNTS, overhead_s: float = ASSUMED_OVERHEAD_S) -> dict:
    cells = plan_cells("paper")
    figures = published_ms()
    durations = [cell_seconds(c, figures, overhead_s) for c in cells]
    running = [d for d in durations if d > 0]
    return {
        "cells": len(cells),
        "running_cells": len(running),
        "steps_per_cell": get_profile("paper").warmup_steps + get_profile("paper").timed_steps + 1,
        "longest_cell_s": max(running),
        "wall_s": {n: makespan(running, n) for n in gpu_counts},
    }


def markdown(overhead_s: float = ASSUMED_OVERHEAD_S) -> str:
    e = matrix_estimate(overhead_s=overhead_s)
    lines = [
        "| GPUs | paper matrix, wall time (h:mm:ss) |",
        "|---:|---:|",
        *(f"| {n} | {hms(s)} |" for n, s in e["wall_s"].items()),
        "",
        f"{e['running_cells']} of the {e['cells']} cells run (the rest are Keras 2 LLM cells, recorded as unsupported); each costs "
        f"its published ms/step x {e['steps_per_cell']} steps (1 first + 2 warm-up + 100 timed) plus an assumed {overhead_s / 60:g} min "
        f"of start-up and compile; native PyTorch cells are costed at Keras 3 (PyTorch)'s figure. The longest cell takes "
        f"{hms(e['longest_cell_s'])}, a floor no number of GPUs lowers.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown())
