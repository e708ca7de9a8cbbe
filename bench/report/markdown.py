"""The Markdown of a table's numbers: the main table (as published: one row per model / task / batch, one column
per backend), its legend and status notes, and the per-cell details."""
from __future__ import annotations

from bench.report.analysis import NOISY_CV, RowFacts, TableAnalysis, unsteady_reasons
from bench.report.load import COLUMNS, KERAS3, Column
from bench.report.sections import Page
from bench.report.text import BEST, SHORT, fmt_ms, github_table, joined, md, plural, status_label
from bench.results import Result


def measured_text(result: Result, unit_in_cell: bool) -> str:
    s = result.summary()
    text = f"{fmt_ms(s.median)} ±{s.cv * 100:.1f}%" + (" ⚠" if unsteady_reasons(result) else "")
    if unit_in_cell:
        text += f" {result.unit}"
    if result.tokens_per_s():
        text += f" · {result.tokens_per_s():.1f} tok/s"
    return text


def row_label(facts: RowFacts) -> str:
    return facts.key.label() + (f" ({facts.unit})" if facts.unit else "")


def batch_text(facts: RowFacts) -> str:
    batch = str(facts.key.batch_size)
    if facts.published_batch is None:
        return batch + " (not a published row)"
    if facts.published_batch != facts.key.batch_size:
        return batch + f" (published {facts.published_batch})"
    return batch


def cell_text(table: TableAnalysis, facts: RowFacts, column: Column) -> str:
    loaded = facts.cells.get(column)
    if loaded is None:
        return ""
    if loaded.result.status != "ok":
        return f"{status_label(loaded.result.status)} [{table.note_refs[(facts.key, column)]}]"
    text = measured_text(loaded.result, facts.unit_in_cell)
    if column.backend in facts.winners and len(facts.keras3_ms) >= 2:
        text = f"**{text}**"
    return text


def best_text(facts: RowFacts) -> str:
    if facts.best_ms is None:
        return ""
    marker = ("" if len(facts.keras3_ms) == len(KERAS3) else " †") + (" ≈" if facts.within_noise else "")
    return f"{fmt_ms(facts.best_ms)} ({', '.join(SHORT[b] for b in facts.winners)}){marker}"


def main_table(table: TableAnalysis) -> list[str]:
    """The table and its numbered notes, as both RESULTS.md and the README show them."""
    headers = ["Model / task", "Batch", *[c.header for c in COLUMNS], BEST]
    body = [
        [md(row_label(f)), batch_text(f), *[cell_text(table, f, c) for c in COLUMNS], best_text(f)] for f in table.rows
    ]
    lines = [github_table(body, headers)]
    if table.notes:
        lines += ["", "Notes:", ""] + [f"{n}. {text}" for n, text in enumerate(table.notes, 1)]
    return lines


def legend(table: TableAnalysis) -> list[str]:
    counts = joined((f"{l.result.summary().count}" for l in table.ok_cells()), ", ")
    lines = [
        "Each cell: **median** ms/step over every timed step of the cell (all repeats pooled; the first step and the warm-up "
        "steps are excluded) **± the coefficient of variation** (stdev / mean) of those steps. Lower is better. "
        f"Timed steps per cell: {counts or 'none'} (per-cell details below).",
        "Unit: ms/step unless the row names another (generate rows: ms per generate call, with generated tokens/s; "
        "StableDiffusion predict: ms per denoising step).",
        "**Bold**: the fastest Keras 3 backend of the row, as published (ties at the shown precision are all bold; "
        "no bold where fewer than two Keras 3 backends have a number). "
        f"{BEST}: that figure and its backend; † = chosen among fewer than three Keras 3 backends with a number.",
        "NA: the cell cannot run on that backend (unsupported); OOM: out of memory; timeout: killed at the time limit; "
        "error: the cell failed. [n] points to the note with the message. Empty: not run.",
    ]
    if table.noisy_cells:
        lines.append(
            f"Spread above {NOISY_CV:.0%} in {plural(table.noisy_cells, 'cell')}: too few or unsteady steps; read those medians as rough."
        )
    if table.unsteady_cells:
        lines.append(
            f"⚠ unsteady ({plural(table.unsteady_cells, 'cell')}): a compile inside the timed steps, warm-up stopped at its cap, "
            "a step far above the median or an impossible derived figure; the reasons are in the per-cell details."
        )
    if table.unresolved_rows:
        lines.append(
            f"≈ ({plural(table.unresolved_rows, 'row')}): the gap between the two fastest Keras 3 backends is smaller than their "
            "spread or the machine's drift while they ran, so that ranking is not resolved."
        )
    if table.drift is not None:
        refs = table.references_ms
        lines.append(
            f"Machine drift over these results: the reference matmul (timed before and after every cell) ranged from "
            f"{min(refs):.3g} to {max(refs):.3g} ms, {table.drift:.0%} apart."
        )
    return lines


def head_section(table: TableAnalysis, page: Page) -> list[str]:
    """The main table, its legend, its notes and the published rows it lacks."""
    if not table.rows:  # a table of a study's workloads only: its own section shows them
        return []
    numbers = main_table(table)
    lines = [numbers[0], "", *[f"- {text}" for text in legend(table)], *numbers[1:]]
    if table.missing:
        lines += [
            "",
            f"Published rows not measured in this table: {', '.join(f'{k.label()} (batch {k.batch_size})' for k in table.missing)}.",
        ]
    return lines


def details_row(facts: RowFacts, column: Column) -> list[str]:
    loaded = facts.cells[column]
    r = loaded.result
    s = r.summary()
    spread = r.repeat_spread()
    firsts = [run.first_step_ms for run in r.runs if run.first_step_ms is not None]
    reasons = unsteady_reasons(r)
    return [
        facts.key.label(),
        str(facts.key.batch_size),
        column.header,
        r.status,
        str(len(r.runs)),
        str(s.count) if s else "",
        f"{fmt_ms(s.median)} {r.unit}" if s else "",
        fmt_ms(s.mean) if s else "",
        f"{fmt_ms(s.p10)}–{fmt_ms(s.p90)}" if s else "",
        f"{s.cv:.1%}" if s else "",
        f"{spread.cv:.1%}" if spread else "",
        ", ".join(f"{x:.0f}" for x in firsts),
        md(joined(run.first_step_contains for run in r.runs) or "not recorded"),
        md("; ".join(reasons)) if reasons else ("yes" if any(run.steadiness for run in r.runs) else "not checked"),
        f"{r.tokens_per_s():.1f}" if r.tokens_per_s() else "",
        f"`{loaded.path}`",
    ]


def details_section(table: TableAnalysis, page: Page) -> list[str]:
    if not table.rows:  # a table of a study's workloads only: its own section shows them
        return []
    headers = [
        "Model / task",
        "Batch",
        "Backend",
        "Status",
        "Runs",
        "Steps",
        "Median",
        "Mean",
        "p10–p90",
        "CV",
        "Run-median CV",
        "First step (ms)",
        "First step holds",
        "Steady",
        "tok/s",
        "File",
    ]
    body = [details_row(f, c) for f in table.rows for c in COLUMNS if c in f.cells]
    return ["<details><summary>Per-cell measurements</summary>", "", github_table(body, headers), "", "</details>"]
