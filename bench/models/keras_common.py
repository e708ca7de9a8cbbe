"""What every Keras implementation shares: Keras 2 vs 3 access, synthetic data, and the fit/predict drivers.

Keras 2 goes through `tf.keras` (tf_keras with TF_USE_LEGACY_KERAS=1) and keras-nlp; Keras 3 through
`keras` and keras-hub. Both are driven by their own fit/predict loops, timed from callbacks.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from bench.backends import get_backend
from bench.frameworks import SYNCS
from bench.models.base import Workload
from bench.timing import StepTimer

SEED = 1234


def keras_module(keras_major: int):
    """The Keras the backend under test means, checked: never a silent Keras 3 in the Keras 2 env."""
    if keras_major == 2:
        import tensorflow as tf
        import tf_keras

        keras = tf.keras
        if not keras.__name__.startswith("tf_keras") or not tf_keras.__version__.startswith("2."):
            raise RuntimeError(f"tf.keras is {keras.__name__}, not Keras 2 (tf_keras): TF_USE_LEGACY_KERAS=1 must be set before TensorFlow is imported")
        keras.__version__ = tf_keras.__version__  # tf.keras's API module has no version of its own
        return keras
    import keras

    if not keras.__version__.startswith("3."):
        raise RuntimeError(f"expected Keras 3, found {keras.__version__}")
    return keras


def nlp_library(keras_major: int):
    """keras-nlp 0.12 (the last with Keras 2 support) on Keras 2; keras-hub on Keras 3."""
    if keras_major == 2:
        import keras_nlp

        return keras_nlp
    import keras_hub

    return keras_hub


def assert_keras_major(model: Any, keras_major: int) -> None:
    """Guard that a built model belongs to the intended Keras (2: tf_keras, 3: keras)."""
    root = type(model).__mro__
    modules = {c.__module__.split(".")[0] for c in root}
    if keras_major == 2:
        import tf_keras

        if not isinstance(model, tf_keras.Model):
            raise RuntimeError(f"{type(model).__name__} is not a Keras 2 (tf_keras) model; its classes come from {sorted(modules)}")
    else:
        import keras

        if not isinstance(model, keras.Model):
            raise RuntimeError(f"{type(model).__name__} is not a Keras 3 model; its classes come from {sorted(modules)}")


def repeated_batch(inputs: Any, targets: Any = None):
    """A tf.data pipeline that yields the same synthetic batch forever (Keras accepts it on every backend)."""
    import tensorflow as tf

    data = inputs if targets is None else (inputs, targets)
    return tf.data.Dataset.from_tensors(data).repeat()


def rng(seed: int = SEED) -> np.random.Generator:
    return np.random.default_rng(seed)


class KerasWorkload(Workload):
    """Base of every Keras implementation: `model` is driven by fit() or predict() over `data`."""

    model: Any = None
    data: Any = None

    def __init__(self, cell, shape):
        super().__init__(cell, shape)
        backend = get_backend(cell.backend)
        self.keras_major = backend.keras_major
        self.framework = backend.framework
        self.keras = keras_module(self.keras_major)
        self._sync = SYNCS[self.framework]
        self.keras.utils.set_random_seed(SEED)

    def sync(self, value: Any) -> None:
        self._sync(value)

    def drive(self, timer: StepTimer, count: int) -> None:
        callback = timer_callback(self.keras, timer)
        if self.cell.task == "fit":
            self.model.fit(self.data, epochs=1, steps_per_epoch=count, callbacks=[callback], verbose=0)
        else:
            self.model.predict(self.data, steps=count, callbacks=[callback], verbose=0)
        if len(timer.windows_ns) != count:
            raise RuntimeError(f"Keras ran {len(timer.windows_ns)} steps, expected {count}")

    def settings(self) -> dict[str, Any]:
        model = self.model
        policy = getattr(model, "dtype_policy", None) or getattr(model, "_dtype_policy", None)
        return {
            "keras_version": self.keras.__version__,
            "keras_backend": self.cell.backend if self.keras_major == 3 else "tensorflow (tf_keras)",
            "jit_compile": _effective_jit_compile(model),
            "dtype_policy": getattr(policy, "name", str(policy)),
            "parameters": int(model.count_params()),
            "model_class": f"{type(model).__module__}.{type(model).__name__}",
        }


def _effective_jit_compile(model: Any) -> Any:
    # Keras 3 resolves "auto" at compile(); Keras 2 keeps what was asked (None means no XLA).
    value = getattr(model, "jit_compile", None)
    if value is None:
        value = getattr(model, "_jit_compile", None)
    return bool(value) if value is not None else False


def timer_callback(keras, timer: StepTimer):
    """A callback that opens a synchronised window at each batch's begin and closes it at its end.

    Keras 3's predict loop does not sync at batch end, so the outputs are synced here explicitly.
    """

    class StepWindows(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            timer.begin()

        def on_train_batch_end(self, batch, logs=None):
            timer.end(logs)

        def on_predict_batch_begin(self, batch, logs=None):
            timer.begin()

        def on_predict_batch_end(self, batch, logs=None):
            timer.end((logs or {}).get("outputs"))

    return StepWindows()


def reference_jit_compile(cell) -> bool:
    """XLA as the published runs asked for it (keras-benchmarks `use_jit()`): on, except on Keras 3's torch backend."""
    return cell.backend != "torch"


def build_abstractly(build, *args):
    """Keras 3: build with every variable deferred (StatelessScope, no initialisation on exit): shapes exist,
    values never do, so a 7B model is counted without its memory. Keras 2 has no such scope and builds for real."""
    import keras

    if not keras.__version__.startswith("3."):
        return build(*args)
    from keras.src.backend.common import global_state

    with keras.StatelessScope(initialize_variables=False):
        built = build(*args)
    # Keras keeps deferred variables in a global list that the next stateless scope to close initialises, all of
    # them (a 7B model's memory): forget them, so they stay shapes only.
    global_state.set_global_attribute("uninitialized_variables", [])
    return built


def count_weights(weights) -> int:
    """Elements in a list of variables, from their shapes only (works on variables never materialised)."""
    seen, total = set(), 0
    for w in weights:
        if id(w) in seen:
            continue
        seen.add(id(w))
        total += int(np.prod(tuple(w.shape)))
    return total
