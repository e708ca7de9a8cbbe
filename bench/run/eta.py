"""The time a run on this machine has left, and what that figure stands on (the header of each cell's process, the
bar on a terminal, and a line as the run starts).

Before any process of the run has ended, each cell is expected to take, in this order: its published figure's time
(a paper cell on a GPU, bench/run/planning.py time_estimates); this machine's earlier result of it, each process as
long as its earlier ones (bench/run/budget.py earlier_walls); else, on a CPU, another processor's committed result of
it (results/<profile>/<machine>/), scaled by the ceilings probe that both runs recorded (probe_scale). Once processes
of this run have ended, the ETA is this run's own: a cell's later processes as long as its first, and the other cells'
expectations scaled by how this run's processes compared with theirs (or, where no cell had one, this run's mean
process). A cell with no figure at all is counted at the mean of the others.
"""
from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bench.base.errors import BenchError
from bench.base.progress import hms
from bench.base.provenance import REPO_ROOT, machine_label, machine_slug
from bench.catalogue.cost import repeated_s
from bench.catalogue.registry import Cell
from bench.record.results import Result, load, result_path
from bench.record.text import plural
from bench.run.ceilings import figures

COMMITTED = REPO_ROOT / "results"  # the committed runs: this machine's earlier ones and other processors'
# The probe figures a scale stands on: a CPU cell's process is partly its steps' matrix products (the float32 matmul)
# and partly start-up, imports and the model's build, bound by memory and the interpreter (the triad stands for them).
# Neither alone follows the two committed smoke runs (results/smoke/, the Intel processor's processes 1.47x as long
# as the AMD one's in all): the matmul says 0.74x, the triad 2.66x, their geometric mean 1.40x.
PROBE_FIGURES = ("float32", "triad")


@dataclass
class Expected:
    """Each cell's expected seconds, all its processes together (cell key -> seconds; a cell with no figure is not in
    it), and what they stand on, in words (None where nothing)."""

    seconds: dict[str, float] = field(default_factory=dict)
    basis: str | None = None
    scaled: bool = False  # some figure is another processor's, scaled by the probe


def probe_scale(theirs: dict | None, ours: dict | None) -> float | None:
    """How many times as long a process takes here as there, by the host ceilings probe (bench/run/ceilings.py) each
    run recorded: the geometric mean of their figure over ours, for each of PROBE_FIGURES both have; None where
    either run recorded none."""
    there, here = figures((theirs or {}).get("host")), figures((ours or {}).get("host"))
    ratios = [there[k] / here[k] for k in PROBE_FIGURES if there.get(k) and here.get(k)]
    return math.exp(statistics.fmean(map(math.log, ratios))) if ratios else None


def median_probe(results: Iterable[Result]) -> dict:
    """The host probe's median figures over a run's results, as one ceilings record."""
    found = [f for r in results if (f := figures((r.provenance.get("ceilings") or {}).get("host")))]
    medians = {k: statistics.median(v) for k in PROBE_FIGURES if (v := [f[k] for f in found if f.get(k)])}
    if not medians:
        return {}
    host: dict = {"triad": {"median": medians["triad"]}} if "triad" in medians else {}
    if "float32" in medians:
        host["matmul"] = {"float32": {"median": medians["float32"]}}
    return {"host": host}


def committed_folders(results_dir: Path, committed: Path) -> list[Path]:
    """The committed results folder, and the run's own where it is one inside it (results/cpu-full holds the
    full-size CPU runs of every processor)."""
    inside = Path(results_dir).resolve().is_relative_to(committed.resolve())
    return [committed] + ([Path(results_dir)] if inside and Path(results_dir).resolve() != committed.resolve() else [])


def other_machines(cells: list[Cell], machine: dict, folders: list[Path]) -> list[tuple[str, dict[str, Path]]]:
    """Every other processor's results of these cells in `folders`: (its folder, cell key -> file), the one that
    holds most of them first."""
    own = machine_slug(machine)
    found: dict[str, dict[str, Path]] = {}
    for cell in cells:
        parts = result_path(Path(), cell, machine).parts  # <profile>/<machine>/[stack-<name>/]<key>.json
        for top in folders:
            profile = top / parts[0]
            for folder in sorted(p for p in profile.iterdir() if p.is_dir()) if profile.is_dir() else []:
                path = folder.joinpath(*parts[2:])
                if folder.name != own and path.is_file():
                    found.setdefault(str(folder), {}).setdefault(cell.key, path)
    return sorted(found.items(), key=lambda item: (-len(item[1]), item[0]))


def scaled_from_another(cells: list[Cell], machine: dict, repeats: int, ceilings: dict | None,
                        folders: list[Path]) -> tuple[dict[str, float], str] | None:
    """The cells' seconds from the committed results of the other processor that has most of them, scaled by the
    probe, and what they stand on; None on a GPU (its cells' speed is not the host's) or where no processor's
    results and probe serve."""
    from bench.run.budget import process_walls

    if machine.get("gpus"):
        return None
    for _, paths in other_machines(cells, machine, folders):
        loaded = {}
        for key, path in paths.items():
            try:
                loaded[key] = load(path)
            except BenchError:
                continue  # an unreadable file is `make validate`'s to name, not the ETA's
        theirs = next((r.provenance.get("machine") or {} for r in loaded.values()), {})
        scale = probe_scale(median_probe(loaded.values()), ceilings)
        if theirs.get("gpus") or scale is None:
            continue
        seconds = {key: repeated_s(walls, repeats) * scale for key, r in loaded.items() if (walls := process_walls(r))}
        if seconds:
            return seconds, f"scaled from {machine_label(theirs)}'s committed times by the probe (x{scale:.2f})"
    return None


def expected(cells: list[Cell], results_dir: Path, machine: dict, repeats: int, ceilings: dict | None,
             not_run: Callable[[Cell], bool] = lambda cell: False, committed: Path | None = None) -> Expected:
    """Each cell's expected seconds (`repeats` processes) before this run has measured any, as the module says; a cell
    that no process runs (`not_run`: unsupported, oom-predicted) takes none."""
    from bench.run.budget import earlier_walls
    from bench.run.planning import time_estimates

    committed = COMMITTED if committed is None else committed
    seconds: dict[str, float] = {}
    sources: dict[str, list[str]] = {}  # what a figure stands on -> the cells it stands for

    def take(key: str, value: float, source: str) -> None:
        seconds[key] = value
        sources.setdefault(source, []).append(key)

    published = time_estimates(cells, repeats)
    for cell in cells:
        if not_run(cell):
            seconds[cell.key] = 0.0
        elif cell.key in published:
            take(cell.key, published[cell.key], "from the published figures")
        elif walls := earlier_walls(cell, machine, [results_dir, committed]):
            take(cell.key, repeated_s(walls, repeats), "from this machine's earlier results")
    rest = [c for c in cells if c.key not in seconds]
    try:
        found = scaled_from_another(rest, machine, repeats, ceilings, committed_folders(results_dir, committed)) \
            if rest else None
    except OSError:  # a committed folder that cannot be read: no ETA from it, and the run goes on
        found = None
    if found:
        for key, value in found[0].items():
            take(key, value, found[1])
    if not sources:
        return Expected(seconds, None)  # only cells that no process runs
    unknown = len(cells) - len(seconds)
    basis = "; ".join(source if len(sources) == 1 else f"{source}: {plural(len(keys), 'cell')}"
                      for source, keys in sources.items())
    if unknown:
        basis += f"; {plural(unknown, 'cell')} with no figure, counted at the mean"
    return Expected(seconds, basis, scaled=bool(rest and found))


class Eta:
    """Fed by the runner as each process starts and ends and as each cell is written; says the seconds left and what
    they stand on (the module's docstring)."""

    def __init__(self, keys: list[str], found: Expected, processes: int,
                 clock: Callable[[], float] = time.perf_counter):
        self.keys, self.found, self.processes, self.clock = list(keys), found, processes, clock
        self.measured: dict[str, list[float]] = {}
        self.finished: set[str] = set()
        self.current: tuple[str, float] | None = None

    def process_started(self, key: str) -> None:
        self.current = (key, self.clock())

    def process_done(self, key: str) -> None:
        """The process of `key` started last has ended (its drift probe with it)."""
        if self.current is not None and self.current[0] == key:
            self.measured.setdefault(key, []).append(self.clock() - self.current[1])
        self.current = None

    def cell_done(self, key: str) -> None:
        self.finished.add(key)
        if self.current is not None and self.current[0] == key:
            self.current = None

    def measured_count(self) -> int:
        return sum(map(len, self.measured.values()))

    def _expected_process_s(self, key: str) -> float | None:
        value = self.found.seconds.get(key)
        return None if value is None else value / self.processes

    def _per_process(self) -> Callable[[str], float] | None:
        """Seconds one more process of a cell is expected to take; None where nothing says."""
        own = {k: statistics.fmean(v) for k, v in self.measured.items() if v}
        expected = {k: e for k in self.keys if (e := self._expected_process_s(k)) is not None}
        known = [e for e in expected.values() if e > 0]
        both = [k for k in own if expected.get(k)]
        # how this run's processes compared with what was expected of the same cells
        factor = (sum(own[k] * len(self.measured[k]) for k in both) /
                  sum(expected[k] * len(self.measured[k]) for k in both)) if both else None  # fmt: skip
        mean_own = statistics.fmean(own.values()) if own else None
        if not own and not known:
            return None

        def per_process(key: str) -> float:
            if key in own:
                return own[key]
            if key in expected:
                if not own:
                    return expected[key]
                if factor is not None:
                    return factor * expected[key]
                return mean_own if expected[key] > 0 else 0.0
            if mean_own is not None:
                return mean_own
            return statistics.fmean(known)  # no figure: counted at the mean

        return per_process

    def left_s(self) -> float | None:
        """Seconds the run has left; None before anything gives a figure."""
        per_process = self._per_process()
        if per_process is None:
            return None if any(k not in self.finished for k in self.keys) else 0.0
        left = 0.0
        for key in self.keys:
            if key not in self.finished:
                left += max(self.processes - len(self.measured.get(key, [])), 0) * per_process(key)
        if self.current is not None and self.current[0] not in self.finished:
            key, started = self.current
            if len(self.measured.get(key, [])) < self.processes:  # the one under way is counted in `left`
                left -= min(self.clock() - started, per_process(key))
        return max(left, 0.0)

    def basis(self) -> str | None:
        if n := self.measured_count():
            return f"from this run's times, {plural(n, 'process')} so far"
        return self.found.basis

    def text(self, cells: int | None = None) -> str | None:
        """'ETA ~0:12:00 (from this run's times, 3 processes so far)', with 'for 4 cells' after the figure where `cells`
        is given; None before anything gives a figure."""
        left = self.left_s()
        count = "" if cells is None else f" for {plural(cells, 'cell')}"
        return None if left is None else f"ETA ~{hms(left)}{count} ({self.basis()})"

    def inline(self) -> str | None:
        """The same, for inside a header's parentheses: 'ETA ~0:12:00 from this run's times, 3 processes so far'."""
        left = self.left_s()
        return None if left is None else f"ETA ~{hms(left)} {self.basis()}"
