"""Variants: one cell run another way, beside its backend's reference run. Stdlib only.

Two kinds:
- a backend's own variants (bench/catalogue/backends.py `Backend.variants`): `default` on the Keras backends, `eager`
and
  `compiled` on native PyTorch. `make bench-all` and the paper matrix run these, and nothing else.
- tuning variants (TUNING below, the attention variants among them): one framework-specific change
  each, run only when asked (`VARIANT=` on `make bench`, `make tuning`). Each declares where it applies (backends,
  and optionally models and tasks); a cell elsewhere is refused naming where it applies. On native PyTorch a
  tuning variant runs eagerly, so its reference is `eager`; on a Keras backend, `default`.

The workload reads `cell.variant` through `applies()`/`parse()` below and records what it changed in its settings;
the report shows each tuning variant as its ratio to the reference variant of the same backend, model, task and
batch (bench/studies/tuning/page.py).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from bench.base.errors import BenchError
from bench.catalogue.backends import get_backend

KERAS3_BACKENDS = ("tensorflow", "jax", "torch")
LOADER_WORKERS = re.compile(r"loader-workers-(\d+)$")


@dataclass(frozen=True)
class Variant:
    name: str  # the VARIANT= value; loader-workers-N is a pattern, N its parameter
    what: str  # one line: what it changes, for help texts and the report
    applies_to: tuple[tuple[str, tuple[str, ...] | None], ...]  # (backend, its models or None for every model)
    tasks: tuple[str, ...] | None = None  # None: every task
    issue: str = "15"

    @property
    def backends(self) -> tuple[str, ...]:
        return tuple(b for b, _ in self.applies_to)

    def applies(self, backend: str, model: str, task: str) -> bool:
        models = dict(self.applies_to).get(backend, ())
        return (
            backend in self.backends
            and (models is None or model in models)
            and (self.tasks is None or task in self.tasks)
        )

    def where(self) -> str:
        text = "; ".join(f"{b} ({', '.join(models) if models else 'every model'})" for b, models in self.applies_to)
        return text + (f"; tasks {', '.join(self.tasks)}" if self.tasks else "")


def on(
    backends: tuple[str, ...], models: tuple[str, ...] | None = None
) -> tuple[tuple[str, tuple[str, ...] | None], ...]:
    return tuple((b, models) for b in backends)


TUNING: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant(
            "sdpa",
            "attention through torch's scaled_dot_product_attention: Keras ViT's MultiHeadAttention subclass "
            "(torch backend); native BERT attn_implementation='sdpa'",
            (("torch", ("vit",)), ("native-torch", ("bert",))),
            issue="15, 13",
        ),
        Variant(
            "attention-dropout-0",
            "ViT's attention dropout 0 instead of 0.1: Keras MultiHeadAttention then calls "
            "ops.dot_product_attention (fused) instead of its einsum path",
            on(KERAS3_BACKENDS, ("vit",)),
        ),
        Variant(
            "fused-attention",
            "keras-hub Gemma/Mistral attention through the fused ops.dot_product_attention "
            "(keras-hub 0.32's own choice) instead of keras-nlp 0.8.2's einsum path",
            on(KERAS3_BACKENDS, ("gemma", "mistral", "gemma_2b")),
            issue="13",
        ),
        Variant(
            "matmul-high",
            "torch.set_float32_matmul_precision('high') before the model is built (TF32 on a GPU): PyTorch's "
            "float32 matmuls at JAX's and TensorFlow's default precision, for a like-for-like comparison",
            on(("torch", "native-torch")),
        ),
        Variant(
            "matmul-highest",
            "full-FP32 float32 matmuls before the model is built (JAX's jax_default_matmul_precision 'highest', "
            "TensorFlow's tensor-float-32 off): JAX and TensorFlow at PyTorch's default precision, like for like",
            on(("jax", "tensorflow", "keras2")),
        ),
        # ViT's reference data is the same on every backend: arrays in memory (the TensorFlow env has no torch). The
        # published torch DataLoader is loader-workers-0, on the backends whose env has torch (JAX's has it for this).
        Variant(
            "loader-workers-N",
            "ViT's data from a torch DataLoader of random tensors with N worker processes "
            "(published: N=0) instead of arrays in memory",
            on(("jax", "torch", "native-torch"), ("vit",)),
        ),
    )
}


# The precision variants: the float32 matmul precision each sets (bench/measure/frameworks.py apply_precision_variant),
# and the mode it gives on a GPU of TF32 tensor cores, which is the other frameworks' default there
# (bench/judge/same_work.py).
PRECISION_VARIANTS = {"matmul-high": "high", "matmul-highest": "highest"}
PRECISION_VARIANT_MODE = {"matmul-high": "tf32", "matmul-highest": "float32"}


def tuning_variant(name: str) -> Variant | None:
    """The tuning variant a name means (`loader-workers-4` -> loader-workers-N), or None."""
    if LOADER_WORKERS.match(name):
        return TUNING["loader-workers-N"]
    return TUNING.get(name) if name != "loader-workers-N" else None


def reference_variant(backend: str) -> str:
    """What a tuning variant is compared with on this backend: its first own variant (default, or eager)."""
    return get_backend(backend).variants[0]


def is_tuning(name: str) -> bool:
    return tuning_variant(name) is not None


def loader_workers(name: str) -> int | None:
    """N of `loader-workers-N`; None for every other variant (data from arrays in memory)."""
    match = LOADER_WORKERS.match(name)
    return int(match.group(1)) if match else None


def check(backend: str, model: str, task: str, variant: str) -> None:
    """Raise a one-line BenchError unless `variant` runs on this cell: the backend's own variant, or a tuning
    variant that applies here (the error names where it applies)."""
    b = get_backend(backend)
    if variant in b.variants:
        return
    tuning = tuning_variant(variant)
    if tuning is None:
        valid = ", ".join(b.variants) + "; tuning variants: " + ", ".join(TUNING)
        raise BenchError(f"unknown variant {variant!r} for {backend}; valid variants: {valid}")
    if not tuning.applies(backend, model, task):
        raise BenchError(
            f"variant {variant!r} does not apply to {backend} {model} {task}: it applies to {tuning.where()}"
        )


def known(variant: str) -> bool:
    from bench.catalogue.backends import all_variants

    return variant in all_variants() or is_tuning(variant)


def all_names() -> tuple[str, ...]:
    from bench.catalogue.backends import all_variants

    return (*all_variants(), *TUNING)


def applies(variant: str, backend: str, model: str, task: str) -> bool:
    """A tuning variant that applies to this cell (a backend's own variants answer False: they are its own)."""
    tuning = tuning_variant(variant)
    return tuning is not None and tuning.applies(backend, model, task)
