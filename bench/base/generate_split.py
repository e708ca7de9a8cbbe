"""A generate call split as LLM users read it: time to first token (TTFT, the prefill) and time per output token
(TPOT, the decode), from windows the timing core took (bench/measure/drivers.py drive_generate). Stdlib only: the cell,
the report, the export and the tests read it.

Method (optimum-benchmark's, one method on every library): beside each whole call of `n` new tokens (the cell's
published ms/call figure, unchanged) the driver times a call that generates ONE new token and a PARTIAL call of
`k` new tokens (k = 1 + (n - 1) // 2), each in its own window, on the same prompt, the same padded length and the
same compiled function as the whole call. Then, on the medians of the timed windows:

- TTFT = T(1): the prefill and the first new token, what a user waits for before anything appears;
- TPOT = (T(n) - T(1)) / (n - 1): vLLM's definition, the whole call's decode per token after the first;
- decode tokens/s = batch x (n - 1) / (T(n) - T(1));
- the agreement check, the one that can fail: T(1) + (n - 1) x TPOT_partial, where TPOT_partial =
  (T(k) - T(1)) / (k - 1) comes from the partial call alone, predicts the whole call T(n), which was measured
  apart. It holds when the decode steps cost the same per token across the call (no hidden per-call cost
  outside the prefill, no cost that grows with the cache beyond the noise) and the one-token call is the whole
  call's prefill; `TOLERANCE` is the largest relative error called agreement.

What each phase really did (which positions the prefill computed, padding included, and the key/value length
each decode step attends over) comes from the workload (`generate_work()`), since it is the library's choice.
"""

from __future__ import annotations

import statistics
from typing import Any

TOLERANCE = 0.10  # |predicted - measured| / measured of the whole call, largest still called agreement
METHOD = (
    "one-new-token and partial (k new tokens) generate calls beside each whole call, each in its own "
    "synchronised window; TTFT = T(1), TPOT = (T(n) - T(1)) / (n - 1)"
)


def split_lengths(new_tokens: int) -> tuple[int, ...]:
    """The new-token counts of the calls timed beside each whole call: 1 (the first token), and k, the partial call
    for the agreement check (only where the whole call has a distinct middle: n >= 3)."""
    if new_tokens < 2:
        raise ValueError(f"a generate split needs at least 2 new tokens per call, got {new_tokens}")
    partial = 1 + (new_tokens - 1) // 2
    return (1, partial) if 1 < partial < new_tokens else (1,)


def timed_by_tag(windows_ms: list[float], tags: list[Any], timed_from: int) -> dict[Any, list[float]]:
    """The timed windows (those from index `timed_from` on) grouped by their tag (the call's new tokens)."""
    out: dict[Any, list[float]] = {}
    for window, tag in list(zip(windows_ms, tags, strict=True))[timed_from:]:
        out.setdefault(tag, []).append(window)
    return out


def split_record(
    parts, whole_timed_ms: list[float], new_tokens: int, batch_size: int, work: dict[str, Any]
) -> dict[str, Any]:
    """The run's `generate_split` (docs/schema/): raw windows of every part and the figures derived from them.
    `parts` is the StepTimer of the one-token and partial calls; `whole_timed_ms` the whole calls' timed windows."""
    per = parts.plan.windows_per_step
    warm = parts.warmup_run if parts.warmup_run is not None else parts.steps_done - 1
    record: dict[str, Any] = {
        "method": METHOD,
        "new_tokens": new_tokens,
        "split_tokens": list(split_lengths(new_tokens)),
        "windows_ms": parts.windows_ms,
        "tags": list(parts.tags),
        "compile_events": list(parts.compile_events),
        "warmup_steps_run": warm,
        # how the parts' timer chose its number of steps (bench/base/timing.py StepTimer.sampling)
        "sampling": parts.sampling() if getattr(parts, "done", False) else None,
        **work,
        "ttft_ms": None,
        "tpot_ms": None,
        "decode_tokens_per_s": None,
        "prefill_share": None,
        "agreement": None,
    }
    timed = timed_by_tag(parts.windows_ms, parts.tags, (1 + warm) * per)
    if not timed.get(1) or not whole_timed_ms:
        return record
    ttft = statistics.median(timed[1])
    whole = statistics.median(whole_timed_ms)
    decode = whole - ttft
    record.update(
        ttft_ms=ttft,
        whole_call_ms=whole,
        tpot_ms=decode / (new_tokens - 1),
        decode_tokens_per_s=batch_size * (new_tokens - 1) / (decode / 1000) if decode > 0 else None,
        prefill_share=ttft / whole if whole > 0 else None,
    )
    partial = next((k for k in record["split_tokens"] if k > 1), None)
    if partial is not None and timed.get(partial):
        record["agreement"] = agreement(ttft, statistics.median(timed[partial]), partial, whole, new_tokens)
    return record


def agreement(
    ttft_ms: float, partial_ms: float, partial_tokens: int, whole_ms: float, new_tokens: int
) -> dict[str, Any]:
    """Whether the prefill + decode model predicts the whole call from the one-token and partial calls alone."""
    tpot_partial = (partial_ms - ttft_ms) / (partial_tokens - 1)
    predicted = ttft_ms + (new_tokens - 1) * tpot_partial
    error = abs(predicted - whole_ms) / whole_ms if whole_ms > 0 else float("inf")
    return {
        "partial_tokens": partial_tokens,
        "partial_call_ms": partial_ms,
        "tpot_partial_ms": tpot_partial,
        "predicted_call_ms": predicted,
        "measured_call_ms": whole_ms,
        "relative_error": error,
        "tolerance": TOLERANCE,
        "agrees": error <= TOLERANCE,
    }


def run_split(run) -> dict[str, Any] | None:
    """A Run's (or its dict's) split, or None: a result written before the split, or not a generate cell."""
    split = run.get("generate_split") if isinstance(run, dict) else getattr(run, "generate_split", None)
    return split if split and split.get("ttft_ms") is not None else None


def result_split(result) -> dict[str, float] | None:
    """A Result's split over its runs: the median of each figure across the runs that have one (one run: its own)."""
    splits = [s for run in result.runs if (s := run_split(run))]
    if not splits:
        return None
    out: dict[str, Any] = {}
    for name in ("ttft_ms", "tpot_ms", "decode_tokens_per_s", "prefill_share"):
        values = [s[name] for s in splits if s.get(name) is not None]
        out[name] = statistics.median(values) if values else None
    errors = [s["agreement"]["relative_error"] for s in splits if s.get("agreement")]
    out["agreement_error"] = max(errors) if errors else None
    out["agrees"] = all(s["agreement"]["agrees"] for s in splits if s.get("agreement")) if errors else None
    first = splits[0]
    out["prefill_positions"] = first.get("prefill_positions")
    out["prompt_tokens"] = first.get("prompt_tokens")
    out["decode_attends_over"] = first.get("decode_attends_over")
    return out
