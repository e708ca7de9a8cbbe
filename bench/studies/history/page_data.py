"""What the results page's history views show, as plain data: each table as a matrix (rows by backends, each cell
its figure, interval and verdict), every two runs of the history compared as `make compare` compares them, and every
key's series with its change points (bench/studies/history/). bench/studies/history/page.py draws them."""
from __future__ import annotations

import itertools
from collections import defaultdict
from pathlib import Path

from bench.base import stats
from bench.judge.analysis import Report
from bench.record.load import COLUMNS
from bench.record.results import CorruptResult, NewerSchema
from bench.record.text import status_label
from bench.report.markdown import measured_text
from bench.report.site import verdict
from bench.studies.history import index
from bench.studies.history.runs import history_runs


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


def runs_and_pairs(results_dir: Path) -> dict:
    """Every run of the history (bench/studies/history/runs.py) for the A-vs-B view's two selectors, and each two runs
    that measured a cell in common compared as `make compare A=<the earlier> B=<the later>` compares them (one
    Comparison, so the same Judge, the same family of pairs and the same words). Each pair is held one way round
    only, A the earlier, which halves the file; the page says so. Strings repeat across pairs (a cell's name, a
    figure, a reason), so each is stored once in `words` and the rows hold their indices."""
    from bench.report.compare import Side, compare_sides, counts_text, run_side  # (it imports bench.report)

    found = history_runs(results_dir)
    rows = index.rows(results_dir, "cell_key IS NOT NULL", ())
    cells_of: dict[str, set] = defaultdict(set)  # each file's (cell, profile): what compare pairs on
    by_path = {r["path"]: (r["cell_key"], r["profile"]) for r in rows}
    for run in found:
        cells_of[run.id] = {by_path[p] for p in run.paths if p in by_path}
    words: dict[str, int] = {}

    def word(text: str) -> int:
        return words.setdefault(text, len(words))

    sides: dict[str, Side] = {}

    def side(run) -> Side | None:
        if run.id not in sides:
            try:
                sides[run.id] = run_side(results_dir, run)
            except (CorruptResult, NewerSchema):  # the index read it; a result file no longer readable is left out
                sides[run.id] = None
        return sides[run.id]

    pairs = {}
    for (i, a), (j, b) in itertools.combinations(enumerate(found), 2):  # oldest first: A the earlier run
        if not cells_of[a.id] & cells_of[b.id] or side(a) is None or side(b) is None:
            continue
        comparison = compare_sides(side(a), side(b))
        pairs[f"{i}|{j}"] = {
            "counts": word(counts_text(comparison)),
            "rows": [[word(p.key.text()), word(figure_text(p.a)), word(figure_text(p.b)), word(p.text()),
                      word(p.verdict or "not compared"),
                      word(p.why)]
                     for p in comparison.pairs],
        }  # fmt: skip
    return {"runs": [{"id": r.id, "label": r.label(), "table": f"{r.profile}, stack {r.stack}"} for r in found],
            "pairs": pairs, "words": list(words)}


def figure_text(result) -> str:
    figure = result.figure()
    return f"{figure:.4g} {result.unit}" if figure is not None else status_label(result.status)


def every_series(results_dir: Path) -> tuple[dict[str, list[dict]], str]:
    """Every key with a series of two points or more (cells; sweep keys; a sweep's Keras/plain pairs), with its
    change points; and why change points were not searched, where they were not."""
    from bench.studies.history.changes import THRESHOLD
    from bench.studies.history.report import find_changes
    from bench.studies.history.series import series_of
    from bench.studies.sweep.page import overhead_pairs

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
