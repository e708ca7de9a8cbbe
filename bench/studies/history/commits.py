"""A cell re-run at two commits, and the commits between them bisected (`make bisect-commits`; `make history
BY=commit CONFIRM=1` for each change of a series by date or commit).

Each commit's code is checked out in a git worktree of its own and runs the cell with that commit's own `python -m
bench run`, one process per invocation, the commits taking turns (A B, then B A, ...) so that a drift of the machine
falls on both. Each commit's processes are pooled and judged as one run: every process was an invocation of its own,
so their spread holds the run-to-run level of variance, and the two sides interleaved in one session share the
machine's state. Processes are added while a comparison is undecided and its cap could decide it, each look judged
at 1 - 5%/looks (bench/judge/replication.py). A change confirmed with commits between is searched by halves as `make
bisect` searches releases (bench/studies/sweep/bisect.py first_changed).

The built envs (.venvs) are this checkout's: a commit whose lock of the cell's env differs from this checkout's is
refused, since what it measured ran in another env (the release sweep measures package changes)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from bench.base import stats
from bench.base.atomic import write_json_atomic
from bench.base.errors import BenchError
from bench.base.lifetime import stopped_text
from bench.base.provenance import REPO_ROOT, git_info, machine_info, machine_label, now_utc
from bench.base.runlock import holding
from bench.judge.replication import SequentialRule
from bench.run.interleaved import Interleaved, child_env, measure_together, run_process
from bench.studies.ab.sides import SHORT, CellArgs, git, lock_problems, resolve, worktrees
from bench.studies.sweep.bisect import first_changed

CONFIRM_DIR = "confirm"  # <results>/confirm/<name>/: each commit's invocations; <name>.confirm.json: the record


def commits_between(good: str, bad: str) -> list[str] | None:
    """good, then every commit on the way from it to bad, oldest first, bad last; None where bad does not descend
    from good (no range: the two alone can be re-run)."""
    if subprocess.run(["git", "merge-base", "--is-ancestor", good, bad], cwd=REPO_ROOT).returncode != 0:
        return None
    return [good] + git("rev-list", "--reverse", "--ancestry-path", f"{good}..{bad}").split()


def run_once(tree: Path, cell: CellArgs, out: Path, log: Path):
    """One process of the cell, run by the commit's own orchestrator in its tree."""
    return run_process(cell.argv(out), tree, child_env(), out, log, f"{cell.key} did not run at {tree.name[:SHORT]}")


def measured_at(commits: list[str], pairs: list[tuple[str, str]], cell: CellArgs, folder: Path, tree,
                rule: SequentialRule, results_dir: Path, say) -> Interleaved:  # fmt: skip
    """Every commit's processes in turns, processes until each pair (b against a) is decided."""

    def record_of(commit: str, files: list[str]) -> dict:
        return {"confirm": {"commit": commit, "invocations": files,
                            "how": "one process per invocation of the commit's own bench run, commits in turn"}}

    return measure_together(commits, pairs, lambda c, out, log: run_once(tree(c), cell, out, log), folder, rule,
                            results_dir, say, record_of, label=lambda c: c[:SHORT])


def change_of(verdict: str) -> str | None:
    return verdict if verdict in (stats.SLOWER, stats.FASTER) else None


def record_name(key: str, good: str, bad: str) -> str:
    """<key>-<good>-<bad>: what a search's record and folder are named after (a time stamp follows: each search its
    own, none overwritten)."""
    return f"{key}-{good[:SHORT]}-{bad[:SHORT]}"


def records(results_dir: Path, key: str, good: str, bad: str) -> list[tuple[Path, dict]]:
    """Every search of key between these two commits on record, oldest first; an unreadable one is skipped (the
    history reads them as a hint, the files stay)."""
    out = []
    for path in sorted((results_dir / CONFIRM_DIR).glob(f"{record_name(key, good, bad)}-*.confirm.json")):
        try:
            out.append((path, json.loads(path.read_text())))
        except (OSError, ValueError):
            continue
    return out


def bisect_commits(results_dir: Path, key: str, good: str, bad: str, profile: str, rule: SequentialRule,
                   change: str | None = None, say=print) -> dict:
    """Re-run `key` at good and bad; where bad is `change` against good (either way when change is None) and commits
    lie between, the first changed one searched by halves. Returns (and writes) the record."""
    cell = CellArgs.parse(key, profile)
    good, bad = resolve(good), resolve(bad)
    if good == bad:
        raise BenchError(f"GOOD and BAD are one commit ({good[:SHORT]}): re-running it twice measures the machine, "
                         "not a change (make noise measures that)")
    commits = commits_between(good, bad)
    if problems := lock_problems(cell.env, commits or [good, bad]):
        raise BenchError(f"cannot re-run {key} at these commits in this checkout's envs: {'; '.join(problems[:3])}"
                         + (f" (and {len(problems) - 3} more)" if len(problems) > 3 else "")
                         + ": what changed may be the env's, which make sweep / make bisect measure by release")
    with holding(results_dir / CONFIRM_DIR):
        return _search(results_dir, cell, good, bad, commits, rule, change, say)


def _search(results_dir: Path, cell: CellArgs, good: str, bad: str, commits: list[str] | None, rule: SequentialRule,
            change: str | None, say) -> dict:
    folder = results_dir / CONFIRM_DIR / f"{record_name(cell.key, good, bad)}-{now_utc()[:19].replace(':', '')}"
    path = folder.with_name(folder.name + ".confirm.json")
    machine = machine_label(machine_info())
    record: dict = {
        "key": cell.key, "profile": cell.profile, "stack": cell.stack, "machine": machine, "good": good, "bad": bad,
        "commits": commits, "change": change, "rule": rule.to_dict(), "steps": [], "started_at": now_utc(),
        "provenance": {"git": git_info()},  # the code that drove the search; each result records its own commit
    }  # fmt: skip
    names = {c[:SHORT]: c for c in commits or [good, bad]}
    write_json_atomic(path, record)  # beside its folder from the start: a search cut short still has its record
    say(f"re-run {cell.key} ({cell.profile} profile) on {machine} at {good[:SHORT]} and {bad[:SHORT]}"
        + (f", {len(commits) - 2} commits between" if commits else f" ({bad[:SHORT]} does not descend from "
           f"{good[:SHORT]}: no range between them to bisect)") + f"; {rule.describe()}")

    with worktrees() as tree:
        def measure(number: int, low: str, candidate: str, high: str | None) -> tuple[str, str | None]:
            chosen = [names[low], names[candidate]] + ([names[high]] if high else [])
            pairs = [(chosen[0], chosen[1])] + ([(chosen[1], chosen[2])] if high else [])
            say(f"step {number}: {', '.join(c[:SHORT] for c in chosen)}")
            found = measured_at(chosen, pairs, cell, folder / f"step{number}", tree, rule, results_dir, say)
            step = {"number": number, "good": chosen[0], "candidate": chosen[1], "bad": chosen[2] if high else None,
                    "processes": {c: len(found.sides[c].runs) for c in chosen}}
            texts = []
            for (a, b), name in zip(pairs, ("", "bad_")):
                verdict, ratio = found.judged(a, b)
                step[f"{name}verdict"], step[f"{name}ratio"] = verdict, ratio.to_dict() if ratio else None
                why = ratio.reason if ratio is not None and ratio.reason else ""
                if not why and verdict == stats.INCONCLUSIVE and max(step["processes"][c] for c in (a, b)) < rule.cap:
                    why = f"{rule.cap} processes a commit would not decide it at the ratio and spreads measured"
                texts.append(f"{b[:SHORT]} against {a[:SHORT]}: {stats.verdict_text(ratio)} {stats.fmt_ratio(ratio)}"
                             + (f" ({why})" if why else ""))
            if number == 1 and record["change"] is None:
                record["change"] = change_of(step["verdict"])  # either way: what step 1 found is searched
            record["steps"].append(step)
            write_json_atomic(path, record)
            say(f"step {number}: " + "; ".join(texts))
            return step["verdict"], step.get("bad_verdict")

        items = [c[:SHORT] for c in commits or [good, bad]]
        try:
            answer, stopped = first_changed(items, measure, change, "commit")
        except (BenchError, KeyboardInterrupt) as e:  # a commit whose cell did not run, or a signal: the record
            # says where it stopped (what finished is kept in its folder), and the command fails
            why = str(e) if isinstance(e, BenchError) else f"{stopped_text(e)} after {len(record['steps'])} steps"
            record["answer"], record["stopped"], record["ended_at"] = None, why, now_utc()
            write_json_atomic(path, record)
            if isinstance(e, KeyboardInterrupt):
                say(f"{why}: record {path}")
            raise
    if answer and not commits:
        answer, stopped = None, (f"{bad[:SHORT]} is {record['change']} than {good[:SHORT]}, and does not descend "
                                 "from it: no range of commits to name the change in")
    record["answer"], record["stopped"] = (names[answer] if answer else None), stopped
    record["ended_at"] = now_utc()
    write_json_atomic(path, record)
    say(f"first {record['change']} commit: {record['answer'][:SHORT]} ({commit_subject(record['answer'])})"
        if record["answer"] else f"stopped: {stopped}")
    say(f"record: {path}")
    return record


def commit_subject(commit: str) -> str:
    try:
        return git("log", "-1", "--format=%s", commit)[:100]
    except BenchError:
        return "subject unreadable"
