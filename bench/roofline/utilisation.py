"""A result against its machine's limits: achieved FLOP/s and bytes/s, MFU, bandwidth use (docs/ROOFLINE.md).

The work is the cell's count (bench/work.py); the time the result's headline figure (ms/step, ms per
generate call, ms per denoising step: each the unit the count is per). The ceiling is the cell's own host's: the
best matmul any framework (or NumPy) reached on it in the step's dtype, and the best triad, taken from the machine's
ceilings file (`make ceilings`: measured quietly, best of repeats, used only for a result of the same processor),
and failing that from the run's own probes (`provenance.ceilings`). One framework's probe is not the processor's
limit (NumPy under OPENBLAS_CORETYPE reads half of JAX's on the same host), so the best of all is. A cell above its
ceiling is a wrong ceiling or a wrong work count: `Use.exceeds` says so and the report prints no share for it. On a
GPU with a known datasheet the datasheet's fraction is given beside the measured one, at the mode the run recorded
its float32 matmuls in (TF32 or full float32) or bfloat16.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.backends import get_backend
from bench.errors import BenchError
from bench.registry import get_model
from bench.results import Result
from bench.roofline.hardware import datasheet_for
from bench.work import Work, cell_work


@dataclass(frozen=True)
class Ceiling:
    flops: float | None  # FLOP/s of the step's dtype
    bandwidth: float | None  # bytes/s
    what: str  # where the figures came from, in words
    datasheet_flops: float | None = None
    datasheet_bandwidth: float | None = None
    datasheet_mode: str | None = None


@dataclass(frozen=True)
class Rate:
    """A step's work over its time: achieved FLOP/s and bytes/s (a measured cell's, a published cell's)."""

    work: Work
    ms: float

    @property
    def flops_per_s(self) -> float:
        return self.work.flops / (self.ms / 1e3)

    @property
    def bytes_per_s(self) -> float:
        return self.work.bytes / (self.ms / 1e3)


@dataclass(frozen=True)
class Use(Rate):
    ceiling: Ceiling

    @property
    def mfu(self) -> float | None:
        return self.flops_per_s / self.ceiling.flops if self.ceiling.flops else None

    @property
    def bandwidth_use(self) -> float | None:
        return self.bytes_per_s / self.ceiling.bandwidth if self.ceiling.bandwidth else None

    @property
    def datasheet_mfu(self) -> float | None:
        return self.flops_per_s / self.ceiling.datasheet_flops if self.ceiling.datasheet_flops else None

    @property
    def datasheet_bandwidth_use(self) -> float | None:
        return self.bytes_per_s / self.ceiling.datasheet_bandwidth if self.ceiling.datasheet_bandwidth else None

    @property
    def decode(self) -> bool:
        return self.work.forward_passes is not None

    @property
    def exceeds(self) -> bool:
        """Above its measured ceiling: the ceiling or the work count is wrong, so no share of it means anything."""
        return any(share is not None and share > 1 for share in (self.mfu, self.bandwidth_use))


def result_work(result: Result) -> Work | None:
    """The cell's work from its recorded shape (its profile's, today's registry); None without a rule or a model."""
    cell = result.cell
    try:
        spec = get_model(cell.model)
        return cell_work(
            cell.model, get_backend(cell.backend).family, cell.task, cell.batch_size, spec.shape(cell.profile)
        )
    except (BenchError, KeyError):
        return None


def probe_figures(entry: dict | None, dtype: str) -> tuple[float | None, float | None]:
    """(matmul FLOP/s of dtype, triad bytes/s) of one probe entry; None where it has none."""
    if not isinstance(entry, dict) or "error" in entry:
        return None, None
    matmul = ((entry.get("matmul") or {}).get(dtype) or {}).get("median")
    return matmul, (entry.get("triad") or {}).get("median")


FRAMEWORK_NAMES = {"host": "NumPy", "jax": "JAX", "tensorflow": "TensorFlow", "torch": "PyTorch"}


def host_best(ceilings: dict | None, dtype: str) -> tuple[float | None, float | None, str]:
    """(best matmul FLOP/s in `dtype` over every probe entry, best triad bytes/s, which probe gave the matmul)."""
    best, who, triad = None, "", None
    for name, entry in (ceilings or {}).items():
        if name == "datasheet":
            continue
        flops, bandwidth = probe_figures(entry, dtype)
        if flops and (best is None or flops > best):
            best, who = flops, FRAMEWORK_NAMES.get(name, name)
        if bandwidth and (triad is None or bandwidth > triad):
            triad = bandwidth
    return best, triad, who


def ceiling(result: Result, dtype: str, machine_ceilings: dict | None = None) -> Ceiling:
    flops = bandwidth = None
    what = ""
    for source, ceilings in (
        ("the machine's ceilings file", machine_ceilings),
        ("this run's probes", result.provenance.get("ceilings")),
    ):
        if not isinstance(ceilings, dict):
            continue
        for probed in dict.fromkeys((dtype, "float32")):  # no probe of the dtype (a CPU run's NumPy): float32's
            flops, bandwidth, who = host_best(ceilings, probed)
            if flops:
                what = f"{who} {probed} matmul, the best of {source}"
                break
        if flops:
            break
    recorded = result.provenance.get("ceilings")
    sheet = recorded.get("datasheet") if isinstance(recorded, dict) else None
    if sheet is None:  # a GPU result from before the probe: its card's datasheet, by the name it recorded
        gpus = (result.provenance.get("machine") or {}).get("gpus") or []
        known = datasheet_for(gpus[0].get("name")) if gpus and isinstance(gpus[0], dict) else None
        sheet = known.to_dict() if known else None
    mode = None
    if isinstance(sheet, dict):
        mode = dtype if dtype != "float32" else float32_mode(result)
    return Ceiling(
        flops,
        bandwidth,
        what or "no ceiling recorded",
        (sheet or {}).get("flops", {}).get(mode) if mode else None,
        (sheet or {}).get("bandwidth"),
        mode,
    )


def float32_mode(result: Result) -> str:
    """What the run's float32 matmuls computed in ("tf32" or "float32"), as its framework recorded it; a GPU result
    that recorded none is taken at the card's float32 tensor-core rate (TF32), as the published section takes them."""
    for run in result.runs:
        mode = ((run.framework or {}).get("precision") or {}).get("float32_matmul")
        if mode:
            return mode
    return "tf32"


def use_of(result: Result, machine_ceilings: dict | None = None) -> Use | None:
    """An ok result's use of its machine at its headline figure (its processes' geometric mean, as every table and
    comparison shows it); None when it is not ok, its figure is not positive, or it has no count."""
    figure = result.figure()
    work = result_work(result) if figure and figure > 0 else None
    if work is None:
        return None
    return Use(work, figure, ceiling(result, work.dtype, machine_ceilings))
