"""The orchestrator: one subprocess per cell in its backend's environment, with a timeout; a failed cell
becomes a recorded status, Ctrl-C keeps every finished result. Cells of one published row run together, their
repeats round-robin, with a drift probe (bench/drift.py) between processes."""
from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.backends import UNLOCKED_STACK
from bench.cell_process import CellProcess
from bench.compile_cache import CompileCaches
from bench.deadline import BudgetSpent, attempt_within
from bench.drift import reference_ms
from bench.env_lookup import env_python
from bench.errors import BenchError
from bench.ownenv import why_not_here
from bench.plan import load_cells as load_plan_cells
from bench.plan import plan_figures, predicted_oom
from bench.profiles import why_not_without_a_gpu
from bench.progress import Progress, closing_line, hms, probe_line
from bench.provenance import git_info, machine_info, now_utc, unlocked_environment
from bench.registry import Cell, get_model
from bench.replication import SequentialRule
from bench.results import CorruptResult, Result, Run, load, result_path, task_unit
from bench.results_folder import (
    RunStopped,
    check_free_space,
    check_results_readable,
    check_writable,
    new_log_path,
    write_or_show,
)
from bench.roofline.ceilings import measure_run as measure_ceilings
from bench.run_planning import row_order, rule_change, still_to_measure, time_estimates, warn_over_timeout
from bench.runlock import hold as hold_results_folder
from bench.runlock import release as release_results_folder
from bench.stats import noise_reasons


def gpu_environment(gpu: dict | None) -> dict[str, str]:
    """The one place a cell's GPU is chosen: the variables that make exactly `gpu` (a bench.provenance.gpus() entry)
    visible to the cell's process, named by MIG or GPU UUID (the same in every numbering), else by index in PCI bus
    order, the order nvidia-smi lists. Without one, none: the cell runs on the CPU as the machine has no GPU (or
    CUDA_VISIBLE_DEVICES hid them all, which the cell then inherits)."""
    if not gpu:
        return {}
    return {
        "CUDA_VISIBLE_DEVICES": gpu.get("mig") or gpu.get("uuid") or gpu["index"],
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
    }


def gpu_id(gpu: dict | None) -> str | None:
    """How nvidia-smi --id names the GPU (its UUID, else its index); None without one."""
    return (gpu.get("uuid") or gpu.get("index")) if gpu else None


@dataclass
class Prepared:
    """What every way of running cells (one after another, or one per GPU) settles before the first cell: the
    cells still to run, the plan's oom-predicted verdicts, each backend's Python, the commit and the machine."""

    cells: list[Cell]
    predicted: dict[str, str]
    pythons: dict[str, str]
    git: dict
    machine: dict
    skipped: int = 0
    plans: dict[str, dict[str, dict]] = field(default_factory=dict)  # profile -> the plan's cells by key (may be empty)
    rerun: dict[str, str] = field(default_factory=dict)  # resume: cell key -> why its ok result is measured again
    configs: dict[str, dict] = field(default_factory=dict)  # cell key -> its resolved configuration (bench/config.py)
    # One per orchestrator invocation, in every result it writes: the cells of one run id ran interleaved together
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    caches: CompileCaches = field(default_factory=CompileCaches)  # a cell's later processes load its compiles

    def attempt(
        self,
        cell: Cell,
        repeat: int,
        results_dir: Path,
        timeout_s: float | None,
        echo: Callable[[str], None],
        env: dict[str, str] | None = None,
        gpu: dict | None | bool = True,
    ) -> Run:
        """One process of a cell (for a cell that `not_run` does not answer for), on `gpu` (a machine["gpus"] entry;
        True: the first visible GPU, if any), with the GPU's clocks, power and throttle reasons read as it starts
        and ends, and its peak device memory beside the plan's figure. Its configuration is resolved here, once
        (bench/config.py), passed to the process and kept for the result."""
        from bench.config import resolve
        from bench.provenance import gpu_state

        if gpu is True:
            gpu = (self.machine.get("gpus") or [None])[0]
        config = resolve(cell, timeout_s, {**(env or {}), **gpu_environment(gpu), **self.caches.environment(cell)})
        self.configs[cell.key] = config.to_dict()
        log = new_log_path(results_dir, cell, repeat)
        process = CellProcess(cell, self.pythons[cell.env], log, self.git, echo, config=self.configs[cell.key])
        process.env.update(config.environment)
        state_at_start = gpu_state([gpu_id(gpu)]) if gpu else None
        cache = self.caches.state(cell)
        run = process.run(config.timeout_s)
        run.process = {
            **run.process,
            "log": str(log.relative_to(results_dir)),
            "compile_cache": cache,
        }  # the result, in history/ too, names its log
        if gpu:
            state_at_end = gpu_state([gpu_id(gpu)])
            run.gpu_state = {
                "gpu": gpu_id(gpu),
                "start": (state_at_start or [None])[0],
                "end": (state_at_end or [None])[0],
            }
        if run.status == "oom" and (figures := plan_figures(cell, self.plans.get(cell.profile, {}), self.machine)):
            run.message = f"{run.message} ({figures[2]})"  # an oom the plan did not predict: its figures beside it
        if run.device_memory is not None:
            run.device_memory["plan_gib"] = (self.plans.get(cell.profile, {}).get(cell.key) or {}).get("memory_gib")
        return run

    def not_run(self, cell: Cell) -> Run | None:
        """The status that stands for a cell that no process runs: unsupported (as published), oom-predicted."""
        reason = get_model(cell.model).why_cell_unsupported(cell) or why_not_here(
            cell
        )  # as published; not installed here
        if reason:
            return Run(status="unsupported", message=reason)
        if cell.key in self.predicted:
            return Run(status="oom-predicted", message=self.predicted[cell.key])
        return None

    def result(self, cell: Cell, runs: list[Run], profile_choice: str, repeats: int, **provenance) -> Result:
        from bench.config import resolve

        if cell.stack == UNLOCKED_STACK.name:  # no lock: the interpreter and every distribution it has
            provenance.setdefault("environment", unlocked_environment())
        return Result(
            cell=cell,
            runs=runs,
            config=self.configs.get(cell.key)
            or resolve(cell).to_dict(),  # a cell no process ran: what it would have run
            unit=task_unit(cell),
            provenance={
                "git": self.git,
                "machine": self.machine,
                "profile_choice": profile_choice,
                "orchestrator": sys.argv,
                "repeats_planned": repeats,
                "run_id": self.run_id,
                **provenance,
                **({"slurm_task": os.environ["BENCH_SLURM_TASK"]} if os.environ.get("BENCH_SLURM_TASK") else {}),
            },  # bench/cluster/task.py
            created_at=now_utc(),
        )


def record_noise(runs: list[Run], readings: list[float]) -> float | None:
    """The noise gates judged as the result is written (bench/stats.py noise_reasons): each ok run's `noise`, against
    the quietest drift-probe reading of this run so far (kept as `quiet_reference_ms`). Returns that reading."""
    quiet = min((r for r in readings if r and r > 0), default=None)
    for run in runs:
        if run.status == "ok" and run.timed_ms:
            found = noise_reasons(run.timed_ms, run.reference, quiet)
            run.noise = {**found.to_dict(), "quiet_reference_ms": quiet}
    return quiet


def prepare(
    cells: list[Cell], results_dir: Path, repeats: int, resume: bool = False, ignore_plan: bool = False
) -> Prepared:
    """Refuse bad input before any cell runs: a bad repeat count, an unreadable result file (named), a missing or
    stale env, a results folder that cannot be written (an hour of measuring must not end in a failed write)."""
    if repeats < 1:
        raise BenchError(f"repeats must be a positive integer, got {repeats}")
    machine = machine_info()
    why = None if machine.get("gpus") else next(filter(None, map(why_not_without_a_gpu, {c.profile for c in cells})), None)
    if why:
        raise BenchError(why)
    check_results_readable(cells, results_dir, machine)
    skipped, rerun = 0, {}
    if resume:
        todo = still_to_measure(cells, results_dir, repeats, machine)
        skipped, cells = len(cells) - len(todo), todo
        rerun = {c.key: why for c in cells if (why := rule_change(c, results_dir, machine))}
    plans = {p: load_plan_cells(results_dir, p) for p in {c.profile for c in cells}}
    predicted = (
        {} if ignore_plan else {c.key: why for c in cells if (why := predicted_oom(c, plans[c.profile], machine))}
    )
    pythons = {
        c.env: sys.executable
        if c.stack == UNLOCKED_STACK.name
        else env_python(c.env)  # unlocked: the interpreter running this
        for c in cells
        if not get_model(c.model).why_cell_unsupported(c) and not why_not_here(c) and c.key not in predicted
    }
    check_writable(results_dir)
    hold_results_folder(results_dir)  # one run at a time per results folder (bench/runlock.py), until this process ends
    return Prepared(cells, predicted, pythons, git_info(), machine, skipped, plans, rerun=rerun)


@dataclass(frozen=True)
class RunOptions:
    """How run_cells runs its cells (its docstring says what each changes)."""

    repeats: int = 1  # processes per cell; with a sequential `rule`, its first count
    timeout_s: float | None = None  # per cell process; None: each cell's own (bench/cost.py)
    profile_choice: str = "explicit"  # why this profile, as each result's provenance records it
    resume: bool = False  # leave out the cells already measured (bench/run_planning.py already_measured)
    echo: Callable[[str], None] | None = None  # plain progress lines; None: bench.progress.Progress
    ignore_plan: bool = False  # run the cells the plan predicts will not fit
    deadline: float | None = None  # time.monotonic() after which no cell starts
    interleave: bool = True  # a row's cells round-robin; False: each cell's processes in turn, in the order given
    rule: SequentialRule | None = None  # processes until decided (bench/replication.py); None: exactly `repeats`
    against: Path | None = None  # a results folder whose cells this run's are compared with, until decided


def run_cells(cells: list[Cell], results_dir: Path, options: RunOptions | None = None) -> list[Result]:
    """Run every cell (each `options.repeats` processes, interleaved across its row) and write one result file per
    cell, as `options` (RunOptions) says.
    With a sequential `rule` (bench/replication.py), `repeats` is its first count: after each round from then on the
    row's comparisons are judged, and the cells of an undecided one that the cap could still decide get one more
    process, up to the cap (bench/report/comparisons.py wanting_more); each result records the rule it ran under.
    With `against` (a results folder: yesterday's run, a reviewer's), each cell's comparison with the same cell there
    is judged too, as `make compare` judges it, and one still undecided gets processes the same way.

    Progress goes to `echo` as plain lines when one is given, else to bench.progress.Progress: a live bar with an
    ETA on a terminal, the same plain lines otherwise. A cell that <results_dir>/plan-<profile>.json says cannot fit
    the device (the GPU's memory, else RAM) is recorded as oom-predicted, not run, unless ignore_plan. With a
    `deadline` (time.monotonic()), no cell starts after it and the one it cuts short is ended and not recorded: the
    run returns what it finished (the caller names what was left; --resume runs it). interleave=False runs the cells
    in the order given, each one's processes one after another (a budget's order: a cell is written before the next
    starts, so what a cut leaves is whole cells, never a row's worth of partial ones)."""
    options = options or RunOptions()
    repeats = options.repeats
    progress = None if options.echo is not None else Progress()
    echo = options.echo or progress.message
    prepared = prepare(cells, results_dir, repeats, options.resume, options.ignore_plan)
    if options.resume:
        echo(f"skipped (resume): {prepared.skipped} cells already measured")
        for key, why in prepared.rerun.items():
            echo(f"measured again (resume): {key}: {why}")
    cells = prepared.cells
    warn_over_timeout(cells, results_dir, prepared.machine, options.timeout_s, echo)
    rows = row_order(cells) if options.interleave else [[cell] for cell in cells]
    start_ms = reference_ms()
    # the machine's ceilings, once per run (bench/roofline/ceilings.py): the host's always, each framework's on a GPU
    ceilings = measure_ceilings(
        {c.backend: prepared.pythons[c.env] for c in cells if c.env in prepared.pythons}, prepared.machine, echo
    )
    rounds = Rounds(
        prepared, options, results_dir, options.rule or SequentialRule(repeats, repeats), echo, progress,
        number={cell.key: i for i, cell in enumerate((c for row in rows for c in row), 1)}, total=len(cells),
        start_ms=start_ms, ceilings=ceilings,
    )  # fmt: skip
    if progress:
        progress.start([c for row in rows for c in row], time_estimates(cells, repeats))
    try:
        for row in rows:
            rounds.run_row(row)
    except BudgetSpent:
        echo(f"\nthe budget is spent after {len(rounds.done)} of {len(cells)} cells; every finished result is kept in {results_dir}")
        return rounds.done
    except KeyboardInterrupt:
        echo(f"\ninterrupted after {len(rounds.done)} of {len(cells)} cells; every finished result is kept in {results_dir}")
        raise
    finally:
        release_results_folder(results_dir)
        prepared.caches.close()
        if progress:
            progress.close()
    end_ms = reference_ms()
    echo(probe_line("reference probe (bench/drift.py)", start_ms, end_ms))
    echo(closing_line(rounds.done, "cells", time.perf_counter() - rounds.started))
    return rounds.done


@dataclass
class Rounds:
    """One run_cells call under way: each row's cells round-robin, a drift probe after each process, and each cell
    written once its processes are done (bench/report/comparisons.py decides when, under a sequential rule)."""

    prepared: Prepared
    options: RunOptions
    results_dir: Path
    rule: SequentialRule
    echo: Callable[[str], None]
    progress: Progress | None
    number: dict[str, int]  # cell key -> its place in the run, for its header
    total: int
    start_ms: float  # the drift probe's reading as the run starts
    ceilings: dict
    started: float = field(default_factory=time.perf_counter)
    done: list[Result] = field(default_factory=list)
    written: dict[str, Result] = field(default_factory=dict)
    readings: list[float] = field(default_factory=list)  # every drift-probe reading: the quietest is the noise gates'

    def __post_init__(self) -> None:
        self.latest = self.start_ms
        self.readings.append(self.latest)

    def phase(self, line: str) -> None:
        self.progress.phase(line) if self.progress else self.echo("    " + line)

    def provisional(self, cell: Cell, runs: list[Run]) -> Result:
        record_noise(runs, self.readings)
        return self.prepared.result(
            cell, runs, self.options.profile_choice, self.options.repeats,
            reference={"start_ms": self.start_ms, "at_write_ms": self.latest}, ceilings=self.ceilings,
            replication=self.rule.to_dict(),
        )  # fmt: skip

    def finish(self, cell: Cell, runs: list[Run]) -> None:
        result = self.written[cell.key] = self.provisional(cell, runs)
        path = write_or_show(result, self.results_dir, self.echo, kept=len(self.done), of=self.total)
        self.done.append(result)
        # its figure with its interval, how its sampling ended, and any noise gate that tripped (Result.describe)
        line = f"{result.describe()}  [{path.relative_to(self.results_dir)}]"
        self.progress.cell_finished(cell, line) if self.progress else self.echo(f"    -> {line}")
        if result.status not in ("ok", "unsupported") and runs[-1].process.get("log"):
            self.echo(f"    log: {self.results_dir / runs[-1].process['log']}")

    def run_row(self, row: list[Cell]) -> None:
        """The row's cells round-robin until each is done; on a stop, the finished processes of each are written."""
        runs: dict[str, list[Run]] = {cell.key: [] for cell in row}
        open_cells = list(row)
        try:
            repeat = 0
            while open_cells:  # round-robin: repeat r of every open column, then repeat r+1
                for cell in list(open_cells):
                    run = self.run_one(cell, repeat)
                    runs[cell.key].append(run)  # kept even if Ctrl-C comes during the probe below
                    if not self.prepared.not_run(cell):  # a process ran: probe the drift
                        before, self.latest = self.latest, reference_ms()
                        self.readings.append(self.latest)
                        run.reference = {"before_ms": before, "after_ms": self.latest}
                    at_cap = repeat + 1 >= self.rule.cap and not to_replace(runs[cell.key], self.rule, self.readings)
                    if run.status != "ok" or at_cap:
                        open_cells.remove(cell)
                        self.finish(cell, runs[cell.key])
                repeat += 1
                if repeat >= self.rule.first and open_cells:
                    self.close_decided(row, open_cells, runs)
        except (KeyboardInterrupt, BudgetSpent, OSError, RunStopped):  # a cell's finished repeats are kept
            stopped = None
            for cell in open_cells:
                if runs[cell.key]:
                    try:
                        self.finish(cell, runs[cell.key])  # or, where it cannot be written, shown (write_or_show)
                    except RunStopped as e:
                        stopped = stopped or e
            if stopped is not None and not isinstance(sys.exc_info()[1], KeyboardInterrupt):
                raise stopped from None
            raise

    def run_one(self, cell: Cell, repeat: int) -> Run:
        """One process of a cell, after its header line (or the status that stands for it where none runs)."""
        header = f"[{self.number[cell.key]}/{self.total}] {cell.backend} {cell.model} {cell.task} batch={cell.batch_size} {cell.variant}{repeat_label(repeat, self.rule)} ({cell.profile}; elapsed {hms(time.perf_counter() - self.started)})"
        self.progress.cell_started(cell, header) if self.progress else self.echo(header)
        check_free_space(self.results_dir, kept=len(self.done), of=self.total)
        return self.prepared.not_run(cell) or attempt_within(
            self.prepared, cell, repeat, self.results_dir, self.options.timeout_s, self.phase, self.options.deadline
        )

    def close_decided(self, row: list[Cell], open_cells: list[Cell], runs: dict[str, list[Run]]) -> None:
        """After a round past the rule's first count: a cell goes on where one more process could decide its row's
        comparison or replace a disturbed one; every other open cell is finished."""
        current = {c.key: self.written.get(c.key) or self.provisional(c, runs[c.key]) for c in row if runs[c.key]}
        wanted = look(current, self.rule, self.results_dir)
        if self.options.against is not None:
            still_open = {c.key: current[c.key] for c in open_cells if c.key in current}
            wanted.update(look_against(still_open, self.rule, self.options.against))
        for cell in list(open_cells):
            if cell.key in wanted:
                self.phase(f"{cell.key}: one more process, for {wanted[cell.key]} (undecided)")
            elif n := to_replace(runs[cell.key], self.rule, self.readings):
                self.phase(f"{cell.key}: one more process, in place of {n} disturbed one{'s' * (n > 1)} "
                           "(its noise gate tripped: set aside when judged)")
            else:
                open_cells.remove(cell)
                self.finish(cell, runs[cell.key])


def to_replace(runs: list[Run], rule: SequentialRule, readings: list[float]) -> int:
    """Under a sequential rule (the paper profile's processes until decided), how many of a cell's processes were
    disturbed (their noise gate tripped against this run's quietest reading so far) while fewer than the rule's first
    count are undisturbed: each gets a replacement, up to `first` more processes than the cap, so that the cell is
    judged on undisturbed ones (bench/judge.py kept_runs). A fixed count (smoke, cpu, a budget, --repeats) stays
    fixed: its disturbed process is set aside when judged, not replaced. 0: none."""
    if not rule.sequential:
        return 0
    quiet = min((r for r in readings if r and r > 0), default=None)
    ok = [r for r in runs if r.status == "ok" and r.timed_ms]
    disturbed = sum(noise_reasons(r.timed_ms, r.reference, quiet).noisy for r in ok)
    if not disturbed or len(ok) - disturbed >= rule.first or len(runs) >= rule.cap + rule.first:
        return 0
    return disturbed


def repeat_label(repeat: int, rule: SequentialRule) -> str:
    if rule.cap == 1:
        return ""
    if repeat < rule.first:
        return f" repeat {repeat + 1}/{rule.first}"
    if repeat >= rule.cap:  # only a disturbed process's replacement runs past the cap (to_replace)
        return f" repeat {repeat + 1} (past the cap of {rule.cap}: in place of a disturbed one)"
    return f" repeat {repeat + 1} (up to {rule.cap}, while undecided)"


def look_against(results: dict[str, Result], rule: SequentialRule, against: Path) -> dict[str, str]:
    """After a round: the cells whose comparison with the same cell in `against` (on this machine) one more process
    could help decide (bench/replication.py undecided_against)."""
    if not rule.sequential:
        return {}
    from bench.judge import Judge
    from bench.replication import undecided_against

    wanted: dict[str, str] = {}
    for key, result in results.items():
        earlier = result_path(against, result.cell, result.provenance.get("machine") or {})
        try:
            a = load(earlier) if earlier.is_file() else None
        except CorruptResult:
            a = None
        if a is not None and undecided_against(Judge([a, result], against), a, result, rule):  # as make compare
            wanted[key] = f"its comparison with {earlier}"
    return wanted


def look(results: dict[str, Result], rule: SequentialRule, results_dir: Path) -> dict[str, str]:
    """After a round: the cells of the row that one more process could help decide (bench/report/comparisons.py)."""
    if not rule.sequential or len(results) < 2:
        return {}
    from bench.report.analysis import analyse_group
    from bench.report.comparisons import wanting_more
    from bench.report.load import Loaded, group_results

    wanted: dict[str, str] = {}
    for group in group_results([Loaded(key, result) for key, result in results.items()]):
        wanted.update(wanting_more(analyse_group(group, results_dir), rule))
    return wanted


