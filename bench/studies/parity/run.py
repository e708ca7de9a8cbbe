"""`make parity`: every parity check at the smoke shapes on the CPU in float32 (PROFILE= and DTYPE= ask for others),
each step in its env's own process with a timeout, then results/PARITY.md and results/parity/parity.json (another
profile or dtype: PARITY-<profile>[-<dtype>].md beside them): a line per check with its largest difference, its
tolerance and pass / fail / not checked (why). A step that fails or times out is a recorded status, never a crash."""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.base.atomic import together, write_json_atomic, write_text_atomic
from bench.base.errors import BenchError
from bench.base.exit_status import exit_status
from bench.base.lifetime import stop_on_signals
from bench.base.progress import Steps
from bench.base.provenance import git_info, machine_info, machine_label, now_utc
from bench.base.runlock import holding
from bench.catalogue.profiles import profiles
from bench.catalogue.registry import get_model
from bench.plan import available_device
from bench.plan.counts import counts_for
from bench.plan.memory import figures as memory_figures
from bench.run.env_lookup import env_python
from bench.run.worker_process import run_logged
from bench.studies.parity.compare import (
    BFLOAT16_GRADIENT_NORM_TOLERANCE,
    BFLOAT16_OUTPUT_TOLERANCE,
    GRADIENT_NORM_TOLERANCE,
    OUTPUT_TOLERANCE,
    Tolerance,
    difference,
)
from bench.studies.parity.worker import BATCH, batch_for

KERAS_BACKENDS = ("jax", "tensorflow", "torch")  # jax first: its random weights are the shared ones
KERAS_MODELS = ("bert", "gemma", "mistral", "sam", "stable_diffusion")
# What each model's Keras side writes (bench/studies/parity/worker.py): its outputs, then one fit step's loss and
# gradient norm
KERAS_OUTPUTS = {"bert": ("logits", "sequence_output"), "gemma": ("logits",), "mistral": ("logits",),
                 "sam": ("masks", "iou_pred"),
                 "stable_diffusion": ("context", "unconditional_context", "noise_prediction_unconditional",
                                      "noise_prediction", "denoised_latent", "decoded")}
NATIVE_MODELS = ("bert", "gemma", "mistral")  # those keras-hub 0.32 converts from transformers
NOT_CHECKED = [
    ("keras-vs-native", "sam", "no converter in the pinned versions (segment-anything to keras-hub); parameter "
     "counts compared instead"),
    ("keras-vs-native", "stable_diffusion", "no converter in the pinned versions (diffusers to keras-cv); parameter "
     "counts compared instead"),
    ("keras-eager-vs-jit", "gemma, mistral, sam, stable_diffusion", "only BERT's step is checked eager against "
     "jit-compiled: the suite's cells time Keras 3's default step, and only the overhead study times eager beside it"),
]
TIMEOUT_S = 600
GPU_DTYPES = ("bfloat16",)  # the paper's LM dtype: on a GPU where the machine has one, where the suite times it
# A CPU's bfloat16 matrix instructions (/proc/cpuinfo's names, x86 then Arm): without one, no bfloat16 check on it.
BFLOAT16_CPU_FLAGS = ("avx512_bf16", "amx_bf16", "bf16", "svebf16")
# What a Keras parity step holds at once: the weights, their gradients (the fit step) and the weights file's copy as
# it is saved or loaded. A model whose float32 parameters times this exceed the device's memory is refused by name.
HELD_COPIES = 3


@dataclass(frozen=True)
class Settings:
    """What a run checks at: a profile's shapes, a dtype, the device (float32: the CPU; bfloat16: a GPU where there is
    one)."""

    profile: str = "smoke"
    dtype: str = "float32"
    device: str = "cpu"
    outputs_only: bool = False  # the fit step left out: the machine cannot hold it (fit_step_too_large)

    @classmethod
    def on(cls, machine: dict, profile: str = "smoke", dtype: str = "float32") -> Settings:
        return cls(profile, dtype, device="gpu" if dtype in GPU_DTYPES and machine.get("gpus") else "cpu")

    @property
    def on_gpu(self) -> bool:
        return self.device == "gpu"

    def worker_args(self) -> list[str]:
        return ["--profile", self.profile, "--dtype", self.dtype, "--device", self.device,
                *(["--outputs-only"] if self.outputs_only else [])]

    def tolerance(self, key: str) -> Tolerance:
        if self.dtype == "bfloat16":
            return BFLOAT16_GRADIENT_NORM_TOLERANCE if key == "gradient_norm" else BFLOAT16_OUTPUT_TOLERANCE
        return GRADIENT_NORM_TOLERANCE if key == "gradient_norm" else OUTPUT_TOLERANCE

    @property
    def suffix(self) -> str:
        """"" for the smoke float32 page every table reads; else -<profile>[-<dtype>]: a page of its own."""
        if (self.profile, self.dtype) == ("smoke", "float32"):
            return ""
        return f"-{self.profile}" + ("" if self.dtype == "float32" else f"-{self.dtype}")


SMOKE = Settings()


# How a worker that did not finish ended (bench/run/worker_process.py): past its time, or killed (out of memory, or by a
# signal); its outputs were never made, so its checks are not checked rather than failed
UNFINISHED = ("timeout", "oom", "killed")


# What run_all says as each worker starts and ends (a run is minutes of workers that print nothing): set by run_all
# for the steps it plans; a check run alone (a test's) says nothing.
PROGRESS: list[Steps] = []


class Step:
    """One worker process: its status (None when it wrote its outputs) and how it ended."""

    def __init__(self, action: str, model: str, env: str, folder: Path, logs: Path, timeout_s: float,
                 settings: Settings = SMOKE):
        self.name = f"{action} {model} in {env}"
        try:
            argv = [env_python(env), "-m", "bench.studies.parity.worker", action, model, str(folder), env,
                    *settings.worker_args()]
        except BenchError as error:
            self.failure = ("not checked", f"{env} env unusable: {error}")
            return
        variables = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        for progress in PROGRESS:
            progress.started(self.name)
        ended = run_logged(argv, variables, logs / f"{action}__{model}__{env}.log", timeout_s)
        if ended is None:
            self.failure = None
        elif ended[0] in UNFINISHED:  # the machine's limits stopped it: nothing was compared, nothing differs
            self.failure = ("not checked", f"{self.name} did not finish here: {ended[0]}: {ended[1]}")
        else:
            self.failure = ("fail", f"{self.name}: {ended[0]}: {ended[1]}")
        for progress in PROGRESS:
            progress.ended("its outputs written" if ended is None else f"{ended[0]}: {ended[1][:200]}")


def compared(check: str, model: str, pair: str, outputs: dict[str, tuple], step_failure) -> list[dict]:
    """A line per compared output (candidate, reference, tolerance); a failed step's lines carry its status."""
    lines = []
    for output, (candidate, reference, tolerance) in outputs.items():
        line = {"check": check, "model": model, "pair": pair, "output": output, "tolerance": str(tolerance),
                "atol": tolerance.atol, "rtol": tolerance.rtol}
        if step_failure is not None:
            lines.append({**line, "status": step_failure[0], "why": step_failure[1], "max_abs": None, "max_rel": None})
            continue
        try:
            expected = reference()
            d = difference(candidate(), expected, tolerance)
            if np.size(expected) == 1:  # a loss or a norm: its value says the step computed something
                line["reference_value"] = float(np.asarray(expected).reshape(-1)[0])
        except (OSError, KeyError, ValueError) as error:  # a step that exited 0 without its outputs
            lines.append({**line, "status": "fail", "why": f"outputs unreadable: {error}", "max_abs": None,
                          "max_rel": None})
            continue
        why = d.pop("why", "")
        lines.append({**line, **d, "status": "pass" if d.pop("passed") else "fail", "why": why})
    return lines


def loader(path: Path, key: str):
    return lambda: np.load(path)[key]


def keras_backends(model: str, folder: Path, logs: Path, timeout_s: float, settings: Settings = SMOKE,
                   fit_refused: str | None = None) -> list[dict]:
    """Keras 3 on each backend against JAX's outputs on JAX's weights; `fit_refused`: why the fit step was left out
    (settings.outputs_only), its loss and gradient norm lines saying so."""
    steps = {}
    for backend in KERAS_BACKENDS:
        steps[backend] = Step("keras", model, backend, folder, logs, timeout_s, settings)
        if backend == KERAS_BACKENDS[0] and steps[backend].failure:
            break  # no shared weights to load
    reference = folder / f"{model}__keras-{KERAS_BACKENDS[0]}.npz"
    fit_keys = [] if settings.outputs_only else ["loss", "gradient_norm"]
    keys = [*KERAS_OUTPUTS[model], *fit_keys]
    lines = []
    for backend in KERAS_BACKENDS[1:]:
        step = steps.get(backend)
        failure = steps[KERAS_BACKENDS[0]].failure or (step.failure if step else None)
        candidate = folder / f"{model}__keras-{backend}.npz"
        outputs = {key: (loader(candidate, key), loader(reference, key), settings.tolerance(key)) for key in keys}
        batch = batch_for(model, settings.profile)
        at_batch = f", batch {batch}" if batch != BATCH else ""
        pair = f"Keras 3 {backend} vs {KERAS_BACKENDS[0]} (its weights loaded{at_batch})"
        lines += compared("keras-backends", model, pair, outputs, failure)
        if settings.outputs_only:
            lines += [{"check": "keras-backends", "model": model, "pair": pair, "output": key, "status": "not checked",
                       "why": fit_refused or "the fit step was left out", "max_abs": None, "max_rel": None,
                       "tolerance": str(settings.tolerance(key))} for key in ("loss", "gradient_norm")]  # fmt: skip
    return lines


EXACT = Tolerance(atol=0.0, rtol=0.0)  # greedy tokens: identical or not
# A difference whose cause is known (read in the library's code), said on its line when that line fails.
BERT_GELU = ("keras-hub 0.32's BertBackbone computes GELU with its tanh approximation (encoder layers' "
             "activation=gelu_approximate), transformers' BERT (hidden_act \"gelu\") the exact erf form: another "
             "activation, not noise; see the tanh-approximate GELU line (at smoke widths the pre-activations are too "
             "small for the two forms to differ)")
KNOWN_CAUSES = {
    ("bert", "sequence_output"): BERT_GELU,
    ("bert", "pooled_output"): BERT_GELU,
    ("mistral", "logits"): "keras-hub 0.32's convert_mistral casts every weight to float16 as it loads it "
    "(port_weight hook_fn astype(np.float16)): float16 rounding of the weights, 4.9e-4 relative, not another function; "
    "see the float16-rounded line",
}


def keras_vs_native(model: str, folder: Path, logs: Path, timeout_s: float, settings: Settings = SMOKE) -> list[dict]:
    exported = Step("native-export", model, "native-torch", folder, logs, timeout_s, settings)
    imported = Step("keras-import", model, "jax", folder, logs, timeout_s, settings) if not exported.failure else None
    failure = exported.failure or (imported.failure if imported else None)
    reference, candidate = folder / f"{model}__native-torch.npz", folder / f"{model}__keras-import.npz"
    keys = ("sequence_output", "pooled_output") if model == "bert" else ("logits", "greedy_tokens")
    outputs = {key: (loader(candidate, key), loader(reference, key), EXACT if key == "greedy_tokens" else
                     OUTPUT_TOLERANCE) for key in keys}
    if model == "bert":  # named apart from "<output> ...": a different activation is a difference of the models
        for key in keys:
            outputs[f"native with tanh-approximate GELU: {key}"] = (
                loader(candidate, key), loader(reference, f"{key}_tanh_gelu"), OUTPUT_TOLERANCE)
    if model == "mistral":
        outputs["logits vs native with float16-rounded weights"] = (
            loader(candidate, "logits"), loader(reference, "logits_float16_weights"), OUTPUT_TOLERANCE)
    lines = compared("keras-vs-native", model, "Keras 3 (jax, keras-hub converter) vs native PyTorch "
                     "(save_pretrained)", outputs, failure)
    for line in lines:
        cause = KNOWN_CAUSES.get((model, line["output"]))
        if line["status"] == "fail" and cause and failure is None:
            line["why"] = cause
    return lines


# Where no converter carries weights across: (line, Keras 3 parts, native parts) whose parameter counts must agree.
COUNTED_PARTS = {
    "sam": [("whole model", ("sam",), ("sam",)), ("image encoder", ("image_encoder",), ("image_encoder",))],
    "stable_diffusion": [("diffusion model / UNet", ("diffusion_model",), ("unet",)),
                         ("text encoder", ("text_encoder",), ("text_encoder",)),
                         ("VAE (image encoder + decoder)", ("image_encoder", "decoder"), ("vae",))],
}
COUNT_CAUSES = {
    "sam": "keras-hub's SAM keeps one embed_dim-sized weight more than segment-anything's (as at the paper shape, "
    "tests/test_fidelity.py)",
    "stable_diffusion": "keras-cv's SD models (or its layers at the shape's widths, bench/models/stable_diffusion/"
    "keras_cv_widths.py) and diffusers' / transformers' are built at the same widths: a difference is a difference of "
    "the two builds",
}


def parameter_counts(model: str, folder: Path, logs: Path, timeout_s: float, settings: Settings = SMOKE) -> list[dict]:
    steps = [Step("parameter-counts", model, env, folder, logs, timeout_s, settings) for env in ("jax", "native-torch")]
    failure = next((step.failure for step in steps if step.failure), None)
    lines = []
    for label, keras_parts, native_parts in COUNTED_PARTS[model]:
        line = {"check": "parameter-counts", "model": model, "pair": "Keras 3 vs native PyTorch parameters (no "
                "converter in the pinned versions: outputs not compared)", "output": label, "tolerance": "exact",
                "atol": 0, "rtol": 0, "max_abs": None, "max_rel": None}
        if failure:
            lines.append({**line, "status": failure[0], "why": failure[1]})
            continue
        try:
            keras_counts, native_counts = (json.loads((folder / f"{model}__counts-{env}.json").read_text())
                                           for env in ("jax", "native-torch"))
            k, n = sum(keras_counts[p] for p in keras_parts), sum(native_counts[p] for p in native_parts)
        except (OSError, KeyError, ValueError) as error:
            lines.append({**line, "status": "fail", "why": f"counts unreadable: {error}"})
            continue
        lines.append({**line, "max_abs": abs(k - n), "max_rel": abs(k - n) / n, "status": "pass" if k == n else "fail",
                      "why": "" if k == n else f"{k:,} vs {n:,} parameters: {COUNT_CAUSES[model]}"})
    return lines


def eager_vs_compile(model: str, folder: Path, logs: Path, timeout_s: float, settings: Settings = SMOKE) -> list[dict]:
    step = Step("native-compile", model, "native-torch", folder, logs, timeout_s, settings)
    path = folder / f"{model}__torch-compile.npz"
    return compared("torch-compile", model, "native PyTorch torch.compile vs eager",
                    {"logits": (loader(path, "compiled"), loader(path, "eager"), OUTPUT_TOLERANCE)}, step.failure)


def keras_eager_vs_jit(model: str, folder: Path, logs: Path, timeout_s: float,
                       settings: Settings = SMOKE) -> list[dict]:
    """Keras 3's predict step eager against jit-compiled, on each backend, with the shared weights."""
    lines = []
    for backend in KERAS_BACKENDS:
        step = Step("keras-jit", model, backend, folder, logs, timeout_s, settings)
        path = folder / f"{model}__keras-jit-{backend}.npz"
        compiler = "torch.compile" if backend == "torch" else "XLA"
        outputs = {"logits": (loader(path, "jit"), loader(path, "eager"), settings.tolerance("logits"))}
        if model == "bert":
            outputs["sequence_output"] = (loader(path, "jit_sequence_output"), loader(path, "eager_sequence_output"),
                                          settings.tolerance("sequence_output"))  # fmt: skip
        lines += compared("keras-eager-vs-jit", model, f"Keras 3 {backend}: jit-compiled ({compiler}) vs eager",
                          outputs, step.failure)
    return lines


def keras_counts(model: str, settings: Settings) -> dict[str, int] | None:
    """The Keras model's parameters per part at the profile's shapes (bench/plan/counts.py), None where not known."""
    counts = counts_for({(model, "keras")}, settings.profile, echo=lambda *_: None).get((model, "keras"))
    if not isinstance(counts, dict) or not counts:
        return None
    return {part: n for part, n in counts.items() if isinstance(n, int)}  # less "counted_in": the env's name


def memory_held(settings: Settings, machine: dict) -> tuple[float | None, str]:
    """The memory a parity step has (GiB) and its name: the GPU's for a GPU run, else the machine's RAM."""
    return available_device(machine) if settings.on_gpu else (machine.get("memory_gib"), "RAM")


def too_large(model: str, settings: Settings, machine: dict) -> str | None:
    """Why the machine cannot hold the model's Keras parity step at the profile's shapes (None where it can, or where
    its parameters are not known: the step itself then says how it ended)."""
    parts = keras_counts(model, settings)
    if not parts:
        return None
    parameters = parts["sam"] if model == "sam" else sum(parts.values())  # SAM's image encoder is inside "sam"
    need = parameters * 4 * HELD_COPIES / 2**30
    held, what = memory_held(settings, machine)
    if held is None or need <= held:
        return None
    return (f"{parameters / 1e9:.2f}B parameters at {settings.profile} shapes: its weights, gradients and the loaded "
            f"weights file's copy in float32 need about {need:.0f} GiB, over this machine's {held:.1f} GiB {what}")


def fit_step_too_large(model: str, settings: Settings, machine: dict) -> str | None:
    """Why the machine cannot hold the model's fit step at the check's batch, by the plan's estimate (bench/plan/
    memory.py: the held weights, the gradients and the activations, beside the weights file's copy), where it can
    hold the outputs' step: SAM's ViT-H at 1024 pixels, whose fit activations alone are about 24 GiB at batch 1. None
    where it fits or the counts are unknown."""
    parts = keras_counts(model, settings)
    if not parts:
        return None
    batch = batch_for(model, settings.profile)
    try:
        found = memory_figures(model, "keras", "fit", batch, parts, get_model(model).shape(settings.profile))
    except (KeyError, BenchError):  # a part the rule needs is not counted: the step itself says how it ends
        return None
    need = (2 * found.weights_bytes + found.gradients_bytes + found.activations_bytes) / 2**30
    held, what = memory_held(settings, machine)
    if held is None or need <= held:
        return None
    return (f"the fit step at batch {batch} needs about {need:.0f} GiB by the plan's estimate (activations "
            f"{found.activations_bytes / 2**30:.1f}, weights {found.weights_bytes / 2**30:.1f} and their gradients, "
            f"the weights file's copy), over this machine's {held:.1f} GiB {what}: outputs compared, not the fit step")


def refusal(settings: Settings, machine: dict) -> str | None:
    """Why this machine cannot run the checks at this dtype at all (one line), else None."""
    flags = set((machine.get("processor") or {}).get("flags") or ())
    if settings.dtype == "bfloat16" and not settings.on_gpu and not flags & set(BFLOAT16_CPU_FLAGS):
        named = ", ".join(BFLOAT16_CPU_FLAGS)
        return (f"DTYPE=bfloat16 needs a GPU or a CPU with bfloat16 matrix instructions ({named}): this machine "
                "has neither, so its bfloat16 would be emulated, not the kernels a bfloat16 cell runs")
    return None


def run_all(models: tuple[str, ...], timeout_s: float, logs: Path, settings: Settings = SMOKE,
            machine: dict | None = None) -> list[dict]:
    machine = machine_info() if machine is None else machine
    refused = {model: why for model in models if (why := too_large(model, settings, machine))}
    for model, why in refused.items():
        print(f"parity: {model} not checked: {why}", file=sys.stderr)
    checked = tuple(m for m in models if m not in refused)
    native = settings.dtype == "float32"  # the native side is float32 on the CPU only (NOT_AT_OTHER_DTYPES)
    natives = [m for m in NATIVE_MODELS if m in checked and native]
    counted = [m for m in COUNTED_PARTS if m in checked]  # only the models asked for (MODEL=bert ran SAM's too)
    planned = (len(KERAS_BACKENDS) * len(checked) + 2 * len(natives)
               + ("bert" in checked) * ((1 if native else 0) + len(KERAS_BACKENDS)) + 2 * len(counted))
    lines: list[dict] = []
    PROGRESS.append(Steps(planned, prefix="parity: "))
    try:
        with tempfile.TemporaryDirectory(prefix="bench-parity-") as scratch:
            folder = Path(scratch)
            for model in checked:
                fit_refused = fit_step_too_large(model, settings, machine)
                if fit_refused:
                    print(f"parity: {model}'s fit step not checked: {fit_refused}", file=sys.stderr)
                lines += keras_backends(model, folder, logs, timeout_s,
                                        dataclasses.replace(settings, outputs_only=bool(fit_refused)), fit_refused)
            for model in natives:
                lines += keras_vs_native(model, folder, logs, timeout_s, settings)
            if "bert" in checked:
                if native:
                    lines += eager_vs_compile("bert", folder, logs, timeout_s, settings)
                lines += keras_eager_vs_jit("bert", folder, logs, timeout_s, settings)
            for model in counted:
                lines += parameter_counts(model, folder, logs, timeout_s, settings)
    finally:
        PROGRESS.clear()
    not_checked = [*NOT_CHECKED, *(("keras-backends", model, why) for model, why in refused.items())]
    if not native:
        not_checked.append(NOT_AT_OTHER_DTYPES)
    for check, named, why in not_checked:
        if not set(named.split(", ")) & set(models):  # a note of the models asked for only
            continue
        lines.append({"check": check, "model": named, "pair": "", "output": "", "status": "not checked", "why": why,
                      "max_abs": None, "max_rel": None, "tolerance": ""})
    return lines


NOT_AT_OTHER_DTYPES = ("keras-vs-native, torch-compile", "bert, gemma, mistral", "float32 only: the other dtype is "
                       "checked across Keras 3's backends and Keras 3 eager against jit; the native side's is not "
                       "wired")


def number(value) -> str:
    return "-" if value is None else f"{value:.3g}"


def page(lines: list[dict], provenance: dict) -> str:
    counts = {status: sum(line["status"] == status for line in lines) for status in ("pass", "fail", "not checked")}
    commit = (provenance["git"].get("commit") or "?")[:12]
    out = [
        f"# Output parity on shared weights ({provenance.get('profile', 'smoke')} shapes, "
        f"{provenance.get('device', 'CPU')}, {provenance.get('dtype', 'float32')})",
        "",
        f"Command: `{provenance['command']}`; {provenance['date']}; commit {commit}; machine: "
        f"{provenance['machine']}. {provenance['load']}",
        "",
        *kept_note(provenance.get("kept")),
        "Pass: every element within |a - b| <= atol + rtol * |b| of the reference. max rel: the largest difference "
        "over the reference's largest magnitude. A loss or gradient norm shows the reference's value beside its name. "
        "What each check means and why these tolerances: docs/PARITY.md.",
        "",
        f"{counts['pass']} pass, {counts['fail']} fail, {counts['not checked']} not checked.",
        "",
        "| check | model | compared | output | max abs | max rel | tolerance | status |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for line in lines:
        status = line["status"] + (" (earlier run)" if "run" in line else "")
        status += f": {line['why']}" if line.get("why") else ""
        status = status.replace("|", "/").replace("\n", " ")
        output = line["output"] + (f" ({line['reference_value']:.6g})" if "reference_value" in line else "")
        out.append(f"| {line['check']} | {line['model']} | {line['pair']} | {output} | "
                   f"{number(line['max_abs'])} | {number(line['max_rel'])} | {line['tolerance']} | {status} |")
    return "\n".join(out) + "\n"


def kept_note(kept: dict | None) -> list[str]:
    if not kept:
        return []
    runs = "; ".join(f"{run['lines']} from {run['date']}, commit {(run['commit'] or '?')[:12]}" for run in kept["runs"])
    return [f"MODEL= narrowed that run: the other models' {kept['lines']} lines are kept from earlier runs of "
            f"`make parity` ({runs}), each marked \"(earlier run)\" in its status; their JSON lines carry their run's "
            "date and commit.", ""]


def load_note() -> str:
    one, five, _ = os.getloadavg()
    return (f"Load average at the end {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} CPUs, shared with "
            "other work: it changes how long the run took, not its numbers.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench parity", description=__doc__)
    parser.add_argument("--results-dir", type=Path, default=Path("results"))
    parser.add_argument("--model", action="append", choices=KERAS_MODELS,
                        help="models to check (repeatable; default all)")
    parser.add_argument("--timeout-s", type=float, default=TIMEOUT_S, help="per worker process")
    # Not the benchmark's GPU-only rule for the paper profile: that one keeps CPU timings out of the paper's
    # comparisons; a parity check's outputs do not depend on the device's speed, only on the machine holding the model.
    parser.add_argument("--profile", default="smoke", choices=sorted(profiles()), help="whose shapes (default smoke)")
    parser.add_argument("--dtype", default="float32", choices=("float32", *GPU_DTYPES),
                        help="float32 (the CPU) or bfloat16 (a GPU, else a bfloat16 CPU; looser tolerance)")
    args = parser.parse_args(argv)
    # TERM, HUP, INT (to it or to make): the worker running now is ended with it, the scratch folder removed, and
    # it exits as a shell reports the signal (143, 129, 130)
    stop_on_signals()
    return exit_status(lambda: check(args, argv))


def check(args: argparse.Namespace, argv: list[str] | None) -> int:
    results = args.results_dir
    machine = machine_info()
    settings = Settings.on(machine, args.profile, args.dtype)
    if why := refusal(settings, machine):
        raise BenchError(why)
    started = time.monotonic()
    with holding(results):  # its pages and logs are the results folder's: no other run writes there meanwhile
        logs = results / "logs" / f"parity{settings.suffix}"
        lines = run_all(tuple(args.model or KERAS_MODELS), args.timeout_s, logs, settings, machine)
        return write_pages(results, lines, time.monotonic() - started, argv, settings, machine,
                           narrowed=set(args.model or KERAS_MODELS) != set(KERAS_MODELS))


def kept_lines(earlier: Path, lines: list[dict]) -> tuple[list[dict], dict | None]:
    """The earlier run's lines of the checks this run did not make (MODEL= narrowed it), each marked with that run's
    date and commit, and that run's provenance; nothing where there is no earlier page."""
    try:
        before = json.loads(earlier.read_text())
    except (OSError, ValueError):
        return [], None
    made = {(line["check"], line["model"]) for line in lines}
    provenance = before["provenance"]
    run = {"date": provenance.get("date"), "commit": (provenance.get("git") or {}).get("commit")}
    kept = [{**line, "run": line.get("run", run)} for line in before["checks"]
            if (line["check"], line["model"]) not in made]
    return kept, provenance


def write_pages(results: Path, lines: list[dict], took_s: float, argv: list[str] | None, settings: Settings = SMOKE,
                machine: dict | None = None, narrowed: bool = False) -> int:
    machine = machine_info() if machine is None else machine
    path = results / "parity" / f"parity{settings.suffix}.json"
    kept, _ = kept_lines(path, lines) if narrowed else ([], None)
    failed = any(line["status"] == "fail" for line in lines)  # this run's checks: not the lines it keeps
    provenance = {
        "command": ("make parity: " if os.environ.get("MAKELEVEL") else "") + shlex.join(
            ["python", "-m", "bench.studies.parity.run", *(sys.argv[1:] if argv is None else argv)]),
        "date": now_utc(), "git": git_info(),  # as a result file records its code: provenance.git
        "machine": machine_label(machine), "load": f"Took {took_s / 60:.1f} min. {load_note()}",
        "profile": settings.profile, "dtype": settings.dtype, "device": settings.device.upper(),
        "tolerances": {"outputs": vars(settings.tolerance("outputs")),
                       "gradient_norm": vars(settings.tolerance("gradient_norm"))},
    }
    if kept:
        runs: dict[tuple, int] = {}  # a line kept twice keeps the run that measured it, not the one that kept it
        for line in kept:
            key = (line["run"].get("date"), line["run"].get("commit"))
            runs[key] = runs.get(key, 0) + 1
        provenance["kept"] = {"lines": len(kept), "runs": [{"date": date, "commit": commit, "lines": n}
                                                           for (date, commit), n in runs.items()]}
        lines = lines + kept
    with together():  # the JSON and its page: both, or neither
        write_json_atomic(path, {"provenance": provenance, "checks": lines})
        write_text_atomic(results / f"PARITY{settings.suffix}.md", page(lines, provenance))
    print(page(lines, provenance))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
