"""BERT's FLOP-counter checks (bench/measure/torch_counter.py): the native classifier on the meta device."""

from __future__ import annotations

import torch

from bench.models.bert.native_torch import build_model
from bench.models.bert.work import work
from bench.models.torch_common import on_meta

BATCH = 2


def checks(s, device: str) -> list:
    model = on_meta(build_model, s) if device == "meta" else build_model(s)
    ids = torch.zeros(BATCH, s.sequence_length, dtype=torch.long, device=device)
    inputs = {"input_ids": ids, "token_type_ids": ids}  # no mask: transformers reads a given one's values

    def predict():
        with torch.no_grad():
            model(**inputs)

    def fit():
        model(**inputs, labels=torch.zeros(BATCH, dtype=torch.long, device=device)).loss.backward()

    return [
        (f"predict, batch {BATCH}", predict, work("native-torch", "predict", BATCH, s).flops),
        (f"fit (forward + backward), batch {BATCH}", fit, work("native-torch", "fit", BATCH, s).flops),
    ]
