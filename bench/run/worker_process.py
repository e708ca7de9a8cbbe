"""One study worker process run to its end (a sweep's measuring process, an overhead-study env's worker): in its own
process group, its output to a log, ended at a timeout or when the caller stops (Ctrl-C, a signal), and how it ended
when it did not exit 0, as a cell's crash is told (bench/base/failures.py)."""
from __future__ import annotations

import subprocess
from pathlib import Path

from bench.base.failures import oom_kill_count
from bench.run.cell_process import how_it_died, kill_group, start_in_own_group


def run_logged(argv: list[str], env: dict[str, str], log_path: Path, timeout_s: float) -> tuple[str, str] | None:
    """None when the process exited 0, else (status, how it ended: its last output included)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    oom_before = oom_kill_count()
    with log_path.open("a") as log:
        proc = start_in_own_group(argv, env, stdout=log)
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            return "timeout", f"ran past {timeout_s:.0f} s and was killed (log: {log_path})"
        finally:  # also on Ctrl-C or a signal: the process group goes with the caller
            if proc.poll() is None:
                kill_group(proc)
    if code == 0:
        return None
    tail = log_path.read_text()[-3000:]
    return how_it_died(code, tail, tail.splitlines(), oom_before, None)
