"""Framework-free pieces of the model implementations: StableDiffusion's per-denoising-step timing."""
import pytest

from bench.models.stable_diffusion import SPEC, drive_step_pairs, per_denoising_step
from bench.timing import StepTimer

SHAPE = SPEC.shape("paper")  # denoise steps 20 (high) and 10 (low)


def test_pairs_run_high_then_low_and_give_the_difference_per_step():
    # A fake clock: each call takes 500 ms of fixed cost (text encoder, decoder) plus 100 ms per denoising step.
    now, calls = [0], []

    def generate(num_steps):
        calls.append(num_steps)
        now[0] += int((500 + 100 * num_steps) * 1e6)

    timer = StepTimer(lambda _: None, clock=lambda: now[0])
    drive_step_pairs(generate, timer, 3, SHAPE)
    assert calls == [20, 10] * 3
    assert per_denoising_step(timer.windows_ms, SHAPE) == pytest.approx([100.0] * 3)


def test_a_first_pair_with_compile_time_stays_positive():
    """The first high window carries the trace + compile, so the first per-step figure includes it."""
    windows = [9000.0 + 2500.0, 1500.0, 2500.0, 1500.0]
    assert per_denoising_step(windows, SHAPE) == [1000.0, 100.0]
