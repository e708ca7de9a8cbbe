"""No import cycle among the modules of bench/, and the declared layer order kept (scripts/import_cycles.py, also run
by `make lint`)."""
import importlib.util
import shutil
import subprocess
import sys

from conftest import REPO

spec = importlib.util.spec_from_file_location("import_cycles", REPO / "scripts" / "import_cycles.py")
import_cycles = importlib.util.module_from_spec(spec)
spec.loader.exec_module(import_cycles)


def test_bench_has_no_import_cycle():
    graph = import_cycles.import_graph(REPO)
    assert "bench.registry" in graph and "bench.plan.memory" in graph  # it found the package, subpackages too
    assert import_cycles.cycles(graph) == []


def test_a_deferred_import_still_closes_a_cycle_and_the_script_names_it(tmp_path):
    package = tmp_path / "bench"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text(
        "from bench.sub import leaf\n"
    )  # a package importing its own module: no cycle
    (package / "sub" / "leaf.py").write_text("from bench.sub import leaf as _  # noqa\n")
    (package / "a.py").write_text("from bench.b import thing\n")
    (package / "b.py").write_text("def thing():\n    from bench import a\n    return a\n")
    assert import_cycles.cycles(import_cycles.import_graph(tmp_path)) == [["bench.a", "bench.b"]]
    out = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "import_cycles.py"), str(tmp_path)], capture_output=True, text=True
    )
    assert out.returncode == 1 and "bench.a -> bench.b; bench.b -> bench.a" in out.stdout


def test_bench_keeps_its_declared_layer_order():
    import tomllib

    declared = tomllib.loads((REPO / import_cycles.LAYERS).read_text())
    assert [layer["name"] for layer in declared["layer"]][:2] == ["foundation", "catalogue"]
    assert all(entry["why"].strip() for entry in declared["allowed"])  # each exception says why
    assert import_cycles.layer_problems(import_cycles.import_graph(REPO), declared) == []


def test_the_layer_rule_names_upward_imports_unplaced_modules_crossed_groups_and_stale_exceptions():
    graph = {
        "bench": set(),
        "bench.low": {"bench.high"},
        "bench.high": {"bench.low"},
        "bench.a.cli": {"bench.b.cli"},
        "bench.b.cli": set(),
        "bench.stray": set(),
    }
    declared = {
        "layer": [
            {"name": "low", "modules": ["bench", "bench.low"]},
            {"name": "high", "modules": ["bench.high", "bench.*.cli"]},
        ],
        "independent": [{"name": "parsers", "modules": ["bench.a.cli", "bench.b.cli"]}],
        "allowed": [{"importer": "bench.high", "imported": "bench.stray", "why": "no longer imported"}],
    }
    problems = import_cycles.layer_problems(graph, declared)
    assert problems == [
        "bench.stray is in no layer of bench/layers.toml: add it to the layer it belongs to",
        "upward import: bench.low (low) imports bench.high (high); move the code down, or allow it in "
        "bench/layers.toml with a reason",
        "bench.a.cli imports bench.b.cli: parsers are independent",
        "allowed in bench/layers.toml, yet no such import breaks a layer: remove bench.high -> bench.stray",
    ]


def test_make_lint_fails_when_a_copy_of_the_checkout_gains_an_upward_import(tmp_path):
    """The catalogue's work counts importing the report's number format: ruff-clean, no cycle, one layer broken."""
    for name in ("bench", "scripts", "mk"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("Makefile", "ruff.toml"):
        shutil.copy(REPO / name, tmp_path / name)
    # -o env-tools: the tools env this test runs in is the one to lint with; nothing is built in the copy.
    lint = ["make", "-o", "env-tools", "--no-print-directory", "lint", f"TOOLS_PY={sys.executable}"]
    clean = subprocess.run(lint, cwd=tmp_path, capture_output=True, text=True)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    with (tmp_path / "bench" / "work.py").open("a") as f:
        f.write(
            "\n\ndef number_format():\n    from bench.report.text import fmt_ms\n\n    return fmt_ms\n"
        )
    broken = subprocess.run(lint, cwd=tmp_path, capture_output=True, text=True)
    assert broken.returncode != 0
    assert "upward import: bench.work (catalogue) imports bench.report.text (studies and report)" in broken.stdout
