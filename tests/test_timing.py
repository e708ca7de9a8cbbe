"""The timing core, without a framework: known durations, both window edges, tiling, online warm-up, steadiness."""
import queue
import statistics
import threading
import time

import numpy as np
import pytest

from bench.base.timing import HostDevice, Stats, StepTimer, WindowPlan, percentile
from bench.measure.drivers import drive_step_pairs, drive_steps, pair_difference


def spin(seconds: float) -> None:
    """Busy-wait: a workload of known duration that the scheduler cannot shorten."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def plan(timed=5, warmup=0, max_warmup=None, per=1):
    return WindowPlan(warmup, timed, max_warmup, per)


class Steps:
    """A workload for drive_steps: each step runs `work()` and returns its result."""

    def __init__(self, work):
        self.work, self.calls = work, 0

    def step(self):
        self.calls += 1
        return self.work()


@pytest.mark.wall_clock
def test_known_duration_is_measured_within_a_few_percent():
    timer = StepTimer(HostDevice(), plan(timed=30))
    drive_steps(Steps(lambda: spin(0.010)), timer)
    median = statistics.median(timer.split().timed_ms)
    assert 10.0 <= median <= 11, median


class JaxLikeDevice:
    """An asynchronous device like JAX's: work runs on a serial worker and launch() returns at once; waiting for
    one result waits for that result only, and waiting for None waits for nothing (jax.block_until_ready(None)).
    Only barrier() waits for everything in flight. (A CUDA-like fake that drains all work on any sync would let
    a timer that syncs on None at a window's start pass; that is how the JAX defect went unseen.)"""

    def __init__(self):
        self.work: queue.Queue = queue.Queue()
        self.in_flight: list[threading.Event] = []
        threading.Thread(target=self._worker, daemon=True).start()

    def _worker(self):
        while True:
            seconds, done = self.work.get()
            spin(seconds)
            done.set()

    def launch(self, seconds: float) -> threading.Event:
        done = threading.Event()
        self.in_flight.append(done)
        self.work.put((seconds, done))
        return done

    def sync(self, result):
        if isinstance(result, threading.Event):
            result.wait()

    def barrier(self):
        for done in list(self.in_flight):
            done.wait()

    def compile_count(self):
        return 0


@pytest.mark.wall_clock
def test_asynchronous_work_is_measured_to_its_end():
    """Without the sync at the window's end, each step reads as its (near-zero) dispatch time."""
    device = JaxLikeDevice()
    timer = StepTimer(device, plan(timed=10))
    drive_steps(Steps(lambda: device.launch(0.020)), timer)
    assert 19.5 <= statistics.median(timer.split().timed_ms) <= 25, timer.windows_ms


@pytest.mark.wall_clock
def test_earlier_work_does_not_leak_into_the_window():
    """Work dispatched before a window opens (the previous step's, a data pipeline's) is waited for outside it,
    even when nothing of it is handed to the timer (the old begin() synced on None, which waits for nothing)."""
    device = JaxLikeDevice()
    timer = StepTimer(device, plan(timed=4))
    for _ in range(5):
        device.launch(0.030)  # still running when the window opens
        timer.begin()
        timer.end(device.launch(0.010))
    assert 9.5 <= statistics.median(timer.windows_ms) <= 25, timer.windows_ms  # ~40 if the 30 ms leaked in


@pytest.mark.wall_clock
def test_unsynchronised_timer_would_be_wrong():
    """The control for the two tests above: the same async workload timed without any wait reads ~0."""

    class NoWait(JaxLikeDevice):
        def sync(self, result):
            pass

        def barrier(self):
            pass

    device = NoWait()
    timer = StepTimer(device, plan(timed=5))
    drive_steps(Steps(lambda: device.launch(0.020)), timer)
    JaxLikeDevice.barrier(device)
    assert statistics.median(timer.windows_ms) < 5


@pytest.mark.wall_clock
def test_laps_tile_the_loop_so_work_between_steps_is_counted():
    """A framework loop takes the next batch between two steps' callbacks: tiled windows count it."""
    timer = StepTimer(HostDevice(), plan(timed=6))
    timer.begin()
    while True:
        spin(0.004)  # taking the next batch, before the loop's step-begin callback
        spin(0.006)  # the step
        if not timer.lap():
            break
    assert 9.8 <= statistics.median(timer.split().timed_ms) <= 12, timer.windows_ms  # ~6 without the batch


class CompilingDevice(HostDevice):
    """Compiles during the steps listed (0-based), like a recompile at step 2."""

    def __init__(self, compile_at):
        self.compile_at, self.step = set(compile_at), 0

    def compile_count(self):
        return sum(1 for s in self.compile_at if s < self.step)


class Counting(Steps):
    def __init__(self, device):
        super().__init__(lambda: None)
        self.device = device

    def step(self):
        self.device.step += 1  # this step's compile (if any) happens now
        return super().step()


def test_warmup_is_extended_while_steps_still_compile():
    device = CompilingDevice(compile_at={0, 1, 2})
    timer = StepTimer(device, plan(timed=3, warmup=1, max_warmup=6))
    workload = Counting(device)
    drive_steps(workload, timer)
    assert timer.warmup_run == 2  # steps 1 and 2 recompiled; step 3 did not, so it is the first timed step
    assert workload.calls == 1 + 2 + 3
    reasons = timer.steadiness(timer.split().timed_ms).reasons
    assert timer.timed_compile_events() == 0 and not [r for r in reasons if "compile" in r or "cap" in r], reasons


def test_warmup_cap_and_compiles_in_timed_steps_mark_the_cell_unsteady():
    device = CompilingDevice(compile_at={0, 1, 2, 3, 5})
    timer = StepTimer(device, plan(timed=3, warmup=1, max_warmup=2))
    drive_steps(Counting(device), timer)
    assert timer.warmup_run == 2
    steadiness = timer.steadiness(timer.split().timed_ms)
    assert not steadiness.steady and steadiness.compile_events_timed == 2  # steps 3 and 5
    assert any("cap" in r for r in steadiness.reasons) and any("compile" in r for r in steadiness.reasons)


@pytest.mark.wall_clock
def test_a_step_far_above_the_median_is_flagged():
    durations = iter([0.02, 0.002, 0.002, 0.002, 0.002, 0.002, 0.02, 0.002])
    timer = StepTimer(HostDevice(), plan(timed=7))
    drive_steps(Steps(lambda: spin(next(durations))), timer)
    steadiness = timer.steadiness(timer.split().timed_ms)
    assert steadiness.outliers == [5] and not steadiness.steady


def test_one_preempted_step_among_hundreds_is_not_unsteady():
    """A sampled cell takes hundreds of steps; the odd one a shared machine preempts is listed, and the steps stay
    steady until more than 1% of them are far above the median."""
    timer = StepTimer(HostDevice(), plan(timed=200))
    timed = [1.0] * 198 + [9.0, 9.0]
    steadiness = timer.steadiness(timed)
    assert steadiness.outliers == [198, 199] and steadiness.steady
    steadiness = timer.steadiness([1.0] * 197 + [9.0] * 3)
    assert not steadiness.steady and "3 of 200" in steadiness.reasons[0]


def test_begin_end_misuse_raises():
    timer = StepTimer(HostDevice(), plan(timed=1))
    with pytest.raises(RuntimeError):
        timer.end()
    timer.begin()
    with pytest.raises(RuntimeError):
        timer.begin()
    timer.end()
    timer.begin()
    timer.end()
    timer.begin()
    with pytest.raises(RuntimeError, match="every planned window"):
        timer.end()


def test_clock_is_monotonic_nanoseconds():
    ticks = iter([0, 5_000_000, 5_000_000, 12_000_000])
    timer = StepTimer(HostDevice(), plan(timed=1), clock=lambda: next(ticks))
    drive_steps(Steps(lambda: None), timer)
    assert timer.windows_ns == [5_000_000, 7_000_000]
    assert timer.split().first_ms == 5.0 and timer.split().timed_ms == [7.0]


def test_a_companion_timer_reads_the_same_clock_with_a_plan_of_its_own():
    ticks = iter(range(0, 10**9, 1_000_000))
    timer = StepTimer(HostDevice(), plan(timed=1), clock=lambda: next(ticks))
    parts = timer.companion(plan(timed=2, warmup=0))
    timer.begin()
    parts.begin()
    parts.end()
    timer.end()
    assert parts.windows_ns == [1_000_000] and timer.windows_ns == [3_000_000]  # one clock: their ticks interleave
    assert parts.plan.timed_steps == 2 and timer.plan.timed_steps == 1 and parts.steps_done == timer.steps_done == 1


@pytest.mark.wall_clock
def test_split_keeps_first_step_and_warmup_apart():
    values = iter([0.03, 0.02, 0.011, 0.010, 0.012])
    timer = StepTimer(HostDevice(), plan(timed=3, warmup=1))
    drive_steps(Steps(lambda: spin(next(values))), timer)
    split = timer.split()
    assert split.first_ms > 29 and len(split.warmup_ms) == 1 and len(split.timed_ms) == 3
    with pytest.raises(RuntimeError, match="expected 5"):
        timer.split([1.0, 2.0])


class Pairs:
    """A step-pairs workload whose call of n steps takes 2 ms + n x 10 ms (long enough that a preemption on a
    loaded 2-core machine, a few ms, does not swamp one difference)."""

    class Shape:
        denoise_steps_high, denoise_steps_low = 5, 2

    shape = Shape()

    def __init__(self):
        self.order = []

    def call(self, num_steps):
        self.order.append(num_steps)
        spin(0.002 + 0.010 * num_steps)


@pytest.mark.wall_clock
def test_step_pairs_alternate_and_give_the_difference_per_step():
    workload = Pairs()
    timer = StepTimer(HostDevice(), plan(timed=4, warmup=1, per=2))
    drive_step_pairs(workload, timer)
    assert workload.order == [5, 2, 2, 5, 5, 2, 2, 5, 5, 2, 2, 5]  # 1 first + 1 warm-up + 4 timed pairs
    per_step = pair_difference(timer.windows_ms, timer.tags)
    split = timer.split(per_step)
    assert 9.5 <= float(np.median(split.timed_ms)) <= 11.0 and all(v > 5.0 for v in split.timed_ms), split.timed_ms


def test_pair_difference_is_order_free_and_may_be_negative():
    assert pair_difference([30.0, 10.0, 12.0, 28.0], [5, 2, 2, 5]) == pytest.approx([20 / 3, 16 / 3])
    assert pair_difference([10.0, 12.0], [5, 2]) == pytest.approx([-2 / 3])
    with pytest.raises(RuntimeError, match="two step counts"):
        pair_difference([1.0, 2.0], [3, 3])


@pytest.mark.parametrize("q", [0, 10, 25, 50, 90, 100])
def test_percentile_matches_numpy(q):
    values = list(np.random.default_rng(0).gamma(2.0, 3.0, 101))
    assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


def test_stats_of_known_sample():
    s = Stats.of([10.0, 12.0, 11.0, 13.0, 14.0])
    assert s.count == 5 and s.median == 12.0 and s.mean == 12.0
    assert s.min == 10.0 and s.max == 14.0
    assert s.stdev == pytest.approx(np.std([10, 12, 11, 13, 14], ddof=1))
    assert s.cv == pytest.approx(s.stdev / 12.0)
    assert s.p10 == pytest.approx(10.4) and s.p90 == pytest.approx(13.6)
    assert Stats.of([5.0]).cv == 0.0


@pytest.mark.parametrize("bad", [[], [1.0, float("nan")], [1.0, -2.0], [float("inf")]])
def test_stats_rejects_bad_samples(bad):
    with pytest.raises(ValueError):
        Stats.of(bad)


def test_derived_figures_may_be_negative_but_not_infinite():
    assert Stats.of([-1.0, 2.0, 3.0], allow_negative=True).median == 2.0
    with pytest.raises(ValueError):
        Stats.of([float("inf")], allow_negative=True)


def test_the_cells_figures_come_from_the_timer_without_a_framework():
    """bench/measure/cell.py's figures(): plain windows as they are; a derived task's per-step figures from its pairs,
    its first step the first pair's windows summed (everything the first step ran, compiles included)."""
    from bench.measure.cell import figures

    ticks = iter(range(0, 10**10, 10**6))  # every clock read 1 ms after the last
    timer = StepTimer(HostDevice(), plan(timed=2, warmup=0), clock=lambda: next(ticks))
    drive_steps(Steps(lambda: None), timer)
    split, derived = figures(timer, None)
    assert not derived and split.first_ms == 1.0 and split.timed_ms == [1.0, 1.0]

    workload = Pairs()
    timer = StepTimer(HostDevice(), plan(timed=3, warmup=1, per=2))
    drive_step_pairs(workload, timer)
    split, derived = figures(timer, "pair-difference")
    assert derived and split.first_ms == pytest.approx(sum(timer.windows_ms[:2]))
    per_pair = pair_difference(timer.windows_ms, timer.tags)
    assert split.warmup_ms == per_pair[1:2] and split.timed_ms == per_pair[2:5]


def test_a_non_finite_step_time_is_refused_in_a_short_line_naming_the_windows():
    windows = [10.0 + i / 1000 for i in range(5000)]
    windows[7], windows[4000] = float("nan"), float("inf")
    with pytest.raises(ValueError) as refused:
        Stats.of(windows)
    said = str(refused.value)
    assert "2 of 5000 are not (#7 nan, #4000 inf)" in said and len(said) < 200, said[:300]
