"""The grid's worker processes (bench/studies/grid/worker.py), one per env, kept up across the run's points and models:
each a `python -m bench.studies.grid.worker serve` child in its own process group, its output teed to a log, its replies
read by a thread, and its death (OOM, crash, silence) turned into a status as the runner's cells' are."""
from __future__ import annotations

import json
import queue
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.base.failures import PeakMemory, oom_kill_count
from bench.catalogue.backends import cell_environment
from bench.run.cell_process import child_environment, how_it_died, kill_group, read_lines, start_in_own_group
from bench.run.env_lookup import env_python
from bench.studies.grid.spec import Grid, GridModel
from bench.studies.grid.worker import REPLY

SETUP_TIMEOUT_S = 900.0
# Several workers share the cores and take turns: OpenMP threads that spin-wait after their call (libgomp's
# default) would steal the next column's cores. Measured on the 2-core machine, tiny BERT on PyTorch took
# 230 ms per call beside idle spinning workers instead of a few ms. Recorded in every result's provenance.
WORKER_ENVIRONMENT = {"OMP_WAIT_POLICY": "PASSIVE"}
CALL_TIMEOUT_S = 900.0  # one call (the first compiles: torch.compile of XLM on 2 cores takes minutes)

class WorkerProcess:
    """One `python -m bench.studies.grid.worker serve` child in its env's process group; its lines teed to a log."""

    def __init__(self, env: str, argv: list[str], log_path: Path, git: dict, echo: Callable[[str], None]):
        self.env_name = env
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log = log_path.open("a")
        self.replies: queue.Queue = queue.Queue()
        self.tail: list[str] = []
        self.oom_before = oom_kill_count()
        variables = child_environment(cell_environment(env), git, **WORKER_ENVIRONMENT)
        self.proc = start_in_own_group(
            [env_python(env), "-m", "bench.studies.grid.worker", *argv], variables, stdin=subprocess.PIPE
        )
        self.reader = read_lines(self.proc.stdout, self._take, at_end=lambda: self.replies.put(None))  # None: it ended
        self.memory = PeakMemory(self.proc.pid).__enter__()  # what it held, should the machine kill it

    def _take(self, line: str) -> None:
        """One line of the worker's output: a reply to the queue, anything else to its log and tail."""
        if line.startswith(REPLY):
            self.replies.put(json.loads(line[len(REPLY) :]))
            return
        self.log.write(line)
        self.log.flush()
        self.tail = (self.tail + [line.rstrip()])[-30:]

    def send(self, command: dict[str, Any]) -> None:
        try:
            self.proc.stdin.write(json.dumps(command) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # it died; the reader's None says how

    def ask(self, command: dict[str, Any] | None, timeout_s: float) -> dict[str, Any]:
        """Send one command (None: only wait for the reply to one sent before) and wait for its answer; a dead or
        silent worker becomes a status (timeout, oom, killed, error) and is stopped."""
        if command is not None:
            self.send(command)
        try:
            answer = self.replies.get(timeout=timeout_s)
        except queue.Empty:
            self.stop()
            return {
                "status": "timeout",
                "message": f"no answer after {timeout_s:.0f} s; the {self.env_name} worker was killed",
            }
        if answer is None:
            self.proc.wait()
            status, how = how_it_died(
                self.proc.returncode, "\n".join(self.tail), self.tail, self.oom_before, self.memory.peak_gib
            )
            return {"status": status, "message": f"the {self.env_name} worker {how}"}
        return answer

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.alive:
            try:
                self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
            except (BrokenPipeError, OSError, subprocess.TimeoutExpired):
                pass
        kill_group(self.proc)  # as a cell's: SIGTERM the group, then SIGKILL what is left
        self.memory.__exit__()
        self.reader.join(timeout=10)
        self.log.close()


class Workers:
    """The run's worker processes, one per env, started on first use and again after one died (an OOM at a point)."""

    def __init__(self, grid: Grid, exchange: Path, logs: Path, git: dict, say: Callable[[str], None]):
        exchange.mkdir(parents=True, exist_ok=True)
        self.plan = json.dumps({"warmup": grid.warmup, "max_repeats": grid.max_repeats, "max_warmup": grid.max_warmup})
        self.exchange, self.logs, self.git, self.say = exchange, logs, git, say
        self.by_env: dict[str, WorkerProcess] = {}

    def get(self, env: str) -> WorkerProcess:
        worker = self.by_env.get(env)
        if worker is None or not worker.alive:
            if worker is not None:
                worker.stop()
            worker = WorkerProcess(
                env,
                ["serve", "--env", env, "--exchange", str(self.exchange), "--plan", self.plan],
                self.logs / f"{env}.log",
                self.git,
                self.say,
            )
            self.by_env[env] = worker
        return worker

    def load(self, model: GridModel, by_env: dict[str, list[str]], weights: Path) -> dict[str, dict[str, Any]]:
        """Build the model's columns in their envs' workers, all at once (their set-ups overlap); each env's answer."""
        for env, columns in by_env.items():
            self.get(env).send({"op": "load", "model": model.name, "columns": columns, "folder": str(weights)})
        setup = {}
        for env in by_env:
            setup[env] = self.by_env[env].ask(None, SETUP_TIMEOUT_S)
            facts = setup[env].get("facts", {})
            self.say(
                f"    {env}: {setup[env]['status']}"
                + (
                    f", {facts.get('parameters'):,} parameters, set up in {setup[env].get('setup_s')} s"
                    if setup[env]["status"] == "ok"
                    else f": {setup[env].get('message')}"
                )
            )
        return setup

    def stop(self) -> None:
        for worker in self.by_env.values():
            worker.stop()
