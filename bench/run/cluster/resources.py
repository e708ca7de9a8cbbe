"""What one cell asks Slurm for: wall time, host memory, GPUs and CPUs."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from bench.base.errors import BenchError
from bench.catalogue.registry import Cell

# Start-up, environment import and result writing on top of the cell's own timeouts (the orchestrator kills each of
# a cell's processes at its timeout, bench/catalogue/cost.py task_timeout_s; Slurm must not kill the orchestrator
# before it has recorded that).
TIME_MARGIN_S = 600
# Host memory when results/plan-<profile>.json has no figure for the cell. paper: a 7B LLM passes through host memory
# in bfloat16 (~17 GB) next to the framework; smoke: tiny models, but the framework imports alone take ~1-2 GB.
DEFAULT_MEM_GIB = {"paper": 48, "smoke": 4}
# The plan predicts a peak; Slurm kills at the limit, so leave headroom for the interpreter and allocator.
PLAN_HEADROOM = 1.25
# paper: one GPU per cell, the published set-up; smoke runs on CPU.
DEFAULT_GRES = {"paper": "gpu:1"}
# paper: the published machine had 12 vCPUs for one GPU; smoke: a whole small node, so two CPU cells never
# share cores and disturb each other's timing.
DEFAULT_CPUS = {"paper": 8, "smoke": 2}


@dataclass(frozen=True)
class Resources:
    time_min: int
    mem_gib: int
    gres: str | None
    cpus: int

    def sbatch_options(self) -> list[str]:
        options = [f"--time={self.time_min}", f"--mem={self.mem_gib}G", f"--cpus-per-task={self.cpus}"]
        if self.gres:
            options.append(f"--gres={self.gres}")
        return options


def load_plan(path: Path) -> dict[str, dict]:
    """A plan file (results/plan-<profile>.json): cell key -> {"memory_gib": x}; a top-level "cells" object, or list
    of {"key", "memory_gib"}."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise BenchError(f"cannot read the plan {path}: {e}") from None
    if isinstance(data, dict) and isinstance(data.get("cells"), dict):
        data = data["cells"]
    elif isinstance(data, dict) and isinstance(data.get("cells"), list):  # what `make plan` writes (bench/plan/)
        data = {c["key"]: c for c in data["cells"] if isinstance(c, dict) and isinstance(c.get("key"), str)}
    if not isinstance(data, dict):
        raise BenchError(f"the plan {path} is not a JSON object of cell key -> {{\"memory_gib\": x}}")
    return data


def cell_resources(
    cell: Cell, plan: dict[str, dict], gres: str = "auto", cpus: int | None = None, mem_gib: int | None = None
) -> Resources:
    """gres: "auto" (the profile's default), "none", or an explicit --gres value such as gpu:a100:1."""
    from bench.catalogue.cost import task_timeout_s  # the figures the orchestrator kills the cell's processes at

    time_min = math.ceil((task_timeout_s(cell) + TIME_MARGIN_S) / 60)
    if mem_gib is None:
        planned = (plan.get(cell.key) or {}).get("memory_gib")
        if planned is not None:
            if not isinstance(planned, (int, float)) or isinstance(planned, bool) or planned <= 0:
                raise BenchError(f"plan: memory_gib of {cell.key} must be a positive number, got {planned!r}")
            mem_gib = math.ceil(planned * PLAN_HEADROOM)
        else:
            mem_gib = DEFAULT_MEM_GIB.get(cell.profile, DEFAULT_MEM_GIB["paper"])
    if gres == "auto":
        gres_value = DEFAULT_GRES.get(cell.profile)
    else:
        gres_value = None if gres in ("none", "") else gres
    return Resources(time_min, mem_gib, gres_value, cpus or DEFAULT_CPUS.get(cell.profile, 1))
