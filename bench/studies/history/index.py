"""The history index: every result file under a results folder (history/, the release sweeps and the noise study's
rounds included) as one row of an SQLite file, rebuilt from the JSON files, which stay the source of truth.

SQLite, not DuckDB: it is in Python's standard library (nothing added to the tools env or to the wheel bundle carried
to GPU machines), one file, and what it answers is a point lookup (one cell's rows, by an index on the cell), not a
scan over columns. The index is refreshed incrementally: a file whose size and modification time are those indexed
is not read again; a file gone is dropped; each refresh is one transaction (a refresh cut short leaves the last one).
"""
from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.base import stats
from bench.base.errors import BenchError
from bench.base.packed import unpack_all
from bench.base.provenance import machine_label
from bench.studies.noise.detection import DELAY_VARIABLE

INDEX_NAME = ".history-index.sqlite"  # beside the results it indexes; derived, so git ignores it
# 2: figures computed for files that store none; 3: the unit; 4: re-runs at commits (confirm/); 5: no side slowed on
# purpose (make noise's delay pairs); 6: make ab's comparisons (ab/) a source of their own
SCHEMA_VERSION = 6
# Folders under a results folder that hold no result file (logs, pages, machine files), not walked
SKIPPED = {"logs", "figures", "site", "quarantine", "ceilings", "slurm", ".git"}

COLUMNS = (
    "path", "size", "mtime_ns", "source", "cell_key", "backend", "model", "task", "batch_size", "variant", "profile",
    "stack", "machine", "processor", "commit_sha", "dirty", "created_at", "run_id", "release", "versions", "status",
    "center", "low", "high", "basis", "processes", "medians", "sweep", "sweep_key", "unit",
)
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS result (
    path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, source TEXT, cell_key TEXT, backend TEXT, model TEXT,
    task TEXT, batch_size INTEGER, variant TEXT, profile TEXT, stack TEXT, machine TEXT, processor TEXT,
    commit_sha TEXT, dirty INTEGER, created_at TEXT, run_id TEXT, release TEXT, versions TEXT, status TEXT,
    center REAL, low REAL, high REAL, basis TEXT, processes INTEGER, medians TEXT, sweep TEXT, sweep_key TEXT,
    unit TEXT
);
-- files that are no result (a plan, a study's record), remembered so that a refresh does not read them again
CREATE TABLE IF NOT EXISTS other (path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER);
CREATE INDEX IF NOT EXISTS result_cell ON result (cell_key, created_at);
CREATE INDEX IF NOT EXISTS result_sweep_key ON result (sweep_key, created_at);
"""


@dataclass(frozen=True)
class Refresh:
    """What one refresh did: files read anew, dropped, left as indexed, and those unreadable (named in a warning)."""

    read: int
    dropped: int
    kept: int
    skipped: list[str]


def index_path(results_dir: Path) -> Path:
    return Path(results_dir) / INDEX_NAME


@contextlib.contextmanager
def sqlite_errors(results_dir: Path):
    """SQLite's errors (a file there that is no index, a folder it cannot write, a full disk) as one line."""
    try:
        yield
    except sqlite3.Error as e:
        raise BenchError(f"{index_path(results_dir)}: {e} (the history index, rebuilt from the result files: move "
                         "away what is there, or make the folder writable)") from None


def connect(results_dir: Path) -> sqlite3.Connection:
    """The folder's index, created where there is none; one of another schema version is emptied and rebuilt."""
    with sqlite_errors(results_dir):
        return open_index(results_dir)


def open_index(results_dir: Path) -> sqlite3.Connection:
    db = sqlite3.connect(index_path(results_dir))
    db.row_factory = sqlite3.Row
    found = db.execute("SELECT name FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
    version = db.execute("SELECT value FROM meta WHERE name='schema'").fetchone() if found else None
    if version is None or int(version[0]) != SCHEMA_VERSION:
        with db:
            db.executescript("".join(f"DROP TABLE IF EXISTS {t};" for t in ("result", "meta", "other")) + SCHEMA)
            db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
    return db


def json_files(results_dir: Path) -> dict[str, os.stat_result]:
    """Every .json file under the folder but in SKIPPED folders and hidden names, by its POSIX path relative to it."""
    found: dict[str, os.stat_result] = {}
    stack = [Path(results_dir)]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIPPED:
                        stack.append(Path(entry.path))
                elif entry.name.endswith(".json") and entry.is_file(follow_symlinks=False):
                    found[Path(entry.path).relative_to(results_dir).as_posix()] = entry.stat()
    return found


def source_of(relative: str) -> str:
    """Where in the folder a result was found: a sweep's, the noise study's, a re-run at commits (confirm/), a
    `make ab` comparison's process (ab/), an earlier one (history/), or current."""
    parts = relative.split("/")
    if parts[0] in ("sweep", "noise", "confirm", "ab"):
        return parts[0]
    return "history" if "history" in parts else "results"


def row_of(relative: str, stat: os.stat_result, data: Any) -> tuple | None:
    """The index's row of one parsed file; None where it is no result file (a plan, a study's record, a bisect's),
    or no measurement of its cell: a noise study's side slowed on purpose by the step-delay fixture."""
    if not isinstance(data, dict) or not isinstance(data.get("cell"), dict) or "runs" not in data:
        return None
    if ((data.get("config") or {}).get("environment") or {}).get(DELAY_VARIABLE):
        return None
    cell, provenance = data["cell"], data.get("provenance") or {}
    machine = provenance.get("machine") or {}
    stack = cell.get("stack") or "today"
    key = f"{cell['backend']}__{cell['model']}__{cell['task']}__bs{cell['batch_size']}__{cell['variant']}"
    key += "" if stack == "today" else f"__stack-{stack}"
    sweep = provenance.get("sweep") or {}
    versions = {}
    for run in data["runs"][:1]:
        framework = run.get("framework") or {}
        if framework.get("framework") and framework.get("version"):
            versions[framework["framework"]] = framework["version"]
    if sweep.get("package") and sweep.get("version"):
        versions[sweep["package"]] = sweep["version"]
    interval = data.get("interval") or figure_of(data)
    medians = [run["stats"]["median"] for run in data["runs"] if run.get("status") == "ok" and run.get("stats")]
    git = provenance.get("git") or {}
    return (
        relative, stat.st_size, stat.st_mtime_ns, source_of(relative), key, cell["backend"], cell["model"],
        cell["task"], cell["batch_size"], cell["variant"], cell["profile"], stack, machine_label(machine),
        (machine.get("processor") or {}).get("fingerprint") or machine.get("cpu") or "", git.get("commit"),
        int(bool(git.get("dirty"))), data.get("created_at"), provenance.get("run_id"),
        f"{sweep['package']}=={sweep['version']}" if sweep.get("package") and sweep.get("version") else None,
        json.dumps(versions, sort_keys=True), data.get("status"), interval.get("center"), interval.get("low"),
        interval.get("high"), interval.get("basis"), interval.get("processes"), json.dumps(medians),
        sweep.get("name"), sweep.get("key"), data.get("unit"),
    )  # fmt: skip


def figure_of(data: dict) -> dict:
    """The figure and interval of a file written before results stored them: from its raw steps, as Result.estimate
    computes it (bench/base/stats.py)."""
    if data.get("status") != "ok":
        return {}
    found = stats.estimate([run.get("timed_ms") or [] for run in data["runs"] if run.get("status") == "ok"])
    return found.to_dict() if found else {}


def refresh(results_dir: Path, say=lambda line: print(line, file=sys.stderr)) -> Refresh:
    """Bring the folder's index up to date with its files, in one transaction."""
    results_dir = Path(results_dir)
    unpack_all(results_dir)  # a packed noise study's rounds are points of their cells' series too
    on_disk = json_files(results_dir)
    db = connect(results_dir)
    try:
        indexed = {
            row["path"]: (row["size"], row["mtime_ns"])
            for table in ("result", "other")
            for row in db.execute(f"SELECT path, size, mtime_ns FROM {table}")
        }
        gone = [path for path in indexed if path not in on_disk]
        stale = [p for p, s in on_disk.items() if indexed.get(p) != (s.st_size, s.st_mtime_ns)]
        rows, others, skipped = [], [], []
        for relative in stale:
            stat = on_disk[relative]
            try:
                row = row_of(relative, stat, json.loads((results_dir / relative).read_bytes()))
            except (OSError, ValueError, KeyError, TypeError) as e:  # read again next time: it may be mended
                say(f"warning: {results_dir / relative}: not indexed ({e}); python -m bench validate names the fix")
                skipped.append(relative)
                continue
            if row is None:
                others.append((relative, stat.st_size, stat.st_mtime_ns))
            else:
                rows.append(row)
        with db, sqlite_errors(results_dir):
            for table in ("result", "other"):
                db.executemany(f"DELETE FROM {table} WHERE path = ?", [(p,) for p in gone + stale])
            db.executemany(f"INSERT INTO result VALUES ({','.join('?' * len(COLUMNS))})", rows)
            db.executemany("INSERT INTO other VALUES (?, ?, ?)", others)
    finally:
        db.close()
    return Refresh(len(rows), len(gone), len(on_disk) - len(stale), skipped)


def rows(results_dir: Path, where: str, args: tuple) -> list[dict[str, Any]]:
    """The indexed rows matching an SQL condition over COLUMNS, oldest first."""
    db = connect(results_dir)
    try:
        found = db.execute(f"SELECT * FROM result WHERE {where} ORDER BY created_at, path", args).fetchall()
    finally:
        db.close()
    return [dict(row) for row in found]


def known_keys(results_dir: Path) -> tuple[list[str], list[str]]:
    """Every indexed cell key and sweep key, sorted: what a CELL= may name."""
    db = connect(results_dir)
    try:
        cells = [r[0] for r in db.execute("SELECT DISTINCT cell_key FROM result ORDER BY cell_key")]
        sweeps = [r[0] for r in db.execute(
            "SELECT DISTINCT sweep_key FROM result WHERE sweep_key IS NOT NULL ORDER BY sweep_key"
        )]
    finally:
        db.close()
    return cells, sweeps
