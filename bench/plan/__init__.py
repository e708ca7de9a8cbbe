"""`python -m bench plan` (`make plan`): every cell's memory, predicted without allocating a model.

Per cell: the parameters its process holds and trains (counted abstractly in the family's env, bench/plan/counts.py),
the bytes of weights, gradients and optimizer state, an activation estimate (the model's rule, bench/models/<name>/plan.py, with bench/plan/memory.py), their total,
and whether that fits an A100 40GB, an H100 80GB and this machine's RAM. Written to <results>/plan-<profile>.json
and <results>/plan.json ({"profile", "cells": [{"key", "memory_gib", ...}]}, what `make doctor` and `make submit`
read). The orchestrator reads plan-<profile>.json: a cell the plan says will not fit the device it is about to use
is recorded as `oom-predicted` instead of run (`--ignore-plan` runs it anyway).
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

from bench.base.atomic import together, write_json_atomic
from bench.base.errors import BenchError
from bench.base.provenance import git_info, machine_info, now_utc
from bench.catalogue.backends import cell_environment, get_backend
from bench.catalogue.registry import Cell, plan_cells
from bench.catalogue.work import work_rule
from bench.plan.counts import counts_for
from bench.plan.memory import DTYPE_BYTES, GIB, activation_formulas, figures, fits

# What nvidia-smi reports as memory.total for the published GPU and the current flagship, in GiB.
DEVICES = {"A100-40GB": 40960 / 1024, "H100-80GB": 81559 / 1024}
# An assumption, not measured here: what a process's CUDA context, cuBLAS/cuDNN workspaces and allocator slack take
# from a card before its framework allocates a tensor (about 0.3-0.6 GiB of context on an A100, with lazy module
# loading, plus workspaces).
CUDA_OVERHEAD_GIB = 1.0
JAX_DEFAULT_MEM_FRACTION = 0.75  # JAX preallocates 75% of the card unless XLA_PYTHON_CLIENT_MEM_FRACTION says otherwise


def usable_gib(framework: str, card_gib: float | None, environment: dict[str, str] | None = None) -> float | None:
    """What a framework can allocate of a card of card_gib: JAX its preallocated fraction
    (XLA_PYTHON_CLIENT_MEM_FRACTION: the cell's own variables, bench/catalogue/backends.py; the whole card, less the CUDA
    overhead, with XLA_PYTHON_CLIENT_ALLOCATOR=platform), torch and TensorFlow the card less CUDA_OVERHEAD_GIB (CUDA
    graph pools and the allocator's caching come out of what is left)."""
    if card_gib is None:
        return None
    env = {**(environment or {})}
    if framework == "jax" and env.get("XLA_PYTHON_CLIENT_ALLOCATOR") != "platform":
        return card_gib * float(env.get("XLA_PYTHON_CLIENT_MEM_FRACTION", JAX_DEFAULT_MEM_FRACTION))
    return max(card_gib - CUDA_OVERHEAD_GIB, 0.0)


def cell_usable_gib(cell: Cell, card_gib: float | None) -> float | None:
    """usable_gib for this cell's framework, with the variables its process runs with (the caller's override the
    backend's, as in the cell: bench/measure/cell.py main)."""
    environment = {
        **cell_environment(cell.env),
        **{k: v for k, v in os.environ.items() if k.startswith("XLA_PYTHON_CLIENT_") and v},
    }
    return usable_gib(get_backend(cell.backend).framework, card_gib, environment)


KERAS2_COUNTS = (
    "keras2 builds for real (no abstract scope in tf_keras): its cells use the Keras 3 count of the same architecture"
)
# Found by the full-size CPU run: XLA's CPU backend has no bfloat16 matmul, so it converts each bfloat16
# weight to float32 and keeps those copies live across the step (hoisted out of generate's loop; held from forward to
# backward in a fit). Gemma 7B generate on Keras/TensorFlow and Keras/JAX then asked for one 37.67 GiB buffer.
# That buffer was exactly 4 x Gemma's 8,537,680,896 parameters + 2 x 4 x its 256,000 x 3,072 embedding + 0.36 MB:
# with tied embeddings, generate also holds two more float32 copies of the table (the lookup's and the transposed
# output projection's, by the figure; XLA's buffer names were not recorded).
XLA_CPU_COPY = (
    "on a CPU, XLA (Keras on TensorFlow or JAX) computes bfloat16 matmuls in float32 and holds a float32 copy "
    "of the bfloat16 weights through the step: host_memory_gib adds it (twice the bfloat16 weights' bytes), and for "
    "generate with tied embeddings two more float32 copies of the embedding table (Gemma 7B's failed 37.67 GiB "
    "allocation in the full-size CPU run was exactly that)"
)


def xla_cpu_copy_bytes(cell: Cell, entry: dict, shape) -> int:
    """The float32 copies of bfloat16 weights XLA holds on a CPU (see XLA_CPU_COPY) for a cell of this shape; 0 where
    it does not apply."""
    b = get_backend(cell.backend)
    if not (b.family == "keras" and b.framework in ("tensorflow", "jax") and entry["weights_dtype"] == "bfloat16"):
        return 0
    copy = 2 * entry["weights_bytes"]
    work = work_rule(cell.model)
    if cell.task == "generate" and getattr(work, "TIED_EMBEDDINGS", False):
        copy += 2 * DTYPE_BYTES["float32"] * shape.vocabulary_size * shape.hidden_dim
    return copy


def ram_gib() -> float | None:
    """The machine's RAM in GiB; BENCH_RAM_GIB stands in for it (plan for another machine; tests)."""
    if os.environ.get("BENCH_RAM_GIB"):
        return float(os.environ["BENCH_RAM_GIB"])
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return None


def plan_path(results_dir: Path, profile: str) -> Path:
    return results_dir / f"plan-{profile}.json"


def cell_entry(cell: Cell, counts: dict | str | None, ram: float | None) -> dict:
    spec = cell.spec
    family = get_backend(cell.backend).family
    entry = {
        "key": cell.key,
        "backend": cell.backend,
        "model": cell.model,
        "task": cell.task,
        "batch_size": cell.batch_size,
        "variant": cell.variant,
        "family": family,
    }
    why = spec.why_cell_unsupported(cell)
    if why:
        return {**entry, "unsupported": why, "memory_gib": None}
    if not isinstance(counts, dict):
        return {**entry, "error": counts or "no parameter counts", "memory_gib": None}
    parts = {k: v for k, v in counts.items() if k != "counted_in"}
    try:
        entry.update(figures(cell.model, family, cell.task, cell.batch_size, parts, spec.shape(cell.profile)).to_dict())
    except BenchError as e:  # a model without a plan rule: the plan says so and plans the other cells
        return {**entry, "error": str(e), "memory_gib": None}
    entry["counted_in"] = counts.get("counted_in")
    if cell.backend == "keras2":
        entry["counts_note"] = KERAS2_COUNTS
    total = entry["total_bytes"] / GIB
    host = total
    if copy := xla_cpu_copy_bytes(cell, entry, spec.shape(cell.profile)):
        entry["xla_cpu_float32_copy_gib"] = round(copy / GIB, 3)
        host = total + copy / GIB
        entry["host_memory_gib"] = round(host, 3)
    usable = {name: cell_usable_gib(cell, cap) for name, cap in DEVICES.items()}
    entry["usable_gib"] = {name: round(value, 2) for name, value in usable.items()}
    entry["fits"] = {**{name: fits(total, usable[name]) for name in DEVICES}, "RAM": fits(host, ram)}
    return entry


def build_plan(profile: str, echo=print, batch_size: int | None = None) -> dict:
    """Every cell of the profile, and with batch_size each again at that batch: a run that overrides the batch
    must find its cells in the plan, or it runs them unchecked."""
    cells = plan_cells(profile)
    if batch_size:
        known = {c.key for c in cells}
        cells += [c for c in plan_cells(profile, batch_size=batch_size) if c.key not in known]
    pairs = {
        (c.model, get_backend(c.backend).family) for c in cells if not c.spec.why_unsupported(c.backend)
    }
    counts = counts_for(pairs, profile, echo=echo)
    ram = ram_gib()
    return {
        "profile": profile,
        "created_at": now_utc(),
        "provenance": {"git": git_info(), "machine": machine_info()},  # the code and machine that made the plan
        "devices_gib": {**{k: round(v, 2) for k, v in DEVICES.items()}, "RAM": round(ram, 2) if ram else None},
        "estimate_note": "activations are a rough estimate (see activation_formulas); weights, gradients and optimizer "
        "state are exact for the counted parameters; the framework's own memory (CUDA context, allocator) is not in "
        "memory_gib, and a GPU's fit compares it with what the cell's framework can use of the card (usable_gib: JAX its "
        f"preallocated fraction, default {JAX_DEFAULT_MEM_FRACTION}; torch and TensorFlow the card less an assumed "
        f"{CUDA_OVERHEAD_GIB} GiB of CUDA context and workspaces)",
        "activation_formulas": activation_formulas(dict.fromkeys(c.model for c in cells)),
        "keras2_counts": KERAS2_COUNTS,
        "xla_cpu_copy": XLA_CPU_COPY,
        "cells": [cell_entry(c, counts.get((c.model, get_backend(c.backend).family)), ram) for c in cells],
    }


def write_plan(plan: dict, results_dir: Path) -> list[Path]:
    results_dir.mkdir(parents=True, exist_ok=True)
    written = []
    with together():  # the profile's plan and plan.json: both, or neither
        for path in (plan_path(results_dir, plan["profile"]), results_dir / "plan.json"):
            write_json_atomic(path, plan)
            written.append(path)
    return written


def millions(n: int | None) -> str:
    if not n:
        return "-" if n is None else "0"
    return f"{n / 1e9:.3f}B" if n >= 1e9 else f"{n / 1e6:.2f}M" if n >= 1e6 else f"{n / 1e3:.1f}k"


def table(plan: dict) -> str:
    from bench.base.tables import github_table

    yes = lambda v: "-" if v is None else "yes" if v else "NO"
    rows = []
    for c in plan["cells"]:
        head = [c["backend"], c["model"], c["task"], c["batch_size"], c["variant"]]
        if c.get("memory_gib") is None:
            rows.append(head + [c.get("unsupported") and "NA (unsupported)" or c.get("error", "-")] + [""] * 9)
            continue
        rows.append(
            head
            + [
                millions(c["parameters"]),
                millions(c["trainable_parameters"]),
                f"{c['weights_gib']:.2f}",
                f"{c['gradients_gib']:.2f}",
                f"{c['optimizer_gib']:.2f}",
                f"~{c['activations_gib']:.2f}",
                f"{c['memory_gib']:.2f}",
                *(yes(c["fits"][d]) for d in DEVICES),
                yes(c["fits"]["RAM"]) + (f" ({c['host_memory_gib']:.2f} on a CPU)" if "host_memory_gib" in c else ""),
            ]
        )
    ram = plan["devices_gib"].get("RAM")
    headers = [
        "backend",
        "model",
        "task",
        "batch",
        "variant",
        "params",
        "trainable",
        "weights GiB",
        "grads GiB",
        "optim GiB",
        "activ. GiB (est.)",
        "total GiB",
        "A100 40GB",
        "H100 80GB",
        f"RAM {ram:.1f} GiB" if ram else "RAM",
    ]
    return github_table(rows, headers)


def run(profile: str, results_dir: Path, echo=print, batch_size: int | None = None) -> tuple[dict, list[Path]]:
    started = time.perf_counter()
    plan = build_plan(profile, echo=echo, batch_size=batch_size)
    written = write_plan(plan, results_dir)
    echo(table(plan))
    if any("host_memory_gib" in c for c in plan["cells"]):
        echo(f"\nRAM column, \"on a CPU\": {XLA_CPU_COPY}")
    echo(
        f"\nactivations are estimates (formulas in {written[0]}); {len(plan['cells'])} cells planned in {time.perf_counter() - started:.1f} s"
    )
    return plan, written


# --- The orchestrator's side: skip a cell the plan says cannot fit the device it is about to use. ---


def load_cells(results_dir: Path, profile: str) -> dict[str, dict]:
    """cell key -> its plan entry, from <results>/plan-<profile>.json; empty when there is no (readable) plan."""
    try:
        data = json.loads(plan_path(results_dir, profile).read_text())
    except (OSError, ValueError):
        return {}
    cells = data.get("cells") if isinstance(data, dict) and data.get("profile") == profile else None
    return {c["key"]: c for c in cells or [] if isinstance(c, dict) and "key" in c}


def gib_of(memory: str | None) -> float | None:
    """nvidia-smi's memory.total ("81559 MiB") in GiB."""
    match = re.match(r"\s*([\d.]+)\s*(MiB|GiB)?", memory or "")
    if not match:
        return None
    value = float(match.group(1))
    return value if match.group(2) == "GiB" else value / 1024


def available_device(machine: dict, cell: Cell | None = None) -> tuple[float | None, str]:
    """(GiB, what) of the device a cell will use: of the smallest visible GPU's memory, what the cell's framework
    can use (usable_gib; the whole card without a cell), else the machine's RAM."""
    gpus = [(gib_of(g.get("memory")), g.get("name", "GPU")) for g in machine.get("gpus") or []]
    gpus = [(size, name) for size, name in gpus if size]
    if gpus:
        size, name = min(gpus)
        if cell is None:
            return size, f"{name} memory"
        usable = cell_usable_gib(cell, size)
        return usable, f"{name} memory that {get_backend(cell.backend).framework} can use (of {size:.2f} GiB)"
    return machine.get("memory_gib"), "RAM"


def plan_figures(cell: Cell, plan_cells_by_key: dict[str, dict], machine: dict) -> tuple[float, float, str] | None:
    """(what the plan estimates the cell needs here, GiB, the device's GiB, the text saying both), or None (no plan,
    no figure, unknown device). On a machine without a GPU the need includes XLA's float32 copy where it applies."""
    entry = plan_cells_by_key.get(cell.key) or {}
    have, what = available_device(machine, cell)
    on_host = what == "RAM"  # no GPU: the cell runs on the CPU, where XLA adds its float32 copy
    need = entry.get("host_memory_gib", entry.get("memory_gib")) if on_host else entry.get("memory_gib")
    if not isinstance(need, (int, float)) or isinstance(need, bool) or not have:
        return None
    parts = ", ".join(
        f"{name} {entry[f'{name}_gib']:.2f}" for name in ("weights", "gradients", "optimizer") if f"{name}_gib" in entry
    )
    copy = (
        f", XLA's float32 copy of the bfloat16 weights on a CPU {entry['xla_cpu_float32_copy_gib']:.2f}"
        if on_host and "xla_cpu_float32_copy_gib" in entry
        else ""
    )
    text = (
        f"the plan (plan-{cell.profile}.json) estimates {need:.2f} GiB ({parts}, activations ~{entry.get('activations_gib', 0):.2f} "
        f"estimated{copy}), against the {have:.2f} GiB of {what} here"
    )
    return need, have, text


def predicted_oom(cell: Cell, plan_cells_by_key: dict[str, dict], machine: dict) -> str | None:
    """Why the plan says the cell will not fit the device, or None (fits, no plan, no figure, unknown device)."""
    figures = plan_figures(cell, plan_cells_by_key, machine)
    if figures is None or figures[0] <= figures[1]:
        return None
    return f"{figures[2].replace(', against the ', ', more than the ')}; --ignore-plan (IGNORE_PLAN=1) runs it anyway"
