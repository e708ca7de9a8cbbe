"""`python -m bench run --jobs N`: independent cells in parallel on one multi-GPU machine, each pinned to a GPU
of its own with CUDA_VISIBLE_DEVICES (which PyTorch, JAX and TensorFlow all honour; bench/run/runner.py
gpu_environment), never two on one GPU, and to its share of the host's cores (affinity and the thread-pool
variables, recorded in each run's process provenance), so that N cells do not each size their thread pools and
compile workers to every core. Each GPU slot probes the machine's drift (bench/measure/drift.py) on its own cores before
and after each of its cells, as the sequential orchestrator does between cells.

The per-cell work is the orchestrator's own (bench.run.runner.prepare: the same input checks, --resume and
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
from typing import TYPE_CHECKING

from bench.base.errors import BenchError
from bench.base.progress import closing_line, hms, probe_line
from bench.catalogue.registry import Cell
from bench.measure.drift import reference_ms
from bench.record.result_text import LINE_WIDTH
from bench.record.results import Result, Run
from bench.run.gpus import GpuPool, refuse_jobs

if TYPE_CHECKING:
    from bench.run.runner import RunOptions

# The variables that size a framework's CPU thread pools and compile workers: each parallel cell gets its share.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TORCHINDUCTOR_COMPILE_THREADS",
                    "TF_NUM_INTRAOP_THREADS")


def gpu_slots(machine: dict, gpu_indices: list[int] | None = None) -> list[dict]:
    """The GPUs cells may take, as bench.base.provenance.gpus() entries: the visible ones (CUDA_VISIBLE_DEVICES applied
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
    """What pins a cell to `cpus`: the affinity the cell applies first thing (bench/measure/cell.py pin_cpus) and the
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
    options: RunOptions | None = None,
    gpu_indices: list[int] | None = None,
) -> list[Result]:
    """run_cells with up to `jobs` cells at a time, one per GPU, as `options` say (a cell's processes one after
    another: its deadline, interleave and rule are run_cells' alone; its echo prints where none is given);
    gpu_indices defaults to the visible GPUs."""
    from bench.run import runner

    options = options or runner.RunOptions()
    echo = options.echo or (lambda s: print(s, flush=True))
    if jobs <= 1:
        return runner.run_cells(
            cells,
            results_dir,
            runner.RunOptions(
                repeats=options.repeats,
                timeout_s=options.timeout_s,
                profile_choice=options.profile_choice,
                echo=echo,
                resume=options.resume,
                ignore_plan=options.ignore_plan,
                verbose=options.verbose,
            ),
        )
    slots = gpu_slots(runner.machine_info(), gpu_indices)
    refusal = refuse_jobs(jobs, len(slots))
    if refusal:
        raise BenchError(refusal)
    # the same checks and plan as run_cells
    prepared = runner.prepare(cells, results_dir, options.repeats, options.resume, options.ignore_plan)
    if options.resume:
        echo(f"skipped (resume): {prepared.skipped} cells already measured")
    run = GpuSlots(prepared, options, results_dir, jobs, slots, echo)
    executor = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="cell")
    futures = [executor.submit(run.cell, n, cell) for n, cell in enumerate(prepared.cells, 1)]
    try:
        done = [f.result() for f in futures]
    except KeyboardInterrupt:  # the cells run in sessions of their own: Ctrl-C does not reach them
        prepared.caches.close()
        run.stopping.set()
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
    echo(probe_line("reference probe (bench/measure/drift.py), median over the GPU slots", run.start_ms,
                    statistics.median(run.probes.values()), ratio=False))
    echo(closing_line(done, f"cells on {jobs} GPUs", time.perf_counter() - run.started))
    return done


class GpuSlots:
    """A --jobs run under way: slot k is GPU gpus[k] and the cores shares[k], with a drift probe of its own; a
    cell's processes run one after another on the slot it takes."""

    def __init__(self, prepared, options: RunOptions, results_dir: Path, jobs: int, gpus: list[dict],
                 echo: Callable[[str], None]):  # fmt: skip
        self.prepared, self.options, self.results_dir, self.jobs, self.gpus = prepared, options, results_dir, jobs, gpus
        self.echo, self.total = echo, len(prepared.cells)
        self.shares = cpu_shares(jobs)
        self.pool = GpuPool(list(range(jobs)))
        self.probes = {k: reference_ms() for k in range(jobs)}  # each slot's latest drift probe, taken before any cell
        self.readings = {k: [self.probes[k]] for k in range(jobs)}  # each slot's probes: its quiet value for the gates
        self.start_ms = statistics.median(self.probes.values())
        self.lock = threading.Lock()
        self.stopping = threading.Event()  # Ctrl-C: cells killed by us are not results
        self.started = time.perf_counter()

    def say(self, text: str) -> None:
        with self.lock:  # one line at a time on the console
            self.echo(text)

    def probe_on(self, slot: int) -> float:
        """The drift probe on the slot's own cores (Linux: this thread's affinity), not on a neighbour's."""
        os.sched_setaffinity(0, self.shares[slot])
        return reference_ms()

    def cell(self, number: int, cell: Cell) -> Result:
        """One cell on a free slot (none where no process runs it), its result written."""
        from bench.run import runner

        slot = gpu = None
        runs = [self.prepared.not_run(cell)] if self.prepared.not_run(cell) else []
        if not runs:
            slot = self.pool.take()
            gpu = self.gpus[slot]
            try:
                runs = self.processes(number, cell, slot, gpu)
            finally:
                self.pool.give_back(slot)
        if self.stopping.is_set():
            raise KeyboardInterrupt
        gpu_index = int(gpu["index"]) if gpu and str(gpu.get("index", "")).isdigit() else None
        if slot is not None:
            runner.record_noise(runs, self.readings[slot])  # against the quietest probe of the slot's own cores
        result = self.prepared.result(
            cell,
            runs,
            self.options.profile_choice,
            self.options.repeats,
            gpu_index=gpu_index,
            jobs=self.jobs,
            cpu_share=self.shares[slot] if slot is not None else None,
            reference={"start_ms": self.start_ms, "at_write_ms": self.probes[slot] if slot is not None else self.start_ms},
        )
        path = result.write(self.results_dir)
        key = f"{cell.key}{f' (gpu {gpu_index})' if gpu is not None else ''}"
        self.say(f"{runner.FINISHED}{result.brief(LINE_WIDTH - len(runner.FINISHED), key=key)}")  # as run_cells says it
        if self.options.verbose:
            self.say(f"{' ' * len(runner.FINISHED)}{result.describe()}  [{path.relative_to(self.results_dir)}]")
        return result

    def processes(self, number: int, cell: Cell, slot: int, gpu: dict) -> list[Run]:
        """The cell's processes on its slot, a drift probe after each; the first that is not ok is the last."""
        self.say(
            f"[{number}/{self.total}] gpu {gpu['index']}: {cell.backend} {cell.model} {cell.task} batch={cell.batch_size} {cell.variant} ({cell.profile}; elapsed {hms(time.perf_counter() - self.started)})"
        )
        runs: list[Run] = []
        for repeat in range(self.options.repeats):
            runs.append(
                self.prepared.attempt(
                    cell,
                    repeat,
                    self.results_dir,
                    self.options.timeout_s,
                    lambda line, g=gpu["index"]: self.say(f"  gpu {g}: {line.strip()}"),
                    env=cpu_share_environment(self.shares[slot]),
                    gpu=gpu,
                )
            )
            before, self.probes[slot] = self.probes[slot], self.probe_on(slot)
            self.readings[slot].append(self.probes[slot])
            runs[-1].reference = {"before_ms": before, "after_ms": self.probes[slot]}
            if runs[-1].status != "ok":
                break
        return runs
