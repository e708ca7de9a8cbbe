"""What a result file's reader checks beyond its schema: the cell's fields, and stored figures and an interval that
are the ones its raw step times give."""
from __future__ import annotations

import math
from typing import Any

# `result` below is a bench.record.results.Result, not imported: results.py imports these checks


CELL_TEXT_FIELDS = ("backend", "model", "task", "profile", "variant")


def check_cell_schema(cell: Any) -> None:
    """The cell's shape and value ranges, without asking the registry whether it still has it."""
    if not isinstance(cell, dict):
        raise ValueError("cell is not a JSON object")
    for name in CELL_TEXT_FIELDS:
        if not isinstance(cell.get(name), str) or not cell[name]:
            raise ValueError(f"cell {name} must be a non-empty string, got {cell.get(name)!r}")
    if "stack" in cell and (not isinstance(cell["stack"], str) or not cell["stack"]):
        raise ValueError(f"cell stack must be a non-empty string, got {cell['stack']!r}")
    for name, minimum in (("batch_size", 1), ("timed_steps", 1), ("warmup_steps", 0)):
        value = cell.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(f"cell {name.replace('_', ' ')} must be an integer >= {minimum}, got {value!r}")
    most = cell.get("max_timed_steps")  # absent or null: exactly timed_steps (a fixed count)
    if most is not None and (isinstance(most, bool) or not isinstance(most, int) or most < cell["timed_steps"]):
        raise ValueError(f"cell max timed steps must be null or an integer >= timed steps, got {most!r}")


def check_stored_figures(data: dict[str, Any], result: Any) -> None:
    """The statistics a file stores must be those of its raw step times: the table and the export recompute from
    the raw times, so a file whose summary says otherwise (NaN, -1, an edited median) would show another figure."""
    pairs = [("summary", data.get("summary"), result.summary())]
    pairs += [
        (f"runs[{i}].stats", raw["stats"], run.stats())
        for i, (raw, run) in enumerate(zip(data["runs"], result.runs))
        if "stats" in raw
    ]
    for where, stored, computed in pairs:
        if computed is None:
            if stored is not None:
                raise ValueError(f"{where} is stored but its runs have no timed steps to give one")
            continue
        if not isinstance(stored, dict):
            raise ValueError(f"{where} is {stored!r}, but the raw step times give a median of {computed.median!r}")
        for name, value in computed.to_dict().items():
            kept = stored.get(name)
            if (
                isinstance(kept, bool)
                or not isinstance(kept, (int, float))
                or not math.isclose(kept, value, rel_tol=1e-9, abs_tol=1e-9)
            ):
                raise ValueError(
                    f"{where} {name} is {kept!r}, but the raw step times give {value!r}: the file and the table "
                    "would disagree"
                )


def check_stored_interval(data: dict[str, Any], result: Any) -> None:
    """A stored interval must be the one its raw steps give (the report recomputes it; absent in older files)."""
    if "interval" not in data:
        return
    stored, found = data["interval"], result.estimate()
    computed = found.to_dict() if found else None
    if computed is None or stored is None:
        if computed != stored:
            raise ValueError(f"interval is {stored!r}, but the raw step times give {computed!r}")
        return
    if not isinstance(stored, dict):
        raise ValueError(f"interval is {stored!r}, not an object")
    for name, value in computed.items():
        kept = stored.get(name)
        same = (
            kept == value
            if value is None or isinstance(value, str)
            else isinstance(kept, (int, float)) and not isinstance(kept, bool)
            and math.isclose(kept, value, rel_tol=1e-9, abs_tol=1e-12)
        )
        if not same:
            raise ValueError(
                f"interval {name} is {kept!r}, but the raw step times give {value!r}: "
                "the file and the table would disagree"
            )
