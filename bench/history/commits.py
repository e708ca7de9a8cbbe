"""A cell re-run at two commits, and the commits between them bisected (`make bisect-commits`; `make history
BY=commit CONFIRM=1` for each change of a series by date or commit).

Each commit's code is checked out in a git worktree of its own and runs the cell with that commit's own `python -m
bench run`, one process per invocation, the commits taking turns (A B, then B A, ...) so that a drift of the machine
falls on both. Each commit's processes are pooled and judged as one run: every process was an invocation of its own,
so their spread holds the run-to-run level of variance, and the two sides interleaved in one session share the
machine's state. Processes are added while a comparison is undecided and its cap could decide it, each look judged
at 1 - 5%/looks (bench/replication.py). A change confirmed with commits between is searched by halves as `make
bisect` searches releases (bench/sweep/bisect.py first_changed).

The built envs (.venvs) are this checkout's: a commit whose lock of the cell's env differs from this checkout's is
refused, since what it measured ran in another env (the release sweep measures package changes)."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from statistics import median

from bench import stats
from bench.atomic import write_json_atomic
from bench.backends import env_name
from bench.cell_process import kill_group
from bench.errors import BenchError
from bench.judge import Judge, reference_readings
from bench.provenance import REPO_ROOT, git_info, machine_info, machine_label, now_utc, venvs_dir
from bench.replication import SequentialRule, undecided_sides
from bench.results import Result, load, result_files
from bench.runlock import holding
from bench.runner import to_replace
from bench.sweep.bisect import first_changed

CONFIRM_DIR = "confirm"  # <results>/confirm/<name>/: each commit's invocations; <name>.confirm.json: the record
SHORT = 10  # a commit as printed and as a step names it
LOG_TAIL = 12


@dataclass(frozen=True)
class CellArgs:
    """What `bench run` needs to run one cell again, from its key and profile (keys have been stable since the first
    commit the history holds)."""

    key: str
    backend: str
    model: str
    task: str
    batch_size: int
    variant: str
    stack: str
    profile: str

    @classmethod
    def parse(cls, key: str, profile: str) -> CellArgs:
        parts = key.split("__")
        stack = "today"
        if len(parts) == 6 and parts[5].startswith("stack-"):
            stack = parts.pop()[len("stack-"):]
        if len(parts) != 5 or not parts[3].startswith("bs") or not parts[3][2:].isdigit():
            raise BenchError(f"{key!r} is no cell key (backend__model__task__bs<N>__variant, as "
                             "python -m bench.history keys lists them)")
        backend, model, task, batch, variant = parts
        return cls(key, backend, model, task, int(batch[2:]), variant, stack, profile)

    def argv(self, results_dir: Path) -> list[str]:
        return [sys.executable, "-m", "bench", "run", "--backend", self.backend, "--model", self.model,
                "--task", self.task, "--variant", self.variant, "--batch-size", str(self.batch_size),
                "--profile", self.profile, "--stack", self.stack, "--repeats", "1",
                "--results-dir", str(results_dir)]  # fmt: skip


def git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True)
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["failed"])[-1]
        raise BenchError(f"git {' '.join(args)}: {last}")
    return done.stdout.strip()


def resolve(commit: str) -> str:
    try:
        return git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}")
    except BenchError:
        raise BenchError(f"commit {commit} is not in this clone (git fetch the branch that holds it, then again)"
                         ) from None


def commits_between(good: str, bad: str) -> list[str] | None:
    """good, then every commit on the way from it to bad, oldest first, bad last; None where bad does not descend
    from good (no range: the two alone can be re-run)."""
    if subprocess.run(["git", "merge-base", "--is-ancestor", good, bad], cwd=REPO_ROOT).returncode != 0:
        return None
    return [good] + git("rev-list", "--reverse", "--ancestry-path", f"{good}..{bad}").split()


def lock_problems(env: str, commits: list[str]) -> list[str]:
    """Each commit whose lock of `env` (envs/<env>/requirements.txt, from which .venvs/<env> is built) differs from
    this checkout's."""
    path = f"envs/{env}/requirements.txt"
    here = (REPO_ROOT / path).read_bytes() if (REPO_ROOT / path).is_file() else None
    out = []
    for commit in commits:
        theirs = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=REPO_ROOT, capture_output=True)
        if theirs.returncode or theirs.stdout != here:
            out.append(f"{path} at {commit[:SHORT]} " + ("is missing" if theirs.returncode else
                                                         "differs from this checkout's"))
    return out


@contextlib.contextmanager
def worktrees() -> Iterator[Callable[[str], Path]]:
    """A function giving each commit its checked-out tree (made once, on first use), all removed at the end. Each tree
    reaches the built envs through a .venvs link (git status ignores it: untracked, and ignored as a directory)."""
    root = Path(tempfile.mkdtemp(prefix="bench-commits-"))
    trees: dict[str, Path] = {}

    def tree(commit: str) -> Path:
        if commit not in trees:
            path = root / commit[:12]
            git("worktree", "add", "--detach", "--quiet", str(path), commit)
            trees[commit] = path
            (path / ".venvs").symlink_to(venvs_dir().resolve())
        return trees[commit]

    try:
        yield tree
    finally:
        for path in trees.values():
            subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=REPO_ROOT, capture_output=True)
        shutil.rmtree(root, ignore_errors=True)
        subprocess.run(["git", "worktree", "prune"], cwd=REPO_ROOT, capture_output=True)


def run_once(tree: Path, cell: CellArgs, out: Path, log: Path) -> tuple[Result, Path]:
    """One process of the cell, run by the commit's own orchestrator in its tree; its result and file, or an error
    naming the log and its last lines."""
    out = out.resolve()  # the invocation runs in the commit's tree, not here
    env = {k: v for k, v in os.environ.items() if k != "BENCH_GIT_COMMIT"}
    env["BENCH_VENVS_DIR"] = str(venvs_dir().resolve())
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as sink:
        proc = subprocess.Popen(cell.argv(out), cwd=tree, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip
        try:
            code = proc.wait()
        finally:
            kill_group(proc)  # an interrupt ends the invocation and its cell with us
    found = result_files(out)
    result = load(found[0]) if len(found) == 1 else None
    if code != 0 or result is None or result.status != "ok":
        tail = " | ".join(log.read_text(errors="replace").strip().splitlines()[-LOG_TAIL:])
        why = f"{result.status}: {result.message}" if result is not None else f"exit {code}, no result"
        raise BenchError(f"{cell.key} did not run at {tree.name[:SHORT]} ({why}; log {log}): {tail}")
    return result, found[0]


def pooled(results: list[Result], run_id: str, commit: str, rule: SequentialRule, invocations: list[str]) -> Result:
    """A commit's processes as one result: the first invocation's record, every invocation's process, one run id for
    both sides of the comparison (interleaved in one session), the rule the looks are judged under."""
    base = results[0]
    provenance = {**base.provenance, "run_id": run_id,
                  "confirm": {"commit": commit, "invocations": invocations,
                              "how": "one process per invocation of the commit's own bench run, commits in turn"}}
    if rule.sequential:
        provenance["replication"] = rule.to_dict()
    return replace(base, runs=[run for result in results for run in result.runs], provenance=provenance)


@dataclass
class Measured:
    sides: dict[str, Result]  # commit -> its pooled result
    judge: Judge

    def judged(self, a: str, b: str) -> tuple[str, stats.Ratio | None]:
        ratio = self.judge.ratio(self.sides[a], self.sides[b])
        return stats.verdict(ratio), ratio


def measure_together(commits: list[str], pairs: list[tuple[str, str]], cell: CellArgs, folder: Path,
                     tree: Callable[[str], Path], rule: SequentialRule, results_dir: Path, say) -> Measured:
    """Every commit's processes in turns, `rule.first` each, then one more a round for the commits of an undecided
    pair (b against a) that the cap could decide."""
    run_id = f"commits-{uuid.uuid4().hex}"
    done: dict[str, list[Result]] = {c: [] for c in commits}
    paths: dict[str, list[str]] = {c: [] for c in commits}
    wanted, number = list(commits), 0
    while True:
        number += 1
        for commit in wanted if number % 2 else wanted[::-1]:
            out = folder / commit[:SHORT] / f"process{len(done[commit]) + 1}"
            started = time.monotonic()
            result, path = run_once(tree(commit), cell, out, folder / "logs" / f"{out.parent.name}-{out.name}.log")
            done[commit].append(result)
            paths[commit].append(str(path.relative_to(results_dir.resolve())))
            say(f"  {commit[:SHORT]} process {len(done[commit])}: median {median(result.runs[0].timed_ms):.4g} "
                f"{result.unit} ({time.monotonic() - started:.0f} s)")
        if number < rule.first:
            continue
        sides = {c: pooled(done[c], run_id, c, rule, paths[c]) for c in commits}
        # one machine, one session: a processor recorded differently by another commit's code is still this one
        judge = Judge(list(sides.values()), results_dir, across_processors=True)
        more = {id(side) for a, b in pairs for side in undecided_sides(judge, sides[a], sides[b], rule)}
        # a disturbed process is replaced under a sequential rule, as make bench-all replaces one (runner.to_replace)
        readings = reference_readings(list(sides.values()))
        wanted = [c for c in commits if id(sides[c]) in more or to_replace(sides[c].runs, rule, readings)]
        if not wanted:
            return Measured(sides, judge)


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
    if problems := lock_problems(env_name(cell.backend, cell.stack), commits or [good, bad]):
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
    say(f"re-run {cell.key} ({cell.profile} profile) on {machine} at {good[:SHORT]} and {bad[:SHORT]}"
        + (f", {len(commits) - 2} commits between" if commits else f" ({bad[:SHORT]} does not descend from "
           f"{good[:SHORT]}: no range between them to bisect)") + f"; {rule.describe()}")

    with worktrees() as tree:
        def measure(number: int, low: str, candidate: str, high: str | None) -> tuple[str, str | None]:
            chosen = [names[low], names[candidate]] + ([names[high]] if high else [])
            pairs = [(chosen[0], chosen[1])] + ([(chosen[1], chosen[2])] if high else [])
            say(f"step {number}: {', '.join(c[:SHORT] for c in chosen)}")
            found = measure_together(chosen, pairs, cell, folder / f"step{number}", tree, rule, results_dir, say)
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
        except BenchError as e:  # a commit whose cell did not run: the record says where it stopped, and it fails
            record["answer"], record["stopped"], record["ended_at"] = None, str(e), now_utc()
            write_json_atomic(path, record)
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
