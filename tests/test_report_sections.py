"""bench.report's section registry: a study adds its renderer without touching the others' output."""

import pytest

pytest.importorskip("tabulate")
pytest.importorskip("matplotlib")

from test_table import make, sections, smoke_cpu, write_all

from bench.studies.table import SECTIONS, Section, render


def inference_grid(table, page):
    """A study's renderer: lines only for the tables that have its results (here: the paper profile's)."""
    return [f"{len(table.rows)} rows analysed once, read here."] if table.paper else []


def test_a_registered_section_is_numbered_and_leaves_other_tables_byte_identical(tmp_path):
    results = write_all(
        tmp_path / "results",
        smoke_cpu() + [make("jax", "sam", "fit", 1, 330.0), make("tensorflow", "sam", "fit", 1, 350.0)],
    )
    render(results, tmp_path / "before.md")
    study = Section("Inference grid", inference_grid)
    render(results, tmp_path / "after.md", sections=[*SECTIONS[:3], study, *SECTIONS[3:]])
    before, after = (sections((tmp_path / name).read_text()) for name in ("before.md", "after.md"))
    assert before.keys() == after.keys()
    paper = next(head for head in after if "paper" in head)
    added = "### 1.3 Inference grid\n\n1 rows analysed once, read here.\n\n"
    assert added + "More on this table" in after[paper]
    assert after[paper].replace(added, "") == before[paper]
    assert all(after[head] == before[head] for head in before if head != paper)


def test_a_section_with_a_page_goes_there_once_per_table_and_results_md_links_it(tmp_path):
    results = write_all(tmp_path / "results", smoke_cpu() + [make("jax", "sam", "fit", 1, 330.0)])
    study = Section("Inference grid", inference_grid, page="GRIDSTUDY.md")
    render(results, tmp_path / "RESULTS.md", sections=[*SECTIONS, study])
    main = sections((tmp_path / "RESULTS.md").read_text())
    paper = next(head for head in main if "paper" in head)
    assert "[GRIDSTUDY.md](GRIDSTUDY.md)" in main[paper] and "analysed once" not in main[paper]
    page = sections((tmp_path / "GRIDSTUDY.md").read_text())
    assert list(page) == [paper] and "### Inference grid\n\n1 rows analysed once, read here." in page[paper]


def test_the_registry_lists_every_built_in_renderer_once():
    assert [s.title for s in SECTIONS] == [
        None,
        "Derived findings and comparison with the published numbers",
        "Figures",
        "This GPU beside the published A100: MFU against each card's datasheet",
        "Where these numbers come from",
        "Beside today's stack",
        "Against the machine's limits: MFU and bandwidth use",
        "Generate split: time to first token and time per output token",
        "Tuning study: variants and the published findings",
        "What each cell cost to run",
        "Per-cell measurements",
        "How small a difference this machine can show",
        "Inference grid study: then and now",
        "Framework-overhead study",
    ]
    assert len({s.render for s in SECTIONS}) == len(SECTIONS)
