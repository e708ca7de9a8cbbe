"""The committed full-size CPU run (`make bench-cpu-full` -> results/cpu-full/): each result is an outcome
a reviewer can act on, never a failure left standing, and each cell that ran recorded the paper's settings.

Reads committed files only (no env, no run): part of the fast tier.
"""
import json
import re
from pathlib import Path

import pytest
from committed import committed_results
from conftest import assert_paper_settings

from bench.catalogue.registry import get_model, plan_cells
from bench.record.results import load_all

REPO = Path(__file__).resolve().parent.parent
FULL_SIZE = committed_results() / "cpu-full"  # HEAD's, not what a user's own run left in results/
RESULTS = load_all(FULL_SIZE)
# The complete run is the AMD host's (its folder from before results were keyed by processor, and its BERT re-run in
# the keyed one); another machine's re-run of some rows (the Intel VM's Mistral fit) is checked result by result.
COMPLETE_RUN = [r for r in RESULTS if (r.provenance.get("machine") or {}).get("cpu") == "AMD EPYC"]
# What a full-size cell may end as: measured, NA as published, or out of memory (measured, or predicted by the plan).
OUTCOMES = {"ok", "unsupported", "oom", "oom-predicted"}
# The models of the committed run, as its plan planned them: a model added since has no full-size run to check.
RUN_MODELS = sorted({c["model"] for c in json.loads((FULL_SIZE / "plan-cpu.json").read_text())["cells"]})


def test_the_full_size_run_is_committed_at_paper_shapes():
    assert RESULTS, f"no results under {FULL_SIZE}: run make bench-cpu-full"
    assert {r.cell.profile for r in RESULTS} == {"cpu"}
    assert (FULL_SIZE / "plan-cpu.json").exists()  # the plan the run skipped oom-predicted cells by


def test_every_published_cell_has_a_full_size_result():
    # Each cell of the published table has its own result, at the cpu profile's batch or (where that could not fit
    # or took too long, recorded beside the number) at batch 1.
    def key(cell, batch):
        return cell.backend, cell.variant, cell.model, cell.task, batch
    unmatched = {key(r.cell, r.cell.batch_size) for r in COMPLETE_RUN}
    missing = []
    for cell in sorted(
        plan_cells("cpu", models=RUN_MODELS), key=lambda c: -c.batch_size
    ):  # exact batches are claimed before batch 1
        found = next((k for k in (key(cell, cell.batch_size), key(cell, 1)) if k in unmatched), None)
        if found:
            unmatched.discard(found)
        else:
            missing.append(cell.key)
    assert len(COMPLETE_RUN) == 72 and not missing, missing


@pytest.mark.parametrize("result", RESULTS, ids=lambda r: r.cell.key)
def test_no_full_size_cell_is_left_failed(result):
    assert result.status in OUTCOMES, f"{result.cell.key}: {result.status}: {result.message}"
    if result.status == "oom-predicted":  # skipped by the plan: its figures say why
        assert "the plan (plan-cpu.json) estimates" in result.message, result.message
    if result.status == "oom":  # measured: the framework's own words, with the size it could not allocate
        assert "GiB" in result.message or "bytes" in result.message, result.message


@pytest.mark.parametrize("result", [r for r in RESULTS if r.status == "ok"], ids=lambda r: r.cell.key)
def test_each_full_size_cell_that_ran_recorded_the_paper_settings(result):
    run = result.runs[0]
    assert_paper_settings(result.cell, run.settings)
    shape = get_model(result.cell.model).shape("paper")
    if (
        getattr(shape, "dtype", "float32") == "bfloat16"
    ):  # a 7B model never passed through float32 on the host (34 GB for Gemma)
        dtypes = run.settings.get("parameter_dtypes")
        if result.cell.task == "fit" and result.cell.backend != "native-torch":
            # Keras 3.15's enable_lora makes float32 LoRA kernels under a bfloat16 policy (docs/DEVIATIONS.md row 19):
            # the base weights' bfloat16 shows in the peak, below what float32 weights alone would hold.
            assert shape.dtype in dtypes and set(dtypes) <= {shape.dtype, "float32"}, dtypes
            float32_gib = run.settings["parameters"] * 4 / 2**30
            assert run.process["peak_rss_gib"] < float32_gib, (run.process["peak_rss_gib"], float32_gib)
        else:
            assert dtypes == [shape.dtype], run.settings


# The full-size generate cells re-run with the prefill/decode split (results/cpu-full/NOTES.md says which
# could not be re-run in the time there was).
SPLIT_RERUN = ["native-torch__gemma__generate__bs1__eager", "native-torch__gemma__generate__bs1__compiled",
               "torch__gemma__generate__bs1__default", "native-torch__mistral__generate__bs1__eager",
               "native-torch__mistral__generate__bs1__compiled", "torch__mistral__generate__bs1__default"]


@pytest.mark.parametrize("key", SPLIT_RERUN)
def test_the_rerun_full_size_generate_cells_carry_the_split(key):
    (result,) = [r for r in RESULTS if r.cell.key == key]
    run, shape = result.runs[0], get_model(result.cell.model).shape("paper")
    split = run.generate_split
    assert result.status == "ok" and split["ttft_ms"] > 0 and split["tpot_ms"] > 0, split
    assert split["whole_call_ms"] == run.stats().median and split["agreement"]["relative_error"] >= 0
    assert split["new_tokens"] == shape.new_tokens == 44 and split["split_tokens"] == [1, 22]
    keras = result.cell.backend != "native-torch"  # keras-hub's prefill computes the whole padded length
    assert split["prefill_positions"] == (shape.generate_length if keras else shape.prompt_length)


# The published generate findings re-tested at the largest size every compared column fits
# (`make bench-cpu-mid` -> results/cpu-mid/, the cpu-mid profile: paper widths, fewer layers).
MID_SIZE = committed_results() / "cpu-mid"


def test_the_mid_size_run_has_every_compared_generate_cell_with_its_split():
    from bench.plan.largest import COMPARED, batches

    results = {r.cell.key: r for r in load_all(MID_SIZE)}
    wanted = [
        c.key
        for model, columns in COMPARED.items()
        for backend, variant in columns
        for c in plan_cells("cpu-mid", models=[model], tasks=["generate"], backends=[backend], variants=[variant])
    ]
    assert len(wanted) == 2 * sum(len(c) for c in COMPARED.values()) and sorted(wanted) == sorted(results), (
        sorted(results)
    )
    for model in COMPARED:
        assert {r.cell.batch_size for r in results.values() if r.cell.model == model} == set(batches(model)) == {1, 2}
    for key in wanted:
        result = results[key]
        assert result.status == "ok", (key, result.status, result.message)
        shape = get_model(result.cell.model).shape("cpu-mid")
        assert result.config["shape"]["num_layers"] == shape.num_layers < get_model(result.cell.model).shape(
            "paper"
        ).num_layers  # the run recorded the size it ran at
        split = result.runs[0].generate_split
        assert split["ttft_ms"] > 0 and split["new_tokens"] == 44 and split["agreement"]["relative_error"] >= 0


def test_results_md_gives_each_published_generate_finding_at_the_mid_size():
    text = (committed_results() / "GENERATE.md").read_text()  # the generate split's page, a part per table
    start = re.search(r"^## \d+\. cpu-mid profile", text, re.M).start()
    end = text.find("\n## ", start + 1)
    section = text[start : end if end > 0 else None]
    for finding in ("Table 2: Keras-torch / Keras-JAX generate, gemma", "Table 2: Keras-torch / Keras-JAX generate, "
                    "mistral", "keras-hub #2593", "F. Chollet 2024"):
        assert finding in section, finding
    for model in ("gemma", "mistral"):  # the size the findings ran at, said beside them
        spec = get_model(model)
        size = f"{spec.display} {spec.shape('cpu-mid').num_layers} of its {spec.shape('paper').num_layers} layers"
        assert size in section, size
