"""StableDiffusion's FLOP-counter checks (bench/measure/torch_counter.py): diffusers' UNet (one denoising step is two
of its passes), the VAE encoder's forward (fit's model, set against the Keras build's in tests/test_same_work.py) and
its fit step."""

from __future__ import annotations

import torch

from bench.models.stable_diffusion.native_torch import build_unet, build_vae
from bench.models.stable_diffusion.work import LATENT_CHANNELS, vae_encoder, work
from bench.models.torch_common import on_meta

BATCH = 1


def checks(s, device: str) -> list:
    build = (lambda f: on_meta(f, s)) if device == "meta" else (lambda f: f(s))
    unet, vae = build(build_unet), build(build_vae)
    latents = torch.zeros(2 * BATCH, LATENT_CHANNELS, s.latent_size, s.latent_size, device=device)
    text = torch.zeros(2 * BATCH, s.text_length, s.cross_attention_dim, device=device)
    images = torch.zeros(BATCH, 3, s.resolution, s.resolution, device=device)

    def denoise():  # the unconditional and the conditioned latent, as the pipeline batches them
        with torch.no_grad():
            unet(latents, torch.tensor(10, device=device), encoder_hidden_states=text)

    def encode():
        with torch.no_grad():
            vae.encoder(images)

    def fit():
        vae.encoder(images).sum().backward()

    return [
        (f"predict: one denoising step, batch {BATCH}", denoise, work("native-torch", "predict", BATCH, s).flops),
        (f"VAE encoder forward (fit's model), batch {BATCH}", encode, BATCH * vae_encoder(s).flops),
        (f"fit (VAE encoder forward + backward), batch {BATCH}", fit, work("native-torch", "fit", BATCH, s).flops),
    ]
