"""Gemma 2B causal LM, LoRA fit: the tuning study's second workload, not a row of the published table.

As the 2024 Keras 3 tuning study ran it: the 2B configuration (keras-hub GemmaBackbone / transformers GemmaConfig,
random weights), LoRA rank 4, sequence length 512, SGD at lr 5e-5, `mixed_bfloat16`. Rows: fit at batch 4 (the
published JAX batch) and at batch 2 (the published torch batch, which is also the common batch every backend
runs), reported in samples/s beside ms/step (bench/studies/tuning/page.py). The code is Gemma 7B's (bench/models/gemma,
keras_llm.py, torch_llm.py) on another shape.
"""
from bench.catalogue.spec import fit_task, load_model_spec
from bench.models.llm import CausalLMShape

SPEC = load_model_spec(
    "gemma_2b",
    "Gemma 2B LoRA",
    CausalLMShape,
    tasks=[fit_task(native="trainer")],
    unsupported={"keras2": "the tuning study is Keras 3 only (keras-nlp refuses Gemma on Keras 2)"},
    study="tuning",
    rows=[("fit", 4), ("fit", 2)],
)
