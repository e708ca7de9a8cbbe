"""No import cycle among the modules of bench/ (scripts/import_cycles.py, also run by `make lint`)."""
import importlib.util
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
