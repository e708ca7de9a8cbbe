"""The 7B causal LMs (Gemma, Mistral) on Keras 3 / keras-hub (keras-nlp 0.8.2 on the 2024 stack, the same
backbone and *CausalLM classes): LoRA fit and greedy generate.

Both follow keras-benchmarks v0.0.5: bfloat16 weights, `backbone.enable_lora(rank=4)`, AdamW and sparse
cross-entropy from logits through `model.fit`; generate with the greedy sampler through `model.generate`.
There is no tokenizer offline, so inputs are token ids prepared in setup (outside the timed window): seeded
random ids, every position real for fit; for generate, the BOS + `prompt_length - 1` ids (what v0.0.5's
preprocessor made of its 5-word prompt, see bench/models/llm.py) padded to `generate_length`, with stop tokens
disabled so every call writes exactly `generate_length - prompt_length` new tokens per sequence.

Attention: keras-hub 0.32 routes Gemma's and Mistral's attention through the fused `ops.dot_product_attention`
(Mistral whenever the backend is JAX or torch; Gemma on a GPU/TPU), where keras-nlp 0.8.2 computed it with
einsums and a softmax. `keras.config.disable_flash_attention()` does not change that: keras-hub's
`fused_attention_op_available()` checks only that `keras.config.is_flash_attention_enabled` exists, not its
value. So with `shape.keras_fused_attention = false` (the paper shape, as published) setup also routes each
attention layer to the einsum path: Gemma's `_use_fused_attention_op()` returns False, and Mistral's module's
`fused_attention_op_available` is replaced by one returning False. `fused_attention` in the settings is what the
layers' own test answers after that (an einsum path when false). The `fused-attention` variant (bench/catalogue/variants.py)
leaves keras-hub's own choice in place: the fused path where keras-hub takes it.
"""
from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from bench.base.generate_split import split_lengths
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
from bench.models.llm import GenerationCheckError, check_generated, prompt_ids


def backbone_arguments(s) -> dict[str, Any]:
    """The keras-hub backbone arguments Gemma and Mistral share, from a CausalLMShape (transformers naming)."""
    return dict(
        vocabulary_size=s.vocabulary_size,
        num_layers=s.num_layers,
        num_query_heads=s.num_query_heads,
        num_key_value_heads=s.num_key_value_heads,
        hidden_dim=s.hidden_dim,
        head_dim=s.head_dim,
        layer_norm_epsilon=s.layer_norm_epsilon,
    )


def accepted_arguments(backbone_class, kwargs: dict[str, Any]) -> dict[str, Any]:
    """kwargs as this library's backbone takes them. keras-nlp 0.8.2's MistralBackbone (the 2024 stack) has no
    head_dim: it derives hidden_dim // num_query_heads, so head_dim is left out only where it equals that."""
    parameters = inspect.signature(backbone_class.__init__).parameters
    if "head_dim" in kwargs and "head_dim" not in parameters:  # (its **kwargs go to keras.Model, which refuses it)
        derived = kwargs["hidden_dim"] // kwargs["num_query_heads"]
        if kwargs["head_dim"] != derived:
            raise ValueError(
                f"{backbone_class.__name__} derives head_dim {derived} from hidden_dim / num_query_heads; the shape asks {kwargs['head_dim']}"
            )
        kwargs = {k: v for k, v in kwargs.items() if k != "head_dim"}
    return kwargs


def build_causal_lm(lib, backbone_class: str, task_class: str, backbone_kwargs: dict[str, Any], dtype: str):
    """The keras-hub task model with no preprocessor, its backbone in `dtype`."""
    cls = getattr(lib.models, backbone_class)
    backbone = cls(**accepted_arguments(cls, backbone_kwargs), dtype=dtype)
    return getattr(lib.models, task_class)(backbone=backbone, preprocessor=None)


def attention_layers(model) -> list:
    """The backbone's attention layers (keras-hub's *Attention layers: those with a `_compute_attention`)."""
    return [
        layer for layer in model.backbone._flatten_layers(include_self=False) if hasattr(layer, "_compute_attention")
    ]


def uses_fused_attention(layer) -> bool:
    """Whether a keras-hub attention layer calls ops.dot_product_attention, by the layer's own test: Gemma's
    `_use_fused_attention_op()`, else its module's `fused_attention_op_available()` (Mistral)."""
    test = getattr(layer, "_use_fused_attention_op", None)
    if test is None:
        test = getattr(sys.modules[type(layer).__module__], "fused_attention_op_available", lambda: False)
    return bool(test())


def disable_fused_attention(keras, layers: list) -> None:
    """Route keras-hub's attention to its einsum path (keras-nlp 0.8.2's computation); see the module docstring."""
    if hasattr(keras.config, "disable_flash_attention"):
        keras.config.disable_flash_attention()
    for layer in layers:
        if hasattr(layer, "_use_fused_attention_op"):
            type(layer)._use_fused_attention_op = lambda self: False
        else:
            module = sys.modules[type(layer).__module__]
            if hasattr(module, "fused_attention_op_available"):
                module.fused_attention_op_available = lambda: False
    still = [type(layer).__name__ for layer in layers if uses_fused_attention(layer)]
    if still:
        raise RuntimeError(f"{sorted(set(still))} still take the fused attention path")


class KerasCausalLM(KerasWorkload):
    backbone_class: str
    task_class: str
    backbone_kwargs: Callable[[Any], dict[str, Any]]

    def __init__(self, cell, shape):
        super().__init__(cell, shape)
        if self.keras_major != 3:
            raise RuntimeError(
                f"{self.task_class} needs Keras 3 (keras-hub); {cell.backend} is Keras {self.keras_major}"
            )
        self.outputs: list[Any] = []
        self.split_outputs: dict[int, Any] = {}

    @classmethod
    def parameter_counts(cls, s, keras_major: int = 3) -> dict[str, int]:
        """The backbone's parameters (the task adds none: its LM head is the backbone's embedding), built abstractly."""
        backbone_class = getattr(nlp_library(keras_major).models, cls.backbone_class)
        kwargs = accepted_arguments(backbone_class, cls.backbone_kwargs(s))
        backbone = build_abstractly(lambda: backbone_class(**kwargs, dtype=s.dtype), keras_major=keras_major)
        return {"backbone": count_weights(backbone.weights)}

    @property
    def fused_attention_asked(self) -> bool:
        """The shape's choice (paper: the einsum path, as published), or keras-hub's fused path in the
        `fused-attention` variant."""
        return self.shape.keras_fused_attention or self.cell.variant == "fused-attention"

    def setup(self) -> None:
        s, bs, keras = self.shape, self.cell.batch_size, self.keras
        lib = self.library = nlp_library(self.keras_major)  # keras-hub, or keras-nlp 0.8.2 on the 2024 stack
        # A global policy, as v0.0.5 (`keras.config.set_dtype_policy("bfloat16")`) and the 2024 tuning study
        # (`mixed_bfloat16`) set it: the LoRA kernels, logits and loss take it too. Process-global, and a cell is a process.
        keras.config.set_dtype_policy(s.dtype)
        self.model = build_causal_lm(lib, self.backbone_class, self.task_class, type(self).backbone_kwargs(s), s.dtype)
        assert_keras_major(self.model, self.keras_major)
        if not self.fused_attention_asked:
            disable_fused_attention(keras, attention_layers(self.model))
        r = rng()
        if self.cell.task == "fit":
            self.model.backbone.enable_lora(rank=s.lora_rank)
            optimizer = keras.optimizers.SGD if s.optimizer == "sgd" else keras.optimizers.AdamW
            self.model.compile(
                optimizer=optimizer(learning_rate=s.learning_rate),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                jit_compile=reference_jit_compile(self.cell),
            )
            ids = r.integers(1, s.vocabulary_size, (bs, s.fit_sequence_length + 1), dtype="int32")
            inputs = {"token_ids": ids[:, :-1], "padding_mask": np.ones((bs, s.fit_sequence_length), dtype=bool)}
            self.data = repeated_batch(inputs, ids[:, 1:])  # next-token targets
        else:
            self.model.compile(sampler="greedy", jit_compile=reference_jit_compile(self.cell))
            self.prompt_ids = prompt_ids(s, bs, 1, r)  # BOS + prompt_length - 1 ids
            token_ids = np.zeros((bs, s.generate_length), dtype="int32")
            token_ids[:, : s.prompt_length] = self.prompt_ids
            padding_mask = np.zeros((bs, s.generate_length), dtype=bool)
            padding_mask[:, : s.prompt_length] = True
            self.inputs = {"token_ids": token_ids, "padding_mask": padding_mask}
            self.split_inputs = self.split_call_inputs(token_ids, r)
            self.no_stop_tokens = (
                {"stop_token_ids": None}
                if "stop_token_ids" in inspect.signature(self.model.generate).parameters
                else {}
            )

    def step(self) -> Any:
        # One generate call; the first (untimed as a steady-state figure) traces and compiles the generate function,
        # which keras-hub caches on the model, so later calls reuse it. Its outputs are NumPy: the call is synchronous.
        # keras-nlp 0.8.2 (the 2024 stack) has no stop_token_ids: without a preprocessor it has no end token to stop at
        output = self.model.generate(dict(self.inputs), **self.no_stop_tokens)
        self.outputs.append(output)
        return output

    def split_call_inputs(self, token_ids: np.ndarray, r) -> dict[int, dict[str, np.ndarray]]:
        """The one-token and partial calls' inputs (bench/base/generate_split.py): k new tokens on the same
        `generate_length` positions, the prompt taken to `generate_length - k` real ids (the whole call's prompt,
        then seeded ids). keras-hub's prefill (`_build_cache`) computes every position of the padded input whatever
        the prompt, and its sampler writes from the first unmasked position to the end, so each such call runs
        the whole call's prefill and its first k decode steps over the same cache; made here, outside any window."""
        s, bs = self.shape, self.cell.batch_size
        out = {}
        for tokens in split_lengths(s.new_tokens):
            prompt = s.generate_length - tokens
            ids = token_ids.copy()
            filler = r.integers(1, s.vocabulary_size, (bs, prompt - s.prompt_length), dtype="int32")
            ids[:, s.prompt_length : prompt] = filler
            mask = np.zeros((bs, s.generate_length), dtype=bool)
            mask[:, :prompt] = True
            out[tokens] = {"token_ids": ids, "padding_mask": mask}
        return out

    def generate(self, new_tokens: int) -> Any:
        output = self.model.generate(dict(self.split_inputs[new_tokens]), **self.no_stop_tokens)
        self.split_outputs[new_tokens] = output  # the last of each kind, checked after the run
        return output

    def generate_work(self) -> dict[str, Any]:
        s = self.shape
        return {
            "prompt_tokens": s.prompt_length,
            # keras-hub packs the prompt to the full length and computes all of it
            "prefill_positions": s.generate_length,
            # the sampler's first step recomputes the last prompt position: n decode steps for n new tokens
            "decode_steps_per_call": s.new_tokens,
            "decode_attends_over": [s.generate_length] * s.new_tokens,  # the cache is the whole padded length
            "split_calls": "same padded length, the prompt taken to generate_length - k real ids: "
            "the whole call's prefill + its first k decode steps",
        }

    def check(self) -> None:
        if self.cell.task != "generate":
            return
        for tokens, output in self.split_outputs.items():
            ids = np.asarray(output["token_ids"])
            filled = np.asarray(output["padding_mask"]).all()
            if ids.shape != (self.cell.batch_size, self.shape.generate_length) or not filled:
                raise GenerationCheckError(f"the {tokens}-new-token call returned {ids.shape} token ids, unfilled ones")
            if not np.array_equal(ids[:, : self.shape.prompt_length], self.prompt_ids):
                raise GenerationCheckError(f"the {tokens}-new-token call overwrote the prompt's token ids")
        for output in self.outputs:
            if not isinstance(output, dict) or not {"token_ids", "padding_mask"} <= set(output):
                raise GenerationCheckError(
                    f"generate returned {type(output).__name__}, not a dict of token_ids and padding_mask"
                )
        calls = [(output["token_ids"], output["padding_mask"]) for output in self.outputs]
        check_generated(calls, self.prompt_ids, self.shape.generate_length, self.steps_run)

    def settings(self) -> dict[str, Any]:
        s, model = self.shape, self.model
        out = {
            **super().settings(),
            "dtype": s.dtype,
            "global_dtype_policy": self.keras.config.dtype_policy().name,
            "backbone_dtype_policy": model.backbone.dtype_policy.name,
            # what the weights are: keras-nlp 0.8.2 (the 2024 stack) gives `dtype` to the backbone's layers but not to
            # the backbone itself, whose policy is then the global float32
            "parameter_dtypes": sorted({str(v.dtype) for v in model.backbone.weights}),
            "keras_fused_attention": s.keras_fused_attention,
            "variant": self.cell.variant,
            "fused_attention_asked": self.fused_attention_asked,
            "fused_attention": any(uses_fused_attention(layer) for layer in attention_layers(model)),
            # None: this Keras has no flash-attention switch (Keras 3.0.5, the 2024 stack)
            "flash_attention_enabled": getattr(self.keras.config, "is_flash_attention_enabled", lambda: None)(),
            "library_versions": library_versions(self.library),
        }
        if self.cell.task == "fit":
            out.update(
                lora_rank=s.lora_rank,
                trainable_parameters=count_weights(model.trainable_weights),
                fit_sequence_length=s.fit_sequence_length,
                optimizer="SGD" if s.optimizer == "sgd" else "AdamW",
                learning_rate=s.learning_rate,
            )
        else:
            out.update(
                sampler="greedy",
                stop_token_ids=None,
                prompt_length=s.prompt_length,
                bos_token_id=s.bos_token_id,
                generate_length=s.generate_length,
                new_tokens_per_sequence=s.new_tokens,
            )
        return out
