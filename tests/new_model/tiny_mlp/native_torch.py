"""The tiny MLP in plain PyTorch: a plain training loop (forward, MSE to a random target, backward, Adam) and a
no-grad forward, both driven by the "steps" driver; the compiled variant compiles the whole step."""
from __future__ import annotations

from typing import Any

import torch
from torch import nn

from bench.models.torch_common import TorchWorkload, count_parameters, data_generator, on_meta


def build_model(s) -> nn.Sequential:
    layers, width = [], s.features
    for _ in range(s.layers):
        layers += [nn.Linear(width, s.hidden), nn.ReLU()]
        width = s.hidden
    return nn.Sequential(*layers, nn.Linear(width, s.classes))


def parameter_counts(s) -> dict[str, int]:
    return {"classifier": count_parameters(on_meta(build_model, s))}


class TinyMlpTorch(TorchWorkload):
    def setup(self) -> None:
        s, bs = self.shape, self.cell.batch_size
        self.model = build_model(s).to(self.device)
        g = data_generator()
        self.features = torch.randn(bs, s.features, generator=g).to(self.device)
        if self.cell.task == "fit":
            self.model.train()
            target = torch.randn(bs, s.classes, generator=g).to(self.device)
            self.run = self.training_step(
                torch.optim.Adam(self.model.parameters(), lr=s.learning_rate), self.features, target
            )
        else:
            self.model.eval()
            self.run = self.maybe_compile(self.predict)

    def predict(self):
        with torch.no_grad():
            return self.model(self.features)

    def step(self):
        return self.run()

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "optimizer": "Adam", "attention_implementation": "none (an MLP)"}


def create(cell, shape) -> TinyMlpTorch:
    return TinyMlpTorch(cell, shape)
