"""A result in words, as the run's progress lines say it: its figure with its 95% interval, how its sampling ended."""
from __future__ import annotations

from typing import Any

from bench.base.stats import PROCESSES, STEPS_ONLY, Estimate

# `runs` below are bench.record.results.Run, not imported: results.py imports this module


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
    """How one process's sampling ended (runs[].sampling, bench/base/timing.py): 'reached 2%', 'target not reached:
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


LINE_WIDTH = 200  # the most a finished cell's console line holds, its indent included (the rest: its file and -v)
ITEM_CHARS = 80  # a word after the figure at most
KEY_CHARS = 32  # a key is shortened to this before any word after the figure is left off
ELLIPSIS = "…"


def shortened(text: str, chars: int, middle: bool = False) -> str:
    """`text` in at most `chars` characters: cut at its end, or in its middle (a cell key's backend and variant are
    both telling), marked with an ellipsis."""
    if len(text) <= chars:
        return text
    if chars <= 1:
        return ELLIPSIS[:chars]
    if not middle:
        return text[: chars - 1] + ELLIPSIS
    head = chars // 2
    tail = chars - 1 - head
    return text[:head] + ELLIPSIS + (text[-tail:] if tail else "")


def fit_line(key: str, figure: str, items: list[str], width: int = LINE_WIDTH, sep: str = "; ",
             item_chars: int = ITEM_CHARS) -> str:
    """`key: figure; item; item` (`sep` between them) in at most `width` characters, the figure never cut: each item
    first held to `item_chars`, then the key shortened in its middle to KEY_CHARS, then the items left off from the
    last (the last one that fits in part, cut), then the key shortened further."""
    items = [shortened(item, item_chars) for item in items if item]

    def line(k: str, kept: list[str]) -> str:
        return f"{k}: {figure}" + "".join(f"{sep}{item}" for item in kept)

    over = len(line(key, items)) - width
    if over > 0:
        key = shortened(key, max(KEY_CHARS, len(key) - over), middle=True)
    while items and len(line(key, items)) > width:
        room = width - len(line(key, items[:-1])) - len(sep)
        items = items[:-1] + ([shortened(items[-1], room)] if room >= 8 else [])
    over = len(line(key, items)) - width
    if over > 0:
        key = shortened(key, max(1, len(key) - over), middle=True)
    return line(key, items)
