"""A tiny MLP classifier: the worked example of docs/ADDING_A_MODEL.md (tests/test_new_model.py adds it to a copy of
the package). It is no row of the published table, so it declares its own rows."""
from __future__ import annotations

from dataclasses import dataclass

from bench.catalogue.spec import fit_task, load_model_spec, positive_fields, predict_task


@dataclass(frozen=True)
class TinyMlpShape:
    features: int
    hidden: int
    layers: int  # hidden layers
    classes: int
    learning_rate: float

    def __post_init__(self) -> None:
        positive_fields(self)


def paper_settings(cell, shape: TinyMlpShape) -> dict:
    """What every run must record (the tests' fidelity checks): the optimizer and the parameter count."""
    return {"optimizer": "Adam", "parameters": shape.features * shape.hidden + (shape.layers - 1) * shape.hidden**2
            + shape.hidden * shape.classes + shape.layers * shape.hidden + shape.classes}


SPEC = load_model_spec("tiny_mlp", "Tiny MLP", TinyMlpShape, tasks=[fit_task(), predict_task()],
                       rows=[("fit", 32), ("predict", 64)], paper_settings=paper_settings)
