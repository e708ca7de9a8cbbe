"""Adding a study is adding its folder and registering it (docs/ADDING_A_STUDY.md): a copy of the package gets the
worked example, tests/new_study/toy/, and its name in bench/studies/registry.py, and nothing else; the front door
takes its verb and RESULTS.md its section, every other line of the page unchanged."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from committed import committed_results
from conftest import REPO

EXAMPLE = REPO / "tests" / "new_study" / "toy"
COMMITTED_RESULT = (
    committed_results() / "smoke" / "cpu-amd-epyc-2-cores--64dc9908f650" / "jax__bert__fit__bs2__default.json"
)  # HEAD's
REGISTRY = Path("bench") / "studies" / "registry.py"


def register(source: str, name: str) -> str:
    """The registry's text with one more study: its name on the import line and last in STUDIES."""
    source, imported = re.subn(r"^(from bench\.studies import .+)$", rf"\1, {name}", source, count=1, flags=re.M)
    source, listed = re.subn(r"^(STUDIES = \(.+)\)$", rf"\1, {name})", source, count=1, flags=re.M)
    assert imported == listed == 1, "the registry's import line or STUDIES moved: update register()"
    return source


def copied(root: Path) -> Path:
    """The package (and the result schema its files are validated against) copied under `root`."""
    shutil.copytree(REPO / "bench", root / "bench", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "docs" / "schema", root / "docs" / "schema")
    return root


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """The package copied, with the toy study's folder added to bench/studies/ and registered."""
    root = copied(tmp_path_factory.mktemp("checkout"))
    shutil.copytree(EXAMPLE, root / "bench" / "studies" / "toy", ignore=shutil.ignore_patterns("__pycache__"))
    (root / REGISTRY).write_text(register((REPO / REGISTRY).read_text(), "toy"))
    return root


def with_one_result(results: Path) -> Path:
    """A results folder holding one committed result file, at its place (<profile>/<machine>/<key>.json)."""
    folder = results / COMMITTED_RESULT.parent.parent.name / COMMITTED_RESULT.parent.name
    folder.mkdir(parents=True)
    shutil.copy(COMMITTED_RESULT, folder)
    return results


def bench(root: Path, *args: str, code: str | None = None) -> subprocess.CompletedProcess:
    """`python -m bench ...` (or a script) in that package, as the Makefile runs it."""
    command = ["-c", code] if code is not None else ["-m", "bench", *args]
    return subprocess.run([sys.executable, *command], cwd=root, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(root)})


def test_the_front_door_takes_the_new_study_s_verb(checkout, tmp_path):
    results = with_one_result(tmp_path / "results")
    out = bench(checkout, "toy", "--results-dir", str(results))
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout == f"toy study: 1 result files under {results}\n", out.stdout
    listed = bench(checkout, "--help")
    assert listed.returncode == 0 and re.search(r"^ +toy +the toy study: count", listed.stdout, re.M), listed.stdout
    refused = bench(checkout, "toy", "--no-such-option")
    assert refused.returncode == 2 and "python -m bench toy" in refused.stderr, refused.stderr


def test_results_md_shows_the_new_study_s_section_and_is_otherwise_unchanged(checkout, tmp_path):
    pytest.importorskip("tabulate")
    pytest.importorskip("matplotlib")
    pages = {}
    for name, root in (("before", copied(tmp_path / "plain")), ("after", checkout)):  # both away from results/
        results = with_one_result(tmp_path / name)
        out = bench(root, code=f"from pathlib import Path\nfrom bench.studies.table import render\n"
                               f"render(Path({str(results)!r}), Path({str(results / 'RESULTS.md')!r}), own=set())")
        assert out.returncode == 0, out.stderr[-3000:]
        pages[name] = (results / "RESULTS.md").read_text()
    added = "### Toy study\n\nThe toy study counted 1 rows in this machine's table.\n\n"
    assert added in pages["after"], pages["after"][-3000:]
    assert pages["after"].replace(added, "", 1) == pages["before"]  # its part alone: every other line as it was
