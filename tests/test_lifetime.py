"""Every way a command can end ends its cells: SIGTERM, SIGHUP or SIGINT to make alone (make passes on only SIGTERM;
bench/lifetime.py relays the others) or to the orchestrator. The cell is a fake that sleeps (tests/fakes.py), in a
process session of its own as every cell is, so no signal reaches it but through its orchestrator. (kill -9 of the
orchestrator, which a real cell outlives by no more than its watch: tests/test_reliability.py.)"""

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO
from fakes import bench_env

from bench.lifetime import starting_make


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
    args = ["run", "--profile", "smoke", "--backend", "torch", "--model", "bert", "--task", "fit"]
    proc = start([sys.executable, "-m", "bench", *args, "--results-dir", str(tmp_path / "r")], env)
    cell = wait_for(pid_file, proc)
    proc.send_signal(signal.SIGHUP)  # a closed terminal, a lost SSH session
    out = proc.communicate(timeout=60)[0]
    assert proc.returncode == 128 + signal.SIGHUP and "every finished result is kept" in out, out[-2000:]
    assert not is_running(cell)
