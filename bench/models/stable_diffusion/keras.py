"""StableDiffusion v1 on Keras: keras-cv's StableDiffusion (Keras 3 on every backend, tf.keras under Keras 2).

At SD v1's widths (the paper shape: UNet 859.5M, CLIP text encoder 123.1M, VAE 83.7M) the sub-models are keras-cv's
own classes, built with download_weights=False (random weights); at any other widths (smoke) keras-cv's classes,
whose widths are written into them, cannot build them, so keras_cv_widths.py assembles the same flows from keras-cv's
own layers at the shape's widths. Either way they are handed to keras-cv's pipeline, which runs them; the CLIP BPE
vocabulary comes from open_clip's byte-identical copy, checked against the hash keras-cv pins.

As keras-benchmarks v0.0.5:
- fit: the VAE image encoder up to its 8-channel moments (`image_encoder.layers[-3]`, as diffusers'
  `vae.encoder`), Adam + MSE against a random latent, compiled with Keras' default jit_compile.
- predict: `text_to_image` at batch cell.batch_size, timed per denoising step by a high and a low step count per
  cell step (the "step-pairs" driver in bench/measure/drivers.py). XLA except on torch.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.util
from pathlib import Path
from typing import Any

from bench.models.keras_common import (
    SEED,
    KerasWorkload,
    assert_keras_major,
    build_abstractly,
    count_weights,
    reference_jit_compile,
    repeated_batch,
    rng,
)
from bench.models.stable_diffusion import at_keras_cv_v1_widths

PROMPT = "a photograph of an astronaut riding a horse"  # keras-benchmarks' prompt
MAX_PROMPT_LENGTH = 77  # keras-cv's StableDiffusion pads every prompt to this
# The hash keras-cv's SimpleTokenizer pins for https://github.com/openai/CLIP/.../bpe_simple_vocab_16e6.txt.gz
CLIP_BPE_SHA256 = "924691ac288e54409236115652ad4aa250f48203de50a9e4722a6ecd48d6804a"
CLIP_BPE_NAME = "bpe_simple_vocab_16e6.txt.gz"
TIMESTEP_EMBEDDING_V1 = 320  # keras-cv's StableDiffusion._get_timestep_embedding's default width


def clip_bpe_path() -> str:
    """open_clip's copy of the CLIP BPE vocabulary, found without importing open_clip (it imports torch)."""
    spec = importlib.util.find_spec("open_clip")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("open-clip-torch is not installed: it provides the CLIP BPE vocabulary offline")
    path = Path(list(spec.submodule_search_locations)[0]) / CLIP_BPE_NAME
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != CLIP_BPE_SHA256:
        raise RuntimeError(f"{path} has sha256 {digest}, not the {CLIP_BPE_SHA256} keras-cv expects")
    return str(path)


PIPELINE_MODELS = ("text_encoder", "diffusion_model", "decoder")


def pipeline_models(s, names: tuple[str, ...] = PIPELINE_MODELS) -> dict[str, Any]:
    """The pipeline's SD models at the shape's resolution and widths, random weights, by the pipeline's names (those
    asked: the XLA check builds the UNet alone): keras-cv's own classes at SD v1's widths, else keras-cv's layers
    assembled at the shape's."""
    if at_keras_cv_v1_widths(s):
        from keras_cv.models import stable_diffusion as sd

        builders = {
            "text_encoder": lambda: sd.TextEncoder(MAX_PROMPT_LENGTH, download_weights=False),
            "diffusion_model": lambda: sd.DiffusionModel(s.resolution, s.resolution, MAX_PROMPT_LENGTH,
                                                         download_weights=False),
            "decoder": lambda: sd.Decoder(s.resolution, s.resolution, download_weights=False),
        }
    else:
        from bench.models.stable_diffusion import keras_cv_widths as at

        builders = {
            "text_encoder": lambda: at.text_encoder(s, MAX_PROMPT_LENGTH),
            "diffusion_model": lambda: at.diffusion_model(s, MAX_PROMPT_LENGTH),
            "decoder": lambda: at.decoder(s),
        }
    return {name: builders[name]() for name in names}


def image_encoder(s):
    """The VAE's encoder: keras-cv's ImageEncoder at SD v1's widths, else keras-cv's layers at the shape's."""
    if at_keras_cv_v1_widths(s):
        from keras_cv.models import stable_diffusion as sd

        return sd.ImageEncoder(download_weights=False)
    from bench.models.stable_diffusion import keras_cv_widths as at

    return at.image_encoder(s)


def build_pipeline(s, jit_compile: bool):
    """keras-cv StableDiffusion with randomly initialised sub-models (nothing downloaded)."""
    import keras_cv
    from keras_cv.models import stable_diffusion as sd

    if s.text_length != MAX_PROMPT_LENGTH:
        raise ValueError(
            f"keras-cv's StableDiffusion fixes the text length at {MAX_PROMPT_LENGTH}, the shape asks {s.text_length}"
        )
    pipeline = keras_cv.models.StableDiffusion(img_height=s.resolution, img_width=s.resolution, jit_compile=jit_compile)
    # What the pipeline's lazy properties would build, minus the weight downloads.
    parts = {"_tokenizer": sd.SimpleTokenizer(bpe_path=clip_bpe_path())}
    parts.update({f"_{name}": part for name, part in pipeline_models(s).items()})
    for name, part in parts.items():
        if getattr(pipeline, name) is not None:
            raise RuntimeError(f"keras-cv's StableDiffusion already built {name}; its lazy construction changed")
        if jit_compile and name != "_tokenizer":
            part.compile(jit_compile=True)
        setattr(pipeline, name, part)
    if pipeline.diffusion_model is not parts["_diffusion_model"] or pipeline.tokenizer is not parts["_tokenizer"]:
        raise RuntimeError("keras-cv's StableDiffusion did not take the offline sub-models")
    # The pipeline's sinusoidal timestep embedding is 320 wide by default (SD v1's first UNet width): a UNet of
    # other widths takes its own first width.
    width = int(pipeline.diffusion_model.input_shape[1][-1])
    if width != TIMESTEP_EMBEDDING_V1:
        pipeline._get_timestep_embedding = functools.partial(pipeline._get_timestep_embedding, dim=width)
    return pipeline


def build_fit_encoder(s, keras):
    """The VAE encoder up to its 8-channel moments, as keras-benchmarks builds it."""
    encoder = image_encoder(s)
    model = keras.Model(encoder.inputs, encoder.layers[-3].output)
    return encoder, model


def parameter_counts(s, keras_major: int = 3) -> dict[str, int]:
    """The pipeline's three models and the VAE's image encoder (whose fit model is its first layers)."""
    build = lambda: {**pipeline_models(s), "image_encoder": image_encoder(s)}
    return {
        name: count_weights(part.weights) for name, part in build_abstractly(build, keras_major=keras_major).items()
    }


def output_shape(model, keras, input_shape: tuple) -> tuple:
    try:
        return tuple(model.compute_output_shape(input_shape))
    except NotImplementedError:  # Keras 3.0.5 (the 2024 stack): a Functional model has no compute_output_shape
        return tuple(model.compute_output_spec(keras.KerasTensor(input_shape)).shape)


def denoise_steps_keras_cv_takes(s):
    """keras-cv 0.8.2 (the 2024 stack) spaces its timesteps by (1000 - 1) / (num_steps - 1), so it cannot run one
    denoising step: there the smoke pair (1, 11) becomes (2, 11). The per-step time is the difference either way, and
    the settings record the pair that ran. The paper pair (10, 20) is the same on both stacks."""
    import keras_cv

    if s.denoise_steps_low >= 2 or tuple(int(p) for p in keras_cv.__version__.split(".")[:2]) >= (0, 9):
        return s
    return dataclasses.replace(s, denoise_steps_low=2, denoise_steps_high=max(s.denoise_steps_high, 3))


class StableDiffusionKeras(KerasWorkload):
    def setup(self) -> None:
        s, bs, keras = self.shape, self.cell.batch_size, self.keras
        r = rng()
        if self.cell.task == "fit":
            self.encoder, self.model = build_fit_encoder(s, keras)
            assert_keras_major(self.encoder, self.keras_major)
            assert_keras_major(self.model, self.keras_major)
            expected = (None, s.latent_size, s.latent_size, 8)
            out_shape = output_shape(self.model, keras, (None, s.resolution, s.resolution, 3))
            if out_shape != expected:
                raise RuntimeError(f"image encoder output {out_shape}, expected {expected}")
            # keras-benchmarks compiled without jit_compile: Keras 3 "auto" (XLA on TensorFlow/JAX), Keras 2 none.
            self.model.compile(optimizer=keras.optimizers.Adam(learning_rate=s.learning_rate), loss="mse")
            images = r.random((bs, s.resolution, s.resolution, 3), dtype="float32")
            target = r.random((bs, s.latent_size, s.latent_size, 8), dtype="float32")
            self.data = repeated_batch(images, target)
        else:
            self.shape = s = denoise_steps_keras_cv_takes(s)
            self.pipeline = build_pipeline(s, reference_jit_compile(self.cell))
            for part in (self.pipeline.text_encoder, self.pipeline.diffusion_model, self.pipeline.decoder):
                assert_keras_major(part, self.keras_major)
            self.model = self.pipeline.diffusion_model  # the model every timed denoising step runs
            self.images: list[Any] = []

    def call(self, num_steps: int):
        images = self.pipeline.text_to_image(PROMPT, batch_size=self.cell.batch_size, num_steps=num_steps, seed=SEED)
        self.images.append((num_steps, images.shape))
        return images  # NumPy: every sub-model ran through predict_on_batch, so the call is synchronous

    def check(self) -> None:
        if self.cell.task != "predict":
            return
        s = self.shape
        expected = (self.cell.batch_size, s.resolution, s.resolution, 3)
        bad = [shape for _, shape in self.images if tuple(shape) != expected]
        if bad:
            raise RuntimeError(f"text_to_image returned images of shape {bad[0]}, expected {expected}")

    def settings(self) -> dict[str, Any]:
        s = self.shape
        import keras_cv

        out = {
            **super().settings(),
            "resolution": s.resolution,
            "latent_size": s.latent_size,
            "library_versions": {"keras_cv": keras_cv.__version__},
        }
        if self.cell.task == "fit":
            out.update(
                model_class=f"{type(self.encoder).__module__}.{type(self.encoder).__name__} (to layers[-3])",
                trainable_parameters=count_weights(self.model.trainable_weights),
                loss="mse",
                optimizer="Adam",
            )
        else:
            p = self.pipeline
            out.update(
                pipeline_class=f"{type(p).__module__}.{type(p).__name__}",
                pipeline_jit_compile=bool(p.jit_compile),
                denoise_steps_low=s.denoise_steps_low,
                denoise_steps_high=s.denoise_steps_high,
                text_length=MAX_PROMPT_LENGTH,
                guidance_scale=7.5,
                text_encoder_parameters=int(p.text_encoder.count_params()),
                diffusion_model_parameters=int(p.diffusion_model.count_params()),
                decoder_parameters=int(p.decoder.count_params()),
            )
        return out


def create(cell, shape) -> StableDiffusionKeras:
    return StableDiffusionKeras(cell, shape)
