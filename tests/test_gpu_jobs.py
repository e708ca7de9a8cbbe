"""Many GPUs, one box: the GPU slot schedule (pure), and run --jobs with fake GPUs and fake cells."""
import json
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fakes import lock_sha256, smoke_run

from bench.base.errors import BenchError
from bench.catalogue.registry import plan_cells
from bench.record.results import load_all
from bench.run.cluster.parallel import run_cells_parallel
from bench.run.gpus import GpuPool, makespan, refuse_jobs, schedule
from bench.run.runner import RunOptions

REPO = Path(__file__).resolve().parent.parent

# A cell that sleeps FAKE_CELL_S seconds and records which GPU it was given and when it ran.
SLEEPY_PYTHON = """#!{python}
import json, os, sys, time
args = sys.argv[1:]
cell = json.loads(args[args.index("--cell") + 1])
start = time.time()
time.sleep(float(os.environ.get("FAKE_CELL_S", "0.3")))
run = {{"status": "ok", "first_step_ms": 1.0, "timed_ms": [1.0] * cell["timed_steps"], "warmup_ms": [1.0] * cell["warmup_steps"],
       "settings": {{"unit": "ms/step"}}, "process": {{"cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"), "start": start, "end": time.time(),
                   "environment": json.load(open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "bench-env.json")))}}}}
json.dump(run, open(args[args.index("--out") + 1], "w"))
"""


def overlaps(intervals):
    intervals = sorted(intervals)
    return any(b[0] < a[1] for a, b in zip(intervals, intervals[1:]))


def test_schedule_fills_the_first_free_gpu_and_never_shares_one():
    slots = schedule([5, 1, 1, 1, 3, 2], [0, 1, 2])
    assert [(s.gpu, s.start, s.end) for s in slots] == [
        (0, 0, 5),
        (1, 0, 1),
        (2, 0, 1),
        (1, 1, 2),
        (2, 1, 4),
        (1, 2, 4),
    ]
    for gpu in (0, 1, 2):
        assert not overlaps([(s.start, s.end) for s in slots if s.gpu == gpu])
    assert makespan([5, 1, 1, 1, 3, 2], 3) == 5 and makespan([5, 1, 1, 1, 3, 2], 1) == 13
    with pytest.raises(ValueError):
        schedule([1], [0, 0])


def test_gpu_pool_hands_out_the_lowest_free_gpu_and_waits_when_all_are_busy():
    pool = GpuPool([4, 2])
    assert pool.take() == 2 and pool.take() == 4
    got = []
    waiter = threading.Thread(target=lambda: got.append(pool.take()))
    waiter.start()
    time.sleep(0.2)
    assert got == []  # both busy: the third cell waits
    pool.give_back(4)
    waiter.join(timeout=5)
    assert got == [4]
    with pytest.raises(ValueError):
        pool.give_back(2) or pool.give_back(2)


def test_jobs_beyond_the_gpus_are_refused():
    assert refuse_jobs(1, 0) is None and refuse_jobs(4, 4) is None
    assert (
        refuse_jobs(2, 0)
        == "--jobs 2 needs a GPU per job, and 0 GPUs are visible: parallel cells on a CPU (or sharing a GPU) would disturb each other's timing"
    )
    assert "and 1 GPU is visible" in refuse_jobs(3, 1)


def test_cli_refuses_jobs_without_gpus_in_one_line(tmp_path):
    env = {"CUDA_VISIBLE_DEVICES": "", "PATH": "/usr/bin:/bin"}  # no GPU visible, whatever this machine has
    out = subprocess.run([sys.executable, "-m", "bench", *smoke_run("--backend", "jax", "--model", "bert", "--jobs", "2",
                                                                      results=tmp_path / "r")], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "error: --jobs 2 needs a GPU per job, and 0 GPUs are visible: parallel cells on a CPU (or sharing a GPU) would disturb each other's timing"
    ]
    assert not (tmp_path / "r").exists()


def test_parallel_cells_each_get_their_own_gpu(tmp_path, monkeypatch):
    backends = ["jax", "torch", "tensorflow"]
    venvs = tmp_path / "venvs"
    for backend in backends:
        (venvs / backend / "bin").mkdir(parents=True)
        python = venvs / backend / "bin" / "python"
        python.write_text(SLEEPY_PYTHON.format(python=sys.executable))
        python.chmod(python.stat().st_mode | stat.S_IEXEC)
        (venvs / backend / "bench-env.json").write_text(
            json.dumps({"backend": backend, "lock_sha256": lock_sha256(backend)})
        )

    monkeypatch.setattr("bench.run.env_lookup.VENVS_DIR", venvs)
    monkeypatch.setenv("FAKE_CELL_S", "0.5")
    cells = plan_cells("smoke", backends=backends, models=["bert"])  # 6 cells
    lines = []
    results = run_cells_parallel(cells, tmp_path / "results", jobs=2, gpu_indices=[3, 7], options=RunOptions(echo=lines.append))
    assert len(results) == 6 and {r.status for r in results} == {"ok"}
    loaded = load_all(tmp_path / "results")
    assert {r.provenance["gpu_index"] for r in loaded} == {3, 7}
    by_gpu = {3: [], 7: []}
    for r in loaded:
        process = r.runs[0].process
        assert process["cuda_visible_devices"] == str(r.provenance["gpu_index"])  # pinned to exactly that GPU
        by_gpu[r.provenance["gpu_index"]].append((process["start"], process["end"]))
    assert not overlaps(by_gpu[3]) and not overlaps(by_gpu[7])  # never two cells on one GPU
    assert overlaps(by_gpu[3] + by_gpu[7])  # but the two GPUs did run at once
    assert any("gpu 7:" in line for line in lines)
    # --resume, as in run_cells (the same bench.run.runner.prepare): every cell is measured, none runs again
    again = []
    assert (
        run_cells_parallel(cells, tmp_path / "results", jobs=2, gpu_indices=[3, 7],
                           options=RunOptions(echo=again.append, resume=True))
        == []
    )
    assert again[0] == "skipped (resume): 6 cells already measured"


def test_one_job_is_the_ordinary_orchestrator(tmp_path, monkeypatch):
    from bench.run import runner

    called = {}
    monkeypatch.setattr(runner, "run_cells", lambda cells, results_dir, options: called.update(options=options) or [])
    assert run_cells_parallel([], tmp_path, jobs=1, options=RunOptions(repeats=2)) == [] and called["options"].repeats == 2
    with pytest.raises(BenchError, match="needs a GPU per job"):
        run_cells_parallel([], tmp_path, jobs=2, gpu_indices=[0])


def test_the_docs_cluster_estimate_is_the_scripts_output():
    from bench.catalogue.cost import ASSUMED_OVERHEAD_S, cell_seconds
    from bench.run.decided import markdown

    (jax_bert_fit,) = plan_cells("paper", backends=["jax"], models=["bert"], tasks=["fit"])
    # published ms/step x (1 first + 2 warm-up + the 10 fewest timed steps), plus the assumed overhead
    assert cell_seconds(jax_bert_fit) == pytest.approx(222.37 * 13 / 1000 + ASSUMED_OVERHEAD_S)
    (keras2_gemma_fit,) = plan_cells("paper", backends=["keras2"], models=["gemma"], tasks=["fit"])
    assert cell_seconds(keras2_gemma_fit) == 0.0  # unsupported: recorded without running
    page = (REPO / "docs" / "CLUSTER.md").read_text()
    block = page.split("<!-- cluster-estimate:start -->\n", 1)[1].split("\n<!-- cluster-estimate:end -->", 1)[0]
    assert block == markdown(), "docs/CLUSTER.md's estimate is stale: paste `python -m bench estimate`'s output"
