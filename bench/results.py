"""One result file per cell: config, measurements, status and provenance together, written atomically."""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.backends import BenchError
from bench.provenance import machine_slug
from bench.timing import Stats
from bench.workloads import Cell

SCHEMA_VERSION = 1
STATUSES = ("ok", "oom", "timeout", "error", "unsupported")
HISTORY = "history"  # earlier results of the same cell, moved aside rather than overwritten
NOT_RESULTS = {HISTORY, "logs", "figures", "slurm"}  # folders under results/ that hold no current result (slurm: job files)


class CorruptResult(BenchError):
    pass


@dataclass
class Run:
    """One process's measurement of a cell (a cell with --repeats R has R runs)."""

    status: str
    message: str | None = None
    first_step_ms: float | None = None  # trace + compile + first execution
    warmup_ms: list[float] = field(default_factory=list)
    timed_ms: list[float] = field(default_factory=list)  # raw per-step figures, in order
    windows_ms: list[float] | None = None  # the measured windows, when timed_ms is derived from them
    setup_s: float | None = None
    wall_s: float | None = None
    tokens_per_step: int | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    framework: dict[str, Any] = field(default_factory=dict)
    process: dict[str, Any] = field(default_factory=dict)
    exit_code: int | None = None

    def stats(self) -> Stats | None:
        return Stats.of(self.timed_ms) if self.status == "ok" and self.timed_ms else None

    def to_dict(self) -> dict[str, Any]:
        stats = self.stats()
        return {**self.__dict__, "stats": stats.to_dict() if stats else None}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Run":
        data = dict(data)
        data.pop("stats", None)
        return cls(**data)


@dataclass
class Result:
    cell: Cell
    runs: list[Run]
    unit: str
    provenance: dict[str, Any]
    created_at: str

    @property
    def status(self) -> str:
        bad = [r for r in self.runs if r.status != "ok"]
        return bad[0].status if bad else "ok"

    @property
    def message(self) -> str | None:
        bad = [r for r in self.runs if r.status != "ok"]
        return bad[0].message if bad else None

    def summary(self) -> Stats | None:
        """Statistics of every timed step of every run, pooled."""
        if self.status != "ok":
            return None
        return Stats.of([t for r in self.runs for t in r.timed_ms])

    def repeat_spread(self) -> Stats | None:
        """Spread of the per-process medians: how much a whole re-run moves the figure."""
        medians = [r.stats().median for r in self.runs if r.stats()]
        return Stats.of(medians) if self.status == "ok" and len(medians) > 1 else None

    def tokens_per_s(self) -> float | None:
        summary = self.summary()
        tokens = self.runs[0].tokens_per_step if self.runs else None
        return tokens / (summary.median / 1000) if summary and tokens else None

    def to_dict(self) -> dict[str, Any]:
        summary, spread = self.summary(), self.repeat_spread()
        return {
            "schema_version": SCHEMA_VERSION,
            "cell": self.cell.to_dict(),
            "status": self.status,
            "message": self.message,
            "unit": self.unit,
            "summary": summary.to_dict() if summary else None,
            "repeat_spread": spread.to_dict() if spread else None,
            "tokens_per_s": self.tokens_per_s(),
            "runs": [r.to_dict() for r in self.runs],
            "provenance": self.provenance,
            "created_at": self.created_at,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Result":
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        if data.get("schema_version") != SCHEMA_VERSION:
            raise ValueError(f"schema_version {data.get('schema_version')!r}, expected {SCHEMA_VERSION}")
        missing = {"cell", "status", "unit", "runs", "provenance", "created_at"} - set(data)
        if missing:
            raise ValueError(f"missing keys {sorted(missing)}")
        if data["status"] not in STATUSES:
            raise ValueError(f"status {data['status']!r} is not one of {STATUSES}")
        if not data["runs"]:
            raise ValueError("no runs")
        result = cls(Cell.from_dict(data["cell"]), [Run.from_dict(r) for r in data["runs"]], data["unit"], data["provenance"], data["created_at"])
        if result.status != data["status"]:
            raise ValueError(f"status {data['status']!r} disagrees with its runs ({result.status!r})")
        result.summary()  # validates the raw step times
        return result

    def relative_path(self) -> Path:
        return Path(self.cell.profile) / machine_slug(self.provenance.get("machine", {})) / f"{self.cell.key}.json"

    def write(self, results_dir: Path) -> Path:
        """Write atomically; an earlier result of the same cell moves to history/, never lost."""
        path = results_dir / self.relative_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            previous = load(path)
            stamp = previous.created_at.replace(":", "").replace("+", "Z")
            archived = path.parent / HISTORY / f"{self.cell.key}.{stamp}.json"
            archived.parent.mkdir(exist_ok=True)
            os.replace(path, archived)
        write_json_atomic(path, self.to_dict())
        return path

    def describe(self) -> str:
        if self.status != "ok":
            return f"{self.status}: {self.message}"
        s = self.summary()
        text = f"median {s.median:.2f} {self.unit} (p10 {s.p10:.2f}, p90 {s.p90:.2f}, cv {s.cv:.1%}, n={s.count}); first step {self.runs[0].first_step_ms:.0f} ms"
        if self.tokens_per_s():
            text += f"; {self.tokens_per_s():.1f} tokens/s"
        return text


def write_json_atomic(path: Path, data: Any) -> None:
    """Write to a temporary file in the same directory, fsync, then rename over the target."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1, sort_keys=False, allow_nan=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load(path: Path) -> Result:
    try:
        return Result.from_dict(json.loads(Path(path).read_text()))
    except (OSError, ValueError, TypeError, KeyError, BenchError) as e:
        raise CorruptResult(f"cannot read result file {path}: {e}") from None


def result_files(results_dir: Path) -> list[Path]:
    """Current result files (not history/, not temporaries)."""
    if not results_dir.exists():
        return []
    return sorted(p for p in results_dir.rglob("*.json") if not NOT_RESULTS & set(p.relative_to(results_dir).parts) and not p.name.startswith("."))


def load_all(results_dir: Path) -> list[Result]:
    """Every current result; the first unreadable file raises, naming itself."""
    return [load(p) for p in result_files(results_dir)]
