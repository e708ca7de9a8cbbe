"""Mistral on Keras 3: keras-hub MistralCausalLM (bfloat16, no preprocessor), LoRA fit and greedy generate."""
from __future__ import annotations

from typing import Any

from bench.models.keras_llm import KerasCausalLM, backbone_arguments
from bench.models.mistral import SLIDING_WINDOW


def backbone_kwargs(s) -> dict[str, Any]:
    """keras-hub MistralBackbone arguments for a CausalLMShape (transformers naming, the same widths)."""
    return dict(
        backbone_arguments(s),
        intermediate_dim=s.intermediate_dim,
        rope_max_wavelength=s.rope_max_wavelength,
        sliding_window=SLIDING_WINDOW,
    )


class MistralKeras(KerasCausalLM):
    backbone_class = "MistralBackbone"
    task_class = "MistralCausalLM"
    backbone_kwargs = staticmethod(backbone_kwargs)


parameter_counts = MistralKeras.parameter_counts


def create(cell, shape) -> MistralKeras:
    return MistralKeras(cell, shape)
