"""Time to a decided table: the paper matrix's cost when each cell gets the processes its comparisons need under the
paper profile's sequential rule (bench/judge/replication.py), beside the published procedure's one undecided pass
(--exact) and a fixed three processes a cell.

    python -m bench estimate          # the Markdown table in docs/CLUSTER.md

A row is decided when every comparison the table makes in it is: its fastest Keras 3 backend against each other
Keras 3 backend (the ranking, and its bold), and Keras 3 (best) against Keras 2 and native PyTorch eager and compiled
(the speed-ups). Each comparison's expected ratio is the published one (native PyTorch, which the table does not
have, at Keras 3 PyTorch's figure, as its cost is); each cell's process-to-process spread and each process's time
beyond its steps are this suite's GPU measurements where any exist (bench/run/measured.py), else assumptions,
named. A cell gets the most processes any of its comparisons needs; a comparison the cap cannot decide (a ratio near
the equivalence band's edge, spreads too wide) adds none, as the rule does, and leaves its row undecided.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from bench.base.progress import hms
from bench.base.published import PUBLISHED_PROCESSES, PUBLISHED_TIMED_STEPS, published_ms
from bench.catalogue.cost import (
    COSTED_AS,
    GPU_COUNTS,
    SD_CALL_OVERHEAD_DENOISE_STEPS,
    assumed_overhead_s,
    expected_timed_steps,
    overhead_of,
    process_seconds,
)
from bench.catalogue.profiles import get_profile
from bench.catalogue.registry import Cell, get_model, paper_models, plan_cells
from bench.judge.replication import PLANNING_POWER, SequentialRule, processes_needed, rule_of
from bench.run.gpus import makespan
from bench.run.measured import Measured, cell_kind, committed, kind_label

ASSUMED_SPREAD = 0.03  # a process-to-process spread (log sd) assumed where no GPU cell has been measured
KERAS3 = ("tensorflow", "jax", "torch")


@dataclass
class Plan:
    """The processes and seconds of every cell under one way of running the matrix."""

    name: str
    processes: dict[str, int]  # cell key -> processes
    seconds: dict[str, float]  # cell key -> its processes' seconds in all
    undecided_rows: list[str] = field(default_factory=list)
    rows: int = 0

    def wall_s(self, gpus: int) -> float:
        return makespan([s for s in self.seconds.values() if s > 0], gpus)


@dataclass
class Costing:
    """Each running cell's seconds per process, and where each figure behind it came from."""

    measured: Measured
    process_s: dict[str, float] = field(default_factory=dict)
    exact_s: dict[str, float] = field(default_factory=dict)
    spread: dict[str, float] = field(default_factory=dict)
    overhead_sources: dict[str, str] = field(default_factory=dict)
    spread_sources: dict[str, str] = field(default_factory=dict)


def costing(cells: list[Cell], measured: Measured) -> Costing:
    found = Costing(measured)
    for cell in cells:
        if cell.spec.why_cell_unsupported(cell):
            continue
        overhead, found.overhead_sources[cell.key] = overhead_of(cell, measured)
        seconds = process_seconds(cell, overhead, expected_timed_steps(cell, measured))
        exact = Cell.from_dict({**cell.to_dict(), "timed_steps": PUBLISHED_TIMED_STEPS, "max_timed_steps": None})
        exact_seconds = process_seconds(exact, overhead, PUBLISHED_TIMED_STEPS)
        if seconds is None or exact_seconds is None:
            continue
        found.process_s[cell.key], found.exact_s[cell.key] = seconds, exact_seconds
        spread = measured.spread(cell)
        found.spread[cell.key] = spread[0] if spread else ASSUMED_SPREAD
        found.spread_sources[cell.key] = f"measured ({spread[2]})" if spread else "assumed"
    return found


def rows_of(cells: list[Cell]) -> dict[tuple[str, str, int], dict[tuple[str, str], Cell]]:
    rows: dict[tuple[str, str, int], dict[tuple[str, str], Cell]] = defaultdict(dict)
    for cell in cells:
        rows[(cell.model, cell.task, cell.batch_size)][(cell.backend, cell.variant)] = cell
    return rows


def comparisons(row: dict[tuple[str, str], Cell], figures: dict[str, float | None]) -> list[tuple[Cell, Cell, float]]:
    """The row's comparisons as the table makes them, each with its expected log ratio: the fastest Keras 3 backend
    against each other one, then Keras 3 (best) against Keras 2 and native PyTorch (eager, compiled)."""
    expected = lambda cell: figures.get(COSTED_AS.get(cell.backend, cell.backend))  # noqa: E731
    keras3 = [row[(b, "default")] for b in KERAS3 if (b, "default") in row and expected(row[(b, "default")])]
    if not keras3:
        return []
    best = min(keras3, key=expected)
    others = [c for c in keras3 if c is not best]
    others += [c for key, c in row.items() if key[0] in ("keras2", "native-torch") and expected(c)]
    return [(best, other, math.log(expected(other) / expected(best))) for other in others]


def sequential_plan(cells: list[Cell], found: Costing, rule: SequentialRule) -> Plan:
    figures = published_ms()
    processes = {key: rule.first for key in found.process_s}
    undecided = []
    rows = rows_of([c for c in cells if c.key in found.process_s])
    for (model, task, batch), row in rows.items():
        missing = False
        for a, b, log_ratio in comparisons(row, figures[(model, task, batch)]):
            needed = processes_needed(log_ratio, (found.spread[a.key], found.spread[b.key]), rule)
            missing = missing or needed is None
            for cell in (a, b):  # none is added for a comparison even the cap would leave undecided
                processes[cell.key] = max(processes[cell.key], needed or rule.first)
        if missing:
            undecided.append(f"{get_model(model).display} {task} (batch {batch})")
    seconds = {key: n * found.process_s[key] for key, n in processes.items()}
    return Plan(f"decided ({rule.describe()})", processes, seconds, undecided, len(rows))


def fixed_plan(name: str, per_process: dict[str, float], processes: int) -> Plan:
    return Plan(name, dict.fromkeys(per_process, processes), {k: processes * s for k, s in per_process.items()})


def plans(measured: Measured, rule: SequentialRule | None = None) -> tuple[list[Plan], Costing]:
    """The matrix's three ways: decided under the rule (the paper profile's), the published procedure, and a fixed
    count of the rule's first processes, each at the same per-process costs."""
    cells = plan_cells("paper", models=[m for m in paper_models() if not get_model(m).own_rows])
    rule = rule or rule_of(get_profile("paper"))
    found = costing(cells, measured)
    return [
        sequential_plan(cells, found, rule),
        fixed_plan(f"the published procedure (--exact: {PUBLISHED_TIMED_STEPS} timed steps, one process)",
                   found.exact_s, PUBLISHED_PROCESSES),  # fmt: skip
        fixed_plan(f"{rule.first} processes a cell, sampled, none added", found.process_s, rule.first),
    ], found


def markdown(measured: Measured | None = None) -> str:
    """The table of docs/CLUSTER.md: each way of running the matrix on 1, 8 and 64 GPUs, then what stands behind it."""
    measured = committed() if measured is None else measured
    ways, found = plans(measured)
    decided = ways[0]
    head = "| how the matrix is run | " + " | ".join(f"{n} GPU{'s' if n > 1 else ''}" for n in GPU_COUNTS)
    lines = [
        head + " | processes | rows decided |",
        "|---" + "|---:" * len(GPU_COUNTS) + "|---:|---|",
    ]
    for plan in ways:
        rows = (
            f"{decided.rows - len(plan.undecided_rows)} of {decided.rows} expected"
            if plan is decided
            else ("none (one process: no spread of its own)" if plan is ways[1] else "as they fall")
        )
        walls = " | ".join(hms(plan.wall_s(n)) for n in GPU_COUNTS)
        lines.append(f"| {plan.name} | {walls} | {sum(plan.processes.values())} | {rows} |")
    running = len(found.process_s)
    timed = expected_timed_steps(next(c for c in plan_cells("paper") if c.key in found.process_s), measured)
    lines += [
        "",
        f"{running} of the 72 cells run (the rest are Keras 2 LLM cells, recorded as unsupported). A process costs "
        f"its published ms/step (A100 40GB) x its steps (1 first + 2 warm-up + {timed} timed, the median a sampled GPU "
        "process took, within its fewest and its 60 s cap; the published procedure's 100) plus its time beyond its "
        "steps (start-up, build, the first step's compile); a comparison's expected ratio is the published one "
        "(native PyTorch at Keras 3 PyTorch's figure, as its cost), and it counts as decided at the processes where "
        f"it is decided {PLANNING_POWER:.0%} of the time, given its sides' process-to-process spreads. Where those "
        + (f"figures come from ({measured.source}; else assumed):" if measured.machines else "figures come from:"),
        "",
        "| backend | time beyond its steps, per process (processes measured) | process spread planned with |",
        "|---|---|---|",
        *assumption_rows(found),
        "",
        f"Rows the cap leaves undecided (their published ratios near the 5% equivalence band's edge): "
        f"{', '.join(decided.undecided_rows) or 'none'}. A StableDiffusion predict step is a pair of calls at 20 and "
        f"10 denoising steps, each also encoding the prompt and decoding the image (assumed "
        f"{SD_CALL_OVERHEAD_DENOISE_STEPS} denoising steps' time). Cells run one after another on each GPU, in the "
        "matrix's order, each on the first GPU to free up.",
    ]
    return "\n".join(lines)


def assumption_rows(found: Costing) -> list[str]:
    """Per backend and variant kind: each task's time beyond its steps and where it came from, and its spread."""
    by_kind: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    spread_of: dict[tuple[str, str], str] = {}
    for cell in plan_cells("paper"):
        if cell.key not in found.process_s:
            continue
        kind = cell_kind(cell)
        own = found.measured.overhead(cell)
        if own is None:
            by_kind[kind].setdefault(cell.task, f"{assumed_overhead_s(cell):.0f} s assumed")
        else:
            borrowed = "" if own[1].startswith(f"{kind_label(kind)} {cell.task}") else ", borrowed from its other tasks"
            count = own[1].rsplit(", ", 1)[1].split()[0]
            by_kind[kind].setdefault(cell.task, f"{own[0]:.0f} s ({count}{borrowed})")
        spread = found.measured.spread(cell)
        spread_of[kind] = (
            f"{spread[0]:.2%}: {spread[2]}" if spread else f"{ASSUMED_SPREAD:.0%} assumed (no GPU cell measured)"
        )
    return [
        f"| {kind_label(kind)} | {'; '.join(f'{task} {text}' for task, text in tasks.items())} | {spread_of[kind]} |"
        for kind, tasks in by_kind.items()
    ]


def expected_line(cells: list[Cell], rule: SequentialRule) -> str | None:
    """Before a run of paper cells: the expected time to its table decided, at the published speeds, with the GPU
    processes measured so far; None without a paper cell the published table costs."""
    paper = [c for c in cells if c.profile == "paper"]
    if not paper:
        return None
    found = costing(paper, committed())
    if not found.process_s:
        return None
    plan = sequential_plan(paper, found, rule) if rule.sequential else fixed_plan("", found.process_s, rule.first)
    undecided = (
        f"; rows expected to stay undecided: {', '.join(plan.undecided_rows)}" if plan.undecided_rows else ""
    )
    return (
        f"expected time to a decided table: ~{hms(plan.wall_s(1))} on one GPU at the published A100 speeds "
        f"({sum(plan.processes.values())} processes of {len(found.process_s)} costed cells; start-up and compile "
        f"{'as measured on GPUs so far' if found.measured.machines else 'assumed'}){undecided}"
    )



def task_line(cells: list[Cell], processes: int) -> str | None:
    """Before a Slurm submission of paper cells (one task a cell, its processes one after another): the GPU time in
    all and the longest task, at the published speeds with the start-up and compile measured so far."""
    found = costing([c for c in cells if c.profile == "paper"], committed())
    if not found.process_s:
        return None
    per_task = [processes * s for s in found.process_s.values()]
    return (
        f"expected: {hms(sum(per_task))} of GPU time in all, the longest task {hms(max(per_task))} (on enough GPUs, "
        f"the wall time), {processes} processes a cell at the published A100 speeds; a task runs one cell, so none is "
        "added for an undecided comparison: `make submit-status` says which rows are decided when they have ended"
    )


def main(argv: list[str] | None = None) -> int:
    import argparse

    argparse.ArgumentParser(prog="python -m bench estimate", description=__doc__.split("\n\n")[0]).parse_args(argv)
    print(markdown())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
