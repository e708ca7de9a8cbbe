"""Per-framework devices (sync, barrier, compile counter: bench.base.timing.Device) and build/precision facts.

Each imports its framework lazily."""
from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from typing import Any


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
    """PyTorch runs CPU work synchronously and CUDA work on streams that synchronize() drains. Its compile count
    adds inductor's CUDA-graph recordings to dynamo's graphs: under mode="reduce-overhead" a graph recorded (or
    re-recorded) inside a window is as much a compile as a retrace, and steadiness counts it as one."""

    _recordings = 0
    _listening = False

    def __init__(self) -> None:
        import torch

        self._torch = torch
        self._cuda = torch.cuda.is_available()
        if not TorchDevice._listening:  # one process-wide listener: inductor announces each CUDA-graph recording
            callback = _torch_callback_module()
            if callback is not None:

                def count(args: Any) -> None:
                    if args.callback_trigger == callback.CallbackTrigger.CUDAGRAPH_RECORDING:
                        TorchDevice._recordings += 1

                callback.on_compile_end(count)
            TorchDevice._listening = True

    def sync(self, result: Any) -> None:
        self.barrier()

    def barrier(self) -> None:
        if self._cuda:
            self._torch.cuda.synchronize()

    def compile_count(self) -> int:
        from torch._dynamo.utils import counters

        return int(counters["stats"].get("unique_graphs", 0)) + TorchDevice._recordings


def _torch_callback_module():
    """torch._dynamo.callback where it announces CUDA-graph recordings (torch >= 2.6); None in older torch."""
    try:
        from torch._dynamo import callback
    except ImportError:
        return None
    return callback if hasattr(getattr(callback, "CallbackTrigger", None), "CUDAGRAPH_RECORDING") else None


def inductor_cudagraphs() -> dict[str, Any]:
    """What inductor did with CUDA graphs in this process (mode="reduce-overhead"): recordings (the callback above;
    None where this torch does not announce them), skips (inductor's own counter: a graph it ran without CUDA
    graphs) and the skip reasons dynamo's compilation metrics kept."""
    from torch._dynamo import utils

    get_metrics = getattr(utils, "get_compilation_metrics", None)
    reasons = sorted(
        {
            m.cudagraph_skip_reason
            for m in (get_metrics() if get_metrics else [])
            if getattr(m, "cudagraph_skip_reason", None)
        }
    )
    return {
        "recordings": TorchDevice._recordings if _torch_callback_module() is not None else None,
        "skips": int(utils.counters["inductor"].get("cudagraph_skips", 0)),
        "skip_reasons": reasons,
    }


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


class GpuNotVisible(RuntimeError):
    """The machine has a GPU the cell should use, and the framework under test sees none."""


def gpu_devices(framework: str) -> tuple[list[str], str]:
    """(the GPUs the framework sees, every device it sees) as one line each; an exception while asking counts
    as no GPU, its first line named."""
    try:
        if framework == "torch":
            import torch

            count = torch.cuda.device_count() if torch.cuda.is_available() else 0
            return [
                f"cuda:{i}" for i in range(count)
            ], f"torch {torch.__version__} (CUDA build {torch.version.cuda}): {count} CUDA device(s)"
        if framework == "jax":
            import jax

            devices = jax.devices()
            return [
                str(d) for d in devices if d.platform == "gpu"
            ], f"jax {jax.__version__}: {', '.join(str(d) for d in devices)}"
        import tensorflow as tf

        found = tf.config.list_physical_devices()
        return [d.name for d in found if d.device_type == "GPU"], (
            f"tensorflow {tf.__version__} (built with CUDA: "
            f"{tf.test.is_built_with_cuda()}): {', '.join(d.name for d in found)}"
        )
    except Exception as e:  # e.g. JAX_PLATFORMS=cuda with no usable CUDA plugin: "Unable to initialize backend 'cuda'"
        return (
            [],
            f"{framework} failed to list its devices: {str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__}",
        )


LIKELY_CAUSE = {
    "torch": "a CPU-only torch wheel (CUDA build None), a driver older than the wheel's CUDA, or CUDA_VISIBLE_DEVICES",
    "jax": "no jax CUDA plugin ({plugin}), a driver older than its CUDA, or CUDA_VISIBLE_DEVICES",
    "tensorflow": "a CPU-only TensorFlow (tensorflow-cpu), GPU libraries that failed to load (TF_CPP_MIN_LOG_LEVEL=0 "
    "shows 'Cannot dlopen some GPU libraries'), or CUDA_VISIBLE_DEVICES",
}


def jax_cuda_plugin(machine_gpus: list[dict]) -> str:
    """The JAX CUDA plugin that matches the driver's CUDA (nvidia-smi's "CUDA Version"): jax-cuda13-plugin for a
    CUDA 13 driver; jax-cuda12-plugin where the driver's CUDA is 12 or unknown. A CUDA 13 machine has no use for
    the CUDA 12 plugin's name."""
    cuda = next((g.get("driver_cuda") for g in machine_gpus if g.get("driver_cuda")), None)
    major = int(cuda.split(".")[0]) if cuda and cuda.split(".")[0].isdigit() else 12
    plugin = f"jax-cuda{max(major, 12)}-plugin"
    return f"{plugin} for this driver's CUDA {cuda}, pip's jax[cuda{max(major, 12)}]" if cuda else plugin


def likely_cause(framework: str, machine_gpus: list[dict]) -> str:
    if framework == "jax":
        return LIKELY_CAUSE["jax"].format(plugin=jax_cuda_plugin(machine_gpus))
    return LIKELY_CAUSE[framework]


def require_gpu(framework: str, machine_gpus: list[dict]) -> None:
    """Refuse to measure the CPU under a GPU's label: raise GpuNotVisible, in one line naming the framework, what
    it sees and the likely cause, when the machine lists GPUs for this process and the framework sees none."""
    seen, what = gpu_devices(framework)
    if machine_gpus and not seen:
        names = ", ".join(g.get("name", "GPU") for g in machine_gpus)
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        raise GpuNotVisible(
            f"{framework} sees no GPU ({what}) while nvidia-smi lists {names} for this cell "
            f"(CUDA_VISIBLE_DEVICES={visible if visible is not None else 'unset'}); likely cause: {likely_cause(framework, machine_gpus)}"
        )


def device_memory(framework: str) -> dict[str, Any] | None:
    """The framework's own peak device memory on its first GPU, in GiB; None when it used no GPU."""
    gib = lambda n: None if n is None else round(n / 2**30, 3)
    if framework == "torch":
        import torch

        if not torch.cuda.is_available() or not torch.cuda.is_initialized():
            return None
        return {
            "framework": "torch",
            "device": "cuda:0",
            "peak_allocated_gib": gib(torch.cuda.max_memory_allocated(0)),
            "peak_reserved_gib": gib(torch.cuda.max_memory_reserved(0)),
            "source": "torch.cuda.max_memory_allocated / max_memory_reserved",
        }
    if framework == "jax":
        import jax

        gpus = [d for d in jax.devices() if d.platform == "gpu"]
        stats = gpus[0].memory_stats() if gpus else None
        if not stats:
            return None
        return {
            "framework": "jax",
            "device": str(gpus[0]),
            "peak_allocated_gib": gib(stats.get("peak_bytes_in_use")),
            "peak_reserved_gib": gib(stats.get("peak_pool_bytes", stats.get("pool_bytes"))),
            "limit_gib": gib(stats.get("bytes_limit")),
            "source": "jax Device.memory_stats(): peak_bytes_in_use, bytes_limit",
        }
    import tensorflow as tf

    if not tf.config.list_logical_devices("GPU"):
        return None
    info = tf.config.experimental.get_memory_info("GPU:0")
    return {
        "framework": "tensorflow",
        "device": "GPU:0",
        "peak_allocated_gib": gib(info.get("peak")),
        "peak_reserved_gib": None,
        "source": "tf.config.experimental.get_memory_info('GPU:0')['peak']",
    }


DEVICE_REFERENCE_SIZE = 4096  # a bfloat16 4096x4096 matmul: 137 GFLOP, a fraction of a ms on an H100, about 1 ms on an A100
DEVICE_REFERENCE_MATMULS = 8  # per timed block's sample: a few so that one sample is well above the launch overhead
DEVICE_REFERENCE_BLOCK_S = 0.02


def device_reference(framework: str, allow_cpu: bool = False) -> dict[str, Any] | None:
    """A fixed matmul on the framework's GPU, the device's own drift reference, taken inside the cell process before
    the model is built and after its timed steps: a bfloat16 DEVICE_REFERENCE_SIZE-square product, warmed until
    settled (bench/measure/drift.py settle), in ms per product, timed by the device's own clock where the framework has one
    (torch: CUDA events) and else by the wall clock around a blocking call (JAX, TensorFlow). Its buffers are freed
    after. None without a GPU (allow_cpu: the same code on the CPU, smaller, as the tests run it); {"error": why}
    where it fails (an out-of-memory after a large cell): the cell's figures stand either way."""
    from bench.measure.drift import settle

    n, held = DEVICE_REFERENCE_SIZE, {}  # the buffer, dropped before the cache is released
    try:
        if framework == "torch":
            import torch

            cuda = torch.cuda.is_available()
            if not cuda and not allow_cpu:
                return None
            n = n if cuda else 256
            held["a"] = torch.randn(n, n, device="cuda" if cuda else "cpu", dtype=torch.bfloat16)

            def sample() -> float:
                if not cuda:
                    started = time.perf_counter()
                    for _ in range(DEVICE_REFERENCE_MATMULS):
                        held["a"] @ held["a"]
                    return (time.perf_counter() - started) * 1e3 / DEVICE_REFERENCE_MATMULS
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(DEVICE_REFERENCE_MATMULS):
                    held["a"] @ held["a"]
                end.record()
                end.synchronize()
                return start.elapsed_time(end) / DEVICE_REFERENCE_MATMULS

            clock, release = ("CUDA events" if cuda else "wall clock"), (torch.cuda.empty_cache if cuda else None)
            device = torch.cuda.get_device_name(0) if cuda else "cpu"
        elif framework == "jax":
            import jax
            import jax.numpy as jnp

            gpu = next((d for d in jax.devices() if d.platform == "gpu"), None)
            if gpu is None and not allow_cpu:
                return None
            n = n if gpu is not None else 256
            target = gpu or jax.devices()[0]
            held["a"] = jax.device_put(jax.random.normal(jax.random.PRNGKey(0), (n, n), dtype=jnp.bfloat16), target)
            scale = 1 / n**0.5

            @jax.jit
            def chain(x):  # each product uses the last (XLA would fold repeats of one product into one), kept in range
                y = x
                for _ in range(DEVICE_REFERENCE_MATMULS):
                    y = (y @ x) * scale
                return y

            jax.block_until_ready(chain(held["a"]))  # compiled outside the blocks

            def sample() -> float:
                started = time.perf_counter()
                jax.block_until_ready(chain(held["a"]))
                return (time.perf_counter() - started) * 1e3 / DEVICE_REFERENCE_MATMULS

            clock, release, device = "wall clock around a blocking call", None, target.device_kind
        else:
            import tensorflow as tf

            gpu = bool(tf.config.list_logical_devices("GPU"))
            if not gpu and not allow_cpu:
                return None
            n = n if gpu else 256
            with tf.device("/GPU:0" if gpu else "/CPU:0"):
                held["a"] = tf.random.normal((n, n), dtype=tf.bfloat16)

            def sample() -> float:
                started = time.perf_counter()
                for _ in range(DEVICE_REFERENCE_MATMULS):
                    out = tf.linalg.matmul(held["a"], held["a"])
                out.numpy()
                return (time.perf_counter() - started) * 1e3 / DEVICE_REFERENCE_MATMULS

            clock, release, device = "wall clock around a blocking call", None, "GPU:0" if gpu else "cpu"

        def block() -> float:
            samples, deadline = [], time.perf_counter() + DEVICE_REFERENCE_BLOCK_S
            while len(samples) < 3 or time.perf_counter() < deadline:
                samples.append(sample())
            return round(statistics.median(samples), 5)

        sample()  # first touch: the kernels' own set-up
        found = settle(block)
        held.clear()
        if release is not None:
            release()
        return {**found.to_dict(), "size": n, "dtype": "bfloat16", "clock": clock, "device": device}
    except Exception as e:  # the reference must never cost the cell its figures
        return {"error": f"{type(e).__name__}: {e}"[:300]}


def device_for(framework: str):
    """The Device (bench.base.timing) of a framework, built lazily: only the env under test has its framework."""
    return DEVICES[framework]()


def framework_info(framework: str) -> dict[str, Any]:
    """Versions, CUDA/cuDNN builds, visible devices and precision flags of the framework under test."""
    return {"tensorflow": _tensorflow_info, "jax": _jax_info, "torch": _torch_info}[framework]()


def _tensorflow_info() -> dict[str, Any]:
    import tensorflow as tf

    build = tf.sysconfig.get_build_info()
    tf32 = tf.config.experimental.tensor_float_32_execution_enabled()
    gpus = tf.config.list_physical_devices("GPU")
    details = tf.config.experimental.get_device_details(gpus[0]) if gpus else {}
    capability = ".".join(map(str, details["compute_capability"])) if details.get("compute_capability") else None
    return {
        "framework": "tensorflow",
        "version": tf.__version__,
        "cuda_build": build.get("cuda_version"),
        "cudnn_build": build.get("cudnn_version"),
        "devices": [d.name for d in tf.config.list_logical_devices()],
        "gpus": [d.name for d in tf.config.list_physical_devices("GPU")],
        "precision": precision_record(
            f"tensor-float-32 {'on' if tf32 else 'off'} (tf.config.experimental.enable_tensor_float_32_execution)",
            resolved_float32_matmul(capability, tf32),
            resolved_float32_matmul(capability, tf32),
            tf32_execution=tf32,
        ),
        "compute_capability": capability,
    }


def _jax_info() -> dict[str, Any]:
    import jax

    devices = jax.devices()
    gpu = next((d for d in devices if d.platform == "gpu"), None)
    capability = getattr(gpu, "compute_capability", None) if gpu else None
    setting = jax.config.jax_default_matmul_precision
    return {
        "framework": "jax",
        "version": jax.__version__,
        "jaxlib": getattr(jax.lib, "__version__", None) or _dist_version("jaxlib"),
        "cuda_plugin": _dist_version("jax-cuda13-plugin") or _dist_version("jax-cuda12-plugin"),
        "devices": [str(d) for d in devices],
        "gpus": [d.device_kind for d in devices if d.platform == "gpu"],
        "precision": precision_record(
            f"jax_default_matmul_precision {jax_precision_name(setting)}",
            resolved_float32_matmul(capability, jax_precision_name(setting) != "highest"),
            resolved_float32_matmul(capability, jax_precision_name(setting) != "highest"),
            default_matmul_precision=str(setting),
        ),
        "compute_capability": capability,
    }


def _torch_info() -> dict[str, Any]:
    import torch

    cuda = torch.cuda.is_available()
    capability = ".".join(map(str, torch.cuda.get_device_capability(0))) if cuda and torch.cuda.device_count() else None
    return {
        "framework": "torch",
        "version": torch.__version__,
        "cuda_build": torch.version.cuda,
        "cudnn_build": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "devices": ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())] if cuda else ["cpu"],
        "gpus": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if cuda else [],
        "num_threads": torch.get_num_threads(),
        "precision": precision_record(
            f"float32_matmul_precision {torch.get_float32_matmul_precision()}, "
            f"cuda.matmul.allow_tf32 {torch.backends.cuda.matmul.allow_tf32}, "
            f"cudnn.allow_tf32 {torch.backends.cudnn.allow_tf32}",
            resolved_float32_matmul(
                capability, torch.get_float32_matmul_precision() != "highest" and torch.backends.cuda.matmul.allow_tf32
            ),
            resolved_float32_matmul(capability, torch.backends.cudnn.allow_tf32),
            float32_matmul_precision=torch.get_float32_matmul_precision(),
            cuda_matmul_allow_tf32=torch.backends.cuda.matmul.allow_tf32,
            cudnn_allow_tf32=torch.backends.cudnn.allow_tf32,
        ),
        "compute_capability": capability,
        "inductor_cudagraphs": inductor_cudagraphs(),
    }


def precision_record(setting: str, matmul: str, convolution: str, **flags: Any) -> dict[str, Any]:
    """One framework's float32 precision, recorded alike by every framework: its setting in its own words, what its
    float32 matrix products and convolutions compute in on this device (TF32 or full float32; on a CPU always
    float32, where the setting changes nothing) and the framework's own flags as it reports them."""
    return {"setting": setting, "float32_matmul": matmul, "float32_convolution": convolution, **flags}


def jax_precision_name(setting: Any) -> str:
    """JAX's default matmul precision as its config names it: default (None), high or highest (the aliases
    float32 / tensorfloat32 / bfloat16_3x / bfloat16 as the level they stand for)."""
    text = str(setting).lower() if setting is not None else "default"
    return {"none": "default", "fastest": "default", "bfloat16": "default", "tensorfloat32": "high",
            "bfloat16_3x": "high", "float32": "highest", "bfloat16_6x": "highest",
            "tensorfloat32_3x": "highest"}.get(text, text)  # fmt: skip


def apply_precision_variant(framework: str, variant: str) -> dict[str, Any]:
    """Set the framework's float32 matmul precision as a precision variant asks (matmul-high: torch's 'high', TF32
    on a GPU; matmul-highest: full float32, JAX's 'highest', TensorFlow's tensor-float-32 off); {} for any other
    variant. Returns what was set, for the run's settings."""
    from bench.catalogue.variants import PRECISION_VARIANTS

    level = PRECISION_VARIANTS.get(variant)
    if level is None:
        return {}
    if framework == "torch":
        import torch

        torch.set_float32_matmul_precision(level)
        return {"float32_matmul_precision": torch.get_float32_matmul_precision()}
    if framework == "jax":
        import jax

        jax.config.update("jax_default_matmul_precision", level)
        return {"jax_default_matmul_precision": level}
    import tensorflow as tf

    tf.config.experimental.enable_tensor_float_32_execution(level != "highest")
    return {"tensor_float_32_execution": tf.config.experimental.tensor_float_32_execution_enabled()}


def resolved_float32_matmul(compute_capability: str | None, tf32_allowed: bool) -> str:
    """What a float32 matmul computes in, given the GPU and the framework's setting: TF32 (10-bit mantissa inputs)
    where the framework allows it on a GPU of compute capability 8.0 (Ampere) or later, else full float32 (a CPU,
    an older GPU, or TF32 turned off: torch's "highest", JAX's "highest"/"float32")."""
    if compute_capability and tf32_allowed and float(compute_capability.split(".")[0]) >= 8:
        return "tf32"
    return "float32"


def _dist_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None
