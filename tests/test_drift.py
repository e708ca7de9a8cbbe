"""The drift probe: a framework-free reference measurement."""
import sys

from bench.measure.drift import reference_ms


def test_reference_is_a_positive_median_in_ms():
    assert 0 < reference_ms(budget_s=0.01) < 1000


def test_without_numpy_a_python_loop_stands_in(monkeypatch):
    monkeypatch.setitem(sys.modules, "numpy", None)  # `import numpy` now raises ImportError
    assert 0 < reference_ms(budget_s=0.01) < 1000


def test_a_cold_start_is_waited_out_and_a_loaded_machine_is_not():
    from bench.measure.drift import settle

    def blocks(*medians):
        it = iter(medians)
        return lambda: next(it)

    cold = settle(blocks(0.45, 0.30, 0.15, 0.10, 0.101, 9.0))  # a host waking from idle speeds up block by block
    assert (cold.ms, cold.cold_ms, cold.blocks, cold.settled) == (0.101, 0.45, 5, True)
    loaded = settle(blocks(0.52, 0.50, 9.0))  # a loaded host does not speed up: its slow reading stands
    assert (loaded.ms, loaded.blocks, loaded.settled) == (0.50, 2, True)
    still = settle(blocks(*[1.0 / 1.2**n for n in range(12)]), max_blocks=12)
    assert not still.settled and still.blocks == 12 and still.ms == 1.0 / 1.2**11


def test_a_reading_is_recorded_with_how_it_settled():
    from bench.measure.drift import reading

    found = reading(0.005)
    assert found.settled in (True, False) and found.blocks >= 2 and 0 < found.ms < 1000 and found.cold_ms > 0
    assert set(found.to_dict()) == {"ms", "cold_ms", "blocks", "settled"}
