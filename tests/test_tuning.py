"""The tuning study and its attention variants: variants as an axis of cells, the ViT workload,
its report section. Fast tests here need no framework; the `envs` ones run in the backends' environments."""
import dataclasses
import json
import subprocess
import sys

import pytest
from conftest import REPO, env_python
from fakes import smoke_run, write_noise_study

from bench.base.errors import BenchError
from bench.base.published import published_rows
from bench.catalogue import variants
from bench.catalogue.backends import cell_environment
from bench.catalogue.registry import Cell, get_model, paper_models, plan_cells
from bench.judge import claims


def test_a_tuning_variant_is_refused_where_it_does_not_apply_naming_where_it_does():
    with pytest.raises(
        BenchError,
        match=r"variant 'sdpa' does not apply to jax vit fit: it applies to torch \(vit\); native-torch \(bert\)",
    ):
        Cell("jax", "vit", "fit", 2, "smoke", "sdpa", 1, 3)
    with pytest.raises(
        BenchError,
        match=r"'loader-workers-2' applies to none of the chosen cells: it applies to jax \(vit\); torch \(vit\); native-torch \(vit\)",
    ):
        plan_cells("smoke", backends=["tensorflow"], models=["vit"], variants=["loader-workers-2"])
    with pytest.raises(BenchError, match="unknown variant 'loader-workers-two'"):
        plan_cells("smoke", models=["vit"], variants=["loader-workers-two"])
    with pytest.raises(BenchError, match="'fused-attention' does not apply to native-torch gemma fit"):
        Cell("native-torch", "gemma", "fit", 2, "smoke", "fused-attention", 1, 3)


def test_variants_run_only_when_asked_and_the_paper_matrix_is_unchanged():
    published = {r.model for r in published_rows()}
    paper = [c for c in plan_cells("paper") if c.model in published]
    assert len(paper) == 72 and {c.variant for c in paper} == {"default", "eager", "compiled"}
    assert "vit" not in paper_models() and not any(c.model == "vit" for c in paper)
    asked = plan_cells("smoke", models=["vit", "bert"], variants=["default", "eager", "sdpa", "loader-workers-3"])
    keys = {c.key for c in asked}
    assert {
        "torch__vit__fit__bs2__sdpa",
        "native-torch__bert__predict__bs2__sdpa",
        "native-torch__vit__fit__bs2__loader-workers-3",
    } <= keys
    assert not any(
        c.variant == "sdpa" and (c.backend, c.model) not in {("torch", "vit"), ("native-torch", "bert")} for c in asked
    )
    assert variants.loader_workers("loader-workers-3") == 3 and variants.loader_workers("default") is None
    assert variants.reference_variant("native-torch") == "eager" and variants.reference_variant("torch") == "default"


def test_the_cpu_profile_runs_paper_shapes_at_a_small_batch():
    (cell,) = plan_cells("cpu", backends=["jax"], models=["vit"], tasks=["fit"])
    # ViT's own [cpu] table: the paper widths in float32 (this CPU has no bfloat16 arithmetic; workload.toml)
    cpu, paper = get_model("vit").shape("cpu"), get_model("vit").shape("paper")
    assert (
        cell.batch_size == 2 and cpu == dataclasses.replace(paper, dtype="float32") and paper.dtype == "mixed_bfloat16"
    )
    assert get_model("bert").shape("cpu").hidden_dim == 768


@pytest.fixture
def no_repo_noise_study(monkeypatch, tmp_path):
    """Only the test's own results folder may hold a noise study (not the checkout's results/noise/)."""
    import bench.judge.noise_file

    monkeypatch.setattr(bench.judge.noise_file, "REPO_ROOT", tmp_path / "no-checkout")


def table_row(page, *cells):
    """The cells of the one table line that contains every one of `cells` as a whole cell."""
    lines = [line for line in page.splitlines() if line.startswith("|")]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
    (row,) = [r for r in rows if all(c in r for c in cells)]
    return row


def test_the_tuning_section_shows_ratios_to_the_reference_and_no_vit_row_in_the_main_table(
    tmp_path, no_repo_noise_study
):
    pytest.importorskip("tabulate")
    pytest.importorskip("matplotlib")
    from test_table import CPU, make, write_all

    from bench.studies.table import render

    three = dict(profile="cpu", machine=CPU, repeats=3)  # three processes a cell: intervals of their own
    results = write_all(
        tmp_path / "results",
        [
            make("jax", "vit", "fit", 2, 100.0, **three),
            make("torch", "vit", "fit", 2, 150.0, **three),
            make("torch", "vit", "fit", 2, 120.0, variant="sdpa", **three),
            make("torch", "vit", "fit", 2, 300.0, variant="loader-workers-0", **three),
            make("torch", "vit", "fit", 2, 151.0, variant="matmul-high", **three),
            make("jax", "vit", "fit", 2, 230.0, variant="loader-workers-0", **three),
            make("jax", "gemma_2b", "fit", 1, 20000.0, profile="cpu", machine=CPU),
        ],
    )
    render(results, tmp_path / "RESULTS.md")
    tuning = (tmp_path / "TUNING.md").read_text()
    # reference ms / variant ms with its interval, and what the variant is
    sdpa = table_row(tuning, "sdpa")
    assert sdpa[6].startswith("1.25× (") and sdpa[7] == "faster", sdpa  # 150 / 120
    loader = table_row(tuning, "torch", "loader-workers-0")
    assert loader[6].startswith("0.500× (") and loader[7] == "slower", loader  # 150 / 300
    assert table_row(tuning, "matmul-high")[7] == "same"  # 150 / 151, within 5% with confidence
    # published findings: JAX over torch, as published both fed by the DataLoader: 300 / 230, JAX faster: holds
    speedup = table_row(tuning, "dataloader workers 0")
    assert speedup[4].startswith("1.30× (") and speedup[5] == "holds", speedup
    assert "ViT fit, torch (a torch DataLoader) ms / JAX (a torch DataLoader) ms" in speedup
    # the gap does not close with SDPA: 120 / 100, JAX still 20% faster, where the published is about equal
    gap = table_row(tuning, "sdpa_closes_gap")
    assert gap[4].startswith("1.20× (") and gap[5] == "does not hold here (ours: jax faster)", gap
    assert "CPU only: the published figure is from one NVIDIA L4" in tuning
    assert table_row(tuning, "batch 4")[4:7] == [
        "0.05 samples/s",
        "not comparable (a throughput of other hardware)",
        "Gemma 2B LoRA fit on jax at batch 1 (the published batch 4 did not run here)",
    ]
    page = (tmp_path / "RESULTS.md").read_text()
    assert "Published rows not measured" not in page and "ViT-Base/16 fit | 2 (not a published row)" not in page
    assert "[tuning study](TUNING.md)" in page


def test_one_process_cells_say_why_their_verdict_is_inconclusive(tmp_path, no_repo_noise_study):
    pytest.importorskip("tabulate")
    pytest.importorskip("matplotlib")

    from test_table import CPU, make, write_all

    from bench.studies.table import render

    write_all(tmp_path, [make("torch", "vit", "fit", 2, 150.0, profile="cpu", machine=CPU),
                         make("torch", "vit", "fit", 2, 120.0, profile="cpu", machine=CPU, variant="sdpa")])
    render(tmp_path, tmp_path / "RESULTS.md")
    sdpa = table_row((tmp_path / "TUNING.md").read_text(), "sdpa")
    assert sdpa[6] == "1.25×" and sdpa[7].startswith(  # no interval that covers steps only
        f"inconclusive ({claims.ONE_PROCESS_CELL}"
    ), sdpa
    write_noise_study(tmp_path, CPU, "cpu", log_sd=0.03, dof=20)
    render(tmp_path, tmp_path / "RESULTS.md")
    sdpa = table_row((tmp_path / "TUNING.md").read_text(), "sdpa")
    assert sdpa[6].startswith("1.25× (") and sdpa[7] == "faster", sdpa


def test_a_published_speedup_holds_by_its_interval():
    import math

    from bench.base.stats import Ratio, t_quantile
    from bench.studies.tuning.page import finding_verdict, published_findings

    def between(low, high):  # a ratio whose 95% interval is [low, high]
        return Ratio(math.sqrt(low * high), math.log(high / low) / 2 / t_quantile(0.975, math.inf), math.inf)

    speedup = next(f for f in published_findings() if f["finding"] == "matmul_precision_high_speedup")  # 1.29x
    assert finding_verdict(speedup, between(1.1, 1.4)) == "holds"  # wholly above 1: the tuning faster
    assert finding_verdict(speedup, between(0.97, 1.03)) == "does not hold here (ours: about equal)"
    assert finding_verdict(speedup, between(0.7, 0.9)) == "does not hold here (ours: without it faster)"
    assert finding_verdict(speedup, between(0.98, 1.2)).startswith("inconclusive (the interval contains 1×")
    equal = next(f for f in published_findings() if f["finding"] == "sdpa_closes_gap")  # ~1.0
    assert finding_verdict(equal, between(0.97, 1.04)) == "holds"
    assert finding_verdict(equal, between(0.9, 1.1)).startswith("inconclusive")
    assert finding_verdict(equal, None) == "not measured"


def test_a_variant_ratio_of_cells_measured_hours_apart_says_so(tmp_path, no_repo_noise_study):
    pytest.importorskip("tabulate")
    pytest.importorskip("matplotlib")
    from test_table import CPU, make, write_all

    from bench.studies.table import render

    write_all(
        tmp_path,
        [
            make("torch", "vit", "fit", 2, 4000.0, profile="cpu", machine=CPU, created="2026-11-24T01:50:00+00:00",
                 repeats=3),
            make(
                "torch",
                "vit",
                "fit",
                2,
                4400.0,
                profile="cpu",
                machine=CPU,
                variant="matmul-high",
                created="2026-11-24T01:52:00+00:00",
                repeats=3,
            ),
            make(
                "torch",
                "vit",
                "fit",
                2,
                1600.0,
                profile="cpu",
                machine=CPU,
                variant="sdpa",
                created="2026-11-24T11:14:00+00:00",
                repeats=3,
            ),
        ],
    )
    render(tmp_path, tmp_path / "RESULTS.md")
    tuning = (tmp_path / "TUNING.md").read_text()
    high = table_row(tuning, "matmul-high")
    assert high[6].startswith("0.909× (") and high[7] == "slower", high  # same session: decided
    sdpa = table_row(tuning, "sdpa")
    assert sdpa[6] == "2.50×" and sdpa[7] == "inconclusive (measured 9 h apart)", sdpa


def probe(backend: str, code: str, *args: str) -> dict:
    python = env_python(backend)
    env = {**cell_environment(backend), "JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [str(python), "-c", code, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


COUNTS = """
import importlib, json
from bench.catalogue.registry import get_model
out = {}
for model in ("vit", "gemma_2b"):
    impl = importlib.import_module(f"bench.models.{model}.{family}")
    out[model] = sum(impl.parameter_counts(get_model(model).shape("paper")).values())
print(json.dumps(out))
"""


@pytest.mark.envs
@pytest.mark.extended  # make test-extended: make test runs these builds as cells (test_vit_on_jax_..., the float32 ViT)
def test_the_study_models_have_the_same_parameters_on_keras_and_native_pytorch():
    keras = probe("jax", COUNTS.replace("{family}", "keras"))
    native = probe("native-torch", COUNTS.replace("{family}", "native_torch"))
    assert keras == native, (keras, native)
    # ViT: torchvision's vit_b_16 (86,567,656) less its class token and that token's position embedding.
    assert keras["vit"] == 86_567_656 - 2 * 768
    assert keras["gemma_2b"] == 2_506_172_416  # keras-hub gemma_2b_en / google/gemma-2b


SDPA_PARITY = """
import json, os
import numpy as np, keras, torch
from bench.models.vit.keras import sdpa_attention_class
out = {}
for dtype in ("float32", "bfloat16"):
    keras.utils.set_random_seed(0)
    x = np.random.default_rng(0).standard_normal((2, 49, 64)).astype("float32")
    plain = keras.layers.MultiHeadAttention(4, 16, dropout=0.1, dtype=dtype)
    sdpa = sdpa_attention_class(keras)(4, 16, dropout=0.1, dtype=dtype)
    a = plain(x, x, training=False)
    sdpa(x, x)
    sdpa.set_weights(plain.get_weights())
    b = sdpa(x, x, training=False)
    a, b = (keras.ops.convert_to_numpy(keras.ops.cast(t, "float32")) for t in (a, b))
    out[dtype] = float(np.max(np.abs(a - b)) / np.max(np.abs(a)))
print(json.dumps(out))
"""


@pytest.mark.envs
def test_the_sdpa_attention_layer_computes_what_keras_attention_does():
    errors = probe("torch", SDPA_PARITY)
    assert errors["float32"] < 1e-5, errors
    assert errors["bfloat16"] < 2e-2, errors  # bf16 keeps 8 bits of mantissa: ~0.4% per rounding


FLOAT32_COMPILED_VIT_PREDICT = """
import dataclasses, json
from bench.catalogue.registry import Cell, get_model
spec = get_model("vit")
shape = dataclasses.replace(spec.shape("smoke"), dtype="float32")  # the cpu profile's dtype at smoke widths
workload = spec.implementation("native-torch").create(Cell("native-torch", "vit", "predict", 2, "smoke", "compiled", 1, 3), shape)
workload.setup()
print(json.dumps({"logits": list(workload.step().shape), "compiled": workload.compiled}))
"""


@pytest.mark.envs
def test_the_float32_vit_compiles_for_predict_on_native_pytorch():
    # found by the cpu profile's full-width run: in float32 eval nn.MultiheadAttention takes its fused fast path,
    # which inductor failed to compile under inference_mode; smoke (mixed_bfloat16) never took that path
    out = probe("native-torch", FLOAT32_COMPILED_VIT_PREDICT)
    assert out == {"logits": [2, get_model("vit").shape("smoke").num_classes], "compiled": True}


def run_cells(tmp_path, *args: str):
    from bench.record.results import load_all

    results = tmp_path / "results"
    out = subprocess.run(
        # one process a cell: these tests check what each variant changed, not the spread across processes
        [sys.executable, "-m", "bench", *smoke_run("--repeats", "1", *args, results=results)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-3000:]
    return {r.cell.variant: r for r in load_all(results)}


@pytest.mark.envs
@pytest.mark.slow
@pytest.mark.extended  # make test-extended: the variants' code path is the one test_vit_on_jax_and_gemma_2b_... runs in make test
def test_vit_variants_on_keras_torch_run_and_record_what_they_changed(tmp_path):
    env_python("torch")
    found = run_cells(
        tmp_path,
        "--backend",
        "torch",
        "--model",
        "vit",
        "--task",
        "fit",
        "--variant",
        "default,sdpa,attention-dropout-0,matmul-high,loader-workers-1",
    )
    assert all(r.status == "ok" for r in found.values()), {v: r.message for v, r in found.items()}
    settings = {v: r.runs[0].settings for v, r in found.items()}
    assert settings["sdpa"]["attention_class"] == "SDPAMultiHeadAttention"
    assert (
        settings["default"]["attention_class"] == "MultiHeadAttention"
        and settings["default"]["attention_dropout"] == 0.1
    )
    assert settings["attention-dropout-0"]["attention_dropout"] == 0.0
    assert (
        settings["matmul-high"]["float32_matmul_precision"] == "high"
        and settings["default"]["float32_matmul_precision"] == "highest"
    )
    assert settings["loader-workers-1"]["loader_workers"] == 1 and settings["default"]["loader_workers"] is None
    assert all(s["dtype_policy"] == "mixed_bfloat16" for s in settings.values())


@pytest.mark.envs
@pytest.mark.slow
@pytest.mark.extended  # make test-extended: native ViT's predict compiles in make test (test_the_float32_vit_compiles_...)
def test_vit_and_bert_variants_on_native_pytorch_run_and_record_what_they_changed(tmp_path):
    env_python("native-torch")
    found = run_cells(
        tmp_path,
        "--backend",
        "native-torch",
        "--model",
        "vit",
        "--task",
        "predict",
        "--variant",
        "eager,compiled,matmul-high,loader-workers-1",
    )
    assert all(r.status == "ok" for r in found.values()), {v: r.message for v, r in found.items()}
    settings = {v: r.runs[0].settings for v, r in found.items()}
    assert settings["compiled"]["compiled_graphs"] > 0 and settings["eager"]["compiled_graphs"] == 0
    assert settings["matmul-high"]["float32_matmul_precision"] == "high"
    assert settings["loader-workers-1"]["loader_workers"] == 1 and settings["eager"]["autocast"] == "bfloat16"
    bert = run_cells(
        tmp_path / "bert", "--backend", "native-torch", "--model", "bert", "--task", "predict", "--variant", "sdpa"
    )
    assert bert["sdpa"].status == "ok" and bert["sdpa"].runs[0].settings["attention_implementation"] == "sdpa"
    gemma = run_cells(tmp_path / "gemma", "--backend", "native-torch", "--model", "gemma_2b", "--variant", "eager")[
        "eager"
    ]
    assert gemma.status == "ok", gemma.message
    settings = gemma.runs[0].settings
    assert (settings["optimizer"], settings["trainer_bf16_autocast"], settings["lora_rank"]) == ("sgd", True, 4)


@pytest.mark.envs
@pytest.mark.slow
def test_vit_on_jax_and_gemma_2b_with_the_fused_attention_variant(tmp_path):
    env_python("jax")
    found = run_cells(
        tmp_path, "--backend", "jax", "--model", "vit", "--task", "fit", "--variant", "default,attention-dropout-0"
    )
    assert len(found) == 2 and all(r.status == "ok" for r in found.values()), {v: r.message for v, r in found.items()}
    gemma = run_cells(tmp_path / "gemma", "--backend", "jax", "--model", "gemma_2b", "--variant", "fused-attention")
    settings = gemma["fused-attention"].runs[0].settings
    assert gemma["fused-attention"].status == "ok", gemma["fused-attention"].message
    assert settings["fused_attention_asked"] is True and settings["variant"] == "fused-attention"
    assert (settings["optimizer"], settings["backbone_dtype_policy"], settings["lora_rank"]) == (
        "SGD",
        "mixed_bfloat16",
        4,
    )
