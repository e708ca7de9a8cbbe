"""The README's generated parts, each between two marker lines: the headline (the published A100 table beside this
suite's GPU measurements, and the published findings re-tested: bench/report/headline.py) and how long the two
commands take, from the result files and the planner."""
from __future__ import annotations

from pathlib import Path

from bench.base.errors import BenchError
from bench.judge.analysis import TableAnalysis
from bench.record.text import write_text_atomic
from bench.report.headline import headline_lines

README_START = "<!-- bench-table:start (written by make table; do not edit) -->"
README_END = "<!-- bench-table:end -->"
TIMES_START = "<!-- bench-times:start (written by make table; do not edit) -->"
TIMES_END = "<!-- bench-times:end -->"


def minutes(seconds: float) -> str:
    """'48 min', '11 h 40 min'."""
    total = round(seconds / 60)
    return f"{total} min" if total < 60 else f"{total // 60} h {total % 60} min"


def matrix_minutes(table: TableAnalysis) -> float:
    """The wall time of every process of a table's cells, in seconds (the run's cell processes, one after another)."""
    return sum(r.wall_s or 0.0 for item in table.group.items for r in item.result.runs)


def times_lines(tables: list[TableAnalysis], results_dir: Path) -> list[str]:
    """How long `make bench-all` took on each CPU whose whole smoke matrix is committed, and what the planner
    expects on one A100 (bench/run/decided.py, from the GPU processes measured so far)."""
    from bench.catalogue.registry import plan_cells
    from bench.run.decided import plans
    from bench.run.measured import folders_of, measure

    lines = []
    whole = len(plan_cells("smoke"))
    for table in tables:
        group = table.group
        if group.profile == "smoke" and group.stack == "today" and len(group.items) >= whole:
            machine = group.machine.split(", processor")[0]
            lines.append(f"- {machine}, `smoke`: {minutes(matrix_minutes(table))} of cells, once the environments "
                         "are built.")  # fmt: skip
    ways, _ = plans(measure(folders_of(results_dir)))
    decided, exact = ways[0], ways[1]
    lines.append(f"- One A100, `paper`: {minutes(decided.wall_s(1))} to a decided table, planned; "
                 f"{minutes(exact.wall_s(1))} the published way (`EXACT=1`).")  # fmt: skip
    return lines


def splice(text: str, start: str, end: str, body: list[str], readme: Path) -> str:
    if text.count(start) != 1 or text.count(end) != 1:
        raise BenchError(f"{readme} needs exactly one {start!r} and one {end!r} line for `make table` to fill")
    before, rest = text.split(start)
    after = rest.split(end, 1)[1]
    return before + "\n".join([start, "", *body, ""]) + "\n" + end + after


def update_readme(readme: Path, tables: list[TableAnalysis], results_dir: Path) -> None:
    """Replace the README's marked headline with the GPU tables' headline, and its marked times where it has them."""
    text = readme.read_text()
    text = splice(text, README_START, README_END, headline_lines(tables), readme)
    if TIMES_START in text:
        text = splice(text, TIMES_START, TIMES_END, times_lines(tables, results_dir), readme)
    write_text_atomic(readme, text)
