"""The grid's orchestrator: one worker process per env for the whole run (each model loaded into it in turn), per
model one weight export, every point's calls round-robin across its columns, one schema-2 result file per
(model, column, batch, length).

The worker processes are bench/studies/grid/workers.py's. Shared with bench/run/runner.py (not duplicated): the env checks (bench/run/env_lookup.py
`env_python`: built, current lock), the process group kill (bench/run/cell_process.py `kill_group`), the crash
statuses (bench/base/failures.py), the drift probe (bench/measure/drift.py), the provenance (git, machine, process), the Result/Run format and its atomic, history-keeping writer, and the
progress display (bench/base/progress.py). What is new is the order: a process per env stays up across the run's
points, so that the repeats of one point can alternate between columns living in different envs (round-robin:
call r of every column, then call r+1), and the machine's drift over minutes touches every column of a point
alike instead of deciding which framework wins. It stays up across models too: importing five frameworks again
for every model took ~30 s of the 2-core machine per model.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.base.errors import BenchError
from bench.base.packed import pack, unpacked
from bench.base.progress import Progress, closing_line, hms, probe_line
from bench.base.provenance import git_info, machine_info, machine_slug, now_utc, study_provenance
from bench.base.runlock import holds_results_folder
from bench.catalogue.registry import Cell
from bench.measure.drift import reference_ms
from bench.record.result_checks import check_cell_schema
from bench.record.results import Result, Run
from bench.run.env_lookup import env_python
from bench.run.results_folder import check_writable
from bench.studies.grid.spec import COLUMNS, MODELS, REFERENCE_COLUMN, TASK, Grid, GridModel
from bench.studies.grid.workers import CALL_TIMEOUT_S, SETUP_TIMEOUT_S, WORKER_ENVIRONMENT, WorkerProcess, Workers

GRID_DIR = "grid"  # under the results folder; bench/record/results.py keeps it out of the published table's results
# Two framework outputs agree when their largest difference is within this, relative to the reference's
# largest magnitude: float32 sums over 12 layers in another order. Measured on full-size BERT: the TF twins
# (tf.function, XLA) and torch.compile 1e-6 relative; a Keras twin computing GELU's tanh approximation against
# the exact GELU 2e-4 relative, which this rejects (another function, not a rounding difference).
TOLERANCE = 1e-4
OLD_TOLERANCE = 1e-3  # result files written before parity_scale was recorded were judged against this


class GridResult(Result):
    """A grid point's result: a schema-2 Result whose file lives under <results>/grid/<grid>/<machine>/<model>/."""

    def relative_path(self) -> Path:
        return grid_result_path(self.cell, self.runs[0].settings.get("sequence_length") if self.runs else None,
                                self.provenance.get("machine", {}))


def grid_folder(profile: str, machine: dict[str, Any]) -> Path:
    """A grid's results of one machine, under the results folder (tracked packed: bench/base/packed.py)."""
    return Path(GRID_DIR) / profile / machine_slug(machine)


def grid_result_path(cell: Cell, length: int | None, machine: dict[str, Any]) -> Path:
    return grid_folder(cell.profile, machine) / cell.model / f"{cell.variant}__bs{cell.batch_size}__len{length}.json"


def grid_cell(model: str, column: str, batch: int, grid: Grid) -> Cell:
    """The result file's cell: backend = the column's env, variant = the column. Not a cell of the published
    table, so it is built unvalidated, as archived cells are (the schema's own checks apply)."""
    data = {
        "backend": COLUMNS[column].env,
        "model": model,
        "task": TASK,
        "batch_size": batch,
        "profile": grid.profile,
        "variant": column,
        "warmup_steps": grid.warmup,
        "timed_steps": grid.max_repeats,
        "max_warmup_steps": grid.max_warmup,
    }
    check_cell_schema(data)
    return Cell.from_dict(data, validate=False)


def beyond_tolerance(settings: dict[str, Any]) -> bool:
    """Whether a recorded difference is beyond today's TOLERANCE (files from before parity_scale: its scale is
    their recorded tolerance over the rule they were judged by)."""
    diff = settings.get("max_abs_diff")
    if diff is None:
        return False
    scale = settings.get("parity_scale")
    if scale is None and settings.get("parity_tolerance") is not None:
        scale = settings["parity_tolerance"] / OLD_TOLERANCE
    return diff > TOLERANCE * max(1.0, scale or 0.0)


def max_abs_diff(path: str, reference: str) -> tuple[float, float]:
    """(largest |output - reference|, largest |reference|) of two saved last hidden states."""
    import numpy as np

    a, b = np.load(path), np.load(reference)
    if a.shape != b.shape:
        raise BenchError(f"output shape {a.shape} differs from the reference's {b.shape}")
    return float(np.abs(a.astype(np.float64) - b).max()), float(np.abs(b).max())


@dataclass
class ColumnState:
    column: str
    worker: WorkerProcess | None
    na: str | None = None
    failed: dict[str, Any] | None = None
    output: str | None = None
    timed_ms: float = 0.0
    timed: int = 0
    done: bool = False


@holds_results_folder
def run_grid(
    models: list[str], columns: list[str], grid: Grid, results_dir: Path, echo: Callable[[str], None] | None = None
) -> list[Result]:
    """Run the grid for these models and columns; write and return one result per point and column."""
    progress = None if echo is not None else Progress()
    say = echo or progress.message
    needed_envs = {COLUMNS[c].env for c in columns}
    for env in sorted(needed_envs | {COLUMNS[REFERENCE_COLUMN].env}):
        env_python(env)  # refuses an unbuilt or stale env before anything runs
    check_writable(results_dir)
    git, machine = git_info(), machine_info()
    # this grid's results on this machine are tracked packed: unpacked before a point is added, packed again after
    folder = unpacked(Path(results_dir) / grid_folder(grid.profile, machine))
    reference = {"start_ms": reference_ms()}
    started = time.perf_counter()
    written: list[Result] = []
    points = grid.points()
    say(
        f"grid {grid.name}: {len(models)} model(s) x {len(columns)} column(s) x {len(points)} point(s) "
        f"({', '.join(f'{b}x{n}' for b, n in points)}); repeats {grid.min_repeats}-{grid.max_repeats}, "
        f"point cap {grid.point_cap_s} s"
    )
    scratch = Path(tempfile.mkdtemp(prefix="grid-", dir=os.environ.get("BENCH_GRID_TMP") or None))
    workers = Workers(grid, scratch / "outputs", results_dir / "logs" / GRID_DIR / grid.name, git, say)
    try:
        for index, name in enumerate(models, 1):
            say(
                f"[{index}/{len(models)}] {MODELS[name].display}: exporting seeded weights (elapsed {hms(time.perf_counter() - started)})"
            )
            written += run_model(
                MODELS[name], columns, grid, results_dir, scratch / name, workers, git, machine, reference, say
            )
    finally:
        workers.stop()
        shutil.rmtree(scratch, ignore_errors=True)
        if written and folder.is_dir():  # an interrupted grid's points too: the archive is what git keeps
            pack(folder)
        if progress:
            progress.close()
    end = reference_ms()
    say(probe_line("reference probe", reference["start_ms"], end))
    say(closing_line(written, "grid results", time.perf_counter() - started))
    return written


def run_model(
    model: GridModel,
    columns: list[str],
    grid: Grid,
    results_dir: Path,
    folder: Path,
    workers: Workers,
    git,
    machine,
    reference,
    say,
) -> list[Result]:
    weights = folder / "weights"
    exported = workers.get(COLUMNS[REFERENCE_COLUMN].env).ask(
        {"op": "export", "model": model.name, "size": grid.size, "folder": str(weights)}, SETUP_TIMEOUT_S
    )
    by_env: dict[str, list[str]] = {}
    for c in columns:
        if model.why_na(COLUMNS[c], 0) is None:  # a column NA at every length (no Keras XLM) loads nothing
            by_env.setdefault(COLUMNS[c].env, []).append(c)
    if exported["status"] != "ok":
        by_env = {}
    setup = workers.load(model, by_env, weights)
    written = []
    for batch, length in grid.points():
        states = []
        for c in columns:
            env = COLUMNS[c].env
            na = model.why_na(COLUMNS[c], length)
            state = ColumnState(c, workers.by_env.get(env), na=na)
            if na is None and exported["status"] != "ok":
                state.failed = {
                    "status": exported["status"],
                    "message": f"exporting the weights: {exported.get('message')}",
                }
            elif na is None and setup[env]["status"] != "ok":
                state.failed = {"status": setup[env]["status"], "message": setup[env].get("message")}
            elif na is None and not workers.by_env[env].alive:  # died at an earlier point (OOM): a fresh one
                setup.update(workers.load(model, {env: by_env[env]}, weights))
                state.worker = workers.by_env[env]
                if setup[env]["status"] != "ok":
                    state.failed = {"status": setup[env]["status"], "message": setup[env].get("message")}
            states.append(state)
        say(f"    batch {batch} x length {length}: " + ", ".join(s.column for s in states if not s.na and not s.failed))
        run_point(states, batch, length, grid)
        written += finish_point(
            model, states, batch, length, grid, results_dir, git, machine, reference, setup, exported, say
        )
        for s in states:
            if s.output:
                Path(s.output).unlink(missing_ok=True)
    shutil.rmtree(weights, ignore_errors=True)  # every worker has read them
    return written


def run_point(states: list[ColumnState], batch: int, length: int, grid: Grid) -> None:
    """Round-robin: one call of every live column, again and again, until each column has its repeats: at least
    grid.min_repeats timed, more up to grid.max_repeats while the point's timed calls stay under its cap."""
    live = [s for s in states if not s.na and not s.failed]
    rounds = 0
    while any(not s.done for s in live):
        for s in live:
            if s.done or s.failed:
                continue
            answer = s.worker.ask({"op": "call", "column": s.column, "batch": batch, "length": length}, CALL_TIMEOUT_S)
            if answer["status"] != "ok":
                s.failed, s.done = answer, True
                continue
            s.output = answer.get("output") or s.output
            if answer["warmup_run"] is not None and answer["steps_done"] > 1 + answer["warmup_run"]:
                s.timed += 1
                s.timed_ms += answer["window_ms"]
            s.done = answer["done"]
        rounds += 1
        spent = sum(s.timed_ms for s in live) / 1000
        enough = all(s.timed >= grid.min_repeats or s.done for s in live)
        if enough and grid.point_cap_s is not None and spent >= grid.point_cap_s:
            for s in live:
                s.done = True


def finish_point(
    model, states, batch, length, grid, results_dir, git, machine, reference, setup, exported, say
) -> list[Result]:
    written = []
    probe_ms = reference_ms()  # the drift probe once per point (50 ms): the machine's state as its results are written
    ref = next((s for s in states if s.column == REFERENCE_COLUMN and not s.failed and s.output), None)
    for s in states:
        if s.na:
            run = Run(status="unsupported", message=s.na, settings={"sequence_length": length, "column": s.column})
        elif s.failed:
            run = Run(
                status=s.failed["status"],
                message=s.failed.get("message"),
                settings={"sequence_length": length, "column": s.column},
            )
        else:
            answer = s.worker.ask(
                {"op": "result", "column": s.column, "batch": batch, "length": length}, CALL_TIMEOUT_S
            )
            if "status" in answer and "settings" not in answer:
                run = Run(
                    status=answer["status"],
                    message=answer.get("message"),
                    settings={"sequence_length": length, "column": s.column},
                )
            else:
                run = Run.from_dict(answer)
                check_parity(model, s, ref, run, exported)
        run.reference = None
        result = GridResult(
            cell=grid_cell(model.name, s.column, batch, grid),
            runs=[run],
            unit="ms/forward",
            provenance=study_provenance(
                git,
                machine,
                f"make grid GRID={grid.name}",
                "inference grid",
                WORKER_ENVIRONMENT,
                {**reference, "at_write_ms": probe_ms},
                weights={
                    "source": "seeded PyTorch model (bench/studies/grid/frameworks_grid.py export_weights)",
                    "parameters": exported.get("parameters"),
                },
            ),
            created_at=now_utc(),
        )
        path = result.write(results_dir)
        written.append(result)
        say(f"      {s.column:17s} {result.describe()}  [{path.relative_to(results_dir)}]")
    return written


def check_parity(
    model: GridModel, state: ColumnState, ref: ColumnState | None, run: Run, exported: dict[str, Any]
) -> None:
    """Record the column's largest difference from the reference column's last hidden state; beyond TOLERANCE
    the point fails (status error, with the figure), since it would time another computation. Keras XLNet
    has random weights (no converter): its parameter count must equal the PyTorch model's instead."""
    settings = run.settings
    if state.column == REFERENCE_COLUMN:
        settings["max_abs_diff"] = 0.0
        return
    if COLUMNS[state.column].family == "keras" and not MODELS[model.name].keras_converter:
        settings["max_abs_diff"] = None
        settings["parity"] = "parameter count"
        if settings.get("parameters") != exported.get("parameters"):
            run.status = "error"
            run.message = f"parameter count {settings.get('parameters')} differs from the PyTorch model's {exported.get('parameters')}"
            run.timed_ms = []
        return
    if ref is None or state.output is None:
        settings["max_abs_diff"] = None
        settings["parity"] = "no reference output (the PyTorch eager column did not run this point)"
        return
    diff, scale = max_abs_diff(state.output, ref.output)
    settings["max_abs_diff"] = diff
    settings["parity_tolerance"] = TOLERANCE * max(1.0, scale)
    settings["parity_scale"] = scale
    if diff > TOLERANCE * max(1.0, scale):
        run.status = "error"
        run.message = f"output differs from PyTorch eager's by {diff:.3g} (max |reference| {scale:.3g}; tolerance {TOLERANCE:g} relative): not the same computation"
        run.timed_ms = []
