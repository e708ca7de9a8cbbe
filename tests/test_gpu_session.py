"""One rehearsed GPU session (scripts/gpu-session.sh, bench/studies/gpucheck/session.py): the findings' cells in order,
resumed under an environment key that incidental packages cannot change, gpu-check's passed checks kept, one utilisation
capture, everything packed. The fast tests take the pieces with fakes; the rehearsal runs the script end to end in
pyenv's Python 3.12 with JAX for the CPU and the bundle, a stand-in nvidia-smi and smoke shapes."""

import json
import os
import subprocess
import tarfile
import time
from pathlib import Path

import pytest
from committed import committed_results
from conftest import REPO
from fakes import install_fake_nvidia_smi, site_packages

from bench.catalogue.ownenv import environment_folder, environment_key, same_environment
from bench.studies.gpucheck import session as gpu_session

H200_FOLDER = "env-current/py3.12-torch2.11.0-jax0.11.2-22dd5d6b"


def committed_environment() -> dict:
    path = next((committed_results() / H200_FOLDER).rglob("jax__bert__fit__*.json"))
    return json.loads(path.read_text())["provenance"]["environment"]


# ---------------------------------------------------------------- the key


def test_an_incidental_package_does_not_change_the_key_a_framework_or_python_does():
    """The first GPU session's bundle replaced zipp, which changed the distributions' sha256 and made RESUME=1 skip
    nothing; the key is over what the figures rest on."""
    env = committed_environment()
    zipp = {**env, "distributions": {**env["distributions"], "zipp": "4.1.2", "importlib_metadata": "11.0"}}
    assert same_environment(env, zipp)
    assert not same_environment(env, {**env, "distributions": {**env["distributions"], "torch": "2.12.0"}})
    assert not same_environment(env, {**env, "distributions": {**env["distributions"], "keras-hub": "0.33.0"}})
    assert not same_environment(env, {**env, "distributions": {**env["distributions"], "nvidia-cudnn-cu13": "9.20"}})
    assert not same_environment(env, {**env, "python": "3.12.4"})
    assert "zipp" not in environment_key(env)["distributions"] and "torch" in environment_key(env)["distributions"]


def test_a_session_of_the_same_key_resumes_into_the_committed_folder(tmp_path):
    import shutil

    shutil.copytree(committed_results() / H200_FOLDER, tmp_path / H200_FOLDER)
    env = committed_environment()
    zipp = {**env, "distributions": {**env["distributions"], "zipp": "4.1.2"}}
    assert environment_folder(tmp_path, zipp) == tmp_path / H200_FOLDER
    other = {**env, "distributions": {**env["distributions"], "jax": "0.12.0"}}
    fresh = environment_folder(tmp_path, other)
    assert fresh != tmp_path / H200_FOLDER and fresh.name.endswith(environment_key(other)["sha256"][:8])


# ---------------------------------------------------------------- gpu-check: only what has not passed


def cell_row(key: str, status: str) -> dict:
    """A short cell's line of the report, as bench/studies/gpucheck/run.py judge_cell writes it."""
    return {"cell": key, "status": status, "message": None if status == "ok" else "failed", "timed_steps": 5,
            "paper_timed_steps": "10 to 100", "median": 1.0 if status == "ok" else None, "unit": "ms/step",
            "memory": {"measured": "not recorded by this version", "plan_gib": None}}  # fmt: skip


def test_gpu_check_resumes_the_checks_not_yet_passed_in_this_environment(tmp_path, monkeypatch):
    from bench.studies.gpucheck import run as gpucheck
    from bench.studies.gpucheck.page import Report

    env = committed_environment()
    monkeypatch.setattr("bench.base.provenance.unlocked_environment", lambda: env)
    report = Report({"gpus": []}, "current", "2026-11-27T11:53:11+00:00", 150.0, environment=env)
    report.record("sync probe (torch)", {"framework": "torch", "ok": True, "problems": []})
    report.record("sync probe (jax)", {"framework": "jax", "ok": False, "problems": ["leaked"]})
    report.record("a", cell_row("a", "ok"))
    report.record("b", cell_row("b", "error"))
    report.sessions.append({"started": report.started, "budget_s": 150.0, "elapsed_s": 110.0, "ended": "budget"})
    folder = tmp_path / "gpu-check" / "m"
    report.write(folder)
    resumed = gpucheck.resumed_report(folder / "gpu-check.json", "current", print)
    assert resumed.passed() == {"sync probe (torch)", "a"}  # the failed probe and cell run again
    resumed.record("b", cell_row("b", "ok"))
    assert [c["status"] for c in resumed.cells] == ["ok", "ok"]  # in place of the failed one
    # a report of another environment's key is moved aside: its passes say nothing of this one
    monkeypatch.setattr("bench.base.provenance.unlocked_environment",
                        lambda: {**env, "distributions": {**env["distributions"], "torch": "2.12.0"}})  # fmt: skip
    lines = []
    assert gpucheck.resumed_report(folder / "gpu-check.json", "current", lines.append) is None
    assert not (folder / "gpu-check.json").exists() and (folder / "gpu-check.2026-11-27T115311+0000.json").exists()
    assert "another environment" in lines[0]


# ---------------------------------------------------------------- the session's order, resume and capture


def test_the_session_runs_the_findings_in_order_and_skips_what_this_environment_measured(tmp_path, monkeypatch):
    from bench.record.results import Result, Run
    from bench.run import planning as run_planning
    from bench.run import runner

    asked: list[list[str]] = []
    given: list[dict | None] = []
    measured = {"jax__mistral__fit__bs2__default__stack-current"}
    probed = {"host": {}, "jax": {}, "torch": {}}  # what a step's run probed: the later steps' runs reuse it

    def fake_run_cells(cells, results_dir, options):
        asked.append([c.key for c in cells])
        given.append(options.ceilings)
        return [Result(c, [Run(status="ok", timed_ms=[1.0] * 3)] * options.repeats, "ms/step",
                       {"ceilings": options.ceilings or probed}, "t") for c in cells]  # fmt: skip

    monkeypatch.setattr(runner, "run_cells", fake_run_cells)
    monkeypatch.setattr(run_planning, "still_to_measure",
                        lambda cells, *a, **k: [c for c in cells if c.key not in measured])  # fmt: skip
    record = gpu_session.run(tmp_path / "results", tmp_path / "logs", 600, "smoke", echo=lambda line: None)
    assert [s["step"] for s in record["steps"]] == [s.name for s in gpu_session.PLAN]
    first = record["steps"][0]
    assert first["skipped"] == sorted(measured) and first["processes"] == 3
    assert asked[0] == [k for k in first["cells"] if k not in measured]  # the rest of the step, in order
    assert asked[-1] == ["torch__gemma__fit__bs2__default__stack-current"]  # the capture, last
    assert given[0] is None and all(g == probed for g in given[1:-1])  # the machine's ceilings probed once
    saved = json.loads((tmp_path / "logs" / "session.json").read_text())
    assert saved["environment_key"] == record["environment_key"] and "utilisation" in saved
    assert "mistral-fit" in (tmp_path / "logs" / "SESSION.md").read_text()


def test_utilisation_samples_tell_host_bound_from_gpu_bound():
    window = (10.0, 20.0)
    busy = [(10.0 + i, 97.0) for i in range(10)] + [(5.0, 0.0)] * 5  # the set-up's idle samples are outside
    idle = [(10.0 + i, 30.0) for i in range(10)]
    assert gpu_session.utilisation_verdict(busy, window)["verdict"] == "GPU-bound"
    assert gpu_session.utilisation_verdict(idle, window)["verdict"] == "host-bound"
    assert gpu_session.utilisation_verdict(busy[:2], window)["verdict"].startswith("undecided")


# ---------------------------------------------------------------- the rehearsal, end to end

PY312 = Path("/root/.pyenv/versions/3.12.1/bin/python3")
H200 = {
    "index": "0", "uuid": "GPU-78b896ba-0000-0000-0000-000000000000", "name": "NVIDIA H200",
    "driver_version": "580.159.04", "memory.total": "143771", "pci.bus_id": "00000000:01:00.0", "compute_cap": "9.0",
    "clocks.sm": "1980", "clocks.max.sm": "1980", "clocks.mem": "3201", "clocks.max.mem": "3201",
    "power.draw": "127.0", "power.limit": "700.00", "temperature.gpu": "42",
    "clocks_throttle_reasons.active": "0x0000000000000000", "timestamp": "2026/12/01 12:00:00.000",
    "utilization.gpu": "35", "utilization.memory": "10",
}  # fmt: skip


@pytest.fixture(scope="module")
def machine_python(tmp_path_factory):
    """A GPU machine's own Python, as a CPU can have it: pyenv's 3.12 with JAX for the CPU and NumPy from PyPI (no
    Keras, no torch), and the bundle `make wheelhouse FOR=` builds for it (Keras, keras-hub, what they need)."""
    if not PY312.exists():
        pytest.skip(f"no {PY312}")
    root = tmp_path_factory.mktemp("machine")
    subprocess.run([str(PY312), "-m", "venv", str(root / "venv")], check=True, timeout=300)
    python = root / "venv" / "bin" / "python"
    pins = [line.split(";")[0].strip() for line in (REPO / "envs" / "jax" / "requirements.txt").read_text().splitlines()
            if line.split("==")[0] in ("jax", "jaxlib", "numpy", "ml-dtypes", "opt-einsum", "scipy")]  # fmt: skip
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *pins],
                   check=True, timeout=1200)  # fmt: skip
    bundle = root / "bundle"
    built = subprocess.run([str(python), "-m", "bench.envs.wheelhouse", "--for", str(python), "--out", str(bundle)],
                           cwd=REPO, capture_output=True, text=True, timeout=1200)  # fmt: skip
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return python, bundle


def rehearse(python, bundle, tmp_path, results, out, minutes):
    fake = install_fake_nvidia_smi(tmp_path / "bin", [H200])
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path), "FAKE_GPUS": fake["FAKE_GPUS"],
           "PYTHON": str(python), "PROFILE": "smoke", "SYNC_SIZE": "512", "SESSION_MINUTES": str(minutes),
           "CHECK_MINUTES": "1.5", "RESULTS": str(results), "OUT": str(out)}  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(["bash", "scripts/gpu-session.sh", str(bundle)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=minutes * 60 + 300)  # fmt: skip
    return done, time.monotonic() - started


@pytest.mark.extended
@pytest.mark.envs
@pytest.mark.slow
@pytest.mark.duration_s(900)
def test_the_session_rehearsed_end_to_end_orders_resumes_under_its_key_and_packs(machine_python, tmp_path):
    python, bundle = machine_python
    results = tmp_path / "results"
    first, took = rehearse(python, bundle, tmp_path, results, tmp_path / "out1", minutes=3.5)
    assert first.returncode == 0, first.stdout[-6000:] + first.stderr[-3000:]
    assert took < 3.5 * 60 + 45, took  # within its minutes (each stage stops by its budget)
    (session1,) = sorted(results.glob("gpu-session/*/session.json"))
    one = json.loads(session1.read_text())
    assert [s["step"] for s in one["steps"]] == [s.name for s in gpu_session.PLAN]  # the findings' order
    finished = [r["cell"] for s in one["steps"] for r in s["ran"] if r["status"] in ("ok", "unsupported")
                and (r["processes"] >= s["processes"] or r["status"] == "unsupported")]  # fmt: skip
    assert "jax__mistral__fit__bs2__default__stack-current" in finished, one  # the first finding's Keras 3 JAX cell
    assert "torch__mistral__fit__bs2__default__stack-current" in finished  # NA here (no torch), recorded so
    with tarfile.open(tmp_path / "out1" / "gpu-session.tar.gz") as packed:
        names = packed.getnames()
    session_folder = session1.parent.relative_to(results).as_posix()
    for kept in ("session.json", "SESSION.md", "install.log", "gpu-check.log", "cells.log", "pip-freeze.txt"):
        assert f"./{session_folder}/{kept}" in names, (kept, names)
    assert any(n.endswith("jax__mistral__fit__bs2__default__stack-current.json") for n in names)
    assert any(n.endswith("gpu-check.json") for n in names)

    # an incidental package between the sessions: the distributions' sha256 moves, the key does not
    incidental = site_packages(python) / "incidental_package-1.0.dist-info"
    incidental.mkdir()
    (incidental / "METADATA").write_text("Metadata-Version: 2.1\nName: incidental-package\nVersion: 1.0\n")
    time.sleep(1.1)  # the session folders are named to the second
    second, _ = rehearse(python, bundle, tmp_path, results, tmp_path / "out2", minutes=4)
    assert second.returncode == 0, second.stdout[-6000:] + second.stderr[-3000:]
    session2 = next(p for p in sorted(results.glob("gpu-session/*/session.json")) if p != session1)
    two = json.loads(session2.read_text())
    assert two["environment_key"] == one["environment_key"] and two["results"] == one["results"]
    skipped = {k for s in two["steps"] for k in s["skipped"]}
    assert set(finished) <= skipped, (finished, skipped)  # resumed: nothing the first session finished runs again
    rerun = [r["cell"] for s in two["steps"] for r in s["ran"]]
    assert not set(rerun) & set(finished)
    check = json.loads(next(results.glob("gpu-check/*/gpu-check.json")).read_text())
    assert len(check["sessions"]) == 2  # one report, resumed
    passed_first = [f"sync probe ({s['framework']})" for s in check["sync"] if s["ok"]]
    passed_first += [c["cell"] for c in check["cells"] if c["status"] == "ok"]
    log1, log2 = ((s.parent / "gpu-check.log").read_text() for s in (session1, session2))
    assert passed_first and all(f"gpu-check: {name} (" in log1 + log2 for name in passed_first), check
    assert not any(f"gpu-check: {name} (" in log1 and f"gpu-check: {name} (" in log2 for name in passed_first)
    fingerprint = subprocess.run([str(python), "-c", "from bench.base.provenance import unlocked_environment as u; "
                                  "print(u()['distributions_sha256'])"], cwd=REPO, capture_output=True, text=True)
    recorded = json.loads(next(Path(one["results"]).rglob("jax__mistral__fit__*.json")).read_text())
    assert fingerprint.stdout.strip() != recorded["provenance"]["environment"]["distributions_sha256"]
    assert os.path.getsize(tmp_path / "out2" / "gpu-session.tar.gz") > 0
