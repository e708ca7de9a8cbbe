"""Sampling to a precision (bench/base/timing.py): a process times until its median's 95% interval is within the target,
after a minimum in steps and seconds, up to a cap in steps and seconds; a fixed plan takes exactly its count and still
reports its interval. Fake clocks for the rule; the framework loops' early stop and one real smoke cell at the end."""
import json
import random
import subprocess

import pytest
from conftest import REPO, env_python

from bench.base.timing import FIXED, MAX_S, MAX_STEPS, PRECISION, HostDevice, StepTimer, WindowPlan, describe_sampling
from bench.catalogue.profiles import get_profile
from bench.catalogue.registry import plan_cells
from bench.measure.cell import figures
from bench.measure.drivers import drive_step_pairs, drive_steps, pair_difference
from bench.record.results import Run, load_all
from bench.record.schema import validate_result
from bench.run.cluster.task import run_arguments


class FakeClock:
    """Nanoseconds that move only when a step says how long it took."""

    def __init__(self):
        self.now = 0

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: float) -> None:
        self.now += round(ms * 1e6)


class Steps:
    """drive_steps' workload: each step takes the next duration (ms) on the fake clock."""

    def __init__(self, clock: FakeClock, durations):
        self.clock, self.durations, self.calls = clock, iter(durations), 0

    def step(self):
        self.calls += 1
        self.clock.advance(next(self.durations))


def sampling_plan(**changes) -> WindowPlan:
    """The smoke profile's rule: 3 to 2000 timed steps, at least 0.5 s, at most 5 s, to 2%."""
    values = dict(warmup_steps=1, timed_steps=3, max_warmup_steps=4, max_timed_steps=2000, target_half_width=0.02,
                  min_timed_s=0.5, max_timed_s=5.0)  # fmt: skip
    return WindowPlan(**{**values, **changes})


def run_steps(plan: WindowPlan, durations) -> StepTimer:
    clock = FakeClock()
    timer = StepTimer(HostDevice(), plan, clock=clock)
    drive_steps(Steps(clock, durations), timer)
    return timer


def quiet(ms: float = 10.0):
    """Steps within 0.1% of each other: any interval of them is far inside 2%."""
    i = 0
    while True:
        yield ms * (1 + 0.001 * (i % 3 - 1))
        i += 1


def noisy(ms: float = 10.0, seed: int = 0):
    """Log-normal steps with a 60% spread: the median's 2% takes thousands of steps."""
    rng = random.Random(seed)
    while True:
        yield ms * rng.lognormvariate(0, 0.6)


def test_the_smoke_profile_is_the_rule_these_tests_use():
    smoke = get_profile("smoke")
    assert (smoke.timed_steps, smoke.max_timed_steps, smoke.min_timed_s, smoke.max_timed_s) == (3, 2000, 0.5, 5)
    assert smoke.target_half_width == 0.02 and smoke.repeats == 3 and smoke.samples
    paper = get_profile("paper")
    rule = (paper.timed_steps, paper.max_timed_steps, paper.min_timed_s, paper.max_timed_s, paper.repeats)
    assert rule == (10, 100, 0, 60, 3) and paper.samples  # the published 100 fixed steps: --exact
    for name in ("cpu", "cpu-mid"):
        cpu = get_profile(name)
        rule = (cpu.timed_steps, cpu.max_timed_steps, cpu.min_timed_s, cpu.max_timed_s, cpu.repeats)
        assert rule == (2, 10, 0, 120, 1), name


def test_a_quiet_step_stops_at_the_precision_once_its_minimum_seconds_are_timed():
    timer = run_steps(sampling_plan(), quiet(10.0))
    sampling = timer.sampling()
    # precise from the 6th step, but 0.5 s of 10 ms steps takes 50: it stops at the first step that reaches both
    assert sampling["stopped_by"] == PRECISION and sampling["reached"] and sampling["steps"] == 50
    assert 0.5 <= sampling["timed_s"] < 0.5 + 0.011 and sampling["half_width"] <= 0.02
    low, high = sampling["interval"]
    assert low <= sorted(timer.timed_figures)[25] <= high
    assert len(timer.split().timed_ms) == 50 and timer.timed_figures == timer.split().timed_ms


def test_never_before_the_minimum_steps():
    timer = run_steps(sampling_plan(timed_steps=20, min_timed_s=0.0), quiet(10.0))
    assert timer.sampling()["steps"] == 20 and timer.stopped_by == PRECISION  # precise at 6, kept to the minimum
    timer = run_steps(sampling_plan(min_timed_s=0.0), quiet(10.0))
    assert timer.sampling()["steps"] == 6  # the fewest steps with a 95% interval of the median at all


def test_a_noisy_step_goes_on_to_the_cap_in_steps():
    timer = run_steps(sampling_plan(max_timed_s=None), noisy(1.0))
    sampling = timer.sampling()
    assert sampling["stopped_by"] == MAX_STEPS and sampling["steps"] == 2000 and not sampling["reached"]
    assert sampling["half_width"] > 0.02 and sampling["interval"] is not None
    assert timer.steps_done == 1 + timer.warmup_run + 2000 <= timer.plan.max_steps


def test_a_noisy_step_goes_on_to_the_cap_in_seconds():
    timer = run_steps(sampling_plan(), noisy(10.0))
    sampling = timer.sampling()
    assert sampling["stopped_by"] == MAX_S and not sampling["reached"] and sampling["steps"] < 2000
    # the step that crossed 5 s ended it: the steps before it had not
    assert sampling["timed_s"] >= 5.0 and sampling["timed_s"] - timer.timed_figures[-1] / 1000 < 5.0
    line = describe_sampling(sampling, 10.0)
    assert line.startswith(f"timed {sampling['steps']} steps in ") and "(target 2%, not reached: capped at 5 s)" in line


def test_the_cap_in_seconds_never_stops_before_the_minimum_steps():
    timer = run_steps(sampling_plan(), quiet(3000.0))  # 3 s a step: 5 s are past at the 2nd step
    sampling = timer.sampling()
    assert sampling["steps"] == 3 and sampling["stopped_by"] == MAX_S and sampling["interval"] is None
    assert sampling["half_width"] is None and not sampling["reached"]


def test_a_fixed_plan_takes_exactly_its_count_and_still_reports_the_interval():
    paper = WindowPlan(2, 100, 10, 1, max_timed_steps=100, target_half_width=0.02)
    assert paper.fixed and paper.max_steps == 1 + 10 + 100
    timer = run_steps(paper, quiet(10.0))
    sampling = timer.sampling()
    assert sampling["steps"] == 100 and sampling["stopped_by"] == FIXED and sampling["reached"]
    assert sampling["rule"] == {"target_half_width": 0.02, "min_steps": 100, "min_s": 0.0, "max_steps": 100,
                                "max_s": None}  # fmt: skip
    assert "(a fixed count)" in describe_sampling(sampling, 10.0) and "reached" in describe_sampling(sampling, 10.0)
    noisy_timer = run_steps(paper, noisy(10.0))
    noisy_sampling = noisy_timer.sampling()
    assert noisy_sampling["steps"] == 100 and noisy_sampling["stopped_by"] == FIXED and not noisy_sampling["reached"]
    assert noisy_sampling["interval"][0] < noisy_sampling["interval"][1]  # reported even when it is wide
    # a fixed count that misses its target is described, not a crash on its absent cap in seconds
    line = describe_sampling(noisy_sampling, 10.0)
    assert "(a fixed count)" in line and line.endswith("(target 2%, not reached)")
    # --steps N: the cell's count is fixed, with no max_timed_steps at all
    assert run_steps(WindowPlan(0, 7, target_half_width=0.02), noisy(1.0)).sampling()["steps"] == 7


class Pairs:
    """drive_step_pairs' workload on a fake clock: a call of n denoising steps takes its pair's shared cost (the
    text encoder and decoder, wildly different from pair to pair) plus 10 ms x n (the same every time)."""

    class Shape:
        denoise_steps_high, denoise_steps_low = 5, 2

    shape = Shape()

    def __init__(self, clock: FakeClock):
        self.clock, self.calls, self.rng = clock, 0, random.Random(1)
        self.shared = 0.0

    def call(self, num_steps):
        if self.calls % 2 == 0:
            self.shared = self.rng.uniform(0, 400)
        self.calls += 1
        self.clock.advance(self.shared + 10.0 * num_steps)


def test_a_derived_plan_samples_on_the_derived_figures():
    plan = sampling_plan(windows_per_step=2, min_timed_s=0.0, max_timed_steps=200, max_timed_s=None)
    clock = FakeClock()
    timer = StepTimer(HostDevice(), plan, clock=clock, derive=pair_difference)
    drive_step_pairs(Pairs(clock), timer)
    sampling = timer.sampling()
    # the pair difference is 10 ms exactly: precise at the first step with an interval, whatever the calls' noise
    assert sampling["stopped_by"] == PRECISION and sampling["steps"] == 6 and sampling["half_width"] < 1e-9
    split, derived = figures(timer, "pair-difference")
    assert derived and timer.timed_figures == split.timed_ms == pytest.approx([10.0] * 6)
    assert sampling["timed_s"] == pytest.approx(sum(timer.windows_ms[-12:]) / 1000, abs=1e-6)  # both calls' windows
    # the same calls judged on their windows (no derivation) are far from 2% and run to the cap
    clock = FakeClock()
    raw = StepTimer(HostDevice(), plan, clock=clock)
    drive_step_pairs(Pairs(clock), raw)
    assert raw.stopped_by == MAX_STEPS and raw.sampling()["steps"] == 200


def test_the_plan_refuses_a_sampling_rule_it_cannot_keep():
    with pytest.raises(ValueError, match="below timed_steps"):
        WindowPlan(0, 5, max_timed_steps=4, target_half_width=0.02)
    with pytest.raises(ValueError, match="needs a target_half_width"):
        WindowPlan(0, 5, max_timed_steps=10)
    with pytest.raises(ValueError, match="share between 0 and 1"):
        WindowPlan(0, 5, max_timed_steps=10, target_half_width=2.0)


def test_cells_sample_unless_the_command_line_fixed_their_count():
    (smoke,) = plan_cells("smoke", backends=["jax"], models=["bert"], tasks=["predict"])
    plan = smoke.window_plan()
    assert smoke.max_timed_steps == 2000 and not plan.fixed and plan.max_steps == 1 + 4 + 2000
    assert (plan.min_timed_s, plan.max_timed_s, plan.target_half_width) == (0.5, 5.0, 0.02)
    (fixed,) = plan_cells("smoke", backends=["jax"], models=["bert"], tasks=["predict"], timed_steps=7)
    assert fixed.max_timed_steps is None and fixed.window_plan().fixed and fixed.window_plan().max_steps == 1 + 4 + 7
    # Slurm runs `bench run` for the cell: --steps only for a fixed count, so a sampling cell samples on the node
    assert "--steps" not in run_arguments(smoke, "/r")
    arguments = run_arguments(fixed, "/r")
    assert arguments[arguments.index("--steps") + 1] == "7"
    # and exactly the profile's processes, which Slurm's --time counts: under the paper profile's sequential rule a
    # disturbed process would be replaced, up to 11 processes against a --time of 3
    (paper,) = plan_cells("paper", backends=["jax"], models=["bert"], tasks=["predict"])
    for cell in (smoke, fixed, paper):
        arguments = run_arguments(cell, "/r")
        assert arguments[arguments.index("--repeats") + 1] == str(get_profile(cell.profile).repeats)


def test_the_timeouts_count_the_worst_case_of_sampling_and_every_process():
    from bench.catalogue.cost import cell_cost, cell_timeout_s, task_timeout_s

    cell = next(c for c in plan_cells("smoke", backends=["jax"], models=["gemma"], tasks=["generate"]) if cell_cost(c))
    cost = cell_cost(cell)
    step = cost.step_s  # the published 703 ms/call
    assert cost.expected_s == pytest.approx(step * (1 + 1 + 3) + cost.overhead_s)  # the fewest timed steps
    # worst: warm-up at its cap, then timed steps up to the 5 s cap and the one step that crosses it (not 2000 steps)
    assert cost.worst_s == pytest.approx(step * (1 + 4) + 5 + step + cost.overhead_s)
    fixed = plan_cells("smoke", backends=["jax"], models=["gemma"], tasks=["generate"], batch_size=1, timed_steps=3)[0]
    assert cell_cost(fixed).worst_s == pytest.approx(step * (1 + 4 + 3) + cost.overhead_s)
    assert task_timeout_s(cell) == get_profile("smoke").repeats * cell_timeout_s(cell)  # Slurm runs every process


def test_the_recorded_sampling_validates_against_the_schema():
    from test_results import make_result

    timer = run_steps(sampling_plan(), noisy(10.0))
    (cell,) = plan_cells("smoke", backends=["jax"], models=["bert"], tasks=["predict"])
    split = timer.split()
    run = Run(status="ok", first_step_ms=split.first_ms, warmup_ms=split.warmup_ms, timed_ms=split.timed_ms,
              sampling=timer.sampling())  # fmt: skip
    data = json.loads(json.dumps(make_result([run], cell=cell).to_dict()))
    validate_result(data)
    assert data["cell"]["max_timed_steps"] == 2000 and data["runs"][0]["sampling"]["stopped_by"] == MAX_S
    data["runs"][0]["sampling"]["stopped_by"] = "tired"
    with pytest.raises(Exception, match="stopped_by"):
        validate_result(data)


def test_a_cell_whose_cap_is_below_its_minimum_is_refused():
    from bench.base.errors import BenchError
    from bench.catalogue.registry import Cell
    from bench.record.result_checks import check_cell_schema

    (cell,) = plan_cells("smoke", backends=["jax"], models=["bert"], tasks=["predict"])
    check_cell_schema(cell.to_dict())
    check_cell_schema({k: v for k, v in cell.to_dict().items() if k != "max_timed_steps"})  # older results: fixed
    with pytest.raises(ValueError, match="max timed steps"):
        check_cell_schema({**cell.to_dict(), "max_timed_steps": 2})
    with pytest.raises(BenchError, match="max timed steps"):
        Cell(**{**cell.to_dict(), "max_timed_steps": 2})


# -- the framework loops: started with the plan's most steps, stopped as soon as the timer is done

LOOPS = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from bench.measure.drivers import drive_keras_fit, drive_keras_predict
from bench.models.keras_common import keras_module, repeated_batch
from bench.base.timing import HostDevice, StepTimer, WindowPlan
import numpy as np

major = int(sys.argv[2])
keras = keras_module(major)


class Workload:
    def __init__(self):
        self.keras, self.keras_major, self.begun = keras, major, 0
        inputs = keras.Input((8,))
        self.model = keras.Model(inputs, keras.layers.Dense(2)(inputs))
        self.model.compile(optimizer="sgd", loss="mse")
        self.data = None

    def watch_compiles(self):
        self.begun += 1


out = {}
for name, drive in (("fit", drive_keras_fit), ("predict", drive_keras_predict)):
    workload = Workload()
    x = np.ones((4, 8), "float32")
    workload.data = repeated_batch(x, np.zeros((4, 2), "float32")) if name == "fit" else repeated_batch(x)
    # easy to reach (50%), capped far away: the loop must stop long before the plan's most steps
    plan = WindowPlan(1, 3, 2, max_timed_steps=5000, target_half_width=0.5, min_timed_s=0.0, max_timed_s=60.0)
    timer = StepTimer(HostDevice(), plan)
    drive(workload, timer)
    out[name] = {"begun": workload.begun, "steps": timer.steps_done, "max_steps": plan.max_steps,
                 "stopped_by": timer.stopped_by}
print("LOOPS " + json.dumps(out))
"""


@pytest.mark.envs
@pytest.mark.parametrize("backend", ["keras2", "jax"])
def test_keras_loops_stop_as_soon_as_the_timer_is_done(backend):
    """Keras 3 stops fit/predict on its flags; Keras 2's fit on stop_training, its predict (no such flag) on the
    StopIteration the driver raises: none runs the thousands of steps it was started with."""
    from bench.catalogue.backends import cell_environment, get_backend

    python = env_python(backend)
    out = subprocess.run(
        [str(python), "-c", LOOPS, str(REPO), str(get_backend(backend).keras_major)],
        env={**cell_environment(backend), "JAX_PLATFORMS": "cpu", "CUDA_VISIBLE_DEVICES": ""},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    line = next((x for x in out.stdout.splitlines() if x.startswith("LOOPS ")), None)
    assert line, out.stdout[-3000:] + out.stderr[-3000:]
    for task, got in json.loads(line[len("LOOPS ") :]).items():
        assert got["stopped_by"] == "precision" and got["max_steps"] == 1 + 2 + 5000, (task, got)
        assert got["begun"] == got["steps"] < 50, (task, got)  # every batch the loop began was a timed window
    assert "ran out of data" not in out.stderr  # Keras 2's warning for its early stop is filtered out


# -- one real smoke cell, end to end


@pytest.mark.envs
@pytest.mark.slow
@pytest.mark.duration_s(40)
def test_a_smoke_cell_records_how_it_sampled(shared_smoke):
    """Native PyTorch's eager BERT predict in the shared smoke run (tests/shared_run.py: `make bench
    BACKEND=native-torch MODEL=bert PROFILE=smoke REPEATS=1`), read."""
    shared = shared_smoke("native-torch")
    assert shared.returncode == 0, shared.output[-6000:]
    results = shared.results
    (result,) = [r for r in load_all(results) if (r.cell.task, r.cell.variant) == ("predict", "eager")]
    (run,) = result.runs
    sampling, smoke = run.sampling, get_profile("smoke")
    assert result.cell.max_timed_steps == smoke.max_timed_steps and len(run.timed_ms) == sampling["steps"]
    assert sampling["rule"] == {"target_half_width": 0.02, "min_steps": 3, "min_s": 0.5, "max_steps": 2000, "max_s": 5}
    assert sampling["steps"] >= 3 and sampling["timed_s"] >= 0.5  # never before the minimum
    if sampling["reached"]:
        assert sampling["stopped_by"] == PRECISION and sampling["half_width"] <= 0.02
    else:
        assert sampling["stopped_by"] in (MAX_S, MAX_STEPS)
    assert sampling["interval"][0] <= result.summary().median <= sampling["interval"][1]
    log = (results / run.process["log"]).read_text()
    assert f"timed {sampling['steps']} steps in " in log and "(target 2%, " in log
