"""The code paths only a GPU box takes, on a CPU: a fake nvidia-smi (tests/fakes.py), fake framework modules that
record their calls, and the real framework envs where a cell must refuse. One test (or more) per item of the
GPU-paths issue; each fails with its defect put back."""
import json
import os
import subprocess
import sys
import types

import pytest
from conftest import REPO, env_python
from fakes import a100, install_fake_nvidia_smi, make_fake_envs
from test_sync_real import run_probe

from bench.base.provenance import gpus, machine_info, visible_gpu_selection
from bench.base.timing import StepTimer, WindowPlan
from bench.catalogue.backends import get_backend
from bench.catalogue.cost import cell_cost, cell_timeout_s, published_ms, units_per_step
from bench.catalogue.profiles import get_profile
from bench.catalogue.registry import get_model, plan_cells
from bench.plan import plan_figures, predicted_oom, usable_gib
from bench.record.results import load_all
from bench.record.schema import validate_result
from bench.run.cluster.parallel import cpu_share_environment, cpu_shares, run_cells_parallel
from bench.run.cluster.resources import cell_resources
from bench.run.cluster.task import container_command, gpu_passthrough, physical_gpus
from bench.run.runner import RunOptions


@pytest.fixture
def two_a100s(tmp_path, monkeypatch):
    """A machine with two A100 40GB (the issue's reproduction), the second with a MIG slice."""
    gpus_ = [a100(0), a100(1, migs=["MIG-11111111-2222-3333-4444-555555555555"])]
    install_fake_nvidia_smi(tmp_path / "bin", gpus_, monkeypatch)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return gpus_


# 1. StableDiffusion predict: the cost counts the driver's real work, and every paper cell fits its timeout.


def test_a_stable_diffusion_predict_step_costs_both_calls_of_its_pair():
    cell = next(
        c for c in plan_cells("paper", backends=["torch"], models=["stable_diffusion"], tasks=["predict"], exact=True)
    )  # the published procedure's 100 timed steps: sampled, the cell stops at 60 s of them
    shape = get_model("stable_diffusion").shape("paper")
    cost = cell_cost(cell)
    published = published_ms()[(cell.model, cell.task, cell.batch_size)]["torch"]
    # per step: a call at the high and one at the low denoising-step count, whatever each call adds besides
    assert units_per_step(cell) >= shape.denoise_steps_high + shape.denoise_steps_low
    floor_s = (
        published
        * (shape.denoise_steps_high + shape.denoise_steps_low)
        * (1 + cell.warmup_steps + cell.timed_steps)
        / 1000
    )
    assert cost.expected_s >= floor_s > get_profile("paper").timeout_s  # the 4,100 s against the profile's hour
    assert cell_timeout_s(cell) >= 2 * cost.expected_s
    # Slurm's --time covers the same timeout (the orchestrator inside the task kills the cell at it)
    assert cell_resources(cell, {}).time_min * 60 >= cell_timeout_s(cell)


def test_every_paper_cell_at_the_published_speed_is_well_inside_its_timeout():
    costed = 0
    for cell in plan_cells("paper"):
        cost = cell_cost(cell)
        if cost is None:
            continue
        costed += 1
        timeout = cell_timeout_s(cell)
        assert cost.expected_s <= timeout / 2, (cell.key, cost.expected_s, timeout)
        assert cost.worst_s < timeout, (cell.key, cost.worst_s, timeout)
    assert costed >= 60


# 2. One GPU per cell process, and the Trainer refuses DataParallel.


def test_each_cell_process_sees_exactly_one_gpu(tmp_path, monkeypatch, two_a100s):
    from bench.run import runner

    venvs = make_fake_envs(tmp_path / "venvs", ["native-torch"])
    monkeypatch.setattr("bench.run.env_lookup.VENVS_DIR", venvs)
    cells = plan_cells("smoke", backends=["native-torch"], models=["bert"], tasks=["predict"], variants=["eager"])
    [result] = runner.run_cells(cells, tmp_path / "results", runner.RunOptions(echo=lambda line: None))
    variables = result.runs[0].process["variables"]
    assert variables["CUDA_VISIBLE_DEVICES"] == two_a100s[0]["uuid"]  # the first visible GPU, by UUID: one GPU
    assert variables["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"  # CUDA's indices are nvidia-smi's
    assert result.runs[0].gpu_state["gpu"] == two_a100s[0]["uuid"]


def test_the_trainer_driver_refuses_more_than_one_gpu(monkeypatch):
    from bench.measure import drivers

    trained = []
    fake = types.ModuleType("transformers")
    fake.TrainingArguments = lambda **kw: types.SimpleNamespace(n_gpu=2, **kw)
    fake.Trainer = lambda **kw: types.SimpleNamespace(train=lambda: trained.append(kw))
    fake.TrainerCallback = object
    monkeypatch.setitem(sys.modules, "transformers", fake)
    workload = types.SimpleNamespace(
        cell=types.SimpleNamespace(batch_size=8),
        seed=0,
        model=None,
        trainer_arguments=lambda: {},
        training_dataset=lambda n: [],
    )
    timer = StepTimer(types.SimpleNamespace(), WindowPlan(0, 1))
    with pytest.raises(RuntimeError, match="sees 2 GPUs.*DataParallel"):
        drivers.drive_trainer(workload, timer)
    assert trained == []
    drivers.refuse_data_parallel(1)  # one GPU (or none) is a cell


# 3. A framework that cannot see the machine's GPU fails the cell at set-up, in one line.


@pytest.mark.envs
@pytest.mark.parametrize(
    "backend,model,framework",
    [("native-torch", "bert", "torch"), ("jax", "bert", "jax"), ("tensorflow", "bert", "tensorflow")],
)
def test_a_framework_that_sees_no_gpu_fails_the_cell_instead_of_timing_the_cpu(
    tmp_path, monkeypatch, two_a100s, backend, model, framework
):
    python = env_python(backend)
    cell = next(c for c in plan_cells("paper", backends=[backend], models=[model], tasks=["predict"]))
    out = tmp_path / "run.json"
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": two_a100s[0]["uuid"]}
    env.pop("JAX_PLATFORMS", None)
    proc = subprocess.run(
        [str(python), "-m", "bench", "cell", "--cell", json.dumps(cell.to_dict()), "--out", str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    run = json.loads(out.read_text())
    assert proc.returncode == 1 and run["status"] == "error", proc.stdout[-2000:]
    message = run["message"]
    assert message.startswith(f"GpuNotVisible: {framework} ") and "\n" not in message
    assert "NVIDIA A100-SXM4-40GB" in message and "likely cause" in message
    assert run["first_step_ms"] is None and run["timed_ms"] == []  # nothing measured on the CPU
    if framework == "jax":  # JAX was told to use the GPU, not left to fall back to the CPU
        assert run["process"]["variables"]["JAX_PLATFORMS"] == "cuda"


# 4. The GPUs a run uses are the visible ones: by index, UUID or MIG id.


def test_the_visible_gpus_follow_cuda_visible_devices(two_a100s, monkeypatch):
    assert [g["index"] for g in gpus()] == ["0", "1"]
    every = gpus(visible=None)
    select = lambda value: [(g["index"], g.get("mig")) for g in visible_gpu_selection(every, value)]
    assert select(None) == [("0", None), ("1", None)]
    assert select("") == [] and select("-1") == [] and select("NoDevFiles") == []
    assert select("1") == [("1", None)] and select("1,0") == [("1", None), ("0", None)]
    assert select(two_a100s[1]["uuid"]) == [("1", None)] and select(two_a100s[1]["uuid"][:12]) == [("1", None)]
    assert select("MIG-11111111-2222-3333-4444-555555555555") == [("1", "MIG-11111111-2222-3333-4444-555555555555")]
    assert select("0,7,1") == [("0", None)]  # as CUDA: the list ends at the first entry naming no GPU
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    machine = machine_info()
    assert machine["gpus"] == [] and machine["gpus_on_machine"] == 2


def test_hiding_the_gpus_picks_the_cpu_profile(tmp_path, two_a100s):
    """The issue's reproduction: CUDA_VISIBLE_DEVICES= (the doctor's advice for the CPU) still picked paper."""
    from bench.run.planning import default_profile

    os.environ["CUDA_VISIBLE_DEVICES"] = ""  # restored by the fixture's monkeypatch.delenv at teardown
    assert default_profile(machine_info())[0] == "smoke"
    os.environ["CUDA_VISIBLE_DEVICES"] = "1"
    profile, why = default_profile(machine_info())
    assert profile == "paper" and "1x NVIDIA A100" in why


def test_the_doctor_takes_its_own_advice_to_hide_the_gpus():
    from bench.run.doctor import FAIL, OK, Probes, check_driver

    old_driver = dict(nvidia_driver=lambda: "470.82.01")
    assert check_driver(Probes(**old_driver, environ={})).verdict == FAIL  # advises CUDA_VISIBLE_DEVICES=
    assert check_driver(Probes(**old_driver, environ={"CUDA_VISIBLE_DEVICES": ""})).verdict == OK
    assert check_driver(Probes(**old_driver, environ={"CUDA_VISIBLE_DEVICES": "0"})).verdict == FAIL


# 5. CUDA graphs: a recording is a compile event; a skip or a timed recording makes a compiled GPU cell unsteady.

CUDAGRAPH_PROBE = r"""
import json, sys, types
sys.path.insert(0, sys.argv[1])
import torch
from torch._dynamo import callback
from torch._dynamo.utils import counters
from bench.measure.frameworks import TorchDevice, framework_info, inductor_cudagraphs
from bench.models.torch_common import TorchWorkload
from bench.base.timing import Steadiness

device = TorchDevice()
before = device.compile_count()
with callback.callback_handler.install_callbacks(callback.CallbackTrigger.CUDAGRAPH_RECORDING, "0/0"):
    pass  # what inductor's cudagraph tree does around each recording
after_recording = device.compile_count()
counters["inductor"]["cudagraph_skips"] += 1  # what log_cudagraph_skip_and_bump_counter does
workload = types.SimpleNamespace(compiled=True, device=torch.device("cuda"))
timed = Steadiness(False, [], 2, 1)
problems = TorchWorkload.cuda_graph_problems(workload, timed)
eager = TorchWorkload.cuda_graph_problems(types.SimpleNamespace(compiled=False, device=torch.device("cuda")), timed)
print("PROBE " + json.dumps({"before": before, "after_recording": after_recording, "graphs": inductor_cudagraphs(),
                             "problems": problems, "eager": eager, "recorded": framework_info("torch")["inductor_cudagraphs"]}))
"""


@pytest.mark.envs
def test_cuda_graph_recordings_count_as_compiles_and_skips_are_problems():
    got = run_probe("native-torch", CUDAGRAPH_PROBE, str(REPO))  # tests/test_sync_real.py: the backend's variables, one PROBE line
    assert got["after_recording"] == got["before"] + 1
    assert got["graphs"]["recordings"] == 1 and got["graphs"]["skips"] == 1
    assert any("skipped CUDA graphs 1 time" in p for p in got["problems"])
    assert any("recording event(s) fell in the timed steps" in p for p in got["problems"])
    assert got["eager"] == []  # eager cells take no CUDA graphs
    assert got["recorded"]["skips"] == 1  # every torch result carries the counters


def test_a_compiled_cell_whose_cuda_graphs_did_not_replay_is_unsteady(monkeypatch):
    """bench.measure.cell.measure on a fake workload: the problems a workload reports make the run unsteady, raw windows kept."""
    from bench.base.timing import HostDevice
    from bench.measure import cell as cell_module
    from bench.measure import frameworks

    class Workload:
        driver, timing_device, steps_run = "steps", HostDevice(), 0

        def __init__(self, cell, shape):
            self.cell = cell

        def setup(self):
            pass

        def step(self):
            return None

        def check(self):
            pass

        def tokens_per_step(self):
            return None

        def settings(self):
            return {}

        def cuda_graph_problems(self, steadiness):
            return ["inductor skipped CUDA graphs 1 time(s): mutated inputs"]

    spec = types.SimpleNamespace(
        display="Fake",
        implementation=lambda backend: types.SimpleNamespace(create=Workload),
        shape=lambda profile: None,
    )
    monkeypatch.setattr(cell_module, "get_model", lambda name: spec)
    monkeypatch.setattr(frameworks, "framework_info", lambda name: {})
    monkeypatch.setattr(frameworks, "device_memory", lambda name: None)
    cell = plan_cells("smoke", backends=["native-torch"], models=["bert"], tasks=["predict"], variants=["compiled"])[0]
    run = cell_module.measure(cell)
    assert run.status == "unsteady" and "inductor skipped CUDA graphs" in run.message
    timed = run.sampling["steps"]  # sampled to the smoke profile's precision, or to its cap
    assert run.timed_ms == [] and len(run.windows_ms) == 1 + run.steadiness["warmup_steps_run"] + timed


STATIC_CACHE_PROBE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import torch
torch.compile = lambda fn, **kw: fn  # the compiled variant's code path, without inductor's minutes on a CPU
from bench.catalogue.registry import plan_cells, get_model
cell = [c for c in plan_cells("smoke", backends=["native-torch"], models=["gemma"], tasks=["generate"], variants=["compiled"]) if c.batch_size == 1][0]
workload = get_model("gemma").implementation("native-torch").create(cell, get_model("gemma").shape("smoke"))
workload.setup()
seen = []
generate = workload.model.generate
def recording(**kw):
    cache = kw.get("past_key_values")
    seen.append({"id": id(cache), "type": type(cache).__name__, "implementation": workload.model.generation_config.cache_implementation})
    return generate(**kw)
workload.model.generate = recording
workload.step(); workload.step()
print("PROBE " + json.dumps({"calls": seen, "setting": workload.settings()["static_cache"]}))
"""


@pytest.mark.envs
def test_the_compiled_native_generate_passes_one_static_cache_to_every_call():
    """transformers makes a new static cache inside generate() on every call (new tensors: CUDA graphs cannot replay);
    the compiled workload makes one and passes it, reset, to each call."""
    got = run_probe("native-torch", STATIC_CACHE_PROBE, str(REPO))  # tests/test_sync_real.py: the backend's variables, one PROBE line
    first, second = got["calls"]
    assert first["type"] == "StaticCache" and first["id"] == second["id"]  # one cache object, passed to both calls
    assert first["implementation"] is None  # not also asked of generate(), which would make its own
    assert got["setting"] == "made once in setup, reset before each call"


# 6. Parallel cells: a share of the cores each, and the drift probe kept.


def test_cpu_shares_are_disjoint_and_cover_one_share_per_job():
    assert cpu_shares(2, list(range(16))) == [list(range(8)), list(range(8, 16))]
    assert cpu_shares(3, list(range(8))) == [[0, 1], [2, 3], [4, 5]]
    assert cpu_shares(4, [0, 1]) == [[0], [1], [0], [1]]  # fewer cores than jobs: one each, shared in turn
    env = cpu_share_environment([4, 5, 6, 7])
    assert (
        env["BENCH_CPU_AFFINITY"] == "4,5,6,7"
        and env["OMP_NUM_THREADS"] == "4"
        and env["TORCHINDUCTOR_COMPILE_THREADS"] == "4"
    )


def test_a_cell_keeps_to_the_cores_it_was_given():
    code = "import os; from bench.measure.cell import pin_cpus; pin_cpus(); print(sorted(os.sched_getaffinity(0)))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={**os.environ, "BENCH_CPU_AFFINITY": "0"},
        capture_output=True,
        text=True,
    )
    assert out.stdout.strip() == "[0]", out.stderr


def test_parallel_cells_get_their_core_share_and_a_drift_probe(tmp_path, monkeypatch):
    gpus_ = [a100(i) for i in range(4)]
    install_fake_nvidia_smi(tmp_path / "bin", gpus_, monkeypatch)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")

    venvs = make_fake_envs(tmp_path / "venvs", ["native-torch"])
    monkeypatch.setattr("bench.run.env_lookup.VENVS_DIR", venvs)
    cells = plan_cells("smoke", backends=["native-torch"], models=["bert"])
    results = run_cells_parallel(cells, tmp_path / "results", jobs=2, options=RunOptions(echo=lambda line: None))
    assert {r.status for r in results} == {"ok"} and len(results) == len(cells)
    shares = {}
    for result in load_all(tmp_path / "results"):
        run = result.runs[0]
        gpu = gpus_[result.provenance["gpu_index"]]
        assert result.provenance["gpu_index"] in (3, 1)
        assert run.process["variables"]["CUDA_VISIBLE_DEVICES"] == gpu["uuid"]
        share = run.process["variables"]["BENCH_CPU_AFFINITY"]
        assert run.process["variables"]["OMP_NUM_THREADS"] == str(len(share.split(",")))
        assert result.provenance["cpu_share"] == [int(c) for c in share.split(",")]
        shares.setdefault(result.provenance["gpu_index"], set()).add(share)
        assert set(run.reference) == {"before_ms", "after_ms"} and run.reference["after_ms"] > 0
        assert run.noise is not None and run.noise["quiet_reference_ms"] > 0  # judged against the slot's own probes
        assert set(result.provenance["reference"]) == {"start_ms", "at_write_ms"}
    assert all(len(s) == 1 for s in shares.values())  # a GPU slot keeps its cores
    if len(os.sched_getaffinity(0)) >= 2:
        assert len({next(iter(s)) for s in shares.values()}) == len(shares)  # two slots, two disjoint shares


# 7. Slurm + container: the physical GPU, not the job's renumbered index.


def test_a_slurm_task_in_a_container_gets_its_physical_gpu(tmp_path, monkeypatch, two_a100s):
    # ConstrainDevices=yes: the job's only GPU is node GPU 1, which the job sees as CUDA_VISIBLE_DEVICES=0
    assert physical_gpus({"CUDA_VISIBLE_DEVICES": "0", "SLURM_JOB_GPUS": "1"}) == ["1"]
    assert physical_gpus({"CUDA_VISIBLE_DEVICES": "0", "SLURM_STEP_GPUS": "1", "SLURM_JOB_GPUS": "0,1"}) == ["1"]
    assert physical_gpus({"CUDA_VISIBLE_DEVICES": "1"}) == [two_a100s[1]["uuid"]]  # no Slurm list: the UUID
    assert physical_gpus({}) == [] and physical_gpus({"CUDA_VISIBLE_DEVICES": ""}) == []
    assert gpu_passthrough("/usr/bin/podman", ["1"]) == ["--device", "nvidia.com/gpu=1"]
    assert gpu_passthrough("docker", ["0", "2"]) == ["--gpus", "device=0,2"]
    cell = plan_cells("paper", backends=["jax"], models=["bert"], tasks=["predict"])[0]
    meta = {"container": {"engine": "podman", "image_name": "bench"}, "results_dir": str(tmp_path)}
    command = container_command(cell, meta, {"CUDA_VISIBLE_DEVICES": "0", "SLURM_JOB_GPUS": "1"})
    assert "nvidia.com/gpu=1" in command and "nvidia.com/gpu=0" not in command


# 8. The plan compares a cell with what its framework can use of the card.


def test_the_plan_compares_a_cell_with_what_its_framework_can_use():
    assert usable_gib("jax", 40.0) == pytest.approx(30.0)  # JAX preallocates 75%
    assert usable_gib("jax", 40.0, {"XLA_PYTHON_CLIENT_MEM_FRACTION": "0.9"}) == pytest.approx(36.0)
    assert usable_gib("torch", 40.0) < 40.0 and usable_gib("tensorflow", 40.0) < 40.0
    assert get_backend("jax").environment["XLA_PYTHON_CLIENT_MEM_FRACTION"] == "0.90"  # set, so recorded
    a100_machine = {"gpus": [{"name": "NVIDIA A100-SXM4-40GB", "memory": "40960 MiB"}], "memory_gib": 500.0}
    jax_cell = plan_cells("paper", backends=["jax"], models=["bert"], tasks=["fit"])[0]
    torch_cell = plan_cells("paper", backends=["torch"], models=["bert"], tasks=["fit"])[0]
    plan = {c.key: {"memory_gib": 37.0, "weights_gib": 1.0} for c in (jax_cell, torch_cell)}
    assert "more than the 36.00 GiB of NVIDIA A100-SXM4-40GB memory that jax can use" in predicted_oom(
        jax_cell, plan, a100_machine
    )
    assert predicted_oom(torch_cell, plan, a100_machine) is None  # 37 of the 39 GiB torch can use
    assert plan_figures(torch_cell, plan, a100_machine)[1] == pytest.approx(39.0)


# 9. Peak device memory: recorded from the framework, required of a GPU run, the plan's figure beside it.


def gpu_result(**run_fields) -> dict:
    """A result file's dict of one ok run whose framework saw a GPU (run_fields override the run's)."""
    from bench.record.results import Result, Run

    cell = plan_cells("smoke", backends=["native-torch"], models=["bert"], tasks=["predict"], variants=["eager"])[0]
    run = Run(
        status="ok",
        first_step_ms=5.0,
        warmup_ms=[1.0],
        timed_ms=[1.0, 1.1],
        framework={"framework": "torch", "gpus": ["NVIDIA A100-SXM4-40GB"]},
    )
    for name, value in run_fields.items():
        setattr(run, name, value)
    return Result(cell, [run], "ms/step", {"git": {}, "machine": {}}, "2026-11-25T00:00:00+00:00").to_dict()


def test_a_result_whose_framework_used_a_gpu_must_record_its_device_memory():
    with pytest.raises(Exception, match="device_memory"):
        validate_result(gpu_result())
    memory = {
        "framework": "torch",
        "device": "cuda:0",
        "peak_allocated_gib": 3.2,
        "peak_reserved_gib": 3.5,
        "source": "torch.cuda.max_memory_allocated / max_memory_reserved",
        "plan_gib": 2.9,
    }
    validate_result(gpu_result(device_memory=memory))
    validate_result(gpu_result(framework={"framework": "torch", "gpus": []}))  # a CPU run needs none


def test_device_memory_comes_from_the_framework(monkeypatch):
    from bench.measure.frameworks import device_memory

    cuda = types.SimpleNamespace(
        is_available=lambda: True,
        is_initialized=lambda: True,
        max_memory_allocated=lambda i: 3 * 2**30,
        max_memory_reserved=lambda i: 4 * 2**30,
    )
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    got = device_memory("torch")
    assert (
        got["peak_allocated_gib"] == 3.0 and got["peak_reserved_gib"] == 4.0 and "max_memory_allocated" in got["source"]
    )
    stats = {"peak_bytes_in_use": 5 * 2**30, "bytes_limit": 30 * 2**30}
    gpu = types.SimpleNamespace(platform="gpu", memory_stats=lambda: stats, __str__=lambda self: "cuda:0")
    monkeypatch.setitem(sys.modules, "jax", types.SimpleNamespace(devices=lambda: [gpu]))
    got = device_memory("jax")
    assert got["peak_allocated_gib"] == 5.0 and got["limit_gib"] == 30.0
    cuda.is_available = lambda: False
    assert device_memory("torch") is None  # a CPU run: nothing to record


def test_the_orchestrator_puts_the_plans_figure_beside_the_device_memory(tmp_path, monkeypatch):
    from bench.record.results import Run
    from bench.run import runner

    cell = plan_cells("smoke", backends=["native-torch"], models=["bert"], tasks=["predict"], variants=["eager"])[0]
    prepared = runner.Prepared(
        [cell], {}, {cell.env: sys.executable}, {}, {"gpus": []}, plans={"smoke": {cell.key: {"memory_gib": 2.5}}}
    )
    measured = Run(
        status="ok",
        timed_ms=[1.0],
        device_memory={"framework": "torch", "device": "cuda:0", "peak_allocated_gib": 3.0, "source": "x"},
    )
    monkeypatch.setattr(runner.CellProcess, "run", lambda self, timeout: measured)
    run = prepared.attempt(cell, 0, tmp_path, None, lambda line: None)
    assert run.device_memory["plan_gib"] == 2.5


# 10. The GPU branch of each Device: sync at both edges of every window, in order with the clock.


class Log(list):
    def clock(self):
        self.append("clock")
        return len(self) * 1000


def fake_torch(log):
    cuda = types.SimpleNamespace(is_available=lambda: True, synchronize=lambda: log.append("cuda.synchronize"))
    return types.SimpleNamespace(cuda=cuda)


def fake_jax(log):
    array = type("Array", (), {})
    jax = types.SimpleNamespace(
        Array=array, tree_util=types.SimpleNamespace(tree_leaves=lambda r: r if isinstance(r, list) else [r])
    )
    jax.block_until_ready = lambda xs: log.append(f"block_until_ready({len(xs)})")
    jax.live_arrays = lambda: [array(), array(), array()]
    jax.effects_barrier = lambda: log.append("effects_barrier")
    return jax, array


def fake_tensorflow(log):
    tensor = type("Tensor", (), {"numpy": lambda self: log.append("tensor.numpy")})
    flatten = lambda r: list(r.values()) if isinstance(r, dict) else r if isinstance(r, list) else [r]
    tf = types.SimpleNamespace(Tensor=tensor, nest=types.SimpleNamespace(flatten=flatten))
    tf.config = types.SimpleNamespace(list_logical_devices=lambda kind: ["/device:GPU:0"])
    tf.test = types.SimpleNamespace(experimental=types.SimpleNamespace(sync_devices=lambda: log.append("sync_devices")))
    return tf, tensor


def test_the_torch_gpu_device_synchronizes_at_both_edges(monkeypatch):
    from bench.measure.frameworks import TorchDevice

    log = Log()
    monkeypatch.setitem(sys.modules, "torch", fake_torch(log))
    device = TorchDevice.__new__(TorchDevice)
    device._torch, device._cuda = sys.modules["torch"], True
    device.compile_count = lambda: 0
    timer = StepTimer(device, WindowPlan(0, 1), clock=log.clock)
    timer.begin()
    log.append("step")
    timer.end(object())
    assert log == ["cuda.synchronize", "clock", "step", "cuda.synchronize", "clock"]


def test_the_jax_gpu_device_waits_for_every_live_array_before_and_for_the_result_after(monkeypatch):
    from bench.measure.frameworks import JaxDevice

    log = Log()
    jax, array = fake_jax(log)
    device = JaxDevice.__new__(JaxDevice)
    device._jax = jax
    device.compile_count = lambda: 0
    timer = StepTimer(device, WindowPlan(0, 1), clock=log.clock)
    timer.begin()
    log.append("step")
    timer.end([array(), 1.0])  # one device array and a host value
    assert log == ["block_until_ready(3)", "effects_barrier", "clock", "step", "block_until_ready(1)", "clock"]


def test_the_tensorflow_gpu_device_syncs_devices_inside_a_keras_callback(monkeypatch):
    """On a GPU, fetching the logs is not enough: sync_devices drains the rest, and it is called from the eager
    code of a Keras callback (drive_keras_fit's), at every batch end."""
    from bench.measure import drivers
    from bench.measure.frameworks import TensorflowDevice

    log = Log()
    tf, tensor = fake_tensorflow(log)
    device = TensorflowDevice.__new__(TensorflowDevice)
    device._tf, device._gpu, device._watched = tf, True, []

    class Model:
        stop_training = False

        def fit(self, data, epochs, steps_per_epoch, callbacks, verbose):
            [callback] = callbacks
            for batch in range(steps_per_epoch):
                callback.on_train_batch_begin(batch)
                log.append(f"train_step {batch}")
                callback.on_train_batch_end(batch, {"loss": tensor()})
                if self.stop_training:
                    break

    keras = types.SimpleNamespace(callbacks=types.SimpleNamespace(Callback=object))
    workload = types.SimpleNamespace(model=Model(), keras=keras, data=None, watch_compiles=lambda: None)
    timer = StepTimer(device, WindowPlan(0, 2), clock=log.clock)
    drivers.drive_keras_fit(workload, timer)
    assert timer.done and len(timer.windows_ns) == 3
    assert log[:3] == ["sync_devices", "clock", "train_step 0"]  # opened after everything earlier finished
    # each window closes after the logs are fetched and every device is synced, then the next opens at once
    assert log[3:8] == ["tensor.numpy", "sync_devices", "clock", "sync_devices", "clock"]
    assert log.count("sync_devices") == 1 + 2 * 3 - 1


# 11. What the numbers depend on: matmul precision, compute capability, clocks, power, throttle reasons.


def test_float32_matmul_precision_is_resolved_for_the_gpu():
    from bench.measure.frameworks import resolved_float32_matmul

    assert resolved_float32_matmul("8.0", True) == "tf32"  # A100: JAX's and TensorFlow's default, torch's "high"
    assert resolved_float32_matmul("9.0", False) == "float32"  # torch's default "highest"
    assert resolved_float32_matmul("7.0", True) == "float32"  # V100: no TF32
    assert resolved_float32_matmul(None, True) == "float32"  # a CPU


def test_a_cell_records_its_gpus_capability_and_state_at_start_and_end(tmp_path, monkeypatch, two_a100s):
    from bench.run import runner

    venvs = make_fake_envs(tmp_path / "venvs", ["jax"])
    monkeypatch.setattr("bench.run.env_lookup.VENVS_DIR", venvs)
    cells = plan_cells("smoke", backends=["jax"], models=["bert"], tasks=["predict"])
    [result] = runner.run_cells(cells, tmp_path / "results", runner.RunOptions(echo=lambda line: None))
    machine = result.provenance["machine"]
    assert machine["gpus"][0]["compute_capability"] == "8.0" and machine["gpus"][0]["uuid"] == two_a100s[0]["uuid"]
    state = result.runs[0].gpu_state
    for edge in ("start", "end"):
        assert state[edge]["clocks.sm"] == "1410" and state[edge]["power.limit"] == "400.00"
        assert state[edge]["clocks_throttle_reasons.active"] == "0x0000000000000000"
    json.dumps(result.to_dict())  # and it is written as JSON like every other field
