"""Whether two cells did the same work a step, asked before any comparison of their times: the same batch, the same
shapes as each recorded, and model FLOPs and least bytes (bench/work.py, counted from what each side's
framework builds; the function's own FLOPs where an implementation computes more, as Keras' merged LoRA kernels do)
within 1% in the same dtype. Two cells that differ are not compared: a ratio of their times says
how much less one computed, not which framework is faster.
"""
from __future__ import annotations

from typing import Any

from bench.results import Result

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
    return None
