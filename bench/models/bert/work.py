"""BERT's work rule (bench/catalogue/work.py): an encoder classifier, float32, every parameter trained by fit."""

from __future__ import annotations

from bench.catalogue.work import FIT_UPDATE_BYTES_PER_TRAINED, Work, dense_flops, encoder_layer_flops


def parameters(s) -> int:
    """The classifier's parameters: embeddings (word, position, 2 token types, their norm), the layers, the pooler
    and the 2-class head (what the plan counts as native's `classifier`)."""
    h, i = s.hidden_dim, s.intermediate_dim
    embeddings = (s.vocabulary_size + s.max_sequence_length + 2) * h + 2 * h
    layer = 4 * (h * h + h) + (h * i + i) + (i * h + h) + 2 * 2 * h
    return embeddings + s.num_layers * layer + (h * h + h) + (h * s.num_classes + s.num_classes)


def forward_flops(batch: int, s) -> float:
    tokens = batch * s.sequence_length
    layers = s.num_layers * encoder_layer_flops(
        tokens, s.sequence_length, s.hidden_dim, s.intermediate_dim, s.num_heads
    )
    return layers + dense_flops(batch, s.hidden_dim, s.hidden_dim) + dense_flops(batch, s.hidden_dim, s.num_classes)


def work(family: str, task: str, batch: int, s) -> Work:
    weights = parameters(s)
    streamed = weights - (s.vocabulary_size + s.max_sequence_length + 2) * s.hidden_dim  # the tables are looked up
    if task == "fit":
        return Work(
            3 * forward_flops(batch, s),
            streamed * 4 + weights * FIT_UPDATE_BYTES_PER_TRAINED,
            "float32",
            "encoder fit: 3 x the forward (every weight trains)",
        )
    return Work(forward_flops(batch, s), streamed * 4, "float32", "encoder forward")
