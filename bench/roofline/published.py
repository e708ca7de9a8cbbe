"""The published table against the A100's limits: each published ms/step over our count of the step's work.

No GPU is needed: the published figures (bench/data/keras3_benchmarks_2024.csv, an A100 40GB) and the work of each
step at the paper shape (bench/models/<name>/work.py) give the FLOP/s and bytes/s each published cell achieved,
and the A100's datasheet (bench/roofline/hardware.py) its ceilings. The published cells are all Keras (Keras 2 on
TensorFlow, Keras 3 on TensorFlow, JAX, PyTorch), so each is counted as the Keras model computes it (a LoRA fit's
merged kernels, keras-cv's v1 widths).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

from bench.published import published_ms, published_rows
from bench.registry import get_model
from bench.roofline.hardware import A100_40GB, Datasheet
from bench.roofline.utilisation import Rate
from bench.work import cell_work

PAPER = "paper"


@dataclass(frozen=True)
class PublishedCell(Rate):
    """A published cell: `ms` the published ms/step (ms per generate call; per denoising step for StableDiffusion
    predict), `work` our count of its step at the paper shape."""

    model: str
    task: str
    batch_size: int
    backend: str

    def mfu(self, sheet: Datasheet, mode: str | None = None) -> float:
        """Achieved over the peak of `mode` (default: the step's dtype, float32 taken at its tensor-core rate, TF32)."""
        return self.flops_per_s / sheet.flops[mode or tensor_mode(self.work.dtype)]

    def bandwidth_use(self, sheet: Datasheet) -> float:
        return self.bytes_per_s / sheet.bandwidth

    @property
    def decode(self) -> bool:
        return self.work.forward_passes is not None


def tensor_mode(dtype: str) -> str:
    """The tensor-core mode a dtype's matmuls can run in on an A100/H100: float32 as TF32 (TensorFlow's and JAX's
    default there; PyTorch's matmuls stay full float32 unless told otherwise, its convolutions take TF32)."""
    return "tf32" if dtype == "float32" else dtype


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
