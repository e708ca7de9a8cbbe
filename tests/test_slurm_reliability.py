"""Slurm's cancelled and rejected jobs, resubmissions and unbuilt envs on the one-node test
cluster of tests/test_slurm.py (bench/run/cluster/localslurm.py)."""
import os
import subprocess
import time

import pytest
from fakes import bench_env, make_fake_envs
from test_slurm import bench, cluster, squeue_state  # noqa: F401  (cluster: the module's one-node Slurm fixture)

from bench.base.provenance import ENV_STAMP
from bench.record.results import load_all
from bench.run.cluster.jobdir import find_job
from bench.run.cluster.status import cancelled_status

ARGS = [
    "--profile",
    "smoke",
    "--backend",
    "jax",
    "--model",
    "bert",
    "--task",
    "predict",
    "--cpus-per-task",
    "1",
    "--mem",
    "1",
]
LATER = "--sbatch-arg=--begin=now+3600"  # a task that stays pending


def setup(cluster, tmp_path, **modes):
    venvs, results = make_fake_envs(tmp_path / "venvs", ["jax"]), tmp_path / "results"
    return venvs, results, {**bench_env(venvs, **modes), "SLURM_CONF": str(cluster.conf)}


def wait_for_state(cluster, job_id, state, timeout_s=60):
    deadline = time.monotonic() + timeout_s
    while squeue_state(cluster, job_id) != state:
        assert time.monotonic() < deadline, f"job {job_id} never reached {state} ({squeue_state(cluster, job_id)!r})"
        time.sleep(0.5)


def submit_pending(cluster, tmp_path, name="first"):
    """A submission of ARGS' one cell whose task stays pending: its results folder, environment and job id."""
    _, results, env = setup(cluster, tmp_path)
    out = bench(["submit", *ARGS, "--results-dir", str(results), "--job-name", name, LATER], env)
    assert out.returncode == 0, out.stdout + out.stderr
    job_id = find_job(results, name).meta()["jobs"][0]["job_id"]
    try:
        wait_for_state(cluster, job_id, "PENDING")
    except AssertionError:
        subprocess.run(["scancel", job_id], env=cluster.env(), check=True)
        raise
    return results, env, job_id


@pytest.mark.slurm
def test_a_cancelled_pending_task_is_cancelled_not_lost(cluster, tmp_path):
    """Tasks that each take every core of the node: one runs, the others wait in the array's pending record. scancel
    of one waiting task takes its index out of that record: Slurm 22.05 keeps no state for it anywhere (scontrol,
    jobcomp). It is cancelled, as a cancelled running task is, never LOST."""
    _, results, env = setup(cluster, tmp_path, jax="sleep")
    every_core = ["--cpus-per-task", str(os.cpu_count() or 1), "--mem", "1"]
    out = bench(
        [
            "submit",
            "--profile",
            "smoke",
            "--backend",
            "jax",
            "--model",
            "bert,sam",
            "--task",
            "fit,predict",
            *every_core,
            "--results-dir",
            str(results),
            "--job-name",
            "four",
        ],
        env,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    (job,) = find_job(results, "four").meta()["jobs"]
    job_id, last = job["job_id"], max(job["indices"])
    try:
        deadline = time.monotonic() + 60
        while "RUNNING" not in squeue_state(cluster, job_id).split():
            assert time.monotonic() < deadline, f"no task started: {squeue_state(cluster, job_id)!r}"
            time.sleep(0.5)
        assert squeue_state(cluster, f"{job_id}_{last}") == "PENDING"
        subprocess.run(["scancel", f"{job_id}_{last}"], env=cluster.env(), check=True)
        time.sleep(1)
        out = bench(["submit-status", "--results-dir", str(results), "--job", job_id], env)
        line = next(l for l in out.stdout.splitlines() if l.strip().startswith(f"[{last}]"))
        assert " failed " in line and "cancelled by Slurm before it started" in line and "LOST" not in line, out.stdout
        (result,) = load_all(results)
        assert result.status == cancelled_status()
        assert result.message == "cancelled by Slurm before it started (it never ran, and Slurm no longer lists it)"
    finally:
        subprocess.run(["scancel", job_id], env=cluster.env(), check=True)


@pytest.mark.slurm
def test_queued_cells_are_not_submitted_again_and_status_claims_only_its_own_tasks_result(cluster, tmp_path):
    results, env, job_id = submit_pending(cluster, tmp_path)
    try:
        again = bench(["submit", *ARGS, "--results-dir", str(results), "--job-name", "second"], env)
        assert again.returncode == 0, again.stdout + again.stderr
        assert (
            "1 cells are already queued or running in an earlier submission, not submitted again: jax__bert__predict__bs2__default (first, task 0: pending)"
            in again.stdout
        )
        assert "nothing to do" in again.stdout and not (results / "slurm" / "second").exists()
        # a result of the cell that the first submission's task did not write (a local run) is not its result
        local = bench(["run", *ARGS[:8], "--results-dir", str(results)], env)
        assert local.returncode == 0, local.stdout + local.stderr
        status = bench(["submit-status", "--results-dir", str(results), "--job", "first"], env)
        assert status.returncode == 0 and "1 pending" in status.stdout, status.stdout + status.stderr
    finally:
        subprocess.run(["scancel", job_id], env=cluster.env(), check=True)


@pytest.mark.slurm
def test_the_status_of_an_older_submission_never_demotes_a_newer_result(cluster, tmp_path):
    """A task cancelled while pending, its cell resubmitted and ok: the first submission's status once moved the ok
    result to history/ and made "killed" current. The older record goes to history/; the newer result stays."""
    results, env, job_id = submit_pending(cluster, tmp_path)
    try:
        subprocess.run(["scancel", job_id], env=cluster.env(), check=True)
        wait_for_state(cluster, job_id, "")
        again = bench(["submit", *ARGS, "--results-dir", str(results), "--job-name", "second"], env)
        assert again.returncode == 0 and "nothing to do" not in again.stdout, again.stdout + again.stderr
        done = bench(["submit-status", "--results-dir", str(results), "--job", "second", "--wait", "60"], env)
        assert done.returncode == 0 and "1 done" in done.stdout, done.stdout + done.stderr
        old = bench(["submit-status", "--results-dir", str(results), "--job", "first"], env)
        assert old.returncode == 1 and "cancelled by Slurm" in old.stdout, old.stdout + old.stderr
        (current,) = load_all(results)
        assert current.status == "ok" and current.provenance["slurm_task"].startswith("second/"), current.provenance
        (kept,) = results.rglob("history/*.json")
        assert '"status": "' + cancelled_status() + '"' in kept.read_text()
        again = bench(["submit-status", "--results-dir", str(results), "--job", "first"], env)  # read back, not redone
        assert "cancelled by Slurm" in again.stdout and len(list(results.rglob("history/*.json"))) == 1, again.stdout
    finally:
        subprocess.run(["scancel", job_id], env=cluster.env(), check=True)


@pytest.mark.slurm
def test_a_submission_sbatch_rejects_is_failed_with_its_message(cluster, tmp_path):
    _, results, env = setup(cluster, tmp_path)
    out = bench(
        ["submit", *ARGS, "--results-dir", str(results), "--job-name", "nowhere", "--partition", "no-such-partition"],
        env,
    )
    assert out.returncode == 2 and "sbatch rejected 1 of 1 cells" in out.stderr, out.stdout + out.stderr
    assert "invalid partition" in out.stdout.lower(), out.stdout
    status = bench(["submit-status", "--results-dir", str(results), "--job", "nowhere", "--wait", "30"], env)
    assert status.returncode == 1, status.stdout + status.stderr
    assert "failed   sbatch rejected it: sbatch" in status.stdout and "invalid partition" in status.stdout.lower()


@pytest.mark.slurm
def test_an_unbuilt_env_is_refused_before_sbatch_and_a_task_that_fails_says_why(cluster, tmp_path):
    venvs, results, env = setup(cluster, tmp_path)
    stamp = venvs / "jax" / ENV_STAMP
    kept = stamp.read_text()
    stamp.unlink()
    out = bench(["submit", *ARGS, "--results-dir", str(results), "--job-name", "unbuilt"], env)
    assert (
        out.returncode == 2
        and "the 'jax' environment is not built" in out.stderr
        and "make env BACKEND=jax" in out.stderr
    )
    assert not (results / "slurm").exists()  # nothing submitted
    # built at submission, gone when the task starts: the task's result carries the cause from its log
    stamp.write_text(kept)
    out = bench(
        ["submit", *ARGS, "--results-dir", str(results), "--job-name", "removed", "--sbatch-arg=--begin=now+4"], env
    )
    assert out.returncode == 0, out.stdout + out.stderr
    stamp.unlink()
    status = bench(
        ["submit-status", "--results-dir", str(results), "--job", "removed", "--wait", "90"], env, timeout=150
    )
    assert status.returncode == 1, status.stdout + status.stderr
    (result,) = load_all(results)
    assert result.status == "error" and "last output of task-0.log" in result.message
    assert "the 'jax' environment is not built" in result.message, result.message
