"""Per-framework devices (sync, barrier, compile counter: bench.timing.Device) and build/precision facts.

Each imports its framework lazily."""
from __future__ import annotations

from typing import Any, Callable


class JaxDevice:
    """JAX dispatches asynchronously, and waiting for one result says nothing about other work in flight (unlike a
    CUDA stream, there is no single queue to drain): the barrier waits for every live array and every effect."""

    _compiles = 0
    _listening = False

    def __init__(self) -> None:
        import jax

        self._jax = jax
        if not JaxDevice._listening:  # one process-wide listener: JAX reports each backend compile as an event
            from jax._src import dispatch, monitoring

            def count(event: str, *_: Any, **__: Any) -> None:
                if event == dispatch.BACKEND_COMPILE_EVENT:
                    JaxDevice._compiles += 1

            monitoring.register_event_duration_secs_listener(count)
            JaxDevice._listening = True

    def sync(self, result: Any) -> None:
        # tree_util, not jax.tree (0.4.25+): the 2024 stack has jax 0.4.20
        arrays = [leaf for leaf in self._jax.tree_util.tree_leaves(result) if isinstance(leaf, self._jax.Array)]
        if arrays:
            self._jax.block_until_ready(arrays)
        elif result is None:
            self.barrier()  # nothing named: wait for everything
        # else host values: whoever turned them into host values already waited for the work behind them

    def barrier(self) -> None:
        self._jax.block_until_ready(self._jax.live_arrays())
        self._jax.effects_barrier()

    def compile_count(self) -> int:
        return JaxDevice._compiles


class TorchDevice:
    """PyTorch runs CPU work synchronously and CUDA work on streams that synchronize() drains."""

    def __init__(self) -> None:
        import torch

        self._torch = torch
        self._cuda = torch.cuda.is_available()

    def sync(self, result: Any) -> None:
        self.barrier()

    def barrier(self) -> None:
        if self._cuda:
            self._torch.cuda.synchronize()

    def compile_count(self) -> int:
        from torch._dynamo.utils import counters

        return int(counters["stats"].get("unique_graphs", 0))


class TensorflowDevice:
    """TensorFlow's eager CPU ops are synchronous; on a GPU, fetching a tensor waits for the ops behind it and
    sync_devices waits for the rest. Compiles are counted as retraces of the tf.functions a driver watches."""

    def __init__(self) -> None:
        import tensorflow as tf

        self._tf = tf
        self._gpu = bool(tf.config.list_logical_devices("GPU"))
        self._watched: list[Any] = []

    def watch(self, function: Any) -> None:
        if hasattr(function, "experimental_get_tracing_count") and function not in self._watched:
            self._watched.append(function)

    def sync(self, result: Any) -> None:
        for leaf in self._tf.nest.flatten(result):
            if isinstance(leaf, self._tf.Tensor) and hasattr(leaf, "numpy"):
                leaf.numpy()
        if result is None or self._gpu:
            self.barrier()

    def barrier(self) -> None:
        if self._gpu:
            self._tf.test.experimental.sync_devices()

    def compile_count(self) -> int:
        return sum(int(f.experimental_get_tracing_count()) for f in self._watched)


DEVICES: dict[str, Callable[[], Any]] = {"jax": JaxDevice, "torch": TorchDevice, "tensorflow": TensorflowDevice}


def device_for(framework: str):
    """The Device (bench.timing) of a framework, built lazily: only the env under test has its framework."""
    return DEVICES[framework]()


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
