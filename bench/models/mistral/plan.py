"""The plan rule of a 7B causal LM (bench/plan/memory.py): bfloat16 weights, LoRA adapters trained by fit, the KV
cache in generate."""
from bench.plan.memory import causal_lm_activations as activations
from bench.plan.memory import causal_lm_holding as holding

__all__ = ["activations", "holding"]
