"""Nothing lost, nothing mislabelled: a full disk, a killed orchestrator, two runs at once."""
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakes import bench_env, run_bench, smoke_run

from bench.catalogue.registry import plan_cells
from bench.record import results as results_module
from bench.record.results import load_all
from bench.run import runner

REPO = Path(__file__).resolve().parent.parent


bench = run_bench


def bert_cells():
    return plan_cells("smoke", backends=["jax"], models=["bert"])  # fit and predict


def test_a_failed_write_shows_the_result_and_stops_the_run_with_the_count_kept(venvs, tmp_path, monkeypatch):
    monkeypatch.setattr("bench.run.env_lookup.VENVS_DIR", venvs)
    real_write, writes = results_module.write_json_atomic, []

    def disk_fills_after_the_first(path, data):
        writes.append(path)
        if len(writes) > 1:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real_write(path, data)

    monkeypatch.setattr(results_module, "write_json_atomic", disk_fills_after_the_first)
    lines: list[str] = []
    with pytest.raises(runner.RunStopped, match=r"the disk is full .*No space left on device.*1 of 2 cells kept"):
        runner.run_cells(bert_cells(), tmp_path / "results", runner.RunOptions(echo=lines.append))
    assert [r.cell.task for r in load_all(tmp_path / "results")] == ["fit"]
    shown = "\n".join(lines)
    assert f"could not write {writes[1]}" in shown
    result = json.loads(
        shown.split("so that it is not lost:\n", 1)[1].splitlines()[0]
    )  # the whole result, raw steps included
    assert result["cell"]["task"] == "predict" and result["runs"][0]["timed_ms"] == [
        10.0 + i % 3 for i in range(result["cell"]["timed_steps"])
    ]
    log = next((tmp_path / "results" / "logs").rglob("jax__bert__predict*.log")).read_text()
    assert "could not write" in log and '"timed_ms"' in log
    # a rerun whose write fails leaves the earlier result where it was, not in history/
    monkeypatch.setattr(
        results_module,
        "write_json_atomic",
        lambda path, data: (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space left on device")),
    )
    with pytest.raises(runner.RunStopped):
        runner.run_cells(bert_cells()[:1], tmp_path / "results", runner.RunOptions(echo=lambda line: None))
    assert [r.cell.task for r in load_all(tmp_path / "results")] == ["fit"] and not list(
        (tmp_path / "results").rglob("history/*.json")
    )


def can_mount_tmpfs() -> bool:
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=16k tmpfs /mnt"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not can_mount_tmpfs(), reason="needs root and unshare -m to mount a tmpfs")
def test_a_full_disk_stops_the_run_in_one_line_before_a_cell_runs(venvs, tmp_path):
    """The issue's reproduction: a 16 KB tmpfs as the results folder."""
    results = tmp_path / "results"
    results.mkdir()
    command = " ".join(
        [
            sys.executable,
            "-m",
            "bench",
            "run",
            "--profile",
            "smoke",
            "--backend",
            "jax",
            "--model",
            "bert",
            "--results-dir",
            str(results),
        ]
    )
    out = subprocess.run(
        ["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=16k tmpfs {results} && {command}"],
        cwd=REPO,
        env=bench_env(venvs),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    assert "MiB free in" in out.stderr and "0 of 2 cells kept" in out.stderr and "--resume" in out.stderr


@pytest.mark.skipif(not can_mount_tmpfs(), reason="needs root and unshare -m to mount a tmpfs")
@pytest.mark.parametrize(
    "command", [["table"], ["export"], ["plan", "--profile", "smoke"], smoke_run("--model", "bert")]
)
def test_a_read_only_results_folder_is_one_line_not_a_traceback(venvs, tmp_path, command):
    """`make table`, `make export` and `make plan` on a read-only folder once ended in an OSError traceback."""
    seed, results = tmp_path / "seed", tmp_path / "results"
    ok_file(seed)
    results.mkdir()
    bench_command = " ".join([sys.executable, "-m", "bench", *command, "--results-dir", str(results)])
    mount = f"mount -t tmpfs -o size=1m tmpfs {results} && cp -r {seed}/. {results} && mount -o remount,ro {results}"
    out = subprocess.run(
        ["unshare", "-m", "sh", "-c", f"{mount} && {bench_command}"],
        cwd=REPO, env=bench_env(venvs), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stdout + out.stderr
    assert out.stderr.count("\n") == 1 and "Read-only file system" in out.stderr, out.stderr


@pytest.mark.parametrize("command", [["table"], smoke_run("--backend", "jax", "--model", "bert")])
def test_a_results_path_too_long_is_one_line_not_a_traceback(venvs, tmp_path, command):
    """A results path past PATH_MAX once ended in ENAMETOOLONG from inside the run (warn_over_timeout)."""
    for results in (tmp_path / ("a" * 300), tmp_path.joinpath(*["b" * 200] * 25)):
        out = bench([*command, "--results-dir", str(results)], bench_env(venvs))
        assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stdout + out.stderr
        assert out.stderr.endswith(": File name too long\n") and "Traceback" not in out.stderr, out.stderr


def test_a_disk_that_fills_before_a_cells_log_opens_is_one_line(venvs, tmp_path, monkeypatch, capsys):
    """The disk filling between the pre-flight check and the opening of a cell's log once ended in a traceback."""
    from bench import cli

    monkeypatch.setattr("bench.run.env_lookup.VENVS_DIR", venvs)

    def full(results_dir, cell, repeat):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(results_dir / "logs" / f"{cell.key}.log"))

    monkeypatch.setattr(runner, "new_log_path", full)
    args = smoke_run("--backend", "jax", "--model", "bert", results=tmp_path)
    code, err = cli.main(args), capsys.readouterr().err
    log = tmp_path / "logs" / "jax__bert__fit__bs2__default.log"
    assert code == 2 and err == f"error: No space left on device: {log}\n", err


REAL_CELL_THAT_SLEEPS = '''#!{python}
# The real bench/measure/cell.py main() around a measurement that takes two minutes (a quiet 7B step).
import json, os, sys, time
from pathlib import Path
sys.path.insert(0, {repo!r})
import bench.measure.cell
from bench.catalogue.registry import Cell

def two_minutes(cell):
    with open(os.environ["FAKE_PID_FILE"] + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.replace(os.environ["FAKE_PID_FILE"] + ".tmp", os.environ["FAKE_PID_FILE"])
    time.sleep(120)

bench.measure.cell.measure = two_minutes
args = sys.argv[1:]
sys.exit(bench.measure.cell.main(Cell.from_dict(json.loads(args[args.index("--cell") + 1])), Path(args[args.index("--out") + 1])))
'''


def is_running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie lingers where PID 1 does not reap)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_a_cell_dies_with_its_orchestrator_and_leaves_no_scratch_folder(venvs, tmp_path):
    python = venvs / "jax" / "bin" / "python"
    python.write_text(REAL_CELL_THAT_SLEEPS.format(python=sys.executable, repo=str(REPO)))
    pid_file, scratch = tmp_path / "cell.pid", tmp_path / "tmp"
    scratch.mkdir()
    env = {**bench_env(venvs), "FAKE_PID_FILE": str(pid_file), "TMPDIR": str(scratch)}
    env.pop("BENCH_COMPILE_CACHE_DIR", None)  # the run's own caches, not the test suite's shared one
    orchestrator = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bench",
            "run",
            "--profile",
            "smoke",
            "--backend",
            "jax",
            "--model",
            "bert",
            "--task",
            "fit",
            "--results-dir",
            str(tmp_path / "results"),
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not pid_file.exists():
        assert orchestrator.poll() is None and time.monotonic() < deadline, "the cell never started"
        time.sleep(0.05)
    cell = int(pid_file.read_text())
    # the cell's result folder and the run's compile caches (bench/catalogue/compile_cache.py)
    assert sorted(p.name.split("-")[1] for p in scratch.iterdir()) == ["cell", "compile"]
    orchestrator.kill()  # kill -9: no handler of the orchestrator's runs
    orchestrator.wait()
    deadline = time.monotonic() + 10
    while is_running(cell) and time.monotonic() < deadline:
        time.sleep(0.1)
    if is_running(cell):
        os.kill(cell, signal.SIGKILL)  # not left behind by a failing test
        pytest.fail("the cell outlived its orchestrator")
    assert list(scratch.iterdir()) == [], "the cell's scratch folder or the run's compile caches leaked"


def test_a_second_run_into_the_same_results_folder_is_refused_naming_the_first(venvs, tmp_path):
    results, pid_file = tmp_path / "results", tmp_path / "cell.pid"
    env = {**bench_env(venvs, jax="sleep"), "FAKE_PID_FILE": str(pid_file)}
    args = [
        "run",
        "--profile",
        "smoke",
        "--backend",
        "jax",
        "--model",
        "bert",
        "--task",
        "fit",
        "--results-dir",
        str(results),
    ]
    first = subprocess.Popen(
        [sys.executable, "-m", "bench", *args], cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60
        while not pid_file.exists():
            assert first.poll() is None and time.monotonic() < deadline, "the first run's cell never started"
            time.sleep(0.05)
        second = bench(args, bench_env(venvs))
        assert second.returncode == 2, second.stdout + second.stderr
        assert second.stderr.startswith(f"error: another run is writing to {results} (PID {first.pid} on ")
        assert "bench run --profile smoke" in second.stderr and second.stderr.count("\n") == 1
        assert not (results / "smoke").exists()  # nothing written by the refused run
    finally:
        first.kill()  # kill -9: the lock is left naming a process that no longer runs
        first.wait()
        os.kill(int(pid_file.read_text()), signal.SIGKILL)  # the fake cell (no bench/measure/cell.py to die with it)
    third = bench(args, bench_env(venvs))
    assert third.returncode == 0, third.stdout + third.stderr
    assert f"took over the lock of {results} left by a run that no longer runs (PID {first.pid} on " in third.stdout
    assert [r.status for r in load_all(results)] == ["ok"]


def test_no_test_reads_the_working_trees_results():
    """`make bench-all` then `make test` (the README's two commands): the run rewrites results/ in the working tree,
    so a test that reads committed results as fixtures reads HEAD's (tests/committed.py), never the working tree's."""
    import re

    working_tree_results = re.compile(r"""(REPO|REPO_ROOT|parent\.parent)\s*/\s*["']results["']""")
    offenders = [
        f"{path.name}:{n}"
        for path in sorted((REPO / "tests").glob("*.py"))
        if path.name != "committed.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if working_tree_results.search(line)
    ]
    assert offenders == [], f"tests reading the working tree's results/ (use tests/committed.py): {offenders}"


def test_the_committed_results_fixture_is_heads_not_the_working_trees():
    from committed import committed_results

    head = subprocess.run(
        ["git", "show", "HEAD:results/smoke/cpu-amd-epyc-2-cores--64dc9908f650/jax__bert__fit__bs2__default.json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert (
        committed_results() / "smoke" / "cpu-amd-epyc-2-cores--64dc9908f650" / "jax__bert__fit__bs2__default.json"
    ).read_text() == head


@pytest.mark.parametrize("profile,warns", [("smoke", False), ("paper", True), (None, False)])
def test_the_doctor_compares_memory_with_the_plan_of_the_profile_about_to_run(tmp_path, profile, warns):
    """A smoke run is not warned by the paper plan's largest cell (plan.json is whichever profile was planned last)."""
    paper = '{"profile": "paper", "cells": [{"key": "keras2__sam__fit__bs1__default", "memory_gib": 100000}]}'
    (tmp_path / "plan.json").write_text(paper)
    (tmp_path / "plan-paper.json").write_text(paper)
    if profile is None and shutil.which("nvidia-smi"):
        pytest.skip("the default profile is smoke only where no GPU is seen")
    out = bench(
        ["doctor", "--results-dir", str(tmp_path), *(["--profile", profile] if profile else [])], dict(os.environ)
    )
    line = next(l for l in out.stdout.splitlines() if "memory" in l)
    assert ("keras2__sam__fit__bs1__default" in line) == warns and line.startswith("warn") == warns, line
    if not warns:
        assert f"no plan at {tmp_path / 'plan-smoke.json'}" in line


def test_the_doctor_reads_the_plan_the_run_will_use_and_compares_ram_only_with_cells_on_the_cpu(tmp_path):
    """With CUDA_VISIBLE_DEVICES= on a GPU machine the doctor once read the paper plan (the run is smoke), and with a
    GPU in use compared host RAM (23.5 GiB) with a GPU cell's 33.5 GiB."""
    from dataclasses import replace

    from bench.run.doctor import OK, WARN, Probes, check_memory, profile_plan

    driver = lambda: "550.54.15"  # noqa: E731
    assert profile_plan(tmp_path, None, driver, {"CUDA_VISIBLE_DEVICES": ""}) == tmp_path / "plan-smoke.json"
    assert profile_plan(tmp_path, None, driver, {"CUDA_VISIBLE_DEVICES": "0"}) == tmp_path / "plan-paper.json"
    assert profile_plan(tmp_path, None, lambda: None, {}) == tmp_path / "plan-smoke.json"
    paper = {"cells": [{"key": "keras2__sam__fit__bs1__default", "memory_gib": 33.5}]}
    probes = Probes(
        plan_path=tmp_path / "plan-paper.json",
        total_memory_bytes=lambda: int(23.5 * 2**30),
        nvidia_driver=driver,
        read_plan=lambda path: paper,
        environ={},
    )
    on_gpu = check_memory(probes)
    assert on_gpu.verdict == OK and "on the GPU" in on_gpu.value and "needs" not in on_gpu.value, on_gpu
    on_cpu = check_memory(replace(probes, environ={"CUDA_VISIBLE_DEVICES": "-1"}))  # --profile paper on the CPU
    assert on_cpu.verdict == WARN and "keras2__sam__fit__bs1__default) needs 33.5 GiB" in on_cpu.value, on_cpu


@pytest.mark.parametrize("umask,mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_result_files_and_reports_honour_the_umask(tmp_path, umask, mode):
    """Like the logs and CSVs: another user of a shared results folder can read them (mkstemp alone makes 0600)."""
    from test_export import make_result

    from bench.base.atomic import current_umask, write_text_atomic

    previous = os.umask(umask)
    try:
        assert current_umask() == umask
        written = make_result().write(tmp_path / "results")
        write_text_atomic(tmp_path / "results" / "RESULTS.md", "# results\n")
    finally:
        os.umask(previous)
    assert oct(written.stat().st_mode & 0o777) == oct(mode)
    assert oct((tmp_path / "results" / "RESULTS.md").stat().st_mode & 0o777) == oct(mode)


def test_a_rerun_keeps_the_log_of_the_result_it_moves_to_history(venvs, tmp_path):
    results = tmp_path / "results"
    args = [
        "run",
        "--profile",
        "smoke",
        "--repeats",  # one process a run: one log each
        "1",
        "--backend",
        "jax",
        "--model",
        "bert",
        "--task",
        "fit",
        "--results-dir",
        str(results),
    ]
    for _ in range(2):
        out = bench(args, bench_env(venvs))
        assert out.returncode == 0, out.stdout + out.stderr
    (current,) = load_all(results)
    (earlier,) = [results_module.load(p) for p in results.rglob("history/*.json")]
    logs = [results / r.runs[0].process["log"] for r in (earlier, current)]
    assert logs[0] != logs[1] and all("fake cell jax bert fit" in log.read_text() for log in logs)
    assert sorted(p.name for p in (results / "logs" / "smoke").iterdir()) == sorted(log.name for log in logs)


def ok_file(results: Path, backend="jax", task="fit") -> Path:
    from test_export import make_result

    return make_result(backend=backend, task=task).write(results)


@pytest.mark.parametrize(
    "edit,words",
    [
        (lambda d: d["summary"].update(median=float("nan")), "summary median is nan, but the raw step times give 11.0"),
        (lambda d: d["summary"].update(median=-1), "summary median is -1, but the raw step times give 11.0"),
        (lambda d: d["runs"][0]["stats"].update(p90=99.0), "runs[0].stats p90 is 99.0, but the raw step times give"),
        (lambda d: d.update(summary=None), "summary is None, but the raw step times give a median of 11.0"),
    ],
    ids=["nan", "minus-one", "run-stats", "missing"],
)
def test_a_stored_summary_that_disagrees_with_the_raw_times_is_invalid(tmp_path, edit, words):
    path = ok_file(tmp_path / "results")
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))  # json writes NaN as NaN, which json.loads reads back
    with pytest.raises(results_module.CorruptResult) as e:
        results_module.load(path)
    assert words in str(e.value)


def test_validate_names_misplaced_and_duplicate_results(venvs, tmp_path):
    results = tmp_path / "results"
    good = ok_file(results)
    renamed = good.with_name("jax__bert__predict__bs2__default.json")  # a fit result under predict's name
    shutil.copy(good, renamed)
    other_profile = results / "paper" / good.parent.name / good.name  # a smoke result in the paper folder
    other_profile.parent.mkdir(parents=True)
    shutil.copy(good, other_profile)
    out = bench(["validate", "--results-dir", str(results)], bench_env(venvs))
    assert out.returncode == 2, out.stdout + out.stderr
    assert f"{renamed}: misplaced: its cell's result belongs at {good}" in out.stderr
    assert f"{other_profile}: misplaced: its cell's result belongs at {good}" in out.stderr
    assert out.stderr.count("a second result of the cell of") == 2
    export = bench(
        ["export", "--results-dir", str(results)], bench_env(venvs)
    )  # writes its rows, and says which are suspect
    assert (
        export.returncode == 0
        and f"warning: {renamed}: misplaced" in export.stderr
        and "(python -m bench validate)" in export.stderr
    )


def test_every_unreadable_file_is_named_with_the_fix_and_a_run_that_does_not_touch_them_goes_on(venvs, tmp_path):
    results = tmp_path / "results"
    args = [
        "run",
        "--profile",
        "smoke",
        "--backend",
        "jax",
        "--model",
        "bert",
        "--task",
        "fit",
        "--results-dir",
        str(results),
    ]
    assert bench(args, bench_env(venvs)).returncode == 0
    (fit,) = [p for p in results.rglob("*.json") if "history" not in p.parts]
    broken = [
        fit.with_name("torch__bert__fit__bs2__default.json"),
        fit.with_name("torch__bert__predict__bs2__default.json"),
    ]
    broken[0].write_text('{"schema_version": 1, "cell": ')
    broken[1].write_text("[]")
    for command in (
        ["table", "--results-dir", str(results)],
        ["export", "--results-dir", str(results)],
        ["validate", "--results-dir", str(results)],
    ):
        out = bench(command, bench_env(venvs))
        assert out.returncode == 2, (command, out.stdout + out.stderr)
        assert all(f"cannot read result file {p}" in out.stderr for p in broken), (command, out.stderr)
        assert f"python -m bench validate --results-dir {results} --quarantine" in out.stderr
    # a run of jax cells goes on (it writes neither file), naming both
    out = bench(args, bench_env(venvs))
    assert out.returncode == 0, out.stdout + out.stderr
    assert all(f"warning: cannot read result file {p}" in out.stdout for p in broken)
    # a run that would write over one of them stops, naming it, before any cell runs
    out = bench([*args[:4], "torch", *args[5:]], bench_env(venvs))
    assert (
        out.returncode == 2
        and f"cannot read result file {broken[0]}" in out.stderr
        and str(broken[1]) not in out.stderr
    )
    # quarantine moves both aside; then everything reads
    out = bench(["validate", "--results-dir", str(results), "--quarantine"], bench_env(venvs))
    assert out.returncode == 0, out.stdout + out.stderr
    assert not any(p.exists() for p in broken)
    assert sorted(p.name for p in (results / "quarantine").rglob("*.json")) == sorted(p.name for p in broken)
    assert bench(["export", "--results-dir", str(results)], bench_env(venvs)).returncode == 0


def test_export_of_a_folder_with_no_results_is_refused_and_creates_nothing(venvs, tmp_path):
    typo = tmp_path / "reslts"
    out = bench(["export", "--results-dir", str(typo)], bench_env(venvs))
    assert (
        out.returncode == 2
        and out.stderr == f"error: no result files under {typo}: nothing to export (is the results folder right?)\n"
    )
    assert not typo.exists()


def test_table_of_a_folder_that_is_not_there_is_refused_and_creates_nothing(venvs, tmp_path):
    typo = tmp_path / "reslts"
    out = bench(["table", "--results-dir", str(typo)], bench_env(venvs))
    assert out.returncode == 2 and out.stderr == (
        f"error: no results folder {typo}: nothing to render (is the results folder right?)\n"
    ), out.stdout + out.stderr
    assert not typo.exists()


def test_without_tabulate_the_message_names_what_installs_it_in_that_python(tmp_path, monkeypatch):
    """`make bench ENV=current` renders in the user's own Python: `make env-tools` (the fix once named) builds
    another env and leaves that Python without tabulate."""
    from bench.base.errors import BenchError
    from bench.record import text
    from bench.studies.table import render

    monkeypatch.setattr(text, "tabulate", None)
    monkeypatch.setattr(text, "env_stamp", lambda: None)  # not a built env: ENV=current, an own environment
    with pytest.raises(BenchError) as own:
        render(tmp_path, tmp_path / "RESULTS.md")
    assert f"{sys.executable} -m pip install tabulate" in str(own.value) and "make env-tools" not in str(own.value)
    monkeypatch.setattr(text, "env_stamp", lambda: {"backend": "tools"})
    with pytest.raises(BenchError, match="tabulate is needed to render the tables; rebuild the tools env"):
        render(tmp_path, tmp_path / "RESULTS.md")


def make(*args, tmp_path):
    uv = tmp_path / "uv"
    uv.write_text("")  # newer than containers/uv-requirements.txt: make does not fetch uv
    return subprocess.run(
        ["make", "--no-print-directory", *args, f"UV={uv}"], cwd=REPO, capture_output=True, text=True, timeout=60
    )


@pytest.mark.skipif(not shutil.which("make"), reason="GNU make is not installed")
def test_make_quotes_a_results_folder_with_a_space(venvs, tmp_path):
    results = tmp_path / "my results"
    ok_file(results)
    out = make("-n", "export", f"RESULTS={results}", tmp_path=tmp_path)
    command = out.stdout.strip().splitlines()[-1]
    assert f'--results-dir "{results}"' in command, command
    ran = subprocess.run(
        ["bash", "-c", command.replace(".venvs/tools/bin/python", sys.executable, 1)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 0 and (results / "results.csv").exists(), ran.stdout + ran.stderr


@pytest.mark.skipif(not shutil.which("make"), reason="GNU make is not installed")
@pytest.mark.parametrize("target", ["clean-results", "table", "export", "bench", "submit-status", "plan", "help"])
def test_make_refuses_an_empty_results_for_every_target(target, tmp_path):
    """`make clean-results RESULTS=` once ran `rm -rf "/logs"`; `make table RESULTS=` read the checkout as results."""
    out = make(target, "BACKEND=jax", "MODEL=bert", "RESULTS=", tmp_path=tmp_path)
    assert out.returncode == 2 and out.stdout == "", out.stdout + out.stderr
    assert out.stderr.count("\n") == 1 and "RESULTS= is empty" in out.stderr, out.stderr


@pytest.mark.parametrize("command", ["table", "export", "validate", "clean-results", "plan", "submit-status"])
@pytest.mark.parametrize("folder", ["", " ", ".", "..", pytest.param(str(REPO), id="the-checkout"), "docs", "docs/schema",
                                    ".venvs", "Makefile"])  # an id without the checkout's path: one in every clone
def test_a_results_folder_that_is_not_one_is_refused_in_one_line(command, folder, capsys, monkeypatch):
    from bench.cli_parsers import build_parser

    monkeypatch.chdir(REPO)
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args([command, "--results-dir", folder])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.count("\n") == 1, err
    assert "not a results folder" in err or "is empty" in err, err


def test_quarantine_moves_only_result_files_and_clean_results_only_logs(venvs, tmp_path):
    """Followed in a checkout, `validate --quarantine` once moved docs/schema/*.json; clean-results was `rm -rf`."""
    results = tmp_path / "results"
    bad = ok_file(results).with_name("torch__bert__fit__bs2__default.json")
    bad.write_text("[]")
    foreign = [results / "schema" / "result-v1.schema.json", results / "notes.json", results / "smoke" / "x.json"]
    for path in foreign:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    out = bench(["validate", "--results-dir", str(results), "--quarantine"], bench_env(venvs))
    assert out.returncode == 2 and f"moved unreadable {bad} to" in out.stdout, out.stdout + out.stderr
    assert not bad.exists() and all(path.exists() for path in foreign)
    assert all(f"left {path} in place" in out.stdout for path in foreign), out.stdout
    assert "--quarantine" not in out.stderr  # what is left is not the suite's to move
    logs = results / "logs"
    written = [logs / "smoke" / "jax__bert__fit__bs2__default.20261125T000000Z.0.log", logs / "grid" / "a" / "w.log"]
    kept = [logs / "canary" / "keep.txt", logs / "README.md"]
    for path in written + kept:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    uv = tmp_path / "uv"
    uv.write_text("")
    out = subprocess.run(
        ["make", "--no-print-directory", "clean-results", f"RESULTS={results}", f"PYTHON={sys.executable}", f"UV={uv}"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    assert not any(path.exists() for path in written) and all(path.exists() for path in kept)
    assert not (logs / "smoke").exists() and (results / "smoke").is_dir()  # empty log folders go, results stay


@pytest.mark.skipif(not shutil.which("make"), reason="GNU make is not installed")
def test_make_validate_is_a_target_make_help_lists(tmp_path):
    """The warnings about unreadable files point to validate: `make validate` runs it (QUARANTINE=1 moves them)."""
    import re

    assert re.search(r"^  validate +Check every result file", make("help", tmp_path=tmp_path).stdout, re.M)
    results = tmp_path / "my results"
    bad = ok_file(results).with_name("torch__bert__fit__bs2__default.json")
    bad.write_text("[]")
    command = make("-n", "validate", f"RESULTS={results}", "QUARANTINE=1", tmp_path=tmp_path).stdout.splitlines()[-1]
    ran = subprocess.run(
        ["bash", "-c", command.replace(".venvs/tools/bin/python", sys.executable, 1)],
        cwd=REPO, capture_output=True, text=True,
    )  # fmt: skip
    assert ran.returncode == 0 and f"moved unreadable {bad}" in ran.stdout and not bad.exists(), ran.stdout + ran.stderr


@pytest.mark.skipif(not shutil.which("make"), reason="GNU make is not installed")
@pytest.mark.parametrize("target", ["bench", "bench-all"])
def test_make_passes_batch_on_so_batch_0_is_refused_as_steps_0_is(target, tmp_path):
    """`make bench BATCH=0` (and BATCH=4) was once dropped silently: no --batch-size reached the run. A count of 0
    is now refused by make itself, before anything is built; the run refuses one it is given as well."""
    for variable, option in (("BATCH", "--batch-size"), ("STEPS", "--steps")):
        command = make("-n", target, "BACKEND=jax", "MODEL=bert", f"{variable}=4", tmp_path=tmp_path).stdout
        assert f"{option} 4" in command.strip().splitlines()[-1], command
        refused = make("-n", target, "BACKEND=jax", "MODEL=bert", f"{variable}=0", tmp_path=tmp_path)
        assert refused.returncode == 2 and refused.stdout == "", refused.stdout
        assert refused.stderr.count("\n") == 1 and f"{variable}=0: a count is a whole number above 0" in refused.stderr
        ran = subprocess.run([sys.executable, "-m", "bench", "run", "--backend", "jax", "--model", "bert", option, "0"],
                             cwd=REPO, capture_output=True, text=True)  # fmt: skip
        assert ran.returncode == 2 and ran.stderr.count("\n") == 1, ran.stdout + ran.stderr
        assert f"argument {option}: must be a positive integer, got '0'" in ran.stderr, ran.stderr


@pytest.mark.skipif(not shutil.which("make"), reason="GNU make is not installed")
def test_make_compare_quotes_a_b_and_out(tmp_path):
    """`make compare A="<dir with a space>"` once failed with "unrecognized arguments"."""
    a, b, out = tmp_path / "run a", tmp_path / "run b", tmp_path / "my out" / "c.md"
    ok_file(a), ok_file(b)
    command = make("-n", "compare", f"A={a}", f"B={b}", f"OUT={out}", tmp_path=tmp_path).stdout.strip().splitlines()[-1]
    ran = subprocess.run(
        ["bash", "-c", command.replace(".venvs/tools/bin/python", sys.executable, 1)],
        cwd=REPO, capture_output=True, text=True,
    )  # fmt: skip
    assert ran.returncode == 0 and out.exists(), ran.stdout + ran.stderr


@pytest.mark.skipif(not shutil.which("make"), reason="GNU make is not installed")
def test_make_takes_resume_yes_and_refuses_a_value_it_would_ignore(tmp_path):
    assert "--resume" in make("-n", "bench-all", "RESUME=yes", tmp_path=tmp_path).stdout.splitlines()[-1]
    refused = make("-n", "bench-all", "RESUME=maybe", tmp_path=tmp_path)
    assert refused.returncode == 2 and "RESUME=maybe: a yes/no variable is 1, yes or true" in refused.stderr


@pytest.mark.skipif(not shutil.which("make"), reason="GNU make is not installed")
def test_make_bench_all_narrows_by_model_and_backend_instead_of_ignoring_them(tmp_path):
    """`make bench-all BACKEND=native-torch MODEL=bert,sam` once ran the whole 72-cell matrix: the two variables
    were not passed on. They narrow the run, as TASK= does."""
    command = make("-n", "bench-all", "BACKEND=native-torch", "MODEL=bert,sam", "TASK=fit", tmp_path=tmp_path)
    run = command.stdout.splitlines()[-1].split()
    assert run[run.index("--backend") + 1] == "native-torch" and run[run.index("--model") + 1] == "bert,sam", run
    assert run[run.index("--task") + 1] == "fit"
    assert "--model" not in make("-n", "bench-all", tmp_path=tmp_path).stdout.splitlines()[-1]


@pytest.mark.skipif(not shutil.which("make"), reason="GNU make is not installed")
def test_make_env_with_an_unknown_stack_says_so_once(tmp_path):
    out = make("env", "BACKEND=jax", "STACK=1999", tmp_path=tmp_path)
    assert out.returncode != 0
    assert "unknown stack '1999'" in out.stderr and "no env" not in out.stdout + out.stderr, out.stdout + out.stderr


def test_a_name_given_twice_in_a_list_is_one_cell(venvs, tmp_path):
    """MODEL=bert,bert once ran the cell twice into one result (n=6, repeats_planned 1); BACKEND=jax,jax
    MODEL=bert,bert made 8 Slurm array tasks for 2 cells. Every list keeps its first of each name, in order."""
    from bench.base.argtypes import csv_list
    from bench.run.cluster.jobdir import JobDir

    assert csv_list("torch,jax torch,,jax") == ["torch", "jax"]
    results = tmp_path / "results"
    twice = ["--profile", "smoke", "--backend", "jax,jax", "--model", "bert,bert", "--task", "predict,predict"]
    out = bench(
        ["run", *twice, "--variant", "default,default", "--dry-run", "--results-dir", str(results)], bench_env(venvs)
    )
    assert out.returncode == 0 and out.stdout.splitlines()[1:] == ["jax__bert__predict__bs2__default"], out.stdout
    out = bench(["submit", *twice, "--dry-run", "--job-name", "twice", "--results-dir", str(results)], bench_env(venvs))
    assert out.returncode == 0, out.stdout + out.stderr
    assert [c.key for _, c in JobDir(results / "slurm" / "twice").cells()] == ["jax__bert__predict__bs2__default"]


def test_dry_run_with_resume_lists_only_what_resume_would_run(venvs, tmp_path):
    results = tmp_path / "results"
    args = smoke_run("--backend", "jax", "--model", "bert", results=results)
    assert bench([*args, "--task", "fit"], bench_env(venvs)).returncode == 0
    out = bench([*args, "--dry-run", "--resume"], bench_env(venvs))
    assert out.returncode == 0 and out.stdout.splitlines()[1:] == ["jax__bert__predict__bs2__default"], (
        out.stdout + out.stderr
    )
    assert "skipped (resume): 1 cells already measured" in out.stderr


def test_a_result_with_fewer_repeats_than_planned_says_so():
    from test_export import make_result

    result = make_result()
    result.runs[0].first_step_ms = 500.0
    result.provenance["repeats_planned"] = 3
    assert result.describe().endswith("; only 1 of 3 repeats")
    result.provenance["repeats_planned"] = 1
    assert "repeats" not in result.describe()


def test_a_derived_step_figure_at_or_below_zero_makes_the_run_unsteady_and_prints_no_cv():
    """Native compiled StableDiffusion predict once recorded derived steps [-2901, 232, 406] ms as ok with cv 0.0%:
    the check looked only at the median, and the cv of a mean at or below zero is stored as 0."""
    from test_results import make_result, schema_2_run

    from bench.measure.cell import impossible_figures

    assert impossible_figures([10.0, 12.0, 11.0]) is None
    why = impossible_figures([-2901.0, 232.0, 406.0])
    assert why and why.startswith("1 of 3 derived per-step figures are zero or negative (lowest -2901 ms)"), why
    assert impossible_figures([0.0, 5.0, 6.0]).startswith("1 of 3")
    recorded = make_result([schema_2_run(timed_ms=[-2901.0, 232.0, 406.0])])  # ok, as such files were written
    assert "cv 0.0%" not in recorded.describe() and "no cv: a step figure is zero or negative" in recorded.describe()
    assert "cv 9.1%" in make_result().describe()


def test_every_committed_result_has_its_tasks_unit():
    """An NA generate cell is ms/call like a measured one: the unit comes from the task, whatever the status."""
    from committed import committed_results

    from bench.catalogue.registry import MODELS, get_model

    wrong = [
        f"{r.cell.key}: {r.unit}"
        for r in load_all(committed_results())
        if r.cell.model in MODELS
        and r.cell.task in get_model(r.cell.model).tasks()
        and r.unit != results_module.task_unit(r.cell)
    ]
    assert wrong == []


def test_a_step_count_that_cannot_end_within_the_timeout_is_warned(venvs, tmp_path, monkeypatch):
    monkeypatch.setattr("bench.run.env_lookup.VENVS_DIR", venvs)
    results = tmp_path / "results"
    cell = plan_cells("smoke", backends=["jax"], models=["bert"], tasks=["fit"])[0]
    runner.run_cells([cell], results, runner.RunOptions(echo=lambda line: None))  # a median of 11 ms (the fake cell)
    many = plan_cells("smoke", backends=["jax"], models=["bert"], tasks=["fit"], timed_steps=20_000)[0]
    lines: list[str] = []
    runner.run_cells([many], results, runner.RunOptions(timeout_s=5, echo=lines.append))
    assert any(
        line.startswith("warning: jax__bert__fit__bs2__default is estimated at 0:03:40")
        and "over its 0:00:05 timeout" in line
        for line in lines
    ), lines
    lines.clear()
    runner.run_cells([cell], results, runner.RunOptions(echo=lines.append))
    assert not any("warning" in line for line in lines)


def test_every_test_docs_reliability_cites_exists():
    """docs/RELIABILITY.md states what each failure does and names the test that shows it: those tests exist."""
    import re

    cited = re.findall(r"`(test_\w+\.py)::(test_\w+\*?)`", (REPO / "docs" / "RELIABILITY.md").read_text())
    assert len(cited) >= 20
    missing = []
    for file, name in cited:
        source = (REPO / "tests" / file).read_text()
        ending = "" if name.endswith("*") else r"\("  # test_make_*: any test of that prefix
        pattern = "^def " + re.escape(name.rstrip("*")) + ending
        if not re.search(pattern, source, re.M):
            missing.append(f"{file}::{name}")
    assert missing == []


def test_a_disk_full_mid_cell_of_several_processes_shows_the_result_not_a_thread_traceback(venvs, tmp_path, monkeypatch):
    """Each process's log on a full disk (/dev/full), then the result's write refused too: the cell's processes
    all run, its result is shown with where it could not be written, and no thread dies on the log's write."""
    monkeypatch.setattr("bench.run.env_lookup.VENVS_DIR", venvs)
    real_new_log_path = runner.new_log_path

    def log_on_a_full_disk(results_dir, cell, repeat):
        path = real_new_log_path(results_dir, cell, repeat)
        path.unlink()
        path.symlink_to("/dev/full")
        return path

    monkeypatch.setattr(runner, "new_log_path", log_on_a_full_disk)
    monkeypatch.setattr(
        results_module, "write_json_atomic",
        lambda path, data: (_ for _ in ()).throw(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))),
    )  # fmt: skip
    died: list = []
    monkeypatch.setattr("threading.excepthook", died.append)
    lines: list[str] = []
    with pytest.raises(runner.RunStopped, match="the disk is full"):
        runner.run_cells(bert_cells()[:1], tmp_path / "results", runner.RunOptions(repeats=2, echo=lines.append))
    assert not died, died
    shown = "\n".join(lines)
    assert "could not write the log" in shown and "could not write " + str(tmp_path / "results") in shown
    result = json.loads(shown.split("so that it is not lost:\n", 1)[1].splitlines()[0])
    assert len(result["runs"]) == 2 and all(run["status"] == "ok" for run in result["runs"])


def test_a_full_disk_before_a_cells_next_process_keeps_its_finished_ones(venvs, tmp_path, monkeypatch):
    monkeypatch.setattr("bench.run.env_lookup.VENVS_DIR", venvs)
    checks = []

    def fills_after_the_first_process(results_dir, kept, of):
        checks.append(kept)
        if len(checks) > 1:
            raise runner.RunStopped("only 1.0 MiB free")

    monkeypatch.setattr(runner, "check_free_space", fills_after_the_first_process)
    with pytest.raises(runner.RunStopped):
        runner.run_cells(bert_cells()[:1], tmp_path / "results", runner.RunOptions(repeats=2, echo=lambda line: None))
    assert [len(r.runs) for r in load_all(tmp_path / "results")] == [1]


HOLDER = """
import sys
from pathlib import Path
from bench.base.runlock import hold
hold(Path(sys.argv[1]))
print("held", flush=True)
sys.stdin.read()
"""


def writers_of_a_results_folder(results: Path) -> dict:
    """Every writer of a results folder besides `make bench` (tuning is a `bench run`: its own test above), called
    so that it would start its work at once."""
    from bench import cli
    from bench.run.ceilings import measure_machine
    from bench.studies.gpucheck import run as gpucheck
    from bench.studies.grid.run import run_grid
    from bench.studies.noise import run as study
    from bench.studies.overhead.run import run_overhead
    from bench.studies.parity import run as parity_run
    from bench.studies.sweep.bisect import run_bisect
    from bench.studies.sweep.run import run_sweep

    return {
        "sweep": lambda: run_sweep(None, results),
        "bisect": lambda: run_bisect(None, "key", "1.0", "2.0", results),
        "grid": lambda: run_grid([], [], None, results),
        "overhead": lambda: run_overhead(None, results),
        "noise": lambda: study.main(["--cells", "jax__bert__predict__bs2__default", "--results-dir", str(results)]),
        "ceilings": lambda: measure_machine(results, results / "venvs"),
        "clean-results": lambda: cli.main(["clean-results", "--results-dir", str(results)]),
        "quarantine": lambda: cli.main(["validate", "--results-dir", str(results), "--quarantine"]),
        "parity": lambda: parity_run.main(["--results-dir", str(results)]),
        "gpu-check": lambda: gpucheck.run(results),
    }


@pytest.mark.parametrize(
    "writer",
    ["sweep", "bisect", "grid", "overhead", "noise", "ceilings", "clean-results", "quarantine", "parity", "gpu-check"],
)
def test_every_writer_of_a_results_folder_is_refused_while_another_run_holds_it(tmp_path, monkeypatch, capsys, writer):
    from bench.base.errors import BenchError
    from bench.studies.noise.run import Study

    results = tmp_path / "results"
    results.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(results)], cwd=REPO, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout.readline() == "held\n"
        monkeypatch.setattr(Study, "run", lambda self: pytest.fail("the noise study ran beside another run"))
        monkeypatch.setattr("bench.studies.parity.run.run_all", lambda *a: pytest.fail("parity ran beside another run"))
        monkeypatch.setattr("bench.studies.gpucheck.run.preflight", lambda: False)  # as on a GPU machine
        monkeypatch.setattr("bench.studies.gpucheck.run.run_checks", lambda *a: pytest.fail("the GPU check ran beside another run"))
        try:
            code = writers_of_a_results_folder(results)[writer]()
        except BenchError as e:
            said = str(e)
        else:
            said = capsys.readouterr().err
            assert code == 2, said
        assert f"another run is writing to {results} (PID {holder.pid} " in said, said
    finally:
        holder.communicate("")


def test_validate_reads_the_sweeps_and_the_overhead_study_as_the_report_does(tmp_path, capsys):
    """A result that is not a sweep's under sweep/, a corrupt sweep file, a corrupt overhead file: validate names
    each (it once read none of them and said all valid while make table failed), and the sweep report is one line."""
    from bench import cli
    from bench.studies.sweep import cli as sweep_cli

    results = tmp_path / "results"
    good = ok_file(results)
    not_a_sweep = results / "sweep" / "a" / "b" / "c" / "d" / "x.json"
    not_a_sweep.parent.mkdir(parents=True)
    shutil.copy(good, not_a_sweep)
    assert sweep_cli.main(["report", "--results-dir", str(results)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{not_a_sweep}: not a sweep's result" in err, err
    corrupt_sweep = not_a_sweep.with_name("1.0.json")
    corrupt_sweep.write_text("{not json")
    corrupt_overhead = results / "overhead" / "smoke" / "m" / "llm_forward__keras_jax_jit.json"
    corrupt_overhead.parent.mkdir(parents=True)
    corrupt_overhead.write_text('{"schema_version": 1, "cell": ')
    assert cli.main(["validate", "--results-dir", str(results)]) == 2
    err = capsys.readouterr().err
    for path in (not_a_sweep, corrupt_sweep, corrupt_overhead):
        assert f"cannot read result file {path}" in err, err
    for path in (not_a_sweep, corrupt_sweep, corrupt_overhead):
        path.unlink()
    assert cli.main(["validate", "--results-dir", str(results)]) == 0


@pytest.mark.parametrize("held,wanted", [("results", "results/tuning"), ("results/tuning", "results")])
def test_a_study_folder_and_its_results_folder_are_never_written_by_two_runs_at_once(tmp_path, held, wanted):
    """`make tuning` runs its cells into <results>/tuning: a `make bench` or `make clean-results` on
    <results> beside it would load the machine it measures on and touch its logs."""
    from bench.base.errors import BenchError
    from bench.base.runlock import hold, release

    (tmp_path / "results" / "tuning").mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path / held)], cwd=REPO, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(BenchError, match=f"another run is writing to {tmp_path / 'results'}"):
            hold(tmp_path / wanted)
    finally:
        holder.communicate("")
    hold(tmp_path / wanted)  # once the other run ended
    release(tmp_path / wanted)
    hold(tmp_path / "results")  # released together: the study's hold took its results folder and gave it back
    release(tmp_path / "results")


@pytest.mark.parametrize("quarantine", [False, True])
def test_a_triage_beside_the_results_is_known_to_table_export_validate_and_bench(tmp_path, capsys, quarantine):
    """`make history-triage` once left results/history-triage.json, which table, export and validate then refused
    as a broken result ("fix: move it out of results"), losing the triage to the advice."""
    from bench import cli
    from bench.record.results import load_each
    from bench.studies.history import triage

    results = tmp_path / "results"
    ok_file(results)
    triage.record(results, "jax__bert__fit__bs2__default", "smoke", "20260107T000000Z", "noise", "a known blip")
    assert load_each(results) == (load_each(results)[0], []) and len(load_each(results)[0]) == 1  # what bench warns
    assert cli.main(["table", "--results-dir", str(results)]) == 0
    assert cli.main(["export", "--results-dir", str(results)]) == 0
    assert cli.main(["validate", "--results-dir", str(results), *(["--quarantine"] if quarantine else [])]) == 0
    said = capsys.readouterr()
    assert "history-triage" not in said.err and (results / triage.TRIAGE_FILE).exists(), said.err
    (results / triage.TRIAGE_FILE).write_text('{"triage": [{"cell": 1}]}')  # mangled: validate names it
    assert cli.main(["validate", "--results-dir", str(results), *(["--quarantine"] if quarantine else [])]) == 2
    err = capsys.readouterr().err
    assert str(results / triage.TRIAGE_FILE) in err and (results / triage.TRIAGE_FILE).exists(), err


@pytest.mark.parametrize("where", ["history/x.json", "parity/parity.json", "plan-smoke.json", "logs/smoke/a.json",
                                   "noise/m--p.json", ".hidden-is-skipped.json"])
def test_validate_names_a_corrupt_json_file_off_the_result_layout(tmp_path, capsys, where):
    """A folder whose only JSON was corrupt, off the result layout, once passed: "0 result files ... are valid"."""
    from bench import cli

    results = tmp_path / "results"
    bad = results / where
    bad.parent.mkdir(parents=True)
    bad.write_text('{"schema_version": 2, "cell": ')
    (results / "quarantine" / "smoke").mkdir(parents=True)
    (results / "quarantine" / "smoke" / "moved.json").write_text("{")  # what --quarantine moved: unreadable by design
    status = cli.main(["validate", "--results-dir", str(results)])
    said = capsys.readouterr()
    if where.startswith("."):
        assert status == 0, said.err
        return
    assert status == 2 and str(bad) in said.err and "moved.json" not in said.err, said.err
    assert "0 result files" not in said.out


def test_clean_results_deletes_only_the_logs_the_suite_writes_where_it_writes_them(tmp_path, capsys):
    """`make clean-results RESULTS=<a folder with no results, holding logs/mine/app.log>` once deleted the user's
    log: only a .log in a folder this suite writes its logs to (a profile's, a study's) is the suite's."""
    from bench import cli

    results = tmp_path / "results"
    logs = results / "logs"
    ours = [logs / "smoke" / "jax__bert__fit__bs2__default.20261125T000000Z.0.log", logs / "grid" / "cpu" / "w.log",
            logs / "parity-paper-bfloat16" / "keras__bert__jax.log", logs / "overhead" / "smoke" / "jax.log",
            logs / "sweep" / "keras-overhead" / "jax__keras-3.0.5__0.log"]
    theirs = [logs / "mine" / "app.log", logs / "app.log", logs / "smoke-notes" / "x.log"]
    for path in ours + theirs:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    assert cli.main(["clean-results", "--results-dir", str(results)]) == 0
    said = capsys.readouterr().out
    assert [p for p in ours if p.exists()] == [] and all(p.exists() for p in theirs), said
    assert f"deleted {len(ours)} log files" in said and f"kept {len(theirs)} files" in said, said
