"""Gemma 7B causal LM: LoRA fit (bf16) at batch 8, greedy generate at batch 32 and 1."""
from bench.catalogue.spec import load_model_spec
from bench.models.llm import LLM_TASKS, CausalLMShape, causal_lm_paper_settings

SPEC = load_model_spec(
    "gemma",
    "Gemma",
    CausalLMShape,
    tasks=LLM_TASKS,
    paper_settings=causal_lm_paper_settings,
    unsupported={"keras2": "Gemma needs Keras 3 (keras-nlp refuses to build it on Keras 2); NA as published"},
)
