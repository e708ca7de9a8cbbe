"""`python -m bench submit-status`: every cell of a submission as pending / running / done / failed, and a
result file for every task that ended without writing one, so no cell is ever silently missing."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from bench.cluster.jobdir import JobDir
from bench.cluster.slurmstate import PENDING, TERMINAL, slurm_states
from bench.provenance import git_info, machine_info, now_utc
from bench.results import STATUSES, CorruptResult, Result, Run, load
from bench.registry import Cell, get_model


@dataclass
class CellState:
    index: int
    cell: Cell
    phase: str  # pending | running | done | failed
    slurm_state: str | None
    detail: str
    result: Result | None = None


def cancelled_status() -> str:
    """The schema's status for a task Slurm cancelled: a dedicated one once results.py has it."""
    for status in ("cancelled", "killed"):
        if status in STATUSES:
            return status
    return "error"


def slurm_run(state: str, exit_code: str, record: dict | None) -> Run:
    """A terminal Slurm state as the Run the orchestrator would have recorded."""
    wall = None
    if record and record.get("ended_epoch") and record.get("started_epoch"):
        wall = round(record["ended_epoch"] - record["started_epoch"], 3)
    code = record.get("exit_code") if record else None
    if state == "OUT_OF_MEMORY":
        return Run(status="oom", message="Slurm: OUT_OF_MEMORY (the task went over its --mem)", wall_s=wall, exit_code=code)
    if state in ("TIMEOUT", "DEADLINE"):
        return Run(status="timeout", message=f"Slurm: {state} (the task reached its --time limit and was killed)", wall_s=wall, exit_code=code)
    if state == "CANCELLED":
        return Run(status=cancelled_status(), message="cancelled by Slurm (CANCELLED)", wall_s=wall, exit_code=code)
    if state == "COMPLETED":
        return Run(status="error", message="Slurm: COMPLETED, but the task wrote no result file", wall_s=wall, exit_code=code)
    return Run(status="error", message=f"Slurm: {state} (exit code {exit_code or code})", wall_s=wall, exit_code=code)


def from_record(record: dict | None, slurm_reachable: bool, time_min: int) -> str | None:
    """A Slurm-like state from the task's own file, for clusters without accounting."""
    if record is None:
        return None if slurm_reachable else "PENDING"
    if record.get("state") == "running":
        return "LOST" if slurm_reachable else "RUNNING"  # Slurm forgot a task that never recorded its end
    if record.get("state") == "signalled":
        elapsed = record["ended_epoch"] - record["started_epoch"]
        return "TIMEOUT" if elapsed >= time_min * 60 else "CANCELLED"
    return "COMPLETED" if record.get("exit_code") == 0 else "FAILED"


def result_since(results_dir: Path, cell: Cell, since: str) -> Result | None:
    """This cell's result written by (or after) the submission, under any machine's folder."""
    since_dt = datetime.fromisoformat(since)
    for path in sorted((results_dir / cell.profile).glob(f"*/{cell.key}.json")):
        try:
            result = load(path)
        except CorruptResult:
            continue
        if datetime.fromisoformat(result.created_at) >= since_dt:
            return result
    return None


def record_slurm_end(job: JobDir, meta: dict, index: int, cell: Cell, state: str, exit_code: str, job_id: str) -> Result:
    record = job.task_record(index)
    machine = (record or {}).get("machine") or next((r["machine"] for i, _ in job.cells() if (r := job.task_record(i)) and r.get("machine")), None)
    spec_task = getattr(get_model(cell.model), "task", None)  # ModelSpec.task(name).unit once the schema has it
    result = Result(
        cell=cell,
        runs=[slurm_run(state, exit_code, record)],
        unit=spec_task(cell.task).unit if callable(spec_task) else "ms/step",
        provenance={
            "git": git_info(),
            "machine": machine or machine_info(),
            "profile_choice": "explicit (submit)",
            "orchestrator": sys.argv,
            "slurm": {"job": meta["name"], "job_id": job_id, "array_index": index, "state": state, "exit_code": exit_code, "host": (record or {}).get("host")},
        },
        created_at=now_utc(),
    )
    result.write(Path(meta["results_dir"]))
    return result


def job_status(job: JobDir, write: bool = True) -> list[CellState]:
    meta = job.meta()
    results_dir = Path(meta["results_dir"])
    job_of = {i: j["job_id"] for j in meta.get("jobs", []) for i in j["indices"]}
    slurm: dict[str, tuple[dict, bool]] = {jid: slurm_states(jid) for jid in set(job_of.values())}
    time_limits = {e["index"]: e["resources"]["time_min"] for e in job.entries()}
    states = []
    for index, cell in job.cells():
        job_id = job_of.get(index)
        result = result_since(results_dir, cell, meta["submitted_at"])
        if result is not None:
            phase = "done" if result.status in ("ok", "unsupported") else "failed"
            states.append(CellState(index, cell, phase, None, result.describe(), result))
            continue
        if job_id is None:
            states.append(CellState(index, cell, "pending", None, "not submitted (--dry-run, or sbatch failed)"))
            continue
        known, reachable = slurm[job_id]
        record = job.task_record(index)
        state, code = known.get(index) or (from_record(record, reachable, time_limits[index]) or "LOST", "")
        if state in TERMINAL or state == "LOST":
            result = record_slurm_end(job, meta, index, cell, state, code, job_id) if write else None
            detail = result.describe() if result else f"Slurm: {state}, no result file yet"
            states.append(CellState(index, cell, "failed", state, detail, result))
        elif state in PENDING:
            states.append(CellState(index, cell, "pending", state, f"Slurm: {state}"))
        else:
            host = f" on {record['host']}" if record and record.get("host") else ""
            states.append(CellState(index, cell, "running", state, f"Slurm: {state}{host}"))
    return states


def wait(job: JobDir, timeout_s: float, poll_s: float = 2.0) -> list[CellState]:
    """Poll until no cell is pending or running (then every finished task has a result file)."""
    deadline = time.monotonic() + timeout_s
    while True:
        states = job_status(job)
        if all(s.phase in ("done", "failed") for s in states) or time.monotonic() > deadline:
            return states
        time.sleep(poll_s)


def report(job: JobDir, states: list[CellState], echo=print) -> None:
    echo(f"{job.name} ({job.path}):")
    for s in states:
        echo(f"  [{s.index}] {s.cell.key:<48} {s.phase:<8} {s.detail}")
    counts: dict[str, int] = {}
    for s in states:
        counts[s.phase] = counts.get(s.phase, 0) + 1
    echo("  " + ", ".join(f"{n} {phase}" for phase, n in counts.items()))
