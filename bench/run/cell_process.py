"""One cell run in its own child process group by the orchestrator: its output teed to a log and the console, killed
at its timeout or with its caller, and how it ended when it wrote no result. Shared by the runner, the grid's and the
studies' workers (bench/run/worker_process.py), which kill their processes the same way."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

from bench.base.failures import PeakMemory, crash_status, oom_kill_count
from bench.base.provenance import REPO_ROOT
from bench.catalogue.backends import cell_environment
from bench.catalogue.registry import Cell
from bench.plan import ram_gib
from bench.record.results import Run

LOG_TAIL_LINES = 30
VERBOSE = bool(os.environ.get("BENCH_VERBOSE"))  # echo every line a cell prints, not only its progress


def start_in_own_group(argv: list[str], env: dict[str, str], stdout=subprocess.PIPE, stdin=None) -> subprocess.Popen:
    """A child of the checkout leading its own process group (so that kill_group takes its children too),
    stderr merged into stdout as text: how every cell and worker process is started."""
    return subprocess.Popen(
        argv, cwd=REPO_ROOT, env=env, stdin=stdin, stdout=stdout, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip


def child_environment(variables: dict[str, str], git: dict, **extra: str) -> dict[str, str]:
    """The variables of a cell's or a worker's process: ours, its env's own (`variables`: bench/catalogue/backends.py
    cell_environment, or a sweep target's), `extra`, unbuffered output (each line reaches the reader as it is
    printed) and the commit it runs."""
    return {
        **os.environ,
        **variables,
        **extra,
        "PYTHONUNBUFFERED": "1",
        "BENCH_GIT_COMMIT": git.get("commit") or "",
    }


def read_lines(stream, on_line: Callable[[str], None], at_end: Callable[[], None] | None = None) -> threading.Thread:
    """A started thread that hands each line of a child's output to `on_line`, then calls `at_end`: the pipe is
    drained as the child writes (a full pipe would block it) while the caller waits on the child."""

    def read() -> None:
        for line in stream:
            on_line(line)
        if at_end is not None:
            at_end()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader


def kill_group(proc: subprocess.Popen) -> None:
    """SIGTERM a child's process group (a chance to flush), then SIGKILL whatever is left of it."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # children the cell left behind (compile workers, loaders)
    except OSError:  # the group is gone: nothing was left behind
        pass
    proc.wait()


def how_it_died(
    code: int, output: str, last_lines: list[str], oom_kills_before: int | None, peak_rss_gib: float | None
) -> tuple[str, str]:
    """A child that died without its result: its status and how it ended (bench/base/failures.py crash_status, from its
    exit status, the cgroup's OOM-kill count, the most RAM its processes held and its output), with its last lines."""
    status, how = crash_status(code, output, oom_kills_before, oom_kill_count(), peak_rss_gib, ram_gib())
    last = " | ".join(line for line in last_lines[-5:] if line)
    return status, f"{how}; last output: {last}"


class CellProcess:
    """One cell run in a child process group, its output teed to a log and the console."""

    def __init__(
        self,
        cell: Cell,
        python: str,
        log_path: Path,
        git: dict,
        echo: Callable[[str], None],
        config: dict | None = None,
    ):
        self.cell, self.python, self.log_path, self.echo, self.config = cell, python, log_path, echo, config
        self.tail: deque[str] = deque(maxlen=LOG_TAIL_LINES)
        self.log_error: OSError | None = None  # a write that failed (a full disk): the log stops there, the cell not
        # BENCH_ORCHESTRATOR_PID: the cell dies with it (bench/measure/env_process.py die_with_parent)
        self.env = child_environment(cell_environment(cell.env), git, BENCH_ORCHESTRATOR_PID=str(os.getpid()))

    def run(self, timeout_s: float) -> Run:
        # A private folder for the cell's result: whatever a killed cell leaves half-written goes with it (its name:
        # bench/measure/env_process.py SCRATCH_PREFIX).
        with tempfile.TemporaryDirectory(prefix="bench-cell-") as scratch:
            out = Path(scratch) / "run.json"
            cmd = [self.python, "-m", "bench", "cell", "--cell", json.dumps(self.cell.to_dict()), "--out", str(out)]
            if self.config is not None:
                cmd += ["--config", json.dumps(self.config)]
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            started = time.perf_counter()
            oom_kills_before = oom_kill_count()
            # unbuffered: a write the disk refused is not retried when the log closes (nothing is left in a buffer)
            with self.log_path.open("wb", buffering=0) as log:
                proc = start_in_own_group(cmd, self.env)
                reader = read_lines(proc.stdout, lambda line: self._take(line, log))
                timed_out = False
                try:
                    with PeakMemory(proc.pid) as memory:  # start_new_session: the cell leads its own group
                        proc.wait(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    timed_out = True
                finally:  # also on Ctrl-C: the cell's whole process group goes with it, leftovers included
                    kill_group(proc)
                    reader.join(timeout=10)
            wall = round(time.perf_counter() - started, 3)
            if timed_out:
                return Run(
                    status="timeout",
                    message=f"no result after {timeout_s:.0f} s; killed",
                    wall_s=wall,
                    exit_code=proc.returncode,
                )
            if out.exists():
                try:
                    run = Run.from_dict(json.loads(out.read_text()))
                except (ValueError, TypeError) as e:
                    return Run(
                        status="error",
                        message=f"the cell wrote an unreadable run: {e}",
                        wall_s=wall,
                        exit_code=proc.returncode,
                    )
                run.exit_code = proc.returncode
                return run
            return self._crashed(proc.returncode, wall, oom_kills_before, memory.peak_gib)

    def _take(self, line: str, log) -> None:
        """One line of the cell's output: to its log, its tail, and the console where it is progress."""
        if self.log_error is None:
            try:
                log.write(line.encode())
            except OSError as e:  # a full disk: the pipe is still drained (else the cell blocks), the tail kept
                self.log_error = e
                why = e.strerror or e
                self.echo(f"    could not write the log {self.log_path}: {why}; its last lines are kept")
        self.tail.append(line.rstrip())
        if VERBOSE or line.startswith("[cell]"):  # the rest is in the log, and its tail in any failure
            self.echo(line.rstrip())

    def _crashed(self, code: int, wall: float, oom_kills_before: int | None, peak_rss_gib: float | None) -> Run:
        """The child died without writing its result: say how (how_it_died)."""
        status, message = how_it_died(code, "\n".join(self.tail), list(self.tail), oom_kills_before, peak_rss_gib)
        return Run(status=status, message=message, wall_s=wall, exit_code=code)
