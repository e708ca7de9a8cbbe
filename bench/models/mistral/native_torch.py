"""Mistral in plain PyTorch: transformers MistralForCausalLM (bfloat16), peft LoRA fit, greedy generate.

See bench/models/torch_llm.py for the workload; this module maps the shared CausalLMShape onto MistralConfig.
"""
from __future__ import annotations

from bench.models.mistral import SLIDING_WINDOW
from bench.models.torch_llm import TorchCausalLM, config_arguments


def build_config(s):
    """transformers MistralConfig for a CausalLMShape (mistralai/Mistral-7B-v0.1 at the paper shape)."""
    from transformers import MistralConfig

    return MistralConfig(
        **config_arguments(s), hidden_act="silu", sliding_window=SLIDING_WINDOW, tie_word_embeddings=False
    )


class MistralTorch(TorchCausalLM):
    model_class = "MistralForCausalLM"
    build_config = staticmethod(build_config)


parameter_counts = MistralTorch.parameter_counts


def create(cell, shape) -> MistralTorch:
    return MistralTorch(cell, shape)
