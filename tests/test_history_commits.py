"""A cell re-run at two commits and the commits between bisected (bench/studies/history/commits.py), in a clone of this
checkout whose commits differ in how fast a fake env's cell runs: a file `fake-scale` in the tree, which the fake
cell reads from the checkout it runs from."""
import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from fakes import REPO, make_fake_envs, quiet_probe_path
from test_export import make_result

from bench.record.results import Run

KEY = "native-torch__bert__predict__bs2__eager"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid", *args], cwd=repo,
                          check=True, capture_output=True, text=True).stdout.strip()


def commit(repo: Path, message: str, scale: float | None = None) -> str:
    if scale is not None:
        (repo / "fake-scale").write_text(str(scale))
    (repo / "notes.txt").write_text(message)
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> tuple[Path, list[str]]:
    """A clone with this checkout's code (uncommitted changes too) as its first commit, then one whose cell is 1.5x
    slower, then one that changes nothing timed."""
    repo = tmp_path_factory.mktemp("clone") / "repo"
    subprocess.run(["git", "clone", "--quiet", "--shared", str(REPO), str(repo)], check=True)
    for part in ("bench", "envs", "scripts"):
        shutil.copytree(REPO / part, repo / part, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return repo, [commit(repo, "this checkout"), commit(repo, "a slower cell", 1.5), commit(repo, "a comment")]


def history(repo: Path, venvs: Path, results: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "BENCH_VENVS_DIR": str(venvs), "FAKE_JITTER": "0.01", **extra}
    return subprocess.run([sys.executable, "-m", "bench.studies.history", *args, "--results-dir", str(results)],
                          cwd=repo,
                          env=env, capture_output=True, text=True, timeout=600)


def write_series(results: Path, commits: list[str], figures: list[float]) -> None:
    """The cell measured once per figure, a day apart, at those commits (each write moves the one before to
    history/)."""
    for day, (sha, figure) in enumerate(zip(commits, figures), 1):
        runs = [Run(status="ok", timed_ms=[figure * f for f in (0.99, 1.0, 1.01)]) for _ in range(3)]
        result = replace(make_result("native-torch", "bert", "predict", runs=runs),
                         created_at=f"2026-01-{day:02d}T00:00:00+00:00",
                         provenance={"git": {"commit": sha}, "run_id": f"run{day}",
                                     "machine": {"cpu": "Test CPU", "logical_cpus": 4, "gpus": []}})
        result.write(results)


def test_confirm_re_runs_a_change_at_its_commits_and_bisects_to_the_first_slower_one(repo, tmp_path):
    repo, (first, slower, last) = repo
    venvs = make_fake_envs(tmp_path / "venvs", ["native-torch"])
    results = tmp_path / "results"
    write_series(results, [first] * 3 + [last] * 3, [10.0, 10.1, 9.9, 15.0, 15.2, 14.9])
    # the drift probe reads quiet whatever else the test machine runs: a loaded machine's disturbed processes (judged
    # noisy, rightly undecided) are not what this tests, and the fake processes' own figures do not move with it
    done = history(repo, venvs, results, "show", "--cell", KEY, "--confirm", "--processes", "3",
                   "--max-processes", "4", PYTHONPATH=quiet_probe_path(tmp_path / "quiet"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"first slower commit: {slower[:10]} (a slower cell)" in done.stdout
    assert f"confirm: re-run at {first[:10]} and {last[:10]}: slower; first slower commit {slower[:10]}" in done.stdout
    (path,) = (results / "confirm").glob(f"{KEY}-{first[:10]}-{last[:10]}-*.confirm.json")
    record = json.loads(path.read_text())
    assert record["answer"] == slower and record["change"] == "slower" and record["commits"] == [first, slower, last]
    step1, step2 = record["steps"]
    assert (step1["good"], step1["candidate"], step1["verdict"]) == (first, last, "slower")
    assert 1.4 < step1["ratio"]["ratio"] < 1.6
    assert (step2["candidate"], step2["verdict"]) == (slower, "slower")
    assert step2["bad_verdict"] not in ("slower", "faster")  # the same code at two commits is not called a change
    # every process ran its own commit's code, one invocation each, from a clean checkout
    folder = path.with_name(path.name.removesuffix(".confirm.json"))
    runs = sorted(folder.glob(f"step1/{last[:10]}/process*/**/{KEY}.json"))
    assert len(runs) == 3 and step1["processes"] == {first: 3, last: 3}  # decided at the first look
    gits = [json.loads(p.read_text())["provenance"]["git"] for p in runs]
    assert {g["commit"] for g in gits} == {last} and not any(g["dirty"] for g in gits)
    assert "bench-commits-" not in git(repo, "worktree", "list")  # the checkouts are gone
    # the series reads the record: the change is named, and the re-runs are no points of it
    shown = history(repo, venvs, results, "show", "--cell", KEY)
    assert f"re-run and bisected: first slower commit {slower[:10]}" in shown.stdout
    assert "status: change" in shown.stdout
    assert "6 points by date" in shown.stdout


@pytest.mark.parametrize("good,bad,words", [
    ("0" * 40, "HEAD", "is not in this clone"),
    ("HEAD", "HEAD", "GOOD and BAD are one commit"),
])
def test_commits_that_cannot_be_compared_are_refused_in_one_line(repo, tmp_path, good, bad, words):
    repo, _ = repo
    done = history(repo, tmp_path, tmp_path / "results", "commits", "--cell", KEY, "--profile", "smoke", "--good", good,
                   "--bad", bad)
    assert done.returncode == 2 and words in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_commit_whose_env_lock_differs_is_refused_before_anything_runs(repo, tmp_path):
    repo, (first, *_) = repo
    clone = tmp_path / "other"
    subprocess.run(["git", "clone", "--quiet", "--shared", str(repo), str(clone)], check=True)
    lock = clone / "envs" / "native-torch" / "requirements.txt"
    lock.write_text(lock.read_text() + "# another pin\n")
    changed = commit(clone, "another lock")
    done = history(clone, tmp_path, tmp_path / "results", "commits", "--cell", KEY, "--profile", "smoke",
                   "--good", first, "--bad", changed)
    assert done.returncode == 2
    assert f"envs/native-torch/requirements.txt at {first[:10]} differs from this checkout's" in done.stderr
    assert not (tmp_path / "results" / "confirm").exists() or not any((tmp_path / "results" / "confirm").iterdir())


def test_a_commit_whose_cell_fails_stops_the_search_with_its_log_and_a_record(repo, tmp_path):
    repo, (first, slower, last) = repo
    venvs = make_fake_envs(tmp_path / "venvs", ["native-torch"])
    results = tmp_path / "results"
    env_mode = {"FAKE_MODE_NATIVE_TORCH": "crash"}
    done = subprocess.run([sys.executable, "-m", "bench.studies.history", "commits", "--cell", KEY, "--profile",
                           "smoke",
                           "--good", first, "--bad", last, "--results-dir", str(results)], cwd=repo,
                          env={**os.environ, "BENCH_VENVS_DIR": str(venvs), **env_mode}, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 2
    (said,) = done.stderr.strip().splitlines()
    assert f"did not run at {first[:10]}" in said and "Segmentation fault" in said and ".log" in said
    (path,) = (results / "confirm").glob("*.confirm.json")
    record = json.loads(path.read_text())
    assert record["answer"] is None and "did not run" in record["stopped"]


@pytest.mark.parametrize("stop", ["TERM", "INT"])
def test_a_signal_ends_the_search_its_cell_and_worktrees_with_the_signals_status_and_a_record(repo, tmp_path, stop):
    """TERM or INT to bisect-commits once ended in a traceback (bench.base.lifetime.Terminated: 15), exit 1, and a step
    folder with no record beside it."""
    import signal
    import time

    repo, (first, slower, last) = repo
    venvs = make_fake_envs(tmp_path / "venvs", ["native-torch"])
    results, pid_file, scratch = tmp_path / "results", tmp_path / "cell.pid", tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "BENCH_VENVS_DIR": str(venvs), "FAKE_MODE_NATIVE_TORCH": "sleep",
           "FAKE_PID_FILE": str(pid_file), "TMPDIR": str(scratch)}
    proc = subprocess.Popen([sys.executable, "-m", "bench.studies.history", "commits", "--cell", KEY, "--profile",
                             "smoke",
                             "--good", first, "--bad", last, "--results-dir", str(results)], cwd=repo, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            # SIGINT as a terminal gives it: a suite run as a background job inherits it ignored
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
    deadline = time.monotonic() + 120
    while not pid_file.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    cell = int(pid_file.read_text())
    proc.send_signal(getattr(signal, f"SIG{stop}"))
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + getattr(signal, f"SIG{stop}"), out + err
    assert "Traceback" not in err, err
    (path,) = (results / "confirm").glob("*.confirm.json")
    record = json.loads(path.read_text())
    assert record["answer"] is None and record["stopped"].startswith(f"stopped by SIG{stop}"), record
    assert not Path(f"/proc/{cell}").exists() or "Z" in Path(f"/proc/{cell}/stat").read_text().split(")")[-1][:3]
    assert [p.name for p in scratch.iterdir() if p.name.startswith("bench-commits-")] == []  # the worktrees gone
    assert "bench-commits-" not in git(repo, "worktree", "list")
