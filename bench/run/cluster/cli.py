"""The `submit` and `submit-status` subcommands of `python -m bench` (added to bench/cli_parsers.py's parser)."""
from __future__ import annotations

import argparse
import os

from bench.base.argtypes import (
    DEFAULT_RESULTS,
    batch_count,
    csv_list,
    non_negative_int,
    positive_int,
    step_count,
    wait_seconds,
)
from bench.base.errors import BenchError
from bench.base.resultsdir import results_folder
from bench.catalogue.backends import BACKENDS


def add_parsers(sub) -> None:
    submit = sub.add_parser("submit", help="run cells as a Slurm array job (one array task per cell)")
    submit.add_argument("--backend", type=csv_list, help=f"one or more of: {', '.join(BACKENDS)} (default: all)")
    submit.add_argument("--model", type=csv_list, help="one or more models (default: all)")
    submit.add_argument("--task", type=csv_list, help="fit, predict and/or generate (default: every task)")
    submit.add_argument("--variant", type=csv_list, help="native-torch: eager and/or compiled (default: both)")
    submit.add_argument("--batch-size", type=batch_count)
    submit.add_argument(
        "--profile", default="paper", help="paper or smoke (default: paper; the nodes' GPUs are not visible here)"
    )
    submit.add_argument(
        "--steps", type=step_count, help="a fixed count of timed steps (default: the profile's, sampled as locally)"
    )
    submit.add_argument("--warmup", type=non_negative_int)
    submit.add_argument(
        "--results-dir", type=results_folder, default=DEFAULT_RESULTS, help="on a file system the nodes share"
    )
    submit.add_argument("--force", action="store_true", help="re-run cells that already have a current result")
    submit.add_argument("--job-name", help="folder under <results-dir>/slurm/ (default: bench-<profile>-<time>)")
    submit.add_argument(
        "--container", action="store_true", help="run each cell in localhost/bench:<backend> (podman) instead of .venvs"
    )
    submit.add_argument("--container-engine", default="podman")
    submit.add_argument("--python", help="interpreter for the task wrapper on the nodes (default: this one)")
    submit.add_argument(
        "--gres", default="auto", help="auto (gpu:1 for paper, none for smoke), none, or a --gres value"
    )
    submit.add_argument("--cpus-per-task", type=positive_int)
    submit.add_argument(
        "--mem", type=positive_int, help="GiB per cell (default: results/plan-<profile>.json, else the profile's)"
    )
    submit.add_argument("--partition")
    submit.add_argument(
        "--sbatch-arg", action="append", default=[], help="extra #SBATCH option, e.g. --account=x (repeatable)"
    )
    submit.add_argument("--dry-run", action="store_true", help="write the job folder and scripts, do not call sbatch")

    status = sub.add_parser(
        "submit-status", help="state of a Slurm submission's cells; records tasks that ended without a result"
    )
    status.add_argument("--job", help="job folder name or Slurm job id (default: the latest submission)")
    status.add_argument("--results-dir", type=results_folder, default=DEFAULT_RESULTS)
    status.add_argument(
        "--wait", type=wait_seconds, metavar="SECONDS", help="poll until every cell has finished, at most this long"
    )


def cmd_submit(args: argparse.Namespace) -> int:
    from bench.catalogue.registry import plan_cells
    from bench.run.cluster.submit import submit

    cells = plan_cells(args.profile, backends=args.backend, models=args.model, tasks=args.task, batch_size=args.batch_size,
                       variants=args.variant, timed_steps=args.steps, warmup_steps=args.warmup)  # fmt: skip
    if not cells:
        raise BenchError("no cells match the given backend/model/task/variant")
    env = {k: os.environ[k] for k in ("BENCH_VENVS_DIR",) if k in os.environ}  # fake or relocated envs travel along
    from bench.catalogue.profiles import get_profile
    from bench.run.decided import task_line

    if line := task_line(cells, get_profile(args.profile).repeats):
        print(line)
    submit(
        cells, args.results_dir, job_name=args.job_name, force=args.force, route="container" if args.container else "venv",
        python=args.python, gres=args.gres, cpus=args.cpus_per_task, mem_gib=args.mem, partition=args.partition,
        sbatch_args=args.sbatch_arg, container_engine=args.container_engine, env=env, dry_run=args.dry_run,
    )  # fmt: skip
    return 0


def cmd_submit_status(args: argparse.Namespace) -> int:
    from bench.run.cluster.jobdir import find_job
    from bench.run.cluster.status import job_status, report, wait

    job = find_job(args.results_dir, args.job)
    if args.wait:  # a wait of up to WAIT seconds ends on TERM, HUP or INT, to it or to make alone
        from bench.base.lifetime import stop_on_signals

        stop_on_signals()
    states = wait(job, args.wait) if args.wait else job_status(job)
    report(job, states)
    if states and all(s.phase in ("done", "failed") for s in states):  # every task ended: the table's verdicts
        from bench.judge.comparisons import say_decided

        say_decided([s.cell for s in states], args.results_dir)
    return 1 if any(s.phase == "failed" for s in states) else 0


COMMANDS = {"submit": cmd_submit, "submit-status": cmd_submit_status}
