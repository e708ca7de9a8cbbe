"""Every number against the machine's limit (docs/ROOFLINE.md): the published table against the A100's
datasheet peaks (a section of its own, needing no result), and per table each ok cell's achieved FLOP/s, its MFU and,
for decode, its memory-bandwidth use, with a roofline figure.

The counts are bench/catalogue/work.py's (each model's bench/models/<name>/work.py), the ceilings a run's own probe
(bench/measure/ceiling_probe.py, recorded in the result's provenance), a machine's ceilings file measured later
(results/ceilings/<machine>.json, `make ceilings`), or a known GPU's datasheet (bench/catalogue/hardware.py).
"""

from __future__ import annotations

import json

from bench.base.atomic import write_stream_atomic
from bench.base.published import PUBLISHED_COLUMNS, published_rows
from bench.base.tables import github_table
from bench.catalogue.backends import BACKENDS
from bench.catalogue.hardware import A100_40GB, MODE_TEXT
from bench.catalogue.registry import get_model
from bench.judge.same_work import apart
from bench.roofline.published import PublishedCell, backend_medians, published_cells

PUBLISHED_TITLE = "The published table against the A100's limits"


def tflops(value: float) -> str:
    return f"{value / 1e12:.1f}" if value >= 1e12 else f"{value / 1e12:.2f}"


def pct(value: float) -> str:
    return f"{100 * value:.1f}%" if value < 0.1 else f"{100 * value:.0f}%"


def scaled(value: float, unit: str) -> str:
    """1.19e13, "FLOP" -> "11.9 TFLOP": three significant figures at the nearest SI prefix."""
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= factor:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def work_text(flops: float, nbytes: float) -> str:
    return f"{scaled(flops, 'FLOP')}, {scaled(nbytes, 'B')}"


def compute_text(cell: PublishedCell) -> str:
    """Achieved TFLOP/s and MFU at the step's own modes (its framework's defaults), with the mode where it is not
    the dtype."""
    modes = cell.modes
    text = f"{tflops(cell.flops_per_s)} · {pct(cell.mfu(A100_40GB))}"
    return text + (f" ({modes.text})" if cell.work.dtype == "float32" else "")


def published_section() -> list[str]:
    """The whole section (a '## ' heading of RESULTS.md), from the published CSV and the counts alone."""
    cells = published_cells()
    if not cells:
        return []
    sheet = A100_40GB
    by_row: dict[tuple[str, str, int], dict[str, PublishedCell]] = {}
    for c in cells:
        by_row.setdefault((c.model, c.task, c.batch_size), {})[c.backend] = c
    backends = list(PUBLISHED_COLUMNS)
    headers = ["Model / task", "Batch", "work per step"] + [BACKENDS[b].display for b in backends]
    compute, decode = [], []
    for row in published_rows():
        found = by_row.get((row.model, row.task, row.batch_size))
        if not found:
            continue
        first = next(iter(found.values()))
        label = f"{get_model(row.model).display} {row.task}"
        if first.decode:
            cells_text = [
                f"{found[b].bytes_per_s / 1e9:.0f} GB/s · {pct(found[b].bandwidth_use(sheet))}" if b in found else "NA"
                for b in backends
            ]
            decode.append([label, str(row.batch_size), work_text(first.work.flops, first.work.bytes)] + cells_text)
        else:
            cells_text = [compute_text(found[b]) if b in found else "NA" for b in backends]
            compute.append(
                [label + f" ({first.work.dtype})", str(row.batch_size), work_text(first.work.flops, first.work.bytes)]
                + cells_text
            )
    peaks = ", ".join(f"{MODE_TEXT[m]} {v / 1e12:g} TFLOP/s" for m, v in sheet.flops.items())
    lines = [
        f"The published ms/step (an {sheet.name}) over our count of each step's work (docs/ROOFLINE.md: model FLOPs "
        "of the matrix products and convolutions, and the least bytes a step must move, from the paper shapes, as the "
        "Keras models compute them), against the card's datasheet: "
        f"{peaks}, {sheet.bandwidth / 1e9:,.0f} GB/s ({sheet.source}). No GPU is needed for this section.",
        "",
        "**Compute (fit and predict)**: achieved TFLOP/s · MFU, the share of the peak of the mode the step computed "
        "in, its framework's default (bfloat16 at 312; a float32 step on TensorFlow or JAX at TF32, 156, which both "
        "use by default on an A100; on PyTorch, which keeps float32 matrix products in full FP32 by default "
        "(`allow_tf32` False), at FP32, 19.5, and where it convolves (its convolutions take TF32) at the rate of its "
        "mix of the two at their peaks). Like for like: each cell against what its own step could reach.",
        "",
        github_table(compute, headers),
        "",
        "**Decode (generate)**: the least bytes of a call (every weight read once per forward pass, the KV cache "
        "read by each decode step) over the published ms/call, GB/s · its share of the card's bandwidth. The whole "
        "call is timed (prefill included), so this is a lower bound on the decode steps' own bandwidth use.",
        "",
        github_table(decode, headers),
        "",
        *published_findings(cells),
    ]
    return lines


def published_findings(cells: list[PublishedCell]) -> list[str]:
    sheet = A100_40GB
    compute = sorted((c for c in cells if not c.decode), key=lambda c: c.mfu(sheet))
    decode = sorted((c for c in cells if c.decode), key=lambda c: c.bandwidth_use(sheet))
    name = lambda c: f"{get_model(c.model).display} {c.task} at batch {c.batch_size} on {BACKENDS[c.backend].display}"  # noqa: E731
    out = ["What it shows (computed from the tables above):", ""]
    if compute:
        low, high = compute[:3], compute[-1]
        out.append(
            "- Furthest from the hardware among fit and predict: "
            + "; ".join(f"{name(c)}, {pct(c.mfu(sheet))}" for c in low)
            + f". Nearest: {name(high)}, {pct(high.mfu(sheet))} of the {high.modes.text} peak."
        )
        medians = sorted(backend_medians(cells, sheet).items(), key=lambda kv: kv[1][0])
        out.append(
            "- Median MFU of each framework's fit and predict cells (least first: the most left on the table): "
            + ", ".join(f"{BACKENDS[b].display} {pct(m)} ({n} cells)" for b, (m, n) in medians)
            + "."
        )
        fp32 = [c for c in compute if c.work.dtype == "float32" and c.modes.matmul == "float32"]
        if fp32:
            out.append(
                f"- {len(fp32)} float32 cells computed their matrix products in full FP32 (PyTorch's default), at "
                f"{pct(min(c.mfu(sheet) for c in fp32))} to {pct(max(c.mfu(sheet) for c in fp32))} of the peak of "
                "their own modes: " + ", ".join(name(c) for c in fp32) + ". Taken at TF32's rate, as the other "
                "frameworks' float32 cells are, they would read "
                f"{pct(min(c.mfu(sheet, 'tf32') for c in fp32))} to {pct(max(c.mfu(sheet, 'tf32') for c in fp32))}: "
                "a precision they did not use."
            )
    if decode:
        near, far = decode[-1], decode[0]
        out.append(
            f"- Decode nearest the bandwidth floor: {name(near)}, {pct(near.bandwidth_use(sheet))} of "
            f"{sheet.bandwidth / 1e9:,.0f} GB/s; furthest: {name(far)}, {pct(far.bandwidth_use(sheet))}."
        )
    return out


# --- per table: every ok cell against its machine's ceilings ---

MACHINE_TITLE = "Against the machine's limits: MFU and bandwidth use"


def table_uses(table, results_dir) -> tuple[dict, list[dict]]:
    """(row key, column) -> Use for every ok cell with a count, and the machine ceilings files read (once per
    machine) for results that recorded no ceilings of their own."""
    from bench.record.load import COLUMNS
    from bench.roofline.utilisation import use_of
    from bench.run.ceilings import load_machine_file

    files: dict[str, dict | None] = {}
    out = {}
    for facts in table.rows:
        for column in COLUMNS:
            item = facts.cells.get(column)
            if item is None or item.result.status != "ok":
                continue
            machine = item.result.provenance.get("machine") or {}
            key = json.dumps(machine, sort_keys=True, default=str)
            if key not in files:
                files[key] = load_machine_file(results_dir, machine)
            use = use_of(item.result, (files[key] or {}).get("ceilings"))
            if use is not None:
                out[(facts.key, column)] = use
    return out, [f for f in files.values() if f]


EXCEEDS = "⚠ above the ceiling"
UNLIKE_WORK = "differs by cell (each shown in it)"  # the row's cells built different models: not comparable


def use_text(use) -> str:
    flops = scaled(use.flops_per_s, "FLOP/s")
    if use.exceeds:  # a wrong ceiling or work count, not a share: the achieved rate alone, flagged
        return f"{EXCEEDS} · {flops}"
    text = f"{pct(use.mfu)} · {flops}" if use.mfu is not None else flops
    if use.decode and use.bandwidth_use is not None:
        text += f" · BW {pct(use.bandwidth_use)}"
    if use.datasheet_mfu is not None:
        text += f" (sheet {pct(use.datasheet_mfu)}" + (
            f", BW {pct(use.datasheet_bandwidth_use)})" if use.decode else ")"
        )
    return text


def machine_section(table, page) -> list[str]:
    """Per ok cell: MFU against the ceiling of its framework and dtype, achieved GFLOP/s, decode's bandwidth use;
    the roofline figure; which ceilings were used."""
    from bench.record.load import COLUMNS

    results_dir = page.fig_dir.parent
    uses, machine_files = table_uses(table, results_dir)
    if not uses:
        return []
    columns = [c for c in COLUMNS if any(col == c for _, col in uses)]
    body = []
    for facts in table.rows:
        if not any((facts.key, c) in uses for c in columns):
            continue
        works = {c: uses[(facts.key, c)].work for c in columns if (facts.key, c) in uses}
        first = next(iter(works.values()))
        alike = all(not apart(w.flops, first.flops) and not apart(w.bytes, first.bytes) for w in works.values())
        label = f"{facts.key.label()}" + (f" ({facts.unit})" if facts.unit else "")
        body.append(
            [
                label,
                str(facts.key.batch_size),
                work_text(first.flops, first.bytes) if alike else UNLIKE_WORK,
                *(
                    ("" if alike else f"{work_text(works[c].flops, works[c].bytes)} · ") + use_text(use)
                    if (use := uses.get((facts.key, c))) is not None
                    else ""
                    for c in columns
                ),
            ]
        )
    sources = sorted(
        {f"{u.ceiling.what} ({u.ceiling.flops / 1e9:.0f} GFLOP/s)" for u in uses.values() if u.ceiling.flops}
    )
    if any("ceilings file" in u.ceiling.what for u in uses.values()):
        sources += [
            f"the machine's ceilings file measured {f.get('created_at')} on this processor at a load average of "
            f"{float((f.get('load_average') or [0])[0]):.1f} (`make ceilings`, best of {f.get('repeats') or 1})"
            for f in {f.get("created_at"): f for f in machine_files}.values()
        ]
    sheets = sorted({u.ceiling.datasheet_mode for u in uses.values() if u.ceiling.datasheet_flops})
    if sheets:
        sources.append("the GPU's datasheet (bench/catalogue/hardware.py) at " + ", ".join(sheets))
    lines = [
        "Each ok cell's figure over its step's work (docs/ROOFLINE.md; model FLOPs and the least bytes, counted from "
        "the "
        "shape it ran): **MFU** (its achieved FLOP/s over its host's matmul ceiling in the step's dtype) · "
        "achieved GFLOP/s; for generate, **BW**: the least bytes of a call over the whole call's time, against the "
        "triad's bandwidth (the generate split of prefill and decode is not used: a lower bound on decode's own use)"
        + (
            "; on a known GPU, its datasheet's fractions in brackets"
            if any(u.datasheet_mfu for u in uses.values())
            else ""
        )
        + ". The ceiling is the cell's own host's: the best matmul in the step's dtype that any framework (or "
        "NumPy) reached on that processor, measured quietly where a ceilings file for it exists. A cell faster than "
        f"its ceiling is marked {EXCEEDS}: its ceiling or its work count is wrong, and no share is printed. Where "
        "a row's cells did different work a step (a library that builds its own widths), the work column says so "
        "and each cell shows its own; such cells are never compared.",
        "",
        github_table(body, ["Model / task", "Batch", "work per step"] + [c.header for c in columns]),
        "",
        "Ceilings used: " + ("; ".join(sources) if sources else "none recorded, so achieved FLOP/s alone") + ".",
    ]
    exceeding = sum(use.exceeds for use in uses.values())
    if exceeding:
        lines += ["", f"{exceeding} cell(s) {EXCEEDS}: a measurement error to find, not a result."]
    figure = draw_roofline(table, uses, page)
    if figure is not None:
        import os
        from pathlib import Path

        lines += ["", f"![Roofline: every ok cell]({Path(os.path.relpath(figure, page.out_dir)).as_posix()})"]
    return lines


def draw_roofline(table, uses: dict, page):
    """Arithmetic intensity (FLOP/byte) against achieved FLOP/s, log-log, one point per cell coloured by its column;
    the ceilings drawn: each measured matmul peak (flat) and the measured bandwidth (the slope)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.style
    from matplotlib.figure import Figure

    points = [(use.work.intensity, use.flops_per_s, column) for (_, column), use in uses.items()]
    if not points:
        return None
    measured = [u for u in uses.values() if u.ceiling.flops]
    if measured:  # the run's (or the machine file's) measured ceilings; else a known GPU's datasheet
        flops_ceilings = sorted({(u.ceiling.flops, u.ceiling.what.split(" matmul")[0]) for u in measured})
        bandwidths = sorted({u.ceiling.bandwidth for u in measured if u.ceiling.bandwidth})
    else:
        sheet = [u for u in uses.values() if u.ceiling.datasheet_flops]
        flops_ceilings = sorted({(u.ceiling.datasheet_flops, f"datasheet {u.ceiling.datasheet_mode}") for u in sheet})
        bandwidths = sorted({u.ceiling.datasheet_bandwidth for u in sheet if u.ceiling.datasheet_bandwidth})
    page.fig_dir.mkdir(parents=True, exist_ok=True)
    path = page.fig_dir / f"{table.group.slug}-roofline.png"
    with matplotlib.style.context("default"), matplotlib.rc_context({"font.size": 9}):
        fig = Figure(figsize=(7.5, 5))
        ax = fig.add_subplot()
        ax.set_xscale("log")
        ax.set_yscale("log")
        xs = [p[0] for p in points]
        lo, hi = min(xs) / 3, max(xs) * 3
        if bandwidths and flops_ceilings:
            bw, peak = max(bandwidths), max(f for f, _ in flops_ceilings)
            ridge = peak / bw
            grid = [lo, min(max(ridge, lo), hi), hi]
            ax.plot(
                grid,
                [min(x * bw, peak) for x in grid],
                color="black",
                linewidth=1.2,
                label=f"roofline: {bw / 1e9:.3g} GB/s, {peak / 1e9:.3g} GFLOP/s",
            )
        for flops, dtype in flops_ceilings:
            ax.axhline(flops, color="gray", linewidth=0.6, linestyle=":")
            ax.text(hi, flops, f" {dtype} {flops / 1e9:.4g} GFLOP/s", fontsize=6, va="bottom", ha="right", color="gray")
        seen = set()
        for x, y, column in sorted(points, key=lambda p: (p[2].backend, p[2].variant, p[0])):
            ax.scatter([x], [y], s=18, color=column.color, label=None if column in seen else column.header, zorder=3)
            seen.add(column)
        ax.set_xlim(lo, hi)
        ax.set_xlabel("arithmetic intensity (FLOP per byte of the step's least traffic)")
        ax.set_ylabel("achieved FLOP/s")
        ax.set_title(f"Roofline: every ok cell, {table.group.profile} profile, {table.group.machine}")
        ax.legend(loc="lower right", fontsize=7)
        fig.tight_layout()
        write_stream_atomic(path, lambda f: fig.savefig(f, format="png", dpi=100, metadata={"Software": None}))
    page.figures["roofline"] = path
    return path
