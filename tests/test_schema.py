"""The published result schemas: every committed result validates; broken ones fail naming the JSON path."""
import copy
import json
import subprocess
import tarfile
from pathlib import Path

import jsonschema
import pytest
from committed import committed_results

from bench.base.errors import BenchError
from bench.record import schema
from bench.record.results import STATUSES, result_files
from bench.record.schema import validate_result

REPO = Path(__file__).resolve().parent.parent
# The published table's result files, the inference grid's (results/grid/, which result_files leaves out) and the
# tuning study's (its own folder).
# HEAD's files, not what a user's own run left in results/ (tests/committed.py).
RESULTS = committed_results()
COMMITTED = (
    result_files(RESULTS)
    + sorted(p for study in ("grid", "overhead") for p in (RESULTS / study).rglob("*.json") if "history" not in p.parts)
    # the release sweeps' results (a bisect's record, <name>.bisect.json beside them, is no cell's result)
    + sorted(p for p in (RESULTS / "sweep").glob("*/*/*/*/*.json") if "history" not in p.parts)
    + result_files(RESULTS / "tuning")
    # the noise study's cell results, both sides of each round (its study files are not cell results)
    + sorted(p for p in (RESULTS / "noise" / "runs").rglob("round-*/*/**/*.json") if "history" not in p.parts)
    # the short paper cells of `make gpu-check` (its report, gpu-check.json, is not a cell result)
    + sorted(p for p in (RESULTS / "gpu-check").glob("*/cells/**/*.json") if "history" not in p.parts)
    # a cell re-run at two commits, each process by that commit's own code (its record, <name>.confirm.json, is not)
    + sorted(p for p in (RESULTS / "confirm").glob("*/step*/*/process*/**/*.json") if "history" not in p.parts)
    # make ab's comparisons: each side's processes (each comparison's record, <folder>.ab.json, is not a cell result)
    + sorted(p for p in (RESULTS / "ab").glob("*/*/*/process*/**/*.json") if "history" not in p.parts)
)
# A schema 1 result as the smoke run of 2026-11-22 wrote it, kept here: a re-run rewrites the committed one as schema 2.
OK_FILE = Path(__file__).resolve().parent / "golden" / "result-v1-jax-bert-fit.json"


def ok_result() -> dict:
    return json.loads(OK_FILE.read_text())


def as_v2(data: dict, **run_fields) -> dict:
    data = copy.deepcopy(data)
    data["schema_version"] = 2
    for run in data["runs"]:
        run.update(run_fields)
    return data


@pytest.mark.parametrize("version", schema.VERSIONS)
def test_schemas_are_valid_draft_2020_12(version):
    document = json.loads(schema.schema_path(version).read_text())
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(document)


def test_every_committed_result_file_validates():
    tracked = subprocess.run(
        ["git", "ls-files", "results/*/*.json"], cwd=REPO, capture_output=True, text=True
    ).stdout.split()
    # a noise study's rounds and the grid's results are tracked packed (bench/base/packed.py): each archive's members
    # count as its files
    archives = subprocess.run(["git", "ls-files", "results/*.tar.xz"], cwd=REPO, capture_output=True,
                              text=True).stdout.split()  # fmt: skip
    for archive in archives:
        with tarfile.open(REPO / archive, mode="r:xz") as tar:
            parent = archive.rsplit("/", 1)[0]
            tracked += [f"{parent}/{m.name}" for m in tar.getmembers() if m.name.endswith(".json")]
    # no plans, no earlier results (history/), no machine ceilings (ceilings/: bench/roofline, not a cell's result),
    # no noise study files (results/noise/*.json, runs/*/study.json: bench/studies/noise's own format), no parity checks
    # (results/parity/: bench/studies/parity's page data)
    results = [
        p
        for p in tracked
        if not {"history", "ceilings", "parity"} & set(p.split("/"))
        and not p.rsplit("/", 1)[-1].startswith("plan")
        and not (p.startswith("results/noise/") and "/round-" not in p)
        and not p.endswith((".bisect.json", ".confirm.json", ".ab.json", "/gpu-check.json"))
    ]
    assert len(COMMITTED) == len(results) >= 72
    for path in COMMITTED:
        validate_result(json.loads(path.read_text()))


def test_v1_statuses_match_the_code():
    document = json.loads(schema.schema_path(1).read_text())
    assert set(document["properties"]["status"]["enum"]) <= set(STATUSES) | {"killed", "unsteady", "oom-predicted"}
    assert set(document["properties"]["status"]["enum"]) >= {"ok", "oom", "timeout", "error", "unsupported"}


def broken(edit) -> dict:
    data = ok_result()
    edit(data)
    return data


@pytest.mark.parametrize(
    "edit,path,words",
    [
        (lambda d: d.pop("status"), "$", "'status' is a required property"),
        (lambda d: d.update(status="exploded"), "$.status", "exploded"),
        (lambda d: d["runs"][0]["timed_ms"].__setitem__(1, -2.5), "$.runs[0].timed_ms[1]", "minimum"),
        (lambda d: d["cell"].update(batch_size="2"), "$.cell.batch_size", "not of type 'integer'"),
        (lambda d: d["runs"][0].update(wall_s="slow"), "$.runs[0].wall_s", "slow"),
        (lambda d: d.update(summary=None), "$.summary", "None is not of type 'object'"),
        (lambda d: d.update(schema_version=7), "$.schema_version", "not a known"),
        (lambda d: d["runs"].clear(), "$.runs", "should be non-empty"),
        (lambda d: d["runs"][0].update(steadiness={"steady": True}), "$.runs[0]", "steadiness"),  # a v2 field in v1
    ],
    ids=[
        "missing-status",
        "unknown-status",
        "negative-step",
        "wrong-type",
        "wrong-type-run",
        "ok-without-summary",
        "unknown-version",
        "no-runs",
        "v2-field-in-v1",
    ],
)
def test_a_broken_result_fails_naming_the_path(edit, path, words):
    with pytest.raises(BenchError) as e:
        validate_result(broken(edit))
    message = str(e.value)
    assert message.startswith(path + ":") and words in message, message


def test_v2_accepts_the_contracts_new_fields_and_statuses():
    steadiness = {"steady": True, "reasons": [], "warmup_steps_run": 1, "compile_events_timed": 0, "outliers": []}
    data = as_v2(
        ok_result(),
        first_step_contains="trace + compile + first step",
        steadiness=steadiness,
        compile_events=[1, 0, 0, 0],
        derived=False,
        reference={"before_ms": 1.0, "after_ms": 1.1},
    )
    validate_result(data)
    validate_result(as_v2(ok_result()))  # every new field is optional
    for status in ("killed", "unsteady", "oom-predicted"):
        failed = as_v2(ok_result())
        failed.update(status=status, summary=None, message="x")
        failed["runs"][0].update(status=status, stats=None)
        validate_result(failed)
        with pytest.raises(BenchError, match=r"^\$\.status"):
            validate_result({**failed, "schema_version": 1})


def test_v2_derived_step_times_may_be_negative_raw_ones_never():
    data = as_v2(ok_result(), derived=True)
    data["runs"][0]["timed_ms"][0] = -0.5
    data["runs"][0]["stats"].update(min=-0.5, p10=-0.1)
    validate_result(data)
    data["runs"][0]["stats"].update(min=0.5, p10=0.6)
    validate_result(data)
    data["runs"][0]["derived"] = False
    with pytest.raises(BenchError, match=r"^\$\.runs\[0\]\.timed_ms\[0\]"):
        validate_result(data)
    data["runs"][0].update(timed_ms=[1.0, 2.0, 3.0], warmup_ms=[-1.0])  # warm-up figures are derived too
    with pytest.raises(BenchError, match=r"^\$\.runs\[0\]\.warmup_ms\[0\]"):
        validate_result(data)
    data["runs"][0]["derived"] = True
    validate_result(data)
    windows = as_v2(ok_result(), derived=True, windows_ms=[1.0, -1.0])
    with pytest.raises(BenchError, match=r"^\$\.runs\[0\]\.windows_ms\[1\]"):
        validate_result(windows)


def test_v2_steadiness_needs_its_keys():
    data = as_v2(ok_result(), steadiness={"steady": True})
    with pytest.raises(BenchError, match=r"^\$\.runs\[0\]\.steadiness"):
        validate_result(data)


def test_without_jsonschema_it_is_a_no_op(monkeypatch):
    """A backend env (cell process) has no jsonschema: validation is skipped, not an ImportError."""
    monkeypatch.setattr(schema, "jsonschema", None)
    validate_result({"not": "a result"})
