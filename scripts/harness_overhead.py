"""How much does the harness itself add to a step? (`make bench-overhead`)

1. The timing core: StepTimer windows around a trivial step vs the same loop with no timer.
2. The Keras driver: fit() of a trivial model with the timing callback (sync at both edges of every
   step) vs without it, in the jax environment if it is built.
The goal: under 1% of a 10 ms step, i.e. under 100 microseconds per step.
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.timing import StepTimer, no_sync, run_steps  # noqa: E402

STEPS = 20_000
TRIALS = 7
REFERENCE_STEP_MS = 10.0


def trivial_step() -> int:
    return 1


def bare_loop(count: int) -> float:
    start = time.perf_counter_ns()
    for _ in range(count):
        trivial_step()
    return (time.perf_counter_ns() - start) / count


def timed_loop(count: int) -> float:
    start = time.perf_counter_ns()
    run_steps(trivial_step, StepTimer(no_sync), count)
    return (time.perf_counter_ns() - start) / count


def timing_core_overhead_us() -> float:
    overheads = [(timed_loop(STEPS) - bare_loop(STEPS)) / 1000 for _ in range(TRIALS)]
    return statistics.median(overheads)


KERAS_PROBE = r"""
import json, os, statistics, sys, time
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, sys.argv[1])
import numpy as np, keras
from bench.frameworks import sync_jax
from bench.models.keras_common import repeated_batch, timer_callback
from bench.timing import StepTimer
steps = 2000
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
data = repeated_batch(np.ones((8, 4), "float32"), np.ones((8, 1), "float32"))
model.fit(data, epochs=1, steps_per_epoch=50, verbose=0)  # compile outside the comparison
def per_step(callbacks):
    start = time.perf_counter_ns()
    model.fit(data, epochs=1, steps_per_epoch=steps, callbacks=callbacks, verbose=0)
    return (time.perf_counter_ns() - start) / steps / 1000
plain, timed = [], []
for _ in range(5):
    plain.append(per_step([]))
    timed.append(per_step([timer_callback(keras, StepTimer(sync_jax))]))
print(json.dumps({"plain_us": statistics.median(plain), "timed_us": statistics.median(timed)}))
"""


def keras_driver_overhead() -> dict | None:
    python = REPO / ".venvs" / "jax" / "bin" / "python"
    if not python.exists():
        return None
    out = subprocess.run([str(python), "-c", KERAS_PROBE, str(REPO)], capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"keras probe failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    core = timing_core_overhead_us()
    share = core / (REFERENCE_STEP_MS * 1000)
    print(f"timing core: {core:.2f} us per step = {share:.4%} of a {REFERENCE_STEP_MS:.0f} ms step "
          f"(median of {TRIALS} trials x {STEPS} trivial steps)")
    keras_probe = keras_driver_overhead()
    if keras_probe is None:
        print("keras driver: skipped (the jax env is not built: make env BACKEND=jax)")
    else:
        extra = keras_probe["timed_us"] - keras_probe["plain_us"]
        print(f"keras fit driver (jax, trivial model): {keras_probe['plain_us']:.1f} us/step without the timing callback, "
              f"{keras_probe['timed_us']:.1f} us/step with it: +{extra:.1f} us = {extra / (REFERENCE_STEP_MS * 1000):.3%} of a "
              f"{REFERENCE_STEP_MS:.0f} ms step (includes a device sync at both edges of every step)")
    ok = share < 0.01
    print("goal (< 1% of a 10 ms step) met by the timing core" if ok else "goal NOT met by the timing core")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
