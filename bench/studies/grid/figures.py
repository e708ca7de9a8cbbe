"""The inference grid study's figures (GRID.md's): time against sequence length per model and batch, and the
PyTorch / TensorFlow ratio over the grid as a heat map."""
from __future__ import annotations

from pathlib import Path

from bench.base.atomic import write_stream_atomic
from bench.base.stats import fmt_factor
from bench.record.results import Result
from bench.studies.grid.spec import COLUMNS, MODELS


def length_of(result: Result) -> int:
    return int(result.runs[0].settings["sequence_length"])


def draw_figures(group, fig_dir: Path) -> dict[str, Path]:
    """`group`: a bench.studies.grid.page.GridGroup (its results, slug and grid name). Per model: time against sequence
    length, one line per column, one panel per batch size; and one heat map of the PyTorch eager / TensorFlow
    (tf.function) mean-time ratio over the grid, one panel per model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig_dir.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}
    models = [m for m in MODELS if any(r.cell.model == m for r in group.results)]
    for model in models:
        results = [r for r in group.results if r.cell.model == model and r.status == "ok"]
        batches = sorted({r.cell.batch_size for r in results})
        if not batches:
            continue
        fig, axes = plt.subplots(1, len(batches), figsize=(4.5 * len(batches), 3.8), squeeze=False)
        for ax, batch in zip(axes[0], batches):
            for column in COLUMNS:
                pts = sorted(
                    (length_of(r), r.summary().mean)
                    for r in results
                    if r.cell.batch_size == batch and r.cell.variant == column
                )
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=COLUMNS[column].display)
            ax.set(
                xscale="log",
                yscale="log",
                xlabel="sequence length",
                ylabel="mean ms per forward",
                title=f"{MODELS[model].display}, batch {batch}",
            )
            ax.grid(True, which="both", alpha=0.3)
        axes[0][-1].legend(fontsize=7)
        fig.tight_layout()
        path = fig_dir / f"{group.slug}__{group.grid}__{model}-time.png"
        write_stream_atomic(path, lambda f: fig.savefig(f, format="png", dpi=90, metadata={"Software": None}))
        plt.close(fig)
        out[f"{model}-time"] = path
    ratios = {}
    for model in models:
        pt = {
            (r.cell.batch_size, length_of(r)): r.summary().mean
            for r in group.results
            if r.cell.model == model and r.cell.variant == "torch-eager" and r.status == "ok"
        }
        tf = {
            (r.cell.batch_size, length_of(r)): r.summary().mean
            for r in group.results
            if r.cell.model == model and r.cell.variant == "tf-function" and r.status == "ok"
        }
        if set(pt) & set(tf):
            ratios[model] = {k: pt[k] / tf[k] for k in set(pt) & set(tf)}
    if ratios:
        fig, axes = plt.subplots(1, len(ratios), figsize=(3.6 * len(ratios), 3.2), squeeze=False)
        for ax, (model, values) in zip(axes[0], ratios.items()):
            batches, lengths = sorted({k[0] for k in values}), sorted({k[1] for k in values})
            grid = np.full((len(batches), len(lengths)), np.nan)
            for (b, n), v in values.items():
                grid[batches.index(b), lengths.index(n)] = np.log2(v)
            image = ax.imshow(grid, cmap="coolwarm", vmin=-2, vmax=2, aspect="auto")
            ax.set(
                xticks=range(len(lengths)),
                xticklabels=lengths,
                yticks=range(len(batches)),
                yticklabels=batches,
                xlabel="sequence length",
                ylabel="batch",
                title=MODELS[model].display,
            )
            for (b, n), v in values.items():
                ax.text(
                    lengths.index(n), batches.index(b), fmt_factor(v, unit=""), ha="center", va="center", fontsize=7
                )
        fig.colorbar(image, ax=axes[0].tolist(), label="log2(PyTorch / TensorFlow): > 0 TensorFlow faster")
        path = fig_dir / f"{group.slug}__{group.grid}__pytorch-tensorflow-ratio.png"
        write_stream_atomic(path, lambda f: fig.savefig(f, format="png", dpi=90, metadata={"Software": None}))
        plt.close(fig)
        out["ratio"] = path
    return out
