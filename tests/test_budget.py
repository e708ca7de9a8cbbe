"""`make bench-all BUDGET=<minutes>` (bench/run/budget.py, `bench run --budget-minutes`): one cell per model x backend
first, then the rest; the cell the budget cuts short is ended and not recorded, what is left is named, and --resume
runs only that. Fake envs (tests/fakes.py): a torch cell that sleeps stands for one longer than the budget."""

import os
import time

import pytest
from fakes import bench_env, make_fake_envs, run_bench, smoke_run

from bench.catalogue.registry import plan_cells
from bench.record.results import load_all
from bench.run.budget import budget_order

RUN = smoke_run("--backend", "jax,torch", "--model", "bert", "--repeats", "2")


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


BAD_BUDGETS = ["0", "-1", "nan", "inf", "1e308", "abc", "0.0", "1.2.3", "10000000", "9" * 400 + ".5"]


@pytest.mark.parametrize("target", ["bench-all", "gpu-check"])
def test_a_budget_that_is_not_a_positive_number_of_minutes_is_refused_before_anything_is_built(tmp_path, target):
    import subprocess
    import sys
    from pathlib import Path

    built = tmp_path / "built"
    repo = Path(__file__).resolve().parent.parent
    for budget in BAD_BUDGETS:
        out = subprocess.run(
            ["make", "--no-print-directory", target, f"BUDGET={budget}", f"ENVS_PY=touch {built};",
             f"PYTHON=touch {built}; {sys.executable}", f"RESULTS={tmp_path / 'results'}"],
            cwd=repo, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert out.returncode == 2 and out.stderr.count("\n") == 1 and f"BUDGET={budget}: minutes" in out.stderr, (
            budget, out.stdout + out.stderr)
        assert not built.exists(), budget
    dry = subprocess.run(["make", "-n", "--no-print-directory", target, "BUDGET=0.5"], cwd=repo,
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert dry.returncode == 0 and "--budget-minutes 0.5" in dry.stdout, dry.stdout + dry.stderr


@pytest.mark.parametrize("command", [smoke_run(), ["gpu-check"]])
def test_the_cli_refuses_a_budget_that_is_not_finite_and_positive_in_one_line(tmp_path, command, capsys):
    from bench import cli

    for budget in BAD_BUDGETS + ["10000000"]:
        with pytest.raises(SystemExit) as stopped:
            cli.main([*command, "--budget-minutes", budget, "--results-dir", str(tmp_path)])
        err = capsys.readouterr().err
        assert stopped.value.code == 2 and err.count("\n") == 1 and "must be minutes" in err, (budget, err)
    assert not any(tmp_path.iterdir())
