"""`python -m bench largest`: how many decoder layers Gemma and Mistral can keep, at their paper widths, with
every column the published generate findings compare still fitting this machine: the cpu-mid profile's sizes.

The published generate ratios (Table 2's Keras-torch / Keras-JAX, keras-hub #2593, F. Chollet's
Keras-JAX / HF PyTorch compiled) are re-tested "at the largest size every compared column can hold". At full size the
Keras-on-JAX 7B cells do not fit 24 GB (XLA's float32 copies of the bfloat16 weights, bench/plan XLA_CPU_COPY), so
the size that fits is fewer layers at the same widths, prompt and generate length: every layer the same work, the
embedding and head whole.

A column fits at n layers when the plan's host figure for its generate cells (each batch the profile runs), plus the
most its backend's processes held beyond the plan's figure in the full-size CPU run (measured: peak RSS minus the
plan, over that run's ok cells), is at most the machine's RAM. Pure arithmetic on the plan's formulas: no env.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from bench.base.provenance import REPO_ROOT
from bench.catalogue.backends import get_backend
from bench.catalogue.registry import Cell, get_model, plan_cells
from bench.catalogue.work import work_rule
from bench.plan import xla_cpu_copy_bytes
from bench.plan.memory import GIB, figures
from bench.record.results import load_all

# The columns each model's published generate findings compare (bench/report/generate.py published_lines).
COMPARED = {
    "gemma": (("torch", "default"), ("jax", "default")),  # Table 2, keras-hub #2593
    "mistral": (("torch", "default"), ("jax", "default"), ("native-torch", "compiled")),  # and F. Chollet's claim
}
PROFILE = "cpu-mid"
# The machine the cpu-mid sizes are for: this project's CPU hosts (MemTotal 23.5 GiB, results/cpu-full/plan-cpu.json).
RAM_GIB = 23.5
FULL_SIZE_RUN = REPO_ROOT / "results" / "cpu-full"
FULL_SIZE_PROFILE = "cpu"


def measured_excess_gib(results_dir: Path = FULL_SIZE_RUN, profile: str = FULL_SIZE_PROFILE) -> dict[str, float]:
    """Per backend, the most any of its ok cells' processes held beyond the plan's figure for the cell (peak RSS
    minus the plan's host figure, else its total), in the full-size run: the framework, the interpreter, allocator
    slack and compile-time buffers the plan does not count."""
    plan = json.loads((results_dir / f"plan-{profile}.json").read_text())
    planned = {c["key"]: c.get("host_memory_gib", c.get("memory_gib")) for c in plan["cells"]}
    excess: dict[str, float] = {}
    for result in load_all(results_dir / profile):
        peak = result.peak_rss_gib()
        if result.status == "ok" and planned.get(result.cell.key) is not None and peak is not None:
            backend = result.cell.backend
            excess[backend] = max(excess.get(backend, 0.0), peak - planned[result.cell.key])
    return excess


def host_gib(model: str, backend: str, variant: str, batch: int, shape) -> float:
    """The plan's host figure of a generate cell of this shape: its total plus XLA's float32 copies where due."""
    cell = Cell(backend, model, "generate", batch, PROFILE, variant, 0, 1)
    family = get_backend(backend).family
    params = work_rule(model).parameters(shape)
    entry = figures(model, family, "generate", batch, {"backbone": params, "causal_lm": params}, shape).to_dict()
    return (entry["total_bytes"] + xla_cpu_copy_bytes(cell, entry, shape)) / GIB


def batches(model: str) -> tuple[int, ...]:
    """The generate batches the profile runs for this model: the published table's, capped by the profile."""
    return tuple(sorted({c.batch_size for c in plan_cells(PROFILE, models=[model], tasks=["generate"])}))


def column_needs_gib(model: str, layers: int, excess: dict[str, float]) -> dict[str, float]:
    """Each compared column's need at this many layers (the worst batch): plan figure + measured excess, GiB."""
    shape = dataclasses.replace(get_model(model).shape("paper"), num_layers=layers)
    return {
        f"{backend} ({variant})": max(host_gib(model, backend, variant, b, shape) for b in batches(model))
        + excess.get(backend, max(excess.values()))
        for backend, variant in COMPARED[model]
    }


def largest_layers(model: str, ram_gib: float = RAM_GIB, excess: dict[str, float] | None = None) -> int:
    """The most layers (at most the paper's) at which every compared column fits ram_gib; 0 when not even one does."""
    excess = measured_excess_gib() if excess is None else excess
    for layers in range(get_model(model).shape("paper").num_layers, 0, -1):
        if max(column_needs_gib(model, layers, excess).values()) <= ram_gib:
            return layers
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench largest", description=__doc__.split("\n\n")[0])
    parser.add_argument("--ram-gib", type=float, default=RAM_GIB, help=f"the machine's RAM (default {RAM_GIB})")
    args = parser.parse_args(argv)
    excess = measured_excess_gib()
    print(
        "measured excess over the plan, full-size CPU run (GiB): "
        + ", ".join(f"{b} {v:.2f}" for b, v in sorted(excess.items()))
    )
    for model in COMPARED:
        n = largest_layers(model, args.ram_gib, excess)
        paper = get_model(model).shape("paper")
        params = work_rule(model).parameters(dataclasses.replace(paper, num_layers=n))
        need = column_needs_gib(model, n, excess)
        configured = get_model(model).shape(PROFILE).num_layers
        print(
            f"{model}: {n} of {paper.num_layers} layers ({params / 1e9:.2f}B parameters) fit {args.ram_gib} GiB: "
            + ", ".join(f"{c} {v:.2f} GiB" for c, v in need.items())
            + f"; one more layer: {max(column_needs_gib(model, n + 1, excess).values()):.2f} GiB"
            + f"; workload.toml [{PROFILE}] has {configured}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
