"""`make bisect`: the first release between GOOD and BAD where a key got slower, searched by halves.

The releases are the index's (bench/studies/sweep/index.py). The first step measures GOOD and BAD together (a sweep of
the two, round-robin) and goes on only when BAD is slower with confidence (bench/judge/__init__.py). Each later step
measures the middle release between the two ends, all three in one sweep: the middle slower than the good end with
confidence makes it the new bad end; the bad end slower than the middle with confidence (or the middle the same as the
good end) makes it the new good end; neither stops the search and says so, naming the range still open. Judging the
middle against both ends asks two one-sided questions, each answerable by a few processes, where "the same" would need
an interval within ±5%. Every step is a sweep of its own (its results kept under <results>/sweep/<bisect name>-step<N>/)
and <name>.bisect.json lists the steps, their verdicts and ratios, and the answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from bench.base import stats
from bench.base.atomic import write_json_atomic
from bench.base.errors import BenchError
from bench.base.lifetime import stopped_text
from bench.base.provenance import git_info
from bench.base.runlock import holds_results_folder
from bench.judge import Judge
from bench.studies.sweep.index import between, released_versions
from bench.studies.sweep.page import paired_estimate
from bench.studies.sweep.run import STUDY_DIR, Sweep, SweepResult, run_sweep


@dataclass
class Step:
    number: int
    good: str
    candidate: str
    verdict: str  # the candidate against the good end
    ratio: dict | None
    sweep: str
    bad: str | None = None
    bad_verdict: str | None = None  # the bad end against the candidate
    bad_ratio: dict | None = None

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def every_process_failed(result: SweepResult | None) -> str | None:
    """What failed, where a version's processes all failed (an error in the call, a broken env): a step judged on
    none is an error, not a verdict. None where one ran, or none was started (a version that could not resolve)."""
    if result is None or result.status in ("ok", "na") or any(run.status == "ok" for run in result.runs):
        return None
    log = (result.runs[-1].settings or {}).get("log")
    return (f"every process failed ({len(result.runs)}): {result.status}: {result.message}"
            + (f" (log: {log})" if log else ""))


def compare(
    results: list[SweepResult], key: str, good: str, candidate: str, results_dir: Path
) -> tuple[str, dict | None]:
    """The candidate against the good release on `key`: the verdict and the ratio (candidate / good). A key
    `A/B` judges A's figure over B's, paired within each process (a Keras column over its plain framework)."""
    found = {(r.provenance["sweep"]["key"], r.provenance["sweep"]["version"]): r for r in results}
    for version in (good, candidate):
        for part in key.split("/"):
            if failure := every_process_failed(found.get((part, version))):
                raise BenchError(f"{part} at {version}: {failure}; no verdict from processes that did not run: "
                                 "fix what failed, then bisect again")
    if "/" in key:
        numerator, denominator = key.split("/")
        sides = [
            paired_estimate(found[numerator, v], found[denominator, v])
            if (numerator, v) in found and (denominator, v) in found
            else None
            for v in (good, candidate)
        ]
        if None in sides:
            return stats.INCONCLUSIVE, {"reason": f"no paired figure for {key} at both releases"}
        ratio = stats.ratio(*sides)
        return stats.verdict(ratio), ratio.to_dict()
    a, b = found.get((key, good)), found.get((key, candidate))
    if a is None or b is None or a.status != "ok" or b.status != "ok":
        why = "; ".join(
            f"{v}: {r.status} {r.message or ''}"
            for v, r in ((good, a), (candidate, b))
            if r is not None and r.status != "ok"
        )
        return stats.INCONCLUSIVE, {"reason": why or f"no result for {key}"}
    judge = Judge(results, results_dir)
    ratio = judge.ratio(a, b)
    return stats.verdict(ratio), ratio.to_dict() if ratio else None


def first_changed(
    items: list[str],
    measure: Callable[[int, str, str, str | None], tuple[str, str | None]],
    change: str | None,
    noun: str,
) -> tuple[str | None, str | None]:
    """The first of items[1:] (releases, commits) that is `change` against items[0], by halves; returns it, or None and
    why the search stopped. measure(step, low, candidate, high) judges the candidate against the low end and, where
    high is given, the high end against the candidate. Step 1 measures the two ends alone and goes on only when the
    last is `change` with confidence (change None: slower or faster, whichever step 1 finds); a middle `change`
    against the low end makes it the high end, the high end `change` against it (or it the same as the low end) the
    low end, and neither stops the search, naming the range still open."""
    low, high = 0, len(items) - 1
    first = measure(1, items[low], items[high], None)[0]
    if change is None and first in (stats.SLOWER, stats.FASTER):
        change = first
    if first != change:
        said = change or "slower or faster"
        return None, f"{items[high]} is not {said} than {items[low]} with confidence (step 1: {first})"
    unchanged = (stats.SAME, stats.FASTER if change == stats.SLOWER else stats.SLOWER)
    number = 1
    while high - low > 1:
        number += 1
        middle = (low + high) // 2
        verdict, bad_verdict = measure(number, items[low], items[middle], items[high])
        if verdict == change:
            high = middle
        elif bad_verdict == change or verdict in unchanged:
            low = middle
        else:
            return None, (
                f"step {number} was inconclusive ({items[middle]} against {items[low]} and {items[high]} against "
                f"it): the first {change} {noun} is one of {', '.join(items[low + 1 : high + 1])}"
            )
    return items[high], None


@holds_results_folder
def run_bisect(
    sweep: Sweep,
    key: str,
    good: str,
    bad: str,
    results_dir: Path,
    versions: list[str] | None = None,
    say=print,
    change: str = stats.SLOWER,
    **sweep_options,
) -> dict:
    """Search the releases from good to bad for the first one that is `change` (slower; or faster: where an
    improvement came); returns (and writes as <name>.bisect.json) the steps and the answer."""
    if change not in (stats.SLOWER, stats.FASTER):
        raise ValueError(f"a bisect looks for a slower or a faster release, not {change!r}")
    releases = between(versions or released_versions(sweep.package), good, bad)
    name = sweep.name
    record_path = results_dir / STUDY_DIR / f"{name}.bisect.json"
    record: dict = {
        "package": sweep.package,
        "key": key,
        "good": good,
        "bad": bad,
        "releases": releases,
        "processes": sweep.processes,
        "command": sweep.command,
        "change": change,
        "steps": [],
        "provenance": {"git": git_info()},  # the code that ran every step (each step's results record it too)
    }
    say(f"bisect {sweep.package} on {key}: {len(releases)} releases from {good} to {bad}: {', '.join(releases)}")

    def measure(number: int, low: str, candidate: str, high: str | None = None) -> tuple[str, str | None]:
        versions = [low, candidate] + ([high] if high else [])
        step_sweep = replace(sweep, name=f"{name}-step{number}", versions=versions)
        results = run_sweep(step_sweep, results_dir, say=say, **sweep_options)
        try:
            verdict, ratio = compare(results, key, low, candidate, results_dir)
            step = Step(number, low, candidate, verdict, ratio, step_sweep.name)
            if high:
                step.bad = high
                step.bad_verdict, step.bad_ratio = compare(results, key, candidate, high, results_dir)
        except BenchError as e:  # the record says why it stopped, and the command fails
            record["answer"], record["stopped"] = None, f"step {number}: {e}"
            write_json_atomic(record_path, record)
            raise BenchError(f"bisect step {number}: {e}") from None
        record["steps"].append(step.to_dict())
        write_json_atomic(record_path, record)
        say(
            f"step {number}: {sweep.package} {candidate} against {low}: {verdict} {stats.fmt_ratio(_ratio(ratio))}"
            + (
                f"; {high} against {candidate}: {step.bad_verdict} {stats.fmt_ratio(_ratio(step.bad_ratio))}"
                if high
                else ""
            )
        )
        return verdict, step.bad_verdict

    try:
        record["answer"], stopped = first_changed(releases, measure, change, "release")
    except KeyboardInterrupt as e:  # a signal: the record says so, what finished is kept
        record["answer"], record["stopped"] = None, f"{stopped_text(e)} after {len(record['steps'])} steps"
        write_json_atomic(record_path, record)
        raise
    if stopped:
        record["stopped"] = stopped
    write_json_atomic(record_path, record)
    say(
        f"bisect: first {change} release {record['answer']}"
        if record.get("answer")
        else f"bisect stopped: {record['stopped']}"
    )
    return record


def _ratio(found: dict | None) -> stats.Ratio | None:
    if not found or found.get("ratio") is None:
        return None
    from bench.base.stats import Ratio

    low, high = found.get("low"), found.get("high")
    if low is None or high is None:
        return Ratio(found["ratio"], None, float("inf"), False)
    # the stored interval back into a log-scale standard error at the stored degrees of freedom
    import math

    dof = found.get("dof") or math.inf
    half = math.log(high / low) / 2
    return Ratio(found["ratio"], half / stats.t_quantile((1 + stats.CONFIDENCE) / 2, dof), dof, found["decidable"])
