"""Framework-free pieces of the model specs: each task's driver, unit and derivation, declared once."""
import pytest

from bench.drivers import DERIVATIONS, DRIVERS, drive_step_pairs, pair_difference
from bench import workloads
from bench.backends import BACKENDS, keras3_backends, short_name
from bench.registry import MODELS, discover_models, get_model, published_rows
from bench.timing import StepTimer, WindowPlan

SD = get_model("stable_diffusion")
SHAPE = SD.shape("paper")


@pytest.mark.parametrize("model", MODELS)
def test_every_task_names_a_known_driver_for_both_families(model):
    for task in get_model(model).task_specs.values():
        assert set(task.drivers) == {"keras", "native-torch"}
        assert set(task.drivers.values()) <= set(DRIVERS)
        assert task.derivation is None or task.derivation in DERIVATIONS


def test_models_are_the_folders_with_a_workload_in_the_published_order_then_by_name(tmp_path):
    published = tuple(dict.fromkeys(r.model for r in published_rows()))
    assert MODELS == published  # every published model has its folder, and no other folder is a model today
    for name in ("zeta", "alpha", "bert", "gemma"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "workload.toml").write_text("")
    (tmp_path / "no_workload").mkdir()  # a folder without a workload.toml (e.g. shared code) is no model
    assert discover_models(tmp_path) == ("bert", "gemma", "alpha", "zeta")


def test_backend_groups_come_from_the_backends_own_definitions():
    assert keras3_backends() == ("tensorflow", "jax", "torch")
    assert [short_name(b) for b in ("keras2", *keras3_backends())] == ["Keras 2", "TF", "JAX", "PyTorch"]
    assert workloads.VARIANTS == {"keras": ("default",), "native-torch": ("eager", "compiled")}
    assert all(b.variants == workloads.VARIANTS[b.family] for b in BACKENDS.values())


def test_units_come_from_the_task():
    assert SD.task("predict").unit == "ms/denoising step" and SD.task("fit").unit == "ms/step"
    gemma = get_model("gemma")
    assert gemma.task("generate").unit == "ms/call"
    assert gemma.task("generate").tokens_per_step(gemma.shape("paper"), 32) == 32 * 45


def test_step_pairs_on_a_fake_clock_give_the_per_denoising_step_time():
    """Each call takes 500 ms of fixed cost (text encoder, decoder) plus 100 ms per denoising step; the first pair
    also compiles (9 s), which stays in the first step and out of every timed figure."""
    now, calls = [0], []

    class Workload:
        shape = SHAPE

        def call(self, num_steps):
            now[0] += int((500 + 100 * num_steps + (9000 if not calls else 0)) * 1e6)
            calls.append(num_steps)

    timer = StepTimer(_Host(), WindowPlan(1, 3, None, SD.task("predict").windows_per_step), clock=lambda: now[0])
    drive_step_pairs(Workload(), timer)
    high, low = SHAPE.denoise_steps_high, SHAPE.denoise_steps_low
    assert calls == [high, low, low, high, high, low, low, high, high, low]
    split = timer.split(pair_difference(timer.windows_ms, timer.tags))
    assert split.timed_ms == pytest.approx([100.0] * 3) and split.warmup_ms == pytest.approx([100.0])


class _Host:
    def sync(self, result):
        pass

    def barrier(self):
        pass

    def compile_count(self):
        return 0
