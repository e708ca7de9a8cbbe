"""The work rule of a causal LM (bench/catalogue/work.py): LoRA fit, generate's prefill and decode steps."""

from __future__ import annotations

from bench.catalogue.work import causal_lm_parameters
from bench.catalogue.work import causal_lm_work as work

TIED_EMBEDDINGS = True  # the output head is the embedding table


def parameters(s) -> int:
    return causal_lm_parameters(s, TIED_EMBEDDINGS)


__all__ = ["parameters", "work"]
