"""StableDiffusion's work rule (bench/catalogue/work.py): convolutions and attention, walked block by block. The UNet
and the VAE encoder as diffusers builds them (UNet2DConditionModel, AutoencoderKL's Encoder), which keras-cv's
DiffusionModel and ImageEncoder are block for block, at the shape's widths in both families (keras_cv_widths.py
below SD v1's). A Keras result that recorded one of keras-cv's own SD classes ran SD v1's widths whatever its shape
says (every smoke result measured before the smoke build followed the shape): `built_shape` counts it at those.
Predict's step is one denoising step: two UNet passes at
the batch (the unconditional and the text-conditioned latent, classifier-free guidance), the text encoder and the
VAE decoder being outside the pair difference. Fit trains the VAE encoder to its 8-channel moments: 3 x its
forward, less the first convolution's input gradient (the images need none). Counted: convolutions, attention
projections and scores, the GEGLU feed-forward, the time embedding; group norms, the scheduler and elementwise
work left out.
"""

from __future__ import annotations

from bench.catalogue.work import FIT_UPDATE_BYTES_PER_TRAINED, Work, attention_flops, conv_flops, dense_flops
from bench.models.stable_diffusion import with_keras_cv_v1_widths

LATENT_CHANNELS = 4
TIME_EMBEDDING = 4  # the time embedding is 4 x the first width (320 -> 1280)


class Tally:
    """FLOPs and parameters summed over a walk of the network, for one sample."""

    def __init__(self) -> None:
        self.flops, self.params = 0.0, 0
        self.conv_flops = 0.0  # of flops, the convolutions'

    def conv(self, side_out: int, c_in: int, c_out: int, kernel: int = 3, bias: bool = True) -> None:
        self.flops += conv_flops(side_out, c_in, c_out, kernel)
        self.conv_flops += conv_flops(side_out, c_in, c_out, kernel)
        self.params += kernel * kernel * c_in * c_out + (c_out if bias else 0)

    def dense(self, rows: int, fan_in: int, fan_out: int, bias: bool = True) -> None:
        self.flops += dense_flops(rows, fan_in, fan_out)
        self.params += fan_in * fan_out + (fan_out if bias else 0)

    def norm(self, channels: int) -> None:
        self.params += 2 * channels

    def resnet(self, side: int, c_in: int, c_out: int, time_channels: int | None) -> None:
        self.norm(c_in)
        self.conv(side, c_in, c_out)
        if time_channels:
            self.dense(1, time_channels, c_out)
        self.norm(c_out)
        self.conv(side, c_out, c_out)
        if c_in != c_out:
            self.conv(side, c_in, c_out, 1)

    def transformer(self, side: int, c: int, context: int, context_dim: int) -> None:
        """diffusers' Transformer2DModel of SD v1: 1x1 projections in and out, one block of self-attention,
        cross-attention to the text and a GEGLU feed-forward (c -> 2 x 4c, 4c -> c)."""
        n = side * side
        self.norm(c)
        self.conv(side, c, c, 1)
        self.norm(c)
        for _ in range(3):
            self.dense(n, c, c, bias=False)  # self-attention q, k, v
        self.flops += attention_flops(n, n, 1, c)  # heads split c; the total is the same
        self.dense(n, c, c)
        self.norm(c)
        self.dense(n, c, c, bias=False)  # cross-attention q
        self.dense(context, context_dim, c, bias=False)
        self.dense(context, context_dim, c, bias=False)
        self.flops += attention_flops(n, context, 1, c)
        self.dense(n, c, c)
        self.norm(c)
        self.dense(n, c, 8 * c)
        self.dense(n, 4 * c, c)
        self.conv(side, c, c, 1)


def built_shape(family: str, s, settings: dict):
    """The shape whose widths a run built, from the settings it recorded: a Keras run whose model is one of keras-cv's
    own classes (model_class "keras_cv....DiffusionModel", "keras_cv....ImageEncoder (to layers[-3])") built SD v1's
    widths, which those classes fix; any other run, the shape's."""
    if family == "keras" and str(settings.get("model_class", "")).startswith("keras_cv."):
        return with_keras_cv_v1_widths(s)
    return s


def widths(s) -> dict:
    return {
        "unet": tuple(s.unet_block_out_channels),
        "layers": s.unet_layers_per_block,
        "vae": tuple(s.vae_block_out_channels),
        "context_dim": s.cross_attention_dim,
    }


def unet(s) -> Tally:
    """One UNet forward of one sample at the latent side (diffusers' UNet2DConditionModel, SD v1 block types:
    cross-attention in every level but the lowest-resolution one)."""
    w = widths(s)
    chans, layers, ctx, t = w["unet"], w["layers"], w["context_dim"], Tally()
    temb = TIME_EMBEDDING * chans[0]
    side = s.latent_size
    t.dense(1, chans[0], temb)
    t.dense(1, temb, temb)
    t.conv(side, LATENT_CHANNELS, chans[0])
    skips, c_prev, last = [chans[0]], chans[0], len(chans) - 1
    for i, c in enumerate(chans):
        for j in range(layers):
            t.resnet(side, c_prev if j == 0 else c, c, temb)
            if i < last:
                t.transformer(side, c, s.text_length, ctx)
            skips.append(c)
        c_prev = c
        if i < last:
            side //= 2
            t.conv(side, c, c)  # stride-2 downsampling
            skips.append(c)
    t.resnet(side, c_prev, c_prev, temb)
    t.transformer(side, c_prev, s.text_length, ctx)
    t.resnet(side, c_prev, c_prev, temb)
    for i, c in enumerate(reversed(chans)):
        for _ in range(layers + 1):
            t.resnet(side, c_prev + skips.pop(), c, temb)
            if i > 0:
                t.transformer(side, c, s.text_length, ctx)
            c_prev = c
        if i < last:
            side *= 2
            t.conv(side, c, c)  # nearest 2x upsampling, then a 3x3 convolution
    t.norm(chans[0])
    t.conv(side, chans[0], LATENT_CHANNELS)
    return t


def vae_encoder(s) -> Tally:
    """One VAE encoder forward of one image, to its 2 x 4 channels of moments (diffusers' Encoder)."""
    chans, t = widths(s)["vae"], Tally()
    side = s.resolution
    t.conv(side, 3, chans[0])
    c_prev = chans[0]
    for i, c in enumerate(chans):
        t.resnet(side, c_prev, c, None)
        t.resnet(side, c, c, None)
        c_prev = c
        if i < len(chans) - 1:
            side //= 2
            t.conv(side, c, c)
    c = c_prev
    t.resnet(side, c, c, None)
    t.norm(c)
    for _ in range(4):
        t.dense(side * side, c, c)  # single-head attention q, k, v, out
    t.flops += attention_flops(side * side, side * side, 1, c)
    t.resnet(side, c, c, None)
    t.norm(c)
    t.conv(side, c, 2 * LATENT_CHANNELS)
    return t


def parameters(s) -> dict[str, int]:
    """The UNet's and the VAE encoder's parameters (the plan's `unet` / `diffusion_model` and `vae_encoder`)."""
    return {"unet": unet(s).params, "vae_encoder": vae_encoder(s).params}


def work(family: str, task: str, batch: int, s) -> Work:
    """Both families alike: each builds the shape's widths (a result's own widths: built_shape)."""
    if task == "fit":
        enc = vae_encoder(s)
        first = conv_flops(s.resolution, 3, widths(s)["vae"][0])  # the images need no gradient
        return Work(
            batch * (3 * enc.flops - first),
            enc.params * (4 + FIT_UPDATE_BYTES_PER_TRAINED),
            "float32",
            "VAE encoder fit: 3 x its forward, less the images' gradient",
            convolution_flops=batch * (3 * enc.conv_flops - first),
        )
    net = unet(s)
    return Work(
        2 * batch * net.flops,
        2 * net.params * 4,
        "float32",
        "one denoising step: two UNet forwards (unconditional and text-conditioned)",
        convolution_flops=2 * batch * net.conv_flops,
    )
