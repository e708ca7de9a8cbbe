"""make history: the index over every result file, a cell's series, its change points (a planted step found where it
is, a flat noisy series left alone), the Judge's and the bisects' word on each, triage, and one-line refusals."""
import math
import os
import random
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from committed import committed_results
from test_export import make_result

from bench.record.results import Run
from bench.studies.history import index, triage
from bench.studies.history.changes import THRESHOLD, change_points
from bench.studies.history.series import series_of

if os.environ.get("CI", "").lower() != "true":  # CI's tools env has it (envs/tools): there a missing one fails
    pytest.importorskip("ruptures")

REPO = Path(__file__).resolve().parent.parent


def noisy_logs(rng: random.Random, levels: list[tuple[int, float]], noise: float = 0.03) -> list[float]:
    return [math.log(level) + rng.gauss(0, noise) for count, level in levels for _ in range(count)]


def test_a_planted_step_is_found_at_its_point_with_its_size():
    logs = noisy_logs(random.Random(7), [(20, 10.0), (15, 12.0)])
    found = change_points(logs)
    assert [s.at for s in found] == [20]
    low, high = found[0].ratio.interval()
    assert low < 1.2 < high and found[0].p < THRESHOLD


def test_two_steps_up_then_down_are_both_found():
    found = change_points(noisy_logs(random.Random(3), [(12, 10.0), (8, 13.0), (10, 10.5)]))
    assert [s.at for s in found] == [12, 20]
    assert found[0].ratio.value > 1 > found[1].ratio.value


def test_a_flat_noisy_series_gives_no_change_in_at_least_95_of_100_seeds():
    calls = sum(bool(change_points(noisy_logs(random.Random(seed), [(30, 10.0)], noise=0.05))) for seed in range(100))
    assert calls <= 5, f"{calls} of 100 flat series called a change"


def write_series(results: Path, figures: list[float]) -> list[Path]:
    """One cell measured once per figure, a day apart: each write moves the one before to history/."""
    paths = []
    for day, figure in enumerate(figures, 1):
        runs = [Run(status="ok", timed_ms=[figure * f for f in (0.99, 1.0, 1.01)]) for _ in range(3)]
        result = replace(make_result(runs=runs), created_at=f"2026-01-{day:02d}T00:00:00+00:00",
                         provenance={"git": {"commit": f"c{day:04d}"}, "run_id": f"run{day}",
                                     "machine": {"cpu": "Test CPU", "logical_cpus": 4, "gpus": []}})
        paths.append(result.write(results))
    return paths


def test_the_index_reads_current_and_history_files_once_and_drops_a_removed_one(tmp_path):
    results = tmp_path / "results"
    write_series(results, [10.0, 10.2, 9.9])
    first = index.refresh(results)
    assert first.read == 3 and first.skipped == []
    again = index.refresh(results)
    assert (again.read, again.kept) == (0, 3)
    sorted((results / "smoke").rglob("history/*.json"))[0].unlink()  # the first day's
    assert index.refresh(results).dropped == 1
    (series,) = series_of(results, "jax__bert__fit__bs2__default")
    assert [p.commit for p in series.points] == ["c0002", "c0003"]


def run_history(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bench.studies.history", *args], cwd=REPO, capture_output=True,
                          text=True,
                          timeout=120)


def test_make_history_shows_each_point_and_the_change_with_the_judges_word_and_keeps_a_triage(tmp_path):
    results = tmp_path / "results"
    rng = random.Random(11)
    write_series(results, [10 * math.exp(rng.gauss(0, 0.01)) for _ in range(6)]
                 + [13 * math.exp(rng.gauss(0, 0.01)) for _ in range(6)])
    shown = run_history("show", "--cell", "jax__bert__fit__bs2__default", "--results-dir", str(results))
    assert shown.returncode == 0, shown.stderr
    assert "12 points by date" in shown.stdout
    (line,) = [ln for ln in shown.stdout.splitlines() if "change between" in ln]
    assert "change between 20260106T000000Z and 20260107T000000Z: 1.3" in line
    # separate runs, and no noise study to give the machine's run-to-run spread: the Judge cannot decide
    assert "judge: inconclusive" in line and "status: candidate" in line
    assert ("not re-run: make bisect-commits CELL=jax__bert__fit__bs2__default PROFILE=smoke GOOD=c0006 BAD=c0007"
            in line)
    pooled = run_history("show", "--cell", "jax__bert__fit__bs2__default", "--by", "commit",
                         "--results-dir", str(results))
    assert "12 points by commit" in pooled.stdout and "change between c0006 and c0007: 1.3" in pooled.stdout
    confirmed = run_history("show", "--cell", "jax__bert__fit__bs2__default", "--confirm",
                            "--results-dir", str(results))
    # the fake series' commits are no commits of this clone: said for that change, and the command fails
    assert "confirm: not re-run: commit c0006 is not in this clone" in confirmed.stdout
    assert confirmed.returncode == 1
    marked = run_history("triage", "--cell", "jax__bert__fit__bs2__default", "--at", "20260107T000000Z",
                         "--state", "expected", "--reason", "a slower kernel on purpose", "--results-dir", str(results))
    assert marked.returncode == 0, marked.stderr
    assert [t.state for t in triage.read(results)] == ["expected"]
    shown = run_history("show", "--cell", "jax__bert__fit__bs2__default", "--results-dir", str(results))
    assert "triaged expected" in shown.stdout and "a slower kernel on purpose" in shown.stdout
    assert "1 (0 new, 1 triaged: not new)" in shown.stdout


@pytest.mark.parametrize("args,words", [
    (["show", "--cell", "jax__bert__fit__bs2__defualt"], "nearest: jax__bert__fit__bs2__default"),
    (["show", "--cell", "x", "--threshold", "2"], "no p-value threshold"),
    (["triage", "--cell", "jax__bert__fit__bs2__default", "--at", "nowhere", "--state", "noise", "--reason", "r"],
     "no point of jax__bert__fit__bs2__default has that label"),
    (["triage", "--cell", "jax__bert__fit__bs2__default", "--at", "20260101T000000Z", "--state", "fine",
      "--reason", "r"], "invalid choice"),
    (["triage", "--cell", "jax__bert__fit__bs2__default", "--at", "20260101T000000Z", "--state", "noise",
      "--reason", " "], "REASON= is empty"),
])
def test_bad_input_is_refused_in_one_line(tmp_path, args, words):
    results = tmp_path / "results"
    write_series(results, [10.0, 10.1])
    out = run_history(*args, "--results-dir", str(results))
    assert out.returncode == 2 and len(out.stderr.splitlines()) == 1 and words in out.stderr, out.stderr
    assert not (results / triage.TRIAGE_FILE).exists()


def test_the_keras_sweeps_paired_overhead_series_and_its_bisected_changes(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(committed_results() / "sweep", results / "sweep")
    key = "llm_forward__keras_torch_eager/llm_forward__pure_torch_eager"
    shown = run_history("show", "--cell", key, "--threshold", "0.01", "--results-dir", str(results))
    assert shown.returncode == 0, shown.stderr
    assert "13 points by release" in shown.stdout  # the sweep's 7 releases and the bisects' 6 more
    changes = [ln for ln in shown.stdout.splitlines() if "change between" in ln]
    assert any("3.11.3 and 3.12.0" in ln and "first slower release 3.12.0" in ln and "status: change" in ln
               for ln in changes), changes
    assert any("3.14.1 and 3.15.0" in ln and "first faster release 3.15.0" in ln and "status: change" in ln
               for ln in changes), changes


def test_a_file_where_the_index_goes_that_is_no_index_is_kept_and_refused_in_one_line(tmp_path):
    results = tmp_path / "results"
    write_series(results, [10.0])
    (results / index.INDEX_NAME).write_text("a user's notes")
    out = run_history("keys", "--results-dir", str(results))
    assert out.returncode == 2 and len(out.stderr.splitlines()) == 1 and "not a database" in out.stderr, out.stderr
    assert (results / index.INDEX_NAME).read_text() == "a user's notes"


def test_confirm_re_measures_the_two_releases_either_side_on_the_series_backend_and_judges_them(tmp_path, monkeypatch,
                                                                                                  capsys):
    from bench.studies.history import cli

    results = tmp_path / "results"
    shutil.copytree(committed_results() / "sweep", results / "sweep")
    asked = []

    def measured(sweep, results_dir, **options):  # stands for the sweep's processes: the bisect step's files again
        asked.append((sweep.name, sweep.versions, [part.target.backend for part in sweep.parts]))
        step = results_dir / "sweep" / "bisect-keras-overhead-torch-forward-3.14.1-3.15.1-faster-p5-step2"
        if sweep.versions == ["3.14.1", "3.15.0"]:
            shutil.copytree(step, results_dir / "sweep" / sweep.name)
        return []

    monkeypatch.setattr("bench.studies.sweep.run.run_sweep", measured)
    monkeypatch.setattr("bench.studies.sweep.index.use_configured_index", lambda: None)
    monkeypatch.setattr("bench.base.lifetime.stop_on_signals", lambda: None)
    key = "llm_forward__keras_torch_eager/llm_forward__pure_torch_eager"
    assert cli.main(["show", "--cell", key, "--threshold", "0.01", "--confirm", "--results-dir", str(results)]) == 0
    said = capsys.readouterr().out
    assert ("history-confirm-keras-overhead-torch-3.14.1-3.15.0", ["3.14.1", "3.15.0"], ["torch"]) in asked
    assert "confirm: re-measured 3.14.1 and 3.15.0: faster" in said


def test_without_ruptures_the_search_is_a_one_line_error_naming_the_fix(monkeypatch):
    from bench.base.errors import BenchError

    monkeypatch.setitem(sys.modules, "ruptures", None)  # what an own Python without it gives: ImportError
    with pytest.raises(BenchError, match="make env-tools installs it"):
        change_points([0.0, 0.1, 0.0, 0.1, 1.0, 1.1])


def test_confirm_on_a_series_by_date_says_why_no_commit_can_be_re_run():
    from bench.studies.history.cli import commits_to_rerun

    same = commits_to_rerun("date", "f221d07eb859d9", "f221d07eb859d9")  # the smoke BERT predict cell's two changes
    assert "both points were measured at commit f221d07eb8: no code changed" in same and "check out" not in same
    assert "was not recorded" in commits_to_rerun("commit", None, "c0007")


def test_triages_said_at_once_are_all_kept(tmp_path, monkeypatch):
    """Four `make history-triage` at once once kept three: each read the file, then wrote it back with its own."""
    import threading
    import time

    results = tmp_path / "results"
    results.mkdir()
    read = triage.read

    def slow_read(results_dir):
        found = read(results_dir)
        time.sleep(0.2)  # what a loaded machine does between the read and the write
        return found

    monkeypatch.setattr(triage, "read", slow_read)
    threads = [threading.Thread(target=triage.record, args=(results, "k", "w", "20260107T000000Z", "noise", f"c{i}"))
               for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(t.reason for t in read(results)) == ["c0", "c1", "c2", "c3"]
    assert [p.name for p in results.iterdir()] == [triage.TRIAGE_FILE]  # no lock file left


def test_two_points_measured_in_one_second_have_labels_of_their_own(tmp_path):
    """A noise round's A and B share a created_at second: `make history` once said "change between
    20261129T002508Z and 20261129T002508Z", and AT= could not tell them apart."""
    results = tmp_path / "results"
    paths = write_series(results, [10.0, 10.1, 9.9, 13.0, 13.1, 12.9])
    import json as json_module

    for path in results.rglob("*.json"):
        data = json_module.loads(path.read_text())
        if data["created_at"][8:10] in ("03", "04"):  # the last point before the step and the first after: 1 second
            data["created_at"] = "2026-01-03T00:00:00+00:00"
            path.write_text(json_module.dumps(data))
    assert len(paths) == 6
    index.refresh(results)
    (series,) = series_of(results, "jax__bert__fit__bs2__default")
    labels = [p.label for p in series.points]
    assert len(set(labels)) == len(labels) == 6, labels
    assert labels[2:4] == ["20260103T000000Z", "20260103T000000Z-2"], labels
    shown = run_history("show", "--cell", "jax__bert__fit__bs2__default", "--results-dir", str(results))
    (line,) = [ln for ln in shown.stdout.splitlines() if "change between" in ln]
    assert "change between 20260103T000000Z and 20260103T000000Z-2" in line, shown.stdout
    marked = run_history("triage", "--cell", "jax__bert__fit__bs2__default", "--at", "20260103T000000Z-2",
                         "--state", "noise", "--reason", "r", "--results-dir", str(results))
    assert marked.returncode == 0, marked.stderr


def test_a_triage_at_a_point_where_no_change_starts_is_refused_naming_the_changes(tmp_path):
    """A triage at a point with no change was once recorded, exit 0, and never shown."""
    results = tmp_path / "results"
    rng = random.Random(11)
    write_series(results, [10 * math.exp(rng.gauss(0, 0.01)) for _ in range(6)]
                 + [13 * math.exp(rng.gauss(0, 0.01)) for _ in range(6)])
    out = run_history("triage", "--cell", "jax__bert__fit__bs2__default", "--at", "20260103T000000Z",
                      "--state", "noise", "--reason", "r", "--results-dir", str(results))
    assert out.returncode == 2 and len(out.stderr.splitlines()) == 1, out.stderr
    assert "no change" in out.stderr and "20260107T000000Z" in out.stderr, out.stderr
    assert not (results / triage.TRIAGE_FILE).exists()
