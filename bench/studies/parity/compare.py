"""How two outputs of the same function are judged equal in float32: elementwise |a - b| <= atol + rtol * |b|
(numpy's allclose), with the largest absolute difference and the relative one (largest difference over the largest
|reference|: an elementwise ratio explodes where a reference value is near 0) kept for the page."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float

    def __str__(self) -> str:
        return f"atol {self.atol:g}, rtol {self.rtol:g}"


# float32 has a 1.2e-7 unit roundoff; backends sum in different orders and fuse differently, and a smoke model's
# reductions (64-1000 terms, a few layers deep) grow that to ~1e-6 relative. 1e-4 leaves room for that and none for a
# changed function: a dropped layer, a different epsilon or activation moves outputs by 1e-3 or more.
OUTPUT_TOLERANCE = Tolerance(atol=1e-4, rtol=1e-4)
# A gradient's norm sums squares over every parameter: looser by an order of magnitude.
GRADIENT_NORM_TOLERANCE = Tolerance(atol=1e-4, rtol=1e-3)
# bfloat16 (on a GPU only: bench/studies/parity/run.py) keeps 8 significant bits, a unit roundoff of 3.9e-3, and each
# backend rounds to it at other points (its own fusions), so outputs a few layers deep differ by several units of
# it: 3e-2 is about 8. It catches weights not carried or a layer dropped (changes of order 1), not an epsilon's 1e-3.
BFLOAT16_OUTPUT_TOLERANCE = Tolerance(atol=3e-2, rtol=3e-2)
BFLOAT16_GRADIENT_NORM_TOLERANCE = Tolerance(atol=3e-2, rtol=3e-2)


def difference(candidate, reference, tolerance: Tolerance) -> dict:
    """max abs / max relative difference of candidate against reference, and whether it is within tolerance."""
    a = np.asarray(candidate, dtype=np.float64)
    b = np.asarray(reference, dtype=np.float64)
    if a.shape != b.shape:
        return {"passed": False, "max_abs": None, "max_rel": None, "why": f"shape {a.shape} vs {b.shape}"}
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        return {"passed": False, "max_abs": None, "max_rel": None, "why": "non-finite values"}
    gap = np.abs(a - b)
    max_abs = float(gap.max()) if gap.size else 0.0
    scale = float(np.abs(b).max()) if b.size else 0.0
    max_rel = max_abs / scale if scale > 0 else max_abs
    passed = bool((gap <= tolerance.atol + tolerance.rtol * np.abs(b)).all())
    return {"passed": passed, "max_abs": max_abs, "max_rel": max_rel}
