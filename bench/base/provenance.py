"""Where a number came from: code, environment, machine. Stdlib only.

Facts stated here once and imported everywhere else: PACKAGE_DIR, REPO_ROOT, ENV_STAMP (the file that marks a built
env).
"""
from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import bench

PACKAGE_DIR = Path(bench.__file__).resolve().parent  # bench/, found by the package, wherever a module stands in it
REPO_ROOT = PACKAGE_DIR.parent


def venvs_dir() -> Path:
    """Where the environments are: BENCH_VENVS_DIR (fake or relocated envs), else the checkout's .venvs."""
    return Path(os.environ.get("BENCH_VENVS_DIR", REPO_ROOT / ".venvs"))


ENV_STAMP = "bench-env.json"  # written last by scripts/envs.py build: its presence means the env is complete

# Variables that change what a run does or how fast it goes (TF_CLI_* is Terraform's, not TensorFlow's).
BEHAVIOUR_VARIABLE = re.compile(
    r"^(KERAS_|TF_(?!CLI_)|XLA_|JAX_|CUDA_|NVIDIA_|TORCH|PYTORCH_|CUBLAS|CUDNN|NCCL_|HF_|TRANSFORMERS_|DIFFUSERS_|"
    r"OMP_|MKL_|OPENBLAS_|KMP_|PYTHONHASHSEED$|BENCH_)"
)


def now_utc() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _run(cmd: list[str], cwd: Path | None = None) -> str | None:
    try:
        out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def git_info(root: Path = REPO_ROOT) -> dict[str, Any]:
    """Commit and dirtiness of the code that ran. Result files themselves do not make the tree dirty."""
    commit = _run(["git", "rev-parse", "HEAD"], root)
    if commit is None:
        return {"commit": os.environ.get("BENCH_GIT_COMMIT"), "dirty": None, "source": "BENCH_GIT_COMMIT"}
    status = _run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)results"], root)
    return {"commit": commit, "dirty": bool(status), "source": "git"}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


# The instruction-set extensions that decide which kernels a framework's libraries dispatch to (oneDNN, XLA's CPU
# backend, Eigen, OpenBLAS and MKL pick their matmul and convolution code by these): two hosts that differ in one of
# them run different code for the same cell. x86 names as /proc/cpuinfo "flags" spells them, then Arm's "Features".
VECTOR_EXTENSIONS = (
    "sse4_1", "sse4_2", "avx", "avx2", "fma", "f16c",
    "avx512f", "avx512dq", "avx512cd", "avx512bw", "avx512vl", "avx512ifma", "avx512vbmi", "avx512_vbmi2",
    "avx512_vnni", "avx512_bf16", "avx512_fp16", "avx512_bitalg", "avx512_vpopcntdq",
    "avx_vnni", "avx_vnni_int8", "avx_ne_convert", "amx_tile", "amx_bf16", "amx_int8", "amx_fp16",
    "sha_ni", "aes", "vaes", "pclmulqdq", "vpclmulqdq", "gfni",
    "asimd", "asimdhp", "asimddp", "fphp", "i8mm", "bf16", "sve", "sve2", "svebf16", "svei8mm", "sme",
)
# The fields that name a processor: its fingerprint is their sha256. Not the clock it reports (it moves with load and
# power state), the microcode revision (a firmware update would orphan every noise study) or the cache size (a
# hypervisor may report it differently for the same part): those are recorded beside it.
PROCESSOR_IDENTITY = ("vendor", "family", "model", "stepping", "model_name", "flags")


def _cpuinfo_first_block(text: str) -> dict[str, str]:
    """The first processor's "key : value" lines of /proc/cpuinfo (every logical CPU repeats them); Arm kernels put
    some keys (Hardware, Revision) in a block of their own at the end, which are not needed here."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    return fields


def processor_fields(cpuinfo: str) -> dict[str, Any]:
    """The processor's identity from /proc/cpuinfo's text: x86 (vendor_id, cpu family, model, stepping, model name,
    microcode, cpu MHz, cache size, flags) or Arm (CPU implementer, architecture, part, variant and revision,
    Features); the vector extensions are those of VECTOR_EXTENSIONS it lists."""
    fields = _cpuinfo_first_block(cpuinfo)
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    mhz = fields.get("cpu MHz")
    try:
        mhz_value = round(float(mhz), 1) if mhz else None
    except ValueError:
        mhz_value = None
    if "CPU implementer" in fields and "vendor_id" not in fields:  # Arm
        variant, revision = fields.get("CPU variant"), fields.get("CPU revision")
        info = {
            "vendor": fields.get("CPU implementer"),
            "family": fields.get("CPU architecture"),
            "model": fields.get("CPU part"),
            "stepping": f"{variant}r{revision}" if variant and revision else revision,
            "model_name": fields.get("model name") or platform.processor() or platform.machine(),
        }
    else:
        info = {
            "vendor": fields.get("vendor_id"),
            "family": fields.get("cpu family"),
            "model": fields.get("model"),
            "stepping": fields.get("stepping"),
            "model_name": fields.get("model name"),
        }
    return {
        **info,
        "microcode": fields.get("microcode"),
        "flags": [name for name in VECTOR_EXTENSIONS if name in flags],
        "mhz": mhz_value,
        "cache_size": fields.get("cache size"),
    }


def processor_fingerprint_of(info: dict[str, Any]) -> str:
    """sha256 over the identity fields (PROCESSOR_IDENTITY), as canonical JSON."""
    import hashlib

    identity = {name: info.get(name) for name in PROCESSOR_IDENTITY}
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def processor_info() -> dict[str, Any]:
    """What identifies this host's processor, beyond the name a hypervisor may cut to "AMD EPYC": vendor, family,
    model, stepping, model name, the vector extensions it has (VECTOR_EXTENSIONS), and the microcode, reported clock
    (`mhz`, informational) and cache size; `fingerprint` tells two processors apart (PROCESSOR_IDENTITY). From
    /proc/cpuinfo on Linux; elsewhere what the platform module gives (name and architecture, no extensions)."""
    try:
        info = processor_fields(Path("/proc/cpuinfo").read_text())
    except OSError:
        info = {
            "vendor": None,
            "family": None,
            "model": platform.machine() or None,
            "stepping": None,
            "model_name": platform.processor() or platform.machine() or None,
            "microcode": None,
            "flags": [],
            "mhz": None,
            "cache_size": None,
        }
    return {**info, "fingerprint": processor_fingerprint_of(info)}


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


# nvidia-smi's fields for each GPU, in query order: identity, then what the speed of a cell depends on.
GPU_FIELDS = ("index", "uuid", "name", "driver_version", "memory.total", "pci.bus_id", "compute_cap")
# What can change during a run and moves a figure: recorded at the start and end of each cell (gpu_state).
GPU_STATE_FIELDS = ("clocks.sm", "clocks.max.sm", "clocks.mem", "clocks.max.mem", "power.draw", "power.limit",
                    "temperature.gpu", "clocks_throttle_reasons.active")
# nvidia-smi's clocks_throttle_reasons.active bits (NVML's nvmlClocksEventReasons), by name
THROTTLE_BITS = {
    0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
    0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown", 0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}  # fmt: skip
# Those that slow the GPU below what it would run the cell at: heat, a hardware slowdown, an external power brake. Not
# the idle state, nor the power cap a GPU under full load runs at by design (the published A100 too), nor a setting.
DISTURBING_THROTTLE = ("hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown")


def throttle_reasons(state: dict[str, Any]) -> list[str]:
    """The throttle reasons active in one gpu_state reading, by name, from its bitmask (clocks_throttle_reasons.active,
    or clocks_event_reasons.active as newer drivers name it); empty where none is recorded or readable."""
    raw = state.get("clocks_throttle_reasons.active", state.get("clocks_event_reasons.active"))
    try:
        mask = int(str(raw), 16)
    except ValueError:
        return []
    return [name for bit, name in THROTTLE_BITS.items() if mask & bit]


NO_GPU_VALUES = {"", "-1", "none", "nodevfiles", "void"}  # CUDA_VISIBLE_DEVICES values that hide every GPU


def _nvidia_smi_rows(fields: tuple[str, ...], ids: list[str] | None = None) -> list[dict[str, str]] | None:
    """One dict per GPU of nvidia-smi --query-gpu (every GPU, or those of `ids`); None without a working nvidia-smi."""
    cmd = ["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"]
    if ids:
        cmd.append(f"--id={','.join(ids)}")
    out = _run(cmd)
    if out is None:
        return None
    return [dict(zip(fields, (part.strip() for part in line.split(",")))) for line in out.splitlines() if line.strip()]


def _mig_devices() -> dict[str, str]:
    """MIG device UUID -> its parent GPU's UUID, from `nvidia-smi -L` (empty without MIG)."""
    parents, parent = {}, None
    for line in (_run(["nvidia-smi", "-L"]) or "").splitlines():
        if match := re.search(r"\(UUID: (GPU-[^)]+)\)", line):
            parent = match.group(1)
        elif (match := re.search(r"\(UUID: (MIG-[^)]+)\)", line)) and parent:
            parents[match.group(1)] = parent
    return parents


def visible_gpu_selection(all_gpus: list[dict[str, str]], visible: str | None) -> list[dict[str, str]]:
    """The GPUs a process with CUDA_VISIBLE_DEVICES=`visible` uses, in CUDA's order for it: every GPU when unset;
    otherwise each entry an index (in PCI bus order, the order nvidia-smi lists and CUDA_DEVICE_ORDER=PCI_BUS_ID
    gives), a GPU UUID (or a unique prefix of one) or a MIG device UUID; as CUDA does, the list ends at the first
    entry that names no GPU. A MIG entry stands for its slice of the parent GPU (recorded as `mig`)."""
    if visible is None:
        return list(all_gpus)
    if visible.strip().lower() in NO_GPU_VALUES:
        return []
    chosen: list[dict[str, str]] = []
    migs = None
    for entry in (part.strip() for part in visible.split(",")):
        if entry.isdigit():
            match = (
                [g for g in all_gpus if g.get("index") == entry]
                if all(g.get("index") for g in all_gpus)
                else all_gpus[int(entry) : int(entry) + 1]
            )
        elif entry.startswith("MIG-"):
            migs = _mig_devices() if migs is None else migs
            match = [{**g, "mig": entry} for g in all_gpus if g.get("uuid") == migs.get(entry)]
        else:
            match = [
                g
                for g in all_gpus
                if g.get("uuid", "").startswith(entry if entry.startswith("GPU-") else f"GPU-{entry}")
            ]
        if len(match) != 1 or match[0] in chosen:
            break  # CUDA ignores everything from an invalid (or repeated) entry on
        chosen.append(match[0])
    return chosen


def gpus(visible: str | None | bool = True) -> list[dict[str, str]]:
    """The NVIDIA GPUs this process may use, as nvidia-smi reports them (index, uuid, name, driver, memory in MiB,
    PCI bus id, compute capability, driver CUDA), narrowed by CUDA_VISIBLE_DEVICES (pass visible=None for every
    GPU of the machine, or a value to use instead of the environment's); empty without a driver."""
    rows = _nvidia_smi_rows(GPU_FIELDS)
    if not rows:
        return []
    cuda = _run(["nvidia-smi"]) or ""
    match = re.search(r"CUDA Version:\s*([\d.]+)", cuda)
    found = []
    for row in rows:
        memory = row.get("memory.total", "")
        found.append(
            {
                "index": row.get("index", ""),
                "uuid": row.get("uuid", ""),
                "name": row.get("name", ""),
                "driver": row.get("driver_version", ""),
                "memory": f"{memory} MiB" if memory.replace(".", "").isdigit() else memory,
                "pci_bus_id": row.get("pci.bus_id", ""),
                "compute_capability": row.get("compute_cap", ""),
                "driver_cuda": match.group(1) if match else None,
            }
        )
    if visible is True:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return visible_gpu_selection(found, visible if isinstance(visible, str) else None)


def gpu_state(gpu_ids: list[str]) -> list[dict[str, str]] | None:
    """Clocks, power and throttle reasons of these GPUs (nvidia-smi ids: index or UUID) right now; None without
    nvidia-smi. A field this driver does not know is left out rather than failing the query."""
    if not gpu_ids:
        return None
    rows = _nvidia_smi_rows(GPU_STATE_FIELDS, gpu_ids)
    if rows is None:  # an older driver without one of the fields: ask for them one by one
        merged: list[dict[str, str]] = [{} for _ in gpu_ids]
        for name in GPU_STATE_FIELDS:
            for row, part in zip(merged, _nvidia_smi_rows((name,), gpu_ids) or []):
                row.update(part)
        rows = merged if any(merged) else None
    return rows


def machine_info() -> dict[str, Any]:
    every = gpus(visible=None)  # nvidia-smi asked once: every GPU, then the visible ones among them
    return {
        "os": platform.platform(),
        "cpu": _cpu_model(),
        "processor": processor_info(),  # identity beyond the label's name: two hosts of one label can differ
        "logical_cpus": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "gpus": visible_gpu_selection(every, os.environ.get("CUDA_VISIBLE_DEVICES")),  # the GPUs this run may use
        "gpus_on_machine": len(every),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }


def hardware_label(machine: dict[str, Any]) -> str:
    """The hardware by the names it reports: its GPUs, else "CPU <name> (<n> cores)". Hosts of one such name can hold
    different processors (a hypervisor may cut every EPYC to "AMD EPYC"), so results are grouped by machine_label."""
    if machine.get("gpus"):
        names = [g["name"] + (" MIG" if g.get("mig") else "") for g in machine["gpus"]]
        return f"{len(names)}x {names[0]}"
    return f"CPU {machine.get('cpu')} ({machine.get('logical_cpus')} cores)"


def processor_tag(machine: dict[str, Any]) -> str | None:
    """The first 12 hex digits of a CPU machine's processor fingerprint (processor_info), which tells two processors
    of one name apart; None on a GPU machine (its GPUs, named in the label, are what its cells measure) and for a
    result recorded before processors were."""
    if machine.get("gpus"):
        return None
    fingerprint = (machine.get("processor") or {}).get("fingerprint")
    return fingerprint[:12] if fingerprint else None


def machine_label(machine: dict[str, Any]) -> str:
    """A short name that groups results run on the same hardware (one table per machine): the hardware's names and,
    on a CPU, its processor's tag, so two processors sold under one name never share a table."""
    tag = processor_tag(machine)
    return f"{hardware_label(machine)}, processor {tag}" if tag else hardware_label(machine)


def hardware_slug(machine: dict[str, Any]) -> str:
    return re.sub(r"[^a-z0-9]+", "-", hardware_label(machine).lower()).strip("-")[:80]


def machine_slug(machine: dict[str, Any]) -> str:
    """The machine's folder name (results, ceilings, studies): the hardware's slug, then `--<processor tag>` on a
    CPU, so a run on another processor of the same name lands beside the others' results, not over them."""
    tag = processor_tag(machine)
    return f"{hardware_slug(machine)}--{tag}" if tag else hardware_slug(machine)


def env_stamp(prefix: str | Path = sys.prefix) -> dict[str, Any] | None:
    path = Path(prefix) / ENV_STAMP
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def packages() -> dict[str, str]:
    """Every installed distribution of this interpreter, name -> version."""
    found = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            found[name.lower()] = dist.version
    return dict(sorted(found.items()))


def behaviour_variables() -> dict[str, str]:
    return {k: v for k, v in sorted(os.environ.items()) if BEHAVIOUR_VARIABLE.match(k)}


def peak_rss_gib() -> float:
    """This process's peak resident memory so far (Linux ru_maxrss is in KiB): on a CPU, what a cell really held,
    beside the plan's prediction. Child processes (torch.compile's workers, a DataLoader's) are not in it."""
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3)


UNLOCKED_FRAMEWORKS = ("torch", "jax", "tensorflow", "tensorflow-cpu", "keras")  # what names an unlocked env


def distributions_sha256(found: dict[str, str]) -> str:
    """An unlocked environment's fingerprint, in place of a lock's sha256: over its sorted name==version lines."""
    import hashlib

    return hashlib.sha256(
        "".join(f"{name}=={version}\n" for name, version in sorted(found.items())).encode()
    ).hexdigest()


def unlocked_environment() -> dict[str, Any]:
    """Provenance of an environment no lock built (--env current, bench/catalogue/ownenv.py): that it is unlocked, the
    interpreter, every installed distribution with its version and the sha256 over that list. The framework builds
    (CUDA, cuDNN) are recorded per run by the cell process, as in the locked envs."""
    found = packages()
    return {
        "unlocked": True,
        "interpreter": sys.executable,
        "python": platform.python_version(),
        "distributions": found,
        "distributions_sha256": distributions_sha256(found),
        "frameworks": {name: found[name] for name in UNLOCKED_FRAMEWORKS if name in found},
    }


def study_provenance(git: dict, machine: dict, profile_choice: str, study: str, worker_environment: dict,
                     reference: dict, **extra: Any) -> dict[str, Any]:
    """A study point's provenance (the inference grid, the framework-overhead study: one long-lived worker per env,
    not one process per cell): what a cell's result records, the study, the workers' variables, the drift probe
    (`reference`), and the machine's load while the point ran (other jobs: the 1-minute load average)."""
    return {"git": git, "machine": machine, "profile_choice": profile_choice, "orchestrator": sys.argv,
            "repeats_planned": 1, "study": study, "worker_environment": worker_environment, "reference": reference,
            "load_average_1m": round(os.getloadavg()[0], 2), "cpu_count": os.cpu_count(), **extra}


def process_provenance() -> dict[str, Any]:
    """Everything knowable without importing a framework: the interpreter, its env, its variables."""
    return {
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "environment": env_stamp(),
        "packages": packages(),
        "variables": behaviour_variables(),
        "cpu_affinity": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
    }
