"""A framework-free reference measurement of how fast this machine is right now.

The orchestrator takes it at the start and end of a run and between cell processes, and records it beside every
run: a figure measured while the reference was slow was measured on a slower machine. On a shared 2-core CPU the
same cell moved from 0.8x to 7x across runs; without this probe that drift is indistinguishable from the framework.
"""
from __future__ import annotations

import statistics
import time

MATRIX_SIZE = 256  # 256x256 float64 matmul: ~17 MFLOP, about a millisecond on one modern core
BUDGET_S = 0.05  # each probe runs for about this long
MIN_ITERATIONS = 5


def reference_ms(budget_s: float = BUDGET_S) -> float:
    """The median time of one reference iteration, in ms (NumPy matmul; a pure-Python loop without NumPy)."""
    try:
        import numpy
    except ImportError:
        return _median_ms(_python_loop, budget_s)
    rng = numpy.random.default_rng(0)
    a, b = rng.random((MATRIX_SIZE, MATRIX_SIZE)), rng.random((MATRIX_SIZE, MATRIX_SIZE))
    return _median_ms(lambda: a @ b, budget_s)


def _python_loop() -> int:
    total = 0
    for i in range(20_000):
        total += i * i
    return total


def _median_ms(iteration, budget_s: float) -> float:
    iteration()  # first call: imports, caches, page faults
    times_ns = []
    deadline = time.perf_counter() + budget_s
    while len(times_ns) < MIN_ITERATIONS or time.perf_counter() < deadline:
        started = time.perf_counter_ns()
        iteration()
        times_ns.append(time.perf_counter_ns() - started)
    return round(statistics.median(times_ns) / 1e6, 4)
