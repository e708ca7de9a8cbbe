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
- `readme`: splices the first table into the README; `text`: formatting shared by all.

Adding a study (an inference grid, tuning variants): write `bench/report/<study>.py` with a renderer reading the
`TableAnalysis` (and, if it needs facts of its own, a function computing them from `table.rows` /
`table.group`), then add one `Section("<title>", <study>.<renderer>)` to `SECTIONS` below. Titled sections are
numbered `### <table>.<n>` in list order; a renderer that returns no lines leaves no trace, so the study's
section appears only in tables that have its results, and every other table's output stays byte-identical.
"""
from __future__ import annotations

from pathlib import Path

from bench.errors import BenchError
from bench.published import REFERENCE_CSV, published_rows
from bench.report import text
from bench.report.analysis import Report, analyse
from bench.report.costs import costs_section
from bench.report.figures import FIGURES, clear_old_figures, figures_section
from bench.report.findings import findings_section
from bench.report.generate import generate_section
from bench.report.gpu_beside_a100 import TITLE as GPU_BESIDE_A100_TITLE
from bench.report.gpu_beside_a100 import gpu_beside_a100_section
from bench.report.grid import grid_section
from bench.report.markdown import details_section, head_section
from bench.report.noise import TITLE as NOISE_TITLE
from bench.report.noise import noise_section
from bench.report.overhead import overhead_section
from bench.report.provenance import provenance_section
from bench.report.readme import README_END, README_START, update_readme
from bench.report.roofline import MACHINE_TITLE, PUBLISHED_TITLE, machine_section, published_section
from bench.report.sections import Page, Section, render_table
from bench.report.stacks import stacks_section
from bench.report.text import md, plural, write_text_atomic
from bench.report.tuning import tuning_section

__all__ = ["README_END", "README_START", "SECTIONS", "Report", "Section", "analyse", "render"]

# Every table's sections, in page order (the registry: a new study adds its line here).
SECTIONS: list[Section] = [
    Section(None, head_section),
    Section("Where these numbers come from", provenance_section),
    Section("Derived findings and comparison with the published numbers", findings_section),
    Section("Beside today's stack", stacks_section),
    Section("Figures", figures_section),
    Section(MACHINE_TITLE, machine_section),
    Section(GPU_BESIDE_A100_TITLE, gpu_beside_a100_section),
    Section(NOISE_TITLE, noise_section),
    Section("Generate split: time to first token and time per output token (issue 30)", generate_section),
    Section("Inference grid study: then and now", grid_section),
    Section("Tuning study: variants and the published findings (issue 15)", tuning_section),
    Section("Framework-overhead study (issue 30)", overhead_section),
    Section("What each cell cost to run", costs_section),
    Section(None, details_section),
]
PUBLISHED_MODELS = {row.model for row in published_rows()}
TUNING_FILE = "TUNING.md"  # beside RESULTS.md: the tuning study's section of every table that has one


def render(results_dir: Path, out: Path, readme: Path | None = None, sections: list[Section] | None = None) -> None:
    """Write `out` (Markdown) and <results_dir>/figures/*.png from every current result file; with `readme`, put
    the first table (the paper profile's when there is one) into that file's marked section too. `sections`
    replaces SECTIONS (a study trying its renderer before registering it)."""
    results_dir, out = Path(results_dir), Path(out)
    if text.tabulate is None:
        raise BenchError(f"tabulate is needed to render the tables; {text.install_hint('tabulate')}")
    report = analyse(results_dir)  # raises CorruptResult, naming the file, before anything is written
    out_dir = out.resolve().parent
    fig_dir = results_dir.resolve() / FIGURES
    lines = ["# Benchmark results", ""]
    pages = [Page(i, out_dir, fig_dir) for i in range(1, len(report.tables) + 1)]
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
        lines += [f"{p.index}. {t.group.title} ({len(t.group.items)} cells)" for p, t in zip(pages, report.tables)] + [
            ""
        ]
        for page, table in zip(pages, report.tables):
            lines += render_table(table, page, SECTIONS if sections is None else sections)
        if any(f.key.model in PUBLISHED_MODELS for t in report.tables for f in t.rows):  # not a study's own folder
            lines += [f"## {PUBLISHED_TITLE}", "", *published_section(), ""]
    if report.retired:
        lines += [
            "## Results of cells no longer in the registry",
            "",
            "Kept and readable, but not tabled: today's registry (models, tasks, profiles) no longer has their cells.",
            "",
        ]
        lines += [f"- `{item.path}`: {md(why)}" for item, why in report.retired] + [""]
    clear_old_figures(fig_dir, {path for page in pages for path in page.figures.values() if path})
    write_text_atomic(out, "\n".join(lines).rstrip("\n") + "\n")
    tuning = [(page, table, body) for page, table in zip(pages, report.tables) if (body := tuning_section(table, page))]
    if tuning:
        study = [
            "# Tuning study (issue 15)",
            "",
            f"Rendered by `python -m bench table` with {out.name}: the tuning study's section of each "
            "table that has its results. Published findings: `bench/data/keras3_tuning_2024.csv`.",
            "",
        ]
        for page, table, body in tuning:
            study += [f"## {page.index}. {table.group.profile} profile — {table.group.machine}", "", *body, ""]
        write_text_atomic(out.parent / TUNING_FILE, "\n".join(study).rstrip("\n") + "\n")
    if readme is not None and report.tables:
        update_readme(readme, out, report.tables[0], pages[0])
