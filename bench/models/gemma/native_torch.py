"""Gemma in plain PyTorch: transformers GemmaForCausalLM (bfloat16), peft LoRA fit, greedy generate.

See bench/models/torch_llm.py for the workload; this module maps the shared CausalLMShape onto GemmaConfig.
"""
from __future__ import annotations

from bench.models.torch_llm import TorchCausalLM, config_arguments


def build_config(s):
    """transformers GemmaConfig for a CausalLMShape (google/gemma-7b at the paper shape)."""
    from transformers import GemmaConfig

    return GemmaConfig(**config_arguments(s), hidden_act="gelu_pytorch_tanh", tie_word_embeddings=True)


class GemmaTorch(TorchCausalLM):
    model_class = "GemmaForCausalLM"
    build_config = staticmethod(build_config)


parameter_counts = GemmaTorch.parameter_counts


def create(cell, shape) -> GemmaTorch:
    return GemmaTorch(cell, shape)
