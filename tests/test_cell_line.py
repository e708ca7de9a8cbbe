"""A finished cell's console line: short (its figure, interval, processes, and a word with a count where a gate fired),
the full reasons in its result file and with -v; and the ETA of a run on a processor with no earlier results here."""
import pytest
from fakes import bench_env, run_bench, smoke_run

from bench.catalogue.registry import Cell
from bench.record.results import Result, Run, load_all
from bench.run.runner import record_noise

CELL = Cell("jax", "bert", "fit", 2, "smoke", "default", 1, 6)
PREFIX = "    -> "  # what the runner prints before a finished cell's line
LINE_WIDTH = 200  # the most a finished cell's console line may hold, its indent included


def disturbed_run() -> Run:
    # steps 3x slower in their second half beside a drift probe 10x its quiet reading: three gates trip
    return Run(status="ok", timed_ms=[10.0, 10.2, 10.1, 30.0, 30.5, 30.2, 30.1, 30.4], first_step_ms=400.0,
               reference={"before_ms": 0.3, "after_ms": 3.0})


def noisy_result(processes: int = 4) -> Result:
    runs = [disturbed_run() for _ in range(processes)]
    record_noise(runs, [0.3])
    return Result(CELL, runs, "ms/step", {"git": {}, "machine": {}, "repeats_planned": processes},
                  "2026-11-25T03:00:00+00:00")


def test_a_cell_whose_gates_gave_many_reasons_prints_a_line_within_200_characters_with_their_count():
    result = noisy_result()
    reasons = [r for run in result.runs for r in run.noise["reasons"]]
    assert len(reasons) == 12  # three gates in each of four processes
    assert len(result.describe()) > 1000  # every reason, spelled out: the result file's and -v's
    line = PREFIX + result.brief(LINE_WIDTH - len(PREFIX))
    assert len(line) <= 200, line
    low, high = result.estimate().interval()
    assert f"{CELL.key}: ok, {result.figure():.4g} ms/step, 95% interval {low:.4g}–{high:.4g} (4 processes)" in line
    assert "noisy (12 reasons)" in line and "drift probe" not in line


def test_a_long_key_or_message_is_shortened_never_the_figure():
    result = noisy_result(2)
    figure = f"{result.figure():.4g} ms/step"
    line = result.brief(120, key="k" * 300)
    assert len(line) <= 120 and figure in line and "noisy (6 reasons)" in line and "…" in line, line
    failed = Result(CELL, [Run(status="error", message="Traceback: " + "x" * 2000)], "ms/step",
                    {"git": {}, "machine": {}}, "2026-11-25T03:00:00+00:00")
    line = failed.brief(LINE_WIDTH)
    assert len(line) <= LINE_WIDTH and line.startswith(f"{CELL.key}: error: Traceback: xxx") and line.endswith("…")
    quiet = Result(CELL, [Run(status="ok", timed_ms=[10.0, 10.5, 11.0, 10.2, 10.8, 10.4], first_step_ms=400.0)],
                   "ms/step", {"git": {}, "machine": {}}, "2026-11-25T03:00:00+00:00")
    line = quiet.brief(LINE_WIDTH)
    assert line.startswith(f"{CELL.key}: ok, {quiet.figure():.4g} ms/step, 95% interval ") and line.endswith(
        " (one process, steps only)"), line  # its processes counted once, with no gate's word
    quiet.provenance["repeats_planned"] = 3  # an interrupted run: not the figure asked for
    assert quiet.brief(LINE_WIDTH).endswith("; only 1 of 3 repeats")


def test_a_run_prints_short_lines_and_with_v_every_reason(venvs, tmp_path):
    """The orchestrator as a user runs it: every finished cell's line within 200 characters with its count of
    reasons; -v adds the full line, whose reasons are the result file's."""
    results = tmp_path / "results"
    # both of jax's processes disturbed: their steps' second half half again as slow, which 8 steps show (the jump gate)
    env = {**bench_env(venvs), "FAKE_DISTURB_JAX": "0,1"}
    args = smoke_run("--backend", "jax,torch", "--model", "bert", "--task", "fit", "--repeats", "2",
                     "--batch-size", "3", "--steps", "8", results=results)
    out = run_bench(args, env)
    assert out.returncode == 0, out.stderr + out.stdout
    by_backend = {r.cell.backend: r for r in load_all(results)}
    jax = by_backend["jax"]
    reasons = [r for run in jax.runs for r in (run.noise or {}).get("reasons") or []]
    assert sum("second half's median" in r for r in reasons) == 2, reasons  # recorded in the result file
    finished = [x for x in out.stdout.splitlines() if x.startswith(PREFIX)]
    assert len(finished) == 2 and all(len(x) <= 200 for x in finished), finished
    (jax_line,) = [x for x in finished if jax.cell.key in x]
    assert f"noisy ({len(reasons)} reason{'s' * (len(reasons) > 1)})" in jax_line and reasons[0] not in out.stdout
    verbose = run_bench([*args, "-v"], env)
    assert verbose.returncode == 0, verbose.stderr + verbose.stdout
    again = {r.cell.backend: r for r in load_all(results)}["jax"]
    for reason in (r for run in again.runs for r in (run.noise or {}).get("reasons") or []):
        assert reason in verbose.stdout
    assert "[smoke/" in verbose.stdout and f"{again.cell.key}.json]" in verbose.stdout

# ---------------------------------------------------------------- the ETA where this processor has no earlier result

HERE = {"cpu": "AMD EPYC", "logical_cpus": 2, "gpus": [], "processor": {"fingerprint": "a" * 64}}
THERE = {"cpu": "Intel Xeon", "logical_cpus": 2, "gpus": [], "processor": {"fingerprint": "b" * 64}}


def probe(matmul: float, triad: float) -> dict:
    return {"host": {"framework": "numpy", "matmul": {"float32": {"median": matmul}}, "triad": {"median": triad}}}


def committed_run(tmp_path, cells, walls: dict[str, float], ceilings: dict):
    """Results as another machine's committed run left them: each cell's two processes of walls[key] s each."""
    committed = tmp_path / "committed"
    for cell in cells:
        runs = [Run(status="ok", timed_ms=[10.0, 10.5, 11.0], first_step_ms=400.0, wall_s=walls[cell.key])
                for _ in range(2)]
        Result(cell, runs, "ms/step", {"git": {}, "machine": THERE, "ceilings": ceilings},
               "2026-11-25T03:00:00+00:00").write(committed)
    return committed


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_with_no_history_here_the_eta_is_another_machines_committed_times_scaled_by_the_probe_then_this_runs(
        tmp_path):
    from bench.catalogue.registry import plan_cells
    from bench.run.eta import Eta, expected

    cells = plan_cells("smoke", backends=["jax", "torch"], models=["bert"], tasks=["fit", "predict"])
    walls = {c.key: 10.0 * (i + 1) for i, c in enumerate(cells)}  # 10, 20, 30, 40 s a process there
    committed = committed_run(tmp_path, cells, walls, probe(300e9, 30e9))
    # this machine's probe: half their matmul and half their triad, so a process is expected to take twice as long
    found = expected(cells, tmp_path / "results", HERE, 2, probe(150e9, 15e9), committed=committed)
    assert found.seconds == pytest.approx({key: 2 * 2 * seconds for key, seconds in walls.items()})
    clock = Clock()
    eta = Eta([c.key for c in cells], found, processes=2, clock=clock)
    assert eta.left_s() == pytest.approx(2 * 2 * sum(walls.values()))
    text = eta.text()
    assert text.startswith("ETA ~0:06:40") and "scaled from CPU Intel Xeon (2 cores), processor bbbbbbbbbbbb's " \
        "committed times by the probe (x2.00)" in text, text
    # the first process of the first cell took 15 s here, not the 20 s the probe said: every estimate follows
    first = cells[0].key
    eta.process_started(first)
    clock.now += 15
    eta.process_done(first)
    assert eta.text().endswith("(from this run's times, 1 process so far)")
    assert eta.left_s() == pytest.approx(15 + 0.75 * 2 * 2 * sum(walls[c.key] for c in cells[1:]))
    eta.process_started(first)
    clock.now += 5  # 5 s into the cell's second process, expected to take 15
    assert eta.left_s() == pytest.approx(10 + 0.75 * 2 * 2 * sum(walls[c.key] for c in cells[1:]))


def test_without_any_committed_times_the_eta_waits_for_this_runs_first_process(tmp_path):
    from bench.catalogue.registry import plan_cells
    from bench.run.eta import Eta, expected

    cells = plan_cells("smoke", backends=["jax"], models=["bert"], tasks=["fit", "predict"])
    found = expected(cells, tmp_path / "results", HERE, 1, probe(150e9, 15e9), committed=tmp_path / "none")
    assert found.seconds == {} and found.basis is None
    clock = Clock()
    eta = Eta([c.key for c in cells], found, processes=1, clock=clock)
    assert eta.left_s() is None and eta.text() is None
    eta.process_started(cells[0].key)
    clock.now += 12
    eta.process_done(cells[0].key)
    eta.cell_done(cells[0].key)
    assert eta.left_s() == pytest.approx(12) and eta.text() == "ETA ~0:00:12 (from this run's times, 1 process so far)"


def test_a_committed_gpu_run_or_one_without_the_probe_is_not_scaled(tmp_path):
    from bench.catalogue.registry import plan_cells
    from bench.run.eta import expected

    cells = plan_cells("smoke", backends=["jax"], models=["bert"], tasks=["fit"])
    committed = committed_run(tmp_path, cells, {cells[0].key: 10.0}, {})  # no probe recorded there
    assert expected(cells, tmp_path / "results", HERE, 1, probe(150e9, 15e9), committed=committed).seconds == {}
    # this machine's probe failed: nothing to scale by either
    committed = committed_run(tmp_path / "b", cells, {cells[0].key: 10.0}, probe(300e9, 30e9))
    failed = {"host": {"framework": "numpy", "error": "no numpy"}}
    assert expected(cells, tmp_path / "results", HERE, 1, failed, committed=committed).seconds == {}


def test_a_run_with_no_history_here_says_its_eta_scaled_then_from_its_own_times(venvs, tmp_path, monkeypatch):
    """The runner as `bench run` drives it: the first header's ETA is the other machine's, scaled; later ones this
    run's."""
    from bench.catalogue.registry import plan_cells
    from bench.measure.drift import Reading
    from bench.run import eta, runner

    cells = plan_cells("smoke", backends=["jax", "torch"], models=["bert"], tasks=["fit"], batch_size=3)
    monkeypatch.setattr("bench.run.env_lookup.VENVS_DIR", venvs)
    monkeypatch.setattr(runner, "reading", lambda: Reading(1.0, 1.0, 2, True))
    committed = committed_run(tmp_path, cells, {c.key: 30.0 for c in cells}, probe(300e9, 30e9))
    monkeypatch.setattr(eta, "COMMITTED", committed)
    monkeypatch.setattr(runner, "machine_info", lambda: HERE)  # a processor with no result here nor committed
    lines: list[str] = []
    runner.run_cells(cells, tmp_path / "results",
                     runner.RunOptions(repeats=2, echo=lines.append, ceilings=probe(150e9, 15e9)))
    assert any("ETA ~0:04:00 for 2 cells (scaled from CPU Intel Xeon (2 cores), processor bbbbbbbbbbbb's committed "
               "times by the probe (x2.00))" in line for line in lines), lines
    headers = [line for line in lines if line.startswith("[")]
    assert len(headers) == 4 and "ETA ~0:04:00 scaled from" in headers[0], headers
    assert all("ETA ~" in h and " from this run's times, " in h for h in headers[1:]), headers

