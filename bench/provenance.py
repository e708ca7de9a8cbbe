"""Where a number came from: code, environment, machine. Stdlib only.

Facts stated here once and imported everywhere else: REPO_ROOT, ENV_STAMP (the file that marks a built env).
"""
from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
ENV_STAMP = "bench-env.json"  # written last by scripts/envs.py build: its presence means the env is complete

# Variables that change what a run does or how fast it goes (TF_CLI_* is Terraform's, not TensorFlow's).
BEHAVIOUR_VARIABLE = re.compile(
    r"^(KERAS_|TF_(?!CLI_)|XLA_|JAX_|CUDA_|NVIDIA_|TORCH|PYTORCH_|CUBLAS|CUDNN|NCCL_|HF_|TRANSFORMERS_|DIFFUSERS_|"
    r"OMP_|MKL_|OPENBLAS_|KMP_|PYTHONHASHSEED$|BENCH_)"
)


def now_utc() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


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


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def gpus() -> list[dict[str, str]]:
    """NVIDIA GPUs as nvidia-smi reports them (name, driver, memory); empty without a driver."""
    out = _run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"])
    if not out:
        return []
    cuda = _run(["nvidia-smi"]) or ""
    match = re.search(r"CUDA Version:\s*([\d.]+)", cuda)
    rows = []
    for line in out.splitlines():
        name, driver, memory = (part.strip() for part in line.split(","))
        rows.append({"name": name, "driver": driver, "memory": memory, "driver_cuda": match.group(1) if match else None})
    return rows


def machine_info() -> dict[str, Any]:
    return {
        "os": platform.platform(),
        "cpu": _cpu_model(),
        "logical_cpus": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "gpus": gpus(),
    }


def machine_label(machine: dict[str, Any]) -> str:
    """A short name that groups results run on the same hardware (one table per machine)."""
    if machine.get("gpus"):
        names = [g["name"] for g in machine["gpus"]]
        label = f"{len(names)}x {names[0]}"
    else:
        label = f"CPU {machine.get('cpu')} ({machine.get('logical_cpus')} cores)"
    return label


def machine_slug(machine: dict[str, Any]) -> str:
    return re.sub(r"[^a-z0-9]+", "-", machine_label(machine).lower()).strip("-")[:80]


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

    return hashlib.sha256("".join(f"{name}=={version}\n" for name, version in sorted(found.items())).encode()).hexdigest()


def unlocked_environment() -> dict[str, Any]:
    """Provenance of an environment no lock built (--env current, bench/ownenv.py): that it is unlocked, the
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


def process_provenance() -> dict[str, Any]:
    """Everything knowable without importing a framework: the interpreter, its env, its variables."""
    return {
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "environment": env_stamp(),
        "packages": packages(),
        "variables": behaviour_variables(),
    }
