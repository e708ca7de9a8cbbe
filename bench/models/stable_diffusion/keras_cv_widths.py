"""keras-cv's StableDiffusion v1 models at a shape's widths, assembled from keras-cv's own layers.

keras-cv's TextEncoder, DiffusionModel, Decoder and ImageEncoder write SD v1's widths into their code (768, 320,
1280, 512, ...), so they cannot build a smaller model. These four classes repeat their flows, block for block, with
the widths taken from the shape, out of the same layer classes (ResBlock, SpatialTransformer, Upsample, PaddedConv2D,
CLIPEmbedding, CLIPEncoderLayer, ResnetBlock, AttentionBlock): the smoke profile runs keras-cv's code at a tiny size,
and at SD v1's widths they build keras-cv's models weight for weight (tests/test_stable_diffusion_widths.py). The
block layout is diffusers' (bench/models/stable_diffusion/native_torch.py builds the same blocks at the same widths),
which keras-cv's flows are at SD v1's.

Imported only inside a Keras cell's process: keras-cv picks its Keras (Keras 3, or tf.keras under Keras 2) on import.
"""
from __future__ import annotations

from keras_cv.src.backend import keras
from keras_cv.src.models.stable_diffusion.attention_block import AttentionBlock
from keras_cv.src.models.stable_diffusion.diffusion_model import ResBlock, SpatialTransformer, Upsample
from keras_cv.src.models.stable_diffusion.padded_conv2d import PaddedConv2D
from keras_cv.src.models.stable_diffusion.resnet_block import ResnetBlock
from keras_cv.src.models.stable_diffusion.text_encoder import CLIPEmbedding, CLIPEncoderLayer, quick_gelu

LATENT_CHANNELS = 4
TIME_EMBEDDING = 4  # the time embedding is 4 x the first width (SD v1: 320 -> 1280)
CLIP_MLP_RATIO = 4  # keras-cv's CLIPEncoderLayer fixes its MLP at 4 x the width (CLIP: 768 -> 3072)
VAE_LEVELS = 4  # three 2x downsamplings: latents are the image's side / 8
LATENT_SCALE = 0.18215  # SD v1's latent scaling, as keras-cv's Decoder and ImageEncoder apply it


def check_buildable(s) -> None:
    """What keras-cv's layers cannot build, said before they fail somewhere inside."""
    if s.text_intermediate_dim != CLIP_MLP_RATIO * s.cross_attention_dim:
        raise ValueError(
            f"keras-cv's CLIPEncoderLayer builds an MLP of {CLIP_MLP_RATIO} x the text width "
            f"({CLIP_MLP_RATIO * s.cross_attention_dim}); the shape asks text_intermediate_dim "
            f"{s.text_intermediate_dim}"
        )
    if len(s.vae_block_out_channels) != VAE_LEVELS:
        raise ValueError(f"the VAE needs {VAE_LEVELS} blocks (latents are resolution / 8), the shape has "
                         f"{len(s.vae_block_out_channels)}")
    for name, width, heads in [("cross_attention_dim", s.cross_attention_dim, s.text_heads)] + [
        ("unet_block_out_channels", c, s.unet_attention_head_dim) for c in s.unet_block_out_channels
    ]:
        if width % heads:
            raise ValueError(f"{name} {width} does not split into {heads} attention heads")


class TextEncoder(keras.Model):
    """keras-cv's TextEncoder (CLIP's text transformer, causal, quick GELU) at `width` with `layers` layers."""

    def __init__(self, max_length, vocab_size, width, layers, heads, name=None):
        tokens = keras.layers.Input(shape=(max_length,), dtype="int32", name="tokens")
        positions = keras.layers.Input(shape=(max_length,), dtype="int32", name="positions")
        x = CLIPEmbedding(vocab_size, width, max_length)([tokens, positions])
        for _ in range(layers):
            x = CLIPEncoderLayer(width, heads, activation=quick_gelu)(x)
        embedded = keras.layers.LayerNormalization(epsilon=1e-5)(x)
        super().__init__([tokens, positions], embedded, name=name)


class DiffusionModel(keras.Model):
    """keras-cv's DiffusionModel (SD v1's UNet) at `widths` per level, `layers` ResBlocks a level: cross-attention
    (SpatialTransformer) after each ResBlock of every level but the lowest-resolution one, a 2x downsampling after
    each level but the last, the middle flow at the last width, then each level in reverse with one ResBlock more."""

    def __init__(self, img_height, img_width, max_text_length, widths, layers, heads, context_dim, name=None):
        first, last = widths[0], len(widths) - 1
        context = keras.layers.Input((max_text_length, context_dim), name="context")
        t_embed_input = keras.layers.Input((first,), name="timestep_embedding")
        latent = keras.layers.Input((img_height // 8, img_width // 8, LATENT_CHANNELS), name="latent")

        t_emb = keras.layers.Dense(TIME_EMBEDDING * first)(t_embed_input)
        t_emb = keras.layers.Activation("swish")(t_emb)
        t_emb = keras.layers.Dense(TIME_EMBEDDING * first)(t_emb)

        def attend(x, width):
            return SpatialTransformer(heads, width // heads, fully_connected=False)([x, context])

        # Downsampling flow
        outputs = []
        x = PaddedConv2D(first, kernel_size=3, padding=1)(latent)
        outputs.append(x)
        for level, width in enumerate(widths):
            for _ in range(layers):
                x = ResBlock(width)([x, t_emb])
                if level < last:
                    x = attend(x, width)
                outputs.append(x)
            if level < last:
                x = PaddedConv2D(width, 3, strides=2, padding=1)(x)  # Downsample 2x
                outputs.append(x)

        # Middle flow
        x = ResBlock(widths[-1])([x, t_emb])
        x = attend(x, widths[-1])
        x = ResBlock(widths[-1])([x, t_emb])

        # Upsampling flow
        for level, width in enumerate(reversed(widths)):
            for _ in range(layers + 1):
                x = keras.layers.Concatenate()([x, outputs.pop()])
                x = ResBlock(width)([x, t_emb])
                if level > 0:
                    x = attend(x, width)
            if level < last:
                x = Upsample(width)(x)

        # Exit flow
        x = keras.layers.GroupNormalization(epsilon=1e-5)(x)
        x = keras.layers.Activation("swish")(x)
        output = PaddedConv2D(LATENT_CHANNELS, kernel_size=3, padding=1)(x)
        super().__init__([latent, t_embed_input, context], output, name=name)


class Decoder(keras.Sequential):
    """keras-cv's Decoder (the VAE's) at `widths` (the encoder's, taken in reverse): the middle block at the last
    width, then three ResnetBlocks a level, a 2x upsampling between levels."""

    def __init__(self, img_height, img_width, widths, name=None):
        top, last = widths[-1], len(widths) - 1
        layers = [
            keras.layers.Input((img_height // 8, img_width // 8, LATENT_CHANNELS)),
            keras.layers.Rescaling(1.0 / LATENT_SCALE),
            PaddedConv2D(LATENT_CHANNELS, 1),
            PaddedConv2D(top, 3, padding=1),
            ResnetBlock(top),
            AttentionBlock(top),
            ResnetBlock(top),
        ]
        for level, width in enumerate(reversed(widths)):
            layers += [ResnetBlock(width) for _ in range(3)]
            if level < last:
                layers += [keras.layers.UpSampling2D(2), PaddedConv2D(width, 3, padding=1)]
        layers += [
            keras.layers.GroupNormalization(epsilon=1e-5),
            keras.layers.Activation("swish"),
            PaddedConv2D(3, 3, padding=1),
        ]
        super().__init__(layers, name=name)


class ImageEncoder(keras.Sequential):
    """keras-cv's ImageEncoder (the VAE's encoder) at `widths`: two ResnetBlocks a level, a 2x downsampling after
    each but the last, the middle block, then the 8 channels of moments (`layers[-3]`, what fit trains), the
    quantising 1x1 convolution and the scaled mean."""

    def __init__(self, widths, name=None):
        top, last = widths[-1], len(widths) - 1
        layers = [keras.layers.Input((None, None, 3)), PaddedConv2D(widths[0], 3, padding=1)]
        for level, width in enumerate(widths):
            layers += [ResnetBlock(width), ResnetBlock(width)]
            if level < last:
                layers.append(PaddedConv2D(width, 3, padding=((0, 1), (0, 1)), strides=2))
        layers += [
            ResnetBlock(top),
            AttentionBlock(top),
            ResnetBlock(top),
            keras.layers.GroupNormalization(epsilon=1e-5),
            keras.layers.Activation("swish"),
            PaddedConv2D(2 * LATENT_CHANNELS, 3, padding=1),
            PaddedConv2D(2 * LATENT_CHANNELS, 1),
            keras.layers.Lambda(lambda x: x[..., :LATENT_CHANNELS] * LATENT_SCALE),
        ]
        super().__init__(layers, name=name)


def text_encoder(s, max_length: int) -> TextEncoder:
    check_buildable(s)
    return TextEncoder(max_length, s.text_vocabulary_size, s.cross_attention_dim, s.text_layers, s.text_heads)


def diffusion_model(s, max_length: int) -> DiffusionModel:
    check_buildable(s)
    return DiffusionModel(s.resolution, s.resolution, max_length, list(s.unet_block_out_channels),
                          s.unet_layers_per_block, s.unet_attention_head_dim, s.cross_attention_dim)


def decoder(s) -> Decoder:
    check_buildable(s)
    return Decoder(s.resolution, s.resolution, list(s.vae_block_out_channels))


def image_encoder(s) -> ImageEncoder:
    check_buildable(s)
    return ImageEncoder(list(s.vae_block_out_channels))
