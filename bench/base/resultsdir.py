"""What may be a results folder: the one check every `--results-dir` is read through (stdlib, REPO_ROOT and the
default folder only, so each entry point may import it)."""
from __future__ import annotations

import argparse
import itertools
import os
from pathlib import Path

from bench.base.argtypes import DEFAULT_RESULTS
from bench.base.provenance import REPO_ROOT

# The checkout's own folders: never a results folder (a quarantine or a clean there would move or delete the suite)
ROOTS = {REPO_ROOT.resolve(), Path(os.path.abspath(REPO_ROOT))}
SUITE_FOLDERS = {".git", ".venvs", "bench", "containers", "docs", "envs", "mk", "scripts", "tests"}


def results_folder(text: str) -> Path:
    """An argparse type: a results folder, refused in one line where it is empty (`make table RESULTS=` once read
    the checkout as one), a file, the checkout or a folder above it, one of the suite's own folders, a git checkout
    or a Python env."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty: name a results folder (the default is results/)")
    path = Path(text)
    try:
        if path.exists() and not path.is_dir():
            raise argparse.ArgumentTypeError(f"{text} is a file, not a results folder")
    except OSError as e:  # a name too long (ENAMETOOLONG), a folder that cannot be read
        raise argparse.ArgumentTypeError(f"{text}: {e.strerror or e}") from None
    # through links (.venvs may be one) and not
    for where, repo in itertools.product({path.resolve(), Path(os.path.abspath(path))}, ROOTS):
        if where == repo or where in repo.parents:
            raise argparse.ArgumentTypeError(f"{text} is the checkout or a folder above it, not a results folder")
        top = where.relative_to(repo).parts[0] if repo in where.parents else None
        if top in SUITE_FOLDERS:
            raise argparse.ArgumentTypeError(f"{text} is inside the suite's own {top}/, not a results folder")
    if (path / ".git").exists() or (path / "pyvenv.cfg").exists():
        raise argparse.ArgumentTypeError(f"{text} is a git checkout or a Python env, not a results folder")
    return path


def existing_results_folder(text: str) -> Path:
    """An argparse type: a results folder (results_folder) that is there, for a command that only reads one (a
    mistyped RESULTS= once passed silently, doing nothing)."""
    path = results_folder(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: no such results folder")
    return path


def overlapping(a: Path, b: Path) -> bool:
    """Two folders that share files: the same folder, or one inside the other (through links and not)."""
    a, b = Path(os.path.abspath(a)), Path(os.path.abspath(b))
    real_a, real_b = a.resolve(), b.resolve()
    return any(x == y or x in y.parents or y in x.parents for x, y in ((a, b), (real_a, real_b)))


def add_results_dir(parser: argparse.ArgumentParser, help: str | None = None) -> None:
    """--results-dir, as every command that reads or writes a results folder takes it (the front door's, a study's)."""
    parser.add_argument("--results-dir", type=results_folder, default=DEFAULT_RESULTS, help=help)
