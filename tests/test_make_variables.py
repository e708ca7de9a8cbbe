"""Every Make variable the README and `make help` name, given what a new user might type: empty, garbage, a list
with a duplicate, a path with a space and non-ASCII, a path that is a file. Each is refused in one line or works,
and none deletes or moves a file the suite did not write. Runs, submissions and grids are --dry-run (nothing is
measured) and no env is built (ENVS_PY=true): what is checked is what make and the CLI do with the value."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fakes import bench_env
from make_output import said_lines

REPO = Path(__file__).resolve().parent.parent

# python, except that a run, a submission or a grid only lists what it would do
DRY_PYTHON = """#!/bin/sh
case "$3" in run|submit|grid) exec {python} "$@" --dry-run;; *) exec {python} "$@";; esac
"""

# target, the variables it needs, and (variable, a valid value) for every variable it takes
BENCH = {"BACKEND": "jax", "MODEL": "bert", "TASK": "predict", "PROFILE": "smoke"}
COMPARE = {"A": "{results}", "B": "{results}", "OUT": "{tmp}/compare.md"}  # OUT: not compare/ in the checkout
CASES = [
    ("bench", BENCH, name, valid)
    for name, valid in [
        *BENCH.items(),
        ("VARIANT", "default"),
        ("STEPS", "2"),
        ("BATCH", "2"),
        ("REPEATS", "1"),
        ("RESUME", "1"),
        ("IGNORE_PLAN", "1"),
        ("JOBS", "1"),
        ("STACK", "today"),
        ("ENV", "locked"),
        ("RESULTS", "{results}"),
        ("AGAINST", "{tmp}/beside"),
        ("MAX_PROCESSES", "4"),
        ("V", "1"),
    ]
] + [
    ("bench", {**BENCH, "PROFILE": "paper"}, "EXACT", "1"),  # the published procedure: the paper profile's
    ("grid", {"GRID": "smoke", "MODEL": "bert", "BACKEND": "jax"}, "GRID", "smoke"),
    *((target, {}, "RESULTS", "{results}") for target in ("table", "export", "validate", "clean-results", "plan")),
    ("validate", {}, "QUARANTINE", "1"),
    ("submit-status", {}, "WAIT", "1"),
    ("submit-status", {}, "JOB", "first"),
    *(("compare", COMPARE, name, "{results}") for name in ("A", "B")),
    ("compare", COMPARE, "OUT", "{tmp}/compare.md"),
    ("compare", COMPARE, "ACROSS", "1"),
    ("submit", BENCH, "FORCE", "1"),
    ("submit", BENCH, "CONTAINER", "1"),
    *(("history", {"CELL": "jax__bert__fit__bs2__default"}, name, valid)
      for name, valid in (("CELL", "jax__bert__fit__bs2__default"), ("THRESHOLD", "0.001"), ("BY", "commit"),
                          ("RESULTS", "{results}"))),
]
# Named, but not tried here: their targets run the test suite, a study of minutes, need the network or a container
# engine (no dry run to stop them at), or they are options passed on as written
NOT_RUN = {
    "KEEP_RESULTS": "make test-extended",
    "LOAD": "make noise",
    "CELLS": "make noise",
    "ROUNDS": "make noise",
    "PAIRS": "make noise",
    "SLOWDOWNS": "make noise",
    "DELAYS": "make noise (the delay part: tests/test_noise.py runs it through the study)",
    "DELAY_CELLS": "make noise",
    "B_DELAY": "make ab (tests/test_ab.py checks it reaches side B alone, and make -n that the option is passed)",
    "PARTS": "make noise",
    "SIZE": "make overhead",
    "DTYPE": "make parity (minutes of framework processes; tests/test_parity.py checks bfloat16's refusal)",
    "LOCK_ENVS": "make lock (PyPI)",
    "PYTHON_VERSION": "make wheelhouse (PyPI)",
    "FOR": "make wheelhouse (PyPI; tests/test_wheelhouse_for.py)",
    "BUDGET": "make bench-all, make gpu-check (minutes of cells: tests/test_budget.py, test_gpucheck_budget.py)",
    "CONTAINER_ENGINE": "make image, make bench-container",
    "IMAGE_NAME": "make image, make bench-container",
    "CONTAINER_SHM": "make bench-container",
    "BENCH_ARGS": "make bench-container: more `bench run` options, passed on as written",
    "SUBMIT_ARGS": "make submit: more `bench submit` options, passed on as written",
    "PYTHON": "every case sets it (the dry-run interpreter)",
    "VENVS": "where the envs are built: test_venvs_reaches_the_env_builds_and_the_runs_not_only_make",
    "CONFIRM": "make history CONFIRM=1 measures releases (its values: the yes/no test below)",
    **dict.fromkeys(("AT", "STATE", "REASON"), "make history-triage writes the triage file (tests/test_history.py)"),
    **dict.fromkeys(
        ("PACKAGE", "VERSIONS", "CALL", "STUDY", "GOOD", "BAD", "KEY", "PROCESSES", "MAX_PROCESSES", "CHANGE"),
        "make sweep / bisect (PyPI); make bisect-commits, history CONFIRM=1 (tests/test_history_commits.py)",
    ),
}
KINDS = ["empty", "garbage", "duplicate", "spaced-non-ascii-path", "a-file", "shell-quote-path"]


PATHS = {"RESULTS", "A", "B", "OUT", "AGAINST"}


def value_of(kind: str, name: str, valid: str, tmp: Path) -> str:
    return {
        "empty": "",
        "garbage": f"{tmp}/%%garbage;&" if name in PATHS else "%%garbage;&",  # a path: not in the checkout
        "duplicate": f"{valid},{valid}",
        "spaced-non-ascii-path": str(tmp / "rés ults ü"),
        "a-file": str(tmp / "a-file.txt"),
        "shell-quote-path": str(tmp / 'a"b`c'),  # ends the shell's double quotes around a path
    }[kind]


def snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


# A refusal is the CLI's or a target's one line, or make's own $(error): not a shell's syntax error or a make rule
REFUSAL = re.compile(r"^(error|usage): |^(Makefile|mk/\w+\.mk):\d+: \*\*\* ")


@pytest.mark.skipif(not shutil.which("make"), reason="GNU make is not installed")
@pytest.mark.parametrize("target,needs,name,valid", CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_every_make_variable_is_refused_in_one_line_or_works_and_moves_nothing(
    venvs, tmp_path, target, needs, name, valid
):
    from test_reliability import ok_file

    results = tmp_path / "results"
    ok_file(results)
    (results / "logs").mkdir()
    (results / "logs" / "keep.txt").write_text("not the suite's")
    (results / "logs" / "notes.json").write_text("{}")
    (tmp_path / "beside").mkdir()
    (tmp_path / "beside" / "result-v1.schema.json").write_text("{}")
    (tmp_path / "a-file.txt").write_text("a user's file")
    dry = tmp_path / "dry-python"
    dry.write_text(DRY_PYTHON.format(python=sys.executable))
    dry.chmod(0o755)
    uv = tmp_path / "uv"
    uv.write_text("")
    kept, checkout = snapshot(tmp_path), git_status()
    fill = lambda text: text.format(results=results, tmp=tmp_path)  # noqa: E731
    base = {"RESULTS": str(results), **{k: fill(v) for k, v in needs.items()}}
    for kind in KINDS:
        if (name, kind) == ("OUT", "empty"):
            continue  # the default, compare/ in the checkout: what OUT= is for is tried with the other values
        variables = {**base, name: value_of(kind, name, fill(valid), tmp_path)}
        out = subprocess.run(
            ["make", "--no-print-directory", target, *(f"{k}={v}" for k, v in variables.items()),
             f"PYTHON={dry}", f"TOOLS_PY={dry}", "ENVS_PY=true", f"UV={uv}"],
            cwd=REPO, env=bench_env(venvs), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        said = f"{target} {name}={variables[name]!r} ({kind}): exit {out.returncode}\n{out.stdout}{out.stderr}"
        assert "Traceback" not in out.stdout + out.stderr, said
        if out.returncode != 0:
            lines = said_lines(out.stderr)
            doctor = [line for line in out.stdout.splitlines() if line.startswith("FAIL")]  # the preflight's one FAIL
            one_line = len(lines) == 1 and REFUSAL.match(lines[0]) or not lines and len(doctor) == 1
            assert out.returncode == 2 and one_line, said
        assert not missing(kept, tmp_path), said
        assert git_status() == checkout, said  # nothing written into the checkout (results/ included)


def missing(kept: dict[str, str], tmp: Path) -> list[str]:
    """Files that were there and are gone or changed (the file passed as OUT= may be written: that is its use)."""
    return [k for k, v in kept.items() if k != "a-file.txt" and (not (tmp / k).is_file() or (tmp / k).read_text() != v)]


def git_status() -> str:
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO, capture_output=True, text=True
    ).stdout


def test_the_table_covers_every_variable_the_readme_and_make_help_name():
    helped = subprocess.run(["make", "--no-print-directory", "help"], cwd=REPO, capture_output=True, text=True).stdout
    named = set(re.findall(r"\b([A-Z][A-Z_]{2,})=", (REPO / "README.md").read_text() + helped))
    assert named - {c[2] for c in CASES} - set(NOT_RUN) == set(), sorted(named)


# Make's own variables, which a recipe reads but no user sets
MAKE_OWN = {"MAKE", "CURDIR", "MAKEFILE_LIST", "SHELL", "MAKEFLAGS", "MAKECMDGOALS"}


def makefiles_text() -> str:
    return "\n".join(p.read_text() for p in [REPO / "Makefile", *sorted((REPO / "mk").glob("*.mk"))])


def user_variables() -> set[str]:
    """Every variable of the Makefile and mk/*.mk a user may set: those given a default a command line overrides
    (`?=`), and those a recipe or rule reads that no file assigns (A=, FORCE=, SUBMIT_ARGS=, ...)."""
    text = re.sub(r"(?m)^\s*#.*$", "", makefiles_text())  # comments name variables without reading them
    defaulted = set(re.findall(r"(?m)^([A-Z][A-Z0-9_]*)\s*\?=", text))
    assigned = set(re.findall(r"(?m)^(?:[\w.%-]+:\s*)?([A-Z][A-Z0-9_]*)\s*(?::=|=|\+=)", text))
    read = set(re.findall(r"\$\(([A-Z][A-Z0-9_]*)\)|\$\(call flag,([A-Z][A-Z0-9_]*)", text))
    read = {name for names in read for name in names if name}  # $(NAME), and the yes/no ones through `flag`
    return defaulted | (read - assigned - MAKE_OWN)


def test_make_help_names_every_variable_a_user_may_set():
    variables = user_variables()
    assert {"PYTHON", "RESULTS", "QUARANTINE", "SUBMIT_ARGS", "CONTAINER", "WAIT"} <= variables  # the parse finds them
    helped = subprocess.run(["make", "--no-print-directory", "help"], cwd=REPO, capture_output=True, text=True).stdout
    assert sorted(v for v in variables if not re.search(rf"\b{v}=", helped)) == [], helped


def test_make_help_lists_every_target():
    targets = set(re.findall(r"(?m)^([a-z][a-z0-9-]*):(?!=)", makefiles_text()))
    helped = subprocess.run(["make", "--no-print-directory", "help"], cwd=REPO, capture_output=True, text=True).stdout
    assert "bench" in targets and sorted(targets - set(re.findall(r"(?m)^  ([a-z][a-z0-9-]*) ", helped))) == []



# every yes/no variable, a target that takes it, what that target needs, and the option it gives
YES_NO = [
    ("bench", BENCH, "RESUME", "--resume"),
    ("bench", BENCH, "IGNORE_PLAN", "--ignore-plan"),
    ("bench", {**BENCH, "PROFILE": "paper"}, "EXACT", "--exact"),
    ("bench", BENCH, "V", "--verbose"),
    ("bench-all", {}, "V", "--verbose"),
    ("tuning", {}, "RESUME", "--resume"),
    ("gpu-check", {}, "RESUME", "--resume"),
    ("validate", {}, "QUARANTINE", "--quarantine"),
    ("compare", {"A": "a", "B": "b"}, "ACROSS", "--across-processors"),
    ("submit", BENCH, "FORCE", "--force"),
    ("submit", BENCH, "CONTAINER", "--container"),
    ("history", {"CELL": "x"}, "CONFIRM", "--confirm"),
]


def make_dry(target: str, variables: dict[str, str], *, dry_run: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["make", "--no-print-directory", *(["-n"] if dry_run else []), target,
         *(f"{k}={v}" for k, v in variables.items())],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.mark.skipif(not shutil.which("make"), reason="GNU make is not installed")
@pytest.mark.parametrize("target,needs,name,option", YES_NO, ids=[f"{c[0]}-{c[2]}" for c in YES_NO])
def test_a_yes_no_variable_takes_1_0_yes_no_true_false_in_any_case_and_refuses_the_rest(
    tmp_path, target, needs, name, option
):
    built = tmp_path / "built"
    base = {**needs, "ENVS_PY": f"touch {built};", "RESULTS": str(tmp_path / "results")}
    for value in ("1", "yes", "true", "YES", "True"):
        out = make_dry(target, {**base, name: value})
        assert out.returncode == 0 and option in out.stdout.split(), f"{name}={value}: {out.stdout}{out.stderr}"
    for value in ("", "0", "no", "false", "NO", "False"):
        out = make_dry(target, {**base, name: value})
        assert out.returncode == 0 and option not in out.stdout.split(), f"{name}={value}: {out.stdout}{out.stderr}"
    for value in ("2", "on", "y", "maybe", "yes no"):
        out = make_dry(target, {**base, name: value}, dry_run=False)  # refused before anything is built
        lines = said_lines(out.stderr)
        assert out.returncode == 2 and len(lines) == 1 and "yes/no" in lines[0], f"{name}={value}: {out.stderr}"
        assert not built.exists()


def test_every_yes_no_variable_the_makefile_reads_is_checked():
    text = "\n".join(p.read_text() for p in [REPO / "Makefile", *sorted((REPO / "mk").glob("*.mk"))])
    checked = set(re.search(r"^YES_NO_VARIABLES := (.*)$", text, re.M).group(1).split())
    assert checked == {name for _, _, name, _ in YES_NO}
    assert set(re.findall(r"\$\(call flag,(\w+),", text)) == checked
    read_raw = r"\$\(if \$\((?:" + "|".join(checked) + r")\)"
    assert not re.findall(read_raw, text)  # each read through flag


@pytest.mark.skipif(not shutil.which("make"), reason="GNU make is not installed")
@pytest.mark.parametrize("target,name", [("bench-all", "REPEATS"), ("bench-all", "STEPS"), ("bench-all", "JOBS"),
                                         ("bench", "BATCH"), ("noise", "ROUNDS"), ("noise", "PAIRS"),
                                         ("noise", "LOAD"), ("sweep", "PROCESSES"), ("sweep", "MAX_PROCESSES"),
                                         ("submit-status", "WAIT")])
def test_a_count_that_is_not_a_whole_number_above_0_is_refused_before_anything_is_built(tmp_path, target, name):
    built = tmp_path / "built"
    needs = {"BACKEND": "jax", "MODEL": "bert", "PACKAGE": "keras", "VERSIONS": "3.0.5"}
    for value in ("0", "00", "-1", "1.5", "abc", "1,2"):
        out = subprocess.run(
            ["make", "--no-print-directory", target, *(f"{k}={v}" for k, v in needs.items()), f"{name}={value}",
             f"ENVS_PY=touch {built};", f"PYTHON=touch {built}; {sys.executable}",
             f"TOOLS_PY=touch {built}; {sys.executable}", f"RESULTS={tmp_path / 'results'}"],
            cwd=REPO, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        lines = said_lines(out.stderr)
        assert out.returncode == 2 and len(lines) == 1 and f"{name}={value}" in lines[0], (value, out.stderr)
        assert not built.exists(), value


@pytest.mark.skipif(not shutil.which("make"), reason="GNU make is not installed")
@pytest.mark.parametrize("target", ["bench-all", "bench"])
def test_a_misspelt_backend_model_or_profile_is_refused_before_any_env_is_built(tmp_path, target):
    built = tmp_path / "built"
    valid = {"BACKEND": "jax,torch", "MODEL": "bert", "PROFILE": "smoke"}
    for name, typo in (("BACKEND", "jax,nope"), ("MODEL", "bertt"), ("PROFILE", "smok")):
        out = subprocess.run(
            ["make", "--no-print-directory", target, *(f"{k}={v}" for k, v in {**valid, name: typo}.items()),
             f"PYTHON={sys.executable}", f"ENVS_PY=touch {built};", f"TOOLS_PY=touch {built}; {sys.executable}",
             f"RESULTS={tmp_path / 'results'}"],
            cwd=REPO, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        lines = said_lines(out.stderr)
        assert out.returncode == 2 and len(lines) == 1 and f"{name}={typo}: " in lines[0], out.stdout + out.stderr
        assert not built.exists(), name


def make_run(target: str, variables: dict[str, str], *, dry_run: bool = False, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["make", "--no-print-directory", *(["-n"] if dry_run else []), target,
         *(f"{k}={v}" for k, v in variables.items())],
        cwd=REPO, capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip


@pytest.mark.skipif(not shutil.which("make"), reason="GNU make is not installed")
@pytest.mark.parametrize("value", ["x||touch {pwn}", "$(id)", "`touch {pwn}`", "float32 --model sam", "a;b"])
def test_dtype_is_a_name_refused_in_one_line_before_any_command_runs(tmp_path, value):
    pwn, built = tmp_path / "PWN", tmp_path / "built"
    out = make_run("parity", {"MODEL": "bert", "DTYPE": value.format(pwn=pwn), "RESULTS": str(tmp_path / "r"),
                              "ENVS_PY": f"touch {built}; true", "TOOLS_PY": "true"})
    lines = said_lines(out.stderr)
    assert out.returncode == 2 and len(lines) == 1 and "DTYPE=" in lines[0], out.stdout + out.stderr
    assert not pwn.exists() and not built.exists()


def makefile_list(name: str) -> list[str]:
    """The words of one of the Makefile's `NAME := ...` lists (continued lines joined)."""
    text = (REPO / "Makefile").read_text().replace("\\\n", " ")
    return re.search(rf"(?m)^{name} :?= (.*)$", text).group(1).split()


def count_caps() -> dict[str, int]:
    return {word.split(":")[0]: int(word.split(":")[1]) for word in makefile_list("COUNT_CAPS")}


@pytest.mark.skipif(not shutil.which("make"), reason="GNU make is not installed")
def test_every_count_has_a_cap_refused_past_it_in_one_line_and_taken_at_it(tmp_path):
    caps = count_caps()
    assert set(caps) == set(makefile_list("COUNT_VARIABLES")), caps
    built = tmp_path / "built"
    for name, cap in caps.items():
        for value in (str(cap + 1), "99999999999999999999", f"{cap}0", f"00{cap + 1}"):
            out = make_run("doctor", {name: value, "PYTHON": f"touch {built}; true"})
            lines = said_lines(out.stderr)
            assert out.returncode == 2 and len(lines) == 1 and f"{name}={value}" in lines[0], (value, out.stderr)
            assert f"at most {cap}" in lines[0] and not built.exists(), lines
        for value in (str(cap), str(cap - 1), "1", f"0{cap}"):
            assert make_run("doctor", {name: value}, dry_run=True).returncode == 0, (name, value)


def test_bench_takes_each_count_up_to_the_makefile_s_cap_and_refuses_past_it(capsys):
    """What make checks, bench checks the same way: the caps agree (a count given to bench directly)."""
    from bench.base import argtypes

    caps = count_caps()
    python_caps = {"REPEATS": argtypes.PROCESSES_CAP, "PROCESSES": argtypes.PROCESSES_CAP,
                   "MAX_PROCESSES": argtypes.PROCESSES_CAP, "ROUNDS": argtypes.PROCESSES_CAP,
                   "PAIRS": argtypes.PROCESSES_CAP, "JOBS": argtypes.PROCESSES_CAP, "LOAD": argtypes.PROCESSES_CAP,
                   "STEPS": argtypes.STEPS_CAP, "BATCH": argtypes.BATCH_CAP, "WAIT": argtypes.WAIT_CAP_S}
    assert caps == python_caps
    from bench.cli_parsers import build_parser

    parser = build_parser()
    for option, cap in (("--repeats", argtypes.PROCESSES_CAP), ("--steps", argtypes.STEPS_CAP),
                        ("--batch-size", argtypes.BATCH_CAP), ("--jobs", argtypes.PROCESSES_CAP),
                        ("--max-processes", argtypes.PROCESSES_CAP)):
        assert getattr(parser.parse_args(["run", option, str(cap)]), option[2:].replace("-", "_")) == cap
        with pytest.raises(SystemExit):
            parser.parse_args(["run", option, str(cap + 1)])
    assert f"at most {argtypes.PROCESSES_CAP}, got '{argtypes.PROCESSES_CAP + 1}'" in capsys.readouterr().err


# Variables a recipe passes to the shell as written, by design: a command (an interpreter, an engine, a test's
# stand-in) or more options for a command. Each is named in the Makefile's SHELL_WORD_VARIABLES.
def checked_variables() -> dict[str, set[str]]:
    return {kind: set(makefile_list(kind)) for kind in ("NAME_VARIABLES", "COUNT_VARIABLES", "PATH_VARIABLES",
                                                         "WORD_PATH_VARIABLES", "QUOTED_VARIABLES",
                                                         "NAME_LIST_VARIABLES", "YES_NO_VARIABLES",
                                                         "SHELL_WORD_VARIABLES")}


def test_every_variable_a_user_may_set_is_checked_or_quoted_or_named_as_passed_on_as_written():
    kinds = checked_variables()
    every = set().union(*kinds.values())
    assert sorted(user_variables() - every) == [], "neither checked nor quoted"
    # what reaches a recipe's shell (the recipes, and the argument lists they expand): a quoted value only through
    # shell_quote, a path only inside double quotes; a value's test ($(if $(X),...)) reaches no shell
    text = re.sub(r"(?m)^\s*#.*$", "", makefiles_text()).replace("\\\n", " ")
    shell = [line for line in text.splitlines() if line.startswith("\t") or re.match(r"[A-Z_]+_ARGS \??=", line)]
    for name in kinds["QUOTED_VARIABLES"] | kinds["PATH_VARIABLES"]:
        for line in shell:
            for match in re.finditer(rf"\$\({name}\)", line):
                before = line[: match.start()]
                if enclosing_function(before) in MAKE_TESTS:
                    continue
                quotes = before.replace('\\"', "").count('"')
                assert name in kinds["PATH_VARIABLES"] and quotes % 2 == 1, (name, line)


# make functions whose arguments reach no shell: a value tested, counted or compared
MAKE_TESTS = {"if", "and", "or", "words", "filter", "abspath", "strip"}


def enclosing_function(before: str) -> str | None:
    """The make function whose argument list the text after `before` is in ($(if ..., $(filter ...), if any."""
    depth = 0
    for i in range(len(before) - 1, 0, -1):
        if before[i] == ")":
            depth += 1
        elif before[i] == "(" and before[i - 1] == "$":
            if depth == 0:
                return re.match(r"[a-z]*", before[i + 1:]).group(0) or None
            depth -= 1
    return None


@pytest.mark.skipif(not shutil.which("make"), reason="GNU make is not installed")
def test_venvs_reaches_the_env_builds_and_the_runs_not_only_make(tmp_path):
    venvs = tmp_path / "my-envs"
    uv = tmp_path / "uv"  # newer than containers/uv-requirements.txt: make takes it as the pinned uv, installed
    uv.write_text("")
    out = make_run("env-tools", {"VENVS": str(venvs), "ENVS_PY": "printenv BENCH_VENVS_DIR; true", "UV": str(uv)})
    assert out.returncode == 0 and out.stdout.splitlines()[-1] == str(venvs), out.stdout + out.stderr
    shown = make_run("bench", {"VENVS": str(venvs), "BACKEND": "jax", "MODEL": "bert"}, dry_run=True)
    assert f"{venvs}/tools/bin/python -m bench run" in shown.stdout, shown.stdout
    env = {**os.environ, "BENCH_VENVS_DIR": str(venvs)}
    found = subprocess.run([sys.executable, "-c", "from bench.envs.common import default_venv; "
                            "from bench.run.env_lookup import VENVS_DIR; print(default_venv('jax'), VENVS_DIR)"],
                           cwd=REPO, capture_output=True, text=True, env=env)  # fmt: skip
    assert found.stdout.split() == [str(venvs / "jax"), str(venvs)], found.stdout + found.stderr
    for bad in ("a b", "x;touch y", "$(id)"):
        refused = make_run("env-tools", {"VENVS": bad, "ENVS_PY": "true", "UV": str(uv)})
        lines = said_lines(refused.stderr)
        assert refused.returncode == 2 and len(lines) == 1 and "VENVS=" in lines[0], refused.stderr


@pytest.mark.skipif(not shutil.which("make"), reason="GNU make is not installed")
@pytest.mark.parametrize("results", ["results", "./results", "results/", "./results/", "{repo}/results"])
def test_make_table_of_the_checkout_s_results_however_spelt_updates_the_readme(results):
    shown = make_run("table", {"RESULTS": results.format(repo=REPO)}, dry_run=True)
    assert "--readme README.md" in shown.stdout, shown.stdout
    other = make_run("table", {"RESULTS": "results/cpu-full"}, dry_run=True)
    assert "--readme" not in other.stdout
