"""`make noise` (`python -m bench noise`): how small a difference this machine can show.

Four measurements, saved as one file per processor (<results>/noise/<machine>--<fingerprint>.json, format
"noise-1", bench/judge/noise_file.py reads it) and rendered as <results>/noise/NOISE.md (bench/studies/noise/page.py):

1. A/A on product cells. Per round and cell, `repeats` processes into side A and as many into side B, interleaved
   A-B-B-A-A-B, each run as the orchestrator runs a cell process (bench/run/runner.py prepare / Prepared.attempt, the
   drift probe between processes, the result written as a run writes it), so that each side is an ordinary results
   folder (<results>/noise/runs/<UTC stamp>/round-<k>/{A,B}/, which `make compare A=... B=...` reads by hand too).
   The verdicts are `make compare`'s (bench/report/compare.py verdicts); identical code called faster or slower is a
   false positive.
2. The process-to-process spread: per cell, the standard deviation of ln(a process's median) over its identical
   processes, pooled over rounds (each round its own mean). The file's `process_spread` is the largest cell's, which
   a cell of one process borrows for its interval (bench/judge/__init__.py).
3. Power: the calibration probe (bench/studies/noise/worker.py), a pure-Python loop slowed by a known share, against the
   base, `pairs` times per slowdown, judged by bench/base/stats.py; the minimum detectable effect is the smallest
   slowdown called slower in at least 7 of 8 pairs. Per product cell, the analytic 80%-power MDE from its spread.
4. Whether the machine was quiet: the 1-minute load average and the drift probe at the start and the end, and the
   CPU time other processes took while the study ran.

Ctrl-C (or SIGTERM) keeps what is finished: every side written so far stays, and the study's figures so far are
written to its runs folder (not as the machine's study).
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.base import stats
from bench.base.atomic import write_json_atomic
from bench.base.errors import BenchError
from bench.base.progress import hms
from bench.base.provenance import git_info, machine_info, now_utc
from bench.base.resultsdir import results_folder
from bench.catalogue.profiles import get_profile
from bench.catalogue.registry import Cell
from bench.judge.noise_file import NOISE_DIR, NOISE_FORMAT
from bench.judge.replication import SequentialRule
from bench.measure.drift import reference_ms
from bench.record.results import Result, Run
from bench.studies.noise import detection, interleaved_sides
from bench.studies.noise import worker as calibration
from bench.studies.noise.conditions import Snapshot, conditions
from bench.studies.noise.figures import (
    MDE_POWER,
    aa_summary,
    analytic_mde,
    calibration_mde,
    pooled_spread,
    verdict_counts,
)
from bench.studies.noise.spec import (
    AA,
    DEFAULT_PAIRS,
    DEFAULT_PROFILE,
    DEFAULT_ROUNDS,
    DEFAULT_SLOWDOWNS,
    DELAY,
    PARTS,
    PROBE,
    choose_cells,
    default_repeats,
    parse_slowdowns,
)
from bench.studies.noise.study_file import summary_line, write_study

PROFILE_CHOICE = "explicit (make noise)"
RUNS = "runs"
PAGE = "NOISE.md"


def say(line: str) -> None:
    print(line, flush=True)


# -- the study


@dataclass
class CellRecord:
    """One product cell's processes and verdicts over the rounds."""

    cell: Cell
    medians: list[dict[str, list[float]]] = field(default_factory=list)  # per round: side -> each ok process's median
    verdicts: list[dict[str, Any]] = field(default_factory=list)  # per round: compare's pair (verdict, ratio, ...)
    # per round: side -> the drift probe's readings beside each ok process (its mean of before and after)
    references: list[dict[str, list[float]]] = field(default_factory=list)

    def spread(self) -> tuple[float, int] | None:
        return pooled_spread([m["A"] + m["B"] for m in self.medians])

    def to_dict(self, repeats: int) -> dict[str, Any]:
        spread = self.spread()
        c = self.cell
        return {
            "key": c.key,
            "cell": f"{c.backend} {c.model} {c.task} batch={c.batch_size} {c.variant}",
            "processes": sum(len(m["A"]) + len(m["B"]) for m in self.medians),
            "rounds": [
                {"round": k, "medians_ms": m, **({"reference_ms": self.references[k - 1]}
                                                  if k <= len(self.references) else {}),
                 **{n: v for n, v in verdict.items() if n != "key"}}
                for k, (m, verdict) in enumerate(zip(self.medians, self.verdicts), 1)
            ],
            "log_sd": spread[0] if spread else None,
            "dof": spread[1] if spread else None,
            "verdicts": verdict_counts([v.get("verdict") for v in self.verdicts]),
            "mde": analytic_mde(spread[0], repeats) if spread else None,
        }


def pair_of(cell: Cell, pairs: list[dict[str, Any]]) -> dict[str, Any] | None:
    for pair in pairs:
        key = pair.get("key") or {}
        if (key.get("backend"), key.get("model"), key.get("task"), key.get("batch"), key.get("variant"),
                key.get("profile"), key.get("stack", cell.stack)) == (
                cell.backend, cell.model, cell.task, cell.batch_size, cell.variant, cell.profile, cell.stack):
            return pair
    return None


def pair_line(pair: dict[str, Any]) -> str:
    ratio = f" {pair['ratio']:.3g}× ({pair['low']:.3g}–{pair['high']:.3g})" if pair.get("low") else ""
    why = f": {pair['reason']}" if pair.get("reason") else ""
    return f"{pair.get('verdict') or 'not compared'}{ratio}{why}"


def compare_verdicts(a_dir: Path, b_dir: Path) -> list[dict[str, Any]]:
    """`make compare`'s verdict for every cell of both folders (bench/report/compare.py)."""
    from bench.report.compare import verdicts

    return verdicts(a_dir, b_dir)


class Study:
    def __init__(
        self,
        cells: list[Cell],
        results_dir: Path,
        rounds: int = DEFAULT_ROUNDS,
        repeats: int | None = None,
        pairs: int = DEFAULT_PAIRS,
        slowdowns: list[float] | tuple[float, ...] = DEFAULT_SLOWDOWNS,
        timeout_s: float | None = None,
        echo: Callable[[str], None] = say,
        probe_rule: dict[str, Any] | None = None,
        busy_processes: int = 0,
        delays: list[float] | tuple[float, ...] = (),
        delay_cells: list[Cell] | None = None,
        parts: tuple[str, ...] | None = None,
        max_processes: int | None = None,
    ):
        if not cells:
            raise BenchError("the noise study needs at least one cell")
        profiles = {c.profile for c in cells}
        if len(profiles) != 1:
            raise BenchError(f"the noise study's cells must share one profile, got {', '.join(sorted(profiles))}")
        self.profile = profiles.pop()
        self.repeats = repeats or default_repeats(self.profile)
        if self.repeats < 2:
            raise BenchError(f"the noise study needs at least 2 processes a side (repeats), got {self.repeats}")
        cap = max_processes if max_processes is not None else max(get_profile(self.profile).max_repeats, self.repeats)
        if cap < self.repeats:
            raise BenchError(f"--max-processes {cap} is below the {self.repeats} processes a side starts with")
        # the rule make bench-all replicates by: what a comparison here decides is what the product's decides
        self.rule = SequentialRule(self.repeats, cap)
        parts = parts or tuple(p for p in PARTS if p != DELAY or delays)
        unknown = set(parts) - set(PARTS)
        if unknown or not parts:
            raise BenchError(f"the study's parts are {', '.join(PARTS)}, got {', '.join(parts) or 'none'}")
        if DELAY in parts and not delays:
            raise BenchError("the delay part needs one or more delays (--delays 0.2: each step +20%)")
        if rounds < 1 or pairs < 1:
            raise BenchError(f"rounds and pairs must be at least 1, got {rounds} and {pairs}")
        if busy_processes < 0:
            raise BenchError(f"busy processes must be 0 or more, got {busy_processes}")
        self.busy_processes = busy_processes
        self.parts = tuple(p for p in PARTS if p in parts)
        self.delays = sorted(set(delays)) if DELAY in self.parts else []
        self.delay_cells = delay_cells or cells
        self.detection = {
            share: {c.key: detection.DelayRecord(c, share) for c in self.delay_cells} for share in self.delays
        }
        self.cells, self.rounds, self.pairs = cells, rounds, pairs
        self.slowdowns = sorted(set(slowdowns))
        self.results_dir, self.timeout_s, self.echo = Path(results_dir), timeout_s, echo
        self.probe_rule = probe_rule or calibration.profile_rule(self.profile)
        self.records = {c.key: CellRecord(c) for c in cells}
        self.power: dict[float, list[calibration.PairOutcome]] = {s: [] for s in self.slowdowns}
        # the same pairs again while `busy_processes` loops spin on the cores: what the verdict says under load
        self.power_loaded: dict[float, list[calibration.PairOutcome]] = {s: [] for s in self.slowdowns}
        self.loaded_conditions: dict[str, Any] | None = None
        self.base_iterations: int | None = None
        self.last_references: dict[str, list[float]] = {}  # the last run_sides' probe readings per side
        self.readings: list[float] = []
        self.run_id = uuid.uuid4().hex
        self.started = time.perf_counter()
        self.created_at = now_utc()
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        self.runs_dir = self.claim_runs_dir(self.results_dir / NOISE_DIR / RUNS, stamp)

    @staticmethod
    def claim_runs_dir(parent: Path, stamp: str) -> Path:
        parent.mkdir(parents=True, exist_ok=True)
        for n in range(1000):
            path = parent / (stamp if n == 0 else f"{stamp}-{n}")
            try:
                path.mkdir()
                return path
            except FileExistsError:
                continue
        raise BenchError(f"no free folder name for this study under {parent}")

    def elapsed(self) -> str:
        return hms(time.perf_counter() - self.started)

    def aa_verdicts(self) -> list[str | None]:
        return [v.get("verdict") for r in self.records.values() for v in r.verdicts]

    def aa_so_far(self) -> str:
        counts = aa_summary(self.aa_verdicts())
        parts = [f"{n} {v}" for v, n in counts.items() if v not in ("pairs", "false_positive_rate") and n]
        return f"A/A so far: {', '.join(parts) or 'none'} of {counts['pairs']} pairs"

    # -- 1. A/A on product cells

    def run_aa(self) -> None:
        from bench.base.runlock import release as release_results_folder
        from bench.run.runner import prepare

        for k in range(1, self.rounds + 1):
            sides = {s: self.runs_dir / f"round-{k}" / s for s in ("A", "B")}
            for folder in sides.values():
                folder.mkdir(parents=True, exist_ok=True)
            prepared = {s: prepare(self.cells, folder, self.repeats) for s, folder in sides.items()}
            for p in prepared.values():  # one invocation, its processes interleaved: one run, as the Judge reads it
                p.run_id = self.run_id
            try:
                for number, cell in enumerate(self.cells, 1):
                    self.run_cell(cell, k, number, sides, prepared)
            finally:
                for folder in sides.values():
                    release_results_folder(folder)
                for p in prepared.values():
                    p.caches.close()

    def run_cell(self, cell: Cell, k: int, number: int, sides: dict[str, Path], prepared: dict) -> None:
        pair, medians = self.run_sides(cell, f"round {k}/{self.rounds}", (number, len(self.cells)), sides, prepared,
                                       {"round": k})
        record = self.records[cell.key]
        record.medians.append(medians)
        record.verdicts.append(pair)
        record.references.append(self.last_references)
        self.echo(f"    -> {pair_line(pair)}; {self.aa_so_far()}")

    def run_sides(
        self,
        cell: Cell,
        label: str,
        place: tuple[int, int],
        sides: dict[str, Path],
        prepared: dict,
        provenance: dict[str, Any],
        environment: dict[str, dict[str, str]] | None = None,
    ) -> tuple[dict[str, Any], dict[str, list[float]]]:
        """`repeats` processes of `cell` into each side's folder, interleaved A-B-B-A-A-B, the drift probe read
        between processes, each side written as a run writes it (`environment`: a side's added variables); returns
        `make compare`'s pair for the cell and each side's ok processes' medians. Under a sequential rule, one more
        process a side after each look while the pair is undecided and its cap could decide it, or while a side's
        disturbed processes leave it fewer than the first count undisturbed, as `make bench-all` replicates."""
        from bench.run.results_folder import write_or_show
        from bench.run.runner import record_noise

        runs: dict[str, list[Run]] = {"A": [], "B": []}
        latest = self.readings[-1] if self.readings else reference_ms()
        environment = environment or {}
        number, of = place

        replication = {"replication": self.rule.to_dict()} if self.rule.sequential else {}

        def results() -> dict[str, Result]:
            """Each side's result so far, judged in memory after each look and written once (a result written at
            every look would leave each earlier one in history/)."""
            found = {}
            for side, side_runs in runs.items():
                if not side_runs:
                    continue
                record_noise(side_runs, self.readings)  # the noise gates, as the runner judges them as it writes
                found[side] = prepared[side].result(
                    cell, side_runs, PROFILE_CHOICE, self.repeats,
                    reference={"start_ms": self.readings[0], "at_write_ms": latest},
                    noise_study={"runs": self.runs_dir.name, **provenance, "side": side}, **replication,
                )
            return found

        def write_sides() -> None:
            for side, result in results().items():
                write_or_show(result, sides[side], self.echo, kept=number - 1, of=of)

        def one(side: str) -> bool:
            """One process of `side`; False where it failed (the pair stops there)."""
            nonlocal latest
            process = len(runs[side])
            count = f"/{self.repeats}" if process < self.repeats else f" (up to {self.rule.cap}, while undecided)"
            where = f"{label} · cell {number}/{of} · {side} {process + 1}{count}"
            what = f"{cell.backend} {cell.model} {cell.task} batch={cell.batch_size} {cell.variant} ({cell.profile}"
            self.echo(f"[{where}] {what}; elapsed {self.elapsed()})")
            not_run = prepared[side].not_run(cell)
            run = not_run or prepared[side].attempt(
                cell, process, sides[side], self.timeout_s, lambda line: self.echo("    " + line),
                env=environment.get(side),
            )
            runs[side].append(run)
            if not_run is None:  # a process ran: probe the drift, as the runner does
                before, latest = latest, reference_ms()
                self.readings.append(latest)
                run.reference = {"before_ms": before, "after_ms": latest}
            if run.status != "ok":
                self.echo(f"    {run.status}: {run.message}: this cell's {label} stops here")
                return False
            return True

        try:
            ok = all(one(side) for side in interleaved_sides(self.repeats))
            looks = 0
            while ok and (wanted := self.wanting(results(), runs)):
                looks += 1
                ok = all(one(side) for side in (wanted if looks % 2 else wanted[::-1]))
        except KeyboardInterrupt:
            write_sides()  # the finished processes are kept, as a run keeps them
            raise
        write_sides()
        medians = {s: detection.ok_medians(side_runs) for s, side_runs in runs.items()}
        # the probe beside each ok process, for the study's drift-probe tracking (bench/judge/across_runs.py)
        self.last_references = {s: [statistics.fmean(r.reference.values()) for r in side_runs
                                    if r.status == "ok" and r.timed_ms and r.reference]
                                for s, side_runs in runs.items()}
        pair = pair_of(cell, compare_verdicts(sides["A"], sides["B"])) or {"verdict": None, "reason": "no pair"}
        return pair, medians

    def wanting(self, written: dict[str, Result], runs: dict[str, list[Run]]) -> list[str]:
        """The sides that get one more process after a look (bench/judge/replication.py undecided_sides, runner
        to_replace): none under a fixed rule or where a side has no result."""
        from bench.judge import Judge
        from bench.judge.replication import undecided_sides
        from bench.run.runner import to_replace

        if not self.rule.sequential or set(written) != {"A", "B"}:
            return []
        a, b = written["A"], written["B"]
        more = {id(r) for r in undecided_sides(Judge([a, b], self.results_dir), a, b, self.rule)}
        return [s for s in ("A", "B") if id(written[s]) in more or to_replace(runs[s], self.rule, self.readings)]

    # -- 3b. power on product cells: a real per-step delay on side B (bench/studies/noise/detection.py)

    def run_detection(self) -> None:
        from bench.base.runlock import release as release_results_folder
        from bench.run.runner import prepare

        if not self.delays:
            return
        self.echo(
            f"[delay] {len(self.delay_cells)} cells, each step of side B held "
            f"{', '.join(f'+{s:.0%}' for s in self.delays)} (tests/fixtures/step_delay), {self.pairs} pairs of "
            f"{self.repeats} + {self.repeats} processes, each pair its own run (elapsed {self.elapsed()})"
        )
        for k in range(1, self.pairs + 1):  # pair k of every delay, then pair k + 1: each spread over the study
            for share in self.delays:
                sides = {s: self.runs_dir / f"delay-{share:g}" / f"pair-{k}" / s for s in ("A", "B")}
                for folder in sides.values():
                    folder.mkdir(parents=True, exist_ok=True)
                prepared = {s: prepare(self.delay_cells, folder, self.repeats) for s, folder in sides.items()}
                prepared["B"].run_id = prepared["A"].run_id  # one invocation: its processes interleaved
                environment = {"B": detection.delay_environment(share)}
                try:
                    for number, cell in enumerate(self.delay_cells, 1):
                        label = f"delay +{share:.0%} · pair {k}/{self.pairs}"
                        place = (number, len(self.delay_cells))
                        pair, medians = self.run_sides(cell, label, place, sides, prepared,
                                                       {"delay": share, "pair": k}, environment)
                        record = self.detection[share][cell.key]
                        record.within.append(pair)
                        record.medians.append(medians)
                        record.folders.append({s: str(f.relative_to(self.runs_dir)) for s, f in sides.items()})
                        self.echo(f"    -> {pair_line(pair)}")
                finally:
                    for folder in sides.values():
                        release_results_folder(folder)
                    for side in prepared.values():
                        side.caches.close()

    def detection_summary(self) -> list[dict[str, Any]]:
        return [record.to_dict() for by_cell in self.detection.values() for record in by_cell.values()]

    # -- 3. power on the calibration probe

    def run_power(self) -> None:
        self.base_iterations = calibration.calibrate()
        self.echo(
            f"[power] calibration probe: {self.base_iterations} turns of a pure-Python loop per step (about "
            f"{calibration.TARGET_STEP_MS:g} ms); slowdowns {', '.join(f'+{s:.0%}' for s in self.slowdowns)}, "
            f"{self.pairs} pairs each, {self.repeats} processes a side (elapsed {self.elapsed()})"
        )
        self.power_pairs(self.power, "power", self.readings)

    def power_pairs(self, store: dict[float, list[calibration.PairOutcome]], label: str, readings: list[float]) -> None:
        latest = readings[-1] if readings else None
        for p in range(1, self.pairs + 1):  # pair p of every slowdown, then pair p + 1: each spread over the study
            for slowdown in self.slowdowns:
                self.echo(f"[{label} +{slowdown:.0%} · pair {p}/{self.pairs}] base vs +{slowdown:.0%} "
                          f"(elapsed {self.elapsed()})")
                outcome, latest = calibration.probe_pair(
                    self.base_iterations, slowdown, self.repeats, self.probe_rule, latest_reference_ms=latest,
                    cap=self.rule.cap,
                )
                readings += [run.reference["after_ms"] for run in (*outcome.a, *outcome.b)]
                store[slowdown].append(outcome)
                counts = verdict_counts([o.verdict for o in store[slowdown]])
                so_far = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
                interval = outcome.ratio.interval() if outcome.ratio else None
                ratio = (f" {stats.fmt_ratio(outcome.ratio)}" if interval else "")
                why = f": {outcome.reason}" if outcome.verdict == stats.INCONCLUSIVE and outcome.reason else ""
                self.echo(f"    -> {outcome.verdict}{ratio}{why}; +{slowdown:.0%} so far: {so_far}")

    def run_power_under_load(self) -> None:
        """The power pairs again while `busy_processes` pure-Python loops spin (one per core makes the machine
        loaded the way a shared CI host is): slower or inconclusive is right, same or faster wrong."""
        if not self.busy_processes:
            return
        self.echo(f"[power under load] {self.busy_processes} busy loops spinning beside the probe "
                  f"(elapsed {self.elapsed()})")
        busy = [
            subprocess.Popen([sys.executable, "-c", "while True: pass"], stdout=subprocess.DEVNULL)
            for _ in range(self.busy_processes)
        ]
        readings: list[float] = []
        try:
            time.sleep(5)  # the load average and the cores' caches feel them before the first pair
            start = Snapshot.take()
            readings.append(start.reference_ms)
            self.power_pairs(self.power_loaded, "power under load", readings)
            end = Snapshot.take()
        finally:
            for process in busy:
                process.kill()
                process.wait()
        self.loaded_conditions = {
            "busy_processes": self.busy_processes,
            "load_1m_start": start.load_1m,
            "load_1m_end": end.load_1m,
            "reference_ms": {"min": min(readings), "max": max(readings)},
        }

    def power_summary(self, store: dict[float, list[calibration.PairOutcome]] | None = None) -> list[dict[str, Any]]:
        store = self.power if store is None else store
        out = []
        for slowdown in self.slowdowns:
            outcomes = store[slowdown]
            if not outcomes:
                continue
            counts = verdict_counts([o.verdict for o in outcomes])
            wrong = (counts[stats.FASTER] + counts[stats.SLOWER]) if slowdown == 0 else (
                counts[stats.FASTER] + counts[stats.SAME])
            out.append({"slowdown": slowdown, "pairs": len(outcomes), **counts, "wrong": wrong,
                        "outcomes": [o.to_dict() for o in outcomes]})
        return out

    # -- the file

    def spread_summary(self) -> dict[str, Any] | None:
        spreads = {key: s for key, r in self.records.items() if (s := r.spread())}
        if not spreads:
            return None
        widest = max(spreads, key=lambda key: spreads[key][0])
        log_sd, dof = spreads[widest]
        groups = [m["A"] + m["B"] for r in self.records.values() for m in r.medians]
        pooled = pooled_spread(groups)
        return {
            "log_sd": log_sd,
            "dof": dof,
            "cell": widest,
            "how": (
                "the largest per-cell standard deviation of ln(a process's median) over identical processes (both "
                "sides of every round, each round about its own mean; dof = processes - rounds), so that a cell of "
                "one process that borrows it is not made surer than the noisiest cell here"
            ),
            "pooled_log_sd": pooled[0] if pooled else None,
            "pooled_dof": pooled[1] if pooled else None,
        }

    def derived_figures(self) -> dict[str, Any]:
        """Figures derived over the study's runs: whether the drift probe's level tracks the cells' (Pearson's r and
        its test, bench/judge/across_runs.py), which decides whether a comparison across runs is also shown
        corrected by the probe."""
        from bench.judge.across_runs import probe_tracking, run_points

        cells = [r.to_dict(self.repeats) for r in self.records.values()]
        tracking = probe_tracking(run_points({"cells": cells}))
        return {"probe_tracking": tracking.to_dict() if tracking else None}

    def to_dict(self, start: Snapshot, end: Snapshot, complete: bool) -> dict[str, Any]:
        machine = machine_info()
        power = self.power_summary()
        return {
            "format": NOISE_FORMAT,
            "complete": complete,
            "machine": machine,
            "processor": machine.get("processor"),
            "provenance": {"git": git_info()},  # the code that measured, named as a result file names it
            "created_at": self.created_at,
            "finished_at": now_utc(),
            "command": sys.argv,
            "settings": {
                "profile": self.profile,
                "cells": [c.key for c in self.cells],
                "rounds": self.rounds,
                "repeats": self.repeats,
                "order": "".join(interleaved_sides(self.repeats)),
                "replication": self.rule.to_dict(),
                "pairs": self.pairs,
                "slowdowns": self.slowdowns,
                "delays": self.delays,
                "delay_cells": [c.key for c in self.delay_cells] if self.delays else [],
                "sampling": calibration.profile_rule(self.profile),
                "probe": {
                    "base_iterations": self.base_iterations,
                    "target_step_ms": calibration.TARGET_STEP_MS,
                    "sampling": self.probe_rule,
                },
                "equivalence_band": stats.EQUIVALENCE_BAND,
                "confidence": stats.CONFIDENCE,
            },
            "runs_dir": str(self.runs_dir.relative_to(self.results_dir)),
            "conditions": conditions(start, end, self.readings),
            "cells": [r.to_dict(self.repeats) for r in self.records.values()],
            "process_spread": self.spread_summary(),
            "derived": self.derived_figures(),
            "parts": list(self.parts),
            "aa": aa_summary(self.aa_verdicts()),
            "detection": self.detection_summary() if self.delays else None,
            "power": power,
            "power_under_load": (
                {**self.loaded_conditions, "power": self.power_summary(self.power_loaded)}
                if self.loaded_conditions else None
            ),
            "mde": {
                "calibration": calibration_mde(power, self.pairs),
                "per_cell": {
                    key: {"mde": d["mde"], "log_sd": d["log_sd"], "dof": d["dof"], "repeats": self.repeats,
                          "power": MDE_POWER}
                    for key, r in self.records.items()
                    if (d := r.to_dict(self.repeats))["mde"] is not None
                },
                "per_cell_how": (
                    f"exp((t(0.975, dof) + t({MDE_POWER:.2f}, dof)) * s * sqrt(2 / repeats)) - 1, "
                    f"dof = 2 * repeats - 2, s the cell's spread: the slowdown a comparison at {self.repeats} "
                    f"processes a side detects with {MDE_POWER:.0%} power"
                ),
            },
        }

    def plan_text(self) -> str:
        """What the study is about to run: the parts asked for (PARTS=), each as it will run, and no other."""
        said = []
        if AA in self.parts:
            said.append(f"A/A: {len(self.cells)} cells x {self.rounds} rounds x {self.repeats} + {self.repeats} "
                        f"processes ({''.join(interleaved_sides(self.repeats))})")
        if PROBE in self.parts:
            said.append(f"the calibration probe at {', '.join(f'+{s:.0%}' for s in self.slowdowns)}, {self.pairs} "
                        "pairs each" + (f", then again beside {self.busy_processes} busy loops"
                                        if self.busy_processes else ""))
        if self.delays:
            said.append(f"delay pairs: {len(self.delay_cells)} cells with side B held "
                        f"{', '.join(f'+{s:.0%}' for s in self.delays)}, {self.pairs} pairs each")
        return ", then ".join(said)

    def run(self) -> Path:
        """The whole study; returns the machine's study file. Ctrl-C: the figures so far go to the runs folder."""
        start = Snapshot.take()
        self.readings.append(start.reference_ms)
        self.echo(f"noise study: {self.plan_text()}; into {self.runs_dir}")
        self.echo(f"load at the start: {start.load_1m} (1-minute average), drift probe {start.reference_ms:.3f} ms")
        try:
            if AA in self.parts:
                self.run_aa()
            if PROBE in self.parts:
                self.run_power()
                self.run_power_under_load()
            self.run_detection()
        except KeyboardInterrupt:
            partial = self.runs_dir / "study.json"
            write_json_atomic(partial, self.to_dict(start, Snapshot.take(), complete=False))
            self.echo(f"\ninterrupted after {self.elapsed()}: every finished side is kept under {self.runs_dir}, the "
                      f"figures so far in {partial} (not the machine's study)")
            self.pack_runs()
            raise
        end = Snapshot.take()
        data = self.to_dict(start, end, complete=True)
        write_json_atomic(self.runs_dir / "study.json", data)
        if AA not in self.parts or PROBE not in self.parts:
            # a study without its A/A or its probe is not the machine's: it stays in its runs folder
            from bench.studies.noise.page import render_partial

            detection.judge_across(data, self.runs_dir)
            write_json_atomic(self.runs_dir / "study.json", data)
            path = render_partial(self.runs_dir, data)
        else:
            path = write_study(self.results_dir, data)
            if data.get("detection"):  # across runs: judged with the run spread this study has just put on file
                from bench.studies.noise.page import render_noise

                detection.judge_across(data, self.runs_dir)
                write_json_atomic(path, data)
                write_json_atomic(self.runs_dir / "study.json", data)
                render_noise(self.results_dir)
        self.pack_runs()
        self.echo(summary_line(data))
        return path

    def pack_runs(self) -> None:
        """The runs folder also as one archive beside it (bench/base/packed.py), which is what git keeps of it."""
        from bench.base.packed import pack

        try:
            archive = pack(self.runs_dir)
            self.echo(f"packed the runs into {archive} ({archive.stat().st_size / 2**20:.2f} MiB; the folder stays)")
        except (BenchError, OSError) as e:
            self.echo(f"warning: the runs were not packed ({e}): they stay in {self.runs_dir}, which git ignores; "
                      f"`python -m bench.base.packed pack {self.runs_dir}` packs them")


def build_parser() -> argparse.ArgumentParser:
    from bench.base.argtypes import DEFAULT_RESULTS, OneLineErrors, csv_list, positive_int, process_count

    parser = OneLineErrors(prog="python -m bench noise", description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=csv_list, help="cell keys, as `python -m bench run --dry-run` lists them "
                        "(default: BERT fit and predict on Keras 3 JAX and PyTorch, native PyTorch eager and compiled)")
    parser.add_argument("--profile", default=DEFAULT_PROFILE, help=f"the cells' profile (default: {DEFAULT_PROFILE})")
    parser.add_argument("--rounds", type=process_count, default=DEFAULT_ROUNDS,
                        help=f"A/A rounds over every cell (default: {DEFAULT_ROUNDS})")
    parser.add_argument("--repeats", type=process_count,
                        help="processes per side (default: the profile's default repeats)")
    parser.add_argument("--max-processes", type=process_count,
                        help="the most processes a side gets while its pair is undecided, under the rule make "
                        "bench-all replicates by (default: the profile's max_repeats, or a fixed --repeats where it "
                        "has none, as smoke)")
    parser.add_argument("--pairs", type=process_count, default=DEFAULT_PAIRS,
                        help=f"calibration-probe pairs per slowdown (default: {DEFAULT_PAIRS})")
    parser.add_argument("--slowdowns", type=parse_slowdowns, default=list(DEFAULT_SLOWDOWNS),
                        help="the calibration probe's added work per step, shares (default: "
                        + ",".join(f"{s:g}" for s in DEFAULT_SLOWDOWNS) + ")")
    parser.add_argument("--delays", type=parse_slowdowns, default=[],
                        help="power on product cells: each step of side B held this share longer by the test fixture "
                        "tests/fixtures/step_delay (0.05,0.1,0.2), --pairs pairs a delay (default: none)")
    parser.add_argument("--delay-cells", type=csv_list, help="the cells the delays are measured on (default: --cells)")
    parser.add_argument("--parts", type=csv_list, default=None,
                        help=f"which parts run, of {', '.join(PARTS)} (default: all; the delay part where --delays "
                        "is given); without both aa and probe the study is not the machine's and stays in its runs "
                        "folder")
    parser.add_argument("--timeout", type=positive_int, help="seconds per cell process (default: the cell's own)")
    parser.add_argument("--under-load", type=process_count, default=0, metavar="N",
                        help="run the calibration probe's pairs again beside N busy loops (one per core: a loaded "
                        "machine), to show what the verdict says under load (default: not)")
    parser.add_argument("--results-dir", type=results_folder, default=DEFAULT_RESULTS)
    return parser


def main(argv: list[str] | None = None) -> int:
    from bench.base.exit_status import exit_status
    from bench.base.lifetime import stop_on_signals
    from bench.base.runlock import holding

    args = build_parser().parse_args(argv)
    stop_on_signals()  # TERM, HUP, INT (to it, or to the make that started it) keep what is finished
    written: list[Path] = []

    def run() -> int:
        cells = choose_cells(args.cells, args.profile)
        parts = tuple(args.parts) if args.parts else None
        delay_cells = choose_cells(args.delay_cells, args.profile) if args.delay_cells else None
        study = Study(cells, args.results_dir, args.rounds, args.repeats, args.pairs, args.slowdowns, args.timeout,
                      busy_processes=args.under_load, delays=args.delays, delay_cells=delay_cells, parts=parts,
                      max_processes=args.max_processes)
        with holding(args.results_dir):  # one run at a time into a results folder (bench/base/runlock.py)
            written.append(study.run())
        return 0

    status = exit_status(run)
    if written:  # the study ran to its end: its files named once the run is over
        say(f"wrote {written[0]} and {written[0].parent / PAGE}")
    return status


if __name__ == "__main__":
    sys.exit(main())
