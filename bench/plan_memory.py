"""The plan's memory arithmetic: which parameters a cell holds and trains, their bytes, and an activation estimate.

Pure functions of the parameter counts (bench/plan_counts.py) and the model's shape; stdlib only, tested without
any env. Everything here is a figure of the model's memory, not the framework's own (CUDA context, allocator
slack, compiled kernels: typically 0.5-2 GiB more).

- weights: every parameter the cell's process holds, at its dtype (bfloat16 for the LLMs, float32 otherwise);
  LoRA adapters are float32 (Keras and peft both keep them so).
- gradients: one per trainable parameter, at the trainable weights' dtype; none for predict/generate.
- optimizer: Adam/AdamW keep two float32 moments per trainable parameter (8 bytes); none for predict/generate.
- activations: an ESTIMATE, one rough formula per model family (ACTIVATION_FORMULAS), for the cell's batch and
  sequence/image size.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

GIB = 2**30
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
ADAM_BYTES = 8  # two float32 moments per trainable parameter
LORA_BYTES = 4  # Keras LoRA adapters are float32 (EinsumDense.enable_lora); native ones take the base dtype (peft 0.9.0)
# SD v1's widths, which keras-cv fixes whatever the shape says (only the resolution follows it).
KERAS_CV_SD = {"unet": (320, 640, 1280, 1280), "unet_layers": 2, "unet_heads": 8, "vae": (128, 256, 512, 512)}

ACTIVATION_FORMULAS = {
    "transformer": "fit: sum over layers of tokens x (15 H + 4.75 I + 5 heads x span) x dtype bytes / 2 "
    "(Korthikanti et al. 2022, 34 s b h + 5 a s^2 b, with the MLP scaled to width I); predict: the largest layer's "
    "live tensors, tokens x max(4 H + 2 heads x span, 2 H + 2 I) x dtype bytes",
    "llm-fit": "transformer fit formula over every layer (LoRA still back-propagates through all of them) + "
    "float32 logits and their gradient, 2 x batch x seq x vocabulary x 4",
    "llm-generate": "KV cache 2 x layers x batch x generate_length x kv_heads x head_dim x dtype bytes + one step's "
    "float32 logits, batch x vocabulary x 4",
    "vit": "SAM's ViT image encoder as a transformer: tokens = batch x (image / patch)^2, span = window^2 in windowed "
    "layers and every token in the global ones",
    "conv": "fit: batch x sum over resolution levels of channels x side^2 x 6 stored tensors per resnet layer x 4 bytes, "
    "+ mid-block attention scores; predict: the largest level's live tensors (4 per level) or its attention "
    "scores and probabilities, batch x heads x tokens^2 x 4 x 2, whichever is larger, over the UNet and the VAE decoder",
}


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


def lora_parameters(shape, family: str) -> int:
    """LoRA adapters on q_proj and v_proj of every layer, from the shape. peft (native-torch): rank x (in + out)
    per projection (lora_A: in x rank, lora_B: rank x out). Keras (EinsumDense.enable_lora): rank x (the product of
    the kernel's leading dims + its last), the kernel being (heads, hidden, head_dim) or (hidden, heads, head_dim)."""
    r, h, d = shape.lora_rank, shape.hidden_dim, shape.head_dim
    per_layer = 0
    for heads in (shape.num_query_heads, shape.num_key_value_heads):  # q_proj, v_proj
        per_layer += r * (heads * h + d) if family == "keras" else r * (h + heads * d)
    return shape.num_layers * per_layer


def held_and_trained(model: str, family: str, task: str, counts: dict[str, int], shape) -> tuple[int, int]:
    """(parameters the cell's process holds, parameters it trains) from its implementation's counted parts."""
    fit = task == "fit"
    if model == "bert":
        held = counts["classifier"] if family == "native-torch" else counts["backbone"] + shape.hidden_dim * shape.num_classes + shape.num_classes
        return held, held if fit else 0
    if model in ("gemma", "mistral"):
        held = counts["causal_lm"] if family == "native-torch" else counts["backbone"]
        return held, lora_parameters(shape, family) if fit else 0
    if model == "sam":  # fit trains the image encoder; the whole SAM is built either way
        return counts["sam"], counts["image_encoder"] if fit else 0
    if model == "stable_diffusion":
        if family == "native-torch":
            return (counts["vae"], counts["vae_encoder"]) if fit else (counts["unet"] + counts["vae"] + counts["text_encoder"], 0)
        if fit:  # keras-cv's ImageEncoder alone (its fit model stops 3 layers short of the end: a 72-parameter conv)
            return counts["image_encoder"], counts["image_encoder"]
        return counts["text_encoder"] + counts["diffusion_model"] + counts["decoder"], 0
    raise ValueError(f"no plan rule for model {model!r}")


def transformer_fit_bytes(tokens: int, hidden: int, inter: int, heads: int, span: int, dtype_bytes: int) -> float:
    return tokens * (15 * hidden + 4.75 * inter + 5 * heads * span) * dtype_bytes / 2


def transformer_live_bytes(tokens: int, hidden: int, inter: int, heads: int, span: int, dtype_bytes: int) -> float:
    return tokens * max(4 * hidden + 2 * heads * span, 2 * hidden + 2 * inter) * dtype_bytes


def activations(model: str, family: str, task: str, batch: int, shape) -> tuple[float, str]:
    """(estimated activation bytes, the name of the formula used)."""
    fit = task == "fit"
    if model == "bert":
        f = transformer_fit_bytes if fit else transformer_live_bytes
        per_layer = f(batch * shape.sequence_length, shape.hidden_dim, shape.intermediate_dim, shape.num_heads, shape.sequence_length, 4)
        return per_layer * (shape.num_layers if fit else 1), "transformer"
    if model in ("gemma", "mistral"):
        dt = DTYPE_BYTES[shape.dtype]
        if fit:
            seq = shape.fit_sequence_length
            layer = transformer_fit_bytes(batch * seq, shape.hidden_dim, shape.intermediate_dim, shape.num_query_heads, seq, dt)
            return shape.num_layers * layer + 2 * batch * seq * shape.vocabulary_size * 4, "llm-fit"
        kv = 2 * shape.num_layers * batch * shape.generate_length * shape.num_key_value_heads * shape.head_dim * dt
        return kv + batch * shape.vocabulary_size * 4, "llm-generate"
    if model == "sam":
        side = shape.image_size // shape.patch_size
        tokens = batch * side * side
        spans = [side * side if i in shape.global_attention_layers else shape.window_size**2 for i in range(shape.num_layers)]
        args = (tokens, shape.hidden_dim, shape.mlp_dim, shape.num_heads)
        if fit:
            return sum(transformer_fit_bytes(*args, span, 4) for span in spans), "vit"
        return max(transformer_live_bytes(*args, span, 4) for span in set(spans)), "vit"
    if model == "stable_diffusion":
        return conv_activations(family, task, batch, shape), "conv"
    raise ValueError(f"no activation formula for model {model!r}")


def conv_activations(family: str, task: str, batch: int, shape) -> float:
    keras = family == "keras"
    vae = KERAS_CV_SD["vae"] if keras else tuple(shape.vae_block_out_channels)
    res = shape.resolution
    if task == "fit":  # the VAE encoder: 2 resnet layers per level, sides res, res/2, ...; mid attention (1 head)
        stored = sum(c * (res // 2**i) ** 2 * 2 * 6 * 4 for i, c in enumerate(vae))
        tokens = (res // 2 ** (len(vae) - 1)) ** 2
        return batch * (stored + 3 * tokens**2 * 4)
    unet = KERAS_CV_SD["unet"] if keras else tuple(shape.unet_block_out_channels)
    heads = KERAS_CV_SD["unet_heads"] if keras else shape.unet_attention_head_dim  # diffusers' name for heads
    latent = shape.latent_size
    peaks = []
    for i, c in enumerate(unet):
        side = latent // 2**i
        attention = heads * side**4 * 4 * 2 if i < len(unet) - 1 else 0  # SD v1: attention in every level but the last
        peaks.append(max(c * side * side * 4 * 4, attention))
    for i, c in enumerate(reversed(vae)):  # the decoder, from the latent side up to the image
        side = latent * 2**i
        peaks.append(c * side * side * 4 * 4)
    peaks.append(latent**4 * 4 * 2)  # the decoder's mid-block attention (1 head)
    return batch * max(peaks)


def figures(model: str, family: str, task: str, batch: int, counts: dict[str, int], shape) -> Figures:
    held, trained = held_and_trained(model, family, task, counts, shape)
    llm = model in ("gemma", "mistral")
    dtype = shape.dtype if llm else "float32"
    adam_bytes = ADAM_BYTES
    if llm and task == "fit":  # frozen bf16 base + the adapters, which are what trains
        grad_bytes = LORA_BYTES if family == "keras" else DTYPE_BYTES[dtype]  # native: bf16 adapters, bf16 Adam moments
        weights, adam_bytes = held * DTYPE_BYTES[dtype] + trained * grad_bytes, 2 * grad_bytes
    else:
        weights, grad_bytes = held * DTYPE_BYTES[dtype], DTYPE_BYTES[dtype]
    act, formula = activations(model, family, task, batch, shape)
    return Figures(
        parameters=held + (trained if llm else 0),
        trainable_parameters=trained,
        weights_bytes=int(weights),
        gradients_bytes=trained * grad_bytes,
        optimizer_bytes=trained * adam_bytes,
        activations_bytes=int(math.ceil(act)),
        activation_formula=formula,
        weights_dtype=dtype,
    )


def fits(total_gib: float, capacity_gib: float | None) -> bool | None:
    """Whether an estimate fits a device of this capacity; None when the capacity is unknown."""
    return None if capacity_gib is None else total_gib <= capacity_gib
