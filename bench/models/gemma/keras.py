"""Gemma on Keras 3: keras-hub GemmaCausalLM (bfloat16, no preprocessor), LoRA fit and greedy generate."""
from __future__ import annotations

from typing import Any

from bench.models.keras_llm import KerasCausalLM, backbone_arguments


def backbone_kwargs(s) -> dict[str, Any]:
    """keras-hub GemmaBackbone arguments for a CausalLMShape (transformers naming)."""
    if s.rope_max_wavelength != 10000.0:
        raise ValueError(
            f"keras-hub Gemma fixes RoPE's max wavelength at 10000, the shape asks {s.rope_max_wavelength}"
        )
    # keras-hub's intermediate_dim is the gate and up projections together: twice transformers' intermediate_size.
    return dict(backbone_arguments(s), intermediate_dim=2 * s.intermediate_dim)


class GemmaKeras(KerasCausalLM):
    backbone_class = "GemmaBackbone"
    task_class = "GemmaCausalLM"
    backbone_kwargs = staticmethod(backbone_kwargs)


parameter_counts = GemmaKeras.parameter_counts


def create(cell, shape) -> GemmaKeras:
    return GemmaKeras(cell, shape)
