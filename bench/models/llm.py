"""The shape shared by the two 7B causal LMs (Gemma, Mistral): architecture plus the fit/generate workload.

Generate prompt: keras-benchmarks v0.0.5 passed a 5-word string through each library's tokenizer, which adds the
start token (BOS): BOS + 5 words = 6 prompt tokens, and Keras's `max_length=50` left 44 new tokens. There is no
tokenizer offline, so the prompt is prepared as ids in setup, outside the timed window: `bos_token_id` (the
model's start token: Gemma 2, Mistral 1) followed by `prompt_length - 1` seeded random ids. `prompt_length`
counts the BOS (6 in the paper shape). Both families generate `generate_length - prompt_length` new tokens
(44 in the paper shape). v0.0.5's torch script asked `max_new_tokens = 50 - 5 = 45` (its 5 counted words, not
the 6 tokens), one more than its Keras twin; here both families write the Keras count so a row compares equal
work.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bench.catalogue.spec import TaskSpec, fit_task, positive_fields


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
    prompt_length: int  # prompt token ids, BOS included: BOS + the "5-word prompt" (one token per word) = 6
    generate_length: int  # prompt + generated tokens, the same on every backend
    bos_token_id: int  # the model's start token, the prompt's first id (the tokenizer's BOS in v0.0.5)
    keras_fused_attention: bool
    learning_rate: float
    optimizer: str = "adamw"  # the 7B rows' AdamW (v0.0.5); the tuning study's Gemma 2B ran SGD

    def __post_init__(self) -> None:
        positive_fields(self)
        if self.optimizer not in ("adamw", "sgd"):
            raise ValueError(f"optimizer {self.optimizer!r}: adamw or sgd")
        if self.dtype not in ("bfloat16", "mixed_bfloat16", "float32"):
            raise ValueError(
                f"dtype {self.dtype!r}: bfloat16 (weights), mixed_bfloat16 (float32 weights, bf16 compute) or float32"
            )
        if self.prompt_length >= self.generate_length:
            raise ValueError("prompt_length must be shorter than generate_length")
        if self.prompt_length < 2:
            raise ValueError("prompt_length counts the BOS: it must be at least 2 (BOS + one word)")
        if not 0 <= self.bos_token_id < self.vocabulary_size:
            raise ValueError(f"bos_token_id {self.bos_token_id} is outside the vocabulary")
        if self.num_query_heads % self.num_key_value_heads:
            raise ValueError("num_query_heads must be a multiple of num_key_value_heads")

    @property
    def new_tokens(self) -> int:
        return self.generate_length - self.prompt_length


def prompt_ids(shape: CausalLMShape, batch_size: int, first_id: int, rng) -> np.ndarray:
    """(batch_size, prompt_length) int32 prompt ids: the BOS, then seeded random ids in [first_id, vocabulary_size).
    `rng` is a numpy Generator; what both families feed generate (the native side copies it to a tensor)."""
    words = rng.integers(first_id, shape.vocabulary_size, (batch_size, shape.prompt_length - 1), dtype="int32")
    return np.concatenate([np.full((batch_size, 1), shape.bos_token_id, dtype="int32"), words], axis=1)


def generated_tokens(shape: CausalLMShape, batch_size: int) -> int:
    return batch_size * shape.new_tokens


# Both LLMs: LoRA fit through each framework's trainer, generate calls in a plain loop, timed per call.
def causal_lm_paper_settings(cell, shape: CausalLMShape) -> dict:
    """What a 7B causal LM's run must record (the fidelity checks): v0.0.5's dtypes, attention path and prompt."""
    out = {}
    if cell.backend == "native-torch":
        if cell.task == "fit":
            out["lora_dtypes"] = [shape.dtype]  # peft 0.9.0's adapters in the base dtype
    else:
        out["global_dtype_policy"] = shape.dtype  # v0.0.5 set the policy globally (F5)
        out["keras_fused_attention"] = shape.keras_fused_attention
        if not shape.keras_fused_attention and cell.variant != "fused-attention":
            out["fused_attention"] = False
    if cell.task == "generate":
        out.update(prompt_length=shape.prompt_length, bos_token_id=shape.bos_token_id)
    return out


LLM_TASKS = [
    fit_task(native="trainer"),
    TaskSpec(
        "generate",
        # bench/measure/drivers.py drive_generate: the whole call as the "steps" driver timed it, plus the
        # prefill/decode split's one-token and partial calls in windows of their own (bench/base/generate_split.py)
        {"keras": "generate", "native-torch": "generate"},
        unit="ms/call",
        first_step_contains="trace + compile + the first generate call",
        tokens_per_step=generated_tokens,
    ),
]


class GenerationCheckError(AssertionError):
    """A generate call's output broke the workload's invariant (calls, length, filled positions, prompt kept)."""


def check_generated(outputs: list, prompt_ids, generate_length: int, calls: int) -> None:
    """Raise GenerationCheckError unless there were `calls` generate calls, each returning `generate_length` token
    ids per sequence with the prompt intact. `outputs` holds per call (token_ids, filled): filled is the boolean
    mask of written positions where the library returns one (keras-hub), else None."""
    prompt_ids = np.asarray(prompt_ids)
    batch, prompt_length = prompt_ids.shape
    if len(outputs) != calls:
        raise GenerationCheckError(f"{len(outputs)} generate calls recorded, expected {calls}")
    expected = (batch, generate_length)
    for index, (token_ids, filled) in enumerate(outputs):
        token_ids = np.asarray(token_ids)
        if token_ids.shape != expected:
            raise GenerationCheckError(
                f"call {index} generated token ids of shape {token_ids.shape}, expected {expected} "
                f"({prompt_length} prompt + {generate_length - prompt_length} new tokens per sequence)"
            )
        if filled is not None and not np.asarray(filled).astype(bool).all():
            unfilled = int((~np.asarray(filled).astype(bool)).sum())
            raise GenerationCheckError(f"call {index} left {unfilled} of {token_ids.size} positions unfilled")
        if not np.array_equal(token_ids[:, :prompt_length], prompt_ids):
            raise GenerationCheckError(f"call {index} overwrote the prompt's token ids")
