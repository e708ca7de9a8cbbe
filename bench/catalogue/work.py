"""The work of one step: floating-point operations and the least bytes it must move, counted from the model's shape.

Pure arithmetic of the shape (stdlib only, nothing built, nothing allocated, microseconds per cell: no cache is
needed). Each model's rule is its own `bench/models/<name>/work.py`: `work(family, task, batch, shape) -> Work`
(a model without one has no count, and the report says so); this module has what the rules share.

What is counted (docs/ROOFLINE.md):

- FLOPs are *model* FLOPs of the matrix products and convolutions, 2 per multiply-add, as `torch.utils.flop_counter`
  counts them (PaLM's MFU convention): elementwise work (norms, softmax, activations, the optimizer's update) is
  left out, and work a framework adds (padding a prompt to its full length, recomputation) is not the model's.
  Attention scores are counted over the whole span the model computes (a causal mask does not halve an einsum).
- A training step is what it really computes: the forward pass, every activation gradient the trained parameters
  need, and a weight gradient for each parameter that trains. A fully trained model: 3 x forward, less the first
  layer's input gradient (the inputs need none). A LoRA fit: the frozen weights get an activation gradient only
  (2 x their forward), the adapters a weight gradient too.
- Bytes are the floor a step cannot go under: every weight read once per forward pass (a decode step reads them
  all for one token), a fit's gradients written and read and Adam's two moments read and written, and for decode
  the KV cache read. Activations are left out (they could stay on chip), so the floor is a floor.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import asdict, dataclass
from types import ModuleType

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
# A fit of float32 weights with Adam(W) moves, beyond reading each weight: its gradient written and read (2 x 4),
# the two moments read and written (4 x 4) and the weight written (4).
FIT_UPDATE_BYTES_PER_TRAINED = 2 * 4 + 4 * 4 + 4


@dataclass(frozen=True)
class Work:
    """One step's work (a step in the cell's unit: a fit step, a predict batch, a generate call, a denoising step)."""

    flops: float  # model FLOPs of the step (matmuls and convolutions, 2 per multiply-add)
    bytes: float  # the least bytes the step must move
    dtype: str  # what its matrix products compute in: the ceiling MFU is taken against
    formula: str  # which rule counted it, in words (docs/ROOFLINE.md)
    # generate only: forward passes per call (the prefill and each decode step) and the least bytes of one decode
    # step (every weight read once, plus the KV cache), what bandwidth use per token is taken from
    forward_passes: int | None = None
    decode_bytes_per_token: float | None = None
    # where the implementation computes more than the function needs (Keras' merged LoRA kernels): the function's
    # own FLOPs, what two cells must share to be compared (bench/judge/same_work.py); None: `flops` is both
    function_flops: float | None = None
    # of `flops`, the convolutions' (a framework may compute them in another mode than its matrix products: PyTorch's
    # float32 convolutions take TF32 by default, its matmuls full FP32); None: no convolution
    convolution_flops: float | None = None

    @property
    def intensity(self) -> float:
        """Arithmetic intensity, FLOPs per byte: where the step sits on the roofline."""
        return self.flops / self.bytes if self.bytes else float("inf")

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


def work_rule(model: str) -> ModuleType | None:
    """The model's work rule, bench/models/<model>/work.py; None when it has none."""
    name = f"bench.models.{model}.work"
    return importlib.import_module(name) if importlib.util.find_spec(name) is not None else None


def cell_work(model: str, family: str, task: str, batch: int, shape, settings: dict | None = None) -> Work | None:
    """The work of one step of a cell, or None when the model has no rule (or the rule has no count for the task).

    `settings`: what a measured run recorded (a result's). Where a model's build has changed under a shape (keras-cv's
    StableDiffusion: SD v1's widths in every profile, then the shape's), the rule's `built_shape(family, shape,
    settings)` says which widths that run built, so a result keeps the work it measured."""
    rule = work_rule(model)
    if rule is None:
        return None
    if settings is not None and hasattr(rule, "built_shape"):
        shape = rule.built_shape(family, shape, settings)
    return rule.work(family, task, batch, shape)


# --- transformers ---


def dense_flops(tokens: float, fan_in: int, fan_out: int) -> float:
    """A dense layer applied to `tokens` rows: 2 x tokens x in x out."""
    return 2.0 * tokens * fan_in * fan_out


def attention_flops(queries: float, span: float, heads: int, head_dim: int) -> float:
    """Scores (Q K^T) and their weighted sum (A V) for `queries` query rows over `span` keys each."""
    return 2 * 2.0 * queries * span * heads * head_dim


def encoder_layer_flops(tokens: float, span: float, hidden: int, inter: int, heads: int) -> float:
    """One encoder layer's forward: Q, K, V, O projections, attention over span, a two-matrix MLP."""
    return (
        dense_flops(tokens, hidden, hidden) * 4
        + attention_flops(tokens, span, heads, hidden // heads)
        + dense_flops(tokens, hidden, inter) * 2
    )


# --- causal LMs (bench/models/llm.py's shape): Gemma, Mistral ---


def causal_lm_layer_weights(s) -> int:
    """Matmul weights of one decoder layer: Q, K, V, O and a gated MLP (gate, up, down). Norms left out (they
    are read, but no matmul; counted in causal_lm_parameters)."""
    q = s.hidden_dim * s.num_query_heads * s.head_dim
    kv = 2 * s.hidden_dim * s.num_key_value_heads * s.head_dim
    return q * 2 + kv + 3 * s.hidden_dim * s.intermediate_dim


def causal_lm_parameters(s, tied_embeddings: bool) -> int:
    """Every parameter of the causal LM: embeddings (and an untied output head), layers, RMS norms."""
    head = 0 if tied_embeddings else s.vocabulary_size * s.hidden_dim
    return (
        s.vocabulary_size * s.hidden_dim
        + head
        + s.num_layers * (causal_lm_layer_weights(s) + 2 * s.hidden_dim)
        + s.hidden_dim
    )


def lora_adapter_flops(tokens: float, s) -> float:
    """peft's LoRA on q_proj and v_proj of one layer, forward: x A then (x A) B, rank r."""
    r = s.lora_rank
    return sum(
        dense_flops(tokens, s.hidden_dim, r) + dense_flops(tokens, r, heads * s.head_dim)
        for heads in (s.num_query_heads, s.num_key_value_heads)
    )


def causal_lm_fit(family: str, batch: int, s) -> Work:
    """A LoRA fit step at fit_sequence_length: the frozen model's forward and activation gradients (2 x its forward),
    attention 3 x (both operands of the score products have gradients), the vocabulary projection 2 x. Native
    (peft): the adapters are their own small products, 3 x their forward. Keras (EinsumDense.enable_lora): the
    kernel is merged, kernel + A B, in every call, so the merged q and v kernels get a full weight gradient as well
    (2 x tokens x their size) before it reaches A and B."""
    seq = s.fit_sequence_length
    tokens = batch * seq
    weights = s.num_layers * dense_flops(tokens, 1, causal_lm_layer_weights(s)) + dense_flops(
        tokens, s.hidden_dim, s.vocabulary_size
    )
    attention = s.num_layers * attention_flops(tokens, seq, s.num_query_heads, s.head_dim)
    # the first layer's input is the frozen embedding's output: its q, k, v projections need no input gradient,
    # nor its keys (a frozen projection of it) one: half its scores' product
    first = dense_flops(tokens, s.hidden_dim, (s.num_query_heads + 2 * s.num_key_value_heads) * s.head_dim)
    first += attention_flops(tokens, seq, s.num_query_heads, s.head_dim) / 2  # dK of Q K^T: half of Q K^T and A V
    frozen = 2 * weights - first + 3 * attention
    # the adapters as their own small products (peft), less the first adapters' A: the function's own work
    adapter_flops = 3 * s.num_layers * lora_adapter_flops(tokens, s)
    adapter_flops -= dense_flops(tokens, s.hidden_dim, 2 * s.lora_rank)
    adapted = frozen + adapter_flops
    function_flops = None
    if family == "keras":
        qv = s.hidden_dim * (s.num_query_heads + s.num_key_value_heads) * s.head_dim
        flops = frozen + s.num_layers * dense_flops(tokens, 1, qv)
        function_flops = adapted  # the same function, which Keras computes through merged kernels
        how = "LoRA fit (Keras): 2 x the frozen forward + 3 x attention + the merged q/v kernels' weight gradient"
    else:
        flops = adapted
        how = "LoRA fit (peft): 2 x the frozen forward + 3 x attention + 3 x the adapters' forward"
    dt = DTYPE_BYTES[weights_dtype(s)]
    adapters = (
        s.num_layers
        * s.lora_rank
        * sum(s.hidden_dim + heads * s.head_dim for heads in (s.num_query_heads, s.num_key_value_heads))
    )
    bytes_ = causal_lm_streamed_weights(s) * dt + adapters * FIT_UPDATE_BYTES_PER_TRAINED
    return Work(flops, bytes_, compute_dtype(s), how, function_flops=function_flops)


def causal_lm_forward_flops(batch: int, tokens: int, s, logit_rows: int) -> float:
    """A forward pass of `tokens` new positions per sequence over as many keys (a prefill from an empty cache),
    with logits at `logit_rows` of them."""
    per_token = dense_flops(tokens, 1, s.num_layers * causal_lm_layer_weights(s))
    attend = s.num_layers * attention_flops(tokens, tokens, s.num_query_heads, s.head_dim)
    return batch * (per_token + attend + dense_flops(logit_rows, s.hidden_dim, s.vocabulary_size))


def causal_lm_generate(family: str, batch: int, s) -> Work:
    """One generate call: a prefill of prompt_length tokens, then new_tokens - 1 decode steps (the prefill yields
    the first new token). Each position's logits are counted only where a token is taken from them (the prefill's
    last, every decode step's). Keras-hub pads the prompt to generate_length and prefills all of it: that padding
    is the framework's work, not the model's, and is not counted. Bytes: each forward pass reads every weight the
    step uses (the embedding table only as the output head, when tied), and a decode step at position p reads the
    KV cache of p earlier positions."""
    per_token = dense_flops(1, 1, s.num_layers * causal_lm_layer_weights(s))
    logits = dense_flops(1, s.hidden_dim, s.vocabulary_size)
    prompt, steps = s.prompt_length, s.generate_length - s.prompt_length - 1
    positions = range(prompt, prompt + steps)  # the decode steps' positions (0-based): each attends to p + 1 keys
    def attend(queries, span):
        return s.num_layers * attention_flops(queries, span, s.num_query_heads, s.head_dim)
    prefill = causal_lm_forward_flops(1, prompt, s, logit_rows=1)
    decode = sum(per_token + attend(1, p + 1) + logits for p in positions)
    dt = DTYPE_BYTES[weights_dtype(s)]
    weights = causal_lm_streamed_weights(s) * dt
    kv_per_position = 2 * s.num_layers * s.num_key_value_heads * s.head_dim * dt * batch
    kv = sum(kv_per_position * p for p in positions)
    mean_kv = kv / steps if steps else 0.0
    return Work(
        batch * (prefill + decode),
        weights * (1 + steps) + kv,
        compute_dtype(s),
        "generate: a prefill of the prompt and one forward per new token but the last, logits where a token is taken",
        forward_passes=1 + steps,
        decode_bytes_per_token=(weights + mean_kv) / batch,
    )


def causal_lm_streamed_weights(s) -> int:
    """The parameters one forward pass reads: a tied embedding table is read as the output head; an untied one is
    only looked up (a few rows) and its output head, the same size, is read instead. Either way: the tied count."""
    return causal_lm_parameters(s, tied_embeddings=True)


def weights_dtype(s) -> str:
    return "float32" if s.dtype == "mixed_bfloat16" else s.dtype


def compute_dtype(s) -> str:
    return "bfloat16" if s.dtype in ("bfloat16", "mixed_bfloat16") else "float32"


def causal_lm_work(family: str, task: str, batch: int, s) -> Work | None:
    """The causal LMs' rule (bench/models/{gemma,mistral}/work.py use it as theirs)."""
    if task == "fit":
        return causal_lm_fit(family, batch, s)
    if task == "generate":
        return causal_lm_generate(family, batch, s)
    return None


# --- convolutions ---


def conv_flops(side_out: int, c_in: int, c_out: int, kernel: int = 3, batch: int = 1) -> float:
    """A 2-D convolution producing side_out x side_out outputs: 2 x outputs x k^2 x in x out."""
    return 2.0 * batch * side_out * side_out * kernel * kernel * c_in * c_out


def conv_parameters(c_in: int, c_out: int, kernel: int = 3) -> int:
    return kernel * kernel * c_in * c_out + c_out
