"""What every part of bench.envs shares: names, paths, errors, uv. Stdlib only."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from bench.base.errors import BenchError
from bench.base.provenance import REPO_ROOT as ROOT
from bench.base.provenance import venvs_dir
from bench.catalogue.backends import (
    COMMON_ENVIRONMENT,
    DEFAULT_STACK,
    STACKS,
    STUDY_ENVIRONMENTS,
    cell_environment,
    stack_env_names,
)

# Where `make env` builds the envs and every run reads them: the checkout's .venvs, or the folder BENCH_VENVS_DIR
# names (make's VENVS=, relocated or fake envs), one folder for both (bench/base/provenance.py venvs_dir)
VENVS = venvs_dir()

TOOLS = "tools"  # the orchestrator/test env: not a backend, one for every stack
# Every env there is: both stacks' backend envs and the study envs (built like a backend's, no column of the
# table; today's stack only). Locked and checked by default; `build --all` takes one stack's (stack_names).
BACKEND_ENV_NAMES = [*(n for s in STACKS for n in stack_env_names(s)), *STUDY_ENVIRONMENTS]
ENV_NAMES = [*BACKEND_ENV_NAMES, TOOLS]


def stack_names(stack: str = DEFAULT_STACK) -> list[str]:
    """What `build --all` builds for a stack: its backend envs (today's: and the study envs), then tools."""
    return [*stack_env_names(stack), *(STUDY_ENVIRONMENTS if stack == DEFAULT_STACK else []), TOOLS]


class EnvError(Exception):
    """A user-facing error: printed without a traceback, exit status 2."""


def say(msg: str = "") -> None:
    print(msg, flush=True)


def uv_bin() -> str:
    # $UV (the Makefile exports its pinned .venvs/.uv/uv), else that pinned uv if present, else PATH.
    pinned = VENVS / ".uv" / "uv"
    found = os.environ.get("UV") or (str(pinned) if os.access(pinned, os.X_OK) else None) or shutil.which("uv")
    if not found:
        raise EnvError(
            "uv not found: set UV, run `make` (fetches the pinned uv) or `python3 -m pip install uv==0.13.9`"
        )
    return found


def check_name(name: str, allowed: list[str] | None = None, what: str = "envs") -> str:
    allowed = ENV_NAMES if allowed is None else allowed
    if name not in allowed:
        if name == "":
            raise EnvError(f"no {what[:-1]} given (e.g. BACKEND=...); valid {what}: {', '.join(allowed)}")
        raise EnvError(f"unknown {what[:-1]} {name!r}; valid {what}: {', '.join(allowed)}")
    return name


def selected_names(args, command: str) -> list[str]:
    """The env names a command was given (or all of them with --all), each checked."""
    try:
        names = stack_names(getattr(args, "stack", DEFAULT_STACK)) if args.all else args.names
    except BenchError as e:
        raise EnvError(str(e)) from None
    if not names:
        raise EnvError(f"{command}: name an env or pass --all; valid envs: {', '.join(ENV_NAMES)}")
    for n in names:
        check_name(n)
    return names


def env_vars(name: str) -> dict[str, str]:
    """The variables a process in env NAME runs with: a backend's cell variables, the common ones for tools."""
    return cell_environment(name) if name in BACKEND_ENV_NAMES else dict(COMMON_ENVIRONMENT)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def rel(path: Path) -> str:
    path = path.resolve()
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def default_venv(name: str) -> Path:
    return VENVS / name


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, **kw)


def fmt_s(seconds: float) -> str:
    return f"{seconds:.1f}s" if seconds < 120 else f"{seconds / 60:.1f}min"
