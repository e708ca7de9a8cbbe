"""The release sweep and bisect on a local package index (no network): a tiny package built in several versions, one
of which adds a known delay per call; the sweep must show the step and the bisect must find the planted release."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from bench.base import stats
from bench.base.provenance import REPO_ROOT
from bench.judge import Judge
from bench.studies.sweep import bisect as bisect_module
from bench.studies.sweep.derive import derive
from bench.studies.sweep.index import between, local_versions
from bench.studies.sweep.page import render_sweeps
from bench.studies.sweep.run import Part, Sweep, run_sweep
from bench.studies.sweep.targets import CallTarget

FAST_S, SLOW_S = 0.010, 0.030  # a call's sleep before and from the planted release (sleep is robust under load)


def record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(folder: Path, name: str, version: str, code: str, requires: list[str] = ()) -> Path:
    """A pure-Python wheel, written by hand (no build backend, no network)."""
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": code.encode(),
        f"{info}/METADATA": "\n".join(
            [
                "Metadata-Version: 2.1",
                f"Name: {name}",
                f"Version: {version}",
                *(f"Requires-Dist: {r}" for r in requires),
                "",
            ]
        ).encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{path},{record_hash(data)},{len(data)}\n" for path, data in files.items()) + f"{info}/RECORD,,\n"
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for path, data in files.items():
            z.writestr(path, data)
        z.writestr(f"{info}/RECORD", record)
    return wheel


def work_code(sleep_s: float) -> str:
    return f"import time\n\n\ndef work():\n    time.sleep({sleep_s})\n    return None\n"


@pytest.fixture
def index(tmp_path, monkeypatch):
    """Wheels of `plantedpkg` 1.0 to 2.0 (slow from 1.3 on; 2.0 needs plantedhelper>=2) and a base env locking 1.0,
    served to uv as its only index."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for version in ("1.0", "2.0"):
        make_wheel(wheels, "plantedhelper", version, "")
    for version in ("1.0", "1.1", "1.2", "1.3", "1.4", "2.0"):
        slow = [int(p) for p in version.split(".")] >= [1, 3]
        make_wheel(
            wheels,
            "plantedpkg",
            version,
            work_code(SLOW_S if slow else FAST_S),
            ["plantedhelper>=2" if version == "2.0" else "plantedhelper"],
        )
    base = tmp_path / "base"
    base.mkdir()
    (base / "pyproject.toml").write_text(
        '[project]\nname = "base"\nversion = "0"\ndependencies = ["plantedpkg==1.0"]\n'
    )
    lines = []
    for wheel in ("plantedhelper-1.0-py3-none-any.whl", "plantedpkg-1.0-py3-none-any.whl"):
        name, version = wheel.split("-")[:2]
        lines.append(
            f"{name}=={version} \\\n    --hash=sha256:{hashlib.sha256((wheels / wheel).read_bytes()).hexdigest()}"
        )
    (base / "requirements.txt").write_text("\n".join(lines) + "\n")
    for key, value in {"UV_FIND_LINKS": str(wheels), "UV_NO_INDEX": "1", "UV_OFFLINE": "1"}.items():
        monkeypatch.setenv(key, value)
    # The drift probe (a BLAS matmul) reads up to 100x slower while the shared machine is loaded, which would mark
    # every process noisy and every verdict inconclusive; what is under test here is the planted delay.
    monkeypatch.setattr("bench.studies.sweep.run.reference_ms", lambda: 1.0)
    return tmp_path


def sweep_of(index: Path, versions: list[str], processes: int = 3) -> Sweep:
    target = CallTarget("planted", "plantedpkg:work", warmup=1, timed=8)
    return Sweep("planted", "plantedpkg", versions, [Part(target, base_dir=index / "base")], processes, "test")


def options(index: Path) -> dict:
    return {"locks_dir": index / "locks", "venvs_dir": index / "venvs", "timeout_s": 120, "say": lambda line: None}


def test_a_version_needing_a_co_change_records_it_and_one_beside_the_pins_records_none(index):
    same = derive("planted", "plantedpkg", "1.2", index / "base", locks_dir=index / "locks", say=lambda s: None)
    assert (same.status, same.tier, same.co_changes) == ("ok", "pinned", {})
    moved = derive("planted", "plantedpkg", "2.0", index / "base", locks_dir=index / "locks", say=lambda s: None)
    assert (moved.tier, moved.co_changes) == ("transitive", {"plantedhelper": ["1.0", "2.0"]})
    lock = (index / "locks" / "planted" / "plantedpkg-2.0" / "requirements.txt").read_text()
    assert "plantedpkg==2.0" in lock and "--hash=sha256:" in lock


def test_a_derived_lock_is_kept_and_reused(index, monkeypatch):
    first = derive("planted", "plantedpkg", "1.1", index / "base", locks_dir=index / "locks", say=lambda s: None)

    def no_resolver(*args):
        raise AssertionError("the kept lock was derived again")

    monkeypatch.setattr("bench.studies.sweep.derive.compile_lock", no_resolver)
    again = derive("planted", "plantedpkg", "1.1", index / "base", locks_dir=index / "locks", say=lambda s: None)
    assert again == first


def test_a_version_the_index_cannot_give_is_na_with_the_resolvers_reason(index):
    found = derive("planted", "plantedpkg", "9.9", index / "base", locks_dir=index / "locks", say=lambda s: None)
    assert found.status == "na"
    assert "plantedpkg" in found.reason and "9.9" in found.reason


def test_a_version_that_failed_to_resolve_is_tried_again_and_leaves_nothing_behind(index):
    """A failure is not cached (the network down once kept a version NA for good): only a success is."""
    failed = derive("planted", "plantedpkg", "9.9", index / "base", locks_dir=index / "locks", say=lambda s: None)
    assert failed.status == "na" and not (index / "locks" / "planted" / "plantedpkg-9.9").exists()
    make_wheel(index / "wheels", "plantedpkg", "9.9", work_code(FAST_S), ["plantedhelper"])  # the index is back
    found = derive("planted", "plantedpkg", "9.9", index / "base", locks_dir=index / "locks", say=lambda s: None)
    assert found.ok and (index / "locks" / "planted" / "plantedpkg-9.9" / "derivation.json").exists()


def test_the_index_lists_final_releases_in_order(index):
    versions = local_versions("plantedpkg", index / "wheels")
    assert versions == ["1.0", "1.1", "1.2", "1.3", "1.4", "2.0"]
    assert between(versions, "1.1", "1.4") == ["1.1", "1.2", "1.3", "1.4"]


@pytest.mark.slow
@pytest.mark.duration_s(40)
def test_the_sweep_shows_the_planted_step(index):
    results = run_sweep(sweep_of(index, ["1.1", "1.2", "1.3", "9.9"]), index / "results", **options(index))
    by_version = {r.provenance["sweep"]["version"]: r for r in results}
    assert by_version["9.9"].status == "unsupported" and "9.9" in by_version["9.9"].message
    # 3 processes a version, more (up to twice that) where a loaded machine leaves a comparison undecided
    counts = {v: len(r.runs) for v, r in by_version.items()}
    assert all(3 <= counts[v] <= 6 for v in ("1.1", "1.2", "1.3")), counts
    assert by_version["1.3"].provenance["sweep"]["derivation"]["tier"] == "pinned"
    judge = Judge(results, index / "results")
    assert judge.verdict(by_version["1.2"], by_version["1.3"]) == stats.SLOWER
    assert judge.verdict(by_version["1.1"], by_version["1.2"]) != stats.SLOWER
    page = render_sweeps(index / "results").read_text()
    assert "| 1.3 |" in page and "slower" in page
    assert list((index / "results" / "sweep" / "planted").glob("*.png"))


@pytest.mark.slow
@pytest.mark.duration_s(60)
def test_the_bisect_finds_the_planted_release(index):
    sweep = sweep_of(index, [])
    record = bisect_module.run_bisect(sweep, "work", "1.0", "2.0", index / "results", **options(index))
    assert record["answer"] == "1.3", (record.get("stopped"), record["steps"])
    assert record["steps"][0]["verdict"] == stats.SLOWER
    saved = json.loads((index / "results" / "sweep" / "planted.bisect.json").read_text())
    assert saved["answer"] == "1.3" and len(saved["steps"]) == len(record["steps"]) >= 3
    assert "first slower release: **1.3**" in render_sweeps(index / "results").read_text()


def test_an_inconclusive_step_stops_the_bisect_and_says_so(tmp_path, monkeypatch):
    verdicts = iter([stats.SLOWER, stats.INCONCLUSIVE, stats.INCONCLUSIVE])
    monkeypatch.setattr(bisect_module, "run_sweep", lambda sweep, results_dir, **kw: [])
    monkeypatch.setattr(bisect_module, "compare", lambda *args: (next(verdicts), None))
    sweep = Sweep("fake", "plantedpkg", [], [Part(CallTarget("planted", "plantedpkg:work"))])
    versions = ["1.0", "1.1", "1.2", "1.3", "1.4"]
    record = bisect_module.run_bisect(sweep, "work", "1.0", "1.4", tmp_path, versions, say=lambda s: None)
    assert record["answer"] is None
    assert "inconclusive" in record["stopped"] and "1.3, 1.4" in record["stopped"]
    assert [s["candidate"] for s in record["steps"]] == ["1.4", "1.2"]


def test_a_bisect_whose_bad_end_is_not_slower_stops_at_once(tmp_path, monkeypatch):
    monkeypatch.setattr(bisect_module, "run_sweep", lambda sweep, results_dir, **kw: [])
    monkeypatch.setattr(bisect_module, "compare", lambda *args: (stats.SAME, None))
    sweep = Sweep("fake", "plantedpkg", [], [Part(CallTarget("planted", "plantedpkg:work"))])
    record = bisect_module.run_bisect(sweep, "work", "1.0", "1.4", tmp_path, ["1.0", "1.2", "1.4"], say=lambda s: None)
    assert record["answer"] is None and "not slower" in record["stopped"] and len(record["steps"]) == 1


def fake_results(figures: dict[tuple[str, str], list[float]]) -> list:
    """(key, version) -> each process's step time: results as a sweep writes them, three steps per process."""
    from bench.record.results import Run
    from bench.studies.sweep.run import SweepResult

    target = CallTarget("planted", "plantedpkg:work")
    return [
        SweepResult(
            cell=target.result_cell("work"),
            runs=[Run(status="ok", timed_ms=[ms, ms * 1.01, ms * 0.99]) for ms in per_process],
            unit="ms/call",
            provenance={"sweep": {"key": key, "version": version}},
            created_at="2026-01-01T00:00:00+00:00",
        )
        for (key, version), per_process in figures.items()
    ]


def test_only_the_versions_of_a_comparison_the_cap_could_decide_get_more_processes(tmp_path):
    from bench.judge.replication import SequentialRule
    from bench.studies.sweep.run import undecided_versions

    rule = SequentialRule(3, 6)  # each look at 1 - 5% / 4
    spread = [1.0, 1.04, 0.96]
    results = fake_results({
        ("work", "1.0"): spread,
        ("work", "1.1"): [1.1 * v for v in spread],  # +10% at a 4% spread: undecided at 3, decided well before 6
        ("work", "1.2"): [2.2 * v for v in spread],  # twice 1.1: decided at once
        ("other", "1.0"): spread,
        ("other", "1.1"): [1.02 * v for v in spread],  # +2%: near the band's edge, the cap cannot decide it
    })  # fmt: skip
    for result in results:
        result.provenance["replication"] = rule.to_dict()
    wanted = undecided_versions(results, rule, tmp_path)
    assert wanted == {("", "1.0"): "work: 1.0 vs 1.1", ("", "1.1"): "work: 1.0 vs 1.1"}
    assert undecided_versions(results, SequentialRule(3, 3), tmp_path) == {}  # a fixed count: no more, ever


def test_a_bisect_step_whose_processes_all_failed_is_an_error_not_a_verdict(tmp_path, monkeypatch):
    from bench.base.errors import BenchError
    from bench.record.results import Run

    def every_call_fails(sweep, results_dir, **kw):
        results = fake_results({("work", v): [1.0, 1.0, 1.0] for v in sweep.versions})
        for result in results:
            for run in result.runs:
                run.status, run.message, run.timed_ms = "error", "AttributeError: no nonexistent_fn", []
        return results

    monkeypatch.setattr(bisect_module, "run_sweep", every_call_fails)
    sweep = Sweep("fake", "plantedpkg", [], [Part(CallTarget("planted", "plantedpkg:nonexistent_fn"))])
    with pytest.raises(BenchError, match="every process failed .*AttributeError"):
        bisect_module.run_bisect(sweep, "work", "1.0", "1.4", tmp_path, ["1.0", "1.4"], say=lambda s: None)
    record = json.loads((tmp_path / "sweep" / "fake.bisect.json").read_text())
    assert record["answer"] is None and "every process failed" in record["stopped"]
    one_ran = fake_results({("work", "1.0"): [1.0], ("work", "1.4"): [1.0]})
    one_ran[1].runs.append(Run(status="error", message="one process of three failed"))
    assert bisect_module.compare(one_ran, "work", "1.0", "1.4", tmp_path)[0] == stats.INCONCLUSIVE


def test_a_paired_key_judges_the_ratio_within_each_process_not_the_machines_speed(tmp_path):
    # 2.0 ran on a machine twice as slow: both columns doubled, their ratio did not move
    slower_machine = fake_results(
        {
            ("keras", "1.0"): [12.0, 12.3, 11.8],
            ("plain", "1.0"): [10.0, 10.2, 9.9],
            ("keras", "2.0"): [24.1, 24.4, 23.7],
            ("plain", "2.0"): [20.0, 20.3, 19.8],
        }
    )
    assert bisect_module.compare(slower_machine, "keras/plain", "1.0", "2.0", tmp_path)[0] == stats.SAME
    # 2.0's Keras column itself got slower beside the same plain column
    slower_keras = fake_results(
        {
            ("keras", "1.0"): [12.0, 12.3, 11.8],
            ("plain", "1.0"): [10.0, 10.2, 9.9],
            ("keras", "2.0"): [18.0, 18.5, 17.8],
            ("plain", "2.0"): [10.1, 10.3, 10.0],
        }
    )
    verdict, ratio = bisect_module.compare(slower_keras, "keras/plain", "1.0", "2.0", tmp_path)
    assert verdict == stats.SLOWER and ratio["ratio"] == pytest.approx(1.5, rel=0.02)


def test_the_pypi_listing_keeps_final_releases_that_are_not_yanked(tmp_path):
    from bench.studies.sweep.index import pypi_versions

    releases = {
        "3.10.0": [{"yanked": False}],
        "3.2.0": [{"yanked": False}],
        "3.11.0rc1": [{"yanked": False}],
        "3.9.0": [{"yanked": True}],
        "3.8.0": [],
        "not-a-version": [{"yanked": False}],
    }
    (tmp_path / "keras.json").write_text(json.dumps({"releases": releases}))
    assert pypi_versions("keras", f"file://{tmp_path}/{{name}}.json") == ["3.2.0", "3.10.0"]


def test_overhead_columns_without_pytorch_eager_are_compared_with_their_plain_framework(tmp_path):
    import numpy as np

    from bench.record.results import Run
    from bench.studies.sweep.targets import OverheadTarget

    target = OverheadTarget("jax", ["pure_jax_jit", "keras_jax_jit"], ["llm_forward"])
    run = Run(status="ok", timed_ms=[1.0, 1.0, 1.0]).to_dict()
    (tmp_path / "runs.json").write_text(json.dumps({key: run for key in target.keys()}))
    np.save(tmp_path / "llm_forward__pure_jax_jit.npy", np.ones((2, 3), dtype="float32"))
    np.save(tmp_path / "llm_forward__keras_jax_jit.npy", np.full((2, 3), 2.0, dtype="float32"))
    runs = target.read(tmp_path)
    assert runs["llm_forward__keras_jax_jit"].status == "error"
    assert "not the same computation" in runs["llm_forward__keras_jax_jit"].message
    assert runs["llm_forward__pure_jax_jit"].settings["parity"] == "within tolerance"


def test_a_bisect_for_an_improvement_finds_the_first_faster_release(tmp_path, monkeypatch):
    faster_from = "1.3"  # a planted improvement: every release from 1.3 on is faster than every one before it

    def verdict(results, key, earlier, later, results_dir):
        before, after = (float(v) >= float(faster_from) for v in (earlier, later))
        return (stats.FASTER if after and not before else stats.SAME), None

    monkeypatch.setattr(bisect_module, "run_sweep", lambda sweep, results_dir, **kw: [])
    monkeypatch.setattr(bisect_module, "compare", verdict)
    sweep = Sweep("fake", "plantedpkg", [], [Part(CallTarget("planted", "plantedpkg:work"))])
    versions = ["1.0", "1.1", "1.2", "1.3", "1.4", "1.5"]
    record = bisect_module.run_bisect(sweep, "work", "1.0", "1.5", tmp_path, versions, lambda s: None, stats.FASTER)
    assert record["answer"] == "1.3" and record["change"] == stats.FASTER
    slower = bisect_module.run_bisect(sweep, "work", "1.0", "1.5", tmp_path, versions, lambda s: None)
    assert slower["answer"] is None and "not slower" in slower["stopped"]


def test_a_pre_release_is_never_taken_unless_the_swept_version_is_one(index):
    make_wheel(index / "wheels", "plantedhelper", "3.0rc1", "")
    make_wheel(index / "wheels", "plantedpkg", "2.1", work_code(FAST_S), ["plantedhelper>=3.0rc1"])
    make_wheel(index / "wheels", "plantedpkg", "2.2rc1", work_code(FAST_S), ["plantedhelper>=3.0rc1"])
    quiet = {"locks_dir": index / "locks", "say": lambda s: None}
    refused = derive("planted", "plantedpkg", "2.1", index / "base", **quiet)
    assert refused.status == "na" and "plantedhelper" in refused.reason
    asked = derive("planted", "plantedpkg", "2.2rc1", index / "base", **quiet)
    assert asked.ok and asked.co_changes == {"plantedhelper": ["1.0", "3.0rc1"]}



STOPPABLE_SWEEP = """
import sys
from pathlib import Path

import bench.studies.sweep.run as run
from bench.base.lifetime import stop_on_signals
from bench.studies.sweep.run import Part, Sweep
from bench.studies.sweep.targets import CallTarget

index = Path(sys.argv[1])
run.reference_ms = lambda: 1.0
stop_on_signals()
target = CallTarget("planted", "plantedpkg:work", warmup=1, timed=2)
sweep = Sweep("planted", "plantedpkg", ["1.0", "9.0"], [Part(target, base_dir=index / "base")], 2, "test")
try:
    run.run_sweep(sweep, index / "results", locks_dir=index / "locks", venvs_dir=index / "venvs", timeout_s=600,
                  say=lambda line: print(line, flush=True))
except KeyboardInterrupt as e:
    sys.exit(128 + getattr(e, "signum", 2))
"""


def workers_of(index: Path) -> list[int]:
    """The live call workers started from this test's folder (their interpreter is under it)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if (
            proc.name.isdigit()
            and "bench.studies.sweep.callworker" in command
            and str(index) in command
            and state != "Z"
        ):
            found.append(int(proc.name))
    return found


def start_stoppable_sweep(index: Path) -> subprocess.Popen:
    """A sweep of 1.0 and 9.0 (9.0 sleeps a minute a call), returned once 9.0's worker runs."""
    make_wheel(index / "wheels", "plantedpkg", "9.0", work_code(60.0), ["plantedhelper"])
    proc = subprocess.Popen(
        [sys.executable, "-c", STOPPABLE_SWEEP, str(index)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    seen, deadline = [], time.monotonic() + 300
    while not workers_of(index) or not any("plantedpkg==9.0 (elapsed" in line for line in seen):
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            pytest.fail("9.0's worker never started:\n" + "".join(seen) + (proc.stdout.read() or ""))
        if "plantedpkg==9.0 (elapsed" not in "".join(seen[-1:]):
            seen.append(proc.stdout.readline())
        else:
            time.sleep(0.1)
    return proc


def gone_within(index: Path, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while workers_of(index):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.mark.slow
@pytest.mark.duration_s(40)
def test_a_sweep_stopped_by_sigterm_ends_its_worker_and_writes_what_finished(index):
    proc = start_stoppable_sweep(index)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, out
    assert gone_within(index, 10), "a worker outlived its stopped sweep"
    written = sorted(p.name for p in (index / "results").rglob("*.json"))
    assert written == ["plantedpkg-1.0.json"], (written, out)  # 1.0's finished process; 9.0 never finished one


@pytest.mark.slow
@pytest.mark.duration_s(40)
def test_a_worker_ends_when_its_sweep_is_killed(index):
    proc = start_stoppable_sweep(index)
    proc.kill()  # SIGKILL: no clean-up runs in the orchestrator
    proc.wait(timeout=30)
    assert gone_within(index, 10), "a worker outlived its killed sweep"


STUDY_HEAD = 'name = "s"\npackage = "keras"\nversions = ["3.0.5"]\n'
BAD_STUDIES = {
    "no-part": STUDY_HEAD,
    "no-call": STUDY_HEAD + '[[part]]\nbackend = "jax"\ntarget = "call"\n',
    "no-name": 'package = "keras"\nversions = ["3.0.5"]\n[[part]]\nbackend = "jax"\ntarget = "call"\n'
    'call = "keras:version"\n',
    "not-toml": "name = \n",
    "call-without-colon": STUDY_HEAD + '[[part]]\nbackend = "jax"\ntarget = "call"\ncall = "keras_version"\n',
    "part-not-a-table": STUDY_HEAD + 'part = "x"\n',
}


def test_a_bad_call_study_or_study_name_is_one_line_naming_the_fix(tmp_path, capsys, monkeypatch):
    from bench.studies.sweep import cli as sweep_cli

    monkeypatch.setattr("bench.studies.sweep.run.run_sweep", lambda *a, **k: pytest.fail("a bad sweep ran"))
    monkeypatch.setattr("bench.studies.sweep.bisect.run_bisect", lambda *a, **k: pytest.fail("a bad bisect ran"))
    results = ["--results-dir", str(tmp_path / "results")]
    asked = {
        "call-without-colon": ["bisect", "--call", "keras_version", "--package", "keras", "--backend", "jax",
                               "--good", "3.0.5", "--bad", "3.1.0", *results],
        "unknown-study": ["sweep", "--study", "nope", *results],
    }  # fmt: skip
    for name, text in BAD_STUDIES.items():
        (tmp_path / f"{name}.toml").write_text(text)
        asked[f"study-{name}"] = ["sweep", "--study", str(tmp_path / f"{name}.toml"), *results]
    for case, argv in asked.items():
        code, err = sweep_cli.main(argv), capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and err.startswith("error: "), (case, err)
    with pytest.raises(Exception, match="keras-overhead"):  # the refusal lists the committed studies
        sweep_cli.study_path("nope")
    monkeypatch.chdir(REPO_ROOT)  # the form the usage line shows, as make passes it (from the checkout)
    assert sweep_cli.study_path("bench/studies/sweep/studies/keras-overhead").name == "keras-overhead.toml"
    out = subprocess.run(["make", "-n", "--no-print-directory", "sweep",
                          "STUDY=bench/studies/sweep/studies/keras-overhead"],
                         cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode == 0 and "--study 'bench/studies/sweep/studies/keras-overhead'" in out.stdout, out.stderr


def test_a_package_no_version_of_which_resolves_is_an_error_leaving_nothing(index):
    from bench.base.errors import BenchError

    sweep = Sweep("typo", "plantedpkgg", ["1.0"], [Part(CallTarget("planted", "plantedpkgg:work"),
                                                       base_dir=index / "base")], 1, "test")  # fmt: skip
    with pytest.raises(BenchError, match="no version of plantedpkgg could be resolved"):
        run_sweep(sweep, index / "results", **options(index))
    assert not list((index / "results").rglob("*.json")) and not (index / "locks" / "planted").exists()


def test_versions_naming_no_version_is_refused(tmp_path, capsys):
    from bench.studies.sweep import cli as sweep_cli

    argv = ["sweep", "--package", "keras", "--versions", ",", "--backend", "jax", "--call", "keras:version",
            "--results-dir", str(tmp_path)]  # fmt: skip
    assert sweep_cli.main(argv) == 2 and "VERSIONS= names no version" in capsys.readouterr().err


SIMPLE_PAGE = """<html><body>
<a href="../../f/plantedpkg-1.0-py3-none-any.whl#sha256=00">plantedpkg-1.0-py3-none-any.whl</a>
<a href="../../f/plantedpkg-1.1.tar.gz">plantedpkg-1.1.tar.gz</a>
<a href="../../f/plantedpkg-1.2-py3-none-any.whl" data-yanked="broken">plantedpkg-1.2-py3-none-any.whl</a>
<a href="../../f/plantedpkg-2.0rc1-py3-none-any.whl">plantedpkg-2.0rc1-py3-none-any.whl</a>
<a href="../../f/plantedpkg-2.0-py3-none-any.whl">plantedpkg-2.0-py3-none-any.whl</a>
</body></html>"""


@pytest.fixture
def configured_index(monkeypatch):
    """A local simple index (HTML at /html/, JSON at /json/), the only one a bisect may ask: PyPI is out of reach."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    files = [{"filename": "plantedpkg-1.0-py3-none-any.whl"}, {"filename": "plantedpkg-1.3.tar.gz"},
             {"filename": "plantedpkg-1.4-py3-none-any.whl", "yanked": True}]  # fmt: skip

    class Index(BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/html/plantedpkg/":
                body, kind = SIMPLE_PAGE.encode(), "text/html"
            elif self.path == "/json/plantedpkg/":
                body, kind = json.dumps({"files": files}).encode(), "application/vnd.pypi.simple.v1+json"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    for name in ("UV_FIND_LINKS", "UV_NO_INDEX", "UV_DEFAULT_INDEX", "UV_INDEX_URL", "PIP_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("bench.studies.sweep.index.PYPI_JSON", "http://127.0.0.1:1/unreachable/{name}")
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_bisect_lists_releases_from_the_index_the_user_configured(configured_index, monkeypatch, tmp_path):
    from bench.studies.sweep import index

    monkeypatch.setattr(index, "PIP_CONFIG_FILES", ())
    monkeypatch.setenv("UV_INDEX_URL", f"{configured_index}/html/")
    assert index.released_versions("plantedpkg") == ["1.0", "1.1", "2.0"]  # no yanked, no release candidate
    monkeypatch.setenv("UV_INDEX_URL", f"{configured_index}/json")
    assert index.released_versions("plantedpkg") == ["1.0", "1.3"]
    monkeypatch.delenv("UV_INDEX_URL")
    conf = tmp_path / "pip.conf"
    conf.write_text(f"[global]\nindex-url = {configured_index}/html/\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    assert index.released_versions("plantedpkg") == ["1.0", "1.1", "2.0"]


def test_an_index_configured_for_pip_only_is_the_one_uv_resolves_and_builds_from(tmp_path, monkeypatch):
    from bench.studies.sweep import cli as sweep_cli
    from bench.studies.sweep import index

    for name in ("UV_DEFAULT_INDEX", "UV_INDEX_URL", "PIP_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(index, "PIP_CONFIG_FILES", ())
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nindex-url = https://mirror.example/simple/\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    monkeypatch.setattr(os, "environ", dict(os.environ))  # what main sets stays in this test
    seen = {}
    monkeypatch.setattr("bench.studies.sweep.run.run_sweep",
                        lambda *a, **k: seen.update(index=os.environ.get("UV_DEFAULT_INDEX")))  # fmt: skip
    sweep_cli.main(["sweep", "--package", "keras", "--versions", "3.0.5", "--backend", "jax", "--call", "keras:version",
                    "--results-dir", str(tmp_path / "results")])  # fmt: skip
    assert seen == {"index": "https://mirror.example/simple/"}
