"""`make gpu-check` within a budget, resumable: each check's result and the report on disk as soon as it ends, a run
cut off by a signal leaves them, RESUME=1 goes on into one report; and in a checkout without `.venvs` it refuses in
one line without a GPU. The GPU is a fake nvidia-smi (tests/fakes.py); the interpreter is a throwaway venv whose
torch fails at once and whose jax takes FAKE_JAX_IMPORT_S to fail (first touching FAKE_JAX_STARTED, where set): a check
that is still running when cut off."""

import json
import os
import signal
import subprocess
import sys
import sysconfig
import time

import pytest
from conftest import REPO
from fakes import a100, install_fake_nvidia_smi, make_interpreter, site_packages
from make_output import said_lines

NO_GPU = {"CUDA_VISIBLE_DEVICES": "", "PATH": "/usr/bin:/bin", "HOME": "/tmp"}
SLOW_IMPORT = (
    "import os, pathlib, time\n"
    "if os.environ.get('FAKE_JAX_STARTED'):\n    pathlib.Path(os.environ['FAKE_JAX_STARTED']).touch()\n"
    "time.sleep(float(os.environ.get('FAKE_JAX_IMPORT_S', '0')))\nraise ImportError('a fake {name}')\n"
)


@pytest.fixture(scope="module")
def machine_python(tmp_path_factory):
    """A GPU machine's own Python, in part: it lists torch, jax and jaxlib, whose imports fail (jax after a wait)."""
    versions = {"torch": "2.11.0", "jax": "0.11.2", "jaxlib": "0.11.2"}
    python = make_interpreter(tmp_path_factory.mktemp("own") / "venv", versions)
    site = site_packages(python)
    (site / "tools-env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")  # numpy, tabulate: no framework
    for name in ("torch", "jax"):
        (site / name).mkdir()
        fails = SLOW_IMPORT.format(name=name) if name == "jax" else "raise ImportError('a fake torch')\n"
        (site / name / "__init__.py").write_text(fails)
    return python


def gpu_check_command(python, results, tmp_path, *extra, **variables) -> tuple[list[str], dict]:
    fake = install_fake_nvidia_smi(
        tmp_path / "bin", [a100(0, name="NVIDIA H100 80GB HBM3", **{"memory.total": "81559"})]
    )
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "HOME": "/tmp", "FAKE_GPUS": fake["FAKE_GPUS"], **variables}
    command = [
        "make",
        "--no-print-directory",
        "gpu-check",
        "ENV=current",
        f"PYTHON={python}",
        f"RESULTS={results}",
        *extra,
    ]
    return command, env


def make_gpu_check(python, results, tmp_path, *extra, **variables):
    command, env = gpu_check_command(python, results, tmp_path, *extra, **variables)
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def make_gpu_check_cut_off(python, results, tmp_path, *extra, **variables) -> int:
    """make gpu-check sent SIGTERM (as `timeout -s TERM` sends it, to make and its group) once the fake jax's import
    has begun: the jax probe is in progress, the torch probe over. Its exit status."""
    started = tmp_path / "jax-import-started"
    command, env = gpu_check_command(python, results, tmp_path, *extra, FAKE_JAX_STARTED=str(started), **variables)
    log = tmp_path / "cut-off-make.log"  # a file, not a pipe: nothing read while it runs can fill and stall it
    with log.open("w") as out:
        make = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        waited = time.monotonic()
        while not started.exists():
            assert make.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() - waited < 120, "the jax probe never started"
            time.sleep(0.1)
        os.killpg(make.pid, signal.SIGTERM)
        return make.wait(timeout=120)
    finally:
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGKILL)
            make.wait()


@pytest.mark.slow
@pytest.mark.duration_s(15)
def test_a_cut_off_gpu_check_leaves_its_report_and_resume_completes_it(machine_python, tmp_path):
    results = tmp_path / "r"
    code = make_gpu_check_cut_off(machine_python, results, tmp_path, "BUDGET=9", FAKE_JAX_IMPORT_S="600")
    assert code == -signal.SIGTERM, code  # make ends by the signal it was sent
    folder = results / "gpu-check" / "1x-nvidia-h100-80gb-hbm3"
    report = json.loads((folder / "gpu-check.json").read_text())
    assert not report["complete"] and report["sessions"][-1]["ended"] == "signal"
    assert [s["framework"] for s in report["sync"]] == ["torch"]  # finished before the signal, kept
    assert "sync probe (jax)" in report["skipped"] and report["cells"] == []
    assert "PARTIAL" in (folder / "GPU-CHECK.md").read_text()

    resumed = make_gpu_check(machine_python, results, tmp_path, "BUDGET=9", "RESUME=1", FAKE_JAX_IMPORT_S="0")
    # the fake frameworks' probes fail: the command's exit 1, make's 2
    assert resumed.returncode == 2 and "Error 1" in resumed.stderr, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    report = json.loads((folder / "gpu-check.json").read_text())
    assert report["complete"] and [s["ended"] for s in report["sessions"]] == ["signal", "finished"]
    assert [s["framework"] for s in report["sync"]] == ["torch", "jax"]  # one report, one line a probe
    # the fake torch's probe failed: a resumed check runs what has not passed (it failed again), in its place
    assert "gpu-check: sync probe (torch)" in resumed.stdout and not report["sync"][0]["ok"]
    assert report["skipped"] == [] and len(report["cells"]) == 5
    assert "PARTIAL" not in (folder / "GPU-CHECK.md").read_text()


@pytest.mark.slow
@pytest.mark.duration_s(45)
def test_the_budget_ends_the_check_in_progress_and_names_what_was_left(machine_python, tmp_path):
    results = tmp_path / "r"
    out = make_gpu_check(machine_python, results, tmp_path, "BUDGET=0.6", FAKE_JAX_IMPORT_S="600")
    assert out.returncode == 2 and "Error 1" in out.stderr, out.stdout[-2000:] + out.stderr[-2000:]
    report = json.loads(next(results.rglob("gpu-check.json")).read_text())
    assert report["sessions"][-1]["ended"] == "budget" and report["sessions"][-1]["elapsed_s"] < 60
    assert "sync probe (jax)" in report["skipped"] and "RESUME=1 goes on" in out.stdout


def test_make_gpu_check_in_a_checkout_without_venvs_refuses_in_one_line(tmp_path):
    for variables in ([], ["ENV=current"]):
        out = subprocess.run(
            [
                "make",
                "--no-print-directory",
                "gpu-check",
                f"VENVS={tmp_path / 'no-venvs'}",
                f"RESULTS={tmp_path / 'r'}",
                f"PYTHON={sys.executable}",
                *variables,
            ],
            cwd=REPO,
            env=NO_GPU,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 2, out.stdout + out.stderr
        refusal, *rest = out.stderr.splitlines()  # then only make's own line for the recipe's exit 2
        assert refusal == "gpu-check: no NVIDIA GPU visible (nvidia-smi lists none): nothing run", out.stderr
        assert [line.split("] ")[-1] for line in rest] == ["Error 2"] and out.stdout == "", out.stderr
        assert not (tmp_path / "r").exists() and not (tmp_path / "no-venvs").exists()


def test_resuming_from_a_report_that_cannot_be_read_is_one_line_naming_it(machine_python, tmp_path):
    results = tmp_path / "r"
    report = results / "gpu-check" / "1x-nvidia-h100-80gb-hbm3" / "gpu-check.json"
    report.parent.mkdir(parents=True)
    for text in ('{"machine": {"gpus": [', '{"env": "current"}', "[]"):  # cut off mid-write, a field missing, a list
        report.write_text(text)
        out = make_gpu_check(machine_python, results, tmp_path, "RESUME=1")
        errors = said_lines(out.stderr)
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stdout[-2000:] + out.stderr[-2000:]
        assert len(errors) == 1 and f"cannot resume from {report}" in errors[0], out.stderr
        assert report.read_text() == text  # left as it was, for the user to look at
