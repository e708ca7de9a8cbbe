"""SegmentAnything's work rule (bench/catalogue/work.py): the ViT-H image encoder, which is nearly all of it.

The encoder as segment_anything builds it (and keras-hub's ViTDet backbone): a 16x16 patch convolution, layers of
attention and MLP, windowed attention in all but the global layers, decomposed relative positions, a neck of a
1x1 and a 3x3 convolution. A windowed layer pads the side up to a multiple of the window (64 -> 70 for 14) and its
attention computes on the padded tokens; its MLP on the real ones. Predict's prompt encoder and mask decoder are
left out: a two-way transformer of width 256 on 4,096 image tokens and two transposed convolutions, about 3.4
GFLOP per image, 0.1% of the paper encoder's 3 TFLOP (docs/ROOFLINE.md). Fit trains the encoder (and its neck)
against a random feature map: 3 x its forward, less the patch convolution's input gradient (the images need none).
"""

from __future__ import annotations

import math

from bench.catalogue.work import (
    FIT_UPDATE_BYTES_PER_TRAINED,
    Work,
    attention_flops,
    conv_flops,
    conv_parameters,
    dense_flops,
)


def encoder_parameters(s) -> int:
    """The image encoder's parameters (the plan's `image_encoder` count)."""
    h, side = s.hidden_dim, s.feature_size
    hd = h // s.num_heads
    patch = conv_parameters(3, h, s.patch_size) + side * side * h  # + the absolute position embedding
    def rel(span):
        return 2 * (2 * span - 1) * hd  # rel_pos_h and rel_pos_w
    layers = sum(
        2 * 2 * h
        + (3 * h * h + 3 * h)
        + (h * h + h)
        + (h * s.mlp_dim + s.mlp_dim)
        + (s.mlp_dim * h + h)
        + rel(side if i in s.global_attention_layers else s.window_size)
        for i in range(s.num_layers)
    )
    neck = (
        h * s.embed_dim + 2 * s.embed_dim + 9 * s.embed_dim * s.embed_dim + 2 * s.embed_dim
    )  # convs without bias, LayerNorm2d x 2
    return patch + layers + neck


def encoder_flops(batch: int, s) -> float:
    h, side = s.hidden_dim, s.feature_size
    tokens = batch * side * side
    flops = conv_flops(side, 3, h, s.patch_size, batch)
    for i in range(s.num_layers):
        if i in s.global_attention_layers:
            span, attended = side, tokens
        else:
            padded = math.ceil(side / s.window_size) * s.window_size
            span, attended = s.window_size, batch * padded * padded
        flops += dense_flops(attended, h, 3 * h) + dense_flops(attended, h, h)  # qkv, proj
        flops += attention_flops(attended, span * span, s.num_heads, h // s.num_heads)
        flops += 2.0 * attended * (span + span) * h  # decomposed relative positions: rel_h and rel_w einsums
        flops += dense_flops(tokens, h, s.mlp_dim) + dense_flops(tokens, s.mlp_dim, h)
    return flops + conv_flops(side, h, s.embed_dim, 1, batch) + conv_flops(side, s.embed_dim, s.embed_dim, 3, batch)


def encoder_convolution_flops(batch: int, s) -> float:
    """Of encoder_flops, the convolutions': the patch embedding and the neck's 1x1 and 3x3."""
    side, h = s.feature_size, s.hidden_dim
    return (conv_flops(side, 3, h, s.patch_size, batch) + conv_flops(side, h, s.embed_dim, 1, batch)
            + conv_flops(side, s.embed_dim, s.embed_dim, 3, batch))  # fmt: skip


def work(family: str, task: str, batch: int, s) -> Work:
    weights = encoder_parameters(s)
    if task == "fit":
        # the patch convolution's input (the images) needs no gradient: 3 x the forward less that one product
        patch = conv_flops(s.feature_size, 3, s.hidden_dim, s.patch_size, batch)
        return Work(
            3 * encoder_flops(batch, s) - patch,
            weights * (4 + FIT_UPDATE_BYTES_PER_TRAINED),
            "float32",
            "ViT image encoder fit: 3 x its forward, less the images' gradient",
            convolution_flops=3 * encoder_convolution_flops(batch, s) - patch,
        )
    return Work(
        encoder_flops(batch, s), weights * 4, "float32", "ViT image encoder forward (the mask decoder's 0.1% left out)",
        convolution_flops=encoder_convolution_flops(batch, s),
    )  # fmt: skip
