"""scripts/probe_tracking.py `cells`: whether a run's other cells could correct a cell's move between runs."""
import importlib.util
import json
import math

from conftest import REPO

from bench.judge.noise_file import NOISE_FORMAT


def load_script():
    spec = importlib.util.spec_from_file_location("probe_tracking", REPO / "scripts" / "probe_tracking.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_shift_common_to_the_cells_is_taken_off_and_one_of_its_own_is_left(tmp_path, capsys):
    """Three cells move x1.10 from round 1 to round 2, a fourth x1.35: the rms shift counts all four; less the other
    cells' median shift, only the fourth's own move (ln 1.35 - ln 1.10) is left."""
    moves = {"a": 1.10, "b": 1.10, "c": 1.10, "d": 1.35}
    cells = [{"key": key, "rounds": [{"round": 1, "medians_ms": {"A": [2.0, 2.0], "B": [2.0]}},
                                     {"round": 2, "medians_ms": {"A": [2.0 * move], "B": [2.0 * move, 2.0 * move]}}]}
             for key, move in moves.items()]
    study = tmp_path / "study.json"
    study.write_text(json.dumps({"format": NOISE_FORMAT, "cells": cells}))
    load_script().cells([study])
    out = capsys.readouterr().out
    shifts = [math.log(m) for m in moves.values()]
    rms = math.sqrt(sum(s * s for s in shifts) / 4)
    left = math.sqrt((math.log(1.35) - math.log(1.10)) ** 2 / 4)
    assert f"round-to-round shift rms {rms:.3f}" in out
    assert f"less the other cells' median shift: rms {left:.3f}" in out
    assert "a shift of rms <= 0.069 calls +20% slower in 75% of one-run-a-side pairs" in out
