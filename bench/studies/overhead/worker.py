"""The study's process inside one env: `python -m bench.studies.overhead.worker --env torch --size default --out DIR`.

It builds every (benchmark, column) of its env (bench/studies/overhead/models.py), then calls them round-robin, one call
of each in turn, each call in its own StepTimer window on the column's Device (bench/measure/frameworks.py): a Keras
column and its plain framework run in one process, interleaved, so the machine's drift touches both alike and
their ratio (the study's overhead) is the least disturbed figure. Each (benchmark, column) keeps its own timer:
its first call (compile) apart, warm-up extended while it still compiles, then its timed calls. It writes
<out>/runs.json (a bench.record.results Run dict per benchmark and column) and each first output as .npy for the
orchestrator's comparison. A column that fails is recorded with its status, and the others go on.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path

from bench.base.atomic import write_stream_atomic


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.studies.overhead.worker")
    parser.add_argument("--env", required=True)
    parser.add_argument("--size", required=True)
    parser.add_argument("--columns", required=True, help="comma list of this env's columns")
    parser.add_argument("--benchmarks", help="comma list: only these benchmarks (default: every one)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    from bench.base.provenance import gpus
    from bench.measure.env_process import die_with_parent, enter_env

    die_with_parent()
    enter_env(args.env, args.env == "jax", bool(gpus()))  # before any framework import
    benchmarks = args.benchmarks.split(",") if args.benchmarks else None
    runs = measure(args.env, args.size, args.columns.split(","), args.out, benchmarks)
    from bench.base.atomic import write_json_atomic

    write_json_atomic(args.out / "runs.json", runs)
    return 0


def measure(
    env: str, size_name: str, columns: list[str], out: Path, benchmarks: list[str] | None = None
) -> dict[str, dict]:
    import numpy as np

    from bench.base import provenance
    from bench.base.failures import classify
    from bench.base.timing import StepTimer, Stopwatch, WindowPlan
    from bench.measure import frameworks
    from bench.record.results import Run
    from bench.studies.overhead.models import callables, parameter_counts
    from bench.studies.overhead.spec import COLUMNS, get_size

    size = get_size(size_name)
    framework = COLUMNS[columns[0]].framework
    wall = Stopwatch()
    device = frameworks.device_for(framework)
    calls = {k: call for k, call in callables(env, size, columns).items() if not benchmarks or k[0] in benchmarks}
    setup_s = wall.seconds()
    plan = WindowPlan(size.warmup, size.timed, size.max_warmup)
    timers = {key: StepTimer(device, plan) for key in calls}
    failed: dict[tuple[str, str], Run] = {}
    out.mkdir(parents=True, exist_ok=True)
    while any(not t.done for k, t in timers.items() if k not in failed):
        for key, call in calls.items():
            timer = timers[key]
            if timer.done or key in failed:
                continue
            try:
                timer.begin()
                output = call()
                timer.end(output)
            except Exception as exc:  # the column's status; the others go on
                traceback.print_exc()
                failed[key] = Run(status=classify(exc), message=f"{type(exc).__name__}: {exc}"[:2000])
                continue
            if timer.steps_done == 1:  # the output the orchestrator compares with the reference column's
                value = output.detach().numpy() if hasattr(output, "detach") else np.asarray(output)
                write_stream_atomic(out / f"{key[0]}__{key[1]}.npy", lambda f, value=value: np.save(f, value))
            print(f"{key[0]} {key[1]}: call {timer.steps_done} {timer.windows_ms[-1]:.3f} ms", flush=True)
    info, process = frameworks.framework_info(framework), provenance.process_provenance()
    counts = parameter_counts(size)
    runs = {}
    for key, timer in timers.items():
        benchmark, column = key
        settings = {
            "unit": "ms/call",
            "driver": "overhead round-robin",
            "column": column,
            "size": size.name,
            "batch_size": size.batch,
            "parameters": counts["cnn" if benchmark.startswith("cnn") else "llm"],
            "weights": "seeded NumPy (bench/studies/overhead/models.py weights)",
            "sequence_length": size.sequence,
            "new_tokens": size.new_tokens if "generate" in benchmark else None,
            "dtype": "float32",
        }
        if key in failed:
            run = failed[key]
            run.settings, run.framework, run.process, run.setup_s = settings, info, process, setup_s
        else:
            split = timer.split()
            run = Run(
                status="ok",
                first_step_ms=split.first_ms,
                first_step_contains=COLUMNS[column].first_contains,
                warmup_ms=split.warmup_ms,
                timed_ms=split.timed_ms,
                compile_events=list(timer.compile_events),
                steadiness=timer.steadiness(split.timed_ms).to_dict(),
                setup_s=setup_s,
                settings=settings,
                framework=info,
                process=process,
            )
        run.wall_s = wall.seconds()
        runs[f"{benchmark}__{column}"] = run.to_dict()
    return runs


if __name__ == "__main__":
    sys.exit(main())
