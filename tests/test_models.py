"""Framework-free pieces of the model specs: each task's driver, unit and derivation, declared once."""
import ast

import pytest
from conftest import REPO

from bench.base.published import published_rows
from bench.base.timing import StepTimer, WindowPlan
from bench.catalogue.backends import BACKENDS, family_variants, keras3_backends, short_name
from bench.catalogue.registry import MODELS, discover_models, get_model, paper_models
from bench.measure.drivers import DERIVATIONS, DRIVERS, drive_step_pairs, pair_difference

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
    others = tuple(m for m in MODELS if m not in published)
    assert MODELS == (*published, *sorted(others))  # every published model has its folder
    assert {m for m in others if get_model(m).study == "tuning"} == {"gemma_2b", "vit"}
    assert paper_models() == (*published, *(m for m in others if not get_model(m).study))
    assert all(get_model(m).own_rows for m in others)  # no row of the published table: it declares its own
    for name in ("zeta", "alpha", "bert", "gemma"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "workload.toml").write_text("")
    (tmp_path / "no_workload").mkdir()  # a folder without a workload.toml (e.g. shared code) is no model
    assert discover_models(tmp_path) == ("bert", "gemma", "alpha", "zeta")


def test_backend_groups_come_from_the_backends_own_definitions():
    assert keras3_backends() == ("tensorflow", "jax", "torch")
    assert [short_name(b) for b in ("keras2", *keras3_backends())] == ["Keras 2", "TF", "JAX", "PyTorch"]
    assert family_variants() == {"keras": ("default",), "native-torch": ("eager", "compiled")}
    assert all(b.variants == family_variants()[b.family] for b in BACKENDS.values())


def test_units_come_from_the_task():
    assert SD.task("predict").unit == "ms/denoising step" and SD.task("fit").unit == "ms/step"
    gemma = get_model("gemma")
    assert gemma.task("generate").unit == "ms/call"
    assert gemma.task("generate").tokens_per_step(gemma.shape("paper"), 32) == 32 * 44  # BOS + 5 words, max_length 50


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


def test_paper_shapes_carry_the_published_settings():
    """BERT's eager attention; the LLM prompt is BOS + 5 words (6 tokens, 44 new to max_length 50) and
    Keras takes keras-nlp 0.8.2's unfused attention; smoke runs the same paths."""
    for profile in ("paper", "smoke"):
        assert get_model("bert").shape(profile).attention_implementation == "eager"
        for name, bos in (("gemma", 2), ("mistral", 1)):
            shape = get_model(name).shape(profile)
            assert (shape.prompt_length, shape.bos_token_id, shape.keras_fused_attention) == (6, bos, False)
    assert get_model("mistral").shape("paper").new_tokens == 44


def test_prompt_ids_start_with_the_bos():
    import numpy as np

    from bench.models.llm import prompt_ids

    shape = get_model("mistral").shape("smoke")
    ids = prompt_ids(shape, 3, 3, np.random.default_rng(0))
    assert ids.shape == (3, shape.prompt_length) and ids.dtype == np.int32
    assert (ids[:, 0] == shape.bos_token_id).all() and (ids[:, 1:] >= 3).all() and (ids < shape.vocabulary_size).all()


def test_disabling_fused_attention_routes_both_kinds_of_keras_hub_layer(monkeypatch):
    """Gemma decides per layer (`_use_fused_attention_op`), Mistral by its module's `fused_attention_op_available`."""
    import types

    from bench.models.keras_llm import disable_fused_attention, uses_fused_attention

    module = types.ModuleType("fake_mistral_attention")
    module.fused_attention_op_available = lambda: True
    monkeypatch.setitem(__import__("sys").modules, module.__name__, module)
    GemmaLike = type("GemmaLike", (), {"_use_fused_attention_op": lambda self: True})
    MistralLike = type("MistralLike", (), {"__module__": module.__name__})
    disabled = []
    keras = types.SimpleNamespace(config=types.SimpleNamespace(disable_flash_attention=lambda: disabled.append(True)))
    layers = [GemmaLike(), MistralLike()]
    assert [uses_fused_attention(layer) for layer in layers] == [True, True]
    disable_fused_attention(keras, layers)
    assert [uses_fused_attention(layer) for layer in layers] == [False, False] and disabled == [True]


SEEDING_CALLS = {"manual_seed", "default_rng", "PRNGKey", "seed", "Generator", "RandomState", "set_seed"}


def literal_seeds(code: str) -> list[str]:
    """Calls that seed a generator with a number written in place, or a `seed=` given one."""
    found = []
    for node in ast.walk(ast.parse(code)):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        values = [*(node.args if name in SEEDING_CALLS else []), *(k.value for k in node.keywords if k.arg == "seed")]
        if any(isinstance(v, ast.Constant) and isinstance(v.value, int) for v in values):
            found.append(ast.unparse(node))
    return found


def test_workloads_seed_their_data_with_seed_alone():
    """bench/models/base.py states SEED once for every workload: no model's code seeds with a number of its own."""
    files = [*(REPO / "bench" / "models").rglob("*.py"), *(REPO / "tests" / "new_model").rglob("*.py")]
    found = {str(f.relative_to(REPO)): seeds for f in files if (seeds := literal_seeds(f.read_text()))}
    assert found == {}
    assert literal_seeds("g = torch.Generator().manual_seed(0); r = np.random.default_rng(seed=0)") == [
        "torch.Generator().manual_seed(0)", "np.random.default_rng(seed=0)"
    ]

