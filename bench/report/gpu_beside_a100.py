"""A GPU run beside the published A100 table: for each ok paper-profile cell measured on a GPU whose datasheet the
suite knows (bench/catalogue/hardware.py), its figure and MFU against that GPU's datasheet peak, and the published
A100 40GB cell's figure and MFU against the A100's (bench/roofline/published.py) beside it, each side at the mode its
own step computed in (a published PyTorch float32 step at FP32, as this suite's PyTorch cells record theirs, never
at the TF32 rate it did not use). The MFU of both sides counts the same work per step (docs/ROOFLINE.md), so the two
fractions compare how much of each card the step used, where the figures alone compare two cards. A table of a CPU
has no such section, nor one of an A100 40GB: its table's comparison with the published numbers sets it beside the
published cells already."""

from __future__ import annotations

from bench.base.tables import github_table
from bench.catalogue.hardware import A100_40GB, datasheet_for

TITLE = "This GPU beside the published A100: MFU against each card's datasheet"


def pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def gpu_beside_a100_section(table, page) -> list[str]:
    from bench.record.load import COLUMNS
    from bench.roofline.published import published_cells
    from bench.roofline.utilisation import use_of

    published = {(c.model, c.task, c.batch_size, c.backend): c for c in published_cells()}
    body, cards = [], set()
    for facts in table.rows:
        for column in COLUMNS:
            item = facts.cells.get(column)
            if item is None or item.result.status != "ok" or item.result.cell.profile != "paper":
                continue
            result, cell = item.result, item.result.cell
            gpus = (result.provenance.get("machine") or {}).get("gpus") or []
            if not gpus or datasheet_for(gpus[0].get("name")) == A100_40GB:
                continue
            use = use_of(result)
            if use is None or use.datasheet_mfu is None:
                continue
            cards.add(gpus[0].get("name", "GPU"))
            ref = published.get((cell.model, cell.task, cell.batch_size, cell.backend))
            body.append(
                [
                    facts.key.label() + (f" ({facts.unit})" if facts.unit else ""),
                    str(cell.batch_size),
                    column.header,
                    f"{result.figure():.4g}",
                    f"{pct(use.datasheet_mfu)} ({use.ceiling.datasheet_mode})",
                    f"{ref.ms:.4g}" if ref else "no published cell",
                    f"{pct(ref.mfu(A100_40GB))} ({ref.modes.name})" if ref else "—",
                ]
            )
    if not body:
        return []
    card = ", ".join(sorted(cards))
    return [
        f"Each ok paper-shape cell on {card}: its figure and MFU against that card's datasheet peak at the mode its "
        f"step computed in (as its framework recorded it), beside the published cell on the {A100_40GB.name} and its "
        "MFU against the A100's datasheet at the mode the published step computed in (its framework's default: "
        "PyTorch's float32 matmuls in full FP32, JAX's and TensorFlow's in TF32), the same work per step on both "
        "sides. Native PyTorch has no published column.",
        "",
        github_table(
            body,
            ["Model / task", "Batch", "Column", "this GPU", "MFU (its datasheet)", "published A100", "A100 MFU"],
        ),
    ]
