"""GitHub Markdown tables: the one format of every table the suite writes (the report's pages, the memory plan's)."""
from __future__ import annotations

from typing import Any


def github_table(body: list[list[Any]], headers: list[str]) -> str:
    """A GitHub Markdown table, cells taken as text (numbers are already formatted)."""
    from tabulate import tabulate  # on use: the tools env has it; bench/studies/table.py render says where not

    return tabulate(body, headers=headers, tablefmt="github", disable_numparse=True)


def reasons_once(body: list[list[Any]], column: int) -> tuple[list[list[Any]], list[str]]:
    """The rows with each reason that several cells of `column` give ("inconclusive (<reason>)") said once: the cells
    read "inconclusive [1]", and the notes, "[1] <reason>", follow the table. A reason of one cell stays in it."""
    split = [_verdict_and_reason(str(row[column])) for row in body]
    counts: dict[str, int] = {}
    for _, reason in split:
        if reason:
            counts[reason] = counts.get(reason, 0) + 1
    numbers = {reason: n for n, reason in enumerate((r for r, k in counts.items() if k > 1), 1)}
    rows = [[*row[:column], f"{verdict} [{numbers[reason]}]" if reason in numbers else row[column], *row[column + 1:]]
            for row, (verdict, reason) in zip(body, split)]  # fmt: skip
    return rows, [f"[{n}] {reason}" for reason, n in numbers.items()]


def _verdict_and_reason(text: str) -> tuple[str, str | None]:
    """'inconclusive (a (b) c)' -> ('inconclusive', 'a (b) c'); a text not ending in a parenthesis -> (text, None)."""
    if not text.endswith(")"):
        return text, None
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(text[i], 0)
        if depth == 0:
            verdict = text[:i].rstrip()
            return (verdict, text[i + 1:-1]) if verdict else (text, None)
    return text, None
