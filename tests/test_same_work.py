"""No comparison of unlike work (bench/same_work.py): two cells that did different work a step are `not comparable`,
with how they differ, wherever the suite compares; the same function computed through more FLOPs (Keras' merged LoRA
kernels) is still compared."""
import dataclasses

from committed import committed_results
from test_compare import cell_result, write

from bench import compare, stats
from bench.judge import Judge
from bench.registry import Cell
from bench.report import render
from bench.results import load
from bench.same_work import work_difference

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
    from bench.results import load_all

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
