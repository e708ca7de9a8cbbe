"""`make history`'s text: each series of a key with every point's figure and interval, then its change points, each
with its size and interval, the Judge's verdict across it, the bisect's word, its status and any triage."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from bench.base import stats
from bench.studies.history import changes, triage
from bench.studies.history.confirm import Confirmation, confirm
from bench.studies.history.series import Series


@dataclass
class Found:
    """One change point of a series, confirmed as far as the results allow, with its triage if any."""

    split: changes.Split
    confirmation: Confirmation
    triage: triage.Triage | None


def find_changes(results_dir: Path, series: Series, threshold: float) -> list[Found]:
    entries = triage.read(results_dir)
    logs = [math.log(p.center) for p in series.points]
    return [
        Found(split, confirm(results_dir, series, split),
              triage.find(entries, series.cell, series.where, series.points[split.at].label))
        for split in changes.change_points(logs, threshold)
    ]  # fmt: skip


def point_line(series: Series, i: int) -> str:
    p = series.points[i]
    interval = f"{p.low:.4g}–{p.high:.4g}" if p.low is not None and p.high is not None else "no interval"
    commit = {"date": (p.commit or "?")[:10], "commit": p.created_at[:16]}.get(series.ordered_by,
                                                                               f"commit {(p.commit or '?')[:10]}")
    on = f", processor {p.processor}" if series.ordered_by != "release" else ""
    return (f"  {p.label:<18} {commit:<17} {p.center:.4g} {series.unit} ({interval}, {p.processes} processes, "
            f"interval from its {p.basis}{on})")


def change_line(series: Series, found: Found) -> str:
    split, c = found.split, found.confirmation
    before, after = series.points[split.at - 1].label, series.points[split.at].label
    text = (f"  change between {before} and {after}: {stats.fmt_ratio(split.ratio)}, p {split.p:.2g}; "
            f"judge: {c.verdict} {stats.fmt_ratio(c.ratio)}{f' ({c.reason})' if c.reason else ''}; {c.bisect}; "
            f"status: {c.status}")
    if found.triage:
        text += f"; triaged {found.triage.state} ({found.triage.when}): {found.triage.reason}"
    return text


def series_text(results_dir: Path, series: Series, threshold: float) -> tuple[list[str], list[Found]]:
    lines = [f"{series.cell} — {series.where}: {len(series.points)} points by {series.ordered_by}"]
    lines += [point_line(series, i) for i in range(len(series.points))]
    lines += [f"  no figure: {m}" for m in series.missing]
    found = find_changes(results_dir, series, threshold) if len(series.points) >= 2 * changes.MIN_SEGMENT else []
    rule = f"ruptures PELT candidates, kept where a t-test gives p < {threshold:g}"
    if len(series.points) < 2 * changes.MIN_SEGMENT:
        lines.append(f"  change points: none searched ({len(series.points)} points; a change needs "
                     f"{changes.MIN_SEGMENT} on each side)")
    elif not found:
        lines.append(f"  change points ({rule}): none")
    else:
        triaged = sum(1 for f in found if f.triage)
        lines.append(f"  change points ({rule}): {len(found)}" + (f" ({len(found) - triaged} new, {triaged} triaged: "
                                                                  "not new)" if triaged else ""))
        lines += [change_line(series, f) for f in found]
    return lines, found
