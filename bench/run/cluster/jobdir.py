"""One submission's folder, results/slurm/<job-name>/: what was submitted, and what each array task recorded.

    job.json       name, submission time, results dir, how cells run (venv or container), the Slurm job ids
    cells.json     [{"index": i, "cell": {...}, "resources": {...}}]: array task i measures cells[i]
    array-<g>.sbatch  one array script per resource group (cells that ask for the same time/mem/gres)
    task-<i>.json  written by the array task itself (start, host, end, exit code): status without accounting
    task-<i>.log   the task's stdout and stderr
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.base.errors import BenchError
from bench.catalogue.registry import Cell
from bench.record.results import write_json_atomic

SLURM_DIR = "slurm"


def slurm_root(results_dir: Path) -> Path:
    return Path(results_dir) / SLURM_DIR


@dataclass
class JobDir:
    path: Path

    @property
    def name(self) -> str:
        return self.path.name

    def meta(self) -> dict[str, Any]:
        return self._read("job.json")

    def write_meta(self, meta: dict[str, Any]) -> None:
        write_json_atomic(self.path / "job.json", meta)

    def entries(self) -> list[dict[str, Any]]:
        return self._read("cells.json")

    def cells(self) -> list[tuple[int, Cell]]:
        return [(entry["index"], Cell.from_dict(entry["cell"])) for entry in self.entries()]

    def cell(self, index: int) -> Cell:
        for i, cell in self.cells():
            if i == index:
                return cell
        raise BenchError(f"{self.path}: no cell with array index {index}")

    def task_path(self, index: int) -> Path:
        return self.path / f"task-{index}.json"

    def task_log(self, index: int) -> Path:
        return self.path / f"task-{index}.log"

    def task_record(self, index: int) -> dict[str, Any] | None:
        try:
            return json.loads(self.task_path(index).read_text())
        except (OSError, ValueError):
            return None

    def write_task_record(self, index: int, record: dict[str, Any]) -> None:
        write_json_atomic(self.task_path(index), record)

    def _read(self, name: str) -> Any:
        try:
            return json.loads((self.path / name).read_text())
        except (OSError, ValueError) as e:
            raise BenchError(f"cannot read {self.path / name}: {e}") from None


def find_job(results_dir: Path, name_or_id: str | None) -> JobDir:
    """A submission by folder name or Slurm job id; the most recent one when None."""
    root = slurm_root(results_dir)
    jobs = sorted((p for p in root.glob("*/job.json")), key=lambda p: p.stat().st_mtime) if root.exists() else []
    if not jobs:
        raise BenchError(f"no Slurm submissions under {root}: run `make submit` first")
    if name_or_id is None:
        return JobDir(jobs[-1].parent)
    for path in jobs:
        job = JobDir(path.parent)
        if job.name == name_or_id or name_or_id in [j["job_id"] for j in job.meta().get("jobs", [])]:
            return job
    raise BenchError(
        f"no Slurm submission named or with job id {name_or_id!r} under {root}; known: {', '.join(p.parent.name for p in jobs)}"
    )
