"""Whether two cells did the same work a step, asked before any comparison of their times: the same batch, the same
shapes as each recorded, and model FLOPs and least bytes (bench/catalogue/work.py, counted from what each side's
framework builds; the function's own FLOPs where an implementation computes more, as Keras' merged LoRA kernels do)
within 1% in the same dtype, and for a float32 step the same matmul precision (TF32 or full FP32, as each framework
recorded it). Two cells that differ are not compared: a ratio of their times says how much less one computed (or how
much coarser), not which framework is faster.
"""
from __future__ import annotations

from typing import Any

from bench.record.results import Result

TOLERANCE = 0.01  # work counts are formulas of the shape: any real difference is far larger than this


def giga(value: float) -> str:
    return f"{value / 1e9:.3g}"


def apart(x: float, y: float) -> bool:
    return abs(x - y) > TOLERANCE * max(abs(x), abs(y))


def shape_difference(a: dict[str, Any] | None, b: dict[str, Any] | None) -> str | None:
    """The first recorded shape setting that differs ('resolution 128 vs 64'); None where either recorded none."""
    if not a or not b:
        return None
    for name in sorted(a.keys() | b.keys()):
        if name != "learning_rate" and a.get(name) != b.get(name):  # a training setting, not the step's work
            return f"{name} {a.get(name)} vs {b.get(name)}"
    return None


def work_difference(a: Result, b: Result) -> str | None:
    """Why A and B did different work a step, or None where they did the same (or where neither side recorded
    what would show a difference: a result without counts is compared as before)."""
    if a.cell.batch_size != b.cell.batch_size:
        return f"different work: batch {a.cell.batch_size} vs {b.cell.batch_size}"
    if why := shape_difference((a.config or {}).get("shape"), (b.config or {}).get("shape")):
        return f"different work: {why}"
    wa, wb = a.work_counts(), b.work_counts()
    if not wa or not wb:
        return None
    if wa.get("dtype") != wb.get("dtype"):
        return f"different work: {wa.get('dtype')} vs {wb.get('dtype')} matrix products"
    fa, fb = wa.get("function_flops", wa["flops"]), wb.get("function_flops", wb["flops"])
    if apart(fa, fb):
        return f"different work: {giga(fa)} vs {giga(fb)} GFLOP a step"
    if apart(wa["bytes"], wb["bytes"]):
        return f"different work: {giga(wa['bytes'])} vs {giga(wb['bytes'])} GB moved a step at least"
    return precision_difference(a, b, wa)


MODE_TEXT = {"tf32": "TF32", "float32": "FP32", "bfloat16": "bfloat16"}


def step_modes(result: Result, work: dict[str, Any] | None = None) -> tuple[str, ...] | None:
    """What a float32 step's matrix products (and, where it has any, its convolutions) computed in, as its framework
    recorded it; None for a step of another dtype (bfloat16: the mode is the dtype) or where nothing was recorded."""
    work = work if work is not None else result.work_counts()
    found = result.float32_precision()
    if not work or work.get("dtype") != "float32" or found is None:
        return None
    return (found["matmul"], found["convolution"]) if work.get("convolution_flops") else (found["matmul"],)


def precision_difference(a: Result, b: Result, work: dict[str, Any]) -> str | None:
    """Why two float32 cells did not compute the same thing: their float32 matrix products (or convolutions) ran in
    different modes, TF32 (10-bit mantissa inputs, on tensor cores) on one side and full FP32 on the other (JAX's
    and TensorFlow's default on a GPU against PyTorch's). On a CPU every mode is FP32: the same computation."""
    ma, mb = step_modes(a, work), step_modes(b, work)
    if ma is None or mb is None or ma == mb:
        return None
    what = "matrix products" if ma[0] != mb[0] else "convolutions"
    pick = 0 if ma[0] != mb[0] else 1
    pa, pb = a.float32_precision(), b.float32_precision()
    return (f"not the same computation: float32 {what} in {MODE_TEXT[ma[pick]]} vs {MODE_TEXT[mb[pick]]} "
            f"({a.cell.backend}: {pa['setting']}; {b.cell.backend}: {pb['setting']})")  # fmt: skip


def mode_label(result: Result) -> str | None:
    """A float32 cell's mode as the tables mark it ("TF32", "FP32"; "FP32, convolutions TF32"); None for a cell that is
    not ok, of another dtype, or recorded none."""
    m = step_modes(result) if result.status == "ok" else None
    if m is None:
        return None
    return MODE_TEXT[m[0]] + (f", convolutions {MODE_TEXT[m[1]]}" if len(m) > 1 and m[1] != m[0] else "")


def mode_marks(results: dict[Any, Result]) -> dict[Any, str]:
    """Where these cells (a table row's) computed their float32 steps in different modes: each cell's mode as a mark
    (mode_label); empty where they agree or none is a float32 step."""
    modes = {key: label for key, r in results.items() if (label := mode_label(r)) is not None}
    return modes if len(set(modes.values())) > 1 else {}
