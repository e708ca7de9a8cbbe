"""Per-framework device sync and build/precision facts. Each function imports its framework lazily."""
from __future__ import annotations

from typing import Any, Callable


def sync_jax(value: Any) -> None:
    import jax

    # block_until_ready waits for every array leaf; effects_barrier covers work with no returned array.
    jax.block_until_ready(value)
    jax.effects_barrier()


def sync_torch(value: Any) -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def sync_tensorflow(value: Any) -> None:
    import tensorflow as tf

    # Fetching each tensor result waits for the ops that produce it; sync_devices waits for the rest.
    for leaf in tf.nest.flatten(value):
        if hasattr(leaf, "numpy"):
            leaf.numpy()
    if tf.config.list_logical_devices("GPU"):
        tf.test.experimental.sync_devices()


SYNCS: dict[str, Callable[[Any], None]] = {"jax": sync_jax, "torch": sync_torch, "tensorflow": sync_tensorflow}


def framework_info(framework: str) -> dict[str, Any]:
    """Versions, CUDA/cuDNN builds, visible devices and precision flags of the framework under test."""
    return {"tensorflow": _tensorflow_info, "jax": _jax_info, "torch": _torch_info}[framework]()


def _tensorflow_info() -> dict[str, Any]:
    import tensorflow as tf

    build = tf.sysconfig.get_build_info()
    return {
        "framework": "tensorflow",
        "version": tf.__version__,
        "cuda_build": build.get("cuda_version"),
        "cudnn_build": build.get("cudnn_version"),
        "devices": [d.name for d in tf.config.list_logical_devices()],
        "gpus": [d.name for d in tf.config.list_physical_devices("GPU")],
        "precision": {"tf32_execution": tf.config.experimental.tensor_float_32_execution_enabled()},
    }


def _jax_info() -> dict[str, Any]:
    import jax

    devices = jax.devices()
    return {
        "framework": "jax",
        "version": jax.__version__,
        "jaxlib": getattr(jax.lib, "__version__", None) or _dist_version("jaxlib"),
        "cuda_plugin": _dist_version("jax-cuda12-plugin"),
        "devices": [str(d) for d in devices],
        "gpus": [d.device_kind for d in devices if d.platform == "gpu"],
        "precision": {"default_matmul_precision": str(jax.config.jax_default_matmul_precision)},
    }


def _torch_info() -> dict[str, Any]:
    import torch

    cuda = torch.cuda.is_available()
    return {
        "framework": "torch",
        "version": torch.__version__,
        "cuda_build": torch.version.cuda,
        "cudnn_build": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "devices": ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())] if cuda else ["cpu"],
        "gpus": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if cuda else [],
        "num_threads": torch.get_num_threads(),
        "precision": {
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
            "cuda_matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
        },
    }


def _dist_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None
