"""The grid's process inside one env: `python -m bench.studies.grid.worker serve --env E --exchange DIR --plan JSON`.

`serve` stays up for the whole grid run (the framework is imported once, not once per model: on the 2-core machine
five envs' imports took ~30 s per model) and answers one JSON command per stdin line with one `[grid-reply] {...}`
line on stdout (everything else it prints goes to the log):

    {"op": "export", "model": m, "size": s, "folder": f}   write the seeded PyTorch model's weights (native-torch)
    {"op": "load", "model": m, "columns": [c, ...], "folder": f}
                                                          build that model's columns of this env, releasing the
                                                          previous model's (and the framework's caches of it)
    {"op": "call", "column": c, "batch": b, "length": n}   one forward pass of that point, timed by the point's
                                                          StepTimer (the first call builds the point's forward)
    {"op": "result", "column": c, "batch": b, "length": n}  the point's Run (bench.record.results) as a dict
    {"op": "quit"}

Every window is opened and closed by bench.base.timing.StepTimer on the column's Device (bench/measure/frameworks.py):
this module reads no clock. A failed call (OOM included) is answered with its status and message, never a crash.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from bench.base.atomic import write_stream_atomic

REPLY = "[grid-reply] "


def reply(data: dict[str, Any]) -> None:
    sys.stdout.write(REPLY + json.dumps(data) + "\n")
    sys.stdout.flush()


def token_ids(vocab: int, batch: int, length: int, seed: int):
    """The point's input, the same on every framework: ids from 3 up (no pad/special ids: RoBERTa derives its
    positions from the pad id)."""
    import numpy as np

    return np.random.default_rng([seed, batch, length]).integers(3, vocab, (batch, length), dtype=np.int64)


class Worker:
    def __init__(
        self, model_name: str, env: str, columns: list[str], folder: Path, exchange: Path, plan: dict[str, int]
    ):
        from bench.base.timing import Stopwatch, WindowPlan
        from bench.measure import frameworks
        from bench.studies.grid.frameworks_grid import BUILDERS
        from bench.studies.grid.spec import COLUMNS, MODELS

        self.model = MODELS[model_name]
        self.columns = columns
        self.exchange = exchange
        self.plan = WindowPlan(plan["warmup"], plan["max_repeats"], plan["max_warmup"])
        family = {COLUMNS[c].family for c in columns}
        if len(family) != 1:
            raise ValueError(f"one worker serves one family, got {sorted(family)}")
        self.framework = COLUMNS[columns[0]].framework
        wall = Stopwatch()
        self.factories, self.facts = BUILDERS[family.pop()](self.model, folder, columns)
        self.setup_s = wall.seconds()
        self.device = frameworks.device_for(self.framework)
        self.vocab = json.loads((folder / "config.json").read_text())["vocab_size"]
        self.points: dict[tuple, dict[str, Any]] = {}

    def info(self) -> dict[str, Any]:
        from bench.base import provenance
        from bench.measure import frameworks

        facts = {k: v for k, v in self.facts.items() if k not in ("functions", "model")}
        facts["worker_pid"] = os.getpid()  # one process per env serves every model of a run
        return {
            "setup_s": self.setup_s,
            "facts": facts,
            "framework": frameworks.framework_info(self.framework),
            "process": provenance.process_provenance(),
        }

    def call(self, column: str, batch: int, length: int) -> dict[str, Any]:
        from bench.base.timing import StepTimer
        from bench.studies.grid.spec import SEED

        key = (column, batch, length)
        first = key not in self.points
        if first:
            ids = token_ids(self.vocab, batch, length, SEED)
            self.points[key] = {"forward": self.factories[column](ids), "timer": StepTimer(self.device, self.plan)}
            self._watch()
        point = self.points[key]
        timer = point["timer"]
        timer.begin()
        out = point["forward"](None)
        timer.end(out)
        answer = {
            "status": "ok",
            "window_ms": timer.windows_ms[-1],
            "steps_done": timer.steps_done,
            "warmup_run": timer.warmup_run,
            "done": timer.done,
        }
        if first:  # the output the orchestrator compares with the reference column's
            import numpy as np

            path = self.exchange / f"{column}__bs{batch}__len{length}.npy"
            value = np.asarray(out.detach() if hasattr(out, "detach") else out, dtype=np.float32)
            write_stream_atomic(path, lambda f: np.save(f, value))
            answer["output"] = str(path)
        self._watch()
        return answer

    def _watch(self) -> None:
        """TensorFlow's compile counter counts retraces of the tf.functions it watches."""
        if self.framework != "tensorflow":
            return
        for fn in (self.facts.get("functions") or {}).values():
            self.device.watch(fn)
        keras_model = self.facts.get("model")
        if keras_model is not None and getattr(keras_model, "predict_function", None) is not None:
            self.device.watch(keras_model.predict_function)

    def result(self, column: str, batch: int, length: int) -> dict[str, Any]:
        from bench.record.results import Run
        from bench.studies.grid.spec import COLUMNS

        timer = self.points[(column, batch, length)]["timer"]
        windows = timer.windows_ms
        warm = timer.warmup_run if timer.warmup_run is not None else len(windows) - 1
        timed = windows[1 + warm :]
        steadiness = (
            timer.steadiness(timed).to_dict()
            if timer.warmup_run is not None
            else {
                "steady": False,
                "reasons": ["warm-up had not ended (still compiling) when the point's repeats stopped"],
                "warmup_steps_run": warm,
                "compile_events_timed": 0,
                "outliers": [],
            }
        )
        info = self.info()
        run = Run(
            status="ok" if timed else "error",
            message=None if timed else "no timed repeat: every call after the first was warm-up",
            first_step_ms=windows[0],
            first_step_contains=COLUMNS[column].first_contains,
            warmup_ms=windows[1 : 1 + warm],
            timed_ms=timed,
            compile_events=list(timer.compile_events),
            steadiness=steadiness,
            setup_s=info["setup_s"],
            settings={
                "unit": "ms/forward",
                "driver": "grid round-robin",
                "column": column,
                "sequence_length": length,
                "batch_size": batch,
                "model": self.model.name,
                "inference": "no grad / inference mode, dropout 0",
                **{k: v for k, v in info["facts"].items()},
            },
            framework=info["framework"],
            process=info["process"],
        )
        del self.points[(column, batch, length)]  # frees the point's trace/compile
        return run.to_dict()


def serve(args) -> int:
    """Answer commands until quit or end of input. A failed command is answered with its status (oom, error; the
    traceback in the log) and the worker goes on: a model that cannot be built leaves the next one buildable."""
    from bench.base.failures import classify
    from bench.studies.grid.frameworks_grid import release_caches

    plan = json.loads(args.plan)
    worker: Worker | None = None
    for line in sys.stdin:
        command = json.loads(line)
        op = command.pop("op")
        if op == "quit":
            break
        try:
            if op == "export":
                reply(export(**command))
            elif op == "load":
                if worker is not None:
                    worker = None  # its points and factories hold the model and its compiled functions
                    release_caches()
                print(f"loading {command['model']}: {', '.join(command['columns'])}", flush=True)
                worker = Worker(
                    command["model"], args.env, command["columns"], Path(command["folder"]), Path(args.exchange), plan
                )
                reply({"status": "ok", **worker.info()})
            elif worker is None:
                raise RuntimeError(f"{op!r} before any model was loaded")
            else:
                reply(getattr(worker, op)(**command))
        except Exception as exc:  # the command's status (oom, error), with the traceback in the log
            traceback.print_exc()
            if worker is not None:
                worker.points.pop((command.get("column"), command.get("batch"), command.get("length")), None)
            what = "setting up" if op == "load" else "exporting the weights" if op == "export" else op
            reply({"status": classify(exc), "message": f"{what}: {type(exc).__name__}: {exc}"[:2000]})
    return 0


def export(model: str, size: str, folder: str) -> dict[str, Any]:
    from bench.studies.grid.frameworks_grid import export_weights
    from bench.studies.grid.spec import MODELS

    facts = export_weights(MODELS[model], size, Path(folder))
    return {"status": "ok", "parameters": facts["parameters"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.studies.grid.worker")
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve")
    for name in ("--env", "--exchange", "--plan"):
        s.add_argument(name, required=True)
    args = parser.parse_args(argv)
    from bench.base.provenance import gpus
    from bench.measure.env_process import die_with_parent, enter_env

    die_with_parent()
    enter_env(args.env, args.env == "jax", bool(gpus()))  # before any framework import
    return serve(args)


if __name__ == "__main__":
    sys.exit(main())
