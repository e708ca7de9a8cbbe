"""Mistral 7B causal LM: LoRA fit (bf16) at batch 8, greedy generate at batch 32 and 1."""
from bench.catalogue.spec import CellRule, load_model_spec
from bench.models.llm import LLM_TASKS, CausalLMShape, causal_lm_paper_settings

# Mistral-7B-v0.1's attention window (keras-hub's default is 512): longer than every sequence run here.
SLIDING_WINDOW = 4096

SPEC = load_model_spec(
    "mistral",
    "Mistral",
    CausalLMShape,
    tasks=LLM_TASKS,
    paper_settings=causal_lm_paper_settings,
    unsupported={"keras2": "Mistral on Keras 2 breaks under bfloat16 + LoRA (keras-nlp 0.12); NA as published"},
    unsupported_cells=(
        CellRule(
            "transformers 4.38.2 (the 2024 stack) has no static KV cache for Mistral (MistralForCausalLM lacks "
            "_setup_cache; Llama and Gemma have it), which the compiled generate needs (bench/models/torch_llm.py). "
            "v0.0.5's torch.compile(model).generate compiled nothing, so its compiled figure was an eager one "
            "(docs/DEVIATIONS.md)",
            stack="2024", backend="native-torch", task="generate", variant="compiled",
        ),
    ),
)
