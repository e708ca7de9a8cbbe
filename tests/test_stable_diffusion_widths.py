"""StableDiffusion's Keras build at each profile's widths (bench/models/stable_diffusion/keras.py): at the smoke
widths keras-cv's layers, assembled by keras_cv_widths.py, do native PyTorch's work a step (counted from both built
models: JAX's traced program against torch's FLOP counter) with the same parameters per part; at the paper widths the
build is keras-cv's own SD v1 classes, as before, and keras_cv_widths.py's flows at those widths are keras-cv's weight
for weight. Nothing is allocated at the paper widths (Keras 3's StatelessScope)."""
import json
import os
import subprocess

import pytest
from conftest import REPO, env_python
from test_fidelity import NATIVE_TORCH

from bench.catalogue.backends import cell_environment
from bench.catalogue.registry import get_model, plan_cells
from bench.catalogue.work import cell_work
from bench.judge.same_work import TOLERANCE, apart

pytestmark = [pytest.mark.envs, pytest.mark.slow]  # framework builds, no timing

PREFIX = "SD "
KERAS_PROBE = r"""
import json, sys
from bench.catalogue.registry import get_model
from bench.models.keras_common import build_abstractly
from bench.models.stable_diffusion import keras as sd_keras, keras_cv_widths as at, work_jax
from bench.measure.xla_counter import traced_flops
out = {}
for profile in sys.argv[1:]:
    s = get_model("stable_diffusion").shape(profile)
    found = out[profile] = {"counts": sd_keras.parameter_counts(s, 3)}
    if profile == "smoke":  # the traced step: cheap at the smoke widths only
        found["flops"] = {label: traced_flops(f, args) for label, f, args, _ in work_jax.checks(s)}
        continue
    built = build_abstractly(lambda: {**sd_keras.pipeline_models(s), "image_encoder": sd_keras.image_encoder(s)})
    found["classes"] = {name: f"{type(m).__module__}.{type(m).__name__}" for name, m in built.items()}
    assembled = build_abstractly(lambda: {"text_encoder": at.text_encoder(s, sd_keras.MAX_PROMPT_LENGTH),
                                          "diffusion_model": at.diffusion_model(s, sd_keras.MAX_PROMPT_LENGTH),
                                          "decoder": at.decoder(s), "image_encoder": at.image_encoder(s)})
    shapes = lambda m: [list(w.shape) for w in m.weights]
    found["same_weights"] = {name: shapes(m) == shapes(built[name]) for name, m in assembled.items()}
print("SD " + json.dumps(out))
"""
NATIVE_PROBE = r"""
import json
from bench.catalogue.registry import get_model
from bench.models.stable_diffusion import native_torch
from bench.measure.torch_counter import run
s = get_model("stable_diffusion").shape("smoke")
print("SD " + json.dumps({"counts": native_torch.parameter_counts(s),
                          "flops": {r["check"]: r["counted"] for r in run("smoke", ["stable_diffusion"])}}))
"""


def probe(backend: str, script: str, *args: str) -> dict:
    env = {**os.environ, **cell_environment(backend), "JAX_PLATFORMS": "cpu"}
    out = subprocess.run([str(env_python(backend)), "-c", script, *args], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-4000:]
    line = next(line for line in out.stdout.splitlines() if line.startswith(PREFIX))
    return json.loads(line[len(PREFIX):])


def test_the_smoke_keras_build_does_native_pytorchs_work_a_step():
    keras, native = probe("jax", KERAS_PROBE, "smoke")["smoke"], probe("native-torch", NATIVE_PROBE)
    k, n = keras["counts"], native["counts"]
    assert (k["diffusion_model"], k["text_encoder"], k["image_encoder"] + k["decoder"]) == (
        n["unet"], n["text_encoder"], n["vae"]), (k, n)
    # what the work per step counts: a denoising step's two UNet passes, and the VAE encoder's forward that fit
    # trains (its backward is 2 x that in both families' rule; the Keras program's explicit padding adds 2% there)
    compared = [label for label in keras["flops"] if "forward + backward" not in label]
    assert len(compared) == 2 and set(compared) <= set(native["flops"]), (keras["flops"], native["flops"])
    for label in compared:
        assert not apart(keras["flops"][label], native["flops"][label]), (label, keras["flops"], native["flops"])
    shape = get_model("stable_diffusion").shape("smoke")
    for cell in plan_cells("smoke", models=["stable_diffusion"], backends=["jax", "native-torch"]):
        ours = cell_work("stable_diffusion", "keras", cell.task, cell.batch_size, shape)
        theirs = cell_work("stable_diffusion", "native-torch", cell.task, cell.batch_size, shape)
        assert abs(ours.flops - theirs.flops) <= TOLERANCE * theirs.flops and ours.bytes == theirs.bytes, cell.key


@pytest.mark.extended  # make test-extended: make test checks the paper build's sizes (test_fidelity.py's Keras 3 sizes)
def test_the_paper_keras_build_is_keras_cvs_own_sd_v1():
    keras = probe("jax", KERAS_PROBE, "paper")["paper"]
    assert all(c.startswith("keras_cv.src.models.stable_diffusion.") for c in keras["classes"].values()), keras
    counts, published = keras["counts"], NATIVE_TORCH["stable_diffusion"]
    assert counts["diffusion_model"] == published["unet"] == 859_520_964
    assert counts["text_encoder"] == published["text_encoder"]
    assert counts["image_encoder"] + counts["decoder"] == published["vae"]
    # the smoke build's flows, at SD v1's widths, are keras-cv's classes weight for weight
    assert keras["same_weights"] == dict.fromkeys(keras["classes"], True), keras["same_weights"]
    shape = get_model("stable_diffusion").shape("paper")
    for task, batch in (("fit", 8), ("predict", 13)):
        ours = cell_work("stable_diffusion", "keras", task, batch, shape)
        assert ours == cell_work("stable_diffusion", "native-torch", task, batch, shape)
