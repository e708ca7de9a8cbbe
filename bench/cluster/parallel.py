"""`python -m bench run --jobs N`: independent cells in parallel on one multi-GPU machine, each pinned to a GPU
of its own with CUDA_VISIBLE_DEVICES (which PyTorch, JAX and TensorFlow all honour; bench/runner.py
gpu_environment), never two on one GPU, and to its share of the host's cores (affinity and the thread-pool
variables, recorded in each run's process provenance), so that N cells do not each size their thread pools and
compile workers to every core. Each GPU slot probes the machine's drift (bench/drift.py) on its own cores before
and after each of its cells, as the sequential orchestrator does between cells.

The per-cell work is the orchestrator's own (bench.runner.prepare: the same input checks, --resume and
the plan's oom-predicted verdicts; Prepared.attempt: one CellProcess); this module only adds the GPU slots
and the threads that fill them. Without a GPU per job it refuses: cells sharing CPU cores or a GPU would
disturb each other's timing.
"""
from __future__ import annotations

import os
import signal
import statistics
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.cluster.gpus import GpuPool, refuse_jobs
from bench.drift import reference_ms
from bench.errors import BenchError
from bench.progress import closing_line, hms, probe_line
from bench.registry import Cell
from bench.results import Result

# The variables that size a framework's CPU thread pools and compile workers: each parallel cell gets its share.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TORCHINDUCTOR_COMPILE_THREADS",
                    "TF_NUM_INTRAOP_THREADS")


def gpu_slots(machine: dict, gpu_indices: list[int] | None = None) -> list[dict]:
    """The GPUs cells may take, as bench.provenance.gpus() entries: the visible ones (CUDA_VISIBLE_DEVICES applied
    by index, UUID or MIG id), or those of `gpu_indices` (nvidia-smi indices) among them."""
    visible = machine.get("gpus") or []
    if gpu_indices is None:
        return list(visible)
    by_index = {g.get("index"): g for g in visible}
    return [by_index.get(str(i)) or {"index": str(i)} for i in gpu_indices]


def cpu_shares(jobs: int, cpus: list[int] | None = None) -> list[list[int]]:
    """The host's cores (this process's affinity) split into `jobs` contiguous, equal, disjoint shares (at least
    one core each; the rest, if the cores do not divide, unused rather than given to one cell)."""
    cpus = sorted(os.sched_getaffinity(0)) if cpus is None else sorted(cpus)
    size = max(1, len(cpus) // jobs)
    return [cpus[(k * size) % len(cpus):(k * size) % len(cpus) + size] for k in range(jobs)]


def cpu_share_environment(cpus: list[int]) -> dict[str, str]:
    """What pins a cell to `cpus`: the affinity the cell applies first thing (bench/cell.py pin_cpus) and the
    thread-pool sizes."""
    return {"BENCH_CPU_AFFINITY": ",".join(map(str, cpus)), **{name: str(len(cpus)) for name in THREAD_VARIABLES}}


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
        options = runner.RunOptions(
            repeats=repeats,
            timeout_s=timeout_s,
            profile_choice=profile_choice,
            echo=echo,
            resume=resume,
            ignore_plan=ignore_plan,
        )
        return runner.run_cells(cells, results_dir, options)
    slots = gpu_slots(runner.machine_info(), gpu_indices)
    refusal = refuse_jobs(jobs, len(slots))
    if refusal:
        raise BenchError(refusal)
    prepared = runner.prepare(cells, results_dir, repeats, resume, ignore_plan)  # the same checks and plan as run_cells
    if resume:
        echo(f"skipped (resume): {prepared.skipped} cells already measured")
    cells = prepared.cells
    shares = cpu_shares(jobs)
    pool = GpuPool(list(range(jobs)))  # slot k: GPU slots[k] and the cores shares[k]
    probes = {k: reference_ms() for k in range(jobs)}  # each slot's latest drift probe, taken before any cell runs
    readings = {k: [probes[k]] for k in range(jobs)}  # every probe of each slot: its quiet value for the noise gates
    start_ms = statistics.median(probes.values())
    lock = threading.Lock()
    stopping = threading.Event()  # Ctrl-C: cells killed by us are not results
    started = time.perf_counter()

    def say(text: str) -> None:
        with lock:  # one line at a time on the console
            echo(text)

    def probe_on(slot: int) -> float:
        """The drift probe on the slot's own cores (Linux: this thread's affinity), not on a neighbour's."""
        os.sched_setaffinity(0, shares[slot])
        return reference_ms()

    def run_one(number: int, cell: Cell) -> Result:
        slot = gpu = None
        runs = [prepared.not_run(cell)] if prepared.not_run(cell) else []
        if not runs:
            slot = pool.take()
            gpu = slots[slot]
            try:
                say(
                    f"[{number}/{len(cells)}] gpu {gpu['index']}: {cell.backend} {cell.model} {cell.task} batch={cell.batch_size} {cell.variant} ({cell.profile}; elapsed {hms(time.perf_counter() - started)})"
                )
                for repeat in range(repeats):
                    runs.append(
                        prepared.attempt(
                            cell,
                            repeat,
                            results_dir,
                            timeout_s,
                            lambda line, g=gpu["index"]: say(f"  gpu {g}: {line.strip()}"),
                            env=cpu_share_environment(shares[slot]),
                            gpu=gpu,
                        )
                    )
                    before, probes[slot] = probes[slot], probe_on(slot)
                    readings[slot].append(probes[slot])
                    runs[-1].reference = {"before_ms": before, "after_ms": probes[slot]}
                    if runs[-1].status != "ok":
                        break
            finally:
                pool.give_back(slot)
        if stopping.is_set():
            raise KeyboardInterrupt
        gpu_index = int(gpu["index"]) if gpu and str(gpu.get("index", "")).isdigit() else None
        if slot is not None:
            runner.record_noise(runs, readings[slot])  # against the quietest probe of the slot's own cores
        result = prepared.result(
            cell,
            runs,
            profile_choice,
            repeats,
            gpu_index=gpu_index,
            jobs=jobs,
            cpu_share=shares[slot] if slot is not None else None,
            reference={"start_ms": start_ms, "at_write_ms": probes[slot] if slot is not None else start_ms},
        )
        path = result.write(results_dir)
        say(
            f"    -> {cell.key}{f' (gpu {gpu_index})' if gpu is not None else ''}: {result.describe()}  [{path.relative_to(results_dir)}]"
        )
        return result

    executor = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="cell")
    futures = [executor.submit(run_one, n, cell) for n, cell in enumerate(cells, 1)]
    try:
        done = [f.result() for f in futures]
    except KeyboardInterrupt:  # the cells run in sessions of their own: Ctrl-C does not reach them
        prepared.caches.close()
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
    prepared.caches.close()
    echo(probe_line("reference probe (bench/drift.py), median over the GPU slots", start_ms,
                    statistics.median(probes.values()), ratio=False))
    echo(closing_line(done, f"cells on {jobs} GPUs", time.perf_counter() - started))
    return done
