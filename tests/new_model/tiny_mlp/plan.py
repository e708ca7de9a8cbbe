"""The tiny MLP's plan rule (bench/plan/memory.py): it holds its classifier, fit trains all of it, float32."""
from __future__ import annotations

from bench.plan.memory import Holding

ACTIVATION_FORMULAS = {
    "mlp": "batch x (layers x hidden + classes) x 4 bytes, kept for backward in fit; twice the widest layer in predict"
}


def holding(family: str, task: str, counts: dict[str, int], shape) -> Holding:
    return Holding(counts["classifier"], counts["classifier"] if task == "fit" else 0)


def activations(family: str, task: str, batch: int, shape) -> tuple[float, str]:
    if task == "fit":
        return batch * (shape.layers * shape.hidden + shape.classes) * 4, "mlp"
    return batch * 2 * max(shape.features, shape.hidden) * 4, "mlp"
