"""The shape shared by the two 7B causal LMs (Gemma, Mistral): architecture plus the fit/generate workload."""
from __future__ import annotations

from dataclasses import dataclass

from bench.workloads import positive_fields


@dataclass(frozen=True)
class CausalLMShape:
    # Architecture (transformers naming; intermediate_dim is the FFN width of one gate/up projection).
    vocabulary_size: int
    num_layers: int
    num_query_heads: int
    num_key_value_heads: int
    hidden_dim: int
    intermediate_dim: int
    head_dim: int
    max_position_embeddings: int
    rope_max_wavelength: float
    layer_norm_epsilon: float
    # Workload: bf16 weights, LoRA fit at fit_sequence_length, greedy generate to generate_length in total.
    dtype: str
    lora_rank: int
    fit_sequence_length: int
    prompt_length: int  # token ids of the "5-word prompt" (no tokenizer offline: one token per word)
    generate_length: int  # prompt + generated tokens, the same on every backend
    learning_rate: float

    def __post_init__(self) -> None:
        positive_fields(self)
        if self.prompt_length >= self.generate_length:
            raise ValueError("prompt_length must be shorter than generate_length")
        if self.num_query_heads % self.num_key_value_heads:
            raise ValueError("num_query_heads must be a multiple of num_key_value_heads")

    @property
    def new_tokens(self) -> int:
        return self.generate_length - self.prompt_length
