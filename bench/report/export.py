"""`make export`: every current result file as one flat CSV row, for spreadsheets and pandas.

Figures are in the row's `unit` (ms per step/call); a cell that is not ok has empty figures and its status.
Rows are in result-file order (profile/machine/cell key), so the output is deterministic.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from bench.base.atomic import outputs_beside, refuse_to_replace, write_text_atomic
from bench.base.errors import BenchError
from bench.base.generate_split import result_split
from bench.base.provenance import machine_label
from bench.record.load import load_results
from bench.record.results import Result

COLUMNS = (
    "profile", "machine", "stack", "backend", "model", "task", "batch", "variant", "status", "unit",
    "median", "p10", "p90", "repeats", "repeat_cv", "tokens_per_s", "commit", "lock_sha256", "file",
    # generate only (bench/base/generate_split.py): time to first token, time per output token, decode tokens/s, the
    # prefill's positions (padding included), the agreement check's largest relative error over the runs
    "ttft_ms", "tpot_ms", "decode_tokens_per_s", "prefill_positions", "split_agreement_error",
)


def lock_sha256(result: Result) -> str:
    """The sha256 of the env's requirements.txt the cell ran with (empty for a cell that never ran)."""
    for run in result.runs:
        sha = ((run.process or {}).get("environment") or {}).get("lock_sha256")
        if sha:
            return sha
    return ""


def row(result: Result, file: str) -> dict[str, Any]:
    cell, summary, spread = result.cell, result.summary(), result.repeat_spread()
    return {
        "profile": cell.profile,
        "machine": machine_label(result.provenance.get("machine", {})),
        "stack": cell.stack,  # the software stack: today's or 2024's (keras-benchmarks v0.0.5's pins)
        "backend": cell.backend,
        "model": cell.model,
        "task": cell.task,
        "batch": cell.batch_size,
        "variant": cell.variant,
        "status": result.status,
        "unit": result.unit,
        "median": summary.median if summary else "",
        "p10": summary.p10 if summary else "",
        "p90": summary.p90 if summary else "",
        "repeats": len(result.runs),
        # cv of the per-run medians: empty with a single run, where there is no spread to report
        "repeat_cv": spread.cv if spread else "",
        "tokens_per_s": result.tokens_per_s() or "",
        "commit": (result.provenance.get("git") or {}).get("commit") or "",
        "lock_sha256": lock_sha256(result),
        "file": file,
        **split_columns(result),
    }


def split_columns(result: Result) -> dict[str, Any]:
    """The generate split's columns, empty for every other cell and for results written before it."""
    split = result_split(result) or {}
    return {"ttft_ms": split.get("ttft_ms") or "", "tpot_ms": split.get("tpot_ms") or "",
            "decode_tokens_per_s": split.get("decode_tokens_per_s") or "",
            "prefill_positions": split.get("prefill_positions") or "",
            "split_agreement_error": "" if split.get("agreement_error") is None else split["agreement_error"]}


def rows(results_dir: Path) -> list[dict[str, Any]]:
    """One row per current result file; the first unreadable file raises CorruptResult naming itself."""
    return [row(loaded.result, loaded.path) for loaded in load_results(results_dir)]


def to_csv(table: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(table)
    return buffer.getvalue()


def export(results_dir: Path, out: Path | None = None) -> tuple[Path, int]:
    """Write the CSV (default <results-dir>/results.csv); returns its path and the number of rows."""
    table = rows(results_dir)
    if not table:  # a mistyped RESULTS= must not end in an empty CSV in a new folder
        raise BenchError(f"no result files under {results_dir}: nothing to export (is the results folder right?)")
    out = out or results_dir / "results.csv"
    refuse_to_replace(out, lambda head: head.startswith(",".join(COLUMNS[:2]).encode() + b","), "the CSV's output")
    outputs_beside(out, (".csv",), "the CSV's output", "the export")
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, to_csv(table))
    return out, len(table)
