"""Gemma 2B in plain PyTorch: Gemma 7B's workload (bench/models/gemma/native_torch.py) at the 2B shape, LoRA fit
with the Trainer (SGD, bf16 autocast over float32 weights for mixed_bfloat16)."""
from bench.models.gemma.native_torch import GemmaTorch

parameter_counts = GemmaTorch.parameter_counts


def create(cell, shape) -> GemmaTorch:
    return GemmaTorch(cell, shape)
