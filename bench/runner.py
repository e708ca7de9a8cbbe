"""The orchestrator: one subprocess per cell in its backend's environment, with a timeout; a failed cell
becomes a recorded status, Ctrl-C keeps every finished result."""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path
from typing import Callable

from bench.backends import BenchError, cell_environment
from bench.failures import crash_status, oom_kill_count
from bench.provenance import ENV_STAMP, REPO_ROOT, env_stamp, git_info, machine_info, machine_label, now_utc
from bench.results import Result, Run, load_all, task_unit
from bench.workloads import Cell, get_model

VENVS_DIR = Path(os.environ.get("BENCH_VENVS_DIR", REPO_ROOT / ".venvs"))
LOG_TAIL_LINES = 30
VERBOSE = bool(os.environ.get("BENCH_VERBOSE"))  # echo every line a cell prints, not only its progress


def current_lock_sha256(backend: str) -> str | None:
    """The sha256 of envs/<backend>/requirements.txt as it is now (what scripts/envs.py stamps a build with)."""
    try:
        return hashlib.sha256((REPO_ROOT / "envs" / backend / "requirements.txt").read_bytes()).hexdigest()
    except OSError:
        return None


def env_python(backend: str) -> str:
    """The interpreter of the backend's built, current environment: .venvs/<backend>, or this one if it is that
    env. An env built from another requirements.txt is refused: its numbers would be another lock's."""
    venv = VENVS_DIR / backend
    if (venv / ENV_STAMP).exists():
        python, stamp = str(venv / "bin" / "python"), env_stamp(venv)
    elif (env_stamp() or {}).get("backend") == backend:
        python, stamp = sys.executable, env_stamp()  # e.g. inside the container image
    else:
        raise BenchError(f"the {backend!r} environment is not built (no {venv / ENV_STAMP}): run `make env BACKEND={backend}`")
    built, now = (stamp or {}).get("lock_sha256"), current_lock_sha256(backend)
    if now and built != now:
        raise BenchError(
            f"the {backend!r} environment is stale (built from requirements sha256 {str(built)[:12]}, "
            f"envs/{backend}/requirements.txt is now {now[:12]}): run `make env BACKEND={backend}`"
        )
    return python


def check_writable(results_dir: Path) -> None:
    """Create and remove a probe file where results will go (os.access says yes to root on a read-only folder)."""
    try:
        results_dir.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=results_dir, prefix=".write-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise BenchError(f"cannot write results to {results_dir}: {e.strerror or e}") from None


def default_profile(machine: dict) -> tuple[str, str]:
    if machine["gpus"]:
        return "paper", f"CUDA GPU visible ({machine_label(machine)})"
    return "smoke", "no CUDA GPU visible"


def hms(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600:d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class CellProcess:
    """One cell run in a child process group, its output teed to a log and the console."""

    def __init__(self, cell: Cell, python: str, log_path: Path, git: dict, echo: Callable[[str], None]):
        self.cell, self.python, self.log_path, self.echo = cell, python, log_path, echo
        self.tail: deque[str] = deque(maxlen=LOG_TAIL_LINES)
        self.env = {**os.environ, **cell_environment(cell.backend), "PYTHONUNBUFFERED": "1", "BENCH_GIT_COMMIT": git.get("commit") or ""}

    def run(self, timeout_s: float) -> Run:
        fd, out = tempfile.mkstemp(prefix="bench-run-", suffix=".json")
        os.close(fd)
        os.unlink(out)
        cmd = [self.python, "-m", "bench", "cell", "--cell", json.dumps(self.cell.to_dict()), "--out", out]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        oom_kills_before = oom_kill_count()
        with self.log_path.open("w") as log:
            proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
            reader = threading.Thread(target=self._pump, args=(proc, log), daemon=True)
            reader.start()
            try:
                proc.wait(timeout=timeout_s)
                timed_out = False
            except subprocess.TimeoutExpired:
                self._kill(proc)
                timed_out = True
            except BaseException:  # Ctrl-C: stop the child with us, keep what is finished
                self._kill(proc)
                raise
            finally:
                reader.join(timeout=10)
        wall = round(time.perf_counter() - started, 3)
        try:
            if timed_out:
                return Run(status="timeout", message=f"no result after {timeout_s:.0f} s; killed", wall_s=wall, exit_code=proc.returncode)
            if Path(out).exists():
                run = Run.from_dict(json.loads(Path(out).read_text()))
                run.exit_code = proc.returncode
                return run
            return self._crashed(proc.returncode, wall, oom_kills_before)
        finally:
            Path(out).unlink(missing_ok=True)

    def _pump(self, proc: subprocess.Popen, log) -> None:
        for line in proc.stdout:
            log.write(line)
            log.flush()
            self.tail.append(line.rstrip())
            if VERBOSE or line.startswith("[cell]"):  # the rest is in the log, and its tail in any failure
                self.echo("    " + line.rstrip())

    @staticmethod
    def _kill(proc: subprocess.Popen) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                proc.wait(timeout=10)
                return
            except subprocess.TimeoutExpired:
                continue

    def _crashed(self, code: int, wall: float, oom_kills_before: int | None) -> Run:
        """The child died without writing its result: say how, from its exit status, the cgroup's OOM-kill
        count and its last lines."""
        last = " | ".join(line for line in list(self.tail)[-5:] if line)
        status, how = crash_status(code, "\n".join(self.tail), oom_kills_before, oom_kill_count())
        return Run(status=status, message=f"{how}; last output: {last}", wall_s=wall, exit_code=code)


def run_cells(
    cells: list[Cell],
    results_dir: Path,
    repeats: int = 1,
    timeout_s: float | None = None,
    profile_choice: str = "explicit",
    echo: Callable[[str], None] = lambda s: print(s, flush=True),
) -> list[Result]:
    """Run every cell (each `repeats` processes) and write one result file per cell."""
    if repeats < 1:
        raise BenchError(f"repeats must be a positive integer, got {repeats}")
    load_all(results_dir)  # refuse to start over an unreadable result file, and name it
    pythons = {c.backend: env_python(c.backend) for c in cells if not get_model(c.model).why_unsupported(c.backend)}
    check_writable(results_dir)  # before any cell runs: an hour of measuring must not end in a failed write
    git, machine = git_info(), machine_info()
    from bench.workloads import get_profile

    done: list[Result] = []
    started = time.perf_counter()
    try:
        for index, cell in enumerate(cells, 1):
            echo(f"[{index}/{len(cells)}] {cell.backend} {cell.model} {cell.task} batch={cell.batch_size} {cell.variant} ({cell.profile}; elapsed {hms(time.perf_counter() - started)})")
            reason = get_model(cell.model).why_unsupported(cell.backend)
            if reason:
                runs = [Run(status="unsupported", message=reason)]
            else:
                limit = timeout_s or get_profile(cell.profile).timeout_s
                runs = []
                for repeat in range(repeats):
                    log_path = results_dir / "logs" / cell.profile / f"{cell.key}.{repeat}.log"
                    runs.append(CellProcess(cell, pythons[cell.backend], log_path, git, echo).run(limit))
                    if runs[-1].status != "ok":
                        break
            result = Result(
                cell=cell,
                runs=runs,
                unit=task_unit(cell),
                provenance={"git": git, "machine": machine, "profile_choice": profile_choice, "orchestrator": sys.argv},
                created_at=now_utc(),
            )
            path = result.write(results_dir)
            done.append(result)
            echo(f"    -> {result.describe()}  [{path.relative_to(results_dir)}]")
            if result.status not in ("ok", "unsupported"):
                echo(f"    log: {log_path}")
    except KeyboardInterrupt:
        echo(f"\ninterrupted after {len(done)} of {len(cells)} cells; every finished result is kept in {results_dir}")
        raise
    echo(f"{len(done)} cells in {hms(time.perf_counter() - started)}: " + ", ".join(f"{n} {s}" for s, n in _counts(done).items()))
    return done


def _counts(results: list[Result]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    return counts
