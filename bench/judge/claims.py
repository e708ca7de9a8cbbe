"""How the studies word a comparison: ours as a ratio with its interval, and a verdict that says why where it decides
nothing. The statistics are bench/base/stats.py's and which comparisons can decide is the Judge's
(bench/judge/__init__.py); this module only words them, so that the generate, tuning, overhead and grid sections say the
same thing the same way. Standard library only (the grid's findings are pure functions of numbers).
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from bench.base import stats
from bench.base.stats import INCONCLUSIVE, STEPS_ONLY, Ratio, fmt_factor, fmt_ratio

if TYPE_CHECKING:
    from bench.judge import Judge
    from bench.record.results import Result

NOT_MEASURED = "not measured"
# a one-process cell borrows a process spread only from a noise study of its own profile (bench/judge/noise_file.py)
ONE_PROCESS_CELL = ("one process per cell, and no process spread measured for its profile on this machine; re-run the "
                    "cells with REPEATS=3, or `make noise PROFILE=<their profile>`")
ONE_PROCESS_COLUMN = ("one process per column, and no process spread measured for this workload on this machine (a "
                      "noise study of other cells lends none)")


def label(result: Result) -> str:
    """A cell as a reason names it: its backend, and its variant where that is not the default."""
    cell = result.cell
    return cell.backend if cell.variant == "default" else f"{cell.backend} {cell.variant}"


def judged(judge: Judge, a: Result, b: Result, one_process: str = ONE_PROCESS_CELL) -> Ratio | None:
    """B / A as the Judge decides it, with its reason worded for a reader: a noisy side named, and a side of one
    process whose machine has no measured process spread saying how to measure it. None unless both cells are ok."""
    found = judge.ratio(a, b)
    if found is None or found.decidable:
        return found
    reason = found.reason
    for side, result in (("A", a), ("B", b)):
        reason = reason.replace(f"{side} noisy: ", f"{label(result)} noisy: ")
        estimate = judge.estimate(result)
        if estimate is not None and estimate.basis == STEPS_ONLY and estimate.note:
            reason = reason.replace(estimate.note, one_process)
    return dataclasses.replace(found, reason="; ".join(dict.fromkeys(reason.split("; "))))


def ours(r: Ratio | None) -> str:
    """Our ratio as printed beside a verdict: with its 95% interval where it can decide; the value alone where it
    cannot (its verdict says why), so that no interval that covers step noise only is read as the cell's."""
    if r is None:
        return "–"
    return fmt_ratio(r) if r.decidable else fmt_factor(r.value)


def _worded(verdict: str, r: Ratio | None, straddles: str) -> str:
    if r is not None and not r.comparable:
        return f"{stats.NOT_COMPARABLE} ({r.reason})"
    if verdict != INCONCLUSIVE:
        return verdict
    if r is None:
        return NOT_MEASURED
    if not r.decidable or r.interval() is None:
        return f"{INCONCLUSIVE} ({r.reason or 'no interval'})"
    return f"{INCONCLUSIVE} ({straddles})"


# A published ratio holds here when our ratio's whole 95% interval lies within this factor of it, either way (and, for
# a claimed difference, its size on a log scale too: bench/base/stats.py claim_band), and does not hold when it lies
# wholly outside (bench/base/stats.py claim_within): the framework-overhead study's findings and the generate findings
# alike.
HOLDS_FACTOR = 1.5


def within(r: Ratio | None, claimed: float, factor: float) -> str:
    """A published ratio re-tested (bench/base/stats.py claim_within), worded: holds, does not hold, inconclusive (why)
    or not measured."""
    low, high = stats.claim_band(claimed, factor)
    return _worded(
        stats.claim_within(r, claimed, factor),
        r,
        f"the interval reaches across an edge of {fmt_factor(low, unit='')}–{fmt_factor(high)}",
    )


def above(r: Ratio | None, threshold: float) -> str:
    """A published "more than `threshold`" re-tested (bench/base/stats.py claim_above), worded."""
    return _worded(stats.claim_above(r, threshold), r, f"the interval contains {fmt_factor(threshold)}")


def compared(r: Ratio | None, band: float = stats.EQUIVALENCE_BAND) -> str:
    """B against A (bench/base/stats.py verdict): faster, slower, same, inconclusive (why) or not measured."""
    return _worded(
        stats.verdict(r, band), r, f"the interval contains 1× and reaches beyond ±{band:.0%} of it"
    )
