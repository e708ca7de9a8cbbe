"""How fast the history index is at scale (docs/HISTORY.md): a synthetic results folder of N result files (default
100,000: 500 cells on 2 machines, each measured 100 times, all but the newest in history/) indexed from nothing, then
refreshed with nothing changed, then one cell's series read. Prints the seconds of each; a benchmark, not a test.

    .venvs/tools/bin/python scripts/history_benchmark.py [--results N] [--folder DIR]
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.base.atomic import write_bytes_atomic  # noqa: E402
from bench.studies.history import index  # noqa: E402
from bench.studies.history.series import series_of  # noqa: E402

MACHINES = ({"cpu": "Synthetic CPU A", "logical_cpus": 8, "gpus": []},
            {"cpu": "Synthetic CPU B", "logical_cpus": 16, "gpus": []})


def result_json(cell_number: int, machine: dict, n: int, rng: random.Random) -> dict:
    """One result file's fields as the suite writes them (those the index reads, with plausible values)."""
    figure = 10.0 + cell_number % 50
    medians = [figure * rng.lognormvariate(0, 0.02) for _ in range(3)]
    day, second = divmod(n, 86400 // 100)
    return {
        "schema_version": 2,
        "cell": {"backend": "jax", "model": f"model{cell_number // 5}", "task": "fit", "batch_size": 2,
                 "profile": "smoke", "variant": f"v{cell_number % 5}", "stack": "today"},
        "status": "ok", "unit": "ms/step",
        "interval": {"center": sum(medians) / 3, "low": min(medians), "high": max(medians), "processes": 3,
                     "basis": "processes"},
        "runs": [{"status": "ok", "stats": {"median": m}, "framework": {"framework": "jax", "version": "0.10.2"}}
                 for m in medians],
        "provenance": {"git": {"commit": f"{n:040x}"}, "machine": machine, "run_id": f"run{n}"},
        "created_at": f"2026-{1 + day // 28:02d}-{1 + day % 28:02d}T{second // 3600 % 24:02d}:"
                      f"{second // 60 % 60:02d}:{second % 60:02d}+00:00",
    }  # fmt: skip


def make_folder(root: Path, count: int) -> str:
    """count result files: cells x machines x repeats; returns one cell's key."""
    rng = random.Random(0)
    cells, repeats = 500, max(1, count // (500 * len(MACHINES)))
    for cell in range(cells):
        for m, machine in enumerate(MACHINES):
            folder = root / "smoke" / f"machine-{m}"
            for n in range(repeats):
                data = result_json(cell, machine, n, rng)
                c = data["cell"]
                name = f"jax__{c['model']}__fit__bs2__{c['variant']}"
                path = folder / f"{name}.json" if n == repeats - 1 else folder / "history" / f"{name}.{n}.json"
                path.parent.mkdir(parents=True, exist_ok=True)
                write_bytes_atomic(path, json.dumps(data).encode())
    return "jax__model0__fit__bs2__v0"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=int, default=100_000)
    parser.add_argument("--folder", type=Path, help="keep the synthetic folder here (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        root = args.folder or Path(temporary)
        t0 = time.perf_counter()
        key = make_folder(root, args.results)
        made = time.perf_counter() - t0
        t0 = time.perf_counter()
        first = index.refresh(root)
        built = time.perf_counter() - t0
        t0 = time.perf_counter()
        again = index.refresh(root)
        refreshed = time.perf_counter() - t0
        t0 = time.perf_counter()
        series = series_of(root, key)
        read = time.perf_counter() - t0
        size = index.index_path(root).stat().st_size
        print(f"{first.read} result files written in {made:.1f} s; indexed from nothing in {built:.1f} s "
              f"({size / 2**20:.0f} MiB); refreshed unchanged in {refreshed:.2f} s ({again.kept} files stat'ed); "
              f"one cell's series ({sum(len(s.points) for s in series)} points, {len(series)} series) read in "
              f"{read:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
