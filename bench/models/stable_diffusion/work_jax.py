"""StableDiffusion's XLA checks (bench/measure/xla_counter.py): the Keras models as bench/models/stable_diffusion/
keras.py builds them (keras-cv's own SD v1 classes at v1's widths, keras-cv's layers at the shape's otherwise), on
JAX: one denoising step (the UNet on the unconditional and the conditioned latent, as the pipeline calls it twice),
the VAE encoder's forward to its 8-channel moments (fit's model) and its fit step (MSE's gradient for every weight; no
optimizer). Their traced counts, set against native PyTorch's, say whether the two builds do the same work
(tests/test_same_work.py). The fit step's traced count is about 2% above the formula at smoke widths: keras-cv's
PaddedConv2D pads explicitly (ZeroPadding2D), so each convolution's input gradient is computed over the padded border
too (the forward counts agree exactly)."""

from __future__ import annotations

BATCH = 1


def checks(s) -> list:
    import jax
    import jax.numpy as jnp
    import keras

    from bench.models.stable_diffusion.keras import MAX_PROMPT_LENGTH, build_fit_encoder, pipeline_models
    from bench.models.stable_diffusion.work import LATENT_CHANNELS, vae_encoder, work

    unet = pipeline_models(s, ("diffusion_model",))["diffusion_model"]
    _, encoder = build_fit_encoder(s, keras)
    latent = jnp.zeros((2 * BATCH, s.latent_size, s.latent_size, LATENT_CHANNELS))
    timestep = jnp.zeros((2 * BATCH, int(unet.input_shape[1][-1])))
    context = jnp.zeros((2 * BATCH, MAX_PROMPT_LENGTH, int(unet.input_shape[2][-1])))
    images = jnp.zeros((BATCH, s.resolution, s.resolution, 3))
    target = jnp.zeros((BATCH, s.latent_size, s.latent_size, 2 * LATENT_CHANNELS))
    loss_fn = keras.losses.MeanSquaredError()

    def denoise(variables, latent, timestep, context):
        return unet.stateless_call(variables, [], [latent, timestep, context])[0]

    def encode(trainable, images):
        return encoder.stateless_call(trainable, [], images)[0]

    def fit(trainable, images):
        def loss(t):
            return loss_fn(target, encoder.stateless_call(t, [], images, training=True)[0])

        return jax.grad(loss)(trainable)

    return [
        (f"predict: one denoising step, batch {BATCH}", denoise,
         ([v.value for v in unet.trainable_variables], latent, timestep, context),
         work("keras", "predict", BATCH, s).flops),
        (f"VAE encoder forward (fit's model), batch {BATCH}", encode,
         ([v.value for v in encoder.trainable_variables], images), BATCH * vae_encoder(s).flops),
        (f"fit (VAE encoder forward + backward), batch {BATCH}", fit,
         ([v.value for v in encoder.trainable_variables], images), work("keras", "fit", BATCH, s).flops),
    ]
