"""RESULTS.md, its figures and the README's results section, from the result files alone.

One table per (profile, machine label): numbers from different hardware or profiles never share a table. The
output is deterministic (no render time, no absolute paths, PNGs without a timestamp), so golden tests compare
it byte for byte.

Layers, each reading only the one before:

- `load`: result files -> `Group`s (one per table) of rows (`RowKey`) by columns (`Column`); the published CSV.
- `analysis`: `analyse()` loads and analyses the folder ONCE into a `Report` of `TableAnalysis` objects (per-row
  `RowFacts`, status notes, drift, speedups). Renderers never recompute a number.
- renderers, one module per concern, each a function `(TableAnalysis, Page) -> list[str]`: `markdown` (main
  table, legend, notes, per-cell details), `provenance` (hardware, commits, software per environment),
  `findings` (speedups, winners, the comparison with the published numbers), `figures` (matplotlib).
- `readme`: splices the headline (the published A100 table beside the GPU measurements) into the README; `text`: formatting shared by all.

RESULTS.md is a page a reader finishes: the legend once, then per table its headline (the main table, its findings,
its figures) and a line linking the study pages; every other section is written once per table on its own page
beside RESULTS.md (PROVENANCE.md, ROOFLINE.md, GENERATE.md, DETAILS.md, ...), and a section that is the same for
every table of a machine (the noise, grid and overhead studies' summaries) once, under RESULTS.md's "Studies".

Adding a study's section: write its renderer in `bench/studies/<study>/page.py`, reading the `TableAnalysis` (and, if
it needs facts of its own, a function computing them from `table.rows` / `table.group`), list it in that page's
`SECTIONS` (`Section("<title>", <renderer>, page="<STUDY>.md", intro=(<heading>, <what it holds>), link=<text>)`),
return them from the study's `sections()` and register the study in bench/studies/registry.py (docs/ADDING_A_STUDY.md).
A renderer that returns no lines leaves no trace, so the study's part appears only for tables that have its results,
and every other output stays byte-identical.
"""
from __future__ import annotations

import os
from pathlib import Path

from bench.base.errors import BenchError
from bench.base.published import REFERENCE_CSV, published_rows
from bench.judge.analysis import Report, analyse
from bench.record import text
from bench.record.text import md, plural, recorded, write_text_atomic
from bench.report.costs import costs_section
from bench.report.figures import FIGURES, clear_old_figures, figures_section
from bench.report.findings import SPEEDUP_LEGEND, findings_section
from bench.report.generate import generate_section
from bench.report.gpu_beside_a100 import TITLE as GPU_BESIDE_A100_TITLE
from bench.report.gpu_beside_a100 import gpu_beside_a100_section
from bench.report.headline import findings_table, gpu_tables
from bench.report.markdown import LEGEND, details_section, head_section
from bench.report.parity import parity_lines
from bench.report.provenance import provenance_section
from bench.report.reading_order import entry_lines, kept_whole, machine_page, new_files, reading_order
from bench.report.readme import README_END, README_START, update_readme
from bench.report.roofline import MACHINE_TITLE, PUBLISHED_TITLE, machine_section, published_section
from bench.report.sections import LABEL_MATCH_NOTE, Page, Rendered, Section, render_table
from bench.report.site import INDEX, write_site
from bench.report.stacks import stacks_section
from bench.studies.registry import study_sections, write_study_site

__all__ = ["README_END", "README_START", "SECTIONS", "Report", "Section", "analyse", "render"]

# Every table's sections, in page order. RESULTS.md keeps each table's headline, its findings and figures; every other
# section goes, once per table, to its own page beside it. A registered study's sections (bench/studies/registry.py)
# come after the table's own: one on a page of its own before the per-cell reference pages, one said once a machine
# last (under RESULTS.md's "Studies").
OWN_SECTIONS: list[Section] = [
    Section(None, head_section),
    Section("Derived findings and comparison with the published numbers", findings_section),
    Section("Figures", figures_section),
    Section(GPU_BESIDE_A100_TITLE, gpu_beside_a100_section),
    Section("Where these numbers come from", provenance_section, page="PROVENANCE.md"),
    Section("Beside today's stack", stacks_section, page="STACKS.md"),
    Section(MACHINE_TITLE, machine_section, page="ROOFLINE.md"),
    Section("Generate split: time to first token and time per output token", generate_section, page="GENERATE.md"),
]
REFERENCE_SECTIONS: list[Section] = [
    Section("What each cell cost to run", costs_section, page="COSTS.md"),
    Section("Per-cell measurements", details_section, page="DETAILS.md"),
]
STUDY_SECTIONS = study_sections()
SECTIONS: list[Section] = [
    *OWN_SECTIONS,
    *[section for section in STUDY_SECTIONS if not section.per_machine],
    *REFERENCE_SECTIONS,
    *[section for section in STUDY_SECTIONS if section.per_machine],
]
PUBLISHED_MODELS = {row.model for row in published_rows()}
# Each study page's heading and what it holds (RESULTS.md's tables number its parts).
PAGE_INTROS = {
    "PROVENANCE.md": ("Where these numbers come from", "Hardware, commits, dates and the software of every environment."),
    "STACKS.md": ("Beside today's stack", "Each cell of an older stack's table beside today's, with the speed-up."),
    "ROOFLINE.md": (
        "Against the machine's limits: MFU and bandwidth use",
        "Each ok cell's achieved FLOP/s and bytes/s over its own host's ceilings (docs/ROOFLINE.md).",
    ),
    "GENERATE.md": ("Generate split", "Each generate call split into time to first token and time per output token."),
    **{section.page: section.intro for section in STUDY_SECTIONS if section.intro},  # in SECTIONS' order
    "COSTS.md": ("What each cell cost to run", "Set-up, first step, timed steps, wall time and memory per cell."),
    "DETAILS.md": ("Per-cell measurements", "Every cell's processes, steps, figure, interval, sampling and file."),
}


def render(
    results_dir: Path,
    out: Path,
    readme: Path | None = None,
    sections: list[Section] | None = None,
    site: Path | None = None,
    own: set[str] | None = None,
) -> Report:
    """Write `out` (Markdown) and <results_dir>/figures/*.png from every current result file; with `readme`, put
    the headline (the published A100 table beside the GPU tables, bench/report/headline.py) into that file's marked
    section too. `sections`
    replaces SECTIONS (a study trying its renderer before registering it). With `site`, also write the explorable
    results page into that folder (bench/report/site.py) and link it. `own`: the result files of the user's own run, whose
tables come first (default: those git does not track; bench/report/reading_order.py). Returns the analysed report."""
    results_dir, out = Path(results_dir), Path(out)
    if text.tabulate is None:
        raise BenchError(f"tabulate is needed to render the tables; {text.install_hint('tabulate')}")
    report = analyse(results_dir)  # raises CorruptResult, naming the file, before anything is written
    if own is None:
        own = new_files(results_dir)
    report.tables = reading_order(report.tables, own)
    out_dir = out.resolve().parent
    fig_dir = results_dir.resolve() / FIGURES
    lines = ["# Benchmark results", ""]
    pages = [Page(i, out_dir, fig_dir) for i in range(1, len(report.tables) + 1)]
    rendered: list[Rendered] = []
    names: dict[str, None] = {}  # the study pages written
    machines: dict[str, list[str]] = {}  # another machine's CPU tables, whole, on a page of its own
    if not report.items:
        lines += [
            "No results yet: there are no result files in the results folder.",
            "",
            "Run cells with `make bench BACKEND=<backend> MODEL=<model>` (or `make bench-all`), then `make table`.",
            "",
        ]
    else:
        lines += [
            f"Rendered by `python -m bench table` from {plural(len(report.items), 'result file')}: one table per profile "
            "and machine, never mixing hardware or profiles. Published reference: Keras 3 benchmarks, Table 2 "
            f"(`bench/data/{REFERENCE_CSV.name}`).",
            "",
        ]
        lines += [f"{p.index}. {recorded(t.group.title)} ({len(t.group.items)} cells)" for p, t in zip(pages, report.tables)] + [
            ""
        ]
        if site is not None:
            link = Path(os.path.relpath(Path(site).resolve() / INDEX, out_dir)).as_posix()
            lines += [f"Every cell of these tables, filterable, with its windows plotted: [{link}]({link}).", ""]
        lines += findings_summary(report)
        chosen = SECTIONS if sections is None else sections
        rendered = [render_table(table, page, chosen) for page, table in zip(pages, report.tables)]
        lines += ["## How to read the tables", "", *[f"- {text}" for text in [*LEGEND, SPEEDUP_LEGEND]], ""]
        # split only where something answers first (the user's own tables, a GPU's): else every table is whole
        split = any(kept_whole(table, own) for table in report.tables)
        for page, table, part in zip(pages, report.tables, rendered):
            if not split or kept_whole(table, own):
                lines += part.main
            else:
                lines += entry_lines(table, page.index)
                machines.setdefault(machine_page(table), [f"# CPU tables: {table.group.machine}", "",
                                                          f"Rendered by `python -m bench table` with {out.name}.",
                                                          ""]).extend(part.main)
        for name, body in machines.items():
            write_text_atomic(out.parent / name, "\n".join(body).rstrip("\n") + "\n")
        published = any(f.key.model in PUBLISHED_MODELS for t in report.tables for f in t.rows)
        lines += studies(rendered, published, parity_lines(results_dir, out_dir))
        names = dict.fromkeys([name for part in rendered for name in part.pages] + ["ROOFLINE.md"] * published)
        for name in names:
            heading, intro = PAGE_INTROS.get(name, (name.removesuffix(".md").title(), ""))
            study = [f"# {heading}", "", f"Rendered by `python -m bench table` with {out.name}. {intro}", ""]
            for part in rendered:
                study += part.pages.get(name, [])
            if name == "ROOFLINE.md" and published:
                study += [f"## {PUBLISHED_TITLE}", "", *published_section(), ""]
            write_text_atomic(out.parent / name, "\n".join(study).rstrip("\n") + "\n")
    if report.retired:
        lines += [
            "## Results of cells no longer in the registry",
            "",
            "Kept and readable, but not tabled: today's registry (models, tasks, profiles) no longer has their cells.",
            "",
        ]
        lines += [f"- `{item.path}`: {md(why)}" for item, why in report.retired] + [""]
    clear_old_study_pages(out.parent, set(names) | set(machines))
    clear_old_figures(fig_dir, {path for page in pages for path in page.figures.values() if path})
    write_text_atomic(out, "\n".join(lines).rstrip("\n") + "\n")
    if readme is not None and report.tables:
        update_readme(readme, report.tables, results_dir)
    if site is not None:
        write_site(report, site, fig_dir)
        write_study_site(report, results_dir, Path(site))
    return report


def findings_summary(report: Report) -> list[str]:
    """RESULTS.md's opening: each published finding of Table 2, ours on the first GPU table, and its verdict."""
    gpus = gpu_tables(report.tables)
    if not any(t.paper for t in report.tables):
        return []
    part = report.tables.index(gpus[0]) + 1 if gpus else None
    where = f"{gpus[0].group.machine}: part {part}" if gpus else "not yet measured on a GPU"
    return [f"## Findings, re-tested on a GPU ({where})", "", findings_table(gpus[0] if gpus else None), ""]


def clear_old_study_pages(folder: Path, written: set[str]) -> None:
    """Remove a study page an earlier rendering wrote that has no part now (only a page this renderer wrote)."""
    for name, (heading, _) in PAGE_INTROS.items():
        path = folder / name
        if name not in written and path.is_file() and path.read_text().startswith(f"# {heading}\n\nRendered by "):
            path.unlink()
    for path in folder.glob("tables-*.md"):
        if path.name not in written and path.read_text().startswith("# CPU tables: "):
            path.unlink()


def borrowed_studies(first: dict[tuple[str, str], list[str]]) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """Sections that say another machine's section again, matched to it by the machine's label only: keyed by the
    section they repeat, so that a study is said once, naming every table it stands for."""
    out: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for key, body in first.items():
        if not any(LABEL_MATCH_NOTE in line for line in body):
            continue
        plain = [line.replace(LABEL_MATCH_NOTE, "") for line in body]
        twin = next((other for other, b in first.items() if other != key and other[0] == key[0] and b == plain), None)
        if twin is not None:
            out.setdefault(twin, []).append(key)
    return out


def studies(rendered: list[Rendered], published: bool, parity: list[str] | None = None) -> list[str]:
    """RESULTS.md's studies part: each per-machine section once per machine (its first table's lines), `make
    parity`'s summary, and a link to the published table against the A100 (it needs no result, so it follows every
    table)."""
    first: dict[tuple[str, str], list[str]] = {}
    for part in rendered:
        for title, machine, body in part.per_machine:
            first.setdefault((title, machine), body)
    borrowers = borrowed_studies(first)
    machines = {machine for _, machine in first}
    lines = ["## Studies", ""] if first or published or parity else []
    for (title, machine), body in first.items():
        if (title, machine) in {b for group in borrowers.values() for b in group}:
            continue
        heading = title if len(machines) == 1 else f"{title} — {machine}"
        while body and not body[-1]:
            body = body[:-1]
        if others := [m for _, m in borrowers.get((title, machine), [])]:
            body = [*body[:-1], f"{body[-1]} The tables of {'; '.join(others)}, which recorded no processor, "
                                "take it too (matched by the machine's label)."]
        lines += [f"### {heading}", "", *body, ""]
    if parity:
        lines += ["### Output parity on shared weights", "", *parity, ""]
    if published:
        lines += [
            f"### {PUBLISHED_TITLE}",
            "",
            "Each published figure over our count of its step's work, against the A100's datasheet: "
            "[ROOFLINE.md](ROOFLINE.md), after its per-table parts.",
            "",
        ]
    return lines
