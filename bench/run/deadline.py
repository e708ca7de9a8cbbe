"""A run's deadline (`--budget-minutes`, `make gpu-check`): no cell starts after it, and the cell it cuts short is
ended and not recorded (it is what a resumed run starts with), never a `timeout` result."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from bench.catalogue.registry import Cell
from bench.record.results import Run


class BudgetSpent(Exception):
    """The run's deadline came: before a cell could start, or while one ran (ended, and not recorded)."""


def attempt_within(
    prepared,  # bench.run.runner.Prepared
    cell: Cell,
    repeat: int,
    results_dir: Path,
    timeout_s: float | None,
    echo: Callable[[str], None],
    deadline: float | None,
) -> Run:
    """One process of a cell, its timeout shortened to what is left before the deadline; a cell that the deadline
    (not its own timeout) ends is the run's end, never a `timeout` result."""
    if deadline is None:
        return prepared.attempt(cell, repeat, results_dir, timeout_s, echo)
    from bench.catalogue.cost import cell_timeout_s

    left, limit = deadline - time.monotonic(), timeout_s or cell_timeout_s(cell)
    if left <= 0:
        raise BudgetSpent
    run = prepared.attempt(cell, repeat, results_dir, min(limit, left), echo)
    if run.status == "timeout" and left < limit:
        raise BudgetSpent
    return run
