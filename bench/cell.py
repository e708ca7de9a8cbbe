"""Runs inside a backend's environment, one process per cell: build, measure, write one Run as JSON."""
from __future__ import annotations

import os
import sys
import time
import traceback
from pathlib import Path

from bench.backends import cell_environment, get_backend
from bench.failures import classify
from bench.provenance import gpus
from bench.results import Run, write_json_atomic
from bench.timing import Split, StepTimer
from bench.workloads import Cell, get_model

def log(message: str) -> None:
    print(f"[cell] {message}", flush=True)


def measure(cell: Cell) -> Run:
    from bench import frameworks, provenance

    backend = get_backend(cell.backend)
    spec = get_model(cell.model)
    started = time.perf_counter()
    implementation = spec.implementation(cell.backend)
    workload = implementation.create(cell, spec.shape(cell.profile))
    log(f"setting up {spec.display} {cell.task} (batch {cell.batch_size}, profile {cell.profile}, {cell.variant})")
    workload.setup()
    setup_s = time.perf_counter() - started
    log(f"set up in {setup_s:.1f} s; running 1 first + {cell.warmup_steps} warm-up + {cell.timed_steps} timed steps")
    timer = StepTimer(workload.sync)
    workload.drive(timer, cell.total_steps)
    workload.check()
    windows = timer.windows_ms
    derived = workload.derive(windows)
    split = Split.of(derived, cell.warmup_steps, cell.timed_steps)
    return Run(
        status="ok",
        first_step_ms=split.first_ms,
        warmup_ms=split.warmup_ms,
        timed_ms=split.timed_ms,
        windows_ms=windows if derived is not windows else None,
        setup_s=round(setup_s, 3),
        wall_s=round(time.perf_counter() - started, 3),
        tokens_per_step=workload.tokens_per_step(),
        settings={"unit": workload.unit, **workload.settings()},
        framework=frameworks.framework_info(backend.framework),
        process=provenance.process_provenance(),
    )


def main(cell: Cell, out: Path) -> int:
    for key, value in cell_environment(cell.backend).items():
        os.environ.setdefault(key, value)  # before any framework import
    if get_backend(cell.backend).framework == "jax" and not gpus():
        # Without a GPU, jax[cuda12]'s plugin fails to initialise (noisily) before falling back to the CPU.
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    from bench import offline

    offline.install_guard()
    started = time.perf_counter()
    try:
        run = measure(cell)
        code = 0
    except Exception as exc:  # recorded as the cell's status, never silenced: the traceback goes to the log
        traceback.print_exc()
        from bench import provenance

        run = Run(
            status=classify(exc),
            message=f"{type(exc).__name__}: {exc}"[:2000],
            wall_s=round(time.perf_counter() - started, 3),
            process=provenance.process_provenance(),
        )
        code = 1
    run.exit_code = code
    write_json_atomic(out, run.to_dict())
    log(f"{run.status} in {time.perf_counter() - started:.1f} s")
    sys.stdout.flush()
    return code
