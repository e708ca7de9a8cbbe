"""python -m bench ab: the command line of `make ab` (bench/studies/ab/run.py)."""
from __future__ import annotations

import argparse
from pathlib import Path


def share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 10:
        raise argparse.ArgumentTypeError(f"{text!r} is no share of a step: a number from 0 to 10 (0.2: +20%)")
    return value


def add_rule_arguments(parser: argparse.ArgumentParser, what: str = "side") -> None:
    from bench.base.argtypes import process_count

    parser.add_argument("--processes", type=process_count, default=3,
                        help=f"processes a {what} starts with, each its own invocation (default 3)")
    parser.add_argument("--max-processes", type=process_count,
                        help="more, up to this many, while a comparison is undecided (default twice --processes)")


def rule_of(args):
    from bench.base.errors import BenchError
    from bench.judge.replication import SequentialRule

    cap = args.max_processes or 2 * args.processes
    if cap < args.processes:
        raise BenchError(f"MAX_PROCESSES={cap} is fewer than PROCESSES={args.processes}")
    return SequentialRule(args.processes, cap)


def build_parser() -> argparse.ArgumentParser:
    from bench.base.argtypes import csv_list
    from bench.base.resultsdir import results_folder

    parser = argparse.ArgumentParser(
        prog="python -m bench ab",
        description="Re-measure cells on two sides, interleaved in one invocation, and judge B against A. A side: a "
        "git commit, <package>==<version>, a wheel file, a Python interpreter, or stack:<name>.",
    )
    parser.add_argument("--a", required=True, help="side A, the baseline")
    parser.add_argument("--b", required=True, help="side B, judged against A")
    parser.add_argument("--cell", type=csv_list, default=[], help="cell keys, separated by commas")
    parser.add_argument("--backend", type=csv_list, default=[], help="with --model: the profile's cells they select")
    parser.add_argument("--model", type=csv_list, default=[])
    parser.add_argument("--task", type=csv_list, default=[])
    parser.add_argument("--variant", type=csv_list, default=[])
    parser.add_argument("--profile", default="smoke", help="the cells' profile (default smoke)")
    parser.add_argument("--results-dir", type=results_folder, default=Path("results"))
    parser.add_argument("--b-delay", type=share, default=0.0,
                        help="hold side B's every timed step this share longer (0.2: +20%%), by the test fixture "
                        "tests/fixtures/step_delay: what a comparison detects, measured on a real cell")
    add_rule_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    from bench.base.exit_status import exit_status
    from bench.base.lifetime import stop_on_signals

    args = build_parser().parse_args(argv)
    stop_on_signals()  # TERM, HUP, INT: the sides' processes and worktrees go with it; 143, 129, 130
    return exit_status(lambda: command(args))


def command(args) -> int:
    from bench.catalogue.profiles import get_profile
    from bench.studies.ab.run import compare
    from bench.studies.ab.sides import cells_named, parse_side

    get_profile(args.profile)
    cells = cells_named(args.profile, args.cell, args.backend, args.model, args.task, args.variant)
    a, b = parse_side(args.a), parse_side(args.b)
    b.step_delay = args.b_delay
    args.results_dir.mkdir(parents=True, exist_ok=True)
    records = compare(args.results_dir, a, b, cells, rule_of(args), say=lambda line: print(line, flush=True))
    return 0 if all(record.get("verdict") for record in records) else 1
