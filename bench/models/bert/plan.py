"""BERT's plan rule (bench/plan/memory.py): the classifier, every parameter trained by fit; float32."""
from __future__ import annotations

from bench.plan.memory import Holding, transformer_fit_bytes, transformer_live_bytes


def holding(family: str, task: str, counts: dict[str, int], shape) -> Holding:
    # Keras counts the backbone; the 2-class head on the pooled output is added as native's classifier counts it.
    held = (
        counts["classifier"]
        if family == "native-torch"
        else counts["backbone"] + shape.hidden_dim * shape.num_classes + shape.num_classes
    )
    return Holding(held, held if task == "fit" else 0)


def activations(family: str, task: str, batch: int, shape) -> tuple[float, str]:
    fit = task == "fit"
    f = transformer_fit_bytes if fit else transformer_live_bytes
    per_layer = f(
        batch * shape.sequence_length,
        shape.hidden_dim,
        shape.intermediate_dim,
        shape.num_heads,
        shape.sequence_length,
        4,
    )
    return per_layer * (shape.num_layers if fit else 1), "transformer"
