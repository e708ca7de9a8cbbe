"""The timing core measures known durations, and needs its sync at both window edges to do so."""
import queue
import statistics
import threading
import time

import numpy as np
import pytest

from bench.timing import Split, StepTimer, Stats, no_sync, percentile, run_steps


def spin(seconds: float) -> None:
    """Busy-wait: a workload of known duration that the scheduler cannot shorten."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_known_duration_is_measured_within_a_few_percent():
    timer = StepTimer(no_sync)
    run_steps(lambda: spin(0.010), timer, 30)
    median = statistics.median(timer.windows_ms)
    assert 10.0 <= median <= 10.3, median


class FakeDevice:
    """An asynchronous device: a serial queue of work run by one worker thread, like a CUDA stream.

    launch() returns at once (asynchronous dispatch); synchronize() waits until all queued work is done.
    """

    def __init__(self):
        self.work: queue.Queue = queue.Queue()
        threading.Thread(target=self._worker, daemon=True).start()

    def _worker(self):
        while True:
            seconds, done = self.work.get()
            spin(seconds)
            done.set()

    def launch(self, seconds: float) -> threading.Event:
        done = threading.Event()
        self.work.put((seconds, done))
        return done

    def synchronize(self, _=None) -> None:
        marker = self.launch(0.0)
        marker.wait()


def test_asynchronous_work_is_measured_to_its_end():
    """Without the sync at the window's end, each step reads as its (near-zero) dispatch time."""
    device = FakeDevice()
    timer = StepTimer(device.synchronize)
    run_steps(lambda: device.launch(0.020), timer, 10)
    assert 19.5 <= statistics.median(timer.windows_ms) <= 21.5, timer.windows_ms


def test_earlier_work_does_not_leak_into_the_window():
    """Without the sync at the window's start, work queued before it is billed to the step."""
    device = FakeDevice()
    timer = StepTimer(device.synchronize)
    windows = []
    for _ in range(5):
        device.launch(0.030)  # e.g. the data pipeline or the previous step, still running
        timer.begin()
        timer.end(device.launch(0.010))
        windows.append(timer.windows_ms[-1])
    assert 9.5 <= statistics.median(windows) <= 11.5, windows


def test_unsynchronised_timer_would_be_wrong():
    """The control for the two tests above: the same async workload timed without sync reads ~0."""
    device = FakeDevice()
    timer = StepTimer(no_sync)
    run_steps(lambda: device.launch(0.020), timer, 5)
    device.synchronize()
    assert statistics.median(timer.windows_ms) < 5


def test_begin_end_misuse_raises():
    timer = StepTimer(no_sync)
    with pytest.raises(RuntimeError):
        timer.end()
    timer.begin()
    with pytest.raises(RuntimeError):
        timer.begin()


def test_clock_is_monotonic_nanoseconds():
    ticks = iter([0, 5_000_000, 5_000_000, 12_000_000])
    timer = StepTimer(no_sync, clock=lambda: next(ticks))
    run_steps(lambda: None, timer, 2)
    assert timer.windows_ns == [5_000_000, 7_000_000]
    assert timer.windows_ms == [5.0, 7.0]


def test_split_keeps_first_step_and_warmup_apart():
    split = Split.of([900.0, 20.0, 11.0, 10.0, 12.0], warmup=1, timed=3)
    assert split.first_ms == 900.0
    assert split.warmup_ms == [20.0]
    assert split.timed_ms == [11.0, 10.0, 12.0]
    with pytest.raises(RuntimeError, match="expected 5"):
        Split.of([1.0, 2.0], warmup=1, timed=3)


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
