"""The tiny MLP on Keras (2 and 3): fit and predict through Keras's own loops (the keras-fit and keras-predict
drivers)."""

from __future__ import annotations

from typing import Any

from bench.models.keras_common import KerasWorkload, reference_jit_compile, repeated_batch, rng


def build_model(keras, s):
    inputs = keras.Input((s.features,))
    x = inputs
    for _ in range(s.layers):
        x = keras.layers.Dense(s.hidden, activation="relu")(x)
    return keras.Model(inputs, keras.layers.Dense(s.classes)(x))


def parameter_counts(s, keras_major: int = 3) -> dict[str, int]:
    """Counted without memory (the plan's probe): every variable deferred."""
    from bench.models.keras_common import build_abstractly, count_weights, keras_module

    keras = keras_module(keras_major)
    return {
        "classifier": count_weights(build_abstractly(lambda: build_model(keras, s), keras_major=keras_major).weights)
    }


class TinyMlpKeras(KerasWorkload):
    def setup(self) -> None:
        s, bs, keras = self.shape, self.cell.batch_size, self.keras
        self.model = build_model(keras, s)
        self.model.compile(
            optimizer=keras.optimizers.Adam(learning_rate=s.learning_rate),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            jit_compile=reference_jit_compile(self.cell),
        )
        r = rng()
        features = r.standard_normal((bs, s.features), dtype="float32")
        self.data = (
            repeated_batch(features, r.integers(0, s.classes, (bs,)))
            if self.cell.task == "fit"
            else repeated_batch(features)
        )

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "optimizer": "Adam"}


def create(cell, shape) -> TinyMlpKeras:
    return TinyMlpKeras(cell, shape)
