"""Gemma 2B on Keras 3: Gemma 7B's workload (bench/models/gemma/keras.py) at the 2B shape, LoRA fit only."""
from bench.models.gemma.keras import GemmaKeras

parameter_counts = GemmaKeras.parameter_counts


def create(cell, shape) -> GemmaKeras:
    return GemmaKeras(cell, shape)
