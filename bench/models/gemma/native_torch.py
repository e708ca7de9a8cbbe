"""Gemma in plain PyTorch: transformers GemmaForCausalLM (bfloat16), peft LoRA fit, greedy generate.

See bench/models/torch_llm.py for the workload; this module maps the shared CausalLMShape onto GemmaConfig.
"""
from __future__ import annotations

from bench.models.torch_llm import TorchCausalLM


def build_config(s):
    """transformers GemmaConfig for a CausalLMShape (google/gemma-7b at the paper shape)."""
    from transformers import GemmaConfig

    return GemmaConfig(
        vocab_size=s.vocabulary_size,
        hidden_size=s.hidden_dim,
        intermediate_size=s.intermediate_dim,
        num_hidden_layers=s.num_layers,
        num_attention_heads=s.num_query_heads,
        num_key_value_heads=s.num_key_value_heads,
        head_dim=s.head_dim,
        max_position_embeddings=s.max_position_embeddings,
        rms_norm_eps=s.layer_norm_epsilon,
        rope_parameters={"rope_type": "default", "rope_theta": s.rope_max_wavelength},
        hidden_act="gelu_pytorch_tanh",
        tie_word_embeddings=True,
    )


class GemmaTorch(TorchCausalLM):
    model_class = "GemmaForCausalLM"
    build_config = staticmethod(build_config)


parameter_counts = GemmaTorch.parameter_counts


def create(cell, shape) -> GemmaTorch:
    return GemmaTorch(cell, shape)
