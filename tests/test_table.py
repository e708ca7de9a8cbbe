"""The results table renderer: golden Markdown from fixture results, bold, statuses, provenance, comparison, errors.

Goldens are regenerated only on purpose: BENCH_UPDATE_GOLDEN=1 pytest tests/test_table.py
"""
import difflib
import math
import os
import re
import struct
from pathlib import Path

import pytest

import bench.judge.noise_file

pytest.importorskip("tabulate")
pytest.importorskip("matplotlib")

from conftest import REPO
from fakes import write_noise_study

from bench import cli
from bench.base import stats
from bench.base.errors import BenchError
from bench.catalogue.profiles import get_profile
from bench.catalogue.registry import Cell
from bench.record.results import Result, Run
from bench.record.text import fmt_ms
from bench.studies.table import PAGE_INTROS, README_END, README_START, render

GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("BENCH_UPDATE_GOLDEN") == "1"

A100 = {
    "os": "Linux-5.15-x86_64-with-glibc2.35",
    "cpu": "Intel(R) Xeon(R) CPU @ 2.20GHz",
    "logical_cpus": 12,
    "memory_gib": 83.5,
    "gpus": [{"name": "NVIDIA A100-SXM4-40GB", "driver": "535.104.05", "driver_cuda": "12.2", "memory": "40960 MiB"}],
}
H100 = {
    **A100,
    "cpu": "AMD EPYC 9654",
    "logical_cpus": 16,
    "memory_gib": 128.0,
    "gpus": [{"name": "NVIDIA H100 80GB HBM3", "driver": "550.54.15", "driver_cuda": "12.4", "memory": "81559 MiB"}],
}
CPU = {"os": "Linux-6.1-x86_64", "cpu": "AMD EPYC", "logical_cpus": 2, "memory_gib": 23.5, "gpus": []}
COMMIT_A = {"commit": "a" * 40, "dirty": False, "source": "git"}
COMMIT_B = {"commit": "b" * 40, "dirty": True, "source": "git"}

PACKAGES = {
    "keras2": {"tensorflow": "2.16.1", "tf-keras": "2.16.0", "keras-nlp": "0.12.1", "keras-cv": "0.9.0"},
    "tensorflow": {"tensorflow": "2.16.1", "keras": "3.3.3", "keras-nlp": "0.12.1", "keras-cv": "0.9.0"},
    "jax": {"jax": "0.4.28", "jaxlib": "0.4.28", "keras": "3.3.3", "keras-nlp": "0.12.1", "keras-cv": "0.9.0"},
    "torch": {"torch": "2.3.0", "keras": "3.3.3", "keras-nlp": "0.12.1", "keras-cv": "0.9.0"},
    "native-torch": {"torch": "2.3.0", "transformers": "4.40.2", "diffusers": "0.27.2", "peft": "0.10.0"},
}
FRAMEWORK = {
    "keras2": {
        "framework": "tensorflow",
        "version": "2.16.1",
        "cuda_build": "12.3",
        "cudnn_build": "8",
        "gpus": ["/physical_device:GPU:0"],
        "precision": {"tf32_execution": True},
    },
    "tensorflow": {
        "framework": "tensorflow",
        "version": "2.16.1",
        "cuda_build": "12.3",
        "cudnn_build": "8",
        "gpus": ["/physical_device:GPU:0"],
        "precision": {"tf32_execution": True},
    },
    "jax": {
        "framework": "jax",
        "version": "0.4.28",
        "jaxlib": "0.4.28",
        "cuda_plugin": "0.4.28",
        "gpus": ["NVIDIA A100-SXM4-40GB"],
        "precision": {"default_matmul_precision": "None"},
    },
    "torch": {
        "framework": "torch",
        "version": "2.3.0",
        "cuda_build": "12.1",
        "cudnn_build": 8902,
        "gpus": ["NVIDIA A100-SXM4-40GB"],
        "precision": {"float32_matmul_precision": "highest"},
    },
}
FRAMEWORK["native-torch"] = FRAMEWORK["torch"]
LOCKS = {
    "keras2": "22222222",
    "tensorflow": "tftftftf",
    "jax": "jjjjjjjj",
    "torch": "pppppppp",
    "native-torch": "nnnnnnnn",
}


TENSORFLOW_XLA_ERROR = (  # the shape of what TensorFlow 2.16's XLA JIT raised on a CPU it could not name
    "InternalError: Graph execution error:\n\nDetected at node StatefulPartitionedCall defined at (most recent call "
    "last):\n  File \"<frozen runpy>\", line 198, in _run_module_as_main\n\n"
    + "".join(f'  File "/venv/site-packages/keras/trainer.py", line {n}, in fit\n\n' for n in range(40))
    + 'TargetRegistry::lookupTarget failed: No available targets are compatible with triple "unknown"\n'
    "\t [[{{node StatefulPartitionedCall}}]] [Op:__inference_one_step_on_iterator_8356]"
)


def test_a_notes_error_keeps_its_cause_and_leaves_its_traceback_out(tmp_path):
    results = write_all(tmp_path, [make("tensorflow", "bert", "fit", 32, status="error", message=TENSORFLOW_XLA_ERROR),
                                   make("jax", "bert", "fit", 32, 222.37)])
    render(results, results / "RESULTS.md")
    notes = paper(whole(results)).split("Notes:")[1]
    assert "1. InternalError: Graph execution error: TargetRegistry::lookupTarget failed" in notes
    assert 'triple "unknown" (the traceback left out)' in notes and "trainer.py" not in notes and "[Op:" not in notes


def test_a_failures_long_message_keeps_its_start_and_its_end_where_the_cause_is():
    from bench.measure.cell import MESSAGE_HEAD, MESSAGE_TAIL, clipped

    assert clipped("short") == "short"
    kept = clipped(TENSORFLOW_XLA_ERROR * 3)
    assert kept.startswith("InternalError: Graph execution error:") and kept.endswith(TENSORFLOW_XLA_ERROR[-200:])
    assert len(kept) < MESSAGE_HEAD + MESSAGE_TAIL + 100 and "characters left out: the cell's log has them" in kept


def spread(value, n=5):
    """n steps whose median and mean are `value`, with a 2% symmetric spread."""
    half = [value * (1 - 0.02 * (i + 1)) for i in range(n // 2)]
    return half + [value] + [value * (1 + 0.02 * (i + 1)) for i in range(n // 2)]


def make(
    backend,
    model,
    task,
    bs,
    ms=None,
    *,
    status="ok",
    message=None,
    profile="paper",
    machine=A100,
    variant="default",
    unit="ms/step",
    tokens=None,
    git=COMMIT_A,
    created="2026-11-20T10:00:00+00:00",
    repeats=None,
    steadiness=None,
    reference=None,
):
    """A schema-valid result; `ms` is the median of its timed steps (or a list of raw step times). `repeats`: its
    processes (default: the profile's, 3 for paper, else 1), each 1% apart, centred on `ms`."""
    prof = get_profile(profile)
    repeats = repeats or (3 if profile == "paper" else 1)
    cell = Cell(backend, model, task, bs, profile, variant, prof.warmup_steps, 5)
    settings = {"unit": unit}
    if backend == "native-torch":
        settings.update(
            variant=variant,
            compile_mode="reduce-overhead" if variant == "compiled" else None,
            parameter_dtypes=["float32"],
        )
    else:
        settings.update(
            jit_compile=backend != "torch", dtype_policy="bfloat16" if model in ("gemma", "mistral") else "float32"
        )
    process = {
        "python": "3.11.7",
        "environment": {"backend": backend, "lock_sha256": LOCKS[backend] + "0123456789abcdef"},
        "packages": PACKAGES[backend],
        "variables": {"KERAS_BACKEND": backend}
        if backend in ("jax", "torch")
        else ({"XLA_FLAGS": "--xla_gpu_autotune_level=2"} if backend == "tensorflow" else {}),
    }
    framework = FRAMEWORK[backend] if machine["gpus"] else {**FRAMEWORK[backend], "gpus": []}
    # a GPU run records its framework's peak device memory (required by the schema)
    memory = (
        {"framework": framework["framework"], "device": "GPU:0", "peak_allocated_gib": 12.5, "source": "test"}
        if machine["gpus"]
        else None
    )
    if status == "ok":
        timed = ms if isinstance(ms, list) else spread(ms)
        runs = [
            Run(
                status="ok",
                first_step_ms=5000.0 + 100 * r,
                timed_ms=[t * (1 + 0.01 * (r - (repeats - 1) / 2)) for t in timed],
                tokens_per_step=tokens,
                settings=settings,
                framework=framework,
                process=process,
                exit_code=0,
                steadiness=steadiness,
                reference=reference,
                device_memory=memory,
            )
            for r in range(repeats)
        ]
    else:
        runs = [
            Run(
                status=status,
                message=message,
                process=process if status != "unsupported" else {},
                exit_code=1 if status != "unsupported" else None,
            )
        ]
    provenance = {
        "git": git,
        "machine": machine,
        "profile_choice": "default: CUDA GPU visible" if machine["gpus"] else "default: no CUDA GPU visible",
    }
    return Result(cell, runs, unit, provenance, created)


def paper_a100():
    """A partial paper matrix on an A100, exercising every rendering rule."""
    return [
        # SAM fit: every column; JAX fastest.
        make("keras2", "sam", "fit", 1, 386.93),
        make("tensorflow", "sam", "fit", 1, 355.25 * 1.05),
        make("jax", "sam", "fit", 1, 330.0),
        make("torch", "sam", "fit", 1, 1388.87, repeats=2),
        make("native-torch", "sam", "fit", 1, 700.0, variant="eager"),
        make("native-torch", "sam", "fit", 1, 350.0, variant="compiled"),
        # SAM predict: TF and JAX tie at the shown precision (376.3): both bold.
        make("keras2", "sam", "predict", 4, 1859.27),
        make("tensorflow", "sam", "predict", 4, 376.31),
        make("jax", "sam", "predict", 4, 376.34),
        make("torch", "sam", "predict", 4, 1720.96),
        # StableDiffusion fit: PyTorch OOM, compiled native PyTorch timed out.
        make("tensorflow", "stable_diffusion", "fit", 8, 392.24),
        make("jax", "stable_diffusion", "fit", 8, 391.21),
        make(
            "torch",
            "stable_diffusion",
            "fit",
            8,
            status="oom",
            message="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        ),
        make(
            "native-torch",
            "stable_diffusion",
            "fit",
            8,
            status="timeout",
            message="no result after 3600 s; killed",
            variant="compiled",
        ),
        # StableDiffusion predict: another unit.
        make("tensorflow", "stable_diffusion", "predict", 13, 600.2, unit="ms/denoising step"),
        make("jax", "stable_diffusion", "predict", 13, 640.0, unit="ms/denoising step"),
        # BERT fit: PyTorch failed (message with a pipe and a newline); JAX 10% slower than published; another commit.
        make("keras2", "bert", "fit", 32, 486.00),
        make("tensorflow", "bert", "fit", 32, 214.49, git=COMMIT_B, created="2026-11-21T09:30:00+00:00"),
        make("jax", "bert", "fit", 32, 222.37 * 1.1),
        make("torch", "bert", "fit", 32, status="error", message="RuntimeError: shape | mismatch\n  at step 3"),
        make("native-torch", "bert", "fit", 32, 400.0, variant="eager"),
        # BERT fit at a batch size the published table does not have: renders after BERT fit (32).
        make("jax", "bert", "fit", 16, 120.0),
        # BERT predict: only Keras 2 and JAX ran (best marked †).
        make("keras2", "bert", "predict", 256, 470.12),
        make("jax", "bert", "predict", 256, 418.72),
        # Gemma: Keras 2 NA, generate in ms/call with tokens/s.
        make("keras2", "gemma", "fit", 8, status="unsupported", message="Gemma needs Keras 3; NA as published"),
        make("tensorflow", "gemma", "fit", 8, 232.52),
        make("jax", "gemma", "fit", 8, 273.67),
        make("keras2", "gemma", "generate", 32, status="unsupported", message="Gemma needs Keras 3; NA as published"),
        make("jax", "gemma", "generate", 32, 1128.21, unit="ms/call", tokens=32 * 45),
        make("tensorflow", "gemma", "generate", 32, 1134.91, unit="ms/call", tokens=32 * 45),
    ]


def paper_h100():
    return [
        make("jax", "bert", "fit", 32, 150.0, machine=H100),
        make("tensorflow", "bert", "fit", 32, 140.0, machine=H100),
    ]


def smoke_cpu():
    kw = dict(profile="smoke", machine=CPU, created="2026-11-19T08:00:00+00:00")
    return [
        make("jax", "bert", "fit", 2, [5.0, 14.7, 30.0, 14.0, 15.0], **kw),  # a noisy cell
        make("keras2", "bert", "fit", 2, 20.0, reference={"before_ms": 1.0, "after_ms": 1.3}, **kw),
        # Unsteady (a compile in the timed steps), and within 6% of TF while the machine drifted 30%: not resolved.
        make(
            "torch",
            "bert",
            "fit",
            2,
            0.9,
            reference={"before_ms": 1.1, "after_ms": 1.2},
            steadiness={
                "steady": False,
                "reasons": ["1 compile/retrace event(s) inside the timed steps"],
                "warmup_steps_run": 4,
                "compile_events_timed": 1,
                "outliers": [],
            },
            **kw,
        ),
        make("tensorflow", "bert", "fit", 2, 0.95, reference={"before_ms": 1.0, "after_ms": 1.05}, **kw),
        make(
            "native-torch",
            "bert",
            "predict",
            2,
            status="error",
            message="ImportError: no module named transformers",
            variant="eager",
            **kw,
        ),
    ]


def write_all(results_dir, results):
    for r in results:
        r.write(results_dir)
    return results_dir


@pytest.fixture(scope="module", autouse=True)
def no_committed_noise_study(tmp_path_factory):
    """A one-process cell borrows its machine's spread from a noise study, looked for beside the results and in the
    repository's results/: the fixtures' machines must not find the committed one."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bench.judge.noise_file, "REPO_ROOT", tmp_path_factory.mktemp("no-repo"))
        yield


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """(the results folder, every table's whole text: its RESULTS.md part and its parts of the study pages)."""
    results = write_all(tmp_path_factory.mktemp("results"), smoke_cpu() + paper_h100() + paper_a100())
    render(results, results / "RESULTS.md")
    return results, whole(results)


def whole(folder):
    """RESULTS.md with each table's parts of the study pages beside it appended to its part (a page's section
    under no table, such as the published table's, as a section of its own), in the pages' order."""
    merged = sections((folder / "RESULTS.md").read_text())
    for name in [*sorted(p.name for p in folder.glob("tables-*.md")), *PAGE_INTROS]:  # machine pages: whole tables
        if (folder / name).exists():
            for head, body in sections((folder / name).read_text()).items():
                merged[head] = merged[head] + body.split("\n", 1)[1] if head in merged else body
    return "".join(f"## {body}" for body in merged.values())


def check_golden(name, text):
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        return
    assert path.exists(), f"no golden {path}; create it deliberately with BENCH_UPDATE_GOLDEN=1"
    expected = path.read_text()
    if text != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), text.splitlines(True), "golden", "rendered"))
        pytest.fail(
            f"{name} differs from its golden (BENCH_UPDATE_GOLDEN=1 regenerates it, deliberately):\n{diff[:6000]}"
        )


def sections(text):
    """{heading: body} of the '## ' sections."""
    parts = re.split(r"^## ", text, flags=re.M)[1:]
    return {p.splitlines()[0]: p for p in parts}


PEAK_MEMORY = re.compile(r" · \d+(?:\.\d)? GiB(?: RSS)?")


def row(section, label, nth=0, memory=False):
    """The cells of the nth table line starting with `label` in a section; without each cell's peak memory unless
    asked (test_each_cell_shows_its_peak_memory checks it)."""
    lines = [l for l in section.splitlines() if l.startswith(f"| {label} ")]
    cells = [c.strip() for c in lines[nth].strip("|").split(" | ")]
    return cells if memory else [PEAK_MEMORY.sub("", c) for c in cells]


def test_each_cell_shows_its_peak_memory(rendered):
    """The device's peak allocation on a GPU, the process's resident memory on a CPU, as each result recorded."""
    text = rendered[1]
    sam = row(paper(text), "SegmentAnything fit", memory=True)
    assert sam[4] == "**330.0 ±4.5% · 12.5 GiB**" and sam[2] == "386.9 ±4.5% · 12.5 GiB"
    assert "peak memory over its processes" in text


def paper(text):
    return next(body for head, body in sections(text).items() if head.startswith("1. paper") and "A100" in head)


# ---------------------------------------------------------------- golden


def test_golden_markdown(rendered):
    check_golden("RESULTS.md", (rendered[0] / "RESULTS.md").read_text())


def test_golden_study_pages(rendered):
    written = sorted(name for name in PAGE_INTROS if (rendered[0] / name).exists())
    assert written == ["COSTS.md", "DETAILS.md", "PROVENANCE.md", "ROOFLINE.md"]  # no stack, generate or tuning
    for name in written:
        check_golden(f"pages/{name}", (rendered[0] / name).read_text())


def test_golden_no_results(tmp_path, capsys):
    (tmp_path / "none").mkdir()  # a folder that is not there is refused (a mistyped RESULTS=)
    assert cli.main(["table", "--results-dir", str(tmp_path / "none")]) == 0
    text = (tmp_path / "none" / "RESULTS.md").read_text()
    assert "No results yet" in text
    check_golden("RESULTS-empty.md", text)


def test_rendering_is_deterministic(rendered, tmp_path):
    results = rendered[0]
    figures = {p.name: p.read_bytes() for p in (results / "figures").glob("*.png")}
    render(results, tmp_path / "again.md")
    moved = lambda text: text.replace("](figures/", f"]({os.path.relpath(results / 'figures', tmp_path)}/")  # noqa: E731
    assert (tmp_path / "again.md").read_text() == moved((results / "RESULTS.md").read_text())
    for name in PAGE_INTROS:
        assert (tmp_path / name).exists() == (results / name).exists()
        if (results / name).exists():
            again = (tmp_path / name).read_text().replace("again.md", "RESULTS.md")
            assert again == moved((results / name).read_text())
    assert {p.name: p.read_bytes() for p in (results / "figures").glob("*.png")} == figures


# ---------------------------------------------------------------- tables


def test_profiles_and_machines_get_separate_tables_paper_first(rendered):
    heads = list(sections(rendered[1]))
    assert heads == [
        "Findings, re-tested on a GPU (1x NVIDIA A100-SXM4-40GB: part 1)",
        "How to read the tables",
        "1. paper profile — 1x NVIDIA A100-SXM4-40GB",
        "2. paper profile — 1x NVIDIA H100 80GB HBM3",
        "3. smoke profile — CPU AMD EPYC (2 cores)",
        "Studies",
        "The published table against the A100's limits",  # after every table: it needs no result
    ]
    h100 = sections(rendered[1])[heads[3]].split("### ")[0]
    assert "150.0" in h100 and "244.6" not in h100 and "386.9" not in h100  # no A100 number in the H100 table


def test_a_full_size_cpu_profile_table_says_so_in_its_title(tmp_path):
    # make bench-cpu-full's results sit in results/cpu-full, rendered by make table beside the smoke table
    write_all(tmp_path / "cpu-full", [make("jax", "bert", "fit", 2, 5300.0, profile="cpu", machine=CPU)])
    write_all(tmp_path, [make("jax", "bert", "fit", 2, 3.4, profile="smoke", machine=CPU)])
    render(tmp_path, tmp_path / "RESULTS.md")
    assert list(sections(whole(tmp_path))) == [
        "How to read the tables",
        "1. smoke profile — CPU AMD EPYC (2 cores)",
        "2. cpu profile (full size: paper shapes, batch ≤ 2) — CPU AMD EPYC (2 cores)",
        "Studies",
        "The published table against the A100's limits",
    ]


def test_a_full_size_table_says_what_each_cell_cost_beside_the_plan(tmp_path):
    import json

    ok = make("jax", "bert", "fit", 2, 5300.0, profile="cpu", machine=CPU)
    ok.runs[0].setup_s, ok.runs[0].wall_s, ok.runs[0].process["peak_rss_gib"] = 14.7, 46.6, 3.25
    failed = make("torch", "bert", "fit", 2, profile="cpu", machine=CPU, status="error", message="boom")
    failed.runs[0].wall_s = 12.0
    write_all(tmp_path / "cpu-full", [ok, failed])
    plan = {"profile": "cpu", "cells": [{"key": ok.cell.key, "memory_gib": 2.92}]}
    (tmp_path / "cpu-full" / "plan-cpu.json").write_text(json.dumps(plan))
    write_all(tmp_path, [make("jax", "bert", "fit", 2, 3.4, profile="smoke", machine=CPU)])
    render(tmp_path, tmp_path / "RESULTS.md")
    heads = sections(whole(tmp_path))
    cpu = heads["2. cpu profile (full size: paper shapes, batch ≤ 2) — CPU AMD EPYC (2 cores)"].split(
        "What each cell cost to run"
    )[1]
    assert "2 cells, 0:00:59 of cell processes in all." in cpu
    assert row(cpu, "BERT fit")[2:] == ["jax", "ok", "14.7", "5.0", "5 × 5300.0", "46.6", "3.2", "2.9"]
    assert row(cpu, "BERT fit", 1)[2:] == ["torch", "error", "", "", "", "12.0", "", ""]
    assert (
        "What each cell cost" not in heads["1. smoke profile — CPU AMD EPYC (2 cores)"]
    )  # smoke: tiny models, no plan


def test_rows_in_published_order_with_extra_rows_after_their_task(rendered):
    labels = [
        l.split("|")[1].strip()
        for l in paper(rendered[1]).split("### ")[0].splitlines()
        if l.startswith("| ") and "Model / task" not in l
    ]
    assert labels == [
        "SegmentAnything fit",
        "SegmentAnything predict",
        "StableDiffusion fit",
        "StableDiffusion predict (ms/denoising step)",
        "BERT fit",
        "BERT fit",
        "BERT predict",
        "Gemma fit",
        "Gemma generate (ms/call)",
    ]
    assert row(paper(rendered[1]), "BERT fit", 1)[1] == "16 (not a published row)"
    assert "Mistral fit (batch 8)" in paper(rendered[1])  # listed as not measured


def test_bold_marks_only_a_confident_winner(rendered):
    section = paper(rendered[1])
    sam = row(section, "SegmentAnything fit")  # JAX 330 against TF 373 and PyTorch 1389, 3 processes each
    assert sam[4] == "**330.0 ±4.5%**" and "**" not in sam[3] + sam[5] + sam[2] + sam[6] + sam[7]
    assert sam[8] == "330.0 (JAX)"
    # TF and JAX 0.01% apart: a tie, no bold, both named.
    tie = row(section, "SegmentAnything predict")
    assert "**" not in "".join(tie) and tie[8] == "376.3 (TF ≈ JAX, tie)"
    # Two Keras 3 backends ran, 14% apart: the faster wins; † says fewer than three were ranked.
    gemma = row(section, "Gemma fit")
    assert gemma[3] == "**232.5 ±4.5%**" and gemma[4] == "273.7 ±4.5%" and gemma[8] == "232.5 (TF) †"
    # A single Keras 3 number is not called the fastest: no bold, the best column still has it (with †).
    bert = row(section, "BERT predict")
    assert bert[4] == "418.7 ±4.5%" and bert[3] == bert[5] == "" and bert[8] == "418.7 (JAX) †"
    smoke = sections(rendered[1])["3. smoke profile — CPU AMD EPYC (2 cores)"]
    assert row(smoke, "BERT fit")[5] == "0.900 ±5.0%ˢ ⚠" and row(smoke, "BERT fit")[4] == "14.70 ±171%ˢ noisy"


def test_status_cells_and_notes(rendered):
    section = paper(rendered[1])
    sd = row(section, "StableDiffusion fit")
    assert sd[5] == "OOM [1]" and sd[7] == "timeout [2]" and sd[2] == "" and sd[6] == ""
    assert row(section, "BERT fit")[5] == "error [3]"
    assert (
        row(section, "Gemma fit")[2] == "NA [4]" and row(section, "Gemma generate (ms/call)")[2] == "NA [4]"
    )  # one note for one message
    notes = section.split("Notes:")[1]
    assert "1. torch.OutOfMemoryError: CUDA out of memory" in notes
    assert "3. RuntimeError: shape \\| mismatch at step 3" in notes  # one line, pipe escaped
    assert "4. Gemma needs Keras 3; NA as published" in notes


def test_each_cell_shows_its_figure_and_its_intervals_wider_side(rendered):
    section = paper(rendered[1])
    keras2 = make("keras2", "sam", "fit", 1, 386.93)  # the fixture's cell: 3 processes of 5 steps
    found = stats.estimate([run.timed_ms for run in keras2.runs])
    assert found.basis == stats.PROCESSES and found.processes == 3
    assert row(section, "SegmentAnything fit")[2] == f"{found.center:.1f} ±{found.half_width() * 100:.1f}%"
    legend = sections(rendered[1])["How to read the tables"]  # once for every table
    assert "wider side of its 95% interval" in legend and "coefficient of variation" not in rendered[1]
    facts = "Processes per cell: 3 (24 cells), 2 (1 cell); timed steps per process: 5, a fixed count (25 cells)."
    assert facts in section
    smoke = sections(rendered[1])["3. smoke profile — CPU AMD EPYC (2 cores)"]
    assert row(smoke, "BERT fit")[4] == "14.70 ±171%ˢ noisy"  # one process: steps only; a spread beyond the bound
    assert "Processes per cell: 1 (4 cells)" in smoke
    assert "stand on: steps only (4 cells); 1 noisy cell, not ranked" in smoke
    gen = row(section, "Gemma generate (ms/call)")
    assert gen[4] == "1128.2 ±4.5% · 1276.4 tok/s"  # 1440 tokens / 1.12821 s = 1276.38; a tie with TF: no bold
    assert row(section, "StableDiffusion predict (ms/denoising step)")[3] == "**600.2 ±4.5%**"
    comparison = section.split("Measured ÷ published")[1]
    assert row(comparison, "StableDiffusion predict (ms/denoising step)")[3] == "0.974 (0.932–1.02; 600.2 / 616.0)"


# ---------------------------------------------------------------- provenance


def test_provenance_block_lists_hardware_software_and_every_commit(rendered):
    block = paper(rendered[1]).split("### Where these numbers come from")[1].split("### ")[0]
    assert "NVIDIA A100-SXM4-40GB (driver 535.104.05, driver CUDA 12.2, 40960 MiB)" in block
    assert "Intel(R) Xeon(R) CPU @ 2.20GHz, 12 logical CPUs" in block
    assert "`aaaaaaaaaaaa` (29 cells)" in block and "`bbbbbbbbbbbb` +dirty (uncommitted changes) (1 cell)" in block
    assert "2026-11-20T10:00:00+00:00 to 2026-11-21T09:30:00+00:00" in block
    env = {
        r[0]: r[1:]
        for r in (l.strip("|").split("|") for l in block.splitlines() if l.startswith("| "))
        for r in [[c.strip() for c in r]]
    }
    header = env[""]
    assert header == [
        "Keras 2 (TensorFlow)",
        "Keras 3 (TensorFlow)",
        "Keras 3 (JAX)",
        "Keras 3 (PyTorch)",
        "Native PyTorch",
    ]
    assert env["tf-keras"][0] == "2.16.0" and env["jax"][2] == "0.4.28" and env["peft"][4] == "0.10.0"
    assert env["Env lock sha256"] == ["222222220123", "tftftftf0123", "jjjjjjjj0123", "pppppppp0123", "nnnnnnnn0123"]
    assert env["jit_compile / torch.compile"][:4] == ["True", "True", "True", "False"]
    assert (
        env["jit_compile / torch.compile"][4]
        == "eager: no torch.compile; compiled: torch.compile(mode=reduce-overhead)"
    )
    assert "XLA_FLAGS=--xla_gpu_autotune_level=2" in env["Behaviour variables beyond the suite's defaults"][1]
    assert env["Dtype policy (Keras) / parameter dtypes"][1] == "float32; bfloat16"  # every distinct value
    assert env["Precision flags"][2] == "default_matmul_precision=None"


# ---------------------------------------------------------------- comparison


def test_comparison_with_published_for_paper_only(rendered):
    section = paper(rendered[1])
    comparison = section.split("### 1.1")[1]
    assert "Copied verbatim from ../shared/reference" in comparison  # the CSV's source note is kept
    # ours over published, with our interval divided by the published figure (which has none)
    assert row(comparison, "BERT fit")[4] == "1.10 (1.05–1.15; 244.6 / 222.4)"
    assert row(comparison, "BERT fit")[2].endswith("; 486.0 / 486.0)")
    assert row(comparison, "BERT fit")[5] == "error"
    assert row(comparison, "Gemma fit")[2] == "NA (published NA)"
    assert row(comparison, "BERT fit")[6].endswith("; 214.5 / 214.5)")  # best vs published best
    ratios = comparison.split("Measured ÷ published")[1].split("Throughput speedup per row")[0]
    assert sum(1 for l in ratios.splitlines() if l.startswith("| BERT fit ")) == 1  # the bs-16 row is not compared
    h100 = sections(rendered[1])["2. paper profile — 1x NVIDIA H100 80GB HBM3"]
    assert "not on the published 1x NVIDIA A100 40GB: every ratio includes the hardware difference" in h100
    assert "hardware difference" not in section
    smoke = sections(rendered[1])["3. smoke profile — CPU AMD EPYC (2 cores)"]
    assert "Not compared with the published numbers" in smoke and "Measured ÷ published" not in smoke


def test_derived_findings_ours_and_published(rendered):
    section = paper(rendered[1]).split("### 1.1")[1]
    findings = section.split("Throughput speedup per row")[1]
    sam = row(findings, "SegmentAnything")
    # ours: the geometric mean of 386.93/330 and 1859.27/376.31 (the fastest of the tie), with its interval
    ours = stats.fmt_factor(math.sqrt(386.93 / 330 * 1859.27 / 376.31))
    assert re.fullmatch(re.escape(ours) + r" \(\S+–\S+\) Keras 3 faster \(2 rows\)", sam[1]), sam[1]
    # published: the geometric mean beside the arithmetic one its Figure 1 shows
    assert sam[2] == (
        f"{stats.fmt_factor(math.sqrt(386.93 / 355.25 * 1859.27 / 376.34))} geometric · "
        f"{stats.fmt_factor((386.93 / 355.25 + 1859.27 / 376.34) / 2)} arithmetic, as Figure 1 (2 rows)"
    )
    assert sam[3].startswith(f"{stats.fmt_factor(700 / 330)} (") and sam[3].endswith("Keras 3 faster (1 row of 2)")
    assert sam[4].startswith(f"{stats.fmt_factor(350 / 330)} (") and sam[4].endswith("(1 row of 2)")
    assert row(findings, "Gemma")[1] == "—" and row(findings, "Gemma")[2] == "—"
    legend = sections(rendered[1])["How to read the tables"]  # how a speed-up is computed: stated once
    assert "Figure 1 averages the rows arithmetically; ours is geometric so that it has an interval" in legend
    assert rendered[1].count("Figure 1 averages the rows arithmetically") == 1
    assert (
        "Single fastest Keras 3 backend, ours: no single backend wins every row (rows won with confidence, as the "
        "table's verdicts line says, of the 7 with two or more ranked Keras 3 backends: TF 3, JAX 1; 3 ties, 0 "
        "inconclusive)" in section
    )
    assert (
        "Single fastest Keras 3 backend, published: no single backend wins every row (rows won, of the 12 with ≥2 "
        "Keras 3 numbers; the published figures have no interval, so the fastest at the shown precision wins and a "
        "tie counts for each tied backend: JAX 7, TF 5)" in section
    )


# ---------------------------------------------------------------- figures


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def test_figures_are_pngs_linked_relatively(rendered):
    results, text = rendered
    links = re.findall(r"\]\((figures/[^)]+\.png)\)", text)
    # A100: 3; H100: 1 (no Keras 2, no native PyTorch); smoke: 2 (native PyTorch failed); and each table's roofline
    assert len(links) == 6 + 3
    for link in links:
        width, height = png_size(results / link)  # fixed sizes: 7x4 in (speedups), wider with more rows (per-row)
        if link.endswith("-roofline.png"):
            assert (width, height) == (750, 500)
            continue
        assert (width, height) == (700, 400) if "speedup" in link else width >= 700 and height == 500
    assert {p.name for p in (results / "figures").iterdir()} == {Path(l).name for l in links}
    assert "paper__1x-nvidia-a100-sxm4-40gb-speedup-keras2.png" in text
    assert (
        "not drawn (no row has the numbers it needs)" in sections(text)["2. paper profile — 1x NVIDIA H100 80GB HBM3"]
    )


def test_stale_figures_of_vanished_tables_are_removed(tmp_path):
    results = write_all(tmp_path / "results", smoke_cpu())
    (results / "figures").mkdir()
    (results / "figures" / "paper__old-machine-per-row.png").write_bytes(b"old")
    (results / "figures" / "someone-elses.png").write_bytes(b"keep")
    render(results, results / "RESULTS.md")
    names = {p.name for p in (results / "figures").iterdir()}
    assert "paper__old-machine-per-row.png" not in names and "someone-elses.png" in names


# ---------------------------------------------------------------- errors


def test_corrupt_result_file_fails_naming_it(tmp_path, capsys):
    results = write_all(tmp_path / "results", smoke_cpu()[:1])
    bad = results / "smoke" / "cpu-amd-epyc-2-cores" / "jax__bert__predict__bs2__default.json"
    bad.write_text('{"schema_version": 1, "cell": ')
    assert cli.main(["table", "--results-dir", str(results)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot read result file") and str(bad) in err
    assert not (results / "RESULTS.md").exists()


def test_out_option_and_existing_output_is_replaced(tmp_path, capsys):
    results = write_all(tmp_path / "results", smoke_cpu())
    out = tmp_path / "elsewhere" / "R.md"
    assert cli.main(["table", "--results-dir", str(results), "--out", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    assert "](../results/figures/smoke__cpu-amd-epyc-2-cores-per-row.png)" in out.read_text()


# ---------------------------------------------------------------- README


def test_readme_section_gets_the_gpu_headline_and_keeps_the_rest(rendered, tmp_path):
    """The README's headline: the first GPU paper table's cells beside the published ones, and the findings."""
    from bench.judge.analysis import analyse

    results, _ = rendered
    readme = tmp_path / "README.md"
    readme.write_text(f"# Title\n\nbefore\n\n{README_START}\nold table\n{README_END}\n\nafter\n")
    render(results, tmp_path / "RESULTS.md", readme=readme)
    got = readme.read_text()
    assert got.startswith("# Title\n\nbefore\n\n" + README_START) and got.endswith(README_END + "\n\nafter\n")
    assert "old table" not in got
    gpu = next(t for t in analyse(results).tables if t.paper)  # the A100 sorts first
    assert f"**{gpu.group.machine}**" in got and "The published findings, re-tested:" in got
    bert_fit = next(f for f in gpu.rows if (f.key.model, f.key.task) == ("bert", "fit"))
    jax = bert_fit.cells[next(c for c in bert_fit.cells if c.backend == "jax")]
    assert f"222.4 → {fmt_ms(gpu.estimate(jax).center)} ±" in got  # the published figure beside ours
    render(results, tmp_path / "RESULTS.md", readme=readme)
    assert readme.read_text() == got  # idempotent


def test_readme_without_markers_is_refused_untouched(rendered, tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# no markers\n")
    with pytest.raises(BenchError, match="README.md needs exactly one"):
        render(rendered[0], tmp_path / "RESULTS.md", readme=readme)
    assert readme.read_text() == "# no markers\n"


def test_unsteady_cells_drift_and_inconclusive_rows_are_shown(rendered):
    section = rendered[1].split("smoke profile — CPU")[-1]
    bert = row(section, "BERT fit")
    assert bert[5] == "0.900 ±5.0%ˢ ⚠"  # Keras 3 (PyTorch): a compile inside its timed steps
    assert bert[8] == "0.900 (lowest: PyTorch, inconclusive) †"  # one process each: steps only, nothing decided
    assert "0 winners, 0 ties, 1 inconclusive among the 1 row" in section and "1 unsteady cell" in section
    assert "ranged from 1 to 1.3 ms, 30% apart" in section
    assert "1 compile/retrace event(s) inside the timed steps" in section  # the reason, in the per-cell details


def test_results_of_cells_no_longer_in_the_registry_are_listed_not_tabled(tmp_path):
    results = write_all(tmp_path / "results", smoke_cpu())
    kept = next(p for p in results.rglob("keras2__bert__fit*.json"))
    data = kept.read_text().replace('"model": "bert"', '"model": "retired_model"')
    (kept.parent / "keras2__retired_model__fit__bs2__default.json").write_text(data)
    render(results, results / "RESULTS.md")
    text = (results / "RESULTS.md").read_text()
    assert "## Results of cells no longer in the registry" in text and "unknown model 'retired_model'" in text


# ---------------------------------------------------------------- verdicts


def rendered_table(tmp_path, results):
    render(write_all(tmp_path / "results", results), tmp_path / "RESULTS.md")
    return whole(tmp_path)


def test_a_confident_difference_wins_a_shown_equivalence_ties_and_a_wide_interval_decides_nothing(tmp_path):
    # JAX 1.5x faster than TF on BERT fit (3 processes each); 1.02x on BERT predict with 3 processes (an interval
    # too wide to call either: undecided, not a tie) and on Mistral fit with 8 (within 5%: the same, a tie)
    text = rendered_table(
        tmp_path,
        [
            make("jax", "bert", "fit", 32, 110.0),
            make("tensorflow", "bert", "fit", 32, 165.0),
            make("jax", "bert", "predict", 256, 110.0),
            make("tensorflow", "bert", "predict", 256, 112.2),
            make("jax", "mistral", "fit", 8, 110.0, repeats=8),
            make("tensorflow", "mistral", "fit", 8, 112.2, repeats=8),
        ],
    )
    table = paper(text)
    fit, predict, mistral = row(table, "BERT fit"), row(table, "BERT predict"), row(table, "Mistral fit")
    assert fit[4] == "**110.0 ±4.5%**" and fit[3] == "165.0 ±4.5%" and fit[8] == "110.0 (JAX) †"
    assert "**" not in "".join(predict) and predict[8] == "110.0 (lowest: JAX, inconclusive) †"
    assert "**" not in "".join(mistral) and mistral[8] == "110.0 (JAX ≈ TF, tie) †"
    assert "1 winner, 1 tie, 1 inconclusive among the 3 rows" in table
    assert "JAX 1; 1 tie, 1 inconclusive" in table
    assert "3 comparisons with an interval judged together, each at 98.33%" in table
    assert "rows decided: 2 of 3" in table


def test_a_noisy_cell_is_shown_and_not_ranked(tmp_path):
    # JAX has the lowest figure, but its steps jump between halves (a disturbed machine); TF beats PyTorch clearly
    jumpy = [40.0, 41.0, 40.5, 80.0, 81.0, 80.5]
    text = rendered_table(
        tmp_path,
        [
            make("jax", "bert", "fit", 32, jumpy),
            make("tensorflow", "bert", "fit", 32, 110.0),
            make("torch", "bert", "fit", 32, 220.0),
        ],
    )
    fit = row(paper(text), "BERT fit")
    assert fit[4].startswith("60.") and fit[4].endswith(" noisy") and "**" not in fit[4]
    assert fit[3] == "**110.0 ±4.5%**"  # the winner among the ranked backends
    assert fit[8] == "110.0 (TF) †; JAX lower but noisy"
    assert "second half's median is" in paper(text).split("Per-cell measurements")[1]  # the reason, in the details


def test_a_row_of_one_process_per_cell_without_a_noise_study_names_no_winner(tmp_path):
    kw = dict(profile="smoke", machine=CPU)  # one process each; no noise study for this machine
    text = rendered_table(
        tmp_path, [make("jax", "bert", "fit", 2, 1.0, **kw), make("tensorflow", "bert", "fit", 2, 1.5, **kw)]
    )
    fit = row(text, "BERT fit")
    assert "**" not in "".join(fit) and fit[4] == "1.000 ±5.0%ˢ" and fit[8] == "1.000 (lowest: JAX, inconclusive) †"
    assert "0 winners, 0 ties, 1 inconclusive" in text and "stand on: steps only (2 cells)" in text


def test_a_one_process_cell_borrows_the_machines_noise_study_spread(tmp_path):

    results = tmp_path / "results"
    (results / "noise").mkdir(parents=True)
    write_noise_study(results, CPU, "smoke", dof=20)
    kw = dict(profile="smoke", machine=CPU)
    text = rendered_table(
        tmp_path, [make("jax", "bert", "fit", 2, 1.0, **kw), make("tensorflow", "bert", "fit", 2, 1.5, **kw)]
    )
    fit = row(text, "BERT fit")
    assert fit[4].startswith("**1.000 ±") and fit[4].endswith("%ᵐ**") and fit[8] == "1.000 (JAX) †"
    assert "stand on: machine spread (2 cells)" in text


def test_the_speedups_carry_an_interval_and_a_verdict_and_no_ratio_prints_as_zero(tmp_path):
    text = rendered_table(
        tmp_path,
        [
            make("jax", "bert", "fit", 32, 110.0),
            make("tensorflow", "bert", "fit", 32, 165.0),
            make("keras2", "bert", "fit", 32, 330.0),
            make("native-torch", "bert", "fit", 32, 0.004, variant="compiled"),  # 27,500x faster: a tiny ratio
        ],
    )
    findings = paper(text).split("Throughput speedup per row")[1]
    bert = row(findings, "BERT")
    assert re.fullmatch(r"3\.00× \(\d\.\d+–\d\.\d+\) Keras 3 faster \(1 row\)", bert[1]), bert[1]
    assert re.fullmatch(r"3\.64e-05× \(\S+–\S+\) Keras 3 slower \(1 row\)", bert[4]), bert[4]
    assert not re.findall(r"(?<![\w.])0\.0+(?:×|–| \(|\)|;)", text)  # no ratio rounded to zero ("0.00×")


def test_out_never_replaces_a_result_file(tmp_path, capsys):
    results = write_all(tmp_path / "results", smoke_cpu()[:1])
    result_file = next(results.rglob("*.json"))
    before = result_file.read_bytes()
    assert cli.main(["table", "--results-dir", str(results), "--out", str(result_file)]) == 2
    assert "did not write" in capsys.readouterr().err and result_file.read_bytes() == before


def test_site_never_replaces_a_page_it_did_not_write(tmp_path, capsys):
    results = write_all(tmp_path / "results", smoke_cpu()[:1])
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<html>my own page</html>")
    assert cli.main(["table", "--results-dir", str(results), "--site", str(site)]) == 2
    assert "did not write" in capsys.readouterr().err
    assert (site / "index.html").read_text() == "<html>my own page</html>" and not (results / "RESULTS.md").exists()
    (site / "index.html").unlink()
    assert cli.main(["table", "--results-dir", str(results), "--site", str(site)]) == 0
    assert cli.main(["table", "--results-dir", str(results), "--site", str(site)]) == 0  # its own page: replaced


def test_two_processors_sold_under_one_name_get_a_table_each_and_neither_overwrites_the_other(tmp_path):
    """A reviewer's run on another processor model of the same name lands beside ours: its own folder, its own
    table, each titled by its processor's tag."""
    def on(fingerprint):
        return {**CPU, "processor": {"model": fingerprint[:2], "fingerprint": fingerprint}}

    ours = [make("jax", "bert", "fit", 2, 10.0, profile="smoke", machine=on("a" * 64))]
    theirs = [make("jax", "bert", "fit", 2, 30.0, profile="smoke", machine=on("b" * 64))]
    results = write_all(tmp_path / "results", ours + theirs)
    assert len(list((results / "smoke").glob("*/jax__bert__fit__bs2__default.json"))) == 2
    assert cli.main(["table", "--results-dir", str(results)]) == 0
    titles = [line for line in (results / "RESULTS.md").read_text().splitlines() if line.startswith("## ")]
    for tag in ("aaaaaaaaaaaa", "bbbbbbbbbbbb"):
        assert sum(f"processor {tag}" in title for title in titles) == 1


def test_an_out_of_another_kind_than_markdown_is_refused_before_anything_is_written(tmp_path, capsys):
    results = write_all(tmp_path / "results", smoke_cpu()[:1])
    out = tmp_path / "elsewhere" / "R.json"
    assert cli.main(["table", "--results-dir", str(results), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(out.with_suffix(".md")) in err and not out.parent.exists(), err


def outputs_of(results: Path) -> list[str]:
    """What make table wrote under the folder: every file but the result files themselves."""
    return sorted(str(p.relative_to(results)) for p in results.rglob("*") if p.is_file() and p.suffix != ".json")


def test_a_full_disk_mid_render_names_the_file_and_leaves_no_page_or_figure_of_that_render(tmp_path, monkeypatch,
                                                                                             capsys):
    """A full disk during make table once said "error: No space left on device" without the file, and left the
    figures it had written before it (the render half done)."""
    import errno
    import os

    import bench.base.atomic

    results = write_all(tmp_path / "results", smoke_cpu())
    real_fsync, calls = os.fsync, []

    def fills_up(fd):
        calls.append(fd)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(bench.base.atomic.os, "fsync", fills_up)
    assert cli.main(["table", "--results-dir", str(results)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: No space left on device: ") and ".tmp" not in err, err
    assert str(results) in err and err.count("\n") == 1, err
    assert outputs_of(results) == [], outputs_of(results)  # nothing of the render that failed: no page, no figure


def test_term_during_make_table_leaves_no_temporary_and_exits_143(tmp_path):
    """TERM to the group during make table once left results/figures/grid/.<name>.png.<random>.tmp."""
    import os
    import signal
    import subprocess
    import sys
    import time

    results = write_all(tmp_path / "results", smoke_cpu())
    marker = tmp_path / "writing"
    code = ("import os, sys, time\nimport bench.base.atomic\nreal = os.fsync\n"
            f"def slow(fd):\n    open({str(marker)!r}, 'w').close()\n    time.sleep(60)\n"
            "bench.base.atomic.os.fsync = slow\nfrom bench.cli import main\n"
            f"sys.exit(main(['table', '--results-dir', {str(results)!r}]))")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    assert [p for p in results.rglob("*.tmp")], "no temporary to leave"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM and "Traceback" not in err, (proc.returncode, err)
    assert [p for p in results.rglob("*.tmp")] == []
