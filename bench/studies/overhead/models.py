"""The study's two models in each column's framework, from one set of seeded NumPy weights (runs inside an env).

Weights are made once in NumPy (`weights(size)`, Keras/JAX layouts: kernels (in, out), convolutions HWIO) and
loaded into every column, so every column computes the same function on the same input; the orchestrator
compares their outputs. Pure PyTorch and pure JAX are written out by hand (JAX without Flax: `jax.numpy` and
`lax`, which is what "pure JAX" runs under any library); Keras is the issue's functional model (Conv2D, Dense,
LayerNormalization, MultiHeadAttention with a causal mask, Dense with GELU). GELU is the exact one everywhere
(`jax.nn.gelu` defaults to the tanh approximation; it is told not to).

`callables(env, size)` returns, per (benchmark, column) of that env, a function of no arguments that runs one
call and returns its output: what the worker times.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from bench.studies.overhead.spec import BENCHMARKS, COLUMNS, LAYER_NORM_EPSILON, SEED, Size


def weights(size: Size) -> dict[str, np.ndarray]:
    """Seeded float32 weights of both models (names are the layers'), kernels scaled by 1/sqrt(fan-in)."""
    rng = np.random.default_rng(SEED)

    def kernel(*shape):
        fan_in = int(np.prod(shape[:-1]))
        return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype("float32")

    def bias(n):
        return (0.01 * rng.standard_normal(n)).astype("float32")

    w: dict[str, np.ndarray] = {}
    cin = 3
    for i, cout in enumerate(size.channels):
        w[f"conv{i}_kernel"], w[f"conv{i}_bias"] = kernel(3, 3, cin, cout), bias(cout)
        cin = cout
    w["cnn_dense_kernel"], w["cnn_dense_bias"] = kernel(cin, size.classes), bias(size.classes)
    h = size.hidden
    w["embedding"] = rng.standard_normal((size.vocabulary, h)).astype("float32")
    for layer in range(size.layers):
        p = f"block{layer}_"
        for ln in ("ln1", "ln2"):
            w[p + ln + "_gamma"], w[p + ln + "_beta"] = np.ones(h, "float32"), np.zeros(h, "float32")
        for name in ("q", "k", "v", "o"):
            w[p + name + "_kernel"], w[p + name + "_bias"] = kernel(h, h), bias(h)
        w[p + "ff1_kernel"], w[p + "ff1_bias"] = kernel(h, 4 * h), bias(4 * h)
        w[p + "ff2_kernel"], w[p + "ff2_bias"] = kernel(4 * h, h), bias(h)
    w["ln_gamma"], w["ln_beta"] = np.ones(h, "float32"), np.zeros(h, "float32")
    w["head_kernel"], w["head_bias"] = kernel(h, size.vocabulary), bias(size.vocabulary)
    return w


def inputs(size: Size) -> tuple[np.ndarray, np.ndarray]:
    """(images NHWC float32, token ids int32), seeded."""
    rng = np.random.default_rng([SEED, 1])
    images = rng.standard_normal((size.batch, size.image_size, size.image_size, 3)).astype("float32")
    ids = rng.integers(0, size.vocabulary, (size.batch, size.sequence), dtype="int32")
    return images, ids


def parameter_counts(size: Size) -> dict[str, int]:
    w = weights(size)
    return {
        model: int(sum(v.size for k, v in w.items() if k.startswith(("conv", "cnn_")) == (model == "cnn")))
        for model in ("cnn", "llm")
    }


# -- pure PyTorch
def torch_models(size: Size):
    import torch
    import torch.nn.functional as F

    w = {k: torch.from_numpy(v) for k, v in weights(size).items()}
    heads, d = size.heads, size.hidden // size.heads

    class CNN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.convs = torch.nn.ModuleList()
            for i in range(len(size.channels)):
                kernel = w[f"conv{i}_kernel"]
                conv = torch.nn.Conv2d(kernel.shape[2], kernel.shape[3], 3, padding=1)
                conv.weight.data = kernel.permute(3, 2, 0, 1).contiguous()  # HWIO -> OIHW
                conv.bias.data = w[f"conv{i}_bias"]
                self.convs.append(conv)
            self.dense = linear(w["cnn_dense_kernel"], w["cnn_dense_bias"])

        def forward(self, x):  # x: NCHW
            x = F.relu(self.convs[0](x))
            x = F.relu(self.convs[1](x))
            x = F.max_pool2d(x, 2)
            x = F.relu(self.convs[2](x))
            return self.dense(x.mean(dim=(2, 3)))

    def linear(kernel, b):
        layer = torch.nn.Linear(kernel.shape[0], kernel.shape[1])
        layer.weight.data, layer.bias.data = kernel.T.contiguous(), b
        return layer

    def norm(prefix):
        layer = torch.nn.LayerNorm(size.hidden, eps=LAYER_NORM_EPSILON)
        layer.weight.data, layer.bias.data = w[prefix + "_gamma"], w[prefix + "_beta"]
        return layer

    class Block(torch.nn.Module):
        def __init__(self, p):
            super().__init__()
            self.ln1, self.ln2 = norm(p + "ln1"), norm(p + "ln2")
            self.q, self.k, self.v, self.o = (linear(w[p + n + "_kernel"], w[p + n + "_bias"]) for n in "qkvo")
            self.ff1, self.ff2 = (
                linear(w[p + "ff1_kernel"], w[p + "ff1_bias"]),
                linear(w[p + "ff2_kernel"], w[p + "ff2_bias"]),
            )

        def forward(self, x):
            b, t, _ = x.shape
            h = self.ln1(x)
            q, k, v = (f(h).reshape(b, t, heads, d).transpose(1, 2) for f in (self.q, self.k, self.v))
            scores = q @ k.transpose(-1, -2) / d**0.5
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
            attention = torch.softmax(scores.masked_fill(~mask, -1e9), dim=-1) @ v
            x = x + self.o(attention.transpose(1, 2).reshape(b, t, heads * d))
            return x + self.ff2(F.gelu(self.ff1(self.ln2(x))))

    class LLM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = torch.nn.Embedding.from_pretrained(w["embedding"])
            self.blocks = torch.nn.ModuleList(Block(f"block{i}_") for i in range(size.layers))
            self.ln = norm("ln")
            self.head = linear(w["head_kernel"], w["head_bias"])

        def forward(self, ids):
            x = self.embedding(ids)
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln(x))

    return CNN().eval(), LLM().eval()


def generate_loop(forward, argmax, concatenate, new_tokens: int):
    """The issue's generate: each new token re-runs the whole forward over the last `sequence` ids (no cache)."""

    def generate(ids):
        for _ in range(new_tokens):
            following = argmax(forward(ids)[:, -1, :])
            ids = concatenate(ids[:, 1:], following[:, None])
        return ids

    return generate


def torch_callables(size: Size, columns: list[str]) -> dict[tuple[str, str], Callable[[], Any]]:
    import torch

    images_np, ids_np = inputs(size)
    images, ids = torch.from_numpy(images_np), torch.from_numpy(ids_np).long()
    out: dict[tuple[str, str], Callable[[], Any]] = {}

    def no_grad(fn, *args):
        def call():
            with torch.no_grad():
                return fn(*args)

        return call

    def torch_argmax(logits):
        return logits.argmax(-1)

    for column in columns:
        spec = COLUMNS[column]
        if not spec.keras:
            cnn, llm = torch_models(size)
            nchw = images.permute(0, 3, 1, 2).contiguous()
            generate = generate_loop(llm, torch_argmax, lambda a, b: torch.cat([a, b], 1), size.new_tokens)
            fns = (cnn, llm, generate)
            args = (nchw, ids, ids)
        else:
            cnn, llm = keras_models(size)
            generate = keras_generate(llm, size)
            fns = (lambda x, m=cnn: m(x, training=False), lambda x, m=llm: m(x, training=False), generate)
            args = (images, ids.int(), ids.int())
        if spec.compiled:
            fns = tuple(torch.compile(fn) for fn in fns)
        for name, fn, arg in zip(BENCHMARKS, fns, args, strict=True):
            out[(name, column)] = no_grad(fn, arg)
    return out


# -- Keras 3 (either backend)
def keras_models(size: Size):
    import keras
    from keras import layers

    w = weights(size)
    image = keras.Input((size.image_size, size.image_size, 3))
    x = image
    convs = [layers.Conv2D(c, 3, padding="same", activation="relu") for c in size.channels]
    x = convs[1](convs[0](x))
    x = layers.MaxPooling2D()(x)
    x = layers.GlobalAveragePooling2D()(convs[2](x))
    dense = layers.Dense(size.classes)
    cnn = keras.Model(image, dense(x))
    for i, conv in enumerate(convs):
        conv.set_weights([w[f"conv{i}_kernel"], w[f"conv{i}_bias"]])
    dense.set_weights([w["cnn_dense_kernel"], w["cnn_dense_bias"]])

    h, heads, d = size.hidden, size.heads, size.hidden // size.heads
    ids = keras.Input((None,), dtype="int32")
    embedding = layers.Embedding(size.vocabulary, h)
    x = embedding(ids)
    loaded = [(embedding, [w["embedding"]])]
    for i in range(size.layers):
        p = f"block{i}_"
        ln1, ln2 = (layers.LayerNormalization(epsilon=LAYER_NORM_EPSILON) for _ in range(2))
        attention = layers.MultiHeadAttention(heads, d)
        ff1, ff2 = layers.Dense(4 * h, activation="gelu"), layers.Dense(h)
        y = ln1(x)
        x = x + attention(y, y, use_causal_mask=True)
        x = x + ff2(ff1(ln2(x)))
        loaded += [
            (ln1, [w[p + "ln1_gamma"], w[p + "ln1_beta"]]),
            (ln2, [w[p + "ln2_gamma"], w[p + "ln2_beta"]]),
            (ff1, [w[p + "ff1_kernel"], w[p + "ff1_bias"]]),
            (ff2, [w[p + "ff2_kernel"], w[p + "ff2_bias"]]),
            # MultiHeadAttention's order: query, key, value kernels/biases (h, heads, d), then output (heads, d, h)
            (
                attention,
                [
                    a
                    for n in "qkv"
                    for a in (w[p + n + "_kernel"].reshape(h, heads, d), w[p + n + "_bias"].reshape(heads, d))
                ]
                + [w[p + "o_kernel"].reshape(heads, d, h), w[p + "o_bias"]],
            ),
        ]
    ln, head = layers.LayerNormalization(epsilon=LAYER_NORM_EPSILON), layers.Dense(size.vocabulary)
    llm = keras.Model(ids, head(ln(x)))
    for layer, values in loaded + [(ln, [w["ln_gamma"], w["ln_beta"]]), (head, [w["head_kernel"], w["head_bias"]])]:
        layer.set_weights(values)
    return cnn, llm


def keras_generate(llm, size: Size):
    from keras import ops

    return generate_loop(
        lambda x: llm(x, training=False),
        lambda logits: ops.cast(ops.argmax(logits, axis=-1), "int32"),
        lambda a, b: ops.concatenate([a, b], axis=1),
        size.new_tokens,
    )


# -- pure JAX
def jax_functions(size: Size):
    import jax
    import jax.numpy as jnp
    from jax import lax

    p = {k: jnp.asarray(v) for k, v in weights(size).items()}
    heads, d = size.heads, size.hidden // size.heads

    def layer_norm(x, prefix):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / jnp.sqrt(var + LAYER_NORM_EPSILON) * p[prefix + "_gamma"] + p[prefix + "_beta"]

    def dense(x, prefix):
        return x @ p[prefix + "_kernel"] + p[prefix + "_bias"]

    def cnn(x):
        for i in range(len(size.channels)):
            x = lax.conv_general_dilated(
                x, p[f"conv{i}_kernel"], (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
            )
            x = jax.nn.relu(x + p[f"conv{i}_bias"])
            if i == 1:
                x = lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        return dense(x.mean(axis=(1, 2)), "cnn_dense")

    def llm(ids):
        x = p["embedding"][ids]
        b, t, _ = x.shape
        mask = jnp.tril(jnp.ones((t, t), dtype=bool))
        for i in range(size.layers):
            pre = f"block{i}_"
            h = layer_norm(x, pre + "ln1")
            q, k, v = (dense(h, pre + n).reshape(b, t, heads, d).transpose(0, 2, 1, 3) for n in "qkv")
            scores = jnp.where(mask, q @ k.transpose(0, 1, 3, 2) / d**0.5, -1e9)
            attention = jax.nn.softmax(scores, axis=-1) @ v
            x = x + dense(attention.transpose(0, 2, 1, 3).reshape(b, t, heads * d), pre + "o")
            x = x + dense(jax.nn.gelu(dense(layer_norm(x, pre + "ln2"), pre + "ff1"), approximate=False), pre + "ff2")
        return dense(layer_norm(x, "ln"), "head")

    return cnn, llm


def scan_generate(forward, new_tokens: int):
    """generate as one jax.jit of a lax.scan over the same body (the issue's jit column)."""
    import jax
    import jax.numpy as jnp

    def body(ids, _):
        following = jnp.argmax(forward(ids)[:, -1, :], axis=-1).astype(ids.dtype)
        return jnp.concatenate([ids[:, 1:], following[:, None]], axis=1), None

    return jax.jit(lambda ids: jax.lax.scan(body, ids, None, length=new_tokens)[0])


def jax_callables(size: Size, columns: list[str]) -> dict[tuple[str, str], Callable[[], Any]]:
    import jax
    import jax.numpy as jnp

    images_np, ids_np = inputs(size)
    images, ids = jnp.asarray(images_np), jnp.asarray(ids_np)
    out: dict[tuple[str, str], Callable[[], Any]] = {}
    for column in columns:
        spec = COLUMNS[column]
        if spec.keras:
            cnn_model, llm_model = keras_models(size)
            cnn, llm = (lambda x, m=cnn_model: m(x, training=False)), (lambda x, m=llm_model: m(x, training=False))
        else:
            cnn, llm = jax_functions(size)
        if spec.compiled:
            fns = (jax.jit(cnn), jax.jit(llm), scan_generate(llm, size.new_tokens))
        else:
            fns = (cnn, llm, generate_loop(llm, lambda logits: jnp.argmax(logits, axis=-1).astype(ids.dtype),
                                           lambda a, b: jnp.concatenate([a, b], axis=1), size.new_tokens))
        for name, fn, arg in zip(BENCHMARKS, fns, (images, ids, ids), strict=True):
            out[(name, column)] = lambda fn=fn, arg=arg: fn(arg)
    return out


def callables(env: str, size: Size, columns: list[str]) -> dict[tuple[str, str], Callable[[], Any]]:
    return torch_callables(size, columns) if env == "torch" else jax_callables(size, columns)
