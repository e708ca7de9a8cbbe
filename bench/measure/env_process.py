"""What every process inside a framework env does first, before its framework is imported: a benchmark cell
(bench/measure/cell.py), a grid worker (bench/studies/grid/worker.py), an overhead-study worker
(bench/studies/overhead/worker.py) and a sweep's call worker (bench/studies/sweep/callworker.py) alike: its env's
settings, and a watch that ends it with its orchestrator."""
from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from pathlib import Path

from bench.base.runlock import alive
from bench.catalogue import offline
from bench.catalogue.backends import cell_environment
from bench.catalogue.compile_cache import ROOT_VARIABLE, remove_root


def enter_env(env: str, uses_jax: bool, on_gpu: bool) -> None:
    """The env's variables (bench/catalogue/backends.py `cell_environment`; a value already set wins), the platform JAX
    is to use, and the network guard (bench/catalogue/offline.py)."""
    for key, value in cell_environment(env).items():
        os.environ.setdefault(key, value)
    if uses_jax:
        # Name the platform: without a GPU, jax[cuda12]'s plugin fails to initialise (noisily) before falling back
        # to the CPU; with a GPU to use, a JAX that cannot use it must fail, not fall back to the CPU.
        os.environ.setdefault("JAX_PLATFORMS", "cuda" if on_gpu else "cpu")
    offline.install_guard()


# The orchestrator names itself to its cell (bench/run/cell_process.py CellProcess): a cell whose orchestrator died
# before the cell first looked at its parent has already been re-parented, so the parent's PID alone would not tell.
PARENT_PID_VARIABLE = "BENCH_ORCHESTRATOR_PID"
SCRATCH_PREFIX = "bench-cell-"  # the orchestrator's private folder for a cell's result (bench/run/runner.py)


def die_with_parent(out: Path | None = None, interval_s: float = 0.5) -> threading.Thread:
    """A cell, or a study's worker, must not outlive its orchestrator (a `kill -9` of it, a lost SSH session): no
    one would read its result, and it would go on loading the machine that the next run measures on. A thread
    watches the parent; when it is gone, it removes the orchestrator's scratch folder of a cell's result and the
    run's compile caches (which the dead orchestrator can no longer remove) and kills the process group (the process
    leads its own: compile workers and loaders go too). A thread rather than prctl's parent-death signal: that one
    fires when the parent *thread* that started the process ends (--jobs starts cells from worker threads), and kills
    before the scratch folder is removed."""
    parent = os.getppid()

    def watch() -> None:
        named = int(os.environ.get(PARENT_PID_VARIABLE) or parent)
        while os.getppid() == parent and alive(named):
            time.sleep(interval_s)
        if out is not None and out.parent.name.startswith(SCRATCH_PREFIX):
            shutil.rmtree(out.parent, ignore_errors=True)
        remove_root(os.environ.get(ROOT_VARIABLE))  # the run's compile caches: no one else will
        # Nothing printed: stdout is a pipe to the dead orchestrator (a write would raise and end this thread).
        os.killpg(os.getpgrp(), signal.SIGKILL) if os.getpgrp() == os.getpid() else os.kill(os.getpid(), signal.SIGKILL)

    watcher = threading.Thread(target=watch, name="die-with-parent", daemon=True)
    watcher.start()
    return watcher
