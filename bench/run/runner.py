"""The orchestrator: one subprocess per cell in its backend's environment, with a timeout; a failed cell
becomes a recorded status, Ctrl-C keeps every finished result. Cells of one published row run together, their
repeats round-robin, with a drift probe (bench/measure/drift.py) between processes."""
from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.base.errors import BenchError
from bench.base.progress import Progress, cell_line, closing_line, probe_line
from bench.base.provenance import git_info, machine_info, now_utc, unlocked_environment
from bench.base.runlock import hold as hold_results_folder
from bench.base.runlock import release as release_results_folder
from bench.catalogue.backends import UNLOCKED_STACK
from bench.catalogue.compile_cache import CompileCaches
from bench.catalogue.ownenv import why_not_here
from bench.catalogue.profiles import why_not_without_a_gpu
from bench.catalogue.registry import Cell
from bench.judge.replication import SequentialRule
from bench.measure.drift import Reading, reading
from bench.plan import load_cells as load_plan_cells
from bench.plan import plan_figures, predicted_oom
from bench.record.result_text import LINE_WIDTH
from bench.record.results import CorruptResult, Result, Run, device_quiet, load, result_path, task_unit
from bench.run.ceilings import measure_run as measure_ceilings
from bench.run.cell_process import CellProcess
from bench.run.deadline import BudgetSpent, attempt_within
from bench.run.env_lookup import env_python
from bench.run.eta import Eta, expected
from bench.run.planning import row_order, rule_change, still_to_measure, warn_over_timeout
from bench.run.results_folder import (
    RunStopped,
    check_free_space,
    check_results_readable,
    check_writable,
    new_log_path,
    write_or_show,
)


def gpu_environment(gpu: dict | None) -> dict[str, str]:
    """The one place a cell's GPU is chosen: the variables that make exactly `gpu` (a bench.base.provenance.gpus() entry)
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
    configs: dict[str, dict] = field(default_factory=dict)  # cell key -> its resolved configuration (bench/catalogue/config.py)
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
        (bench/catalogue/config.py), passed to the process and kept for the result."""
        from bench.base.provenance import gpu_state
        from bench.catalogue.config import resolve

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
                "start": with_throttle_names((state_at_start or [None])[0]),
                "end": with_throttle_names((state_at_end or [None])[0]),
            }
        if run.status == "oom" and (figures := plan_figures(cell, self.plans.get(cell.profile, {}), self.machine)):
            run.message = f"{run.message} ({figures[2]})"  # an oom the plan did not predict: its figures beside it
        if run.device_memory is not None:
            run.device_memory["plan_gib"] = (self.plans.get(cell.profile, {}).get(cell.key) or {}).get("memory_gib")
        return run

    def not_run(self, cell: Cell) -> Run | None:
        """The status that stands for a cell that no process runs: unsupported (as published), oom-predicted."""
        reason = cell.spec.why_cell_unsupported(cell) or why_not_here(
            cell
        )  # as published; not installed here
        if reason:
            return Run(status="unsupported", message=reason)
        if cell.key in self.predicted:
            return Run(status="oom-predicted", message=self.predicted[cell.key])
        return None

    def result(self, cell: Cell, runs: list[Run], profile_choice: str, repeats: int, **provenance) -> Result:
        from bench.catalogue.config import resolve

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
            },  # bench/run/cluster/task.py
            created_at=now_utc(),
        )


def with_throttle_names(state: dict | None) -> dict | None:
    """A gpu_state reading with its throttle bitmask's bits by name beside it (bench/base/provenance.py throttle_reasons)."""
    from bench.base.provenance import throttle_reasons

    return None if state is None else {**state, "throttle_reasons": throttle_reasons(state)}


def record_noise(runs: list[Run], readings: list[float], device: dict[str, float] | None = None) -> float | None:
    """The noise gates judged as the result is written (Run.noise_gates): each ok run's `noise`, against the quietest
    drift-probe reading of this run so far (kept as `quiet_reference_ms`) and, on a GPU, the quietest device-reference
    reading of its device (`device`: this run's so far; else these processes'). Returns the drift probe's quiet."""
    quiet = min((r for r in readings if r and r > 0), default=None)
    device = device_quiet(runs) if device is None else device
    for run in runs:
        if run.status == "ok" and run.timed_ms:
            found = run.noise_gates(quiet, device.get(run.device_key()))
            run.noise = {**found.to_dict(), "quiet_reference_ms": quiet,
                         **({"device_quiet_ms": device[run.device_key()]} if run.device_key() in device else {})}
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
        if not c.spec.why_cell_unsupported(c) and not why_not_here(c) and c.key not in predicted
    }
    check_writable(results_dir)
    hold_results_folder(results_dir)  # one run at a time per results folder (bench/base/runlock.py), until this process ends
    return Prepared(cells, predicted, pythons, git_info(), machine, skipped, plans, rerun=rerun)


@dataclass(frozen=True)
class RunOptions:
    """How run_cells runs its cells (its docstring says what each changes)."""

    repeats: int = 1  # processes per cell; with a sequential `rule`, its first count
    timeout_s: float | None = None  # per cell process; None: each cell's own (bench/catalogue/cost.py)
    profile_choice: str = "explicit"  # why this profile, as each result's provenance records it
    resume: bool = False  # leave out the cells already measured (bench/run/planning.py already_measured)
    echo: Callable[[str], None] | None = None  # plain progress lines; None: bench.base.progress.Progress
    ignore_plan: bool = False  # run the cells the plan predicts will not fit
    deadline: float | None = None  # time.monotonic() after which no cell starts
    interleave: bool = True  # a row's cells round-robin; False: each cell's processes in turn, in the order given
    rule: SequentialRule | None = None  # processes until decided (bench/judge/replication.py); None: exactly `repeats`
    against: Path | None = None  # a results folder whose cells this run's are compared with, until decided
    # the machine's ceilings as an earlier run of the same session measured them (bench/studies/gpucheck/session.py: one probe a
    # session, not one a step); None: measured as the run starts
    ceilings: dict | None = None
    verbose: bool = False  # after each finished cell's short line, its full one: every gate's reason, its file


def run_cells(cells: list[Cell], results_dir: Path, options: RunOptions | None = None) -> list[Result]:
    """Run every cell (each `options.repeats` processes, interleaved across its row) and write one result file per
    cell, as `options` (RunOptions) says.
    With a sequential `rule` (bench/judge/replication.py), `repeats` is its first count: after each round from then on the
    row's comparisons are judged, and the cells of an undecided one that the cap could still decide get one more
    process, up to the cap (bench/judge/comparisons.py wanting_more); each result records the rule it ran under.
    With `against` (a results folder: yesterday's run, a reviewer's), each cell's comparison with the same cell there
    is judged too, as `make compare` judges it, and one still undecided gets processes the same way.

    Progress goes to `echo` as plain lines when one is given, else to bench.base.progress.Progress: a live bar with an
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
    start = reading()  # warmed until settled (bench/measure/drift.py)
    start_ms = start.ms
    # the machine's ceilings, once per run (bench/run/ceilings.py): the host's always, each framework's on a GPU
    ceilings = options.ceilings or measure_ceilings(
        {c.backend: prepared.pythons[c.env] for c in cells if c.env in prepared.pythons}, prepared.machine, echo
    )
    ordered = [c for row in rows for c in row]
    eta = Eta([c.key for c in ordered], expected(cells, results_dir, prepared.machine, repeats, ceilings,
                                                 lambda c: prepared.not_run(c) is not None), repeats)  # fmt: skip
    if eta.found.scaled and (text := eta.text(cells=len(cells))):  # what no earlier run here says (bench/cli.py did)
        echo(text)
    say_result_folders(cells, results_dir, prepared.machine, echo)
    rounds = Rounds(
        prepared, options, results_dir, options.rule or SequentialRule(repeats, repeats), echo, progress,
        number={cell.key: i for i, cell in enumerate(ordered, 1)}, total=len(cells), start=start, ceilings=ceilings,
        eta=eta,
    )  # fmt: skip
    if progress:
        progress.start(ordered, eta_s=eta.left_s)
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
    end_ms = reading().ms
    echo(probe_line("reference probe (bench/measure/drift.py)", start_ms, end_ms))
    echo(closing_line(rounds.done, "cells", time.perf_counter() - rounds.started))
    return rounds.done


def say_result_folders(cells: list[Cell], results_dir: Path, machine: dict, echo: Callable[[str], None]) -> None:
    """Where the run's result files go: a finished cell's line is short, its file holds every figure and reason."""
    folders = sorted({str(result_path(results_dir, cell, machine).parent) for cell in cells})
    echo(f"results: {', '.join(folders)} (each cell's file holds every figure and noise gate's reason; "
         "-v prints them as each cell ends)")


@dataclass
class Rounds:
    """One run_cells call under way: each row's cells round-robin, a drift probe after each process, and each cell
    written once its processes are done (bench/judge/comparisons.py decides when, under a sequential rule)."""

    prepared: Prepared
    options: RunOptions
    results_dir: Path
    rule: SequentialRule
    echo: Callable[[str], None]
    progress: Progress | None
    number: dict[str, int]  # cell key -> its place in the run, for its header
    total: int
    start: Reading  # the drift probe's reading as the run starts
    ceilings: dict
    eta: Eta | None = None  # the time the run has left (bench/run/eta.py); None: none said
    started: float = field(default_factory=time.perf_counter)
    done: list[Result] = field(default_factory=list)
    written: dict[str, Result] = field(default_factory=dict)
    readings: list[float] = field(default_factory=list)  # every drift-probe reading: the quietest is the noise gates'
    device: dict[str, float] = field(default_factory=dict)  # per GPU: this run's quietest device-reference reading

    def __post_init__(self) -> None:
        # the first process's before reading is taken now, beside it (after the ceilings probes), not the run's start
        # reading: that one came first in a process just started, and on the lent H200 read 4-5x every later one
        self.latest = reading()
        self.readings += [self.start.ms, self.latest.ms]

    @property
    def start_ms(self) -> float:
        return self.start.ms

    def phase(self, line: str) -> None:
        self.progress.phase(line) if self.progress else self.echo("    " + line)

    def provisional(self, cell: Cell, runs: list[Run]) -> Result:
        record_noise(runs, self.readings, self.device)
        return self.prepared.result(
            cell, runs, self.options.profile_choice, self.options.repeats,
            reference={"start_ms": self.start_ms, "at_write_ms": self.latest.ms}, ceilings=self.ceilings,
            replication=self.rule.to_dict(),
        )  # fmt: skip

    def finish(self, cell: Cell, runs: list[Run]) -> None:
        result = self.written[cell.key] = self.provisional(cell, runs)
        path = write_or_show(result, self.results_dir, self.echo, kept=len(self.done), of=self.total)
        self.done.append(result)
        if self.eta is not None:
            self.eta.cell_done(cell.key)
        # its figure with its interval and processes, and a word with a count for each kind of warning (Result.brief),
        # within LINE_WIDTH; -v adds the full line (Result.describe): every gate's reason, as its file records them
        line = result.brief(LINE_WIDTH - len(FINISHED))
        self.progress.cell_finished(cell, line) if self.progress else self.echo(f"{FINISHED}{line}")
        if self.options.verbose:
            self.echo(f"{' ' * len(FINISHED)}{result.describe()}  [{path.relative_to(self.results_dir)}]")
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
                        self.record_reference(run)
                        if self.eta is not None:
                            self.eta.process_done(cell.key)
                    at_cap = not self.rule.another_allowed(len(runs[cell.key]))  # every process counts, set aside or not
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

    def record_reference(self, run: Run) -> None:
        """The drift probe after a process, kept beside it with the one before it and how each settled; the device
        reference's readings, into this run's quiet value of its GPU."""
        before, self.latest = self.latest, reading()
        self.readings.append(self.latest.ms)
        run.reference = {"before_ms": before.ms, "after_ms": self.latest.ms,
                         "settling": {"before": before.to_dict(), "after": self.latest.to_dict()}}  # fmt: skip
        for ms in run.device_readings():
            self.device[run.device_key()] = min(self.device.get(run.device_key(), ms), ms)

    def run_one(self, cell: Cell, repeat: int) -> Run:
        """One process of a cell, after its header line (or the status that stands for it where none runs)."""
        header = cell_line(self.number[cell.key], self.total, cell, time.perf_counter() - self.started,
                           repeat_label(repeat, self.rule), self.eta.inline() if self.eta else None)  # fmt: skip
        self.progress.cell_started(cell, header) if self.progress else self.echo(header)
        check_free_space(self.results_dir, kept=len(self.done), of=self.total)
        if (not_run := self.prepared.not_run(cell)) is not None:
            return not_run
        if self.eta is not None:
            self.eta.process_started(cell.key)
        return attempt_within(
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


FINISHED = "    -> "  # before a finished cell's line


def to_replace(runs: list[Run], rule: SequentialRule, readings: list[float]) -> int:
    """Under a sequential rule (the paper profile's processes until decided), how many of a cell's processes were
    disturbed (their noise gate tripped against this run's quietest reading so far) while fewer than the rule's first
    count are undisturbed: each gets a replacement while the cap allows one more process, so that the cell is judged
    on undisturbed ones (bench/judge/__init__.py kept_runs). The cap counts the disturbed processes too
    (bench/judge/replication.py SequentialRule.another_allowed): a replacement past it would be a look beyond those the
    rule's confidence spends alpha over. A fixed count (smoke, cpu, a budget, --repeats) stays fixed: its disturbed
    process is set aside when judged, not replaced. 0: none."""
    if not rule.sequential or not rule.another_allowed(len(runs)):
        return 0
    quiet = min((r for r in readings if r and r > 0), default=None)
    ok = [r for r in runs if r.status == "ok" and r.timed_ms]
    device = device_quiet(runs)
    disturbed = sum(r.noise_gates(quiet, device.get(r.device_key())).noisy for r in ok)
    if not disturbed or len(ok) - disturbed >= rule.first:
        return 0
    return min(disturbed, rule.cap - len(runs))


def repeat_label(repeat: int, rule: SequentialRule) -> str:
    if rule.cap == 1:
        return ""
    if repeat < rule.first:
        return f" repeat {repeat + 1}/{rule.first}"
    return f" repeat {repeat + 1} (up to {rule.cap}, while undecided)"


def look_against(results: dict[str, Result], rule: SequentialRule, against: Path) -> dict[str, str]:
    """After a round: the cells whose comparison with the same cell in `against` (on this machine) one more process
    could help decide (bench/judge/replication.py undecided_against)."""
    if not rule.sequential:
        return {}
    from bench.judge import Judge
    from bench.judge.replication import undecided_against

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
    """After a round: the cells of the row that one more process could help decide (bench/judge/comparisons.py)."""
    if not rule.sequential or len(results) < 2:
        return {}
    from bench.judge.analysis import analyse_group
    from bench.judge.comparisons import wanting_more
    from bench.record.load import Loaded, group_results

    wanted: dict[str, str] = {}
    for group in group_results([Loaded(key, result) for key, result in results.items()]):
        wanted.update(wanting_more(analyse_group(group, results_dir), rule))
    return wanted


