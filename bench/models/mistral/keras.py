"""Mistral on Keras 3: keras-hub MistralCausalLM (bfloat16, no preprocessor), LoRA fit and greedy generate."""
from __future__ import annotations

from typing import Any

from bench.models.keras_llm import KerasCausalLM

# Mistral-7B-v0.1's attention window (keras-hub's default is 512); longer than every sequence run here.
SLIDING_WINDOW = 4096


def backbone_kwargs(s) -> dict[str, Any]:
    """keras-hub MistralBackbone arguments for a CausalLMShape (transformers naming, the same widths)."""
    return dict(
        vocabulary_size=s.vocabulary_size,
        num_layers=s.num_layers,
        num_query_heads=s.num_query_heads,
        num_key_value_heads=s.num_key_value_heads,
        hidden_dim=s.hidden_dim,
        intermediate_dim=s.intermediate_dim,
        head_dim=s.head_dim,
        rope_max_wavelength=s.rope_max_wavelength,
        layer_norm_epsilon=s.layer_norm_epsilon,
        sliding_window=SLIDING_WINDOW,
    )


class MistralKeras(KerasCausalLM):
    backbone_class = "MistralBackbone"
    task_class = "MistralCausalLM"
    backbone_kwargs = staticmethod(backbone_kwargs)


parameter_counts = MistralKeras.parameter_counts


def create(cell, shape) -> MistralKeras:
    return MistralKeras(cell, shape)
