"""How the suite judges result files: each cell's figure with its interval, whether it was measured on a disturbed
machine, and B / A with its verdict. Every place that prints a comparison (`make compare`, the tables, the
findings, the studies, `make noise`) asks one Judge, so they cannot disagree.

A Judge is made over the results it will compare. A cell's drift-probe quiet value is the lowest reading of the run
it was measured in (its provenance's run_id; results written before run ids count as one run): a cell whose probe
read far above it was measured on a disturbed machine. Two cells from runs whose quiet values differ by the same
factor ran on a machine of another speed (another host of the label, or a loaded spell), and are not compared. A cell
of one process borrows its machine's process-to-process spread from the noise study's file (bench/judge/noise_file.py).
The statistics themselves are bench/base/stats.py's.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import math
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench.base import stats
from bench.base.stats import Estimate, Noise, ProcessSpread, Ratio
from bench.judge import across_runs
from bench.judge.noise_file import machine_quiet_reference, machine_run_spread, machine_spread, processor_fingerprint
from bench.judge.same_work import work_difference
from bench.record.results import Result, Run, device_quiet

MIN_KEPT = 3  # the fewest undisturbed processes a cell is judged on once a disturbed one is set aside (two give a
# Welch interval of a degree of freedom or two: too wide to decide anything)


def reference_readings(results: Iterable[Result], gated: bool = False) -> list[float]:
    """Every drift-probe reading recorded beside these results' processes (bench/measure/drift.py); `gated`: only those
    a noise gate applies to (Run.gated_reference: a run's start reading left out)."""
    return [
        v
        for r in results
        for i, run in enumerate(r.runs)
        for v in (run.gated_reference(r.start_ms(), i == 0) if gated else
                  {k: run.reference.get(k) for k in ("before_ms", "after_ms")} if run.reference else {}).values()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
    ]  # fmt: skip


def run_of(result: Result) -> str | None:
    """The orchestrator invocation a result was measured in (None: written before run ids were recorded)."""
    return result.provenance.get("run_id")


def runs_in(result: Result) -> int:
    """How many separate runs a result's processes came from: one, or the runs a side pooled (pool_runs)."""
    return len(result.provenance.get("pooled_runs") or ()) or 1


def pool_runs(results: list[Result]) -> Result:
    """One cell measured in several separate runs, as one side of a comparison: every ok process of every run, its
    figure the runs' processes together, and the runs it came from recorded (provenance.pooled_runs), so that the
    Judge widens it by the run-to-run spread over that many runs, not one; a run whose cell did not end ok is left
    out and named (provenance.pooled_left_out). Refused where the runs' cells or processors differ, or two of them
    are one run. Where no run is ok, the newest (its failure stands)."""
    from bench.base.errors import BenchError

    if len(results) == 1:
        return results[0]
    newest = max(results, key=lambda r: r.created_at)
    ok = [r for r in results if r.status == "ok"]
    if not ok:
        return newest
    if len({r.cell.key for r in ok}) > 1:
        raise BenchError(f"runs of different cells cannot be pooled: {', '.join(sorted({r.cell.key for r in ok}))}")
    ids = [run_of(r) for r in ok]
    if None not in ids and len(set(ids)) < len(ids):
        raise BenchError(f"{ok[0].cell.key}: two of the pooled folders hold the same run ({', '.join(map(str, ids))})")
    machines = {processor_fingerprint(r.provenance.get("machine") or {}) for r in ok}
    if len(machines) > 1:
        raise BenchError(f"{ok[0].cell.key}: the pooled runs ran on different processors: pool runs of one machine")
    strictest = max(ok, key=judged_confidence)
    pooled = [{"run_id": run_of(r), "created_at": r.created_at, "commit": (r.provenance.get("git") or {}).get("commit"),
               "processes": len(r.runs),
               "measured_from": started.isoformat() if (started := across_runs.run_starts(r)[0]) else None}
              for r in ok]  # fmt: skip
    left_out = [{"run_id": run_of(r), "created_at": r.created_at, "status": r.status} for r in results
                if r.status != "ok"]  # fmt: skip
    provenance = {**strictest.provenance, "run_id": "+".join(str(i) for i in ids), "pooled_runs": pooled,
                  **({"pooled_left_out": left_out} if left_out else {})}  # fmt: skip
    return dataclasses.replace(newest if newest.status == "ok" else ok[-1], runs=[run for r in ok for run in r.runs],
                               provenance=provenance)  # fmt: skip


def pooled_groups(result: Result, kept: list[Run]) -> list[list[list[float]]] | None:
    """The kept processes' steps of a side pooled from several runs (pool_runs), one list per run, in the order
    pool_runs joined them (provenance.pooled_runs' process counts); None for one run, or where the counts do not
    match the processes."""
    pooled = result.provenance.get("pooled_runs") or ()
    counts = [p.get("processes") for p in pooled]
    if len(counts) < 2 or not all(isinstance(c, int) for c in counts) or sum(counts) != len(result.runs):
        return None
    run_index = {id(run): next(i for i, end in enumerate(itertools.accumulate(counts)) if n < end)
                 for n, run in enumerate(result.runs)}  # fmt: skip
    groups: list[list[list[float]]] = [[] for _ in counts]
    for run in kept:
        groups[run_index[id(run)]].append(run.timed_ms)
    return groups


def judged_confidence(result: Result) -> float:
    """The confidence a comparison with this result is judged at: stricter than 95% where its processes were added
    until decided (provenance.replication, bench/judge/replication.py), so that looking after each round keeps the
    false-call rate."""
    return (result.provenance.get("replication") or {}).get("confidence") or stats.CONFIDENCE


def processor_differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """What differs between two results' processors (bench/base/provenance.py processor_info), as 'field: x vs y'; empty
    when they are the same processor. A side that recorded none differs only if the other did."""
    pa, pb = (a or {}).get("processor") or {}, (b or {}).get("processor") or {}
    if processor_fingerprint(a or {}) == processor_fingerprint(b or {}):
        return []
    if not pa or not pb:
        return ["processor: recorded on one side only"]
    out = []
    for name in sorted(set(pa) | set(pb)):
        if name in ("fingerprint", "mhz"):
            continue
        if pa.get(name) != pb.get(name):
            out.append(f"{name}: {json.dumps(pa.get(name))} vs {json.dumps(pb.get(name))}")
    return out or ["processor fingerprint"]


class Judge:
    def __init__(self, results: Iterable[Result], results_dir: Path | None = None, across_processors: bool = False):
        self.results = list(results)
        self.results_dir = results_dir
        self.across_processors = across_processors
        by_run: dict[str | None, list[float]] = {}
        for result in self.results:
            by_run.setdefault(run_of(result), []).extend(reference_readings([result]))
        self._quiet = {run: min(readings) for run, readings in by_run.items() if readings}
        self._device_quiet: dict[str | None, dict[str, float]] = {}  # per run, per device: the device reference's
        for result in self.results:
            quiet = self._device_quiet.setdefault(run_of(result), {})
            for device, ms in device_quiet(result.runs).items():
                quiet[device] = min(quiet.get(device, ms), ms)
        self._machine_figures: dict[tuple, Any] = {}  # per machine: a figure of its noise studies
        self._kept: dict[tuple[int, int], tuple[Result, tuple[list[Run], list[str]]]] = {}

    def _per_machine(self, reader, result: Result, *args) -> ProcessSpread | None:
        """A figure of the result's machine from its noise study (`reader`: bench.judge.noise_file), read once per
        machine."""
        machine = result.provenance.get("machine") or {}
        key = (reader, json.dumps(machine, sort_keys=True, default=str), *args)
        if key not in self._machine_figures:
            self._machine_figures[key] = reader(self.results_dir, machine, *args)
        return self._machine_figures[key]

    def spread(self, result: Result) -> ProcessSpread | None:
        """The process-to-process spread a cell of one process borrows: measured on its machine, for its profile
        (bench/judge/noise_file.py machine_spread)."""
        return self._per_machine(machine_spread, result, result.cell.profile, result.cell.key)

    def run_spread(self, result: Result) -> ProcessSpread | None:
        """The run-to-run spread of the result's machine (its noise studies' rounds), None where unmeasured."""
        return self._per_machine(machine_run_spread, result)

    def run_spread_parts(self, result: Result) -> across_runs.RunSpreadParts | None:
        """The machine's run spread split into its short and slow parts, with its time scale (bench/judge/
        across_runs.py); None where the run spread is unmeasured."""
        total = self.run_spread(result)
        machine = result.provenance.get("machine") or {}
        key = ("parts", json.dumps(machine, sort_keys=True, default=str))
        if key not in self._machine_figures:
            self._machine_figures[key] = across_runs.machine_run_spread_parts(self.results_dir, machine, total)
        return self._machine_figures[key]

    def across_runs(self, found: Ratio, a: Result, b: Result) -> Ratio:
        """A ratio of cells from separate runs carries the machine's run-to-run spread on each side, or decides
        nothing where that spread is unmeasured (the same code, re-run minutes later, moves by it). A side pooled from
        several runs carries the short part of it over its runs, the slow part over its runs only as far as they lie
        apart (bench/judge/across_runs.py)."""
        if run_of(a) == run_of(b):
            return found
        parts = [self.run_spread_parts(r) for r in (a, b)]
        if None in parts:
            return found.undecided(
                "measured in separate runs, and this machine's run-to-run spread is unmeasured "
                "(make noise: its rounds measure it)"
            )
        widest = max(parts, key=lambda p: p.total.log_sd)
        found = across_runs.with_pooled_run_spread(found, widest, a, b, (runs_in(a), runs_in(b)))
        return self.probe_corrected(found, a, b)

    def probe_corrected(self, found: Ratio, a: Result, b: Result) -> Ratio:
        """Across runs, on a machine whose noise study shows the drift probe tracking the runs' level (Pearson's r
        and its test over the study's runs), the ratio divided by the probe's ratio, noted beside the verdict."""
        machine = a.provenance.get("machine") or {}
        key = ("probe", json.dumps(machine, sort_keys=True, default=str))
        if key not in self._machine_figures:
            self._machine_figures[key] = across_runs.machine_probe_tracking(self.results_dir, machine)
        tracking = self._machine_figures[key]
        said = across_runs.probe_corrected(found, a, b, *tracking) if tracking else None
        return found.noted(said) if said else found

    def machine_speed(self, found: Ratio, a: Result, b: Result) -> Ratio:
        """Across runs, whether the machine itself ran at another speed, read by the drift probe's quiet value in
        each run against the other's and against the machine's own quiet value (its noise study): a run that found
        the machine slow throughout decides nothing; a shift between the runs beyond the equivalence band that the
        cell's interval holds leaves it undecided (the cell moved no more than the machine did), else is noted."""
        qa, qb = self.quiet_reference_ms(a), self.quiet_reference_ms(b)
        if run_of(a) == run_of(b) or not qa or not qb:
            return found
        machine = self._per_machine(machine_quiet_reference, a)
        for side, quiet in (("A", qa), ("B", qb)):
            if machine and quiet > stats.REFERENCE_FACTOR * machine[0]:
                found = found.undecided(
                    f"{side}'s run found the machine slow throughout (drift probe quiet {quiet:.3g} ms; the "
                    f"machine's quiet {machine[0]:.3g} ms, {machine[1]})"
                )
        shift = qb / qa
        if abs(math.log(shift)) <= math.log(1 + stats.EQUIVALENCE_BAND):
            return found
        said = (f"the machine itself ran {shift:.2f}x between the runs (drift probe quiet {qa:.3g} ms in A's, "
                f"{qb:.3g} in B's)")
        interval = found.interval()
        if interval and interval[0] <= shift <= interval[1]:
            return found.undecided(f"{said}: the cell moved no more than the machine")
        return dataclasses.replace(found, note="; ".join(filter(None, [found.note, said])))

    def kept_runs(self, result: Result) -> tuple[list[Run], list[str]]:
        """The processes a cell is judged on, and why each other was set aside. A process whose noise gate tripped
        (a disturbed machine while it ran) is set aside where the undisturbed ones are at least three and a majority,
        so that one disturbed process costs the cell that process, not its verdict; otherwise none is set aside and
        the cell is noisy (Judge.noise). Worked out once per result and count of processes (noise, set_aside and
        estimate each ask)."""
        key = (id(result), len(result.runs))
        cached = self._kept.get(key)
        if cached is None or cached[0] is not result:
            cached = self._kept[key] = (result, self.judged_runs(result))
        return cached[1]

    def judged_runs(self, result: Result) -> tuple[list[Run], list[str]]:
        quiet, device = self.quiet_reference_ms(result), self.device_quiet_ms(result)
        timed = [(i, run) for i, run in enumerate(result.runs, 1) if run.status == "ok" and run.timed_ms]
        disturbed = {i: found.reasons for i, run in timed
                     if (found := result.process_noise(i - 1, quiet, device)).noisy}  # fmt: skip
        clean = [run for i, run in timed if i not in disturbed]
        if not disturbed or len(clean) < MIN_KEPT or len(clean) <= len(disturbed):
            return [run for _, run in timed], []
        return clean, [f"process {i} set aside ({'; '.join(reasons)})" for i, reasons in disturbed.items()]

    def estimate(self, result: Result) -> Estimate | None:
        """The cell's figure and interval from the processes it is judged on (kept_runs); a cell of one process with
        its machine's spread where one is known."""
        if result.status != "ok":
            return None
        runs, _ = self.kept_runs(result)
        if (by_run := pooled_groups(result, runs)) is not None:
            return stats.estimate_across_runs(by_run)
        return stats.estimate([r.timed_ms for r in runs], self.spread(result) if len(runs) == 1 else None)

    def process_groups(self, result: Result) -> tuple[list[float], list[float]] | None:
        """The judged processes' medians in two groups, where they fall so (stats.process_groups)."""
        return stats.process_groups([statistics.median(run.timed_ms) for run in self.kept_runs(result)[0]])

    def quiet_reference_ms(self, result: Result) -> float | None:
        """The lowest drift-probe reading of the run the result was measured in (None: no reading)."""
        return self._quiet.get(run_of(result))

    def device_quiet_ms(self, result: Result) -> dict[str, float]:
        """Per device: the quietest device-reference reading of the run the result was measured in (GPU cells)."""
        return self._device_quiet.get(run_of(result), {})

    def noise(self, result: Result) -> Noise:
        """Noisy where a process was disturbed and could not be set aside (kept_runs)."""
        found = result.noise(self.quiet_reference_ms(result), self.device_quiet_ms(result))
        return Noise(False, []) if found.noisy and self.kept_runs(result)[1] else found

    def set_aside(self, result: Result) -> list[str]:
        return self.kept_runs(result)[1]

    def speed_difference(self, a: Result, b: Result) -> str | None:
        """Why two cells from different runs are not compared: their runs' quiet probe readings differ by more
        than the noise gate's factor (the machine itself ran at another speed)."""
        qa, qb = self.quiet_reference_ms(a), self.quiet_reference_ms(b)
        if run_of(a) == run_of(b) or not qa or not qb or max(qa / qb, qb / qa) <= stats.REFERENCE_FACTOR:
            return None
        return (
            f"the machine ran at another speed in each side's run (drift probe quiet {qa:.3g} ms vs {qb:.3g} ms, "
            f"over {stats.REFERENCE_FACTOR:g}x apart)"
        )

    def ratio(self, a: Result, b: Result) -> Ratio | None:
        """B / A with its interval; not comparable where they did different work a step; not decidable where either
        is noisy, they ran on different processors (unless the Judge was told to compare across them), or an
        interval covers steps only. None unless both are ok."""
        ea, eb = self.estimate(a), self.estimate(b)
        if ea is None or eb is None:
            return None
        found = stats.ratio(ea, eb)
        if (why := work_difference(a, b)) is not None:
            return found.not_comparable(why)
        noises = {side: self.noise(result) for side, result in (("A", a), ("B", b))}
        for side, noise in noises.items():
            machine = any("drift probe" in reason for reason in noise.reasons)  # the machine itself ran slow
            result = a if side == "A" else b
            timed = [run for run in result.runs if run.status == "ok" and run.timed_ms]
            unsteady = len({r.split(":", 1)[0] for r in noise.reasons}) if len(timed) > 1 else len(timed)
            throughout = unsteady * 2 > len(timed)  # most of the side's processes, not one of several
            if noise.noisy and throughout and not machine and not any(
                n.noisy for other, n in noises.items() if other != side
            ):
                # one side's steps unsteady throughout, the other steady, the machine not seen slow: a change on
                # that side (a slowdown that grows over the run) is as likely as noise
                found = found.undecided(f"possible change on {side}, or noise: {'; '.join(noise.reasons)}; "
                                        f"{'A' if side == 'B' else 'B'} steady")
            elif noise.noisy:
                found = found.undecided(f"{side} noisy: {'; '.join(noise.reasons)}")
        aside = [f"{side}: {why}" for side, result in (("A", a), ("B", b)) for why in self.set_aside(result)]
        aside += [f"{side}: {stats.groups_text(groups, result.unit)}" for side, result in (("A", a), ("B", b))
                  if (groups := self.process_groups(result))]  # fmt: skip
        if aside:
            found = dataclasses.replace(found, note="; ".join(filter(None, [found.note, *aside])))
        if (why := self.speed_difference(a, b)) is not None:
            found = found.undecided(why)
        found = self.machine_speed(self.across_runs(found, a, b), a, b)
        differences = processor_differences(a.provenance.get("machine") or {}, b.provenance.get("machine") or {})
        if differences and not self.across_processors:
            found = found.undecided("different processors (" + "; ".join(differences) + ")")
        return found.judged_at(max(judged_confidence(a), judged_confidence(b)))  # the stricter side's

    def verdict(self, a: Result, b: Result, band: float = stats.EQUIVALENCE_BAND) -> str:
        return stats.verdict(self.ratio(a, b), band)
