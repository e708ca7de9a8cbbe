"""Adding a model is adding its folder (docs/ADDING_A_MODEL.md): a copy of the package gets the worked example,
tests/new_model/tiny_mlp/, and nothing else; the registry, the matrix tests, `bench plan` and the report take it,
and the tests it changes (those generated per model, those reading the model list) pass in a copy of the checkout
with the model added."""
import ast
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from committed import committed_results
from conftest import REPO, VENVS

from bench.catalogue.backends import BACKENDS

EXAMPLE = REPO / "tests" / "new_model" / "tiny_mlp"
COMMITTED_RESULT = (
    committed_results() / "smoke" / "cpu-amd-epyc-2-cores--64dc9908f650" / "jax__bert__fit__bs2__default.json"
)  # HEAD's


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """The package and its tests, copied, with the example model's folder added to bench/models/."""
    root = tmp_path_factory.mktemp("checkout")
    skip = shutil.ignore_patterns("__pycache__", "new_model")
    shutil.copytree(REPO / "bench", root / "bench", ignore=skip)
    shutil.copytree(REPO / "tests", root / "tests", ignore=skip)
    shutil.copy(REPO / "pytest.ini", root)
    shutil.copytree(REPO / "docs" / "schema", root / "docs" / "schema")  # the result files are validated against it
    # (already there where this runs in a checkout that has the model added: the whole-suite test's)
    shutil.copytree(EXAMPLE, root / "bench" / "models" / "tiny_mlp", ignore=skip, dirs_exist_ok=True)
    return root


def python(checkout: Path, code: str, **env) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(checkout), **env},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_the_registry_plans_the_new_models_cells_on_every_backend(checkout):
    got = json.loads(
        python(
            checkout,
            """
import json
from bench.catalogue.registry import MODELS, get_model, paper_models, plan_cells
cells = plan_cells("smoke", models=["tiny_mlp"])
print(json.dumps({"models": MODELS, "paper": paper_models(), "cells": [c.key for c in cells],
                  "why": [get_model("tiny_mlp").why_cell_unsupported(c) for c in cells],
                  "settings": get_model("tiny_mlp").expected_settings(cells[0])}))
""",
        )
    )
    assert "tiny_mlp" in got["models"] and "tiny_mlp" in got["paper"]  # found by its folder; bench-all runs it
    columns = sum(len(b.variants) for b in BACKENDS.values())
    assert len(got["cells"]) == 2 * columns and "native-torch__tiny_mlp__fit__bs2__compiled" in got["cells"]
    assert got["why"] == [None] * len(got["cells"])  # both implementations found: no cell is NA
    assert got["settings"] == {"optimizer": "Adam", "parameters": 16 * 32 + 32 * 32 + 32 * 4 + 2 * 32 + 4}


def test_the_matrix_tests_generate_the_new_models_cells(checkout):
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "tests/test_matrix.py"],
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(checkout)},
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    collected = [line for line in out.stdout.splitlines() if "tiny_mlp" in line and "stack-2024" not in line]
    assert "tests/test_matrix.py::test_smoke_cell[jax__tiny_mlp__predict__bs2__default]" in collected
    assert len(collected) == 2 * sum(len(b.variants) for b in BACKENDS.values())


def test_the_report_shows_the_new_models_rows(checkout, tmp_path):
    results = tmp_path / "results"
    out = python(
        checkout,
        f"""
import dataclasses
from pathlib import Path
from bench.studies.table import render
from bench.record.results import load
result = load(Path({str(COMMITTED_RESULT)!r}))  # a real result, made the new model's
result = dataclasses.replace(result, cell=dataclasses.replace(result.cell, model="tiny_mlp"))
result.write(Path({str(results)!r}))
render(Path({str(results)!r}), Path({str(results / "RESULTS.md")!r}), readme=None)
""",
    )
    page = (results / "RESULTS.md").read_text()
    assert "| Tiny MLP fit " in page, out + page[:3000]


@pytest.mark.envs
def test_bench_plan_plans_the_new_model_by_its_own_rule(checkout, tmp_path):
    """The plan counts the new model's parameters in its families' envs, as it does every model's, and applies
    the rule in its folder: the registry's model list is the plan's, restricted here to the new model to be quick."""
    venvs = tmp_path / "venvs"
    venvs.mkdir()
    for env in ("native-torch", "jax"):
        if not (VENVS / env / "bench-env.json").exists():
            pytest.skip(f"needs the {env} env (make env BACKEND={env})")
        (venvs / env).symlink_to(VENVS / env)  # the real envs; the count cache goes to this folder, not theirs
    got = json.loads(
        python(
            checkout,
            f"""
import json
from pathlib import Path
import bench.plan
from bench.catalogue.registry import plan_cells
bench.plan.plan_cells = lambda profile, **kw: plan_cells(profile, models=["tiny_mlp"], **kw)
plan, written = bench.plan.run("smoke", Path({str(tmp_path / "results")!r}), echo=lambda line: None)
print(json.dumps(plan))
""",
            BENCH_VENVS_DIR=str(venvs),
        )
    )
    by_key = {c["key"]: c for c in got["cells"]}
    parameters = 16 * 32 + 32 * 32 + 32 * 4 + 2 * 32 + 4
    for key in ("jax__tiny_mlp__fit__bs2__default", "native-torch__tiny_mlp__fit__bs2__eager"):
        entry = by_key[key]
        assert entry["parameters"] == entry["trainable_parameters"] == parameters, entry
        assert entry["activation_formula"] == "mlp" and entry["activations_bytes"] == 2 * (2 * 32 + 4) * 4, entry
    assert by_key["keras2__tiny_mlp__predict__bs2__default"]["counts_note"]  # keras2 reuses the Keras 3 count
    assert "mlp" in got["activation_formulas"]


def checkout_copy(root: Path) -> None:
    """The checkout as git sees it (tracked files and untracked ones not ignored, as they are in the work tree), with
    the envs linked in: .venvs itself is the copy's own, so what a test writes there (the plan's count cache) stays
    in it."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, capture_output=True, check=True,
    ).stdout.decode().split("\0")
    for name in filter(None, listed):
        if name.split("/")[0] == ".venvs":  # a linked .venvs (a worktree's) is no directory to .gitignore's `.venvs/`
            continue
        source, target = REPO / name, root / name
        if source.is_symlink() or source.is_file():  # a deleted file git still lists is left out
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target, follow_symlinks=False)
    (root / ".venvs").mkdir()
    for env in VENVS.iterdir() if VENVS.is_dir() else ():
        if env.is_dir():
            (root / ".venvs" / env.name).symlink_to(env.resolve())


def commit(root: Path) -> None:
    """A repository of the copy's own, everything committed (results record their commit and whether it was dirty)."""
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "the checkout with a new model"]):
        subprocess.run([*git, *command], cwd=root, check=True, capture_output=True)


# The tests a new model changes: those generated per model (their ids name it) and those that read the registry's model
# list. Every other test knows no model, and runs in the checkout itself.
LIST_NAMES = {"MODELS", "paper_models", "discover_models"}
REGISTRY = "bench.catalogue.registry"
SELECTION = "not slow and not wall_clock and not envs"


def reads_the_model_list(node: ast.AST, imported: set[str]) -> bool:
    """Whether `node` uses the registry's model list: a name imported from the registry (MODELS, its listing
    functions), or an attribute of one of those names (registry.MODELS; any module's, to err towards running more). A
    bare MODELS of a study's own (the grid's) is not the registry's."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id in imported:
            return True
        if isinstance(sub, ast.Attribute) and sub.attr in LIST_NAMES:
            return True
    return False


def list_readers(path: Path) -> list[str]:
    """What of a test file reads the model list: the whole file where code outside its tests does (a helper, a
    fixture, a module constant), else each test function that does; none where nothing does."""
    tree = ast.parse(path.read_text())
    imported = {alias.asname or alias.name for sub in ast.walk(tree) if isinstance(sub, ast.ImportFrom)
                and sub.module == REGISTRY for alias in sub.names if alias.name in LIST_NAMES}  # fmt: skip
    name = f"tests/{path.name}"
    tests = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)) or not reads_the_model_list(node, imported):
            continue
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            tests.append(f"{name}::{node.name}")
        else:
            return [name]
    return tests


def model_tests(root: Path, model: str) -> tuple[list[str], list[str]]:
    """The tests of the copy that read the registry's model list (files or test functions), and the ids of the tests
    generated for `model`."""
    readers = [found for p in sorted((root / "tests").glob("test_*.py")) if p.name != Path(__file__).name
               for found in list_readers(p)]  # fmt: skip
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "tests", "-m", SELECTION, "-k", model, "--collect-only", "-q", "-p",
         "no:cacheprovider"],
        cwd=root, capture_output=True, text=True, timeout=600, env=copy_environment(),
    )  # fmt: skip
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-3000:]
    return readers, [line for line in collected.stdout.splitlines() if "::" in line]


def copy_environment() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BENCH_VENVS_DIR")}


@pytest.mark.slow
@pytest.mark.envs
@pytest.mark.duration_s(120)
def test_the_tests_a_new_model_changes_pass_with_it(tmp_path):
    """Nothing outside the folder names a model: with the example added exactly as the doc says (its folder, and
    nothing else), the tests it changes pass: those generated per model and those reading the registry's model list
    (discovery, its cells, its table row), bar two kinds left out: those marked wall_clock, which time real work
    and know nothing of the models, and those marked envs, which run named cells of named models in the framework
    environments (the one that plans over the registry's models is this file's own plan test, on the same copy).
    The rest of the suite knows no model: make test runs it in the checkout."""
    root = tmp_path / "checkout"
    checkout_copy(root)
    shutil.copytree(EXAMPLE, root / "bench" / "models" / "tiny_mlp", ignore=shutil.ignore_patterns("__pycache__"))
    commit(root)
    readers, generated = model_tests(root, "tiny_mlp")
    assert generated, "no test was generated for the new model"
    chosen = readers + [name for name in generated if name.split("::")[0] not in readers
                        and name.split("[")[0] not in readers]  # fmt: skip
    report = tmp_path / "junit.xml"
    out = subprocess.run(
        [sys.executable, "-m", "pytest", *chosen, "-m", SELECTION, "-q", "-p", "no:cacheprovider",
         f"--junitxml={report}"],
        cwd=root, capture_output=True, text=True, timeout=1800, env=copy_environment(),
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-3000:]
    cases = [case.get("name", "") for case in ET.parse(report).iter("testcase")]
    assert any("tiny_mlp" in name for name in cases), "no test was generated for the new model"
    assert len(cases) > len(generated), "only the generated tests ran: the model list's readers did not"
