"""Slurm submission: resources, skipping, state mapping (no cluster), then a real one-node cluster on this
machine (bench/run/cluster/localslurm.py): smoke cells equal a local run, a cancelled cell is recorded."""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import IN_CI, env_python
from fakes import bench_env, make_fake_envs

from bench.catalogue.profiles import get_profile
from bench.catalogue.registry import plan_cells
from bench.judge.replication import rule_of
from bench.record.results import load_all
from bench.run.cluster.jobdir import JobDir, find_job
from bench.run.cluster.localslurm import LocalSlurm
from bench.run.cluster.resources import cell_resources
from bench.run.cluster.slurmstate import task_ids
from bench.run.cluster.status import cancelled_status, from_record, job_status, slurm_run

REPO = Path(__file__).resolve().parent.parent


def bench(args, env, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "bench", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )


def bert_cell(profile):
    return plan_cells(profile, backends=["jax"], models=["bert"], tasks=["predict"])[0]


# --- without a cluster ------------------------------------------------------------------------------


@pytest.mark.parametrize("text,ids", [("3", [3]), ("1-4", [1, 2, 3, 4]), ("[0,2,5-7%2]", [0, 2, 5, 6, 7]), ("", [])])
def test_array_index_lists_are_parsed(text, ids):
    assert task_ids(text) == ids


def test_sacct_lines_give_each_array_task_its_state():
    from bench.run.cluster.slurmstate import parse_sacct

    text = "12_0|COMPLETED|0:0\n12_0.batch|COMPLETED|0:0\n12_1|CANCELLED by 0|0:15\n12_2|OUT_OF_MEMORY|0:125\n12_[3-4]|PENDING|0:0\n"
    assert parse_sacct(text) == {
        0: ("COMPLETED", "0:0"),
        1: ("CANCELLED", "0:15"),
        2: ("OUT_OF_MEMORY", "0:125"),
        3: ("PENDING", "0:0"),
        4: ("PENDING", "0:0"),
    }


def test_scontrol_and_jobcomp_lines_give_each_array_task_its_state():
    from bench.run.cluster.slurmstate import parse_records

    lines = [  # as printed by this sandbox's slurm 22.05 (`scontrol show job -o`, jobcomp/filetxt), shortened
        "JobId=1 ArrayJobId=1 ArrayTaskId=2-3 JobName=j JobState=PENDING Reason=Resources ExitCode=0:0",
        "JobId=3 ArrayJobId=1 ArrayTaskId=1 JobName=j JobState=FAILED Reason=NonZeroExitCode ExitCode=3:0",
        "JobId=2 UserId=root(0) Name=j JobState=COMPLETED Partition=bench ArrayJobId=1 ArrayTaskId=0 DerivedExitCode=0:0 ExitCode=0:0",
        "JobId=9 ArrayJobId=9 ArrayTaskId=0 JobState=RUNNING ExitCode=0:0",  # another job
    ]
    assert parse_records(lines, "1") == {
        0: ("COMPLETED", "0:0"),
        1: ("FAILED", "3:0"),
        2: ("PENDING", "0:0"),
        3: ("PENDING", "0:0"),
    }


def test_resources_come_from_the_profile_and_the_plan():
    paper, smoke = bert_cell("paper"), bert_cell("smoke")
    res = cell_resources(paper, {})
    # the profile's processes (bench run without --repeats), each up to its 3600 s timeout, + 600 s margin
    assert get_profile("paper").repeats == 3 and (res.time_min, res.mem_gib, res.gres) == (190, 48, "gpu:1")
    assert cell_resources(paper, {paper.key: {"memory_gib": 10}}).mem_gib == 13  # 25 % headroom
    assert cell_resources(paper, {}, gres="none").gres is None
    assert cell_resources(paper, {}, gres="gpu:a100:1").sbatch_options()[-1] == "--gres=gpu:a100:1"
    smoke_res = cell_resources(smoke, {})
    assert (
        smoke_res.gres is None
        and smoke_res.time_min == (get_profile("smoke").repeats * get_profile("smoke").timeout_s + 600) // 60
        and "--gres" not in " ".join(smoke_res.sbatch_options())
    )


def test_a_submission_sizes_its_cells_by_their_own_profiles_plan_not_the_last_one_planned(tmp_path):
    """plan.json is whichever profile was planned last: a smoke plan there must not size the paper cells that share
    its keys (the batch-1 cells)."""
    venvs, results = make_fake_envs(tmp_path / "venvs", ["jax"]), tmp_path / "results"
    results.mkdir()
    key = "jax__bert__predict__bs2__default"
    (results / "plan.json").write_text(json.dumps({"cells": [{"key": key, "memory_gib": 100.0}]}))
    (results / "plan-smoke.json").write_text(json.dumps({"cells": [{"key": key, "memory_gib": 2.0}]}))
    args = ["--profile", "smoke", "--backend", "jax", "--model", "bert", "--task", "predict", "--results-dir",
            str(results), "--dry-run", "--job-name", "sized"]  # fmt: skip
    out = bench(["submit", *args], bench_env(venvs))
    assert out.returncode == 0, out.stderr
    script = (results / "slurm" / "sized" / "array-0.sbatch").read_text()
    assert "#SBATCH --mem=3G" in script, script  # 2 GiB and its 25% headroom, not plan.json's 100


@pytest.mark.parametrize(
    "state,status,words",
    [
        ("OUT_OF_MEMORY", "oom", "OUT_OF_MEMORY"),
        ("TIMEOUT", "timeout", "TIMEOUT (the task reached its --time limit"),
        ("CANCELLED", cancelled_status(), "cancelled by Slurm (CANCELLED)"),
        ("NODE_FAIL", "error", "NODE_FAIL"),
        ("PREEMPTED", "error", "PREEMPTED"),
        ("FAILED", "error", "FAILED (exit code 1:0)"),
    ],
)
def test_slurm_end_states_become_result_statuses(state, status, words):
    run = slurm_run(state, "1:0", None)
    assert run.status == status and words in run.message


def test_task_records_stand_in_for_accounting():
    started = {"started_epoch": 100.0}
    assert from_record(None, False, 1) == "PENDING"
    assert from_record({**started, "state": "running"}, False, 1) == "RUNNING"
    assert from_record({**started, "state": "running"}, True, 1) == "LOST"  # Slurm forgot it, it never ended
    assert from_record({**started, "state": "signalled", "ended_epoch": 130.0}, True, 1) == "CANCELLED"
    assert from_record({**started, "state": "signalled", "ended_epoch": 161.0}, True, 1) == "TIMEOUT"
    assert from_record({**started, "state": "exited", "exit_code": 3, "ended_epoch": 101.0}, True, 1) == "FAILED"


def test_current_results_are_skipped_unless_forced(tmp_path):
    venvs, results = make_fake_envs(tmp_path / "venvs", ["jax", "torch"]), tmp_path / "results"
    env = bench_env(venvs, torch="oom")
    args = [
        "--profile",
        "smoke",
        "--backend",
        "jax,torch",
        "--model",
        "bert",
        "--task",
        "predict",
        "--results-dir",
        str(results),
    ]
    assert bench(["run", *args], env).returncode == 1  # jax ok, torch oom
    out = bench(["submit", *args, "--dry-run", "--job-name", "again"], env)
    assert out.returncode == 0, out.stderr
    assert "1 of 2 cells already have a current result" in out.stdout
    assert [c.backend for _, c in JobDir(results / "slurm" / "again").cells()] == ["torch"]  # the oom one re-runs
    out = bench(["submit", *args, "--dry-run", "--job-name", "forced", "--force"], env)
    assert len(JobDir(results / "slurm" / "forced").cells()) == 2
    script = (results / "slurm" / "forced" / "array-0.sbatch").read_text()
    # each of the cell's processes up to its timeout, plus 10 minutes for env start-up
    minutes = (get_profile("smoke").repeats * get_profile("smoke").timeout_s + 600) // 60
    assert "#SBATCH --array=0,1" in script and f"#SBATCH --time={minutes}\n" in script and "#SBATCH --mem=4G" in script
    assert "-m bench.run.cluster.task" in script and f"BENCH_VENVS_DIR={venvs}" in script
    assert len(load_all(results)) == 2  # job folders under results/slurm are not taken for results


def test_status_without_accounting_records_what_the_tasks_wrote(tmp_path):
    venvs, results = make_fake_envs(tmp_path / "venvs", ["jax", "torch"]), tmp_path / "results"
    args = [
        "--profile",
        "smoke",
        "--backend",
        "jax,torch",
        "--model",
        "bert",
        "--task",
        "predict",
        "--results-dir",
        str(results),
    ]
    assert bench(["submit", *args, "--dry-run", "--job-name", "j"], bench_env(venvs)).returncode == 0
    job = find_job(results, "j")
    meta = job.meta()
    meta["jobs"] = [{"job_id": "424242", "script": "array-0.sbatch", "indices": [0, 1]}]  # unknown to any Slurm here
    job.write_meta(meta)
    now = time.time()
    job.write_task_record(
        0,
        {
            "state": "signalled",
            "signal": "SIGTERM",
            "started_epoch": now - 10,
            "ended_epoch": now,
            "exit_code": -15,
            "host": "n1",
        },
    )
    job.write_task_record(
        1, {"state": "exited", "started_epoch": now - 5, "ended_epoch": now, "exit_code": 1, "host": "n1"}
    )
    states = {s.cell.backend: s for s in job_status(job)}
    assert states["jax"].phase == "failed" and states["jax"].result.message == "cancelled by Slurm (CANCELLED)"
    assert states["torch"].result.status == "error" and "FAILED" in states["torch"].result.message
    loaded = {r.cell.backend: r for r in load_all(results)}
    assert loaded["jax"].provenance["slurm"]["job_id"] == "424242" and loaded["jax"].runs[0].wall_s == pytest.approx(
        10, abs=0.01
    )
    assert {s.phase for s in job_status(job)} == {"failed"}  # a second look finds the files, writes nothing new
    assert len(load_all(results)) == 2 and not list(results.rglob("history/*.json"))


# --- a real one-node cluster --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    message = None
    if not shutil.which("slurmctld"):
        message = "slurmctld is not installed (scripts/install-system-deps.sh installs slurm-wlm and munge)"
    elif os.geteuid() != 0:
        message = "the one-node Slurm cluster needs root (its daemons run as SlurmUser=root)"
    if message:
        if IN_CI:  # CI installs Slurm and runs as root: a missing cluster there is a failure, not a skip
            pytest.fail(message)
        pytest.skip(message)
    local = LocalSlurm(tmp_path_factory.mktemp("slurm")).start()
    yield local
    local.stop()
    assert all(p.poll() is not None for p in local.procs.values())
    assert local.leftover_pids() == [], "processes of the test cluster outlived it"


def squeue_state(cluster, job_id):
    out = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], env=cluster.env(), capture_output=True, text=True)
    return out.stdout.strip()


@pytest.mark.slurm
def test_a_cancelled_cell_is_recorded(cluster, tmp_path):
    venvs, results = make_fake_envs(tmp_path / "venvs", ["jax"]), tmp_path / "results"
    env = {**bench_env(venvs, jax="sleep"), "SLURM_CONF": str(cluster.conf)}
    args = [
        "--profile",
        "smoke",
        "--backend",
        "jax",
        "--model",
        "bert",
        "--task",
        "predict",
        "--results-dir",
        str(results),
    ]
    out = bench(["submit", *args, "--job-name", "sleepy", "--cpus-per-task", "1", "--mem", "1"], env)
    assert out.returncode == 0, out.stderr + out.stdout
    job_id = find_job(results, "sleepy").meta()["jobs"][0]["job_id"]
    deadline = time.monotonic() + 60
    while squeue_state(cluster, job_id) != "RUNNING" or not (results / "slurm" / "sleepy" / "task-0.json").exists():
        assert time.monotonic() < deadline, "the sleeping cell never started"
        time.sleep(0.5)
    subprocess.run(["scancel", job_id], env=cluster.env(), check=True)
    out = bench(["submit-status", "--results-dir", str(results), "--job", job_id, "--wait", "60"], env)
    assert out.returncode == 1 and "failed" in out.stdout, out.stdout + out.stderr
    (result,) = load_all(results)
    assert result.status == cancelled_status() and result.message == "cancelled by Slurm (CANCELLED)"
    assert result.provenance["slurm"]["state"] == "CANCELLED" and result.provenance["machine"]["logical_cpus"]
    record = json.loads((results / "slurm" / "sleepy" / "task-0.json").read_text())
    assert record["state"] == "signalled" and record["signal"] == "SIGTERM"


@pytest.mark.slurm
@pytest.mark.envs
@pytest.mark.parametrize("backends", [
    ("jax",),
    # make test-extended: a second backend's cell in the same array; make test's one-cell array runs the same task
    # script, status and skipping code, and test_container_route_runs_the_image_like_bench_container a second route
    pytest.param(("jax", "torch"), marks=pytest.mark.extended),
], ids="+".join)  # fmt: skip
def test_smoke_cells_on_slurm_equal_a_local_run(cluster, tmp_path, shared_smoke, backends):
    """The local side is the shared smoke run's (tests/shared_run.py: `make bench` of BERT on each backend, one process
    a cell); a Slurm task runs its cell's profile count of processes (bench/run/cluster/task.py run_arguments), the
    count a local run without --repeats starts with."""
    for backend in backends:
        env_python(backend)
    env = {**bench_env(REPO / ".venvs"), "SLURM_CONF": str(cluster.conf)}
    env.pop("BENCH_VENVS_DIR")  # the real environments
    args = ["--profile", "smoke", "--backend", ",".join(backends), "--model", "bert", "--task", "predict"]
    slurm_results = tmp_path / "slurm"
    out = bench(["submit", *args, "--results-dir", str(slurm_results), "--job-name", "bert"], env)
    assert out.returncode == 0, out.stderr + out.stdout
    status = bench(["submit-status", "--results-dir", str(slurm_results), "--wait", "240"], env, timeout=300)
    locals_ = [shared_smoke(backend) for backend in backends]
    assert all(shared.returncode == 0 for shared in locals_), [shared.output[-3000:] for shared in locals_]
    here = [r for shared in locals_ for r in load_all(shared.results) if r.cell.task == "predict"]
    assert status.returncode == 0 and f"{len(backends)} done" in status.stdout, status.stdout + status.stderr
    on_slurm = load_all(slurm_results)
    assert {(r.cell.key, r.status) for r in on_slurm} == {(r.cell.key, r.status) for r in here} == {
        (f"{backend}__bert__predict__bs2__default", "ok") for backend in backends}  # fmt: skip
    smoke = get_profile("smoke")
    assert rule_of(smoke).first == smoke.repeats  # a local run's processes without --repeats: the profile's count
    for r in on_slurm:
        assert set(r.to_dict()) == set(here[0].to_dict())
        assert r.provenance["git"]["commit"] and r.provenance["machine"] and r.runs[0].process["packages"]
        # the same sampling rule as the local run (step counts follow the machine), the profile's processes
        rule = here[0].runs[0].sampling["rule"]
        assert len(r.runs) == smoke.repeats and len(here[0].runs) == 1  # the shared run's REPEATS=1
        assert all(run.sampling["rule"] == rule and run.sampling["steps"] >= rule["min_steps"] for run in r.runs)
        assert r.summary().count == sum(run.sampling["steps"] for run in r.runs)
        assert r.runs[0].process["variables"]["BENCH_SLURM_TASK"].startswith("bert/")  # the result names its task
    again = bench(["submit", *args, "--results-dir", str(slurm_results)], env)  # everything current: no new job
    assert again.returncode == 0 and "nothing to do" in again.stdout
    assert [p.name for p in (slurm_results / "slurm").iterdir()] == ["bert"]


# A container engine stand-in: logs its arguments, answers `image inspect`, and for `run` executes the
# image's entry point (`python -m bench ...`) on the host with the mounted results folder mapped back.
FAKE_ENGINE = """#!{python}
import json, os, subprocess, sys
args = sys.argv[1:]
with open(os.environ["FAKE_ENGINE_LOG"], "a") as f:
    f.write(json.dumps(args) + "\\n")
if args[:2] == ["image", "inspect"]:
    print("sha256:fakeimage")
    sys.exit(0)
image = next(i for i, a in enumerate(args) if a.startswith("localhost/bench:"))
host, inside = args[args.index("-v") + 1].rsplit(":", 1)
bench_args = [host if a == inside else a for a in args[image + 1:]]
sys.exit(subprocess.run([sys.executable, "-m", "bench", *bench_args], cwd={repo!r}).returncode)
"""


def test_gpus_given_by_slurm_are_passed_into_the_container():
    from bench.run.cluster.task import gpu_passthrough

    assert gpu_passthrough("/usr/bin/podman", ["0", "2"]) == [
        "--device",
        "nvidia.com/gpu=0",
        "--device",
        "nvidia.com/gpu=2",
    ]
    assert gpu_passthrough("docker", ["1"]) == ["--gpus", "device=1"]
    assert gpu_passthrough("podman", []) == []


def test_container_route_runs_the_image_like_bench_container(tmp_path):
    venvs, results = make_fake_envs(tmp_path / "venvs", ["jax"]), tmp_path / "results"
    engine = tmp_path / "podman"
    engine.write_text(FAKE_ENGINE.format(python=sys.executable, repo=str(REPO)))
    engine.chmod(0o755)
    env = {**bench_env(venvs), "FAKE_ENGINE_LOG": str(tmp_path / "engine.log")}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    args = [
        "--profile",
        "smoke",
        "--backend",
        "jax",
        "--model",
        "bert",
        "--task",
        "predict",
        "--results-dir",
        str(results),
    ]
    out = bench(
        ["submit", *args, "--container", "--container-engine", str(engine), "--dry-run", "--job-name", "c"], env
    )
    assert out.returncode == 0, out.stderr
    task = subprocess.run(
        [sys.executable, "-m", "bench.run.cluster.task", str(results / "slurm" / "c"), "0"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert task.returncode == 0, task.stdout + task.stderr
    inspect, run = [json.loads(line) for line in (tmp_path / "engine.log").read_text().splitlines()]
    assert inspect[:2] == ["image", "inspect"] and inspect[-1] == "localhost/bench:jax"
    assert run[:4] == ["run", "--rm", "--pull=never", "--shm-size=8g"] and "--device" not in run  # no GPU given
    assert f"{results}:/opt/bench/results" in run and "BENCH_IMAGE=localhost/bench:jax@sha256:fakeimage" in run
    assert "BENCH_SLURM_TASK=c/0" in run  # run outside Slurm here: no array job id
    image = run.index("localhost/bench:jax")
    assert run[image + 1 : image + 3] == ["run", "--backend"] and run[-2:] == ["--results-dir", "/opt/bench/results"]
    (result,) = load_all(results)
    assert result.status == "ok" and result.cell.backend == "jax"
    record = json.loads((results / "slurm" / "c" / "task-0.json").read_text())
    assert record["state"] == "exited" and record["exit_code"] == 0 and record["command"][0] == str(engine)
    assert [s.phase for s in job_status(find_job(results, "c"))] == ["done"]
