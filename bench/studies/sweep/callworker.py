"""A sweep's smallest target, inside a version's env: `python -m bench.studies.sweep.callworker --call module:function`.

It times one call of a package's function per window (the suite's StepTimer on the host: plain Python work is
synchronous), the first call apart, and writes <out>/runs.json: {"<function>": a bench.record.results Run dict}. An
asv-style micro-benchmark of one function across releases; the tests sweep a planted package with it.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from pathlib import Path


def measure(target: str, warmup: int, timed: int) -> dict[str, dict]:
    from bench.base import provenance
    from bench.base.failures import classify
    from bench.base.timing import HostDevice, StepTimer, Stopwatch, WindowPlan
    from bench.record.results import Run

    wall = Stopwatch()
    name = target.split(":")[1]
    settings = {"unit": "ms/call", "driver": "sweep call", "call": target}
    try:
        module, _, attribute = target.partition(":")
        function = getattr(importlib.import_module(module), attribute)
        timer = StepTimer(HostDevice(), WindowPlan(warmup, timed, warmup))
        while not timer.done:
            timer.begin()
            timer.end(function())
    except Exception as exc:  # the target's status, as a cell's
        traceback.print_exc()
        run = Run(status=classify(exc), message=f"{type(exc).__name__}: {exc}"[:2000], settings=settings)
    else:
        split = timer.split()
        run = Run(
            status="ok",
            first_step_ms=split.first_ms,
            first_step_contains="the first call",
            warmup_ms=split.warmup_ms,
            timed_ms=split.timed_ms,
            steadiness=timer.steadiness(split.timed_ms).to_dict(),
            settings=settings,
        )
    run.process, run.wall_s = provenance.process_provenance(), wall.seconds()
    return {name: run.to_dict()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.studies.sweep.callworker")
    parser.add_argument("--call", required=True, help="module:function, called with no argument")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--timed", type=int, default=20)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    from bench.base.atomic import write_json_atomic
    from bench.catalogue import offline
    from bench.measure.env_process import die_with_parent

    die_with_parent()
    offline.install_guard()
    write_json_atomic(args.out / "runs.json", measure(args.call, args.warmup, args.timed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
