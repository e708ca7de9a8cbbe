"""Every way a command can end ends its cells: SIGTERM, SIGHUP or SIGINT to make alone (make passes on only SIGTERM;
bench/base/lifetime.py relays the others) or to the orchestrator. The cell is a fake that sleeps (tests/fakes.py), in a
process session of its own as every cell is, so no signal reaches it but through its orchestrator. (kill -9 of the
orchestrator, which a real cell outlives by no more than its watch: tests/test_reliability.py.)"""

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO
from fakes import bench_env, smoke_run

from bench.base.lifetime import starting_make


def is_running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def parent_of(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))


def wait_for(pid_file: Path, proc: subprocess.Popen) -> int:
    deadline = time.monotonic() + 90
    while not pid_file.exists():
        assert proc.poll() is None, proc.communicate()[0][-3000:]
        assert time.monotonic() < deadline, "the fake cell never started"
        time.sleep(0.05)
    return int(pid_file.read_text())


def terminal_defaults() -> None:
    """SIGINT and SIGHUP at their defaults, as a terminal's job has them: a background job inherits SIGINT ignored,
    and a test run under nohup SIGHUP, which the run would then rightly keep ignoring."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def start(command, env):
    return subprocess.Popen(
        command,
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=terminal_defaults,
    )


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=["TERM", "HUP", "INT"])
def test_a_signal_to_make_alone_ends_the_run_and_its_cell(venvs, tmp_path, stop):
    pid_file = tmp_path / "cell.pid"
    env = {**bench_env(venvs, torch="sleep"), "FAKE_PID_FILE": str(pid_file)}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    make = start(
        [
            "make",
            "--no-print-directory",
            "bench-all",
            "ENVS_PY=true",
            f"TOOLS_PY={sys.executable}",
            f"PYTHON={sys.executable}",
            "BACKEND=torch",
            "MODEL=bert",
            "TASK=fit",
            "PROFILE=smoke",
            "REPEATS=1",
            f"RESULTS={tmp_path / 'results'}",
        ],
        env,
    )
    cell = wait_for(pid_file, make)
    orchestrator = parent_of(cell)
    assert starting_make(parent_of(orchestrator) if parent_of(orchestrator) != make.pid else make.pid) == make.pid
    make.send_signal(stop)  # to make's own PID only, not its process group
    try:
        out = make.communicate(timeout=45)[0]
    except subprocess.TimeoutExpired:
        make.kill()
        subprocess.run(["kill", "-9", str(orchestrator), str(cell)])
        pytest.fail("make did not end: it waits for an orchestrator that never heard of the signal")
    assert not is_running(cell), "the cell outlived make"
    assert not is_running(orchestrator), "the orchestrator outlived make"
    assert "every finished result is kept" in out, out[-2000:]


def test_sighup_to_the_orchestrator_ends_its_cell_as_ctrl_c_does(venvs, tmp_path):
    pid_file = tmp_path / "cell.pid"
    env = {**bench_env(venvs, torch="sleep"), "FAKE_PID_FILE": str(pid_file)}
    args = smoke_run("--backend", "torch", "--model", "bert", "--task", "fit")
    proc = start([sys.executable, "-m", "bench", *args, "--results-dir", str(tmp_path / "r")], env)
    cell = wait_for(pid_file, proc)
    proc.send_signal(signal.SIGHUP)  # a closed terminal, a lost SSH session
    out = proc.communicate(timeout=60)[0]
    assert proc.returncode == 128 + signal.SIGHUP and "every finished result is kept" in out, out[-2000:]
    assert not is_running(cell)


@pytest.fixture
def signal_handlers(monkeypatch):
    """The handlers as they were, put back after the test (stop_on_signals sets them in this process); make is not
    followed (the test may run under `make test`)."""
    import bench.base.lifetime

    monkeypatch.setattr(bench.base.lifetime, "follow_make", lambda stopping: None)
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    for s in before:
        signal.signal(s, signal.SIG_DFL)
    yield
    for s, handler in before.items():
        signal.signal(s, handler)


def long_targets(tmp_path):
    """Each long target's entry point, and the function it hands its work to (which the test replaces)."""
    from bench import cli
    from bench.studies.noise import run as study
    from bench.studies.overhead import run as overhead
    from bench.studies.sweep import cli as sweep_cli

    results = ["--results-dir", str(tmp_path / "results")]
    cell = ["--backend", "jax", "--model", "bert", "--task", "predict"]
    return {
        "noise": (lambda: study.main(["--cells", "jax__bert__predict__bs2__default", *results]),
                  "bench.studies.noise.run.Study.run"),
        "overhead": (lambda: overhead.main(["--size", "smoke", *results]), "bench.studies.overhead.run.run_overhead"),
        "sweep": (lambda: sweep_cli.main(["sweep", "--package", "keras", "--versions", "3.0.0,3.1.0", *cell, *results]),
                  "bench.studies.sweep.run.run_sweep"),
        "bisect": (lambda: sweep_cli.main(["bisect", "--package", "keras", "--good", "3.0.0", "--bad", "3.1.0", *cell,
                                           *results]), "bench.studies.sweep.bisect.run_bisect"),
        "grid": (lambda: cli.main(["grid", "--grid", "smoke", *results]), "bench.studies.grid.run.run_grid"),
        "tuning": (lambda: cli.main(smoke_run("--model", "vit", "--task", "fit", "--backend", "torch", "--variant",
                                              "sdpa", *results)), "bench.run.runner.run_cells"),
        "gpu-check": (lambda: cli.main(["gpu-check", *results]), "bench.studies.gpucheck.run.run"),
        "submit-status-wait": (lambda: cli.main(["submit-status", "--wait", "60", *results]),
                               "bench.run.cluster.status.wait"),
        **more_targets(tmp_path),
    }  # fmt: skip


def more_targets(tmp_path):
    """The rest of the commands make runs for minutes or writes files with: parity (its workers), bisect-commits and
    history CONFIRM=1 (a worktree per commit), the env builds, make unpack (an extraction's temporary folder), and the
    commands that write several files at once (table's figures, compare's three, plan's probes)."""
    from bench import cli
    from bench.base.packed import main as packed_main
    from bench.envs import cli as envs_cli
    from bench.studies.history import cli as history_cli
    from bench.studies.parity import run as parity_run

    results = tmp_path / "results"
    results.mkdir(exist_ok=True)
    (results / "a").mkdir(exist_ok=True)
    (tmp_path / "b").mkdir(exist_ok=True)
    dirs = ["--results-dir", str(results)]
    key = "native-torch__bert__predict__bs2__eager"
    return {
        "parity": (lambda: parity_run.main(["--model", "bert", *dirs]), "bench.studies.parity.run.run_all"),
        "bisect-commits": (lambda: history_cli.main(["commits", "--cell", key, "--good", "HEAD~1", "--bad", "HEAD",
                                                     "--profile", "smoke", *dirs]),
                           "bench.studies.history.commits.bisect_commits"),
        "history": (lambda: history_cli.main(["show", "--cell", key, *dirs]), "bench.studies.history.cli.show_command"),
        "envs": (lambda: envs_cli.main(["build", "tools", "--venv", str(tmp_path / "venv")]),
                 "bench.envs.build.build_locked"),
        "unpack": (lambda: packed_main(["unpack", str(results)]), "bench.base.packed.unpack_all"),
        "table": (lambda: cli.main(["table", *dirs]), "bench.studies.table.render"),
        "compare": (lambda: cli.main(["compare", str(results / "a"), str(tmp_path / "b"), "--out",
                                      str(tmp_path / "c.md")]),
                    "bench.report.compare.run"),
        "plan": (lambda: cli.main(["plan", "--profile", "smoke", *dirs]), "bench.plan.run"),
        "validate": (lambda: cli.main(["validate", *dirs]), "bench.record.results.load_each"),
    }  # fmt: skip


MORE = ["parity", "bisect-commits", "history", "envs", "unpack", "table", "compare", "plan", "validate"]


@pytest.mark.parametrize(
    "target", ["noise", "overhead", "sweep", "bisect", "grid", "tuning", "gpu-check", "submit-status-wait", *MORE]
)
def test_every_long_target_stops_on_term_hup_and_int_with_the_signals_status(tmp_path, monkeypatch, target,
                                                                             signal_handlers):
    from bench.base.lifetime import Terminated, interrupt

    monkeypatch.setattr("bench.run.cluster.jobdir.find_job", lambda results_dir, job: None)
    entry, work = long_targets(tmp_path)[target]
    handlers = {}

    def stopped_by_a_hangup(*args, **kwargs):
        handlers.update({s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)})
        raise Terminated(signal.SIGHUP)  # what interrupt() raises on a SIGHUP

    monkeypatch.setattr(work, stopped_by_a_hangup)
    assert entry() == 128 + signal.SIGHUP
    assert handlers == dict.fromkeys((signal.SIGTERM, signal.SIGHUP, signal.SIGINT), interrupt), handlers


def test_a_stopped_overhead_study_writes_the_envs_that_finished(tmp_path, monkeypatch):
    from bench.base.lifetime import Terminated
    from bench.studies.overhead import run as overhead
    from bench.studies.overhead.spec import get_size

    monkeypatch.setattr(overhead, "env_python", lambda env: sys.executable)
    monkeypatch.setattr(overhead, "reference_ms", lambda: 1.0)
    workers = []

    def first_finishes_then_a_signal(env, *args):
        workers.append(env)
        if len(workers) > 1:
            raise Terminated(signal.SIGTERM)
        return {"status": "error", "message": "a worker that answered"}

    monkeypatch.setattr(overhead, "run_worker", first_finishes_then_a_signal)
    with pytest.raises(Terminated):
        overhead.run_overhead(get_size("smoke"), tmp_path, say=lambda line: None)
    from bench.studies.overhead.spec import BENCHMARKS, COLUMNS

    first = [c for c, spec in COLUMNS.items() if spec.env == workers[0]]
    written = sorted(p.stem for p in (tmp_path / "overhead").rglob("*.json"))
    assert len(workers) == 2 and written == sorted(f"{b}__{c}" for b in BENCHMARKS for c in first), written


@pytest.mark.parametrize("target", ["noise", "overhead", "sweep", "bisect", "grid", "tuning", "gpu-check", *MORE])
def test_every_long_target_says_a_failed_write_in_one_line_naming_the_file(tmp_path, monkeypatch, capsys, target,
                                                                           signal_handlers):
    import errno
    import os

    entry, work = long_targets(tmp_path)[target]
    full = tmp_path / "results" / "some-file.json"

    def the_disk_is_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(full))

    monkeypatch.setattr(work, the_disk_is_full)
    assert entry() == 2
    err = capsys.readouterr().err
    assert err == f"error: No space left on device: {full}\n", err
