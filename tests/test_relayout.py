"""scripts/relayout.py, the move of the package into one folder a layer: what it makes of each kind of reference (an
import, a module imported by name from its package, a dotted name, a path, a glob, the image's COPY line), how it
wraps a line the longer names took past the line length, and which files it refuses to leave unplaced. The inputs are
made up here, so the tests hold before the move and after it."""
import ast
import importlib.util
import sys

import pytest
from conftest import REPO

spec = importlib.util.spec_from_file_location("relayout", REPO / "scripts" / "relayout.py")
relayout = sys.modules["relayout"] = importlib.util.module_from_spec(spec)  # (its dataclass looks itself up)
spec.loader.exec_module(relayout)

FILES = [
    "bench/__init__.py", "bench/stats.py", "bench/cli.py", "bench/report/__init__.py", "bench/report/text.py",
    "bench/report/grid.py", "bench/report/vendor/plotly.js", "bench/grid/__init__.py", "bench/grid/run.py",
    "bench/noise/__init__.py", "bench/noise/study.py", "bench/data/table.csv",
]
MOVES = [
    ("bench/stats.py", "bench/base/stats.py"),
    ("bench/report/grid.py", "bench/studies/grid/page.py"),
    ("bench/report/__init__.py", "bench/studies/table.py"),
    ("bench/grid/__init__.py", "bench/studies/grid/__init__.py"),
    ("bench/grid/run.py", "bench/studies/grid/run.py"),
    ("bench/noise/__init__.py", "bench/studies/noise/__init__.py"),
    ("bench/noise/study.py", "bench/studies/noise/run.py"),
]
REPORT_INIT = "from bench.report import text\n\nSECTIONS = []\n\n\ndef render(folder):\n    return folder\n"


@pytest.fixture
def rewriter():
    return relayout.Rewriter(MOVES, FILES, {}, {}, read=lambda path: REPORT_INIT)


def test_an_import_takes_each_name_from_where_it_now_is(rewriter):
    python = relayout.rewrite_python
    assert python(rewriter, "from bench import stats\n", "x.py") == "from bench.base import stats\n"
    assert python(rewriter, "from bench.stats import mean\n", "x.py") == "from bench.base.stats import mean\n"
    # a module renamed keeps the name its importer uses; a name the moved __init__ defined follows it
    renamed = python(rewriter, "from bench.noise import study\n", "x.py")
    assert renamed == "from bench.studies.noise import run as study\n"
    assert python(rewriter, "def f():\n    from bench.report import render, text\n", "x.py") == (
        "def f():\n    from bench.studies.table import render\n    from bench.report import text\n"
    )
    assert python(rewriter, "import bench.stats\n\nbench.stats.mean([1])\n", "x.py") == (
        "import bench.base.stats\n\nbench.base.stats.mean([1])\n"
    )
    kept = "from bench.report import (  # a comment\n    text,\n)\n"
    assert python(rewriter, kept, "x.py") == kept  # unchanged: its layout and comment kept
    with pytest.raises(relayout.Refused, match="x.py:1"):  # split in two, its comment would be lost
        python(rewriter, "from bench.report import (  # a comment\n    render,\n    text,\n)\n", "x.py")


def test_dotted_names_paths_and_globs_in_text_follow_their_modules(rewriter):
    text = relayout.rewrite_text
    assert text(rewriter, 'monkeypatch.setattr("bench.grid.run.run_grid", f)', "t.py") == (
        'monkeypatch.setattr("bench.studies.grid.run.run_grid", f)'
    )
    assert text(rewriter, "python -m bench.noise.study --rounds 2", "Makefile") == (
        "python -m bench.studies.noise.run --rounds 2"
    )
    # the folder alone, or a file of it the moved __init__ is not, keeps report/'s name; its names follow it
    assert text(rewriter, "bench.report, bench.report.render", "x.md") == "bench.report, bench.studies.table.render"
    assert text(rewriter, "(bench/stats.py, bench/grid/, bench/report/vendor/plotly.js)", "x.md") == (
        "(bench/base/stats.py, bench/studies/grid/, bench/report/vendor/plotly.js)"
    )
    assert text(rewriter, "bench/noise/<x>.py and bench.grid.later", "x.md") == (
        "bench/studies/noise/<x>.py and bench.studies.grid.later"  # a folder moved whole: its glob and a later module
    )
    assert text(rewriter, "see bench/{stats,report/grid}.py.", "x.md") == "see bench/{base/stats,studies/grid/page}.py."
    assert text(rewriter, "bench/data/table.csv, bench.py, bench.toml, mybench.stats", "x.md") == (
        "bench/data/table.csv, bench.py, bench.toml, mybench.stats"
    )
    assert text(rewriter, '__import__("bench.stats").stats.mean', "t.py") == (
        '__import__("bench.base.stats").base.stats.mean'
    )


def test_the_image_copies_each_moved_file_into_its_own_folder():
    moved = "COPY bench/__init__.py bench/base/a.py bench/catalogue/b.py bench/base/c.py bench/"
    assert relayout.regroup_copy(moved) == (
        "COPY bench/__init__.py bench/\n"
        "COPY bench/base/__init__.py bench/base/a.py bench/base/c.py bench/base/\n"
        "COPY bench/catalogue/__init__.py bench/catalogue/b.py bench/catalogue/"
    )
    unmoved = "COPY bench/__init__.py bench/a.py bench/"
    assert relayout.regroup_copy(unmoved) == unmoved


def test_a_line_grown_past_the_line_length_is_wrapped_as_a_reader_would():
    ruff = [str(REPO / ".venvs" / "tools" / "bin" / "python"), "-m", "ruff"]
    long_words = " ".join(["word"] * 30)
    comment = f"# {long_words}\n# and more.\nx = 1\n"
    fitted = relayout.fit_long_lines("x.py", comment, ruff)
    words = [w for w in fitted.split() if w != "#"]
    assert all(len(line) <= 120 for line in fitted.splitlines()) and words == [w for w in comment.split() if w != "#"]
    assert fitted.count("\n") == comment.count("\n")  # the words carried into the comment's next line
    trailing = f"def f():\n    return 1  # {long_words}\n"  # a trailing comment goes above its line
    fitted = relayout.fit_long_lines("x.py", trailing, ruff).splitlines()
    assert fitted[-1] == "    return 1" and all(line.startswith("    # ") and len(line) <= 120 for line in fitted[1:-1])
    docstring = f'def f():\n    """{long_words}."""\n'
    fitted = relayout.fit_long_lines("x.py", docstring, ruff)
    assert all(len(line) <= 120 for line in fitted.splitlines()) and fitted.split() == docstring.split()
    call = "result = compute(" + ", ".join(f"argument_{i}" for i in range(12)) + ")\n"
    fitted = relayout.fit_long_lines("x.py", call, ruff)
    assert all(len(line) <= 120 for line in fitted.splitlines()) and compile(fitted, "x.py", "exec")
    assert fitted.splitlines()[1].startswith(" " * len("result = compute("))  # inside the bracket
    literal = 'f(x, "' + long_words + '")\n'
    fitted = relayout.fit_long_lines("x.py", literal, ruff)
    assert all(len(line) <= 120 for line in fitted.splitlines())
    assert ast.parse(fitted).body[0].value.args[1].value == long_words  # one string still, in two literals
    data = f'TEMPLATE = """\n{long_words}\n"""\n'  # a triple-quoted string that is not a docstring: its lines are data
    with pytest.raises(relayout.Refused, match="x.py:2"):
        relayout.fit_long_lines("x.py", data, ruff)


def test_a_file_of_the_package_that_no_line_places_is_named():
    assert relayout.unplaced(["bench/stray.py", "bench/models/bert/keras.py", "bench/stats.py", "README.md"]) == [
        "bench/stray.py"
    ]

