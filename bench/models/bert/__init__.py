"""BERT base (cased): text classification, fit at batch 32 and predict at batch 256, sequence length 512."""
from __future__ import annotations

from dataclasses import dataclass

from bench.catalogue.spec import fit_task, load_model_spec, positive_fields, predict_task


@dataclass(frozen=True)
class BertShape:
    vocabulary_size: int
    num_layers: int
    num_heads: int
    hidden_dim: int
    intermediate_dim: int
    max_sequence_length: int
    sequence_length: int
    num_classes: int
    learning_rate: float
    # Native PyTorch: transformers' attn_implementation. "eager" is transformers 4.38.2's only BERT attention (the
    # published one); "sdpa" would be a separate variant.
    attention_implementation: str

    def __post_init__(self) -> None:
        positive_fields(self)
        if self.attention_implementation not in ("eager", "sdpa", "flash_attention_2"):
            raise ValueError(
                f"attention_implementation {self.attention_implementation!r} is not one transformers' BERT has"
            )
        if self.sequence_length > self.max_sequence_length:
            raise ValueError("sequence_length exceeds max_sequence_length")
        if self.hidden_dim % self.num_heads:
            raise ValueError("hidden_dim must be a multiple of num_heads")


def paper_settings(cell, shape: BertShape) -> dict:
    """What a BERT run must record (the fidelity checks): the attention v0.0.5 ran and whether it asked for XLA."""
    if cell.backend == "native-torch":  # transformers' eager attention, as published; the sdpa variant's own
        return {"attention_implementation": "sdpa" if cell.variant == "sdpa" else shape.attention_implementation}
    return {"jit_compile": cell.backend != "torch"}  # v0.0.5 asked for XLA (use_jit()) except on Keras 3's torch


SPEC = load_model_spec(
    "bert", "BERT", BertShape, tasks=[fit_task(native="trainer"), predict_task()], paper_settings=paper_settings
)
