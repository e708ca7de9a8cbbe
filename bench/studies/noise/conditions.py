"""Whether the machine was quiet while a noise study ran: the load average, the CPU time other processes took, and
the drift probe (bench/measure/drift.py) at the start, between processes and at the end."""
from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.base import stats
from bench.measure.drift import reference_ms

LOAD_PER_CPU = 0.75  # a load above this many busy cores per logical CPU (1.5 on 2 cores) is "under load"
DRIFT_SHARE = 0.1  # under load too where more drift-probe readings than this share read beyond the noise gate


@dataclass
class Snapshot:
    """The machine at one moment: the load average, the drift probe, and CPU time (everyone's, and this study's)."""

    wall: float
    load_1m: float | None
    reference_ms: float
    busy_s: float | None  # every CPU's busy time since boot (/proc/stat), seconds
    own_s: float  # this process's CPU time and its waited-for children's

    @classmethod
    def take(cls) -> Snapshot:
        try:
            load = round(os.getloadavg()[0], 2)
        except OSError:
            load = None
        own = sum(
            getattr(resource.getrusage(who), f)
            for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
            for f in ("ru_utime", "ru_stime")
        )
        return cls(time.perf_counter(), load, reference_ms(), busy_seconds(), own)


def busy_seconds() -> float | None:
    """Every CPU's busy time since boot (user, nice, system, irq, softirq and steal of /proc/stat's first line), in
    seconds; None where there is no /proc/stat."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in fields[1:9])
    except (OSError, ValueError, IndexError):
        return None
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def conditions(start: Snapshot, end: Snapshot, readings: list[float] | None = None, cpus: int | None = None
               ) -> dict[str, Any]:
    """Whether the machine was quiet while the study ran. The load beside the study is the cores other processes kept
    busy on average (all CPU time less this study's, over the wall time): the 1-minute load average at the end counts
    the study's own processes, and the one at the start what ran in the minute before it, so they count only where
    the CPU times are not readable (then the larger of the two). Under load also where the drift probe
    (bench/measure/drift.py) read more than the noise gate's multiple of its quietest value at the end, or between more
    than a tenth of the processes."""
    wall = max(end.wall - start.wall, 1e-9)
    others = None
    if start.busy_s is not None and end.busy_s is not None:
        others = round(max(0.0, (end.busy_s - start.busy_s) - (end.own_s - start.own_s)) / wall, 2)
    readings = [v for v in (readings or [start.reference_ms, end.reference_ms]) if v and v > 0]
    quietest = min(readings)
    found = {
        "load_1m": {"start": start.load_1m, "end": end.load_1m},
        "others_busy_cores": others,
        "drift_probe_ms": {"start": start.reference_ms, "end": end.reference_ms, "quietest": quietest,
                           "readings": len(readings),
                           "above_limit": sum(v > stats.REFERENCE_FACTOR * quietest for v in readings)},
        "wall_s": round(wall, 1),
    }
    return labelled({**found, "cpus": cpus or os.cpu_count() or 1})


def labelled(found: dict[str, Any]) -> dict[str, Any]:
    """The conditions' label (quiet, or under load and why) from what they recorded: taken as a study ends, and again
    for a study written under an earlier rule (python -m bench.studies.noise.detection)."""
    others, loads = found.get("others_busy_cores"), found.get("load_1m") or {}
    averages = [v for v in (loads.get("start"), loads.get("end")) if v is not None]
    load = others if others is not None else max(averages, default=0.0)
    limit = LOAD_PER_CPU * found["cpus"]
    probe = found["drift_probe_ms"]
    quietest, slow, count = probe["quietest"], probe["above_limit"], probe["readings"]
    drifted = probe["end"] > stats.REFERENCE_FACTOR * quietest or slow > DRIFT_SHARE * count
    why = ([f"load {load:.2f}"] if load > limit else []) + (
        [f"drift probe above {stats.REFERENCE_FACTOR:g}x its quietest {quietest:.3g} ms in {slow} of "
         f"{count} readings, {probe['end']:.3g} ms at the end"] if drifted else [])
    return {
        **found,
        "label": f"under load ({'; '.join(why)})" if why else "quiet",
        "quiet": not why,
        "load": round(load, 2),
        "load_limit": limit,
    }
