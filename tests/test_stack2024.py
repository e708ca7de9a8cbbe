"""The 2024 stack (STACK=2024): keras-benchmarks v0.0.5's pins, locked with hashes, recorded in every result.

Fast tests: the pins against v0.0.5's own requirement files (copied in bench/data/keras-benchmarks-v0.0.5/), the
locks current and hashed, the stack in the cell, the result path, the runner's env and the report. The slow one
runs `make bench BACKEND=jax MODEL=bert STACK=2024` (the one 2024 env CI builds: CI_STACK_ENVS in mk/envs.mk).
"""
import json
import re
import subprocess
import sys
import tomllib

import pytest
from conftest import REPO

from bench.base.errors import BenchError
from bench.catalogue.backends import BACKENDS, env_name, split_env_name, stack_env_names
from bench.catalogue.registry import Cell, plan_cells
from bench.envs.locks import canon, req_versions
from bench.record.results import Result, Run, load_all, result_path

V005 = REPO / "bench" / "data" / "keras-benchmarks-v0.0.5"
# v0.0.5's venv (shell/install.sh) -> the env that reproduces it (the table in SOURCE.md).
VENV_ENV = {"tensorflow": "keras2-2024", "keras-tensorflow": "tensorflow-2024", "keras-jax": "jax-2024",
            "keras-torch": "torch-2024", "torch": "native-torch-2024"}
# Where a 2024 env cannot take v0.0.5's requirement as written, what it pins instead (docs/DEVIATIONS.md, Table 2).
REPLACED = {
    # jax[cuda12_pip]'s CUDA jaxlib came from Google's find-links page, outside PyPI: the same jax, PyPI's jaxlib.
    "jax[cuda12-pip]==0.4.20": "jax==0.4.20",
    # a git commit is outside PyPI; the PyPI 1.0 release has the same modeling code (DEVIATIONS.md).
    "git+https://github.com/facebookresearch/segment-anything.git@6fdee8f2727f4506cfbbe553e23b895e27956588": "segment-anything==1.0",
}
ENVS_2024 = stack_env_names("2024")


def v005_requirements(venv: str) -> list[str]:
    """v0.0.5's requirement lines for one venv: its file with `-r` includes followed, `--find-links` left out, then
    install.sh's `pip install keras==3.0.5` for every venv whose name starts with keras."""

    def read(name: str) -> list[str]:
        lines = []
        for line in (V005 / "requirements" / name).read_text().splitlines():
            line = line.split("#", 1)[0].strip() if not line.startswith("git+") else line.strip()
            if not line or line.startswith("--find-links"):
                continue
            lines += read(line[3:].strip()) if line.startswith("-r ") else [line]
        return lines

    install = (V005 / "shell" / "install.sh").read_text()
    extra = re.findall(r"if \[\[ \$venv_name == keras\* \]\]; then\s+pip install (\S+)", install)
    assert extra == ["keras==3.0.5"], "shell/install.sh no longer reads as v0.0.5's"
    return read(f"{venv}.txt") + (extra if venv.startswith("keras") else [])


def normalised(requirement: str) -> str:
    m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?(==.*)$", requirement.replace(" ", ""))
    if not m:
        return requirement
    name, extras, version = m.groups()
    extras = "[" + ",".join(sorted(canon(e) for e in extras[1:-1].split(","))) + "]" if extras else ""
    return canon(name) + extras + version


def test_the_copied_files_are_v005s():
    venvs = re.search(r"venvs=\(\s*(.*?)\)", (V005 / "shell" / "install.sh").read_text(), re.S).group(1).split()
    assert sorted(v.strip('"') for v in venvs) == sorted(VENV_ENV)
    assert "4f1d20effcaa2c0c54a6fc485c4df4062e2578fc" in (V005 / "SOURCE.md").read_text()


@pytest.mark.parametrize("venv", list(VENV_ENV))
def test_every_v005_pin_is_the_2024_envs_pin(venv):
    env = VENV_ENV[venv]
    spec = {
        normalised(d)
        for d in tomllib.loads((REPO / "envs" / env / "pyproject.toml").read_text())["project"]["dependencies"]
    }
    locked = req_versions((REPO / "envs" / env / "requirements.txt").read_text())
    for requirement in v005_requirements(venv):
        want = normalised(REPLACED.get(normalised(requirement), REPLACED.get(requirement, requirement)))
        assert want in spec, (
            f"{env}: v0.0.5's `{requirement}` ({venv}) is not pinned as `{want}` in envs/{env}/pyproject.toml"
        )
        name, version = re.match(r"^([^\[=]+)(?:\[[^\]]*\])?==(.+)$", want).groups()
        assert locked.get(canon(name)) == version, (
            f"{env}: requirements.txt has {name} {locked.get(canon(name))}, v0.0.5 {version}"
        )


def test_the_2024_keras_envs_have_no_keras_hub_and_keras2_no_keras3():
    for env in ENVS_2024:
        locked = req_versions((REPO / "envs" / env / "requirements.txt").read_text())
        assert "keras-hub" not in locked, env  # keras-hub did not exist in 2024
        backend, stack = split_env_name(env)
        if BACKENDS[backend].keras_major == 2:
            assert locked["keras"].startswith("2."), locked["keras"]  # v0.0.5's Keras 2 venv had no Keras 3
        elif BACKENDS[backend].keras_major == 3:
            assert locked["keras"] == "3.0.5" and locked["keras-nlp"] == "0.8.2"


@pytest.mark.parametrize("env", ENVS_2024)
def test_the_2024_locks_pin_every_package_with_a_hash(env):
    text = (REPO / "envs" / env / "requirements.txt").read_text()
    entries = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 4)[4])  # one entry per package, after the header
    assert len(entries) == len(req_versions(text)) > 10
    for entry in entries:
        assert re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[^\]]*\])?==", entry), entry[:80]
        assert "--hash=sha256:" in entry, f"{env}: no hash for {entry.splitlines()[0]}"
    exclude_newer = tomllib.loads((REPO / "envs" / env / "uv.lock").read_text())["options"]["exclude-newer"]
    assert exclude_newer.startswith("2024-04-03"), exclude_newer  # resolved as PyPI stood after v0.0.5


def test_the_2024_locks_are_current():
    out = subprocess.run(
        [sys.executable, "scripts/envs.py", "check-locks", *ENVS_2024],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "[stack 2024] cross-env: keras==3.0.5 in tensorflow, jax, torch" in out.stdout
    assert "[stack 2024] cross-env: torch==2.2.1 in torch, native-torch" in out.stdout


def test_env_names_of_the_stacks():
    assert [env_name(b, "2024") for b in BACKENDS] == ENVS_2024 == [f"{b}-2024" for b in BACKENDS]
    assert [env_name(b) for b in BACKENDS] == list(BACKENDS)
    assert split_env_name("native-torch-2024") == ("native-torch", "2024")
    with pytest.raises(BenchError, match="valid stacks: today, 2024"):
        env_name("jax", "2023")
    out = subprocess.run(
        [sys.executable, "scripts/envs.py", "env-name", "jax", "2024"], cwd=REPO, capture_output=True, text=True
    )
    assert out.stdout.strip() == "jax-2024"
    out = subprocess.run(
        [sys.executable, "scripts/envs.py", "names", "--stack", "2024"], cwd=REPO, capture_output=True, text=True
    )
    assert out.stdout.split() == [*ENVS_2024, "tools"]


def test_make_targets_take_the_stack():
    def dry(*args):
        out = subprocess.run(
            ["make", "-n", "--no-print-directory", *args], cwd=REPO, capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0, out.stderr
        return out.stdout

    assert 'name="$(python3 scripts/envs.py env-name "jax" "2024")"; python3 scripts/envs.py build "$name"' in dry(
        "env", "BACKEND=jax", "STACK=2024"
    )
    assert "build --all --stack \"2024\"" in dry("envs", "STACK=2024")
    assert '--stack 2024 --results-dir "results"' in dry("bench", "BACKEND=jax", "MODEL=bert", "STACK=2024")
    assert '--stack today --results-dir "results"' in dry("bench", "BACKEND=jax", "MODEL=bert")
    assert "build jax-2024" in dry("test")  # the one 2024 env CI builds


def test_the_stack_is_in_the_cell_its_key_and_its_result_path(tmp_path):
    (today,) = plan_cells("smoke", backends=["jax"], models=["bert"], tasks=["fit"])
    (old,) = plan_cells("smoke", backends=["jax"], models=["bert"], tasks=["fit"], stack="2024")
    assert today.stack == "today" and old.stack == "2024"
    assert today.env == "jax" and old.env == "jax-2024"
    assert old.key == today.key + "__stack-2024"
    machine = {"cpu": "x", "gpus": []}
    assert result_path(tmp_path, old, machine).parent == result_path(tmp_path, today, machine).parent / "stack-2024"
    with pytest.raises(BenchError, match="unknown stack"):
        plan_cells("smoke", backends=["jax"], models=["bert"], stack="2023")
    # A result file written before stacks existed has no stack: it reads as today's.
    data = {k: v for k, v in today.to_dict().items() if k != "stack"}
    assert Cell.from_dict(data).stack == "today"


def test_two_stacks_results_are_kept_apart_and_tabled_apart(tmp_path):
    from bench.studies.table import render

    results = tmp_path / "results"
    machine = {"label": "test machine", "cpu": "test cpu", "gpus": []}
    written = []
    for stack, ms in (("today", 10.0), ("2024", 20.0)):
        (cell,) = plan_cells("smoke", backends=["jax"], models=["bert"], tasks=["fit"], stack=stack)
        run = Run(status="ok", timed_ms=[ms] * cell.timed_steps, first_step_ms=ms * 3)
        written.append(
            Result(cell, [run], "ms/step", {"machine": machine, "git": {}}, "2026-01-01T00:00:00+00:00").write(results)
        )
    assert written[0] != written[1] and all(p.exists() for p in written)
    back = {r.cell.stack: r for r in load_all(results)}
    assert set(back) == {"today", "2024"}
    assert json.loads(written[1].read_text())["cell"]["stack"] == "2024"
    assert back["2024"].summary().median == 20.0 and back["today"].summary().median == 10.0
    from test_table import whole

    render(results, tmp_path / "RESULTS.md")
    text = whole(tmp_path)
    headings = [
        line for line in text.splitlines() if re.match(r"## \d+\. ", line)
    ]  # the tables (not the closing sections)
    assert len(headings) == 2, headings
    assert "2024 stack" not in headings[0] and "2024 stack" in headings[1], headings
    # the 2024 table sets each cell beside today's: 20 ms on 2024, 10 ms today
    beside = text.split("Beside today's stack", 1)[1]
    row = next(line for line in beside.splitlines() if "Keras 3 (JAX)" in line)
    assert "| 20.0" in row and "| 10.0" in row and "2.00× (" in row, row
    assert "Beside today's stack" not in text.split(headings[1])[0]  # not in today's own table


def test_the_runner_runs_a_2024_cell_in_its_own_env(tmp_path, monkeypatch):
    from bench.run import env_lookup

    monkeypatch.setattr("bench.run.env_lookup.VENVS_DIR", tmp_path)
    with pytest.raises(BenchError, match=r"make env BACKEND=jax STACK=2024"):
        env_lookup.env_python("jax-2024")


@pytest.mark.envs
@pytest.mark.slow
@pytest.mark.duration_s(120)
def test_make_bench_bert_on_the_2024_stack(shared_smoke):
    """The 2024 stack's BERT smoke cells, end to end: Keras 3.0.5 + keras-nlp 0.8.2 on JAX 0.4.20. Read from the
    shared smoke run (tests/shared_run.py), which is exactly `make bench BACKEND=jax MODEL=bert STACK=2024
    PROFILE=smoke REPEATS=1` (one process a cell: the test checks the 2024 stack's code path)."""
    shared = shared_smoke("jax-2024")
    assert shared.returncode == 0, shared.output[-6000:]
    results = shared.results
    found = load_all(results)
    assert sorted(r.cell.task for r in found) == ["fit", "predict"]
    for r in found:
        assert r.status == "ok", r.message
        assert r.cell.stack == "2024" and "stack-2024" in str(r.relative_path())
        run = r.runs[0]
        # sampled to the profile's precision: Keras 3.0.5's fit and predict loops stopped early
        assert r.cell.timed_steps <= len(run.timed_ms) == run.sampling["steps"] <= r.cell.max_timed_steps
        assert run.process["environment"]["backend"] == "jax-2024"
        assert run.framework["version"] == "0.4.20"
        assert run.settings["keras_version"] == "3.0.5"
        assert run.settings["library_versions"] == {"keras_nlp": "0.8.2"}
        assert run.settings["model_class"].startswith("keras_nlp.")
