"""Mistral's XLA cost-analysis checks (bench/roofline/xla_counter.py): the causal LMs'
shared checks on its Keras model."""

from __future__ import annotations


def checks(s) -> list:
    from bench.models.mistral.keras import MistralKeras
    from bench.roofline.xla_checks import causal_lm_xla_checks

    return causal_lm_xla_checks(MistralKeras, s)
