"""What one sweep process measures, in a version's env: a benchmark cell (`bench cell`, one process per cell as
everywhere), the framework-overhead study's columns (its worker: a Keras column and its plain framework interleaved
call by call), or one function of the swept package (bench/studies/sweep/callworker.py). Each gives the command to run
and reads back {key: Run}; each key becomes one result file per version."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.base.errors import BenchError
from bench.catalogue.backends import cell_environment
from bench.catalogue.registry import Cell
from bench.record.result_checks import check_cell_schema
from bench.record.results import Run, task_unit


@dataclass
class CellTarget:
    """A cell of the benchmark (BACKEND= MODEL= TASK=), run by `python -m bench cell` in the version's env."""

    cell: Cell
    timeout_s: float | None = None
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def backend(self) -> str:
        return self.cell.env

    def keys(self) -> list[str]:
        return [f"{self.cell.model}__{self.cell.task}__bs{self.cell.batch_size}__{self.cell.variant}"]

    def command(self, python: str, out: Path) -> list[str]:
        from bench.catalogue.config import resolve

        if not self.config:
            self.config = resolve(self.cell, self.timeout_s).to_dict()
        return [
            python,
            "-m",
            "bench",
            "cell",
            "--cell",
            json.dumps(self.cell.to_dict()),
            "--out",
            str(out / "run.json"),
            "--config",
            json.dumps(self.config),
        ]

    def environment(self) -> dict[str, str]:
        return {**cell_environment(self.cell.env), **(self.config.get("environment") or {})}

    def read(self, out: Path) -> dict[str, Run]:
        return {self.keys()[0]: Run.from_dict(json.loads((out / "run.json").read_text()))}

    def result_cell(self, key: str) -> Cell:
        return self.cell

    def unit(self, key: str) -> str:
        return task_unit(self.cell)


@dataclass
class OverheadTarget:
    """Some of the framework-overhead study's (benchmark, column)s, in one worker per process."""

    backend: str  # torch or jax: the study env whose lock the versions derive from
    columns: list[str]
    benchmarks: list[str]
    size: str = "sweep"

    def keys(self) -> list[str]:
        return [f"{b}__{c}" for c in self.columns for b in self.benchmarks]

    def command(self, python: str, out: Path) -> list[str]:
        return [
            python,
            "-m",
            "bench.studies.overhead.worker",
            "--env",
            self.backend,
            "--size",
            self.size,
            "--columns",
            ",".join(self.columns),
            "--benchmarks",
            ",".join(self.benchmarks),
            "--out",
            str(out),
        ]

    def environment(self) -> dict[str, str]:
        from bench.studies.grid.run import WORKER_ENVIRONMENT

        return {**cell_environment(self.backend), **WORKER_ENVIRONMENT}

    def read(self, out: Path) -> dict[str, Run]:
        import shutil

        from bench.studies.overhead.run import with_parity
        from bench.studies.overhead.spec import COLUMNS, REFERENCE_COLUMN

        answers = json.loads((out / "runs.json").read_text())
        runs = {}
        for benchmark in self.benchmarks:  # without PyTorch eager in this env, its plain framework is the reference
            reference = out / f"{benchmark}__{REFERENCE_COLUMN}.npy"
            plain = [c for c in self.columns if not COLUMNS[c].keras and (out / f"{benchmark}__{c}.npy").exists()]
            if not reference.exists() and plain:
                shutil.copyfile(out / f"{benchmark}__{plain[0]}.npy", reference)
        for key in self.keys():
            benchmark, column = key.split("__")
            # the same computation as the plain framework's column in this process
            runs[key] = with_parity(Run.from_dict(answers[key]), benchmark, column, out)
        return runs

    def result_cell(self, key: str) -> Cell:
        from bench.studies.overhead.run import overhead_cell
        from bench.studies.overhead.spec import get_size

        benchmark, column = key.split("__")
        return overhead_cell(benchmark, column, get_size(self.size))

    def unit(self, key: str) -> str:
        return "ms/call"


@dataclass
class CallTarget:
    """One function of the swept package, `module:function`, timed call by call."""

    backend: str  # the name the versions' envs are filed under (a backend's, or a test's base env)
    call: str
    warmup: int = 2
    timed: int = 20

    def __post_init__(self) -> None:
        module, _, function = self.call.partition(":")
        if not (module.strip() and function.strip()) or ":" in function:
            raise BenchError(f"CALL={self.call}: name a function as module:function (keras:version, say)")

    def keys(self) -> list[str]:
        return [self.call.split(":")[1]]

    def command(self, python: str, out: Path) -> list[str]:
        return [
            python,
            "-m",
            "bench.studies.sweep.callworker",
            "--call",
            self.call,
            "--warmup",
            str(self.warmup),
            "--timed",
            str(self.timed),
            "--out",
            str(out),
        ]

    def environment(self) -> dict[str, str]:
        return {}

    def read(self, out: Path) -> dict[str, Run]:
        answers = json.loads((out / "runs.json").read_text())
        return {key: Run.from_dict(answers[key]) for key in self.keys()}

    def result_cell(self, key: str) -> Cell:
        data = {
            "backend": self.backend,
            "model": key,
            "task": "call",
            "batch_size": 1,
            "profile": "sweep",
            "variant": "default",
            "warmup_steps": self.warmup,
            "timed_steps": self.timed,
        }
        check_cell_schema(data)
        return Cell.from_dict(data, validate=False)

    def unit(self, key: str) -> str:
        return "ms/call"


Target = CellTarget | OverheadTarget | CallTarget
