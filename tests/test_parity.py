"""Output parity (bench/studies/parity/): the comparison fails beyond its tolerance, a failed step is a recorded status,
and one real cross-backend check at smoke: BERT's Keras 3 weights saved on JAX and loaded on PyTorch give its outputs,
and do not once the loaded model's layer-norm epsilon is changed."""
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, env_python

from bench.catalogue.backends import cell_environment
from bench.studies.parity import run as parity_run
from bench.studies.parity.compare import GRADIENT_NORM_TOLERANCE, OUTPUT_TOLERANCE, difference


def test_outputs_within_float32_noise_pass():
    reference = np.random.default_rng(0).standard_normal((2, 32, 64)).astype(np.float32)
    noisy = reference + np.float32(1e-6) * np.sign(reference)  # a reordered float32 sum's size of difference
    d = difference(noisy, reference, OUTPUT_TOLERANCE)
    assert d["passed"] and 0 < d["max_abs"] <= 1.1e-6


def test_an_output_perturbed_beyond_tolerance_fails():
    reference = np.random.default_rng(0).standard_normal((2, 16, 1000)).astype(np.float32)
    perturbed = reference.copy()
    perturbed[1, 3, 7] += 1e-3  # one element: what a changed epsilon or a dropped layer moves by at least
    d = difference(perturbed, reference, OUTPUT_TOLERANCE)
    assert not d["passed"] and d["max_abs"] == pytest.approx(1e-3, rel=1e-3)
    assert not difference(np.float32(2.0), np.float32(1.99), GRADIENT_NORM_TOLERANCE)["passed"]


def test_a_different_shape_or_a_nan_fails_with_why():
    reference = np.zeros((2, 3), dtype=np.float32)
    assert difference(np.zeros((3, 2)), reference, OUTPUT_TOLERANCE) == {
        "passed": False, "max_abs": None, "max_rel": None, "why": "shape (3, 2) vs (2, 3)"}
    assert not difference(np.full((2, 3), np.nan), reference, OUTPUT_TOLERANCE)["passed"]


def test_a_failed_step_is_a_recorded_status_and_the_page_says_it(tmp_path):
    def missing():
        raise AssertionError("a failed step's outputs are never read")

    lines = parity_run.compared("keras-backends", "bert", "Keras 3 torch vs jax", {"logits": (missing, missing,
                                OUTPUT_TOLERANCE)}, ("fail", "keras bert in torch: error: ValueError: shapes"))
    assert [(line["status"], line["max_abs"]) for line in lines] == [("fail", None)]
    provenance = {"command": "make parity", "date": "d", "git": {"commit": "c"}, "machine": "m", "load": ""}
    page = parity_run.page(lines, provenance)
    assert "| fail: keras bert in torch: error: ValueError: shapes |" in page and "0 pass, 1 fail" in page


@pytest.mark.parametrize("ended,status", [(("timeout", "ran past 600 s"), "not checked"),
                                          (("killed", "killed by SIGKILL"), "not checked"),
                                          (("oom", "out of memory"), "not checked"),
                                          (("error", "ValueError: shapes"), "fail")])
def test_a_step_the_machine_stopped_is_not_checked_and_one_that_broke_fails(tmp_path, monkeypatch, ended, status):
    """A worker past its time or killed (out of memory at paper shapes on a small machine) compared nothing: its
    checks are not checked, with how it ended, not failed as if its outputs differed; one that raised fails."""
    monkeypatch.setattr(parity_run, "run_logged", lambda argv, env, log, timeout: ended)
    step = parity_run.Step("keras", "sam", "jax", tmp_path, tmp_path, 60)
    assert step.failure[0] == status and ended[1] in step.failure[1]


def test_a_step_that_wrote_no_outputs_is_a_failed_line_not_a_crash(tmp_path):
    missing = parity_run.loader(tmp_path / "absent.npz", "logits")
    lines = parity_run.compared("torch-compile", "bert", "compiled vs eager",
                                {"logits": (missing, missing, OUTPUT_TOLERANCE)}, None)
    assert lines[0]["status"] == "fail" and lines[0]["why"].startswith("outputs unreadable:")


@pytest.mark.envs
@pytest.mark.slow
@pytest.mark.duration_s(120)
def test_bert_keras3_weights_from_jax_match_on_torch_and_differ_with_another_epsilon(tmp_path, monkeypatch):
    env_python("jax"), env_python("torch")  # skips (or fails in CI) where an env is not built
    monkeypatch.setattr(parity_run, "KERAS_BACKENDS", ("jax", "torch"))
    lines = parity_run.keras_backends("bert", tmp_path, tmp_path / "logs", timeout_s=300)
    assert {line["output"]: line["status"] for line in lines} == dict.fromkeys(
        ["logits", "sequence_output", "loss", "gradient_norm"], "pass"), lines
    assert all(line["max_abs"] <= 1e-5 for line in lines)  # measured: about 1e-6 at most
    # The same check fails when the loaded side computes something else: its layer norms' epsilon changed.
    changed = subprocess.run(
        [str(env_python("torch")), "-c", CHANGED_EPSILON, str(tmp_path)], cwd=REPO, capture_output=True, text=True,
        env={**os.environ, **cell_environment("torch")}, timeout=300)
    assert changed.returncode == 0, changed.stderr[-3000:]
    reference, candidate = np.load(tmp_path / "bert__keras-jax.npz"), np.load(tmp_path / "bert__keras-torch.npz")
    # Measured: the sequence output moves by 3.4e-3. The 2-class logits (about 0.02 from the random head) move by only
    # 6e-6, under atol: the backbone's output is the line that tells.
    moved = difference(candidate["sequence_output"], reference["sequence_output"], OUTPUT_TOLERANCE)
    assert not moved["passed"], moved


@pytest.mark.envs
@pytest.mark.slow
@pytest.mark.duration_s(60)
def test_bert_keras3_eager_and_jit_compiled_steps_compute_the_same_outputs(tmp_path, monkeypatch):
    env_python("jax")
    monkeypatch.setattr(parity_run, "KERAS_BACKENDS", ("jax",))
    lines = parity_run.keras_eager_vs_jit("bert", tmp_path, tmp_path / "logs", timeout_s=300)
    assert {line["output"]: line["status"] for line in lines} == {"logits": "pass", "sequence_output": "pass"}, lines
    assert all(line["max_abs"] <= 1e-5 for line in lines)  # measured: 5.6e-9 on the logits
    outputs = np.load(tmp_path / "bert__keras-jit-jax.npz")
    assert np.abs(outputs["eager_sequence_output"]).max() > 0.1  # a real output, not zeros compared with zeros


# BERT on Keras 3 as the parity worker builds it, but each layer norm's epsilon 1e-12 -> 1e-3: another function.
CHANGED_EPSILON = r"""
import sys
from pathlib import Path
import keras
from bench.models.bert import keras as bert_keras
from bench.studies.parity import worker

build = bert_keras.build_backbone

def build_changed(lib, s):
    backbone = build(lib, s)
    for layer in backbone._flatten_layers():
        if isinstance(layer, keras.layers.LayerNormalization):
            layer.epsilon = 1e-3
    return backbone

bert_keras.build_backbone = build_changed
worker.keras_side("bert", Path(sys.argv[1]))
"""


def test_the_results_page_says_the_parity_tally_and_each_failure(tmp_path):
    """RESULTS.md's studies part names `make parity`'s tally and every failed line, linked to PARITY.md."""
    import json

    from committed import committed_results

    from bench.studies.table import render

    results = committed_results()
    render(results, results / "RESULTS.md", readme=None)
    page = (results / "RESULTS.md").read_text()
    checks = json.loads((results / "parity" / "parity.json").read_text())["checks"]
    fails = [c for c in checks if c["status"] == "fail"]
    passed = sum(c["status"] == "pass" for c in checks)
    assert f"{passed} pass, {len(fails)} fail" in page
    assert "[PARITY.md](PARITY.md)" in page
    assert page.count("\n- fail: ") == len(fails) and fails  # the committed run has failures: each one is shown


def test_a_speed_up_joining_models_parity_found_to_differ_is_marked_and_an_explained_failure_is_not(tmp_path):
    import json

    from test_table import make, rendered_table

    checks = [
        {"check": "parameter-counts", "model": "sam", "output": "whole model", "status": "fail",
         "why": "96,524 vs 96,492 parameters"},
        {"check": "keras-vs-native", "model": "bert", "output": "logits", "status": "fail", "why": "float16 weights"},
        {"check": "keras-vs-native", "model": "bert", "output": "logits with float16-rounded weights",
         "status": "pass"},
    ]  # fmt: skip
    (tmp_path / "results" / "parity").mkdir(parents=True)
    (tmp_path / "results" / "parity" / "parity.json").write_text(json.dumps({"provenance": {}, "checks": checks}))
    eager = {"variant": "eager"}
    text = rendered_table(tmp_path, [
        make("jax", "sam", "predict", 7, 100.0), make("native-torch", "sam", "predict", 7, 120.0, **eager),
        make("jax", "bert", "predict", 256, 100.0), make("native-torch", "bert", "predict", 256, 120.0, **eager),
    ])  # fmt: skip
    speedups = {line.split("|")[1].strip(): line for line in text.splitlines() if line.startswith("| ")}
    assert "ᵖ" in speedups["SegmentAnything"] and "ᵖ" not in speedups["BERT"]
    said = "ᵖ SegmentAnything: `make parity` found Keras 3 and native PyTorch to differ (at smoke shapes: 96,524"
    assert said in text
    assert "ᵖ BERT" not in text


def test_bfloat16_without_a_gpu_or_a_bfloat16_cpu_is_refused_in_one_line(tmp_path, capsys, monkeypatch):
    plain, amx = {"gpus": [], "processor": {"flags": ["avx2"]}}, {"gpus": [], "processor": {"flags": ["amx_bf16"]}}
    bfloat16 = parity_run.Settings.on(plain, dtype="bfloat16")
    why = parity_run.refusal(bfloat16, plain)
    assert why and "needs a GPU or a CPU with bfloat16 matrix instructions" in why and "\n" not in why
    assert parity_run.refusal(parity_run.Settings.on(amx, dtype="bfloat16"), amx) is None  # this CPU: AMX
    gpu = {"gpus": [{"name": "H100"}], "processor": {"flags": ["avx2"]}}
    assert parity_run.Settings.on(gpu, dtype="bfloat16").device == "gpu"
    assert parity_run.Settings.on(gpu, profile="paper").device == "cpu"  # float32 stays the CPU's (no TF32)
    assert parity_run.refusal(parity_run.Settings.on(plain, profile="paper"), plain) is None
    monkeypatch.setattr(parity_run, "machine_info", lambda: plain)
    assert parity_run.main(["--results-dir", str(tmp_path), "--dtype", "bfloat16"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: DTYPE=bfloat16 needs a GPU"), err
    assert not (tmp_path / "PARITY-smoke-bfloat16.md").exists()


def test_a_model_the_machine_cannot_hold_at_paper_shapes_is_a_not_checked_line_naming_why(tmp_path, monkeypatch):
    counts = {("gemma", "keras"): {"backbone": 8_537_680_896, "counted_in": "jax"},
              ("bert", "keras"): {"backbone": 108_310_272, "counted_in": "jax"}}  # as bench/plan/counts.py gives them
    monkeypatch.setattr(parity_run, "counts_for", lambda pairs, profile, echo: {p: counts[p] for p in pairs})
    monkeypatch.setattr(parity_run, "COUNTED_PARTS", {})  # no parameter-count processes: only the refusal is asked
    paper, machine = parity_run.Settings(profile="paper"), {"memory_gib": 23.5, "gpus": []}
    assert parity_run.too_large("bert", paper, machine) is None
    lines = parity_run.run_all(("gemma",), 60, tmp_path / "logs", paper, machine)
    refused = [line for line in lines if line["model"] == "gemma" and line["check"] == "keras-backends"]
    assert [line["status"] for line in refused] == ["not checked"]
    assert "8.54B parameters at paper shapes" in refused[0]["why"] and "23.5 GiB RAM" in refused[0]["why"]
    assert not (tmp_path / "logs").exists()  # no worker started for it


def test_a_narrowed_run_keeps_the_other_models_lines_marked_with_their_run(tmp_path, monkeypatch):
    import json

    old = [{"check": "keras-backends", "model": "bert", "pair": "p", "output": "logits", "status": "pass", "why": "",
            "max_abs": 1e-8, "max_rel": 1e-7, "tolerance": "t"},
           {"check": "keras-backends", "model": "gemma", "pair": "p", "output": "logits", "status": "pass", "why": "",
            "max_abs": 1e-8, "max_rel": 1e-7, "tolerance": "t", "run": {"date": "2026-11-27", "commit": "abc"}},
           {"check": "keras-backends", "model": "stable_diffusion", "pair": "", "output": "", "status": "not checked",
            "why": "too large", "max_abs": None, "max_rel": None, "tolerance": ""}]  # fmt: skip
    earlier = {"provenance": {"command": "make parity", "date": "2026-11-28", "git": {"commit": "878ee5f" + "0" * 33}},
               "checks": old}
    (tmp_path / "parity").mkdir()
    (tmp_path / "parity" / "parity.json").write_text(json.dumps(earlier))
    new = [{**old[0], "model": "stable_diffusion", "output": "decoded", "max_abs": 1e-5}]
    monkeypatch.setattr(parity_run, "machine_info", lambda: {"gpus": []})
    monkeypatch.setattr(parity_run, "machine_label", lambda machine: "m")
    parity_run.write_pages(tmp_path, new, 60.0, ["--model", "stable_diffusion"], narrowed=True)
    checks = json.loads((tmp_path / "parity" / "parity.json").read_text())["checks"]
    # SD's new line replaces its earlier "not checked"; BERT's and Gemma's are kept, each with the run that measured
    # it (Gemma's kept once already: its own run, not the one that kept it)
    assert [(c["model"], c["status"], c.get("run", {}).get("commit", "")[:7]) for c in checks] == [
        ("stable_diffusion", "pass", ""), ("bert", "pass", "878ee5f"), ("gemma", "pass", "abc")]
    page = (tmp_path / "PARITY.md").read_text()
    assert "the other models' 2 lines are kept from earlier runs" in page
    assert "1 from 2026-11-28, commit 878ee5f00000; 1 from 2026-11-27, commit abc)" in page
    assert "| pass (earlier run) |" in page


@pytest.mark.envs
@pytest.mark.slow
@pytest.mark.keras_cv_sd
@pytest.mark.extended  # make test-extended: make test checks the same transfer and comparison on BERT's weights
@pytest.mark.duration_s(140)  # measured: 137 s beside other jobs (2026-12-01)
def test_stable_diffusion_weights_from_jax_match_on_torch_and_not_with_a_layer_or_epsilon_changed(tmp_path,
                                                                                                  monkeypatch):
    """The whole StableDiffusion step at the smoke widths (keras-cv's layers assembled at them): the text encoder,
    one denoising step of the pipeline, the decoder and the VAE encoder's fit step, saved on JAX and loaded on
    PyTorch, agree; one decoder layer's weights not carried, or the encoder's group norms' epsilon changed, each
    moves its own output beyond the tolerance and none of the others."""
    env_python("jax"), env_python("torch")
    monkeypatch.setattr(parity_run, "KERAS_BACKENDS", ("jax", "torch"))
    lines = parity_run.keras_backends("stable_diffusion", tmp_path, tmp_path / "logs", 600, parity_run.SMOKE)
    keys = [*parity_run.KERAS_OUTPUTS["stable_diffusion"], "loss", "gradient_norm"]
    assert {line["output"]: line["status"] for line in lines} == dict.fromkeys(keys, "pass"), lines
    changed = subprocess.run(
        [str(env_python("torch")), "-c", SD_CHANGED, str(tmp_path)], cwd=REPO, capture_output=True, text=True,
        env={**os.environ, **cell_environment("torch")}, timeout=600)
    assert changed.returncode == 0, changed.stderr[-3000:]
    reference, candidate = np.load(tmp_path / "stable_diffusion__keras-jax.npz"), np.load(
        tmp_path / "stable_diffusion__keras-torch.npz")
    assert np.abs(reference["decoded"]).max() > 0.1  # a real output, not zeros compared with zeros
    moved = {key: not difference(candidate[key], reference[key],
                                 GRADIENT_NORM_TOLERANCE if key == "gradient_norm" else OUTPUT_TOLERANCE)["passed"]
             for key in keys}
    # the decoder's kernel moves the image; the epsilon moves the fit step's loss (its gradient norm moves 6e-4
    # relative at the smoke widths, under that line's 1e-3) and nothing the predict step computes
    assert {"decoded", "loss"} <= {key for key, m in moved.items() if m} <= {"decoded", "loss", "gradient_norm"}, moved


# The step as the parity worker runs it on PyTorch, with two faults a loader or a port could make: the decoder's last
# convolution keeps its own initial kernel (its weights not carried), and the image encoder's group norms use
# epsilon 1e-3 instead of keras-cv's 1e-5 (the fit step's loss and gradients).
SD_CHANGED = r"""
import sys
from pathlib import Path
import keras
from bench.studies.parity import worker

case = worker.keras_case

def changed(keras, model, s, batch=worker.BATCH):
    parts, outputs, fit_step = case(keras, model, s, batch)
    for layer in parts["image_encoder"]._flatten_layers():
        if isinstance(layer, keras.layers.GroupNormalization):
            layer.epsilon = 1e-3
    def outputs_with_a_kernel_not_carried():
        convs = [l for l in parts["decoder"]._flatten_layers() if isinstance(l, keras.layers.Conv2D)]
        convs[-1].kernel.assign(keras.initializers.GlorotUniform(seed=1)(convs[-1].kernel.shape))
        return outputs()
    return parts, outputs_with_a_kernel_not_carried, fit_step

worker.keras_case = changed
worker.keras_side("stable_diffusion", Path(sys.argv[1]))
"""


def test_berts_gelu_form_is_named_and_stays_a_difference_of_the_models(tmp_path, monkeypatch):
    """Keras 3's BERT (keras-hub: GELU's tanh form) against native BERT (exact GELU): the failed lines name the cause,
    the re-check against native BERT with the tanh form passes, and the report still counts it as a difference of the
    models (a different activation), unlike Mistral's float16-rounded weights."""
    import json

    from bench.report.parity import keras_native_differences

    class Ran:  # the worker processes, as if each wrote its outputs
        def __init__(self, *args, **kwargs):
            self.failure = None

    r = np.random.default_rng(0)
    keras_side = {"sequence_output": r.standard_normal((2, 8, 16)), "pooled_output": r.standard_normal((2, 16))}
    exact = {key: value + 1e-3 for key, value in keras_side.items()}  # what another activation moves them by
    np.savez(tmp_path / "bert__keras-import.npz", **keras_side)
    np.savez(tmp_path / "bert__native-torch.npz", **exact,
             **{f"{key}_tanh_gelu": value for key, value in keras_side.items()})
    monkeypatch.setattr(parity_run, "Step", Ran)
    lines = parity_run.keras_vs_native("bert", tmp_path, tmp_path / "logs", 60)
    status = {line["output"]: (line["status"], line["why"]) for line in lines}
    assert status["sequence_output"] == ("fail", parity_run.BERT_GELU)
    assert status["native with tanh-approximate GELU: sequence_output"] == ("pass", "")
    (tmp_path / "results" / "parity").mkdir(parents=True)
    (tmp_path / "results" / "parity" / "parity.json").write_text(json.dumps({"provenance": {}, "checks": lines}))
    found = {"bert": [f"at smoke shapes: {parity_run.BERT_GELU}"]}  # one difference, however many outputs show it
    assert keras_native_differences(tmp_path / "results") == found
    # a paper-shape run's difference counts for every table (a function differs at every shape); a bfloat16 run's
    # failures are its precision's
    paper = {"provenance": {"profile": "paper", "dtype": "float32"}, "checks": lines}
    (tmp_path / "results" / "parity" / "parity-paper.json").write_text(json.dumps(paper))
    rounded = {"check": "keras-vs-native", "model": "mistral", "output": "logits", "status": "fail", "why": "bf16"}
    low = {"provenance": {"profile": "smoke", "dtype": "bfloat16"}, "checks": [rounded]}
    (tmp_path / "results" / "parity" / "parity-smoke-bfloat16.json").write_text(json.dumps(low))
    both = {"bert": [f"at paper shapes: {parity_run.BERT_GELU}", f"at smoke shapes: {parity_run.BERT_GELU}"]}
    assert keras_native_differences(tmp_path / "results") == both


def test_outputs_that_differ_for_one_cause_are_said_once_each_with_its_figure(tmp_path):
    """StableDiffusion's three submodules differ in parameters for one cause: the table's note says the cause once,
    each submodule's counts beside its name; another cause of the same model gets its own clause."""
    import json

    from bench.report.parity import keras_native_differences

    cause = "keras-cv builds fixed widths"
    counts = {"UNet": "8 vs 2 parameters", "text encoder": "6 vs 1 parameters", "VAE": "4 vs 3 parameters"}
    checks = [{"check": "parameter-counts", "model": "stable_diffusion", "output": output, "status": "fail",
               "why": f"{what}: {cause}"} for output, what in counts.items()]
    checks.append({"check": "keras-vs-native", "model": "stable_diffusion", "output": "latent", "status": "fail",
                   "why": "another scheduler"})
    (tmp_path / "parity").mkdir()
    (tmp_path / "parity" / "parity.json").write_text(json.dumps({"provenance": {}, "checks": checks}))
    assert keras_native_differences(tmp_path) == {"stable_diffusion": [
        "at smoke shapes: 8 vs 2 parameters (UNet), 6 vs 1 parameters (text encoder), 4 vs 3 parameters (VAE): "
        f"{cause}",
        "at smoke shapes: another scheduler",
    ]}


def test_sam_and_stable_diffusion_check_at_batch_1_above_smoke_shapes_and_their_lines_say_so(tmp_path, monkeypatch):
    """Batch 2 of SAM's and StableDiffusion's fit step at paper shapes ran JAX out of a 23 GiB machine's memory: above
    the smoke shapes they check at batch 1, the worker is asked for it and the page's lines name it."""
    from bench.studies.parity.worker import batch_for

    assert [batch_for(m, "paper") for m in ("bert", "sam", "stable_diffusion")] == [2, 1, 1]
    assert batch_for("sam", "smoke") == 2
    asked = []
    monkeypatch.setattr(parity_run, "run_logged", lambda argv, env, log, timeout: asked.append(argv) or ("killed", "x"))
    lines = parity_run.keras_backends("sam", tmp_path, tmp_path, 60, parity_run.Settings(profile="paper"))
    assert lines and all("batch 1" in line["pair"] for line in lines), lines[0]
    assert asked and "paper" in asked[0]
    smoke = parity_run.keras_backends("sam", tmp_path, tmp_path, 60, parity_run.SMOKE)
    assert not any("batch" in line["pair"] for line in smoke)


def test_a_fit_step_the_machine_cannot_hold_is_left_out_and_the_outputs_still_compared(tmp_path, monkeypatch):
    """SAM's ViT-H at 1024 pixels: the plan puts its fit step at batch 1 at about 31 GiB (24 of them activations), over
    a 23.5 GiB machine, where its outputs' step fits: the workers are asked for the outputs only, and the loss and
    gradient norm lines say why they were not checked."""
    counts = {("sam", "keras"): {"sam": 641_090_864, "image_encoder": 637_026_048, "counted_in": "jax"},
              ("bert", "keras"): {"backbone": 108_310_272, "classifier": 108_311_810, "counted_in": "jax"}}
    monkeypatch.setattr(parity_run, "counts_for", lambda pairs, profile, echo: {p: counts[p] for p in pairs})
    paper, machine = parity_run.Settings(profile="paper"), {"memory_gib": 23.5, "gpus": []}
    why = parity_run.fit_step_too_large("sam", paper, machine)
    assert why and "batch 1" in why and "activations 24.0" in why and "23.5 GiB RAM" in why, why
    assert parity_run.fit_step_too_large("sam", paper, {"memory_gib": 64.0, "gpus": []}) is None
    asked = []
    monkeypatch.setattr(parity_run, "run_logged", lambda argv, env, log, timeout: asked.append(argv))
    for name in ("jax", "tensorflow", "torch"):  # each worker's outputs, as the workers would write them
        np.savez(tmp_path / f"sam__keras-{name}.npz", masks=np.ones((1, 3)), iou_pred=np.ones((1, 3)))
    lines = parity_run.keras_backends("sam", tmp_path, tmp_path, 60, parity_run.Settings(profile="paper",
                                                                                         outputs_only=True), why)
    assert all("--outputs-only" in argv for argv in asked) and len(asked) == 3
    by_output = {(line["pair"].split(" vs")[0], line["output"]): line for line in lines}
    assert by_output[("Keras 3 torch", "masks")]["status"] == "pass"
    assert by_output[("Keras 3 torch", "loss")]["status"] == "not checked" and by_output[
        ("Keras 3 torch", "gradient_norm")]["why"] == why


def narrowed_run(monkeypatch, models=("bert",)):
    """run_all with every worker stubbed (its argv kept, its outputs never written) and no parameter counts asked."""
    asked = []
    monkeypatch.setattr(parity_run, "run_logged", lambda argv, env, log, timeout: asked.append(argv))
    monkeypatch.setattr(parity_run, "env_python", lambda env: "python")
    monkeypatch.setattr(parity_run, "counts_for", lambda pairs, profile, echo: {})
    lines = parity_run.run_all(models, 60, Path("/nonexistent-logs"), machine={"gpus": [], "memory_gib": 64.0})
    return asked, lines


def test_a_run_narrowed_to_one_model_runs_and_says_only_that_models_checks(monkeypatch):
    """make parity MODEL=bert once ran SAM's and StableDiffusion's parameter counts and failed on them."""
    asked, lines = narrowed_run(monkeypatch)
    models = {argv[4] for argv in asked}
    assert models == {"bert"}, sorted(models)
    assert {line["model"] for line in lines} <= {"bert"} | {line["model"] for line in lines
                                                            if "bert" in line["model"].split(", ")}, lines
    assert not [line for line in lines if line["model"] in ("sam", "stable_diffusion")]


def test_each_worker_is_said_as_it_starts_with_its_number_and_the_time_so_far(monkeypatch, capsys):
    """make parity MODEL=bert once printed nothing for 7.8 minutes before its table."""
    asked, _ = narrowed_run(monkeypatch)
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("parity: [")]
    assert len(said) == len(asked) >= 5, said
    assert said[0].startswith(f"parity: [1/{len(asked)}] keras bert in jax (elapsed 0:00:0"), said[0]
    assert said[-1].startswith(f"parity: [{len(asked)}/{len(asked)}] "), said[-1]


def test_a_signal_ends_parity_its_worker_and_its_scratch_folder_with_the_signals_status(tmp_path):
    """TERM to make parity once left the worker running for a minute and /tmp/bench-parity-* behind."""
    import os
    import signal
    import subprocess
    import sys
    import time

    pid_file, scratch = tmp_path / "worker.pid", tmp_path / "tmp"
    scratch.mkdir()
    sleeper = tmp_path / "python"
    sleeper.write_text(f"#!/bin/sh\necho $$ > {pid_file}.tmp && mv {pid_file}.tmp {pid_file}\nexec sleep 120\n")
    sleeper.chmod(0o755)
    code = (f"import sys\nfrom bench.studies.parity import run\nrun.env_python = lambda env: {str(sleeper)!r}\n"
            "run.counts_for = lambda pairs, profile, echo: {}\n"
            f"sys.exit(run.main(['--model', 'bert', '--results-dir', {str(tmp_path / 'results')!r}]))")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env={**os.environ, "TMPDIR": str(scratch)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not pid_file.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    worker = int(pid_file.read_text())
    assert [p.name for p in scratch.iterdir() if p.name.startswith("bench-parity-")], "no scratch folder to remove"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM and "Traceback" not in err, (proc.returncode, err)
    time.sleep(0.2)
    stat = Path(f"/proc/{worker}/stat")
    assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z", "the worker outlived parity"
    assert [p.name for p in scratch.iterdir() if p.name.startswith("bench-parity-")] == []


def test_a_narrowed_run_exits_by_its_own_checks_not_the_failures_it_keeps(tmp_path, monkeypatch):
    """make parity MODEL=bert once exited 1 ("20 pass, 4 fail") on SAM's and StableDiffusion's kept count lines."""
    import json

    failed = {"check": "parameter-counts", "model": "sam", "pair": "p", "output": "whole model", "status": "fail",
              "why": "1 more", "max_abs": 1, "max_rel": 1e-9, "tolerance": "exact"}
    (tmp_path / "parity").mkdir()
    (tmp_path / "parity" / "parity.json").write_text(json.dumps(
        {"provenance": {"command": "make parity", "date": "d", "git": {"commit": "c"}}, "checks": [failed]}))
    passed = [{**failed, "check": "keras-backends", "model": "bert", "output": "logits", "status": "pass", "why": ""}]
    monkeypatch.setattr(parity_run, "machine_info", lambda: {"gpus": []})
    monkeypatch.setattr(parity_run, "machine_label", lambda machine: "m")
    assert parity_run.write_pages(tmp_path, passed, 60.0, ["--model", "bert"], narrowed=True) == 0
    assert "fail (earlier run): 1 more" in (tmp_path / "PARITY.md").read_text()
    assert parity_run.write_pages(tmp_path, [{**passed[0], "status": "fail"}], 60.0, ["--model", "bert"],
                                  narrowed=True) == 1
