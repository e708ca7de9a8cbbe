"""The facts `scripts/envs.py info` reports, gathered inside an env. Run there by info.py as

    python -c "from bench.envs.probe import main; main()" WHAT

(WHAT: base, or a framework: tensorflow, jax, torch, keras), with PYTHONPATH naming the checkout that runs
info (bench is importable through the env's .pth too: base tells whether).
Prints one line, MARK + JSON. The framework facts are bench.measure.frameworks.framework_info's, the ones a run records;
only what a run does not record is added here: where tf.keras resolves (keras2 needs tf_keras) and Keras's
version and backend (and TensorFlow's is_cuda_build, jax's default backend).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

MARK = "BENCH_PROBE "

# The distributions the fingerprint lists (those installed).
KEY_PACKAGES = [
    "tensorflow", "tensorflow-cpu", "tf-keras", "keras", "keras-hub", "keras-cv", "keras-nlp",
    "tensorflow-text", "jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt", "torch", "torchvision",
    "transformers", "diffusers", "peft", "accelerate", "segment-anything", "open-clip-torch", "numpy",
    "nvidia-cudnn-cu12", "nvidia-cuda-runtime-cu12", "pytest", "matplotlib",
]


def base() -> dict[str, Any]:
    import importlib.metadata as md
    import platform

    packages = {}
    for name in KEY_PACKAGES:
        try:
            packages[name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    return {"python": platform.python_version(), "executable": sys.executable, "packages": packages,
            "bench_importable": bench_importable()}


def bench_importable() -> bool:
    """Whether the env itself finds a bench package (through the .pth its build wrote into site-packages), not
    through the PYTHONPATH that info sets to run this probe."""
    import site

    for packages in site.getsitepackages():
        for pth in Path(packages).glob("*.pth"):
            for line in pth.read_text().splitlines():
                if (
                    line
                    and not line.startswith(("#", "import"))
                    and (Path(line.strip()) / "bench" / "__init__.py").is_file()
                ):
                    return True
    return False


def tf_keras() -> dict[str, Any]:
    """Where tf.keras resolves: tf_keras (Keras 2) with TF_USE_LEGACY_KERAS=1, else Keras 3."""
    import importlib

    import tensorflow as tf

    try:
        seq = tf.keras.Sequential
        root = seq.__module__.split(".")[0]
        return {
            "module": root,
            "class": f"{seq.__module__}.{seq.__qualname__}",
            "version": getattr(importlib.import_module(root), "__version__", None),
            "TF_USE_LEGACY_KERAS": os.environ.get("TF_USE_LEGACY_KERAS"),
        }
    except Exception as e:  # noqa: BLE001 - reported, not raised: it is what the fingerprint is for
        return {"error": repr(e)}


def framework(name: str) -> dict[str, Any]:
    if name == "keras":
        import keras

        return {"version": keras.__version__, "backend": keras.backend.backend()}
    from bench.measure.frameworks import framework_info

    out = framework_info(name)
    if name == "tensorflow":
        import tensorflow as tf

        out["is_cuda_build"] = tf.sysconfig.get_build_info().get("is_cuda_build")
        out["tf_keras"] = tf_keras()
    elif name == "jax":
        import jax

        out["default_backend"] = jax.default_backend()
    return out


def main(argv: list[str] | None = None) -> None:
    what = (sys.argv[1:] if argv is None else argv)[0]
    print(MARK + json.dumps(base() if what == "base" else framework(what)), flush=True)
