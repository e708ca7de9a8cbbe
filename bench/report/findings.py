"""Derived findings (speedups per model, the single fastest Keras 3 backend) and, for the paper profile, the
cell-by-cell comparison with the published Table 2."""
from __future__ import annotations

import statistics
from collections import Counter

from bench.backends import BACKENDS
from bench.published import PUBLISHED_COLUMNS, REFERENCE_CSV
from bench.registry import MODELS, get_model
from bench.report.analysis import RowFacts, TableAnalysis
from bench.report.load import KERAS3, PUBLISHED_HARDWARE, Column, Loaded, read_published
from bench.report.markdown import row_label
from bench.report.sections import Page
from bench.report.text import BEST, SHORT, fmt_ms, fmt_x, github_table, plural, status_label


def findings_section(table: TableAnalysis, page: Page) -> list[str]:
    if not table.rows:  # a table of a study's workloads only: its own section shows them
        return []
    group = table.group
    if table.paper:
        lines = comparison(table)
    else:
        lines = [
            f"Not compared with the published numbers: the {group.profile} profile runs reduced shapes and batch sizes "
            f"on {group.machine}, so its numbers are not comparable with the published paper settings on {PUBLISHED_HARDWARE}. "
            "The findings below use only this table's numbers, for checking the pipeline end to end.",
            "",
        ]
    return lines + findings(table)


def mean_text(values: list[float] | None, total: int | None = None) -> str:
    if not values:
        return "—"
    n = len(values)
    rows = plural(n, "row") + (f" of {total}" if total and total != n else "")
    return f"{fmt_x(statistics.fmean(values))} ({rows})"


def win_summary(rows: list[RowFacts]) -> str:
    contested = [f for f in rows if len(f.keras3_ms) >= 2]
    if not contested:
        return "no row has two Keras 3 backends with a number, so no winner is decided"
    wins = Counter(b for f in contested for b in f.winners)
    tally = ", ".join(f"{SHORT[b]} {n}" for b, n in sorted(wins.items(), key=lambda kv: (-kv[1], KERAS3.index(kv[0]))))
    single = [b for b in KERAS3 if wins.get(b) == len(contested)]
    verdict = f"{SHORT[single[0]]} wins every row" if single else "no single backend wins every row"
    return f"{verdict} (rows won, of the {len(contested)} with ≥2 Keras 3 numbers; a tie counts for each tied backend: {tally})"


def findings(table: TableAnalysis) -> list[str]:
    rows, paper = table.rows, table.paper
    ours_native = {c.variant: per_model for c, per_model in table.speedup_native.items()}
    headers = ["Model", f"{BEST} over Keras 2, ours"]
    if paper:
        headers.append(f"{BEST} over Keras 2, published")
    headers += [f"{BEST} over native PyTorch ({v}), ours" for v in ours_native]
    if paper:
        headers.append("over native PyTorch, published")
    body = []
    for m in [m for m in MODELS if any(f.key.model == m for f in rows)]:
        total = sum(1 for f in rows if f.key.model == m)
        line = [get_model(m).display, mean_text(table.speedup_keras2.get(m), total)]
        if paper:
            line.append(mean_text(table.published_speedup_keras2.get(m)))
        line += [mean_text(per_model.get(m), total) for per_model in ours_native.values()]
        if paper:
            line.append("— (not in the published CSV)")
        body.append(line)
    if (
        not paper
        and not any(table.speedup_keras2.values())
        and not any(v for d in ours_native.values() for v in d.values())
    ):
        return [
            "No row has both a Keras 3 number and a Keras 2 or native PyTorch number, so no speedup is computed.",
            "",
            f"- Single fastest Keras 3 backend, ours: {win_summary(rows)}.",
        ]
    lines = [
        "Throughput speedup per row = the other column's ms/step ÷ Keras 3 (best) ms/step (same batch size, so the ratio of "
        "steps/s); per model, the arithmetic mean of its rows' speedups (as the published Figure 1 averages per model). "
        ">1 means Keras 3 (best) is faster. Ours use the medians of the table above.",
        "",
        github_table(body, headers),
        "",
        f"- Single fastest Keras 3 backend, ours: {win_summary(rows)}.",
    ]
    if paper:
        lines.append(f"- Single fastest Keras 3 backend, published: {win_summary(table.published)}.")
    return lines


def comparison(table: TableAnalysis) -> list[str]:
    group = table.group
    note, published = read_published()
    matched = [f for f in table.rows if f.key in published]
    lines = [
        f"Published figures: {PUBLISHED_HARDWARE}, paper settings. Source note of `bench/data/{REFERENCE_CSV.name}`:",
        "",
        *[f"> {n}" for n in note],
        "",
    ]
    if not any(
        "A100" in g.get("name", "")
        for r in group.results
        for g in (r.provenance.get("machine") or {}).get("gpus") or []
    ):
        lines += [
            f"These results were measured on {group.machine}, not on the published {PUBLISHED_HARDWARE}: every ratio includes the hardware difference.",
            "",
        ]
    if not matched:
        return lines + [
            "None of these rows has the published batch size, so there is nothing to compare cell by cell.",
            "",
        ]
    ok = [l.result.summary() for f in matched for l in f.cells.values() if l.result.status == "ok"]
    gap = max((abs(s.mean / s.median - 1) for s in ok if s.median > 0), default=0.0)
    headers = ["Model / task", "Batch", *[BACKENDS[b].display for b in PUBLISHED_COLUMNS], BEST]
    body = []
    for f in matched:
        pub = published[f.key]
        line = [
            row_label(f),
            str(f.key.batch_size),
            *[ratio_cell(f.cells.get(Column(b, "default")), pub[b]) for b in PUBLISHED_COLUMNS],
        ]
        pub_best = min((v for b, v in pub.items() if b in KERAS3 and v is not None), default=None)
        line.append(
            f"{f.best_ms / pub_best:.2f} ({fmt_ms(f.best_ms)} / {fmt_ms(pub_best)})" if f.best_ms and pub_best else ""
        )
        body.append(line)
    return lines + [
        "Measured ÷ published ms/step per cell (below 1: faster than published), with (measured / published). The published "
        f"figures are means over 100 steps; ours are medians (in this table our means differ from our medians by at most {gap:.1%}). "
        "The published Keras 3 (PyTorch) figures are eager; its generate rows were slowed by static padding (source note). "
        "The published table labels every figure ms/step; a row measured in another unit (named in its label) is compared with "
        "the published figure of that row as is.",
        "",
        github_table(body, headers),
        "",
    ]


def ratio_cell(loaded: Loaded | None, published: float | None) -> str:
    if loaded is None:
        return "" if published is not None else "(published NA)"
    if loaded.result.status != "ok":
        return status_label(loaded.result.status) + ("" if published is not None else " (published NA)")
    ours = loaded.result.summary().median
    if published is None:
        return f"— ({fmt_ms(ours)} / NA)"
    return f"{ours / published:.2f} ({fmt_ms(ours)} / {fmt_ms(published)})"
