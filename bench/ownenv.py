"""The unlocked route (`--env current`, docs/OWN_ENVIRONMENT.md): cells run in the interpreter that runs the
command, with whatever it has installed. Stdlib only: the orchestrator asks this before any framework is imported.

What a cell needs installed: its backend's framework (and Keras), said here once, and its model's libraries, said in
the model's folder (workload.toml's [needs]). A cell whose needs are missing is NA (status unsupported) naming the
missing distribution, never an error of the whole run.
"""
from __future__ import annotations

import re
import sys
from importlib import metadata

from bench.backends import UNLOCKED_STACK, get_backend
from bench.registry import get_model

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


def describe_environment(record: dict) -> str:
    """The environment in a few words, for a table's title: Python, its frameworks, its fingerprint."""
    frameworks = ", ".join(f"{name} {version}" for name, version in (record.get("frameworks") or {}).items())
    return (
        f"unlocked environment {record.get('interpreter')} (Python {record.get('python')}"
        + (f"; {frameworks}" if frameworks else "")
        + f"; distributions sha256 {str(record.get('distributions_sha256'))[:12]})"
    )


def environment_slug(record: dict) -> str:
    """A folder name for an unlocked environment's results: Python, frameworks, fingerprint
    (py3.12-torch2.9.1-jax0.9.2-1a2b3c4d): two environments never share one."""
    frameworks = "-".join(
        f"{name}{version}" for name, version in (record.get("frameworks") or {}).items() if name != "keras"
    )
    slug = f"py{'.'.join(str(record.get('python')).split('.')[:2])}-{frameworks}-{str(record.get('distributions_sha256'))[:8]}"
    return re.sub(r"[^A-Za-z0-9.+-]+", "-", slug.replace("--", "-"))
