"""Parameter counts for the plan, built abstractly inside each family's environment and cached.

`python -m bench.plan.counts <family> <profile> <model>...` runs inside a backend env and prints one line
`COUNTS {...}`: each model module's `parameter_counts(shape)` (torch meta device / Keras 3 StatelessScope: no
weight is allocated), as tests/test_fidelity.py does. The orchestrator side (`counts_for`) runs that once per
family and caches the result per (model, family, profile) in <venvs>/plan-counts.json, keyed by a fingerprint of
the shape, the implementation's source and the env's lock: a second `make plan` starts no subprocess.

Which env counts what: native-torch counts the native models; the Keras 3 figures are counted in the first built
Keras 3 env (jax, then tensorflow, then torch: the architecture is the same on all three). keras2 builds for real
(tf_keras has no abstract scope), so it is never started: its cells reuse the Keras 3 counts of the same model
(keras-nlp 0.12 / keras-cv build the same architectures; tests/test_fidelity.py checks BERT and SAM equal on both).
"""
from __future__ import annotations

import hashlib
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

from bench.base.atomic import update_json_atomic
from bench.base.errors import BenchError
from bench.base.provenance import REPO_ROOT, venvs_dir
from bench.catalogue.backends import cell_environment

FAMILY_ENVS = {"keras": ("jax", "tensorflow", "torch"), "native-torch": ("native-torch",)}
PREFIX = "COUNTS "
TIMEOUT_S = 600


def cache_path() -> Path:
    return venvs_dir() / "plan-counts.json"


def probe(family: str, profile: str, models: list[str]) -> dict[str, dict[str, int]]:
    """Inside the family's env: every model's parameter counts at the profile's shape, nothing allocated."""
    from bench.catalogue.registry import get_model

    out = {}
    for name in models:
        module = importlib.import_module(f"bench.models.{name}.{family.replace('-', '_')}")
        shape = get_model(name).shape(profile)
        out[name] = dict(
            module.parameter_counts(shape) if family == "native-torch" else module.parameter_counts(shape, 3)
        )
    return out


def fingerprint(model: str, family: str, profile: str, lock_sha256: str | None) -> str:
    """What a cached count depends on: the shape, the implementation's and this probe's source, the env's lock."""
    from bench.catalogue.registry import get_model

    spec = get_model(model)
    digest = hashlib.sha256(repr(spec.shape(profile)).encode())
    for path in sorted((REPO_ROOT / "bench" / "models").glob(f"{model}/*.py")) + sorted(
        (REPO_ROOT / "bench" / "models").glob("*.py")
    ):
        digest.update(path.read_bytes())
    digest.update(Path(__file__).read_bytes())  # the probe itself
    digest.update(str(lock_sha256).encode())
    return digest.hexdigest()


def family_env(family: str) -> tuple[str, Path] | None:
    """The first built env that can count this family: (backend, its python)."""
    for backend in FAMILY_ENVS[family]:
        venv = venvs_dir() / backend
        if (venv / "bench-env.json").exists():
            return backend, venv / "bin" / "python"
    return None


def env_lock(backend: str) -> str | None:
    try:
        return json.loads((venvs_dir() / backend / "bench-env.json").read_text()).get("lock_sha256")
    except (OSError, ValueError):
        return None


def run_probe(backend: str, python: Path, family: str, profile: str, models: list[str]) -> dict:
    env = {**os.environ, **cell_environment(backend), "JAX_PLATFORMS": "cpu", "CUDA_VISIBLE_DEVICES": ""}
    cmd = [str(python), "-m", "bench.plan.counts", family, profile, *models]
    out = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    line = next((l for l in out.stdout.splitlines() if l.startswith(PREFIX)), None)
    if out.returncode != 0 or line is None:
        tail = " | ".join(out.stderr.strip().splitlines()[-3:])
        raise RuntimeError(f"counting {family} parameters in the {backend} env failed (exit {out.returncode}): {tail}")
    return json.loads(line[len(PREFIX) :])


def load_cache() -> dict:
    try:
        data = json.loads(cache_path().read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def save_cache(cache: dict) -> None:
    """Merged into the cache as it is on disk now, under its lock: two plans counting at once each keep the
    other's counts."""
    try:
        update_json_atomic(cache_path(), lambda _: {**load_cache(), **cache}, read=lambda _: None)
    except (OSError, BenchError):
        pass  # a cache that cannot be written only costs time next run


def counts_for(pairs: set[tuple[str, str]], profile: str, echo=print) -> dict[tuple[str, str], dict | str]:
    """(model, family) -> its parts' counts, or a string saying why there are none (env not built, probe failed).
    The families' probes run at the same time, one subprocess each; cached counts start none."""
    from concurrent.futures import ThreadPoolExecutor

    cache, found, jobs = load_cache(), {}, {}
    for family in sorted({f for _, f in pairs}):
        models = sorted(m for m, f in pairs if f == family)
        where = family_env(family)
        if where is None:
            found.update(
                {
                    (m, family): f"no {family} env built ({', '.join(FAMILY_ENVS[family])}): run `make envs`"
                    for m in models
                }
            )
            continue
        backend, python = where
        prints = {m: fingerprint(m, family, profile, env_lock(backend)) for m in models}
        todo = [m for m in models if (cache.get(f"{m}/{family}/{profile}") or {}).get("fingerprint") != prints[m]]
        if todo:
            echo(f"counting {family} parameters abstractly in the {backend} env: {', '.join(todo)} ({profile})")
            jobs[family] = (backend, python, todo, prints)
    with ThreadPoolExecutor(max_workers=max(1, len(jobs))) as pool:
        futures = {
            family: pool.submit(run_probe, backend, python, family, profile, todo)
            for family, (backend, python, todo, _) in jobs.items()
        }
        for family, future in futures.items():
            backend, _, todo, prints = jobs[family]
            try:
                got = future.result()
            except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
                found.update({(m, family): str(e) for m in todo})
                continue
            for m, counts in got.items():
                cache[f"{m}/{family}/{profile}"] = {"fingerprint": prints[m], "env": backend, "counts": counts}
    if jobs:
        save_cache(cache)
    for model, family in pairs:
        entry = cache.get(f"{model}/{family}/{profile}")
        if (model, family) not in found and entry:
            found[(model, family)] = dict(entry["counts"], counted_in=entry["env"])
    return found


def main(argv: list[str]) -> int:
    family, profile, models = argv[0], argv[1], argv[2:]
    print(PREFIX + json.dumps(probe(family, profile, models)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
