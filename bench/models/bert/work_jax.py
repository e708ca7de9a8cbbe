"""BERT's XLA cost-analysis checks (bench/measure/xla_counter.py): keras-hub's classifier on JAX, its predict and
its forward + backward (the loss's gradient for every weight; no optimizer), compiled by XLA."""

from __future__ import annotations

BATCH = 2


def checks(s) -> list:
    import jax
    import jax.numpy as jnp
    import keras
    import keras_hub

    from bench.models.bert.keras import build_backbone
    from bench.models.bert.work import work

    model = keras_hub.models.BertTextClassifier(
        backbone=build_backbone(keras_hub, s), num_classes=s.num_classes, preprocessor=None
    )
    x = {
        "token_ids": jnp.zeros((BATCH, s.sequence_length), "int32"),
        "segment_ids": jnp.zeros((BATCH, s.sequence_length), "int32"),
        "padding_mask": jnp.ones((BATCH, s.sequence_length), "bool"),
    }
    trainable = [v.value for v in model.trainable_variables]
    frozen = [v.value for v in model.non_trainable_variables]
    labels = jnp.zeros((BATCH,), "int32")
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def predict(trainable, frozen, x):
        return model.stateless_call(trainable, frozen, x, training=False)[0]

    def loss(trainable, frozen, x):
        return loss_fn(labels, model.stateless_call(trainable, frozen, x, training=True)[0])

    def fit(trainable, frozen, x):
        return jax.grad(loss)(trainable, frozen, x)

    return [
        (f"predict, batch {BATCH}", predict, (trainable, frozen, x), work("keras", "predict", BATCH, s).flops),
        (f"fit (forward + backward), batch {BATCH}", fit, (trainable, frozen, x), work("keras", "fit", BATCH, s).flops),
    ]
