"""The datasheet peaks of the GPUs this suite knows, and which a machine's GPU name is.

Dense (no structured sparsity) figures, from NVIDIA's datasheets:
- A100 40GB (SXM4, what the published table ran on: GCP a2-highgpu-1g): "NVIDIA A100 Tensor Core GPU" datasheet
  (nvidia.com, 2020; table "A100 40GB SXM"): FP32 19.5 TFLOPS, TF32 Tensor Core 156, BFLOAT16 Tensor Core 312,
  GPU memory bandwidth 1,555 GB/s.
- H100 SXM (80GB HBM3): "NVIDIA H100 Tensor Core GPU" datasheet (nvidia.com, 2023; "H100 SXM" column, whose
  tensor figures are given with sparsity: half of each is dense): FP32 67 TFLOPS, TF32 Tensor Core 494.5 (989 with
  sparsity), BFLOAT16 Tensor Core 989.5 (1,979 with sparsity), GPU memory bandwidth 3.35 TB/s.
- H200 SXM (141GB HBM3e, which nvidia-smi names plainly "NVIDIA H200"): "NVIDIA H200 Tensor Core GPU" datasheet
  (nvidia.com, 2024; "H200 SXM" column, tensor figures with sparsity): the H100 SXM's compute, FP32 67 TFLOPS, TF32
  Tensor Core 494.5 dense (989 with sparsity), BFLOAT16 Tensor Core 989.5 dense (1,979), and GPU memory bandwidth
  4.8 TB/s. The H200 NVL (a PCIe card, "NVIDIA H200 NVL") has lower peaks and is not this datasheet.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Datasheet:
    name: str
    flops: dict[str, float]  # compute mode -> peak FLOP/s: "float32" (no tensor cores), "tf32", "bfloat16"
    bandwidth: float  # bytes/s of device memory
    source: str
    matches: tuple[str, ...]  # every one of these (case-insensitive) is in the GPU's name
    excludes: tuple[str, ...] = ()  # and none of these (another part of the same family)

    def to_dict(self) -> dict:
        return {"name": self.name, "flops": dict(self.flops), "bandwidth": self.bandwidth, "source": self.source}


A100_40GB = Datasheet(
    "NVIDIA A100 40GB (SXM4)",
    {"float32": 19.5e12, "tf32": 156e12, "bfloat16": 312e12},
    1555e9,
    "NVIDIA A100 Tensor Core GPU datasheet (2020), A100 40GB SXM: dense peaks",
    ("a100", "40gb"),
)
H100_SXM = Datasheet(
    "NVIDIA H100 SXM (80GB HBM3)",
    {"float32": 67e12, "tf32": 494.5e12, "bfloat16": 989.5e12},
    3.35e12,
    "NVIDIA H100 Tensor Core GPU datasheet (2023), H100 SXM: dense peaks (half the sparsity figures)",
    ("h100", "hbm3"),
)
H200_SXM = Datasheet(
    "NVIDIA H200 SXM (141GB HBM3e)",
    {"float32": 67e12, "tf32": 494.5e12, "bfloat16": 989.5e12},
    4.8e12,
    "NVIDIA H200 Tensor Core GPU datasheet (2024), H200 SXM: dense peaks (half the sparsity figures)",
    ("h200",),
    excludes=("nvl",),
)
DATASHEETS = (A100_40GB, H100_SXM, H200_SXM)


def datasheet_for(gpu_name: str | None) -> Datasheet | None:
    """The datasheet of a GPU by its name (nvidia-smi's, e.g. "NVIDIA A100-SXM4-40GB"); None when unknown."""
    name = (gpu_name or "").lower()
    return next(
        (
            d
            for d in DATASHEETS
            if name and all(m in name for m in d.matches) and not any(x in name for x in d.excludes)
        ),
        None,
    )


# What a mode is called in the tables.
MODE_TEXT = {"bfloat16": "bfloat16", "tf32": "TF32", "float32": "FP32"}


@dataclass(frozen=True)
class StepModes:
    """The compute modes of one step's work: its matrix products' and, where it has any, its convolutions'
    (`convolution_share` of its FLOPs): PyTorch's float32 convolutions take TF32 by default while its matmuls stay
    full FP32; every other framework computes both alike."""

    matmul: str
    convolution: str | None = None
    convolution_share: float = 0.0

    @property
    def mixed(self) -> bool:
        return self.convolution is not None and self.convolution != self.matmul and self.convolution_share > 0

    @property
    def name(self) -> str:
        """'tf32'; 'float32, convolutions tf32' where the two differ."""
        return f"{self.matmul}, convolutions {self.convolution}" if self.mixed else self.matmul

    @property
    def text(self) -> str:
        return f"{MODE_TEXT[self.matmul]}, convolutions {MODE_TEXT[self.convolution]}" if self.mixed \
            else MODE_TEXT[self.matmul]

    def peak(self, peaks: dict[str, float]) -> float | None:
        """The step's peak FLOP/s from per-mode peaks: its matmuls' mode's, or where its convolutions take another,
        the rate at which its mix of the two would run at their peaks (the FLOPs over the sum of each part's time)."""
        matmul = peaks.get(self.matmul)
        if not self.mixed:
            return matmul
        conv = peaks.get(self.convolution)
        if not matmul or not conv:
            return None
        return 1 / ((1 - self.convolution_share) / matmul + self.convolution_share / conv)


# Each framework's default float32 modes on a GPU with TF32 tensor cores (what the published cells computed in).
DEFAULT_FLOAT32_MODES = {
    "torch": ("float32", "tf32"),  # cuda.matmul.allow_tf32 False, cudnn.allow_tf32 True (PyTorch >= 1.12)
    "jax": ("tf32", "tf32"),  # jax_default_matmul_precision None: TF32 on Ampere and later
    "tensorflow": ("tf32", "tf32"),  # tensor-float-32 execution on by default (TensorFlow >= 2.4)
}

