"""The noise study's calibration workload: a process that times a pure-Python loop, so that a planted slowdown's
size is known exactly. Not a product cell and not a knob on one: the noise tool's own instrument.

Each step runs `iterations` turns of a loop of constant cost per turn (about 1 ms in all, `calibrate`); the slowed
probe runs round(iterations x (1 + slowdown)) turns, so its added per-step work is exactly `slowdown` of the base.
The steps go through bench.base.timing.StepTimer (a first step, warm-up, then timed steps chosen by a sampling rule),
as a cell's do; the process writes what it timed as JSON (`python -m bench.studies.noise.worker --out FILE ...`).

In the orchestrating process: `run_probe` runs one such process, `probe_pair` runs the base and the slowed probe
interleaved (A-B-B-A-A-B), with the drift probe (bench/measure/drift.py) between processes, and `judge_pair` decides B /
A as every comparison is decided (bench/base/stats.py: the ratio of the two sides' estimates, the same noise gates).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.base import stats
from bench.base.provenance import REPO_ROOT
from bench.base.timing import HostDevice, StepTimer, WindowPlan
from bench.catalogue.profiles import get_profile
from bench.judge.replication import SequentialRule
from bench.measure.drift import reference_ms
from bench.studies.noise import interleaved_sides

TARGET_STEP_MS = 1.0
MASK = 0xFFFFFFFF  # keeps the accumulator one machine word, so every turn of the loop costs the same
PROBE_TIMEOUT_S = 120.0


def spin(iterations: int) -> int:
    """One step's work: `iterations` turns of a loop of constant cost. Returns the turns it ran."""
    acc = 0
    turns = 0
    for turns, i in enumerate(range(iterations), 1):  # noqa: B007  (turns counts what ran, not what was asked)
        acc = (acc * 31 + i) & MASK
    return turns


def slowed_iterations(base_iterations: int, slowdown: float) -> int:
    """The turns per step of the probe slowed by `slowdown` (0.2: 20% more work per step than the base)."""
    if base_iterations < 1 or slowdown < 0:
        raise ValueError(f"need base_iterations >= 1 and slowdown >= 0, got {base_iterations}, {slowdown}")
    return round(base_iterations * (1 + slowdown))


def calibrate(target_ms: float = TARGET_STEP_MS, budget_s: float = 0.3) -> int:
    """The turns of `spin` that take about `target_ms` on this machine now (the median of repeated timings)."""
    trial = 10_000
    spin(trial)
    times = []
    deadline = time.perf_counter() + budget_s
    while len(times) < 5 or time.perf_counter() < deadline:
        started = time.perf_counter_ns()
        spin(trial)
        times.append(time.perf_counter_ns() - started)
    per_turn_ms = statistics.median(times) / 1e6 / trial
    return max(1, round(target_ms / per_turn_ms))


# -- the sampling rule: how many timed steps a process takes


def profile_rule(profile: str = "smoke") -> dict[str, Any]:
    """A profile's sampling rule as a run records it (`runs[].sampling.rule`, bench/base/timing.py WindowPlan.rule): the
    median's 95% interval within `target_half_width` of it, after `min_steps` and `min_s` timed, up to `max_steps`
    or `max_s`; a fixed count has min_steps = max_steps."""
    p = get_profile(profile)
    plan = WindowPlan(p.warmup_steps, p.timed_steps, p.max_warmup_steps, max_timed_steps=p.max_timed_steps,
                      target_half_width=p.target_half_width, min_timed_s=p.min_timed_s,
                      max_timed_s=p.max_timed_s or None)
    return plan.rule()


def rule_plan(rule: dict[str, Any], warmup_steps: int = 1) -> WindowPlan:
    """The window plan that samples by `rule` (as profile_rule gives it) after a first step and `warmup_steps`."""
    return WindowPlan(warmup_steps, rule["min_steps"], max_timed_steps=rule["max_steps"],
                      target_half_width=rule["target_half_width"], min_timed_s=rule.get("min_s") or 0.0,
                      max_timed_s=rule.get("max_s") or None)


def measure(iterations: int, rule: dict[str, Any], warmup_steps: int = 1) -> dict[str, Any]:
    """Time `spin(iterations)` per step through a StepTimer: a first step, warm-up, then timed steps until the rule
    stops them. Returns the figures a probe process writes."""
    timer = StepTimer(HostDevice(), rule_plan(rule, warmup_steps))
    turns = set()
    while not timer.done:
        timer.begin()
        turns.add(spin(iterations))
        timer.end()
    split = timer.split()
    return {
        "iterations": iterations,
        "turns_per_step": sorted(turns),
        "first_step_ms": split.first_ms,
        "warmup_ms": split.warmup_ms,
        "timed_ms": split.timed_ms,
        "sampling": timer.sampling(),
    }


# -- in the orchestrating process


@dataclass
class ProbeRun:
    """One probe process: what it timed, and the drift probe's readings before and after it."""

    slowdown: float
    iterations: int
    timed_ms: list[float]
    sampling: dict[str, Any]
    reference: dict[str, float] = field(default_factory=dict)
    wall_s: float = 0.0

    @property
    def median_ms(self) -> float:
        return statistics.median(self.timed_ms)

    def to_dict(self) -> dict[str, Any]:
        return {
            "slowdown": self.slowdown,
            "iterations": self.iterations,
            "median_ms": self.median_ms,
            "steps": len(self.timed_ms),
            "half_width": self.sampling.get("half_width"),
            "stopped_by": self.sampling.get("stopped_by"),
            "reference": self.reference,
            "wall_s": self.wall_s,
        }


class ProbeFailed(RuntimeError):
    pass


def run_probe(
    base_iterations: int, slowdown: float, rule: dict[str, Any], timeout_s: float = PROBE_TIMEOUT_S
) -> ProbeRun:
    """One probe process (this interpreter, `python -m bench.studies.noise.worker`): the base's turns times (1 +
    slowdown)."""
    iterations = slowed_iterations(base_iterations, slowdown)
    with tempfile.TemporaryDirectory(prefix="bench-noise-probe-") as scratch:
        out = Path(scratch) / "probe.json"
        command = [sys.executable, "-m", "bench.studies.noise.worker", "--iterations", str(iterations),
                   "--rule", json.dumps(rule), "--out", str(out)]
        started = time.perf_counter()
        done = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout_s)
        wall = round(time.perf_counter() - started, 3)
        if done.returncode != 0 or not out.exists():
            raise ProbeFailed(f"the probe process failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
        data = json.loads(out.read_text())
    return ProbeRun(slowdown, iterations, data["timed_ms"], data["sampling"], wall_s=wall)


@dataclass
class PairOutcome:
    """A base against a slowed probe: each side's processes, B / A and its verdict."""

    slowdown: float
    a: list[ProbeRun]
    b: list[ProbeRun]
    ratio: stats.Ratio | None
    verdict: str

    @property
    def reason(self) -> str:
        return self.ratio.reason if self.ratio is not None else "no estimate on a side"

    def to_dict(self) -> dict[str, Any]:
        interval = self.ratio.interval() if self.ratio is not None else None
        return {
            "slowdown": self.slowdown,
            "ratio": self.ratio.value if self.ratio is not None else None,
            "low": interval[0] if interval else None,
            "high": interval[1] if interval else None,
            "verdict": self.verdict,
            "reason": self.reason,
            "a": [r.to_dict() for r in self.a],
            "b": [r.to_dict() for r in self.b],
        }


def judge_pair(
    a: list[ProbeRun], b: list[ProbeRun], quiet_reference_ms: float | None = None, confidence: float = stats.CONFIDENCE
) -> stats.Ratio | None:
    """B / A as the suite decides every comparison (bench/base/stats.py): each side's estimate from its processes' timed
    steps, their ratio, kept out of a verdict where a process of either side trips a noise gate, judged against the
    quietest drift-probe reading (of the pair, unless given)."""
    readings = [v for run in (*a, *b) for v in run.reference.values() if v and v > 0]
    quiet = quiet_reference_ms if quiet_reference_ms is not None else min(readings, default=None)
    ea = stats.estimate([run.timed_ms for run in a])
    eb = stats.estimate([run.timed_ms for run in b])
    if ea is None or eb is None:
        return None
    found = stats.ratio(ea, eb).judged_at(confidence)
    for side, runs in (("A", a), ("B", b)):
        reasons = [
            f"process {i}: {reason}"
            for i, run in enumerate(runs, 1)
            for reason in stats.noise_reasons(run.timed_ms, run.reference, quiet).reasons
        ]
        if reasons:
            found = found.undecided(f"{side} noisy: {'; '.join(reasons)}")
    return found


def probe_pair(
    base_iterations: int,
    slowdown: float,
    repeats: int,
    rule: dict[str, Any],
    echo: Callable[[str], None] | None = None,
    latest_reference_ms: float | None = None,
    cap: int | None = None,
) -> tuple[PairOutcome, float]:
    """`repeats` processes of the base (A) and as many of the slowed probe (B), interleaved A-B-B-A-A-B, the drift
    probe read between processes. With a `cap` above `repeats`, an undecided pair gets one more process a side (A
    then B) after each look, up to `cap`, under the sequential rule `make bench-all` replicates cells by
    (bench/judge/replication.py: each look judged at 1 - 5% / looks). Returns the outcome and the last drift-probe
    reading (for the next pair)."""
    sequential = SequentialRule(repeats, max(cap or repeats, repeats))
    latest = latest_reference_ms if latest_reference_ms is not None else reference_ms()
    sides: dict[str, list[ProbeRun]] = {"A": [], "B": []}

    def one(side: str) -> None:
        nonlocal latest
        run = run_probe(base_iterations, slowdown if side == "B" else 0.0, rule)
        before, latest = latest, reference_ms()
        run.reference = {"before_ms": before, "after_ms": latest}
        sides[side].append(run)
        if echo:
            echo(f"      {side}: median {run.median_ms:.4g} ms over {len(run.timed_ms)} steps")

    for side in interleaved_sides(repeats):
        one(side)
    found = judge_pair(sides["A"], sides["B"], confidence=sequential.confidence)
    def undecided() -> bool:  # and could be decided: a tripped gate is not helped by more processes
        return found is not None and found.decidable and stats.verdict(found) == stats.INCONCLUSIVE

    while undecided() and len(sides["A"]) < sequential.cap:
        one("A")
        one("B")
        found = judge_pair(sides["A"], sides["B"], confidence=sequential.confidence)
    return PairOutcome(slowdown, sides["A"], sides["B"], found, stats.verdict(found)), latest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.studies.noise.worker", description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, required=True, help="turns of the loop per step")
    parser.add_argument("--rule", default=None, help="the sampling rule as JSON (default: the smoke profile's)")
    parser.add_argument("--warmup", type=int, default=1, help="warm-up steps after the first")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    rule = json.loads(args.rule) if args.rule else profile_rule()
    data = measure(args.iterations, rule, args.warmup)
    from bench.base.atomic import write_json_atomic

    write_json_atomic(args.out, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
