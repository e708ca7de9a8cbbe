"""Two or more sides of a comparison measured in turns in one invocation, each side's processes pooled and judged as
one run: what `make ab` and `make bisect-commits` re-measure with.

Each process is an invocation of its own (`python -m bench run --repeats 1`, run by whatever the side names: another
commit's tree, another interpreter, another stack), so the pooled spread holds the run-to-run level of variance, and
the sides, taking turns (A B, then B A, ...), share the machine's drift. Processes are added to the sides of an
undecided comparison while the cap could decide it, each look judged at the rule's spent level
(bench/judge/replication.py); a disturbed process is replaced as `make bench-all` replaces one (runner.to_replace)."""
from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from statistics import median

from bench.base import stats
from bench.base.errors import BenchError
from bench.base.provenance import venvs_dir
from bench.judge import Judge, reference_readings
from bench.judge.machine_states import within_state
from bench.judge.replication import SequentialRule, undecided_sides
from bench.record.results import Result, load, result_files
from bench.run.cell_process import kill_group
from bench.run.runner import to_replace

LOG_TAIL = 12

# one process of a side: (its result, its file), given the folder it writes to and its log
RunProcess = Callable[[str, Path, Path], tuple[Result, Path]]


def run_process(argv: list[str], cwd: Path, env: dict[str, str], out: Path, log: Path, what: str
                ) -> tuple[Result, Path]:  # fmt: skip
    """One invocation that writes one result under `out`; its result and file, or an error: `what` (the cell did not
    run, and where), why, the log and its last lines. An interrupt ends the invocation and its cell with us."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as sink:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip
        try:
            code = proc.wait()
        finally:
            kill_group(proc)
    found = result_files(out)
    result = load(found[0]) if len(found) == 1 else None
    if code != 0 or result is None or result.status != "ok":
        tail = " | ".join(log.read_text(errors="replace").strip().splitlines()[-LOG_TAIL:])
        why = f"{result.status}: {result.message}" if result is not None else f"exit {code}, no result"
        raise BenchError(f"{what} ({why}; log {log}): {tail}")
    return result, found[0]


def child_env() -> dict[str, str]:
    """This environment for an invocation run elsewhere (another commit's tree, another interpreter): the commit it
    records is its own, not ours, and it reaches this checkout's built envs by their absolute path."""
    env = {k: v for k, v in os.environ.items() if k != "BENCH_GIT_COMMIT"}
    env["BENCH_VENVS_DIR"] = str(venvs_dir().resolve())
    return env


def pooled(results: list[Result], run_id: str, rule: SequentialRule, record: dict) -> Result:
    """A side's processes as one result: the first invocation's record, every invocation's process, one run id for
    every side (interleaved in one session), the side's `record` (what it is, its invocations) and the rule."""
    base = results[0]
    provenance = {**base.provenance, "run_id": run_id, **record}
    if rule.sequential:
        provenance["replication"] = rule.to_dict()
    return replace(base, runs=[run for result in results for run in result.runs], provenance=provenance)


@dataclass
class Interleaved:
    sides: dict[str, Result]  # side -> its pooled result
    judge: Judge

    def judged(self, a: str, b: str) -> tuple[str, stats.Ratio | None]:
        """B / A and its verdict: within one of the machine's states where it switched between two during the
        comparison (bench/judge/machine_states.py), else over every process."""
        ratio = judged_pair(self.judge, self.sides[a], self.sides[b])
        return stats.verdict(ratio), ratio


def wanting_more(judge: Judge, a: Result, b: Result, rule: SequentialRule) -> list[Result]:
    """The sides of B / A one more process could help decide: undecided_sides, or, where the machine switched between
    two states, each side the cap allows another while the comparison within a state is undecided (a state may yet
    gather enough processes of both sides)."""
    states = within_state(judge, a, b)
    if states is None:
        return undecided_sides(judge, a, b, rule)
    if stats.verdict(judged_pair(judge, a, b, states)) != stats.INCONCLUSIVE:
        return []
    return [side for side in (a, b) if rule.another_allowed(len(side.runs))]


def judged_pair(judge: Judge, a: Result, b: Result, states=None) -> stats.Ratio | None:
    """B / A within one of the machine's states where it switched between two, else over every process. `states`:
    within_state's answer where the caller has it already."""
    states = states if states is not None else within_state(judge, a, b)
    if states is None:
        return judge.ratio(a, b)
    named, ratio = states
    if ratio is None:  # named, but no state holds enough of both sides' processes to compare
        pooled = judge.ratio(a, b)
        return pooled.undecided(named.text(a.unit)) if pooled is not None else None
    return ratio


def measure_together(
    names: list[str],
    pairs: list[tuple[str, str]],
    run: RunProcess,
    folder: Path,
    rule: SequentialRule,
    results_dir: Path,
    say,
    record_of: Callable[[str, list[str]], dict],
    label: Callable[[str], str] = str,
) -> Interleaved:
    """Every side's processes in turns, `rule.first` each, then one more a round for the sides of an undecided pair
    (b against a) that the cap could decide. `record_of(side, its result files)`: what its pooled result records."""
    folder = folder.resolve()  # the invocations run in other trees, not here
    run_id = f"interleaved-{uuid.uuid4().hex}"
    done: dict[str, list[Result]] = {n: [] for n in names}
    paths: dict[str, list[str]] = {n: [] for n in names}
    wanted, number = list(names), 0
    while True:
        number += 1
        for name in wanted if number % 2 else wanted[::-1]:
            out = folder / label(name) / f"process{len(done[name]) + 1}"
            started = time.monotonic()
            result, path = run(name, out, folder / "logs" / f"{out.parent.name}-{out.name}.log")
            done[name].append(result)
            paths[name].append(str(path.resolve().relative_to(results_dir.resolve())))
            say(f"  {label(name)} process {len(done[name])}: median {median(result.runs[0].timed_ms):.4g} "
                f"{result.unit} ({time.monotonic() - started:.0f} s)")
        if number < rule.first:
            continue
        sides = {n: pooled(done[n], run_id, rule, record_of(n, paths[n])) for n in names}
        # one machine, one session: a processor recorded differently by another side's code is still this one
        judge = Judge(list(sides.values()), results_dir, across_processors=True)
        more = {id(side) for a, b in pairs for side in wanting_more(judge, sides[a], sides[b], rule)}
        readings = reference_readings(list(sides.values()))
        # every process a side has run counts against the cap, set-aside ones too: each was a look
        wanted = [n for n in names if rule.another_allowed(len(sides[n].runs))
                  and (id(sides[n]) in more or to_replace(sides[n].runs, rule, readings))]
        if not wanted:
            return Interleaved(sides, judge)
