"""No comparison of unlike work (bench/judge/same_work.py): two cells that did different work a step are `not
comparable`, with how they differ, wherever the suite compares; the same function computed through more FLOPs (Keras'
merged LoRA kernels) is still compared."""
import dataclasses
import re
import subprocess
import sys

import pytest
from committed import committed_results
from test_compare import cell_result, write

from bench.base import stats
from bench.catalogue.registry import Cell
from bench.judge import Judge
from bench.judge.same_work import work_difference
from bench.record.results import load
from bench.report import compare
from bench.studies.table import render

SMOKE = committed_results() / "smoke" / "cpu-amd-epyc-2-cores--64dc9908f650"


def smoke(key: str):
    return load(SMOKE / f"{key}.json")


def test_keras_cv_and_diffusers_stable_diffusion_at_smoke_widths_are_not_compared():
    keras, native = smoke("jax__stable_diffusion__predict__bs2__default"), smoke(
        "native-torch__stable_diffusion__predict__bs2__eager"
    )
    assert work_difference(keras, native) == "different work: 183 vs 0.796 GFLOP a step"
    found = Judge([keras, native]).ratio(keras, native)
    assert not found.comparable and not found.decidable and found.reason == work_difference(keras, native)
    assert stats.verdict(found) == stats.NOT_COMPARABLE


def built_by(result, model_class: str):
    """The result as if its runs had recorded another model class (what tells which build a run measured)."""
    runs = [dataclasses.replace(run, settings={**run.settings, "model_class": model_class}) for run in result.runs]
    return dataclasses.replace(result, runs=runs)


def test_a_keras_stable_diffusion_result_keeps_the_widths_its_build_ran():
    """The committed keras-cv cells ran SD v1's widths in smoke (their model_class: keras-cv's own classes, which fix
    them): they keep that work and stay not comparable with native PyTorch's, while the same cells built at the smoke
    widths from keras-cv's layers (bench/models/stable_diffusion/keras_cv_widths.py) do native's work and are
    compared."""
    for task, legacy_gflop, native_gflop, assembled in (
        ("predict", "183", "0.796", "bench.models.stable_diffusion.keras_cv_widths.DiffusionModel"),
        ("fit", "406", "12.5", "bench.models.stable_diffusion.keras_cv_widths.ImageEncoder (to layers[-3])"),
    ):
        keras = smoke(f"jax__stable_diffusion__{task}__bs2__default")
        native = smoke(f"native-torch__stable_diffusion__{task}__bs2__eager")
        assert keras.runs[0].settings["model_class"].startswith("keras_cv.src.models.stable_diffusion.")
        assert work_difference(keras, native) == f"different work: {legacy_gflop} vs {native_gflop} GFLOP a step"
        smoke_build = built_by(keras, assembled)
        assert smoke_build.work_counts() == native.work_counts()
        assert work_difference(smoke_build, native) is None
        assert Judge([smoke_build, native]).ratio(smoke_build, native).comparable


def test_the_same_lora_function_through_merged_kernels_is_compared():
    keras, native = smoke("jax__gemma__fit__bs2__default"), smoke("native-torch__gemma__fit__bs2__eager")
    assert keras.work_counts()["flops"] > native.work_counts()["flops"] * 1.01  # Keras computes more ...
    assert work_difference(keras, native) is None  # ... of the same function
    assert Judge([keras, native]).ratio(keras, native).comparable


def test_another_batch_or_shape_is_different_work():
    a = cell_result("jax", "bert", "fit", [10.0, 10.1, 9.9])
    b = dataclasses.replace(a, cell=Cell("jax", "bert", "fit", 4, "smoke", "default", 1, 12))
    assert work_difference(a, b) == "different work: batch 2 vs 4"
    shaped = [dataclasses.replace(a, config={"shape": {"sequence_length": n, "learning_rate": lr}})
              for n, lr in ((128, 1e-4), (128, 1e-3), (64, 1e-4))]
    assert work_difference(shaped[0], shaped[1]) is None  # a training setting, not the step's work
    assert work_difference(shaped[0], shaped[2]) == "different work: sequence_length 128 vs 64"


def test_compare_says_not_comparable_instead_of_a_ratio(tmp_path):
    """The same cell key run at another shape (its workload changed between the two runs)."""
    a = smoke("jax__bert__fit__bs2__default")
    shape = {**a.config["shape"], "sequence_length": a.config["shape"]["sequence_length"] // 2}
    b = dataclasses.replace(a, config={**a.config, "shape": shape})
    write(tmp_path / "a", [a])
    write(tmp_path / "b", [b])
    pair = compare.compare(tmp_path / "a", tmp_path / "b").pairs[0]
    why = f"different work: sequence_length {a.config['shape']['sequence_length']} vs {shape['sequence_length']}"
    assert pair.verdict == stats.NOT_COMPARABLE
    assert pair.text() == f"not comparable: {why}"
    assert pair.to_dict()["reason"] == why


def test_the_smoke_tables_stable_diffusion_speed_up_over_native_pytorch_is_not_comparable(tmp_path):
    results = committed_results()
    out = tmp_path / "RESULTS.md"
    render(results, out, readme=None)
    page = out.read_text()
    row = next(line for line in page.splitlines() if line.startswith("| StableDiffusion |") and "not compar" in line)
    assert "not comparable: different work: 406 vs 12.5 GFLOP a step" in row
    assert "0.0157" not in row  # the ratio of unlike work is not printed as a speed-up
    roofline = (out.parent / "ROOFLINE.md").read_text()
    sd = next(ln for ln in roofline.splitlines() if ln.startswith("| StableDiffusion predict") and "MFLOP" in ln)
    assert "differs by cell" in sd and "183 GFLOP" in sd and "796 MFLOP" in sd  # each cell's own work


def test_every_comparison_the_judge_makes_of_committed_cells_refuses_exactly_the_unlike_ones():
    """Over every pair of ok committed smoke cells of one row (the pairs a table, a speed-up or a compare can join):
    a ratio is comparable exactly where the work matched, so no printed comparison joins unlike work."""
    from bench.record.results import load_all

    results = [r for r in load_all(SMOKE) if r.status == "ok"]
    judge = Judge(results)
    rows: dict[tuple, list] = {}
    for r in results:
        rows.setdefault((r.cell.model, r.cell.task, r.cell.batch_size), []).append(r)
    pairs = unlike = 0
    for row in rows.values():
        for i, a in enumerate(row):
            for b in row[i + 1:]:
                found, why = judge.ratio(a, b), work_difference(a, b)
                assert found.comparable == (why is None), (a.cell.key, b.cell.key, why)
                pairs, unlike = pairs + 1, unlike + (why is not None)
    assert pairs > 100 and unlike >= 8  # StableDiffusion's fit and predict: each keras-cv cell against diffusers'


# ---------------------------------------------------------------- matmul precision is part of the same work

H200 = committed_results() / "env-current" / "py3.12-torch2.11.0-jax0.11.2-22dd5d6b"


def h200(key: str):
    return load(next(H200.rglob(f"{key}__stack-current.json")))


def test_float32_cells_at_different_matmul_precisions_are_not_the_same_computation():
    """On the H200 Keras 3 JAX's BERT fit ran its float32 matmuls in TF32 (JAX's default there), the PyTorch columns
    in full FP32 (allow_tf32 off), as each recorded: not compared, named as other work is; bfloat16 cells are."""
    jax, torch = h200("jax__bert__fit__bs32__default"), h200("torch__bert__fit__bs32__default")
    why = work_difference(jax, torch)
    assert why.startswith("not the same computation: float32 matrix products in TF32 vs FP32"), why
    assert "jax: jax_default_matmul_precision" in why or "default_matmul_precision None" in why
    found = Judge([jax, torch]).ratio(jax, torch)
    assert stats.verdict(found) == stats.NOT_COMPARABLE and found.reason == why
    gemma = [h200(f"{b}__gemma__fit__bs8__default") for b in ("jax", "torch")]  # bfloat16: the mode is the dtype
    assert work_difference(*gemma) is None
    # on a CPU every mode is FP32: the JAX and PyTorch smoke cells are the same computation
    assert work_difference(smoke("jax__bert__fit__bs2__default"), smoke("torch__bert__fit__bs2__default")) is None


def test_both_sides_of_the_h200_bert_fit_row_stand_in_the_table_marked_and_unranked(tmp_path):
    import shutil

    shutil.copytree(H200, tmp_path / "results" / H200.name)
    render(tmp_path / "results", tmp_path / "RESULTS.md")
    page = (tmp_path / "RESULTS.md").read_text()
    row = next(line for line in page.splitlines() if line.startswith("| BERT fit"))
    # each figure, its mode after it, then its peak memory
    cells = [re.sub(r" · \d+(?:\.\d)? GiB$", "", c.strip()) for c in row.split("|")[1:-1]]
    jax, torch, native, best = cells[4], cells[5], cells[6], cells[8]
    assert "81.38 ±11% TF32 · 22.9 GiB" in row
    assert jax.startswith("81.38") and jax.endswith("TF32") and "noisy" not in jax, row
    assert torch.startswith("277.0") and torch.endswith("FP32") and native.endswith("FP32"), row
    assert best == "81.38 (JAX TF32) †; not ranked against it: PyTorch (FP32: not the same computation)", best
    assert "BERT fit (batch 32): float32 matrix products at different precisions" in page
    findings = page[page.index("Derived findings and comparison with the published numbers") :]
    published = next(line for line in findings.splitlines() if line.startswith("| BERT fit"))
    assert "TF32" in published and "FP32" in published  # the comparison with the published table marks them too


def test_make_compare_marks_the_rows_precisions_and_refuses_a_cell_whose_sides_differ(tmp_path):
    write(tmp_path / "a", [h200("jax__bert__fit__bs32__default"), h200("torch__bert__fit__bs32__default")])
    highest = h200("jax__bert__fit__bs32__default")
    for run in highest.runs:  # the same cell, measured again at matmul-highest's precision (full FP32)
        run.framework = {**run.framework, "precision": {**run.framework["precision"], "float32_matmul": "float32",
                                                        "setting": "jax_default_matmul_precision highest"}}
    write(tmp_path / "b", [highest, h200("torch__bert__fit__bs32__default")])
    found = compare.compare(tmp_path / "a", tmp_path / "b")
    pair = next(p for p in found.pairs if p.key.backend == "jax")
    assert pair.verdict == stats.NOT_COMPARABLE and "not the same computation" in pair.reason
    text = compare.markdown(found)
    row = next(line for line in text.splitlines() if line.startswith("| BERT fit"))
    assert "· A TF32, B FP32" in row and "· FP32" in row, row  # each cell's precision, as the tables mark them
    write(tmp_path / "a2", [h200("jax__bert__fit__bs32__default"), h200("torch__bert__fit__bs32__default")])
    same = compare.markdown(compare.compare(tmp_path / "a", tmp_path / "a2"))
    row = next(line for line in same.splitlines() if line.startswith("| BERT fit"))
    assert "· TF32" in row and "· FP32" in row, row


@pytest.mark.envs
@pytest.mark.slow
@pytest.mark.duration_s(90)
def test_the_matched_precision_variants_run_on_the_cpu_and_record_their_mode(tmp_path, shared_smoke):
    """VARIANT=matmul-highest (Keras 3 JAX at full FP32) and matmul-high (PyTorch at TF32) run their cells on this
    CPU and record their setting in the framework's own words; on a CPU both compute in FP32, so every cell of the
    row is the same computation, whatever the setting (and the table marks nothing). The default Keras 3 JAX fit
    beside them is the shared smoke run's (tests/shared_run.py)."""
    from conftest import REPO, env_python
    from fakes import smoke_run

    from bench.record.results import load_all

    env_python("jax")
    env_python("torch")
    results = tmp_path / "results"
    for backend, variant in (("jax", "matmul-highest"), ("torch", "matmul-high")):
        out = subprocess.run(
            [sys.executable, "-m", "bench", *smoke_run("--repeats", "1", "--backend", backend, "--model", "bert",
                                                        "--task", "fit", "--variant", variant, results=results)],
            cwd=REPO, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    shared = [r for r in load_all(shared_smoke("jax").results) if r.cell.task == "fit"]
    found = {(r.cell.backend, r.cell.variant): r for r in load_all(results) + shared}
    highest, high = found[("jax", "matmul-highest")], found[("torch", "matmul-high")]
    default = found[("jax", "default")]
    assert all(r.status == "ok" for r in found.values()), {k: r.message for k, r in found.items()}
    assert highest.runs[0].settings["jax_default_matmul_precision"] == "highest"
    assert highest.float32_precision()["setting"] == "jax_default_matmul_precision highest"
    assert high.runs[0].settings["float32_matmul_precision"] == "high"
    assert high.float32_precision()["setting"].startswith("float32_matmul_precision high")
    assert {r.float32_precision()["matmul"] for r in found.values()} == {"float32"}  # a CPU: FP32 whatever the setting
    assert work_difference(highest, high) is None and work_difference(default, high) is None
