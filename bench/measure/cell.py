"""Runs inside a backend's environment, one process per cell: build, measure, write one Run as JSON."""
from __future__ import annotations

import os
import statistics
import sys
import time
import traceback
from pathlib import Path

from bench.base.failures import classify
from bench.base.provenance import gpus
from bench.base.timing import Split, StepTimer, Stopwatch, describe_sampling
from bench.catalogue.backends import get_backend
from bench.catalogue.profiles import get_profile
from bench.catalogue.registry import Cell, get_model
from bench.measure.drivers import DERIVATIONS, drive
from bench.measure.env_process import die_with_parent, enter_env
from bench.record.results import Run, write_json_atomic


def log(message: str) -> None:
    print(f"[cell] {message}", flush=True)


def on_gpu(cell: Cell, machine_gpus: list[dict]) -> bool:
    """Whether the cell must run on a GPU: its profile is a GPU profile and the machine lists a GPU for it."""
    return bool(machine_gpus) and get_profile(cell.profile).gpu


def measure(cell: Cell) -> Run:
    from bench.base import provenance
    from bench.measure import frameworks

    backend = get_backend(cell.backend)
    spec = get_model(cell.model)
    task = cell.task_spec
    wall = Stopwatch()
    listed = gpus()
    gpu = on_gpu(cell, listed)
    if gpu:
        frameworks.require_gpu(backend.framework, listed)  # never the CPU's figures under the GPU's label
    precision = frameworks.apply_precision_variant(backend.framework, cell.variant)  # before the model is built
    # the device's own drift reference, before anything of the cell is on the device and after its timed steps
    reference_before = frameworks.device_reference(backend.framework) if gpu else None
    workload = spec.implementation(cell.backend).create(cell, spec.shape(cell.profile))
    log(f"setting up {spec.display} {cell.task} (batch {cell.batch_size}, profile {cell.profile}, {cell.variant})")
    workload.setup()
    setup_s = wall.seconds()
    plan = cell.window_plan()
    log(
        f"set up in {setup_s:.1f} s; running 1 first + {cell.warmup_steps} warm-up (up to {plan.warmup_cap}) + "
        f"{timed_plan(plan)} ({workload.driver} driver)"
    )
    derive = DERIVATIONS[task.derivation] if task.derivation else None  # the rule judges the figures reported
    timer = StepTimer(workload.timing_device, plan, derive=derive)
    drive(workload, timer)
    workload.steps_run = timer.steps_done
    workload.check()
    split, derived = figures(timer, task.derivation)
    sampling = timer.sampling()
    log(describe_sampling(sampling, statistics.median(split.timed_ms)))
    if (parts := getattr(workload, "split_timer", None)) is not None and parts.done:
        parts_median = statistics.median(parts.timed_figures)
        log("one-token and partial calls: " + describe_sampling(parts.sampling(), parts_median))
    steadiness = timer.steadiness(split.timed_ms)
    reference_after = frameworks.device_reference(backend.framework) if gpu else None
    status, message = "ok", None
    if derived and (why := impossible_figures(split.timed_ms)):
        status, message = "unsteady", why
    elif problems := workload.cuda_graph_problems(steadiness):
        status, message = (
            "unsteady",
            f"compiled with CUDA graphs (mode=reduce-overhead), but {'; '.join(problems)} (raw windows kept)",
        )
    log(
        f"warm-up took {steadiness.warmup_steps_run} steps; "
        + ("steady" if steadiness.steady else "unsteady: " + "; ".join(steadiness.reasons))
    )
    return Run(
        status=status,
        message=message,
        first_step_ms=split.first_ms,
        first_step_contains=task.first_step_contains,
        warmup_ms=split.warmup_ms,
        timed_ms=split.timed_ms if status == "ok" else [],
        windows_ms=timer.windows_ms if derived or status != "ok" else None,
        derived=derived,
        compile_events=timer.compile_events,
        steadiness=steadiness.to_dict(),
        setup_s=setup_s,
        wall_s=wall.seconds(),
        tokens_per_step=workload.tokens_per_step(),
        settings={"unit": task.unit, "driver": workload.driver, **precision, **workload.settings()},
        framework=frameworks.framework_info(backend.framework),
        process={**provenance.process_provenance(), "peak_rss_gib": provenance.peak_rss_gib()},
        device_memory=frameworks.device_memory(backend.framework),
        generate_split=generate_split(workload, cell, split.timed_ms),
        sampling=sampling,
        device_reference={"before": reference_before, "after": reference_after} if gpu else None,
    )


def timed_plan(plan) -> str:
    """The plan's timed steps in words, for the cell's log."""
    if plan.fixed:
        return f"{plan.timed_steps} timed steps"
    rule = plan.rule()
    seconds = f"at least {rule['min_s']:g} s" + (f", at most {rule['max_s']:g} s" if rule["max_s"] else "")
    return (
        f"{plan.timed_steps} to {plan.max_timed_steps} timed steps (until the median's 95% interval is within "
        f"{plan.target_half_width * 100:g}%; {seconds})"
    )


def generate_split(workload, cell: Cell, whole_timed_ms: list[float]) -> dict | None:
    """The prefill/decode split of a generate cell whose driver took one (bench/measure/drivers.py drive_generate)."""
    if getattr(workload, "split_timer", None) is None:
        return None
    from bench.base.generate_split import split_record

    return split_record(
        workload.split_timer, whole_timed_ms, workload.shape.new_tokens, cell.batch_size, workload.generate_work()
    )


def figures(timer: StepTimer, derivation: str | None) -> tuple[Split, bool]:
    """The per-step figures: the windows, or (derived) one figure per step computed from its windows. A derived
    first step is its windows' sum (everything the first step ran, compiles included)."""
    if derivation is None:
        return timer.split(), False
    per_step = DERIVATIONS[derivation](timer.windows_ms, timer.tags)
    split = timer.split(per_step)
    first = sum(timer.windows_ms[: timer.plan.windows_per_step])
    return Split(first, split.warmup_ms, split.timed_ms), True


def impossible_figures(timed_ms: list[float]) -> str | None:
    """Why derived per-step figures are no measurement: any at or below zero (one [-2901, 232, 406] ms once passed as
    ok on its median), the noise between the paired calls larger than their difference; None where none is."""
    bad = [v for v in timed_ms if v <= 0]
    if not bad:
        return None
    return (
        f"{len(bad)} of {len(timed_ms)} derived per-step figures are zero or negative (lowest {min(bad):.4g} ms): "
        "the noise between the paired calls is larger than their difference (raw windows kept)"
    )


def pin_cpus() -> None:
    """Keep to the cores the orchestrator gave this cell (BENCH_CPU_AFFINITY, "0-3,8": cells run side by side with
    --jobs N), before any framework starts its thread pools; the thread variables came with it."""
    spec = os.environ.get("BENCH_CPU_AFFINITY")
    if spec:
        os.sched_setaffinity(0, parse_cpu_list(spec))


def parse_cpu_list(spec: str) -> set[int]:
    """ "0-3,8" -> {0, 1, 2, 3, 8} (the kernel's cpulist format)."""
    cpus: set[int] = set()
    for part in filter(None, (p.strip() for p in spec.split(","))):
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus


def check_config(cell: Cell, config: dict | None) -> None:
    """Run what the orchestrator resolved, or nothing: a configuration whose cell, shape or window plan differs from
    what this process would run (another version of the code, an edit on the way) fails the cell."""
    from bench.catalogue.config import mismatches

    if config is not None and (wrong := mismatches(config, cell)):
        raise RuntimeError(
            f"the orchestrator's configuration of this cell differs from this process's in {', '.join(wrong)}: "
            "the orchestrator and the cell run different code (update the env or the checkout)"
        )


MESSAGE_HEAD, MESSAGE_TAIL = 500, 1500  # characters of a failure's message kept in its result: its start and its end


def clipped(message: str) -> str:
    """A long message's start and end: a framework's error (TensorFlow's graph errors) names its cause after the
    frames that led to it, so the end is kept with the start; the whole traceback is in the cell's log."""
    if len(message) <= MESSAGE_HEAD + MESSAGE_TAIL:
        return message
    left_out = len(message) - MESSAGE_HEAD - MESSAGE_TAIL
    return f"{message[:MESSAGE_HEAD]}\n… ({left_out} characters left out: the cell's log has them)\n{message[-MESSAGE_TAIL:]}"


def main(cell: Cell, out: Path, config: dict | None = None) -> int:
    pin_cpus()  # first: threads started later (the parent watch, the frameworks' pools) inherit the affinity
    die_with_parent(out)
    enter_env(cell.env, get_backend(cell.backend).framework == "jax", on_gpu(cell, gpus()))  # before any framework
    started = time.perf_counter()
    try:
        check_config(cell, config)
        run = measure(cell)
        code = 0
    except Exception as exc:  # recorded as the cell's status, never silenced: the traceback goes to the log
        traceback.print_exc()
        from bench.base import provenance

        run = Run(
            status=classify(exc),
            message=clipped(f"{type(exc).__name__}: {exc}"),
            wall_s=round(time.perf_counter() - started, 3),
            process={**provenance.process_provenance(), "peak_rss_gib": provenance.peak_rss_gib()},
        )
        code = 1
    run.exit_code = code
    write_json_atomic(out, run.to_dict())
    log(f"{run.status} in {time.perf_counter() - started:.1f} s")
    sys.stdout.flush()
    return code
