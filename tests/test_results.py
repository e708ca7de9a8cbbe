"""The result schema: round trip, validation, atomic writes, history."""
import json
import os
import re

import pytest

from bench.catalogue.registry import Cell
from bench.record.results import (
    SCHEMA_VERSION,
    CorruptResult,
    NewerSchema,
    Result,
    Run,
    load,
    load_all,
    result_files,
    write_json_atomic,
)

CELL = Cell("jax", "bert", "fit", 2, "smoke", "default", 1, 3)
MACHINE = {"cpu": "Test CPU", "logical_cpus": 2, "gpus": []}


def make_result(runs=None, created="2026-11-21T10:00:00+00:00", cell=CELL):
    runs = runs or [
        Run(status="ok", first_step_ms=900.0, warmup_ms=[20.0], timed_ms=[10.0, 12.0, 11.0], tokens_per_step=None)
    ]
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
    r = make_result(
        [Run(status="ok", first_step_ms=1.0, timed_ms=[1.0]), Run(status="oom", message="RESOURCE_EXHAUSTED")]
    )
    assert r.status == "oom" and r.message == "RESOURCE_EXHAUSTED" and r.summary() is None


@pytest.mark.parametrize(
    "mutate,words",
    [
        (lambda d: d.update(schema_version=0), "schema_version 0"),
        (lambda d: d.update(schema_version="2"), "schema_version '2'"),
        (lambda d: d.pop("provenance"), "missing keys ['provenance']"),
        (lambda d: d.update(status="great"), "status 'great'"),
        (lambda d: d.update(status="oom"), "disagrees with its runs"),
        (lambda d: d["runs"][0].update(timed_ms=[1.0, -5.0]), "finite and non-negative"),
        (lambda d: d["cell"].update(batch_size=0), "cell batch size must be an integer >= 1, got 0"),
        (lambda d: d["cell"].update(backend=""), "cell backend must be a non-empty string"),
        (lambda d: d["cell"].pop("model"), "cell model must be a non-empty string, got None"),
        (lambda d: d["runs"][0].update(status="fine"), "run status 'fine'"),
        (lambda d: d["runs"][0].update(windows_ms=[3.0, -1.0]), "raw windows must be non-negative"),
        (lambda d: d["runs"][0].update(reference={"before_ms": 1.0}), "must have before_ms and after_ms"),
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


def test_plans_are_not_results_at_the_top_or_in_a_sub_folder(tmp_path):
    # make bench-cpu-full keeps its plan beside its results in results/cpu-full/, which make table reads from results/
    nested = make_result().write(tmp_path / "cpu-full")
    for plan in (
        tmp_path / "plan.json",
        tmp_path / "plan-paper.json",
        tmp_path / "cpu-full" / "plan.json",
        tmp_path / "cpu-full" / "plan-cpu.json",
    ):
        plan.write_text("{}")
    assert result_files(tmp_path) == [nested]
    assert len(load_all(tmp_path)) == 1


def test_version_1_files_are_migrated_on_load(tmp_path):
    data = make_result().to_dict()
    data["schema_version"] = 1
    del data["cell"]["max_warmup_steps"]
    del data["cell"]["stack"]  # version 1 predates stacks
    del data["cell"]["max_timed_steps"]  # and sampling to a precision
    del data["work"]  # and the work counts
    del data["interval"]  # and the figure's interval
    for run in data["runs"]:
        for new in (
            "first_step_contains",
            "steadiness",
            "compile_events",
            "derived",
            "reference",
            "device_memory",
            "gpu_state",
            "generate_split",
            "sampling",
            "noise",
            "device_reference",
        ):
            del run[new]
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(data))
    loaded = load(path)
    run = loaded.runs[0]
    assert (run.first_step_contains, run.steadiness, run.compile_events, run.derived, run.reference) == (
        None,
        None,
        None,
        False,
        None,
    )
    assert loaded.summary().median == 11.0
    assert loaded.to_dict()["schema_version"] == SCHEMA_VERSION == 2


def test_a_newer_schema_is_refused_in_one_line_naming_file_and_versions(tmp_path):
    data = make_result().to_dict()
    data["schema_version"] = 3
    data["something_new"] = {"x": 1}
    path = tmp_path / "future.json"
    path.write_text(json.dumps(data))
    with pytest.raises(NewerSchema) as e:
        load(path)
    assert (
        str(e.value)
        == f"cannot read result file {path}: schema_version 3 is newer than this code reads (2); update the code"
    )


def schema_2_run(**overrides):
    values = dict(
        status="ok",
        first_step_ms=3000.0,
        first_step_contains="trace + compile + the first high- and low-step pipeline calls",
        windows_ms=[1500.0, 900.0, 1510.0, 905.0, 1495.0, 910.0],
        timed_ms=[120.0, 121.0],
        warmup_ms=[],
        derived=True,
        compile_events=[4, 2, 0, 0, 0, 0],
        steadiness={"steady": True, "reasons": [], "warmup_steps_run": 0, "compile_events_timed": 0, "outliers": []},
        reference={"before_ms": 1.25, "after_ms": 1.31},
    )
    return Run(**{**values, **overrides})


def test_schema_2_fields_round_trip_symmetrically(tmp_path):
    result = make_result([schema_2_run()])
    path = result.write(tmp_path)
    loaded = load(path)
    assert loaded.runs[0] == result.runs[0]
    assert loaded.to_dict() == result.to_dict() == json.loads(path.read_text())


def test_derived_figures_may_be_negative_raw_ones_never():
    derived = make_result([schema_2_run(timed_ms=[-2.0, 10.0, 12.0])])
    assert derived.summary().median == 10.0
    with pytest.raises(ValueError, match="non-negative"):
        make_result([schema_2_run(timed_ms=[-2.0, 10.0, 12.0], derived=False)]).summary()


def test_an_unsteady_run_has_no_summary_but_keeps_its_raw_windows(tmp_path):
    unsteady = schema_2_run(
        status="unsteady",
        message="derived median is zero or less",
        timed_ms=[-5.0, -1.0, 2.0],
        steadiness={
            "steady": False,
            "reasons": ["2 derived step figure(s) of zero or less"],
            "warmup_steps_run": 0,
            "compile_events_timed": 0,
            "outliers": [],
        },
    )
    result = make_result([unsteady])
    assert result.status == "unsteady" and result.summary() is None and result.runs[0].stats() is None
    loaded = load(result.write(tmp_path))
    data = loaded.to_dict()
    assert data["status"] == "unsteady" and data["summary"] is None and data["runs"][0]["stats"] is None
    assert data["runs"][0]["windows_ms"] == unsteady.windows_ms and data["runs"][0]["timed_ms"] == [-5.0, -1.0, 2.0]


def archived(cell_changes, tmp_path):
    """A valid result of a cell that today's registry no longer has (a model, task or profile since removed)."""
    data = make_result().to_dict()
    data["cell"].update(cell_changes)
    path = tmp_path / "smoke" / "cpu-test-cpu-2-cores" / "archived.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    "changes,why",
    [
        ({"model": "resnet"}, "unknown model 'resnet'"),
        ({"task": "generate"}, "unknown task 'generate' for bert"),
        ({"profile": "nightly"}, "unknown profile 'nightly'"),
        ({"backend": "mxnet"}, "unknown backend 'mxnet'"),
    ],
)
def test_archived_cells_stay_readable_after_the_registry_moves_on(tmp_path, changes, why):
    path = archived(changes, tmp_path)
    (loaded,) = load_all(tmp_path)
    assert loaded.summary().median == 11.0 and loaded.unit == "ms/step"
    assert why in loaded.cell.why_not_in_registry()
    assert load(path).to_dict()["cell"] == json.loads(path.read_text())["cell"]
    assert make_result().cell.why_not_in_registry() is None


def test_results_of_one_cell_written_within_one_second_all_survive(tmp_path):
    medians = [11.0, 21.0, 31.0]
    for median in medians:  # the same created_at: history names must still differ
        run = Run(status="ok", first_step_ms=900.0, timed_ms=[median - 1, median, median + 1])
        path = make_result([run], created="2026-11-21T10:00:00+00:00").write(tmp_path)
    history = sorted(tmp_path.rglob("history/*.json"))
    assert len(history) == 2
    assert sorted(load(p).summary().median for p in [*history, path]) == medians
    assert load(path).summary().median == 31.0 and result_files(tmp_path) == [path]


def test_a_failed_move_to_history_leaves_no_empty_file_there(tmp_path, monkeypatch):
    path = make_result().write(tmp_path)
    before = path.read_bytes()

    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("bench.record.results.os.replace", refuse)
    with pytest.raises(OSError):
        make_result(created="2026-11-21T11:00:00+00:00").write(tmp_path)
    assert list((path.parent / "history").iterdir()) == [] and path.read_bytes() == before
