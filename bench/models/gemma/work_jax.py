"""Gemma's XLA cost-analysis checks (bench/measure/xla_counter.py): the causal LMs'
shared checks on its Keras model."""

from __future__ import annotations


def checks(s) -> list:
    from bench.models.gemma.keras import GemmaKeras
    from bench.models.xla_checks import causal_lm_xla_checks

    return causal_lm_xla_checks(GemmaKeras, s)
