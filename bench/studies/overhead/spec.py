"""What the framework-overhead study is: its sizes, benchmarks, eight columns, the published figures and the
findings it re-tests. Stdlib only (the orchestrator, the report and both envs' workers read it).

The workload is keras-team/keras issue #22561's and pull request #22660's (bench/data/keras_overhead_2026.csv
has their figures and sources): a small CNN forward (113,866 parameters: the issue's "~114K"), a 2-layer causal
LM forward and its 32-token generate, at batch 4, sequence length 64. The LM's width and vocabulary are not
published beside its "~2.1M parameters"; hidden 256 with a 1,000-token vocabulary and 4 heads of 64 (the head
width of the script's stored version) gives 2,093,032, so that is the size here. Its generate is the script's: no
KV cache, each new token re-runs the whole forward over a sliding window of the last 64 ids and appends the
argmax, so generate is 32 full forwards and its per-call overhead counts 32 times.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache

from bench.base.published import DATA_DIR
from bench.catalogue.backends import lookup

PUBLISHED_CSV = DATA_DIR / "keras_overhead_2026.csv"
SEED = 0
LAYER_NORM_EPSILON = 1e-5  # one value on every framework (Keras's default is 1e-3, PyTorch's 1e-5)
# under the results folder; bench/record/results.py keeps it out of the published table's results
STUDY_DIR = "overhead"


@dataclass(frozen=True)
class Size:
    """One run's shapes and window plan. `default`: the published workload, 10 warm-up and 50 timed calls per
    column as published (warm-up extended up to `max_warmup` while a call still compiles); `smoke`: the same code
    at toy sizes for the tests."""

    name: str
    batch: int
    image_size: int
    channels: tuple[int, int, int]  # the CNN's three convolutions' output channels
    classes: int
    vocabulary: int
    hidden: int
    heads: int
    layers: int
    sequence: int
    new_tokens: int
    warmup: int
    timed: int
    max_warmup: int


SIZES = {
    s.name: s
    for s in (
        Size("default", 4, 32, (64, 64, 128), 10, 1000, 256, 4, 2, 64, 32, 10, 50, 20),
        Size("smoke", 2, 8, (4, 4, 8), 3, 50, 16, 2, 1, 8, 3, 1, 3, 3),
        # the published workload with fewer calls: a release sweep runs it in many processes (bench/studies/sweep)
        Size("sweep", 4, 32, (64, 64, 128), 10, 1000, 256, 4, 2, 64, 32, 1, 5, 5),
    )
}
DEFAULT_SIZE = "default"


@dataclass(frozen=True)
class Benchmark:
    name: str  # the published CSV's benchmark
    display: str
    task: str  # the result files' task: forward or generate
    model: str  # cnn or llm


BENCHMARKS = {
    b.name: b
    for b in (
        Benchmark("cnn_forward", "CNN forward", "forward", "cnn"),
        Benchmark("llm_forward", "LLM forward", "forward", "llm"),
        Benchmark("llm_generate_32", "LLM generate (32 tokens)", "generate", "llm"),
    )
}


@dataclass(frozen=True)
class Column:
    name: str  # the published CSV's column, the result files' variant
    display: str
    env: str  # the env (.venvs/<env>) its worker runs in: the plain framework shares the Keras column's
    framework: str  # torch or jax: the Device that syncs it (bench/measure/frameworks.py)
    keras: bool
    compiled: bool
    baseline: str | None  # the plain-framework column a Keras column's overhead is measured against
    first_contains: str


COLUMNS = {
    c.name: c
    for c in (
        Column("pure_torch_eager", "PyTorch eager", "torch", "torch", False, False, None, "the first call"),
        Column(
            "pure_torch_compile",
            "PyTorch torch.compile",
            "torch",
            "torch",
            False,
            True,
            None,
            "dynamo capture + inductor compile + the first call",
        ),
        Column(
            "keras_torch_eager",
            "Keras 3 (torch) eager",
            "torch",
            "torch",
            True,
            False,
            "pure_torch_eager",
            "the first call",
        ),
        Column(
            "keras_torch_compile",
            "Keras 3 (torch) torch.compile",
            "torch",
            "torch",
            True,
            True,
            "pure_torch_compile",
            "dynamo capture + inductor compile + the first call",
        ),
        Column(
            "pure_jax_eager",
            "JAX eager",
            "jax",
            "jax",
            False,
            False,
            None,
            "the first call (JAX compiles each primitive on first use)",
        ),
        Column(
            "pure_jax_jit",
            "JAX jit (generate: jit + scan)",
            "jax",
            "jax",
            False,
            True,
            None,
            "trace + XLA compile + the first call",
        ),
        Column(
            "keras_jax_eager",
            "Keras 3 (JAX) eager",
            "jax",
            "jax",
            True,
            False,
            "pure_jax_eager",
            "the first call (JAX compiles each primitive on first use)",
        ),
        Column(
            "keras_jax_jit",
            "Keras 3 (JAX) jit (generate: jit + scan)",
            "jax",
            "jax",
            True,
            True,
            "pure_jax_jit",
            "trace + XLA compile + the first call",
        ),
    )
}
REFERENCE_COLUMN = "pure_torch_eager"  # every other column's output is compared with its output
ENVS = ("torch", "jax")
# Two columns' forward outputs agree when their largest difference is within this, relative to the reference's
# largest magnitude (float32 sums in another order); generate's token ids must be equal.
TOLERANCE = 1e-4


def get_size(name: str) -> Size:
    return lookup(SIZES, name, "overhead size")


@cache
def published() -> dict[tuple[str, str, str], float]:
    """(source, benchmark, column) -> published ms per call."""
    with PUBLISHED_CSV.open() as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    return {(r["source"], r["benchmark"], r["column"]): float(r["ms"]) for r in rows}


SOURCES = {"issue-22561": "keras#22561 (Keras 3.15.0)", "pr-22660": "keras#22660 (its branch)"}


@dataclass(frozen=True)
class Finding:
    """A published claim as a ratio of two columns' ms per call on one benchmark ("about `claimed` x")."""

    text: str
    benchmark: str
    numerator: str
    denominator: str
    claimed: float
    source: str  # where the claim's figures are (the ratio is recomputed from them)


FINDINGS = (
    Finding(
        "Keras[torch] eager is about 2x pure torch eager on LLM generate",
        "llm_generate_32",
        "keras_torch_eager",
        "pure_torch_eager",
        2.0,
        "pr-22660",
    ),
    Finding(
        "pure JAX eager generate is about 20x pure torch eager",
        "llm_generate_32",
        "pure_jax_eager",
        "pure_torch_eager",
        20.0,
        "pr-22660",
    ),
    Finding(
        "Keras[jax] jit is about 1.4x pure JAX jit (LLM forward)",
        "llm_forward",
        "keras_jax_jit",
        "pure_jax_jit",
        1.4,
        "pr-22660",
    ),
    Finding(
        "Keras[jax] jit is about 1.4x pure JAX jit (LLM generate)",
        "llm_generate_32",
        "keras_jax_jit",
        "pure_jax_jit",
        1.4,
        "pr-22660",
    ),
    Finding(
        "Keras[torch] eager is about 4.8x pure torch eager on LLM generate (before the PR)",
        "llm_generate_32",
        "keras_torch_eager",
        "pure_torch_eager",
        4.8,
        "issue-22561",
    ),
    Finding(
        "torch.compile is slower than eager on LLM generate (about 3x)",
        "llm_generate_32",
        "pure_torch_compile",
        "pure_torch_eager",
        3.0,
        "issue-22561",
    ),
    Finding(
        "JAX jit is about 6x faster than JAX eager on LLM generate",
        "llm_generate_32",
        "pure_jax_eager",
        "pure_jax_jit",
        6.0,
        "issue-22561",
    ),
)


def published_ratio(finding: Finding) -> float | None:
    figures = published()
    a = figures.get((finding.source, finding.benchmark, finding.numerator))
    b = figures.get((finding.source, finding.benchmark, finding.denominator))
    return a / b if a and b else None
