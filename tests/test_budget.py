"""`make bench-all BUDGET=<minutes>` (bench/budget.py, `bench run --budget-minutes`): one cell per model x backend
first, then the rest; the cell the budget cuts short is ended and not recorded, what is left is named, and --resume
runs only that. Fake envs (tests/fakes.py): a torch cell that sleeps stands for one longer than the budget."""

import os
import time

import pytest
from fakes import bench_env, make_fake_envs, run_bench

from bench.budget import budget_order
from bench.registry import plan_cells
from bench.results import load_all

RUN = ["run", "--profile", "smoke", "--backend", "jax,torch", "--model", "bert", "--repeats", "2"]


def test_the_first_pass_is_one_cell_per_model_and_backend_then_the_rest():
    cells = plan_cells("smoke", models=["bert", "gemma"])
    ordered, first = budget_order(cells)
    pairs = [(c.model, c.backend) for c in ordered[:first]]
    assert len(pairs) == len(set(pairs)) == len({(c.model, c.backend) for c in cells})
    assert sorted(c.key for c in ordered) == sorted(c.key for c in cells)  # every cell, once


@pytest.mark.slow
@pytest.mark.duration_s(35)
def test_the_budget_stops_the_run_cleanly_and_resume_runs_only_what_was_left(tmp_path):
    venvs = make_fake_envs(tmp_path / "venvs", ["jax", "torch"])
    order, pids = tmp_path / "order.txt", tmp_path / "pid"
    results = tmp_path / "results"
    env = {**bench_env(venvs, torch="sleep"), "FAKE_ORDER_FILE": str(order), "FAKE_PID_FILE": str(pids)}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    started = time.monotonic()
    out = run_bench([*RUN, "--budget-minutes", "0.3", "--results-dir", str(results)], env)
    took = time.monotonic() - started
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert took < 60  # the sleeping cell (120 s) was ended at the budget (18 s), not at its own timeout
    assert "first one cell per model x backend (2 cells" in out.stdout
    # the first pass, one per backend, each cell's processes one after another: a cut leaves whole cells
    assert order.read_text().splitlines() == ["jax fit", "jax fit", "torch fit"]
    [kept] = load_all(results)  # and no timeout result
    assert kept.cell.key == "jax__bert__fit__bs2__default" and len(kept.runs) == 2
    left = next(line for line in out.stdout.splitlines() if line.startswith("left by the budget"))
    assert "(3 cells; RESUME=1 runs them)" in left and "torch__bert__fit__bs2__default" in left
    pid = int(pids.read_text())
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"

    order.unlink()
    env["FAKE_MODE_TORCH"] = "ok"
    out = run_bench([*RUN, "--budget-minutes", "5", "--resume", "--results-dir", str(results)], env)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert sorted(order.read_text().splitlines()) == sorted(["jax predict", "torch fit", "torch predict"] * 2)
    assert len(load_all(results)) == 4 and "nothing left" in out.stdout
