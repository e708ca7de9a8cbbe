"""The analysis, done once per table: per-row facts (medians, winners, unit, whether the ranking is within the
noise), the table's status notes, machine drift and the speedups. Every renderer reads these objects; none
recomputes them, so the Markdown, the findings and the figures cannot disagree.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bench.registry import get_model
from bench.report.load import (
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
from bench.report.text import distinct, fmt_ms, md
from bench.results import Result

NOISY_CV = 0.10  # a cell whose steps vary more than this is flagged under its table
KERAS2 = Column("keras2", "default")
MESSAGE_LIMIT = 400  # characters of a status message quoted in a note; the rest stays in the result file


def median(loaded: Loaded | None) -> float | None:
    if loaded is None or loaded.result.status != "ok":
        return None
    return loaded.result.summary().median


@dataclass
class RowFacts:
    key: RowKey
    cells: dict[Column, Loaded]
    keras3_ms: dict[str, float]  # backend -> median, Keras 3 backends with a number
    winners: list[str]  # fastest Keras 3 backend(s), equal at the shown precision
    unit: str | None = None  # for the row label, when every cell has the same unit and it is not ms/step
    unit_in_cell: bool = False  # the cells' units differ, so each cell names its own
    within_noise: bool = False  # see within_noise()
    published_batch: int | None = None  # the published row's batch size; None: not a published row

    @property
    def best_ms(self) -> float | None:
        return min(self.keras3_ms.values()) if self.keras3_ms else None

    def ms(self, column: Column) -> float | None:
        return median(self.cells.get(column))


def winners_of(ms: dict[str, float]) -> list[str]:
    if not ms:
        return []
    best = fmt_ms(min(ms.values()))
    return [b for b, m in ms.items() if fmt_ms(m) == best]


def row_facts(profile: str, key: RowKey, cells: dict[Column, Loaded]) -> RowFacts:
    keras3 = {b: m for b in KERAS3 if (m := median(cells.get(Column(b, "default")))) is not None}
    facts = RowFacts(key, cells, keras3, winners_of(keras3), published_batch=published_batch(profile, key))
    units = distinct(l.result.unit for l in cells.values() if l.result.status == "ok")
    facts.unit_in_cell = len(units) > 1
    if len(units) == 1 and units[0] != "ms/step":
        facts.unit = units[0]
    facts.within_noise = within_noise(facts)
    return facts


def unsteady_reasons(result: Result) -> list[str]:
    """Why a result's runs did not reach a steady state (bench.timing.StepTimer.steadiness), empty if they did."""
    return [
        reason
        for run in result.runs
        if run.steadiness and not run.steadiness.get("steady", True)
        for reason in run.steadiness.get("reasons", [])
    ]


def references_ms(results: Iterable[Result]) -> list[float]:
    """The drift probe's figures (a fixed matmul timed before and after each cell process) of these results."""
    return [
        v
        for r in results
        for run in r.runs
        for v in (run.reference or {}).values()
        if isinstance(v, (int, float)) and v > 0
    ]


def drift_of(results: Iterable[Result]) -> float | None:
    """How much the machine's speed moved over these results: the largest reference over the smallest, minus 1."""
    refs = references_ms(results)
    return max(refs) / min(refs) - 1 if len(refs) >= 2 else None


def within_noise(facts: RowFacts) -> bool:
    """The row's ranking is not resolved: the gap between its two fastest Keras 3 backends is smaller than their
    spread (cv) or than the machine's drift while they ran."""
    ranked = sorted(facts.keras3_ms.items(), key=lambda kv: kv[1])
    if len(ranked) < 2:
        return False
    (first, best), (second, runner_up) = ranked[:2]
    results = [facts.cells[Column(b, "default")].result for b in (first, second)]
    noise = max([r.summary().cv for r in results] + [drift_of(results) or 0.0])
    return runner_up / best - 1 < noise


def speedups(rows: list[RowFacts], base: Callable[[RowFacts], float | None]) -> dict[str, list[float]]:
    """Per model: base_ms / Keras 3 (best) ms of every row that has both (a throughput speedup at equal batch)."""
    out: dict[str, list[float]] = {}
    for f in rows:
        b = base(f)
        if b is not None and f.best_ms:
            out.setdefault(f.key.model, []).append(b / f.best_ms)
    return out


def published_facts() -> list[RowFacts]:
    """The published Table 2 as row facts (no cells), so its winners and speedups come from the same code."""
    facts = []
    for key, values in read_published()[1].items():
        keras3 = {b: values[b] for b in KERAS3 if values[b] is not None}
        facts.append(RowFacts(key, {}, keras3, winners_of(keras3)))
    return facts


def published_keras2(facts: RowFacts) -> float | None:
    return read_published()[1].get(facts.key, {}).get("keras2")


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
            message = md(loaded.result.message or "no message recorded")
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
    rows: list[RowFacts]
    notes: list[str]
    note_refs: dict[tuple[RowKey, Column], int]
    missing: list[RowKey]  # published rows (at this profile's batch sizes) with no result in this table
    references_ms: list[float]
    drift: float | None
    noisy_cells: int
    unsteady_cells: int
    speedup_keras2: dict[str, list[float]]  # per model, Keras 3 (best) over Keras 2
    speedup_native: dict[Column, dict[str, list[float]]]  # per native PyTorch variant, then per model
    published: list[RowFacts]  # the published rows, paper profile only (others are not comparable)
    published_speedup_keras2: dict[str, list[float]]
    # Another stack's table: today's table of the same profile and machine, which it is set beside (None: none)
    today: TableAnalysis | None = None

    @property
    def paper(self) -> bool:
        return self.group.profile == "paper"

    @property
    def unresolved_rows(self) -> int:
        return sum(1 for f in self.rows if f.within_noise)

    def ok_cells(self) -> list[Loaded]:
        return [l for f in self.rows for l in f.cells.values() if l.result.status == "ok"]


def analyse_group(group: Group) -> TableAnalysis:
    # A study's models (bench/report/tuning.py shows them) are no rows of the published table.
    rows = [
        row_facts(group.profile, key, cells) for key, cells in group.grid().items() if not get_model(key.model).study
    ]
    notes, refs = status_notes(rows)
    present = {f.key for f in rows}
    paper = group.profile == "paper"
    published = published_facts() if paper else []
    return TableAnalysis(
        group=group,
        rows=rows,
        notes=notes,
        note_refs=refs,
        missing=[k for k, _ in expected_rows(group.profile) if k not in present],
        references_ms=references_ms(group.results),
        drift=drift_of(group.results),
        noisy_cells=sum(
            1 for f in rows for l in f.cells.values() if l.result.status == "ok" and l.result.summary().cv > NOISY_CV
        ),
        unsteady_cells=sum(1 for f in rows for l in f.cells.values() if unsteady_reasons(l.result)),
        speedup_keras2=speedups(rows, lambda f: f.ms(KERAS2)),
        speedup_native={c: speedups(rows, lambda f, c=c: f.ms(c)) for c in NATIVE},
        published=published,
        published_speedup_keras2=speedups(published, published_keras2),
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
    tables = [analyse_group(g) for g in group_results(current)]
    todays = {(t.group.profile, t.group.machine): t for t in tables if t.group.stack == "today"}
    for table in tables:
        if table.group.stack != "today":
            table.today = todays.get((table.group.profile, table.group.machine))
    return Report(current, retired, tables)
