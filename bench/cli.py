"""`python -m bench ...`: the one entry point, inside every environment and outside them."""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

from bench.backends import BACKENDS
from bench.cluster import cli as cluster_cli
from bench.errors import BenchError, os_error_line
from bench.lifetime import stop_on_signals, stopped_status
from bench.profiles import profiles
from bench.provenance import REPO_ROOT
from bench.registry import MODELS
from bench.resultsdir import results_folder
from bench.spec import TASKS
from bench.variants import TUNING

DEFAULT_RESULTS = Path(os.environ.get("BENCH_RESULTS_DIR", REPO_ROOT / "results"))


def int_at_least(minimum: int, what: str):
    """An argparse type: an integer >= minimum, refused with `must be a <what> integer, got '<text>'`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(f"must be a {what} integer, got {text!r}")
        return value

    return parse


# A budget past this is a typo (1e308 once overflowed the deadline's arithmetic): about two years
MAX_BUDGET_MINUTES = 10**6


def budget_minutes(text: str) -> float:
    """An argparse type: minutes, a finite number above 0 (nan, inf, 0 and -1 once ran with no budget or none left)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= MAX_BUDGET_MINUTES:  # false for nan too
        raise argparse.ArgumentTypeError(f"must be minutes, a number above 0 and at most {MAX_BUDGET_MINUTES}, got {text!r}")
    return value


positive_int = int_at_least(1, "positive")
non_negative_int = int_at_least(0, "non-negative")


def listing(names, last: str = "and/or") -> str:
    """`a, b and/or c`: the choices of an option, for its help, from where they are defined."""
    names = list(names)
    return f"{', '.join(names[:-1])} {last} {names[-1]}" if len(names) > 1 else "".join(names)


# Backends run in more than one way (bench/backends.py Backend.variants), e.g. "native-torch: eager and/or compiled".
VARIANT_HELP = "; ".join(f"{b.name}: {listing(b.variants)}" for b in BACKENDS.values() if len(b.variants) > 1) + (
    "; tuning variants, only where they apply (bench/variants.py): " + ", ".join(TUNING))


def csv_list(text: str) -> list[str]:
    """'a,b a' -> ['a', 'b']: a name given twice is one (MODEL=bert,bert once ran the cell twice into one result)."""
    return list(dict.fromkeys(item for item in text.replace(",", " ").split() if item))


class OneLineErrors(argparse.ArgumentParser):
    """Bad input is one line naming the problem (no usage block above it: `--help` has that), exit status 2."""

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrors(prog="python -m bench", description="Keras 3 benchmarks, re-run reproducibly.")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run benchmark cells (all of the published table unless narrowed)")
    run.add_argument("--backend", type=csv_list, help=f"one or more of: {', '.join(BACKENDS)} (default: all)")
    run.add_argument("--model", type=csv_list, help=f"one or more of: {', '.join(MODELS)} (default: all)")
    run.add_argument("--task", type=csv_list, help=f"{listing(TASKS)} (default: every task of the model)")
    run.add_argument("--variant", type=csv_list, help=f"{VARIANT_HELP} (default: each backend's own)")
    run.add_argument("--batch-size", type=positive_int, help="override the profile's batch size")
    run.add_argument(
        "--profile", help=f"{listing(profiles(), 'or')} (default: paper when a CUDA GPU is visible, else smoke)"
    )
    run.add_argument(
        "--steps",
        type=positive_int,
        help="a fixed count of timed steps (default: the profile's sampling: its fewest steps, then until the "
        "median's 95%% interval is within its target, up to its cap)",
    )
    run.add_argument(
        "--exact",
        action="store_true",
        help="the published procedure, for an exact reproduction: 100 timed steps after the first and the warm-up, one "
        "process a cell (paper profile; the default samples to a precision, with more processes)",
    )
    run.add_argument("--warmup", type=non_negative_int, help="warm-up steps after the first (default: the profile's)")
    run.add_argument(
        "--repeats", type=positive_int, help="processes per cell, interleaved across the cells (default: the profile's)"
    )
    run.add_argument("--timeout", type=positive_int, help="seconds per cell process (default: the profile's)")
    run.add_argument("--results-dir", type=results_folder, default=DEFAULT_RESULTS)
    run.add_argument(
        "--resume",
        action="store_true",
        help="skip cells whose current result is ok (or NA) and measured with the env lock current now",
    )
    run.add_argument("--dry-run", action="store_true", help="list the cells and exit")
    run.add_argument(
        "--budget-minutes",
        type=budget_minutes,
        help="one cell per model x backend first, then the rest; stop cleanly at this, naming what is left (--resume goes on)",
    )
    run.add_argument(
        "--jobs", type=positive_int, default=1, help="cells in parallel, one GPU each (needs a GPU per job)"
    )
    run.add_argument(
        "--stack",
        default="today",
        help="the software stack: today (default) or 2024 (keras-benchmarks v0.0.5's pins; envs/<backend>-2024)",
    )
    run.add_argument(
        "--ignore-plan",
        action="store_true",
        help="run cells that <results-dir>/plan-<profile>.json predicts will not fit (oom-predicted)",
    )
    run.add_argument(
        "--env",
        choices=("locked", "current"),
        default="locked",
        help="locked (default): each backend's built env (.venvs/<backend>); current: this interpreter, unlocked, whatever it has "
        "installed (docs/OWN_ENVIRONMENT.md); results under <results-dir>/env-current/<environment>/",
    )

    plan = sub.add_parser("plan", help="every cell's parameters and memory, predicted without allocating a model")
    plan.add_argument("--profile", default="paper", help="paper or smoke (default: paper)")
    plan.add_argument(
        "--results-dir",
        type=results_folder,
        default=DEFAULT_RESULTS,
        help="writes plan-<profile>.json and plan.json here",
    )
    plan.add_argument(
        "--batch-size",
        type=positive_int,
        help="also plan every cell at this batch (what `bench run --batch-size` will run)",
    )

    cell = sub.add_parser("cell", help="(internal) measure one cell in this process")
    cell.add_argument("--cell", required=True, help="the cell as JSON")
    cell.add_argument("--out", required=True, type=Path)
    cell.add_argument(
        "--config",
        help="the cell's resolved configuration as JSON (bench/config.py): the cell refuses to run anything else",
    )

    val = sub.add_parser("validate", help="check every result file under a results folder")
    val.add_argument("--results-dir", type=results_folder, default=DEFAULT_RESULTS)
    val.add_argument(
        "--quarantine",
        action="store_true",
        help="move every unreadable result file to <results-dir>/quarantine/ (at its own relative path)",
    )

    clean = sub.add_parser(
        "clean-results", help="delete the logs a run wrote (<results-dir>/logs/**/*.log), nothing else"
    )
    clean.add_argument("--results-dir", type=results_folder, default=DEFAULT_RESULTS)

    grid = sub.add_parser(
        "grid", help="the inference grid study (HF 2019 PyTorch vs TensorFlow, with Keras 3): run, then render GRID.md"
    )
    grid.add_argument(
        "--grid",
        default=None,
        help="cpu (default: every length at batch 1, a capped corner above), full (the published grid, 30 repeats), "
        "lengths (batch 1 and 8 at every length), sample (batch 1 at 8, 128, 512) or smoke (tiny models, the tests')",
    )
    grid.add_argument(
        "--model",
        type=csv_list,
        help="grid models (default: all): bert, distilbert, gpt2, distilgpt2, roberta, xlnet, xlm",
    )
    grid.add_argument(
        "--backend",
        type=csv_list,
        help="envs or columns (default: all): native-torch, tf-transformers, jax, tensorflow, torch, or a column name",
    )
    grid.add_argument("--results-dir", type=results_folder, default=DEFAULT_RESULTS)
    grid.add_argument("--dry-run", action="store_true", help="list the points and columns and exit")
    table = sub.add_parser("table", help="render RESULTS.md and figures from the result files")
    table.add_argument("--results-dir", type=results_folder, default=DEFAULT_RESULTS)
    table.add_argument("--out", type=Path, help="Markdown file (default: <results-dir>/RESULTS.md)")
    table.add_argument("--readme", type=Path, help="also fill this file's marked results section with the first table")
    table.add_argument("--site", type=Path, help="also write the explorable results page (index.html) into this folder")

    doctor = sub.add_parser(
        "doctor", help="preflight: Python, make, compiler, disk, memory, NVIDIA driver (stdlib only)"
    )
    doctor.add_argument(
        "--plan",
        type=Path,
        help="per-cell memory figures to compare RAM with (default: <results-dir>/plan-<profile>.json)",
    )
    doctor.add_argument("--results-dir", type=results_folder, default=DEFAULT_RESULTS)
    doctor.add_argument(
        "--profile",
        help="the profile about to run, whose plan is compared with RAM (default: paper when an NVIDIA GPU is seen, else smoke)",
    )

    export = sub.add_parser("export", help="every current result file as one flat CSV")
    export.add_argument("--results-dir", type=results_folder, default=DEFAULT_RESULTS)
    export.add_argument("--out", type=Path, help="CSV file (default: <results-dir>/results.csv)")

    comp = sub.add_parser(
        "compare",
        help="per cell in both, B / A with its 95%% interval and a verdict (faster, slower, same, inconclusive); "
        "Markdown + PNG + JSON",
    )
    comp.add_argument(
        "a", type=results_folder, help="results folder A (the baseline; its noise/ holds the noise studies used)"
    )
    comp.add_argument("b", type=results_folder, help="results folder B")
    comp.add_argument(
        "--out-dir",
        type=Path,
        default=Path("compare"),
        help="writes compare.md, compare.png and compare.json here (default: ./compare)",
    )
    comp.add_argument("--out", type=Path, help="the Markdown file instead (its PNG and JSON beside it)")
    comp.add_argument(
        "--across-processors",
        action="store_true",
        help="decide cells whose two sides ran on different processors (by default they are inconclusive); the "
        "output says the comparison crosses processors",
    )
    gpu = sub.add_parser(
        "gpu-check",
        help="on one GPU, <= 15 min: sync vs CUDA events, CUDA graph replays, peak memory vs plan, short paper cells",
    )
    gpu.add_argument(
        "--env",
        choices=("locked", "current"),
        default="locked",
        help="the built envs (default) or this interpreter, unlocked",
    )
    gpu.add_argument(
        "--results-dir",
        type=results_folder,
        default=DEFAULT_RESULTS,
        help="writes gpu-check/<machine>/ here; reads plan-paper.json from here",
    )
    gpu.add_argument(
        "--budget-minutes", type=budget_minutes, default=15.0, help="end the work in progress and stop at this (default 15)"
    )
    gpu.add_argument("--resume", action="store_true", help="go on with a cut-off run's checks, into its report")
    gpu.add_argument(
        "--preflight", action="store_true", help="only the refusal without a GPU (stdlib: before any env is built)"
    )
    cluster_cli.add_parsers(sub, csv_list, positive_int, non_negative_int, DEFAULT_RESULTS)  # submit, submit-status
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a read-only or full disk, a path too long: one line naming the file, not a traceback
        print(f"error: {os_error_line(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:  # Ctrl-C 130; a stop by signal 128 + its number, as a shell reports it: SIGTERM 143
        return stopped_status(e)


def cmd_run(args: argparse.Namespace) -> int:
    from bench.provenance import machine_info

    stop_on_signals()
    from bench.profiles import get_profile
    from bench.registry import plan_cells
    from bench.runner import default_profile, run_cells

    if args.profile:
        get_profile(args.profile)
        profile, choice = args.profile, "explicit (--profile)"
    else:
        profile, why = default_profile(machine_info())
        choice = f"default: {why}"
    print(f"profile: {profile} ({choice})", flush=True)
    if args.exact:
        from bench.published import PUBLISHED_PROCESSES

        if args.repeats not in (None, PUBLISHED_PROCESSES):
            raise BenchError("--exact runs one process a cell, as published: leave out --repeats")
        args.repeats = PUBLISHED_PROCESSES
    from bench.replication import SequentialRule, rule_of

    # processes a cell: the profile's sequential rule, or exactly the count --repeats (or --exact) asks for
    rule = rule_of(get_profile(profile)) if args.repeats is None else SequentialRule(args.repeats, args.repeats)
    if rule.sequential and (args.budget_minutes is not None or args.jobs > 1):
        print(f"processes: {rule.first} a cell, none added (a budget's and --jobs' cells run apart, not row by row)")
        rule = SequentialRule(rule.first, rule.first)
    elif not args.dry_run:
        print(f"processes: {rule.describe()}", flush=True)
    args.repeats = rule.first
    stack, results_dir = args.stack, args.results_dir
    if args.env == "current":  # the unlocked route: apart from every locked result, one folder per environment
        from bench.backends import UNLOCKED_STACK
        from bench.ownenv import describe_environment, environment_slug
        from bench.provenance import unlocked_environment

        if args.stack != "today":
            raise BenchError(
                f"--env current runs this interpreter's own packages; --stack {args.stack} names locked envs: use one or the other"
            )
        environment = unlocked_environment()
        stack, results_dir = UNLOCKED_STACK.name, args.results_dir / "env-current" / environment_slug(environment)
        print(f"environment: {describe_environment(environment)}", flush=True)
    cells = plan_cells(
        profile,
        backends=args.backend,
        models=args.model,
        tasks=args.task,
        batch_size=args.batch_size,
        variants=args.variant,
        timed_steps=args.steps,
        warmup_steps=args.warmup,
        stack=stack,
        exact=args.exact,
    )
    if not cells:
        raise BenchError("no cells match the given backend/model/task/variant")
    deadline = None
    if args.budget_minutes is not None:
        from bench.budget import under_budget

        cells, deadline = under_budget(cells, results_dir, args.budget_minutes, args.repeats, args.resume, args.jobs)
    if args.dry_run:
        if args.resume:  # the cells a resumed run would run, not those it skips
            from bench.runner import still_to_measure

            todo = still_to_measure(cells, args.results_dir, args.repeats)
            print(f"skipped (resume): {len(cells) - len(todo)} cells already measured", file=sys.stderr)
            cells = todo
        for c in cells:
            print(c.key)
        return 0
    if args.jobs > 1:  # one GPU per cell, or a one-line refusal (bench/cluster/parallel.py)
        from bench.cluster.parallel import run_cells_parallel

        results = run_cells_parallel(
            cells,
            results_dir,
            args.jobs,
            repeats=args.repeats,
            timeout_s=args.timeout,
            profile_choice=choice,
            resume=args.resume,
            ignore_plan=args.ignore_plan,
        )
    else:
        from bench.budget import expected_here
        from bench.cluster.decided import expected_line
        from bench.provenance import machine_info

        if deadline is None and (line := expected_line(cells, rule)):
            print(line, flush=True)
        machine = machine_info()
        if args.resume:  # what a resumed run will measure, not what it skips
            from bench.runner import still_to_measure

            todo = still_to_measure(cells, results_dir, rule.first, machine)
        else:
            todo = cells
        if deadline is None and (line := expected_here(todo, results_dir, machine, rule.first)):
            print(line, flush=True)
        results = run_cells(
            cells,
            results_dir,
            repeats=args.repeats,
            timeout_s=args.timeout,
            profile_choice=choice,
            resume=args.resume,
            ignore_plan=args.ignore_plan,
            deadline=deadline,
            interleave=deadline is None,  # under a budget, whole cells in the budget's order
            rule=rule,
        )
    if deadline is not None:
        from bench.budget import say_what_is_left

        say_what_is_left(cells, results, results_dir, args.repeats)
    from bench.report.comparisons import say_decided

    say_decided(cells, results_dir)
    return 0 if all(r.status in ("ok", "unsupported") for r in results) else 1


def cmd_grid(args: argparse.Namespace) -> int:
    from bench.grid.run import run_grid
    from bench.grid.spec import DEFAULT_GRID, columns_for_envs, get_grid, select
    from bench.grid.spec import MODELS as GRID_MODELS
    from bench.report.grid import render_grid

    stop_on_signals()
    grid = get_grid(args.grid or DEFAULT_GRID)
    models, columns = select(args.model, GRID_MODELS, "grid model"), columns_for_envs(args.backend)
    if args.dry_run:
        for model in models:
            for batch, length in grid.points():
                print(f"{model} batch {batch} x length {length}: {', '.join(columns)}")
        return 0
    results = run_grid(models, columns, grid, args.results_dir)
    out = render_grid(args.results_dir)
    print(f"wrote {out}", flush=True)
    return 0 if all(r.status in ("ok", "unsupported") for r in results) else 1


def cmd_cell(args: argparse.Namespace) -> int:
    from bench.cell import main as cell_main
    from bench.registry import Cell

    return cell_main(Cell.from_dict(json.loads(args.cell)), args.out, json.loads(args.config) if args.config else None)


def cmd_validate(args: argparse.Namespace) -> int:
    from bench.results import load_each, placement_problems, quarantine, unreadable_error

    loaded, errors = load_each(args.results_dir)
    if args.quarantine:
        from bench.runlock import holding

        with holding(args.results_dir):  # not a file a run writing there now is about to replace
            moved, kept = quarantine(args.results_dir, errors)
        for path, dest in moved:
            print(f"moved unreadable {path} to {dest}")
        errors = [e for e in errors if e.path in kept]
        for path in kept:
            print(f"left {path} in place: not a result file by name and place (<profile>/<machine>/<cell key>.json)")
    for path, result in loaded:
        why = result.cell.why_not_in_registry()
        if why:  # archived results stay valid; the registry has moved on since they were measured
            print(f"{path}: no longer in the registry: {why}")
    studies, study_errors = load_studies(args.results_dir)  # what make table reads besides: sweeps, overhead
    errors = errors + study_errors
    problems = ([str(unreadable_error(errors, args.results_dir))] if errors else []) + placement_problems(
        loaded, args.results_dir
    )
    if problems:  # every bad file at once, each with what is wrong and the fix
        print("error: " + "\n".join(problems), file=sys.stderr)
        return 2
    print(f"{len(loaded)} result files under {args.results_dir} are valid")
    from bench.report.grid import (
        load_grid,  # the inference grid's own files (results/grid/), each loaded and schema-checked
    )

    grid_files = sum(len(group.results) for group in load_grid(args.results_dir))
    if grid_files:
        print(f"{grid_files} inference grid result files under {args.results_dir / 'grid'} are valid")
    for folder, count in studies.items():
        if count:
            print(f"{count} result files under {args.results_dir / folder} are valid")
    return 0


def load_studies(results_dir: Path) -> tuple[dict[str, int], list]:
    """The studies' result files that `make table` renders (the release sweeps, the overhead study), each read as
    the report reads it: how many are valid per folder, and an error naming each other one."""
    from bench.overhead.spec import STUDY_DIR as OVERHEAD_DIR
    from bench.results import CorruptResult, NewerSchema, load, result_files
    from bench.sweep.report import STUDY_DIR as SWEEP_DIR
    from bench.sweep.report import load_sweep, sweep_files

    readers = {
        SWEEP_DIR: (sweep_files(results_dir), load_sweep),
        OVERHEAD_DIR: (result_files(results_dir / OVERHEAD_DIR), load),
    }
    counts, errors = {}, []
    for folder, (paths, read) in readers.items():
        counts[folder] = 0
        for path in paths:
            try:
                read(path)
                counts[folder] += 1
            except (CorruptResult, NewerSchema) as e:
                errors.append(e)
    return counts, errors


def cmd_clean_results(args: argparse.Namespace) -> int:
    from bench.results import clean_logs
    from bench.runlock import holding

    if args.results_dir.is_dir():
        with holding(args.results_dir):  # not the logs of a run writing there now
            deleted = clean_logs(args.results_dir)
    else:
        deleted = []
    print(f"deleted {len(deleted)} log files under {args.results_dir / 'logs'}")
    return 0


def cmd_table(args: argparse.Namespace) -> int:
    from bench.report import render

    if not args.results_dir.is_dir():  # a mistyped RESULTS= must not become a new folder with an empty table
        raise BenchError(f"no results folder {args.results_dir}: nothing to render (is the results folder right?)")
    out = args.out or args.results_dir / "RESULTS.md"
    from bench.atomic import refuse_to_replace

    refuse_to_replace(out, lambda head: head.startswith(b"# Benchmark results"), "the table's output")
    if args.site:  # the results page's files, each only over an earlier results page's
        from bench.report import history_page
        from bench.report.site import DATA, INDEX, PLOTLY, VENDORED_PLOTLY

        plotly_head = VENDORED_PLOTLY.read_bytes()[:4096]
        for name, ours in ((INDEX, lambda head: b"<title>Benchmark results</title>" in head),
                           (DATA, lambda head: head.startswith(b"const BENCH_CELLS = ")),
                           (PLOTLY, lambda head: head == plotly_head[: len(head)]),
                           (history_page.PAGE, lambda head: history_page.TITLE.encode() in head),
                           (history_page.DATA, lambda head: head.startswith(b"const BENCH_HISTORY = "))):  # fmt: skip
            refuse_to_replace(args.site / name, ours, f"the results page's {name} (--site)")
    render(args.results_dir, out, readme=args.readme, site=args.site)
    print(f"wrote {out}" + (f" and the results section of {args.readme}" if args.readme else ""))
    if args.site:
        print(f"wrote {args.site / 'index.html'}")
    from bench.report.grid import render_grid
    from bench.report.overhead import load_overhead, render_overhead

    grid_page = render_grid(args.results_dir)  # the inference grid study's own page, where it has results
    if grid_page:
        print(f"wrote {grid_page}")
    if load_overhead(args.results_dir):  # the framework-overhead study's, likewise
        print(f"wrote {render_overhead(args.results_dir)}")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from bench.doctor import Probes, profile_plan
    from bench.doctor import main as doctor_main

    return doctor_main(Probes(plan_path=args.plan or profile_plan(args.results_dir, args.profile)))


def cmd_plan(args: argparse.Namespace) -> int:
    from bench.plan import run
    from bench.profiles import get_profile

    get_profile(args.profile)
    _, written = run(args.profile, args.results_dir, batch_size=args.batch_size)
    print("wrote " + " and ".join(str(p) for p in written))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from bench.export import export

    out, count = export(args.results_dir, args.out)
    print(f"wrote {out} ({count} rows)")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from bench.compare import run

    if args.a.resolve() == args.b.resolve():  # every cell against itself: "33 same" says nothing
        raise BenchError(f"A and B are one folder ({args.a}): name the two results folders to compare")

    written = run(args.a, args.b, args.out or args.out_dir / "compare.md", args.across_processors)
    print(written.text, end="")
    print(f"wrote {written.markdown}, {written.json}" + (f" and {written.png}" if written.png else ""), file=sys.stderr)
    return 0


def cmd_gpu_check(args: argparse.Namespace) -> int:
    from bench.gpucheck import preflight, run

    if args.preflight:
        return preflight()
    stop_on_signals()
    return run(args.results_dir, env=args.env, budget_s=args.budget_minutes * 60, resume=args.resume)


COMMANDS = {
    "gpu-check": cmd_gpu_check,
    "run": cmd_run,
    "grid": cmd_grid,
    "cell": cmd_cell,
    "validate": cmd_validate,
    "clean-results": cmd_clean_results,
    "table": cmd_table,
    "doctor": cmd_doctor,
    "export": cmd_export,
    "plan": cmd_plan,
    "compare": cmd_compare,
    **cluster_cli.COMMANDS,
}
