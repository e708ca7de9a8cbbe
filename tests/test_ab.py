"""`make ab` (bench/studies/ab/): a cell re-measured on two sides interleaved in one invocation, in a clone of this
checkout whose commits differ in how fast a fake env's cell runs (`fake-scale` in the tree, as
tests/test_history_commits.py builds them)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from fakes import make_fake_envs, quiet_probe_path
from test_history_commits import KEY, repo  # noqa: F401  (the clone: a fixture)

from bench.base.errors import BenchError
from bench.studies.ab.sides import parse_side


def ab(tree: Path, venvs: Path, results: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "BENCH_VENVS_DIR": str(venvs), "FAKE_JITTER": "0.01", **extra}
    return subprocess.run([sys.executable, "-m", "bench.studies.ab", *args, "--results-dir", str(results)], cwd=tree,
                          env=env, capture_output=True, text=True, timeout=600)  # fmt: skip


def the_record(results: Path) -> tuple[Path, dict]:
    (path,) = (results / "ab" / KEY).glob("*.ab.json")
    return path, json.loads(path.read_text())


def test_a_slower_commit_is_called_slower_from_processes_taken_in_turns(repo, tmp_path):  # noqa: F811
    repo, (first, slower, _) = repo
    venvs = make_fake_envs(tmp_path / "venvs", ["native-torch"])
    results = tmp_path / "results"
    done = ab(repo, venvs, results, "--a", first, "--b", slower, "--cell", KEY, "--processes", "3",
              "--max-processes", "4", PYTHONPATH=quiet_probe_path(tmp_path / "quiet"))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{KEY}: B against A: slower" in done.stdout and "interleaved in one invocation" in done.stdout
    path, record = the_record(results)
    assert record["verdict"] == "slower" and 1.4 < record["ratio"]["ratio"] < 1.6
    assert (record["A"]["commit"], record["B"]["commit"]) == (first, slower) and not record["same_code"]
    # the sides took turns: A B, then B A, then A B
    order = [line.split()[0] for line in done.stdout.splitlines() if " process " in line and "median" in line]
    assert order[:6] == ["A", "B", "B", "A", "A", "B"], order
    # each process is its own invocation of its own commit's code
    folder = path.with_name(path.name.removesuffix(".ab.json"))
    for side, commit in (("A", first), ("B", slower)):
        files = sorted(folder.glob(f"{side}/process*/**/{KEY}.json"))
        assert len(files) == record["processes"][side] >= 3
        assert {json.loads(f.read_text())["provenance"]["git"]["commit"] for f in files} == {commit}


def test_one_commit_against_itself_is_said_to_be_an_a_a_comparison_and_not_called_a_change(repo, tmp_path):  # noqa: F811
    repo, (first, *_) = repo
    venvs = make_fake_envs(tmp_path / "venvs", ["native-torch"])
    results = tmp_path / "results"
    done = ab(repo, venvs, results, "--a", first, "--b", first, "--cell", KEY, "--processes", "3",
              "--max-processes", "3", PYTHONPATH=quiet_probe_path(tmp_path / "quiet"))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "A/A: one code against itself" in done.stdout
    _, record = the_record(results)
    assert record["same_code"] and record["verdict"] not in ("slower", "faster")


def test_a_side_whose_cell_fails_stops_with_its_log_and_keeps_a_record(repo, tmp_path):  # noqa: F811
    repo, (first, slower, _) = repo
    venvs = make_fake_envs(tmp_path / "venvs", ["native-torch"])
    results = tmp_path / "results"
    done = ab(repo, venvs, results, "--a", first, "--b", slower, "--cell", KEY, FAKE_MODE_NATIVE_TORCH="crash")
    assert done.returncode == 2
    assert "on side A" in done.stderr and ".log" in done.stderr
    _, record = the_record(results)
    assert "did not run" in record["stopped"] and "verdict" not in record


def test_each_way_of_writing_a_side_is_read_as_what_it_names(tmp_path):
    wheel = tmp_path / "keras-3.16.0.dev0-py3-none-any.whl"
    wheel.write_bytes(b"")
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.symlink_to(sys.executable)  # a venv's python: a link, kept as named
    sides = {text: parse_side(text) for text in ("HEAD", "keras==3.15.1", str(wheel), str(python), "stack:2024")}
    assert sides["HEAD"].kind == "commit" and len(sides["HEAD"].commit) == 40
    assert (sides["keras==3.15.1"].kind, sides["keras==3.15.1"].package, sides["keras==3.15.1"].version) == (
        "version", "keras", "3.15.1")
    assert (sides[str(wheel)].kind, sides[str(wheel)].package, sides[str(wheel)].version) == (
        "wheel", "keras", "3.16.0.dev0")
    assert sides[str(python)].kind == "interpreter" and sides[str(python)].python == str(python)
    assert sides["stack:2024"].kind == "stack" and sides["stack:2024"].stack == "2024"


@pytest.mark.parametrize("text,words", [
    ("", "an empty side"),
    ("stack:1999", "unknown stack '1999'"),
    ("keras==", "is no <package>==<version>"),
    ("/no/such/python", "no such interpreter or wheel"),
    ("missing.whl", "no wheel file"),
    ("0" * 40, "is not in this clone"),
])  # fmt: skip
def test_a_side_that_names_nothing_is_refused_naming_why(text, words):
    with pytest.raises(BenchError, match=words):
        parse_side(text)


def test_make_ab_without_its_sides_or_cells_prints_its_usage():
    done = subprocess.run(["make", "--no-print-directory", "ab", "A=HEAD", "B=HEAD"], cwd=REPO, capture_output=True,
                          text=True)  # fmt: skip
    assert done.returncode == 2 and "usage: make ab A=<commit" in done.stderr


def test_a_step_delay_reaches_side_bs_processes_alone_ahead_of_its_own_code(tmp_path):
    from bench.studies.ab.sides import CellArgs

    cell = CellArgs.parse(KEY, "smoke")
    a, b = parse_side("HEAD"), parse_side("HEAD")
    b.step_delay = 0.2
    tree = tmp_path / "tree"
    _, _, env_a = a.command(cell, tmp_path / "a", lambda commit: tree)
    _, cwd, env_b = b.command(cell, tmp_path / "b", lambda commit: tree)
    assert "BENCH_TEST_STEP_DELAY" not in env_a and env_b["BENCH_TEST_STEP_DELAY"] == "0.2"
    first, second = env_b["PYTHONPATH"].split(os.pathsep)[:2]
    assert first.endswith("tests/fixtures/step_delay") and second == str(tree) == str(cwd)
    assert b.to_dict()["step_delay"] == 0.2 and "step_delay" not in a.to_dict()


def test_make_ab_passes_the_delay_to_side_b():
    done = subprocess.run(["make", "-n", "--no-print-directory", "ab", "A=HEAD", "B=HEAD", f"CELL={KEY}",
                           "B_DELAY=0.2"], cwd=REPO, capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0 and "--b-delay 0.2" in done.stdout
