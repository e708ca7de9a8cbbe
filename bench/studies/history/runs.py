"""The runs of a results folder's history, each a set of result files that `make compare A=<run> B=<run>` can take
in place of a folder: one orchestrator invocation (its provenance's run_id), or, for files written before run ids
were recorded, one commit's files of one profile and stack on one machine. The current files, history/ and the noise
study's rounds count; a release sweep's do not (one sweep run measures a cell once per release, so its files are no
one set of cells: its series view and `make history` read it)."""
from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from bench.studies.history import index

SOURCES = ("results", "history", "noise")


@dataclass(frozen=True)
class HistoryRun:
    id: str
    started: str  # its first file's created_at
    commit: str | None
    machine: str
    profile: str
    stack: str
    paths: tuple[str, ...]  # relative to the results folder, oldest first

    @property
    def table(self) -> tuple[str, str]:
        """What its cells pair on with another run's besides the cell (bench/report/compare.py CellKey)."""
        return self.profile, self.stack

    def label(self) -> str:
        return (f"{self.started[:16].replace('T', ' ')} · commit {(self.commit or '?')[:8]} · {self.profile}"
                f"{'' if self.stack == 'today' else f' stack {self.stack}'} · {self.machine} · {len(self.paths)} "
                f"file{'s' if len(self.paths) != 1 else ''}")


def commit_run_id(row: dict) -> str:
    """An id for files without a run id: their commit, profile and stack, and a hash of the machine's label (which
    holds spaces, so it would need quoting on a make command line)."""
    machine = hashlib.sha1((row["machine"] or "").encode()).hexdigest()[:6]
    return f"commit-{(row['commit_sha'] or 'unknown')[:12]}-{row['profile']}-{row['stack']}-{machine}"


def history_runs(results_dir: Path) -> list[HistoryRun]:
    """Every run the index knows, oldest first (the caller refreshes the index)."""
    found = index.rows(results_dir, f"source IN ({','.join('?' * len(SOURCES))}) AND cell_key IS NOT NULL", SOURCES)
    by_run: dict[str, list[dict]] = defaultdict(list)
    for row in found:  # oldest first, so each run's rows are too
        by_run[row["run_id"] or commit_run_id(row)].append(row)
    runs = [
        HistoryRun(run, rows[0]["created_at"] or "", rows[0]["commit_sha"], rows[0]["machine"] or "?",
                   rows[0]["profile"], rows[0]["stack"], tuple(r["path"] for r in rows))
        for run, rows in by_run.items()
    ]
    return sorted(runs, key=lambda r: (r.started, r.id))


def find_run(results_dir: Path, text: str) -> HistoryRun | None:
    """The run of that id (or the one run whose id starts with it); None where no run, or several, match."""
    runs = history_runs(results_dir)
    exact = [r for r in runs if r.id == text]
    if exact:
        return exact[0]
    started = [r for r in runs if len(text) >= 6 and r.id.startswith(text)]
    return started[0] if len(started) == 1 else None
