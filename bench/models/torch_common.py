"""What every native PyTorch implementation shares: device, seeding, the two variants, the Trainer's arguments.

Variants: `eager`, and `compiled` = torch.compile(mode="reduce-overhead") as the reference did. A compiled
run must show that compiled graphs ran (dynamo's counters), or it fails rather than pass off eager as compiled.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import torch

from bench.measure.frameworks import device_for
from bench.models.base import COMPILED_TRAIN_STEP, SEED, Workload  # noqa: F401  (COMPILED_TRAIN_STEP: its workloads import it from here)

COMPILE_MODE = "reduce-overhead"


def device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def torch_dtype(name: str) -> torch.dtype:
    return {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}[name]


def data_generator() -> torch.Generator:
    """The generator a native workload draws its synthetic data from, seeded with every workload's SEED."""
    return torch.Generator().manual_seed(SEED)


def count_parameters(module: torch.nn.Module) -> int:
    return int(sum(p.numel() for p in module.parameters()))


def on_meta(build, *args):
    """Build a module on the meta device: shapes without memory, so a 7B model is counted for free."""
    with torch.device("meta"):
        return build(*args)


def dynamo_counters() -> dict[str, int]:
    from torch._dynamo.utils import counters

    return {k: int(v) for k, v in counters["stats"].items()}


@dataclass(frozen=True)
class CompileRecord:
    """What torch.compile did, from dynamo's own counters (as TorchBench reports its model metrics): graphs
    captured, graph breaks, recompiles, frames converted and compile seconds. `CompileRecord.now()` is the
    process's total so far; `since(earlier)` what happened after `earlier`. None: this torch does not tell."""

    graphs: int  # unique graphs captured (counters["stats"]["unique_graphs"])
    graph_breaks: int  # every graph break, whatever its reason (counters["graph_break"])
    recompiles: int | None  # frames compiled again after a guard failed (the compilation metrics' recompile reasons)
    frames: int  # frames dynamo was asked to convert (counters["frames"]["total"])
    frames_ok: int  # of which converted (counters["frames"]["ok"])
    compile_s: float | None  # dynamo's entire-frame compile time, backend compile included

    @classmethod
    def now(cls) -> CompileRecord:
        from torch._dynamo import utils

        counters = utils.counters
        get_metrics = getattr(utils, "get_compilation_metrics", None)  # the last 64 compiles
        times = getattr(utils, "compilation_time_metrics", None)
        return cls(
            graphs=int(counters["stats"].get("unique_graphs", 0)),
            graph_breaks=int(sum(counters["graph_break"].values())),
            recompiles=sum(1 for m in get_metrics() if getattr(m, "recompile_reason", None)) if get_metrics else None,
            frames=int(counters["frames"].get("total", 0)),
            frames_ok=int(counters["frames"].get("ok", 0)),
            compile_s=round(sum(times.get("_compile.compile_inner", [])), 3) if times is not None else None,
        )

    def since(self, earlier: CompileRecord) -> CompileRecord:
        def minus(now, before):
            return None if now is None or before is None else now - before

        return CompileRecord(
            *(minus(getattr(self, f.name), getattr(earlier, f.name)) for f in dataclasses.fields(self))
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class TorchWorkload(Workload):
    """Base of every native PyTorch implementation."""

    model: torch.nn.Module | None = None

    def __init__(self, cell, shape):
        super().__init__(cell, shape)
        torch.manual_seed(SEED)
        self.device = device()
        self.compiled = cell.variant == "compiled"
        self._compile_before = CompileRecord.now()

    @cached_property
    def timing_device(self):
        return device_for("torch")

    def trainer_arguments(self) -> dict[str, Any]:
        """TrainingArguments of the "trainer" driver beyond the step count and batch: compile as the variant says."""
        return {"torch_compile": self.compiled, "torch_compile_mode": COMPILE_MODE if self.compiled else None}

    def maybe_compile(self, module):
        return torch.compile(module, mode=COMPILE_MODE) if self.compiled else module

    def training_step(self, optimizer, inputs: torch.Tensor, target: torch.Tensor):
        """v0.0.5's plain-loop fit step (SAM, StableDiffusion): `train_step()` runs zero_grad, self.model's
        forward, MSE, backward and optimizer.step, and returns (outputs, loss). The compiled variant wraps the whole
        function in torch.compile(mode=COMPILE_MODE), as the reference compiled its `train_fn`."""
        model, loss_fn = self.model, torch.nn.MSELoss()

        def train_step():
            optimizer.zero_grad()
            outputs = model(inputs)
            loss = loss_fn(outputs, target)
            loss.backward()
            optimizer.step()
            return outputs, loss

        return self.maybe_compile(train_step)

    def compile_record(self) -> CompileRecord:
        """What torch.compile did since this workload was made."""
        return CompileRecord.now().since(self._compile_before)

    def compiled_graphs(self) -> int:
        return self.compile_record().graphs

    def cuda_graph_problems(self, steadiness) -> list[str]:
        """mode="reduce-overhead" on a GPU means CUDA graphs replayed in the timed steps. What says they were not: a
        graph inductor ran without CUDA graphs (its skip counter, with the reasons dynamo kept), none recorded at all,
        or a recording inside the timed steps (TorchDevice counts each as a compile event)."""
        if not (self.compiled and self.device.type == "cuda"):
            return []
        from bench.measure.frameworks import inductor_cudagraphs

        graphs, problems = inductor_cudagraphs(), []
        if graphs["skips"]:
            problems.append(
                f"inductor skipped CUDA graphs {graphs['skips']} time(s)"
                + (f": {'; '.join(graphs['skip_reasons'])}" if graphs["skip_reasons"] else "")
            )
        if graphs["recordings"] == 0:
            problems.append("no CUDA graph was recorded")
        if steadiness.compile_events_timed:
            problems.append(
                f"{steadiness.compile_events_timed} compile or CUDA-graph recording event(s) fell in the timed steps"
            )
        return problems

    def check(self) -> None:
        if self.compiled and self.compiled_graphs() == 0:
            raise RuntimeError("the compiled variant ran no compiled graph (dynamo captured nothing)")

    def parameters(self) -> int:
        return count_parameters(self.model)

    def settings(self) -> dict[str, Any]:
        dtypes = sorted({str(p.dtype).replace("torch.", "") for p in self.model.parameters()})
        record = self.compile_record()
        return {
            "variant": self.cell.variant,
            "compile_mode": COMPILE_MODE if self.compiled else None,
            "compiled_graphs": record.graphs,
            "compile": record.to_dict(),
            "dynamo_counters": dynamo_counters(),
            "device": str(self.device),
            "parameter_dtypes": dtypes,
            "parameters": int(self.parameters()),
            "trainable_parameters": int(sum(p.numel() for p in self.model.parameters() if p.requires_grad)),
            "model_class": f"{type(self.model).__module__}.{type(self.model).__name__}",
        }


class RepeatedSamples(torch.utils.data.Dataset):
    """`length` copies of a few fixed synthetic samples: the Trainer collates them into batches."""

    def __init__(self, samples: list[dict[str, torch.Tensor]], length: int):
        self.samples, self.length = samples, length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return self.samples[index % len(self.samples)]
