"""ViT-Base/16 in plain PyTorch, the Keras model's twin (same layers, same parameter count: torchvision's
vit_b_16 has a class token, 1,536 parameters more, and classifies from it instead of pooling).

Mixed precision as Keras's `mixed_bfloat16`: float32 weights, the forward under torch.autocast(bfloat16). Fit is a
plain loop (zero_grad, forward, cross-entropy, backward, SGD step); predict a no-grad forward. The compiled variant
compiles the whole training step (forward, loss, backward, SGD) or the forward, mode reduce-overhead. Data: one
in-memory batch on the device (reference), or with `loader-workers-N` the next batch of a torch DataLoader of
random tensors with N workers, copied to the device inside the step, as the study fed its model.
"""
from __future__ import annotations

from typing import Any

import torch
from torch import nn

from bench.catalogue import variants
from bench.models.torch_common import TorchWorkload, count_parameters, data_generator, on_meta
from bench.models.vit import RandomImages


class EncoderBlock(nn.Module):
    def __init__(self, s):
        super().__init__()
        self.norm1 = nn.LayerNorm(s.hidden_dim, eps=s.layer_norm_epsilon)
        # need_weights=False below: nn.MultiheadAttention then computes with scaled_dot_product_attention.
        self.attention = nn.MultiheadAttention(s.hidden_dim, s.num_heads, dropout=s.attention_dropout, batch_first=True)
        self.norm2 = nn.LayerNorm(s.hidden_dim, eps=s.layer_norm_epsilon)
        self.mlp = nn.Sequential(nn.Linear(s.hidden_dim, s.mlp_dim), nn.GELU(), nn.Dropout(s.mlp_dropout),
                                 nn.Linear(s.mlp_dim, s.hidden_dim), nn.Dropout(s.mlp_dropout))

    def forward(self, x):
        y = self.norm1(x)
        x = x + self.attention(y, y, y, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class ViT(nn.Module):
    def __init__(self, s):
        super().__init__()
        self.patch_embedding = nn.Conv2d(s.channels, s.hidden_dim, s.patch_size, stride=s.patch_size)
        self.position_embedding = nn.Parameter(torch.randn(1, s.patches, s.hidden_dim) * 0.02)
        self.blocks = nn.Sequential(*[EncoderBlock(s) for _ in range(s.num_layers)])
        self.norm = nn.LayerNorm(s.hidden_dim, eps=s.layer_norm_epsilon)
        self.head_dropout = nn.Dropout(s.head_dropout)
        self.head = nn.Linear(s.hidden_dim, s.num_classes)

    def forward(self, images):
        x = self.patch_embedding(images).flatten(2).transpose(1, 2) + self.position_embedding  # (B, patches, width)
        x = self.norm(self.blocks(x)).mean(dim=1)  # global average pooling
        return self.head(self.head_dropout(x)).float()


def parameter_counts(s) -> dict[str, int]:
    return {"classifier": count_parameters(on_meta(ViT, s))}


class ViTTorch(TorchWorkload):
    def setup(self) -> None:
        s, bs = self.shape, self.cell.batch_size
        self.model = ViT(s).to(self.device)
        self.autocast = s.dtype == "mixed_bfloat16"
        self.loader_workers = variants.loader_workers(self.cell.variant)
        if self.loader_workers is None:
            g = data_generator()
            batch = (
                torch.randn(bs, s.channels, s.image_size, s.image_size, generator=g),
                torch.randint(0, s.num_classes, (bs,), generator=g),
            )
            on_device = tuple(t.to(self.device) for t in batch)
            self.batches = iter(lambda: on_device, None)  # the same batch forever, already on the device
        else:
            steps = self.cell.window_plan().max_steps
            loader = torch.utils.data.DataLoader(
                RandomImages(s, bs * (steps + 1), channels_last=False),
                batch_size=bs,
                num_workers=self.loader_workers,
                drop_last=True,
                persistent_workers=self.loader_workers > 0,
            )
            self.batches = iter(loader)
        if self.cell.task == "fit":
            self.model.train()
            optimizer = torch.optim.SGD(self.model.parameters(), lr=s.learning_rate)
            self.run = self.maybe_compile(self.training_step_fn(optimizer))
        else:
            self.model.eval()
            self.run = self.maybe_compile(self.predict_fn())

    def context(self):
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.autocast)

    def training_step_fn(self, optimizer):
        model, loss_fn = self.model, nn.CrossEntropyLoss()

        def train_step(images, labels):
            optimizer.zero_grad()
            with self.context():
                logits = model(images)
            loss = loss_fn(logits, labels)
            loss.backward()
            optimizer.step()
            return loss

        return train_step

    def predict_fn(self):
        model = self.model

        def predict(images, labels=None):
            # no_grad, not inference_mode: in float32 eval nn.MultiheadAttention takes its fused fast path, which
            # inductor fails to compile under inference_mode (torch 2.10; found by the cpu profile's float32 ViT)
            with torch.no_grad(), self.context():
                return model(images)

        return predict

    def step(self):
        images, labels = (t.to(self.device, non_blocking=True) for t in next(self.batches))
        return self.run(images, labels)

    def settings(self) -> dict[str, Any]:
        return {
            **super().settings(),
            "compiled_function": (
                "train_step (forward, loss, backward, SGD)" if self.cell.task == "fit" else "predict (forward)"
            )
            if self.compiled
            else None,
            "attention_implementation": "nn.MultiheadAttention (scaled_dot_product_attention)",
            "autocast": "bfloat16" if self.autocast else None,
            "optimizer": "SGD",
            "data": "in-memory batch on the device"
            if self.loader_workers is None
            else f"torch DataLoader, {self.loader_workers} workers",
            "loader_workers": self.loader_workers,
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
        }


def create(cell, shape) -> ViTTorch:
    return ViTTorch(cell, shape)
