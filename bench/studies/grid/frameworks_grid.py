"""Per-framework builders of the grid's columns, imported only inside the env that has the framework.

Each builder returns {column: forward}, where forward(token_ids: np.ndarray) returns the last hidden state
(a framework tensor, synced by the column's Device, or NumPy), plus facts to record (parameter counts, settings).
All load one set of weights: the folder `export_weights` wrote from the seeded PyTorch model.
"""
from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.studies.grid.spec import SEED, GridModel

Forward = Callable[[np.ndarray], Any]


def export_weights(model: GridModel, size: str, folder: Path) -> dict[str, Any]:
    """The seeded PyTorch model, saved as a transformers folder every other framework reads: config.json and
    model.safetensors (keys with the hub checkpoints' prefix, which keras-hub's converters expect)."""
    import torch
    import transformers
    from safetensors.torch import save_file

    torch.manual_seed(SEED)
    config = getattr(transformers, model.config_class)(**model.hf_config(size))
    net = getattr(transformers, model.torch_class)(config).eval()
    if model.name == "roberta":
        # roberta-base's one token type embedding is all zeros, and keras-hub's RobertaBackbone has none (its
        # converter drops it): a random one would make the twins two different models.
        with torch.no_grad():
            net.embeddings.token_type_embeddings.weight.zero_()
    folder.mkdir(parents=True, exist_ok=True)
    config.save_pretrained(folder)
    state = {model.weight_prefix + k: v.detach().contiguous() for k, v in net.state_dict().items()}
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return {"parameters": sum(p.numel() for p in net.parameters()), "config": config.to_dict()}


def torch_columns(
    model: GridModel, folder: Path, columns: list[str]
) -> tuple[dict[str, Callable[[np.ndarray], Forward]], dict[str, Any]]:
    """PyTorch eager, traced (torch.jit.trace: legacy, deprecated in torch 2.10 but working) and torch.compile,
    one model. Returns per column a factory: given a point's input it returns the forward for that input's shape
    (a trace and a compile are specialised to a shape, as the published TorchScript runs were)."""
    import torch
    import transformers

    net = getattr(transformers, model.torch_class).from_pretrained(folder).eval()
    # torch.compile with dynamic sizes from the first call (dynamic=True): one graph serves every sequence length
    # (and, after one recompile, since dynamo always specialises a size of 1, every batch above 1). The default
    # (dynamic=None) compiles the first point with static sizes and recompiles with dynamic ones at the second, so
    # the first point alone would run other kernels, at one more compile per model (12-24 s each on the 2-core CPU,
    # measured in the default grid's first run). Per-shape compiles (dynamic=False) would cost a compile per point
    # (40-130 s each), more than the whole default grid's budget. A high recompile cap all the same: at the
    # default of 8, dynamo would fall back to eager in mid-grid without failing.
    torch._dynamo.config.cache_size_limit = 256
    torch._dynamo.config.recompile_limit = 256

    class LastHidden(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids):
            return self.inner(input_ids=input_ids, return_dict=False)[0]

    wrapped = LastHidden(net).eval()
    compiled = torch.compile(wrapped, dynamic=True)
    trace_warnings: list[str] = []

    def eager(ids: np.ndarray) -> Forward:
        x = torch.from_numpy(ids)

        def forward(_):
            with torch.inference_mode():
                return wrapped(x)

        return forward

    def traced(ids: np.ndarray) -> Forward:
        x = torch.from_numpy(ids)
        with torch.inference_mode(False), torch.no_grad():
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                script = torch.jit.trace(wrapped, (x,), check_trace=False)
            # Recorded, not hidden, and never an error: the run's settings list what the trace warned.
            trace_warnings.extend(
                sorted({f"{w.category.__name__}: {str(w.message)[:200]}" for w in caught} - set(trace_warnings))
            )

        def forward(_):
            with torch.no_grad():
                return script(x)

        return forward

    def compile_(ids: np.ndarray) -> Forward:
        x = torch.from_numpy(ids)

        def forward(_):
            with torch.inference_mode():
                return compiled(x)

        return forward

    factories = {"torch-eager": eager, "torch-traced": traced, "torch-compile": compile_}
    facts = {
        "parameters": sum(p.numel() for p in net.parameters()),
        "attn_implementation": getattr(net.config, "_attn_implementation", None),
        "torch_compile": {"dynamic": True, "mode": "default"},
        "trace_warnings": trace_warnings,
        "threads": torch.get_num_threads(),
    }
    return {c: factories[c] for c in columns}, facts


def tf_columns(
    model: GridModel, folder: Path, columns: list[str]
) -> tuple[dict[str, Callable[[np.ndarray], Forward]], dict[str, Any]]:
    """transformers 4.57's TF twin, in a tf.function (as published) and with XLA (jit_compile=True)."""
    import safetensors.numpy
    import tensorflow as tf
    import transformers
    from transformers.modeling_tf_pytorch_utils import load_pytorch_state_dict_in_tf2_model

    config = transformers.AutoConfig.from_pretrained(folder)
    net = getattr(transformers, model.tf_class)(config)
    # transformers' own PyTorch -> TF loader, given the file as a dict: its from_pretrained path iterates a
    # safe_open handle, which today's safetensors no longer allows (envs/tf-transformers/pyproject.toml).
    load_pytorch_state_dict_in_tf2_model(net, safetensors.numpy.load_file(str(folder / "model.safetensors")))

    def last_hidden(x):
        return net(input_ids=x, training=False).last_hidden_state

    functions = {
        "tf-function": tf.function(last_hidden, jit_compile=False),
        "tf-xla": tf.function(last_hidden, jit_compile=True),
    }

    def factory(column: str):
        def make(ids: np.ndarray) -> Forward:
            x = tf.constant(ids)
            fn = functions[column]
            return lambda _: fn(x)

        return make

    facts = {"parameters": int(net.count_params()), "functions": functions}
    return {c: factory(c) for c in columns}, facts


def keras_inputs(model: GridModel, ids: np.ndarray) -> dict[str, np.ndarray]:
    inputs = {"token_ids": ids.astype("int32"), "padding_mask": np.ones_like(ids, dtype="int32")}
    if model.keras_class in ("BertBackbone", "XLNetBackbone"):
        inputs["segment_ids"] = np.zeros_like(ids, dtype="int32")
    return inputs


def keras_columns(
    model: GridModel, folder: Path, columns: list[str]
) -> tuple[dict[str, Callable[[np.ndarray], Forward]], dict[str, Any]]:
    """keras-hub 0.32's backbone on this env's Keras backend: the transformers weights through keras-hub's
    converter where it has one, else (XLNet) a random init whose parameter count must equal the PyTorch model's."""
    import keras
    import keras_hub

    cls = getattr(keras_hub.models, model.keras_class)
    config = json.loads((folder / "config.json").read_text())
    if model.keras_converter:
        net = cls.from_preset(str(folder), dropout=0.0)
        weights = "converted by keras-hub from the PyTorch model's model.safetensors"
    else:  # XLNet
        keras.utils.set_random_seed(SEED)
        net = cls(
            vocabulary_size=config["vocab_size"],
            num_layers=config["n_layer"],
            num_heads=config["n_head"],
            hidden_dim=config["d_model"],
            intermediate_dim=config["d_inner"],
            dropout=0.0,
        )
        weights = "random init (keras-hub has no XLNet converter); outputs not comparable, parameter count checked"

    def make(ids: np.ndarray) -> Forward:
        inputs = keras_inputs(model, ids)

        def forward(_):
            out = net.predict_on_batch(inputs)
            return out["sequence_output"] if isinstance(out, dict) else out

        return forward

    facts = {
        "parameters": int(net.count_params()),
        "weights": weights,
        "keras": keras.__version__,
        "keras_backend": keras.backend.backend(),
        "dropout": 0.0,
        "model": net,
    }
    return {c: make for c in columns}, facts


BUILDERS = {"torch": torch_columns, "tf": tf_columns, "keras": keras_columns}


def release_caches() -> None:
    """After a worker's model is dropped, before the next is built in the same process: the framework's caches of
    it (dynamo's guards and graphs, Keras's and TensorFlow's graphs, JAX's compiled executables), then the memory."""
    import gc
    import sys

    if "torch" in sys.modules:
        import torch

        torch._dynamo.reset()
    if "keras" in sys.modules:
        import keras

        keras.backend.clear_session()
    if "jax" in sys.modules:
        import jax

        jax.clear_caches()
    gc.collect()
