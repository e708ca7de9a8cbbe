"""The drift probe: a framework-free reference measurement."""
import sys

from bench.drift import reference_ms


def test_reference_is_a_positive_median_in_ms():
    assert 0 < reference_ms(budget_s=0.01) < 1000


def test_without_numpy_a_python_loop_stands_in(monkeypatch):
    monkeypatch.setitem(sys.modules, "numpy", None)  # `import numpy` now raises ImportError
    assert 0 < reference_ms(budget_s=0.01) < 1000
