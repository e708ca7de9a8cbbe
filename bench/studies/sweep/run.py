"""The sweep's orchestrator: every version's env derived and built once (bench/studies/sweep/derive.py), then the
processes run round-robin: process r of every (part, version), then process r+1, the versions' order turned by one each
round, so the machine's drift touches every version alike. One result file per (key, version) under
<results>/sweep/<name>/<machine>/<backend>/<key>/<package>-<version>.json, its provenance naming the version, the
env's lock and the co-changes; a version with no env is a result of status `unsupported` with the resolver's reason.
"""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.base.errors import BenchError
from bench.base.provenance import git_info, machine_info, machine_slug, now_utc, study_provenance
from bench.base.runlock import holds_results_folder
from bench.catalogue.registry import Cell
from bench.envs.common import EnvError
from bench.judge import Judge
from bench.judge.replication import SequentialRule, undecided_sides
from bench.measure.drift import reference_ms
from bench.record.results import Result, Run
from bench.run.cell_process import child_environment
from bench.run.results_folder import check_writable
from bench.run.runner import record_noise
from bench.run.worker_process import run_logged
from bench.studies.sweep.derive import LOCKS_DIR, VENVS_DIR, Derivation, build, derive, slug
from bench.studies.sweep.targets import Target

STUDY_DIR = "sweep"
PROCESS_TIMEOUT_S = 1800.0


@dataclass
class Part:
    """One backend's share of a sweep: what its processes measure and how its versions' envs are derived."""

    target: Target
    drop: list[str] = field(default_factory=list)
    keep: list[str] = field(default_factory=list)
    base_dir: Path | None = None  # default: envs/<backend>


@dataclass
class Sweep:
    name: str
    package: str
    versions: list[str]
    parts: list[Part]
    processes: int = 3  # the processes every version starts with
    command: str = ""
    max_processes: int | None = None  # more, up to this, while a comparison it takes part in is undecided

    @property
    def rule(self) -> SequentialRule:
        """Processes until decided (bench/judge/replication.py): `processes` a version, one more a round for the
        versions of an undecided comparison with the version before or after, up to `max_processes` (default twice
        `processes`), each look judged at 1 - 5% / looks."""
        cap = self.max_processes if self.max_processes is not None else 2 * self.processes
        return SequentialRule(self.processes, max(cap, self.processes))


class SweepResult(Result):
    """A (key, version)'s result: a schema-2 Result filed under the sweep's folder."""

    def relative_path(self) -> Path:
        sweep = self.provenance["sweep"]
        return (
            Path(STUDY_DIR)
            / sweep["name"]
            / machine_slug(self.provenance.get("machine", {}))
            / sweep["backend"]
            / sweep["key"]
            / f"{slug(sweep['package'], sweep['version'])}.json"
        )


def prepare(
    sweep: Sweep, locks_dir: Path, venvs_dir: Path, say
) -> dict[tuple[int, str], tuple[Derivation, str | None]]:
    """Each (part, version)'s derivation and interpreter (None: no env, the derivation says why)."""
    envs = {}
    for index, part in enumerate(sweep.parts):
        for version in sweep.versions:
            derivation = derive(
                part.target.backend, sweep.package, version, part.base_dir, part.drop, part.keep, locks_dir, say
            )
            python = None
            if derivation.ok:
                try:
                    python = str(build(derivation, locks_dir, venvs_dir))
                except EnvError as e:
                    derivation = Derivation(
                        **{**asdict(derivation), "status": "na", "reason": f"env build failed: {e}"}
                    )
            say(f"{part.target.backend} {sweep.package}=={version}: {derivation.describe()}")
            envs[index, version] = (derivation, python)
    return envs


@holds_results_folder
def run_sweep(
    sweep: Sweep,
    results_dir: Path,
    locks_dir: Path = LOCKS_DIR,
    venvs_dir: Path = VENVS_DIR,
    timeout_s: float = PROCESS_TIMEOUT_S,
    say=print,
) -> list[SweepResult]:
    check_writable(results_dir)
    envs = prepare(sweep, locks_dir, venvs_dir, say)
    run = SweepRun(sweep, envs, results_dir, timeout_s, say)
    pairs = [(i, v) for i in range(len(sweep.parts)) for v in sweep.versions if envs[i, v][1]]
    if not pairs:  # a misspelt package, an index out of reach: an error, not a page of NA results
        reasons = "; ".join(f"{v}: {envs[i, v][0].reason}" for i in range(len(sweep.parts)) for v in sweep.versions)
        raise BenchError(f"no version of {sweep.package} could be resolved and built, so nothing was measured (is "
                         f"the package's name right, and its index reachable?): {reasons[:800]}")
    rule = sweep.rule
    say(f"processes: {rule.describe()}")
    stopped: KeyboardInterrupt | None = None
    open_pairs = list(pairs)
    try:
        repeat = 0
        while open_pairs:
            turn = repeat % len(open_pairs)
            for index, version in open_pairs[turn:] + open_pairs[:turn]:
                run.measure(index, version, repeat)
            repeat += 1
            if repeat >= rule.cap:
                break
            if repeat < rule.first:
                continue
            open_pairs = run.still_undecided(pairs)
    except KeyboardInterrupt as e:  # Ctrl-C or a signal: the processes finished so far are written, then it ends
        stopped = e
        say("stopped: writing the processes finished so far")
    written = run.write_all(stopped is not None)
    say(f"{len(written)} sweep results in {time.perf_counter() - run.started:.0f} s")
    if stopped:
        raise stopped
    return written


class SweepRun:
    """A sweep under way: each (part, version)'s processes in turn, a drift probe after each, and each (part,
    version, key)'s result made from the processes so far."""

    def __init__(self, sweep: Sweep, envs: dict[tuple[int, str], tuple[Derivation, str | None]], results_dir: Path,
                 timeout_s: float, say) -> None:  # fmt: skip
        self.sweep, self.envs, self.results_dir, self.timeout_s, self.say = sweep, envs, results_dir, timeout_s, say
        self.git, self.machine, self.run_id = git_info(), machine_info(), uuid.uuid4().hex
        self.probe = {"start_ms": reference_ms()}
        self.readings = [self.probe["start_ms"]]
        self.runs: dict[tuple[int, str, str], list[Run]] = {}
        self.started = time.perf_counter()

    def result_of(self, index: int, version: str, key: str) -> SweepResult:
        sweep = self.sweep
        part, (derivation, _) = sweep.parts[index], self.envs[index, version]
        found = self.runs.get((index, version, key)) or [Run(status="unsupported", message=derivation.reason)]
        record_noise(found, self.readings)
        return SweepResult(
            cell=part.target.result_cell(key),
            runs=found,
            unit=part.target.unit(key),
            provenance={
                **study_provenance(self.git, self.machine, sweep.command, f"release sweep {sweep.name}", {},
                                   self.probe),
                "run_id": self.run_id,
                "repeats_planned": sweep.processes,
                "replication": sweep.rule.to_dict(),
                "sweep": {
                    "name": sweep.name,
                    "package": sweep.package,
                    "version": version,
                    "versions": sweep.versions,
                    "backend": part.target.backend,
                    "key": key,
                    "derivation": asdict(derivation),
                },
            },
            created_at=now_utc(),
        )

    def measure(self, index: int, version: str, repeat: int) -> None:
        """One process of a (part, version): each of its keys' runs, with the drift probe around it."""
        sweep, rule, say = self.sweep, self.sweep.rule, self.say
        part, python = sweep.parts[index], self.envs[index, version][1]
        label = f"{part.target.backend} {sweep.package}=={version}"
        count = f"{repeat + 1}/{rule.first}" if repeat < rule.first else f"{repeat + 1} of up to {rule.cap}"
        say(f"[{count}] {label} (elapsed {time.perf_counter() - self.started:.0f} s)")
        log = (
            self.results_dir
            / "logs"
            / STUDY_DIR
            / sweep.name
            / f"{part.target.backend}__{slug(sweep.package, version)}__{repeat}.log"
        )
        with tempfile.TemporaryDirectory(prefix="sweep-") as scratch:
            out = Path(scratch)
            env = child_environment(part.target.environment(), self.git, BENCH_ORCHESTRATOR_PID=str(os.getpid()))
            failed = run_logged(part.target.command(python, out), env, log, self.timeout_s)
            got = {} if failed else part.target.read(out)
        before = self.readings[-1]
        self.readings.append(reference_ms())
        load = round(os.getloadavg()[0], 2)
        for key in part.target.keys():
            run = got.get(key) or Run(
                status=failed[0] if failed else "error",
                message=failed[1] if failed else f"the process wrote no run for {key}",
            )
            run.reference = {"before_ms": before, "after_ms": self.readings[-1]}
            run.settings = {**run.settings, "load_average_1m": load, "log": str(log.relative_to(self.results_dir))}
            self.runs.setdefault((index, version, key), []).append(run)
            say(
                f"    {key}: {run.status}"
                + (
                    f" median {sorted(run.timed_ms)[len(run.timed_ms) // 2]:.4g} ms"
                    if run.timed_ms
                    else f": {run.message}"
                )
            )

    def still_undecided(self, pairs: list[tuple[int, str]]) -> list[tuple[int, str]]:
        """A look: the versions of each comparison still undecided, that the cap could still decide, go on."""
        sweep = self.sweep
        provisional = [self.result_of(i, v, key) for i, v in pairs for key in sweep.parts[i].target.keys()]
        wanted = undecided_versions(provisional, sweep.rule, self.results_dir)
        open_pairs = [(i, v) for i, v in pairs if (sweep.parts[i].target.backend, v) in wanted]
        for i, v in open_pairs:
            self.say(f"    {sweep.parts[i].target.backend} {sweep.package}=={v}: one more process, for "
                     f"{wanted[sweep.parts[i].target.backend, v]} (undecided)")
        return open_pairs

    def write_all(self, stopped: bool) -> list[SweepResult]:
        """Every (part, version, key)'s result written; after a stop, only those a process reached."""
        written = []
        self.probe["at_write_ms"] = reference_ms()
        for index, part in enumerate(self.sweep.parts):
            for version in self.sweep.versions:
                for key in part.target.keys():
                    if stopped and (index, version, key) not in self.runs:
                        continue  # never reached: nothing measured, nothing to say about it
                    result = self.result_of(index, version, key)
                    path = result.write(self.results_dir)
                    written.append(result)
                    self.say(
                        f"  {part.target.backend} {key} {self.sweep.package}=={version}: {result.describe()}  "
                        f"[{path.relative_to(self.results_dir)}]"
                    )
        return written


def undecided_versions(
    results: list[SweepResult], rule: SequentialRule, results_dir: Path
) -> dict[tuple[str, str], str]:
    """(backend, version) -> the comparison it takes part in that one more process could help decide: each key's
    versions in the sweep's order, every ok version against the ok one before it (as SWEEP.md judges them)."""
    judge = Judge(results, results_dir)
    by_key: dict[tuple[str, str], list[SweepResult]] = {}
    for result in results:
        sweep = result.provenance["sweep"]
        if result.status == "ok":
            by_key.setdefault((sweep.get("backend", ""), sweep["key"]), []).append(result)
    wanted: dict[tuple[str, str], str] = {}
    for (backend, key), ok in by_key.items():
        for a, b in zip(ok, ok[1:]):
            va, vb = a.provenance["sweep"]["version"], b.provenance["sweep"]["version"]
            for result in undecided_sides(judge, a, b, rule):
                wanted.setdefault((backend, result.provenance["sweep"]["version"]), f"{key}: {va} vs {vb}")
    return wanted


def result_cell_of(target: Target, key: str) -> Cell:
    return target.result_cell(key)
