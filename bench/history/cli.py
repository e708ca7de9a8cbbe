"""`python -m bench.history`: the front door of `make history` (a key's series and change points), `make
history-triage` (what a user says of a change) and the index's own commands (refresh, keys)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.errors import BenchError, os_error_line
from bench.resultsdir import results_folder


def probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")  # refused below, in the same words
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is no p-value threshold: a number between 0 and 1 (0.001)")
    return value


def build_parser() -> argparse.ArgumentParser:
    from bench.argtypes import OneLineErrors
    from bench.history.changes import THRESHOLD
    from bench.history.triage import STATES

    parser = OneLineErrors(prog="python -m bench.history", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser("show", help="a key's series by processor and stack, and its change points")
    show.add_argument("--cell", required=True, help="a cell key, a sweep key, or two sweep keys A/B (paired ratio)")
    show.add_argument("--by", choices=("date", "commit"), default="date",
                      help="a cell's points: one per result file (date), or a commit's results pooled (commit)")
    show.add_argument("--threshold", type=probability, default=THRESHOLD, help=f"the t-test's p (default {THRESHOLD})")
    show.add_argument("--confirm", action="store_true",
                      help="re-run the releases either side of each unconfirmed change of a release series")
    mark = commands.add_parser("triage", help="acknowledge a change, or mark it expected or noise, with a reason")
    mark.add_argument("--cell", required=True)
    mark.add_argument("--at", required=True, help="the label of the first point after the change")
    mark.add_argument("--state", required=True, choices=STATES)
    mark.add_argument("--reason", required=True)
    commands.add_parser("keys", help="every cell key and sweep key indexed")
    commands.add_parser("runs", help="every run of the history, with its id (make compare A=<run id> B=<run id>)")
    commands.add_parser("refresh", help="bring the index up to date with the result files")
    for command in commands.choices.values():
        command.add_argument("--results-dir", type=results_folder, default=Path("results"))
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from bench.history import index

    try:
        if not args.results_dir.is_dir():
            raise BenchError(f"{args.results_dir} is no folder: name a results folder (RESULTS=)")
        done = index.refresh(args.results_dir)
        if args.command == "refresh":
            print(f"index {index.index_path(args.results_dir)}: {done.read} files read, {done.kept} unchanged, "
                  f"{done.dropped} dropped, {len(done.skipped)} unreadable")
        elif args.command == "keys":
            cells, sweeps = index.known_keys(args.results_dir)
            print("\n".join(cells + sweeps))
        elif args.command == "runs":
            from bench.history.runs import history_runs

            print("\n".join(f"{run.id}  {run.label()}" for run in history_runs(args.results_dir)))
        elif args.command == "triage":
            return triage_command(args)
        else:
            return show_command(args)
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"error: {os_error_line(e)}", file=sys.stderr)
        return 2
    return 0


def show_command(args) -> int:
    from bench.history.report import series_text
    from bench.history.series import series_of

    for series in series_of(args.results_dir, args.cell, args.by):
        lines, found = series_text(args.results_dir, series, args.threshold)
        print("\n".join(lines))
        if args.confirm:
            for change in found:
                print(rerun(args.results_dir, series, change))
    return 0


def rerun(results_dir: Path, series, found) -> str:
    """CONFIRM=1: the releases either side of a change of a release series measured again, together (a sweep of the
    two, as a bisect's first step), and judged; a series by date names the commits to check out instead."""
    before, after = series.points[found.split.at - 1], series.points[found.split.at]
    if series.ordered_by != "release" or not series.sweep:
        return "  confirm: " + commits_to_rerun(series.ordered_by, before.commit, after.commit)
    from dataclasses import replace

    from bench.history.confirm import judged
    from bench.history.series import series_of
    from bench.lifetime import stop_on_signals
    from bench.sweep.cli import load_study, study_path
    from bench.sweep.index import use_configured_index
    from bench.sweep.run import run_sweep

    use_configured_index()  # the envs resolve from the index the user configured, as make sweep's do
    stop_on_signals()  # TERM, HUP, INT end the processes it runs too
    sweep = load_study(study_path(series.sweep), [before.label, after.label])
    sweep = replace(sweep, name=f"history-confirm-{series.sweep}-{series.backend}-{before.label}-{after.label}",
                    parts=[part for part in sweep.parts if part.target.backend == series.backend])  # this series' own
    run_sweep(sweep, results_dir)
    from bench.history import index

    index.refresh(results_dir)
    again = [s for s in series_of(results_dir, series.cell) if s.where == series.where][0]  # by release
    labels = [p.label for p in again.points]
    split = replace(found.split, at=labels.index(after.label))
    verdict, ratio = judged(results_dir, again, split)
    from bench import stats

    return f"  confirm: re-measured {before.label} and {after.label}: {verdict} {stats.fmt_ratio(ratio)}"


def commits_to_rerun(ordered_by: str, before: str | None, after: str | None) -> str:
    """What confirms a change of a series by date or commit: the cell run at the commits either side. Where both
    points were measured at one commit, no code changed between them (the first real CONFIRM=1 run, on the smoke
    BERT predict cell, asked to check out one commit twice): the move is the machine's or the measurement's."""
    if before is None or after is None:
        return (f"a series by {ordered_by}: the commit of {'the point before' if before is None else 'the point after'}"
                " the change was not recorded, so there is no code to check out and re-run; re-run the cell at this "
                "checkout (make bench) and make history again to see which side it repeats")
    if before == after:
        return (f"both points were measured at commit {before[:10]}: no code changed between them, so re-running "
                "either side runs the same code; what moved is the machine or the measurement (make noise measures "
                "this machine's run-to-run spread, which the Judge then carries)")
    return (f"a series by {ordered_by} cannot be re-run from here: check out {before[:10]} and {after[:10]} and run "
            f"the cell at each (make bench), then make history again (git log {before[:10]}..{after[:10]}: the range)")


def triage_command(args) -> int:
    from bench.history import triage
    from bench.history.series import series_of

    series = [s for s in series_of(args.results_dir, args.cell) if any(p.label == args.at for p in s.points)]
    if not series:
        raise BenchError(f"AT={args.at}: no point of {args.cell} has that label (make history CELL={args.cell} "
                         "lists them: a release, or a time stamp such as 20261125T211853Z)")
    if len(series) > 1:
        raise BenchError(f"AT={args.at} is a point of {len(series)} series of {args.cell}: "
                         + "; ".join(s.where for s in series))
    entry = triage.record(args.results_dir, args.cell, series[0].where, args.at, args.state, args.reason)
    print(f"{triage.triage_path(args.results_dir)}: {entry.cell} at {entry.at} ({entry.where}) {entry.state}: "
          f"{entry.reason}")
    return 0
