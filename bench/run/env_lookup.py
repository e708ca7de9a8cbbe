"""Which interpreter runs a backend's cells: its built environment (.venvs/<env>, or under BENCH_VENVS_DIR),
refused where missing or stale."""
from __future__ import annotations

import hashlib
import sys

from bench.base.errors import BenchError
from bench.base.provenance import ENV_STAMP, REPO_ROOT, env_stamp, venvs_dir
from bench.catalogue.backends import make_env_command

VENVS_DIR = venvs_dir()


def current_lock_sha256(env: str) -> str | None:
    """The sha256 of envs/<env>/requirements.txt as it is now (what scripts/envs.py stamps a build with).
    env: a backend's env on a stack (Cell.env: the backend's name today, <backend>-2024 on the 2024 stack)."""
    try:
        return hashlib.sha256((REPO_ROOT / "envs" / env / "requirements.txt").read_bytes()).hexdigest()
    except OSError:
        return None


def built_env(backend: str) -> tuple[str, dict | None]:
    """The interpreter and stamp of a built environment: .venvs/<backend> (an env name: a backend on a stack), or
    this one if it is that env."""
    venv = VENVS_DIR / backend
    if (venv / ENV_STAMP).exists():
        return str(venv / "bin" / "python"), env_stamp(venv)
    if (env_stamp() or {}).get("backend") == backend:
        return sys.executable, env_stamp()  # e.g. inside the container image
    raise BenchError(
        f"the {backend!r} environment is not built (no {venv / ENV_STAMP}): run `{make_env_command(backend)}`"
    )


def env_python(backend: str) -> str:
    """The interpreter of the backend's built, current environment. An env built from another requirements.txt
    is refused: its numbers would be another lock's."""
    python, stamp = built_env(backend)
    built, now = (stamp or {}).get("lock_sha256"), current_lock_sha256(backend)
    if now and built != now:
        raise BenchError(
            f"the {backend!r} environment is stale (built from requirements sha256 {str(built)[:12]}, "
            f"envs/{backend}/requirements.txt is now {now[:12]}): run `{make_env_command(backend)}`"
        )
    return python
