"""A result in words, as the run's progress lines say it: its figure with its 95% interval, how its sampling ended."""
from __future__ import annotations

from typing import Any

from bench.stats import PROCESSES, STEPS_ONLY, Estimate

# `runs` below are bench.results.Run, not imported: results.py imports this module


def interval_text(found: Estimate | None, unit: str) -> str:
    """'12.3 ms/step, 95% interval 12.0-12.6 (3 processes)', or what the figure's interval stands on where it
    cannot decide (one process: steps only)."""
    if found is None:
        return "no figure"
    text = f"{found.center:.4g} {unit}"
    interval = found.interval()
    if interval is None:
        return f"{text}, no interval ({found.note or found.basis})"
    on = f"{found.processes} processes" if found.basis == PROCESSES else found.note or found.basis
    if found.basis == STEPS_ONLY:
        on = "one process, steps only"
    return f"{text}, 95% interval {interval[0]:.4g}–{interval[1]:.4g} ({on})"


def sampling_outcome(sampling: dict[str, Any] | None) -> str | None:
    """How one process's sampling ended (runs[].sampling, bench/timing.py): 'reached 2%', 'target not reached:
    capped at 5 s', 'fixed 100 steps'; None where it was not recorded."""
    if not isinstance(sampling, dict):
        return None
    rule = sampling.get("rule") or {}
    target, stopped = rule.get("target_half_width"), sampling.get("stopped_by")
    if stopped == "fixed":
        return f"fixed {sampling.get('steps')} steps"
    if sampling.get("reached") and target is not None:
        return f"reached {target:.0%}"
    cap = (
        f"{rule.get('max_s'):g} s" if stopped == "max_s" and rule.get("max_s") is not None
        else f"{rule.get('max_steps')} steps" if stopped == "max_steps" and rule.get("max_steps") is not None
        else str(stopped)
    )
    return f"target not reached: capped at {cap}"


def sampling_text(runs: list[Any]) -> str:
    """Each distinct sampling outcome of a cell's processes, with how many ended so when they differ."""
    outcomes = [o for r in runs if (o := sampling_outcome(r.sampling))]
    distinct = list(dict.fromkeys(outcomes))
    if len(distinct) <= 1:
        return distinct[0] if distinct else ""
    return ", ".join(f"{o} ({outcomes.count(o)} of {len(outcomes)})" for o in distinct)
