"""StableDiffusion v1: VAE-encoder fit to a random latent (bs 8), text-to-image predict per denoising step (bs 13)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from bench.timing import StepTimer
from bench.workloads import load_model_spec, positive_fields


@dataclass(frozen=True)
class StableDiffusionShape:
    resolution: int  # image side; latents are resolution / 8
    text_length: int  # CLIP context length
    # Predict is timed at two denoising step counts; (t_high - t_low) / (high - low) is the per-step figure,
    # which removes the text encoder and the VAE decoder from it.
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


def drive_step_pairs(generate: Callable[[int], Any], timer: StepTimer, count: int, shape: StableDiffusionShape) -> None:
    """Predict's driver on every framework: per cell step, one synchronised call at the high step count, then one
    at the low. High first, so the first pair's trace + compile lands in its high window and the first-step
    figure includes it, as every workload's first step does (low first would subtract it and read negative)."""
    for _ in range(count):
        for num_steps in (shape.denoise_steps_high, shape.denoise_steps_low):
            timer.begin()
            timer.end(generate(num_steps))
    if len(timer.windows_ns) != 2 * count:
        raise RuntimeError(f"{len(timer.windows_ns)} windows, expected {2 * count} (a high and a low call per step)")


def per_denoising_step(windows_ms: list[float], shape: StableDiffusionShape) -> list[float]:
    """(high - low) / step gap per pair: the text encoder, the VAE decoder and the call overhead cancel."""
    gap = shape.denoise_steps_high - shape.denoise_steps_low
    return [(high - low) / gap for high, low in zip(windows_ms[0::2], windows_ms[1::2])]


class DenoisingStepPairs:
    """Mixin of both StableDiffusion implementations: predict is driven in step pairs and reported per denoising
    step; fit goes to the framework's own driver. The class provides `generate(num_steps)`."""

    def drive(self, timer: StepTimer, count: int) -> None:
        if self.cell.task == "fit":
            return super().drive(timer, count)
        drive_step_pairs(self.generate, timer, count, self.shape)

    def derive(self, windows_ms: list[float]) -> list[float]:
        return windows_ms if self.cell.task == "fit" else per_denoising_step(windows_ms, self.shape)


SPEC = load_model_spec("stable_diffusion", "StableDiffusion", StableDiffusionShape)
