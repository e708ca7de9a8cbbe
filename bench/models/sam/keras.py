"""SegmentAnything on Keras: keras-hub SAMImageSegmenter (Keras 3) or keras-cv SegmentAnythingModel (Keras 2).

As keras-benchmarks v0.0.5: fit trains the image encoder (ViTDet) alone against a random feature map of its
output shape (Adam + MSE, XLA except on torch); predict runs the whole model with v0.0.5's point prompt for every
image: its two points and labels [1, 2], no padding point and no box (keras-cv/keras-hub add no padding point
themselves, so the mask decoder sees 2 prompt tokens, as in the published Keras run).
"""
from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from bench.models.keras_common import (
    KerasWorkload,
    assert_keras_major,
    build_abstractly,
    count_weights,
    library_versions,
    reference_jit_compile,
    repeated_batch,
    rng,
)
from bench.models.sam import IOU_HEAD_DEPTH, MASK_IN_CHANNELS, NUM_MULTIMASK_OUTPUTS


def build_sam_backbone_keras3(s):
    """keras-hub SAMBackbone from a SamShape: ViTDet image encoder, prompt encoder, mask decoder."""
    import keras_hub

    side, feat = s.image_size, s.feature_size
    image_encoder = keras_hub.models.ViTDetBackbone(
        hidden_size=s.hidden_dim,
        num_layers=s.num_layers,
        intermediate_dim=s.mlp_dim,
        num_heads=s.num_heads,
        global_attention_layer_indices=list(s.global_attention_layers),
        image_shape=(side, side, 3),
        patch_size=s.patch_size,
        num_output_channels=s.embed_dim,
        window_size=s.window_size,
    )
    prompt_encoder = keras_hub.layers.SAMPromptEncoder(
        hidden_size=s.embed_dim,
        image_embedding_size=(feat, feat),
        input_image_size=(side, side),
        mask_in_channels=MASK_IN_CHANNELS,
    )
    mask_decoder = keras_hub.layers.SAMMaskDecoder(
        hidden_size=s.embed_dim,
        num_layers=s.mask_decoder_depth,
        intermediate_dim=s.mask_decoder_mlp_dim,
        num_heads=s.mask_decoder_num_heads,
        embedding_dim=s.embed_dim,
        num_multimask_outputs=NUM_MULTIMASK_OUTPUTS,
        iou_head_depth=IOU_HEAD_DEPTH,
        iou_head_hidden_dim=s.embed_dim,
    )
    backbone = keras_hub.models.SAMBackbone(
        image_encoder=image_encoder, prompt_encoder=prompt_encoder, mask_decoder=mask_decoder
    )
    return backbone, image_encoder


def build_sam_keras3(s, abstract: bool = False):
    """keras-hub SAMImageSegmenter and its image encoder (the segmenter's graph builds the mask decoder).

    abstract=True defers the backbone's variables (build_abstractly); the segmenter itself is built outside the
    stateless scope, since it compiles itself on construction (an optimizer variable).
    """
    import keras_hub

    backbone, image_encoder = (
        build_abstractly(build_sam_backbone_keras3, s) if abstract else build_sam_backbone_keras3(s)
    )
    return keras_hub.models.SAMImageSegmenter(backbone=backbone, preprocessor=None), image_encoder


def build_sam_keras2(s):
    """keras-cv SegmentAnythingModel (tf.keras) from a SamShape, the same architecture as build_sam_keras3."""
    import keras_cv

    side, feat = s.image_size, s.feature_size
    image_encoder = keras_cv.models.ViTDetBackbone(
        include_rescaling=False,
        input_shape=(side, side, 3),
        patch_size=s.patch_size,
        embed_dim=s.hidden_dim,
        depth=s.num_layers,
        mlp_dim=s.mlp_dim,
        num_heads=s.num_heads,
        out_chans=s.embed_dim,
        window_size=s.window_size,
        global_attention_indices=list(s.global_attention_layers),
    )
    prompt_encoder = keras_cv.models.SAMPromptEncoder(
        embed_dim=s.embed_dim,
        image_embedding_size=(feat, feat),
        input_image_size=(side, side),
        mask_in_chans=MASK_IN_CHANNELS,
    )
    transformer = keras_cv.models.TwoWayTransformer(
        depth=s.mask_decoder_depth,
        embed_dim=s.embed_dim,
        num_heads=s.mask_decoder_num_heads,
        mlp_dim=s.mask_decoder_mlp_dim,
    )
    mask_decoder = keras_cv.models.SAMMaskDecoder(
        transformer_dim=s.embed_dim,
        transformer=transformer,
        num_multimask_outputs=NUM_MULTIMASK_OUTPUTS,
        iou_head_depth=IOU_HEAD_DEPTH,
        iou_head_hidden_dim=s.embed_dim,
    )
    model = keras_cv.models.SegmentAnythingModel(
        backbone=image_encoder, prompt_encoder=prompt_encoder, mask_decoder=mask_decoder
    )
    return model, image_encoder


def sam_library(keras_major: int) -> str:
    """keras-hub's SAM on Keras 3; keras-cv's on Keras 2, and on Keras 3 where keras-hub is not installed (the 2024
    stack's keras-cv 0.8.2, v0.0.5's SAM: the same architecture, checked by tests/test_fidelity.py)."""
    if keras_major == 2:
        return "keras_cv"
    try:
        import keras_hub  # noqa: F401
    except ImportError:
        return "keras_cv"
    return "keras_hub"


def build_sam(s, keras_major: int):
    return build_sam_keras2(s) if sam_library(keras_major) == "keras_cv" else build_sam_keras3(s)


def parameter_counts(s, keras_major: int = 3) -> dict[str, int]:
    if sam_library(keras_major) == "keras_cv":
        model, image_encoder = build_abstractly(build_sam_keras2, s, keras_major=keras_major)
    else:
        model, image_encoder = build_sam_keras3(s, abstract=True)
    return {"sam": count_weights(model.weights), "image_encoder": count_weights(image_encoder.weights)}


def point_prompts(s, batch_size: int) -> dict[str, np.ndarray]:
    """The shape's point prompt for every image, no box, no mask prompt."""
    points = np.repeat(np.asarray([s.prompt_points], dtype="float32"), batch_size, axis=0)
    labels = np.repeat(np.asarray([s.prompt_labels], dtype="float32"), batch_size, axis=0)
    side = 4 * s.feature_size  # mask prompts are 4x the embedding side (none here)
    return {
        "points": points,
        "labels": labels,
        "boxes": np.zeros((batch_size, 0, 2, 2), dtype="float32"),
        "masks": np.zeros((batch_size, 0, side, side, 1), dtype="float32"),
    }


class SamKeras(KerasWorkload):
    def setup(self) -> None:
        s, bs, keras = self.shape, self.cell.batch_size, self.keras
        self.full_model, self.image_encoder = build_sam(s, self.keras_major)
        assert_keras_major(self.full_model, self.keras_major)
        assert_keras_major(self.image_encoder, self.keras_major)
        r = rng()
        images = r.random((bs, s.image_size, s.image_size, 3), dtype="float32")
        if self.cell.task == "fit":
            self.model = self.image_encoder
            self.model.compile(
                optimizer=keras.optimizers.Adam(learning_rate=s.learning_rate),
                loss="mse",
                jit_compile=reference_jit_compile(self.cell),
            )
            target = r.random((bs, s.feature_size, s.feature_size, s.embed_dim), dtype="float32")
            self.data = repeated_batch(images, target)
        else:
            self.model = self.full_model
            # The published run called predict() on the uncompiled model: Keras 3 resolves jit_compile "auto"
            # (XLA on TensorFlow/JAX, none on torch), Keras 2 runs without XLA. compile() with defaults is the same.
            self.model.compile()
            self.data = repeated_batch({"images": images, **point_prompts(s, bs)})

    def settings(self) -> dict[str, Any]:
        s = self.shape
        return {
            **super().settings(),
            "image_size": s.image_size,
            "feature_size": s.feature_size,
            "library_versions": library_versions(importlib.import_module(sam_library(self.keras_major))),
            "full_model_parameters": int(self.full_model.count_params()),
            "image_encoder_parameters": int(self.image_encoder.count_params()),
            "trainable_parameters": count_weights(self.model.trainable_weights),
            **(
                {"prompt_points": s.prompt_points, "prompt_labels": s.prompt_labels}
                if self.cell.task == "predict"
                else {"loss": "mse", "optimizer": "Adam"}
            ),
        }


def create(cell, shape) -> SamKeras:
    return SamKeras(cell, shape)
