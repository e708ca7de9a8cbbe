"""Whether a change point found in a series is a change: the suite's own verdict between the points either side of it
(bench/judge/__init__.py's Judge, which carries the machine's run-to-run spread across runs; a sweep's paired key, A
over B in the same processes, as the bisect judges it), and, for a release series, a bisect that named the first changed
release between them (<results>/sweep/*.bisect.json) or the `make bisect` command that would."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from bench.base import stats
from bench.judge import Judge
from bench.record.results import CorruptResult, load
from bench.studies.history.changes import Split
from bench.studies.history.series import RELEASE, Series
from bench.studies.sweep.derive import version_key

CHANGE, JUDGED, CANDIDATE = "change", "judged, not bisected", "candidate"


@dataclass
class Confirmation:
    verdict: str  # the Judge's (or the paired) verdict of the point after against the point before
    ratio: stats.Ratio | None
    reason: str  # why the verdict could not decide, where it could not
    bisect: str  # what a bisect said, or the command that would ask
    status: str  # CHANGE, JUDGED or CANDIDATE


def expected_verdict(split: Split) -> str:
    return stats.SLOWER if split.ratio.value > 1 else stats.FASTER


def judged(results_dir: Path, series: Series, split: Split) -> tuple[str, stats.Ratio | None]:
    """The point after against the point before: the Judge over their result files (the newest file of a release
    that several measured), or a paired key's per-process ratios pooled at each release."""
    before, after = series.points[split.at - 1], series.points[split.at]
    if "/" in series.cell:
        from bench.studies.history.index import rows
        from bench.studies.history.series import per_process

        parts = series.cell.split("/")
        sides = []
        for point in (before, after):
            found = rows(results_dir, f"path IN ({','.join('?' * len(point.paths))})", tuple(point.paths))
            values = per_process(found, parts)  # a point's files are both keys' at its release
            sides.append(stats.estimate([[v] for v in values]) if values else None)
        if None in sides:
            return stats.INCONCLUSIVE, None
        ratio = stats.ratio(*sides)
        return stats.verdict(ratio), ratio
    try:
        a, b = (load(results_dir / point.paths[-1]) for point in (before, after))
    except CorruptResult as e:
        return stats.INCONCLUSIVE, stats.Ratio(math.nan, None, math.inf, False, f"unreadable: {e}")
    ratio = Judge([a, b], results_dir).ratio(a, b)
    return stats.verdict(ratio), ratio


def bisected(results_dir: Path, series: Series, split: Split) -> tuple[str, bool, str | None]:
    """What the bisects under <results>/sweep/ said of the releases between the two points, and whether one named
    the first changed release there; else the command that would search them. A series by date or commit: what the
    latest re-run at its commits said, whether it named the first changed commit, and its verdict."""
    if series.ordered_by != RELEASE:
        return rerun_at_commits(results_dir, series, split)
    good, bad = series.points[split.at - 1].label, series.points[split.at].label
    change = expected_verdict(split)
    key = series.cell if "/" in series.cell else None
    said = []
    for path in sorted((Path(results_dir) / "sweep").glob("*.bisect.json")):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if record.get("key") not in (series.cell, key) or (record.get("change") or stats.SLOWER) != change:
            continue
        answer = record.get("answer")
        if answer and version_key(good) < version_key(answer) <= version_key(bad):
            return f"bisected: first {change} release {answer} ({path.name})", True, None
        if version_key(record.get("good", "0")) <= version_key(good) and version_key(bad) <= version_key(
            record.get("bad", "0")
        ) and record.get("stopped"):
            said.append(f"{path.name} stopped: {record['stopped']}")
    ask = (f"make bisect STUDY={series.sweep} GOOD={good} BAD={bad} KEY={series.cell}"
           + (" CHANGE=faster" if change == stats.FASTER else ""))
    return ("; ".join(said) + "; " if said else "") + f"not bisected: {ask}", False, None


def rerun_at_commits(results_dir: Path, series: Series, split: Split) -> tuple[str, bool, str | None]:
    """What the latest re-run of the cell at the commits either side said (<results>/confirm/*.confirm.json), whether
    its bisect named the first changed commit, and its verdict of the two; else the command that would ask."""
    from bench.studies.history.commits import SHORT, records

    before, after = series.points[split.at - 1].commit, series.points[split.at].commit
    if not before or not after or before == after:
        return "no commits to re-run (make history CONFIRM=1 says why)", False, None
    change = expected_verdict(split)
    for path, record in reversed(records(results_dir, series.cell, before, after)):
        if record.get("change") not in (change, None) or not record.get("steps"):
            continue
        first = record["steps"][0].get("verdict")
        if record.get("answer"):
            return f"re-run and bisected: first {change} commit {record['answer'][:SHORT]} ({path.name})", True, first
        said = record.get("stopped") or "not finished"
        return f"re-run at both commits: {first} ({path.name}); {said}", False, first
    return (f"not re-run: make bisect-commits CELL={series.cell} PROFILE={series.profile} GOOD={before[:SHORT]} "
            f"BAD={after[:SHORT]}"), False, None


def confirm(results_dir: Path, series: Series, split: Split) -> Confirmation:
    verdict, ratio = judged(results_dir, series, split)
    bisect, named, rerun = bisected(results_dir, series, split)
    # a re-run of both sides interleaved in one session decides what separate runs often cannot
    agrees = expected_verdict(split) in (verdict, rerun)
    status = CANDIDATE if not agrees else CHANGE if named else JUDGED
    reason = "" if agrees else (ratio.reason if ratio is not None and ratio.reason else "")
    return Confirmation(verdict, ratio, reason, bisect, status)
