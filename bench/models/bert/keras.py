"""BERT on Keras: keras-hub BertTextClassifier (Keras 3) or keras-nlp BertClassifier (Keras 2, and Keras 3 on the
2024 stack, whose keras-nlp 0.8.2 predates keras-hub)."""
from __future__ import annotations

from bench.models.keras_common import (
    KerasWorkload,
    assert_keras_major,
    build_abstractly,
    count_weights,
    library_versions,
    nlp_library,
    reference_jit_compile,
    repeated_batch,
    rng,
)


def build_backbone(lib, s):
    """BertBackbone (bert_base_en at the paper shape) from keras-hub, or keras-nlp on Keras 2."""
    return lib.models.BertBackbone(
        vocabulary_size=s.vocabulary_size,
        num_layers=s.num_layers,
        num_heads=s.num_heads,
        hidden_dim=s.hidden_dim,
        intermediate_dim=s.intermediate_dim,
        max_sequence_length=s.max_sequence_length,
    )


def parameter_counts(s, keras_major: int = 3) -> dict[str, int]:
    backbone = build_abstractly(build_backbone, nlp_library(keras_major), s, keras_major=keras_major)
    return {"backbone": count_weights(backbone.weights)}


class BertKeras(KerasWorkload):
    def setup(self) -> None:
        s, bs, keras = self.shape, self.cell.batch_size, self.keras
        lib = self.library = nlp_library(self.keras_major)
        backbone = build_backbone(lib, s)
        classifier = getattr(lib.models, "BertTextClassifier", None) or lib.models.BertClassifier
        self.model = classifier(backbone=backbone, num_classes=s.num_classes, preprocessor=None)
        assert_keras_major(self.model, self.keras_major)
        r = rng()
        inputs = {
            "token_ids": r.integers(0, s.vocabulary_size, (bs, s.sequence_length), dtype="int32"),
            "segment_ids": (r.random((bs, s.sequence_length)) < 0.5).astype("int32"),
            "padding_mask": r.random((bs, s.sequence_length)) >= 0.0,  # every position is a real token
        }
        if self.cell.task == "fit":
            self.model.compile(
                optimizer=keras.optimizers.AdamW(learning_rate=s.learning_rate),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                jit_compile=reference_jit_compile(self.cell),  # as v0.0.5 asked (use_jit()), not Keras's "auto"
            )
            self.data = repeated_batch(inputs, r.integers(0, s.num_classes, (bs,), dtype="int32"))
        else:
            self.model.compile(jit_compile=reference_jit_compile(self.cell))
            self.data = repeated_batch(inputs)

    def settings(self):
        return {**super().settings(), "sequence_length": self.shape.sequence_length,
                "library_versions": library_versions(self.library)}


def create(cell, shape) -> BertKeras:
    return BertKeras(cell, shape)
