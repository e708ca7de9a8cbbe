"""GitHub Markdown tables: the one format of every table the suite writes (the report's pages, the memory plan's)."""
from __future__ import annotations

from typing import Any


def github_table(body: list[list[Any]], headers: list[str]) -> str:
    """A GitHub Markdown table, cells taken as text (numbers are already formatted)."""
    from tabulate import tabulate  # on use: the tools env has it; bench/report/__init__.py render says where not

    return tabulate(body, headers=headers, tablefmt="github", disable_numparse=True)
