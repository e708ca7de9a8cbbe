"""Derived findings (the speed-ups per model with their intervals and verdicts, the Keras 3 backends' confident
wins) and, for the paper profile, the cell-by-cell comparison with the published Table 2."""
from __future__ import annotations

import statistics
from collections import Counter

from bench.base import stats
from bench.base.published import PUBLISHED_COLUMNS, REFERENCE_CSV
from bench.base.stats import Estimate, Ratio, fmt_factor, fmt_ratio
from bench.base.tables import github_table
from bench.catalogue.backends import BACKENDS
from bench.catalogue.registry import MODELS, get_model
from bench.judge.analysis import (
    INCONCLUSIVE,
    TIE,
    UNCONTESTED,
    WINNER,
    PublishedRow,
    RowFacts,
    TableAnalysis,
    keras3_verdict,
    mean_speedup,
    unlike_work,
)
from bench.record.load import KERAS3, PUBLISHED_HARDWARE, Column, Loaded, read_published
from bench.record.text import BEST, SHORT, fmt_ms, plural, status_label
from bench.report.markdown import BASIS_MARKS, NOISY_MARK, row_label
from bench.report.parity import PARITY_MARK, keras_native_differences
from bench.report.sections import Page

# A speed-up's verdict, read from Keras 3 (best)'s side (bench/judge/analysis.py keras3_verdict).
VERDICT_TEXT = {
    stats.FASTER: "Keras 3 faster",
    stats.SLOWER: "Keras 3 slower",
    stats.SAME: "same",
    stats.INCONCLUSIVE: "inconclusive",
    stats.NOT_COMPARABLE: "not comparable",
}


def findings_section(table: TableAnalysis, page: Page) -> list[str]:
    if not table.rows:  # a table of a study's workloads only: its own section shows them
        return []
    group = table.group
    if table.paper:
        lines = comparison(table)
    else:
        lines = [
            f"Not compared with the published numbers: the {group.profile} profile runs reduced shapes and batch sizes "
            f"on {group.machine}, so its numbers are not comparable with the published paper settings on "
            f"{PUBLISHED_HARDWARE}. The findings below use only this table's numbers, for checking the pipeline end "
            "to end.",
            "",
        ]
    return lines + findings(table)


def rows_text(n: int, total: int | None) -> str:
    return plural(n, "row") + (f" of {total}" if total and total != n else "")


def speedup_text(ratios: list[Ratio] | None, total: int | None = None) -> str:
    """'1.23× (1.10–1.37) Keras 3 faster (2 rows)': the geometric mean of the rows' speed-ups, its 95% interval
    and its verdict."""
    mean = mean_speedup(ratios)
    if mean is None:
        return "—"
    unlike = unlike_work(ratios)
    if not mean.comparable:
        return f"not comparable: {'; '.join(dict.fromkeys(r.reason for r in unlike))} ({rows_text(len(unlike), total)})"
    left_out = (
        f"; {plural(len(unlike), 'row')} not comparable: {'; '.join(dict.fromkeys(r.reason for r in unlike))}"
        if unlike else ""
    )
    counted = len(ratios) - len(unlike)
    return f"{fmt_ratio(mean)} {VERDICT_TEXT[keras3_verdict(mean)]} ({rows_text(counted, total)}{left_out})"


def published_speedup_text(values: list[float] | None) -> str:
    """The published speed-ups of a model: their geometric mean (to set beside ours) and their arithmetic mean
    (what the published Figure 1 shows); the published figures have no interval."""
    if not values:
        return "—"
    return (
        f"{fmt_factor(statistics.geometric_mean(values))} geometric · {fmt_factor(statistics.fmean(values))} "
        f"arithmetic, as Figure 1 ({rows_text(len(values), None)})"
    )


def win_summary(rows: list[RowFacts]) -> str:
    """Only confident wins count; ties and inconclusive rows are counted apart."""
    contested = [f for f in rows if f.outcome != UNCONTESTED]
    if not contested:
        return "no row has two or more ranked Keras 3 backends, so no winner is decided"
    wins = Counter(f.winners[0] for f in contested if f.outcome == WINNER)
    tally = ", ".join(f"{SHORT[b]} {n}" for b, n in sorted(wins.items(), key=lambda kv: (-kv[1], KERAS3.index(kv[0]))))
    single = [b for b in KERAS3 if wins.get(b) == len(contested)]
    verdict = f"{SHORT[single[0]]} wins every row with confidence" if single else "no single backend wins every row"
    ties = sum(1 for f in contested if f.outcome == TIE)
    inconclusive = sum(1 for f in contested if f.outcome == INCONCLUSIVE)
    return (
        f"{verdict} (rows won with confidence, as the table's verdicts line says, of the {len(contested)} with two "
        f"or more ranked Keras 3 backends: {tally or 'none'}; {plural(ties, 'tie')}, {inconclusive} inconclusive)"
    )


def published_win_summary(rows: list[PublishedRow]) -> str:
    contested = [f for f in rows if len(f.keras3_ms) >= 2]
    if not contested:
        return "no row has two Keras 3 backends with a number"
    wins = Counter(b for f in contested for b in f.winners)
    tally = ", ".join(f"{SHORT[b]} {n}" for b, n in sorted(wins.items(), key=lambda kv: (-kv[1], KERAS3.index(kv[0]))))
    single = [b for b in KERAS3 if wins.get(b) == len(contested)]
    verdict = f"{SHORT[single[0]]} wins every row" if single else "no single backend wins every row"
    return (
        f"{verdict} (rows won, of the {len(contested)} with ≥2 Keras 3 numbers; the published figures have no "
        f"interval, so the fastest at the shown precision wins and a tie counts for each tied backend: {tally})"
    )


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
    differ = keras_native_differences(table.results_dir)
    for m in [m for m in MODELS if any(f.key.model == m for f in rows)]:
        total = sum(1 for f in rows if f.key.model == m)
        line = [get_model(m).display, speedup_text(table.speedup_keras2.get(m), total)]
        if paper:
            line.append(published_speedup_text(table.published_speedup_keras2.get(m)))
        mark = f" {PARITY_MARK}" if m in differ else ""
        line += [speedup_text(per_model.get(m), total) + (mark if per_model.get(m) else "")
                 for per_model in ours_native.values()]
        if paper:
            line.append("— (not in the published CSV)")
        body.append(line)
    summary = [f"- Single fastest Keras 3 backend, ours: {win_summary(rows)}."]
    if paper:
        summary.append(f"- Single fastest Keras 3 backend, published: {published_win_summary(table.published)}.")
    if (
        not paper
        and not any(table.speedup_keras2.values())
        and not any(v for d in ours_native.values() for v in d.values())
    ):
        return [
            "No row has both a Keras 3 number and a Keras 2 or native PyTorch number, so no speed-up is computed.",
            "",
            *summary,
        ]
    return [
        f"Throughput speedup per row over {BEST}, and per model its geometric mean with its 95% interval and verdict "
        "(>1: Keras 3 faster; how it is computed: How to read the tables):",
        "",
        github_table(body, headers),
        "",
        *parity_notes(differ, [m for m in MODELS if any(per_model.get(m) for per_model in ours_native.values())]),
        *summary,
    ]


def parity_notes(differ: dict[str, list[str]], models: list[str]) -> list[str]:
    """Under the speed-ups: each model whose Keras 3 and native PyTorch sides `make parity` found to differ."""
    lines = [
        f"{PARITY_MARK} {get_model(m).display}: `make parity` found Keras 3 and native PyTorch to differ "
        f"({'; '.join(differ[m])}), so this speed-up compares models that are not exactly the same (PARITY.md)."
        for m in models
        if m in differ
    ]
    return [*lines, ""] if lines else []


def scaled_text(found: Estimate, published: float, noisy: bool) -> str:
    """Our figure over the published one, with our 95% interval divided by it (the published figure has none):
    '1.10 (1.05–1.15; 244.6 / 222.4)'."""
    interval = found.interval()
    spread = (
        f"{fmt_factor(interval[0] / published, '')}–{fmt_factor(interval[1] / published, '')}"
        f"{BASIS_MARKS.get(found.basis, '')}; "
        if interval
        else ""
    )
    return (
        f"{fmt_factor(found.center / published, '')} ({spread}{fmt_ms(found.center)} / {fmt_ms(published)})"
        + (f" {NOISY_MARK}" if noisy else "")
    )


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
            f"These results were measured on {group.machine}, not on the published {PUBLISHED_HARDWARE}: every "
            "ratio includes the hardware difference.",
            "",
        ]
    if not matched:
        return lines + [
            "None of these rows has the published batch size, so there is nothing to compare cell by cell.",
            "",
        ]
    ok = [(l.result.summary(), f.ms(c)) for f in matched for c, l in f.cells.items() if l.result.status == "ok"]
    gap = max((abs(s.mean / figure - 1) for s, figure in ok if figure and figure > 0), default=0.0)
    headers = ["Model / task", "Batch", *[BACKENDS[b].display for b in PUBLISHED_COLUMNS], BEST]
    body = []
    for f in matched:
        pub = published[f.key]
        line = [
            row_label(f),
            str(f.key.batch_size),
            *[ratio_cell(table, f.cells.get(Column(b, "default")), pub[b]) + mode_suffix(f, Column(b, "default"))
              for b in PUBLISHED_COLUMNS],
        ]  # fmt: skip
        pub_best = min((v for b, v in pub.items() if b in KERAS3 and v is not None), default=None)
        best = table.estimate(f.best)
        line.append(scaled_text(best, pub_best, False) if best and pub_best else "")
        body.append(line)
    return lines + [
        "Measured ÷ published ms/step per cell (below 1: faster than published), with our 95% interval divided by "
        "the published figure (the paper gives no interval), then (measured / published). The published figures are "
        "means over 100 steps; ours are the geometric mean of our processes' medians (in this table our step means "
        f"differ from our figures by at most {gap:.1%}). The published Keras 3 (PyTorch) figures are eager; its "
        "generate rows were slowed by static padding (source note). The published table labels every figure "
        "ms/step; a row measured in another unit (named in its label) is compared with the published figure of that "
        "row as is. Marks as in the table above.",
        "",
        github_table(body, headers),
        "",
    ]


def mode_suffix(facts, column: Column) -> str:
    """The cell's matmul precision where its row's float32 cells ran at different ones (as in the table above)."""
    return f" {facts.modes[column]}" if column in facts.modes else ""


def ratio_cell(table: TableAnalysis, loaded: Loaded | None, published: float | None) -> str:
    if loaded is None:
        return "" if published is not None else "(published NA)"
    if loaded.result.status != "ok":
        return status_label(loaded.result.status) + ("" if published is not None else " (published NA)")
    found = table.estimate(loaded)
    if published is None:
        return f"— ({fmt_ms(found.center)} / NA)"
    return scaled_text(found, published, table.noise(loaded).noisy)


# How a speed-up and its verdict are computed: the same for every table, so RESULTS.md states it once.
SPEEDUP_LEGEND = (
    f"Throughput speedup per row = the other column's figure ÷ {BEST}'s (the row's fastest ranked Keras 3 "
    "figure; same batch size, so the ratio of steps/s), with its 95% interval (Welch on the logarithms). Per "
    "model: the **geometric** mean of its rows' speed-ups, with its 95% interval, and its verdict: Keras 3 "
    "faster (the whole interval above 1), Keras 3 slower (below 1), same (inside 1/1.05 to 1.05), or "
    "inconclusive (neither, or a row's interval cannot decide: it covers one process's steps only, a cell is "
    "noisy, or the cells ran on different processors). The published Figure 1 averages the rows arithmetically; "
    "ours is geometric so that it has an interval (the mean of independent log-ratios), and the published "
    "column gives both. >1 means Keras 3 (best) is faster."
)
