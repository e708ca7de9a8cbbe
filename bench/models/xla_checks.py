"""XLA cost-analysis checks the causal LMs share (bench/measure/xla_counter.py; runs in the jax env): keras-hub's
model as the Keras cells build it (global dtype policy, einsum attention, LoRA enabled), a LoRA fit's forward and
backward (gradients of the adapters alone; no optimizer) and a prefill forward."""

from __future__ import annotations

BATCH = 1


def causal_lm_xla_checks(workload, s) -> list:
    """`workload`: the model's KerasCausalLM subclass (its backbone and task classes, its backbone arguments)."""
    import jax
    import jax.numpy as jnp
    import keras
    import keras_hub

    from bench.catalogue.work import causal_lm_fit, causal_lm_forward_flops
    from bench.models.keras_llm import attention_layers, build_causal_lm, disable_fused_attention

    keras.config.set_dtype_policy(s.dtype)

    def build():
        built = build_causal_lm(
            keras_hub, workload.backbone_class, workload.task_class, workload.backbone_kwargs(s), s.dtype
        )
        disable_fused_attention(keras, attention_layers(built))
        return built

    model = build()  # generate's model: no LoRA
    prompt = {
        "token_ids": jnp.zeros((BATCH, s.prompt_length), "int32"),
        "padding_mask": jnp.ones((BATCH, s.prompt_length), "bool"),
    }
    frozen_all = [v.value for v in model.trainable_variables] + [v.value for v in model.non_trainable_variables]

    count = len(model.trainable_variables)

    def prefill(variables, x, model=model, n=count):
        return model.stateless_call(variables[:n], variables[n:], x)[0]

    checks = [
        (
            f"generate's prefill of the prompt, batch {BATCH}",
            prefill,
            (frozen_all, prompt),
            causal_lm_forward_flops(BATCH, s.prompt_length, s, s.prompt_length),
        )
    ]
    model = build()  # fit's model: LoRA on every layer's q and v
    model.backbone.enable_lora(rank=s.lora_rank)
    x = {
        "token_ids": jnp.zeros((BATCH, s.fit_sequence_length), "int32"),
        "padding_mask": jnp.ones((BATCH, s.fit_sequence_length), "bool"),
    }
    labels = jnp.zeros((BATCH, s.fit_sequence_length), "int32")
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    trainable = [v.value for v in model.trainable_variables]
    frozen = [v.value for v in model.non_trainable_variables]

    def fit(trainable, frozen, x):
        return jax.grad(lambda t: loss_fn(labels, model.stateless_call(t, frozen, x, training=True)[0]))(trainable)

    checks.append(
        (
            f"LoRA fit (forward + backward), batch {BATCH}",
            fit,
            (trainable, frozen, x),
            causal_lm_fit("keras", BATCH, s).flops,
        )
    )
    return checks
