"""`make table` renders a GPU run beside the published A100 table: each ok paper cell's MFU against its GPU's
datasheet and the published A100 cell's MFU beside it. The GPU result is a synthetic fixture built here from a
committed CPU result (its cell moved to the paper shape, its machine given an H100): no GPU has run, and no such
file is committed."""

import dataclasses
import json

import pytest
from committed import committed_results

from bench.catalogue.hardware import A100_40GB, H100_SXM
from bench.record.results import load, result_path
from bench.report.gpu_beside_a100 import TITLE, pct
from bench.roofline.published import published_cells
from bench.roofline.utilisation import use_of
from bench.studies.table import render

H100 = {
    "index": "0",
    "uuid": "GPU-h1000000",
    "name": "NVIDIA H100 80GB HBM3",
    "memory": "81559 MiB",
    "compute_capability": "9.0",
    "driver_cuda": "13.0",
}


def gpu_result(tmp_path):
    source = sorted(committed_results().glob("smoke/*/jax__bert__predict__bs2__default.json"))[0]
    result = load(source)
    result.cell = dataclasses.replace(result.cell, profile="paper", batch_size=256)
    result.provenance["machine"] = {**result.provenance["machine"], "gpus": [H100], "gpus_on_machine": 1}
    path = result_path(tmp_path / "results", result.cell, result.provenance["machine"])
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(result.to_dict(), indent=2))
    return load(path)


def test_a_gpu_table_shows_each_cells_mfu_beside_the_published_a100_cells(tmp_path):
    result = gpu_result(tmp_path)
    render(tmp_path / "results", tmp_path / "RESULTS.md")
    page = (tmp_path / "RESULTS.md").read_text()
    assert TITLE in page
    section = page[page.index(TITLE) :]
    row = next(line for line in section.splitlines() if line.startswith("| BERT"))
    published = next(
        c for c in published_cells() if (c.model, c.task, c.batch_size, c.backend) == ("bert", "predict", 256, "jax")
    )
    use = use_of(result)
    # the H100's datasheet peak at the compute mode the run recorded for its float32 matmuls
    assert use.ceiling.datasheet_flops == H100_SXM.flops[use.ceiling.datasheet_mode]
    assert pct(use.datasheet_mfu) in row and pct(published.mfu(A100_40GB)) in row
    assert f"{published.ms:.4g}" in row


def test_an_a100_table_has_no_such_section_the_published_comparison_is_its_own(tmp_path):
    result = gpu_result(tmp_path)
    a100 = {**H100, "name": "NVIDIA A100-SXM4-40GB"}
    moved = result_path(tmp_path / "r2", result.cell, {**result.provenance["machine"], "gpus": [a100]})
    result.provenance["machine"]["gpus"] = [a100]
    moved.parent.mkdir(parents=True)
    moved.write_text(json.dumps(result.to_dict(), indent=2))
    render(tmp_path / "r2", tmp_path / "RESULTS.md")
    assert TITLE not in (tmp_path / "RESULTS.md").read_text()


def test_a_cpu_table_has_no_such_section(tmp_path):
    source = sorted(committed_results().glob("smoke/*/jax__bert__predict__bs2__default.json"))[0]
    (tmp_path / "results" / "smoke" / "m").mkdir(parents=True)
    (tmp_path / "results" / "smoke" / "m" / source.name).write_text(source.read_text())
    render(tmp_path / "results", tmp_path / "RESULTS.md")
    assert TITLE not in (tmp_path / "RESULTS.md").read_text()


# The committed H200 session (results/gpu-session/20261127T1152Z): its unlocked results, as `make table` reads them.
H200_RESULTS = "env-current/py3.12-torch2.11.0-jax0.11.2-22dd5d6b"


def section_rows(results_dir, tmp_path) -> dict[str, str]:
    render(results_dir, tmp_path / "RESULTS.md")
    page = (tmp_path / "RESULTS.md").read_text()
    section = page[page.index(TITLE) :]
    return {" | ".join(p.strip() for p in line.split("|")[1:4]): line for line in section.splitlines()
            if line.startswith("| BERT fit") or line.startswith("| Gemma fit")}  # fmt: skip


def test_the_published_side_is_taken_at_its_own_steps_mode_pytorch_float32_at_fp32(tmp_path):
    """The published A100 Keras 3 PyTorch BERT fit computed its float32 matmuls in full FP32 (PyTorch's default,
    as this H200 run recorded for its own PyTorch cells): its MFU is against the A100's FP32 peak, not TF32's; the
    Keras 3 JAX cell's against TF32 (JAX's default, as recorded)."""
    import shutil

    results = tmp_path / "results"
    shutil.copytree(committed_results() / H200_RESULTS, results / H200_RESULTS)
    rows = section_rows(results, tmp_path)
    published = {c.backend: c for c in published_cells() if (c.model, c.task, c.batch_size) == ("bert", "fit", 32)}
    torch, jax = published["torch"], published["jax"]
    fp32 = torch.flops_per_s / A100_40GB.flops["float32"]
    tf32 = jax.flops_per_s / A100_40GB.flops["tf32"]
    a100_mfu = {key: line.split("|")[-2].strip() for key, line in rows.items()}  # the last column: A100 MFU
    assert a100_mfu["BERT fit | 32 | Keras 3 (PyTorch)"] == f"{pct(fp32)} (float32)", rows
    assert a100_mfu["BERT fit | 32 | Keras 3 (JAX)"] == f"{pct(tf32)} (tf32)", rows
    assert torch.mfu(A100_40GB) == pytest.approx(fp32) and jax.mfu(A100_40GB) == pytest.approx(tf32)
