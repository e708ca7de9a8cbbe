"""A result against its machine's limits: achieved FLOP/s and bytes/s, MFU, bandwidth use (docs/ROOFLINE.md).

The work is the cell's count (bench/catalogue/work.py); the time the result's headline figure (ms/step, ms per
generate call, ms per denoising step: each the unit the count is per). The ceiling is like for like with what the
step computed, at the mode its matrix products ran in (bfloat16; for a float32 step TF32 or full FP32, as its
framework recorded it; a step whose convolutions ran in another mode, PyTorch's float32 default, against the mix of
the two), taken from the machine's ceilings file (`make ceilings`: measured quietly, best of repeats, used only for
a result of the same processor) and failing that from the run's own probes (`provenance.ceilings`). On a GPU it is
its own framework's measured matmul at that mode (where its framework has none at that mode, the best of any at
that mode, said so): a PyTorch FP32 cell is never divided by JAX's TF32 rate (6.6x faster on an H200). On a CPU,
where every mode is FP32, it is the processor's best probe, any framework's or NumPy's: one framework's matmul probe
is not its limit there (NumPy under OPENBLAS_CORETYPE reads half of JAX's; PyTorch's convolutions ran above its own
matmul probe). The best triad is the bandwidth
ceiling. A cell above its ceiling is a wrong ceiling or a wrong work count: `Use.exceeds` says so and the report
prints no share for it. On a GPU with a known datasheet the datasheet's fraction is given beside the measured one,
at the same modes.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.catalogue.backends import get_backend
from bench.catalogue.hardware import MODE_TEXT, StepModes, datasheet_for
from bench.catalogue.work import Work
from bench.record.results import Result


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
    """The cell's work from its shape (its profile's, today's registry) as its run built it; None without a rule or
    a model."""
    return result.work()


def probe_figures(entry: dict | None, dtype: str) -> tuple[float | None, float | None]:
    """(matmul FLOP/s of dtype, triad bytes/s) of one probe entry; None where it has none."""
    if not isinstance(entry, dict) or "error" in entry:
        return None, None
    matmul = ((entry.get("matmul") or {}).get(dtype) or {}).get("median")
    return matmul, (entry.get("triad") or {}).get("median")


FRAMEWORK_NAMES = {"host": "NumPy", "jax": "JAX", "tensorflow": "TensorFlow", "torch": "PyTorch"}


def recorded_float32_mode(entry: dict, tf32_gpu: bool) -> str:
    """The mode a probe entry's float32 matmul ran in where the entry does not say (probes from before they did):
    on a CPU full FP32; on a GPU of TF32 tensor cores, TF32 where its recorded precision allowed it (JAX's default,
    TensorFlow's tensor-float-32, torch's allow_tf32)."""
    precision = entry.get("precision") or {}
    if entry.get("device") in (None, "cpu") or not tf32_gpu:
        return "float32"
    if "default_matmul_precision" in precision:
        from bench.measure.frameworks import jax_precision_name

        return "tf32" if jax_precision_name(precision["default_matmul_precision"]) != "highest" else "float32"
    allowed = precision.get("tf32_execution", precision.get("cuda_matmul_allow_tf32", False))
    return "tf32" if allowed else "float32"


def probe_modes(entry: dict | None, tf32_gpu: bool) -> dict[str, float]:
    """mode -> the matmul FLOP/s one probe entry measured in it ("float32": full FP32, "tf32", "bfloat16"): each
    dtype's figure at the mode it records (or recorded_float32_mode), and each float32 mode it timed apart
    (`matmul_modes`, a GPU's); the faster where two give one mode."""
    if not isinstance(entry, dict) or "error" in entry:
        return {}
    out: dict[str, float] = {}
    timed = [(dtype, figure) for dtype, figure in (entry.get("matmul") or {}).items()]
    timed += [(mode, figure) for mode, figure in (entry.get("matmul_modes") or {}).items()]
    for name, figure in timed:
        median = (figure or {}).get("median")
        if not median:
            continue
        mode = (figure.get("mode") or (recorded_float32_mode(entry, tf32_gpu) if name == "float32" else name))
        out[mode] = max(out.get(mode, 0.0), median)
    return out


def tf32_gpu(result: Result) -> bool:
    """Whether the result's GPU has TF32 tensor cores (compute capability 8.0 or later, as its framework recorded it,
    or a known datasheet with a TF32 peak)."""
    for run in result.runs:
        capability = (run.framework or {}).get("compute_capability")
        if capability:
            return float(str(capability).split(".")[0]) >= 8
    gpus = (result.provenance.get("machine") or {}).get("gpus") or []
    known = datasheet_for(gpus[0].get("name")) if gpus and isinstance(gpus[0], dict) else None
    return bool(known and "tf32" in known.flops)


def step_modes(result: Result, work: Work) -> StepModes:
    """What the result's step computed in: a bfloat16 step its dtype; a float32 step its matmuls' and convolutions'
    modes as its framework recorded them (a GPU result that recorded none: the card's float32 tensor-core rate,
    TF32, the faster of the two, so that its share is a lower bound)."""
    if work.dtype != "float32":
        return StepModes(work.dtype)
    found = result.float32_precision()
    if found is None:
        return StepModes("tf32" if result_gpus(result) else "float32")
    share = (work.convolution_flops or 0) / work.flops if work.flops else 0.0
    return StepModes(found["matmul"], found["convolution"] if share else None, share)


def result_gpus(result: Result) -> list:
    return (result.provenance.get("machine") or {}).get("gpus") or []


def measured_ceiling(result: Result, modes: StepModes, sources: list[tuple[str, dict]]) -> tuple[float | None, str]:
    """(the step's measured peak FLOP/s, where it came from), at each of the step's modes. On a GPU its own
    framework's probe at that mode (the machine's ceilings file before the run's own probes), where that framework
    has one; else the best probe at that mode (said so); never a CPU's probe. On a CPU, where every mode is FP32,
    the best probe of the processor (any framework's, or NumPy's): a framework's 1024-square matmul is not its
    limit there (PyTorch's convolutions in the smoke StableDiffusion fit ran at 307 GFLOP/s beside its 223 GFLOP/s
    matmul probe), and a CPU step with no probe of its dtype (bfloat16, a run with NumPy's probe alone) is set
    against float32's (said so)."""
    framework = get_backend(result.cell.backend).framework
    on_gpu, gpu_tf32 = bool(result_gpus(result)), tf32_gpu(result)
    peaks, said = {}, []
    for mode in [modes.matmul] + ([modes.convolution] if modes.mixed else []):
        found = best_probe(sources, framework if on_gpu else None, mode, on_gpu, gpu_tf32)
        taken = mode
        if found is None and mode == "bfloat16" and not on_gpu:
            found, taken = best_probe(sources, None, "float32", on_gpu, gpu_tf32), "float32"
        if found is None:
            continue
        flops, name, source = found
        peaks[mode] = flops
        text = f"{FRAMEWORK_NAMES.get(name, name)} {MODE_TEXT[taken]} matmul, "
        if name == framework and on_gpu:
            text += source
        elif on_gpu:
            text += f"the best of {source} (no {FRAMEWORK_NAMES[framework]} probe at {MODE_TEXT[taken]})"
        else:
            text += f"the best of {source}"
        said.append(text + (f", for its {MODE_TEXT[mode]} work" if taken != mode else ""))
    flops = modes.peak(peaks)
    return flops, "; ".join(said) if flops else "no ceiling recorded"


def best_probe(sources: list[tuple[str, dict]], framework: str | None, mode: str, on_gpu: bool,
               gpu_tf32: bool) -> tuple[float, str, str] | None:
    """(FLOP/s, probe name, source) at `mode`: of `framework`'s own probe in the first source that has one (None:
    no framework first); else the fastest probe at that mode in the first source with any; None where none has
    it."""
    for own in ((True, False) if framework else (False,)):
        for source, ceilings in sources:
            found = [(flops, name) for name, entry in ceilings.items()
                     if name != "datasheet" and isinstance(entry, dict) and (not own or name == framework)
                     and not (on_gpu and entry.get("device") == "cpu")
                     and (flops := probe_modes(entry, gpu_tf32).get(mode))]  # fmt: skip
            if found:
                flops, name = max(found)
                return flops, name, source
    return None


def ceiling(result: Result, work: Work, machine_ceilings: dict | None = None) -> Ceiling:
    """The result's ceilings at its step's own modes: its own framework's measured matmul (measured_ceiling), the best
    triad, and its GPU's datasheet peak."""
    sources = [(source, c) for source, c in (("the machine's ceilings file", machine_ceilings),
                                             ("this run's probes", result.provenance.get("ceilings")))
               if isinstance(c, dict)]  # fmt: skip
    modes = step_modes(result, work)
    flops, what = measured_ceiling(result, modes, sources)
    bandwidth = next((b for _, c in sources if (b := best_triad(c, bool(result_gpus(result))))), None)
    recorded = result.provenance.get("ceilings")
    sheet = recorded.get("datasheet") if isinstance(recorded, dict) else None
    if sheet is None:  # a GPU result from before the probe: its card's datasheet, by the name it recorded
        gpus = result_gpus(result)
        known = datasheet_for(gpus[0].get("name")) if gpus and isinstance(gpus[0], dict) else None
        sheet = known.to_dict() if known else None
    return Ceiling(
        flops,
        bandwidth,
        what,
        modes.peak((sheet or {}).get("flops", {})) if isinstance(sheet, dict) else None,
        (sheet or {}).get("bandwidth"),
        modes.name if isinstance(sheet, dict) else None,
    )


def best_triad(ceilings: dict, on_gpu: bool) -> float | None:
    """The best triad bytes/s over a source's probes (a GPU result's over its GPU probes only)."""
    found = [(entry.get("triad") or {}).get("median") for name, entry in ceilings.items()
             if name != "datasheet" and isinstance(entry, dict) and "error" not in entry
             and not (on_gpu and entry.get("device") == "cpu")]  # fmt: skip
    return max((b for b in found if b), default=None)


def use_of(result: Result, machine_ceilings: dict | None = None) -> Use | None:
    """An ok result's use of its machine at its headline figure (its processes' geometric mean, as every table and
    comparison shows it); None when it is not ok, its figure is not positive, or it has no count."""
    figure = result.figure()
    work = result_work(result) if figure and figure > 0 else None
    if work is None:
        return None
    return Use(work, figure, ceiling(result, work, machine_ceilings))
