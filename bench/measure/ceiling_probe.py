"""The machine's ceilings, measured: dense matrix-multiply FLOP/s per dtype and a STREAM-style triad's bytes/s.

`python -m bench.measure.ceiling_probe <framework>` runs inside an env and prints one line `CEILINGS {...}`: through the
framework's own kernels (torch, jax, tensorflow) or NumPy's (numpy: framework-free, what the orchestrator measures
in its own process beside the drift probe). Each figure is the median of repeated timings, with p10/p90 and the
count, taken within a time budget (about a second in all on a CPU): short enough to run once per run.

- matmul: C = A B, square, n^3 multiply-adds = 2 n^3 FLOPs, per dtype (float32; bfloat16 where the framework has
  it: NumPy has none), each with the mode it ran in (float32's: TF32 where the framework's default allows it on a
  GPU); on a GPU the float32 matmul again at each mode (`matmul_modes`: full FP32 and TF32), so that a cell is set
  against its own framework at the mode it computed in. n is 1024 on a CPU and 8192 on a GPU (large enough to reach
  the tensor cores' rate).
- triad: a = b + s c over float32 arrays much larger than any cache (64 MiB each on a CPU, 1 GiB on a GPU): three
  arrays moved (two read, one written), as STREAM counts it.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

PREFIX = "CEILINGS "
# per figure (the probe is a few of these); BENCH_PROBE_BUDGET_S stretches it (make ceilings: a loaded machine's
# median needs more repeats)
BUDGET_S = 0.25
MIN_REPEATS = 3
CPU_MATMUL, GPU_MATMUL = 1024, 8192
CPU_TRIAD, GPU_TRIAD = 2**24, 2**28  # float32 elements per array
TRIAD_SCALAR = 3.0


def timed(run: Callable[[], Any], sync: Callable[[Any], None], work: float, budget_s: float | None = None) -> dict:
    """Work per second of `run` (synchronised by `sync`): median, p10, p90 and the count of timed repeats, after one
    untimed call (compilation, first-touch page faults)."""
    sync(run())
    rates: list[float] = []
    budget_s = float(os.environ.get("BENCH_PROBE_BUDGET_S") or BUDGET_S) if budget_s is None else budget_s
    deadline = time.perf_counter() + budget_s
    while len(rates) < MIN_REPEATS or time.perf_counter() < deadline:
        started = time.perf_counter()
        sync(run())
        rates.append(work / (time.perf_counter() - started))
    rates.sort()
    pick = lambda q: rates[min(len(rates) - 1, int(q * len(rates)))]  # noqa: E731
    return {"median": statistics.median(rates), "p10": pick(0.1), "p90": pick(0.9), "n": len(rates)}


def float32_mode(gpu: bool, tf32_allowed: bool) -> str:
    """The mode of a float32 matmul: TF32 where the framework allows it on a GPU (a GPU without TF32 tensor cores
    runs it as float32 whatever the setting: its rate then says so), full float32 otherwise."""
    return "tf32" if gpu and tf32_allowed else "float32"


def matmul_flops(n: int) -> float:
    return 2.0 * n**3


def triad_bytes(n: int) -> float:
    return 3.0 * n * 4


def probe_numpy() -> dict:
    import numpy as np

    rng = np.random.default_rng(0)
    a, b = (
        rng.random((CPU_MATMUL, CPU_MATMUL), dtype=np.float32),
        rng.random((CPU_MATMUL, CPU_MATMUL), dtype=np.float32),
    )
    out = {
        "device": "cpu",
        "matmul": {"float32": {**timed(lambda: a @ b, lambda _: None, matmul_flops(CPU_MATMUL)), "size": CPU_MATMUL,
                               "mode": "float32"}},
    }
    x, y, z = (np.ones(CPU_TRIAD, dtype=np.float32) for _ in range(3))

    def triad():  # in place, no temporary: one pass reading y and z, writing x (the scale then the add, fused by out=)
        np.multiply(z, TRIAD_SCALAR, out=x)
        np.add(x, y, out=x)

    out["triad"] = {
        **timed(triad, lambda _: None, triad_bytes(CPU_TRIAD)),
        "size": CPU_TRIAD,
        "note": "NumPy's triad is two passes (scale into a, then add): it moves 5 arrays and is counted as 3",
    }
    return out


def probe_torch() -> dict:
    import torch

    cuda = torch.cuda.is_available()
    dev = torch.device("cuda" if cuda else "cpu")
    sync = (lambda _: torch.cuda.synchronize()) if cuda else (lambda _: None)
    n = GPU_MATMUL if cuda else CPU_MATMUL
    out: dict[str, Any] = {
        "device": torch.cuda.get_device_name(0) if cuda else "cpu",
        "matmul": {},
        "precision": {"cuda_matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32},
    }
    for dtype in ("float32", "bfloat16"):
        a = torch.randn(n, n, device=dev, dtype=getattr(torch, dtype))
        b = torch.randn(n, n, device=dev, dtype=getattr(torch, dtype))
        with torch.no_grad():
            mode = dtype if dtype != "float32" else float32_mode(cuda, torch.backends.cuda.matmul.allow_tf32)
            out["matmul"][dtype] = {**timed(lambda a=a, b=b: a @ b, sync, matmul_flops(n)), "size": n, "mode": mode}
            if dtype == "float32" and cuda:  # the float32 matmul at each mode: a cell may run at either
                out["matmul_modes"] = {}
                default = torch.backends.cuda.matmul.allow_tf32
                for mode, allowed in (("float32", False), ("tf32", True)):
                    torch.backends.cuda.matmul.allow_tf32 = allowed
                    out["matmul_modes"][mode] = {**timed(lambda a=a, b=b: a @ b, sync, matmul_flops(n)), "size": n}
                torch.backends.cuda.matmul.allow_tf32 = default
        del a, b
    m = GPU_TRIAD if cuda else CPU_TRIAD
    x, y, z = (torch.ones(m, device=dev) for _ in range(3))
    out["triad"] = {**timed(lambda: torch.add(y, z, alpha=TRIAD_SCALAR, out=x), sync, triad_bytes(m)), "size": m}
    return out


def probe_jax() -> dict:
    import jax
    import jax.numpy as jnp

    gpu = next((d for d in jax.devices() if d.platform == "gpu"), None)
    n = GPU_MATMUL if gpu else CPU_MATMUL
    out: dict[str, Any] = {
        "device": gpu.device_kind if gpu else "cpu",
        "matmul": {},
        "precision": {"default_matmul_precision": str(jax.config.jax_default_matmul_precision)},
    }
    matmul = jax.jit(lambda a, b: a @ b)
    key = jax.random.PRNGKey(0)
    tf32 = str(jax.config.jax_default_matmul_precision).lower() not in ("highest", "float32")
    for dtype in ("float32", "bfloat16"):
        a = jax.random.normal(key, (n, n), dtype=getattr(jnp, dtype))
        b = jax.random.normal(key, (n, n), dtype=getattr(jnp, dtype))
        out["matmul"][dtype] = {
            **timed(lambda a=a, b=b: matmul(a, b), jax.block_until_ready, matmul_flops(n)),
            "size": n,
            "mode": dtype if dtype != "float32" else float32_mode(gpu is not None, tf32),
        }
        if dtype == "float32" and gpu is not None:  # the float32 matmul at each mode: a cell may run at either
            out["matmul_modes"] = {}
            for mode, level in (("float32", "highest"), ("tf32", "default")):
                with jax.default_matmul_precision(level):
                    at_mode = jax.jit(lambda a, b: a @ b)
                    out["matmul_modes"][mode] = {
                        **timed(lambda a=a, b=b: at_mode(a, b), jax.block_until_ready, matmul_flops(n)), "size": n,
                    }
        del a, b
    m = GPU_TRIAD if gpu else CPU_TRIAD
    y, z = jnp.ones(m, dtype=jnp.float32), jnp.ones(m, dtype=jnp.float32)
    # one fused kernel reading y and z; the output's buffer is donated back in, as STREAM writes a in place (on this
    # project's CPU XLA's triad ran at ~10 GB/s with or without donation, torch's at ~46: XLA's own kernel)
    triad = jax.jit(lambda x, y, z: y + TRIAD_SCALAR * z, donate_argnums=0)
    state = {"x": jnp.zeros(m, dtype=jnp.float32)}

    def run():
        state["x"] = triad(state["x"], y, z)
        return state["x"]

    out["triad"] = {**timed(run, jax.block_until_ready, triad_bytes(m)), "size": m}
    return out


def probe_tensorflow() -> dict:
    import tensorflow as tf

    gpu = bool(tf.config.list_logical_devices("GPU"))
    n = GPU_MATMUL if gpu else CPU_MATMUL

    def sync(result):
        if gpu:
            tf.test.experimental.sync_devices()
        # on a CPU, TensorFlow's eager ops return when done

    out: dict[str, Any] = {
        "device": "gpu" if gpu else "cpu",
        "matmul": {},
        "precision": {"tf32_execution": tf.config.experimental.tensor_float_32_execution_enabled()},
    }
    tf32 = tf.config.experimental.tensor_float_32_execution_enabled()
    for dtype in ("float32", "bfloat16"):
        a = tf.random.normal((n, n), dtype=getattr(tf, dtype))
        b = tf.random.normal((n, n), dtype=getattr(tf, dtype))
        out["matmul"][dtype] = {**timed(lambda a=a, b=b: tf.linalg.matmul(a, b), sync, matmul_flops(n)), "size": n,
                                "mode": dtype if dtype != "float32" else float32_mode(gpu, tf32)}
        if dtype == "float32" and gpu:  # the float32 matmul at each mode: a cell may run at either
            out["matmul_modes"] = {}
            for mode, enabled in (("float32", False), ("tf32", True)):
                tf.config.experimental.enable_tensor_float_32_execution(enabled)
                out["matmul_modes"][mode] = {
                    **timed(lambda a=a, b=b: tf.linalg.matmul(a, b), sync, matmul_flops(n)), "size": n,
                }
            tf.config.experimental.enable_tensor_float_32_execution(tf32)
    m = GPU_TRIAD if gpu else CPU_TRIAD
    y, z = tf.ones(m, dtype=tf.float32), tf.ones(m, dtype=tf.float32)
    triad = tf.function(lambda y, z: y + TRIAD_SCALAR * z, jit_compile=True)  # XLA fuses it into one pass
    out["triad"] = {**timed(lambda: triad(y, z), sync, triad_bytes(m)), "size": m}
    return out


PROBES = {"numpy": probe_numpy, "torch": probe_torch, "jax": probe_jax, "tensorflow": probe_tensorflow}


def measure(framework: str) -> dict:
    """The framework's ceilings in this process, or {"error": why} (a probe that fails costs the run nothing)."""
    started = time.perf_counter()
    try:
        out = PROBES[framework]()
    except Exception as e:  # a framework without bfloat16 matmul on this device, out of memory: said, not raised
        return {"framework": framework, "error": f"{type(e).__name__}: {e}"[:300]}
    return {"framework": framework, **out, "seconds": round(time.perf_counter() - started, 2)}


def main(argv: list[str]) -> int:
    print(PREFIX + json.dumps(measure(argv[0] if argv else "numpy")), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
