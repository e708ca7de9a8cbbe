"""The matrix under a budget (`make bench-all BUDGET=<minutes>`, `bench run --budget-minutes N`): as much of it as
fits, the most informative cells first, cut cleanly at the budget and resumed with --resume.

The order: first one cell for each model x backend, at its first published row (the cells that answer the
published table's questions: how each framework does on each model), then the rest in the table's row order. Each
cell runs its processes one after another and is written before the next starts (not interleaved across its row,
as a run without a budget does): a cut leaves whole cells, and a resumed run never repeats one. Each
cell samples to its profile's precision target (bench/base/timing.py: the fewest steps that reach it). The estimate of
each cell's time is the suite's own: the published per-step figures (bench/catalogue/cost.py, paper cells), else
this machine's earlier result of the cell (its processes' wall time), else unknown.
"""

from __future__ import annotations

import time
from pathlib import Path

from bench.base.errors import BenchError
from bench.base.progress import hms
from bench.base.provenance import REPO_ROOT
from bench.catalogue.cost import repeated_s
from bench.catalogue.registry import Cell
from bench.record.results import Result, load, result_path
from bench.record.text import plural


def budget_order(cells: list[Cell]) -> tuple[list[Cell], int]:
    """The cells in budget order, and how many the first pass (one per model x backend) holds."""
    from bench.run.planning import row_order

    first: list[Cell] = []
    seen: set[tuple[str, str]] = set()
    for row in row_order(cells):
        for cell in row:
            if (cell.model, cell.backend) not in seen:
                seen.add((cell.model, cell.backend))
                first.append(cell)
    chosen = {c.key for c in first}
    return first + [c for c in cells if c.key not in chosen], len(first)


def process_walls(result: Result) -> list[float]:
    """The wall times of a result's processes, where each recorded one."""
    return [run.wall_s for run in result.runs if run.wall_s]


def earlier_walls(cell: Cell, machine: dict, folders: list[Path]) -> list[float]:
    """The wall times of the processes of this machine's earlier result of the cell (the first folder's that is
    readable and has any); empty where none is."""
    for folder in folders:
        path = result_path(folder, cell, machine)
        if path.exists():
            try:
                walls = process_walls(load(path))
            except BenchError:
                continue
            if walls:
                return walls
    return []


def earlier_seconds(cell: Cell, machine: dict, folders: list[Path]) -> float | None:
    """The wall time of this machine's earlier result of the cell (its processes together), if one is readable."""
    return sum(walls) if (walls := earlier_walls(cell, machine, folders)) else None


def estimates(cells: list[Cell], results_dir: Path, machine: dict, repeats: int) -> dict[str, float]:
    from bench.run.planning import time_estimates

    known = time_estimates(cells, repeats)
    folders = [results_dir, REPO_ROOT / "results"]
    for cell in cells:
        if cell.key not in known and (seconds := earlier_seconds(cell, machine, folders)) is not None:
            known[cell.key] = seconds
    return known


def expected_here(cells: list[Cell], results_dir: Path, machine: dict, repeats: int) -> str | None:
    """Before a run of cells other than the paper's (whose expectation is the decided table's): how long it should
    take on this machine, from its earlier results of the same cells, each process as long as its earlier ones;
    None where none of the cells has one."""
    folders = [results_dir, REPO_ROOT / "results"]
    seconds = {
        cell.key: repeated_s(walls, repeats)
        for cell in cells
        if cell.profile != "paper" and (walls := earlier_walls(cell, machine, folders))
    }
    if not seconds:
        return None
    unknown = sum(1 for c in cells if c.profile != "paper") - len(seconds)
    return (
        f"expected: ~{hms(sum(seconds.values()))} on this machine for the {plural(len(seconds), 'cell')} it has "
        f"measured before ({plural(repeats, 'process')} each, as long as their earlier ones"
        + (f"; {plural(unknown, 'cell')} never measured here, not counted" if unknown else "")
        + ")"
    )


def describe_plan(cells: list[Cell], first: int, seconds: dict[str, float], budget_s: float) -> str:
    """The ETA of the first pass and of the whole list, and how many cells the budget is expected to hold."""

    def total(part: list[Cell]) -> str:
        known = [seconds[c.key] for c in part if c.key in seconds]
        unknown = len(part) - len(known)
        guess = sum(known) + (unknown * sum(known) / len(known) if known and unknown else 0)
        return f"~{hms(guess)}" + (f" ({unknown} without an estimate, counted at the mean)" if unknown else "")

    fit, spent = 0, 0.0
    mean = sum(seconds.values()) / len(seconds) if seconds else None
    for cell in cells:
        cost = seconds.get(cell.key, mean)
        if cost is None or spent + cost > budget_s:
            break
        spent, fit = spent + cost, fit + 1
    return (
        f"budget {hms(budget_s)}: first one cell per model x backend ({first} cells, {total(cells[:first])}), "
        f"then the rest ({len(cells) - first} cells); all {len(cells)}: {total(cells)}; "
        + (f"about {fit} expected to fit" if seconds else "no estimate yet (no published figure, no earlier result)")
    )


def left_over(cells: list[Cell], done_keys: set[str]) -> list[Cell]:
    return [c for c in cells if c.key not in done_keys]


def under_budget(
    cells: list[Cell], results_dir: Path, minutes: float, repeats: int, resume: bool, jobs: int
) -> tuple[list[Cell], float]:
    """The cells in budget order with their ETA said, and the run's deadline."""
    from bench.base.provenance import machine_info
    from bench.run.planning import already_measured

    if minutes <= 0:
        raise BenchError(f"--budget-minutes must be positive, got {minutes:g}")
    if jobs > 1:
        raise BenchError("--budget-minutes runs one cell at a time: leave out --jobs")
    deadline = time.monotonic() + minutes * 60
    machine = machine_info()
    cells, first = budget_order(cells)
    todo = [c for c in cells if not already_measured(c, results_dir, machine, repeats)] if resume else cells
    todo_first = sum(1 for c in cells[:first] if c in todo)
    seconds = estimates(todo, results_dir, machine, repeats)
    print(describe_plan(todo, todo_first, seconds, minutes * 60), flush=True)
    return cells, deadline


def say_what_is_left(cells: list[Cell], results: list, results_dir: Path, repeats: int) -> None:
    """Every cell that --resume would run after this one, by key: no result yet, or one with fewer processes than
    asked (a row the budget cut between its repeats keeps what it finished), or not ok."""
    from bench.base.provenance import machine_info
    from bench.run.planning import already_measured

    machine, written = machine_info(), {r.cell.key for r in results}
    left = [c for c in cells if not already_measured(c, results_dir, machine, repeats)]
    if not left:
        print("every cell of the matrix has a result: nothing left")
        return
    partly = sum(1 for c in left if c.key in written)
    print(
        f"left by the budget ({len(left)} cells"
        + (f", {partly} of them with fewer processes than asked or not ok" if partly else "")
        + f"; RESUME=1 runs them): {', '.join(c.key for c in left)}"
    )
