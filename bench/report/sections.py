"""How one table's part of RESULTS.md, and its parts of the study pages beside it, are assembled from its sections
(see the package docstring)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.judge.analysis import TableAnalysis
from bench.record.text import recorded

MAIN = "RESULTS.md"
# What a per-machine section adds to its lines where it matched its table by the machine's label alone (the results
# recorded no processor): RESULTS.md then says it once, under the section it repeats (bench/studies/table.py).
LABEL_MATCH_NOTE = " (matched by the machine's label: these results did not record their processor)"


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
    (the main table); otherwise the section is numbered `### <table>.<n> <title>`. `page`: the file beside
    RESULTS.md it goes to (one page per study, a part per table there; RESULTS.md links it). `per_machine`: its
    lines are the same for every table of one machine, so they are written once, under RESULTS.md's studies.
    A renderer returning no lines leaves no trace, so a study's section is absent where it has nothing to say.
    `intro`: the heading of its page and what the page holds; `link`: the page's text in RESULTS.md's "More on this
    table" line (each, where the page is a study's own, not one of the report's below)."""

    title: str | None
    render: Callable[[TableAnalysis, Page], list[str]]
    page: str = MAIN
    per_machine: bool = False
    intro: tuple[str, str] | None = None
    link: str | None = None


@dataclass
class Rendered:
    """One table's output: its part of RESULTS.md, its part of each study page, its per-machine sections."""

    main: list[str]
    pages: dict[str, list[str]] = field(default_factory=dict)  # study page -> this table's lines there
    per_machine: list[tuple[str, str, list[str]]] = field(default_factory=list)  # (title, machine, lines)


def render_table(table: TableAnalysis, page: Page, sections: list[Section]) -> Rendered:
    """The table's parts, each section with lines in registry order."""
    heading = f"## {page.index}. {recorded(table.group.title)}"
    lines = [heading, ""]
    out = Rendered(lines)
    number = 0
    for section in sections:
        body = section.render(table, page)
        if not body:
            continue
        if section.per_machine:
            out.per_machine.append((section.title or "", table.group.machine, body))
            continue
        if section.page != MAIN:
            out.pages.setdefault(section.page, [heading, ""]).extend(
                [f"### {section.title}", "", *body, ""] if section.title else [*body, ""]
            )
            continue
        if len(lines) > 2:
            lines.append("")  # one blank line between sections
        if section.title is not None:
            number += 1
            lines += [f"### {page.index}.{number} {section.title}", ""]
        lines += body
    if out.pages:
        texts = {**STUDY_PAGES, **{s.page: s.link for s in sections if s.link}}
        links = " · ".join(f"[{texts.get(name, name)}]({name})" for name in out.pages)
        lines += ["", f"More on this table (its part {page.index} on each page): {links}."]
    lines.append("")
    return out


# The report's own pages' link texts, in RESULTS.md's "More on this table" line (a study's: its Section's link).
STUDY_PAGES = {
    "PROVENANCE.md": "where the numbers come from",
    "STACKS.md": "beside today's stack",
    "ROOFLINE.md": "MFU and bandwidth use",
    "GENERATE.md": "generate split",
    "COSTS.md": "what each cell cost",
    "DETAILS.md": "per-cell measurements",
}
