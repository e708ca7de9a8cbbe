"""ViT-Base/16 image classifier: the tuning study's workload, not a row of the published table.

As the 2024 Keras 3 tuning study built it: 224x224x3 images, 16x16 patches, width 768, 12 heads, 12 layers, MLP
3072, 1000 classes, dropout 0.1 in attention and MLP and 0.5 before the head, layer norm epsilon 1e-6, global
average pooling over the patches (no class token), `mixed_bfloat16`, SGD, sparse cross-entropy from logits,
batch 128. Its rows (fit and predict at batch 128) are the study's own (bench/data/keras3_tuning_2024.csv holds
its findings).
"""
from __future__ import annotations

from dataclasses import dataclass

from bench.catalogue.spec import fit_task, load_model_spec, positive_fields, predict_task

STUDY = "tuning"
BATCH = 128  # the study's batch


@dataclass(frozen=True)
class ViTShape:
    image_size: int
    patch_size: int
    channels: int
    hidden_dim: int
    num_heads: int
    num_layers: int
    mlp_dim: int
    num_classes: int
    attention_dropout: float
    mlp_dropout: float
    head_dropout: float
    layer_norm_epsilon: float
    dtype: str  # a Keras dtype policy; native PyTorch: float32 weights under bf16 autocast for "mixed_bfloat16"
    learning_rate: float

    def __post_init__(self) -> None:
        positive_fields(self)
        if self.image_size % self.patch_size:
            raise ValueError("image_size must be a multiple of patch_size")
        if self.hidden_dim % self.num_heads:
            raise ValueError("hidden_dim must be a multiple of num_heads")
        if self.dtype not in ("mixed_bfloat16", "float32"):
            raise ValueError(f"dtype {self.dtype!r}: mixed_bfloat16 (the study's) or float32")

    @property
    def patches(self) -> int:
        return (self.image_size // self.patch_size) ** 2

    @property
    def head_dim(self) -> int:
        return self.hidden_dim // self.num_heads


SPEC = load_model_spec("vit", "ViT-Base/16", ViTShape, tasks=[fit_task(), predict_task()], study=STUDY,
                       rows=[("fit", BATCH), ("predict", BATCH)],
                       unsupported={"keras2": "the tuning study is Keras 3 only"})


class RandomImages:
    """The study's dataset, as published: every item a fresh random image and label, made by torch (a map-style
    dataset for torch's DataLoader). Channels last for Keras, first for native PyTorch."""

    def __init__(self, s: ViTShape, length: int, channels_last: bool):
        self.shape, self.length, self.channels_last = s, length, channels_last

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int):
        import torch  # only in the envs that run the DataLoader

        s = self.shape
        size = (
            (s.image_size, s.image_size, s.channels) if self.channels_last else (s.channels, s.image_size, s.image_size)
        )
        return torch.randn(*size), torch.randint(0, s.num_classes, (), dtype=torch.int64)
