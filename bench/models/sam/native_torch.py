"""SegmentAnything in plain PyTorch: Meta's segment-anything `Sam` built from a SamShape (ViT-H at the paper shape).

As keras-benchmarks v0.0.5's torch scripts, with random weights instead of the downloaded checkpoint:
- fit: the image encoder alone, Adam + MSE against a random (bs, embed_dim, feature, feature) target, a plain
  training loop.
- predict: image encoder, prompt encoder and mask decoder with multimask output, under no_grad. The prompt is
  v0.0.5's two points with labels [1, 2] (label 2 is segment-anything's box-corner embedding; segment-anything
  adds its padding point itself when no box is given, so 3 prompt tokens where Keras sees 2, as published), one
  prompt broadcast over the batch of images as the reference did:
  segment-anything's mask decoder repeats each image embedding once per prompt, so a prompt per image would
  decode batch x batch masks.

Compiled variant, as v0.0.5's TORCH_COMPILE=1 run:
- fit: the whole training step, `train_step()` (zero_grad, image encoder forward, MSE, backward, Adam step), is
  one function wrapped in torch.compile(mode="reduce-overhead"), the reference's `train_fn` and
  torch_utils.COMPILE_MODE (no other option).
- predict: the whole predict function is compiled (dynamo splits it where the prompt encoder's boolean-mask
  indexing breaks the graph).
check() fails unless graphs were captured.

Attention: segment-anything's own attention, an explicit matmul + softmax with decomposed relative position
terms in the image encoder (no scaled_dot_product_attention), recorded as `attention_implementation`.
"""
from __future__ import annotations

from functools import partial
from typing import Any

import torch

from bench.models.sam import IOU_HEAD_DEPTH, MASK_IN_CHANNELS, NUM_MULTIMASK_OUTPUTS
from bench.models.torch_common import COMPILED_TRAIN_STEP, TorchWorkload, count_parameters, data_generator, on_meta

PIXEL_MEAN = [123.675, 116.28, 103.53]
PIXEL_STD = [58.395, 57.12, 57.375]
ATTENTION = "segment-anything's own: matmul + softmax with decomposed relative positions (no SDPA)"


def build_sam(s):
    """segment_anything.modeling.Sam from a SamShape: what build_sam_vit_h builds at the paper shape."""
    from segment_anything.modeling import ImageEncoderViT, MaskDecoder, PromptEncoder, Sam, TwoWayTransformer

    if s.mlp_dim % s.hidden_dim:
        raise ValueError(
            f"segment-anything takes an integer mlp_ratio; mlp_dim {s.mlp_dim} / hidden_dim {s.hidden_dim} is not"
        )
    return Sam(
        image_encoder=ImageEncoderViT(
            depth=s.num_layers,
            embed_dim=s.hidden_dim,
            img_size=s.image_size,
            mlp_ratio=s.mlp_dim // s.hidden_dim,
            norm_layer=partial(torch.nn.LayerNorm, eps=1e-6),
            num_heads=s.num_heads,
            patch_size=s.patch_size,
            qkv_bias=True,
            use_rel_pos=True,
            global_attn_indexes=tuple(s.global_attention_layers),
            window_size=s.window_size,
            out_chans=s.embed_dim,
        ),
        prompt_encoder=PromptEncoder(
            embed_dim=s.embed_dim,
            image_embedding_size=(s.feature_size, s.feature_size),
            input_image_size=(s.image_size, s.image_size),
            mask_in_chans=MASK_IN_CHANNELS,
        ),
        mask_decoder=MaskDecoder(
            num_multimask_outputs=NUM_MULTIMASK_OUTPUTS,
            transformer=TwoWayTransformer(
                depth=s.mask_decoder_depth,
                embedding_dim=s.embed_dim,
                mlp_dim=s.mask_decoder_mlp_dim,
                num_heads=s.mask_decoder_num_heads,
            ),
            transformer_dim=s.embed_dim,
            iou_head_depth=IOU_HEAD_DEPTH,
            iou_head_hidden_dim=s.embed_dim,
        ),
        pixel_mean=PIXEL_MEAN,
        pixel_std=PIXEL_STD,
    )


def parameter_counts(s) -> dict[str, int]:
    sam = on_meta(build_sam, s)
    return {"sam": count_parameters(sam), "image_encoder": count_parameters(sam.image_encoder)}


def segment(sam, images: torch.Tensor, points: torch.Tensor, labels: torch.Tensor):
    """One predict step: image embedding, prompt embedding, masks and IoU scores (multimask output)."""
    features = sam.image_encoder(images)
    sparse, dense = sam.prompt_encoder(points=(points, labels), boxes=None, masks=None)
    return sam.mask_decoder(
        image_embeddings=features,
        image_pe=sam.prompt_encoder.get_dense_pe(),
        sparse_prompt_embeddings=sparse,
        dense_prompt_embeddings=dense,
        multimask_output=True,
    )


class SamTorch(TorchWorkload):
    def setup(self) -> None:
        s, bs = self.shape, self.cell.batch_size
        g = data_generator()
        self.sam = build_sam(s).to(self.device)
        self.images = torch.rand(bs, 3, s.image_size, s.image_size, generator=g).to(self.device)
        self.output_shapes: list[tuple[tuple[int, ...], ...]] = []
        if self.cell.task == "fit":
            self.model = self.sam.image_encoder
            self.model.train()
            self.target = torch.rand(bs, s.embed_dim, s.feature_size, s.feature_size, generator=g).to(self.device)
            self.train_step = self.training_step(
                torch.optim.Adam(self.model.parameters(), lr=s.learning_rate), self.images, self.target
            )
            return
        self.model = self.sam
        self.model.eval()
        self.points = torch.tensor([s.prompt_points], dtype=torch.float32, device=self.device)
        self.labels = torch.tensor([s.prompt_labels], dtype=torch.float32, device=self.device)
        self.segment = self.maybe_compile(partial(segment, self.sam))

    def step(self) -> Any:
        if self.cell.task == "fit":
            features, loss = self.train_step()
            self.output_shapes.append((tuple(features.shape),))
            return loss
        with torch.no_grad():
            masks, iou = self.segment(self.images, self.points, self.labels)
        self.output_shapes.append((tuple(masks.shape), tuple(iou.shape)))
        return masks

    def expected_shapes(self) -> tuple[tuple[int, ...], ...]:
        s, bs = self.shape, self.cell.batch_size
        if self.cell.task == "fit":
            return ((bs, s.embed_dim, s.feature_size, s.feature_size),)
        low_res = 4 * s.feature_size  # the mask decoder upscales the embedding 4x
        return ((bs, NUM_MULTIMASK_OUTPUTS, low_res, low_res), (bs, NUM_MULTIMASK_OUTPUTS))

    def check(self) -> None:
        expected = self.expected_shapes()
        if len(self.output_shapes) != self.steps_run:
            raise RuntimeError(f"{len(self.output_shapes)} steps recorded, expected {self.steps_run}")
        bad = [shapes for shapes in self.output_shapes if shapes != expected]
        if bad:
            raise RuntimeError(f"a step returned shapes {bad[0]}, expected {expected}")
        super().check()

    def settings(self) -> dict[str, Any]:
        s = self.shape
        out = {
            **super().settings(),
            "dtype": "float32",
            "image_size": s.image_size,
            "feature_size": s.feature_size,
            "full_model_parameters": count_parameters(self.sam),
            "image_encoder_parameters": count_parameters(self.sam.image_encoder),
            "attention_implementation": ATTENTION,
        }
        if self.cell.task == "fit":
            out.update(
                loss="mse",
                optimizer="Adam",
                learning_rate=s.learning_rate,
                compiled_function=COMPILED_TRAIN_STEP if self.compiled else None,
            )
        else:
            out.update(
                prompt_points=s.prompt_points,
                prompt_labels=s.prompt_labels,
                multimask_output=True,
                compiled_module="segment (whole predict step)" if self.compiled else None,
            )
        return out


def create(cell, shape) -> SamTorch:
    return SamTorch(cell, shape)
