"""What each full-size cell cost to run: the cell process's set-up, first step, timed steps and wall time,
and its peak resident memory beside the plan's prediction.

Only for tables of full-size models (the paper profile, and a profile borrowing its shapes such as cpu): there the
cost is what a reviewer plans a run with, and the host's peak memory tests the plan that skips `oom-predicted` cells.
Smoke tables get no section, so their output is unchanged.
"""
from __future__ import annotations

import datetime
import json
from functools import cache
from pathlib import Path

from bench.base.errors import BenchError
from bench.base.tables import github_table
from bench.catalogue.profiles import get_profile
from bench.judge.analysis import TableAnalysis
from bench.plan import plan_path
from bench.record.load import COLUMNS, Loaded
from bench.record.text import fmt_ms, md, status_label
from bench.report.sections import Page


def full_size(profile: str) -> bool:
    try:
        return profile == "paper" or bool(get_profile(profile).shapes_from)
    except BenchError:  # a profile this checkout no longer defines
        return False


@cache
def plan_totals(folder: Path, profile: str) -> dict[str, float]:
    """cell key -> the plan's predicted GiB, from the plan-<profile>.json in `folder` (empty where there is none)."""
    try:
        cells = json.loads(plan_path(folder, profile).read_text()).get("cells") or []
    except (OSError, ValueError, AttributeError):
        return {}
    return {c["key"]: c["memory_gib"] for c in cells if isinstance(c, dict) and "key" in c and "memory_gib" in c}


def planned_gib(item: Loaded, out_dir: Path) -> float | None:
    """The plan's figure for this cell: the nearest plan-<profile>.json in the result's folder or one above it,
    within the results folder (make bench-cpu-full keeps its plan in results/cpu-full/)."""
    cell = item.result.cell
    folder = (out_dir / item.path).parent
    while True:
        totals = plan_totals(folder, cell.profile)
        if cell.key in totals:
            return totals[cell.key]
        if folder == out_dir or out_dir not in folder.parents:
            return None
        folder = folder.parent


def seconds(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}"


def cost_row(label: str, item: Loaded, out_dir: Path) -> tuple[list[str], float]:
    result = item.result
    cell = result.cell
    run = result.runs[0]  # a full-size CPU run is one process per cell; repeats are summed in the wall column
    wall = sum(r.wall_s or 0.0 for r in result.runs)
    figure = result.figure() if result.status == "ok" and run.timed_ms else None
    timed = f"{len(run.timed_ms)} × {fmt_ms(figure)}" if figure is not None else ""
    peak = result.peak_rss_gib()
    planned = planned_gib(item, out_dir)
    variant = "" if cell.variant == "default" else f" ({cell.variant})"
    return [
        md(label),
        str(cell.batch_size),
        md(cell.backend + variant),
        status_label(result.status),
        seconds(run.setup_s),
        seconds(run.first_step_ms / 1000 if run.first_step_ms is not None else None),
        timed,
        seconds(wall) if wall else "",
        f"{peak:.1f}" if peak is not None else "",
        f"{planned:.1f}" if planned is not None else "",
    ], wall


def costs_section(table: TableAnalysis, page: Page) -> list[str]:
    group = table.group
    if not full_size(group.profile) or not table.rows:
        return []
    rows = [cost_row(f.key.label(), f.cells[c], page.out_dir) for f in table.rows for c in COLUMNS if c in f.cells]
    total = sum(wall for _, wall in rows)
    headers = [
        "Model / task",
        "Batch",
        "Backend",
        "Status",
        "Set-up (s)",
        "First step (s)",
        "Timed (n × figure ms)",
        "Cell wall (s)",
        "Peak RSS (GiB)",
        "Plan (GiB)",
    ]
    return [
        f"Each cell's own process, from its start to its result: set-up (model build and data), the first step (trace, "
        f"compile and one step), the timed steps, the process's wall time, and its peak resident host memory beside "
        f"the plan's predicted total for the cell (`plan-{group.profile}.json` beside the results; on a GPU the plan "
        f"predicts the GPU's memory, which host RSS does not measure). {len(rows)} cells"
        + (f", {datetime.timedelta(seconds=round(total))} of cell processes in all." if total else "."),
        "",
        github_table([r for r, _ in rows], headers),
    ]
