"""Slurm's view of array tasks, from whatever this cluster keeps: sacct (accounting), scontrol (jobs still in
slurmctld's memory, MinJobAge: 300 s by default), the jobcomp/filetxt log, and the tasks' own records."""
from __future__ import annotations

import re
import shutil
import subprocess

TERMINAL = {
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "OUT_OF_MEMORY",
    "NODE_FAIL",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
    "REVOKED",
}
PENDING = {"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "SUSPENDED"}
FIELD = re.compile(r"(\w+)=(\S*)")


def task_ids(text: str) -> list[int]:
    """Slurm's array index lists: "3", "1-4", "[0,2,5-7%2]" -> [indices]."""
    text = text.strip("[]").split("%")[0]
    ids: list[int] = []
    for part in filter(None, text.split(",")):
        low, _, high = part.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            continue
        ids.extend(range(int(low), int(high or low) + 1))
    return ids


def _run(cmd: list[str]) -> subprocess.CompletedProcess | None:
    if not shutil.which(cmd[0]):
        return None
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return None


def from_sacct(job_id: str) -> dict[int, tuple[str, str]] | None:
    """{array index: (state, exit code)}; None when accounting is off or sacct is missing."""
    out = _run(["sacct", "-j", job_id, "--format=JobID,State,ExitCode", "-P", "-n"])
    if out is None or out.returncode != 0:
        return None
    return parse_sacct(out.stdout)


def parse_sacct(text: str) -> dict[int, tuple[str, str]]:
    """`sacct -P -n --format=JobID,State,ExitCode` lines: 12_0|COMPLETED|0:0, 12_[3-4]|PENDING|0:0, 12_0.batch|..."""
    states: dict[int, tuple[str, str]] = {}
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) < 3 or "." in parts[0] or "_" not in parts[0]:
            continue  # job steps (12_0.batch) and non-array lines
        state = parts[1].split()[0]  # "CANCELLED by 0"
        for index in task_ids(parts[0].split("_", 1)[1]):
            states[index] = (state, parts[2])
    return states


def parse_records(lines: list[str], job_id: str) -> dict[int, tuple[str, str]]:
    states: dict[int, tuple[str, str]] = {}
    for line in lines:
        fields = dict(FIELD.findall(line))
        if fields.get("ArrayJobId") != job_id or "JobState" not in fields:
            continue
        for index in task_ids(fields.get("ArrayTaskId", "")):
            states[index] = (fields["JobState"], fields.get("ExitCode", ""))
    return states


def from_scontrol(job_id: str) -> dict[int, tuple[str, str]] | None:
    """Tasks slurmctld still knows; {} when it has forgotten the job, None when scontrol cannot answer."""
    out = _run(["scontrol", "show", "job", "-o", job_id])
    if out is None:
        return None
    if out.returncode != 0:
        return {} if "Invalid job id" in out.stderr else None
    return parse_records(out.stdout.splitlines(), job_id)


def slurm_config() -> dict[str, str]:
    out = _run(["scontrol", "show", "config"])
    if out is None or out.returncode != 0:
        return {}
    config = {}
    for line in out.stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            config[key.strip()] = value.strip()
    return config


def from_jobcomp(job_id: str, config: dict[str, str]) -> dict[int, tuple[str, str]]:
    """Final states from JobCompType=jobcomp/filetxt (readable on the controller or a shared JobCompLoc)."""
    if config.get("JobCompType") != "jobcomp/filetxt":
        return {}
    try:
        with open(config.get("JobCompLoc", "")) as f:
            return parse_records(f.readlines(), job_id)
    except OSError:
        return {}


def slurm_states(job_id: str, config: dict[str, str] | None = None) -> tuple[dict[int, tuple[str, str]], bool]:
    """Merged states of one array job, and whether Slurm could be asked at all (False: only task files)."""
    sacct = from_sacct(job_id)
    if sacct:
        return sacct, True
    scontrol = from_scontrol(job_id)
    jobcomp = from_jobcomp(job_id, slurm_config() if config is None else config)
    return {**jobcomp, **(scontrol or {})}, scontrol is not None or sacct is not None
