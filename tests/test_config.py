"""One resolved configuration per cell (bench/catalogue/config.py): built by the orchestrator, passed to the cell process,
written into the result, with the source of every value; the full-size CPU run is its profile alone."""
import dataclasses
import json
import re
import subprocess

import pytest
from committed import committed_results
from conftest import REPO
from fakes import make_fake_envs

from bench.base.errors import BenchError
from bench.catalogue.config import COMMAND_LINE, resolve
from bench.catalogue.profiles import get_profile
from bench.catalogue.registry import Cell, get_model, plan_cells
from bench.measure.cell import check_config
from bench.record.results import load_all


def run_fake(tmp_path, monkeypatch, cells, **kw):
    from bench.run import runner

    monkeypatch.setattr("bench.run.env_lookup.VENVS_DIR", make_fake_envs(tmp_path / "venvs", sorted({c.backend for c in cells})))
    return runner.run_cells(cells, tmp_path / "results", runner.RunOptions(echo=lambda line: None, **kw))


def test_each_result_holds_the_config_its_process_was_given(tmp_path, monkeypatch):
    cells = plan_cells("smoke", backends=["jax"], models=["bert"], tasks=["predict"])
    [result] = run_fake(tmp_path, monkeypatch, cells)
    [written] = load_all(tmp_path / "results")
    config = written.config
    assert config == result.runs[0].process["config"]  # what the cell process was handed is what the result says
    shape = get_model("bert").shape("smoke")
    assert config["shape"] == json.loads(json.dumps(dataclasses.asdict(shape)))
    profile = get_profile("smoke")
    assert config["window_plan"] == {"warmup_steps": profile.warmup_steps, "max_warmup_steps": profile.max_warmup_steps,
                                     "timed_steps": profile.timed_steps, "windows_per_step": 1,
                                     "max_timed_steps": profile.max_timed_steps,
                                     "target_half_width": profile.target_half_width,
                                     "min_timed_s": profile.min_timed_s, "max_timed_s": profile.max_timed_s}
    assert config["timeout_s"] == profile.timeout_s and config["environment"]["KERAS_BACKEND"] == "jax"
    sources = config["sources"]
    assert sources["timed_steps"] == "bench/catalogue/profiles.toml [smoke] timed_steps"
    assert sources["max_timed_steps"] == "bench/catalogue/profiles.toml [smoke] max_timed_steps"
    assert sources["min_timed_s"] == "bench/catalogue/profiles.toml [smoke] min_timed_s"
    assert sources["batch_size"].startswith("keras3_benchmarks_2024.csv (the published table), capped at 2")
    assert (
        sources["shape"] == "bench/models/bert/workload.toml [smoke]"
        and sources["timeout_s"] == "bench/catalogue/profiles.toml [smoke] timeout_s"
    )


def test_a_value_from_the_command_line_says_so(tmp_path, monkeypatch):
    cells = plan_cells("smoke", backends=["jax"], models=["bert"], tasks=["predict"], timed_steps=7, batch_size=3)
    [result] = run_fake(tmp_path, monkeypatch, cells, timeout_s=99)
    sources = result.config["sources"]
    assert sources["timed_steps"] == sources["batch_size"] == sources["timeout_s"] == COMMAND_LINE
    assert sources["warmup_steps"] == "bench/catalogue/profiles.toml [smoke] warmup_steps"
    assert result.config["timeout_s"] == 99 and result.config["window_plan"]["timed_steps"] == 7
    # --steps is a fixed count: no sampling, no bounds in seconds, and the source says so
    plan = result.config["window_plan"]
    assert plan["max_timed_steps"] is None and plan["min_timed_s"] == 0 and plan["max_timed_s"] is None
    assert sources["max_timed_steps"].startswith(COMMAND_LINE) and "fixed" in sources["max_timed_steps"]
    assert sources["max_timed_s"] == "none: a fixed count of timed steps"


def test_the_paper_profile_samples_and_exact_runs_the_published_procedure():
    cell = plan_cells("paper", backends=["jax"], models=["bert"], tasks=["predict"])[0]
    plan, sources = resolve(cell).window_plan, resolve(cell).sources
    assert (plan["timed_steps"], plan["max_timed_steps"], plan["max_timed_s"]) == (10, 100, 60)
    assert cell.procedure == "sampled" and sources["timed_steps"] == "bench/catalogue/profiles.toml [paper] timed_steps"
    exact = plan_cells("paper", backends=["jax"], models=["bert"], tasks=["predict"], exact=True)[0]
    plan, sources = resolve(exact).window_plan, resolve(exact).sources
    assert plan["timed_steps"] == 100 and plan["max_timed_steps"] is None and exact.window_plan().fixed
    assert plan["target_half_width"] == get_profile("paper").target_half_width and plan["max_timed_s"] is None
    assert exact.procedure == "exact" and exact.key == cell.key  # the same cell, run the published way
    assert "--exact: the published procedure" in sources["timed_steps"] == sources["max_timed_steps"]
    assert Cell.from_dict(exact.to_dict()) == exact and Cell.from_dict({**cell.to_dict()} | {"exact": False}) == cell


@pytest.mark.parametrize(
    "profile, steps, refusal",
    [("smoke", None, "use --profile paper, not smoke"), ("cpu", None, "use --profile paper, not cpu"),
     ("paper", 7, "leave out --steps")],
)  # fmt: skip
def test_exact_is_refused_where_it_would_not_be_the_published_procedure(profile, steps, refusal):
    with pytest.raises(BenchError, match=refusal):
        plan_cells(profile, backends=["jax"], models=["bert"], timed_steps=steps, exact=True)
    with pytest.raises(BenchError, match="published 100 steps"):
        Cell("jax", "bert", "fit", 32, "paper", "default", 2, 50, exact=True)


def test_a_paper_cells_timeout_names_the_estimate():
    sampled = plan_cells("paper", backends=["torch"], models=["stable_diffusion"], tasks=["predict"])[0]
    assert resolve(sampled).timeout_s == get_profile("paper").timeout_s  # 60 s of timed steps: within the floor
    cell = plan_cells("paper", backends=["torch"], models=["stable_diffusion"], tasks=["predict"], exact=True)[0]
    config = resolve(cell)
    assert config.timeout_s > get_profile("paper").timeout_s and config.sources["timeout_s"].startswith(
        "bench/catalogue/cost.py"
    )
    assert config.sources["shape"] == "bench/models/stable_diffusion/workload.toml [paper]"


def test_a_cell_refuses_a_config_that_is_not_what_it_would_run():
    cell = plan_cells("smoke", backends=["jax"], models=["bert"], tasks=["predict"])[0]
    config = resolve(cell).to_dict()
    check_config(cell, json.loads(json.dumps(config)))  # as it travels: JSON
    check_config(cell, None)  # a cell started by hand, with no orchestrator
    with pytest.raises(RuntimeError, match="differs from this process's in shape, window_plan"):
        check_config(
            cell,
            {
                **config,
                "shape": {**config["shape"], "hidden_dim": 1},
                "window_plan": {**config["window_plan"], "timed_steps": 1},
            },
        )
    with pytest.raises(RuntimeError, match="differs from this process's in window_plan"):  # the sampling rule too
        check_config(cell, {**config, "window_plan": {**config["window_plan"], "target_half_width": 0.5}})


def test_the_full_size_cpu_run_is_the_cpu_profile_alone():
    """make bench-cpu-full passes no step counts or timeout of its own: the profile, the docs and the committed run agree."""
    dry = subprocess.run(
        ["make", "-n", "bench-cpu-full", "PYTHON=python3"], cwd=REPO, capture_output=True, text=True
    ).stdout
    run_line = next(line for line in dry.splitlines() if " -m bench run " in line)
    assert "--profile cpu" in run_line and not re.search(r"--(steps|warmup|timeout)\b", run_line), run_line
    cpu = get_profile("cpu")
    committed = {
        (r.cell.warmup_steps, r.cell.timed_steps, r.cell.max_warmup_steps)
        for r in load_all(committed_results() / "cpu-full")
    }
    assert committed == {(cpu.warmup_steps, cpu.timed_steps, cpu.max_warmup_steps)}
    docs = (REPO / "docs" / "FULL_SIZE_CPU.md").read_text()
    assert (
        f"then at least {cpu.timed_steps} timed steps (more, up to {cpu.max_timed_steps} or two" in docs
        and cpu.max_timed_s == 120
        and f"known to within {cpu.target_half_width:.0%}" in docs
        and cpu.timeout_s == 3600
        and "a one-hour limit per cell" in docs
    )
