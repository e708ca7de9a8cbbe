"""The results folder as a run writes it: writable, with room, its results readable, a log per process, each
result written (or, where the disk is full, shown)."""
from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.base.atomic import claim_new_file
from bench.base.errors import BenchError
from bench.catalogue.registry import Cell
from bench.record.results import Result, load_each, result_path, unreadable_error


def check_writable(results_dir: Path) -> None:
    """Create and remove a probe file where results will go (os.access says yes to root on a read-only folder)."""
    try:
        results_dir.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=results_dir, prefix=".write-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise BenchError(f"cannot write results to {results_dir}: {e.strerror or e}") from None


# A cell is not started with less than this free where its results go: its log and result file need room (a
# smoke result is a few KB, a log up to a few MB), and a measurement that cannot be written is an hour lost.
MIN_FREE_BYTES = 64 * 2**20


class RunStopped(BenchError):
    """The run stopped before its last cell (the disk is full): every result written so far is kept."""


def check_free_space(results_dir: Path, kept: int, of: int) -> None:
    free = shutil.disk_usage(results_dir).free
    if free < MIN_FREE_BYTES:
        raise RunStopped(
            f"only {free / 2**20:.1f} MiB free in {results_dir} (a cell needs {MIN_FREE_BYTES // 2**20} MiB for its "
            f"log and result): stopped before the next cell; {kept} of {of} cells kept. Free some space and rerun "
            "with --resume"
        )


def new_log_path(results_dir: Path, cell: Cell, repeat: int) -> Path:
    """A log of its own for each process of a cell, never reused: logs/<profile>/<key>.<UTC start>.<repeat>.log
    (created empty with O_EXCL). A rerun no longer truncates the log of a result that moves to history/."""
    folder = results_dir / "logs" / cell.profile
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = claim_new_file(
        (folder / f"{cell.key}.{stamp}{f'-{n}' if n else ''}.{repeat}.log" for n in range(1000)), 0o666
    )
    if path is None:
        raise BenchError(f"no free log name for {cell.key} in {folder}")
    return path


def write_or_show(result: Result, results_dir: Path, echo: Callable[[str], None], kept: int, of: int) -> Path:
    """Write a cell's result; if the write fails (a full disk), show the whole result (figures and raw windows) on
    the console and in the cell's log, so the measurement is not lost, and stop the run."""
    try:
        return result.write(results_dir)
    except OSError as e:
        target = results_dir / result.relative_path()
        text = json.dumps(result.to_dict(), allow_nan=False)
        echo(f"    could not write {target}: {e.strerror or e}; the result, so that it is not lost:\n{text}")
        log = results_dir / (
            result.runs[-1].process.get("log") or f"logs/{result.cell.profile}/{result.cell.key}.unwritten.log"
        )
        try:
            with log.open("a") as f:
                f.write(f"\n[bench] could not write {target}: {e.strerror or e}; the result:\n{text}\n")
        except OSError:
            pass  # the log is on the same full disk: the console has it
        why = "the disk is full" if e.errno == errno.ENOSPC else "a result could not be written"
        raise RunStopped(
            f"{why} ({target}: {e.strerror or e}): stopped; {kept} of {of} cells kept, this one's result shown above"
        ) from None


def check_results_readable(cells: list[Cell], results_dir: Path, machine: dict) -> None:
    """An unreadable result file where a cell of this run will write stops the run (its earlier result could not
    be moved to history/); any other is named, with the fix, and the run goes on."""
    _, errors = load_each(results_dir)
    touched = {result_path(results_dir, cell, machine) for cell in cells}
    if blocking := [e for e in errors if e.path in touched]:
        raise unreadable_error(blocking, results_dir)
    if errors:
        print(
            "warning: "
            + str(unreadable_error(errors, results_dir)).replace("\n", "\nwarning: ")
            + "\nwarning: no cell of this run writes there: it goes on",
            flush=True,
        )
