"""The plan's memory arithmetic: which parameters a cell holds and trains, their bytes, and an activation estimate.

Pure functions of the parameter counts (bench/plan/counts.py) and the model's shape; stdlib only, tested without
any env. Everything here is a figure of the model's memory, not the framework's own (CUDA context, allocator
slack, compiled kernels: typically 0.5-2 GiB more).

What a model holds and trains, and its activation estimate, are the model's own rule, bench/models/<name>/plan.py:
`holding(family, task, counts, shape) -> Holding` and `activations(family, task, batch, shape) -> (bytes, formula
name)`, with `ACTIVATION_FORMULAS` (name -> what it computes) for a formula of its own. This module has what the
rules share (transformer layers, LoRA adapters, the causal LMs' rule) and turns a holding into bytes:

- weights: every parameter the cell's process holds, at the holding's dtype (bfloat16 for the LLMs, else float32);
  LoRA adapters are float32 on Keras (EinsumDense.enable_lora) and in the base dtype on native PyTorch (peft 0.9.0).
- gradients: one per trainable parameter, at the trainable weights' dtype; none for predict/generate.
- optimizer: Adam/AdamW keep two moments per trainable parameter (float32, or the adapters' dtype); none otherwise.
- activations: an ESTIMATE, the model's formula for the cell's batch and sequence/image size.
"""
from __future__ import annotations

import importlib
import importlib.util
import math
from dataclasses import asdict, dataclass
from types import ModuleType

from bench.base.errors import BenchError

GIB = 2**30
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
ADAM_BYTES = 8  # two float32 moments per trainable parameter
LORA_BYTES = 4

# The formulas several models use; a model's plan.py adds its own in its ACTIVATION_FORMULAS.
ACTIVATION_FORMULAS = {
    "transformer": "fit: sum over layers of tokens x (15 H + 4.75 I + 5 heads x span) x dtype bytes / 2 "
    "(Korthikanti et al. 2022, 34 s b h + 5 a s^2 b, with the MLP scaled to width I); predict: the largest layer's "
    "live tensors, tokens x max(4 H + 2 heads x span, 2 H + 2 I) x dtype bytes",
    "llm-fit": "transformer fit formula over every layer (LoRA still back-propagates through all of them) + "
    "float32 logits and their gradient, 2 x batch x seq x vocabulary x 4",
    "llm-generate": "KV cache 2 x layers x batch x generate_length x kv_heads x head_dim x dtype bytes + one step's "
    "float32 logits, batch x vocabulary x 4",
}


@dataclass(frozen=True)
class Holding:
    """What a cell's process holds and trains, as the model's plan rule says."""

    held: int  # parameters the process holds (for a LoRA fit: the frozen base, the adapters not included)
    trained: int  # parameters fit trains; 0 for predict/generate
    dtype: str = "float32"  # the held weights' dtype
    adapters: bool = False  # what trains is LoRA adapters beside the frozen base, held on top of it


@dataclass(frozen=True)
class Figures:
    parameters: int  # every parameter the process holds
    trainable_parameters: int
    weights_bytes: int
    gradients_bytes: int
    optimizer_bytes: int
    activations_bytes: int  # an estimate
    activation_formula: str
    weights_dtype: str

    @property
    def total_bytes(self) -> int:
        return self.weights_bytes + self.gradients_bytes + self.optimizer_bytes + self.activations_bytes

    def to_dict(self) -> dict:
        gib = lambda b: round(b / GIB, 3)
        return {
            **asdict(self),
            "weights_gib": gib(self.weights_bytes),
            "gradients_gib": gib(self.gradients_bytes),
            "optimizer_gib": gib(self.optimizer_bytes),
            "activations_gib": gib(self.activations_bytes),
            "total_bytes": self.total_bytes,
            "memory_gib": gib(self.total_bytes),
        }


def transformer_fit_bytes(tokens: int, hidden: int, inter: int, heads: int, span: int, dtype_bytes: int) -> float:
    return tokens * (15 * hidden + 4.75 * inter + 5 * heads * span) * dtype_bytes / 2


def transformer_live_bytes(tokens: int, hidden: int, inter: int, heads: int, span: int, dtype_bytes: int) -> float:
    return tokens * max(4 * hidden + 2 * heads * span, 2 * hidden + 2 * inter) * dtype_bytes


def lora_parameters(shape, family: str) -> int:
    """LoRA adapters on q_proj and v_proj of every layer, from the shape. peft (native-torch): rank x (in + out)
    per projection (lora_A: in x rank, lora_B: rank x out). Keras (EinsumDense.enable_lora): rank x (the product of
    the kernel's leading dims + its last), the kernel being (heads, hidden, head_dim) or (hidden, heads, head_dim)."""
    r, h, d = shape.lora_rank, shape.hidden_dim, shape.head_dim
    per_layer = 0
    for heads in (shape.num_query_heads, shape.num_key_value_heads):  # q_proj, v_proj
        per_layer += r * (heads * h + d) if family == "keras" else r * (h + heads * d)
    return shape.num_layers * per_layer


def causal_lm_holding(family: str, task: str, counts: dict[str, int], shape) -> Holding:
    """The causal LMs' rule (bench/models/llm.py's shape): the whole model in its dtype; fit trains LoRA adapters."""
    held = counts["causal_lm"] if family == "native-torch" else counts["backbone"]
    fit = task == "fit"
    return Holding(held, lora_parameters(shape, family) if fit else 0, shape.dtype, adapters=fit)


def causal_lm_activations(family: str, task: str, batch: int, shape) -> tuple[float, str]:
    dt = DTYPE_BYTES[shape.dtype]
    if task == "fit":
        seq = shape.fit_sequence_length
        layer = transformer_fit_bytes(
            batch * seq, shape.hidden_dim, shape.intermediate_dim, shape.num_query_heads, seq, dt
        )
        return shape.num_layers * layer + 2 * batch * seq * shape.vocabulary_size * 4, "llm-fit"
    kv = 2 * shape.num_layers * batch * shape.generate_length * shape.num_key_value_heads * shape.head_dim * dt
    return kv + batch * shape.vocabulary_size * 4, "llm-generate"


def plan_rule(model: str) -> ModuleType:
    """The model's plan rule, bench/models/<model>/plan.py; a BenchError naming that file when it has none."""
    name = f"bench.models.{model}.plan"
    if importlib.util.find_spec(name) is None:
        raise BenchError(f"no plan rule for model {model!r}: bench/models/{model}/plan.py (see docs/ADDING_A_MODEL.md)")
    return importlib.import_module(name)


def activation_formulas(models) -> dict[str, str]:
    """Formula name -> what it computes: the shared ones and those of these models' rules."""
    out = dict(ACTIVATION_FORMULAS)
    for model in models:
        if importlib.util.find_spec(f"bench.models.{model}.plan") is not None:
            out.update(getattr(plan_rule(model), "ACTIVATION_FORMULAS", {}))
    return out


def figures(model: str, family: str, task: str, batch: int, counts: dict[str, int], shape) -> Figures:
    rule = plan_rule(model)
    h = rule.holding(family, task, counts, shape)
    dtype_bytes = DTYPE_BYTES[h.dtype]
    if h.adapters:  # a frozen base and the adapters, which are what trains
        grad_bytes = (
            LORA_BYTES if family == "keras" else dtype_bytes
        )  # native: adapters and Adam moments in the base dtype
        weights, adam_bytes = h.held * dtype_bytes + h.trained * grad_bytes, 2 * grad_bytes
    else:
        weights, grad_bytes, adam_bytes = h.held * dtype_bytes, dtype_bytes, ADAM_BYTES
    act, formula = rule.activations(family, task, batch, shape)
    return Figures(
        parameters=h.held + (h.trained if h.adapters else 0),
        trainable_parameters=h.trained,
        weights_bytes=int(weights),
        gradients_bytes=h.trained * grad_bytes,
        optimizer_bytes=h.trained * adam_bytes,
        activations_bytes=int(math.ceil(act)),
        activation_formula=formula,
        weights_dtype=h.dtype,
    )


def fits(total_gib: float, capacity_gib: float | None) -> bool | None:
    """Whether an estimate fits a device of this capacity; None when the capacity is unknown."""
    return None if capacity_gib is None else total_gib <= capacity_gib
