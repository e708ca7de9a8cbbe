"""Every number against the machine's limit: the work counts per model family against hand-computable
shapes, the ceilings probe and where a run records it, MFU and bandwidth use, the published table against the A100."""

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
from committed import committed_results
from fakes import bench_env, make_fake_envs

from bench.base.published import published_ms, published_rows
from bench.catalogue.backends import BACKENDS
from bench.catalogue.hardware import A100_40GB, H100_SXM, H200_SXM, datasheet_for
from bench.catalogue.registry import MODELS, get_model, plan_cells
from bench.catalogue.work import cell_work
from bench.measure import ceiling_probe as probe
from bench.record.results import Result, Run, load_all
from bench.roofline.published import published_cells
from bench.roofline.utilisation import use_of
from bench.run.ceilings import best_of, measure_run

REPO = Path(__file__).resolve().parent.parent
PUBLISHED_MODELS = list(dict.fromkeys(r.model for r in published_rows()))


def shape(model, **changes):
    return dataclasses.replace(get_model(model).shape("smoke"), **changes)


# ---------------------------------------------------------------- counts, by hand


def test_bert_counts_a_tiny_encoder_by_hand():
    s = shape("bert", num_layers=1, num_heads=2, hidden_dim=4, intermediate_dim=8, sequence_length=2, num_classes=2)
    # one layer, T = 2 tokens, span 2, H = 4, I = 8: Q K V O 4 x 2TH^2 = 256, scores and A V 4 T S H = 64,
    # MLP 2 x 2 T H I = 256; pooler 2 H^2 = 32; head 2 H C = 16
    assert cell_work("bert", "keras", "predict", 1, s).flops == 256 + 64 + 256 + 32 + 16
    assert cell_work("bert", "native-torch", "fit", 1, s).flops == 3 * (256 + 64 + 256 + 32 + 16)


def test_a_causal_lm_generate_counts_the_prefill_and_every_decode_step_but_the_last():
    s = shape(
        "gemma",
        num_layers=1,
        num_query_heads=1,
        num_key_value_heads=1,
        hidden_dim=2,
        intermediate_dim=3,
        head_dim=2,
        vocabulary_size=5,
        prompt_length=2,
        generate_length=4,
    )
    # matmul weights per token: q 2x2, k 2x2, v 2x2, o 2x2, gate/up/down 3 x 2x3 = 34 -> 68 FLOPs; logits 2 x 2 x 5 = 20
    # prefill: 2 tokens x 68 + scores over 2 keys (4 x 2 x 2 x 2 = 32) + one logit row 20 = 188
    # decode: 4 - 2 - 1 = 1 step at position 2 (3 keys): 68 + 4 x 3 x 2 = 24 + 20 = 112
    w = cell_work("gemma", "native-torch", "generate", 1, s)
    assert w.flops == 188 + 112 and w.forward_passes == 2
    # bytes: (34 + the tied 5x2 table + 2 norms of 2 per layer + the final norm 2) bf16 weights per pass, and the step
    # reads the K and V of 2 earlier positions: 2 x 1 layer x 1 head x 2 dims x 2 bytes x 2 positions = 16
    weights = (34 + 10 + 4 + 2) * 2
    assert w.bytes == 2 * weights + 16


def test_lora_fit_is_counted_as_each_family_computes_it():
    s = get_model("mistral").shape("paper")
    native, keras = cell_work("mistral", "native-torch", "fit", 8, s), cell_work("mistral", "keras", "fit", 8, s)
    full_forward = 2 * 8 * s.fit_sequence_length * get_model_parameters("mistral", s)
    # a LoRA fit computes about 2 x the forward (activation gradients only), not the 3 x of full training
    assert 1.9 < native.flops / full_forward < 2.3
    # Keras merges the adapters into the q and v kernels, whose full weight gradients it then computes (peft's
    # adapters, which the native count has instead, are under 1% of that)
    qv = s.hidden_dim * (s.num_query_heads + s.num_key_value_heads) * s.head_dim
    assert keras.flops - native.flops == pytest.approx(s.num_layers * 2 * 8 * s.fit_sequence_length * qv, rel=0.01)


def get_model_parameters(model, s):
    from importlib import import_module

    return import_module(f"bench.models.{model}.work").parameters(s)


def test_sam_counts_windowed_attention_on_padded_tokens():
    s = shape(
        "sam",
        image_size=96,
        patch_size=16,
        num_layers=1,
        global_attention_layers=[],
        window_size=4,
        hidden_dim=4,
        num_heads=1,
        mlp_dim=8,
        embed_dim=4,
        prompt_points=[[1.0, 1.0]],
        prompt_labels=[1],
    )
    side, padded = 6, 8  # 96 / 16 = 6 patches a side, padded to 8 for windows of 4
    patch = 2 * side * side * 16 * 16 * 3 * 4
    attention = 2 * padded**2 * 4 * 12 + 2 * padded**2 * 4 * 4 + 4 * padded**2 * 16 * 4 + 2 * padded**2 * 8 * 4
    mlp = 2 * 2 * side * side * 4 * 8
    neck = 2 * side * side * 4 * 4 + 2 * side * side * 9 * 4 * 4
    assert cell_work("sam", "native-torch", "predict", 1, s).flops == patch + attention + mlp + neck
    assert cell_work("sam", "native-torch", "fit", 1, s).flops == 3 * (patch + attention + mlp + neck) - patch


def test_stable_diffusion_walks_the_v1_architecture_to_its_parameter_count():
    from bench.models.stable_diffusion.work import parameters

    # diffusers' SD v1 UNet and AutoencoderKL encoder (bench/models/stable_diffusion/workload.toml: UNet 859.5M)
    assert parameters(get_model("stable_diffusion").shape("paper")) == {"unet": 859_520_964, "vae_encoder": 34_163_592}
    s = get_model("stable_diffusion").shape("paper")
    step = cell_work("stable_diffusion", "native-torch", "predict", 1, s)
    assert step.flops == 2 * cell_work("stable_diffusion", "native-torch", "predict", 1, s).flops / 2  # two UNet passes
    assert cell_work("stable_diffusion", "native-torch", "predict", 3, s).flops == 3 * step.flops


def test_stable_diffusion_counts_a_one_channel_vae_encoder_by_hand():
    s = shape("stable_diffusion", resolution=8, vae_block_out_channels=[1, 1, 1, 1])
    conv = lambda side, c_in=1, c_out=1: 2 * side * side * 9 * c_in * c_out  # noqa: E731  (3x3)
    levels = sum(4 * conv(side) for side in (8, 4, 2, 1)) + conv(4) + conv(2) + conv(1)  # 2 resnets a level; 3 downs
    mid = 2 * 2 * conv(1) + 4 * 2 + 4  # 2 resnets; q, k, v, out of one token and one channel; scores and A V
    forward = conv(8, 3) + levels + mid + conv(1, 1, 8)
    assert forward == 10182
    assert cell_work("stable_diffusion", "native-torch", "fit", 1, s).flops == 3 * forward - conv(8, 3)


@pytest.mark.parametrize("profile", ["smoke", "paper"])
def test_every_supported_cell_of_the_matrix_has_a_count(profile):
    """Every model of the published table has its work (a model of its own may have none: no MFU, docs/ROOFLINE.md)."""
    for cell in plan_cells(profile, models=PUBLISHED_MODELS):
        if get_model(cell.model).why_cell_unsupported(cell):
            continue
        work = cell_work(
            cell.model, BACKENDS[cell.backend].family, cell.task, cell.batch_size, get_model(cell.model).shape(profile)
        )
        assert work is not None and work.flops > 0 and work.bytes > 0, cell.key


def test_parameter_counts_agree_with_the_plans_abstract_builds():
    """The plan's counts (built abstractly in the envs, .venvs/plan-counts.json) where this checkout has them."""
    cache = REPO / ".venvs" / "plan-counts.json"
    if not cache.exists():
        pytest.skip("no plan counts cached (make plan)")
    counts = json.loads(cache.read_text())
    expect = {"bert": "classifier", "gemma": "causal_lm", "mistral": "causal_lm"}
    for model, part in expect.items():
        entry = counts.get(f"{model}/native-torch/paper")
        if entry:
            assert get_model_parameters(model, get_model(model).shape("paper")) == entry["counts"][part], model


@pytest.mark.envs
def test_the_formulas_agree_with_torchs_flop_counter():
    python = REPO / ".venvs" / "native-torch" / "bin" / "python"
    if not python.exists():
        pytest.skip("native-torch env not built")
    out = subprocess.run(
        [str(python), "-m", "bench.measure.torch_counter", "smoke"], cwd=REPO, capture_output=True, text=True, timeout=600
    )
    line = next(text for text in out.stdout.splitlines() if text.startswith("CROSSCHECK "))
    checks = json.loads(line[len("CROSSCHECK ") :])["checks"]
    assert {c["model"] for c in checks} == {"bert", "gemma", "mistral", "sam", "stable_diffusion", "vit"}
    for c in checks:
        assert "error" not in c, c
        # SAM predict: the formula leaves the mask decoder out, which at the smoke shape is 16% (0.06% at paper)
        tolerance = 0.2 if c["model"] == "sam" and "predict" in c["check"] else 1e-3
        assert abs(c["ratio"] - 1) <= tolerance, c


@pytest.mark.envs
def test_xla_counts_at_least_the_model_flops_of_the_keras_step():
    """XLA's cost analysis counts elementwise work too: its count is the larger, by under 20% at the smoke shape."""
    python = REPO / ".venvs" / "jax" / "bin" / "python"
    if not python.exists():
        pytest.skip("jax env not built")
    out = subprocess.run(
        [str(python), "-m", "bench.measure.xla_counter", "smoke", "bert"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    line = next(text for text in out.stdout.splitlines() if text.startswith("XLACHECK "))
    checks = json.loads(line[len("XLACHECK ") :])["checks"]
    assert len(checks) == 2
    for c in checks:
        assert "error" not in c and 0.8 <= c["ratio"] <= 1.0, c
    from bench.base.provenance import gpus

    if not gpus():  # make flops-check on a machine without a GPU once printed the CUDA plugin's cuInit traceback
        assert "Traceback" not in out.stderr, out.stderr


# ---------------------------------------------------------------- ceilings


def test_the_numpy_probe_gives_medians_with_spread():
    out = probe.measure("numpy")
    mm, triad = out["matmul"]["float32"], out["triad"]
    assert 0 < mm["p10"] <= mm["median"] <= mm["p90"] and mm["n"] >= probe.MIN_REPEATS and triad["median"] > 0


def test_a_failing_probe_is_recorded_not_raised(monkeypatch):
    monkeypatch.setitem(probe.PROBES, "torch", lambda: 1 / 0)
    assert probe.measure("torch")["error"].startswith("ZeroDivisionError")


def test_datasheets_are_found_by_the_gpus_name():
    assert datasheet_for("NVIDIA A100-SXM4-40GB") is A100_40GB
    assert datasheet_for("NVIDIA H100 80GB HBM3") is H100_SXM
    assert datasheet_for("NVIDIA H200") is H200_SXM and datasheet_for("NVIDIA H200 NVL") is None  # the PCIe card
    assert datasheet_for("NVIDIA A100-SXM4-80GB") is None and datasheet_for(None) is None
    assert A100_40GB.flops["bfloat16"] == 312e12 and A100_40GB.bandwidth == 1555e9


def test_a_machine_file_keeps_the_best_of_its_repeats():
    probes = [{"host": {"matmul": {"float32": {"median": m}}, "triad": {"median": 1.0}}} for m in (3.0, 9.0, 5.0)]
    assert best_of(probes)["host"]["matmul"]["float32"]["median"] == 9.0


def test_a_run_records_the_host_ceilings_and_a_failed_framework_probe_costs_it_nothing(tmp_path):
    venvs = make_fake_envs(tmp_path / "venvs", ["jax"])
    results = tmp_path / "results"
    env = {**bench_env(venvs), "BENCH_CEILINGS": "1"}  # a fake env's python cannot probe: recorded as an error
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "run",
            "--profile",
            "smoke",
            "--results-dir",
            str(results),
            "--backend",
            "jax",
            "--model",
            "bert",
            "--task",
            "predict",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stderr + out.stdout
    (result,) = load_all(results)
    ceilings = result.provenance["ceilings"]
    assert ceilings["host"]["matmul"]["float32"]["median"] > 0 and "error" in ceilings["jax"]
    assert (
        result.to_dict()["work"]["flops"]
        == cell_work("bert", "keras", "predict", 2, get_model("bert").shape("smoke")).flops
    )


def test_frameworks_are_probed_on_a_gpu_and_on_a_cpu_only_when_asked(monkeypatch):
    monkeypatch.setattr(
        "bench.run.ceilings.run_probe", lambda backend, python, framework: {"framework": framework, "asked": True}
    )
    monkeypatch.delenv("BENCH_CEILINGS", raising=False)
    assert set(measure_run({"jax": Path("p")}, {"gpus": []})) == {"host"}
    gpu = measure_run({"jax": Path("p"), "native-torch": Path("q")}, {"gpus": [{"name": "NVIDIA A100-SXM4-40GB"}]})
    assert {"host", "jax", "torch"} <= set(gpu) and gpu["datasheet"]["bandwidth"] == A100_40GB.bandwidth


# ---------------------------------------------------------------- MFU and bandwidth use


def result_with(ceilings, backend="jax", model="bert", task="predict", ms=10.0, precision=None):
    from bench.catalogue.registry import Cell

    cell = Cell(backend, model, task, 2, "smoke", "default" if backend != "native-torch" else "eager", 1, 3)
    run = Run(status="ok", timed_ms=[ms] * 3, framework={"precision": precision or {}})
    return Result(cell, [run], "ms/step", {"git": {}, "machine": {}, "ceilings": ceilings}, "2026-11-25T03:00:00+00:00")


def test_on_a_cpu_mfu_is_taken_against_the_processors_best_matmul_at_the_steps_dtype():
    ceilings = {
        "host": {"matmul": {"float32": {"median": 1e9}}, "triad": {"median": 1e9}},
        "jax": {"matmul": {"float32": {"median": 2e9}, "bfloat16": {"median": 4e9}}, "triad": {"median": 5e9}},
    }
    use = use_of(result_with(ceilings))
    flops = cell_work("bert", "keras", "predict", 2, get_model("bert").shape("smoke")).flops
    assert use.flops_per_s == pytest.approx(flops / 0.010) and use.mfu == pytest.approx(flops / 0.010 / 2e9)
    assert use.ceiling.what == "JAX FP32 matmul, the best of this run's probes"
    gen = use_of(result_with(ceilings, model="gemma", task="generate"))
    assert gen.ceiling.flops == 4e9 and gen.bandwidth_use == pytest.approx(gen.work.bytes / 0.010 / 5e9) and gen.decode
    # on a CPU the ceiling is the processor's, not one framework's: a torch cell is taken against JAX's faster matmul
    # (a framework's 1024-square probe is not its limit there: PyTorch's convolutions outran its own)
    torch = use_of(result_with({**ceilings, "torch": {"matmul": {"float32": {"median": 1.5e9}}}}, backend="torch"))
    assert torch.ceiling.flops == 2e9 and torch.ceiling.what == "JAX FP32 matmul, the best of this run's probes"
    # only NumPy's float32 probe (a CPU run's): the bfloat16 step is taken against it, said so
    only_host = use_of(result_with({"host": ceilings["host"]}, model="gemma", task="generate"))
    assert only_host.ceiling.flops == 1e9 and only_host.ceiling.what.startswith("NumPy FP32 matmul")
    assert "for its bfloat16 work" in only_host.ceiling.what


def test_the_machines_quiet_ceilings_file_comes_before_the_runs_loaded_probe():
    run_probe = {"host": {"matmul": {"float32": {"median": 1e9}}, "triad": {"median": 1e9}}}
    quiet = {
        "host": {"matmul": {"float32": {"median": 2e9}}, "triad": {"median": 3e9}},
        "tensorflow": {"matmul": {"float32": {"median": 5e9}}, "triad": {"median": 4e9}},
    }
    use = use_of(result_with(run_probe), quiet)
    assert use.ceiling.flops == 5e9 and use.ceiling.bandwidth == 4e9
    assert use.ceiling.what == "TensorFlow FP32 matmul, the best of the machine's ceilings file"


def test_a_cell_above_its_ceiling_is_flagged_never_printed_as_a_share():
    from bench.report.roofline import EXCEEDS, use_text

    flops = cell_work("bert", "keras", "predict", 2, get_model("bert").shape("smoke")).flops
    below = use_of(result_with({"host": {"matmul": {"float32": {"median": flops / 0.010 * 2}}}}))
    above = use_of(result_with({"host": {"matmul": {"float32": {"median": flops / 0.010 / 1.6}}}}))
    assert not below.exceeds and use_text(below).startswith("50% · ")
    assert above.exceeds and use_text(above) == f"{EXCEEDS} · {use_text(below).split(' · ')[1]}"
    assert "160%" not in use_text(above)


def test_on_a_known_gpu_the_datasheet_fraction_follows_the_recorded_float32_mode():
    ceilings = {"datasheet": A100_40GB.to_dict()}
    tf32 = use_of(result_with(ceilings, precision={"float32_matmul": "tf32"}))
    fp32 = use_of(result_with(ceilings, precision={"float32_matmul": "float32"}))
    assert tf32.datasheet_mfu == pytest.approx(tf32.flops_per_s / 156e12)
    assert fp32.datasheet_mfu == pytest.approx(fp32.flops_per_s / 19.5e12) and fp32.mfu is None


def test_an_old_result_without_ceilings_or_work_is_read_and_counted(tmp_path):
    # the first full-size run's file, from before results carried their work and ceilings (kept in history/)
    first = min((committed_results() / "cpu-full").rglob("history/jax__bert__fit__bs2__default.*.json"))
    old = json.loads(first.read_text())
    assert "work" not in old and "ceilings" not in old["provenance"]
    result = Result.from_dict(old)
    assert use_of(result, {"host": {"matmul": {"float32": {"median": 1e11}}, "triad": {"median": 1e10}}}).mfu > 0


# ---------------------------------------------------------------- the published table


def test_every_published_figure_is_set_against_the_a100():
    figures = [ms for row in published_ms().values() for ms in row.values() if ms]
    cells = published_cells()
    assert len(cells) == len(figures)
    gemma = next(
        c for c in cells if c.model == "gemma" and c.task == "generate" and c.batch_size == 1 and c.backend == "jax"
    )
    work = cell_work("gemma", "keras", "generate", 1, get_model("gemma").shape("paper"))
    assert gemma.bandwidth_use(A100_40GB) == pytest.approx(work.bytes / (gemma.ms / 1e3) / 1555e9)
    bert = next(c for c in cells if c.model == "bert" and c.task == "fit" and c.backend == "tensorflow")
    assert bert.mfu(A100_40GB) == pytest.approx(bert.work.flops / (bert.ms / 1e3) / 156e12)  # float32 at TF32


def test_the_report_has_the_published_section_and_every_models_rule_is_in_its_folder():
    from bench.report.roofline import published_section

    text = "\n".join(published_section())
    assert "Decode (generate)" in text and "Median MFU of each framework" in text
    for model in (m for m in MODELS if m in PUBLISHED_MODELS or get_model(m).study):  # another may have none
        rule = REPO / "bench" / "models" / model / "work.py"
        assert rule.exists(), model


def test_compare_divides_each_machines_speed_out_of_the_move(tmp_path):
    from bench.report.compare import compare, markdown

    def ceilings(flops):
        return {"host": {"matmul": {"float32": {"median": flops}}, "triad": {"median": 1e9}}}

    # B is twice as slow on a machine whose measured ceiling is 3/4 of A's: of the 2x, 1.5x is left once each
    # machine's speed is divided out (A's MFU / B's MFU = (1 / 2) / (3 / 4) ... = 2 x 0.75)
    result_with(ceilings(2e9), backend="torch", ms=10.0).write(tmp_path / "a")
    result_with(ceilings(1.5e9), backend="torch", ms=20.0).write(tmp_path / "b")
    (pair,) = compare(tmp_path / "a", tmp_path / "b").pairs
    assert pair.ratio == pytest.approx(2.0) and pair.mfu_ratio == pytest.approx(1.5)
    assert "2.00× (2.00–2.00) · MFU 1.50×" in markdown(compare(tmp_path / "a", tmp_path / "b"))


def test_a_machine_file_names_the_commit_that_measured_it(tmp_path, monkeypatch):
    """make ceilings writes a file the report reads like a result: it names its code's commit as a result does."""
    from bench.run import ceilings

    probe = {"host": {"matmul": {"float32": {"median": 1e11}}, "triad": {"median": 1e10}}}
    monkeypatch.setattr(ceilings, "measure_run", lambda *a, **kw: probe)
    path = ceilings.measure_machine(tmp_path, tmp_path / "no-venvs", echo=lambda line: None, repeats=1)
    git = json.loads(path.read_text())["provenance"]["git"]
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    assert git["commit"] == head and git["source"] == "git"


def test_a_comparison_gives_no_mfu_ratio_where_a_side_exceeds_its_ceiling():
    from bench.report.compare import Pair

    flops = cell_work("bert", "keras", "predict", 2, get_model("bert").shape("smoke")).flops
    roomy = {"host": {"matmul": {"float32": {"median": flops / 0.010 * 2}}}}
    a, b = result_with(roomy), result_with(roomy, ms=20.0)
    assert Pair(None, a, b).mfu_ratio == pytest.approx(2.0)
    tight = result_with({"host": {"matmul": {"float32": {"median": flops / 0.010 / 1.6}}}})
    assert Pair(None, tight, b).mfu_ratio is None and Pair(None, a, tight).mfu_ratio is None


H200_TORCH_BERT_FIT = "env-current/py3.12-torch2.11.0-jax0.11.2-22dd5d6b/paper/1x-nvidia-h200/stack-current/" \
    "torch__bert__fit__bs32__default__stack-current.json"


def test_a_cell_is_taken_against_its_own_frameworks_ceiling_at_the_mode_it_computed_in():
    """The committed H200 Keras 3 PyTorch BERT fit ran its float32 matmuls in full FP32 (allow_tf32 off, recorded):
    its MFU is against PyTorch's own float32 matmul probe of that run (FP32), never JAX's (TF32, 6.6x faster)."""
    from bench.record.results import load

    result = load(committed_results() / H200_TORCH_BERT_FIT)
    probes = result.provenance["ceilings"]
    torch_fp32, jax_tf32 = probes["torch"]["matmul"]["float32"]["median"], probes["jax"]["matmul"]["float32"]["median"]
    assert jax_tf32 > 5 * torch_fp32  # the two modes the run's probes measured
    use = use_of(result)
    assert use.ceiling.flops == pytest.approx(torch_fp32) and "PyTorch FP32" in use.ceiling.what, use.ceiling
    assert use.mfu == pytest.approx(result.work_counts()["flops"] / (result.figure() / 1e3) / torch_fp32)
    assert 0.5 < use.mfu < 1


def test_a_gpu_cell_at_a_precision_variant_is_set_against_its_framework_at_that_mode():
    """A probe from today times a GPU's float32 matmul at each mode (matmul_modes): a PyTorch cell run with
    VARIANT=matmul-high (TF32, recorded) is set against PyTorch's TF32 rate, its default cell against its FP32 rate;
    a GPU cell never against the host's NumPy probe."""
    h200 = {"name": "NVIDIA H200", "index": "0", "uuid": "GPU-x"}
    torch_probe = {
        "device": "NVIDIA H200", "precision": {"cuda_matmul_allow_tf32": False},
        "matmul": {"float32": {"median": 5e13, "mode": "float32"}, "bfloat16": {"median": 7e14, "mode": "bfloat16"}},
        "matmul_modes": {"float32": {"median": 5e13}, "tf32": {"median": 3e14}}, "triad": {"median": 4e12},
    }  # fmt: skip
    ceilings = {"host": {"device": "cpu", "matmul": {"float32": {"median": 9e14}}}, "torch": torch_probe}

    def use(precision):
        result = result_with(ceilings, backend="torch", precision=precision)
        result.provenance["machine"] = {"gpus": [h200]}
        return use_of(result)

    tf32 = use({"float32_matmul": "tf32", "float32_convolution": "tf32", "setting": "float32_matmul_precision high"})
    fp32 = use({"float32_matmul": "float32", "float32_convolution": "tf32", "setting": "highest"})
    assert tf32.ceiling.flops == 3e14 and tf32.ceiling.what == "PyTorch TF32 matmul, this run's probes"
    assert fp32.ceiling.flops == 5e13 and tf32.ceiling.datasheet_flops == H200_SXM.flops["tf32"]
    # on a GPU its own framework's, even where another's is faster at that mode
    jax_faster = {**ceilings, "jax": {**torch_probe, "matmul_modes": {"float32": {"median": 6e13}}}}
    result = result_with(jax_faster, backend="torch", precision={"float32_matmul": "float32", "setting": "x"})
    result.provenance["machine"] = {"gpus": [h200]}
    assert use_of(result).ceiling.flops == 5e13


def test_no_published_cell_is_above_the_peak_of_the_modes_it_computed_in():
    """PyTorch's float32 step: matmuls in full FP32, convolutions in TF32 (its defaults); StableDiffusion's
    convolutions, most of its work, taken at FP32 alone would put it at 1.7x the A100's FP32 peak."""
    cells = [c for c in published_cells() if not c.decode]
    assert all(0 < c.mfu(A100_40GB) < 1 for c in cells), [(c.model, c.task, c.backend) for c in cells
                                                           if c.mfu(A100_40GB) >= 1]  # fmt: skip
    sd = next(c for c in cells if (c.model, c.task, c.backend) == ("stable_diffusion", "fit", "torch"))
    assert sd.modes.mixed and sd.mfu(A100_40GB, "float32") > 1
    share = sd.work.convolution_flops / sd.work.flops
    assert sd.mfu(A100_40GB) == pytest.approx(sd.flops_per_s * ((1 - share) / 19.5e12 + share / 156e12))
