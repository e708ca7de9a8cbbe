"""The noise study's figures from its verdicts and process medians: the per-cell analytic minimum detectable effect,
the spread pooled over rounds, the calibration probe's detection rule and MDE, and the A/A tally."""
from __future__ import annotations

import math
import statistics
from collections import Counter
from typing import Any

from bench.base import stats

DETECT_SHARE = 7 / 8  # the calibration MDE: the smallest slowdown called slower in at least this share of pairs
MDE_POWER = 0.80  # the analytic MDE's power


def analytic_mde(log_sd: float, repeats: int, power: float = MDE_POWER, confidence: float = stats.CONFIDENCE) -> float:
    """The smallest slowdown a comparison of `repeats` processes a side detects with `power`, given a process-to-
    process spread `log_sd` (of ln(median)): exp((t(1 - alpha/2, dof) + t(power, dof)) * s * sqrt(2 / repeats)) - 1,
    dof = 2 * repeats - 2."""
    if repeats < 2:
        raise ValueError(f"the analytic MDE needs at least 2 processes a side, got {repeats}")
    return runs_mde(log_sd, 0.0, math.inf, repeats, 1, power, confidence)  # one run a side, no run spread


def runs_mde(
    log_sd: float, run_sd: float, run_dof: float, repeats: int, runs: int, power: float = MDE_POWER,
    confidence: float = stats.CONFIDENCE,
) -> float:
    """The smallest slowdown a comparison of separate runs detects with `power`: `runs` runs a side of `repeats`
    processes each, a process spread `log_sd` and the machine's run-to-run spread `run_sd` (estimated with `run_dof`):
    exp((t(1 - alpha/2, dof) + t(power, dof)) * sqrt(2 (s^2 / (repeats runs) + s_run^2 / runs))) - 1, dof by
    Welch-Satterthwaite over the two variance components (the processes' spread taken within their runs, as
    stats.estimate_across_runs takes it)."""
    if repeats < 2 or runs < 1:
        raise ValueError(f"the MDE across runs needs 2 processes a run and 1 run a side, got {repeats} and {runs}")
    variances = [2 * log_sd**2 / (repeats * runs), 2 * run_sd**2 / runs]
    dof = stats.welch_dof(variances, [2 * runs * (repeats - 1), run_dof])  # the processes' spread within runs
    factor = stats.t_quantile((1 + confidence) / 2, dof) + stats.t_quantile(power, dof)
    return math.exp(factor * math.sqrt(sum(variances))) - 1


def pooled_spread(groups: list[list[float]]) -> tuple[float, int] | None:
    """The standard deviation of ln(median) pooled over groups (rounds), each about its own mean, and its degrees of
    freedom (processes less groups); None without any degree of freedom."""
    logs = [[math.log(m) for m in g if m > 0] for g in groups]
    logs = [g for g in logs if g]
    dof = sum(len(g) for g in logs) - len(logs)
    if dof < 1:
        return None
    squares = sum((x - statistics.fmean(g)) ** 2 for g in logs for x in g)
    return math.sqrt(squares / dof), dof


def required_pairs(pairs: int) -> int:
    """How many of `pairs` must be called slower for a slowdown to count as detected (7 of 8)."""
    return math.ceil(DETECT_SHARE * pairs - 1e-9)


def verdict_counts(verdicts: list[str | None]) -> dict[str, int]:
    found = Counter(verdicts)
    counts = {v: found.get(v, 0) for v in (stats.FASTER, stats.SLOWER, stats.SAME, stats.INCONCLUSIVE)}
    if found.get(None):
        counts["not compared"] = found[None]
    return counts


def aa_summary(verdicts: list[str | None]) -> dict[str, Any]:
    counts = verdict_counts(verdicts)
    compared = sum(counts[v] for v in (stats.FASTER, stats.SLOWER, stats.SAME, stats.INCONCLUSIVE))
    wrong = counts[stats.FASTER] + counts[stats.SLOWER]
    return {
        "pairs": compared,
        **counts,
        "false_positive_rate": wrong / compared if compared else None,
    }


def calibration_mde(power: list[dict[str, Any]], pairs: int) -> dict[str, Any]:
    need = required_pairs(pairs)
    detected = [p["slowdown"] for p in power if p["slowdown"] > 0 and p["pairs"] and p[stats.SLOWER] >= need]
    smallest = min(detected) if detected else None
    tried = [p["slowdown"] for p in power if p["slowdown"] > 0]
    return {
        "slowdown": smallest,
        "rule": f"the smallest slowdown called slower in at least {need} of {pairs} pairs",
        "required": need,
        "note": "" if smallest is not None else (
            "none of the slowdowns tried (" + ", ".join(f"+{s:.0%}" for s in tried) + f") was called slower in "
            f"{need} of {pairs} pairs" if tried else "no slowdown above 0 was tried"
        ),
    }
