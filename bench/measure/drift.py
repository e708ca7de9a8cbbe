"""A framework-free reference measurement of how fast this machine is right now.

The orchestrator takes it at the start and end of a run and between cell processes, and records it beside every
run: a figure measured while the reference was slow was measured on a slower machine. On a shared 2-core CPU the
same cell moved from 0.8x to 7x across runs; without this probe that drift is indistinguishable from the framework.

A reading is warmed until it settles: the probe runs in short blocks until one is no faster than the block before
it (by more than SETTLE_SHARE), and the reading is that block's median. A host waking from idle (a GPU machine's
vCPUs between two commands read 4-5x slow for the first 50 ms) speeds up block after block and is waited out; a
loaded host does not speed up, so its slow reading stands and the noise gate still sees it. The first block's
median and the count are kept (`Reading`), so the record says what the warm-up waited out, and where it never
settled within MAX_BLOCKS.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

MATRIX_SIZE = 256  # 256x256 float64 matmul: ~17 MFLOP, about a millisecond on one modern core
BLOCK_S = 0.025  # each block of the probe runs for about this long; two blocks (a settled reading) take 50 ms
MIN_ITERATIONS = 5
MAX_BLOCKS = 12  # at most 0.3 s: a reading still speeding up then is recorded as not settled
SETTLE_SHARE = 0.10  # a block this much faster than the one before it: still warming up


@dataclass(frozen=True)
class Reading:
    """One settled reading: `ms` the settled block's median, `cold_ms` the first block's, `blocks` how many ran,
    `settled` False where the blocks were still speeding up at MAX_BLOCKS."""

    ms: float
    cold_ms: float
    blocks: int
    settled: bool

    def to_dict(self) -> dict:
        return asdict(self)


def settle(block: Callable[[], float], max_blocks: int = MAX_BLOCKS) -> Reading:
    """Blocks of a probe (`block()`: one block's median, in ms) until one is not faster than the one before it by
    more than SETTLE_SHARE, or max_blocks."""
    first = previous = block()
    for n in range(2, max_blocks + 1):
        current = block()
        if current >= previous * (1 - SETTLE_SHARE):
            return Reading(current, first, n, True)
        previous = current
    return Reading(previous, first, max_blocks, False)


def reading(block_s: float = BLOCK_S) -> Reading:
    """The reference, settled: NumPy's matmul (a pure-Python loop without NumPy), each block's median time of one
    iteration in ms."""
    try:
        import numpy
    except ImportError:
        iteration = _python_loop
    else:
        rng = numpy.random.default_rng(0)
        a, b = rng.random((MATRIX_SIZE, MATRIX_SIZE)), rng.random((MATRIX_SIZE, MATRIX_SIZE))
        iteration = lambda: a @ b  # noqa: E731
    iteration()  # first call: imports, caches, page faults
    return settle(lambda: _median_ms(iteration, block_s))


def reference_ms(budget_s: float = BLOCK_S) -> float:
    """The settled reading alone, in ms (every prober that records one figure)."""
    return reading(budget_s).ms


def _python_loop() -> int:
    total = 0
    for i in range(20_000):
        total += i * i
    return total


def _median_ms(iteration, budget_s: float) -> float:
    times_ns = []
    deadline = time.perf_counter() + budget_s
    while len(times_ns) < MIN_ITERATIONS or time.perf_counter() < deadline:
        started = time.perf_counter_ns()
        iteration()
        times_ns.append(time.perf_counter_ns() - started)
    return round(statistics.median(times_ns) / 1e6, 4)
