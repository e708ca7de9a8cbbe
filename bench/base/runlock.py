"""One run at a time per results folder: two runs into one folder slow each other's timings (each measures on a
machine the other loads) and write the same cells. The lock is an flock on <results>/.bench-run.lock, which the
kernel releases when its holder dies however it dies; the file names the holder, for the refusal's message.

A Slurm array's tasks (bench/run/cluster/task.py) each run their own cell into the submission's one results folder, on
their own nodes: they share the lock (flock's shared mode), so they run together but no local run starts beside
them, nor they beside a local run.

A store read, changed and written back whole (the triage file, tests/durations.json, the parameter counts' cache) has
a lock of its own, store_lock: a writer waits for it (a writer holds it for milliseconds) rather than being refused,
so that two at once each keep the other's change."""
from __future__ import annotations

import atexit
import contextlib
import fcntl
import functools
import inspect
import json
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from bench.base.errors import BenchError
from bench.base.provenance import now_utc

LOCK_NAME = ".bench-run.lock"
# The sub-folders a results folder keeps its studies in, each written by its own command (`make tuning` runs its
# cells into <results>/tuning): a run into one holds the results folder too, so that no other run or clean-up of
# the results folder goes on beside it.
STUDY_FOLDERS = frozenset(
    {"tuning", "grid", "overhead", "noise", "sweep", "gpu-check", "parity", "ceilings", "confirm", "ab"}
)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        pass
    return True


def same_file(f: IO[str], path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(f.fileno()), os.stat(path))
    except FileNotFoundError:
        return False


def holder_of(text: str) -> dict | None:
    try:
        holder = json.loads(text)
        return holder if isinstance(holder, dict) and isinstance(holder.get("pid"), int) else None
    except ValueError:
        return None


def describe(holder: dict | None) -> str:
    if not holder:
        return "a Slurm submission's tasks (make submit-status)"
    return f"PID {holder['pid']} on {holder.get('host')} since {holder.get('started')}: {holder.get('command')}"


_HELD: dict[Path, tuple[IO[str], bool]] = {}  # the folders this process holds: their lock file, and whether shared
_PARENTS_TAKEN: set[Path] = set()  # study folders whose results folder was held for them (released with them)


def hold(results_dir: Path, echo: Callable[[str], None] = print) -> None:
    """Hold the results folder (which exists) until release() or this process ends, and the results folder a study's
    sub-folder (STUDY_FOLDERS) sits in: a second run is refused in one line naming the first; a lock left by a process
    that no longer runs (a kill -9, a power cut) is taken over, and said so. Holding a folder this process already
    holds is a no-op."""
    key = results_dir.resolve()
    if key in _HELD:
        return
    if key.name in STUDY_FOLDERS and key.parent.resolve() not in _HELD:  # a study's folder: its results folder too
        hold(key.parent, echo)
        _PARENTS_TAKEN.add(key)
    try:
        take(key, results_dir, echo)
    except BaseException:
        release_parent(key)
        raise


def take(key: Path, results_dir: Path, echo: Callable[[str], None]) -> None:
    shared = bool(os.environ.get("SLURM_ARRAY_TASK_ID"))
    while True:
        try:
            f = open(os.open(key / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o666), "r+")
        except OSError as e:
            raise BenchError(f"cannot write results to {results_dir}: {e.strerror or e}") from None
        previous = holder_of(f.read())
        try:
            fcntl.flock(f, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            raise BenchError(
                f"another run is writing to {results_dir} ({describe(previous)}): wait for it to end, or give this run "
                f"another results folder (RESULTS= / --results-dir)"
            ) from None
        except OSError:  # a file system without flock (some network mounts): the holder's PID is all there is
            if previous and previous.get("host") == socket.gethostname() and alive(previous["pid"]):
                f.close()
                raise BenchError(f"another run is writing to {results_dir} ({describe(previous)})") from None
        if same_file(f, key / LOCK_NAME):
            break
        f.close()  # the run before removed it as we opened it (release): take the new one
    _HELD[key] = (f, shared)
    if shared:
        return
    if previous and previous["pid"] != os.getpid():
        echo(f"took over the lock of {results_dir} left by a run that no longer runs ({describe(previous)})")
    f.seek(0)
    f.truncate()
    f.write(
        json.dumps(
            {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "started": now_utc(),
                "command": " ".join(["python -m bench", *sys.argv[1:]]),
            }
        )
    )
    f.flush()


def release_parent(key: Path) -> None:
    if key in _PARENTS_TAKEN:
        _PARENTS_TAKEN.discard(key)
        release(key.parent)


def release(results_dir: Path) -> None:
    key = results_dir.resolve()
    f, shared = _HELD.pop(key, (None, True))
    release_parent(key)
    if f is None:
        return
    if (
        not shared
    ):  # removed while still held (so whoever opens it next opens a new file): one left means its holder died
        (results_dir.resolve() / LOCK_NAME).unlink(missing_ok=True)
    f.close()  # closing releases the flock


@contextlib.contextmanager
def holding(results_dir: Path, echo: Callable[[str], None] = print) -> Iterator[None]:
    """Hold the results folder (created if need be) for the block, and the results folder a study's sub-folder
    (STUDY_FOLDERS) sits in; one this process already held (a bisect's, around each of its sweeps) stays held after
    it."""
    try:
        Path(results_dir).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BenchError(f"cannot write results to {results_dir}: {e.strerror or e}") from None
    already = Path(results_dir).resolve() in _HELD
    hold(Path(results_dir), echo)
    try:
        yield
    finally:
        if not already:
            release(Path(results_dir))


def holds_results_folder(writer):
    """A writer of a results folder (its `results_dir` argument) holds it while it runs, as `make bench` does: a study,
    a sweep or the grid beside another run into the same folder would slow both and write the same files."""
    signature = inspect.signature(writer)

    @functools.wraps(writer)
    def held(*args, **kwargs):
        with holding(signature.bind(*args, **kwargs).arguments["results_dir"]):
            return writer(*args, **kwargs)

    return held


@atexit.register
def _release_all() -> None:
    for key in list(_HELD):
        release(key)


STORE_WAIT_S = 120.0  # a writer of a store holds it for milliseconds: one waited on longer than this is stuck


def store_lock_path(path: Path) -> Path:
    return Path(path).parent / f".{Path(path).name}.lock"


@contextlib.contextmanager
def store_lock(path: Path, wait_s: float = STORE_WAIT_S) -> Iterator[None]:
    """Hold `path`'s store for the block, one process (or thread) at a time: an exclusive flock on a hidden
    .<name>.lock beside it, waited for up to `wait_s`. The holder removes the lock file as it lets go (no lock file is
    left beside the store); a waiter that then holds a removed one takes the new one. On a file system without
    flock the block runs unlocked, as it did before there was a lock."""
    lock = store_lock_path(path)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            f = open(os.open(lock, os.O_RDWR | os.O_CREAT, 0o666), "r+")
        except OSError as e:
            raise BenchError(f"cannot lock {path} ({lock}: {e.strerror or e})") from None
        try:
            locked = wait_for_flock(f, deadline, path)
        except BaseException:
            f.close()
            raise
        if not locked or same_file(f, lock):
            break
        f.close()  # its holder removed it as it let go: take the new one
    try:
        yield
    finally:
        if locked:
            lock.unlink(missing_ok=True)
        f.close()


def wait_for_flock(f: IO[str], deadline: float, path: Path) -> bool:
    """Wait for an exclusive flock of `f` until `deadline`; False on a file system without flock."""
    while True:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise BenchError(f"{path} has been held by another command for over {STORE_WAIT_S:.0f} s: wait for it "
                                 f"to end (a writer that died let go of it)") from None
            time.sleep(0.02)
        except OSError:
            return False
