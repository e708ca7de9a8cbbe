"""The README's results section: the first table of RESULTS.md and its per-row figure, between two marker lines."""
from __future__ import annotations

import os
from pathlib import Path

from bench.errors import BenchError
from bench.report.analysis import TableAnalysis
from bench.report.figures import CAPTIONS
from bench.report.markdown import main_table, table_facts
from bench.report.sections import Page
from bench.report.text import recorded, write_text_atomic

README_START = "<!-- bench-table:start (written by make table; do not edit) -->"
README_END = "<!-- bench-table:end -->"


def update_readme(readme: Path, results_md: Path, first: TableAnalysis, page: Page) -> None:
    """Replace the README's marked section with `first`'s main table and notes and its per-row figure."""
    text = readme.read_text()
    if text.count(README_START) != 1 or text.count(README_END) != 1:
        raise BenchError(
            f"{readme} needs exactly one {README_START!r} and one {README_END!r} line for `make table` to fill"
        )
    rel = lambda p: Path(os.path.relpath(Path(p).resolve(), readme.resolve().parent)).as_posix()
    group = first.group
    section = [
        README_START,
        "",
        f"**{recorded(group.title)}**, {len(group.items)} cells (from [{rel(results_md)}]({rel(results_md)}), "
        "which has the legend, the findings and links to the per-cell details and the provenance):",
        "",
        *main_table(first),
        "",
        *[f"- {text}" for text in table_facts(first)],
        "- What ±, bold, ≈, †, ˢ, ᵐ, noisy and ⚠ mean: [Reading a result](#reading-a-result).",
        "",
    ]
    figure = page.figures.get("per-row")
    if figure:
        section += [f"![{CAPTIONS['per-row']}]({rel(figure)})", ""]
    before, rest = text.split(README_START)
    after = rest.split(README_END, 1)[1]
    write_text_atomic(readme, before + "\n".join(section) + "\n" + README_END + after)
