"""The result schema: round trip, validation, atomic writes, history."""
import json
import re
import os
from pathlib import Path

import pytest

from bench.results import SCHEMA_VERSION, CorruptResult, Result, Run, load, load_all, result_files, write_json_atomic
from bench.workloads import Cell

CELL = Cell("jax", "bert", "fit", 2, "smoke", "default", 1, 3)
MACHINE = {"cpu": "Test CPU", "logical_cpus": 2, "gpus": []}


def make_result(runs=None, created="2026-11-21T10:00:00+00:00", cell=CELL):
    runs = runs or [Run(status="ok", first_step_ms=900.0, warmup_ms=[20.0], timed_ms=[10.0, 12.0, 11.0], tokens_per_step=None)]
    return Result(cell, runs, "ms/step", {"git": {"commit": "abc", "dirty": False}, "machine": MACHINE}, created)


def test_round_trip_keeps_raw_times_and_summary(tmp_path):
    path = make_result().write(tmp_path)
    data = json.loads(path.read_text())
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["runs"][0]["timed_ms"] == [10.0, 12.0, 11.0]
    assert data["summary"]["median"] == 11.0 and data["summary"]["count"] == 3
    assert data["cell"] == CELL.to_dict()
    assert path.relative_to(tmp_path).parts[:2] == ("smoke", "cpu-test-cpu-2-cores")
    loaded = load(path)
    assert loaded.summary() == make_result().summary()


def test_tokens_per_second_from_median():
    r = make_result([Run(status="ok", first_step_ms=1.0, timed_ms=[500.0, 500.0], tokens_per_step=90)])
    assert r.tokens_per_s() == pytest.approx(180.0)


def test_status_comes_from_runs_and_failed_results_have_no_summary():
    r = make_result([Run(status="ok", first_step_ms=1.0, timed_ms=[1.0]), Run(status="oom", message="RESOURCE_EXHAUSTED")])
    assert r.status == "oom" and r.message == "RESOURCE_EXHAUSTED" and r.summary() is None


@pytest.mark.parametrize(
    "mutate,words",
    [
        (lambda d: d.update(schema_version=99), "schema_version 99"),
        (lambda d: d.pop("provenance"), "missing keys ['provenance']"),
        (lambda d: d.update(status="great"), "status 'great'"),
        (lambda d: d.update(status="oom"), "disagrees with its runs"),
        (lambda d: d["runs"][0].update(timed_ms=[1.0, -5.0]), "finite and non-negative"),
        (lambda d: d["cell"].update(batch_size=0), "batch size must be a positive integer"),
        (lambda d: d["cell"].update(backend="kears2"), "unknown backend"),
        (lambda d: d.update(runs=[]), "no runs"),
    ],
)
def test_invalid_files_are_named_with_the_reason(tmp_path, mutate, words):
    data = make_result().to_dict()
    mutate(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(CorruptResult, match=re.escape(words)) as e:
        load(path)
    assert str(path) in str(e.value)


def test_truncated_file_is_named(tmp_path):
    path = tmp_path / "smoke" / "x" / "half.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"schema_version": 1, "ce')
    with pytest.raises(CorruptResult, match="half.json"):
        load_all(tmp_path)


def test_atomic_write_leaves_the_old_file_when_interrupted(tmp_path):
    path = tmp_path / "r.json"
    write_json_atomic(path, {"a": 1})

    class Boom:
        pass

    with pytest.raises(TypeError):
        write_json_atomic(path, {"a": Boom()})  # fails mid-serialisation
    assert json.loads(path.read_text()) == {"a": 1}
    assert os.listdir(tmp_path) == ["r.json"]  # no temporary left behind


def test_rewriting_a_cell_moves_the_earlier_result_to_history(tmp_path):
    first = make_result(created="2026-11-21T10:00:00+00:00").write(tmp_path)
    second = make_result(created="2026-11-21T11:00:00+00:00").write(tmp_path)
    assert first == second
    history = list(tmp_path.rglob("history/*.json"))
    assert len(history) == 1 and load(history[0]).created_at == "2026-11-21T10:00:00+00:00"
    assert result_files(tmp_path) == [second]
