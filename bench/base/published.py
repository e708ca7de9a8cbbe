"""The published table (bench/data/keras3_benchmarks_2024.csv): its rows and its per-step figures. Stdlib only,
and it imports nothing of bench/, so the registry, the model specs, the estimator and the report all read it
without importing each other.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import bench  # the package alone, for its folder: the data stand in bench/data/ wherever this module does

DATA_DIR = Path(bench.__file__).resolve().parent / "data"  # the published tables and findings, each a CSV
REFERENCE_CSV = DATA_DIR / "keras3_benchmarks_2024.csv"
# The published table's figure column of each backend it has (native PyTorch has none).
PUBLISHED_COLUMNS = {
    "keras2": "keras2_tensorflow",
    "tensorflow": "keras3_tensorflow",
    "jax": "keras3_jax",
    "torch": "keras3_torch",
}
# The published procedure (keras-benchmarks v0.0.5; the CSV's note): each figure is the mean of 100 steps after the
# first, in one process a cell. `bench run --exact` (make ... EXACT=1) runs it: this many timed steps, one process.
PUBLISHED_TIMED_STEPS = 100
PUBLISHED_PROCESSES = 1


@dataclass(frozen=True)
class Row:
    """One row of the published table: a model's task at its published batch size."""

    model: str
    task: str
    batch_size: int


def _records() -> list[dict[str, str]]:
    with REFERENCE_CSV.open() as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def published_note() -> list[str]:
    """The CSV's source note: its comment lines, without the '#'."""
    with REFERENCE_CSV.open() as f:
        return [line.lstrip("#").strip() for line in f if line.startswith("#")]


@cache
def published_rows() -> tuple[Row, ...]:
    return tuple(Row(r["model"], r["task"], int(r["batch_size"])) for r in _records())


def published_ms() -> dict[tuple[str, str, int], dict[str, float | None]]:
    """(model, task, batch size) -> {backend: published ms/step, or None where the table says NA}, for the
    backends of PUBLISHED_COLUMNS."""
    return {
        (r["model"], r["task"], int(r["batch_size"])): {
            b: None if r[c].strip() == "NA" else float(r[c]) for b, c in PUBLISHED_COLUMNS.items()
        }
        for r in _records()
    }
