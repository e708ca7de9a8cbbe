"""`make gpu-check`: on one GPU, in at most 15 minutes, the checks only a GPU can answer, as a report beside the
results (results/gpu-check/<machine>/GPU-CHECK.md and gpu-check.json). In the locked envs or with --env current.

1. device sync against an external clock, per framework present: a known-long GPU op dispatched just before a
   window must stay out of it (the window's start waits for it), and the same op inside a window must be covered by
   it, against the op's time by CUDA events (torch) or by a blocking call's wall clock (JAX, TensorFlow: no
   CUDA-event API of their own);
2. the compiled native cells' CUDA graphs replayed: inductor's cudagraph counters, as the cell recorded them
   (run.framework["inductor_cudagraphs"]: recordings, skips, skip_reasons; "not recorded by this version" where absent);
3. peak device memory of those cells (run.device_memory) beside the plan's figure (results/plan-paper.json);
4. one short paper-shape cell per framework present, with fewer timed steps than the paper profile, said so.

Without a GPU it says so in one line and exits non-zero, running nothing. Everything but the GPU work itself (the
selection of checks, the verdicts, the report) is plain functions of plain data, tested on a CPU with fakes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench.base.errors import BenchError
from bench.base.provenance import REPO_ROOT, machine_info, machine_slug, now_utc
from bench.base.runlock import holding
from bench.catalogue.backends import UNLOCKED_STACK, cell_environment
from bench.studies.gpucheck.page import CHECK_TIMED_STEPS, CHECK_WARMUP_STEPS, Report

BUDGET_S = 15 * 60  # the default; `make gpu-check BUDGET=<minutes>` sets its own
MIN_LEFT_S = {"sync": 30, "cell": 60}  # a check does not start with less than this left of the budget
SYNC_PROBE_TIMEOUT_S = 180
SYNC_PROBE_SIZE = 8192  # a chain of 8192x8192 matmuls: tens to hundreds of ms on one GPU
# framework -> the backend whose env (locked route) runs its probe and cells
FRAMEWORK_BACKEND = {"torch": "native-torch", "jax": "jax", "tensorflow": "tensorflow"}
# (backend, model, task, variant, batch or None for the paper's smallest published batch of the row)
SHORT_CELLS = (
    ("native-torch", "bert", "predict", "eager", None),
    ("native-torch", "bert", "predict", "compiled", None),
    ("native-torch", "bert", "fit", "eager", None),
    ("jax", "bert", "predict", "default", None),
    ("native-torch", "gemma", "generate", "eager", 1),
)
MEMORY_RATIO_FLAG = 1.5  # a measured peak beyond 1.5x the plan's figure (or under 1/1.5 of it) is worth a look


def refusal(machine: dict) -> str | None:
    """Why this machine cannot run the check (one line), or None."""
    if machine.get("gpus"):
        return None
    return "gpu-check: no NVIDIA GPU visible (nvidia-smi lists none): nothing run"


# --------------------------------------------------------------------------- what runs where


def frameworks_present(env: str) -> dict[str, str]:
    """framework -> the interpreter that has it: each built locked env (env == "locked"), or this interpreter for
    each framework it can import (env == "current")."""
    from bench.catalogue.ownenv import installed

    if env == "current":
        dists = {"torch": ("torch",), "jax": ("jax",), "tensorflow": ("tensorflow", "tensorflow-cpu")}
        return {fw: sys.executable for fw, names in dists.items() if any(installed(n) for n in names)}
    from bench.run.env_lookup import env_python

    found = {}
    for framework, backend in FRAMEWORK_BACKEND.items():
        try:
            found[framework] = env_python(backend)
        except BenchError:  # not built (or stale): that framework is not present for this check
            pass
    return found


def short_cells(frameworks: dict[str, str], env: str, profile: str = "paper") -> list:
    """The short paper-shape cells whose framework is present, fewer timed steps than the paper profile (`profile`:
    another's shapes, smoke's for a rehearsal on a CPU)."""
    from bench.catalogue.backends import get_backend
    from bench.catalogue.registry import plan_cells

    stack = UNLOCKED_STACK.name if env == "current" else "today"
    cells = []
    for backend, model, task, variant, batch in SHORT_CELLS:
        if get_backend(backend).framework not in frameworks:
            continue
        found = plan_cells(
            profile,
            backends=[backend],
            models=[model],
            tasks=[task],
            variants=[variant],
            batch_size=batch,
            timed_steps=CHECK_TIMED_STEPS,
            warmup_steps=CHECK_WARMUP_STEPS,
            stack=stack,
        )
        if batch is None:  # the row's smallest published batch
            cells.append(min(found, key=lambda c: c.batch_size))
        else:
            cells.append(next((c for c in found if c.batch_size == batch), min(found, key=lambda c: c.batch_size)))
    return cells


# --------------------------------------------------------------------------- 1. sync against an external clock

SYNC_PROBE = r"""
import json, sys, time
framework = sys.argv[1]
from bench.measure.frameworks import device_for
from bench.base.timing import StepTimer, WindowPlan
clock = time.perf_counter
N = int(sys.argv[2])  # the GPU's size; the CPU test runs the same code smaller (tests/test_ownenv.py)
if framework == "torch":
    import torch
    cuda = torch.cuda.is_available()
    x = torch.randn(N, N, device="cuda" if cuda else "cpu")
    slow = lambda a: torch.tanh(a @ a @ a @ a @ a @ a @ a @ a)
    fast = lambda a: a[:8, :8] + 1
    def external_ms():  # CUDA events on the stream the op runs on: the GPU's own clock
        if not cuda:
            t = clock(); slow(x); return (clock() - t) * 1e3, "wall clock (CPU: torch runs synchronously)"
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(); slow(x); end.record(); torch.cuda.synchronize()
        return start.elapsed_time(end), "CUDA events"
    wait = lambda r: torch.cuda.synchronize() if cuda else None
elif framework == "jax":
    import jax, jax.numpy as jnp
    x = jax.random.normal(jax.random.PRNGKey(0), (N, N))
    slow = jax.jit(lambda a: jnp.tanh(a @ a @ a @ a @ a @ a @ a @ a))
    fast = jax.jit(lambda a: a[:8, :8] + 1)
    wait = lambda r: jax.block_until_ready(r)
    def external_ms():
        t = clock(); wait(slow(x)); return (clock() - t) * 1e3, "wall clock around a blocking call"
else:
    import tensorflow as tf
    with tf.device("/GPU:0" if tf.config.list_physical_devices("GPU") else "/CPU:0"):
        x = tf.random.normal((N, N))
    slow = tf.function(lambda a: tf.tanh(a @ a @ a @ a @ a @ a @ a @ a))
    fast = tf.function(lambda a: a[:8, :8] + 1)
    wait = lambda r: r.numpy()
    def external_ms():
        t = clock(); wait(slow(x)); return (clock() - t) * 1e3, "wall clock around a blocking call"
wait(slow(x)); wait(fast(x))  # compiled outside
measured = [external_ms() for _ in range(3)]
op_ms, clock_name = min(m[0] for m in measured), measured[0][1]
device = device_for(framework)

def before():  # dispatched just before a window: must stay out of it
    timer = StepTimer(device, WindowPlan(0, 1))
    start = clock()
    pending = slow(x)
    timer.begin(); timer.end(fast(x)); timer.begin(); timer.end(fast(x))
    total = (clock() - start) * 1e3
    wait(pending)
    return {"window_ms": timer.windows_ms[0], "total_ms": total}

def inside():  # dispatched inside a window: must be covered by it
    timer = StepTimer(device, WindowPlan(0, 1))
    timer.begin(); timer.end(slow(x)); timer.begin(); timer.end(fast(x))
    return {"window_ms": timer.windows_ms[0]}

found = {"before": before(), "inside": inside()}
# the op timed again after the windows, its quickest of all six: a load spell over the first three is not the op's time
op_ms = min(op_ms, *(external_ms()[0] for _ in range(3)))
print("PROBE " + json.dumps({"framework": framework, "op_ms": op_ms, "clock": clock_name, **found}))
"""


def judge_sync(probe: dict) -> dict:
    """The verdict on one framework's probe: earlier work kept out of the window, work inside it covered."""
    op, before, inside = probe["op_ms"], probe["before"], probe["inside"]
    problems = []
    if op < 5:
        problems.append(f"the probe op took {op:.2f} ms: too short to tell anything")
    if before["window_ms"] >= op / 3:
        problems.append(
            f"work dispatched before the window leaked into it ({before['window_ms']:.2f} ms window vs a {op:.2f} ms op)"
        )
    if before["total_ms"] < 0.8 * op:
        problems.append(
            f"the window's start did not wait for earlier work ({before['total_ms']:.2f} ms in all vs a {op:.2f} ms op)"
        )
    if inside["window_ms"] < 0.9 * op:
        problems.append(
            f"a window does not cover the work inside it ({inside['window_ms']:.2f} ms vs {op:.2f} ms by {probe['clock']})"
        )
    return {
        "framework": probe["framework"],
        "ok": not problems,
        "problems": problems,
        "op_ms": op,
        "clock": probe["clock"],
        "window_before_ms": before["window_ms"],
        "window_inside_ms": inside["window_ms"],
    }


def run_sync_probe(framework: str, python: str, timeout_s: float, size: int = SYNC_PROBE_SIZE) -> dict:
    backend = FRAMEWORK_BACKEND[framework]
    env = {**os.environ, **cell_environment(backend)}
    try:
        out = subprocess.run(
            [python, "-c", SYNC_PROBE, framework, str(size)],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        return {
            "framework": framework,
            "ok": False,
            "timed_out": True,
            "problems": [f"the probe did not finish in {timeout_s:.0f} s"],
        }
    line = next((line for line in out.stdout.splitlines() if line.startswith("PROBE ")), None)
    if out.returncode or line is None:
        return {
            "framework": framework,
            "ok": False,
            "problems": [f"the probe failed (exit {out.returncode}): {out.stderr.strip()[-500:]}"],
        }
    return judge_sync(json.loads(line[len("PROBE ") :]))


# --------------------------------------------------------------------------- 2, 3, 4: the short cells' results


def judge_cell(result, plan_entry: dict | None) -> dict:
    """One short cell's result: its figure, steps, CUDA graph counters (compiled native cells) and peak device
    memory beside the plan's figure."""
    from bench.catalogue.profiles import get_profile

    cell, run = result.cell, (result.runs[0] if result.runs else None)
    paper = get_profile("paper")
    paper_steps = f"{paper.timed_steps} to {paper.max_timed_steps}" if paper.samples else str(paper.timed_steps)
    row = {
        "cell": cell.key,
        "status": result.status,
        "message": result.message if result.status != "ok" else None,
        "timed_steps": cell.timed_steps,
        "paper_timed_steps": paper_steps,
        "median": round(result.summary().median, 3) if result.status == "ok" else None,
        "unit": result.unit,
    }
    if cell.variant == "compiled":
        graphs = (run.framework or {}).get("inductor_cudagraphs") if run else None
        if graphs is None:
            row["cudagraphs"] = {"verdict": "not recorded by this version"}
        else:
            replayed = not graphs.get("skips") and bool(
                graphs.get("recordings")
            )  # bench/measure/frameworks.py inductor_cudagraphs
            row["cudagraphs"] = {
                "verdict": "replayed" if replayed else "NOT replayed (skipped or never recorded)",
                "counters": graphs,
            }
    memory = getattr(run, "device_memory", None) if run else None
    planned = (plan_entry or {}).get("memory_gib")
    row["memory"] = {"measured": memory or "not recorded by this version", "plan_gib": planned}
    if memory and planned:
        peak = memory.get("peak_allocated_gib")
        if isinstance(peak, (int, float)) and peak > 0:
            ratio = peak / planned
            row["memory"]["ratio"] = round(ratio, 3)
            row["memory"]["verdict"] = (
                "within the plan's range"
                if 1 / MEMORY_RATIO_FLAG <= ratio <= MEMORY_RATIO_FLAG
                else "far from the plan: look"
            )
    return row


def preflight() -> int:
    """The refusal alone (stdlib, any Python): make asks it before building or naming an env."""
    why = refusal(machine_info())
    if why:
        print(why, file=sys.stderr)
        return 2
    return 0


def checks(frameworks: dict[str, str], env: str, profile: str = "paper") -> list[tuple[str, str, object]]:
    """Every check in order of value: (name, kind, what it runs). The sync probes first (a window that does not
    wait for the device makes every figure wrong), then the short paper-shape cells."""
    probes = [(f"sync probe ({fw})", "sync", (fw, python)) for fw, python in frameworks.items()]
    return probes + [(cell.key, "cell", cell) for cell in short_cells(frameworks, env, profile)]


def run(results_dir: Path, env: str = "locked", budget_s: float = BUDGET_S, echo=print, resume: bool = False,
        profile: str = "paper", sync_size: int = SYNC_PROBE_SIZE) -> int:
    """Each check's result, and the report, written as soon as it ends; nothing starts past the budget and the check
    the budget cuts short is ended and left for `resume`, which goes on into the same report with the checks not yet
    passed. `profile` and `sync_size`: smaller checks, for a rehearsal on a CPU with a stand-in nvidia-smi."""
    machine = machine_info()
    if preflight():
        return 2
    with holding(results_dir):  # a run into the same results folder would load the GPU it measures
        return run_checks(results_dir, machine, env, budget_s, echo, resume, profile, sync_size)


def resumed_report(previous: Path, env: str, echo) -> Report | None:
    """The report a resumed check goes on with: the folder's, where it was run with the same --env and, unlocked, in
    an environment of the same key (bench/catalogue/ownenv.py environment_key); one of another environment is moved aside
    (gpu-check.<its start>.json) and None returned: its passed checks say nothing of this environment."""
    if not previous.exists():
        return None
    report = Report.load(previous)
    if report.env != env:
        raise BenchError(f"gpu-check: {previous} is a run with --env {report.env}: resume it with that")
    if env != "current":
        return report
    from bench.base.provenance import unlocked_environment
    from bench.catalogue.ownenv import environment_key, same_environment

    if report.environment and same_environment(report.environment, unlocked_environment()):
        return report
    stamp = report.started.replace(":", "")
    for path in (previous, previous.with_name("GPU-CHECK.md")):
        if path.exists():
            os.replace(path, path.with_name(f"{path.stem}.{stamp}{path.suffix}"))
    key = environment_key(report.environment or {})["sha256"][:12]
    echo(f"gpu-check: {previous} was run in another environment (key {key}): moved aside, every check runs here")
    return None


def run_checks(results_dir: Path, machine: dict, env: str, budget_s: float, echo, resume: bool,
               profile: str = "paper", sync_size: int = SYNC_PROBE_SIZE) -> int:
    from bench.plan import load_cells
    from bench.run.runner import RunOptions, run_cells

    folder = results_dir / "gpu-check" / machine_slug(machine)
    frameworks = frameworks_present(env)
    if not frameworks:
        raise BenchError(
            "gpu-check: no framework to check: "
            + (
                "this interpreter has none of torch, jax, tensorflow"
                if env == "current"
                else "no locked env is built (make env BACKEND=native-torch, BACKEND=jax; or ENV=current)"
            )
        )
    previous = folder / "gpu-check.json"
    report = resumed_report(previous, env, echo) if resume else None
    if report is None:
        environment = None
        if env == "current":
            from bench.base.provenance import unlocked_environment

            environment = unlocked_environment()
        report = Report(machine, env, now_utc(), budget_s, environment=environment)
    clock = time.monotonic()
    deadline = clock + budget_s
    session = {"started": now_utc(), "budget_s": budget_s, "elapsed_s": 0.0, "ended": "running"}
    report.sessions.append(session)
    todo = [c for c in checks(frameworks, env, profile) if c[0] not in report.passed()]
    elapsed_before = report.elapsed_s
    ran: set[str] = set()  # the checks this session gave a result

    def save() -> list[Path]:
        session["elapsed_s"] = round(time.monotonic() - clock, 1)
        report.elapsed_s = elapsed_before + session["elapsed_s"]
        report.skipped = [name for name, _, _ in todo if name not in ran]  # left by this session's budget
        return report.write(folder)

    save()
    plan = load_cells(results_dir, "paper")
    try:
        for name, kind, what in todo:
            left = deadline - time.monotonic()
            if left < MIN_LEFT_S[kind]:
                session["ended"] = "budget"
                break
            echo(f"gpu-check: {name} ({left:.0f} s of the budget left)")
            if kind == "sync":
                limit = min(SYNC_PROBE_TIMEOUT_S, left)
                verdict = run_sync_probe(*what, limit, size=sync_size)
                if verdict.get("timed_out") and limit < SYNC_PROBE_TIMEOUT_S:
                    session["ended"] = "budget"
                    break
                report.record(name, verdict)
                ran.add(name)
            else:
                results = run_cells(
                    [what],
                    folder / "cells",
                    RunOptions(profile_choice="gpu-check (short paper-shape cell)", echo=echo, deadline=deadline),
                )
                if not results:
                    session["ended"] = "budget"
                    break
                # the plan names today's keys
                report.record(name, judge_cell(results[0], plan.get(name.removesuffix(f"__stack-{UNLOCKED_STACK.name}"))))
                ran.add(name)
            save()
        else:
            session["ended"] = "finished"
    except KeyboardInterrupt:  # SIGTERM, SIGHUP, Ctrl-C (bench/base/lifetime.py): what finished is on disk, said so
        session["ended"] = "signal"
        save()
        raise
    paths = save()
    echo("wrote " + " and ".join(str(p) for p in paths))
    if not report.complete:
        echo(f"gpu-check: stopped by the budget; not run yet: {', '.join(report.skipped)} (RESUME=1 goes on)")
    failed = [s for s in report.sync if not s["ok"]] + [
        c for c in report.cells if c["status"] not in ("ok", "unsupported")
    ]
    return 1 if failed or not report.complete else 0


def main(argv: list[str] | None = None) -> int:
    """`python -m bench gpu-check`: on one GPU, within a budget, the checks only a GPU can answer; --preflight: only
    the refusal without one (stdlib: before any env is built)."""
    from bench.base.argtypes import OneLineErrors, budget_minutes, positive_int
    from bench.base.resultsdir import add_results_dir

    parser = OneLineErrors(prog="python -m bench gpu-check", description=main.__doc__)
    parser.add_argument(
        "--env",
        choices=("locked", "current"),
        default="locked",
        help="the built envs (default) or this interpreter, unlocked",
    )
    add_results_dir(parser, "writes gpu-check/<machine>/ here; reads plan-paper.json from here")
    parser.add_argument(
        "--budget-minutes",
        type=budget_minutes,
        default=15.0,
        help="end the work in progress and stop at this (default 15)",
    )
    parser.add_argument("--resume", action="store_true", help="go on with a cut-off run's checks, into its report: "
                        "the checks not yet passed in this environment (one of another environment's key starts "
                        "afresh)")
    parser.add_argument("--profile", default="paper", help="the short cells' shapes (default paper; smoke: a "
                        "rehearsal on a CPU with a stand-in nvidia-smi)")
    parser.add_argument("--sync-size", type=positive_int, default=8192,
                        help="the sync probe's matrix side (default 8192, a GPU's; smaller for a rehearsal)")
    parser.add_argument(
        "--preflight", action="store_true", help="only the refusal without a GPU (stdlib: before any env is built)"
    )
    args = parser.parse_args(argv)
    if args.preflight:
        return preflight()
    return run(args.results_dir, env=args.env, budget_s=args.budget_minutes * 60, resume=args.resume,
               profile=args.profile, sync_size=args.sync_size)
