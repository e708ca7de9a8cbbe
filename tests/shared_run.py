"""One smoke run of BERT per backend a test run, shared by the tests that only read its results.

Each run is the README's command, `make bench BACKEND=<b> MODEL=bert PROFILE=smoke REPEATS=1` (one process a cell:
the tests check each backend's code path, not the process spread), run at most once for the code as it is: its
folder is named by a key of the checkout's code and the env's build (`key`), so a run of other code is never read.
Both of `make test`'s lanes, and any later pytest with the same code, read the same folder: the first to ask runs
it there under a lock (bench/base/runlock.py store_lock) and writes its outcome (the exit status and output) last,
atomically; one asking meanwhile waits for the lock and reads it; a folder without an outcome (a run killed) is
run again. A run that failed is read by its own process alone: another runs it again.

The folder is read-only to the tests: a test that writes copies it first (`SharedRun.copy`). It lives under the
temporary directory (`ROOT`), beside the tests' compile cache; folders unused for a week are removed.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.base.atomic import write_json_atomic
from bench.base.errors import BenchError
from bench.base.provenance import BEHAVIOUR_VARIABLE, ENV_STAMP, venvs_dir
from bench.base.runlock import store_lock
from bench.catalogue.backends import BACKENDS

REPO = Path(__file__).resolve().parent.parent
ROOT = Path(tempfile.gettempdir()) / "bench-test-shared-runs"
# What a cell's run depends on in the checkout: the package, the front door and the locks (and this file).
CODE = ("bench", "mk", "envs", "scripts", "Makefile", "tests/shared_run.py")
OUTCOME = "outcome.json"
TIMEOUT_S = 2400  # beyond the smoke cell timeout (1800 s): a hung cell is a recorded status
UNUSED_S = 7 * 24 * 3600
# The runs: one a backend on today's stack, and the one 2024 env CI builds (CI_STACK_ENVS in mk/envs.mk).
RUNS = {**{backend: (backend, "today") for backend in BACKENDS}, "jax-2024": ("jax", "2024")}


@dataclass(frozen=True)
class SharedRun:
    """A finished shared run: its results folder (read it, never write it), make's exit status and output."""

    name: str
    backend: str
    stack: str
    results: Path
    returncode: int
    output: str
    reused: bool

    def copy(self, dest: Path) -> Path:
        """The results, copied to `dest` for a test that writes beside them."""
        shutil.copytree(self.results, dest, symlinks=True)
        return dest


def env_name(backend: str, stack: str) -> str:
    return backend if stack == "today" else f"{backend}-{stack}"


def command(backend: str, stack: str, results: Path) -> list[str]:
    return ["make", "--no-print-directory", "bench", f"BACKEND={backend}", "MODEL=bert", *(
        [f"STACK={stack}"] if stack != "today" else []), "PROFILE=smoke", "REPEATS=1", f"RESULTS={results}"]


def code_files() -> list[Path]:
    files = []
    for name in CODE:
        path = REPO / name
        found = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        files += [p for p in found if "__pycache__" not in p.parts and p.suffix != ".pyc"]
    return files


def head_tree() -> str:
    out = subprocess.run(["git", "rev-parse", "HEAD^{tree}"], cwd=REPO, capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else "no git tree"


def key(backend: str, stack: str) -> str:
    """The code and env a run depends on: the checkout's committed tree, every file of CODE as it is on disk (edits
    not yet committed too), the env's build stamp (its lock's hash: a rebuilt env is another key), the variables that
    change what a run does, and the command."""
    digest = hashlib.sha256()
    stamp = venvs_dir() / env_name(backend, stack) / ENV_STAMP
    variables = {k: v for k, v in os.environ.items() if BEHAVIOUR_VARIABLE.match(k)}
    for part in (head_tree(), str(venvs_dir()), stamp.read_text() if stamp.exists() else "no env",
                 json.dumps(variables, sort_keys=True), " ".join(command(backend, stack, Path("RESULTS")))):
        digest.update(part.encode() + b"\0")
    for path in code_files():
        digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def read(folder: Path, name: str, backend: str, stack: str, reused: bool) -> SharedRun | None:
    try:
        outcome = json.loads((folder / OUTCOME).read_text())
    except (OSError, ValueError):
        return None
    return SharedRun(name, backend, stack, folder / "results", outcome["returncode"], outcome["output"], reused)


def remove_unused(root: Path) -> None:
    """Folders of other code not used for a week: a checkout's old runs, never one in use (its lock is taken)."""
    for folder in root.iterdir():
        if folder.is_dir() and time.time() - folder.stat().st_mtime > UNUSED_S:
            try:
                with store_lock(folder, wait_s=0.1):
                    shutil.rmtree(folder, ignore_errors=True)
            except BenchError:  # in use after all: left for another time
                continue


def shared_run(name: str, root: Path = ROOT, mine: dict[str, SharedRun] | None = None) -> SharedRun:
    """The shared run `name` (a key of RUNS) for the code as it is: read if one with its key ran, else run now. `mine`
    holds this process's runs, a failed one among them (read again here, run again by another process)."""
    backend, stack = RUNS[name]
    if mine is not None and name in mine:
        return mine[name]
    root.mkdir(parents=True, exist_ok=True)
    folder = root / f"{name}-{key(backend, stack)}"
    with store_lock(folder, wait_s=2 * TIMEOUT_S):  # another process running it: wait for it, then read
        found = read(folder, name, backend, stack, reused=True)
        if found is None or found.returncode != 0:
            found = run(folder, name, backend, stack)
        os.utime(folder)
    if mine is not None:
        mine[name] = found
    remove_unused(root)
    return found


def run(folder: Path, name: str, backend: str, stack: str) -> SharedRun:
    """Run into `folder` afresh, its outcome written last (atomically): a folder without one (a run that was killed) is
    never read, and is run again. In place, not renamed into place: each result records the folder it was run into."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    try:
        out = subprocess.run(command(backend, stack, folder / "results"), cwd=REPO, capture_output=True, text=True,
                             timeout=TIMEOUT_S)  # fmt: skip
        returncode, output = out.returncode, out.stdout + out.stderr
    except subprocess.TimeoutExpired as e:  # a failed outcome like any other: every test reading it says so
        returncode = 124
        said = [part.decode(errors="replace") if isinstance(part, bytes) else part for part in (e.stdout, e.stderr)]
        output = "".join(p for p in said if p) + f"\nshared run: make did not end within {TIMEOUT_S} s"
    write_json_atomic(folder / OUTCOME, {"command": command(backend, stack, folder / "results"),
                                         "returncode": returncode, "output": output})
    return read(folder, name, backend, stack, reused=False)
