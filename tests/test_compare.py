"""make compare: the committed smoke results against a copy with some medians scaled."""
import itertools
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from committed import committed_results

from bench import compare
from bench.errors import BenchError
from bench.report.load import COLUMNS
from bench.results import Result, load_all

REPO = Path(__file__).resolve().parent.parent
COMMITTED = committed_results()  # HEAD's, not what a user's own run left in results/
SCALED = {"jax__bert__fit__bs2__default": 3.0, "native-torch__gemma__fit__bs2__eager": 0.25}
DROPPED = "torch__sam__fit__bs1__default"


def scaled_copy(source: Path, dest: Path) -> Path:
    """`source`'s results re-written: two cells' step times scaled, one cell dropped, one cell added."""
    for result in load_all(source):
        key = result.cell.key
        if key == DROPPED:
            continue
        factor = SCALED.get(key, 1.0)
        runs = [replace(r, timed_ms=[t * factor for t in r.timed_ms]) for r in result.runs]
        Result(result.cell, runs, result.unit, result.provenance, result.created_at).write(dest)
        if key == "jax__bert__predict__bs2__default":  # a batch size only B has
            extra = replace(result.cell, batch_size=7)
            Result(extra, result.runs, result.unit, result.provenance, result.created_at).write(dest)
    return dest


def todays_copy(dest: Path) -> Path:
    """The committed smoke results of today's stack (the 2024 stack's pair with each other, never with these; the
    full-size CPU run in results/cpu-full is another profile)."""
    for result in load_all(COMMITTED):
        if result.cell.stack == "today" and result.cell.profile == "smoke":
            result.write(dest)
    return dest


def todays_ok() -> int:
    """The committed today's-stack smoke cells that are ok (a cell that re-ran unsteady compares as not the same)."""
    ok = sum(r.status == "ok" for r in load_all(COMMITTED) if r.cell.stack == "today" and r.cell.profile == "smoke")
    assert ok >= 60
    return ok


@pytest.fixture(scope="module")
def comparison(tmp_path_factory):
    a = todays_copy(tmp_path_factory.mktemp("a") / "results")
    return compare.compare(a, scaled_copy(a, tmp_path_factory.mktemp("b") / "results"))


def test_the_two_stacks_cells_pair_only_with_their_own_stack():
    pairs = compare.compare(COMMITTED, COMMITTED).pairs
    stacks = {p.key.stack for p in pairs}
    assert stacks == {"today", "2024"} and all(p.a.cell.stack == p.b.cell.stack == p.key.stack for p in pairs)


def pair(comparison, key: str):
    return next(p for p in comparison.pairs if p.a.cell.key == key)


def test_scaled_cells_show_their_ratio_and_are_not_the_same(comparison):
    slower = pair(comparison, "jax__bert__fit__bs2__default")
    assert slower.ratio == pytest.approx(3.0)
    low, high = slower.interval
    a, b = slower.a.summary(), slower.b.summary()
    assert (low, high) == pytest.approx((b.p10 / a.p90, b.p90 / a.p10)) and low < 3.0 < high
    assert not slower.same and slower.text().startswith("3.00× (") and "same" not in slower.text()
    faster = pair(comparison, "native-torch__gemma__fit__bs2__eager")
    assert faster.ratio == pytest.approx(0.25) and not faster.same


def test_unchanged_cells_are_the_same(comparison):
    unchanged = pair(comparison, "jax__sam__fit__bs1__default")
    assert unchanged.ratio == pytest.approx(1.0) and unchanged.same and " same" in unchanged.text()
    assert sum(p.same for p in comparison.pairs) == todays_ok() - 2 - 1  # every ok cell but the scaled and the dropped


def test_cells_in_only_one_set_are_listed(comparison):
    assert [k.backend + " " + k.model for k in comparison.only_a] == ["torch sam"]
    assert [(k.model, k.batch) for k in comparison.only_b] == [("bert", 7)]
    assert len(comparison.pairs) == 71


def test_unsupported_cells_show_both_statuses(comparison):
    na = pair(comparison, "keras2__gemma__fit__bs2__default")
    assert na.ratio is None and na.text() == "A NA / B NA"


def test_markdown_follows_the_published_layout(comparison):
    text = compare.markdown(comparison, "compare.png")
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))  # the first table (others follow)
    table = list(itertools.takewhile(lambda line: line.startswith("|"), lines[start:]))
    headers = [h.strip() for h in table[0].strip("|").split("|")]
    assert headers == ["Model / task", "Batch", *[c.header for c in COLUMNS]]
    labels = [line.strip("|").split("|")[0].strip() for line in table[2:]]
    assert labels[0] == "SegmentAnything fit" and labels[-1] == "Mistral generate"
    assert labels.index("BERT fit") < labels.index("Gemma fit")  # the published order, model by model
    bert_fit = next(line for line in table if line.startswith("| BERT fit "))
    jax_column = 2 + [c.header for c in COLUMNS].index("Keras 3 (JAX)")
    assert bert_fit.strip("|").split("|")[jax_column].strip().startswith("3.00×")
    assert "## Only in A" in text and "torch sam fit batch=1" in text and "## Only in B" in text
    assert f"71 cells in both, {todays_ok() - 3} the same, 1 only in A, 1 only in B." in text
    assert "![B / A per cell](compare.png)" in text


def test_cli_prints_markdown_and_writes_both_files(comparison, tmp_path):
    b_dir = comparison.b_dir
    out = subprocess.run(
        [sys.executable, "-m", "bench", "compare", str(COMMITTED), str(b_dir), "--out-dir", str(tmp_path / "cmp")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == (tmp_path / "cmp" / "compare.md").read_text() and "3.00×" in out.stdout
    assert (tmp_path / "cmp" / "compare.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_empty_or_missing_folder_is_an_error(tmp_path):
    with pytest.raises(BenchError, match="no results folder"):
        compare.compare(COMMITTED, tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BenchError, match="no result files"):
        compare.compare(tmp_path / "empty", COMMITTED)
