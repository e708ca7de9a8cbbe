"""Mistral's FLOP-counter checks (bench/measure/torch_counter.py): the causal LMs' shared checks on its native model."""

from __future__ import annotations

from bench.models.mistral.native_torch import MistralTorch
from bench.models.torch_checks import causal_lm_checks


def checks(s, device: str) -> list:
    return causal_lm_checks(MistralTorch, s, device)
