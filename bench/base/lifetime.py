"""A command started by make ends with make. GNU make passes SIGTERM on to the command it runs, but not SIGINT,
SIGHUP or SIGQUIT: it expects the terminal to have sent those to the whole process group, and waits for its command
to end. A `kill -HUP <make>` (or INT) alone would leave the orchestrator, and the cell it runs, going for hours.

What make does on such a signal is visible from outside: its handler sets the signal back to its default action
before it waits (make's fatal_error_signal), so the signal leaves the set it catches (/proc/<pid>/status SigCgt).
A thread watches the make that started this process (its nearest ancestor that is not a shell); when one of those
signals leaves make's caught set, it sends this process the same signal, which ends the run as Ctrl-C does (its cell
with it); when make is gone (kill -9), SIGTERM. Linux only: elsewhere nothing is watched.

stop_on_signals() is what every long command (a run, the grid, a sweep or bisect, the noise and overhead studies,
gpu-check) calls first: TERM, HUP and INT, to it or to the make that started it, end it as Ctrl-C does, keeping what
finished. It lives here, not in bench/cli.py, so that a study's own entry point need not import the whole CLI.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

SHELLS = {"sh", "bash", "dash", "zsh"}
MAKES = {"make", "gmake"}
# make passes SIGTERM on itself; SIGQUIT would end this process without its clean-up, so SIGTERM stands for it
RELAYED = {signal.SIGHUP: signal.SIGHUP, signal.SIGINT: signal.SIGINT, signal.SIGQUIT: signal.SIGTERM}


def _status(pid: int) -> dict[str, str]:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)


def caught(pid: int) -> int | None:
    """The signals a process catches (a bit mask, signal n at bit n-1); None when it is gone."""
    value = _status(pid).get("SigCgt")
    return int(value.strip(), 16) if value else None


def starting_make(pid: int | None = None) -> int | None:
    """The make that started this process, through any shells between; None when no make did."""
    pid = os.getppid() if pid is None else pid
    for _ in range(4):
        status = _status(pid)
        name = status.get("Name", "").strip()
        if name in MAKES:
            return pid
        if name not in SHELLS:
            return None
        pid = int(status.get("PPid", "0").strip() or 0)
    return None


def follow_make(stopping=lambda: False, interval_s: float = 0.25) -> threading.Thread | None:
    """Watch the make that started this process, relaying a fatal signal it got (see the module's doc), unless
    `stopping()` says this process is already ending (a terminal's Ctrl-C reaches make and this process alike)."""
    make = starting_make()
    if make is None:
        return None
    before = caught(make)
    if before is None:
        return None
    watched = [s for s in RELAYED if before & (1 << (s - 1))]

    def watch() -> None:
        while True:
            time.sleep(interval_s)
            now = caught(make)
            if stopping():
                return
            if now is None:  # make is gone: nothing will read what this run prints
                os.kill(os.getpid(), signal.SIGTERM)
                return
            for signum in watched:
                if not now & (1 << (signum - 1)):
                    os.kill(os.getpid(), RELAYED[signum])
                    return

    watcher = threading.Thread(target=watch, name="follow-make", daemon=True)
    watcher.start()
    return watcher


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, handled as Ctrl-C is (every finished result kept), but exiting with its own status."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


STOPPING: list[int] = []  # the signal that is ending this command, once one has


def interrupt(signum, frame):
    if STOPPING:  # already ending: a second signal must not cut the clean-up short (the cell's process group)
        return
    STOPPING.append(signum)
    raise Terminated(signum)


_FOLLOWING: list[bool] = []  # whether this process already follows its make (one watcher a process)


def stop_on_signals() -> None:
    """SIGTERM (kill, timeout, a scheduler, docker stop) and SIGHUP (a closed terminal, a lost SSH session) stop a
    command as Ctrl-C does: the running cell's process group is ended with it (it runs in a session of its own, so
    no signal reaches it otherwise), a worker's with it, a temporary folder or file removed, and every finished
    result is kept. Every command but a cell's own process calls it first (bench/cli.py, each study's entry point);
    a second call changes nothing."""
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        if signal.getsignal(signum) not in (signal.SIG_IGN, interrupt):  # nohup's, a background job's SIGINT, stay
            signal.signal(signum, interrupt)
    if not _FOLLOWING:
        _FOLLOWING.append(True)
        follow_make(stopping=lambda: bool(STOPPING))  # a signal make does not pass on (INT, HUP to make alone) too


def stopped_status(e: KeyboardInterrupt) -> int:
    """The exit status of a command a signal stopped, as a shell reports it: 128 + its number (Ctrl-C: 130)."""
    return 128 + getattr(e, "signum", signal.SIGINT)


def stopped_text(e: KeyboardInterrupt) -> str:
    """How a stop is said in a record (a bisect's): "stopped by SIGTERM" (Ctrl-C: SIGINT)."""
    return f"stopped by {signal.Signals(getattr(e, 'signum', signal.SIGINT)).name}"
