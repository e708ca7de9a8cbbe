"""StableDiffusion v1: VAE-encoder fit to a random latent (bs 8), text-to-image predict per denoising step (bs 13)."""
from __future__ import annotations

from dataclasses import dataclass

from bench.models.base import COMPILED_TRAIN_STEP
from bench.spec import TaskSpec, fit_task, load_model_spec, positive_fields


@dataclass(frozen=True)
class StableDiffusionShape:
    resolution: int  # image side; latents are resolution / 8
    text_length: int  # CLIP context length
    # Predict is timed at two denoising step counts (see PREDICT_IN_STEP_PAIRS).
    denoise_steps_low: int
    denoise_steps_high: int
    # Architecture widths for the native (diffusers/transformers) models; keras-cv's widths are fixed.
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
