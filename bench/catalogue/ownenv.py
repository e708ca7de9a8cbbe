"""The unlocked route (`--env current`, docs/OWN_ENVIRONMENT.md): cells run in the interpreter that runs the
command, with whatever it has installed. Stdlib only: the orchestrator asks this before any framework is imported.

What a cell needs installed: its backend's framework (and Keras), said here once, and its model's libraries, said in
the model's folder (workload.toml's [needs]). A cell whose needs are missing is NA (status unsupported) naming the
missing distribution, never an error of the whole run.
"""
from __future__ import annotations

import hashlib
import json
import re
import sys
from importlib import metadata
from pathlib import Path

from bench.catalogue.backends import UNLOCKED_STACK, get_backend
from bench.catalogue.registry import get_model

# Each need is a tuple of alternatives: any one installed distribution satisfies it.
TENSORFLOW = ("tensorflow", "tensorflow-cpu")
FRAMEWORK_NEEDS: dict[str, tuple[tuple[str, ...], ...]] = {
    "keras2": (TENSORFLOW, ("tf-keras",)),  # its model libraries: keras-nlp (BERT, LLMs), keras-cv (SAM, SD): each model's [needs]
    "tensorflow": (TENSORFLOW, ("keras",)),
    "jax": (("jax",), ("jaxlib",), ("keras",)),
    "torch": (("torch",), ("keras",)),
    "native-torch": (("torch",),),
}


def installed(name: str) -> str | None:
    """The installed version of a distribution in this interpreter, or None."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def model_needs(family: str, model: str) -> tuple[tuple[str, ...], ...]:
    """What the model's implementation for this family needs installed beyond its framework, each need a tuple of
    alternatives (bench/models/<model>/workload.toml [needs]); () where the folder has no such implementation."""
    return get_model(model).needs.get(family, ())


def missing_distributions(backend: str, model: str) -> list[str]:
    """What a cell of this backend and model needs and this interpreter lacks, one entry per need
    ("tensorflow or tensorflow-cpu" where either would do)."""
    needs = (*FRAMEWORK_NEEDS[backend], *model_needs(get_backend(backend).family, model))
    return [" or ".join(need) for need in needs if not any(installed(name) for name in need)]


def why_not_here(cell) -> str | None:
    """For an unlocked cell: why this interpreter cannot run it (an NA's message), or None."""
    if cell.stack != UNLOCKED_STACK.name:
        return None
    missing = missing_distributions(cell.backend, cell.model)
    if not missing:
        return None
    return f"not installed in this environment ({sys.executable}): {', '.join(missing)}"


# Beyond the frameworks and the models' libraries, what their speed rests on: the JAX CUDA plugins and the CUDA
# libraries (nvidia-* wheels) the frameworks load. Everything else in an environment (zipp, importlib-metadata) is
# incidental: it changes no step, and must not make a resumed session measure everything again.
BUILD_DISTRIBUTIONS = re.compile(r"^(jax-cuda\d+-(plugin|pjrt)|nvidia-(?!ml-py$).*)$")  # not NVML's Python binding


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def key_distributions() -> set[str]:
    """What an unlocked environment's key is over: every distribution a cell needs (its framework's and its model's,
    bench/catalogue/ownenv.py FRAMEWORK_NEEDS and each model's [needs]), canonically named."""
    import tomllib

    from bench.catalogue.spec import MODELS_DIR, NEEDS_TABLE, WORKLOAD_FILE

    names = {n for needs in FRAMEWORK_NEEDS.values() for need in needs for n in need}
    for path in sorted(MODELS_DIR.glob(f"*/{WORKLOAD_FILE}")):  # read, not imported: a model may import NumPy
        with path.open("rb") as f:
            table = tomllib.load(f).get(NEEDS_TABLE, {})
        names |= {n for needs in table.values() for need in needs for n in need}
    return {canonical(n) for n in names}


def environment_key(record: dict) -> dict:
    """What a cell's figures rest on in an unlocked environment (provenance.environment, bench/base/provenance.py
    unlocked_environment): its Python (major.minor.micro), and the versions of the frameworks, the models' libraries
    and the frameworks' CUDA builds it has; with its sha256. Two environments of one key ran the same code: a session
    resumes into the results of the other (an incidental package, such as the zipp an offline bundle replaces, does
    not change it). The GPU is not in it: each result's path names its machine."""
    wanted = key_distributions()
    distributions = {canonical(name): version for name, version in (record.get("distributions") or {}).items()}
    what = {"python": str(record.get("python")),
            "distributions": {n: v for n, v in sorted(distributions.items())
                              if n in wanted or BUILD_DISTRIBUTIONS.match(n)}}  # fmt: skip
    return {**what, "sha256": hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()}


def same_environment(a: dict, b: dict) -> bool:
    """Whether two environment records are of one key (environment_key): the same Python, frameworks, models'
    libraries and CUDA builds."""
    return environment_key(a)["sha256"] == environment_key(b)["sha256"]


def environment_folder(root: Path, record: dict) -> Path:
    """Where an unlocked environment's results go under <root>/env-current/: the folder whose results were measured in
    an environment of the same key (environment_key), so that a session resumes there; else a new folder named by
    environment_slug."""
    key = environment_key(record)["sha256"]
    base = Path(root) / "env-current"
    for folder in sorted(base.iterdir()) if base.is_dir() else []:
        found = folder_environment(folder)
        if found is not None and environment_key(found)["sha256"] == key:
            return folder
    return base / environment_slug(record)


def folder_environment(folder: Path) -> dict | None:
    """The environment record (provenance.environment) of a result file in an env-current folder, or None."""
    for path in sorted(folder.rglob("*.json")):
        if "history" in path.parts or "logs" in path.parts:
            continue
        try:
            found = json.loads(path.read_text()).get("provenance", {}).get("environment")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(found, dict) and found.get("distributions"):
            return found
    return None


def describe_environment(record: dict) -> str:
    """The environment in a few words, for a table's title: Python, its frameworks, its fingerprint."""
    frameworks = ", ".join(f"{name} {version}" for name, version in (record.get("frameworks") or {}).items())
    return (
        f"unlocked environment {record.get('interpreter')} (Python {record.get('python')}"
        + (f"; {frameworks}" if frameworks else "")
        + f"; frameworks and workload libraries sha256 {environment_key(record)['sha256'][:12]})"
    )


def environment_slug(record: dict) -> str:
    """A folder name for a new unlocked environment's results: Python, frameworks, the key's fingerprint
    (py3.12-torch2.9.1-jax0.9.2-1a2b3c4d; environment_key): two environments of different keys never share one. A
    folder named before the key (by the sha256 of every distribution) is found by its results' key
    (environment_folder)."""
    frameworks = "-".join(
        f"{name}{version}" for name, version in (record.get("frameworks") or {}).items() if name != "keras"
    )
    slug = f"py{'.'.join(str(record.get('python')).split('.')[:2])}-{frameworks}-{environment_key(record)['sha256'][:8]}"
    return re.sub(r"[^A-Za-z0-9.+-]+", "-", slug.replace("--", "-"))
