"""The toy study's part of RESULTS.md: once a machine, the count of its table's cells."""
from __future__ import annotations

from bench.report.sections import Section


def toy_section(table, page) -> list[str]:
    return [f"The toy study counted {len(table.rows)} rows in this machine's table."]


SECTIONS = [Section("Toy study", toy_section, per_machine=True)]
