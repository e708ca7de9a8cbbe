"""Gemma on Keras 3: keras-hub GemmaCausalLM (bfloat16, no preprocessor), LoRA fit and greedy generate."""
from __future__ import annotations

from typing import Any

from bench.models.keras_llm import KerasCausalLM


def backbone_kwargs(s) -> dict[str, Any]:
    """keras-hub GemmaBackbone arguments for a CausalLMShape (transformers naming)."""
    if s.rope_max_wavelength != 10000.0:
        raise ValueError(f"keras-hub Gemma fixes RoPE's max wavelength at 10000, the shape asks {s.rope_max_wavelength}")
    return dict(
        vocabulary_size=s.vocabulary_size,
        num_layers=s.num_layers,
        num_query_heads=s.num_query_heads,
        num_key_value_heads=s.num_key_value_heads,
        hidden_dim=s.hidden_dim,
        # keras-hub's intermediate_dim is the gate and up projections together: twice transformers' intermediate_size.
        intermediate_dim=2 * s.intermediate_dim,
        head_dim=s.head_dim,
        layer_norm_epsilon=s.layer_norm_epsilon,
    )


class GemmaKeras(KerasCausalLM):
    backbone_class = "GemmaBackbone"
    task_class = "GemmaCausalLM"
    backbone_kwargs = staticmethod(backbone_kwargs)


parameter_counts = GemmaKeras.parameter_counts


def create(cell, shape) -> GemmaKeras:
    return GemmaKeras(cell, shape)
