"""Where a series changed: candidate change points from ruptures' PELT (least squares on the log figures, a BIC
penalty), each kept only where a t-test between the segments either side gives p below THRESHOLD, as Apache Otava
keeps E-Divisive's (a t-test, p 0.001 by default); a split that fails goes and the rest are judged again. Each change
says its size (the later segment over the earlier, with its 95% interval) and its p-value, from bench/base/stats.py's t
distribution."""
from __future__ import annotations

import math
from dataclasses import dataclass

from bench.base import stats
from bench.base.errors import BenchError
from bench.base.stats import Ratio

THRESHOLD = 0.001  # Otava's default p-value: a flat series of noise calls a change rarely (tests/test_history.py)
PENALTY = 4  # BIC: each split costs PENALTY log n times the noise variance
MIN_SEGMENT = 2  # the fewest points a segment has: a t-test needs two a side, and one odd point is not a change


@dataclass(frozen=True)
class Split:
    at: int  # the first point after the change
    ratio: Ratio  # the segment after over the segment before
    p: float


def judge_splits(logs: list[float], splits: list[int]) -> list[Split]:
    """Each split's t-test between the segments either side of it, the noise pooled over every segment of the series
    (a change moves the level, not the noise; a segment of two points cannot measure its own spread)."""
    bounds = [0, *splits, len(logs)]
    segments = [logs[a:b] for a, b in zip(bounds, bounds[1:])]
    means = [sum(s) / len(s) for s in segments]
    dof = len(logs) - len(segments)
    if dof < 1:
        return []
    noise = math.sqrt(sum((v - m) ** 2 for s, m in zip(segments, means) for v in s) / dof)
    out = []
    for i, at in enumerate(splits):
        log_se = noise * math.sqrt(1 / len(segments[i]) + 1 / len(segments[i + 1]))
        ratio = Ratio(math.exp(means[i + 1] - means[i]), log_se, dof)
        out.append(Split(at, ratio, stats.p_value(ratio)))
    return out


def change_points(logs: list[float], threshold: float = THRESHOLD, min_size: int = MIN_SEGMENT) -> list[Split]:
    """The series' change points (its points on the log scale), earliest first: the candidates of a penalised
    least-squares segmentation (ruptures' PELT), then backward elimination: while a split's
    t-test fails the threshold, the weakest goes and the rest are judged again between their new neighbours."""
    if len(logs) < 2 * min_size:
        return []
    import numpy as np

    try:
        import ruptures  # imported here: only make history needs it (not the cells, nor the wheel bundle)
    except ImportError:
        raise BenchError("ruptures, which finds the change points, is not installed in this Python: make env-tools "
                         "installs it (envs/tools)") from None

    # the candidates: ruptures' PELT, the exact least-squares segmentation under a BIC penalty (each split costs
    # PENALTY log n times the point-to-point noise variance, read robustly from the median successive difference)
    steps = sorted(abs(b - a) for a, b in zip(logs, logs[1:]))
    noise = steps[len(steps) // 2] / (math.sqrt(2) * 0.6745)
    if noise <= 0:
        noise = max(steps) or 1.0
    search = ruptures.Pelt(model="l2", min_size=min_size, jump=1).fit(np.asarray(logs, dtype=float).reshape(-1, 1))
    splits = search.predict(pen=PENALTY * math.log(len(logs)) * noise**2)[:-1]
    while splits:  # the weakest split that fails goes, its segments merge, and every split is judged again
        tested = judge_splits(logs, splits)
        if not tested:
            return []
        weakest = max(tested, key=lambda t: t.p)
        if weakest.p < threshold:
            return tested
        splits.remove(weakest.at)
    return []
