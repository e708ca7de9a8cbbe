"""A results folder's upkeep: unreadable result files moved to quarantine/ (`bench validate --quarantine`), the
logs a run wrote deleted (`bench clean-results`)."""
from __future__ import annotations

import shutil
from pathlib import Path

from bench.results import QUARANTINE, CorruptResult, NewerSchema, is_suite_result_file, reserve_new_name


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


def clean_logs(results_dir: Path) -> list[Path]:
    """Delete the logs the suite wrote (<results>/logs/**/*.log, not links) and the folders left empty; anything
    else there stays. Returns what was deleted."""
    logs = results_dir / "logs"
    deleted = [p for p in sorted(logs.rglob("*.log")) if p.is_file() and not p.is_symlink()]
    for path in deleted:
        path.unlink()
    for folder in sorted((p for p in logs.rglob("*") if p.is_dir() and not p.is_symlink()), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()
    if logs.is_dir() and not logs.is_symlink() and not any(logs.iterdir()):
        logs.rmdir()
    return deleted
