"""SegmentAnything's FLOP-counter checks (bench/measure/torch_counter.py): the whole predict step (image encoder, prompt
encoder, mask decoder: the formula leaves the last two out) and the encoder's fit step. The prompt encoder picks
points by their labels (`torch.nonzero`), which the meta device cannot do: on meta, those two small parts are
materialised on the CPU (uninitialised memory, `to_empty`: a count does not depend on the values)."""

from __future__ import annotations

import torch

from bench.models.sam.native_torch import build_sam
from bench.models.sam.work import work
from bench.models.torch_common import on_meta

BATCH = 1


def checks(s, device: str) -> list:
    sam = on_meta(build_sam, s) if device == "meta" else build_sam(s)
    images = torch.zeros(BATCH, 3, s.image_size, s.image_size, device=device)
    points = torch.tensor([s.prompt_points] * BATCH, device=device)
    labels = torch.tensor([s.prompt_labels] * BATCH, device=device)

    if device == "meta":
        sam.prompt_encoder.to_empty(device="cpu")
        sam.mask_decoder.to_empty(device="cpu")
        points, labels = points.new_zeros(points.shape, device="cpu"), torch.tensor([s.prompt_labels] * BATCH)

    def predict():
        sam.requires_grad_(False)  # FlopCounterMode's module tracker trips on parameters that want gradients here
        with torch.no_grad():
            features = sam.image_encoder(images)
            if device == "meta":  # the decoder on the CPU, from an embedding of the encoder's output shape
                features = torch.zeros(features.shape)
            sparse, dense = sam.prompt_encoder(points=(points, labels), boxes=None, masks=None)
            sam.mask_decoder(
                image_embeddings=features,
                image_pe=sam.prompt_encoder.get_dense_pe(),
                sparse_prompt_embeddings=sparse,
                dense_prompt_embeddings=dense,
                multimask_output=True,
            )

    def fit():
        sam.image_encoder.requires_grad_(True)
        sam.image_encoder(images).sum().backward()

    return [
        (f"predict (with the mask decoder), batch {BATCH}", predict, work("native-torch", "predict", BATCH, s).flops),
        (f"fit (encoder forward + backward), batch {BATCH}", fit, work("native-torch", "fit", BATCH, s).flops),
    ]
