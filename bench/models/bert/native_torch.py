"""BERT in plain PyTorch: transformers BertForSequenceClassification; Trainer fit, no-grad predict.

Attention: `shape.attention_implementation` passed to the config (paper: "eager", the only BERT attention of
transformers 4.38.2, the published version; today's default would be SDPA), or "sdpa" in the `sdpa` variant
(bench/catalogue/variants.py); the settings record the model's `config._attn_implementation`.
"""
from __future__ import annotations

import torch

from bench.models.torch_common import RepeatedSamples, TorchWorkload, count_parameters, data_generator, on_meta


def build_model(s, attention_implementation: str | None = None):
    """transformers BertForSequenceClassification (bert-base-cased at the paper shape) with random weights; the
    shape's attention implementation unless one is given (the `sdpa` variant's)."""
    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig(
        vocab_size=s.vocabulary_size,
        hidden_size=s.hidden_dim,
        num_hidden_layers=s.num_layers,
        num_attention_heads=s.num_heads,
        intermediate_size=s.intermediate_dim,
        max_position_embeddings=s.max_sequence_length,
        num_labels=s.num_classes,
        attn_implementation=attention_implementation or s.attention_implementation,
    )
    return BertForSequenceClassification(config)


def parameter_counts(s) -> dict[str, int]:
    model = on_meta(build_model, s)
    return {"backbone": count_parameters(model.bert), "classifier": count_parameters(model)}


class BertTorch(TorchWorkload):
    def setup(self) -> None:
        s, bs = self.shape, self.cell.batch_size
        # The sdpa variant: today's transformers default, beside the published eager attention.
        self.model = build_model(s, "sdpa" if self.cell.variant == "sdpa" else None).to(self.device)
        g = data_generator()
        self.inputs = {
            "input_ids": torch.randint(0, s.vocabulary_size, (bs, s.sequence_length), generator=g),
            "token_type_ids": torch.randint(0, 2, (bs, s.sequence_length), generator=g),
            "attention_mask": torch.ones(bs, s.sequence_length, dtype=torch.long),
        }
        if self.cell.task == "fit":
            labels = torch.randint(0, s.num_classes, (bs,), generator=g)
            samples = [{**{k: v[i] for k, v in self.inputs.items()}, "labels": labels[i]} for i in range(bs)]
            self.dataset = samples
        else:
            self.model.eval()
            self.forward = self.maybe_compile(self.model)
            self.inputs = {k: v.to(self.device) for k, v in self.inputs.items()}

    def training_dataset(self, length: int) -> RepeatedSamples:
        return RepeatedSamples(self.dataset, length)

    def trainer_arguments(self):
        return {**super().trainer_arguments(), "learning_rate": self.shape.learning_rate, "optim": "adamw_torch"}

    @torch.inference_mode()
    def step(self):
        return self.forward(**self.inputs).logits

    def settings(self):
        return {
            **super().settings(),
            "sequence_length": self.shape.sequence_length,
            "attention_implementation": self.model.config._attn_implementation,
        }


def create(cell, shape) -> BertTorch:
    return BertTorch(cell, shape)
