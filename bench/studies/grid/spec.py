"""What the inference grid is: models, columns, grids and the NA rules. Stdlib only (the orchestrator, the report
and every env read it).

Every model is built from its transformers config with seeded random weights (no download), dropout 0 on every
framework: inference never drops, and Keras's MultiHeadAttention takes its slow einsum path whenever dropout > 0
(keras-hub's BERT defaults to 0.1), which would time a different kernel than the other columns run.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from bench.base.errors import BenchError
from bench.catalogue.backends import lookup

# The published grid (HF, Oct 2019): batch 1, 2, 4, 8 x sequence length 8 ... 1024, 30 repeats, mean.
PUBLISHED_BATCHES = (1, 2, 4, 8)
PUBLISHED_LENGTHS = (8, 64, 128, 256, 512, 1024)
SEED = 0
TASK = "forward"  # the result files' task: one forward pass, no gradient


@dataclass(frozen=True)
class GridModel:
    name: str
    display: str
    config_class: str  # transformers config class
    torch_class: str  # transformers PyTorch model class (the source of the weights)
    tf_class: str  # transformers 4.57 TensorFlow twin
    config: dict[str, Any]  # the published model's size (defaults of the config class otherwise)
    tiny: dict[str, Any]  # the smoke test's size
    dropout_keys: tuple[str, ...]  # config keys set to 0
    max_positions: int | None  # longest sequence the model's position table holds; None: relative positions
    keras_class: str | None = None  # keras-hub 0.32 backbone
    keras_converter: bool = False  # keras-hub converts a transformers folder (model.safetensors + config.json)
    keras_na: str | None = None  # why there is no Keras 3 column
    weight_prefix: str = ""  # key prefix of the hub checkpoints (keras-hub's converter reads keys with it)

    def hf_config(self, size: str) -> dict[str, Any]:
        values = dict(self.config if size == "full" else self.tiny)
        values.update({key: 0.0 for key in self.dropout_keys})
        return values

    def why_na(self, column: Column, length: int) -> str | None:
        """Why this (model, column, length) point cannot exist, or None."""
        if self.max_positions is not None and length > self.max_positions:
            return f"sequence length {length} is above {self.display}'s {self.max_positions} positions"
        if column.family == "keras" and self.keras_class is None:
            return self.keras_na or f"keras-hub has no {self.display}"
        return None


_BERT_DROPOUT = ("hidden_dropout_prob", "attention_probs_dropout_prob")
_TINY = dict(vocab_size=1000)
# roberta-base's config: 514 positions (2 taken by the padding offset), one token type, pad id 1.
_ROBERTA = dict(
    max_position_embeddings=514, type_vocab_size=1, pad_token_id=1, bos_token_id=0, eos_token_id=2, layer_norm_eps=1e-5
)
_GPT2 = GridModel(
    "gpt2",
    "GPT-2 (124M)",
    "GPT2Config",
    "GPT2Model",
    "TFGPT2Model",
    {},
    dict(_TINY, n_embd=32, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0),
    ("resid_pdrop", "embd_pdrop", "attn_pdrop"),
    1024,
    "GPT2Backbone",
    True,
)

MODELS: dict[str, GridModel] = {
    m.name: m
    for m in (
        # keras-hub's BertBackbone computes GELU's tanh approximation (transformers' "gelu_new"), BERT's config the
        # exact GELU: so that every framework computes one function, the grid's BERT uses the approximation (same cost).
        GridModel(
            "bert",
            "BERT base",
            "BertConfig",
            "BertModel",
            "TFBertModel",
            dict(hidden_act="gelu_new"),
            dict(
                _TINY,
                hidden_size=32,
                num_hidden_layers=2,
                num_attention_heads=2,
                intermediate_size=64,
                hidden_act="gelu_new",
            ),
            _BERT_DROPOUT,
            512,
            "BertBackbone",
            True,
        ),
        GridModel(
            "distilbert",
            "DistilBERT base",
            "DistilBertConfig",
            "DistilBertModel",
            "TFDistilBertModel",
            {},
            dict(_TINY, dim=32, n_layers=2, n_heads=2, hidden_dim=64),
            ("dropout", "attention_dropout"),
            512,
            "DistilBertBackbone",
            True,
            weight_prefix="distilbert.",
        ),
        _GPT2,
        replace(_GPT2, name="distilgpt2", display="DistilGPT-2", config=dict(n_layer=6), tiny=dict(_GPT2.tiny, n_layer=1)),
        GridModel(
            "roberta",
            "RoBERTa base",
            "RobertaConfig",
            "RobertaModel",
            "TFRobertaModel",
            dict(vocab_size=50265, **_ROBERTA),
            dict(_TINY, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, **_ROBERTA),
            _BERT_DROPOUT,
            512,
            "RobertaBackbone",
            True,
            weight_prefix="roberta.",
        ),
        # xlnet-base-cased (XLNetConfig's defaults are the large model); relative positions: no length limit.
        GridModel(
            "xlnet",
            "XLNet base",
            "XLNetConfig",
            "XLNetModel",
            "TFXLNetModel",
            dict(d_model=768, n_layer=12, n_head=12, d_inner=3072),
            dict(_TINY, d_model=32, n_layer=2, n_head=2, d_inner=64),
            ("dropout",),
            None,
            "XLNetBackbone",
            False,
        ),
        # xlm-mlm-en-2048 is XLMConfig's default: 2048 wide, 12 layers, 16 heads, 512 positions.
        GridModel(
            "xlm",
            "XLM (mlm-en-2048)",
            "XLMConfig",
            "XLMModel",
            "TFXLMModel",
            {},
            dict(_TINY, emb_dim=32, n_layers=2, n_heads=2),
            ("dropout", "attention_dropout"),
            512,
            None,
            keras_na="keras-hub 0.32 has no XLM model",
        ),
    )
}


@dataclass(frozen=True)
class Column:
    name: str  # the result files' variant
    display: str
    env: str  # the env (.venvs/<env>) its worker runs in
    family: str  # torch, tf (transformers' TF classes) or keras
    framework: str  # the Device (bench/measure/frameworks.py) that syncs it
    group: str  # "pytorch" or "tensorflow" for the published PyTorch/TensorFlow comparison, else ""
    first_contains: str


COLUMNS: dict[str, Column] = {
    c.name: c
    for c in (
        Column("torch-eager", "PyTorch eager", "native-torch", "torch", "torch", "pytorch", "the first forward pass"),
        Column(
            "torch-traced",
            "PyTorch traced (TorchScript, legacy)",
            "native-torch",
            "torch",
            "torch",
            "",
            "torch.jit.trace + the first forward pass",
        ),
        Column(
            "torch-compile",
            "PyTorch torch.compile",
            "native-torch",
            "torch",
            "torch",
            "",
            "dynamo capture + inductor compile (where this shape needs one: the first point, and the first batch above 1; the graph has dynamic sizes) + the first forward pass",
        ),
        Column(
            "tf-function",
            "TensorFlow (tf.function)",
            "tf-transformers",
            "tf",
            "tensorflow",
            "tensorflow",
            "tf.function trace + the first forward pass",
        ),
        Column(
            "tf-xla",
            "TensorFlow XLA (jit_compile)",
            "tf-transformers",
            "tf",
            "tensorflow",
            "",
            "trace + XLA compile + the first forward pass",
        ),
        Column("keras-jax", "Keras 3 (JAX)", "jax", "keras", "jax", "", "trace + XLA compile + the first forward pass"),
        Column(
            "keras-tensorflow",
            "Keras 3 (TensorFlow)",
            "tensorflow",
            "keras",
            "tensorflow",
            "",
            "tf.function trace + the first forward pass",
        ),
        Column("keras-torch", "Keras 3 (PyTorch)", "torch", "keras", "torch", "", "the first forward pass"),
    )
}
REFERENCE_COLUMN = "torch-eager"  # the weights' source: every other column's output is compared with its output


@dataclass(frozen=True)
class Grid:
    """Which (batch, length) points run and how many timed repeats each gets.

    Repeats are adaptive: every column of a point gets at least `min_repeats`, and more (up to `max_repeats`)
    while the point's timed repeats have taken less than `point_cap_s` in all."""

    name: str
    batches: tuple[int, ...]
    lengths: tuple[int, ...]
    min_repeats: int
    max_repeats: int
    point_cap_s: float | None
    max_tokens_above_batch1: int | None = None  # batch x length cap for batches above 1 (None: none)
    size: str = "full"  # model size: "full" or "tiny"
    # Untimed calls after the first: none unless a call still compiles (then up to max_warmup), as published: the
    # first call (trace, compile) apart, then the repeats. One more untimed call per column cost the default grid
    # 150 s of its 30 minutes on the 2-core machine.
    warmup: int = 0
    max_warmup: int = 3

    @property
    def profile(self) -> str:
        """Its results' profile, and their folder under results/grid/."""
        return f"grid-{self.name}"

    def points(self) -> list[tuple[int, int]]:
        return [
            (b, n)
            for b in self.batches
            for n in self.lengths
            if b == 1 or self.max_tokens_above_batch1 is None or b * n <= self.max_tokens_above_batch1
        ]


GRIDS: dict[str, Grid] = {
    g.name: g
    for g in (
        Grid("full", PUBLISHED_BATCHES, PUBLISHED_LENGTHS, 30, 30, None),
        # This project's 2-core CPU within 30 minutes: every length at batch 1, the shortest length at batch 2 and 8
        # (batch x length <= 64; batch 4 left out): every point costs each compiling column a compile before any
        # timing. The first run with batch 4 and a 6 s cap took 39 minutes (results/grid/NOTES.md).
        Grid("cpu", (1, 2, 8), PUBLISHED_LENGTHS, 5, 30, 3.0, max_tokens_above_batch1=64),
        # The length sweep (`make grid GRID=lengths MODEL=bert,gpt2`): every published length at the smallest
        # and largest published batch, no batch x length cap (the cpu grid stops at batch 8 x 8); 5-30 repeats with
        # a 6 s cap, as its committed run had.
        Grid("lengths", (1, 8), PUBLISHED_LENGTHS, 5, 30, 6.0),
        # A quick real subset: batch 1 at three lengths.
        Grid("sample", (1,), (8, 128, 512), 5, 30, 6.0),
        # The tests: tiny models, two points.
        Grid("smoke", (1, 2), (8,), 2, 3, 1.0, size="tiny"),
    )
}
DEFAULT_GRID = "cpu"


def get_grid(name: str) -> Grid:
    return lookup(GRIDS, name, "grid")


def select(names: list[str] | None, table: dict, what: str) -> list[str]:
    for name in names or []:
        if name not in table:
            raise BenchError(f"unknown {what} {name!r}; valid {what}s: {', '.join(table)}")
    return list(names or table)


def columns_for_envs(envs: list[str] | None) -> list[str]:
    """The columns narrowed by env (`make grid BACKEND=...`) or by column name."""
    if not envs:
        return list(COLUMNS)
    out = [c.name for c in COLUMNS.values() if c.env in envs or c.name in envs]
    unknown = [e for e in envs if e not in {c.env for c in COLUMNS.values()} | set(COLUMNS)]
    if unknown:
        raise BenchError(
            f"unknown grid env or column {unknown[0]!r}; valid: {', '.join(dict.fromkeys([*(c.env for c in COLUMNS.values()), *COLUMNS]))}"
        )
    return out


@dataclass
class Point:
    model: str
    batch: int
    length: int
    columns: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"bs{self.batch}__len{self.length}"
