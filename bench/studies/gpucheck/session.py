"""One short session on a lent GPU machine (scripts/gpu-session.sh runs it after the bundle's install and a resumed
`gpu-check`): the cells that decide the published findings still open, in the order of what they decide, each
resumed where an earlier session of the same environment left it, and one GPU-utilisation capture of Keras 3
PyTorch's Gemma fit (the H200 ran it slower than the published A100: host-bound or GPU-bound?).

The order (PLAN): Mistral fit on Keras 3 JAX, Keras 3 PyTorch and native PyTorch (no published row has all three);
Gemma and Mistral generate at batch 32, Keras 3 JAX against Keras 3 PyTorch (the published PyTorch figures were
slowed by static padding: the footnote); BERT fit at matched precision (the PyTorch columns at TF32, Keras 3 JAX at
full FP32: the first session's BERT row compared TF32 with FP32); then the native PyTorch cells of the rows where a
Keras 3 figure has none to be set against. Where a row is close (the sides expected within the process-to-process
spread of a few percent), three processes a cell; else two. Each step's cells are skipped where this environment's
results already hold them (bench/run/planning.py already_measured, keyed by bench/catalogue/ownenv.py environment_key,
so an incidental package does not make a session measure everything again).

The session's record (session.json and SESSION.md in its logs folder): the environment key, the results folder,
each step with what it ran, skipped and left to the budget, and the capture's verdict.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from bench.base.atomic import write_text_atomic
from bench.base.errors import BenchError
from bench.catalogue.backends import UNLOCKED_STACK

# (backend, model, task, variant, published batch)
CellSpec = tuple[str, str, str, str, int]


@dataclass(frozen=True)
class Step:
    name: str
    finding: str  # the published finding (or the open question) its cells decide
    cells: tuple[CellSpec, ...]
    processes: int  # 3 where the row is close, else 2
    why_processes: str


PLAN: tuple[Step, ...] = (
    Step(
        "mistral-fit",
        "Mistral fit at batch 8: Keras 3 JAX against Keras 3 PyTorch and native PyTorch (no published row has the "
        "native column)",
        (("jax", "mistral", "fit", "default", 8), ("torch", "mistral", "fit", "default", 8),
         ("native-torch", "mistral", "fit", "eager", 8)),  # fmt: skip
        3,
        "close: Keras 3 JAX and native PyTorch were the nearest pair of the first H200 session's Gemma fit",
    ),
    Step(
        "generate-bs32",
        "Gemma and Mistral generate at batch 32: Keras 3 JAX against Keras 3 PyTorch, whose published figures were "
        "slowed by static padding (the published footnote)",
        (("jax", "gemma", "generate", "default", 32), ("torch", "gemma", "generate", "default", 32),
         ("jax", "mistral", "generate", "default", 32), ("torch", "mistral", "generate", "default", 32)),  # fmt: skip
        2,
        "far apart as published",
    ),
    Step(
        "bert-fit-matched-precision",
        "BERT fit at batch 32 like for like: the PyTorch columns at TF32 (matmul-high) beside Keras 3 JAX's TF32 "
        "default, and Keras 3 JAX at full FP32 (matmul-highest) beside the PyTorch columns' FP32 default",
        (("torch", "bert", "fit", "matmul-high", 32), ("native-torch", "bert", "fit", "matmul-high", 32),
         ("jax", "bert", "fit", "matmul-highest", 32)),  # fmt: skip
        3,
        "close: at one precision the frameworks' matmuls are the same kernels",
    ),
    Step(
        "keras3-over-native",
        "Keras 3 over native PyTorch: the native cells of the rows whose Keras 3 figures have none beside them "
        "(BERT predict at 256, Gemma and Mistral generate at 32)",
        (("native-torch", "bert", "predict", "eager", 256), ("native-torch", "gemma", "generate", "eager", 32),
         ("native-torch", "mistral", "generate", "eager", 32)),  # fmt: skip
        2,
        "no expectation either way: two processes, more in a later session where undecided",
    ),
)


def published_text(step: Step) -> str:
    """The published figures of a step's default cells, from the published table
    (bench/data/keras3_benchmarks_2024.csv), as the plan and the record say them ("published ms: Mistral fit: Keras 3
    (JAX) 213.22, ..."); empty where it has none."""
    from bench.base.published import published_ms
    from bench.catalogue.backends import BACKENDS
    from bench.catalogue.registry import get_model

    figures, rows = published_ms(), {}
    for backend, model, task, variant, batch in step.cells:
        if variant in BACKENDS[backend].variants and (ms := figures.get((model, task, batch), {}).get(backend)):
            rows.setdefault(f"{get_model(model).display} {task}", []).append(f"{BACKENDS[backend].display} {ms:g}")
    said = "; ".join(f"{row}: {', '.join(cells)}" for row, cells in rows.items())
    return f"published ms: {said}" if said else ""


UTILISATION_CELL: CellSpec = ("torch", "gemma", "fit", "default", 8)
UTILISATION_RESERVE_S = 120  # kept for the capture: one Keras 3 PyTorch Gemma fit process took 75-95 s on the H200
SAMPLE_MS = 200  # nvidia-smi's sampling period for the capture
# The capture's verdict, from the median GPU utilisation over the timed steps' samples: nvidia-smi's utilization.gpu
# is the share of time a kernel ran. A step that keeps the GPU busy is GPU-bound; one whose GPU idles half the
# time waits on the host (Python dispatch, the framework's own overhead).
GPU_BOUND, HOST_BOUND = 85, 50
SAMPLE_FIELDS = ("timestamp", "utilization.gpu", "utilization.memory", "clocks.sm", "power.draw")


def step_cells(step: Step | tuple[CellSpec, ...], profile: str) -> list:
    """The cells of a step, unlocked, at the profile's batch for each published batch (smoke: capped at 2)."""
    from bench.catalogue.profiles import get_profile
    from bench.catalogue.registry import plan_cells

    specs = step.cells if isinstance(step, Step) else step
    batch_of = get_profile(profile).batch_size
    cells = []
    for backend, model, task, variant, batch in specs:
        found = plan_cells(profile, backends=[backend], models=[model], tasks=[task], variants=[variant],
                           stack=UNLOCKED_STACK.name)  # fmt: skip
        match = [c for c in found if c.batch_size == batch_of(batch)]
        if not match:
            raise BenchError(f"gpu session: no {profile} cell {backend} {model} {task} {variant} at batch {batch}")
        cells.append(match[0])
    return cells


def plan_text(profile: str = "paper") -> str:
    """The session's order, one line a step and its cells, as --plan prints it."""
    lines = []
    for n, step in enumerate(PLAN, 1):
        published = f" ({published_text(step)})" if published_text(step) else ""
        lines.append(f"{n}. {step.name} ({step.processes} processes a cell: {step.why_processes}): {step.finding}"
                     f"{published}")
        lines += [f"   {cell.key}" for cell in step_cells(step, profile)]
    cell = step_cells((UTILISATION_CELL,), profile)[0]
    lines.append(f"{len(PLAN) + 1}. utilisation: one process of {cell.key} with nvidia-smi sampled every "
                 f"{SAMPLE_MS} ms (host-bound or GPU-bound)")  # fmt: skip
    return "\n".join(lines)


class Sampler:
    """nvidia-smi's utilisation, clocks and power, every SAMPLE_MS, into a CSV with this host's clock beside each
    line, while a cell runs."""

    def __init__(self, path: Path):
        self.path = path
        self.process: subprocess.Popen | None = None
        self.thread: threading.Thread | None = None

    def __enter__(self) -> Sampler:
        command = ["nvidia-smi", f"--query-gpu={','.join(SAMPLE_FIELDS)}", "--format=csv,noheader,nounits",
                   f"--loop-ms={SAMPLE_MS}"]  # fmt: skip
        try:
            self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.thread = threading.Thread(target=self.copy, daemon=True)
        self.thread.start()
        return self

    def copy(self) -> None:
        with self.path.open("w") as out:
            out.write("host_time," + ",".join(SAMPLE_FIELDS) + "\n")
            for line in self.process.stdout:
                out.write(f"{time.time():.3f},{line.strip()}\n")
                out.flush()

    def __exit__(self, *exc) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.thread is not None:
            self.thread.join(timeout=10)


def read_samples(path: Path) -> list[tuple[float, float]]:
    """(host time, utilization.gpu %) of each readable sample line."""
    out = []
    for line in path.read_text().splitlines()[1:] if path.exists() else []:
        parts = [p.strip() for p in line.split(",")]
        try:
            out.append((float(parts[0]), float(parts[2])))
        except (IndexError, ValueError):
            continue
    return out


def utilisation_verdict(samples: list[tuple[float, float]], window: tuple[float, float]) -> dict:
    """The samples inside the timed steps' window (host times), their median GPU utilisation and what it says."""
    inside = [u for t, u in samples if window[0] <= t <= window[1]]
    if len(inside) < 3:
        return {"samples": len(samples), "in_timed_steps": len(inside),
                "verdict": "undecided: fewer than 3 samples fell inside the timed steps"}  # fmt: skip
    median = statistics.median(inside)
    verdict = ("GPU-bound" if median >= GPU_BOUND else "host-bound" if median <= HOST_BOUND else
               f"between (GPU busy {median:.0f}% of the time: neither {GPU_BOUND}% nor under {HOST_BOUND}%)")
    return {"samples": len(samples), "in_timed_steps": len(inside), "median_utilization_gpu": median,
            "p10_p90": [sorted(inside)[len(inside) // 10], sorted(inside)[(9 * len(inside)) // 10]],
            "verdict": verdict}  # fmt: skip


def capture_utilisation(folder: Path, profile: str, deadline: float, echo, ceilings: dict | None = None) -> dict:
    """One process of the utilisation cell into its own results folder (the main one keeps its measured result),
    nvidia-smi sampled throughout; the timed steps' window is the last of the process's time before it ended, as
    long as its timed steps (to within the drift probe's 0.1 s after it)."""
    from bench.run.runner import RunOptions, run_cells

    cell = step_cells((UTILISATION_CELL,), profile)[0]
    samples = folder / "samples.csv"
    with Sampler(samples):
        results = run_cells([cell], folder / "results", RunOptions(repeats=1, echo=echo, deadline=deadline,
                                                                   profile_choice="gpu session: utilisation",
                                                                   ceilings=covering(ceilings, [cell])))  # fmt: skip
        ended = time.time()
    if not results:
        return {"cell": cell.key, "status": "left by the budget"}
    result = results[0]
    record = {"cell": cell.key, "status": result.status, "samples_file": str(samples)}
    if result.status != "ok":
        return {**record, "message": result.message, "verdict": f"not measured: {result.status}"}
    timed_s = sum(result.runs[0].timed_ms) / 1e3
    window = (ended - 0.5 - timed_s, ended - 0.1)
    return {**record, "figure_ms": result.figure(), "timed_s": round(timed_s, 2),
            **utilisation_verdict(read_samples(samples), window)}  # fmt: skip


def earlier_capture(root: Path, key: str, machine_slug: str) -> Path | None:
    """A session of this environment key and machine whose capture measured the cell (its session.json)."""
    for path in sorted((root / "gpu-session").glob("*/session.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        capture = data.get("utilisation") or {}
        if data.get("environment_key") == key and data.get("machine") == machine_slug and capture.get("status") == "ok":
            return path
    return None


def covering(ceilings: dict | None, cells: list) -> dict | None:
    """An earlier step's ceilings where they hold a probe of every framework these cells run on; else None (the run
    probes its own)."""
    from bench.catalogue.backends import get_backend

    if not ceilings or not {get_backend(c.backend).framework for c in cells} <= set(ceilings):
        return None
    return ceilings


def run(root: Path, logs: Path, budget_s: float, profile: str = "paper", echo=print) -> dict:
    """The session: each step's cells not yet measured in this environment, in PLAN's order, while the budget lasts
    (UTILISATION_RESERVE_S of it kept for the capture, which runs last unless an earlier session of this
    environment and machine made it); its record written after each step."""
    from bench.base.provenance import machine_info, machine_slug, unlocked_environment
    from bench.catalogue.ownenv import environment_folder, environment_key, why_not_here
    from bench.run.planning import still_to_measure
    from bench.run.runner import RunOptions, run_cells

    started = time.monotonic()
    deadline = started + budget_s
    machine, environment = machine_info(), unlocked_environment()
    key = environment_key(environment)["sha256"]
    results_dir = environment_folder(root, environment)
    captured = earlier_capture(root, key, machine_slug(machine))
    runs_here = not why_not_here(step_cells((UTILISATION_CELL,), profile)[0])  # NA here (no torch): nothing to keep
    reserve = UTILISATION_RESERVE_S if runs_here and not captured else 0
    record: dict = {"environment_key": key, "key_over": environment_key(environment), "machine": machine_slug(machine),
                    "results": str(results_dir), "profile": profile, "budget_s": budget_s, "steps": []}  # fmt: skip
    echo(f"gpu session: environment key {key[:12]}, results in {results_dir}")

    def save() -> None:
        record["elapsed_s"] = round(time.monotonic() - started, 1)
        logs.mkdir(parents=True, exist_ok=True)
        write_text_atomic(logs / "session.json", json.dumps(record, indent=2) + "\n")
        write_text_atomic(logs / "SESSION.md", session_markdown(record))

    ceilings = None  # the machine's ceilings, probed by the first step that runs (15 s on the H200) and kept
    for step in PLAN:
        cells = step_cells(step, profile)
        todo = still_to_measure(cells, results_dir, step.processes, machine)
        waiting = {c.key for c in todo}
        entry = {"step": step.name, "finding": step.finding, "published": published_text(step),
                 "processes": step.processes,
                 "cells": [c.key for c in cells], "skipped": [c.key for c in cells if c.key not in waiting],
                 "ran": [], "left": []}  # fmt: skip
        record["steps"].append(entry)
        if not todo:
            echo(f"gpu session: {step.name}: every cell already measured in this environment (resume)")
            save()
            continue
        if time.monotonic() > deadline - reserve:
            entry["left"] = [c.key for c in todo]
            save()
            continue
        echo(f"gpu session: {step.name}: {len(todo)} cells, {step.processes} processes each ({step.why_processes})")
        done = run_cells(todo, results_dir, RunOptions(repeats=step.processes, echo=echo, deadline=deadline - reserve,
                                                       profile_choice=f"gpu session: {step.name}",
                                                       ceilings=covering(ceilings, todo)))  # fmt: skip
        ceilings = next((r.provenance["ceilings"] for r in done if r.provenance.get("ceilings")), ceilings)
        finished = {r.cell.key: r for r in done}
        entry["ran"] = [{"cell": k, "status": r.status, "processes": len(r.runs)} for k, r in finished.items()]
        entry["left"] = [c.key for c in todo if c.key not in finished]
        save()
    if captured:
        record["utilisation"] = {"status": "made by an earlier session", "session": str(captured)}
    elif time.monotonic() < deadline:
        echo("gpu session: utilisation: one process of Keras 3 PyTorch Gemma fit, nvidia-smi sampled")
        record["utilisation"] = capture_utilisation(logs / "utilisation", profile, deadline, echo, ceilings)
    else:
        record["utilisation"] = {"status": "left by the budget"}
    save()
    return record


def session_markdown(record: dict) -> str:
    lines = [
        f"# GPU session on {record['machine']}",
        "",
        f"Environment key {record['environment_key'][:12]} (Python {record['key_over']['python']} and "
        f"{len(record['key_over']['distributions'])} framework, workload and CUDA distributions: "
        "bench/catalogue/ownenv.py environment_key); results in "
        f"`{record['results']}`; profile {record['profile']}; {record.get('elapsed_s', 0):.0f} s of "
        f"{record['budget_s']:.0f} s.",
        "",
    ]
    for n, step in enumerate(record["steps"], 1):
        ran = ", ".join(f"`{r['cell']}` {r['status']} ({r['processes']})" for r in step["ran"]) or "none"
        published = f" ({step['published']})" if step.get("published") else ""
        lines.append(f"{n}. **{step['step']}** ({step['processes']} processes a cell): {step['finding']}{published}. "
                     f"Ran: {ran}."
                     + (f" Already measured (resume): {', '.join(f'`{k}`' for k in step['skipped'])}."
                        if step["skipped"] else "")
                     + (f" Left by the budget: {', '.join(f'`{k}`' for k in step['left'])}." if step["left"] else ""))
    capture = record.get("utilisation")
    if capture:
        lines += ["", f"Utilisation of Keras 3 PyTorch Gemma fit: {capture.get('verdict') or capture.get('status')}"
                  + (f" (median GPU utilisation {capture['median_utilization_gpu']:.0f}% over "
                     f"{capture['in_timed_steps']} samples of its timed steps)" if "median_utilization_gpu" in capture
                     else "") + "."]  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    import argparse

    from bench.base.lifetime import stop_on_signals
    from bench.base.provenance import REPO_ROOT

    parser = argparse.ArgumentParser(prog="python -m bench gpu-session",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--results-dir", type=Path, default=REPO_ROOT / "results")
    parser.add_argument("--logs", type=Path, help="this session's folder (session.json, SESSION.md, the capture)")
    parser.add_argument("--budget-minutes", type=float, default=6.0)
    parser.add_argument("--profile", default="paper", help="paper (a GPU); smoke: a rehearsal on a CPU")
    parser.add_argument("--plan", action="store_true", help="print the order and the cells, run nothing")
    args = parser.parse_args(argv)
    if args.plan:
        print(plan_text(args.profile))
        return 0
    if args.logs is None:
        parser.error("--logs is needed to run a session")
    stop_on_signals()
    run(args.results_dir, args.logs, args.budget_minutes * 60, args.profile)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
