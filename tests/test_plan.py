"""The plan: memory arithmetic and fit verdicts (no env), the orchestrator's oom-predicted skip (fake
envs), and the parameter counts against the published models (marked envs: counted in the real envs)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
from fakes import bench_env, make_fake_envs, smoke_run

from bench.catalogue.profiles import get_profile
from bench.catalogue.registry import Cell, get_model, plan_cells
from bench.plan import DEVICES, available_device, cell_entry, gib_of, predicted_oom, table, write_plan
from bench.plan.memory import GIB, figures, fits, lora_parameters
from bench.record.results import load_all
from bench.run.cluster.resources import cell_resources, load_plan
from bench.run.doctor import largest_cell_gib

REPO = Path(__file__).resolve().parent.parent
MISTRAL, GEMMA = get_model("mistral").shape("paper"), get_model("gemma").shape("paper")
PUBLISHED = {  # the checkpoints' published sizes (tests/test_fidelity.py has their sources)
    ("bert", "backbone"): 108_310_272,
    ("gemma", "causal_lm"): 8_537_680_896,
    ("mistral", "causal_lm"): 7_241_732_096,
    ("sam", "sam"): 641_090_608,
    ("stable_diffusion", "unet"): 859_520_964,
}


def cell(backend, model, task, batch, profile="paper", variant=None):
    variant = variant or ("eager" if backend == "native-torch" else "default")
    return Cell(backend, model, task, batch, profile, variant, 2, 100, 10)


# --- Arithmetic, no env ---------------------------------------------------------------------------------------


def test_lora_adapters_are_counted_from_the_shape():
    # peft: rank x (in + out) per q_proj / v_proj, per layer. Mistral: q 4096->4096, v 4096->1024 (8 kv heads x 128).
    assert lora_parameters(MISTRAL, "native-torch") == 32 * 4 * ((4096 + 4096) + (4096 + 1024)) == 1_703_936
    assert lora_parameters(GEMMA, "native-torch") == 28 * 4 * 2 * (3072 + 16 * 256) == 1_605_632
    # Keras EinsumDense.enable_lora: lora_kernel_a is kernel.shape[:-1] + (rank,), lora_kernel_b (rank, head_dim).
    assert lora_parameters(MISTRAL, "keras") == 32 * 4 * ((4096 * 32 + 128) + (4096 * 8 + 128))


def test_llm_fit_holds_bf16_weights_and_trains_bf16_adapters():
    f = figures("mistral", "native-torch", "fit", 8, {"causal_lm": 7_241_732_096}, MISTRAL)
    lora = 1_703_936
    assert f.weights_dtype == "bfloat16" and f.trainable_parameters == lora
    assert f.parameters == 7_241_732_096 + lora
    assert f.weights_bytes == 7_241_732_096 * 2 + lora * 2  # peft 0.9.0's adapters in the base dtype
    assert f.gradients_bytes == lora * 2 and f.optimizer_bytes == lora * 4  # Adam: 2 bf16 moments
    layer = 8 * 128 * (15 * 4096 + 4.75 * 14336 + 5 * 32 * 128) * 2 / 2
    assert f.activations_bytes == pytest.approx(32 * layer + 2 * 8 * 128 * 32000 * 4, abs=1)
    assert f.total_bytes == f.weights_bytes + f.gradients_bytes + f.optimizer_bytes + f.activations_bytes


def test_generate_holds_the_kv_cache_and_no_gradients():
    f = figures("gemma", "keras", "generate", 32, {"backbone": 8_537_680_896}, GEMMA)
    assert f.gradients_bytes == f.optimizer_bytes == f.trainable_parameters == 0
    assert f.weights_bytes == 8_537_680_896 * 2
    kv = 2 * 28 * 32 * 50 * 16 * 256 * 2
    assert f.activations_bytes == kv + 32 * 256000 * 4


def test_float32_models_train_every_parameter_of_what_fit_trains():
    sam = get_model("sam").shape("paper")
    fit = figures("sam", "native-torch", "fit", 1, {"sam": 641_090_608, "image_encoder": 637_026_048}, sam)
    assert (
        fit.weights_bytes == 641_090_608 * 4
        and fit.gradients_bytes == 637_026_048 * 4
        and fit.optimizer_bytes == 637_026_048 * 8
    )
    predict = figures("sam", "native-torch", "predict", 4, {"sam": 641_090_608, "image_encoder": 637_026_048}, sam)
    assert predict.gradients_bytes == predict.optimizer_bytes == 0 and predict.activations_bytes > 0
    bert = get_model("bert").shape("paper")
    head = figures("bert", "keras", "predict", 256, {"backbone": 108_310_272}, bert)
    assert head.parameters == 108_310_272 + 768 * 2 + 2  # the 2-class head, as the native classifier counts it


def test_fit_verdicts():
    assert fits(39.9, 40.0) is True and fits(40.1, 40.0) is False and fits(1.0, None) is None
    counts = {"causal_lm": 7_241_732_096}
    entry = cell_entry(cell("native-torch", "mistral", "fit", 8), counts, ram=8.0)
    assert entry["fits"] == {"A100-40GB": True, "H100-80GB": True, "RAM": False}  # ~18 GiB
    assert 14 < entry["memory_gib"] < 40
    huge = cell_entry(cell("native-torch", "mistral", "generate", 32), counts, ram=None)
    assert huge["fits"]["RAM"] is None
    assert cell_entry(cell("keras2", "gemma", "fit", 8), None, ram=64)["unsupported"]
    assert DEVICES["A100-40GB"] == 40.0 and 79 < DEVICES["H100-80GB"] < 80


def test_the_device_a_run_uses_is_the_gpu_else_ram():
    assert gib_of("81559 MiB") == pytest.approx(79.647, abs=1e-3) and gib_of("") is None
    a100 = {"gpus": [{"name": "NVIDIA A100-SXM4-40GB", "memory": "40960 MiB"}], "memory_gib": 500.0}
    assert available_device(a100) == (40.0, "NVIDIA A100-SXM4-40GB memory")
    assert available_device({"gpus": [], "memory_gib": 23.5}) == (23.5, "RAM")
    c = cell("jax", "gemma", "fit", 8)
    entry = {
        "key": c.key,
        "memory_gib": 45.5,
        "weights_gib": 15.9,
        "gradients_gib": 0.04,
        "optimizer_gib": 0.1,
        "activations_gib": 29.4,
    }
    why = predicted_oom(c, {c.key: entry}, a100)
    assert (
        "estimates 45.50 GiB" in why
        and "36.00 GiB of NVIDIA A100-SXM4-40GB memory that jax can use (of 40.00 GiB)" in why
        and "--ignore-plan" in why
    )
    assert predicted_oom(c, {c.key: {**entry, "memory_gib": 35.0}}, a100) is None
    assert predicted_oom(c, {c.key: {**entry, "memory_gib": 37.0}}, a100)  # fits the card, not JAX's 90% of it
    assert predicted_oom(c, {}, a100) is None


def test_xla_on_a_cpu_holds_a_float32_copy_of_bfloat16_weights():
    """Found by the full-size CPU run: Gemma 7B generate on Keras/TF and Keras/JAX asked for 37.67 GiB on a 23.5 GiB
    CPU machine, the plan having said 15.95. The copy counts on the host only, for XLA backends only."""
    counts = {"backbone": 8_537_680_896}
    jax_entry = cell_entry(cell("jax", "gemma", "generate", 1, profile="cpu"), counts, ram=23.5)
    tf_entry = cell_entry(cell("tensorflow", "gemma", "fit", 1, profile="cpu"), counts, ram=23.5)
    torch_entry = cell_entry(cell("torch", "gemma", "generate", 1, profile="cpu"), counts, ram=23.5)
    native = cell_entry(
        cell("native-torch", "gemma", "generate", 1, profile="cpu"), {"causal_lm": 8_537_680_896}, ram=23.5
    )
    assert tf_entry["xla_cpu_float32_copy_gib"] == pytest.approx(2 * tf_entry["weights_gib"], rel=1e-3)
    # generate with Gemma's tied embeddings: two more float32 copies of the table; the copy is then the buffer the
    # full-size run failed to allocate ("Out of memory allocating 40442541544 bytes"), to within a megabyte
    embedding_f32 = 4 * GEMMA.vocabulary_size * GEMMA.hidden_dim
    assert jax_entry["xla_cpu_float32_copy_gib"] * GIB == pytest.approx(
        2 * jax_entry["weights_gib"] * GIB + 2 * embedding_f32, rel=1e-4
    )
    assert abs(jax_entry["xla_cpu_float32_copy_gib"] * GIB - 40_442_541_544) < 2**20 * 5  # gib rounded to 3 places
    for entry in (jax_entry, tf_entry):
        assert entry["host_memory_gib"] > 45 and entry["fits"] == {"A100-40GB": True, "H100-80GB": True, "RAM": False}
    for entry in (torch_entry, native):
        assert "host_memory_gib" not in entry and entry["fits"]["RAM"] is True  # ~16 GiB of bf16 weights fit 23.5
    c = cell("jax", "gemma", "generate", 1, profile="cpu")
    cpu_machine = {"gpus": [], "memory_gib": 23.5}
    why = predicted_oom(c, {c.key: jax_entry}, cpu_machine)
    assert f"estimates {jax_entry['host_memory_gib']:.2f} GiB" in why and "XLA's float32 copy" in why
    h100 = {"gpus": [{"name": "NVIDIA H100 80GB HBM3", "memory": "81559 MiB"}], "memory_gib": 23.5}
    assert predicted_oom(c, {c.key: jax_entry}, h100) is None  # on the GPU XLA multiplies bfloat16 as it is
    plan = {"profile": "cpu", "devices_gib": {"RAM": 23.5}, "cells": [jax_entry, torch_entry]}
    assert f"NO ({jax_entry['host_memory_gib']:.2f} on a CPU)" in table(plan)


def test_plan_file_is_what_doctor_and_submit_read(tmp_path):
    c = cell("native-torch", "mistral", "fit", 8)
    plan = {
        "profile": "paper",
        "devices_gib": {"RAM": 8.0},
        "cells": [cell_entry(c, {"causal_lm": 7_241_732_096}, ram=8.0)],
    }
    written = write_plan(plan, tmp_path)
    assert [p.name for p in written] == ["plan-paper.json", "plan.json"]
    data = json.loads((tmp_path / "plan.json").read_text())
    assert largest_cell_gib(data) == (c.key, data["cells"][0]["memory_gib"])
    assert cell_resources(c, load_plan(tmp_path / "plan.json")).mem_gib == int(
        -(-data["cells"][0]["memory_gib"] * 1.25 // 1)
    )
    assert "mistral" in table(plan) and "NO" in table(plan)


# --- The orchestrator's skip, with fake envs ------------------------------------------------------------------


def bench(args, env):
    return subprocess.run(
        [sys.executable, "-m", "bench", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


def test_a_cell_the_plan_says_cannot_fit_is_oom_predicted_unless_ignored(tmp_path):
    venvs = make_fake_envs(tmp_path / "venvs", ["jax"])
    results = tmp_path / "results"
    fit, predict = plan_cells("smoke", backends=["jax"], models=["bert"])
    entry = {"weights_gib": 1.0, "gradients_gib": 1.0, "optimizer_gib": 2.0, "activations_gib": 99996.0}
    plan = {
        "profile": "smoke",
        "cells": [{"key": fit.key, "memory_gib": 100000.0, **entry}, {"key": predict.key, "memory_gib": 0.5}],
    }
    results.mkdir()
    (results / "plan-smoke.json").write_text(json.dumps(plan))
    out = bench(
        smoke_run("--backend", "jax", "--model", "bert", results=results),
        bench_env(venvs),
    )
    assert out.returncode == 1, out.stderr + out.stdout
    got = {r.cell.task: r for r in load_all(results)}
    assert got["predict"].status == "ok"
    assert got["fit"].status == "oom-predicted"
    assert (
        "estimates 100000.00 GiB (weights 1.00, gradients 1.00, optimizer 2.00, activations ~99996.00 estimated)"
        in got["fit"].message
    )
    assert "--ignore-plan" in got["fit"].message and (
        "RAM here" in got["fit"].message or "memory here" in got["fit"].message
    )
    assert not list((results / "logs" / "smoke").glob(f"{fit.key}.*.log"))  # never started
    out = bench(
        [
            "run",
            "--profile",
            "smoke",
            "--backend",
            "jax",
            "--model",
            "bert",
            "--task",
            "fit",
            "--ignore-plan",
            "--results-dir",
            str(results),
        ],
        bench_env(venvs),
    )
    assert out.returncode == 0, out.stderr + out.stdout
    assert {r.cell.task: r.status for r in load_all(results)}["fit"] == "ok"


def test_an_oom_the_plan_did_not_predict_is_recorded_with_the_plans_figures(tmp_path):
    # the full-size CPU run: Gemma 7B generate fit the plan (15.95 GiB) and still ran out of memory under XLA
    venvs = make_fake_envs(tmp_path / "venvs", ["jax"])
    results = tmp_path / "results"
    (fit,) = plan_cells("smoke", backends=["jax"], models=["bert"], tasks=["fit"])
    entry = {
        "key": fit.key,
        "memory_gib": 0.5,
        "weights_gib": 0.2,
        "gradients_gib": 0.1,
        "optimizer_gib": 0.1,
        "activations_gib": 0.1,
    }
    results.mkdir()
    (results / "plan-smoke.json").write_text(json.dumps({"profile": "smoke", "cells": [entry]}))
    out = bench(
        [
            "run",
            "--profile",
            "smoke",
            "--backend",
            "jax",
            "--model",
            "bert",
            "--task",
            "fit",
            "--results-dir",
            str(results),
        ],
        bench_env(venvs, jax="oom"),
    )
    assert out.returncode == 1, out.stderr + out.stdout
    (result,) = load_all(results)
    assert result.status == "oom" and "Out of memory while trying to allocate 40.00GiB" in result.message
    assert (
        "(the plan (plan-smoke.json) estimates 0.50 GiB (weights 0.20, gradients 0.10, optimizer 0.10, activations ~0.10 estimated), against the"
        in result.message
    )


def test_a_plan_for_another_profile_skips_nothing(tmp_path):
    venvs = make_fake_envs(tmp_path / "venvs", ["jax"])
    results = tmp_path / "results"
    results.mkdir()
    (fit,) = plan_cells("smoke", backends=["jax"], models=["bert"], tasks=["fit"])
    (results / "plan-paper.json").write_text(
        json.dumps({"profile": "paper", "cells": [{"key": fit.key, "memory_gib": 1e9}]})
    )
    out = bench(
        [
            "run",
            "--profile",
            "smoke",
            "--backend",
            "jax",
            "--model",
            "bert",
            "--task",
            "fit",
            "--results-dir",
            str(results),
        ],
        bench_env(venvs),
    )
    assert out.returncode == 0, out.stderr + out.stdout


# --- Parameter counts in the real envs ------------------------------------------------------------------------


@pytest.mark.envs
def test_a_plan_at_another_batch_holds_the_cells_a_run_at_that_batch_will_meet(monkeypatch):
    # The full-size run's Gemma fit at BATCH=1 found no plan rows at batch 1 (the cpu profile plans batch 2), so
    # Keras/JAX ran and died of the float32 copy the plan would have predicted.
    import bench.plan

    counts = {"causal_lm": 8_537_680_896, "backbone": 8_537_680_896, "counted_in": "test"}
    monkeypatch.setattr(
        bench.plan, "counts_for", lambda pairs, profile, echo: {pair: counts for pair in pairs if pair[0] == "gemma"}
    )
    plan = bench.plan.build_plan("cpu", echo=lambda line: None, batch_size=1)
    by_key = {c["key"]: c for c in plan["cells"]}
    assert {
        "jax__gemma__fit__bs2__default",
        "jax__gemma__fit__bs1__default",
        "native-torch__gemma__fit__bs1__eager",
    } <= set(by_key)
    assert len(by_key) == len(plan["cells"])  # generate's batch 1 is planned once
    machine = {"gpus": [], "memory_gib": 23.5}
    at_one = cell("jax", "gemma", "fit", 1, profile="cpu")
    monkeypatch.setattr(bench.plan, "available_device", lambda machine, cell=None: (23.5, "RAM"))
    assert "more than the 23.50 GiB of RAM" in predicted_oom(at_one, by_key, machine)


def test_plan_counts_match_the_published_models(monkeypatch):
    from bench.plan import build_plan, counts
    from bench.plan.counts import family_env

    if family_env("native-torch") is None or family_env("keras") is None:
        pytest.skip("needs the native-torch env and a Keras 3 env (make envs)")
    plan = build_plan("paper", echo=lambda line: None)
    probes = []
    monkeypatch.setattr(counts, "run_probe", lambda *args: probes.append(args) or {})
    again = build_plan("paper", echo=lambda line: None)  # every count cached now: no subprocess
    assert probes == []
    by_key = {c["key"]: c for c in plan["cells"]}
    assert [c["parameters"] for c in again["cells"] if "parameters" in c] == [
        c["parameters"] for c in plan["cells"] if "parameters" in c
    ]
    for c in plan_cells("paper"):
        entry = by_key[c.key]
        if get_model(c.model).why_cell_unsupported(c):
            assert entry["memory_gib"] is None
            continue
        assert entry["memory_gib"] > 0 and set(entry["fits"]) == {"A100-40GB", "H100-80GB", "RAM"}
    p = lambda key: by_key[key]["parameters"]
    assert p("native-torch__bert__predict__bs256__eager") == PUBLISHED[("bert", "backbone")] + 768 * 2 + 2
    assert p("jax__bert__predict__bs256__default") == PUBLISHED[("bert", "backbone")] + 768 * 2 + 2
    assert p("keras2__bert__fit__bs32__default") == p("jax__bert__fit__bs32__default")  # reused Keras 3 count
    for backend, variant in (("jax", "default"), ("native-torch", "eager")):
        assert p(f"{backend}__gemma__generate__bs32__{variant}") == PUBLISHED[("gemma", "causal_lm")]
        assert p(f"{backend}__mistral__generate__bs32__{variant}") == PUBLISHED[("mistral", "causal_lm")]
    assert p("native-torch__sam__predict__bs4__eager") == PUBLISHED[("sam", "sam")]
    assert p("jax__sam__predict__bs4__default") == PUBLISHED[("sam", "sam")] + 256  # Keras keeps one 256-weight more
    sd_native = by_key["native-torch__stable_diffusion__predict__bs13__eager"]
    sd_keras = by_key["jax__stable_diffusion__predict__bs13__default"]
    assert sd_native["parameters"] == PUBLISHED[("stable_diffusion", "unet")] + 83_653_863 + 123_060_480
    # keras-cv's pipeline holds the VAE's decoder only; diffusers' the whole VAE (its encoder is Keras' fit model).
    assert sd_keras["parameters"] + p("jax__stable_diffusion__fit__bs8__default") == sd_native["parameters"]
    assert by_key["native-torch__mistral__fit__bs8__eager"]["trainable_parameters"] == 1_703_936
    assert plan["cells"][0]["weights_bytes"] == plan["cells"][0]["parameters"] * 4
    assert by_key["jax__gemma__fit__bs8__default"]["weights_dtype"] == "bfloat16"
    assert by_key["jax__gemma__generate__bs32__default"]["weights_gib"] == pytest.approx(
        8_537_680_896 * 2 / GIB, abs=1e-3
    )


def make_dry_run(*args: str) -> list[str]:
    """What `make -n` would run for these arguments, a command a line (continuations joined)."""
    out = subprocess.run(
        ["make", "--no-print-directory", "-n", *args], cwd=REPO, capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.replace("\\\n", " ").splitlines()


def test_make_bench_cpu_full_runs_the_published_cells_at_full_size_resumably_into_their_own_folder():
    """The full-size CPU run: the cpu profile (paper shapes), its own plan beside its results, a first step and 2 timed
    steps, an hour per cell, resumable; BATCH= reaches the run (the 7B fits at batch 1)."""
    lines = make_dry_run("bench-cpu-full", "MODEL=gemma", "TASK=fit", "BATCH=1", "RESULTS=/r")
    plan = next(l for l in lines if "-m bench plan" in l)
    run = next(l for l in lines if "-m bench run" in l)
    assert '--profile cpu --results-dir "/r/cpu-full" --batch-size 1' in " ".join(
        plan.split()
    )  # its cells are in the plan
    for words in (
        "--profile cpu",
        "--resume",
        "--model gemma",
        "--task fit",
        "--batch-size 1",
        '--results-dir "/r/cpu-full"',
    ):
        assert words in " ".join(run.split()), (words, run)
    # the steps and the hour are the cpu profile's own (bench/catalogue/profiles.toml), not flags of the Makefile's
    assert not any(flag in run for flag in ("--steps", "--warmup", "--timeout")), run
    cpu = get_profile("cpu")
    assert (cpu.warmup_steps, cpu.timed_steps, cpu.timeout_s) == (0, 2, 3600)
    cells = plan_cells(profile="cpu", models=["gemma"], tasks=["fit"], backends=["jax"], batch_size=1)
    assert [c.batch_size for c in cells] == [1]
    assert get_model("gemma").shape("cpu").num_layers == get_model("gemma").shape("paper").num_layers == 28  # full size


def test_the_cpu_mid_sizes_are_the_largest_every_compared_generate_column_holds():
    """The published generate ratios re-tested at the largest size every compared column can hold
    here. The cpu-mid profile's layer counts are what bench.plan.largest works out from the plan and the committed
    full-size run's measured peaks: every compared column fits 23.5 GiB at that count, one more layer does not."""
    from committed import committed_results

    from bench.plan.largest import COMPARED, RAM_GIB, column_needs_gib, largest_layers, measured_excess_gib

    excess = measured_excess_gib(committed_results() / "cpu-full")
    assert excess["jax"] > 1 and set(excess) >= {"jax", "torch", "native-torch"}  # measured, not assumed
    for model in COMPARED:
        layers = get_model(model).shape("cpu-mid").num_layers
        assert layers == largest_layers(model, RAM_GIB, excess), model
        assert 0 < layers < get_model(model).shape("paper").num_layers
        assert max(column_needs_gib(model, layers, excess).values()) <= RAM_GIB
        assert max(column_needs_gib(model, layers + 1, excess).values()) > RAM_GIB
        # only the depth changes: every width, the prompt and the generate length are the paper's
        mid, paper = get_model(model).shape("cpu-mid"), get_model(model).shape("paper")
        assert {k: v for k, v in vars(mid).items() if k != "num_layers"} == {
            k: v for k, v in vars(paper).items() if k != "num_layers"
        }
    mid = get_profile("cpu-mid")
    assert (mid.timed_steps, mid.max_batch_size, mid.shapes_from) == (2, 2, "paper")


def test_make_bench_cpu_mid_runs_the_compared_generate_cells_into_their_own_folder():
    lines = [" ".join(line.split()) for line in make_dry_run("bench-cpu-mid", "RESULTS=/r")]
    runs = [line for line in lines if "-m bench run" in line]
    from bench.plan.largest import COMPARED

    planned = set()
    for run in runs:
        assert "--profile cpu-mid" in run and "--task generate" in run and '--results-dir "/r/cpu-mid"' in run
        words = run.split()
        model, backends = words[words.index("--model") + 1], words[words.index("--backend") + 1].split(",")
        variants = words[words.index("--variant") + 1].split(",") if "--variant" in words else None
        cells = plan_cells(profile="cpu-mid", models=[model], tasks=["generate"], backends=backends, variants=variants)
        planned |= {(c.model, c.backend, c.variant) for c in cells}
    wanted = {(m, b, v) for m, columns in COMPARED.items() for b, v in columns}
    assert planned == wanted
    assert any(line.endswith('-m bench plan --profile cpu-mid --results-dir "/r/cpu-mid" >/dev/null') for line in lines)


def test_the_parameter_counts_cache_keeps_what_another_plan_wrote_meanwhile(tmp_path, monkeypatch):
    from bench.plan import counts

    cache = tmp_path / "plan-counts.json"
    monkeypatch.setattr(counts, "cache_path", lambda: cache)
    ours = counts.load_cache()  # read as a plan starts, then its probes count for a while
    cache.write_text('{"gemma/keras/smoke": {"counts": {"backbone": 1}}}')  # another plan's, written meanwhile
    counts.save_cache({**ours, "bert/keras/smoke": {"counts": {"backbone": 2}}})
    assert set(counts.load_cache()) == {"gemma/keras/smoke", "bert/keras/smoke"}
    assert [p.name for p in tmp_path.iterdir()] == ["plan-counts.json"]
