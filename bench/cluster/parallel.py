"""`python -m bench run --jobs N`: independent cells in parallel on one multi-GPU machine, each pinned to a GPU
of its own with CUDA_VISIBLE_DEVICES (which PyTorch, JAX and TensorFlow all honour), never two on one GPU.

The per-cell work is the orchestrator's own (bench.runner.prepare: the same input checks, --resume and
the plan's oom-predicted verdicts; Prepared.attempt: one CellProcess); this module only adds the GPU slots
and the threads that fill them. Without a GPU per job it refuses: cells sharing CPU cores or a GPU would
disturb each other's timing.
"""
from __future__ import annotations

import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

from bench.errors import BenchError
from bench.cluster.gpus import GpuPool, refuse_jobs
from bench.progress import hms, status_counts
from bench.provenance import gpus
from bench.results import Result
from bench.registry import Cell


def visible_gpu_indices() -> list[int]:
    """GPU indices this process may use: CUDA_VISIBLE_DEVICES when it lists indices, else every GPU."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and all(part.strip().isdigit() for part in visible.split(",") if part.strip()):
        return [int(part) for part in visible.split(",") if part.strip()]
    return list(range(len(gpus())))


def _children() -> list[int]:
    """Our direct child processes (the cells' process-group leaders), from /proc."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == os.getpid():
            found.append(int(stat.parent.name))
    return found


def run_cells_parallel(
    cells: list[Cell],
    results_dir: Path,
    jobs: int,
    repeats: int = 1,
    timeout_s: float | None = None,
    profile_choice: str = "explicit",
    echo: Callable[[str], None] = lambda s: print(s, flush=True),
    gpu_indices: list[int] | None = None,
    resume: bool = False,
    ignore_plan: bool = False,
) -> list[Result]:
    """run_cells with up to `jobs` cells at a time, one per GPU; gpu_indices defaults to the visible GPUs."""
    from bench import runner

    if jobs <= 1:
        return runner.run_cells(cells, results_dir, repeats=repeats, timeout_s=timeout_s, profile_choice=profile_choice, echo=echo,
                                resume=resume, ignore_plan=ignore_plan)
    indices = visible_gpu_indices() if gpu_indices is None else gpu_indices
    refusal = refuse_jobs(jobs, len(indices))
    if refusal:
        raise BenchError(refusal)
    prepared = runner.prepare(cells, results_dir, repeats, resume, ignore_plan)  # the same checks and plan as run_cells
    if resume:
        echo(f"skipped (resume): {prepared.skipped} cells already measured")
    cells = prepared.cells
    pool = GpuPool(indices[:jobs])
    lock = threading.Lock()
    stopping = threading.Event()  # Ctrl-C: cells killed by us are not results
    started = time.perf_counter()

    def say(text: str) -> None:
        with lock:  # one line at a time on the console
            echo(text)

    def run_one(number: int, cell: Cell) -> Result:
        gpu = None
        runs = [prepared.not_run(cell)] if prepared.not_run(cell) else []
        if not runs:
            gpu = pool.take()
            try:
                say(f"[{number}/{len(cells)}] gpu {gpu}: {cell.backend} {cell.model} {cell.task} batch={cell.batch_size} {cell.variant} ({cell.profile}; elapsed {hms(time.perf_counter() - started)})")
                for repeat in range(repeats):
                    # CUDA_VISIBLE_DEVICES: the cell sees exactly its own GPU
                    runs.append(prepared.attempt(cell, repeat, results_dir, timeout_s, lambda line, g=gpu: say(f"  gpu {g}: {line.strip()}"),
                                                 env={"CUDA_VISIBLE_DEVICES": str(gpu)}))
                    if runs[-1].status != "ok":
                        break
            finally:
                pool.give_back(gpu)
        if stopping.is_set():
            raise KeyboardInterrupt
        result = prepared.result(cell, runs, profile_choice, repeats, gpu_index=gpu, jobs=jobs)
        path = result.write(results_dir)
        say(f"    -> {cell.key}{f' (gpu {gpu})' if gpu is not None else ''}: {result.describe()}  [{path.relative_to(results_dir)}]")
        return result

    executor = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="cell")
    futures = [executor.submit(run_one, n, cell) for n, cell in enumerate(cells, 1)]
    try:
        done = [f.result() for f in futures]
    except KeyboardInterrupt:  # the cells run in sessions of their own: Ctrl-C does not reach them
        stopping.set()
        for f in futures:
            f.cancel()
        for pid in _children():
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        executor.shutdown(wait=True)
        echo(f"\ninterrupted; every finished result is kept in {results_dir}")
        raise
    executor.shutdown()
    echo(f"{len(done)} cells on {jobs} GPUs in {hms(time.perf_counter() - started)}: " + ", ".join(f"{n} {s}" for s, n in status_counts(done).items()))
    return done
