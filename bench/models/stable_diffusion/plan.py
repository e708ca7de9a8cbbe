"""StableDiffusion's plan rule (bench/plan/memory.py): predict holds the text encoder, the UNet and the decoder;
fit trains the VAE's encoder. Its activations are convolutional feature maps, one level at a time."""
from __future__ import annotations

from bench.plan.memory import Holding

ACTIVATION_FORMULAS = {
    "conv": "fit: batch x sum over resolution levels of channels x side^2 x 6 stored tensors per resnet layer x 4 bytes, "
    "+ mid-block attention scores; predict: the largest level's live tensors (4 per level) or its attention "
    "scores and probabilities, batch x heads x tokens^2 x 4 x 2, whichever is larger, over the UNet and the VAE decoder",
}


def holding(family: str, task: str, counts: dict[str, int], shape) -> Holding:
    fit = task == "fit"
    if family == "native-torch":  # diffusers' whole VAE is held; its encoder is what fit trains
        return (
            Holding(counts["vae"], counts["vae_encoder"])
            if fit
            else Holding(counts["unet"] + counts["vae"] + counts["text_encoder"], 0)
        )
    if fit:  # keras-cv's ImageEncoder alone (its fit model stops 3 layers short of the end: a 72-parameter conv)
        return Holding(counts["image_encoder"], counts["image_encoder"])
    return Holding(counts["text_encoder"] + counts["diffusion_model"] + counts["decoder"], 0)


def activations(family: str, task: str, batch: int, shape) -> tuple[float, str]:
    return conv_activations(family, task, batch, shape), "conv"


def conv_activations(family: str, task: str, batch: int, shape) -> float:
    """Both families build the shape's widths (keras-cv's own SD v1 classes at v1's, its layers at any other)."""
    vae = tuple(shape.vae_block_out_channels)
    res = shape.resolution
    if task == "fit":  # the VAE encoder: 2 resnet layers per level, sides res, res/2, ...; mid attention (1 head)
        stored = sum(c * (res // 2**i) ** 2 * 2 * 6 * 4 for i, c in enumerate(vae))
        tokens = (res // 2 ** (len(vae) - 1)) ** 2
        return batch * (stored + 3 * tokens**2 * 4)
    unet = tuple(shape.unet_block_out_channels)
    heads = shape.unet_attention_head_dim  # diffusers' name for heads
    latent = shape.latent_size
    peaks = []
    for i, c in enumerate(unet):
        side = latent // 2**i
        attention = heads * side**4 * 4 * 2 if i < len(unet) - 1 else 0  # SD v1: attention in every level but the last
        peaks.append(max(c * side * side * 4 * 4, attention))
    for i, c in enumerate(reversed(vae)):  # the decoder, from the latent side up to the image
        side = latent * 2**i
        peaks.append(c * side * side * 4 * 4)
    peaks.append(latent**4 * 4 * 2)  # the decoder's mid-block attention (1 head)
    return batch * max(peaks)
