"""A stack's table set beside today's (the 2024 stack): per cell, both figures and today's speed-up with
its 95% interval and verdict.

Only in another stack's table, and only where today's table of the same profile and machine exists: the same
hardware and profile, so the ratio is the frameworks' progress between the stacks (plus noise, which the interval
and the verdict account for).
"""
from __future__ import annotations

from bench.base import stats
from bench.base.tables import github_table
from bench.judge import Judge
from bench.judge.analysis import TableAnalysis
from bench.record.load import COLUMNS
from bench.record.text import fmt_ms, recorded
from bench.report.sections import Page

# The verdict of this stack's figure over today's (B / A with A today's), read from today's side.
TODAY_VERDICT = {
    stats.SLOWER: "today faster",
    stats.FASTER: "today slower",
    stats.SAME: "same",
    stats.INCONCLUSIVE: "inconclusive",
    stats.NOT_COMPARABLE: "not comparable",
}


def stacks_section(table: TableAnalysis, page: Page) -> list[str]:
    today = table.today
    if today is None:
        return []
    # One judge over both tables' cells: the drift probe's quiet value is the lowest reading of either.
    judge = Judge(table.group.results + today.group.results, table.results_dir)
    today_rows = {f.key: f for f in today.rows}
    body = []
    for facts in table.rows:
        other = today_rows.get(facts.key)
        for column in COLUMNS:
            old = facts.ms(column)
            new = other.ms(column) if other else None
            if old is None and new is None:
                continue
            found = (
                judge.ratio(other.cells[column].result, facts.cells[column].result) if old and new else None
            )
            ratio = f"{stats.fmt_ratio(found)} {TODAY_VERDICT[stats.verdict(found)]}" if found else "—"
            body.append([facts.key.label(), str(facts.key.batch_size), column.header,
                         fmt_ms(old) if old is not None else "—", fmt_ms(new) if new is not None else "—", ratio])
    if not body:
        return []
    return [
        f"The same cells on today's stack (table {recorded(today.group.title)}), same profile and machine. "
        "Speed-up = this "
        "stack's figure / today's (above 1: today's stack is faster), with its 95% interval and verdict: today faster "
        "(the whole interval above 1), today slower (below 1), same (inside 1/1.05 to 1.05), or inconclusive "
        "(neither, or an interval that covers one process's steps only, a noisy cell, different processors); — where "
        "either cell has no number.",
        "",
        github_table(
            body, ["row", "batch", "column", f"{table.group.stack} (figure)", "today (figure)", "today's speed-up"]
        ),
    ]
