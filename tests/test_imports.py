"""make lint's import rules, tried on copies of the checkout: the checkout keeps them, and a copy that breaks one (an
upward import, an import cycle closed inside a function, a module placed in no layer, a study's worker reaching the
orchestration, one command line importing another) fails make lint, which names the modules. Whichever program make
lint checks them with, these hold."""
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO

# -o env-tools: the tools env these tests run in is the one that lints; nothing is built in the copy.
LINT = ["make", "-o", "env-tools", "--no-print-directory", "lint", f"TOOLS_PY={sys.executable}"]


def checkout_copy(root: Path) -> Path:
    """What make lint reads: the package, scripts/, mk/ and every file at the checkout's top (the Makefile, ruff's
    and the import rules' configuration)."""
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    for name in ("bench", "scripts", "mk"):
        shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in {line for line in tracked.splitlines() if "/" not in line}:
        shutil.copy(REPO / name, root / name)
    return root


def module_file(root: Path, module: str) -> Path:
    path = root.joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def add_to(root: Path, module: str, code: str) -> None:
    with module_file(root, module).open("a") as f:
        f.write(code)


def named(out: str, module: str) -> bool:
    """The module named in make lint's words: in full, or after its package's name as `.name`."""
    return module in out or f".{module.rsplit('.', 1)[1]} " in out


def lint(root: Path) -> tuple[int, str]:
    out = subprocess.run(LINT, cwd=root, capture_output=True, text=True)
    return out.returncode, out.stdout + out.stderr


def test_the_checkout_keeps_the_import_rules(tmp_path):
    code, out = lint(checkout_copy(tmp_path))
    assert code == 0, out


def test_an_upward_import_inside_a_function_fails_make_lint_naming_both_modules(tmp_path):
    """The catalogue's work counts importing the report's legend: ruff-clean, no cycle, one layer broken."""
    root = checkout_copy(tmp_path)
    add_to(root, "bench.catalogue.work", "\n\ndef legend():\n    from bench.report.markdown import LEGEND\n\n "
                                         "   return LEGEND\n")
    code, out = lint(root)
    assert code != 0 and "bench.catalogue.work" in out and "bench.report.markdown" in out, out


def test_an_import_cycle_closed_inside_a_function_fails_make_lint_naming_its_modules(tmp_path):
    """The statistics importing the clock, which imports them: one layer, a cycle all the same."""
    root = checkout_copy(tmp_path)
    add_to(root, "bench.base.stats", "\n\ndef timer():\n    from bench.base.timing import StepTimer\n\n    return "
                                     "StepTimer\n")
    code, out = lint(root)
    assert code != 0 and named(out, "bench.base.stats") and named(out, "bench.base.timing"), out


def test_a_module_placed_in_no_layer_fails_make_lint_naming_it(tmp_path):
    root = checkout_copy(tmp_path)
    module_file(root, "bench.stray").write_text('"""A module nobody placed."""\n')
    code, out = lint(root)
    assert code != 0 and "bench.stray" in out, out


def test_a_study_s_worker_reaching_the_orchestration_fails_make_lint_naming_both(tmp_path):
    """The grid's worker, which runs inside a framework's environment, importing the runner."""
    root = checkout_copy(tmp_path)
    added = "\n\ndef runner():\n    from bench.run.runner import run_cells\n\n    return run_cells\n"
    add_to(root, "bench.studies.grid.worker", added)
    code, out = lint(root)
    assert code != 0 and "bench.studies.grid.worker" in out and "bench.run.runner" in out, out


def test_a_command_line_importing_another_fails_make_lint_naming_both(tmp_path):
    """python -m bench taking the environments' command line (scripts/envs.py's): each stands on its own."""
    root = checkout_copy(tmp_path)
    add_to(root, "bench.cli", "\n\ndef envs_main():\n    from bench.envs.cli import main\n\n    return main\n")
    code, out = lint(root)
    assert code != 0 and "bench.cli" in out and "bench.envs.cli" in out, out
