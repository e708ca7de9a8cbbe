"""Mistral in plain PyTorch: transformers MistralForCausalLM (bfloat16), peft LoRA fit, greedy generate.

See bench/models/torch_llm.py for the workload; this module maps the shared CausalLMShape onto MistralConfig.
"""
from __future__ import annotations

from bench.models.torch_llm import TorchCausalLM

SLIDING_WINDOW = 4096  # Mistral-7B-v0.1's attention window (longer than any sequence the workload runs)


def build_config(s):
    """transformers MistralConfig for a CausalLMShape (mistralai/Mistral-7B-v0.1 at the paper shape)."""
    from transformers import MistralConfig

    return MistralConfig(
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
        hidden_act="silu",
        sliding_window=SLIDING_WINDOW,
        tie_word_embeddings=False,
    )


class MistralTorch(TorchCausalLM):
    model_class = "MistralForCausalLM"
    build_config = staticmethod(build_config)


parameter_counts = MistralTorch.parameter_counts


def create(cell, shape) -> MistralTorch:
    return MistralTorch(cell, shape)
