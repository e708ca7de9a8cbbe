"""`python -m bench submit-status`: every cell of a submission as pending / running / done / failed, and a
result file for every task that ended without writing one, so no cell is ever silently missing."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bench.base.provenance import git_info, machine_info, now_utc
from bench.catalogue.registry import Cell
from bench.record.results import STATUSES, CorruptResult, Result, Run, load
from bench.run.cluster.jobdir import JobDir
from bench.run.cluster.slurmstate import PENDING, TERMINAL, slurm_states


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
        return Run(
            status="oom", message="Slurm: OUT_OF_MEMORY (the task went over its --mem)", wall_s=wall, exit_code=code
        )
    if state in ("TIMEOUT", "DEADLINE"):
        return Run(
            status="timeout",
            message=f"Slurm: {state} (the task reached its --time limit and was killed)",
            wall_s=wall,
            exit_code=code,
        )
    if state == "CANCELLED":
        return Run(status=cancelled_status(), message="cancelled by Slurm (CANCELLED)", wall_s=wall, exit_code=code)
    if state == CANCELLED_PENDING:
        return Run(
            status=cancelled_status(),
            message="cancelled by Slurm before it started (it never ran, and Slurm no longer lists it)",
        )
    if state == "COMPLETED":
        return Run(
            status="error", message="Slurm: COMPLETED, but the task wrote no result file", wall_s=wall, exit_code=code
        )
    return Run(status="error", message=f"Slurm: {state} (exit code {exit_code or code})", wall_s=wall, exit_code=code)


# A task that never started (it wrote no task-<i>.json) and that Slurm no longer lists: only scancel takes a pending
# task out of the queue without running it (Slurm 22.05 drops it from `scontrol show job`, and jobcomp logs nothing).
CANCELLED_PENDING = "CANCELLED_PENDING"


def from_record(record: dict | None, slurm_reachable: bool, time_min: int) -> str | None:
    """A Slurm-like state from the task's own file, for clusters without accounting."""
    if record is None:
        return CANCELLED_PENDING if slurm_reachable else "PENDING"
    if record.get("state") == "running":
        return "LOST" if slurm_reachable else "RUNNING"  # Slurm forgot a task that never recorded its end
    if record.get("state") == "signalled":
        elapsed = record["ended_epoch"] - record["started_epoch"]
        return "TIMEOUT" if elapsed >= time_min * 60 else "CANCELLED"
    return "COMPLETED" if record.get("exit_code") == 0 else "FAILED"


def written_by(result: Result, job_name: str, index: int) -> bool:
    """Whether this submission's task `index` wrote the result (or its status recorded it): the task names itself in
    BENCH_SLURM_TASK (<job-name>/<array job id>_<index>, or <job-name>/<index> outside Slurm), which the orchestrator
    records in the result's provenance and the cell in its process variables. Another submission's result of the same
    cell, or a local run's, is not this task's."""
    slurm = result.provenance.get("slurm") or {}
    if slurm.get("job") == job_name and slurm.get("array_index") == index:
        return True
    names = {result.provenance.get("slurm_task")} | {
        (r.process.get("variables") or {}).get("BENCH_SLURM_TASK") for r in result.runs
    }
    return any(
        isinstance(n, str) and n.startswith(f"{job_name}/") and n.rsplit("/", 1)[1].rsplit("_", 1)[-1] == str(index)
        for n in names
    )


def result_since(
    results_dir: Path, cell: Cell, since: str, job_name: str | None = None, index: int | None = None
) -> Result | None:
    """This cell's result written by the submission's own task (by or after the submission when no task is named),
    under any machine's folder; a result moved to history/ by a later run of the cell still counts."""
    since_dt = datetime.fromisoformat(since)
    folder = results_dir / cell.profile
    paths = sorted(folder.glob(f"*/{cell.key}.json")) + sorted(folder.glob(f"*/history/{cell.key}.*.json"))
    for path in paths:
        try:
            result = load(path)
        except CorruptResult:
            continue
        if datetime.fromisoformat(result.created_at) >= since_dt and (
            job_name is None or written_by(result, job_name, index)
        ):
            return result
    return None


def last_lines(job: JobDir, index: int, count: int = 5) -> str:
    """The end of a task's log (task-<i>.log): where the real cause of a failed task is, e.g. an env not built."""
    try:
        lines = [line.strip() for line in job.task_log(index).read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return " | ".join(lines[-count:])


def record_slurm_end(
    job: JobDir, meta: dict, index: int, cell: Cell, state: str, exit_code: str, job_id: str
) -> Result:
    record = job.task_record(index)
    machine = (record or {}).get("machine") or next(
        (r["machine"] for i, _ in job.cells() if (r := job.task_record(i)) and r.get("machine")), None
    )
    spec_task = getattr(cell.spec, "task", None)  # ModelSpec.task(name).unit once the schema has it
    run = slurm_run(state, exit_code, record)
    if state not in ("CANCELLED", CANCELLED_PENDING) and (tail := last_lines(job, index)):
        run.message = f"{run.message}; last output of task-{index}.log: {tail}"[:2000]
    result = Result(
        cell=cell,
        runs=[run],
        unit=spec_task(cell.task).unit if callable(spec_task) else "ms/step",
        provenance={
            "git": git_info(),
            "machine": machine or machine_info(),
            "profile_choice": "explicit (submit)",
            "orchestrator": sys.argv,
            "slurm": {
                "job": meta["name"],
                "job_id": job_id,
                "array_index": index,
                "state": state,
                "exit_code": exit_code,
                "host": (record or {}).get("host"),
            },
        },
        created_at=now_utc(),
    )
    results_dir = Path(meta["results_dir"])
    # The task's own time: its start, or the submission for a task that never started. A result of the cell written
    # since (a resubmission's, a local run's) is newer than what this task ended with, and stays current.
    since = (
        datetime.fromtimestamp(record["started_epoch"], UTC)
        if record and record.get("started_epoch")
        else datetime.fromisoformat(meta["submitted_at"])
    )
    current = results_dir / result.relative_path()
    try:
        newer = current.exists() and datetime.fromisoformat(load(current).created_at) >= since
    except CorruptResult:
        newer = False  # result.write names it
    if newer:
        result.write_to_history(results_dir)
    else:
        result.write(results_dir)
    return result


def job_status(job: JobDir, write: bool = True) -> list[CellState]:
    meta = job.meta()
    results_dir = Path(meta["results_dir"])
    job_of = {i: j["job_id"] for j in meta.get("jobs", []) for i in j["indices"]}
    rejected = {i: r["message"] for r in meta.get("rejected", []) for i in r["indices"]}
    slurm: dict[str, tuple[dict, bool]] = {jid: slurm_states(jid) for jid in set(job_of.values())}
    time_limits = {e["index"]: e["resources"]["time_min"] for e in job.entries()}
    states = []
    for index, cell in job.cells():
        job_id = job_of.get(index)
        result = result_since(results_dir, cell, meta["submitted_at"], job.name, index)
        if result is not None:
            phase = "done" if result.status in ("ok", "unsupported") else "failed"
            states.append(CellState(index, cell, phase, None, result.describe(), result))
            continue
        if index in rejected:
            states.append(CellState(index, cell, "failed", None, f"sbatch rejected it: {rejected[index]}"))
            continue
        if job_id is None:
            states.append(CellState(index, cell, "pending", None, "not submitted (--dry-run)"))
            continue
        known, reachable = slurm[job_id]
        record = job.task_record(index)
        state, code = known.get(index) or (from_record(record, reachable, time_limits[index]) or "LOST", "")
        if state in TERMINAL or state in ("LOST", CANCELLED_PENDING):
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
