"""make bench-overhead's statistics: interleaved arms, the order-statistic interval of the median, the verdict."""
import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("harness_overhead", REPO / "scripts" / "harness_overhead.py")
overhead = importlib.util.module_from_spec(spec)
sys.modules["harness_overhead"] = overhead  # dataclasses look their module up there
spec.loader.exec_module(overhead)


def test_arms_alternate_which_goes_first():
    calls = []
    plain, timed = overhead.interleaved(lambda: calls.append("A") or 1.0, lambda: calls.append("B") or 2.0, 4)
    assert "".join(calls) == "ABBAABBA" and plain == [1.0] * 4 and timed == [2.0] * 4
    assert overhead.PAIRS >= 20


@pytest.mark.parametrize("n,ranks,coverage", [(25, (8, 18), 0.9567), (20, (6, 15), 0.9586), (6, (1, 6), 0.96875)])
def test_interval_uses_the_binomial_ranks(n, ranks, coverage):
    values = [float(v) for v in range(1, n + 1)][::-1]  # order must not matter
    ci = overhead.median_interval(values)
    assert (ci.low, ci.high) == ranks and ci.coverage == pytest.approx(coverage, abs=1e-4) and ci.coverage >= 0.95
    assert ci.median == (n + 1) / 2 and ci.n == n


def test_too_few_values_cannot_give_an_interval():
    with pytest.raises(ValueError, match="6 at least"):
        overhead.median_interval([1.0, 2.0, 3.0, 4.0, 5.0])


def test_verdict_narrow_or_too_wide():
    plain = [10.0] * 25
    steady = [10.5 + 0.01 * (i % 5) for i in range(25)]
    text, ci = overhead.report("core", plain, steady, 1000)
    assert ci.narrow and ci.median == pytest.approx(0.52) and "narrow enough to quote the median" in text
    noisy = [10.0 + (i % 7 - 3) for i in range(25)]  # differences from -3 to +3 around 0
    text, ci = overhead.report("core", plain, noisy, 1000)
    assert not ci.narrow and "too wide to quote the median" in text and f"< {ci.high:.2f} us/step" in text


def test_timing_core_trials_measure_both_arms():
    plain, timed = overhead.timing_core_trials(pairs=2)
    assert len(plain) == len(timed) == 2 and all(v > 0 for v in plain + timed)
