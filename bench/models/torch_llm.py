"""The 7B causal LMs (Gemma, Mistral) in plain PyTorch: transformers *ForCausalLM, peft LoRA fit, greedy generate.

As keras-benchmarks v0.0.5's torch scripts: the model in bfloat16 (the reference's `torch_dtype=bfloat16`),
`peft.LoraConfig(r=4)` + `get_peft_model` and the transformers Trainer for fit (causal-LM labels = the input
ids; the model shifts them), `model.generate` for generate. Models are built from a config derived from the
shared CausalLMShape with random weights (nothing downloaded); there is no tokenizer offline, so inputs are
seeded random token ids, every position real.

LoRA: rank `shape.lora_rank`; everything else is peft's LoraConfig default, as the reference's `LoraConfig(r=4)`:
lora_alpha 8 (scale alpha/r = 2), dropout 0, no bias, adapters on q_proj and v_proj (peft's default targets for
gemma and mistral, named explicitly here). Adapter weights in bfloat16, the base's dtype, as peft 0.9.0 (the
reference's) created them: newer peft upcasts adapters to float32 by default (get_peft_model's
autocast_adapter_dtype=True), so this passes autocast_adapter_dtype=False; `lora_dtypes` records the result.

Generate: the prompt is the model's BOS (`shape.bos_token_id`, checked against the config's) + `prompt_length - 1`
seeded ids, prepared in setup as the Keras twin's (bench/models/llm.py: v0.0.5's tokenizer added the BOS too);
greedy (`do_sample=False`), `max_new_tokens = min_new_tokens = new_tokens`, the EOS token removed from
the generation config, so every call writes exactly `new_tokens` tokens per sequence; check() asserts the
(batch, generate_length) output of every call.

Compiled variants:
- fit: TrainingArguments(torch_compile=True, torch_compile_mode="reduce-overhead"): the Trainer compiles the
  peft model it trains.
- generate: `torch.compile(model)` (the reference) compiles nothing, since generate() never calls the compiled
  wrapper's forward. Instead this follows transformers' documented recipe for compiled generation: a static KV
  cache (`generation_config.cache_implementation = "static"`, fixed shapes for every decode step) and
  `model.forward = torch.compile(model.forward, mode="reduce-overhead")`, which generate() calls for the prefill
  and every decode step. transformers' own automatic compile of the decode step is disabled
  (`generation_config.disable_compile = True`) so that the forward is compiled exactly once, the same way on
  CPU and GPU. The StaticCache is made once in setup and passed to every call (reset first), as transformers'
  torch.compile guide does: left to generate(), a static cache is created inside the call, new tensors every
  call, which prevents CUDA graphs from replaying (transformers 4.38, the 2024 stack, has no such argument and
  keeps the old way; `static_cache` records which). The eager variant keeps transformers' default dynamic cache.
"""
from __future__ import annotations

import contextlib
import inspect
from typing import Any

import numpy as np
import torch

from bench.models.llm import check_generated, prompt_ids
from bench.models.torch_common import (
    COMPILE_MODE,
    SEED,
    RepeatedSamples,
    TorchWorkload,
    count_parameters,
    data_generator,
    on_meta,
    torch_dtype,
)

LORA_TARGETS = ["q_proj", "v_proj"]  # peft's TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING for gemma/mistral
LORA_ALPHA = 8  # peft's LoraConfig default
FIRST_TOKEN_ID = 3  # random ids avoid the special ids 0-2 (pad/bos/eos in both vocabularies)


def config_arguments(s) -> dict[str, Any]:
    """The transformers config arguments Gemma and Mistral share, from a CausalLMShape (same names in both)."""
    return dict(
        vocab_size=s.vocabulary_size,
        hidden_size=s.hidden_dim,
        intermediate_size=s.intermediate_dim,
        num_hidden_layers=s.num_layers,
        num_attention_heads=s.num_query_heads,
        num_key_value_heads=s.num_key_value_heads,
        head_dim=s.head_dim,
        max_position_embeddings=s.max_position_embeddings,
        rms_norm_eps=s.layer_norm_epsilon,
        rope_parameters={"rope_type": "default", "rope_theta": s.rope_max_wavelength},
    )


def weights_dtype(dtype: str) -> str:
    """The weights' dtype: Keras's mixed_bfloat16 keeps float32 weights and computes in bfloat16 (the Trainer's bf16
    autocast, trainer_arguments below)."""
    return "float32" if dtype == "mixed_bfloat16" else dtype


def lora_config(shape):
    from peft import LoraConfig

    return LoraConfig(r=shape.lora_rank, lora_alpha=LORA_ALPHA, lora_dropout=0.0, target_modules=list(LORA_TARGETS))


class TorchCausalLM(TorchWorkload):
    """Gemma/Mistral: subclasses give `build_config(shape)` and `model_class` (a transformers *ForCausalLM name)."""

    model_class: str

    @staticmethod
    def build_config(shape):  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def build_model(cls, shape, device: torch.device | None = None):
        """The *ForCausalLM initialised in shape.dtype on `device` (else the current default device: the fidelity
        tests build it on meta), so a 7B model never exists in float32 on the host (34 GB for Gemma)."""
        import transformers

        model_class = getattr(transformers, cls.model_class)
        with torch.device(device) if device is not None else contextlib.nullcontext():
            # transformers 5 names the argument dtype; 4.x (the 2024 stack's 4.38.2) torch_dtype
            dtype_argument = "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"
            return model_class._from_config(
                cls.build_config(shape), **{dtype_argument: torch_dtype(weights_dtype(shape.dtype))}
            )

    @classmethod
    def parameter_counts(cls, shape) -> dict[str, int]:
        """Parameters of the causal LM (tied embeddings counted once), built on the meta device."""
        return {"causal_lm": count_parameters(on_meta(cls.build_model, shape))}

    def __init__(self, cell, shape):
        super().__init__(cell, shape)
        self.outputs: list[torch.Tensor] = []
        self.split_outputs: dict[int, torch.Tensor] = {}

    def setup(self) -> None:
        s, bs = self.shape, self.cell.batch_size
        model = self.build_model(s, self.device)
        g = data_generator()
        if self.cell.task == "fit":
            from peft import get_peft_model

            # bf16 adapters as peft 0.9.0 made them (see the module docstring)
            # peft >= 0.12 would cast adapters to float32 unless told not to; peft 0.9.0 (the 2024 stack) has no such
            # argument and always made them in the base dtype
            keep_dtype = (
                {"autocast_adapter_dtype": False}
                if "autocast_adapter_dtype" in inspect.signature(get_peft_model).parameters
                else {}
            )
            self.model = get_peft_model(model, lora_config(s), **keep_dtype)
            ids = torch.randint(FIRST_TOKEN_ID, s.vocabulary_size, (bs, s.fit_sequence_length), generator=g)
            mask = torch.ones_like(ids)
            self.samples = [
                {"input_ids": ids[i], "attention_mask": mask[i], "labels": ids[i].clone()} for i in range(bs)
            ]
            return
        model.eval()
        self.model = model
        if model.config.bos_token_id != s.bos_token_id:
            raise ValueError(
                f"the shape's bos_token_id {s.bos_token_id} is not the model's ({model.config.bos_token_id})"
            )
        config = model.generation_config
        config.eos_token_id = None  # no stop token: every call generates exactly new_tokens
        config.pad_token_id = 0
        self.static_cache = None
        if self.compiled:
            config.disable_compile = True  # the forward below is the one compiled function
            model.forward = torch.compile(model.forward, mode=COMPILE_MODE)
            self.static_cache = self.make_static_cache(model)
            if self.static_cache is None:  # transformers 4.x: generate() makes it (generate refuses both together)
                config.cache_implementation = "static"
        self.inputs = {
            "input_ids": torch.from_numpy(prompt_ids(s, bs, FIRST_TOKEN_ID, np.random.default_rng(SEED)))
            .long()
            .to(self.device),
            "attention_mask": torch.ones(bs, s.prompt_length, dtype=torch.long, device=self.device),
        }

    def make_static_cache(self, model):
        """One StaticCache for every call (see the module docstring); None where transformers cannot take one."""
        import transformers

        if int(transformers.__version__.split(".")[0]) < 5:
            return None
        return transformers.StaticCache(config=model.config, max_cache_len=self.shape.generate_length)

    def training_dataset(self, length: int) -> RepeatedSamples:
        return RepeatedSamples(self.samples, length)

    def trainer_arguments(self) -> dict[str, Any]:
        s = self.shape
        return {
            **super().trainer_arguments(),
            "learning_rate": s.learning_rate,
            "optim": self.optim,
            # bf16 autocast; on a CPU the Trainer accepts it only when told it runs on the CPU (it does anyway).
            **({"bf16": True, "use_cpu": self.device.type == "cpu"} if s.dtype == "mixed_bfloat16" else {}),
        }

    @property
    def optim(self) -> str:
        return "sgd" if self.shape.optimizer == "sgd" else "adamw_torch"

    def step(self) -> torch.Tensor:
        out = self.generate_call(self.shape.new_tokens)
        self.outputs.append(out)  # checked after the run: a copy to the host here would sit inside the window
        return out

    def generate(self, new_tokens: int) -> torch.Tensor:
        out = self.generate_call(new_tokens)
        self.split_outputs[new_tokens] = out  # the last of each kind, checked after the run
        return out

    def generate_work(self) -> dict[str, Any]:
        s = self.shape
        static = self.static_cache is not None or self.model.generation_config.cache_implementation == "static"
        return {
            "prompt_tokens": s.prompt_length,
            "prefill_positions": s.prompt_length,  # the prefill runs on the prompt alone and gives the first token
            "decode_steps_per_call": s.new_tokens - 1,
            # the static cache (compiled) spans generate_length positions, masked; the dynamic one grows a token a step
            "decode_attends_over": [
                s.generate_length if static else s.prompt_length + i for i in range(1, s.new_tokens)
            ],
            "split_calls": "the same prompt and cache, max_new_tokens = min_new_tokens = k",
        }

    @torch.inference_mode()
    def generate_call(self, n: int) -> torch.Tensor:
        cache = {}
        if self.static_cache is not None:
            self.static_cache.reset()  # in place: the same tensors, so the recorded CUDA graphs stay valid
            cache = {"past_key_values": self.static_cache}
        return self.model.generate(**self.inputs, max_new_tokens=n, min_new_tokens=n, do_sample=False, **cache)

    def check(self) -> None:
        if self.cell.task == "generate":
            calls = [(out.cpu().numpy(), None) for out in self.outputs]
            check_generated(calls, self.inputs["input_ids"].cpu().numpy(), self.shape.generate_length, self.steps_run)
            for tokens, out in self.split_outputs.items():
                prompt = self.inputs["input_ids"].cpu().numpy()
                check_generated([(out.cpu().numpy(), None)], prompt, self.shape.prompt_length + tokens, 1)
        super().check()

    def settings(self) -> dict[str, Any]:
        s = self.shape
        base = self.model.get_base_model() if self.cell.task == "fit" else self.model
        out = {
            **super().settings(),
            "dtype": s.dtype,
            "attention_implementation": base.config._attn_implementation,
            "base_parameters": int(sum(p.numel() for n, p in base.named_parameters() if "lora_" not in n)),
        }
        if self.cell.task == "fit":
            out.update(
                lora_rank=s.lora_rank,
                lora_alpha=LORA_ALPHA,
                lora_targets=list(LORA_TARGETS),
                lora_dtypes=sorted(
                    {str(p.dtype).replace("torch.", "") for p in self.model.parameters() if p.requires_grad}
                ),
                fit_sequence_length=s.fit_sequence_length,
                optimizer=self.optim,
                learning_rate=s.learning_rate,
                trainer_bf16_autocast=s.dtype == "mixed_bfloat16",
                trainer_torch_compile=self.compiled,
            )
        else:
            config = self.model.generation_config
            out.update(
                decoding="greedy",
                eos_token_id=config.eos_token_id,
                cache_implementation="static"
                if self.static_cache is not None
                else config.cache_implementation or "dynamic",
                compiled_function="model.forward" if self.compiled else None,
                static_cache=None
                if not self.compiled
                else "made once in setup, reset before each call"
                if self.static_cache is not None
                else "made by generate() on each call (transformers 4.x)",
                prompt_length=s.prompt_length,
                bos_token_id=s.bos_token_id,
                generate_length=s.generate_length,
                new_tokens_per_sequence=s.new_tokens,
            )
        return out
