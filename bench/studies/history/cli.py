"""`python -m bench history`: the front door of `make history` (a key's series and change points), `make
history-triage` (what a user says of a change) and the index's own commands (refresh, keys)."""
from __future__ import annotations

import argparse
from pathlib import Path

from bench.base.errors import BenchError
from bench.base.resultsdir import results_folder
from bench.studies.ab.cli import add_rule_arguments, rule_of


def probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")  # refused below, in the same words
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is no p-value threshold: a number between 0 and 1 (0.001)")
    return value


def build_parser() -> argparse.ArgumentParser:
    from bench.base.argtypes import OneLineErrors
    from bench.studies.history.changes import THRESHOLD
    from bench.studies.history.triage import STATES

    parser = OneLineErrors(prog="python -m bench history", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser("show", help="a key's series by processor and stack, and its change points")
    show.add_argument("--cell", required=True, help="a cell key, a sweep key, or two sweep keys A/B (paired ratio)")
    show.add_argument("--by", choices=("date", "commit"), default="date",
                      help="a cell's points: one per result file (date), or a commit's results pooled (commit)")
    show.add_argument("--threshold", type=probability, default=THRESHOLD, help=f"the t-test's p (default {THRESHOLD})")
    show.add_argument("--confirm", action="store_true",
                      help="re-run each change's two sides: the releases of a release series (a sweep of the two), "
                      "the commits of a series by date or commit (each in a worktree of its own), then bisect between")
    add_rule_arguments(show, "commit")
    commits = commands.add_parser("commits", help="re-run a cell at two commits, then bisect the commits between")
    commits.add_argument("--cell", required=True, help="a cell key (python -m bench history keys lists them)")
    commits.add_argument("--good", required=True, help="the earlier commit")
    commits.add_argument("--bad", required=True, help="the later commit")
    commits.add_argument("--profile", help="the cell's profile (default: that of its newest result here)")
    commits.add_argument("--change", choices=("slower", "faster"),
                         help="the change searched (default: whichever the two commits show)")
    add_rule_arguments(commits, "commit")
    mark = commands.add_parser("triage", help="acknowledge a change, or mark it expected or noise, with a reason")
    mark.add_argument("--cell", required=True)
    mark.add_argument("--at", required=True, help="the label of the first point after the change")
    mark.add_argument("--state", required=True, choices=STATES)
    mark.add_argument("--reason", required=True)
    mark.add_argument("--threshold", type=probability, default=THRESHOLD,
                      help=f"the p the change at --at must pass, as make history finds it (default {THRESHOLD})")
    commands.add_parser("keys", help="every cell key and sweep key indexed")
    commands.add_parser("runs", help="every run of the history, with its id (make compare A=<run id> B=<run id>)")
    commands.add_parser("refresh", help="bring the index up to date with the result files")
    for command in commands.choices.values():
        command.add_argument("--results-dir", type=results_folder, default=Path("results"))
    return parser


def main(argv: list[str] | None = None) -> int:
    from bench.base.exit_status import exit_status
    from bench.base.lifetime import stop_on_signals

    args = build_parser().parse_args(argv)
    stop_on_signals()  # TERM, HUP, INT: a re-run's commits' processes and worktrees go with it; 143, 129, 130
    return exit_status(lambda: command(args))


def command(args) -> int:
    from bench.studies.history import index

    if args.command == "commits" and args.profile:
        args.results_dir.mkdir(parents=True, exist_ok=True)  # a re-run writes its results there
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
        from bench.studies.history.runs import history_runs

        print("\n".join(f"{run.id}  {run.label()}" for run in history_runs(args.results_dir)))
    elif args.command == "triage":
        return triage_command(args)
    elif args.command == "commits":
        return commits_command(args)
    else:
        return show_command(args)
    return 0


def show_command(args) -> int:
    from bench.studies.history.report import series_text
    from bench.studies.history.series import series_of

    failed = 0
    for series in series_of(args.results_dir, args.cell, args.by):
        lines, found = series_text(args.results_dir, series, args.threshold)
        print("\n".join(lines))
        if args.confirm:
            for change in found:
                try:
                    print(rerun(args.results_dir, series, change, rule_of(args)))
                except BenchError as e:  # one change that could not be re-run leaves the others to be
                    print(f"  confirm: not re-run: {e}")
                    failed += 1
    return 1 if failed else 0


def rerun(results_dir: Path, series, found, rule) -> str:
    """CONFIRM=1: the releases either side of a change of a release series measured again, together (a sweep of the
    two, as a bisect's first step), and judged; a series by date or commit re-run at the commits either side, each
    checked out in a worktree, and the commits between bisected."""
    before, after = series.points[found.split.at - 1], series.points[found.split.at]
    if series.ordered_by != "release" or not series.sweep:
        if not before.commit or not after.commit or before.commit == after.commit:
            return "  confirm: " + commits_to_rerun(series.ordered_by, before.commit, after.commit)
        from bench.base.provenance import machine_info, machine_label
        from bench.studies.history.commits import bisect_commits
        from bench.studies.history.confirm import expected_verdict

        here = machine_label(machine_info())
        if here not in series.where:  # a change can be one machine's: the re-run shows this one's
            print(f"  note: the series was measured on another machine than this one ({here}): the re-run measures "
                  "the commits' difference here")
        record = bisect_commits(results_dir, series.cell, before.commit, after.commit, series.profile, rule,
                                change=expected_verdict(found.split), say=lambda line: print("  " + line))
        first = record["steps"][0] if record["steps"] else {}
        return (f"  confirm: re-run at {before.commit[:10]} and {after.commit[:10]}: {first.get('verdict')}; "
                + (f"first {record['change']} commit {record['answer'][:10]}" if record.get("answer")
                   else f"stopped: {record.get('stopped')}"))
    from dataclasses import replace

    from bench.studies.history.confirm import judged
    from bench.studies.history.series import series_of
    from bench.studies.sweep.cli import load_study, study_path
    from bench.studies.sweep.index import use_configured_index
    from bench.studies.sweep.run import run_sweep

    use_configured_index()  # the envs resolve from the index the user configured, as make sweep's do
    sweep = load_study(study_path(series.sweep), [before.label, after.label])
    sweep = replace(sweep, name=f"history-confirm-{series.sweep}-{series.backend}-{before.label}-{after.label}",
                    parts=[part for part in sweep.parts if part.target.backend == series.backend])  # this series' own
    run_sweep(sweep, results_dir)
    from bench.studies.history import index

    index.refresh(results_dir)
    again = [s for s in series_of(results_dir, series.cell) if s.where == series.where][0]  # by release
    labels = [p.label for p in again.points]
    split = replace(found.split, at=labels.index(after.label))
    verdict, ratio = judged(results_dir, again, split)
    from bench.base import stats

    return f"  confirm: re-measured {before.label} and {after.label}: {verdict} {stats.fmt_ratio(ratio)}"


def commits_to_rerun(ordered_by: str, before: str | None, after: str | None) -> str:
    """Why a change of a series by date or commit has no commits to re-run: one side's commit was not recorded, or
    both points were measured at one commit, so that no code changed between them (the first real CONFIRM=1 run,
    on the smoke BERT predict cell, asked to check out one commit twice): the move is the machine's or the
    measurement's."""
    if before is None or after is None:
        return (f"a series by {ordered_by}: the commit of {'the point before' if before is None else 'the point after'}"
                " the change was not recorded, so there is no code to check out and re-run; re-run the cell at this "
                "checkout (make bench) and make history again to see which side it repeats")
    return (f"both points were measured at commit {before[:10]}: no code changed between them, so re-running "
            "either side runs the same code; what moved is the machine or the measurement (make noise measures "
            "this machine's run-to-run spread, which the Judge then carries)")


def commits_command(args) -> int:
    from bench.studies.history.commits import bisect_commits
    from bench.studies.history.index import rows
    from bench.studies.history.series import CELL_ROWS

    profile = args.profile
    if profile is None:
        found = rows(args.results_dir, CELL_ROWS, (args.cell,))
        if not found:
            raise BenchError(f"no result of {args.cell} under {args.results_dir} to take its profile from: name it "
                             "(PROFILE=)")
        profile = max(found, key=lambda row: row["created_at"] or "")["profile"]
    record = bisect_commits(args.results_dir, args.cell, args.good, args.bad, profile, rule_of(args),
                            change=args.change)
    return 0 if record.get("answer") or record.get("steps") else 1


def triage_command(args) -> int:
    import math

    from bench.studies.history import changes, triage
    from bench.studies.history.series import series_of

    triage.check(args.state, args.reason)
    series = [s for s in series_of(args.results_dir, args.cell) if any(p.label == args.at for p in s.points)]
    if not series:
        raise BenchError(f"AT={args.at}: no point of {args.cell} has that label (make history CELL={args.cell} "
                         "lists them: a release, or a time stamp such as 20261125T211853Z)")
    if len(series) > 1:
        raise BenchError(f"AT={args.at} is a point of {len(series)} series of {args.cell}: "
                         + "; ".join(s.where for s in series))
    # a triage is said of a change, as make history shows it: one at a point where none starts would never be shown
    points = series[0].points
    starts = [points[s.at].label for s in changes.change_points([math.log(p.center) for p in points], args.threshold)]
    if args.at not in starts:
        found = f"its changes start at {', '.join(starts)}" if starts else "it has no change"
        raise BenchError(f"AT={args.at}: no change of {args.cell} starts at that point (p < {args.threshold:g}): "
                         f"{found} (make history CELL={args.cell} shows them; AT= names the first point after one)")
    entry = triage.record(args.results_dir, args.cell, series[0].where, args.at, args.state, args.reason)
    print(f"{triage.triage_path(args.results_dir)}: {entry.cell} at {entry.at} ({entry.where}) {entry.state}: "
          f"{entry.reason}")
    return 0
