"""Architectural fidelity: at the paper shape every model has its published parameter count.

Nothing is downloaded and no 7B model is allocated: native PyTorch models are built on the meta device,
Keras 3 models with their variables deferred (StatelessScope), Keras 2 ones (BERT, SAM) for real. The Keras
figures are checked against the `params` their own libraries publish for the matching preset; the native
PyTorch ones against the published sizes of the checkpoints the reference downloaded.
"""
import json
import os
import subprocess

import pytest
from conftest import REPO, env_python

from bench.catalogue.backends import cell_environment

pytestmark = [pytest.mark.envs, pytest.mark.slow]  # framework builds, no timing: beside the cells in `make test`

# Published sizes of the checkpoints keras-benchmarks v0.0.5's torch scripts loaded (exact counts of their modules).
NATIVE_TORCH = {
    "bert": {"backbone": 108_310_272},  # bert-base-cased, BertModel (108.3M)
    "gemma": {"causal_lm": 8_537_680_896},  # google/gemma-7b (8.54B)
    "mistral": {"causal_lm": 7_241_732_096},  # mistralai/Mistral-7B-v0.1 (7.24B)
    "stable_diffusion": {
        "unet": 859_520_964,
        "vae": 83_653_863,
        "text_encoder": 123_060_480,
    },  # SD v1 (859.5M, 83.7M, 123.1M)
    "sam": {"sam": 641_090_608},  # segment-anything sam_vit_h (641.1M)
}

PROBE = r"""
import importlib, json, sys
from bench.catalogue.registry import get_model
family, keras_major, models = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
out = {}
for name in models:
    module = importlib.import_module(f"bench.models.{name}.{family}")
    shape = get_model(name).shape("paper")
    out[name] = module.parameter_counts(shape) if family == "native_torch" else module.parameter_counts(shape, keras_major)
if family == "keras":
    nlp = importlib.import_module("keras_nlp" if keras_major == 2 else "keras_hub")
    import keras_cv
    presets = {
        "bert": nlp.models.BertBackbone.presets["bert_base_en"],
        # keras-hub's metadata swaps sam_huge_sa1b and sam_large_sa1b (312M vs 641M); keras-cv's is right.
        "sam": keras_cv.models.SegmentAnythingModel.presets["sam_huge_sa1b"],
    }
    if keras_major == 3:
        presets["gemma"] = nlp.models.GemmaBackbone.presets["gemma_7b_en"]
        presets["mistral"] = nlp.models.MistralBackbone.presets["mistral_7b_en"]
    out["published"] = {k: v["metadata"]["params"] for k, v in presets.items()}
print("COUNTS " + json.dumps(out))
"""


def counts(backend: str, family: str, keras_major: int, models: list[str]) -> dict:
    python = env_python(backend)
    env = {**os.environ, **cell_environment(backend), "JAX_PLATFORMS": "cpu"}
    out = subprocess.run(
        [str(python), "-c", PROBE, family, str(keras_major), *models],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    line = next(line for line in out.stdout.splitlines() if line.startswith("COUNTS "))
    return json.loads(line[len("COUNTS ") :])


def test_native_torch_models_have_the_published_sizes():
    got = counts("native-torch", "native_torch", 0, list(NATIVE_TORCH))
    assert {model: {part: got[model][part] for part in parts} for model, parts in NATIVE_TORCH.items()} == NATIVE_TORCH
    assert got["bert"]["classifier"] == got["bert"]["backbone"] + 768 * 2 + 2  # the 2-class head on the pooled output


def test_keras3_models_have_their_presets_sizes():
    got = counts("jax", "keras", 3, ["bert", "gemma", "mistral", "sam", "stable_diffusion"])
    published = got.pop("published")
    assert got["bert"]["backbone"] == published["bert"] == 108_310_272
    assert got["gemma"]["backbone"] == published["gemma"] == 8_537_680_896
    assert got["mistral"]["backbone"] == published["mistral"] == 7_241_732_096
    assert got["sam"]["sam"] == published["sam"] == 641_090_864
    # segment-anything's vit_h: the same image encoder; Keras keeps one embed_dim-sized weight more (256).
    assert got["sam"]["sam"] - NATIVE_TORCH["sam"]["sam"] == 256
    # keras-cv's SD v1 has no published sizes of its own: it must equal the diffusers/transformers parts.
    sd, torch_sd = got["stable_diffusion"], NATIVE_TORCH["stable_diffusion"]
    assert sd["diffusion_model"] == torch_sd["unet"]
    assert sd["text_encoder"] == torch_sd["text_encoder"]
    assert sd["image_encoder"] + sd["decoder"] == torch_sd["vae"]


def test_keras2_models_have_their_presets_sizes():
    """Keras 2 (keras-nlp 0.12 / keras-cv on tf_keras) builds the same architectures."""
    got = counts("keras2", "keras", 2, ["bert", "sam"])
    published = got.pop("published")
    assert got["bert"]["backbone"] == published["bert"] == 108_310_272
    assert got["sam"]["sam"] == published["sam"] == 641_090_864
