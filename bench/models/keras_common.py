"""What every Keras implementation shares: Keras 2 vs 3 access, synthetic data, settings, abstract builds.

Keras 2 goes through `tf.keras` (tf_keras with TF_USE_LEGACY_KERAS=1; on the 2024 stack, TF 2.15's own keras 2.15)
and keras-nlp; Keras 3 through `keras` and keras-hub, or keras-nlp where keras-hub is not installed (the 2024
stack: keras-nlp 0.8.2, before keras-hub existed). Their fit/predict loops are driven by bench/measure/drivers.py.
"""
from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np

from bench.catalogue.backends import get_backend
from bench.measure.frameworks import device_for
from bench.models.base import SEED, Workload


def keras_module(keras_major: int):
    """The Keras the backend under test means, checked: never a silent Keras 3 in the Keras 2 env.

    Keras 2 is tf.keras: tf_keras where TF_USE_LEGACY_KERAS=1 points it there (TF >= 2.16), or TF 2.15's own keras
    2.15 package (the 2024 stack, as v0.0.5's Keras 2 venv ran it; TF 2.15 ignores the variable)."""
    if keras_major == 2:
        import importlib

        import tensorflow as tf

        keras = tf.keras
        # where tf.keras's classes live (TF 2.15 names its API module tensorflow.keras whatever it points at)
        root = keras.Sequential.__module__.split(".")[0]
        version = getattr(importlib.import_module(root), "__version__", "") if root in ("tf_keras", "keras") else ""
        if not version.startswith("2."):
            raise RuntimeError(f"tf.keras is {keras.__name__} ({root} {version or '?'}), not Keras 2: with TF >= 2.16, "
                               "TF_USE_LEGACY_KERAS=1 must be set before TensorFlow is imported")
        keras.__version__ = version  # tf.keras's API module has no version of its own
        keras.__package_root__ = root
        return keras
    import keras

    if not keras.__version__.startswith("3."):
        raise RuntimeError(f"expected Keras 3, found {keras.__version__}")
    return keras


def nlp_library(keras_major: int):
    """keras-nlp 0.12 (the last with Keras 2 support) on Keras 2; keras-hub on Keras 3, or keras-nlp where keras-hub
    is not installed (the 2024 stack's keras-nlp 0.8.2: the same BertBackbone/GemmaBackbone/MistralBackbone and
    *CausalLM classes, the same config arguments). The one that ran is in the settings (`library_versions`)."""
    if keras_major == 2:
        import keras_nlp

        return keras_nlp
    try:
        import keras_hub
    except ImportError:
        import keras_nlp

        return keras_nlp
    return keras_hub


def library_versions(*libraries) -> dict[str, str]:
    """name -> version of the Keras model libraries a workload built with (what a result's settings record)."""
    return {lib.__name__: getattr(lib, "__version__", "?") for lib in libraries}


def assert_keras_major(model: Any, keras_major: int) -> None:
    """Guard that a built model belongs to the intended Keras (2: tf_keras, 3: keras)."""
    root = type(model).__mro__
    modules = {c.__module__.split(".")[0] for c in root}
    if keras_major == 2:
        keras2 = keras_module(2)
        if not isinstance(model, keras2.Model):
            raise RuntimeError(
                f"{type(model).__name__} is not a Keras 2 ({keras2.__package_root__}) model; its classes come from {sorted(modules)}"
            )
    else:
        import keras

        if not isinstance(model, keras.Model):
            raise RuntimeError(
                f"{type(model).__name__} is not a Keras 3 model; its classes come from {sorted(modules)}"
            )


# The published runs fed fit/predict through tf.data (keras-benchmarks v0.0.5); what a result's settings say when a
# cell fed Keras otherwise (the unlocked route on an image without TensorFlow, docs/OWN_ENVIRONMENT.md).
OWN_INPUT = "keras.utils.PyDataset (TensorFlow is not installed; the published runs fed tf.data)"


def repeated_batch(inputs: Any, targets: Any = None):
    """The same synthetic batch forever: a tf.data pipeline as published (Keras accepts it on every backend), or,
    where TensorFlow is not installed (Keras 3 on JAX or torch in a user's own environment), the same batch
    through Keras's own input path (its `replaces_tf_data` says so)."""
    data = inputs if targets is None else (inputs, targets)
    try:
        import tensorflow as tf
    except ImportError:
        return same_batch_dataset(data)
    return tf.data.Dataset.from_tensors(data).repeat()


def same_batch_dataset(data: Any):
    """A Keras 3 PyDataset of endless length whose every item is `data` (fit/predict are given their step counts)."""
    import keras

    class SameBatch(keras.utils.PyDataset):
        replaces_tf_data = OWN_INPUT

        def __init__(self):
            super().__init__(workers=1, use_multiprocessing=False)

        @property
        def num_batches(self):
            return None  # endless, as tf.data's .repeat()

        def __getitem__(self, index):
            return data

    return SameBatch()


def rng(seed: int = SEED) -> np.random.Generator:
    return np.random.default_rng(seed)


PIPELINE_BYPASS = (
    "; keras-hub's PipelineModel.fit/predict (which wrap any input in tf.data or grain, even with no "
    "preprocessor) bypassed for keras.Model's own, the same step without the wrapping"
)


def bypass_pipeline_input(model: Any) -> bool:
    """keras-hub's task models (PipelineModel) turn every input into a tf.data or grain dataset to map their
    preprocessor over it, even when that preprocessor is None, as in these benchmarks: without TensorFlow (and
    grain), give this model keras.Model's own fit/predict, which run the same train/predict step. True if done."""
    import types

    import keras

    pipeline = any(c.__name__ == "PipelineModel" and c.__module__.startswith("keras_hub") for c in type(model).__mro__)
    if not pipeline or getattr(model, "preprocessor", None) is not None:
        return False
    model.fit = types.MethodType(keras.Model.fit, model)
    model.predict = types.MethodType(keras.Model.predict, model)
    return True


class KerasWorkload(Workload):
    """Base of every Keras implementation: `model` (with `data` for the fit/predict loops)."""

    model: Any = None
    _data: Any = None
    _input_path: str | None = None  # set only where the input path differs from the published runs' tf.data

    @property
    def data(self) -> Any:
        return self._data

    @data.setter
    def data(self, value: Any) -> None:
        # Every workload sets its model, then its data: where the data replaces tf.data (no TensorFlow here), the
        # model's fit/predict must take it as it is.
        self._data = value
        if getattr(value, "replaces_tf_data", None):
            self._input_path = value.replaces_tf_data + (PIPELINE_BYPASS if bypass_pipeline_input(self.model) else "")

    def __init__(self, cell, shape):
        super().__init__(cell, shape)
        backend = get_backend(cell.backend)
        self.keras_major = backend.keras_major
        self.framework = backend.framework
        self.keras = keras_module(self.keras_major)
        self.keras.utils.set_random_seed(SEED)

    @cached_property
    def timing_device(self):
        return device_for(self.framework)

    def watch_compiles(self) -> None:
        # TensorFlow's compiles are retraces of the tf.functions Keras makes lazily inside fit/predict/generate.
        watch = getattr(self.timing_device, "watch", None)
        if watch is not None:
            for name in ("train_function", "predict_function", "generate_function"):
                watch(getattr(self.model, name, None))

    def settings(self) -> dict[str, Any]:
        model = self.model
        policy = getattr(model, "dtype_policy", None) or getattr(model, "_dtype_policy", None)
        if self._input_path:  # said only where the input path differs from published
            return {**self._settings(model, policy), "input_pipeline": self._input_path}
        return self._settings(model, policy)

    def _settings(self, model: Any, policy: Any) -> dict[str, Any]:
        return {
            "keras_version": self.keras.__version__,
            "keras_backend": self.cell.backend
            if self.keras_major == 3
            else f"tensorflow ({self.keras.__package_root__})",
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


def reference_jit_compile(cell) -> bool:
    """XLA as the published runs asked for it (keras-benchmarks `use_jit()`): on, except on Keras 3's torch backend."""
    return cell.backend != "torch"


def build_abstractly(build, *args, keras_major: int = 3):
    """Keras 3: build with every variable deferred (StatelessScope, no initialisation on exit): shapes exist,
    values never do, so a 7B model is counted without its memory. Keras 2 (the Keras the keras2 backend uses, even
    where Keras 3 is installed beside it) has no such scope and builds for real."""
    if keras_major == 2:
        return build(*args)
    keras = keras_module(3)
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
