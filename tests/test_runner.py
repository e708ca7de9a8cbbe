"""The orchestrator: statuses for every way a cell can fail, bad input, Ctrl-C, nothing lost."""
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakes import bench_env, run_bench, smoke_run, write_memory_events

from bench.base.published import published_rows
from bench.catalogue.registry import plan_cells
from bench.record.results import load_all

REPO = Path(__file__).resolve().parent.parent


bench = run_bench


def test_ok_cell_writes_a_valid_result_with_progress(venvs, tmp_path):
    results = tmp_path / "results"
    out = bench(smoke_run("--backend", "jax", "--model", "bert", results=results), bench_env(venvs))
    assert out.returncode == 0, out.stderr + out.stdout
    assert "[1/2] jax bert fit" in out.stdout and "[2/2] jax bert predict" in out.stdout
    assert "profile: smoke (explicit" in out.stdout
    loaded = load_all(results)
    assert {r.cell.task for r in loaded} == {"fit", "predict"}
    r = loaded[0]
    assert r.status == "ok" and r.summary().median == 11.0 and r.runs[0].first_step_ms == 500.0
    assert r.provenance["git"]["commit"] and "machine" in r.provenance


@pytest.mark.parametrize(
    "mode,status,words",
    [
        ("oom", "oom", "RESOURCE_EXHAUSTED"),
        ("sigkill", "killed", "killed by SIGKILL (no sign of the OOM killer: memory.events oom_kill unchanged)"),
        ("oomkill", "oom", "killed by SIGKILL: the kernel's OOM killer (memory.events oom_kill 3 -> 4)"),
        ("segv", "killed", "killed by SIGSEGV"),
        ("crash", "error", "status 139"),
        ("sleep", "timeout", "killed"),
    ],
)
def test_failed_cells_become_statuses_and_the_run_goes_on(venvs, tmp_path, mode, status, words):
    results = tmp_path / "results"
    env = bench_env(venvs, jax=mode)
    env["BENCH_MEMORY_EVENTS"] = str(write_memory_events(tmp_path / "memory.events", oom_kill=3))
    out = bench(smoke_run("--backend", "jax,torch", "--model", "bert", "--task", "fit", "--timeout", "3", results=results), env)
    assert out.returncode == 1  # a failed cell makes the run's exit status non-zero, after every cell ran
    by_backend = {r.cell.backend: r for r in load_all(results)}
    assert by_backend["jax"].status == status and words in by_backend["jax"].message
    assert by_backend["torch"].status == "ok"
    assert (results / "logs" / "smoke").exists()


def test_unsupported_cells_are_recorded_without_running(venvs, tmp_path):
    results = tmp_path / "results"
    out = bench(smoke_run("--backend", "keras2", "--model", "gemma", results=results), bench_env(venvs))
    assert out.returncode == 0, out.stderr
    statuses = {(r.cell.task, r.cell.batch_size): r.status for r in load_all(results)}
    assert statuses == {("fit", 2): "unsupported", ("generate", 2): "unsupported", ("generate", 1): "unsupported"}


def test_a_cell_rule_makes_cells_unsupported_on_its_stack_alone(venvs, tmp_path):
    """Mistral's compiled generate needs a static cache transformers 4.38.2 lacks: NA on the 2024 stack with that
    reason, no process started (no 2024 env exists here); today's same cells run."""
    args = ["--backend", "native-torch", "--model", "mistral", "--task", "generate", "--variant", "compiled"]
    out = bench(smoke_run("--stack", "2024", *args, results=tmp_path / "2024"), bench_env(venvs))
    assert out.returncode == 0, out.stderr + out.stdout
    found = load_all(tmp_path / "2024")
    assert {r.cell.batch_size for r in found} == {1, 2} and {r.cell.stack for r in found} == {"2024"}
    assert all(r.status == "unsupported" and "_setup_cache" in r.message for r in found), [r.message for r in found]
    out = bench(smoke_run(*args, results=tmp_path / "today"), bench_env(venvs))
    assert out.returncode == 0, out.stderr + out.stdout
    assert {r.status for r in load_all(tmp_path / "today")} == {"ok"}


def test_repeats_report_their_spread(venvs, tmp_path):
    results = tmp_path / "results"
    out = bench(
        smoke_run("--backend", "jax", "--model", "bert", "--task", "fit", "--repeats", "3", results=results), bench_env(venvs)
    )
    assert out.returncode == 0, out.stderr
    (r,) = load_all(results)
    assert len(r.runs) == 3 and r.repeat_spread().count == 3


def test_rerun_keeps_the_earlier_result_in_history(venvs, tmp_path):
    results = tmp_path / "results"
    for _ in range(3):  # back to back: likely within one second of created_at's resolution
        assert (
            bench(
                smoke_run("--backend", "jax", "--model", "bert", "--task", "fit", results=results), bench_env(venvs)
            ).returncode
            == 0
        )
    assert len(load_all(results)) == 1
    assert len(list(results.rglob("history/*.json"))) == 2


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["--backend", "kears2", "--model", "bert"],
            "unknown backend 'kears2'; valid backends: keras2, tensorflow, jax, torch, native-torch",
        ),
        (
            ["--backend", "jax", "--model", "bret"],
            "unknown model 'bret'; valid models: sam, stable_diffusion, bert, gemma, mistral",
        ),
        (["--backend", "jax", "--model", "bert", "--task", "generate"], "unknown task 'generate'"),
        (["--backend", "jax", "--model", "bert", "--batch-size", "0"], "must be a positive integer, got '0'"),
        (["--backend", "jax", "--model", "bert", "--batch-size", "x"], "must be a positive integer, got 'x'"),
        (["--backend", "jax", "--model", "bert", "--profile", "fast"], "unknown profile 'fast'"),
        (["--backend", "native-torch", "--model", "bert", "--variant", "jit"], "unknown variant 'jit'"),
        *[
            (
                [option, value, "--backend", "jax", "--model", "bert"],
                f"argument {option}: must be a positive integer, got '{value}'",
            )
            for option in ("--steps", "--repeats")
            for value in ("0", "-1", "abc")
        ],
    ],
)
def test_bad_input_is_refused_clearly(venvs, tmp_path, args, message):
    results = tmp_path / "results"
    out = bench(
        smoke_run(*args, results=results)
        if "--profile" not in args
        else ["run", "--results-dir", str(results), *args],
        bench_env(venvs),
    )
    assert out.returncode == 2
    assert message in out.stderr and out.stderr.count("\n") == 1, out.stderr  # one line, no usage block
    assert not results.exists()


def without_root_file_override():
    """root writes into a read-only folder regardless (CAP_DAC_OVERRIDE): drop that capability in the child, so the
    folder is read-only for it as for anyone else. Nothing to do for other users."""
    if os.geteuid() != 0:
        return {}
    libc = ctypes.CDLL(None, use_errno=True)

    def drop():
        for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
            if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP: gone after exec, for uid 0 too
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")

    return {"preexec_fn": drop}


def test_a_read_only_results_folder_is_refused_before_any_cell_runs(venvs, tmp_path):
    results = tmp_path / "results"
    results.mkdir(mode=0o555)
    order = tmp_path / "order"
    env = {**bench_env(venvs), "FAKE_ORDER_FILE": str(order)}
    out = subprocess.run(
        [sys.executable, "-m", "bench", *smoke_run("--backend", "jax", "--model", "bert", results=results)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        **without_root_file_override(),
    )
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stderr == f"error: cannot write results to {results}: Permission denied\n"
    assert list(results.iterdir()) == [] and not order.exists()  # nothing written, no cell started


def test_a_result_of_a_newer_schema_stops_the_run_naming_it(venvs, tmp_path):
    results = tmp_path / "results"
    args = smoke_run("--backend", "jax", "--model", "bert", "--task", "fit", results=results)
    assert bench(args, bench_env(venvs)).returncode == 0
    (path,) = [p for p in results.rglob("*.json") if "history" not in p.parts]
    path.write_text(json.dumps({**json.loads(path.read_text()), "schema_version": 3}))
    before = {p: p.read_bytes() for p in results.rglob("*") if p.is_file()}
    out = bench(args, bench_env(venvs))
    assert out.returncode == 2
    assert (
        out.stderr
        == f"error: cannot read result file {path}: schema_version 3 is newer than this code reads (2); update the code\n"
    )
    assert {p: p.read_bytes() for p in results.rglob("*") if p.is_file()} == before


@pytest.mark.skipif(not shutil.which("make"), reason="GNU make is not installed")
def test_make_bench_refuses_bad_steps_in_one_line_before_anything_runs(venvs, tmp_path):
    # MAKE=true: the recursive env builds are no-ops here (tests/test_envs.py covers them); TOOLS_PY: this interpreter.
    out = subprocess.run(
        [
            "make",
            "-s",
            "bench",
            "BACKEND=jax",
            "MODEL=bert",
            "STEPS=abc",
            "MAKE=true",
            f"TOOLS_PY={sys.executable}",
            f"RESULTS={tmp_path / 'results'}",
        ],
        cwd=REPO,
        env=bench_env(venvs),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "STEPS=abc: a count is a whole number above 0" in out.stderr, out.stderr
    assert not (tmp_path / "results").exists()


def test_env_not_built_is_named(tmp_path):
    out = bench(smoke_run("--backend", "jax", "--model", "bert", results=tmp_path / "results"), bench_env(tmp_path / "empty"))
    assert out.returncode == 2
    assert "the 'jax' environment is not built" in out.stderr and "make env BACKEND=jax" in out.stderr


def test_a_stale_env_is_refused_naming_the_make_target(venvs, tmp_path):
    stamp = venvs / "jax" / "bench-env.json"
    stamp.write_text(json.dumps({**json.loads(stamp.read_text()), "lock_sha256": "0" * 64}))  # built from another lock
    results = tmp_path / "results"
    out = bench(smoke_run("--backend", "jax,torch", "--model", "bert", results=results), bench_env(venvs))
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "the 'jax' environment is stale" in out.stderr
    assert "run `make env BACKEND=jax`" in out.stderr
    assert not results.exists()


def test_corrupt_result_file_is_named_and_kept(venvs, tmp_path):
    results = tmp_path / "results"
    assert (
        bench(smoke_run("--backend", "jax", "--model", "bert", "--task", "fit", results=results), bench_env(venvs)).returncode
        == 0
    )
    (existing,) = [p for p in results.rglob("*.json") if "history" not in p.parts]
    corrupt = existing.parent / "broken.json"
    corrupt.write_text('{"schema_version": 1, "cell": ')
    out = bench(smoke_run("--backend", "jax", "--model", "bert", results=results), bench_env(venvs))
    # no cell of the run writes broken.json: the run goes on, naming it with the fix
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"warning: cannot read result file {corrupt}" in out.stdout and f"fix: move it out of {results}" in out.stdout
    assert "--quarantine" not in out.stdout  # not a result file by name (<cell key>.json): quarantine leaves it
    assert corrupt.read_text() == '{"schema_version": 1, "cell": '  # kept as it was
    out = bench(["validate", "--results-dir", str(results)], bench_env(venvs))
    assert out.returncode == 2 and "broken.json" in out.stderr


def start_run(args, env):
    # SIGINT as a terminal gives it: a suite started in the background (`nohup make test &`) inherits SIGINT
    # ignored, and Python then never raises KeyboardInterrupt.
    return subprocess.Popen(
        [sys.executable, "-m", "bench", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def wait_for_pid(pid_file: Path, proc: subprocess.Popen, not_pid: int | None = None) -> int:
    """The pid the fake cell wrote when it started (a new one, if `not_pid` is given)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if pid_file.exists() and int(pid_file.read_text()) != not_pid:
            return int(pid_file.read_text())
        assert proc.poll() is None, proc.communicate()[0]
        time.sleep(0.05)
    raise AssertionError("the fake cell never started")


def is_running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie lingers where PID 1 does not reap)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_processes_a_cell_leaves_behind_are_ended_with_it(venvs, tmp_path):
    results, pid_file = tmp_path / "results", tmp_path / "child.pid"
    env = {**bench_env(venvs, jax="leaves-child"), "FAKE_PID_FILE": str(pid_file)}
    out = bench(smoke_run("--backend", "jax", "--model", "bert", "--task", "fit", results=results), env)
    assert out.returncode == 0, out.stderr
    assert not is_running(int(pid_file.read_text())), "the cell's child outlived it"


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_keeps_finished_results_and_leaves_no_cell_behind(venvs, tmp_path, stop):
    results, pid_file = tmp_path / "results", tmp_path / "cell.pid"
    env = {**bench_env(venvs, torch="sleep"), "FAKE_PID_FILE": str(pid_file)}
    proc = start_run(smoke_run("--backend", "jax,torch", "--model", "bert", "--task", "fit", results=results), env)
    for line in proc.stdout:
        if "fake cell torch" in line:
            break
    pid = wait_for_pid(pid_file, proc)
    proc.send_signal(stop)  # Ctrl-C, or a kill/scheduler/timeout's SIGTERM
    rest = proc.communicate(timeout=60)[0]
    assert proc.returncode == 128 + stop  # 130 for Ctrl-C, 143 for SIGTERM, as a shell reports them
    assert "every finished result is kept" in rest
    (kept,) = load_all(results)
    assert kept.cell.backend == "jax" and kept.status == "ok"
    assert not is_running(pid), "the sleeping cell outlived the orchestrator"


def test_a_timed_out_cell_leaves_no_process_behind(venvs, tmp_path):
    results, pid_file = tmp_path / "results", tmp_path / "cell.pid"
    env = {**bench_env(venvs, jax="sleep"), "FAKE_PID_FILE": str(pid_file)}
    out = bench(smoke_run("--backend", "jax", "--model", "bert", "--task", "fit", "--timeout", "2", results=results), env)
    assert out.returncode == 1
    assert load_all(results)[0].status == "timeout"
    assert not is_running(int(pid_file.read_text()))


def test_kill_9_of_a_cell_is_recorded_as_killed_with_no_partial_file(venvs, tmp_path):
    results, pid_file, scratch = tmp_path / "results", tmp_path / "cell.pid", tmp_path / "tmp"
    scratch.mkdir()
    env = {**bench_env(venvs, jax="sleep"), "FAKE_PID_FILE": str(pid_file), "TMPDIR": str(scratch)}
    env["BENCH_MEMORY_EVENTS"] = str(write_memory_events(tmp_path / "memory.events", oom_kill=0))
    proc = start_run(smoke_run("--backend", "jax,torch", "--model", "bert", "--task", "fit", results=results), env)
    os.kill(wait_for_pid(pid_file, proc), signal.SIGKILL)
    output = proc.communicate(timeout=60)[0]
    assert proc.returncode == 1, output
    by_backend = {r.cell.backend: r for r in load_all(results)}
    assert by_backend["jax"].status == "killed" and by_backend["torch"].status == "ok"
    assert by_backend["jax"].message.startswith(
        "killed by SIGKILL (no sign of the OOM killer: memory.events oom_kill unchanged)"
    )
    files = sorted(p.name for p in results.rglob("*") if p.is_file() and "logs" not in p.parts)
    assert files == ["jax__bert__fit__bs2__default.json", "torch__bert__fit__bs2__default.json"]
    assert list(scratch.iterdir()) == []  # the cell's private scratch folder went with it


WRITER = """
import sys
from pathlib import Path
from bench.record.results import write_json_atomic
write_json_atomic(Path(sys.argv[1]), {"timed_ms": [0.123456789] * 3_000_000})
"""


def test_a_writer_killed_mid_write_leaves_the_previous_file_intact(tmp_path):
    from test_results import make_result

    path = make_result().write(tmp_path)
    before = path.read_bytes()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], cwd=REPO)
    deadline = time.monotonic() + 60
    while not list(path.parent.glob(".*.tmp")):  # mid-write: its temporary exists, the rename has not happened
        assert writer.poll() is None and time.monotonic() < deadline, "the writer finished before it could be killed"
        time.sleep(0.01)
    writer.kill()
    writer.wait()
    assert path.read_bytes() == before
    assert [r.cell for r in load_all(tmp_path)] == [make_result().cell]  # the leftover temporary is never read


def test_resume_after_ctrl_c_runs_only_the_rest(venvs, tmp_path):
    results, pid_file, order = tmp_path / "results", tmp_path / "cell.pid", tmp_path / "order"
    # one process a cell: a cell interrupted between its processes would be re-run whole (fewer than its repeats)
    args = smoke_run("--backend", "jax,torch,tensorflow", "--model", "bert", "--task", "fit", "--repeats", "1", results=results)
    proc = start_run(args, {**bench_env(venvs, torch="sleep"), "FAKE_PID_FILE": str(pid_file)})
    for line in proc.stdout:
        if "fake cell torch" in line:
            break
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert [r.cell.backend for r in load_all(results)] == ["jax"]

    out = bench([*args, "--resume"], {**bench_env(venvs), "FAKE_ORDER_FILE": str(order)})
    assert out.returncode == 0, out.stderr
    assert "skipped (resume): 1 cells already measured" in out.stdout
    assert order.read_text().split("\n")[:-1] == ["torch fit", "tensorflow fit"]
    assert len(load_all(results)) == 3 and not list(results.rglob("history/*.json"))

    # A result measured with another lock than the env's current one is measured again.
    (jax,) = [p for p in results.rglob("jax__*.json") if "history" not in p.parts]
    data = json.loads(jax.read_text())
    data["runs"][0]["process"]["environment"]["lock_sha256"] = "0" * 64
    jax.write_text(json.dumps(data))
    order.unlink()
    out = bench([*args, "--resume"], {**bench_env(venvs), "FAKE_ORDER_FILE": str(order)})
    assert "skipped (resume): 2 cells already measured" in out.stdout
    assert order.read_text() == "jax fit\n"

    # A result measured under another rule (the profile's precision target changed since) is measured again, said.
    (torch,) = [p for p in results.rglob("torch__*.json") if "history" not in p.parts]
    data = json.loads(torch.read_text())
    data["config"]["window_plan"]["target_half_width"] = 0.5
    torch.write_text(json.dumps(data))
    order.unlink()
    out = bench([*args, "--resume"], {**bench_env(venvs), "FAKE_ORDER_FILE": str(order)})
    assert "skipped (resume): 2 cells already measured" in out.stdout
    assert (
        "measured again (resume): torch__bert__fit__bs2__default: measured under another rule (window_plan changed "
        "since)" in out.stdout
    )
    assert order.read_text() == "torch fit\n"


def test_repeats_are_interleaved_across_the_row_and_each_run_has_its_reference(venvs, tmp_path):
    results, order = tmp_path / "results", tmp_path / "order"
    env = {**bench_env(venvs), "FAKE_ORDER_FILE": str(order)}
    out = bench(smoke_run("--backend", "jax,torch", "--model", "bert", "--repeats", "2", results=results), env)
    assert out.returncode == 0, out.stderr
    assert order.read_text().split("\n")[:-1] == [
        "jax fit",
        "torch fit",
        "jax fit",
        "torch fit",  # the fit row: repeat 1 of each column, then repeat 2
        "jax predict",
        "torch predict",
        "jax predict",
        "torch predict",
    ]
    loaded = load_all(results)
    assert len(loaded) == 4 and all(len(r.runs) == 2 for r in loaded)
    for r in loaded:
        assert all(run.reference["before_ms"] > 0 and run.reference["after_ms"] > 0 for run in r.runs)
        assert r.provenance["reference"]["start_ms"] > 0 and r.provenance["reference"]["at_write_ms"] > 0
    assert "reference probe (bench/measure/drift.py):" in out.stdout


def test_ctrl_c_between_repeats_writes_the_finished_ones(venvs, tmp_path):
    results, pid_file = tmp_path / "results", tmp_path / "cell.pid"
    env = {**bench_env(venvs, torch="sleep"), "FAKE_PID_FILE": str(pid_file)}
    proc = start_run(
        smoke_run("--backend", "jax,torch", "--model", "bert", "--task", "fit", "--repeats", "3", results=results), env
    )
    for line in proc.stdout:
        if "fake cell torch" in line:
            break
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    (jax,) = load_all(results)
    assert jax.cell.backend == "jax" and jax.status == "ok" and len(jax.runs) == 1
    assert jax.provenance["repeats_planned"] == 3


def test_dry_run_lists_the_full_matrix(venvs, tmp_path):
    out = bench(smoke_run("--dry-run"), bench_env(venvs))
    assert out.returncode == 0
    keys = out.stdout.split("\n", 1)[1].split()
    assert keys == [c.key for c in plan_cells("smoke")]  # the matrix: every model of bench/models/ but a study's
    published = {r.model for r in published_rows()}
    # the published table's part: 12 rows x 4 Keras backends + 12 rows x 2 native-torch variants
    assert len([k for k in keys if k.split("__")[1] in published]) == 72
    assert "keras2__gemma__generate__bs1__default" in keys and "native-torch__mistral__fit__bs2__compiled" in keys


@pytest.mark.parametrize("mode", ["oom", "crash"])
def test_a_failed_generate_cell_keeps_its_tasks_unit(venvs, tmp_path, mode):
    results = tmp_path / "results"
    out = bench(
        smoke_run("--backend", "jax", "--model", "gemma", "--task", "generate", results=results), bench_env(venvs, jax=mode)
    )
    assert out.returncode == 1, out.stderr
    loaded = load_all(results)
    assert len(loaded) == 2 and {r.status for r in loaded} <= {"oom", "error"}
    assert {r.unit for r in loaded} == {"ms/call"}


def test_results_of_cells_no_longer_in_the_registry_stop_nothing(venvs, tmp_path):
    results = tmp_path / "results"
    args = smoke_run("--backend", "jax", "--model", "bert", "--task", "fit", results=results)
    assert bench(args, bench_env(venvs)).returncode == 0
    (path,) = [p for p in results.rglob("*.json") if "history" not in p.parts]
    data = json.loads(path.read_text())
    data["cell"]["model"] = "resnet"  # a model since removed from the registry
    old = path.parent / "jax__resnet__fit__bs2__default.json"
    old.write_text(json.dumps(data))
    out = bench(args, bench_env(venvs))
    assert out.returncode == 0, out.stderr
    out = bench(["validate", "--results-dir", str(results)], bench_env(venvs))
    assert out.returncode == 0, out.stderr
    assert f"{old}: no longer in the registry: unknown model 'resnet'" in out.stdout
    assert "2 result files" in out.stdout


def test_sigkill_while_holding_the_machines_ram_is_oom_with_the_figures(venvs, tmp_path):
    # The full-size run's Keras-torch Gemma fit: SIGKILLed at the RAM's edge on a machine whose cgroup counts no kill.
    results = tmp_path / "results"
    env = {
        **bench_env(venvs, jax="ramkill", torch="ramkill"),
        "BENCH_MEMORY_EVENTS": str(tmp_path / "absent" / "memory.events"),
    }
    out = bench(
        smoke_run("--backend", "jax", "--model", "bert", "--task", "fit", results=results), {**env, "BENCH_RAM_GIB": "0.3"}
    )
    assert out.returncode == 1
    (r,) = load_all(results)
    assert r.status == "oom", r.message
    assert r.message.startswith("killed by SIGKILL while its processes held 0.3 GiB of the machine's 0.3 GiB of RAM"), (
        r.message
    )
    # The same death with RAM to spare is no evidence of memory: killed, as before.
    out = bench(
        smoke_run("--backend", "torch", "--model", "bert", "--task", "fit", results=results), {**env, "BENCH_RAM_GIB": "64"}
    )
    by_backend = {r.cell.backend: r for r in load_all(results)}
    assert by_backend["torch"].status == "killed", by_backend["torch"].message


def test_sigkill_without_a_readable_memory_events_is_killed_not_oom(venvs, tmp_path):
    results = tmp_path / "results"
    env = {**bench_env(venvs, jax="sigkill"), "BENCH_MEMORY_EVENTS": str(tmp_path / "no-cgroup-v2" / "memory.events")}
    assert bench(smoke_run("--backend", "jax", "--model", "bert", "--task", "fit", results=results), env).returncode == 1
    (r,) = load_all(results)
    assert r.status == "killed" and r.message.startswith(
        "killed by SIGKILL (no sign of the OOM killer: memory.events cannot be read)"
    )


def test_a_run_says_how_long_it_should_take_from_this_machines_earlier_results(venvs, tmp_path):
    results = tmp_path / "results"
    # batch 3: cells no committed result holds, so the repository's own results/ (read too) are no earlier run here
    args = smoke_run("--backend", "jax,torch", "--model", "bert", "--task", "fit", "--repeats", "2", "--batch-size",
                     "3", results=results)
    first = bench(args, bench_env(venvs))
    assert first.returncode == 0, first.stderr
    assert "on this machine" not in first.stdout  # nothing measured here before: no figure made up
    again = bench(args, bench_env(venvs))
    line = next(x for x in again.stdout.splitlines() if x.startswith("expected: ~"))
    assert line.endswith("on this machine for the 2 cells it has measured before (2 processes each, as long as "
                         "their earlier ones)"), line
    one = bench([*smoke_run("--backend", "jax,tensorflow", "--model", "bert", "--task", "fit",
                           "--repeats", "1", "--batch-size", "3", results=results)], bench_env(venvs))
    assert "for the 1 cell it has measured before (1 process each, as long as their earlier ones; 1 cell never " \
           "measured here, not counted)" in one.stdout
