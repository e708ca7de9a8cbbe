"""The framework-overhead study's orchestrator: `make overhead` / `python -m bench overhead`.

One worker process per env (torch: pure PyTorch and Keras on torch; jax: pure JAX and Keras on JAX), one after
the other, each timing its four columns round-robin (bench/studies/overhead/worker.py); then every column's first
output is compared with pure PyTorch eager's (forward: the largest difference within TOLERANCE of the
reference's largest magnitude; generate: the same token ids), and one schema-2 result file is written per
(benchmark, column) under <results>/overhead/<size>/<machine>/, the Result writer's history kept. A worker that
dies or runs past its timeout is a status of each of its columns (timeout, oom, killed, error), never a crash.
Then <results>/OVERHEAD.md is rendered (bench/studies/overhead/page.py).

Shared with the runner, the grid and the release sweep (not duplicated): the env checks (`env_python`), a worker run
to its end (bench/run/worker_process.py: its process group, timeout and crash status), the drift probe, the provenance
and `Result`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.base.provenance import REPO_ROOT, git_info, machine_info, machine_slug, now_utc, study_provenance
from bench.base.resultsdir import results_folder
from bench.base.runlock import holds_results_folder
from bench.catalogue.backends import cell_environment
from bench.catalogue.registry import Cell
from bench.measure.drift import reference_ms
from bench.record.result_checks import check_cell_schema
from bench.record.results import Result, Run
from bench.run.cell_process import child_environment
from bench.run.env_lookup import env_python
from bench.run.results_folder import check_writable
from bench.run.worker_process import run_logged
from bench.studies.grid.workers import WORKER_ENVIRONMENT  # the grid workers' variables: spinning OpenMP threads
from bench.studies.overhead.spec import (
    BENCHMARKS,
    COLUMNS,
    DEFAULT_SIZE,
    ENVS,
    REFERENCE_COLUMN,
    SIZES,
    STUDY_DIR,
    TOLERANCE,
    Size,
    get_size,
)

WORKER_TIMEOUT_S = 1500.0  # one env's four columns x three benchmarks, compiles included (torch.compile is minutes)


class OverheadResult(Result):
    """A study point's result: a schema-2 Result whose file lives under <results>/overhead/<size>/<machine>/."""

    def relative_path(self) -> Path:
        machine = machine_slug(self.provenance.get("machine", {}))
        return (
            Path(STUDY_DIR)
            / self.cell.profile.removeprefix("overhead-")
            / machine
            / f"{self.cell.model}__{self.cell.variant}.json"
        )


def overhead_cell(benchmark: str, column: str, size: Size) -> Cell:
    """The result file's cell: backend = the column's env, model = the benchmark, variant = the column. Not a cell
    of the published table, so it is built unvalidated, as archived cells are (the schema's own checks apply)."""
    data = {
        "backend": COLUMNS[column].env,
        "model": benchmark,
        "task": BENCHMARKS[benchmark].task,
        "batch_size": size.batch,
        "profile": f"overhead-{size.name}",
        "variant": column,
        "warmup_steps": size.warmup,
        "timed_steps": size.timed,
        "max_warmup_steps": size.max_warmup,
    }
    check_cell_schema(data)
    return Cell.from_dict(data, validate=False)


def run_worker(
    env: str, size: Size, columns: list[str], out: Path, log_path: Path, git: dict, timeout_s: float
) -> dict[str, Any]:
    """Run one env's worker; its runs by key, or {"status", "message"} when it did not finish."""
    env_vars = child_environment(cell_environment(env), git, **WORKER_ENVIRONMENT)
    argv = [
        env_python(env),
        "-m",
        "bench.studies.overhead.worker",
        "--env",
        env,
        "--size",
        size.name,
        "--columns",
        ",".join(columns),
        "--out",
        str(out),
    ]
    failed = run_logged(argv, env_vars, log_path, timeout_s)
    if failed is None and not (out / "runs.json").exists():
        failed = ("error", f"exited 0 without writing its runs (log: {log_path})")
    if failed:
        return {"status": failed[0], "message": f"the {env} worker {failed[1]}"}
    return json.loads((out / "runs.json").read_text())


def with_parity(run: Run, benchmark: str, column: str, outputs: Path) -> Run:
    """An ok run whose output is checked against its reference's (compare_outputs): the check recorded in its
    settings, and a run of another computation made an error (its times are not of this benchmark)."""
    if run.status == "ok":
        parity = compare_outputs(benchmark, column, outputs)
        run.settings.update({k: v for k, v in parity.items() if k != "message"})
        if parity["parity"] == "mismatch":
            run.status, run.message, run.timed_ms = "error", f"{parity['message']}: not the same computation", []
    return run


def compare_outputs(benchmark: str, column: str, outputs: Path) -> dict[str, Any]:
    """The column's output against pure PyTorch eager's: {"max_abs_diff", "scale", "parity"} or a mismatch."""
    import numpy as np

    mine, reference = outputs / f"{benchmark}__{column}.npy", outputs / f"{benchmark}__{REFERENCE_COLUMN}.npy"
    if not mine.exists() or not reference.exists():
        return {"parity": "no output to compare (this column or the reference did not run)", "max_abs_diff": None}
    a, b = np.load(mine), np.load(reference)
    if a.shape != b.shape:
        return {
            "parity": "mismatch",
            "message": f"output shape {a.shape} differs from PyTorch eager's {b.shape}",
            "max_abs_diff": None,
        }
    if BENCHMARKS[benchmark].task == "generate":
        differ = int((a.astype("int64") != b.astype("int64")).sum())
        return {
            "parity": "mismatch" if differ else "same token ids",
            "max_abs_diff": float(differ),
            "tokens_differing": differ,
            **({"message": f"{differ} generated token ids differ from PyTorch eager's"} if differ else {}),
        }
    diff, scale = float(np.abs(a.astype("float64") - b).max()), float(np.abs(b).max())
    ok = diff <= TOLERANCE * max(1.0, scale)
    return {
        "parity": "within tolerance" if ok else "mismatch",
        "max_abs_diff": diff,
        "parity_scale": scale,
        "parity_tolerance": TOLERANCE,
        **(
            {}
            if ok
            else {"message": f"output differs from PyTorch eager's by {diff:.3g} (max |reference| {scale:.3g})"}
        ),
    }


@holds_results_folder
def run_overhead(
    size: Size, results_dir: Path, envs: list[str] | None = None, timeout_s: float = WORKER_TIMEOUT_S, say=print
) -> list[Result]:
    envs = list(envs or ENVS)
    for env in sorted(set(envs) | {COLUMNS[REFERENCE_COLUMN].env}):
        env_python(env)  # refuses an unbuilt or stale env before anything runs
    check_writable(results_dir)
    git, machine = git_info(), machine_info()
    reference = {"start_ms": reference_ms()}
    started = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="overhead-"))
    answers: dict[str, dict[str, Any]] = {}
    stopped: KeyboardInterrupt | None = None  # a signal or Ctrl-C: the envs that finished are still written
    try:
        try:
            for env in envs:
                columns = [c for c, spec in COLUMNS.items() if spec.env == env]
                say(f"{env}: {', '.join(columns)} x {', '.join(BENCHMARKS)} "
                    f"({size.warmup}+ warm-up, {size.timed} timed calls each, round-robin)")
                t0 = time.perf_counter()
                log = results_dir / "logs" / STUDY_DIR / size.name / f"{env}.log"
                answer = run_worker(env, size, columns, scratch, log, git, timeout_s)
                say(
                    f"  {env} done in {time.perf_counter() - t0:.0f} s"
                    + (f": {answer['status']}: {answer['message']}" if "status" in answer else "")
                )
                for column in columns:
                    for benchmark in BENCHMARKS:
                        answers[f"{benchmark}__{column}"] = answer.get(f"{benchmark}__{column}", answer)
        except KeyboardInterrupt as e:
            stopped = e
            say(f"stopped: writing the {len(answers)} results of the envs that finished")
        probe_ms = reference_ms()
        written = []
        for key, answer in answers.items():
            benchmark, column = key.split("__")
            if "runs" not in answer and "settings" not in answer:  # the worker did not finish: its status
                run = Run(status=answer["status"], message=answer["message"], settings={"column": column})
            else:
                run = with_parity(Run.from_dict(answer), benchmark, column, scratch)
            result = OverheadResult(
                cell=overhead_cell(benchmark, column, size),
                runs=[run],
                unit="ms/call",
                provenance=study_provenance(
                    git,
                    machine,
                    f"make overhead SIZE={size.name}",
                    "framework overhead",
                    WORKER_ENVIRONMENT,
                    {**reference, "at_write_ms": probe_ms},
                ),
                created_at=now_utc(),
            )
            path = result.write(results_dir)
            written.append(result)
            say(f"  {benchmark:16s} {column:20s} {result.describe()}  [{path.relative_to(results_dir)}]")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if stopped is not None:
        raise stopped
    say(f"{len(written)} overhead results in {time.perf_counter() - started:.0f} s")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench overhead", description="the framework-overhead study"
    )
    parser.add_argument(
        "--size", default=DEFAULT_SIZE, choices=list(SIZES), help="default: the published workload; smoke: toy sizes"
    )
    parser.add_argument(
        "--env", action="append", choices=list(ENVS), help="only this env's columns (repeatable; default both)"
    )
    parser.add_argument("--results-dir", type=results_folder, default=REPO_ROOT / "results")
    parser.add_argument("--timeout", type=float, default=WORKER_TIMEOUT_S, help="seconds per env's worker")
    args = parser.parse_args(argv)
    from bench.base.exit_status import exit_status
    from bench.base.lifetime import stop_on_signals
    from bench.studies.overhead.page import render_overhead

    stop_on_signals()  # TERM, HUP, INT (to it, or to the make that started it) end the worker, keep what finished

    def study() -> int:
        run_overhead(get_size(args.size), args.results_dir, args.env, args.timeout)
        print(f"wrote {render_overhead(args.results_dir)}")
        return 0

    kept = f"stopped: every finished result is kept under {args.results_dir}"
    return exit_status(study, on_stop=lambda: print(kept, file=sys.stderr))


if __name__ == "__main__":
    sys.exit(main())
