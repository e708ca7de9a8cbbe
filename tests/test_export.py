"""make export: one CSV row per current result file, readable back with the csv module."""
import csv
import subprocess
import sys
from pathlib import Path

import pytest
from committed import committed_results

from bench.base.errors import BenchError
from bench.catalogue.registry import Cell
from bench.record.results import CorruptResult, Result, Run, load
from bench.report import export

REPO = Path(__file__).resolve().parent.parent
COMMITTED = committed_results()  # HEAD's, not what a user's own run left in results/


def read_back(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def make_result(backend="jax", model="bert", task="fit", batch=2, runs=None, tokens=None) -> Result:
    cell = Cell(backend, model, task, batch, "smoke", "default" if backend != "native-torch" else "eager", 1, 3)
    process = {"environment": {"lock_sha256": "ab" * 32}}
    runs = runs or [Run(status="ok", timed_ms=[10.0, 11.0, 12.0], tokens_per_step=tokens, process=process)]
    machine = {"cpu": "Test CPU", "logical_cpus": 4, "gpus": []}
    return Result(cell, runs, "ms/step", {"git": {"commit": "c0ffee"}, "machine": machine}, "2026-01-01T00:00:00+00:00")


SMOKE_FOLDER = "cpu-amd-epyc-2-cores--64dc9908f650"  # the committed smoke run's machine: hardware and processor


def test_the_committed_smoke_results_export_to_72_rows_per_stack(tmp_path):
    out, count = export.export(COMMITTED, tmp_path / "all.csv")
    by_stack = {stack: [r for r in read_back(out) if r["stack"] == stack] for stack in ("today", "2024", "current")}
    assert count == sum(map(len, by_stack.values()))  # a user's own environment's (the GPU session) too
    assert all(r["file"].startswith("env-current/") for r in by_stack["current"])
    # the 2024 stack's smoke matrix, on each machine that ran it (the AMD one by make test-stack2024
    # KEEP_RESULTS=results, the Intel one by make bench-all STACK=2024): one row per result file
    folders = sorted((COMMITTED / "smoke").glob("*/stack-2024"))
    assert len(folders) >= 2
    prefixes = tuple(f"smoke/{f.parent.name}/stack-2024/" for f in folders)
    assert all(r["file"].startswith(prefixes) for r in by_stack["2024"])
    for folder in folders:
        rows = [r for r in by_stack["2024"] if r["file"].startswith(f"smoke/{folder.parent.name}/stack-2024/")]
        assert len(rows) == len(list(folder.glob("*.json"))) >= 71, folder
    # today's smoke matrix, on each machine that ran it (72 rows each); the full-size CPU run (results/cpu-full,
    # make bench-cpu-full) exports beside it
    assert all(r["file"].startswith("cpu-full/") for r in by_stack["today"] if r["profile"] == "cpu")
    smoke = [r for r in by_stack["today"] if r["profile"] == "smoke"]
    machines = {r["file"].split("/")[1] for r in smoke}
    assert len(machines) >= 2
    for machine in machines:
        rows = [r for r in smoke if r["file"].split("/")[1] == machine]
        assert len(rows) == 72, machine
        assert list(rows[0]) == list(export.COLUMNS)
        assert {"ok", "unsupported"} <= {r["status"] for r in rows} <= {"ok", "unsupported", "unsteady"}
        assert sum(r["status"] == "unsupported" for r in rows) == 6
        # one machine a folder, and the folder named for it (hardware and processor)
        assert len({r["machine"] for r in rows}) == 1 and rows[0]["machine"].endswith(machine.rsplit("--", 1)[1])
    rows = [r for r in smoke if r["file"].split("/")[1] == SMOKE_FOLDER]
    assert {r["machine"] for r in rows} == {"CPU AMD EPYC (2 cores), processor 64dc9908f650"}
    assert {r["profile"] for r in rows} == {"smoke"}
    bert = next(r for r in rows if r["file"] == f"smoke/{SMOKE_FOLDER}/jax__bert__fit__bs2__default.json")
    # the export's figures are the result file's own (the file is re-run whenever its code path changes)
    bert_result = load(COMMITTED / bert["file"])
    assert float(bert["median"]) == pytest.approx(bert_result.summary().median, rel=1e-5)
    assert (bert["unit"], bert["batch"]) == ("ms/step", "2")
    assert bert["commit"] == bert_result.provenance["git"]["commit"] and len(bert["commit"]) == 40
    assert len(bert["lock_sha256"]) == 64
    gemma = next(r for r in rows if r["file"].endswith("jax__gemma__generate__bs1__default.json"))
    expected = load(COMMITTED / gemma["file"]).tokens_per_s()
    assert float(gemma["tokens_per_s"]) == pytest.approx(expected, rel=1e-4) and gemma["unit"] == "ms/call"
    na = next(r for r in rows if r["status"] == "unsupported")
    assert na["median"] == na["p10"] == na["tokens_per_s"] == na["lock_sha256"] == ""


def test_fixture_with_repeats_and_failures(tmp_path):
    results = tmp_path / "results"
    runs = [Run(status="ok", timed_ms=[10.0, 10.0, 10.0]), Run(status="ok", timed_ms=[20.0, 20.0, 20.0])]
    make_result(runs=runs).write(results)
    make_result(model="gemma", task="generate", tokens=64).write(results)
    make_result(backend="torch", runs=[Run(status="oom", message="out of memory")]).write(results)
    rows = read_back(export.export(results)[0])  # default: <results-dir>/results.csv
    assert (results / "results.csv").exists() and len(rows) == 3
    by_backend_model = {(r["backend"], r["model"]): r for r in rows}
    repeated = by_backend_model["jax", "bert"]
    assert repeated["repeats"] == "2" and float(repeated["median"]) == 15.0
    assert float(repeated["repeat_cv"]) == pytest.approx(7.0711 / 15.0, rel=1e-4)  # stdev(10, 20) / mean
    assert float(by_backend_model["jax", "gemma"]["tokens_per_s"]) == pytest.approx(64 / 0.011)
    oom = by_backend_model["torch", "bert"]
    assert oom["status"] == "oom" and oom["median"] == "" and oom["machine"] == "CPU Test CPU (4 cores)"
    assert export.export(results)[1] == 3  # results.csv itself is not a result file


def test_an_unreadable_result_is_named(tmp_path):
    results = tmp_path / "results"
    path = make_result().write(results)
    path.write_text("{not json")
    with pytest.raises(CorruptResult, match=path.name):
        export.rows(results)


def test_cli_writes_the_default_file(tmp_path):
    results = tmp_path / "results"
    make_result().write(results)
    out = subprocess.run(
        [sys.executable, "-m", "bench", "export", "--results-dir", str(results)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "(1 rows)" in out.stdout and len(read_back(results / "results.csv")) == 1


def test_an_output_path_never_replaces_a_result_or_another_file(tmp_path):
    results = tmp_path / "results"
    path = make_result().write(results)
    before = path.read_bytes()
    with pytest.raises(BenchError, match="did not write"):
        export.export(results, path)
    assert path.read_bytes() == before
    other = tmp_path / "data.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(BenchError, match="did not write"):
        export.export(results, other)
    assert other.read_text() == "a,b\n1,2\n"
    out = tmp_path / "out.csv"
    export.export(results, out)
    export.export(results, out)  # its own earlier CSV: replaced
    assert len(read_back(out)) == 1


@pytest.mark.parametrize("name", ["x.json", "x.md", "x"])
def test_an_output_of_another_kind_than_csv_is_refused_naming_the_csv(tmp_path, name):
    """OUT=<results>/x.json once wrote the CSV where the next make table read it as a broken result file."""
    results = tmp_path / "results"
    make_result().write(results)
    with pytest.raises(BenchError, match=r"name \S+\.csv$"):
        export.export(results, results / name)
    assert not (results / name).exists()
