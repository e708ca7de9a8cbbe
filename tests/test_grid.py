"""The inference grid study without a framework: NA rules, grids, the round-robin with adaptive repeats, the
parity rule, OOM/crash statuses, result files, the findings logic on synthetic points, and the report."""
import json
import math
from pathlib import Path

import numpy as np
import pytest
from committed import committed_results
from fakes import write_noise_study

from bench.base.errors import BenchError
from bench.base.provenance import machine_info
from bench.base.stats import ProcessSpread
from bench.judge import claims
from bench.record.results import Run, load, load_all
from bench.studies.grid import findings as F
from bench.studies.grid.run import TOLERANCE, ColumnState, GridResult, check_parity, finish_point, grid_cell, run_point
from bench.studies.grid.spec import COLUMNS, GRIDS, MODELS, columns_for_envs, get_grid

# -- NA rules and grids

@pytest.mark.parametrize("model, length, na", [("bert", 512, False), ("bert", 1024, True), ("roberta", 1024, True),
                                               ("gpt2", 1024, False), ("xlnet", 1024, False), ("xlm", 1024, True)])
def test_lengths_above_the_position_table_are_na_with_the_reason(model, length, na):
    why = MODELS[model].why_na(COLUMNS["torch-eager"], length)
    assert bool(why) is na
    if na:
        assert str(length) in why and str(MODELS[model].max_positions) in why


def test_keras_columns_of_xlm_are_na_with_the_reason_and_torch_and_tf_are_not():
    assert "no XLM" in MODELS["xlm"].why_na(COLUMNS["keras-jax"], 8)
    assert (
        MODELS["xlm"].why_na(COLUMNS["tf-xla"], 8) is None and MODELS["xlm"].why_na(COLUMNS["torch-traced"], 8) is None
    )


def test_every_model_is_built_with_dropout_zero():
    for model in MODELS.values():
        for size in ("full", "tiny"):
            config = model.hf_config(size)
            assert model.dropout_keys and all(config[k] == 0.0 for k in model.dropout_keys)


def test_full_grid_is_the_published_one_and_cpu_grid_caps_larger_batches():
    full, cpu = GRIDS["full"], GRIDS["cpu"]
    assert len(full.points()) == 24 and full.min_repeats == full.max_repeats == 30
    assert {(1, n) for n in (8, 64, 128, 256, 512, 1024)} <= set(cpu.points())
    assert all(b * n <= cpu.max_tokens_above_batch1 for b, n in cpu.points() if b > 1)
    assert cpu.min_repeats >= 5 and cpu.max_repeats == 30 and cpu.point_cap_s
    # the length sweep: every published length at batch 1 and 8, none capped (8 x 1024 is in it)
    lengths = GRIDS["lengths"]
    assert lengths.points() == [(b, n) for b in (1, 8) for n in (8, 64, 128, 256, 512, 1024)]


def test_columns_narrow_by_env_or_column_and_refuse_unknown_names():
    assert columns_for_envs(["native-torch"]) == ["torch-eager", "torch-traced", "torch-compile"]
    assert columns_for_envs(["tf-xla", "jax"]) == ["tf-xla", "keras-jax"]
    with pytest.raises(BenchError, match="unknown grid env"):
        columns_for_envs(["tensorflw"])
    with pytest.raises(BenchError, match="unknown grid"):
        get_grid("huge")


# -- the round-robin, with fake workers


class FakeWorker:
    """Answers `call` like bench.studies.grid.worker: one warm-up call, then timed ones of `ms`; records the order."""

    def __init__(self, log, ms=100.0, fail_at=None, status="oom"):
        self.log, self.ms, self.fail_at, self.status = log, ms, fail_at, status
        self.calls: dict[str, int] = {}

    def ask(self, command, timeout_s):
        column = command["column"]
        n = self.calls[column] = self.calls.get(column, 0) + 1
        self.log.append(column)
        if self.fail_at == n:
            return {"status": self.status, "message": "CUDA out of memory (fake)"}
        warmup_run = 1 if n >= 2 else None
        return {
            "status": "ok",
            "window_ms": self.ms,
            "steps_done": n,
            "warmup_run": warmup_run,
            "done": n >= 1 + 1 + 30,
        }


def test_repeats_alternate_between_columns_and_stop_at_the_point_cap_after_the_minimum():
    log = []
    worker = FakeWorker(log, ms=1000.0)  # 1 s a call: the point's cap is reached by the minimum of 5 timed calls
    states = [ColumnState(c, worker) for c in ("torch-eager", "tf-function", "keras-jax")]
    run_point(states, 1, 8, GRIDS["cpu"])
    assert log[:6] == ["torch-eager", "tf-function", "keras-jax"] * 2  # round-robin, never one column's calls in a row
    assert all(s.timed == GRIDS["cpu"].min_repeats for s in states)


def test_fast_points_get_the_maximum_number_of_repeats():
    log = []
    states = [ColumnState(c, FakeWorker(log, ms=1.0)) for c in ("torch-eager", "tf-function")]
    run_point(states, 1, 8, GRIDS["cpu"])
    assert all(s.timed == GRIDS["cpu"].max_repeats for s in states)


def test_an_oom_becomes_that_columns_status_and_the_others_go_on():
    log = []
    states = [
        ColumnState("torch-eager", FakeWorker(log, ms=1000.0, fail_at=3)),
        ColumnState("tf-function", FakeWorker(log, ms=1000.0)),
    ]
    run_point(states, 8, 1024, GRIDS["cpu"])
    assert states[0].failed["status"] == "oom" and states[1].timed >= GRIDS["cpu"].min_repeats and not states[1].failed


def test_na_columns_are_not_called_and_are_written_as_unsupported(tmp_path):
    log = []
    states = [
        ColumnState("keras-jax", FakeWorker(log), na=MODELS["xlm"].why_na(COLUMNS["keras-jax"], 8)),
        ColumnState("torch-eager", None, failed={"status": "oom", "message": "out of memory (fake)"}),
    ]
    run_point(states, 1, 8, GRIDS["cpu"])
    assert log == []
    written = finish_point(
        MODELS["xlm"],
        states,
        1,
        8,
        GRIDS["cpu"],
        tmp_path,
        {"commit": "x"},
        machine_info(),
        {"start_ms": 1.0},
        {},
        {"parameters": 1},
        lambda _: None,
    )
    assert [r.status for r in written] == ["unsupported", "oom"]
    assert "no XLM" in written[0].message
    again = [load(tmp_path / r.relative_path()) for r in written]  # schema-valid and readable
    assert [r.status for r in again] == ["unsupported", "oom"]
    assert load_all(tmp_path) == []  # the grid's files are not results of the published table


# -- parity


def ok_run(**settings):
    return Run(status="ok", first_step_ms=5.0, timed_ms=[1.0, 1.1], settings=dict(settings))


def test_twins_within_tolerance_record_their_difference_and_beyond_it_fail_with_the_figure(tmp_path):
    ref = np.ones((1, 4, 8), dtype=np.float32)
    np.save(tmp_path / "ref.npy", ref)
    np.save(tmp_path / "close.npy", ref + 1e-6)
    np.save(tmp_path / "far.npy", ref + 0.5)
    reference = ColumnState("torch-eager", None, output=str(tmp_path / "ref.npy"))
    close, far = ok_run(), ok_run()
    check_parity(
        MODELS["bert"],
        ColumnState("tf-xla", None, output=str(tmp_path / "close.npy")),
        reference,
        close,
        {"parameters": 1},
    )
    check_parity(
        MODELS["bert"],
        ColumnState("keras-jax", None, output=str(tmp_path / "far.npy")),
        reference,
        far,
        {"parameters": 1},
    )
    assert close.status == "ok" and 0 < close.settings["max_abs_diff"] < TOLERANCE
    assert (
        far.status == "error"
        and "0.5" in far.message
        and far.timed_ms == []
        and far.settings["max_abs_diff"] == pytest.approx(0.5)
    )


def test_keras_xlnet_without_a_converter_must_match_the_parameter_count():
    same, other = ok_run(parameters=100), ok_run(parameters=99)
    check_parity(MODELS["xlnet"], ColumnState("keras-torch", None), None, same, {"parameters": 100})
    check_parity(MODELS["xlnet"], ColumnState("keras-torch", None), None, other, {"parameters": 100})
    assert same.status == "ok" and same.settings["parity"] == "parameter count"
    assert other.status == "error" and "99" in other.message and "100" in other.message


# -- findings on synthetic points


SPREAD = ProcessSpread(0.02, 30, "a test's noise study")  # the machine's process-to-process spread
ONE_PROCESS = f"inconclusive ({claims.ONE_PROCESS_COLUMN})"


def point(model, column, n, ms, status="ok", log_se=0.01, noise="", batch=1):
    """A grid point whose mean and median are `ms`, its median's log standard error `log_se` (from its steps)."""
    if status != "ok":
        return F.PointFigure(model, column, batch, n, status)
    return F.PointFigure(model, column, batch, n, status, ms, ms, log_se, math.inf, noise)


def points(pt_ms, tf_ms, lengths=(8, 64, 128, 512), model="bert", pt_status=None, log_se=0.01):
    out = []
    for n in lengths:
        status = (pt_status or {}).get(n, "ok")
        out.append(point(model, "torch-eager", n, pt_ms * n, status, log_se))
        out.append(point(model, "tf-function", n, tf_ms * n, "ok", log_se))
    return out


def verdicts(found):
    return {f.key: f.verdict for f in found}


def test_tensorflow_slower_on_cpu_holds_and_gpu_findings_are_not_tested_on_a_cpu():
    v = verdicts(F.findings(points(1.0, 1.2), on_gpu=False, spread=SPREAD))
    assert v["mean_cpu"] == F.HOLDS  # TF / PT 1.2x, its interval wholly above 1
    assert v["mean_gpu"] == v["xla_speedup_vs_tf"] == v["pytorch_oom"] == F.NOT_TESTED


def test_tensorflow_faster_on_cpu_does_not_hold():
    assert verdicts(F.findings(points(1.2, 1.0), on_gpu=False, spread=SPREAD))["mean_cpu"] == F.DOES_NOT_HOLD


def test_a_mean_whose_interval_contains_one_is_inconclusive():
    found = {f.key: f for f in F.findings(points(1.0, 1.02), on_gpu=False, spread=SPREAD)}
    assert found["mean_cpu"].verdict == "inconclusive (the interval contains 1.00×)"
    assert found["mean_cpu"].ours.startswith("TensorFlow / PyTorch 1.02× (")


def test_one_process_columns_decide_nothing_without_the_machines_spread():
    """Each column is one worker process: its offset is not measured by its own points."""
    found = {f.key: f for f in F.findings(points(1.0, 1.2, log_se=0.001), on_gpu=False)}
    assert found["mean_cpu"].verdict == ONE_PROCESS and found["mean_cpu"].decided == F.INCONCLUSIVE
    assert "TensorFlow / PyTorch 1.20×:" in found["mean_cpu"].ours  # the value alone, no interval of steps only
    assert "arithmetic means PyTorch 0.178 s, TensorFlow 0.2136 s over 4 points" in found["mean_cpu"].ours


def test_averaging_points_does_not_shrink_the_workers_offsets():
    many = points(1.0, 1.2, lengths=tuple(range(8, 8 + 200)), log_se=0.01)
    r = F.mean_ratio(F.point_ratios(many, F.TENSORFLOW, F.PYTORCH), SPREAD)
    low, high = r.interval()
    offsets = 1.959 * math.sqrt(2) * SPREAD.log_sd  # the two workers' offsets, however many points
    assert math.log(high / r.value) >= offsets
    assert math.log(high / r.value) < offsets * 1.1  # and the points' own error has shrunk


def test_noisy_points_are_left_out_of_the_verdict_and_counted():
    pts = points(1.0, 1.2)
    pts[1] = point("bert", "tf-function", 8, 0.5 * 8, noise="its steps' p10-p90 spread is 80% of the median")
    found = {f.key: f for f in F.findings(pts, on_gpu=False, spread=SPREAD)}
    assert "geometric mean over 3 paired points; 1 noisy paired point(s) left out" in found["mean_cpu"].ours
    assert found["mean_cpu"].verdict == F.HOLDS  # the noisy point (TF faster there) takes no part
    assert "over 4 points where both succeeded" in found["mean_cpu"].ours  # the published way keeps it


def growing(small_x, large_x):
    """TF / PT of small_x at the two smaller inputs and large_x at the two larger."""
    out = []
    for n, x in ((8, small_x), (64, small_x), (128, large_x), (512, large_x)):
        out += [point("bert", "torch-eager", n, 10.0 * n), point("bert", "tf-function", n, 10.0 * n * x)]
    return out


def test_the_difference_grows_with_the_input_decided_by_the_halves_quotient_without_the_spread():
    # the workers' offsets cancel in the quotient of two halves of the same columns: no spread needed
    assert verdicts(F.findings(growing(1.1, 1.5), on_gpu=False))["difference_grows"] == F.HOLDS
    assert verdicts(F.findings(growing(0.8, 0.6), on_gpu=False))["difference_grows"] == F.HOLDS  # TF faster, more
    assert verdicts(F.findings(growing(1.5, 1.1), on_gpu=False))["difference_grows"] == F.DOES_NOT_HOLD
    same = verdicts(F.findings(growing(1.2, 1.2), on_gpu=False))["difference_grows"]
    assert same.startswith("inconclusive (the interval contains 1.00×")
    flips = verdicts(F.findings(growing(0.8, 1.1), on_gpu=False))["difference_grows"]
    assert flips.startswith("inconclusive (the two halves lie on either side of 1x")


def test_dropping_failed_points_the_published_way_favours_the_framework_that_failed_them():
    # PyTorch is slower everywhere, but runs out of memory on the largest point: the published way hides it.
    pts = points(1.1, 1.0, lengths=(8, 64, 128, 4096), pt_status={4096: "oom"})
    means = F.framework_means(pts)
    assert means["paired"]["points"] == 3 and means["paired"]["pytorch"] > means["paired"]["tensorflow"]
    assert means["published_way"]["pytorch"] < means["published_way"]["tensorflow"]
    assert verdicts(F.findings(pts, on_gpu=False, spread=SPREAD))["mean_cpu"] == F.DOES_NOT_HOLD  # PyTorch slower


def test_every_column_mean_leaves_out_a_point_any_column_failed_for_all_columns():
    pts = points(1.0, 2.0, lengths=(8, 64, 128), pt_status={128: "oom"})
    pts.append(point("bert", "keras-jax", 8, 4.0))
    pts += [point("bert", "keras-jax", n, 3.0 * n) for n in (64, 128)]
    pts.append(point("bert", "tf-xla", 8, None, "unsupported"))  # NA: not a column that ran
    means = F.column_means(pts)["bert"]
    assert means["points"] == 2 and "tf-xla" not in means  # 128: PyTorch ran out of memory
    assert means["torch-eager"] == pytest.approx((8 + 64) / 2 / 1000)
    assert means["tf-function"] == pytest.approx(2 * (8 + 64) / 2 / 1000)
    assert means["keras-jax"] == pytest.approx((4 + 3 * 64) / 2 / 1000)


def test_torchscript_findings_from_the_ratios():
    pts = [point("xlnet", "torch-eager", n, 10.0) for n in (8, 64)] + [
        point("xlnet", "torch-traced", n, 8.0) for n in (8, 64)
    ]
    pts += [point("xlm", "torch-eager", n, 10.0) for n in (8, 512)]
    pts += [point("xlm", "torch-traced", 8, 8.0), point("xlm", "torch-traced", 512, 12.0)]
    v = verdicts(F.findings(pts, on_gpu=False, spread=SPREAD))
    assert v["torchscript"] == F.HOLDS and v["torchscript_xlnet"] == F.HOLDS and v["torchscript_xlm"] == F.HOLDS
    without = verdicts(F.findings(pts, on_gpu=False))  # one process per column, no spread measured
    assert without["torchscript"] == without["torchscript_xlnet"] == without["torchscript_xlm"] == ONE_PROCESS
    pts[2] = point("xlnet", "torch-traced", 8, 11.0)  # slower once, with confidence: "always faster" fails
    assert verdicts(F.findings(pts, on_gpu=False, spread=SPREAD))["torchscript_xlnet"] == F.DOES_NOT_HOLD
    pts[2] = point("xlnet", "torch-traced", 8, 9.9)  # 1% faster: its interval contains 1
    assert verdicts(F.findings(pts, on_gpu=False, spread=SPREAD))["torchscript_xlnet"].startswith("inconclusive")


def test_xla_on_a_gpu_speeds_up_every_model_only_where_each_models_interval_says_so():
    pts = []
    for model, tf_over_xla in (("bert", 1.3), ("gpt2", 1.2)):
        for n in (8, 64, 128):
            pts += [point(model, "tf-function", n, 10.0 * n * tf_over_xla), point(model, "tf-xla", n, 10.0 * n),
                    point(model, "torch-eager", n, 10.0 * n)]
    assert verdicts(F.findings(pts, on_gpu=True, spread=SPREAD))["xla_speedup_vs_tf"] == F.HOLDS
    pts[-3:] = [point("gpt2", "tf-function", 128, 1280.0 * 0.7), point("gpt2", "tf-xla", 128, 1280.0),
                point("gpt2", "torch-eager", 128, 1280.0)]  # gpt2 now 1.2, 1.2, 0.7: its mean about 1.0
    assert verdicts(F.findings(pts, on_gpu=True, spread=SPREAD))["xla_speedup_vs_tf"].startswith("inconclusive")


def test_gpu_oom_finding_on_a_gpu():
    pts = points(1.0, 1.2, pt_status={512: "oom"})
    assert verdicts(F.findings(pts, on_gpu=True))["pytorch_oom"] == F.HOLDS
    assert verdicts(F.findings(points(1.0, 1.2), on_gpu=True))["pytorch_oom"] == F.DOES_NOT_HOLD


def test_the_published_figures_come_from_the_projects_copy():
    ref = F.published()
    assert F.PUBLISHED_CSV.parent.name == "data"
    assert ref[("mean_inference_time_all_models", "cpu")]["pytorch"] == "0.748"


# -- the report


def write_synthetic(results_dir: Path, machine: dict) -> None:
    for column, ms in (("torch-eager", 10.0), ("tf-function", 12.0), ("torch-traced", 8.0)):
        for n in (8, 64, 128, 512):
            run = Run(
                status="ok",
                first_step_ms=50.0,
                timed_ms=[ms * n / 8, ms * n / 8 * 1.1],
                settings={"sequence_length": n, "column": column, "max_abs_diff": 1e-6},
            )
            GridResult(
                grid_cell("bert", column, 1, GRIDS["cpu"]),
                [run],
                "ms/forward",
                {"machine": machine, "git": {"commit": "abc"}},
                "2026-01-01T00:00:00+00:00",
            ).write(results_dir)
    na = Run(
        status="unsupported",
        message=MODELS["bert"].why_na(COLUMNS["torch-eager"], 1024),
        settings={"sequence_length": 1024},
    )
    GridResult(
        grid_cell("bert", "torch-eager", 1, GRIDS["cpu"]),
        [na],
        "ms/forward",
        {"machine": machine, "git": {"commit": "abc"}},
        "2026-01-01T00:00:00+00:00",
    ).write(results_dir)


def test_grid_page_has_then_and_now_tables_and_figures(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import bench.judge.noise_file
    from bench.studies.grid.page import render_grid

    # only this test's own noise study
    monkeypatch.setattr(bench.judge.noise_file, "REPO_ROOT", tmp_path / "no-checkout")
    machine = machine_info()
    write_synthetic(tmp_path, machine)
    page = render_grid(tmp_path).read_text()
    assert "Then and now" in page and "**holds**" not in page and "not tested on this hardware" in page
    assert "**inconclusive** [1]" in page and f"[1] {claims.ONE_PROCESS_COLUMN}" in page  # no noise study yet
    write_noise_study(tmp_path, machine, "smoke")  # the benchmark cells' spread lends nothing to the grid's points
    again = render_grid(tmp_path).read_text()
    assert "**inconclusive** [1]" in again and f"[1] {claims.ONE_PROCESS_COLUMN}" in again
    write_noise_study(tmp_path, machine, f"grid-{GRIDS['cpu'].name}")
    out = render_grid(tmp_path)
    page = out.read_text()
    then = page.split("### Then and now", 1)[1].split("###", 1)[0]
    mean = [line for line in then.splitlines() if line.startswith("| CPU: mean over all models")][0]
    assert "TensorFlow / PyTorch 1.20× (" in mean and "**holds**" in mean, mean  # 12 / 10 with its interval
    assert "NA" in page and "BERT base" in page and "dropout 0" in page.lower()
    every = page.split("### Every column over the same points", 1)[1].split("###", 1)[0]
    assert "| BERT base" in every and "(x1.00)" in every, every
    figures = sorted(p.name for p in (tmp_path / "figures" / "grid").glob("*.png"))
    assert any(name.endswith("bert-time.png") for name in figures) and any(
        name.endswith("ratio.png") for name in figures
    )
    for link in [line for line in page.splitlines() if line.startswith("![")]:
        assert (tmp_path / link.split("](")[1].rstrip(")")).exists()


def test_results_md_gets_the_grid_section_only_where_there_are_grid_results(tmp_path):
    pytest.importorskip("tabulate")
    from bench.studies.table import render

    repo_results = committed_results()
    smoke = next(repo_results.glob("smoke/*/*.json"))
    machine = json.loads(smoke.read_text())["provenance"]["machine"]
    (tmp_path / smoke.relative_to(repo_results)).parent.mkdir(parents=True)
    (tmp_path / smoke.relative_to(repo_results)).write_text(smoke.read_text())
    render(tmp_path, tmp_path / "RESULTS.md")
    assert "Inference grid study" not in (tmp_path / "RESULTS.md").read_text()
    write_synthetic(tmp_path, machine)
    render(tmp_path, tmp_path / "RESULTS.md")
    assert "Inference grid study: then and now" in (tmp_path / "RESULTS.md").read_text()


def test_differences_recorded_before_the_tolerance_was_tightened_are_judged_by_todays_rule():
    from bench.studies.grid.run import OLD_TOLERANCE, beyond_tolerance

    old_file = {
        "max_abs_diff": 1e-3,
        "parity_tolerance": OLD_TOLERANCE * 4.8,
    }  # full-size BERT, GELU approximations differ
    assert beyond_tolerance(old_file)
    assert not beyond_tolerance({"max_abs_diff": 6e-6, "parity_tolerance": OLD_TOLERANCE * 4.8})
    assert not beyond_tolerance({"max_abs_diff": 1e-4, "parity_scale": 4.8}) and beyond_tolerance(
        {"max_abs_diff": 1e-3, "parity_scale": 4.8}
    )


def test_validate_checks_the_grid_files_and_names_a_corrupt_one(tmp_path, capsys):
    from bench.cli import main

    write_synthetic(tmp_path, machine_info())
    assert main(["validate", "--results-dir", str(tmp_path)]) == 0
    assert "13 inference grid result files" in capsys.readouterr().out
    broken = next((tmp_path / "grid").rglob("tf-function__bs1__len8.json"))
    broken.write_text(broken.read_text().replace('"status": "ok"', '"status": "fine"', 1))
    assert main(["validate", "--results-dir", str(tmp_path)]) == 2
    assert broken.name in capsys.readouterr().err


def test_a_worker_answers_a_failed_command_with_its_status_and_serves_on(tmp_path):
    """One worker serves every model of a run: a model it cannot build, or a call before any model, is a status
    (the traceback in its log), and the worker goes on to the next command."""
    import subprocess
    import sys

    from bench.studies.grid.worker import REPLY

    commands = [
        {"op": "load", "model": "no-such-model", "columns": ["torch-eager"], "folder": str(tmp_path)},
        {"op": "call", "column": "torch-eager", "batch": 1, "length": 8},
        {"op": "quit"},
    ]
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.studies.grid.worker",
            "serve",
            "--env",
            "native-torch",
            "--exchange",
            str(tmp_path),
            "--plan",
            json.dumps({"warmup": 0, "max_repeats": 5, "max_warmup": 3}),
        ],
        input="".join(json.dumps(c) + "\n" for c in commands),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    replies = [json.loads(line[len(REPLY) :]) for line in out.stdout.splitlines() if line.startswith(REPLY)]
    assert [r["status"] for r in replies] == ["error", "error"]
    assert (
        replies[0]["message"].startswith("setting up: KeyError")
        and "before any model was loaded" in replies[1]["message"]
    )


def test_the_page_says_other_jobs_ran_only_where_the_load_says_so():
    from bench.studies.grid.page import machine_state

    assert "shared with other jobs" in machine_state(1.1, 3.4, 2)  # the length sweep beside a test run
    assert "drifted" in machine_state(2.3, 2.5, 2) and "shared" not in machine_state(
        2.3, 2.5, 2
    )  # its own worker's threads
    assert machine_state(1.1, 2.0, 2) == "."
