"""`make table` renders a GPU run beside the published A100 table: each ok paper cell's MFU against its GPU's
datasheet and the published A100 cell's MFU beside it. The GPU result is a synthetic fixture built here from a
committed CPU result (its cell moved to the paper shape, its machine given an H100): no GPU has run, and no such
file is committed."""

import dataclasses
import json

from committed import committed_results

from bench.report import render
from bench.report.gpu_beside_a100 import TITLE, pct
from bench.results import load, result_path
from bench.roofline.hardware import A100_40GB, H100_SXM
from bench.roofline.published import published_cells
from bench.roofline.utilisation import use_of

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
