"""`make doctor`: can this machine build the environments and run the matrix? One line per check.

Runs first in `make envs`, `make test` and `make bench-all`, with the system python3, before any env exists:
stdlib only, Python 3.8-compatible syntax (so that a too-old python3 gets a FAIL line, not a SyntaxError),
and fast (every probe is a file read or one short subprocess). Every probe is a field of `Probes`, so each
verdict can be tested with faked probes.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bench.base.provenance import ENV_STAMP, NO_GPU_VALUES, REPO_ROOT, venvs_dir

GB = 10**9
GIB = 2**30
REQUIRED_PYTHON = (3, 11)
MIN_DRIVER = 525  # the CUDA 12 wheels (torch, jax[cuda12], tensorflow[and-cuda]) need a driver >= 525
# Disk each env adds when built (GB). Measured: 17 GB for all six on one filesystem, because uv hard-links
# packages from its cache (each env alone holds 6.6-8.7 GB, most of it shared CUDA wheels).
# New disk per env that `make envs` / `make test` build (hard links from uv's cache: shared wheels count once).
# tf-transformers (the grid study's) shares nearly all of keras2's TensorFlow. (`make test` also builds jax-2024,
# 1.6 GB, inside the margin of these figures.)
ENV_DISK_GB = {"keras2": 3.0, "tensorflow": 3.0, "jax": 2.5, "torch": 4.0, "native-torch": 3.5, "tf-transformers": 0.2,
               "tools": 1.0}
IMAGE_DISK_GB = 7.0  # one container image (make image BACKEND=x): the env plus the Debian base
CONTAINER_STORAGE = Path("/var/lib/containers/storage")  # podman's graphroot (scripts/install-system-deps.sh)
PROBE_TIMEOUT_S = 5

OK, WARN, FAIL = "ok", "warn", "FAIL"


@dataclass
class Check:
    name: str
    verdict: str  # ok / warn / FAIL
    value: str  # what was measured
    fix: str = ""  # how to fix a FAIL (or a warn)

    def line(self) -> str:
        text = f"{self.verdict:<4}  {self.name:<17} {self.value}"
        return text + (f"\n      fix: {self.fix}" if self.fix else "")


def _command_output(cmd: list[str]) -> str | None:
    """stdout of a command, or None when it is missing, fails or hangs."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None


def _total_memory_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def _existing(path: Path) -> Path:
    """The nearest existing folder at or above path (what will hold it once created)."""
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _free_disk_bytes(path: Path) -> int:
    return shutil.disk_usage(_existing(path)).free


def _nvidia_driver() -> str | None:
    """The driver version nvidia-smi reports; "" when nvidia-smi exists but fails; None without nvidia-smi."""
    if shutil.which("nvidia-smi") is None:
        return None
    out = _command_output(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    return out.strip().splitlines()[0].strip() if out and out.strip() else ""


def _built_envs(venvs: Path) -> set[str]:
    return {name for name in ENV_DISK_GB if (venvs / name / ENV_STAMP).exists()}


def _read_plan(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


@dataclass
class Probes:
    """What the doctor measures; tests replace any of these with fakes."""

    venvs: Path = field(default_factory=venvs_dir)
    plan_path: Path = REPO_ROOT / "results" / "plan.json"
    python_version: Callable[[], tuple[int, ...]] = lambda: tuple(sys.version_info[:3])
    which: Callable[[str], str | None] = shutil.which
    make_version: Callable[[], str | None] = lambda: _command_output(["make", "--version"])
    free_disk_bytes: Callable[[Path], int] = _free_disk_bytes
    total_memory_bytes: Callable[[], int | None] = _total_memory_bytes
    nvidia_driver: Callable[[], str | None] = _nvidia_driver
    built_envs: Callable[[Path], set[str]] = _built_envs
    read_plan: Callable[[Path], dict | None] = _read_plan
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)  # for CC
    profile: str | None = None  # the profile about to run (PROFILE=), where one was named


def check_python(p: Probes) -> Check:
    version = p.python_version()
    text = ".".join(map(str, version))
    fix = "install Python 3.11 and run make with PYTHON=python3.11 (e.g. `apt-get install python3.11`, or pyenv)"
    if tuple(version[:2]) == REQUIRED_PYTHON:
        return Check("python", OK, f"{text} ({sys.executable})")
    if tuple(version[:2]) < REQUIRED_PYTHON:  # scripts/envs.py and bench/ need tomllib (3.11)
        return Check("python", FAIL, f"{text}: 3.11 needed (tomllib)", fix)
    return Check("python", WARN, f"{text}: the envs are built with 3.11, which uv must find or download", fix)


def check_make(p: Probes) -> Check:
    out = p.make_version()
    if not out:
        return Check("make", FAIL, "not found", "install GNU make (`apt-get install make`)")
    first = out.splitlines()[0].strip()
    if "GNU Make" not in first:
        return Check("make", FAIL, f"{first}: not GNU make", "install GNU make and run it as `make` (or gmake)")
    return Check("make", OK, first)


def check_compiler(p: Probes) -> Check:
    names = [p.environ["CC"]] if p.environ.get("CC") else ["cc", "gcc"]
    for name in names:
        path = p.which(name)
        if path:
            return Check("C compiler", OK, path)
    return Check(
        "C compiler",
        FAIL,
        f"none of {', '.join(names)} on PATH (torch.compile builds its CPU kernels with one)",
        "install one: `apt-get install gcc`",
    )


def check_disk(p: Probes) -> Check:
    built = p.built_envs(p.venvs)
    missing = [name for name in ENV_DISK_GB if name not in built]
    need = sum(ENV_DISK_GB[name] for name in missing)
    free = p.free_disk_bytes(p.venvs) / GB
    where = f"{free:.1f} GB free for {p.venvs}; {need:.1f} GB needed"
    if not missing:
        return Check("disk (envs)", OK, f"{where} (all {len(ENV_DISK_GB)} envs built)")
    value = f"{where} for {len(missing)} env(s) to build: {', '.join(missing)}"
    if free < need:
        return Check(
            "disk (envs)",
            FAIL,
            value,
            f"free {need - free:.1f} GB more on that filesystem, or point .venvs at a larger one",
        )
    return Check("disk (envs)", OK, value)


def check_container_disk(p: Probes) -> Check:
    """The container route only (make image): never fatal, the venv route does not need it."""
    free = p.free_disk_bytes(CONTAINER_STORAGE) / GB
    images = int(free // IMAGE_DISK_GB)
    value = f"{free:.1f} GB free for {CONTAINER_STORAGE}: room for {images} image(s) of ~{IMAGE_DISK_GB:.0f} GB (one per backend, 5 in all)"
    if images < 1:
        return Check(
            "disk (images)", WARN, value, f"only for `make image`: free at least {IMAGE_DISK_GB:.0f} GB per image"
        )
    return Check("disk (images)", OK, value)


def largest_cell_gib(plan: dict) -> tuple[str, float] | None:
    """The plan's largest per-cell memory. The plan (results/plan.json) is read as
    {"cells": [{"key": "<cell key>", "memory_gib": <GiB the cell needs>}, ...]}; cells without a figure are skipped."""
    sizes = [
        (str(c.get("key", "?")), float(c["memory_gib"]))
        for c in plan.get("cells", [])
        if isinstance(c, dict) and isinstance(c.get("memory_gib"), (int, float))
    ]
    return max(sizes, key=lambda kv: kv[1]) if sizes else None


def gpus_hidden_by(environ: Mapping[str, str]) -> str | None:
    """CUDA_VISIBLE_DEVICES where its value hides every GPU ("" and "-1" among them), else None."""
    value = environ.get("CUDA_VISIBLE_DEVICES")
    return value if value is not None and value.strip().lower() in NO_GPU_VALUES else None


def gpu_in_use(nvidia_driver: Callable[[], str | None], environ: Mapping[str, str]) -> bool:
    """Whether the cells will run on a GPU: nvidia-smi reports a driver and CUDA_VISIBLE_DEVICES does not hide them."""
    return gpus_hidden_by(environ) is None and driver_major(nvidia_driver() or "") is not None


def profile_plan(
    results_dir: Path,
    profile: str | None,
    nvidia_driver: Callable[[], str | None] = _nvidia_driver,
    environ: Mapping[str, str] = os.environ,
) -> Path:
    """The plan of the profile about to run (bench plan writes <results>/plan-<profile>.json): plan.json is the last
    profile planned, and a smoke run warned by the paper plan's 33 GiB cells warns of what will not run. Without a
    profile, the run's own default: paper where a GPU is in use (CUDA_VISIBLE_DEVICES= hides them), else smoke
    (bench/run/planning.py default_profile)."""
    profile = profile or ("paper" if gpu_in_use(nvidia_driver, environ) else "smoke")
    return results_dir / f"plan-{profile}.json"


def check_memory(p: Probes) -> Check:
    total = p.total_memory_bytes()
    if total is None:
        return Check("memory", WARN, "total unknown (no /proc/meminfo)")
    total_gib = total / GIB
    plan = p.read_plan(p.plan_path)
    largest = largest_cell_gib(plan) if isinstance(plan, dict) else None
    if largest is None:
        why = "no per-cell memory figures in" if isinstance(plan, dict) else "no plan at"
        return Check("memory", OK, f"{total_gib:.1f} GiB total ({why} {p.plan_path}: not compared with the cells)")
    key, need = largest
    if gpu_in_use(p.nvidia_driver, p.environ):  # the cells' memory is the GPU's, which the plan's fits columns give
        return Check(
            "memory",
            OK,
            f"{total_gib:.1f} GiB total (a GPU is in use: its cells' memory, up to {need:.1f} GiB, is on the GPU; "
            f"{p.plan_path} says which GPUs each fits)",
        )
    value = f"{total_gib:.1f} GiB total; the largest cell ({key}) needs {need:.1f} GiB"
    if need > total_gib:  # that cell will run out of memory; the others still run
        return Check("memory", WARN, value, "run on a larger machine, or expect that cell to end as oom")
    return Check("memory", OK, value)


def driver_major(version: str) -> int | None:
    match = re.match(r"\s*(\d+)", version)
    return int(match.group(1)) if match else None


def check_driver(p: Probes) -> Check:
    version = p.nvidia_driver()
    if version is None:
        return Check("NVIDIA driver", OK, "no nvidia-smi: CPU only (the smoke profile)")
    hidden = gpus_hidden_by(p.environ)
    if hidden is not None:  # the advice below, taken: the GPUs are not used
        return Check(
            "NVIDIA driver",
            OK,
            f"{version or 'present'}, but CUDA_VISIBLE_DEVICES={hidden!r} hides every GPU: CPU only (the smoke profile)",
        )
    major = driver_major(version)
    if major is None:
        return Check(
            "NVIDIA driver",
            WARN,
            f"nvidia-smi present but reports no driver ({version or 'it failed'})",
            "check the driver with `nvidia-smi`; without one the cells run on CPU",
        )
    if major < MIN_DRIVER:
        return Check(
            "NVIDIA driver",
            FAIL,
            f"{version}: the CUDA 12 wheels need >= {MIN_DRIVER}",
            f"upgrade the NVIDIA driver to >= {MIN_DRIVER}, or hide the GPU (CUDA_VISIBLE_DEVICES=) to run on CPU",
        )
    return Check("NVIDIA driver", OK, f"{version} (>= {MIN_DRIVER})")


def check_profile(p: Probes) -> Check:
    """A profile this machine cannot run (paper without a GPU) stops make before any env is built."""
    from bench.catalogue.profiles import why_not_without_a_gpu

    why = None if gpu_in_use(p.nvidia_driver, p.environ) else why_not_without_a_gpu(p.profile or "")
    if why:
        value, _, fix = why.partition(": ")
        return Check("profile", FAIL, value, fix)
    return Check("profile", OK, p.profile or "the run's default")


CHECKS: list[Callable[[Probes], Check]] = [
    check_python,
    check_make,
    check_compiler,
    check_disk,
    check_container_disk,
    check_memory,
    check_driver,
    check_profile,
]


def diagnose(probes: Probes | None = None) -> list[Check]:
    probes = probes or Probes()
    return [check(probes) for check in CHECKS]


def main(probes: Probes | None = None, out: Callable[[str], None] = print) -> int:
    """Print one line per check; 1 when any check FAILs (so make stops before building anything)."""
    checks = diagnose(probes)
    for check in checks:
        out(check.line())
    failed = [c.name for c in checks if c.verdict == FAIL]
    out(f"doctor: {len(failed)} failed ({', '.join(failed)})" if failed else "doctor: ready")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
