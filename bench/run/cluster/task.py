"""One Slurm array task: `python -m bench.run.cluster.task JOB_DIR INDEX`, run by the array script on the node.

It runs cells[INDEX] through the orchestrator's own command (`python -m bench run ...`, so the result is
written by the same atomic writer with the same provenance), on the host's .venvs or in the backend's
container image, and records its own start, end and exit code in task-<INDEX>.json: `submit-status` works
from those when Slurm keeps no accounting.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from bench.base.provenance import gpus, machine_info, machine_slug, now_utc
from bench.catalogue.profiles import get_profile
from bench.catalogue.registry import Cell
from bench.run.cluster.jobdir import JobDir

CONTAINER_RESULTS = "/opt/bench/results"  # where bench-container (mk/containers.mk) mounts the results folder
CONTAINER_SHM = "8g"


def run_arguments(cell: Cell, results_dir: str) -> list[str]:
    """`bench run` narrowed to exactly this cell. --steps only where the cell's count is fixed (it was given one):
    a cell that samples to its profile's precision samples on the node as it would locally. Its processes are the
    profile's count, fixed (--repeats): exactly what Slurm's --time counts (bench/catalogue/cost.py task_timeout_s), where a
    disturbed process replaced under the profile's sequential rule could outrun it; a task's cell has no row beside
    it in its run, so no process would be added for a comparison either."""
    steps = ["--steps", str(cell.timed_steps)] if cell.max_timed_steps is None else []
    return [
        "run", "--backend", cell.backend, "--model", cell.model, "--task", cell.task,
        "--batch-size", str(cell.batch_size), "--variant", cell.variant, "--profile", cell.profile,
        *steps, "--warmup", str(cell.warmup_steps), "--repeats", str(get_profile(cell.profile).repeats),
        "--results-dir", results_dir,
    ]  # fmt: skip


def physical_gpus(env: dict[str, str]) -> list[str]:
    """The GPUs Slurm gave this task as the container engine on the node names them. Slurm's SLURM_STEP_GPUS /
    SLURM_JOB_GPUS are the node's physical ids (nvidia-smi's indices); CUDA_VISIBLE_DEVICES is not: under
    ConstrainDevices=yes the job sees only its GPUs and Slurm numbers them from 0, while podman and docker name the
    node's GPUs. Without Slurm's list, the UUIDs of the GPUs CUDA_VISIBLE_DEVICES makes visible (the same in every
    numbering); none when nothing was given (a CPU task)."""
    for name in ("SLURM_STEP_GPUS", "SLURM_JOB_GPUS"):
        ids = [i.strip() for i in (env.get(name) or "").split(",") if i.strip()]
        if ids:
            return ids
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if not visible or not visible.strip():
        return []
    uuids = [g["uuid"] for g in gpus(visible=visible) if g.get("uuid")]
    return uuids or [i.strip() for i in visible.split(",") if i.strip()]


def gpu_passthrough(engine: str, indices: list[str]) -> list[str]:
    """The GPUs (physical ids or UUIDs: physical_gpus) passed into the container; none on CPU."""
    if not indices:
        return []
    if Path(engine).name == "docker":
        return ["--gpus", f"device={','.join(indices)}"]
    return [arg for i in indices for arg in ("--device", f"nvidia.com/gpu={i}")]  # podman: the NVIDIA CDI spec


def container_command(cell: Cell, meta: dict, env: dict[str, str]) -> list[str]:
    engine, image = meta["container"]["engine"], f"{meta['container']['image_name']}:{cell.backend}"
    try:
        inspected = subprocess.run(
            [engine, "image", "inspect", "--format", "{{.Id}}", image], capture_output=True, text=True
        )
        image_id = inspected.stdout.strip() if inspected.returncode == 0 else "unknown"
    except OSError:  # no engine on this node: the run below fails and says so
        image_id = "unknown"
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    return [
        engine, "run", "--rm", "--pull=never", f"--shm-size={CONTAINER_SHM}",
        *gpu_passthrough(engine, physical_gpus(env)),
        "-v", f"{meta['results_dir']}:{CONTAINER_RESULTS}",
        "-e", f"BENCH_GIT_COMMIT={commit}", "-e", f"BENCH_IMAGE={image}@{image_id}", "-e", f"BENCH_SLURM_TASK={env.get('BENCH_SLURM_TASK', '')}",
        image, *run_arguments(cell, CONTAINER_RESULTS),
    ]  # fmt: skip


def cell_command(cell: Cell, meta: dict, env: dict[str, str]) -> list[str]:
    if meta["route"] == "container":
        return container_command(cell, meta, env)
    # The orchestrator runs in this (tools) interpreter and starts the cell in .venvs/<backend>, as locally.
    return [sys.executable, "-m", "bench", *run_arguments(cell, meta["results_dir"])]


def main(job_dir: Path, index: int) -> int:
    job = JobDir(Path(job_dir))
    meta, cell = job.meta(), job.cell(index)
    machine = machine_info()
    record = {
        "index": index,
        "cell_key": cell.key,
        "job_id": os.environ.get("SLURM_JOB_ID"),
        "array_job_id": os.environ.get("SLURM_ARRAY_JOB_ID"),
        "host": socket.gethostname(),
        "machine": machine,
        "machine_slug": machine_slug(machine),
        "gpus_visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "gpus_physical": physical_gpus(dict(os.environ)),
        "state": "running",
        "started_at": now_utc(),
        "started_epoch": time.time(),
    }
    # BENCH_* variables are recorded in each run's provenance (process.variables): the result names its task.
    task_id = f"{record['array_job_id']}_{index}" if record["array_job_id"] else str(index)  # Slurm's name for it
    env = {**os.environ, "BENCH_SLURM_TASK": f"{job.name}/{task_id}"}
    command = cell_command(cell, meta, env)
    record["command"] = command
    job.write_task_record(index, record)
    print(f"[task {index}] {cell.key} on {record['host']}: {' '.join(command)}", flush=True)
    try:
        proc = subprocess.Popen(command, env=env, start_new_session=True)
    except OSError as e:  # e.g. no podman on this node: recorded, and Slurm sees the task fail
        record.update(
            state="exited", signal=None, exit_code=127, error=str(e), ended_at=now_utc(), ended_epoch=time.time()
        )
        job.write_task_record(index, record)
        print(f"[task {index}] cannot start {command[0]}: {e}", flush=True)
        return 127
    received: list[int] = []

    def forward(signum, _frame):  # scancel / time limit: Slurm sends SIGTERM, then SIGKILL after KillWait
        received.append(signum)
        try:
            os.killpg(proc.pid, signum)
        except ProcessLookupError:
            pass

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
        signal.signal(sig, forward)
    code = proc.wait()
    record.update(
        state="signalled" if received else "exited",
        signal=signal.Signals(received[0]).name if received else None,
        exit_code=code,
        ended_at=now_utc(),
        ended_epoch=time.time(),
    )
    job.write_task_record(index, record)
    print(
        f"[task {index}] {cell.key}: exit code {code}" + (f" after {record['signal']}" if received else ""), flush=True
    )
    return 128 + received[0] if received else code


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), int(sys.argv[2])))
