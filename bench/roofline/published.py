"""The published table against the A100's limits: each published ms/step over our count of the step's work.

No GPU is needed: the published figures (bench/data/keras3_benchmarks_2024.csv, an A100 40GB) and the work of each
step at the paper shape (bench/models/<name>/work.py) give the FLOP/s and bytes/s each published cell achieved,
and the A100's datasheet (bench/catalogue/hardware.py) its ceilings. The published cells are all Keras (Keras 2 on
TensorFlow, Keras 3 on TensorFlow, JAX, PyTorch), so each is counted as the Keras model computes it (a LoRA fit's
merged kernels, keras-cv's v1 widths), and each at the modes its framework computes a float32 step in by default
(PyTorch's matmuls in full FP32, every other framework's in TF32): like for like with what each computed.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

from bench.base.published import published_ms, published_rows
from bench.catalogue.backends import get_backend
from bench.catalogue.hardware import A100_40GB, DEFAULT_FLOAT32_MODES, Datasheet, StepModes
from bench.catalogue.registry import get_model
from bench.catalogue.work import Work, cell_work
from bench.roofline.utilisation import Rate

PAPER = "paper"


@dataclass(frozen=True)
class PublishedCell(Rate):
    """A published cell: `ms` the published ms/step (ms per generate call; per denoising step for StableDiffusion
    predict), `work` our count of its step at the paper shape."""

    model: str
    task: str
    batch_size: int
    backend: str

    @property
    def modes(self) -> StepModes:
        """What the published step computed in: its framework's defaults (bench/catalogue/hardware.py
        DEFAULT_FLOAT32_MODES; Keras 3 PyTorch's float32 matmuls in full FP32, its convolutions in TF32; every other
        framework's in TF32), or its dtype."""
        return default_modes(self.work, get_backend(self.backend).framework)

    def mfu(self, sheet: Datasheet, mode: str | None = None) -> float:
        """Achieved over the peak of the step's own modes (or of `mode`, for all of its work)."""
        return self.flops_per_s / (self.modes if mode is None else StepModes(mode)).peak(sheet.flops)

    def bandwidth_use(self, sheet: Datasheet) -> float:
        return self.bytes_per_s / sheet.bandwidth

    @property
    def decode(self) -> bool:
        return self.work.forward_passes is not None


def default_modes(work: Work, framework: str) -> StepModes:
    """A step's modes under its framework's defaults on a GPU with TF32 tensor cores: a bfloat16 step's is its
    dtype; a float32 step's its framework's float32 matmul mode, and its convolutions' where it has any."""
    if work.dtype != "float32":
        return StepModes(work.dtype)
    matmul, convolution = DEFAULT_FLOAT32_MODES[framework]
    share = (work.convolution_flops or 0) / work.flops if work.flops else 0.0
    return StepModes(matmul, convolution if share else None, share)


def published_cells() -> list[PublishedCell]:
    """Every published cell with a figure and a count, in the published order."""
    figures, out = published_ms(), []
    for row in published_rows():
        spec = get_model(row.model)
        for backend, ms in figures[(row.model, row.task, row.batch_size)].items():
            work = cell_work(row.model, "keras", row.task, row.batch_size, spec.shape(PAPER)) if ms else None
            if ms and work is not None:
                out.append(PublishedCell(work, ms, row.model, row.task, row.batch_size, backend))
    return out


def backend_medians(cells: list[PublishedCell], sheet: Datasheet = A100_40GB) -> dict[str, tuple[float, int]]:
    """backend -> (median MFU of its compute cells (fit, predict), how many)."""
    out: dict[str, list[float]] = {}
    for c in cells:
        if not c.decode:
            out.setdefault(c.backend, []).append(c.mfu(sheet))
    return {b: (statistics.median(v), len(v)) for b, v in out.items()}
