"""ViT-Base/16's work rule (bench/catalogue/work.py): a patch convolution, encoder layers over every patch (no class
token), global average pooling and the classifier head; SGD. Fit: 3 x the forward, less the patch convolution's input
gradient (the images need none). `mixed_bfloat16` computes in bfloat16 over float32 weights."""

from __future__ import annotations

from bench.catalogue.work import Work, conv_flops, dense_flops, encoder_layer_flops

SGD_UPDATE_BYTES_PER_TRAINED = 2 * 4 + 4 + 4  # the gradient written and read, the weight read again and written


def parameters(s) -> int:
    h = s.hidden_dim
    layer = 2 * 2 * h + 4 * (h * h + h) + (h * s.mlp_dim + s.mlp_dim) + (s.mlp_dim * h + h)
    return (
        (s.patch_size**2 * s.channels * h + h)
        + s.patches * h
        + s.num_layers * layer
        + 2 * h
        + (h * s.num_classes + s.num_classes)
    )


def forward_flops(batch: int, s) -> float:
    side = s.image_size // s.patch_size
    patch = conv_flops(side, s.channels, s.hidden_dim, s.patch_size, batch)
    layers = s.num_layers * encoder_layer_flops(batch * s.patches, s.patches, s.hidden_dim, s.mlp_dim, s.num_heads)
    return patch + layers + dense_flops(batch, s.hidden_dim, s.num_classes)


def work(family: str, task: str, batch: int, s) -> Work:
    dtype = "bfloat16" if s.dtype == "mixed_bfloat16" else "float32"
    weights = parameters(s)
    if task == "fit":
        patch = conv_flops(s.image_size // s.patch_size, s.channels, s.hidden_dim, s.patch_size, batch)
        return Work(
            3 * forward_flops(batch, s) - patch,
            weights * (4 + SGD_UPDATE_BYTES_PER_TRAINED),
            dtype,
            "ViT fit: 3 x the forward, less the images' gradient",
        )
    return Work(forward_flops(batch, s), weights * 4, dtype, "ViT forward")
