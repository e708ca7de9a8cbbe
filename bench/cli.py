"""`python -m bench ...`: the one entry point, inside every environment and outside them."""
from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from bench.base.errors import BenchError
from bench.base.exit_status import exit_status
from bench.base.lifetime import stop_on_signals
from bench.cli_parsers import build_parser
from bench.run.cluster import cli as cluster_cli
from bench.studies.registry import STUDY_COMMANDS, STUDY_HELP

if TYPE_CHECKING:  # for the annotations only: each command imports what it uses as it runs
    from bench.catalogue.registry import Cell
    from bench.judge.replication import SequentialRule
    from bench.record.results import Result
    from bench.run.runner import RunOptions


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in PASSED_ON:  # a study's verb, or a tool's: its own parser reads the rest of the line
        stop_on_signals()
        return exit_status(lambda: PASSED_ON[argv[0]](argv[1:]))
    args = build_parser(PASSED_ON_HELP).parse_args(argv)
    if args.command != "cell":  # a cell's own process is ended by its orchestrator, its whole process group
        stop_on_signals()  # TERM, HUP, INT: workers and temporaries go with it, the exit status a shell's (143, ...)
    return exit_status(lambda: COMMANDS[args.command](args))


def cmd_run(args: argparse.Namespace) -> int:
    from bench.base.provenance import machine_info
    from bench.catalogue.registry import plan_cells

    profile, choice = chosen_profile(args.profile, machine_info)
    rule = processes_rule(args, profile)
    stack, results_dir = run_target(args)
    check_against(args.against, results_dir)
    if args.against is not None and not rule.sequential:
        print(f"against {args.against}: judged at the end; no process added while undecided (a fixed count: "
              "MAX_PROCESSES= adds them)", flush=True)  # fmt: skip
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
        from bench.run.budget import under_budget

        cells, deadline = under_budget(cells, results_dir, args.budget_minutes, args.repeats, args.resume, args.jobs)
    if args.dry_run:
        return list_cells(cells, args)
    from bench.run.runner import RunOptions

    options = RunOptions(
        repeats=args.repeats,
        timeout_s=args.timeout,
        profile_choice=choice,
        resume=args.resume,
        ignore_plan=args.ignore_plan,
        deadline=deadline,
        interleave=deadline is None,  # under a budget, whole cells in the budget's order
        rule=rule,
        against=args.against,
        verbose=args.verbose,
    )
    if args.jobs > 1:  # one GPU per cell, or a one-line refusal (bench/run/cluster/parallel.py)
        from bench.run.cluster.parallel import run_cells_parallel

        results = run_cells_parallel(cells, results_dir, args.jobs, options)
    else:
        results = run_here(cells, results_dir, options)
    if deadline is not None:
        from bench.run.budget import say_what_is_left

        say_what_is_left(cells, results, results_dir, args.repeats)
    from bench.judge.comparisons import say_decided

    say_decided(cells, results_dir)
    if args.against is not None:
        from bench.report.compare import compare, counts_text

        print(f"against {args.against}: {counts_text(compare(args.against, results_dir))} "
              f"(make compare A={args.against} B={results_dir} shows each)")  # fmt: skip
    return 0 if all(r.status in ("ok", "unsupported") for r in results) else 1


def check_against(against: Path | None, results_dir: Path) -> None:
    """--against names another results folder that exists: the run's own would compare each cell with itself."""
    if against is None:
        return
    if not against.is_dir():
        raise BenchError(f"--against {against}: no such results folder")
    if against.resolve() == Path(results_dir).resolve():
        raise BenchError(f"--against {against} is this run's own results folder: name the earlier run's")
    from bench.base.resultsdir import overlapping

    if overlapping(against, results_dir):  # a folder inside the other: the run's cells read on both sides
        raise BenchError(f"--against {against} and this run's results folder {results_dir} are one inside the other: "
                         "name an earlier run's folder apart from it")


def chosen_profile(asked: str | None, machine_info) -> tuple[str, str]:
    """The run's profile and why (said on the first line): the one --profile names, else the machine's default."""
    from bench.catalogue.profiles import get_profile
    from bench.run.planning import default_profile

    if asked:
        get_profile(asked)
        profile, choice = asked, "explicit (--profile)"
    else:
        profile, why = default_profile(machine_info())
        choice = f"default: {why}"
    print(f"profile: {profile} ({choice})", flush=True)
    return profile, choice


def processes_rule(args: argparse.Namespace, profile: str) -> SequentialRule:
    """Processes a cell: the profile's sequential rule, or exactly the count --repeats (or --exact) asks for; a
    budget's and --jobs' cells get the rule's first count alone. Sets args.repeats to that first count."""
    from bench.catalogue.profiles import get_profile
    from bench.judge.replication import SequentialRule, rule_of

    if args.exact:
        from bench.base.published import PUBLISHED_PROCESSES

        if args.repeats not in (None, PUBLISHED_PROCESSES):
            raise BenchError("--exact runs one process a cell, as published: leave out --repeats")
        args.repeats = PUBLISHED_PROCESSES
    rule = rule_of(get_profile(profile)) if args.repeats is None else SequentialRule(args.repeats, args.repeats)
    if args.max_processes is not None:
        if args.max_processes < rule.first:
            raise BenchError(f"--max-processes {args.max_processes} is below the {rule.first} processes a cell starts "
                             "with (--repeats, or the profile's)")  # fmt: skip
        rule = SequentialRule(rule.first, args.max_processes)
    if rule.sequential and (args.budget_minutes is not None or args.jobs > 1):
        print(f"processes: {rule.first} a cell, none added (a budget's and --jobs' cells run apart, not row by row)")
        rule = SequentialRule(rule.first, rule.first)
    elif not args.dry_run:
        print(f"processes: {rule.describe()}", flush=True)
    args.repeats = rule.first
    return rule


def run_target(args: argparse.Namespace) -> tuple[str, Path]:
    """The stack the cells run on and the folder their results go to: --stack's and --results-dir, or with --env
    current the unlocked route's, apart from every locked result, one folder per environment."""
    if args.env != "current":
        return args.stack, args.results_dir
    from bench.base.provenance import unlocked_environment
    from bench.catalogue.backends import UNLOCKED_STACK
    from bench.catalogue.ownenv import describe_environment, environment_folder

    if args.stack != "today":
        raise BenchError(
            f"--env current runs this interpreter's own packages; --stack {args.stack} names locked envs: use one or the other"
        )
    environment = unlocked_environment()
    results_dir = environment_folder(args.results_dir, environment)  # where this environment's key has results
    print(f"environment: {describe_environment(environment)}", flush=True)
    return UNLOCKED_STACK.name, results_dir


def list_cells(cells: list[Cell], args: argparse.Namespace) -> int:
    """--dry-run: the cells' keys, one a line; with --resume, those a resumed run would run, not those it skips."""
    if args.resume:
        from bench.run.planning import still_to_measure

        todo = still_to_measure(cells, args.results_dir, args.repeats)
        print(f"skipped (resume): {len(cells) - len(todo)} cells already measured", file=sys.stderr)
        cells = todo
    for c in cells:
        print(c.key)
    return 0


def run_here(cells: list[Cell], results_dir: Path, options: RunOptions) -> list[Result]:
    """The cells run one after another on this machine (run_cells), after what they should take here."""
    from bench.base.provenance import machine_info
    from bench.run.budget import expected_here
    from bench.run.decided import expected_line
    from bench.run.runner import run_cells

    rule, deadline = options.rule, options.deadline

    if deadline is None and (line := expected_line(cells, rule)):
        print(line, flush=True)
    machine = machine_info()
    if options.resume:  # what a resumed run will measure, not what it skips
        from bench.run.planning import still_to_measure

        todo = still_to_measure(cells, results_dir, rule.first, machine)
    else:
        todo = cells
    if deadline is None and (line := expected_here(todo, results_dir, machine, rule.first)):
        print(line, flush=True)
    return run_cells(cells, results_dir, options)


def cmd_cell(args: argparse.Namespace) -> int:
    from bench.catalogue.registry import Cell
    from bench.measure.cell import main as cell_main

    return cell_main(Cell.from_dict(json.loads(args.cell)), args.out, json.loads(args.config) if args.config else None)


def cmd_validate(args: argparse.Namespace) -> int:
    from bench.record.results import load_each, placement_problems, unreadable_error
    from bench.record.results_upkeep import quarantine

    loaded, errors = load_each(args.results_dir)
    if args.quarantine:
        from bench.base.runlock import holding

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
    studies, study_errors, study_paths = load_studies(args.results_dir)  # what make table reads besides
    errors = errors + study_errors
    problems = ([str(unreadable_error(errors, args.results_dir))] if errors else []) + placement_problems(
        loaded, args.results_dir
    )
    checked = {path for path, _ in loaded} | {e.path for e in errors} | study_paths
    others, other_problems = other_files(args.results_dir, checked)  # plans, the triage, records, earlier results
    problems += other_problems
    if problems:  # every bad file at once, each with what is wrong and the fix
        print("error: " + "\n".join(problems), file=sys.stderr)
        return 2
    print(f"{len(loaded)} result files under {args.results_dir} are valid")
    for (what, folder), count in studies.items():
        if count:
            print(f"{count} {what} under {folder} are valid")
    if others:
        print(f"{others} other JSON files under {args.results_dir} (plans, the triage, studies' records, earlier "
              "results) are readable")
    return 0


def other_files(results_dir: Path, checked: set[Path]) -> tuple[int, list[str]]:
    """Every other JSON file under the folder (but quarantine/'s and hidden ones), each read as what reads it: the
    triage record as make history does, any other as JSON (a corrupt one off the result layout once passed, "0
    result files ... are valid"). How many are readable, and a line naming each other one."""
    from bench.record.results import other_json_files
    from bench.studies.registry import study_records

    readers = study_records()
    readable, problems = 0, []
    for path in other_json_files(results_dir, checked):
        try:
            if path.name in readers:
                readers[path.name](path)
            else:
                json.loads(path.read_bytes())
            readable += 1
        except BenchError as e:
            problems.append(str(e))
        except (OSError, ValueError) as e:
            problems.append(f"{path}: not readable JSON ({e}): mend it, or move it out of {results_dir}")
    return readable, problems


def load_studies(results_dir: Path) -> tuple[dict[tuple[str, Path], int], list, set[Path]]:
    """The studies' own result files that `make table` renders (the inference grid, the overhead study, the release
    sweeps: bench/studies/registry.py), each read as its page reads it: how many are valid per kind and folder, an
    error naming each other one, and every path read."""
    from bench.record.results import CorruptResult, NewerSchema
    from bench.studies.registry import study_result_files

    counts, errors, read_paths = {}, [], set()
    for what, folder, paths, read in study_result_files(results_dir):
        counts[what, folder] = 0
        for path in paths:
            read_paths.add(path)
            try:
                read(path)
                counts[what, folder] += 1
            except (CorruptResult, NewerSchema) as e:
                errors.append(e)
    return counts, errors, read_paths


def cmd_clean_results(args: argparse.Namespace) -> int:
    from bench.base.runlock import holding
    from bench.record.results_upkeep import clean_logs

    if args.results_dir.is_dir():
        with holding(args.results_dir):  # not the logs of a run writing there now
            deleted, kept = clean_logs(args.results_dir)
    else:
        deleted, kept = [], []
    print(f"deleted {len(deleted)} log files under {args.results_dir / 'logs'}"
          + (f"; kept {len(kept)} files there that are no log this suite writes (e.g. {kept[0]})" if kept else ""))
    return 0


def cmd_table(args: argparse.Namespace) -> int:
    from bench.studies.table import render

    if not args.results_dir.is_dir():  # a mistyped RESULTS= must not become a new folder with an empty table
        raise BenchError(f"no results folder {args.results_dir}: nothing to render (is the results folder right?)")
    out = args.out or args.results_dir / "RESULTS.md"
    from bench.base.atomic import outputs_beside, refuse_to_replace

    refuse_to_replace(out, lambda head: head.startswith(b"# Benchmark results"), "the table's output")
    outputs_beside(out, (".md",), "the table's output", "the Markdown table")
    if args.site:  # the results page's files, each only over an earlier results page's
        from bench.report.site import DATA, INDEX, PLOTLY, VENDORED_PLOTLY
        from bench.studies.registry import study_site_files

        plotly_head = VENDORED_PLOTLY.read_bytes()[:4096]
        for name, ours in ((INDEX, lambda head: b"<title>Benchmark results</title>" in head),
                           (DATA, lambda head: head.startswith(b"const BENCH_CELLS = ")),
                           (PLOTLY, lambda head: head == plotly_head[: len(head)]),
                           *study_site_files().items()):  # fmt: skip
            refuse_to_replace(args.site / name, ours, f"the results page's {name} (--site)")
    from bench.base.atomic import together
    from bench.studies.registry import study_pages

    # every page and figure of the render, or none: a full disk or a signal midway leaves each file as it was
    with together():
        render(args.results_dir, out, readme=args.readme, site=args.site)
        pages = study_pages(args.results_dir)  # each study's own pages (GRID.md, OVERHEAD.md), where it has results
    print(f"wrote {out}" + (f" and the results section of {args.readme}" if args.readme else ""))
    if args.site:
        print(f"wrote {args.site / 'index.html'}")
    for page in pages:
        print(f"wrote {page}")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from bench.run.doctor import Probes, profile_plan
    from bench.run.doctor import main as doctor_main

    return doctor_main(
        Probes(plan_path=args.plan or profile_plan(args.results_dir, args.profile), profile=args.profile)
    )


def cmd_plan(args: argparse.Namespace) -> int:
    from bench.catalogue.profiles import get_profile
    from bench.plan import run

    get_profile(args.profile)
    _, written = run(args.profile, args.results_dir, batch_size=args.batch_size)
    print("wrote " + " and ".join(str(p) for p in written))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from bench.report.export import export

    out, count = export(args.results_dir, args.out)
    print(f"wrote {out} ({count} rows)")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from bench.base.resultsdir import overlapping
    from bench.report.compare import refuse_overlap, run
    from bench.report.looks import record_look, refuse_repeated_look

    given = [[side] if isinstance(side, Path) else side for side in (args.a, args.b)]
    if all(isinstance(side, list) for side in given):  # folders: one inside the other shares its files
        shared = [f"{x}, {y}" if x.resolve() != y.resolve() else str(x)
                  for x in given[0] for y in given[1] if overlapping(x, y)]
        if shared:
            raise BenchError(f"A and B share a folder ({shared[0]}): each cell would be judged against itself; name "
                             "the results folders, or runs, of each side")
    a, b = (compared_side(text, args.results_dir) for text in (args.a, args.b))
    if isinstance(args.a, str) and a.name == b.name:
        raise BenchError(f"A and B share a run ({args.a}): name the results folders, or runs, of each side")
    refuse_overlap(a, b)  # or a file: a folder and a run of its history
    out = args.out or args.out_dir / "compare.md"
    look = refuse_repeated_look(out, a, b)  # the same runs judged again, a side grown: a look the 5% does not cover

    written = run(a, b, out, args.across_processors)
    record_look(out, look)
    print(written.text, end="")
    print(f"wrote {written.markdown}, {written.json}" + (f" and {written.png}" if written.png else ""), file=sys.stderr)
    return 0


def compared_side(given: Path | str, results_dir: Path):
    """A side of `make compare`: a results folder, or else a run of RESULTS's history by its id (the results page's
    A-vs-B view and `python -m bench history runs` list them)."""
    from bench.report.compare import folder_side, pooled_side
    from bench.studies.registry import study_compared_run

    if isinstance(given, list):
        return pooled_side(given)
    if isinstance(given, Path):
        return folder_side(given)
    if results_dir.is_dir() and (side := study_compared_run(results_dir, given)) is not None:
        return side
    raise BenchError(f"{given} is neither a results folder nor a run of {results_dir}'s history (python -m bench "
                     f"history runs --results-dir {results_dir} lists the runs)")


COMMANDS = {
    "run": cmd_run,
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


# The tools' verbs, each run by its module's own main, which reads the rest of the command line: verb -> its help.
TOOLS = {
    "unpack": "unpack the packed noise runs and grid results under a results folder into their folders",
    "ceilings": "this machine's ceilings (matmul FLOP/s per dtype, triad GB/s) in every built env",
    "largest": "the largest layer counts of the cpu-mid profile's models that fit this machine's RAM",
    "schema-doc": "regenerate docs/RESULT_FORMAT.md's field table from docs/schema/",
    "wheelhouse": "download the locked workload libraries (no frameworks) for a Python, to install offline",
    "flops-torch": "(in the native-torch env) the FLOP formulas against torch's FlopCounterMode",
    "flops-xla": "(in the jax env) the FLOP formulas against XLA's cost analysis",
    "estimate": "the paper matrix's GPU time at the published speeds, on 1, 8 and 64 GPUs (docs/CLUSTER.md's table)",
}


def tool_command(verb: str, argv: list[str]) -> int:
    """A tool's verb: its module imported only as it runs (a cell's process, the doctor's Python, need none)."""
    if verb == "unpack":
        from bench.base.packed import main

        argv = ["unpack", *argv]
    elif verb == "ceilings":
        from bench.run.ceilings import main
    elif verb == "largest":
        from bench.plan.largest import main
    elif verb == "schema-doc":
        from bench.record.schema_doc import main
    elif verb == "wheelhouse":
        from bench.envs.wheelhouse import main
    elif verb == "flops-torch":
        from bench.measure.torch_counter import main
    elif verb == "flops-xla":
        from bench.measure.xla_counter import main
    elif verb == "estimate":
        from bench.run.decided import main
    else:
        raise BenchError(f"{verb}: no such tool (one of {', '.join(TOOLS)})")
    return main(argv)


# The verbs whose own parser reads the rest of the command line: the tools' and each registered study's
# (bench/studies/registry.py), so that every make target runs `python -m bench <verb>`.
PASSED_ON: dict[str, Callable[[list[str]], int]] = {
    **{verb: functools.partial(tool_command, verb) for verb in TOOLS},
    **STUDY_COMMANDS,
}
PASSED_ON_HELP = {**TOOLS, **STUDY_HELP}
