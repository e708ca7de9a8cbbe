"""Every comparison a table makes in a row, and whether each is decided: the fastest ranked Keras 3 backend against
each other Keras 3 backend (the ranking and its bold), and Keras 3 (best) against Keras 2 and native PyTorch eager
and compiled (the speed-ups). A comparison is decided when its verdict is faster, slower or the same (within the
equivalence band); a row is decided when every comparison it makes is, and it has one to make.

`make bench-all` adds processes to the cells of an undecided comparison (bench/run/runner.py,
bench/judge/replication.py) and says at its end which rows are decided and why the others are not.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bench.base import stats
from bench.judge.analysis import KERAS2, RowFacts, TableAnalysis
from bench.judge.replication import SequentialRule, spread_of, worth_more
from bench.record.load import NATIVE, Column, Loaded

DECIDED = (stats.FASTER, stats.SLOWER, stats.SAME)


@dataclass(frozen=True)
class Comparison:
    """B against A in one row: `ratio` is B / A with its interval (None: a side has no figure)."""

    a: Loaded
    b: Loaded
    what: str
    ratio: stats.Ratio | None

    @property
    def verdict(self) -> str:
        return stats.verdict(self.ratio)

    @property
    def decided(self) -> bool:
        return self.verdict in DECIDED

    @property
    def why_undecided(self) -> str:
        if self.decided:
            return ""
        if self.ratio is None or not self.ratio.decidable:
            return f"{self.what}: {self.ratio.reason if self.ratio is not None else 'a side has no figure'}"
        low, high = self.ratio.interval()
        return (f"{self.what}: {self.ratio.value:.3g}x ({low:.3g}-{high:.3g}) neither clear of 1 nor within "
                f"{stats.EQUIVALENCE_BAND:.0%}")  # fmt: skip


def row_comparisons(facts: RowFacts, table: TableAnalysis) -> list[Comparison]:
    best = facts.best
    if best is None:
        return []
    fastest = Column(facts.fastest, "default").header
    found = [
        Comparison(best, facts.cells[Column(b, "default")], f"{fastest} vs {Column(b, 'default').header}",
                   table.ratio(best, facts.cells[Column(b, "default")]))  # fmt: skip
        for b in [*facts.ranked[1:], *facts.unlike]  # a backend of another computation: not comparable, said so
    ]
    for column in (KERAS2, *NATIVE):
        other = facts.cells.get(column)
        if other is not None and other.result.status == "ok" and other is not best:
            found.append(Comparison(best, other, f"{fastest} vs {column.header}", table.ratio(best, other)))
    return found


def row_undecided(facts: RowFacts, table: TableAnalysis) -> list[str]:
    """Why the row is not decided (empty: it is): each undecided comparison, a noisy cell set aside, or no
    comparison to make."""
    reasons = [f"{c.header} noisy, set aside" for c in facts.noisy]
    comparisons = row_comparisons(facts, table)
    reasons += [c.why_undecided for c in comparisons if not c.decided]
    if not comparisons and not reasons:
        reasons.append("fewer than two cells with a figure to compare")
    return reasons


def log_spread(loaded: Loaded, table: TableAnalysis) -> float | None:
    """A cell's process-to-process spread: the standard deviation of its log process medians (its log standard error
    times the square root of its processes); None with fewer than two processes."""
    return spread_of(table.estimate(loaded))


def wanting_more(table: TableAnalysis, rule: SequentialRule) -> dict[str, str]:
    """The cells (by key) that another process could help decide, each with the comparison it is for: the cells below
    the rule's cap (every process counted, a set-aside one too) of every undecided comparison between two decidable
    sides whose interval still holds a difference of the rule's planning effect (bench/judge/replication.py
    worth_more). A comparison kept out of any verdict (a noisy side, processes of two processors) or one that has
    ruled out a difference worth finding gets none."""
    wanted: dict[str, str] = {}
    for facts in table.rows:
        for comparison in row_comparisons(facts, table):
            ratio = comparison.ratio
            if comparison.decided or ratio is None or not ratio.decidable or ratio.value <= 0:
                continue
            spreads = (log_spread(comparison.a, table), log_spread(comparison.b, table))
            if None in spreads:
                continue
            if not worth_more(ratio, rule):
                continue  # a difference worth finding is ruled out already
            for side in (comparison.a, comparison.b):
                if rule.another_allowed(len(side.result.runs)):
                    wanted.setdefault(side.result.cell.key, comparison.what)
    return wanted


def decided_lines(results_dir: Path, cells: list) -> list[str]:
    """At the end of a run: how many of its rows are decided, as the table of its folder judges them (the run's cells
    beside any earlier cell of the same table), and why each other is not."""
    from bench.judge.analysis import analyse_group
    from bench.record.load import group_results, load_results

    keys = {(c.profile, c.key) for c in cells}  # a key names a cell within its profile
    items = [i for i in load_results(results_dir) if not i.result.cell.why_not_in_registry()]
    lines: list[str] = []
    for group in group_results(items):
        if not any((i.result.cell.profile, i.result.cell.key) in keys for i in group.items):
            continue
        table = analyse_group(group, results_dir)
        rows = [f for f in table.rows if any((group.profile, l.result.cell.key) in keys for l in f.cells.values())]
        undecided = [(f, why) for f in rows if (why := row_undecided(f, table))]
        lines.append(f"rows decided: {len(rows) - len(undecided)} of {len(rows)} ({group.title})")
        lines += [f"  undecided: {f.key.label()} (batch {f.key.batch_size}): {'; '.join(why)}" for f, why in undecided]
    return lines


def say_decided(cells: list, results_dir: Path, echo=print) -> None:
    """Which of the cells' rows their folder's table decides, and why each other is not: after `bench run`, and
    after a Slurm submission's tasks have all ended."""
    from bench.base.errors import BenchError

    try:
        lines = decided_lines(results_dir, cells)
    except BenchError as e:  # an unreadable file elsewhere in the folder: `make table` will name it
        lines = [f"rows decided: not judged ({str(e).splitlines()[0]})"]
    for line in lines:
        echo(line)
