"""The order RESULTS.md reads in, and which tables it keeps whole: a user's own run first (a table holding a result
file the checkout does not hold: git does not track it), then the GPU tables (the answers), then every other CPU
table, each in RESULTS.md as a short entry saying what it can and cannot say, its table on a page of its machine's
own. Where no table answers first, every table stays whole in RESULTS.md, as before; a results folder outside a git
checkout is all the user's own."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

from bench.judge.analysis import TableAnalysis
from bench.record.text import plural, recorded
from bench.report.headline import on_gpu
from bench.report.markdown import rows_decided

# What a CPU table can and cannot say, by its profile: that its code paths run, never how fast on a GPU.
SAYS = {
    "smoke": ("that every code path runs on its CPU", "which framework is fastest: its models are shrunk"),
    "cpu": ("how the frameworks compare on its CPU at the paper's shapes, batch 2 or less",
            "how they compare on a GPU"),
    "cpu-mid": ("how the published generate findings hold on its CPU, with fewer decoder layers",
                "how they hold on a GPU"),
}  # fmt: skip
OTHER = ("how the frameworks compare on its CPU at this profile's sizes", "how they compare on a GPU")


def new_files(results_dir: Path) -> set[str] | None:
    """The files under `results_dir` that git does not track (relative, as the report names them): a user's own run
    beside the committed ones. None outside a git checkout: every file is the user's."""
    found = subprocess.run(["git", "ls-files", "--others", "-z", "--", "."], cwd=results_dir, capture_output=True)
    if found.returncode != 0:
        return None
    return {name for name in found.stdout.decode(errors="replace").split("\0") if name}


def is_own(table: TableAnalysis, own: set[str] | None) -> bool:
    return own is None or any(item.path in own for item in table.group.items)


def order_key(table: TableAnalysis, own: set[str] | None) -> int:
    if is_own(table, own):
        return 0
    return 1 if on_gpu(table) else 2


def reading_order(tables: list[TableAnalysis], own: set[str] | None) -> list[TableAnalysis]:
    """The user's own tables, then the GPU tables, then the rest, each kind in the report's order."""
    return sorted(tables, key=lambda t: order_key(t, own))


def kept_whole(table: TableAnalysis, own: set[str] | None) -> bool:
    """Whether RESULTS.md holds the whole table: the user's own, or a GPU's."""
    return order_key(table, own) < 2


def machine_page(table: TableAnalysis) -> str:
    """The page beside RESULTS.md that holds this machine's CPU tables whole: tables-<its label>.md."""
    return "tables-" + re.sub(r"[^a-z0-9]+", "-", table.group.machine.lower()).strip("-") + ".md"


def anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def entry_lines(table: TableAnalysis, index: int) -> list[str]:
    """RESULTS.md's short entry for a table kept on its machine's page."""
    heading = f"{index}. {recorded(table.group.title)}"
    page = machine_page(table)
    can, cannot = SAYS.get(table.group.profile, OTHER)
    return [
        f"## {heading}",
        "",
        f"{plural(len(table.group.items), 'cell')}, rows decided {rows_decided(table)} of {len(table.rows)}. It can "
        f"say {can}, not {cannot}. The table, its findings and figures: "
        f"[{page}]({page}#{anchor(heading)}).",
        "",
    ]
