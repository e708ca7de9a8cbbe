"""A cell's series from the history index: one per (profile, machine, stack) for a cell, ordered by date, with each
point's commit and processor; one per (machine, backend) for a release sweep's key, ordered by release, each release's
measurements (the sweep's, its bisects' steps', earlier runs' in history/) pooled into one point. Every point has its
95% interval; a key `A/B` of a sweep is A's figure over B's, paired within each process (as the bisect judges it)."""
from __future__ import annotations

import difflib
import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from bench.base import stats
from bench.base.errors import BenchError
from bench.studies.history import index
from bench.studies.sweep.derive import version_key

DATE, COMMIT, RELEASE = "date", "commit", "release"
# A cell's own results: a sweep's are a release series', and a re-run at two commits (confirm/) or a `make ab`
# comparison (ab/, its side B perhaps slowed on purpose by B_DELAY=) is judged in its own record, not a point of the
# series
CELL_ROWS = "cell_key = ? AND source NOT IN ('sweep', 'confirm', 'ab')"


@dataclass
class Point:
    label: str  # the release, or the result's time as a compact stamp (what AT= names in a triage)
    center: float
    low: float | None
    high: float | None
    paths: list[str]  # the result files it stands on, relative to the results folder
    commit: str | None = None
    created_at: str = ""
    processes: int = 0
    basis: str = ""
    processor: str = ""  # its processor's fingerprint (or name, where none was recorded), shortened
    medians: list[float] = field(default_factory=list)  # its processes' medians, which a point by commit pools


@dataclass
class Series:
    cell: str  # the key asked for
    where: str  # which series of it: profile, machine, processor, stack (a sweep's: machine, backend, package)
    ordered_by: str  # DATE or RELEASE
    unit: str
    points: list[Point] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # results without a figure: "label: status"
    sweep: str | None = None  # the sweep (study) name a release series comes from
    package: str | None = None
    backend: str | None = None  # the backend (the env its versions derive from) of a release series
    profile: str | None = None  # a cell series' profile (what a re-run of it runs)


def stamp(created_at: str) -> str:
    """2026-11-25T21:18:53+00:00 -> 20261125T211853Z: a point's label, letters and digits only."""
    return created_at[:19].replace("-", "").replace(":", "") + "Z"


def unique_label(seen: Counter, label: str) -> str:
    """A point's label, the second and later of one series that share it (a noise round's A and B, written in one
    second) with -2, -3, ... after it, in the order the series lists them: each point one AT= names."""
    seen[label] += 1
    return label if seen[label] == 1 else f"{label}-{seen[label]}"


def cell_series(results_dir: Path, key: str, by: str = DATE) -> list[Series]:
    """The cell's series: every result of it but a sweep's, current, earlier (history/) and the noise study's rounds;
    by date (a point per result file) or by commit (BY=commit: a commit's results pooled into one point)."""
    found: dict[tuple, Series] = {}
    labels: dict[tuple, Counter] = defaultdict(Counter)
    for row in index.rows(results_dir, CELL_ROWS, (key,)):
        where = (row["profile"], row["machine"], row["stack"])  # each point names its processor: the Judge
        # refuses to compare across two, and a change where the processor changed is worth seeing, not hiding
        series = found.setdefault(where, Series(key, f"{where[0]} profile, {where[1]}, {where[2]} stack", DATE,
                                                row["unit"] or "", profile=row["profile"]))
        label = unique_label(labels[where], stamp(row["created_at"] or ""))
        if row["status"] != "ok" or row["center"] is None:
            series.missing.append(f"{label}: {row['status']}")
            continue
        series.points.append(Point(label, row["center"], row["low"], row["high"], [row["path"]],
                                   row["commit_sha"], row["created_at"], row["processes"] or 0, row["basis"] or "",
                                   row["processor"][:12], json.loads(row["medians"])))
    return [by_commit(s) for s in found.values()] if by == COMMIT else list(found.values())


def by_commit(series: Series) -> Series:
    """The series with each commit's points pooled into one (its processes' medians, their geometric mean and t
    interval), in the order each commit was first measured; labelled by the commit's first 10 hex digits."""
    groups: dict[str, list[Point]] = {}
    for point in series.points:
        groups.setdefault(point.commit or "unknown", []).append(point)
    pooled, labels = [], Counter()
    for commit, points in groups.items():
        medians = [m for p in points for m in p.medians]
        found = stats.estimate([[m] for m in medians]) if medians else None
        if found is None:
            continue
        interval = found.interval()
        pooled.append(Point(unique_label(labels, commit[:10]), found.center, interval[0] if interval else None,
                            interval[1] if interval else None, [path for p in points for path in p.paths], commit,
                            points[-1].created_at, found.processes, found.basis, points[-1].processor, medians))
    return Series(series.cell, series.where, COMMIT, series.unit, pooled, series.missing, profile=series.profile)


def sweep_series(results_dir: Path, key: str) -> list[Series]:
    """A sweep key's series by release, or `A/B`'s paired ratio; one per (machine, backend, package)."""
    parts = key.split("/")
    rows = index.rows(results_dir, f"sweep_key IN ({','.join('?' * len(parts))})", tuple(parts))
    grouped: dict[tuple, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        package, version = (row["release"] or "?==?").split("==", 1)
        grouped[row["machine"], row["backend"], package][version].append(row)
    out = []
    for (machine, backend, package), by_version in grouped.items():
        names = {r["sweep"] for rows in by_version.values() for r in rows}
        sweeps = sorted(n for n in names if not n.startswith(("bisect-", "history-confirm-")))  # the study's own
        series = Series(key, f"{machine}, {backend} backend, by {package} release", RELEASE,
                        "ratio" if len(parts) == 2 else rows[0]["unit"] or "", sweep=(sweeps or [None])[0],
                        package=package, backend=backend)
        for version in sorted(by_version, key=version_key):
            samples = per_process(by_version[version], parts)
            found = stats.estimate([[v] for v in samples]) if samples else None
            if found is None:
                series.missing.append(f"{version}: " + ", ".join(sorted({r["status"] for r in by_version[version]})))
                continue
            interval = found.interval()
            ok = [r for r in by_version[version] if r["status"] == "ok"]
            series.points.append(Point(
                version, found.center, interval[0] if interval else None, interval[1] if interval else None,
                sorted(r["path"] for r in ok), ok[-1]["commit_sha"], ok[-1]["created_at"], found.processes, found.basis,
            ))  # fmt: skip
        out.append(series)
    return out


def per_process(rows: list[dict], parts: list[str]) -> list[float]:
    """Each process's figure at one release: its median (one key), or A's median over B's in the same process,
    matched by run and sweep (both columns of a pair ran interleaved in each process)."""
    ok = [r for r in rows if r["status"] == "ok"]
    if len(parts) == 1:
        return [m for r in ok for m in json.loads(r["medians"])]
    numerators = {(r["sweep"], r["run_id"]): r for r in ok if r["sweep_key"] == parts[0]}
    out = []
    for r in ok:
        if r["sweep_key"] == parts[1] and (a := numerators.get((r["sweep"], r["run_id"]))):
            out += [x / y for x, y in zip(json.loads(a["medians"]), json.loads(r["medians"])) if x > 0 and y > 0]
    return out


def series_of(results_dir: Path, key: str, by: str = DATE) -> list[Series]:
    """The series a CELL= names: a cell key (by date or by commit), a sweep's key, or two sweep keys `A/B` (by
    release); else an error naming the nearest keys."""
    cells, sweep_keys = index.known_keys(results_dir)
    if key in cells:
        found = cell_series(results_dir, key, by)
        if found:
            return found
    parts = key.split("/")
    if len(parts) <= 2 and all(p in sweep_keys for p in parts):
        return sweep_series(results_dir, key)
    near = difflib.get_close_matches(parts[0], cells + sweep_keys, n=3, cutoff=0.5)
    hint = f"; nearest: {', '.join(near)}" if near else ""
    raise BenchError(f"no results of {key!r} under {results_dir} ({len(cells)} cell keys, {len(sweep_keys)} sweep keys "
                     f"indexed; `python -m bench history keys` lists them){hint}")
