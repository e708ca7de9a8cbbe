"""What the judging detects on product cells: a real per-step slowdown (tests/fixtures/step_delay: each timed step
held for a share of its own length after its work is synchronised) on side B of a cell's pairs, A the same cell
untouched, judged as `make compare` judges.

Inside one run: each pair's A and B ran interleaved in one invocation (one run id), as a table's columns do. Across
runs: A of one pair against B of the next, minutes apart and under different run ids, so the comparison carries the
machine's run-to-run spread as `make compare` of two separate runs does. A slowdown called slower is right;
inconclusive is a miss; same or faster is wrong.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import stats
from bench.errors import BenchError
from bench.provenance import REPO_ROOT
from bench.registry import Cell

FIXTURE = REPO_ROOT / "tests" / "fixtures" / "step_delay"
DELAY_VARIABLE = "BENCH_TEST_STEP_DELAY"


def delay_environment(share: float) -> dict[str, str]:
    """The variables that slow a cell process's every timed step by `share` (0.2: +20%) through the fixture."""
    if not (FIXTURE / "sitecustomize.py").is_file():
        raise BenchError(f"the step-delay fixture is missing ({FIXTURE / 'sitecustomize.py'}): a checkout with tests/")
    paths = [str(FIXTURE), str(REPO_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {"PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)), DELAY_VARIABLE: f"{share:g}"}


@dataclass
class DelayRecord:
    """One cell at one delay: each pair's verdict inside its run, and each across-run verdict."""

    cell: Cell
    share: float
    within: list[dict[str, Any]] = field(default_factory=list)  # pair k: compare's pair for A(k) vs B(k)
    across: list[dict[str, Any]] = field(default_factory=list)  # A(k) vs B(k+1): separate runs
    folders: list[dict[str, str]] = field(default_factory=list)  # pair k: side -> its folder, relative

    def to_dict(self) -> dict[str, Any]:
        c = self.cell
        return {
            "key": c.key,
            "cell": f"{c.backend} {c.model} {c.task} batch={c.batch_size} {c.variant}",
            "share": self.share,
            "within": outcome_counts(self.within),
            "across": outcome_counts(self.across),
            "pairs": [{"within": pair_summary(w), "folders": f} for w, f in zip(self.within, self.folders)],
            "across_pairs": [pair_summary(a) for a in self.across],
        }


def pair_summary(pair: dict[str, Any]) -> dict[str, Any]:
    return {k: pair.get(k) for k in ("verdict", "ratio", "low", "high", "reason")}


def outcome_counts(pairs: list[dict[str, Any]]) -> dict[str, int]:
    """Slower is right (detected), inconclusive a miss, same or faster wrong, not compared (a side failed) apart."""
    verdicts = [p.get("verdict") for p in pairs]
    return {
        "pairs": len(verdicts),
        "detected": verdicts.count(stats.SLOWER),
        "missed": verdicts.count(stats.INCONCLUSIVE),
        "wrong": verdicts.count(stats.SAME) + verdicts.count(stats.FASTER),
        "not_compared": sum(v not in (stats.SLOWER, stats.INCONCLUSIVE, stats.SAME, stats.FASTER) for v in verdicts),
    }


def across_pairs(a_folders: list[Path], b_folders: list[Path]) -> list[tuple[Path, Path]]:
    """A of pair k against B of pair k + 1 (the last A against the first B): each side from another run."""
    n = len(a_folders)
    return [(a_folders[k], b_folders[(k + 1) % n]) for k in range(n)] if n > 1 else []
