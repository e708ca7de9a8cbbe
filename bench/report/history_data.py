"""What the results page's history views show, as plain data: each table as a matrix (rows by backends, each cell
its figure, interval and verdict), the recent runs judged two by two (A against B, by the Judge), and every key's
series with its change points (bench/history/). bench/report/history_page.py draws them."""
from __future__ import annotations

import itertools
from collections import defaultdict
from pathlib import Path

from bench import stats
from bench.history import index
from bench.judge import Judge
from bench.report.analysis import Report
from bench.report.load import COLUMNS
from bench.report.markdown import measured_text
from bench.report.site import verdict
from bench.report.text import status_label
from bench.results import CorruptResult, load

RUNS_PER_TABLE = 4  # the newest runs of each table offered to the A-vs-B view: each pair of them is judged once
MIN_RUN_CELLS = 3  # a run with fewer ok cells (a single re-run) is no run to compare


def matrix(report: Report) -> list[dict]:
    """Each table as rows by columns: a cell's figure, its 95% interval and its verdict in its row."""
    out = []
    for table in report.tables:
        columns = [c for c in COLUMNS if any(c in facts.cells for facts in table.rows)]
        rows = []
        for facts in table.rows:
            cells = []
            for column in columns:
                loaded = facts.cells.get(column)
                if loaded is None:
                    cells.append(None)
                    continue
                found = table.estimate(loaded) if loaded.result.status == "ok" else None
                interval = found.interval() if found else None
                cells.append({
                    "text": measured_text(table, loaded, facts.unit_in_cell) if found
                    else status_label(loaded.result.status),
                    "interval": f"95% interval {interval[0]:.4g}–{interval[1]:.4g} {loaded.result.unit}"
                    if interval else (found.basis if found else loaded.result.message or ""),
                    "verdict": verdict(table, loaded, facts, column),
                    "key": loaded.result.cell.key,
                })  # fmt: skip
            rows.append({"label": f"{facts.key.label()} (batch {facts.key.batch_size})", "cells": cells})
        out.append({"title": table.group.title, "columns": [c.header for c in columns], "rows": rows})
    return out


def runs_and_pairs(results_dir: Path) -> tuple[list[dict], dict[str, list[dict]]]:
    """The newest runs of each table among the current and earlier results (not the studies'), and each pair of
    one table's runs that measured a cell in common, judged cell by cell (B against A, A the earlier)."""
    rows = index.rows(results_dir, "source IN ('results', 'history') AND status = 'ok' AND run_id IS NOT NULL", ())
    by_run: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_run[row["run_id"]].append(row)
    by_table: dict[tuple, list[str]] = defaultdict(list)
    for run, found in by_run.items():
        if len(found) >= MIN_RUN_CELLS:
            by_table[table_of(found[0])].append(run)
    runs, pairs, loaded = [], {}, {}
    for table in sorted(by_table):
        newest = sorted(by_table[table], key=lambda run: max(r["created_at"] for r in by_run[run]))[-RUNS_PER_TABLE:]
        for run in newest:
            first = min(by_run[run], key=lambda r: r["created_at"])
            runs.append({"id": run, "label": f"{first['created_at'][:16]} {first['profile']} {first['machine']} "
                                             f"{first['stack']} (commit {(first['commit_sha'] or '?')[:8]}, "
                                             f"{len(by_run[run])} cells)"})
        for a, b in itertools.combinations(newest, 2):  # oldest first: A the earlier run
            cells_a = {r["cell_key"]: r for r in by_run[a]}
            common = [(cells_a[r["cell_key"]], r) for r in by_run[b] if r["cell_key"] in cells_a]
            if common:
                pairs[f"{a}|{b}"] = judged_pairs(results_dir, common, loaded)
    return runs, pairs


def table_of(row: dict) -> tuple:
    return row["profile"], row["machine"], row["stack"]


def judged_pairs(results_dir: Path, common: list[tuple[dict, dict]], loaded: dict) -> list[dict]:
    def result(row):
        if row["path"] not in loaded:
            try:
                loaded[row["path"]] = load(results_dir / row["path"])
            except CorruptResult:
                loaded[row["path"]] = None
        return loaded[row["path"]]

    sides = [(ra, rb, result(ra), result(rb)) for ra, rb in common]
    sides = [s for s in sides if s[2] is not None and s[3] is not None]
    judge = Judge([r for s in sides for r in s[2:]], results_dir)
    out = []
    for ra, rb, a, b in sorted(sides, key=lambda s: s[0]["cell_key"]):
        ratio = judge.ratio(a, b)
        interval = ratio.interval() if ratio else None
        out.append({"cell": ra["cell_key"], "a": f"{ra['center']:.4g}", "b": f"{rb['center']:.4g}",
                    "ratio": stats.fmt_ratio(ratio), "verdict": stats.verdict(ratio),
                    "why": ratio.reason if ratio is not None and not ratio.decidable else "",
                    "low": interval[0] if interval else None, "high": interval[1] if interval else None})
    return out


def every_series(results_dir: Path) -> tuple[dict[str, list[dict]], str]:
    """Every key with a series of two points or more (cells; sweep keys; a sweep's Keras/plain pairs), with its
    change points; and why change points were not searched, where they were not."""
    from bench.history.changes import THRESHOLD
    from bench.history.report import find_changes
    from bench.history.series import series_of
    from bench.sweep.report import overhead_pairs

    try:
        import ruptures  # noqa: F401  (the tools env's; an own environment may lack it)
    except ImportError:
        searched = "change points not searched: ruptures is not installed here (make env-tools installs it)"
    else:
        searched = ""
    cells, sweep_keys = index.known_keys(results_dir)
    keys = cells + sweep_keys + [f"{a}/{b}" for a, b in overhead_pairs(dict.fromkeys(sweep_keys))]
    out = {}
    for key in keys:
        drawn = []
        for series in series_of(results_dir, key):
            if len(series.points) < 2:
                continue
            found = [] if searched else find_changes(results_dir, series, THRESHOLD)
            drawn.append({
                "where": series.where, "unit": series.unit, "by": series.ordered_by,
                "points": [{"label": p.label, "center": p.center, "low": p.low, "high": p.high,
                            "commit": (p.commit or "")[:10]} for p in series.points],
                "changes": [{"at": series.points[f.split.at].label, "before": series.points[f.split.at - 1].label,
                             "size": stats.fmt_ratio(f.split.ratio), "p": f"{f.split.p:.2g}",
                             "verdict": f.confirmation.verdict, "status": f.confirmation.status,
                             "bisect": f.confirmation.bisect,
                             "triage": f"{f.triage.state}: {f.triage.reason}" if f.triage else ""} for f in found],
            })  # fmt: skip
        if drawn:
            out[key] = drawn
    return out, searched
