"""How a cell failed: out of memory, killed by a signal, or another error. Stdlib only (runs in every env).

One list of out-of-memory markers serves both places that decide: the cell's own exception handler
(bench/measure/cell.py) and the orchestrator's reading of a dead cell's last output (bench/run/runner.py).
"""
from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

# Each framework's own words for running out of memory, matched case-insensitively:
# TensorFlow  ResourceExhaustedError: OOM when allocating tensor with shape[...]
# XLA / JAX   XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate ... bytes
# PyTorch     torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ...
#             (on a CPU: DefaultCPUAllocator: can't allocate memory: you tried to allocate ... bytes)
# CUDA driver CUDA_ERROR_OUT_OF_MEMORY
# Python      MemoryError (and NumPy's _ArrayMemoryError: Unable to allocate ...)
OOM_MARKERS = (
    "RESOURCE_EXHAUSTED",
    "ResourceExhaustedError",
    "OOM when allocating",
    "out of memory",
    "OutOfMemoryError",
    "CUDA_ERROR_OUT_OF_MEMORY",
    "can't allocate memory",
    "MemoryError",
)

# cgroup v2: the count of processes the kernel's OOM killer took in this cgroup (and below it).
MEMORY_EVENTS = "/sys/fs/cgroup/memory.events"
# A SIGKILLed cell whose processes held this share of the machine's RAM ran it out (see crash_status).
RAM_EXHAUSTED_SHARE = 0.9


def has_oom_marker(text: str) -> bool:
    lowered = text.lower()
    return any(marker.lower() in lowered for marker in OOM_MARKERS)


def classify(exc: BaseException) -> str:
    """A cell's exception as a result status: "oom" or "error"."""
    if isinstance(exc, MemoryError) or has_oom_marker(f"{type(exc).__name__}: {exc}"):
        return "oom"
    return "error"


def oom_kill_count(path: Path | None = None) -> int | None:
    """The cgroup's oom_kill counter, or None where it cannot be read (cgroup v1, no /sys, another OS)."""
    try:
        for line in Path(path or os.environ.get("BENCH_MEMORY_EVENTS") or MEMORY_EVENTS).read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == "oom_kill":
                return int(value)
    except (OSError, ValueError):
        return None
    return None


def signal_of(exit_code: int | None) -> int | None:
    """The signal that ended a process started without a shell (subprocess's negative return code). A
    status of 128+N is the process's own exit status there, not a signal."""
    return -exit_code if exit_code is not None and exit_code < 0 else None


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def crash_status(exit_code: int, output: str, oom_kills_before: int | None, oom_kills_after: int | None,
                 peak_rss_gib: float | None = None, ram_gib: float | None = None) -> tuple[str, str]:
    """(status, message) of a cell process that died without writing its result.

    SIGKILL is "oom" only with evidence (the cgroup's oom_kill count rose, the output names an OOM, or the cell's
    processes were sampled holding RAM_EXHAUSTED_SHARE of the machine's RAM): a SIGKILL also comes from a user, a
    scheduler or a container runtime, and guessing would mislabel those. The last is how a machine whose OOM
    killer leaves no count we can read (cgroup v1, a VM's own killer) still says oom, with the figures.
    """
    number = signal_of(exit_code)
    marker = has_oom_marker(output)
    if number is None:
        return ("oom" if marker else "error"), f"exited with status {exit_code} and no result"
    name = signal_name(number)
    if oom_kills_before is not None and oom_kills_after is not None and oom_kills_after > oom_kills_before:
        return (
            "oom",
            f"killed by {name}: the kernel's OOM killer (memory.events oom_kill {oom_kills_before} -> {oom_kills_after})",
        )
    if marker:
        return "oom", f"killed by {name} after reporting an out-of-memory error"
    if number != signal.SIGKILL:
        return "killed", f"killed by {name}"
    if peak_rss_gib is not None and ram_gib and peak_rss_gib >= RAM_EXHAUSTED_SHARE * ram_gib:
        return "oom", (
            f"killed by {name} while its processes held {peak_rss_gib:.1f} GiB of the machine's {ram_gib:.1f} GiB "
            f"of RAM (sampled each second): out of host memory"
        )
    if oom_kills_before is None or oom_kills_after is None:
        return "killed", f"killed by {name} (no sign of the OOM killer: memory.events cannot be read)"
    return "killed", f"killed by {name} (no sign of the OOM killer: memory.events oom_kill unchanged)"


def group_rss_bytes(pgid: int, proc: Path = Path("/proc")) -> int:
    """Resident bytes of every process in process group pgid (a cell and the workers it started), from /proc."""
    total = 0
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
            if int(fields[2]) == pgid:  # field 5 of stat: the process group
                total += int(fields[21]) * os.sysconf("SC_PAGE_SIZE")  # field 24: rss in pages
        except (OSError, ValueError, IndexError):
            continue  # it ended while we read
    return total


class PeakMemory:
    """The most RAM a process group held, sampled every interval_s on a thread: what a SIGKILLed cell held when the
    machine ran out (its own peak_rss record dies with it). Use as a context manager; peak_gib after."""

    def __init__(self, pgid: int, interval_s: float = 1.0):
        self.pgid, self.interval_s, self.peak_bytes = pgid, interval_s, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while True:
            self.peak_bytes = max(self.peak_bytes, group_rss_bytes(self.pgid))
            if self._stop.wait(self.interval_s):
                return

    @property
    def peak_gib(self) -> float | None:
        return self.peak_bytes / 2**30 if self.peak_bytes else None

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
