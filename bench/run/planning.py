"""What a run measures, settled before it starts: the default profile, the cells' row order, what --resume leaves
out, each cell's time estimate and a warning where it cannot end within its timeout."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bench.base.errors import BenchError
from bench.base.progress import hms
from bench.base.provenance import machine_info, machine_label, unlocked_environment
from bench.catalogue.backends import UNLOCKED_STACK
from bench.catalogue.ownenv import same_environment, why_not_here
from bench.catalogue.registry import Cell
from bench.record.results import Result, load, result_path
from bench.run.env_lookup import built_env


def default_profile(machine: dict) -> tuple[str, str]:
    if machine["gpus"]:
        return "paper", f"CUDA GPU visible ({machine_label(machine)})"
    return "smoke", "no CUDA GPU visible"


def row_order(cells: list[Cell]) -> list[list[Cell]]:
    """Cells grouped by published row (model, task, batch size), rows in first-appearance order: the columns of
    one row run close together, so the machine's drift over minutes moves them alike."""
    rows: dict[tuple, list[Cell]] = {}
    for cell in cells:
        rows.setdefault((cell.profile, cell.model, cell.task, cell.batch_size), []).append(cell)
    return list(rows.values())


def measured_under_another_rule(result: Result, cell: Cell) -> str | None:
    """Why a result no longer stands for the cell as it would be measured now: its windows and sampling rule or its
    shape changed since (a profile's settings, a workload's shape), or it recorded neither."""
    from bench.catalogue.config import mismatches

    if result.config is None:
        return "measured before results recorded their windows and shape"
    changed = [what for what in mismatches(result.config, cell) if what != "cell"]
    return f"measured under another rule ({' and '.join(changed)} changed since)" if changed else None


def rule_change(cell: Cell, results_dir: Path, machine: dict) -> str | None:
    """Why resume measures an ok result of the cell again because its rule changed; None where it has no such
    result."""
    path = result_path(results_dir, cell, machine)
    if not path.exists():
        return None
    result = load(path)
    return measured_under_another_rule(result, cell) if result.status == "ok" else None


def still_to_measure(cells: list[Cell], results_dir: Path, repeats: int, machine: dict | None = None) -> list[Cell]:
    """The cells a resumed run measures: those not already measured on this machine (read once)."""
    machine = machine if machine is not None else machine_info()
    return [c for c in cells if not already_measured(c, results_dir, machine, repeats)]


def already_measured(cell: Cell, results_dir: Path, machine: dict, repeats: int) -> bool:
    """For --resume: the cell's current result is ok with every repeat, measured with the env lock current now and
    under today's windows, sampling rule and shape (or unsupported, and still so)."""
    path = result_path(results_dir, cell, machine)
    if not path.exists():
        return False
    result = load(path)
    if result.status == "unsupported":
        return bool(cell.spec.why_cell_unsupported(cell) or why_not_here(cell))
    if result.status != "ok" or len(result.runs) < repeats or measured_under_another_rule(result, cell):
        return False
    if cell.stack == UNLOCKED_STACK.name:  # an unlocked env's key stands for the lock's (bench/catalogue/ownenv.py)
        recorded = result.provenance.get("environment") or {}
        return bool(recorded.get("distributions")) and same_environment(recorded, unlocked_environment())
    try:
        _, stamp = built_env(cell.env)
    except BenchError:
        return False
    measured_with = (result.runs[0].process.get("environment") or {}).get("lock_sha256")
    return measured_with is not None and measured_with == (stamp or {}).get("lock_sha256")


def warn_over_timeout(
    cells: list[Cell], results_dir: Path, machine: dict, timeout_s: float | None, echo: Callable[[str], None]
) -> None:
    """A step count whose run cannot end within the timeout is said before it starts (--steps 1000000000 would
    otherwise run for the whole timeout and end as `timeout`). The estimate: the published ms/step of a paper cell
    (time_estimates), else the cell's current result's median, times the steps asked for."""
    from bench.catalogue.cost import cell_timeout_s, seconds_at

    estimates = time_estimates(cells)
    for cell in cells:
        seconds = estimates.get(cell.key)
        path = result_path(results_dir, cell, machine)
        if seconds is None and path.exists():
            try:
                summary = load(path).summary()
            except BenchError:
                summary = None
            seconds = seconds_at(cell, summary.median) if summary else None
        limit = timeout_s or cell_timeout_s(cell)
        if seconds is not None and seconds > limit:
            echo(
                f"warning: {cell.key} is estimated at {hms(seconds)} ({cell.timed_steps} timed steps), over its "
                f"{hms(limit)} timeout: it will end as timeout (fewer --steps, or a longer --timeout)"
            )


def time_estimates(cells: list[Cell], repeats: int = 1) -> dict[str, float]:
    """Seconds per cell (its `repeats` processes) for the progress bar's ETA where an estimate exists: paper cells
    at a published batch size, from the published ms/step and the GPU processes measured so far
    (bench/catalogue/cost.py expected_process_s). Other cells: none (the bar then uses the mean of the cells
    finished so far)."""
    from bench.catalogue.cost import expected_process_s
    from bench.run.measured import committed

    out = {}
    for cell in cells:
        if cell.profile != "paper":
            continue
        if cell.spec.why_cell_unsupported(cell):
            out[cell.key] = 0.0  # recorded without running
        elif (seconds := expected_process_s(cell, committed())) is not None:  # None: no published figure here
            out[cell.key] = repeats * seconds
    return out
