"""The headline: the published A100 Table 2 beside this suite's GPU measurements, and each published finding of it
with its verdict on a GPU. The README shows it (bench/report/readme.py); RESULTS.md opens on its findings.

Every figure comes from the analysed tables: a cell's figure and interval (the table's own estimate), its peak
memory (the device's on a GPU, the process's resident memory on a CPU: markdown.py `peak_memory`), its ratio to
the published figure. A finding's verdict is one of HOLDS, DOES_NOT_HOLD, INCONCLUSIVE or NOT_ON_GPU, read from
the same verdicts the tables print (a model's speed-up verdict, a row's ranking outcome)."""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from bench.base import stats
from bench.base.published import PUBLISHED_COLUMNS
from bench.base.stats import fmt_factor
from bench.base.tables import github_table
from bench.catalogue.registry import MODELS, get_model
from bench.judge.analysis import INCONCLUSIVE as ROW_INCONCLUSIVE
from bench.judge.analysis import TIE, UNCONTESTED, WINNER, RowFacts, TableAnalysis, keras3_verdict, mean_speedup
from bench.record.load import NATIVE, Column, read_published
from bench.record.text import SHORT, fmt_ms, plural, status_label
from bench.report.markdown import memory_text, spread_text

HOLDS = "holds"
DOES_NOT_HOLD = "does not hold"
INCONCLUSIVE = "inconclusive"
NOT_ON_GPU = "not yet measured on a GPU"
NOT_MEASURED_MARK = "–"
HEADERS = {"keras2": "Keras 2", "tensorflow": "Keras 3 TF", "jax": "Keras 3 JAX", "torch": "Keras 3 PyTorch"}


def on_gpu(table: TableAnalysis) -> bool:
    return any((r.provenance.get("machine") or {}).get("gpus") for r in table.group.results)


def gpu_tables(tables: list[TableAnalysis]) -> list[TableAnalysis]:
    """The paper-profile tables measured on a GPU, in the report's order (a locked environment's first)."""
    return [t for t in tables if t.paper and t.rows and on_gpu(t)]


def card_of(table: TableAnalysis) -> str:
    return table.group.machine


def measured_cell(table: TableAnalysis, facts: RowFacts | None, column: Column, published: float | None) -> str:
    """'222.4 → 81.38 ±11% TF32 (0.366×, 12.1 GiB)': the published figure, ours with its interval, ours over it."""
    left = fmt_ms(published) if published is not None else "NA"
    loaded = facts.cells.get(column) if facts else None
    if loaded is None:
        return f"{left} → {NOT_MEASURED_MARK}" if published is not None else "NA"
    result = loaded.result
    if result.status != "ok":
        return f"{left} → {status_label(result.status)}"
    found = table.estimate(loaded)
    ours = f"{fmt_ms(found.center)} {spread_text(found)}"
    if table.noise(loaded).noisy:
        ours += " noisy"
    if column in facts.modes:
        ours += f" {facts.modes[column]}"
    extra = [fmt_factor(found.center / published)] if published else []
    extra += [m] if (m := memory_text(result)) else []
    return f"{left} → {ours}" + (f" ({', '.join(extra)})" if extra else "")


def headline_table(table: TableAnalysis | None) -> str:
    """Every published row, the measured ones first: each published column's A100 figure beside ours, and native
    PyTorch (ours only)."""
    _, published = read_published()
    rows = {f.key: f for f in table.rows} if table else {}
    native = [c for c in NATIVE if any(c in f.cells for f in rows.values())]
    body = []
    for key, figures in sorted(published.items(), key=lambda kv: kv[0] not in rows):
        facts = rows.get(key)
        line = [key.label(), str(key.batch_size)]
        line += [measured_cell(table, facts, Column(b, "default"), figures.get(b)) for b in PUBLISHED_COLUMNS]
        line += [native_cell(table, facts, c) for c in native]
        body.append(line)
    headers = ["Model / task", "Batch", *[HEADERS[b] for b in PUBLISHED_COLUMNS], *[c.header for c in native]]
    return github_table(body, headers)


def native_cell(table: TableAnalysis, facts: RowFacts | None, column: Column) -> str:
    loaded = facts.cells.get(column) if facts else None
    if loaded is None:
        return NOT_MEASURED_MARK
    if loaded.result.status != "ok":
        return status_label(loaded.result.status)
    found = table.estimate(loaded)
    text = f"{fmt_ms(found.center)} {spread_text(found)}" + (f" {facts.modes[column]}" if column in facts.modes else "")
    return text + (f" ({m})" if (m := memory_text(loaded.result)) else "")


@dataclass(frozen=True)
class Finding:
    """A published finding of Table 2, what the paper says, and ours: its verdict and why."""

    claim: str
    published: str
    verdict: str
    ours: str


def speedup_verdict(ratio: stats.Ratio | None) -> str:
    """A model's Keras 3 (best) over Keras 2 speed-up, read as the published "Keras 3 is faster" re-tested."""
    if ratio is None:
        return NOT_ON_GPU
    if not ratio.comparable:
        return INCONCLUSIVE
    verdict = keras3_verdict(ratio)
    return {stats.FASTER: HOLDS, stats.SLOWER: DOES_NOT_HOLD, stats.SAME: DOES_NOT_HOLD}.get(verdict, INCONCLUSIVE)


def keras2_findings(table: TableAnalysis | None) -> list[Finding]:
    """Figure 1: Keras 3 (best) is faster than Keras 2, per model with a published speed-up; the models with the same
    verdict and the same reading of ours in one finding."""
    from bench.judge.analysis import published_rows_facts, published_speedups

    grouped: dict[tuple[str, str], list[str]] = {}
    speedups = published_speedups(published_rows_facts())
    for model in sorted(speedups, key=MODELS.index):
        mean = mean_speedup(table.speedup_keras2.get(model)) if table else None
        if mean is None:
            ours = "no Keras 2 cell measured"
        elif not mean.comparable:
            ours = "not the same work"
        else:
            ours = f"{get_model(model).display} {stats.fmt_ratio(mean)}"
        grouped.setdefault((speedup_verdict(mean), ours), []).append(model)
    found = []
    for (verdict, ours), models in grouped.items():
        published = ", ".join(
            f"{get_model(m).display} {fmt_factor(sum(speedups[m]) / len(speedups[m]))}" for m in models
        )
        found.append(Finding("Keras 3 is faster than Keras 2 (Figure 1)", published, verdict, ours))
    return found


def contested(table: TableAnalysis | None) -> list[RowFacts]:
    return [f for f in table.rows if f.outcome != UNCONTESTED] if table else []


def single_backend_finding(table: TableAnalysis | None) -> Finding:
    """The published table has no single Keras 3 backend fastest on every row."""
    from bench.judge.analysis import published_rows_facts

    rows = [f for f in published_rows_facts() if len(f.keras3_ms) >= 2]
    wins = Counter(b for f in rows for b in f.winners)
    published = ", ".join(f"{SHORT[b]} {n}" for b, n in wins.most_common()) + " rows"
    ours_rows = contested(table)
    decided = [f for f in ours_rows if f.outcome == WINNER]
    winners = {f.winners[0] for f in decided}
    if not ours_rows:
        verdict = NOT_ON_GPU
    elif len(winners) >= 2:
        verdict = HOLDS
    elif len(decided) == len(ours_rows) and len(ours_rows) >= 2:
        verdict = DOES_NOT_HOLD
    else:
        verdict = INCONCLUSIVE
    ours = f"{len(decided)} of {plural(len(ours_rows), 'contested row')} won with confidence" if ours_rows else "—"
    return Finding("No single Keras 3 backend is fastest on every row", published, verdict, ours)


def row_winner_finding(table: TableAnalysis | None) -> Finding:
    """Each published row's fastest Keras 3 backend, re-tested row by row: how many rows agree."""
    from bench.judge.analysis import published_rows_facts

    rows = {f.key: f for f in table.rows} if table else {}
    tally: Counter = Counter()
    for published in published_rows_facts():
        if len(published.keras3_ms) < 2:
            continue
        ours = rows.get(published.key)
        if ours is None or ours.outcome == UNCONTESTED:
            tally[NOT_ON_GPU] += 1
        elif ours.outcome == ROW_INCONCLUSIVE:
            tally[INCONCLUSIVE] += 1
        elif ours.outcome == TIE:
            tally[HOLDS if set(published.winners) & set(ours.winners) else DOES_NOT_HOLD] += 1
        else:
            tally[HOLDS if ours.winners[0] in published.winners else DOES_NOT_HOLD] += 1
    order = (HOLDS, DOES_NOT_HOLD, INCONCLUSIVE, NOT_ON_GPU)
    counted = [v for v in order if tally[v]]
    verdict = counted[0] if len(counted) == 1 else "; ".join(f"{v} in {tally[v]}" for v in counted)
    measured = sum(tally.values()) - tally[NOT_ON_GPU]
    return Finding("Each row's fastest Keras 3 backend is the published one", plural(sum(tally.values()), "row"),
                   verdict, f"{plural(measured, 'row')} measured with two Keras 3 backends")


def findings(table: TableAnalysis | None) -> list[Finding]:
    return [*keras2_findings(table), single_backend_finding(table), row_winner_finding(table)]


def findings_table(table: TableAnalysis | None) -> str:
    machine = card_of(table) if table else "a GPU"
    body = [[f.claim, f.published, f.ours, f"**{f.verdict}**"] for f in findings(table)]
    return github_table(body, ["Published finding (A100)", "published", f"ours ({machine})", "verdict"])


def short_reason(reason: str) -> str:
    """An undecided comparison's reason without its parenthesised details: 'not the same computation: float32
    matrix products in TF32 vs FP32'."""
    core = reason.split(": ", 1)[1] if " vs " in reason.split(": ", 1)[0] else reason
    while (shorter := re.sub(r"\s*\([^()]*\)", "", core)) != core:
        core = shorter
    return core.split(" (make noise")[0].strip()


def undecided_text(table: TableAnalysis) -> list[str]:
    """One line a published row of the table that is not decided, with why, each reason once."""
    from bench.judge.comparisons import row_undecided

    lines = []
    for facts in table.rows:
        why = row_undecided(facts, table)
        if why:
            reasons = "; ".join(dict.fromkeys(short_reason(r) for r in why))
            lines.append(f"Undecided: {facts.key.label()}, {reasons}.")
    return lines


def cells_text(table: TableAnalysis) -> str:
    estimates = [e for l in table.ok_cells() if (e := table.estimate(l)) is not None]
    processes = Counter(e.processes for e in estimates)
    spread = ", ".join(f"{plural(n, 'cell')} of {plural(p, 'process')}" for p, n in sorted(processes.items(),
                                                                                         reverse=True))  # fmt: skip
    return f"{plural(len(estimates), 'cell')} measured on {card_of(table)}: {spread}."


def decided_text(table: TableAnalysis) -> str:
    from bench.report.markdown import rows_decided

    return f"Rows decided: {rows_decided(table)} of {len(table.rows)}."


def where(table: TableAnalysis) -> str:
    """Which software the table ran on: the locked stack, or an unlocked environment's versions."""
    group = table.group
    if group.stack == "today":
        return "today's locked environments"
    if group.stack != "current":
        return f"the {group.stack} stack"
    found = re.search(r"\((Python [^;]*;[^;]*)", group.title)
    return f"its own Python, unlocked ({found.group(1)})" if found else "its own Python, unlocked"


def headline_lines(tables: list[TableAnalysis]) -> list[str]:
    """The README's headline: the table, what stands behind it, and the findings with their verdicts."""
    gpus = gpu_tables(tables)
    table = gpus[0] if gpus else None
    lines = [
        "Each cell: the published A100 figure → ours, with its 95% interval, then (ours ÷ published, peak GPU "
        f"memory). ms/step, lower is better. {NOT_MEASURED_MARK}: not yet measured on a GPU.",
        "",
        f"**{card_of(table) if table else 'No GPU measurement yet'}**" + (f", {where(table)}" if table else ""),
        "",
        headline_table(table),
        "",
    ]
    if table:
        lines += [f"- {cells_text(table)}", f"- {decided_text(table)}", *[f"- {t}" for t in undecided_text(table)]]
        lines += [f"- Also measured on a GPU: {', '.join(card_of(t) for t in gpus[1:])}."] if gpus[1:] else []
        lines.append("")
    lines += ["The published findings, re-tested:", "", findings_table(table), ""]
    return lines
