"""What every process inside a framework env does first, before its framework is imported: a benchmark cell
(bench/cell.py), a grid worker (bench/grid/worker.py) and an overhead-study worker (bench/overhead/worker.py) alike."""
from __future__ import annotations

import os

from bench import offline
from bench.backends import cell_environment


def enter_env(env: str, uses_jax: bool, on_gpu: bool) -> None:
    """The env's variables (bench/backends.py `cell_environment`; a value already set wins), the platform JAX is to
    use, and the network guard (bench/offline.py)."""
    for key, value in cell_environment(env).items():
        os.environ.setdefault(key, value)
    if uses_jax:
        # Name the platform: without a GPU, jax[cuda12]'s plugin fails to initialise (noisily) before falling back
        # to the CPU; with a GPU to use, a JAX that cannot use it must fail, not fall back to the CPU.
        os.environ.setdefault("JAX_PLATFORMS", "cuda" if on_gpu else "cpu")
    offline.install_guard()
