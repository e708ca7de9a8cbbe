"""StableDiffusion v1: VAE-encoder fit to a random latent (bs 8), text-to-image predict per denoising step (bs 13)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from bench.catalogue.spec import TaskSpec, fit_task, load_model_spec, positive_fields
from bench.models.base import COMPILED_TRAIN_STEP


@dataclass(frozen=True)
class StableDiffusionShape:
    resolution: int  # image side; latents are resolution / 8
    text_length: int  # CLIP context length
    # Predict is timed at two denoising step counts (see PREDICT_IN_STEP_PAIRS).
    denoise_steps_low: int
    denoise_steps_high: int
    # Architecture widths, of both families' builds: keras-cv's own classes where they are SD v1's
    # (KERAS_CV_V1_WIDTHS), else keras-cv's layers assembled at them (keras_cv_widths.py); diffusers/transformers.
    unet_block_out_channels: list[int]
    unet_layers_per_block: int
    unet_attention_head_dim: int
    cross_attention_dim: int  # = CLIP text hidden size
    text_layers: int
    text_heads: int
    text_intermediate_dim: int
    text_vocabulary_size: int
    vae_block_out_channels: list[int]
    learning_rate: float

    def __post_init__(self) -> None:
        positive_fields(self)
        if self.resolution % 8:
            raise ValueError("resolution must be a multiple of 8")
        if self.denoise_steps_high <= self.denoise_steps_low:
            raise ValueError("denoise_steps_high must exceed denoise_steps_low")

    @property
    def latent_size(self) -> int:
        return self.resolution // 8


# The widths keras-cv's StableDiffusion classes (TextEncoder, DiffusionModel, Decoder, ImageEncoder) fix: SD v1's.
# A shape at these widths is built by those classes; any other by keras-cv's layers at the shape's widths.
KERAS_CV_V1_WIDTHS = {
    "unet_block_out_channels": [320, 640, 1280, 1280],
    "unet_layers_per_block": 2,
    "unet_attention_head_dim": 8,
    "cross_attention_dim": 768,
    "text_layers": 12,
    "text_heads": 12,
    "text_intermediate_dim": 3072,
    "text_vocabulary_size": 49408,
    "vae_block_out_channels": [128, 256, 512, 512],
}


def at_keras_cv_v1_widths(s: StableDiffusionShape) -> bool:
    """Whether keras-cv's own SD v1 classes build this shape's widths."""
    return all(plain(getattr(s, name)) == v1 for name, v1 in KERAS_CV_V1_WIDTHS.items())


def with_keras_cv_v1_widths(s: StableDiffusionShape) -> StableDiffusionShape:
    """The shape at SD v1's widths (its resolution, text length and step counts kept): what keras-cv's own classes
    build from it."""
    return dataclasses.replace(s, **{name: plain(v1) for name, v1 in KERAS_CV_V1_WIDTHS.items()})


def plain(width):
    """A width as the shape holds it from workload.toml: a list of channels (not a tuple), or a number."""
    return list(width) if isinstance(width, (list, tuple)) else width


# Predict is timed at two denoising-step counts per step; (t_high - t_low) / (high - low) is the per-step figure,
# which removes the text encoder, the VAE decoder and the call overhead from it.
PREDICT_IN_STEP_PAIRS = TaskSpec(
    "predict",
    {"keras": "step-pairs", "native-torch": "step-pairs"},
    unit="ms/denoising step",
    first_step_contains="trace + compile + the first high-step and low-step pipeline calls (their windows summed)",
    derivation="pair-difference",
)



def paper_settings(cell, shape: StableDiffusionShape) -> dict:
    """What a StableDiffusion run must record (the fidelity checks): a compiled fit compiles the whole training step."""
    if cell.backend == "native-torch" and cell.task == "fit":
        return {"compiled_function": COMPILED_TRAIN_STEP if cell.variant == "compiled" else None}
    return {}


SPEC = load_model_spec(
    "stable_diffusion",
    "StableDiffusion",
    StableDiffusionShape,
    tasks=[fit_task(), PREDICT_IN_STEP_PAIRS],
    paper_settings=paper_settings,
)
