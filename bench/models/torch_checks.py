"""FLOP-counter checks the causal LMs share (bench/measure/torch_counter.py; runs in the native-torch env): a LoRA fit
step through peft and a prefill forward, on the model their native workload builds."""

from __future__ import annotations

import inspect

import torch

from bench.catalogue.work import causal_lm_fit, causal_lm_forward_flops
from bench.models.torch_common import on_meta
from bench.models.torch_llm import lora_config

BATCH = 1


def causal_lm_checks(workload, s, device: str) -> list:
    """`workload`: the model's TorchCausalLM subclass (its build_model)."""
    from peft import get_peft_model

    def build():
        return (
            on_meta(workload.build_model, s) if device == "meta" else workload.build_model(s, torch.device(device))
        )
    ids = torch.zeros(BATCH, s.fit_sequence_length, dtype=torch.long, device=device)
    prompt = torch.zeros(BATCH, s.prompt_length, dtype=torch.long, device=device)

    def fit():
        keep = (
            {"autocast_adapter_dtype": False}
            if "autocast_adapter_dtype" in inspect.signature(get_peft_model).parameters
            else {}
        )
        model = get_peft_model(build(), lora_config(s), **keep)
        model(input_ids=ids, labels=ids).loss.backward()

    def prefill():  # transformers computes logits at every prompt position
        with torch.no_grad():
            build()(input_ids=prompt)

    return [
        (f"LoRA fit (forward + backward), batch {BATCH}", fit, causal_lm_fit("native-torch", BATCH, s).flops),
        (
            f"generate's prefill of the prompt, batch {BATCH}",
            prefill,
            causal_lm_forward_flops(BATCH, s.prompt_length, s, s.prompt_length),
        ),
    ]
