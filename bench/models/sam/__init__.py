"""SegmentAnything ViT-H: image-encoder fit against a random feature map (bs 1), predict with point prompts (bs 4)."""
from __future__ import annotations

from dataclasses import dataclass

from bench.catalogue.spec import fit_task, load_model_spec, positive_fields, predict_task
from bench.models.base import COMPILED_TRAIN_STEP

# SAM's fixed parts, the same at every model size (segment_anything/build_sam.py), read by both implementations.
MASK_IN_CHANNELS = 16  # the mask-prompt downscaler's width
IOU_HEAD_DEPTH = 3
NUM_MULTIMASK_OUTPUTS = 3


@dataclass(frozen=True)
class SamShape:
    image_size: int
    patch_size: int
    hidden_dim: int  # image encoder (ViT) width
    num_layers: int
    num_heads: int
    mlp_dim: int
    window_size: int
    global_attention_layers: list[int]  # ViT blocks with global (not windowed) attention
    embed_dim: int  # image embedding / prompt embedding width
    mask_decoder_depth: int
    # predict's point prompt, the same for every image: (x, y) pixels and SAM's point labels (0 background,
    # 1 foreground, 2 and 3 box corners). v0.0.5 used [[500, 375], [250, 375]] with labels [1, 2].
    prompt_points: list[list[float]]
    prompt_labels: list[int]
    learning_rate: float
    # Mask decoder's two-way transformer: MLP width and heads (SAM: 2048 and 8 at every model size).
    mask_decoder_mlp_dim: int = 2048
    mask_decoder_num_heads: int = 8

    def __post_init__(self) -> None:
        positive_fields(self)
        if self.image_size % self.patch_size:
            raise ValueError("image_size must be a multiple of patch_size")
        if any(not 0 <= i < self.num_layers for i in self.global_attention_layers):
            raise ValueError("global_attention_layers must index encoder layers")
        if self.embed_dim % self.mask_decoder_num_heads:
            raise ValueError("embed_dim must be a multiple of mask_decoder_num_heads")
        if not self.prompt_points or len(self.prompt_points) != len(self.prompt_labels):
            raise ValueError("prompt_points and prompt_labels must be non-empty and of the same length")
        if any(len(p) != 2 or not all(0 <= c < self.image_size for c in p) for p in self.prompt_points):
            raise ValueError(f"each prompt point must be an (x, y) pair inside the {self.image_size}-pixel image")
        if any(label not in (0, 1, 2, 3) for label in self.prompt_labels):
            raise ValueError("prompt_labels must be SAM point labels: 0, 1, 2 or 3")

    @property
    def feature_size(self) -> int:
        """Side of the image embedding the fit target matches (image_size / patch_size)."""
        return self.image_size // self.patch_size


def paper_settings(cell, shape: SamShape) -> dict:
    """What a SAM run must record (the fidelity checks): the compiled training step, and v0.0.5's prompts (F8)."""
    out = {}
    if cell.backend == "native-torch" and cell.task == "fit":
        out["compiled_function"] = COMPILED_TRAIN_STEP if cell.variant == "compiled" else None
    if cell.task == "predict":  # v0.0.5's two points and labels [1, 2]
        out.update(prompt_points=shape.prompt_points, prompt_labels=shape.prompt_labels)
    return out


SPEC = load_model_spec(
    "sam", "SegmentAnything", SamShape, tasks=[fit_task(), predict_task()], paper_settings=paper_settings
)
