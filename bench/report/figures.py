"""A table's figures (matplotlib, Agg): Keras 3 (best) speedups over Keras 2 and over native PyTorch per model (the
geometric mean of the rows' speed-ups, with its 95% interval as error bars), and every backend per row (each
cell's figure with its 95% interval). PNGs are written without a timestamp so renders are byte-for-byte repeatable."""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from bench.base.atomic import write_stream_atomic
from bench.base.errors import BenchError
from bench.base.stats import Ratio, fmt_factor
from bench.catalogue.registry import MODELS, get_model
from bench.judge.analysis import RowFacts, TableAnalysis, geometric, mean_speedup
from bench.record.load import COLUMNS, Column
from bench.record.text import fmt_ms, install_hint, status_label
from bench.report.sections import Page

FIGURES = "figures"  # the folder under the results folder
CAPTIONS = {  # kind -> caption; the kinds are also the file name suffixes clear_old_figures() recognises
    "speedup-keras2": "Keras 3 (best) throughput speedup over Keras 2, per model (geometric mean, 95% interval)",
    "speedup-native": "Keras 3 (best) throughput speedup over native PyTorch, per model (geometric mean, 95% interval)",
    "per-row": "Every backend per row, each cell's figure with its 95% interval (log scale)",
}
FIGURE_KINDS = tuple(CAPTIONS)
OTHER_KINDS = ("roofline",)  # drawn by another section (bench/report/roofline.py), cleared here with the rest


def figures_section(table: TableAnalysis, page: Page) -> list[str]:
    """Draw the figures (recording them on the page) and list them with links relative to RESULTS.md."""
    if not table.rows:  # a table of a study's workloads only: its own section shows them
        return []
    if table.group.environment and importlib.util.find_spec("matplotlib") is None:
        # `make table ENV=current` renders in the user's own environment, which need not have matplotlib
        return [f"- not drawn: matplotlib is not installed in this environment ({sys.executable})."]
    page.figures = draw_figures(table, page.fig_dir)
    lines = []
    for kind in FIGURE_KINDS:
        path = page.figures.get(kind)
        if path is None:
            lines.append(f"- {CAPTIONS[kind]}: not drawn (no row has the numbers it needs).")
        else:
            lines.append(
                f"- {CAPTIONS[kind]}: ![{CAPTIONS[kind]}]({Path(os.path.relpath(path, page.out_dir)).as_posix()})"
            )
    return lines


def draw_figures(table: TableAnalysis, fig_dir: Path) -> dict[str, Path | None]:
    """The three PNGs of one table; None where there is nothing to draw."""
    try:
        import matplotlib
    except ImportError:
        raise BenchError(f"matplotlib is needed to draw the figures; {install_hint('matplotlib')}") from None
    matplotlib.use("Agg")
    import matplotlib.style
    from matplotlib.figure import Figure

    group, rows = table.group, table.rows
    fig_dir.mkdir(parents=True, exist_ok=True)
    title = f"{group.profile} profile, {group.machine}" + ("" if group.stack == "today" else f", {group.stack} stack")
    out: dict[str, Path | None] = dict.fromkeys(FIGURE_KINDS)

    def save(fig, kind: str) -> None:
        out[kind] = fig_dir / f"{group.slug}-{kind}.png"
        write_stream_atomic(out[kind], lambda f: fig.savefig(f, format="png", dpi=100, metadata={"Software": None}))

    with matplotlib.style.context("default"), matplotlib.rc_context({"font.size": 9, "svg.hashsalt": "bench"}):
        ours = means_with_intervals(table.speedup_keras2)
        published = {m: (geometric(v), None, None) for m, v in table.published_speedup_keras2.items()}
        series = {"ours (95% interval)": ours}
        if table.paper:
            series["published (A100), geometric mean"] = published
        subtitle = f"{title}\nper model: the geometric mean of its rows' speed-ups"
        if ours:
            save(
                bar_chart(
                    Figure(figsize=(7, 4)),
                    series,
                    f"Keras 3 (best) throughput speedup over Keras 2\n{subtitle}",
                    ["#1f77b4", "#aaaaaa"],
                ),
                "speedup-keras2",
            )
        native = {c: means_with_intervals(v) for c, v in table.speedup_native.items() if v}
        if native:
            named = {f"over native PyTorch ({c.variant})": v for c, v in native.items()}
            fig = bar_chart(
                Figure(figsize=(7, 4)),
                named,
                f"Keras 3 (best) throughput speedup over native PyTorch\n{subtitle}",
                [c.color for c in native],
            )
            save(fig, "speedup-native")
        if any(f.ms(c) is not None for f in rows for c in COLUMNS):
            save(
                per_row_chart(
                    Figure(figsize=(max(7, 1.3 * len(rows) + 2), 5)),
                    table,
                    f"Each cell's figure with its 95% interval, every backend (log scale; hatched: noisy)\n{title}",
                ),
                "per-row",
            )
    return out


Bar = tuple[float, float | None, float | None]  # a value and its 95% interval (None: none)


def means_with_intervals(per_model: dict[str, list[Ratio]]) -> dict[str, Bar]:
    out = {}
    for model, ratios in per_model.items():
        mean = mean_speedup(ratios)
        if mean is not None and mean.comparable:  # unlike work has no speed-up to draw
            interval = mean.interval()
            out[model] = (mean.value, *(interval or (None, None)))
    return out


def error_bars(bars: list[Bar]) -> list[list[float]]:
    """matplotlib's asymmetric yerr: the distance below and above each value (0 where there is no interval)."""
    return [
        [v - low if low is not None else 0.0 for v, low, _ in bars],
        [high - v if high is not None else 0.0 for v, _, high in bars],
    ]


def bar_chart(fig, series: dict[str, dict[str, Bar]], title: str, colors: list[str]):
    ax = fig.add_subplot()
    models = [m for m in MODELS if any(m in s for s in series.values())]
    width = 0.8 / len(series)
    for i, (name, data) in enumerate(series.items()):
        xs = [j + (i - (len(series) - 1) / 2) * width for j, m in enumerate(models) if m in data]
        bars = [data[m] for m in models if m in data]
        ys = [b[0] for b in bars]
        drawn = ax.bar(xs, ys, width * 0.95, label=name, color=colors[i])
        if any(b[1] is not None for b in bars):
            ax.errorbar(xs, ys, yerr=error_bars(bars), fmt="none", ecolor="black", elinewidth=0.8, capsize=3)
        ax.bar_label(drawn, labels=[fmt_factor(y) for y in ys], fontsize=8, padding=2)
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(len(models)), [get_model(m).display for m in models])
    ax.set_ylabel("throughput speedup (×); >1: Keras 3 faster")
    top = max(max(b[2] if b[2] is not None else b[0], b[0]) for s in series.values() for b in s.values())
    ax.set_ylim(0, max(1.2, top * 1.2))
    ax.set_title(title)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    return fig


def per_row_chart(fig, table: TableAnalysis, title: str):
    from matplotlib.patches import Patch
    from matplotlib.ticker import FuncFormatter

    rows = table.rows
    ax = fig.add_subplot()
    ax.set_yscale("log")
    columns = [c for c in COLUMNS if any(c in f.cells for f in rows)]  # only the backends this table has

    def bar(f: RowFacts, column: Column) -> Bar | None:
        found = table.estimate(f.cells.get(column))
        if found is None:
            return None
        interval = found.interval()
        return (found.center, *(interval or (None, None)))

    values = [b for f in rows for c in columns if (b := bar(f, c)) is not None]
    floor = min(low if low is not None else v for v, low, _ in values) / 3
    high = max(top if top is not None else v for v, _, top in values)
    width = min(0.8 / len(columns), 0.2)
    for i, column in enumerate(columns):
        offset = (i - (len(columns) - 1) / 2) * width
        shown = [(j, f, b) for j, f in enumerate(rows) if (b := bar(f, column)) is not None]
        xs = [j + offset for j, _, _ in shown]
        ys = [b[0] for _, _, b in shown]
        drawn = ax.bar(xs, [y - floor for y in ys], width * 0.9, bottom=floor, label=column.header, color=column.color)
        for patch, (_, f, _) in zip(drawn.patches, shown):
            if column in f.noisy:
                patch.set_hatch("//")
        if shown:
            ax.errorbar(xs, ys, yerr=error_bars([b for _, _, b in shown]), fmt="none", ecolor="black",
                        elinewidth=0.6, capsize=1.5)
        ax.bar_label(drawn, labels=[fmt_ms(y) for y in ys], fontsize=6, rotation=90, padding=2)
        for j, f in enumerate(rows):
            loaded = f.cells.get(column)
            if loaded is not None and loaded.result.status != "ok":
                ax.text(
                    j + offset,
                    floor * 1.1,
                    status_label(loaded.result.status),
                    rotation=90,
                    ha="center",
                    va="bottom",
                    fontsize=7,
                )
    ax.set_ylim(floor, high * 6)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    ticks = [
        f"{get_model(f.key.model).display}\n{f.key.task}, batch {f.key.batch_size}"
        + (f"\n({f.unit})" if f.unit else "")
        for f in rows
    ]
    ax.set_xticks(range(len(rows)), ticks, fontsize=7)
    ax.set_ylabel("figure, ms per step (log scale); lower is better")
    ax.set_title(title)
    # one plain swatch per column: the legend would otherwise copy a column's first bar, hatched where it is noisy
    handles = [Patch(color=c.color, label=c.header) for c in columns]
    ax.legend(handles=handles, loc="upper left", fontsize=7, ncol=3)
    fig.tight_layout()
    return fig


def clear_old_figures(fig_dir: Path, keep: set[Path]) -> None:
    """Remove figures an earlier render wrote for tables that no longer exist (only this module's file names)."""
    if not fig_dir.is_dir():
        return
    for path in fig_dir.glob("*__*-*.png"):
        if path not in keep and any(path.name.endswith(f"-{kind}.png") for kind in FIGURE_KINDS + OTHER_KINDS):
            path.unlink()
