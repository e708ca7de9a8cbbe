"""`make test`'s lanes: the selected tests split between two pytest processes run side by side on the 2 cores, so
that both end at about the same time (`pytest --lane 1/2`, `--lane 2/2`; docs/ARCHITECTURE.md "Tests by tier").

The split is longest-processing-time first over units of work: a unit goes to the lane with the least work so far.
Five kinds of unit:
  - the tests reading the shared smoke runs (fixture shared_smoke, tests/shared_run.py), all in one lane as one
    unit: the lane runs each shared run once, at its first reader, and the other lane never waits for it;
  - the tests not marked slow that need a framework env (marker envs), all in one lane as one unit: they are short
    and many, and have never run beside one another (each pair would be a new chance of two tests sharing a file);
  - the tests needing no framework env (neither slow nor envs), one unit a test file: together they are about a
    quarter of the suite's seconds, too much for one lane to carry alone; within a file they run in order, as
    written, and each writes only below its own temporary folders or under a lock (bench/base/runlock.py store_lock);
  - keras-cv's StableDiffusion cells and the image build (markers keras_cv_sd, container), one unit in one lane:
    they use both cores throughout, and two of them side by side took 15 min each instead of 6 (2026-11-23, when
    the StableDiffusion cells built SD v1's widths in smoke);
  - every other test, a unit of its own.
A unit's work is its tests' seconds in tests/durations.json (measured, `make test-durations`), else its marker
duration_s, else a second. pytest-split splits by measured durations too, but cannot keep a group in one lane.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.base.atomic import write_json_atomic

DURATIONS = Path(__file__).resolve().parent / "durations.json"
BOTH_CORES = ("keras_cv_sd", "container")
UNKNOWN_S = 1.0


def parse_lane(text: str) -> tuple[int, int]:
    """'K/N' -> (K, N), 1 <= K <= N."""
    try:
        lane, lanes = (int(part) for part in text.split("/"))
    except ValueError:
        raise pytest.UsageError(f"--lane {text!r}: expected K/N, e.g. 1/2") from None
    if not 1 <= lane <= lanes:
        raise pytest.UsageError(f"--lane {text}: K must be 1 to N")
    return lane, lanes


def measured_seconds(path: Path = DURATIONS) -> dict[str, float]:
    """The seconds each test took where it was last measured; {} without the file."""
    if not path.exists():
        return {}
    return {name: float(s) for name, s in json.loads(path.read_text())["seconds"].items()}


def duration_hint(item) -> float | None:
    """The test's marker duration_s (about how long it takes on a 2-core CPU), None without one."""
    marker = item.get_closest_marker("duration_s")
    return float(marker.args[0]) if marker else None


def seconds(item, measured: dict[str, float]) -> float:
    if item.nodeid in measured:
        return measured[item.nodeid]
    hint = duration_hint(item)
    return UNKNOWN_S if hint is None else hint


SHARED = "shared_smoke"


def unit_of(item) -> str:
    if SHARED in getattr(item, "fixturenames", ()):
        return "shared smoke runs"
    if item.get_closest_marker("slow") is None:
        if item.get_closest_marker("envs") is None:
            return "no env: " + item.nodeid.split("::")[0]
        return "not slow"
    if any(item.get_closest_marker(name) for name in BOTH_CORES):
        return "both cores"
    return item.nodeid


def split(items: list, lanes: int, measured: dict[str, float]) -> list[list]:
    """The items in `lanes` lists, each unit whole in one, the loads as even as LPT makes them; each list keeps the
    items' order."""
    units: dict[str, list] = {}
    for item in items:
        units.setdefault(unit_of(item), []).append(item)
    load = [0.0] * lanes
    lane_of: dict[str, int] = {}
    work = {name: sum(seconds(i, measured) for i in members) for name, members in units.items()}
    for name in sorted(units, key=lambda n: (-work[n], n)):
        lane_of[name] = min(range(lanes), key=lambda k: (load[k], k))
        load[lane_of[name]] += work[name]
    return [[i for i in items if lane_of[unit_of(i)] == k] for k in range(lanes)]


def keep_lane(config, items: list, option: str, record: str | None = None) -> None:
    """Leave in `items` only lane K of N (option 'K/N'), the others deselected, and say the lane's size. With
    `record` (a path), the selected tests and every lane's, as JSON: one collection shows the whole split."""
    lane, lanes = parse_lane(option)
    measured = measured_seconds()
    every = split(items, lanes, measured)
    if record:
        write_json_atomic(Path(record), {"selected": [i.nodeid for i in items],
                                         "lanes": [[i.nodeid for i in members] for members in every]})
    kept = every[lane - 1]
    chosen = set(kept)
    deselected = [i for i in items if i not in chosen]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
    items[:] = kept
    work = sum(seconds(i, measured) for i in kept)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"lane {lane}/{lanes}: {len(kept)} tests, about {work / 60:.0f} min (tests/durations.json)")
