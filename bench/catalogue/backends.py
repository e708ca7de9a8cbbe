"""The five backends: one row each, the single source of truth for names, envs and variables.

Stdlib only: scripts/envs.py, the Makefile helpers and the orchestrator import this without any framework.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from bench.base.errors import BenchError


@dataclass(frozen=True)
class Backend:
    name: str  # the BACKEND= value, also the env's name under envs/ and .venvs/
    display: str  # column header of the published table
    family: str  # "keras" or "native-torch": which implementations serve it
    framework: str  # the framework package whose version identifies a run
    keras_major: int | None  # 2 or 3 for Keras backends, None for native PyTorch
    environment: dict[str, str] = field(default_factory=dict)  # set before any framework import
    short: str = ""  # short display name (the table's "best of Keras 3" column); the name if empty
    variants: tuple[str, ...] = ("default",)  # what one backend runs in more than one way (native: eager, compiled)
    # Env rules (scripts/envs.py check-locks derives its cross-env checks from these, bench/envs/rules.py):
    # packages pinned at one version in every env that lists them here,
    shared_pins: tuple[str, ...] = ()
    # pinned alike with the others where this env has the package at all (torch in jax: today's stack only)
    optional_shared_pins: tuple[str, ...] = ()
    # and whether TensorFlow comes as tensorflow-cpu alone (no GPU build), at the version of the `tensorflow`
    # of the TensorFlow backend of the same Keras major.
    tensorflow_cpu_only: bool = False

    def check_variant(self, variant: str) -> None:
        if variant not in self.variants:
            raise BenchError(f"unknown variant {variant!r} for {self.name}; valid variants: {', '.join(self.variants)}")


# The Keras 3 packages: one version across the Keras 3 envs of a stack (keras-hub today, keras-nlp in 2024: a
# package no env of the stack has is not a disagreement).
KERAS3_PINS = ("keras", "keras-hub", "keras-nlp", "keras-cv")


@dataclass(frozen=True)
class Stack:
    """A software stack: one set of envs for every backend, same Backend rows and env rules, other pins."""

    name: str  # the STACK= value, recorded in every result's cell
    env_suffix: str  # env name = backend name + suffix, under envs/ and .venvs/ ("" today: the names predate stacks)
    description: str


STACKS: dict[str, Stack] = {
    s.name: s
    for s in (
        Stack("today", "", "today's pins, envs/<backend>/"),
        Stack("2024", "-2024", "keras-benchmarks v0.0.5's pins"),  # envs/<backend>-2024/
    )
}
DEFAULT_STACK = "today"
# Not a stack of locked envs: the interpreter that runs the command, with whatever it has installed (--env current,
# docs/OWN_ENVIRONMENT.md). Its cells are named and filed apart and never built, locked or checked as envs.
UNLOCKED_STACK = Stack("current", "", "the environment that ran the command, unlocked")


def lookup(table: dict, name: str, what: str):
    """table[name], or a BenchError that names the valid choices: `unknown stack '2023'; valid stacks: today, 2024`."""
    try:
        return table[name]
    except KeyError:
        raise BenchError(f"unknown {what} {name!r}; valid {what}s: {', '.join(table)}") from None


def get_stack(name: str) -> Stack:
    return UNLOCKED_STACK if name == UNLOCKED_STACK.name else lookup(STACKS, name, "stack")


def env_name(backend: str, stack: str = DEFAULT_STACK) -> str:
    """The env (folder under envs/ and .venvs/) that runs BACKEND on STACK."""
    return get_backend(backend).name + get_stack(stack).env_suffix


def stack_env_names(stack: str = DEFAULT_STACK) -> list[str]:
    return [env_name(b, stack) for b in BACKENDS]


def split_env_name(env: str) -> tuple[str, str]:
    """(backend, stack) of an env name; BenchError if it is no backend's env on any stack."""
    for s in STACKS.values():
        for b in BACKENDS:
            if b + s.env_suffix == env:
                return b, s.name
    raise BenchError(f"{env!r} is not the env of a backend on any stack")


# Variables every cell process gets: no network, quiet logs, and deterministic hashing.
COMMON_ENVIRONMENT = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "DIFFUSERS_OFFLINE": "1",
    "KAGGLE_OFFLINE": "1",
    "TF_CPP_MIN_LOG_LEVEL": "2",
    "PYTHONHASHSEED": "0",
}

BACKENDS: dict[str, Backend] = {
    b.name: b
    for b in (
        Backend(
            "keras2",
            "Keras 2 (TensorFlow)",
            "keras",
            "tensorflow",
            2,
            # Must be set before TF is imported, or tf.keras silently resolves to Keras 3.
            {"TF_USE_LEGACY_KERAS": "1", "KERAS_BACKEND": "tensorflow"},
            short="Keras 2",
        ),
        Backend(
            "tensorflow",
            "Keras 3 (TensorFlow)",
            "keras",
            "tensorflow",
            3,
            {"KERAS_BACKEND": "tensorflow"},
            short="TF",
            shared_pins=KERAS3_PINS,
        ),
        # torch here only for the tuning study's DataLoader (envs/jax/pyproject.toml), the same torch as the torch envs;
        # the 2024 stack's jax env has none (the study runs on today's stack).
        # JAX preallocates this fraction of the GPU and can use no more; the plan compares a JAX cell with it
        # (bench/plan/ usable_gib). Its default, 0.75, leaves a quarter of the card unused, and the plan's estimate
        # for SAM fit (33.5 GiB) would then skip a cell the published table ran on an A100 40GB: set, and recorded,
        # at 0.90 (docs/DEVIATIONS.md row 43; the pool's size, not how fast it is used).
        Backend(
            "jax",
            "Keras 3 (JAX)",
            "keras",
            "jax",
            3,
            {"KERAS_BACKEND": "jax", "XLA_PYTHON_CLIENT_MEM_FRACTION": "0.90"},
            short="JAX",
            shared_pins=KERAS3_PINS,
            optional_shared_pins=("torch",),
            tensorflow_cpu_only=True,
        ),
        # The same torch as native-torch: the two PyTorch columns compare implementations, not torch builds.
        Backend(
            "torch",
            "Keras 3 (PyTorch)",
            "keras",
            "torch",
            3,
            {"KERAS_BACKEND": "torch"},
            short="PyTorch",
            shared_pins=(*KERAS3_PINS, "torch"),
            tensorflow_cpu_only=True,
        ),
        Backend(
            "native-torch",
            "Native PyTorch",
            "native-torch",
            "torch",
            None,
            {},
            short="Native PyTorch",
            variants=("eager", "compiled"),
            shared_pins=("torch",),
        ),
    )
}


# Environments of a study that are not backends of the published table (no column of its matrix): name ->
# variables their processes run with, on top of COMMON_ENVIRONMENT. Built, locked and checked like a backend's.
STUDY_ENVIRONMENTS: dict[str, dict[str, str]] = {
    # transformers 4.57's TensorFlow models (the inference grid, bench/studies/grid/): tf.keras must be tf_keras 2.x.
    "tf-transformers": {"TF_USE_LEGACY_KERAS": "1"},
}


def get_backend(name: str) -> Backend:
    try:
        return BACKENDS[name]
    except KeyError:
        raise BenchError(f"unknown backend {name!r}; valid backends: {', '.join(BACKENDS)}") from None


def keras3_backends() -> tuple[str, ...]:
    """The Keras 3 backends, in table order (the published "Keras 3 (best)" column picks among them)."""
    return tuple(b.name for b in BACKENDS.values() if b.keras_major == 3)


def short_name(name: str) -> str:
    backend = get_backend(name)
    return backend.short or backend.name


def family_variants() -> dict[str, tuple[str, ...]]:
    """Each implementation family's variants, from its backends' own definitions (every backend of a family alike)."""
    found: dict[str, tuple[str, ...]] = {}
    for b in BACKENDS.values():
        if found.setdefault(b.family, b.variants) != b.variants:
            raise BenchError(f"backends of the {b.family!r} family disagree on their variants")
    return found


def all_variants() -> tuple[str, ...]:
    return tuple(dict.fromkeys(v for vs in family_variants().values() for v in vs))


def make_env_command(env: str) -> str:
    """The make command that builds an env: `make env BACKEND=jax`, `make env BACKEND=jax STACK=2024`."""
    backend, stack = split_env_name(env)
    return f"make env BACKEND={backend}" + ("" if stack == DEFAULT_STACK else f" STACK={stack}")


def cell_environment(name: str) -> dict[str, str]:
    """Variables a cell process of this backend, backend env (of any stack: the same) or study env runs with (on
    top of the caller's)."""
    if name in STUDY_ENVIRONMENTS:
        return {**COMMON_ENVIRONMENT, **STUDY_ENVIRONMENTS[name]}
    backend = name if name in BACKENDS else split_env_name(name)[0]
    return {**COMMON_ENVIRONMENT, **get_backend(backend).environment}
