"""StableDiffusion v1 in plain PyTorch: a diffusers StableDiffusionPipeline assembled from code-defined configs.

The parts are the SD v1 architectures (CompVis/stable-diffusion-v1-4's model_index) with random weights, their
widths taken from the shape (the paper shape is SD v1: UNet 859.5M, VAE 83.7M, CLIP ViT-L/14 text encoder 123.1M):
UNet2DConditionModel, AutoencoderKL, CLIPTextModel + CLIPTokenizer, a DDIM scheduler with SD v1's noise schedule,
no safety checker. Nothing is downloaded: the tokenizer's vocabulary is written here (byte-level, one token per
character plus the CLIP start/end tokens, no merges), which is all prompt tokenisation needs.

As keras-benchmarks v0.0.5's torch scripts:
- fit: `vae.encoder` (the encoder up to its 2 x latent_channels = 8-channel moments, mean and log-variance, as
  the Keras twin's `image_encoder.layers[-3]`), Adam + MSE against a random (bs, 8, latent, latent) target,
  a plain training loop; the compiled variant compiles the whole training step, `train_step()` (zero_grad,
  forward, MSE, backward, Adam step), with torch.compile(mode="reduce-overhead"), as the reference's `train_fn`.
- predict: pipeline calls (guidance scale 7.5, the reference prompt, batch cell.batch_size) at a high and a low
  step count per cell step, reported per denoising step as the Keras twin does (the "step-pairs" driver in
  bench/measure/drivers.py, per_denoising_step in this package's __init__). The compiled variant
  compiles the UNet (`pipe.unet = torch.compile(pipe.unet, mode="reduce-overhead")`).

Attention: diffusers' default processor, AttnProcessor2_0 (torch's scaled_dot_product_attention), in the VAE's
mid-block and the UNet; CLIP's text encoder runs transformers' configured `_attn_implementation`. Recorded as
`attention_implementation`.

Scheduler: DDIM, not v1-4's default PNDM: PNDM (skip_prk_steps) evaluates the UNet num_steps + 1 times, and
at 1 step only once, so the low/high difference would not be a whole number of UNet evaluations per step; DDIM
evaluates it exactly num_steps times (as keras-cv's sampler), which check() verifies with the pipeline's
per-step callback.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from bench.models.torch_common import (
    COMPILED_TRAIN_STEP,
    SEED,
    TorchWorkload,
    count_parameters,
    data_generator,
    on_meta,
)

PROMPT = "a photograph of an astronaut riding a horse"  # keras-benchmarks' prompt
GUIDANCE_SCALE = 7.5  # diffusers' default and keras-cv's unconditional_guidance_scale
LATENT_CHANNELS = 4
NORM_GROUPS = 32


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2/CLIP's reversible byte -> printable unicode map (the alphabet of a byte-level BPE)."""
    printable = (
        list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    )
    chars = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return dict(zip(printable, map(chr, chars)))


def build_tokenizer(s):
    """A CLIPTokenizer over a byte-level vocabulary defined here: every byte, alone and word-final, no merges.

    The start/end tokens take CLIP's ids (the last two of the text vocabulary), so every id is a valid row of
    the text encoder's embedding.
    """
    from transformers import CLIPTokenizer

    alphabet = list(bytes_to_unicode().values())
    vocab = {c: i for i, c in enumerate(alphabet)}
    vocab.update({c + "</w>": len(alphabet) + i for i, c in enumerate(alphabet)})
    if s.text_vocabulary_size < len(vocab) + 2:
        raise ValueError(
            f"text_vocabulary_size {s.text_vocabulary_size} is smaller than the {len(vocab) + 2}-token byte vocabulary"
        )
    vocab["<|startoftext|>"] = s.text_vocabulary_size - 2
    vocab["<|endoftext|>"] = s.text_vocabulary_size - 1
    import transformers

    if int(transformers.__version__.split(".")[0]) >= 5:
        return CLIPTokenizer(vocab=vocab, merges=[], model_max_length=s.text_length)
    # transformers 4.x (the 2024 stack's 4.38.2) reads the vocabulary and merges from files only: the same ones, written
    # to a scratch folder (the tokenizer keeps them in memory once built)
    import json
    import tempfile

    with tempfile.TemporaryDirectory(prefix="bench-clip-vocab-") as folder:
        vocab_file, merges_file = Path(folder) / "vocab.json", Path(folder) / "merges.txt"
        vocab_file.write_text(json.dumps(vocab))
        merges_file.write_text("#version: 0.2\n")  # the header line CLIP's merges file starts with; no merges
        return CLIPTokenizer(str(vocab_file), str(merges_file), model_max_length=s.text_length)


def text_config(s):
    from transformers import CLIPTextConfig

    return CLIPTextConfig(
        vocab_size=s.text_vocabulary_size,
        hidden_size=s.cross_attention_dim,
        intermediate_size=s.text_intermediate_dim,
        num_hidden_layers=s.text_layers,
        num_attention_heads=s.text_heads,
        max_position_embeddings=s.text_length,
        hidden_act="quick_gelu",
        projection_dim=s.cross_attention_dim,
        bos_token_id=s.text_vocabulary_size - 2,
        eos_token_id=s.text_vocabulary_size - 1,
        pad_token_id=s.text_vocabulary_size - 1,
    )


def build_text_encoder(s):
    from transformers import CLIPTextModel

    return CLIPTextModel(text_config(s))


def build_unet(s):
    """SD v1's UNet2DConditionModel: cross-attention in every down/up block but the lowest-resolution one."""
    from diffusers import UNet2DConditionModel

    levels = len(s.unet_block_out_channels)
    return UNet2DConditionModel(
        sample_size=s.latent_size,
        in_channels=LATENT_CHANNELS,
        out_channels=LATENT_CHANNELS,
        down_block_types=("CrossAttnDownBlock2D",) * (levels - 1) + ("DownBlock2D",),
        up_block_types=("UpBlock2D",) + ("CrossAttnUpBlock2D",) * (levels - 1),
        block_out_channels=tuple(s.unet_block_out_channels),
        layers_per_block=s.unet_layers_per_block,
        attention_head_dim=s.unet_attention_head_dim,  # diffusers' legacy name: heads per attention (8 in SD v1)
        cross_attention_dim=s.cross_attention_dim,
        norm_num_groups=NORM_GROUPS,
    )


def build_vae(s):
    """SD v1's AutoencoderKL (4 latent channels; one 2x downsampling per block but the last)."""
    from diffusers import AutoencoderKL

    levels = len(s.vae_block_out_channels)
    if 2 ** (levels - 1) != 8:
        raise ValueError(
            f"the VAE needs 4 blocks to downsample by 8 (latents are resolution / 8), the shape has {levels}"
        )
    return AutoencoderKL(
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D",) * levels,
        up_block_types=("UpDecoderBlock2D",) * levels,
        block_out_channels=tuple(s.vae_block_out_channels),
        layers_per_block=2,
        latent_channels=LATENT_CHANNELS,
        norm_num_groups=NORM_GROUPS,
        sample_size=s.resolution,
    )


def build_scheduler():
    """DDIM with SD v1's noise schedule (v1-4's scheduler_config betas and offset)."""
    from diffusers import DDIMScheduler

    return DDIMScheduler(
        num_train_timesteps=1000,
        beta_start=0.00085,
        beta_end=0.012,
        beta_schedule="scaled_linear",
        clip_sample=False,
        set_alpha_to_one=False,
        steps_offset=1,
    )


def build_pipeline(s):
    from diffusers import StableDiffusionPipeline

    pipe = StableDiffusionPipeline(
        vae=build_vae(s),
        text_encoder=build_text_encoder(s),
        tokenizer=build_tokenizer(s),
        unet=build_unet(s),
        scheduler=build_scheduler(),
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    pipe.set_progress_bar_config(disable=True)
    return pipe


def parameter_counts(s) -> dict[str, int]:
    return {
        "unet": count_parameters(on_meta(build_unet, s)),
        "vae": count_parameters(on_meta(build_vae, s)),
        "text_encoder": count_parameters(on_meta(build_text_encoder, s)),
        "vae_encoder": count_parameters(
            on_meta(build_vae, s).encoder
        ),  # the part of the VAE that fit trains (the plan's)
    }


def attention_processors(module) -> str:
    """The diffusers attention processors a module uses, e.g. "AttnProcessor2_0 (SDPA)"."""
    names = sorted({type(p).__name__ for p in module.attn_processors.values()})
    return ", ".join(f"{n} (SDPA)" if n == "AttnProcessor2_0" else n for n in names)


class StableDiffusionTorch(TorchWorkload):
    def __init__(self, cell, shape):
        super().__init__(cell, shape)
        self.calls: list[tuple[int, int, tuple[int, ...]]] = []  # (num_steps asked, steps run, image shape)

    def setup(self) -> None:
        s, bs = self.shape, self.cell.batch_size
        g = data_generator()
        if self.cell.task == "fit":
            self.vae = build_vae(s).to(self.device)
            self.model = self.vae.encoder
            self.model.train()
            self.target_shape = (bs, 2 * LATENT_CHANNELS, s.latent_size, s.latent_size)
            self.images = torch.rand(bs, 3, s.resolution, s.resolution, generator=g).to(self.device)
            self.target = torch.rand(self.target_shape, generator=g).to(self.device)
            self.train_step = self.training_step(
                torch.optim.Adam(self.model.parameters(), lr=s.learning_rate), self.images, self.target
            )
            self.output_shapes: list[tuple[int, ...]] = []
            return
        self.pipe = build_pipeline(s).to(self.device)
        self.model = self.pipe.unet  # the model every timed denoising step runs
        if self.compiled:
            self.pipe.unet = self.maybe_compile(self.pipe.unet)

    def step(self) -> torch.Tensor:  # fit
        moments, loss = self.train_step()
        self.output_shapes.append(tuple(moments.shape))
        return loss

    @torch.no_grad()
    def call(self, num_steps: int):
        ran = []

        def count_step(pipe, index, timestep, tensors):
            ran.append(index)
            return tensors

        images = self.pipe(
            [PROMPT] * self.cell.batch_size,
            height=self.shape.resolution,
            width=self.shape.resolution,
            num_inference_steps=num_steps,
            guidance_scale=GUIDANCE_SCALE,
            generator=torch.Generator(self.device).manual_seed(SEED),
            output_type="np",
            callback_on_step_end=count_step,
        ).images
        self.calls.append((num_steps, len(ran), tuple(images.shape)))
        return images  # NumPy: the call has finished

    def check(self) -> None:
        s = self.shape
        if self.cell.task == "fit":
            bad = [shape for shape in self.output_shapes if shape != self.target_shape]
            if bad:
                raise RuntimeError(f"the VAE encoder returned {bad[0]}, the target is {self.target_shape}")
        else:
            expected = (self.cell.batch_size, s.resolution, s.resolution, 3)
            for asked, ran, shape in self.calls:
                if ran != asked:
                    raise RuntimeError(f"a {asked}-step pipeline call ran {ran} denoising steps")
                if shape != expected:
                    raise RuntimeError(f"the pipeline returned images of shape {shape}, expected {expected}")
        super().check()

    def settings(self) -> dict[str, Any]:
        s = self.shape
        out = {**super().settings(), "dtype": "float32", "resolution": s.resolution, "latent_size": s.latent_size}
        if self.cell.task == "fit":
            out.update(
                model_class=f"{type(self.vae).__module__}.{type(self.vae).__name__}.encoder",
                vae_parameters=count_parameters(self.vae),
                target_shape=list(self.target_shape),
                loss="mse",
                optimizer="Adam",
                learning_rate=s.learning_rate,
                compiled_function=COMPILED_TRAIN_STEP if self.compiled else None,
                attention_implementation=attention_processors(self.vae),
            )
        else:
            p = self.pipe
            out.update(
                pipeline_class=f"{type(p).__module__}.{type(p).__name__}",
                scheduler=type(p.scheduler).__name__,
                denoise_steps_low=s.denoise_steps_low,
                denoise_steps_high=s.denoise_steps_high,
                text_length=s.text_length,
                guidance_scale=GUIDANCE_SCALE,
                unet_parameters=count_parameters(self.model),
                vae_parameters=count_parameters(p.vae),
                text_encoder_parameters=count_parameters(p.text_encoder),
                compiled_module="unet" if self.compiled else None,
                attention_implementation={
                    "unet": attention_processors(self.model),
                    "vae": attention_processors(p.vae),
                    "text_encoder": p.text_encoder.config._attn_implementation,
                },
            )
        return out


def create(cell, shape) -> StableDiffusionTorch:
    return StableDiffusionTorch(cell, shape)
