"""`make parity`: every parity check at the smoke shapes on the CPU, each step in its env's own process with a
timeout, then results/PARITY.md and results/parity/parity.json: a line per check with its largest difference, its
tolerance and pass / fail / not checked (why). A step that fails or times out is a recorded status, never a crash."""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.atomic import write_json_atomic, write_text_atomic
from bench.env_lookup import env_python
from bench.errors import BenchError
from bench.parity.compare import GRADIENT_NORM_TOLERANCE, OUTPUT_TOLERANCE, Tolerance, difference
from bench.provenance import git_info, machine_info, machine_label, now_utc
from bench.runlock import holding
from bench.worker_process import run_logged

KERAS_BACKENDS = ("jax", "tensorflow", "torch")  # jax first: its random weights are the shared ones
KERAS_MODELS = ("bert", "gemma", "mistral", "sam")
# What each model's Keras side writes (bench/parity/worker.py): its outputs, then one fit step's loss and gradient norm
KERAS_OUTPUTS = {"bert": ("logits", "sequence_output"), "gemma": ("logits",), "mistral": ("logits",),
                 "sam": ("masks", "iou_pred")}
NATIVE_MODELS = ("bert", "gemma", "mistral")  # those keras-hub 0.32 converts from transformers
NOT_CHECKED = [
    ("keras-backends", "stable_diffusion", "keras-cv builds SD v1's full widths even at smoke (about "
     "1.07B parameters, a 4 GB weights file per backend): too large for this shared 2-core machine's run"),
    ("keras-vs-native", "sam", "no converter in the pinned versions (segment-anything to keras-hub); parameter "
     "counts compared instead"),
    ("keras-vs-native", "stable_diffusion", "no converter in the pinned versions (diffusers to keras-cv); parameter "
     "counts compared instead"),
    ("keras-eager-vs-jit", "gemma, mistral, sam, stable_diffusion", "only BERT's step is checked eager against "
     "jit-compiled: the suite's cells time Keras 3's default step, and only the overhead study times eager beside it"),
]
TIMEOUT_S = 600


class Step:
    """One worker process: its status (None when it wrote its outputs) and how it ended."""

    def __init__(self, action: str, model: str, env: str, folder: Path, logs: Path, timeout_s: float):
        self.name = f"{action} {model} in {env}"
        try:
            argv = [env_python(env), "-m", "bench.parity.worker", action, model, str(folder), env]
        except BenchError as error:
            self.failure = ("not checked", f"{env} env unusable: {error}")
            return
        variables = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        ended = run_logged(argv, variables, logs / f"{action}__{model}__{env}.log", timeout_s)
        self.failure = None if ended is None else ("fail", f"{self.name}: {ended[0]}: {ended[1]}")


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


def keras_backends(model: str, folder: Path, logs: Path, timeout_s: float) -> list[dict]:
    steps = {}
    for backend in KERAS_BACKENDS:
        steps[backend] = Step("keras", model, backend, folder, logs, timeout_s)
        if backend == KERAS_BACKENDS[0] and steps[backend].failure:
            break  # no shared weights to load
    reference = folder / f"{model}__keras-{KERAS_BACKENDS[0]}.npz"
    keys = [*KERAS_OUTPUTS[model], "loss", "gradient_norm"]
    lines = []
    for backend in KERAS_BACKENDS[1:]:
        step = steps.get(backend)
        failure = steps[KERAS_BACKENDS[0]].failure or (step.failure if step else None)
        candidate = folder / f"{model}__keras-{backend}.npz"
        outputs = {key: (loader(candidate, key), loader(reference, key),
                         GRADIENT_NORM_TOLERANCE if key == "gradient_norm" else OUTPUT_TOLERANCE) for key in keys}
        lines += compared("keras-backends", model, f"Keras 3 {backend} vs {KERAS_BACKENDS[0]} (its weights loaded)",
                          outputs, failure)
    return lines


EXACT = Tolerance(atol=0.0, rtol=0.0)  # greedy tokens: identical or not
# A difference whose cause is known (read in the library's code), said on its line when that line fails.
KNOWN_CAUSES = {
    ("mistral", "logits"): "keras-hub 0.32's convert_mistral casts every weight to float16 as it loads it "
    "(port_weight hook_fn astype(np.float16)): float16 rounding of the weights, 4.9e-4 relative, not another function; "
    "see the float16-rounded line",
}


def keras_vs_native(model: str, folder: Path, logs: Path, timeout_s: float) -> list[dict]:
    exported = Step("native-export", model, "native-torch", folder, logs, timeout_s)
    imported = Step("keras-import", model, "jax", folder, logs, timeout_s) if not exported.failure else None
    failure = exported.failure or (imported.failure if imported else None)
    reference, candidate = folder / f"{model}__native-torch.npz", folder / f"{model}__keras-import.npz"
    keys = ("sequence_output", "pooled_output") if model == "bert" else ("logits", "greedy_tokens")
    outputs = {key: (loader(candidate, key), loader(reference, key), EXACT if key == "greedy_tokens" else
                     OUTPUT_TOLERANCE) for key in keys}
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
    "stable_diffusion": "keras-cv builds SD v1's fixed widths at every profile; native PyTorch builds the smoke widths "
    "(the same difference as the work per step's)",
}


def parameter_counts(model: str, folder: Path, logs: Path, timeout_s: float) -> list[dict]:
    steps = [Step("parameter-counts", model, env, folder, logs, timeout_s) for env in ("jax", "native-torch")]
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


def eager_vs_compile(model: str, folder: Path, logs: Path, timeout_s: float) -> list[dict]:
    step = Step("native-compile", model, "native-torch", folder, logs, timeout_s)
    path = folder / f"{model}__torch-compile.npz"
    return compared("torch-compile", model, "native PyTorch torch.compile vs eager",
                    {"logits": (loader(path, "compiled"), loader(path, "eager"), OUTPUT_TOLERANCE)}, step.failure)


def keras_eager_vs_jit(model: str, folder: Path, logs: Path, timeout_s: float) -> list[dict]:
    """Keras 3's predict step eager against jit-compiled, on each backend, with the shared weights."""
    lines = []
    for backend in KERAS_BACKENDS:
        step = Step("keras-jit", model, backend, folder, logs, timeout_s)
        path = folder / f"{model}__keras-jit-{backend}.npz"
        compiler = "torch.compile" if backend == "torch" else "XLA"
        outputs = {"logits": (loader(path, "jit"), loader(path, "eager"), OUTPUT_TOLERANCE)}
        if model == "bert":
            outputs["sequence_output"] = (loader(path, "jit_sequence_output"), loader(path, "eager_sequence_output"),
                                          OUTPUT_TOLERANCE)  # fmt: skip
        lines += compared("keras-eager-vs-jit", model, f"Keras 3 {backend}: jit-compiled ({compiler}) vs eager",
                          outputs, step.failure)
    return lines


def run_all(models: tuple[str, ...], timeout_s: float, logs: Path) -> list[dict]:
    lines: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="bench-parity-") as scratch:
        folder = Path(scratch)
        for model in models:
            lines += keras_backends(model, folder, logs, timeout_s)
        for model in (m for m in NATIVE_MODELS if m in models):
            lines += keras_vs_native(model, folder, logs, timeout_s)
        if "bert" in models:
            lines += eager_vs_compile("bert", folder, logs, timeout_s)
            lines += keras_eager_vs_jit("bert", folder, logs, timeout_s)
        for model in COUNTED_PARTS:
            lines += parameter_counts(model, folder, logs, timeout_s)
    for check, model, why in NOT_CHECKED:
        lines.append({"check": check, "model": model, "pair": "", "output": "", "status": "not checked", "why": why,
                      "max_abs": None, "max_rel": None, "tolerance": ""})
    return lines


def number(value) -> str:
    return "-" if value is None else f"{value:.3g}"


def page(lines: list[dict], provenance: dict) -> str:
    counts = {status: sum(line["status"] == status for line in lines) for status in ("pass", "fail", "not checked")}
    commit = (provenance["git"].get("commit") or "?")[:12]
    out = [
        "# Output parity on shared weights (smoke shapes, CPU, float32)",
        "",
        f"Command: `{provenance['command']}`; {provenance['date']}; commit {commit}; machine: "
        f"{provenance['machine']}. {provenance['load']}",
        "",
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
        status = line["status"] + (f": {line['why']}" if line.get("why") else "")
        status = status.replace("|", "/").replace("\n", " ")
        output = line["output"] + (f" ({line['reference_value']:.6g})" if "reference_value" in line else "")
        out.append(f"| {line['check']} | {line['model']} | {line['pair']} | {output} | "
                   f"{number(line['max_abs'])} | {number(line['max_rel'])} | {line['tolerance']} | {status} |")
    return "\n".join(out) + "\n"


def load_note() -> str:
    one, five, _ = os.getloadavg()
    return (f"Load average at the end {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} CPUs, shared with "
            "other work: it changes how long the run took, not its numbers.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.parity.run", description=__doc__)
    parser.add_argument("--results-dir", type=Path, default=Path("results"))
    parser.add_argument("--model", action="append", choices=KERAS_MODELS,
                        help="models to check (repeatable; default all)")
    parser.add_argument("--timeout-s", type=float, default=TIMEOUT_S, help="per worker process")
    args = parser.parse_args(argv)
    results = args.results_dir
    started = time.monotonic()
    try:
        with holding(results):  # its pages and logs are the results folder's: no other run writes there meanwhile
            lines = run_all(tuple(args.model or KERAS_MODELS), args.timeout_s, results / "logs" / "parity")
            return write_pages(results, lines, time.monotonic() - started, argv)
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def write_pages(results: Path, lines: list[dict], took_s: float, argv: list[str] | None) -> int:
    provenance = {
        "command": ("make parity: " if os.environ.get("MAKELEVEL") else "") + shlex.join(
            ["python", "-m", "bench.parity.run", *(sys.argv[1:] if argv is None else argv)]),
        "date": now_utc(), "git": git_info(),  # as a result file records its code: provenance.git
        "machine": machine_label(machine_info()), "load": f"Took {took_s / 60:.1f} min. {load_note()}",
        "tolerances": {"outputs": vars(OUTPUT_TOLERANCE), "gradient_norm": vars(GRADIENT_NORM_TOLERANCE)},
    }
    write_json_atomic(results / "parity" / "parity.json", {"provenance": provenance, "checks": lines})
    write_text_atomic(results / "PARITY.md", page(lines, provenance))
    print(page(lines, provenance))
    return 1 if any(line["status"] == "fail" for line in lines) else 0


if __name__ == "__main__":
    sys.exit(main())
