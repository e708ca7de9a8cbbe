"""A results folder's upkeep: unreadable result files moved to quarantine/ (`bench validate --quarantine`), the
logs a run wrote deleted (`bench clean-results`)."""
from __future__ import annotations

import shutil
from pathlib import Path

from bench.base.runlock import STUDY_FOLDERS
from bench.record.results import QUARANTINE, CorruptResult, NewerSchema, is_suite_result_file, reserve_new_name


def quarantine(
    results_dir: Path, errors: list[CorruptResult | NewerSchema]
) -> tuple[list[tuple[Path, Path]], list[Path]]:
    """Move each unreadable result file to <results>/quarantine/, at its own relative path (never over another);
    a file that is not one of the suite's result files by name and place stays, and is returned as not moved."""
    moved, kept = [], []
    for error in errors:
        path = error.path
        if not is_suite_result_file(path, results_dir):
            kept.append(path)
            continue
        dest = results_dir / QUARANTINE / path.relative_to(results_dir)
        dest = reserve_new_name(dest.parent, dest.stem)
        shutil.move(path, dest)  # onto the empty file reserved for it
        moved.append((path, dest))
    return moved, kept


def is_suite_log_folder(name: str) -> bool:
    """A folder under <results>/logs/ that this suite writes logs into: a profile's (a run's cells), a study's
    (grid, overhead, sweep, parity, ...) or one of a study's settings (parity-paper-bfloat16)."""
    from bench.catalogue.profiles import profiles

    return name in profiles() or any(name == s or name.startswith(f"{s}-") for s in STUDY_FOLDERS)


def suite_logs(results_dir: Path) -> tuple[list[Path], list[Path]]:
    """The logs the suite wrote (a .log, not a link, in one of its log folders) and every other file under logs/."""
    logs = results_dir / "logs"
    ours, theirs = [], []
    for path in sorted(p for p in logs.rglob("*") if p.is_file() or p.is_symlink()):
        top = path.relative_to(logs).parts
        mine = len(top) > 1 and is_suite_log_folder(top[0]) and path.suffix == ".log" and not path.is_symlink()
        (ours if mine else theirs).append(path)
    return ours, theirs


def clean_logs(results_dir: Path) -> tuple[list[Path], list[Path]]:
    """Delete the logs the suite wrote (a .log in a folder it writes logs to, <results>/logs/<profile or study>/, not
    a link) and the folders left empty; anything else there stays (a folder with no results once lost a user's
    logs/mine/app.log). Returns what was deleted and what was kept."""
    logs = results_dir / "logs"
    deleted, kept = suite_logs(results_dir)
    for path in deleted:
        path.unlink()
    for folder in sorted((p for p in logs.rglob("*") if p.is_dir() and not p.is_symlink()), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()
    if logs.is_dir() and not logs.is_symlink() and not any(logs.iterdir()):
        logs.rmdir()
    return deleted, kept
