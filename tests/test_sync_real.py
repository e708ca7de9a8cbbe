"""The timing core on the real frameworks, against an external clock: what the fake devices of test_timing.py
cannot show. Each probe runs in its backend's environment and prints one JSON line."""
import json
import os
import subprocess

import pytest
from conftest import REPO, env_python

from bench.catalogue.backends import cell_environment

pytestmark = pytest.mark.envs

EARLIER_WORK = r"""
import json, sys, time
sys.path.insert(0, sys.argv[2])
framework = sys.argv[1]
from bench.measure.frameworks import device_for
from bench.base.timing import StepTimer, WindowPlan
clock = time.perf_counter
if framework == "jax":
    import jax, jax.numpy as jnp
    x = jnp.ones((1500, 1500), jnp.float32)
    slow = jax.jit(lambda a: jnp.tanh(a @ a @ a @ a @ a @ a @ a @ a))
    fast = jax.jit(lambda a: a[:8, :8] + 1)
    wait = lambda r: jax.block_until_ready(r)
elif framework == "torch":
    import torch
    x = torch.ones(1500, 1500)
    slow = lambda a: torch.tanh(a @ a @ a @ a @ a @ a @ a @ a)
    fast = lambda a: a[:8, :8] + 1
    wait = lambda r: None
else:
    import tensorflow as tf
    x = tf.ones((1500, 1500))
    slow = tf.function(lambda a: tf.tanh(a @ a @ a @ a @ a @ a @ a @ a))
    fast = tf.function(lambda a: a[:8, :8] + 1)
    wait = lambda r: r.numpy()
wait(slow(x)); wait(fast(x))  # compile both outside
def timed_slow():
    t = clock(); wait(slow(x)); return (clock() - t) * 1e3
# Its uncontended cost: the fastest of three (one run alone can be slowed 2x by a neighbour on a shared CPU).
slow_ms = min(timed_slow() for _ in range(3))

def window(device):
    timer = StepTimer(device, WindowPlan(0, 1))
    start = clock()
    pending = slow(x)  # a previous step's output, still being computed (kept, as a driver keeps it)
    dispatch_ms = (clock() - start) * 1e3
    timer.begin()
    timer.end(fast(x))
    timer.begin()
    timer.end(fast(x))
    total_ms = (clock() - start) * 1e3
    wait(pending)
    return {"window_ms": timer.windows_ms[0], "dispatch_ms": dispatch_ms, "total_ms": total_ms}

class SyncOnNone:
    # The old begin(): sync on the value it was given (None), which for JAX waits for nothing.
    def __init__(self, device): self.device = device
    def sync(self, result): self.device.sync(result)
    def barrier(self): jax.block_until_ready(None) if framework == "jax" else self.device.barrier()
    def compile_count(self): return 0

device = device_for(framework)
new, old = window(device), window(SyncOnNone(device))
# and again after the windows: a shared CPU that sped up between them (a neighbour gone) made the earlier figure long
slow_ms = min(slow_ms, *(timed_slow() for _ in range(3)))
print("PROBE " + json.dumps({"slow_ms": slow_ms, "new": new, "old": old}))
"""


def run_probe(backend: str, code: str, *args: str) -> dict:
    python = env_python(backend)
    env = {**os.environ, **cell_environment(backend), "JAX_PLATFORMS": "cpu"}
    out = subprocess.run(
        [str(python), "-c", code, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    line = next(line for line in out.stdout.splitlines() if line.startswith("PROBE "))
    return json.loads(line[len("PROBE ") :])


@pytest.mark.wall_clock
@pytest.mark.parametrize("backend,framework", [("jax", "jax"), ("native-torch", "torch"), ("tensorflow", "tensorflow")])
def test_work_dispatched_before_a_window_is_not_counted_in_it(backend, framework):
    got = run_probe(backend, EARLIER_WORK, framework, str(REPO))
    slow, new = got["slow_ms"], got["new"]
    assert slow > 50, got  # the earlier work is long enough to show
    assert new["window_ms"] < slow / 3, got  # the barrier waited for it before the window opened
    assert new["total_ms"] > 0.8 * slow, got  # the external clock saw it run
    if framework == "jax":
        # JAX dispatch is asynchronous, and the old start-of-window sync (on None) let the work into the window.
        assert got["new"]["dispatch_ms"] < slow / 3 and got["old"]["dispatch_ms"] < slow / 3, got
        assert got["old"]["window_ms"] > slow / 2, got


KERAS_LOOPS = r"""
import json, sys, time, types
sys.path.insert(0, sys.argv[2])
import numpy as np
from bench.catalogue.backends import get_backend
from bench.measure.drivers import drive_keras_fit, drive_keras_predict
from bench.measure.frameworks import device_for
from bench.models.keras_common import keras_module
from bench.base.timing import StepTimer, WindowPlan
backend = get_backend(sys.argv[1])
keras = keras_module(backend.keras_major)
FETCH_S = 0.03

def batches(with_targets):
    x = np.ones((4, 8), "float32")
    while True:
        time.sleep(FETCH_S)  # taking the next batch from the input
        yield (x, np.ones((4, 1), "float32")) if with_targets else (x,)

seen = []
class Record(keras.callbacks.Callback):
    def on_predict_batch_end(self, batch, logs=None):
        seen.append(sorted({type(v).__module__.split(".")[0] for v in (logs or {}).values()}))

model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
out = {}
for task, driver in (("fit", drive_keras_fit), ("predict", drive_keras_predict)):
    workload = types.SimpleNamespace(model=model, data=batches(task == "fit"), keras=keras, watch_compiles=lambda: None)
    timer = StepTimer(device_for(backend.framework), WindowPlan(1, 5))
    driver(workload, timer)
    out[task] = timer.split().timed_ms
model.predict(batches(False), steps=2, callbacks=[Record()], verbose=0)
out["predict_log_types"] = seen
print("PROBE " + json.dumps(out))
"""


@pytest.mark.wall_clock
@pytest.mark.parametrize("backend", ["keras2", "tensorflow", "jax", "torch"])
def test_keras_windows_count_taking_the_next_batch_on_every_backend(backend):
    """Keras 3 on torch takes the next batch before on_*_batch_begin, JAX and TensorFlow inside their step: the
    tiled windows include it on all of them (30 ms per batch here), so every backend times the same thing."""
    got = run_probe(backend, KERAS_LOOPS, backend, str(REPO))
    for task in ("fit", "predict"):
        # Every window but one holds a batch's 30 ms; one may find its batch already there, and the input still
        # bounds the total. Keras 2 runs a generator through tf.data, whose prefetch thread can have one batch ready
        # and the next partly made while a step runs (a window of 28.9 ms seen once): there, all but two windows.
        windows = sorted(got[task])
        ready = 2 if backend == "keras2" else 1
        assert windows[ready] >= 29 and sum(windows) >= 29 * (len(windows) - 1), (task, got[task])
    if backend != "keras2":
        # Keras 3 hands batch-end callbacks host values only (pythonify_logs): the window's closing sync has
        # nothing left to wait for; the step's work was waited for by that conversion.
        assert all(
            types == ["numpy"] or types == ["builtins"] or set(types) <= {"numpy", "builtins"}
            for types in got["predict_log_types"]
        ), got


COMPILES = r"""
import json, sys
sys.path.insert(0, sys.argv[2])
from bench.measure.frameworks import device_for
framework = sys.argv[1]
device = device_for(framework)
if framework == "jax":
    import jax, jax.numpy as jnp
    f = jax.jit(lambda a: a * 2)
    a, b = jax.block_until_ready((jnp.ones(3), jnp.ones(4)))  # creating inputs compiles too: before counting
    before = device.compile_count()
    f(a).block_until_ready(); f(a).block_until_ready(); f(b).block_until_ready()
elif framework == "torch":
    import torch
    f = torch.compile(lambda a: a * 2)
    before = device.compile_count()
    f(torch.ones(3)); f(torch.ones(3)); f(torch.ones(3, 2))
else:
    import tensorflow as tf
    f = tf.function(lambda a: a * 2)
    device.watch(f)
    before = device.compile_count()
    f(tf.ones(3)); f(tf.ones(3)); f(tf.ones(4))
print("PROBE " + json.dumps({"events": device.compile_count() - before}))
"""


@pytest.mark.parametrize("backend,framework", [("jax", "jax"), ("native-torch", "torch"), ("tensorflow", "tensorflow")])
def test_compile_counters_see_a_recompile(backend, framework):
    """Two shapes, three calls: two compiles (the counter the warm-up extension and the steadiness check read)."""
    assert run_probe(backend, COMPILES, framework, str(REPO))["events"] == 2


KERAS_PREDICT_SYNC = r"""
import json, statistics, sys, time, types
sys.path.insert(0, sys.argv[1])
import numpy as np
from bench.measure.drivers import drive_keras_predict
from bench.measure.frameworks import device_for
from bench.models.keras_common import keras_module, repeated_batch
from bench.base.timing import StepTimer, WindowPlan
keras = keras_module(3)
inputs = keras.Input((2048,))
x = inputs
for _ in range(6):
    x = keras.layers.Dense(2048)(x)
model = keras.Model(inputs, x)
batch = np.ones((512, 2048), "float32")
model.predict(batch, verbose=0)  # compile outside
def reference_steps():
    # predict_on_batch runs the same compiled predict function and returns NumPy, so each call ends after its work
    # (a plain model(batch) would run the layers eagerly: other, slower work)
    steps = []
    for _ in range(3):
        t = time.perf_counter()
        model.predict_on_batch(batch)
        steps.append((time.perf_counter() - t) * 1e3)
    return steps
step = reference_steps()
timer = StepTimer(device_for("jax"), WindowPlan(1, 5))
drive_keras_predict(types.SimpleNamespace(model=model, data=repeated_batch(batch), keras=keras, watch_compiles=lambda: None), timer)
step += reference_steps()  # before and after, so a drift in the machine's speed moves the reference with the windows
print("PROBE " + json.dumps({"step_ms": statistics.median(step), "windows": timer.split().timed_ms}))
"""


@pytest.mark.wall_clock
def test_keras_predict_windows_close_after_the_step_on_jax():
    """JAX returns from a predict step before computing it; the window must still close after the step's work
    (Keras converts the outputs to NumPy before our batch-end callback, and the sync waits for anything left)."""
    got = run_probe("jax", KERAS_PREDICT_SYNC, str(REPO))
    assert got["step_ms"] > 20, got
    # a window closed at dispatch would hold a few milliseconds; half the same function's time shows it waited
    assert min(got["windows"]) > 0.5 * got["step_ms"], got


ABSTRACT_KERAS2 = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from bench.models.keras_common import build_abstractly, keras_module
keras = keras_module(2)
def build():
    from keras.src.backend.common import global_state  # Keras 3 is installed beside tf_keras in this env
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    return {"in_keras3_scope": global_state.get_global_attribute("stateless_scope") is not None, "params": model.count_params(),
            "module": type(model).__module__.split(".")[0]}
print("PROBE " + json.dumps(build_abstractly(build, keras_major=2)))
"""


def test_keras2_builds_are_not_taken_for_keras3():
    """The keras2 env also has Keras 3 installed: the abstract build must follow the Keras the backend uses
    (tf_keras, built for real), not the version of `import keras`."""
    got = run_probe("keras2", ABSTRACT_KERAS2, str(REPO))
    assert got == {"in_keras3_scope": False, "params": 8, "module": "tf_keras"}, got
