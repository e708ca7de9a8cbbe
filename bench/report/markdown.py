"""The Markdown of a table's numbers: the main table (as published: one row per model / task / batch, one column
per backend), its legend and status notes, and the per-cell details.

A cell reads "1.23 ±2.1%": its figure (the geometric mean of its processes' medians) and the wider side of its 95%
interval as a share of it, with marks for what the interval stands on and for a disturbed machine. Bold names a
winner only where the judge decided one (bench/judge/analysis.py rank_keras3)."""
from __future__ import annotations

from collections import Counter

from bench.base import stats
from bench.base.stats import Estimate
from bench.base.tables import github_table
from bench.catalogue.backends import BACKENDS
from bench.judge.analysis import INCONCLUSIVE, TIE, UNCONTESTED, WINNER, RowFacts, TableAnalysis, unsteady_reasons
from bench.record.load import COLUMNS, KERAS3, Column, Loaded
from bench.record.results import Result
from bench.record.text import BEST, SHORT, fmt_ms, joined, md, plural, status_label
from bench.report.sections import Page

# What a cell's interval stands on, as a mark after its ±; a cell of several processes has none.
BASIS_MARKS = {stats.STEPS_ONLY: "ˢ", stats.MACHINE_SPREAD: "ᵐ", stats.PROCESSES: "", stats.NO_INTERVAL: ""}
NOISY_MARK = "noisy"
UNSTEADY_MARK = "⚠"
TIE_SIGN = "≈"


def spread_text(found: Estimate) -> str:
    """'±2.1%ˢ': the interval's wider side over the figure, marked with its basis; 'no interval' without one."""
    half = found.half_width()
    if half is None:
        return "(no interval)"
    percent = half * 100
    text = f"±{percent:.1f}%" if percent < 10 else f"±{percent:.0f}%"
    return text + BASIS_MARKS.get(found.basis, "")


def peak_memory(result: Result) -> tuple[float, str] | None:
    """The cell's peak memory in GiB over its processes, and what it is: the device's peak allocation where the cell
    ran on a GPU, else the process's peak resident memory. None where no process recorded either."""
    if (device := result.peak_device_gib()) is not None:
        return device, "GPU"
    rss = result.peak_rss_gib()
    return None if rss is None else (rss, "RSS")


def memory_text(result: Result) -> str:
    """'23.8 GiB' (the device's peak) or '5.6 GiB RSS' (the host's); empty where none was recorded."""
    found = peak_memory(result)
    if found is None:
        return ""
    gib, kind = found
    return f"{gib:.1f} GiB" + ("" if kind == "GPU" else " RSS")


def measured_text(table: TableAnalysis, loaded: Loaded, unit_in_cell: bool, mode: str = "") -> str:
    """'81.38 ±11% TF32 · 22.9 GiB': the figure, its interval and marks, the matmul mode where the row names one,
    tokens/s, peak memory."""
    result = loaded.result
    found = table.estimate(loaded)
    text = f"{fmt_ms(found.center)} {spread_text(found)}"
    if table.noise(loaded).noisy:
        text += f" {NOISY_MARK}"
    if unsteady_reasons(result):
        text += f" {UNSTEADY_MARK}"
    if unit_in_cell:
        text += f" {result.unit}"
    if mode:
        text += f" {mode}"
    if result.tokens_per_s():
        text += f" · {result.tokens_per_s():.1f} tok/s"
    if memory := memory_text(result):
        text += f" · {memory}"
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
    # the row's float32 cells ran at different matmul precisions: each says its own
    text = measured_text(table, loaded, facts.unit_in_cell, facts.modes.get(column, ""))
    if facts.outcome == WINNER and column.backend in facts.winners and column.variant == "default":
        text = f"**{text}**"
    return text


def best_text(facts: RowFacts) -> str:
    """Keras 3 (best): the fastest ranked figure and what the ranking decided."""
    if facts.fastest is None:
        return "not ranked (noisy)" if facts.keras3_ms else ""
    figure, fastest = fmt_ms(facts.best_ms), SHORT[facts.fastest]
    if facts.outcome == WINNER:
        text = f"{figure} ({fastest})"
    elif facts.outcome == TIE:
        text = f"{figure} ({f' {TIE_SIGN} '.join(SHORT[b] for b in facts.winners)}, tie)"
    elif facts.outcome == INCONCLUSIVE:
        text = f"{figure} (lowest: {fastest}, inconclusive)"
    else:
        text = f"{figure} ({fastest})"
    if len(facts.ranked) < len(KERAS3):
        text += " †"
    # a noisy cell with a lower figure is no winner, and the reader must see that it was set aside
    lower = [SHORT[b] for b, ms in facts.keras3_ms.items()
             if b not in facts.ranked and b not in facts.unlike and ms < facts.best_ms]  # fmt: skip
    if facts.modes.get(Column(facts.fastest, "default")):
        text = text.replace(f"({fastest}", f"({fastest} {facts.modes[Column(facts.fastest, 'default')]}", 1)
    text += f"; {', '.join(lower)} lower but {NOISY_MARK}" if lower else ""
    if facts.unlike:
        text += "; not ranked against it: " + ", ".join(
            f"{SHORT[b]} ({unlike_text(facts, b)})" for b in facts.unlike
        )
    return text


def unlike_text(facts: RowFacts, backend: str) -> str:
    """Why a Keras 3 backend is not ranked against the row's fastest: another matmul precision (its mode), or other
    work."""
    mode = facts.modes.get(Column(backend, "default"))
    if facts.unlike[backend].startswith("not the same computation") and mode:
        return f"{mode}: {NOT_SAME}"
    return "different work"


NOT_SAME = "not the same computation"


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


def count_text(counts: Counter) -> str:
    """'3 (12 cells), 1 (2 cells)': each distinct count, most cells first."""
    return ", ".join(f"{n} ({plural(k, 'cell')})" for n, k in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def steps_text(table: TableAnalysis) -> str:
    per_process = [len(run.timed_ms) for l in table.ok_cells() for run in l.result.runs if run.timed_ms]
    if not per_process:
        return "none"
    low, high = min(per_process), max(per_process)
    return str(low) if low == high else f"{low} to {high} (median {sorted(per_process)[len(per_process) // 2]})"


# How a cell's timed steps were chosen (bench/catalogue/registry.py Cell.procedure), as a table's facts name it.
PROCEDURES = {
    "sampled": "sampled to a precision",
    "exact": "the published procedure (--exact)",
    "fixed": "a fixed count",
}


# What a table's cell, bold, marks and notes mean: the same for every table, so RESULTS.md states it once.
LEGEND = [
    "Each cell: its **figure**, the geometric mean of its processes' median step times (one process: its median; "
    "the first step and the warm-up steps are excluded), **± the wider side of its 95% interval** as a share of "
    "the figure (a Student-t interval on the logarithms of the processes' medians, Kalibera & Jones; "
    "docs/METHOD.md). Lower is better.",
    "Unit: ms/step unless the row names another (generate rows: ms per generate call, with generated tokens/s; "
    "StableDiffusion predict: ms per denoising step). After the figure, the cell's peak memory over its processes: "
    "the device's peak allocation on a GPU (GiB), the process's peak resident memory on a CPU (GiB RSS).",
    "**Bold**: the row's winner, the fastest Keras 3 backend where it is faster than every other ranked Keras 3 "
    "backend with confidence (95%, or stricter where the table's comparisons are judged together: its facts say). "
    f"{TIE_SIGN} and \"tie\" in {BEST}: the fastest is shown to be the same as the backends named with it (their "
    "ratio's interval within ±5%; no bold). \"inconclusive\": a comparison of the row is undecided (an interval "
    "too wide to call a difference or the same, one covering one process's steps only, or none), so the lowest "
    "figure is named but no winner. \"not comparable\" (in any comparison): the two cells did different work a "
    "step (model FLOPs or bytes more than 1% apart, or another batch, shape or dtype; docs/METHOD.md), or not the "
    "same computation (float32 matrix products at another precision: TF32 against full FP32), so their times are "
    "not compared; where a row's float32 cells ran at different precisions, each cell says its own (TF32, FP32) and "
    f"{BEST} names the ones not ranked against the fastest. {BEST}: the fastest "
    "ranked figure and its backend; † = ranked among fewer than three Keras 3 backends (the others have no number "
    "or are noisy; with one, nothing is ranked); \"lower "
    f"but {NOISY_MARK}\": a Keras 3 cell with a lower figure was set aside as noisy.",
    f"Marks: ˢ steps only, a cell of one process whose interval covers its steps only (the process-to-process "
    f"spread, usually the larger part, is not known: it decides nothing); ᵐ machine spread, a cell of one process "
    f"whose interval borrows the machine's process-to-process spread from its noise study of the same profile "
    f"(`make noise`); "
    f"{NOISY_MARK}: measured while the machine was disturbed (the drift probe far from its quiet value, a step "
    f"spread beyond the bound, or a jump between the first and second half of its steps), shown with its "
    f"figures and not ranked; {UNSTEADY_MARK} unsteady: a compile inside the timed steps, warm-up stopped at its "
    "cap, a step far above the median or an impossible derived figure. The reasons are in the per-cell details.",
    "NA: the cell cannot run on that backend (unsupported); OOM: out of memory; timeout: killed at the time limit; "
    "error: the cell failed. [n] points to the note with the message. Empty: not run.",
]


def table_facts(table: TableAnalysis) -> list[str]:
    """What stands behind this table's cells: processes and steps, the verdicts' tally, the machine's drift."""
    estimates = [e for l in table.ok_cells() if (e := table.estimate(l)) is not None]
    processes = Counter(e.processes for e in estimates)
    bases = Counter(e.basis for e in estimates)
    contested = [f for f in table.rows if f.outcome != UNCONTESTED]
    procedures = Counter(PROCEDURES[l.result.cell.procedure] for l in table.ok_cells())
    chosen = ", ".join(f"{name} ({plural(n, 'cell')})" for name, n in procedures.most_common())
    lines = [
        f"Processes per cell: {count_text(processes) or 'none'}; timed steps per process: {steps_text(table)}"
        + (f", {chosen}" if chosen else "")
        + "."
    ]
    if contested or bases:
        tally = [
            plural(len(table.rows_with(WINNER)), "winner"),
            plural(len(table.rows_with(TIE)), "tie"),
            f"{len(table.rows_with(INCONCLUSIVE))} inconclusive",
        ]
        by_count = sorted(bases.items(), key=lambda kv: (-kv[1], kv[0]))
        basis = ", ".join(f"{b} ({plural(n, 'cell')})" for b, n in by_count)
        noisy = table.noisy_cells()
        lines.append(
            f"In this table: {', '.join(tally)} among the {plural(len(contested), 'row')} with two or more ranked "
            f"Keras 3 backends; the intervals stand on: {basis}"
            + (f"; {plural(len(noisy), 'noisy cell')}, not ranked" if noisy else "")
            + (f"; {plural(table.unsteady_cells(), 'unsteady cell')}" if table.unsteady_cells() else "")
            + "."
        )
    lines += precision_lines(table)
    if table.family is not None and table.family.comparisons:
        lines.append(family_text(table))
    elif table.rows:
        lines.append(f"Rows decided: {rows_decided(table)} of {len(table.rows)} (no comparison with an interval to "
                     "judge).")
    if table.paper and table.rows:  # the published rows: why each undecided one is
        lines += undecided_lines(table)
    if table.drift is not None:
        refs = table.references_ms
        lines.append(
            f"Machine drift over these results: the reference matmul (timed before and after every cell) ranged from "
            f"{min(refs):.3g} to {max(refs):.3g} ms, {table.drift:.0%} apart"
            + (f" (left out, as they gate nothing: {plural(len(cold), 'reading')} of {span_text(cold)} ms, each a "
               "run's start reading from before readings were warmed or one still warming up)"
               if (cold := table.ungated_references_ms) else "")
            + "."
        )
    return lines


def column_name(column: Column) -> str:
    """A column's header, a tuning variant's name after it (the table's columns are the backends' own variants)."""
    if column in COLUMNS:
        return column.header
    return f"{Column(column.backend, BACKENDS[column.backend].variants[0]).header} {column.variant}"


def precision_lines(table: TableAnalysis) -> list[str]:
    """Each row whose float32 cells ran at different matmul precisions: which ran at which (not the same
    computation: never ranked against each other), how to run them like for like, and where a precision variant
    ran, its comparison at the matched precision."""
    lines = []
    for facts in table.rows:
        if not facts.modes:
            continue
        by_mode: dict[str, list[str]] = {}
        for column, mode in facts.modes.items():
            by_mode.setdefault(mode, []).append(column.header)
        said = "; ".join(f"{', '.join(names)} {mode}" for mode, names in by_mode.items())
        text = (f"{row_label(facts)} (batch {facts.key.batch_size}): float32 matrix products at different precisions "
                f"({said}): {NOT_SAME}, not ranked against each other. Like for like: `VARIANT=matmul-high` runs the "
                "PyTorch columns at TF32, `VARIANT=matmul-highest` Keras 3 on JAX and TensorFlow at full FP32 "
                "(bench/catalogue/variants.py)")  # fmt: skip
        for found in facts.matched:
            text += (f"; at {found.mode}: {column_name(found.variant)} over {found.default.header} "
                     f"{stats.fmt_ratio(found.ratio)} {stats.verdict_text(found.ratio)}")
        lines.append(text + ".")
    return lines


def rows_decided(table: TableAnalysis) -> int:
    from bench.judge.comparisons import row_undecided

    return sum(1 for f in table.rows if not row_undecided(f, table))


def undecided_lines(table: TableAnalysis) -> list[str]:
    """Each undecided row with why (bench/judge/comparisons.py row_undecided), one line a row."""
    from bench.judge.comparisons import row_undecided

    found = [(f, why) for f in table.rows if (why := row_undecided(f, table))]
    return [f"Undecided: {row_label(f)} (batch {f.key.batch_size}): {md('; '.join(why))}." for f, why in found]


def span_text(values: list[float]) -> str:
    """'0.453 to 0.472'; one value alone where they are one."""
    low, high = f"{min(values):.3g}", f"{max(values):.3g}"
    return low if low == high else f"{low} to {high}"


def family_text(table: TableAnalysis) -> str:
    """How the table's verdicts were judged together, and how many rows they decide."""
    m, threshold = table.family.comparisons, table.family.threshold
    decided = rows_decided(table)
    return (
        f"Verdicts: the table's {plural(m, 'comparison')} with an interval judged together, each at "
        f"{1 - threshold:.2%} (Benjamini-Hochberg: at most 5% of the differences called are expected to be chance; "
        f"judged one by one at 95%, {plural(m, 'comparison')} of identical cells would call about {m * 0.05:.1f} "
        f"different by chance); rows decided: {decided} of {len(table.rows)} (every comparison a row makes faster, "
        "slower or the same)."
    )


def head_section(table: TableAnalysis, page: Page) -> list[str]:
    """The main table, what stands behind it, its notes and the published rows it lacks (the legend is the page's)."""
    if not table.rows:  # a table of a study's workloads only: its own section shows them
        return []
    numbers = main_table(table)
    lines = [numbers[0], "", *[f"- {text}" for text in table_facts(table)], *numbers[1:]]
    if table.missing:
        missing = ", ".join(f"{k.label()} (batch {k.batch_size})" for k in table.missing)
        lines += ["", f"Published rows not measured in this table: {missing}."]
    return lines


def sampling_text(loaded: Loaded) -> str:
    """How the cell's processes chose their step counts (runs[].sampling): the target and how many reached it,
    what stopped the others."""
    found = [run.sampling for run in loaded.result.runs if run.sampling]
    if not found:
        return "not recorded"
    if all(s.get("stopped_by") == "fixed" for s in found):
        return f"fixed count ({joined((s.get('steps') for s in found), ', ')} steps)"
    target = (found[0].get("rule") or {}).get("target_half_width")
    reached = sum(1 for s in found if s.get("reached"))
    text = (f"±{target:.0%} " if isinstance(target, (int, float)) else "") + f"reached in {reached} of {len(found)}"
    capped = Counter(s.get("stopped_by") for s in found if not s.get("reached"))
    if capped:
        text += "; capped: " + ", ".join(f"{why} ({n})" for why, n in sorted(capped.items(), key=str))
    return text


def interval_text(found: Estimate | None) -> str:
    interval = found.interval() if found else None
    return f"{fmt_ms(interval[0])}–{fmt_ms(interval[1])}" if interval else ""


def details_row(table: TableAnalysis, facts: RowFacts, column: Column) -> list[str]:
    loaded = facts.cells[column]
    r = loaded.result
    s = r.summary()
    found = table.estimate(loaded)
    firsts = [run.first_step_ms for run in r.runs if run.first_step_ms is not None]
    reasons = unsteady_reasons(r)
    noise = table.noise(loaded) if found else None
    steps = [len(run.timed_ms) for run in r.runs if run.timed_ms]
    return [
        facts.key.label(),
        str(facts.key.batch_size),
        column.header,
        r.status,
        str(len(r.runs)),
        ", ".join(str(n) for n in steps),
        f"{fmt_ms(found.center)} {r.unit}" if found else "",
        interval_text(found),
        (found.basis + (f" ({md(found.note)})" if found.basis == stats.MACHINE_SPREAD else "")) if found else "",
        f"{fmt_ms(s.p10)}–{fmt_ms(s.p90)}" if s else "",
        sampling_text(loaded) if found else "",
        (md("; ".join(noise.reasons)) or "none") if noise else "",
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
        "Processes",
        "Steps per process",
        "Figure",
        "95% interval",
        "Interval basis",
        "p10–p90 of the steps",
        "Sampling",
        "Noise",
        "First step (ms)",
        "First step holds",
        "Steady",
        "tok/s",
        "File",
    ]
    body = [details_row(table, f, c) for f in table.rows for c in COLUMNS if c in f.cells]
    return [github_table(body, headers)]

