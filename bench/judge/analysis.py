"""The analysis, done once per table: per-row facts (each cell's figure and interval, the ranking of the Keras 3
backends with its verdict), the table's status notes, machine drift and the speed-ups. Every renderer reads these
objects; none recomputes them, so the Markdown, the findings and the figures cannot disagree.

Every figure, interval and verdict comes from one bench.judge.Judge per table (bench/base/stats.py's statistics), so the
tables decide a winner exactly as `make compare` decides a difference.
"""
from __future__ import annotations

import re
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bench.base import stats
from bench.base.provenance import hardware_label, processor_tag
from bench.base.stats import Estimate, Noise, Ratio
from bench.catalogue.registry import get_model
from bench.catalogue.variants import PRECISION_VARIANT_MODE
from bench.judge import Judge, reference_readings
from bench.judge.same_work import mode_marks, step_modes
from bench.record.load import (
    COLUMNS,
    KERAS3,
    NATIVE,
    Column,
    Group,
    Loaded,
    RowKey,
    expected_rows,
    group_results,
    load_results,
    published_batch,
    read_published,
)
from bench.record.results import Result
from bench.record.text import distinct, fmt_ms, md

KERAS2 = Column("keras2", "default")
MESSAGE_LIMIT = 400  # characters of a status message quoted in a note; the rest stays in the result file
# a traceback's frame lines ("File ..., line N" and the source under it; TensorFlow's "Detected at node ... (most
# recent call last):") stand between an error's first line and its cause at the end: a note leaves them out
FRAME_LINE = re.compile(r'\s*(File "|Traceback \(most recent call last\):|Detected at node .*:$)')
# TensorFlow's locators of the failing node and op ("[[{{node X}}]]", "[Op:__inference_step_8356]"): numbered per
# process, they would make one error a different note in every cell
LOCATOR = re.compile(r"\s*(\[\[\{\{node [^}]*\}\}\]\]|\[Op:[^\]]*\])")

# How a row's Keras 3 backends rank (RowFacts.outcome).
WINNER = "winner"  # the fastest is faster than every other ranked backend with confidence
TIE = "tie"  # the fastest is shown the same as some other (within the band), faster than the rest
INCONCLUSIVE = "inconclusive"  # some comparison with the fastest is undecided (an interval too wide, or none)
UNCONTESTED = "uncontested"  # fewer than two ranked Keras 3 backends: nothing to rank


class CellJudge:
    """A table's Judge with its answers kept: each cell's estimate and noise are asked for by every renderer."""

    def __init__(self, judge: Judge):
        self.judge = judge
        self._estimates: dict[int, Estimate | None] = {}
        self._noise: dict[int, Noise] = {}
        self._ratios: dict[tuple[int, int], Ratio | None] = {}
        # The table's family-wise threshold (Benjamini-Hochberg over its comparisons, set by analyse_group): each
        # ratio is judged at 1 - threshold, scaled as its own confidence is (processes added over several looks)
        self.threshold: float | None = None

    def judge_as_family(self, threshold: float) -> None:
        self.threshold = threshold
        self._ratios.clear()

    def estimate(self, loaded: Loaded | None) -> Estimate | None:
        """The cell's figure and its 95% interval; None unless ok."""
        if loaded is None:
            return None
        key = id(loaded.result)
        if key not in self._estimates:
            self._estimates[key] = self.judge.estimate(loaded.result)
        return self._estimates[key]

    def noise(self, loaded: Loaded) -> Noise:
        key = id(loaded.result)
        if key not in self._noise:
            self._noise[key] = self.judge.noise(loaded.result)
        return self._noise[key]

    def ratio(self, a: Loaded | None, b: Loaded | None) -> Ratio | None:
        """B / A with its interval (bench.judge.Judge.ratio); None unless both are ok."""
        if a is None or b is None:
            return None
        key = (id(a.result), id(b.result))
        if key not in self._ratios:
            found = self.judge.ratio(a.result, b.result)
            if found is not None and self.threshold is not None:
                found = stats.family_judged(found, self.threshold)
            self._ratios[key] = found
        return self._ratios[key]


def figure_of(cells: CellJudge, loaded: Loaded | None) -> float | None:
    found = cells.estimate(loaded)
    return found.center if found else None


@dataclass
class RowFacts:
    key: RowKey
    cells: dict[Column, Loaded]
    figures: dict[Column, float]  # every ok cell's headline figure (its estimate's center)
    keras3_ms: dict[str, float]  # backend -> figure, every Keras 3 backend with a number (noisy ones included)
    ranked: list[str]  # the Keras 3 backends that take part in the ranking (a number, not noisy), fastest first
    noisy: list[Column]  # cells measured on a disturbed machine: shown, not ranked
    outcome: str = UNCONTESTED  # WINNER, TIE, INCONCLUSIVE or UNCONTESTED
    winners: list[str] = field(default_factory=list)  # WINNER: the one; TIE: the fastest and those tied with it
    reason: str = ""  # INCONCLUSIVE: why a comparison with the fastest cannot be decided
    unit: str | None = None  # for the row label, when every cell has the same unit and it is not ms/step
    unit_in_cell: bool = False  # the cells' units differ, so each cell names its own
    published_batch: int | None = None  # the published row's batch size; None: not a published row
    # Keras 3 backends that did not compute what the fastest did (another matmul precision, other work): shown,
    # not ranked, each with why (backend -> the Judge's reason)
    unlike: dict[str, str] = field(default_factory=dict)
    # where the row's float32 cells ran in different modes: each cell's (bench/judge/same_work.py mode_marks)
    modes: dict[Column, str] = field(default_factory=dict)
    # where it ran: each precision variant of another backend at a default cell's mode, compared with it
    matched: list[MatchedPrecision] = field(default_factory=list)

    @property
    def fastest(self) -> str | None:
        """The ranked Keras 3 backend with the lowest figure (the winner only where outcome is WINNER)."""
        return self.ranked[0] if self.ranked else None

    @property
    def best(self) -> Loaded | None:
        """The cell of Keras 3 (best): the fastest ranked backend's."""
        return self.cells.get(Column(self.fastest, "default")) if self.fastest else None

    @property
    def best_ms(self) -> float | None:
        return self.keras3_ms[self.fastest] if self.fastest else None

    def ms(self, column: Column) -> float | None:
        """The cell's headline figure (the geometric mean of its processes' medians; one process: its median)."""
        return self.figures.get(column)


@dataclass(frozen=True)
class MatchedPrecision:
    """A row's two cells at one float32 matmul precision: a backend's default cell and another backend's precision
    variant that ran at the default cell's mode (bench/catalogue/variants.py PRECISION_VARIANTS), with variant /
    default."""

    default: Column
    variant: Column
    mode: str
    ratio: Ratio | None


def matched_precision(row: dict[Column, Loaded], modes: dict[Column, str], cells: CellJudge) -> list[MatchedPrecision]:
    """Where a row's default cells ran at different precisions: each precision-variant cell of the row beside every
    other backend's default cell that ran at the variant's mode (like for like)."""
    if not modes:
        return []
    out = []
    for column, loaded in row.items():
        if column.variant not in PRECISION_VARIANT_MODE or loaded.result.status != "ok":
            continue
        mode = step_modes(loaded.result)
        for default, mark in modes.items():
            if default.backend != column.backend and step_modes(row[default].result) == mode:
                out.append(MatchedPrecision(default, column, mark, cells.ratio(row[default], loaded)))
    return out


def rank_keras3(facts: RowFacts, cells: CellJudge) -> None:
    """Set the row's outcome: a winner only where the fastest ranked backend is faster than each other with
    confidence (B / A of the other over the fastest is `slower`); a tie among the fastest and the backends shown to
    be the same (within the band); inconclusive where any comparison is neither (it cannot decide, or its interval
    is too wide: undecided, not a tie). A backend that did not compute what the fastest did (bench/judge/same_work.py: a
    float32 step at another matmul precision, other work) takes no part: it is named in facts.unlike."""
    if len(facts.ranked) >= 2:
        first = facts.cells[Column(facts.ranked[0], "default")]
        for backend in facts.ranked[1:]:
            found = cells.ratio(first, facts.cells[Column(backend, "default")])
            if found is not None and not found.comparable:
                facts.unlike[backend] = found.reason
        facts.ranked = [b for b in facts.ranked if b not in facts.unlike]
    if len(facts.ranked) < 2:
        facts.outcome, facts.winners = UNCONTESTED, []
        return
    fastest = facts.cells[Column(facts.ranked[0], "default")]
    tied, undecided = [], []
    for backend in facts.ranked[1:]:
        found = cells.ratio(fastest, facts.cells[Column(backend, "default")])
        verdict = stats.verdict(found)
        if found is None or not found.decidable or found.interval() is None:
            undecided.append(found.reason if found is not None and found.reason else "no interval")
        elif verdict == stats.SAME:
            tied.append(backend)
        elif verdict != stats.SLOWER:
            low, high = found.interval()
            undecided.append(
                f"{backend}: {found.value:.3g}x ({low:.3g}-{high:.3g}), neither clear of 1 nor within "
                f"{stats.EQUIVALENCE_BAND:.0%}"
            )
    if undecided:
        facts.outcome, facts.winners, facts.reason = INCONCLUSIVE, [], "; ".join(dict.fromkeys(undecided))
    elif tied:
        facts.outcome, facts.winners = TIE, [facts.ranked[0], *tied]
    else:
        facts.outcome, facts.winners = WINNER, [facts.ranked[0]]


def row_facts(profile: str, key: RowKey, row: dict[Column, Loaded], cells: CellJudge) -> RowFacts:
    figures = {c: v for c, loaded in row.items() if (v := figure_of(cells, loaded)) is not None}
    noisy = [c for c, loaded in row.items() if c in figures and cells.noise(loaded).noisy]
    keras3 = {b: figures[c] for b in KERAS3 if (c := Column(b, "default")) in figures}
    ranked = sorted((b for b in keras3 if Column(b, "default") not in noisy), key=lambda b: keras3[b])
    facts = RowFacts(key, row, figures, keras3, ranked, noisy, published_batch=published_batch(profile, key),
                     modes=mode_marks({c: loaded.result for c, loaded in row.items() if c in COLUMNS}))
    facts.matched = matched_precision(row, facts.modes, cells)
    rank_keras3(facts, cells)
    units = distinct(l.result.unit for l in row.values() if l.result.status == "ok")
    facts.unit_in_cell = len(units) > 1
    if len(units) == 1 and units[0] != "ms/step":
        facts.unit = units[0]
    return facts


def unsteady_reasons(result: Result) -> list[str]:
    """Why a result's runs did not reach a steady state (bench.base.timing.StepTimer.steadiness), empty if they did."""
    return [
        reason
        for run in result.runs
        if run.steadiness and not run.steadiness.get("steady", True)
        for reason in run.steadiness.get("reasons", [])
    ]


def drift_of(results: Iterable[Result]) -> float | None:
    """How much the machine's speed moved over these results: the largest reference over the smallest, minus 1, over
    the readings the noise gates apply to (each run's start reading left out: Run.gated_reference)."""
    refs = reference_readings(results, gated=True)
    return max(refs) / min(refs) - 1 if len(refs) >= 2 else None


def ungated_readings(results: Iterable[Result]) -> list[float]:
    """The readings beside a process that gate nothing (Run.gated_reference: a record's start reading from before
    readings were warmed, a reading still warming up), which the drift line names apart."""
    results = list(results)
    every, gated = reference_readings(results), reference_readings(results, gated=True)
    left = list(every)
    for value in gated:
        left.remove(value)
    return left


def speedups(rows: list[RowFacts], base: Column, cells: CellJudge) -> dict[str, list[Ratio]]:
    """Per model: base / Keras 3 (best) of every row that has both, with its interval (a throughput speed-up at
    equal batch: above 1, Keras 3 (best) is faster)."""
    out: dict[str, list[Ratio]] = {}
    for f in rows:
        found = cells.ratio(f.best, f.cells.get(base))
        if found is not None and found.value > 0:
            out.setdefault(f.key.model, []).append(found)
    return out


def mean_speedup(ratios: list[Ratio] | None) -> Ratio | None:
    """A model's speed-up: the geometric mean of its rows' ratios with its interval (bench.base.stats.geometric_mean),
    over the rows whose two cells did the same work; where none did, not comparable, with why."""
    comparable = [r for r in ratios or [] if r.comparable]
    if comparable:
        return stats.geometric_mean(comparable)
    unlike = unlike_work(ratios)
    return unlike[0] if unlike else None


def unlike_work(ratios: list[Ratio] | None) -> list[Ratio]:
    """The ratios of rows whose cells did different work a step: left out of every mean, said apart."""
    return [r for r in ratios or [] if not r.comparable]


def keras3_verdict(speedup: Ratio | None) -> str:
    """A speed-up (other / Keras 3 best) read from Keras 3's side: `faster` when Keras 3 (best) is faster with
    confidence, `slower`, `same` or `inconclusive`."""
    return stats.verdict(speedup.inverse() if speedup is not None and speedup.value > 0 else None)


@dataclass
class PublishedRow:
    """A published Table 2 row: its figures (no interval: the paper gives none) and the fastest Keras 3 backends
    at the shown precision."""

    key: RowKey
    keras3_ms: dict[str, float]
    keras2_ms: float | None

    @property
    def best_ms(self) -> float | None:
        return min(self.keras3_ms.values()) if self.keras3_ms else None

    @property
    def winners(self) -> list[str]:
        if not self.keras3_ms:
            return []
        best = fmt_ms(self.best_ms)
        return [b for b, m in self.keras3_ms.items() if fmt_ms(m) == best]


def published_rows_facts() -> list[PublishedRow]:
    return [
        PublishedRow(key, {b: values[b] for b in KERAS3 if values[b] is not None}, values.get("keras2"))
        for key, values in read_published()[1].items()
    ]


def published_speedups(rows: list[PublishedRow]) -> dict[str, list[float]]:
    """Per model: the published Keras 2 / Keras 3 (best) of every row with both (the published Figure 1's bars)."""
    out: dict[str, list[float]] = {}
    for f in rows:
        if f.keras2_ms is not None and f.best_ms:
            out.setdefault(f.key.model, []).append(f.keras2_ms / f.best_ms)
    return out


def geometric(values: list[float]) -> float:
    return statistics.geometric_mean(values)


def brief_message(message: str) -> str:
    """A status message without its traceback's frames and TensorFlow's locators (the error's first line and its
    cause kept), saying where frames were left out; a message without either as it is."""
    lines, kept, frame_indent = LOCATOR.sub("", message).splitlines(), [], None
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if FRAME_LINE.match(line):
            frame_indent = indent
        elif frame_indent is not None and (not line.strip() or indent > frame_indent):
            continue  # a frame's source line, or the blank between frames
        else:
            frame_indent = None
            kept.append(line)
    if len(kept) == len(lines):
        return "\n".join(lines)
    return "\n".join(line for line in kept if line.strip()) + " (the traceback left out)"


def status_notes(rows: list[RowFacts]) -> tuple[list[str], dict[tuple[RowKey, Column], int]]:
    """The numbered notes under a table (one per distinct status message, numbered in table order) and each
    not-ok cell's note number."""
    texts: list[str] = []
    refs: dict[tuple[RowKey, Column], int] = {}
    for facts in rows:
        for column in COLUMNS:
            loaded = facts.cells.get(column)
            if loaded is None or loaded.result.status == "ok":
                continue
            message = md(brief_message(loaded.result.message or "no message recorded"))
            if len(message) > MESSAGE_LIMIT:
                message = message[:MESSAGE_LIMIT] + " … (the whole message is in the result file)"
            if message not in texts:
                texts.append(message)
            refs[(facts.key, column)] = texts.index(message) + 1
    return texts, refs


@dataclass
class TableAnalysis:
    """Everything one table's renderers need, computed once."""

    group: Group
    judge: Judge
    cells: CellJudge
    rows: list[RowFacts]
    notes: list[str]
    note_refs: dict[tuple[RowKey, Column], int]
    missing: list[RowKey]  # published rows (at this profile's batch sizes) with no result in this table
    references_ms: list[float]  # the drift probe's readings that gate a process
    ungated_references_ms: list[float]  # readings beside a process that gate nothing (cold, or an old start reading)
    drift: float | None
    speedup_keras2: dict[str, list[Ratio]]  # per model, Keras 2 / Keras 3 (best) of each row
    speedup_native: dict[Column, dict[str, list[Ratio]]]  # per native PyTorch variant, then per model
    published: list[PublishedRow]  # the published rows, paper profile only (others are not comparable)
    published_speedup_keras2: dict[str, list[float]]
    results_dir: Path | None = None
    # Another stack's table: today's table of the same profile and machine, which it is set beside (None: none)
    today: TableAnalysis | None = None
    family: Family | None = None  # how its comparisons were judged together

    @property
    def paper(self) -> bool:
        return self.group.profile == "paper"

    def estimate(self, loaded: Loaded | None) -> Estimate | None:
        """A cell's figure with its 95% interval (None unless ok)."""
        return self.cells.estimate(loaded)

    def ratio(self, a: Loaded | None, b: Loaded | None) -> Ratio | None:
        """B / A with its 95% interval; not decidable where a side is noisy, the processors differ or an interval
        covers steps only. None unless both are ok."""
        return self.cells.ratio(a, b)

    def noise(self, loaded: Loaded) -> Noise:
        """The noise gates of a cell: a noisy cell is shown, not ranked."""
        return self.cells.noise(loaded)

    def ok_cells(self) -> list[Loaded]:
        return [l for f in self.rows for l in f.cells.values() if l.result.status == "ok"]

    def rows_with(self, outcome: str) -> list[RowFacts]:
        return [f for f in self.rows if f.outcome == outcome]

    def noisy_cells(self) -> list[tuple[RowFacts, Column]]:
        return [(f, c) for f in self.rows for c in f.noisy]

    def unsteady_cells(self) -> int:
        return sum(1 for f in self.rows for l in f.cells.values() if unsteady_reasons(l.result))


def family(rows: list[RowFacts], cells: CellJudge) -> list[Ratio]:
    """Every comparison that gets a verdict in the table: each row's fastest Keras 3 backend against each other, Keras
    3 (best) against Keras 2 and native PyTorch in each row, and each model's mean speed-ups."""
    found: list[Ratio | None] = []
    for f in rows:
        if f.best is None:
            continue
        found += [cells.ratio(f.best, f.cells[Column(b, "default")]) for b in f.ranked[1:]]
        others = [f.cells[c] for c in (KERAS2, *NATIVE) if c in f.cells and f.cells[c] is not f.best]
        found += [cells.ratio(f.best, other) for other in others]
    for base in (KERAS2, *NATIVE):
        found += [mean_speedup(ratios) for ratios in speedups(rows, base, cells).values()]
    return [r for r in found if r is not None]


@dataclass(frozen=True)
class Family:
    """A table's comparisons judged together: how many could decide, and the Benjamini-Hochberg threshold each was
    judged at (a 5% false discovery rate over them)."""

    comparisons: int
    threshold: float


def analyse_group(group: Group, results_dir: Path | None = None) -> TableAnalysis:
    judge = Judge(group.results, results_dir)
    cells = CellJudge(judge)
    grid = [(key, row) for key, row in group.grid().items() if not get_model(key.model).study]  # studies: own pages
    rows = [row_facts(group.profile, key, row, cells) for key, row in grid]
    judged = Family(*stats.family_threshold(family(rows, cells)))
    cells.judge_as_family(judged.threshold)  # the verdicts again, each at the family's threshold
    rows = [row_facts(group.profile, key, row, cells) for key, row in grid]
    notes, refs = status_notes(rows)
    present = {f.key for f in rows}
    paper = group.profile == "paper"
    published = published_rows_facts() if paper else []
    return TableAnalysis(
        group=group,
        judge=judge,
        cells=cells,
        rows=rows,
        notes=notes,
        note_refs=refs,
        missing=[k for k, _ in expected_rows(group.profile) if k not in present],
        references_ms=reference_readings(group.results, gated=True),
        ungated_references_ms=ungated_readings(group.results),
        drift=drift_of(group.results),
        speedup_keras2=speedups(rows, KERAS2, cells),
        speedup_native={c: speedups(rows, c, cells) for c in NATIVE},
        published=published,
        published_speedup_keras2=published_speedups(published),
        results_dir=results_dir,
        family=judged,
    )


@dataclass
class Report:
    """A results folder, loaded and analysed once: the tables and the cells the registry no longer has."""

    items: list[Loaded]  # the current cells, the ones tabled
    retired: list[tuple[Loaded, str]] = field(default_factory=list)  # (result, why it is no longer in the registry)
    tables: list[TableAnalysis] = field(default_factory=list)


def analyse(results_dir: Path) -> Report:
    """Load (raising CorruptResult, naming the file, before anything is written) and analyse every table."""
    items = load_results(results_dir)
    # Archived results stay readable forever: a cell today's registry no longer has is listed, not tabled.
    retired = [(item, why) for item in items if (why := item.result.cell.why_not_in_registry())]
    current = [item for item in items if not item.result.cell.why_not_in_registry()]
    tables = [analyse_group(g, Path(results_dir)) for g in group_results(current)]
    todays = [t for t in tables if t.group.stack == "today"]
    for table in tables:
        if table.group.stack != "today":
            table.today = todays_table(table, todays)
    return Report(current, retired, tables)


def todays_table(table: TableAnalysis, todays: list[TableAnalysis]) -> TableAnalysis | None:
    """Today's table of the same profile and machine; where either side recorded no processor (results from before
    processors were), of the same hardware's name: set beside it, each ratio undecided by the Judge unless told to
    compare across processors ("processor: recorded on one side only")."""
    same = [t for t in todays if (t.group.profile, t.group.machine) == (table.group.profile, table.group.machine)]
    if same:
        return same[0]
    machine = lambda t: t.group.results[0].provenance.get("machine") or {}
    return next(
        (
            t
            for t in todays
            if t.group.profile == table.group.profile
            and hardware_label(machine(t)) == hardware_label(machine(table))
            and not (processor_tag(machine(t)) and processor_tag(machine(table)))
        ),
        None,
    )
