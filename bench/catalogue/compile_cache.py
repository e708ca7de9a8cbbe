"""One compile cache per cell and run: a cell's later processes load what its first process compiled (JAX's
persistent compilation cache, inductor's and Triton's caches, TensorFlow's XLA cache), so that the processes the
verdicts need cost their set-up and steps, not a compile each. The first process of a cell always compiles from
cold: its first step is timed apart as before and reports the compile; each process records how warm it found the
cache (`process.compile_cache`). Caches are never shared between cells or runs, and are removed with the run,
unless BENCH_COMPILE_CACHE_DIR names a folder kept across runs (the test suite's, where what is checked is a code
path, not a compile time): then every cell's first process may start warm, and its record says so.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from bench.base.runlock import alive
from bench.catalogue.backends import get_backend

PREFIX = "bench-compile-cache-"  # then the orchestrator's PID: a dead one's folder is removed by the next run
ROOT_VARIABLE = "BENCH_COMPILE_CACHE_ROOT"  # a cell whose orchestrator was killed removes the run's folder
SHARED_VARIABLE = "BENCH_COMPILE_CACHE_DIR"  # one cache for every cell and run, kept: first processes may be warm


def cache_environment(framework: str, folder: Path) -> dict[str, str]:
    """The variables that point `framework`'s compile caches at `folder`."""
    if framework == "jax":
        return {
            "JAX_COMPILATION_CACHE_DIR": str(folder / "jax"),
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",  # every executable, not only slow ones
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
        }
    if framework == "torch":
        return {
            "TORCHINDUCTOR_CACHE_DIR": str(folder / "inductor"),
            "TORCHINDUCTOR_FX_GRAPH_CACHE": "1",
            "TORCHINDUCTOR_AUTOGRAD_CACHE": "1",
            "TRITON_CACHE_DIR": str(folder / "triton"),
        }
    if framework == "tensorflow":
        return {"TF_XLA_FLAGS": f"--tf_xla_persistent_cache_directory={folder / 'xla'}"}
    return {}


class CompileCaches:
    """A run's caches, one folder per cell, under a temporary folder removed by `close` (or at exit)."""

    def __init__(self) -> None:
        self._root: Path | None = None
        self.shared = Path(os.environ[SHARED_VARIABLE]) if os.environ.get(SHARED_VARIABLE) else None

    def folder(self, cell_key: str) -> Path:
        if self.shared is not None:
            return self.shared
        if self._root is None:
            remove_orphans()
            self._root = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
        return self._root / cell_key

    def environment(self, cell) -> dict[str, str]:
        folder = self.folder(cell.key)
        removable = {} if self.shared is not None else {ROOT_VARIABLE: str(self._root)}
        return {**cache_environment(get_backend(cell.backend).framework, folder), **removable}

    def state(self, cell) -> str:
        """How warm the cell's cache is before a process starts: cold, or the files earlier processes left (those
        of any cell and run, where the cache is shared)."""
        folder = self.folder(cell.key)
        files = sum(1 for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0
        if self.shared is not None:
            return f"shared across runs ({folder}): {files} files" if files else f"shared across runs ({folder}): cold"
        return f"warm: {files} files from the cell's earlier processes" if files else "cold"

    def close(self) -> None:
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None


def remove_orphans() -> None:
    """The caches of runs whose orchestrator is gone (killed between its cells, when no cell was left to remove
    them)."""
    for folder in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        found = re.match(rf"{PREFIX}(\d+)-", folder.name)
        if found and not alive(int(found.group(1))):
            shutil.rmtree(folder, ignore_errors=True)


def remove_root(root: str | None) -> None:
    """A cell whose orchestrator died removes the run's caches (bench/measure/env_process.py die_with_parent): only a
    folder this module made."""
    if root and Path(root).name.startswith(PREFIX):
        shutil.rmtree(root, ignore_errors=True)
