"""A stack's table set beside today's (the 2024 stack, issue 13): per cell, both medians and today's speed-up.

Only in another stack's table, and only where today's table of the same profile and machine exists: the same
hardware and profile, so the ratio is the frameworks' progress between the stacks (plus noise).
"""
from __future__ import annotations

from bench.report.analysis import TableAnalysis
from bench.report.load import COLUMNS
from bench.report.sections import Page
from bench.report.text import fmt_ms, github_table


def stacks_section(table: TableAnalysis, page: Page) -> list[str]:
    today = table.today
    if today is None:
        return []
    today_rows = {f.key: f for f in today.rows}
    body = []
    for facts in table.rows:
        other = today_rows.get(facts.key)
        for column in COLUMNS:
            old = facts.ms(column)
            new = other.ms(column) if other else None
            if old is None and new is None:
                continue
            ratio = f"{old / new:.2f}x" if old and new else "—"
            body.append([facts.key.label(), str(facts.key.batch_size), column.header,
                         fmt_ms(old) if old is not None else "—", fmt_ms(new) if new is not None else "—", ratio])
    if not body:
        return []
    return [
        f"The same cells on today's stack (table {today.group.title}), same profile and machine. "
        f"Speed-up = this stack's median / today's (above 1: today's stack is faster); — where either cell has no number.",
        "",
        github_table(
            body, ["row", "batch", "column", f"{table.group.stack} (median)", "today (median)", "today's speed-up"]
        ),
    ]
