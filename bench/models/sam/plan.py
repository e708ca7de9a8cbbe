"""SegmentAnything's plan rule (bench/plan/memory.py): the whole SAM is built; fit trains its image encoder, whose
ViT layers hold the activations."""
from __future__ import annotations

from bench.plan.memory import Holding, transformer_fit_bytes, transformer_live_bytes

ACTIVATION_FORMULAS = {
    "vit": "SAM's ViT image encoder as a transformer: tokens = batch x (image / patch)^2, span = window^2 in windowed "
    "layers and every token in the global ones",
}


def holding(family: str, task: str, counts: dict[str, int], shape) -> Holding:
    return Holding(counts["sam"], counts["image_encoder"] if task == "fit" else 0)


def activations(family: str, task: str, batch: int, shape) -> tuple[float, str]:
    side = shape.image_size // shape.patch_size
    tokens = batch * side * side
    spans = [
        side * side if i in shape.global_attention_layers else shape.window_size**2 for i in range(shape.num_layers)
    ]
    args = (tokens, shape.hidden_dim, shape.mlp_dim, shape.num_heads)
    if task == "fit":
        return sum(transformer_fit_bytes(*args, span, 4) for span in spans), "vit"
    return max(transformer_live_bytes(*args, span, 4) for span in set(spans)), "vit"
