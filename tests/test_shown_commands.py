"""Every `make` command the README, its three guides (docs/GUIDE_*.md) and `make help` show, tried as a new user
would type it: the cheap ones run for real
(a cell at smoke scale, or refused in one line with its reason, as a paper cell on a CPU is), the long ones (a
matrix, a study, a download) read by `make -n` here and run by the tests named beside them."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from make_output import said_lines

from bench.record.results import load_all

REPO = Path(__file__).resolve().parent.parent
COMMAND = re.compile(r"\bmake ([a-z][a-z0-9-]*)((?: +[A-Z_]+=[^\s`|;()\]\[]*)*)")
CODE = re.compile(r"```.*?```|`[^`\n]+`", re.S)  # the README's code: fenced blocks and inline spans

# The targets not run for real here, each with why and where its work is tested instead.
NOT_RUN_HERE = {
    "bench-all": "the whole matrix (53 min at smoke): its cells run in tests/test_runner.py and the CI tiers",
    "bench-cpu-full": "hours at full size: tests/test_cpu_full.py runs its plan",
    "bench-cpu-mid": "hours at paper widths: tests/test_cpu_full.py runs its plan",
    "bench-container": "needs podman or docker: the container tier",
    "image": "needs podman or docker: the container tier",
    "noise": "15-71 min: tests/test_noise.py runs a tiny study end to end",
    "overhead": "minutes per column: tests/test_overhead.py runs SIZE=smoke",
    "grid": "minutes per point: tests/test_grid.py runs GRID=smoke",
    "tuning": "hours: the tuning study's cells are run by tests/test_tuning.py",
    "sweep": "builds an env per release from PyPI: tests/test_sweep.py",
    "bisect": "builds an env per release from PyPI: tests/test_sweep.py",
    "bisect-commits": "re-runs a cell at commits, each in a worktree: tests/test_history_commits.py",
    "ab": "re-runs a cell on two sides, a process an invocation: tests/test_ab.py",
    "wheelhouse": "downloads from PyPI: tests/test_wheelhouse_for.py",
    "lock": "re-resolves every lock from PyPI",
    "envs": "builds the five envs: .ci/run does before the tests",
    "env": "builds an env: .ci/run does before the tests",
    "test": "the test suite itself",
    "check": "hadolint and nix: .ci/run's checks",
    "submit": "needs a Slurm cluster: tests/test_slurm.py starts one",
}


def shown_commands() -> list[tuple[str, tuple[str, ...]]]:
    """(target, VAR=value words) of every make command the README, the guides and `make help` show, once each."""
    help_text = subprocess.run(["make", "--no-print-directory", "help"], cwd=REPO, capture_output=True, text=True,
                               timeout=60).stdout  # fmt: skip
    found = {}
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("GUIDE_*.md"))]
    readme_code = "\n".join(code for page in pages for code in CODE.findall(page.read_text()))
    for text in (readme_code, help_text):
        for target, words in COMMAND.findall(text):
            found.setdefault((target, tuple(words.split())), None)
    return list(found)


def help_targets() -> set[str]:
    out = subprocess.run(["make", "--no-print-directory", "help"], cwd=REPO, capture_output=True, text=True,
                         timeout=60).stdout  # fmt: skip
    return {line.split()[0] for line in out.splitlines() if line.startswith("  ") and line.split()}


def filled(words: tuple[str, ...], tmp: Path) -> list[str]:
    """The placeholders a user replaces (<dir>, <minutes>, x ...) with what they stand for, here."""
    values = {"A": str(tmp / "a"), "B": str(tmp / "b"), "BUDGET": "1", "FOR": sys.executable, "BACKEND": "jax",
              "MODEL": "bert", "CELL": "jax__bert__predict__bs2__default"}  # fmt: skip
    out = []
    for word in words:
        name, _, value = word.partition("=")
        placeholder = value.startswith("<") or value in ("", "x", "y") or value.endswith(">")
        out.append(f"{name}={values.get(name, value)}" if placeholder else word)
    return out


@pytest.mark.skipif(not shutil.which("make"), reason="GNU make is not installed")
def test_every_shown_command_names_a_target_make_help_lists_and_a_variable_make_reads():
    targets, makefiles = help_targets(), (REPO / "Makefile").read_text() + "".join(
        p.read_text() for p in (REPO / "mk").glob("*.mk"))  # fmt: skip
    commands = shown_commands()
    assert len(commands) >= 20, commands  # the README's and make help's examples were found
    for target, words in commands:
        assert target in targets, f"make {target}: shown, but not a target make help lists"
        for word in words:
            name = word.partition("=")[0]
            assert f"$({name})" in makefiles or f"{name} ?=" in makefiles, f"make {target} {word}: make never reads it"


@pytest.mark.skipif(not shutil.which("make"), reason="GNU make is not installed")
def test_every_long_command_shown_reads_as_make_would_run_it(tmp_path):
    """`make -n`: the variables pass make's checks and the recipe forms; refused in one line where that is the point."""
    for target, words in shown_commands():
        if target not in NOT_RUN_HERE or target == "test":
            continue
        out = subprocess.run(["make", "-n", "--no-print-directory", target, *filled(words, tmp_path),
                              f"RESULTS={tmp_path / 'results'}"],
                             cwd=REPO, capture_output=True, text=True, timeout=120)  # fmt: skip
        said = [line for line in out.stderr.splitlines() if line.strip()]
        assert out.returncode == 0 or len(said) == 1, (target, words, out.stdout[-2000:], out.stderr)


def shared_run_of(args: list[str]) -> str | None:
    """The shared smoke run (tests/shared_run.py RUNS) whose cells a `make bench` example of one task of BERT runs,
    None for any other example (it runs its own)."""
    from shared_run import RUNS

    given = dict(word.split("=", 1) for word in args)
    if given.get("MODEL") != "bert" or given.get("TASK") != "predict" or set(given) - {"BACKEND", "MODEL", "STACK",
                                                                                    "TASK", "REPEATS", "PROFILE"}:
        return None
    if given.get("REPEATS") != "1" or given.get("PROFILE", "smoke") != "smoke":
        return None
    wanted = (given.get("BACKEND"), given.get("STACK", "today"))
    return next((name for name, run in RUNS.items() if run == wanted), None)


CHEAP = {"doctor", "table", "export", "validate", "plan", "compare", "help", "help-vars", "gpu-check", "env-info",
         "clean-results", "docs", "check-locks", "history", "history-triage"}  # fmt: skip


@pytest.mark.envs
@pytest.mark.slow
@pytest.mark.duration_s(400)
@pytest.mark.skipif(not shutil.which("make"), reason="GNU make is not installed")
def test_every_cheap_command_shown_runs_as_shown(tmp_path, shared_smoke):
    """As a user types it, into a fresh results folder: exit 0, or a one-line refusal saying why (a paper cell or the
    GPU check on a CPU). `make bench` examples of BERT find their cells measured by the shared smoke run of the same
    command at the smoke profile (tests/shared_run.py), copied in: run with RESUME=1, they must plan exactly those
    cells (the default profile here is smoke) and skip each; any other `make bench` example runs its cells."""
    ran = []
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for target, words in shown_commands():
        if target not in CHEAP | {"bench"}:  # `make bench` examples run as shown, at one task each
            assert target in NOT_RUN_HERE, f"make {target}: shown, neither run nor said why not"
            continue
        args = filled(words, tmp_path)
        if target == "bench" and not any(w.startswith("MODEL=") for w in args):
            continue  # `make bench` alone is the form, shown with its variables elsewhere
        if any(w == "ENV=current" for w in args):
            args.append(f"PYTHON={REPO / '.venvs' / 'native-torch' / 'bin' / 'python'}")
        if target == "bench" and not any(w.startswith("TASK=") for w in args):
            args.append("TASK=predict")  # one task of the model: the example's form, at a test's cost
        if target == "bench" and not any(w.startswith("REPEATS=") for w in args):
            args.append("REPEATS=1")  # one process a cell: the form is the test, the process spread is not
        shared = shared_run_of(args) if target == "bench" else None
        if shared:
            shared = shared_smoke(shared)
            assert shared.returncode == 0, shared.output[-3000:]
            shutil.copytree(shared.results, tmp_path / "results", dirs_exist_ok=True)
            args.append("RESUME=1")
        out = subprocess.run(["make", "--no-print-directory", target, *args, f"RESULTS={tmp_path / 'results'}"],
                             cwd=REPO, capture_output=True, text=True, timeout=900)  # fmt: skip
        said = said_lines(out.stderr)
        doctor = [line for line in out.stdout.splitlines() if line.startswith("FAIL")]  # the preflight's refusal
        refused = len(said) == 1 or (doctor and "fix: " in out.stdout)
        assert out.returncode == 0 or refused, (target, args, out.stdout[-3000:], out.stderr[-3000:])
        if shared and out.returncode == 0:
            measured = [r for r in load_all(shared.results) if r.cell.task == "predict"]
            assert f"skipped (resume): {len(measured)} cells already measured" in out.stdout, out.stdout[-3000:]
            assert "[cell]" not in out.stdout and "measured again" not in out.stdout, out.stdout[-3000:]
        ran.append((target, out.returncode))
    for path in (tmp_path / "results").rglob("*.json"):
        if "history" not in path.parts and "logs" not in path.parts and not path.name.startswith("plan"):
            status = json.loads(path.read_text()).get("status")
            assert status in (None, "ok", "unsupported"), (path, status)  # every cell a shown command ran measured
    assert any(t == "bench" and code == 0 for t, code in ran), ran
