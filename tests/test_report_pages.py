"""RESULTS.md is a page a reader finishes: short, each section once, the studies on their own pages; and no
committed report prints a share of a ceiling above 100%."""
import re

import pytest

pytest.importorskip("tabulate")
pytest.importorskip("matplotlib")

from committed import committed_results
from test_table import paper_a100, paper_h100, smoke_cpu, write_all

from bench.studies.table import PAGE_INTROS, render

# a table per profile, machine and stack (each its rows, facts and findings, about 36-69 lines); studies apart
MAX_TABLE_LINES = 75  # a table's section: its table, findings, figures and notes
MAX_OTHER_LINES = 80  # the page's opening, how to read it and the studies' one-line links
# a share printed in a MFU table: "74% · 371 GFLOP/s" (and "BW 9.2%" for decode)
SHARE = re.compile(r"(?:^|[|(\s])(\d+(?:\.\d+)?)% · [\d.]+ [kMGT]?FLOP/s|BW (\d+(?:\.\d+)?)%")


def section_list(text: str) -> list[tuple[str, str]]:
    """(heading, body) of every Markdown section, at any level, in order."""
    parts = re.split(r"^(#{1,6} .*)$", text, flags=re.M)
    return [(parts[i], parts[i + 1].strip()) for i in range(1, len(parts) - 1, 2)]


def repeated_sections(text: str) -> list[str]:
    """Headings whose section (heading and body) or whose non-empty body appears more than once."""
    seen_whole, seen_body, out = set(), {}, []
    for heading, body in section_list(text):
        if (heading, body) in seen_whole or (body and body in seen_body):
            out.append(heading)
        seen_whole.add((heading, body))
        seen_body.setdefault(body, heading)
    return out


def shares_above_100(text: str) -> list[str]:
    return [m.group(0).strip("|( ") for m in SHARE.finditer(text) if float(m.group(1) or m.group(2)) > 100]


def test_the_committed_results_page_is_short_and_says_each_thing_once():
    text = (committed_results() / "RESULTS.md").read_text()
    # a page that grows by a table per machine and profile: each table's section short, and little else
    sections = re.split(r"^(?=## )", text, flags=re.M)
    tables = [s for s in sections if re.match(r"## \d+\. ", s)]
    assert tables and max(len(s.splitlines()) for s in tables) <= MAX_TABLE_LINES
    assert len(text.splitlines()) - sum(len(s.splitlines()) for s in tables) <= MAX_OTHER_LINES
    assert repeated_sections(text) == []
    assert not re.search(r"\bissue \d+", text)  # a ticket's number means nothing to a reader


def test_a_study_is_on_its_own_page_once_per_table(tmp_path):
    results = write_all(tmp_path, smoke_cpu() + paper_a100() + paper_h100())
    render(results, results / "RESULTS.md")
    text = (results / "RESULTS.md").read_text()
    assert repeated_sections(text) == []
    assert text.count("## How to read the tables") == 1 and text.count("wider side of its 95% interval") == 1
    headings = [heading for heading, _ in section_list(text)]
    assert not any("Where these numbers come from" in h or "Per-cell measurements" in h for h in headings)
    provenance = (results / "PROVENANCE.md").read_text()
    tables = re.findall(r"^## (\d+)\. ", provenance, flags=re.M)
    assert tables == ["1", "2", "3"] and provenance.count("### Where these numbers come from") == 3
    for name in PAGE_INTROS:
        if (results / name).exists():
            assert f"]({name})" in text, name


def test_repeated_sections_finds_a_copied_study():
    copied = "## 1. a\n\n### 1.1 grid\n\nsame table\n\n## 2. b\n\n### 2.1 grid\n\nsame table\n"
    assert repeated_sections(copied) == ["### 2.1 grid"]
    assert repeated_sections("## a\n\nx\n\n## b\n\ny\n") == []


def test_no_committed_report_shows_a_share_above_100_percent():
    pages = sorted(committed_results().rglob("*.md"))
    assert any(p.name == "ROOFLINE.md" for p in pages)
    found = {str(p.relative_to(committed_results())): bad for p in pages if (bad := shares_above_100(p.read_text()))}
    assert found == {}
    assert shares_above_100("| 158% · 371 GFLOP/s |") == ["158% · 371 GFLOP/s"]  # the check sees one


def test_the_published_table_against_the_a100_needs_no_result(tmp_path):
    from test_table import make

    results = write_all(tmp_path, [make("jax", "bert", "fit", 32, status="error", message="boom")])
    render(results, results / "RESULTS.md")
    assert "[ROOFLINE.md](ROOFLINE.md)" in (results / "RESULTS.md").read_text()
    roofline = (results / "ROOFLINE.md").read_text()
    assert "## The published table against the A100's limits" in roofline and "## 1. " not in roofline


def test_html_a_result_recorded_from_its_machine_is_shown_not_rendered(tmp_path):
    from test_table import CPU, make

    machine = {**CPU, "os": "Linux <img src=x onerror=alert(1)>", "cpu": "AMD <b>EPYC</b>"}
    results = write_all(tmp_path, [make("jax", "bert", "fit", 2, 10.0, profile="smoke", machine=machine)])
    render(results, results / "RESULTS.md")
    provenance = (results / "PROVENANCE.md").read_text()
    assert "<img" not in provenance and "<b>" not in provenance, provenance
    assert "Linux &lt;img src=x onerror=alert(1)&gt;" in provenance and "AMD &lt;b&gt;EPYC&lt;/b&gt;" in provenance


def test_a_reason_that_several_verdicts_give_is_said_once_under_the_table():
    from bench.base.tables import reasons_once

    rows = [["a", "inconclusive (one process (a column))"], ["b", "inconclusive (one process (a column))"],
            ["c", "holds"], ["d", "does not hold (its own reason)"]]  # fmt: skip
    said, notes = reasons_once(rows, 1)
    assert [r[1] for r in said] == ["inconclusive [1]", "inconclusive [1]", "holds", "does not hold (its own reason)"]
    assert notes == ["[1] one process (a column)"]


def test_a_study_matched_by_the_machines_label_is_said_once_naming_both_tables():
    from bench.report.sections import Rendered
    from bench.studies.noise.page import LABEL_MATCH_NOTE, TITLE
    from bench.studies.table import studies

    said = "This machine's noise study: 0 of 16 pairs. All figures: [NOISE.md](noise/NOISE.md)."
    part = Rendered(main=[], per_machine=[(TITLE, "CPU X, processor ab12", [said, ""]),
                                          (TITLE, "CPU X", [said.removesuffix(".") + LABEL_MATCH_NOTE + ".", ""]),
                                          (TITLE, "CPU Y", ["Another study.", ""])])
    text = "\n".join(studies([part], published=False))
    assert text.count(said.removesuffix(".")) == 1 and "### " + TITLE + " — CPU X\n" not in text
    assert "The tables of CPU X, which recorded no processor, take it too" in text
    assert "### " + TITLE + " — CPU Y" in text and "Another study." in text
