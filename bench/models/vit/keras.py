"""ViT-Base/16 on Keras 3, in keras layers (keras-hub's ViTBackbone differs: it has a class token and no global
average pooling), trained with `fit` and run with `predict`.

Variants (bench/catalogue/variants.py): `sdpa` (torch backend) swaps every MultiHeadAttention for
SDPAMultiHeadAttention, whose `_compute_attention` calls torch's scaled_dot_product_attention, as the study did;
`attention-dropout-0` builds the attention with dropout 0, so that Keras's own MultiHeadAttention takes
ops.dot_product_attention (it does only without dropout); `matmul-high` runs torch's float32 matmuls at 'high' (set for
every model by the cell process, bench/measure/frameworks.py); `loader-workers-N` feeds fit/predict from a torch
DataLoader of random tensors with N workers (the study's data; the reference variant feeds one in-memory batch,
repeated, as every other Keras workload here does).
"""
from __future__ import annotations

from typing import Any

from bench.catalogue import variants
from bench.models.keras_common import KerasWorkload, assert_keras_major, reference_jit_compile, repeated_batch, rng
from bench.models.vit import RandomImages


def sdpa_attention_class(keras):
    """keras.layers.MultiHeadAttention computing its attention with torch's scaled_dot_product_attention (the
    study's one-line tuning; torch backend only). Query, key and value arrive projected, (B, T, N, H); SDPA wants
    (B, N, T, H) and scales by 1/sqrt(H) itself, as Keras's einsum path does."""

    class SDPAMultiHeadAttention(keras.layers.MultiHeadAttention):
        def _compute_attention(
            self,
            query,
            key,
            value,
            attention_mask=None,
            training=None,
            return_attention_scores=False,
            use_causal_mask=False,
        ):
            import torch
            from torch.nn.functional import scaled_dot_product_attention

            if return_attention_scores or attention_mask is not None or use_causal_mask:
                raise NotImplementedError(
                    "SDPAMultiHeadAttention computes unmasked attention without its scores (ViT's)"
                )
            q, k, v = (torch.transpose(t, 1, 2) for t in (query, key, value))
            out = scaled_dot_product_attention(q, k, v, dropout_p=self._dropout if training else 0.0)
            return torch.transpose(out, 1, 2), None

    return SDPAMultiHeadAttention


def build_model(keras, s, attention_class=None, attention_dropout: float | None = None):
    """The classifier as a functional model: patches by a strided convolution, learned position embeddings,
    pre-norm encoder blocks, a final layer norm, global average pooling, dropout and the dense head (logits)."""
    layers = keras.layers
    attention_class = attention_class or layers.MultiHeadAttention
    dropout = s.attention_dropout if attention_dropout is None else attention_dropout
    images = keras.Input((s.image_size, s.image_size, s.channels))
    x = layers.Conv2D(s.hidden_dim, s.patch_size, strides=s.patch_size, name="patch_embedding")(images)
    x = layers.Reshape((s.patches, s.hidden_dim))(x)
    x = PositionEmbedding(keras)(x)
    for i in range(s.num_layers):
        y = layers.LayerNormalization(epsilon=s.layer_norm_epsilon)(x)
        y = attention_class(s.num_heads, s.head_dim, dropout=dropout, name=f"attention_{i}")(y, y)
        x = layers.Add()([x, y])
        y = layers.LayerNormalization(epsilon=s.layer_norm_epsilon)(x)
        y = layers.Dense(s.mlp_dim, activation="gelu")(y)
        y = layers.Dropout(s.mlp_dropout)(y)
        y = layers.Dense(s.hidden_dim)(y)
        y = layers.Dropout(s.mlp_dropout)(y)
        x = layers.Add()([x, y])
    x = layers.LayerNormalization(epsilon=s.layer_norm_epsilon)(x)
    x = layers.GlobalAveragePooling1D()(x)
    x = layers.Dropout(s.head_dropout)(x)
    logits = layers.Dense(s.num_classes, dtype="float32", name="head")(x)  # float32 logits under mixed precision
    return keras.Model(images, logits, name="vit")


def PositionEmbedding(keras):
    class PositionEmbedding(keras.layers.Layer):
        """One learned vector per patch position, added to the patch embeddings."""

        def build(self, input_shape):
            self.embedding = self.add_weight(
                shape=tuple(input_shape[1:]), initializer=keras.initializers.RandomNormal(stddev=0.02), name="embedding"
            )

        def call(self, x):
            return x + keras.ops.cast(self.embedding, x.dtype)

    return PositionEmbedding()


def parameter_counts(s, keras_major: int = 3) -> dict[str, int]:
    from bench.models.keras_common import build_abstractly, count_weights, keras_module

    keras = keras_module(keras_major)
    model = build_abstractly(lambda: build_model(keras, s), keras_major=keras_major)
    return {"classifier": count_weights(model.weights)}


def torch_loader(dataset, batch_size: int, workers: int):
    """A torch DataLoader over a map-style dataset (anything with __getitem__ and __len__)."""
    import torch

    return torch.utils.data.DataLoader(
        dataset, batch_size=batch_size, num_workers=workers, drop_last=True, persistent_workers=workers > 0
    )


class ViTKeras(KerasWorkload):
    def setup(self) -> None:
        s, bs, keras, variant = self.shape, self.cell.batch_size, self.keras, self.cell.variant
        keras.mixed_precision.set_dtype_policy(s.dtype)
        attention_class = sdpa_attention_class(keras) if variant == "sdpa" else None
        self.model = build_model(keras, s, attention_class, 0.0 if variant == "attention-dropout-0" else None)
        assert_keras_major(self.model, 3)
        self.model.compile(
            optimizer=keras.optimizers.SGD(learning_rate=s.learning_rate),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            jit_compile=reference_jit_compile(self.cell),
        )
        self.loader_workers = variants.loader_workers(variant)
        if self.loader_workers is None:
            r = rng()
            images = r.standard_normal((bs, s.image_size, s.image_size, s.channels), dtype="float32")
            labels = r.integers(0, s.num_classes, (bs,), dtype="int64")
            self.data = repeated_batch(images, labels) if self.cell.task == "fit" else repeated_batch(images)
        else:
            steps = self.cell.window_plan().max_steps
            self.data = torch_loader(RandomImages(s, bs * (steps + 1), channels_last=True), bs, self.loader_workers)

    def settings(self) -> dict[str, Any]:
        out = {
            **super().settings(),
            "variant": self.cell.variant,
            "optimizer": "SGD",
            "data": "in-memory batch (tf.data, repeated)"
            if self.loader_workers is None
            else f"torch DataLoader, {self.loader_workers} workers",
            "loader_workers": self.loader_workers,
            "attention_class": type(self.model.get_layer("attention_0")).__name__,
            "attention_dropout": float(self.model.get_layer("attention_0").dropout),
        }
        if self.cell.backend == "torch":
            import torch

            out["float32_matmul_precision"] = torch.get_float32_matmul_precision()
        return out


def create(cell, shape) -> ViTKeras:
    return ViTKeras(cell, shape)
