"""One parity step inside a framework env (`python -m bench.studies.parity.worker <action> <model> <folder>`): build the
smoke model, take or give its weights, run it on the shared inputs and write its outputs to <folder> (.npz).

Actions: `keras` (Keras 3 on this env's backend: load <model>.weights.h5 from the folder, else build with seeded random
weights and save them there), `native-export` (native PyTorch, random weights saved with save_pretrained),
`keras-import` (keras-hub's converter loads that folder), `native-compile` (native PyTorch eager and torch.compile),
`keras-jit` (Keras 3's predict step eager and jit-compiled), `parameter-counts` (the parameters per submodule,
where no converter carries weights across)."""
from __future__ import annotations

import contextlib
import gc
import os
import sys
import time
from pathlib import Path

import numpy as np

from bench.base.atomic import write_json_atomic, write_stream_atomic
from bench.catalogue.registry import get_model
from bench.measure.env_process import enter_env
from bench.models.base import SEED

BATCH = 2  # a batch dimension exercised, at the least cost
IMAGE_MODELS = ("sam", "stable_diffusion")


def batch_for(model: str, profile: str) -> int:
    """The shared inputs' batch: BATCH, or 1 for SAM and StableDiffusion above the smoke shapes, whose fit step's
    float32 activations at 1024 and 512 pixels with batch 2 ran JAX out of a 23 GiB machine's memory (the published
    SAM fit is batch 1 too)."""
    return 1 if model in IMAGE_MODELS and profile != "smoke" else BATCH


def inputs_for(model: str, s) -> dict[str, np.ndarray]:
    """The shared inputs (Keras names) and labels: seeded, the same in every env."""
    r = np.random.default_rng(SEED)
    if model == "bert":
        return {
            "token_ids": r.integers(0, s.vocabulary_size, (BATCH, s.sequence_length), dtype="int32"),
            "segment_ids": r.integers(0, 2, (BATCH, s.sequence_length), dtype="int32"),
            "padding_mask": np.ones((BATCH, s.sequence_length), dtype=bool),
            "labels": r.integers(0, s.num_classes, (BATCH,), dtype="int32"),
        }
    ids = r.integers(1, s.vocabulary_size, (BATCH, s.fit_sequence_length + 1), dtype="int32")
    return {"token_ids": ids[:, :-1], "padding_mask": np.ones((BATCH, s.fit_sequence_length), dtype=bool),
            "labels": ids[:, 1:]}


class Stages:
    """Prints each stage's seconds to the step's log (results/logs/parity/): where a slow check spends its time."""

    def __init__(self):
        self.last = time.monotonic()

    def __call__(self, name: str) -> None:
        now = time.monotonic()
        print(f"parity stage: {name} in {now - self.last:.1f} s", file=sys.stderr, flush=True)
        self.last = now


def save_outputs(path: Path, arrays: dict) -> None:
    arrays = {k: np.asarray(v, dtype=np.float32) for k, v in arrays.items()}
    write_stream_atomic(path, lambda f: np.savez(f, **arrays))


def build_keras(keras, model: str, s):
    """The Keras 3 model as the benchmark builds it (bench/models/<model>/keras.py), in float32."""
    import keras_hub

    if model == "bert":
        from bench.models.bert.keras import build_backbone

        return keras_hub.models.BertTextClassifier(
            backbone=build_backbone(keras_hub, s), num_classes=s.num_classes, preprocessor=None
        )
    import importlib

    from bench.models.keras_llm import attention_layers, build_causal_lm, disable_fused_attention

    workload = {"gemma": "GemmaKeras", "mistral": "MistralKeras"}[model]
    cls = getattr(importlib.import_module(f"bench.models.{model}.keras"), workload)
    built = build_causal_lm(keras_hub, cls.backbone_class, cls.task_class, cls.backbone_kwargs(s), "float32")
    if not s.keras_fused_attention:  # the path the benchmark times at this shape
        disable_fused_attention(keras, attention_layers(built))
    return built


def loss_and_gradient_norm(keras, model, inputs, labels: np.ndarray, loss_fn) -> tuple[float, float]:
    """One fit step's loss and the global norm of its gradients, by each backend's own autodiff (dropout off:
    training=False, so the step is the same function everywhere)."""
    backend = keras.backend.backend()
    weights = model.trainable_variables
    if backend == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(inputs, training=False))
        grads = tape.gradient(loss, weights)
    elif backend == "torch":
        loss = loss_fn(labels, model(inputs, training=False))
        loss.backward()
        grads = [w.value.grad for w in weights]
    else:
        import jax

        def loss_of(trainable, non_trainable):
            y, _ = model.stateless_call(trainable, non_trainable, inputs, training=False)
            return loss_fn(labels, y)

        loss, grads = jax.value_and_grad(loss_of)(
            [w.value for w in weights], [w.value for w in model.non_trainable_variables]
        )
    norm = np.sqrt(sum(float(np.sum(np.square(keras.ops.convert_to_numpy(g).astype(np.float64)))) for g in grads))
    return float(keras.ops.convert_to_numpy(loss)), float(norm)


def sam_case(keras, s, batch: int = BATCH):
    """SAM as the benchmark runs it: predict = the whole segmenter on images and the point prompt; fit = the image
    encoder alone against a seeded random feature map, MSE (bench/models/sam/keras.py)."""
    from bench.models.sam.keras import build_sam_keras3, point_prompts

    segmenter, image_encoder = build_sam_keras3(s)
    r = np.random.default_rng(SEED)
    images = r.random((batch, s.image_size, s.image_size, 3), dtype="float32")
    target = r.random((batch, s.feature_size, s.feature_size, s.embed_dim), dtype="float32")

    def outputs():
        out = segmenter({"images": images, **point_prompts(s, batch)}, training=False)
        return {f"{key}": keras.ops.convert_to_numpy(value) for key, value in out.items()}

    return segmenter, outputs, (image_encoder, images, target, keras.losses.MeanSquaredError())


def text_case(keras, model: str, s):
    built = build_keras(keras, model, s)
    data = inputs_for(model, s)
    labels = data.pop("labels")

    def outputs():
        out = {"logits": keras.ops.convert_to_numpy(built(data, training=False))}
        if model == "bert":
            out["sequence_output"] = keras.ops.convert_to_numpy(built.backbone(data)["sequence_output"])
        return out

    return built, outputs, (built, data, labels, keras.losses.SparseCategoricalCrossentropy(from_logits=True))


class Recorder:
    """Stands in for one of the pipeline's sub-models: runs it exactly as the pipeline asks (predict_on_batch) and
    keeps each call's input and output, so the step's float32 intermediates are compared, not its uint8 image."""

    def __init__(self, model):
        self.model, self.calls = model, []

    def predict_on_batch(self, x):
        y = self.model.predict_on_batch(x)
        self.calls.append((x, y))
        return y


def stable_diffusion_case(keras, s, batch: int = BATCH):
    """StableDiffusion as the benchmark builds it (bench/models/stable_diffusion/keras.py: keras-cv's pipeline, XLA
    except on torch). Predict: the prompt's text encoding, then generate_image's one denoising step (the unconditional
    and conditional UNet calls, guidance, the DDIM update) on seeded noise, then the decoder: the pipeline's own code,
    each sub-model's call recorded. Fit: the VAE image encoder to its 8-channel moments, MSE against a seeded random
    latent (the benchmark's fit model)."""
    from bench.models.keras_common import reference_jit_compile
    from bench.models.stable_diffusion.keras import PROMPT, build_fit_encoder, build_pipeline

    class Cell:  # what reference_jit_compile reads: the benchmark's choice of XLA on this backend
        backend = keras.backend.backend()

    image_encoder, fit_model = build_fit_encoder(s, keras)
    r = np.random.default_rng(SEED)
    noise = r.standard_normal((batch, s.latent_size, s.latent_size, 4), dtype="float32")
    images = r.random((batch, s.resolution, s.resolution, 3), dtype="float32")
    target = r.random((batch, s.latent_size, s.latent_size, 8), dtype="float32")
    fit_step = (fit_model, images, target, keras.losses.MeanSquaredError())
    pipeline = build_pipeline(s, reference_jit_compile(Cell))
    parts = {"text_encoder": pipeline.text_encoder, "diffusion_model": pipeline.diffusion_model,
             "decoder": pipeline.decoder, "image_encoder": image_encoder}

    def outputs():
        recorders = {name: Recorder(parts[name]) for name in ("text_encoder", "diffusion_model", "decoder")}
        for name, recorder in recorders.items():
            setattr(pipeline, f"_{name}", recorder)
        context = pipeline.encode_text(PROMPT)
        pipeline.generate_image(context, batch_size=batch, num_steps=1, diffusion_noise=noise)
        (_, conditional), (_, unconditional) = recorders["text_encoder"].calls
        (_, eps_unconditional), (_, eps_conditional) = recorders["diffusion_model"].calls
        ((latent, decoded),) = recorders["decoder"].calls
        named = {"context": conditional, "unconditional_context": unconditional,
                 "noise_prediction_unconditional": eps_unconditional, "noise_prediction": eps_conditional,
                 "denoised_latent": latent, "decoded": decoded}
        return {key: keras.ops.convert_to_numpy(value) for key, value in named.items()}

    return parts, outputs, fit_step


def keras_case(keras, model: str, s, batch: int = BATCH):
    """(the models whose weights are carried, by name; the outputs on the shared inputs; the fit step's arguments)."""
    if model == "stable_diffusion":
        return stable_diffusion_case(keras, s, batch)
    built, outputs, fit_step = sam_case(keras, s, batch) if model == "sam" else text_case(keras, model, s)
    return {"": built}, outputs, fit_step


def weights_path(folder: Path, model: str, part: str) -> Path:
    return folder / f"{model}{'-' + part if part else ''}.weights.h5"


def outputs_context(keras):
    """What the outputs are computed under: no autograd graph on torch, where a direct call of the model would keep
    every activation for a backward pass (SAM's ViT-H at 1024 pixels: over 23 GiB), as predict's own loop does not."""
    if keras.backend.backend() != "torch":
        return contextlib.nullcontext()
    import torch

    return torch.no_grad()


def keras_side(model: str, folder: Path, profile: str = "smoke", dtype: str = "float32",
               outputs_only: bool = False) -> None:
    import keras

    s = get_model(model).shape(profile)
    keras.config.set_dtype_policy(dtype)
    keras.utils.set_random_seed(SEED)
    stage = Stages()
    parts, outputs, fit_step = keras_case(keras, model, s, batch_for(model, profile))
    stage("built")
    for part, built in parts.items():
        weights = weights_path(folder, model, part)
        if weights.exists():
            built.load_weights(str(weights))
        else:  # the first backend: its random weights are the ones every other backend loads
            built.save_weights(str(weights))
    stage("weights loaded or saved")
    with outputs_context(keras):
        out = outputs()
    stage("outputs")
    del parts, outputs  # StableDiffusion's text encoder and UNet: their memory back before the fit step's gradients
    gc.collect()
    if not outputs_only:  # outputs_only: the machine cannot hold the fit step (run.py fit_step_too_large)
        out["loss"], out["gradient_norm"] = loss_and_gradient_norm(keras, *fit_step)
        stage("fit step's loss and gradients")
    save_outputs(folder / f"{model}__keras-{keras.backend.backend()}.npz", out)


def torch_inputs(data: dict) -> dict:
    import torch

    return {
        "input_ids": torch.as_tensor(data["token_ids"], dtype=torch.long),
        "token_type_ids": torch.as_tensor(data["segment_ids"], dtype=torch.long),
        "attention_mask": torch.as_tensor(data["padding_mask"], dtype=torch.long),
    }


def native_bert(s):
    import torch

    from bench.models.bert.native_torch import build_model

    torch.manual_seed(SEED)
    return build_model(s).eval()


NEW_TOKENS = 4  # greedy decoding's first tokens compared between the two sides
PROMPT_LENGTH = 6


def native_lm(model: str, s):
    """The native *ForCausalLM as the benchmark configures it (bench/models/<model>/native_torch.py), in float32."""
    import importlib

    import torch
    import transformers

    workload = {"gemma": "GemmaTorch", "mistral": "MistralTorch"}[model]
    cls = getattr(importlib.import_module(f"bench.models.{model}.native_torch"), workload)
    torch.manual_seed(SEED)
    native = getattr(transformers, cls.model_class)._from_config(cls.build_config(s), dtype=torch.float32).eval()
    native.generation_config.eos_token_id = None  # random weights: no stop token, every call writes NEW_TOKENS
    return native


def native_export(model: str, folder: Path, profile: str = "smoke") -> None:
    """Native random weights saved in transformers' format (save_pretrained), and the native outputs on them."""
    import torch

    s = get_model(model).shape(profile)
    data = inputs_for(model, s)
    if model == "bert":
        native = native_bert(s)
        native.bert.save_pretrained(folder / f"{model}-transformers")
        from transformers.activations import ACT2FN

        with torch.no_grad():
            out = native.bert(**torch_inputs(data))
            # The same weights with GELU's tanh approximation, keras-hub 0.32's BertBackbone's (its encoder layers'
            # activation=gelu_approximate) where transformers' "gelu" is the exact erf form: tells that difference
            # from any other.
            for layer in native.bert.encoder.layer:
                layer.intermediate.intermediate_act_fn = ACT2FN["gelu_pytorch_tanh"]
            tanh = native.bert(**torch_inputs(data))
        save_outputs(folder / f"{model}__native-torch.npz",
                     {"sequence_output": out.last_hidden_state.numpy(), "pooled_output": out.pooler_output.numpy(),
                      "sequence_output_tanh_gelu": tanh.last_hidden_state.numpy(),
                      "pooled_output_tanh_gelu": tanh.pooler_output.numpy()})
        return
    native = native_lm(model, s)
    native.save_pretrained(folder / f"{model}-transformers")
    ids = torch.as_tensor(data["token_ids"], dtype=torch.long)
    with torch.no_grad():
        logits = native(input_ids=ids, attention_mask=torch.ones_like(ids)).logits.numpy()
        prompt = ids[:, :PROMPT_LENGTH]
        tokens = native.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False,
                                 max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, pad_token_id=0)
        # The same model with its weights rounded through float16, as keras-hub 0.32's Mistral converter loads them:
        # tells a converter's rounding from a different function.
        for parameter in native.parameters():
            parameter.copy_(parameter.half().float())
        rounded = native(input_ids=ids, attention_mask=torch.ones_like(ids)).logits.numpy()
    save_outputs(folder / f"{model}__native-torch.npz", {"logits": logits, "logits_float16_weights": rounded,
                                                         "greedy_tokens": tokens[:, PROMPT_LENGTH:].numpy()})


def keras_import(model: str, folder: Path, profile: str = "smoke") -> None:
    """keras-hub's own converter loads the transformers folder (offline: a local path, no hub)."""
    import keras
    import keras_hub

    keras.config.set_dtype_policy("float32")
    s = get_model(model).shape(profile)
    data = inputs_for(model, s)
    data.pop("labels")
    preset = str(folder / f"{model}-transformers")
    if model == "bert":
        out = keras_hub.models.BertBackbone.from_preset(preset)(data)
        save_outputs(folder / f"{model}__keras-import.npz",
                     {"sequence_output": keras.ops.convert_to_numpy(out["sequence_output"]),
                      "pooled_output": keras.ops.convert_to_numpy(out["pooled_output"])})
        return
    from bench.models.keras_llm import attention_layers, disable_fused_attention

    name = {"gemma": "Gemma", "mistral": "Mistral"}[model]
    backbone = getattr(keras_hub.models, f"{name}Backbone").from_preset(preset)
    causal_lm = getattr(keras_hub.models, f"{name}CausalLM")(backbone=backbone, preprocessor=None)
    if not s.keras_fused_attention:
        disable_fused_attention(keras, attention_layers(causal_lm))
    logits = keras.ops.convert_to_numpy(causal_lm(data))
    causal_lm.compile(sampler="greedy")
    total = PROMPT_LENGTH + NEW_TOKENS
    token_ids = np.zeros((BATCH, total), dtype="int32")
    token_ids[:, :PROMPT_LENGTH] = data["token_ids"][:, :PROMPT_LENGTH]
    padding_mask = np.zeros((BATCH, total), dtype=bool)
    padding_mask[:, :PROMPT_LENGTH] = True
    generated = causal_lm.generate({"token_ids": token_ids, "padding_mask": padding_mask}, stop_token_ids=None)
    save_outputs(folder / f"{model}__keras-import.npz",
                 {"logits": logits, "greedy_tokens": np.asarray(generated["token_ids"])[:, PROMPT_LENGTH:total]})


def native_compile(model: str, folder: Path, profile: str = "smoke") -> None:
    """The same native module, eager and through torch.compile (inductor), on the same inputs."""
    import torch

    s = get_model(model).shape(profile)
    native = native_bert(s)
    inputs = torch_inputs(inputs_for(model, s))
    with torch.no_grad():
        eager = native(**inputs).logits.numpy()
        compiled = torch.compile(native)(**inputs).logits.numpy()
    save_outputs(folder / f"{model}__torch-compile.npz", {"eager": eager, "compiled": compiled})


def keras_jit(model: str, folder: Path, profile: str = "smoke", dtype: str = "float32") -> None:
    """The same Keras 3 model (the shared weights where the folder has them) on the same inputs, its predict step run
    eagerly and jit-compiled (XLA on JAX and TensorFlow, torch.compile on PyTorch): what the suite times as Keras 3's
    step against the eager step the overhead study times beside it."""
    import keras

    s = get_model(model).shape(profile)
    keras.config.set_dtype_policy(dtype)
    keras.utils.set_random_seed(SEED)
    built = build_keras(keras, model, s)
    data = inputs_for(model, s)
    data.pop("labels")
    weights = folder / f"{model}.weights.h5"
    if weights.exists():
        built.load_weights(str(weights))
    out = {}
    for jit in (False, True):
        side = "jit" if jit else "eager"
        built.compile(jit_compile=jit)
        out[side] = keras.ops.convert_to_numpy(built.predict_on_batch(data))
        if model == "bert":  # the 2-class logits of a random head are small: the backbone's output tells more
            built.backbone.compile(jit_compile=jit)
            sequence = built.backbone.predict_on_batch(data)["sequence_output"]
            out[f"{side}_sequence_output"] = keras.ops.convert_to_numpy(sequence)
    save_outputs(folder / f"{model}__keras-jit-{keras.backend.backend()}.npz", out)


def parameter_counts(model: str, folder: Path, env: str, profile: str = "smoke") -> None:
    """The parameters per submodule at the profile's shape, as the benchmark builds the model in this env (built
    abstractly or on the meta device: no weights allocated)."""
    import importlib

    s = get_model(model).shape(profile)
    if env == "native-torch":
        counts = importlib.import_module(f"bench.models.{model}.native_torch").parameter_counts(s)
    else:
        counts = importlib.import_module(f"bench.models.{model}.keras").parameter_counts(s, 3)
    write_json_atomic(folder / f"{model}__counts-{env}.json", counts)


ACTIONS = {
    "keras": lambda model, folder, env, a: keras_side(model, folder, a.profile, a.dtype, a.outputs_only),
    "native-export": lambda model, folder, env, a: native_export(model, folder, a.profile),
    "keras-import": lambda model, folder, env, a: keras_import(model, folder, a.profile),
    "native-compile": lambda model, folder, env, a: native_compile(model, folder, a.profile),
    "keras-jit": lambda model, folder, env, a: keras_jit(model, folder, a.profile, a.dtype),
    "parameter-counts": lambda model, folder, env, a: parameter_counts(model, folder, env, a.profile),
}


def main(argv: list[str]) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.studies.parity.worker")
    parser.add_argument("action", choices=ACTIONS)
    parser.add_argument("model")
    parser.add_argument("folder", type=Path)
    parser.add_argument("env")
    parser.add_argument("--profile", default="smoke")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu", help="gpu: bfloat16's (run.py's choice)")
    parser.add_argument("--outputs-only", action="store_true", help="leave the fit step out (too large to hold)")
    args = parser.parse_args(argv)
    if args.device == "cpu":  # float32 is the CPU's: a GPU's TF32 matmuls would not compute float32
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    enter_env(args.env, uses_jax=args.env == "jax", on_gpu=args.device == "gpu")
    ACTIONS[args.action](args.model, args.folder, args.env, args)


if __name__ == "__main__":
    main(sys.argv[1:])
