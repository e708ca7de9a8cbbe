"""Every number against the machine's limit (issue 31; docs/ROOFLINE.md): the published table against the A100's
datasheet peaks (a section of its own, needing no result), and per table each ok cell's achieved FLOP/s, its MFU and,
for decode, its memory-bandwidth use, with a roofline figure.

The counts are bench/roofline/work.py's (each model's bench/models/<name>/work.py), the ceilings a run's own probe
(bench/roofline/probe.py, recorded in the result's provenance), a machine's ceilings file measured later
(results/ceilings/<machine>.json, `make ceilings`), or a known GPU's datasheet (bench/roofline/hardware.py).
"""
from __future__ import annotations

from bench.backends import BACKENDS
from bench.published import PUBLISHED_COLUMNS, published_rows
from bench.registry import get_model
from bench.report.text import github_table
from bench.roofline.hardware import A100_40GB
from bench.roofline.published import PublishedCell, backend_medians, published_cells, tensor_mode

PUBLISHED_TITLE = "The published table against the A100's limits"
MODE_TEXT = {"bfloat16": "bfloat16", "tf32": "TF32", "float32": "FP32"}


def tflops(value: float) -> str:
    return f"{value / 1e12:.1f}" if value >= 1e12 else f"{value / 1e12:.2f}"


def pct(value: float) -> str:
    return f"{100 * value:.1f}%" if value < 0.1 else f"{100 * value:.0f}%"


def work_text(flops: float, nbytes: float) -> str:
    return f"{flops / 1e12:.2f} TFLOP, {nbytes / 1e9:.2f} GB"


def compute_text(cell: PublishedCell) -> str:
    """Achieved TFLOP/s and MFU; a float32 cell below the FP32 peak could be running full-float32 matmuls, so its
    share of that peak is shown too."""
    text = f"{tflops(cell.flops_per_s)} · {pct(cell.mfu(A100_40GB))}"
    if cell.work.dtype == "float32" and cell.flops_per_s < A100_40GB.flops["float32"]:
        text += f" ({pct(cell.mfu(A100_40GB, 'float32'))} of FP32)"
    return text


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
            cells_text = [f"{found[b].bytes_per_s / 1e9:.0f} GB/s · {pct(found[b].bandwidth_use(sheet))}" if b in found else "NA" for b in backends]
            decode.append([label, str(row.batch_size), work_text(first.work.flops, first.work.bytes)] + cells_text)
        else:
            cells_text = [compute_text(found[b]) if b in found else "NA" for b in backends]
            compute.append([label + f" ({first.work.dtype})", str(row.batch_size), work_text(first.work.flops, first.work.bytes)] + cells_text)
    peaks = ", ".join(f"{MODE_TEXT[m]} {v / 1e12:g} TFLOP/s" for m, v in sheet.flops.items())
    lines = [
        f"The published ms/step (an {sheet.name}) over our count of each step's work (docs/ROOFLINE.md: model FLOPs "
        "of the matrix products and convolutions, and the least bytes a step must move, from the paper shapes, as the "
        "Keras models compute them), against the card's datasheet: "
        f"{peaks}, {sheet.bandwidth / 1e9:,.0f} GB/s ({sheet.source}). No GPU is needed for this section.",
        "",
        "**Compute (fit and predict)**: achieved TFLOP/s · MFU, the share of the peak of the dtype the step computes "
        "in (bfloat16 at 312; float32 at its tensor-core rate, TF32 156, which TensorFlow and JAX use by default on "
        "an A100). A float32 cell slower than the FP32 peak (19.5) also shows its share of that: PyTorch keeps "
        "float32 matrix products in full FP32 by default (`allow_tf32` False; its convolutions take TF32).",
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
        out.append(f"- Furthest from the hardware among fit and predict: " + "; ".join(f"{name(c)}, {pct(c.mfu(sheet))}" for c in low)
                   + f". Nearest: {name(high)}, {pct(high.mfu(sheet))} of the {MODE_TEXT[tensor_mode(high.work.dtype)]} peak.")
        medians = sorted(backend_medians(cells, sheet).items(), key=lambda kv: kv[1][0])
        out.append("- Median MFU of each framework's fit and predict cells (least first: the most left on the table): "
                   + ", ".join(f"{BACKENDS[b].display} {pct(m)} ({n} cells)" for b, (m, n) in medians) + ".")
        fp32 = [c for c in compute if c.work.dtype == "float32" and c.flops_per_s < sheet.flops["float32"]]
        if fp32:
            out.append(f"- {len(fp32)} float32 cells ran below the FP32 peak, at {pct(min(c.mfu(sheet, 'float32') for c in fp32))} to "
                       f"{pct(max(c.mfu(sheet, 'float32') for c in fp32))} of it: " + ", ".join(name(c) for c in fp32)
                       + ". Every other float32 cell went faster than FP32 allows, so it used TF32.")
    if decode:
        near, far = decode[-1], decode[0]
        out.append(f"- Decode nearest the bandwidth floor: {name(near)}, {pct(near.bandwidth_use(sheet))} of "
                   f"{sheet.bandwidth / 1e9:,.0f} GB/s; furthest: {name(far)}, {pct(far.bandwidth_use(sheet))}.")
    return out
