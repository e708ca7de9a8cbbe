"""`python -m bench submit`: the matrix as Slurm array jobs, one array task per cell.

Cells that already have a current result (ok or unsupported) are skipped unless forced. Cells asking for the
same resources share one array job (Slurm sets resources per job, and the plan can give each cell its own
memory); the array indices are the cells' indices in cells.json, so task-<i> always means cells[i].
"""
from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench.base.atomic import write_text_atomic
from bench.base.errors import BenchError
from bench.base.provenance import REPO_ROOT, machine_info, machine_slug, now_utc
from bench.catalogue.registry import Cell
from bench.plan import plan_path
from bench.record.results import CorruptResult, load
from bench.run.cluster.jobdir import JobDir, slurm_root
from bench.run.cluster.resources import Resources, cell_resources, load_plan

ROUTES = ("venv", "container")


def known_machine_slugs(results_dir: Path) -> set[str]:
    """This machine's slug and every node's that an earlier array task recorded: where results may live."""
    slugs = {machine_slug(machine_info())}
    root = slurm_root(results_dir)
    for record in root.glob("*/task-*.json") if root.exists() else []:
        try:
            slug = json.loads(record.read_text()).get("machine_slug")
        except (OSError, ValueError):
            continue
        if slug:
            slugs.add(slug)
    return slugs


def has_current_result(results_dir: Path, cell: Cell, slugs: set[str]) -> bool:
    for slug in slugs:
        path = Path(results_dir) / cell.profile / slug / f"{cell.key}.json"
        if path.exists():
            try:
                if load(path).status in ("ok", "unsupported"):
                    return True
            except CorruptResult:
                continue  # re-run it: the new result moves the unreadable one aside
    return False


def group_by_resources(entries: list[tuple[int, Cell, Resources]]) -> list[tuple[Resources, list[int]]]:
    groups: dict[Resources, list[int]] = {}
    for index, _, res in entries:
        groups.setdefault(res, []).append(index)
    return list(groups.items())


def array_script(
    job: JobDir,
    group: int,
    res: Resources,
    indices: list[int],
    python: str,
    partition: str | None,
    extra: list[str],
    env: dict[str, str],
) -> str:
    lines = [
        "#!/bin/bash",
        f"# Written by `python -m bench submit` (bench/run/cluster/submit.py) at {now_utc()}: resource group {group}.",
        "# Each array task measures cells.json[SLURM_ARRAY_TASK_ID] through `python -m bench run` (bench/run/cluster/task.py).",
        f"#SBATCH --job-name={job.name}",
        f"#SBATCH --array={','.join(map(str, indices))}",
        f"#SBATCH --output={job.path.resolve()}/task-%a.log",
        f"#SBATCH --chdir={REPO_ROOT}",
        "#SBATCH --export=ALL",
        *(f"#SBATCH {option}" for option in res.sbatch_options()),
        *([f"#SBATCH --partition={partition}"] if partition else []),
        *(f"#SBATCH {option}" for option in extra),
        *(f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items())),
        f"exec {shlex.quote(python)} -m bench.run.cluster.task {shlex.quote(str(job.path.resolve()))} \"$SLURM_ARRAY_TASK_ID\"",
    ]
    return "\n".join(lines) + "\n"


def sbatch(script: Path) -> str:
    binary = shutil.which("sbatch")
    if not binary:
        raise BenchError("sbatch not found: submit from a machine with the Slurm client tools (a login node)")
    out = subprocess.run([binary, "--parsable", str(script)], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise BenchError(f"sbatch {script} failed ({out.returncode}): {(out.stderr or out.stdout).strip()}")
    return out.stdout.strip().split(";")[0]  # "<id>" or "<id>;<cluster>"


def submit(
    cells: list[Cell],
    results_dir: Path,
    job_name: str | None = None,
    force: bool = False,
    route: str = "venv",
    python: str | None = None,
    gres: str = "auto",
    cpus: int | None = None,
    mem_gib: int | None = None,
    partition: str | None = None,
    sbatch_args: list[str] | None = None,
    container_engine: str = "podman",
    image_name: str = "localhost/bench",
    env: dict[str, str] | None = None,
    dry_run: bool = False,
    echo=print,
) -> JobDir | None:
    """Write results/slurm/<job-name>/ and submit its array jobs; None when every cell is already current."""
    if route not in ROUTES:
        raise BenchError(f"unknown route {route!r}; valid: {', '.join(ROUTES)}")
    results_dir = Path(results_dir).resolve()
    slugs = known_machine_slugs(results_dir)
    todo = [c for c in cells if force or not has_current_result(results_dir, c, slugs)]
    skipped = len(cells) - len(todo)
    if skipped:
        echo(
            f"submit: {skipped} of {len(cells)} cells already have a current result (ok/unsupported); FORCE=1 re-runs them"
        )
    queued = queued_cells(results_dir) if not dry_run else {}
    if waiting := [c for c in todo if c.key in queued]:
        echo(
            f"submit: {len(waiting)} cells are already queued or running in an earlier submission, not submitted again: "
            + ", ".join(f"{c.key} ({queued[c.key]})" for c in waiting)
        )
        todo = [c for c in todo if c.key not in queued]
    if route == "venv" and not dry_run:
        check_envs_built(todo)
    if not todo:
        echo("submit: nothing to do")
        return None
    name = job_name or f"bench-{todo[0].profile}-{time.strftime('%Y%m%d-%H%M%S')}"
    job = JobDir(slurm_root(results_dir) / name)
    if (job.path / "job.json").exists():
        raise BenchError(f"{job.path} exists already: choose another --job-name")
    job.path.mkdir(parents=True)
    # each profile's own plan (bench plan writes plan-<profile>.json): plan.json is whichever profile was planned
    # last, and a smoke plan would size the paper cells that share its keys (the batch-1 cells)
    plans = {profile: load_plan(plan_path(results_dir, profile)) for profile in {c.profile for c in todo}}
    entries = [
        (i, c, cell_resources(c, plans[c.profile], gres=gres, cpus=cpus, mem_gib=mem_gib)) for i, c in enumerate(todo)
    ]
    write_text_atomic(
        job.path / "cells.json",
        json.dumps([{"index": i, "cell": c.to_dict(), "resources": r.__dict__} for i, c, r in entries], indent=1) + "\n",
    )
    python = python or sys.executable
    meta = {
        "name": name,
        "submitted_at": now_utc(),
        "results_dir": str(results_dir),
        "route": route,
        "python": python,
        "container": {"engine": container_engine, "image_name": image_name} if route == "container" else None,
        "jobs": [],
    }
    job.write_meta(meta)
    for group, (res, indices) in enumerate(group_by_resources(entries)):
        script = job.path / f"array-{group}.sbatch"
        text = array_script(job, group, res, indices, python, partition, sbatch_args or [], env or {})
        write_text_atomic(script, text, mode=0o755)
        if dry_run:
            echo(
                f"submit: wrote {script} ({len(indices)} cells; {' '.join(res.sbatch_options())}); not submitted (--dry-run)"
            )
            continue
        try:
            job_id = sbatch(script)
        except BenchError as e:  # recorded: submit-status shows these cells failed with sbatch's words, not pending
            meta.setdefault("rejected", []).append({"script": script.name, "indices": indices, "message": str(e)})
            job.write_meta(meta)
            echo(f"submit: {e}")
            continue
        meta["jobs"].append({"job_id": job_id, "script": script.name, "indices": indices})
        job.write_meta(meta)  # after each sbatch: a later failure leaves the earlier ids recorded
        echo(f"submit: job {job_id}: {len(indices)} cells ({' '.join(res.sbatch_options())}) [{script}]")
    if meta.get("rejected"):
        count = sum(len(r["indices"]) for r in meta["rejected"])
        raise BenchError(
            f"sbatch rejected {count} of {len(todo)} cells of {job.path} (recorded: `make submit-status JOB={name}` shows them failed)"
        )
    echo(f"submit: {len(todo)} cells in {job.path}; `make submit-status JOB={name}` follows them")
    return job


def queued_cells(results_dir: Path) -> dict[str, str]:
    """Cell key -> the earlier submission (of this results folder) in which Slurm has it pending or running."""
    from bench.run.cluster.status import job_status

    root, queued = slurm_root(results_dir), {}
    for meta_path in sorted(root.glob("*/job.json")) if root.exists() else []:
        try:
            states = job_status(JobDir(meta_path.parent), write=False)
        except BenchError:
            continue
        for state in states:
            if state.phase in ("pending", "running") and state.slurm_state is not None:
                queued[state.cell.key] = f"{meta_path.parent.name}, task {state.index}: {state.phase}"
    return queued


def check_envs_built(cells: list[Cell]) -> None:
    """Before sbatch: each runnable cell's env is built and current (the nodes run .venvs/<env> from the same shared
    folder), or the task fails on its node with the cause only in its log."""
    from bench.run.env_lookup import env_python

    for env in dict.fromkeys(c.env for c in cells if not c.spec.why_cell_unsupported(c)):
        env_python(env)  # raises naming `make env BACKEND=...`
