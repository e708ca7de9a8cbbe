"""How one table's part of RESULTS.md is assembled from its sections (see the package docstring)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.report.analysis import TableAnalysis


@dataclass
class Page:
    """Where one table's output goes, and what its renderers wrote there (the README splice reuses a figure)."""

    index: int  # the table's number in RESULTS.md, from 1
    out_dir: Path  # RESULTS.md's folder: links are relative to it
    fig_dir: Path
    figures: dict[str, Path | None] = field(default_factory=dict)  # kind -> PNG written, None where not drawn


@dataclass(frozen=True)
class Section:
    """One renderer of a table's section. `title` None: no heading, the lines follow the previous section's
    (the main table, the per-cell details); otherwise the section is numbered `### <table>.<n> <title>`.
    A renderer returning no lines leaves no trace, so a study's section is absent where it has nothing to say."""

    title: str | None
    render: Callable[[TableAnalysis, Page], list[str]]


def render_table(table: TableAnalysis, page: Page, sections: list[Section]) -> list[str]:
    """The table's whole part of RESULTS.md: its heading, then each section with lines, in registry order."""
    group = table.group
    lines = [f"## {page.index}. {group.title}", ""]
    number = 0
    for section in sections:
        body = section.render(table, page)
        if not body:
            continue
        if len(lines) > 2:
            lines.append("")  # one blank line between sections
        if section.title is not None:
            number += 1
            lines += [f"### {page.index}.{number} {section.title}", ""]
        lines += body
    return lines + [""]
