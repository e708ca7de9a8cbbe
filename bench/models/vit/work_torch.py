"""ViT's FLOP-counter checks (bench/measure/torch_counter.py): the native ViT on the meta device."""

from __future__ import annotations

import torch

from bench.models.torch_common import on_meta
from bench.models.vit.native_torch import ViT
from bench.models.vit.work import parameters, work

BATCH = 2


def checks(s, device: str) -> list:
    model = on_meta(ViT, s) if device == "meta" else ViT(s)
    if sum(p.numel() for p in model.parameters()) != parameters(s):
        raise ValueError(f"the formula's parameter count {parameters(s)} is not the model's")
    images = torch.zeros(BATCH, s.channels, s.image_size, s.image_size, device=device)

    def predict():
        model.eval()
        with torch.no_grad():
            model(images)

    def fit():
        model.train()
        model(images).sum().backward()

    return [
        (f"predict, batch {BATCH}", predict, work("native-torch", "predict", BATCH, s).flops),
        (f"fit (forward + backward), batch {BATCH}", fit, work("native-torch", "fit", BATCH, s).flops),
    ]
