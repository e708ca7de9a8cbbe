"""`make compare A=<dir> B=<dir>`: how much did each cell move from result set A to result set B?

Cells match on (backend, model, task, batch, variant, profile, stack), whatever machine they ran on. For a cell ok
in both, the ratio is B's median / A's median (> 1: B is slower), with the interval
[B.p10 / A.p90, B.p90 / A.p10] from the two step-time spreads; "same" marks a cell whose two p10-p90 intervals
overlap, i.e. the move is within the noise. Output: Markdown in the published table's layout (rows = model /
task / batch in the published order, one column per backend; bench/report/load.py's COLUMNS and order_rows) and a
PNG of the ratios. Where one folder holds the same cell from two machines, the newest file is used.

Beside the raw ratio, the ratio of MFU (docs/ROOFLINE.md): A's MFU / B's MFU, each against its own machine's
ceilings (the run's probe, else the folder's `make ceilings` file), which is B's median / A's median times B's
ceiling / A's ceiling: what is left of the move once each machine's speed is divided out (> 1: B further from its
machine's limit). Where either side has no ceiling, no MFU ratio.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from bench.backends import DEFAULT_STACK
from bench.errors import BenchError
from bench.generate_split import result_split
from bench.report.load import COLUMNS, Column, RowKey, load_results, order_rows
from bench.report.text import fmt_x, github_table, md, status_label, write_text_atomic
from bench.results import Result
from bench.roofline.ceilings import load_machine_file
from bench.roofline.utilisation import use_of


class CellKey(NamedTuple):
    backend: str
    model: str
    task: str
    batch: int
    variant: str
    profile: str
    stack: str = DEFAULT_STACK  # two stacks' cells never pair with each other

    @classmethod
    def of(cls, result: Result) -> CellKey:
        c = result.cell
        return cls(c.backend, c.model, c.task, c.batch_size, c.variant, c.profile, c.stack)

    @property
    def table(self) -> tuple[str, str]:
        return self.profile, self.stack

    @property
    def row(self) -> RowKey:
        return RowKey(self.model, self.task, self.batch)

    @property
    def column(self) -> Column:
        return Column(self.backend, self.variant)

    def text(self) -> str:
        stack = "" if self.stack == DEFAULT_STACK else f" (stack {self.stack})"
        return f"{self.profile}{stack}: {self.backend} {self.model} {self.task} batch={self.batch} {self.variant}"


@dataclass
class Pair:
    """One cell present in both sets."""

    key: CellKey
    a: Result
    b: Result
    a_ceilings: dict | None = None  # the side's machine file (bench/roofline/ceilings.py), for a run without its own
    b_ceilings: dict | None = None

    @property
    def mfu_ratio(self) -> float | None:
        """A's MFU / B's MFU, each against its own machine's ceilings; None where either has none."""
        if not self.comparable:
            return None
        a, b = use_of(self.a, self.a_ceilings), use_of(self.b, self.b_ceilings)
        if a is None or b is None or not a.mfu or not b.mfu:
            return None
        return a.mfu / b.mfu

    @property
    def comparable(self) -> bool:
        return self.a.status == "ok" and self.b.status == "ok"

    @property
    def ratio(self) -> float | None:
        if not self.comparable or self.a.summary().median == 0:
            return None
        return self.b.summary().median / self.a.summary().median

    @property
    def interval(self) -> tuple[float, float] | None:
        """[B.p10 / A.p90, B.p90 / A.p10]: the ratio's range if each side can be anywhere in its p10-p90."""
        if not self.comparable:
            return None
        a, b = self.a.summary(), self.b.summary()
        if a.p10 <= 0 or a.p90 <= 0:
            return None
        return b.p10 / a.p90, b.p90 / a.p10

    @property
    def same(self) -> bool:
        """The two p10-p90 intervals overlap: the move is within the step-to-step noise."""
        if not self.comparable:
            return False
        a, b = self.a.summary(), self.b.summary()
        return a.p10 <= b.p90 and b.p10 <= a.p90

    def text(self) -> str:
        if not self.comparable:
            return f"A {status_text(self.a)} / B {status_text(self.b)}"
        ratio, interval = self.ratio, self.interval
        text = fmt_x(ratio) if ratio is not None else "n/a"
        if interval:
            text += f" ({interval[0]:.2f}–{interval[1]:.2f})"
        if self.same:
            text += " same"
        if (mfu := self.mfu_ratio) is not None:
            text += f" · MFU {fmt_x(mfu)}"
        if self.a.unit != self.b.unit:
            text += f" [units differ: {self.a.unit} vs {self.b.unit}]"
        return text


def status_text(result: Result) -> str:
    return status_label(result.status) if result.status != "ok" else "ok"


@dataclass
class Comparison:
    a_dir: Path
    b_dir: Path
    pairs: list[Pair]
    only_a: list[CellKey]
    only_b: list[CellKey]

    def tables(self) -> list[tuple[str, str]]:
        """(profile, stack) of each table, today's stack first."""
        return sorted({p.key.table for p in self.pairs}, key=lambda t: (t[0], t[1] != DEFAULT_STACK, t[1]))


def newest_by_cell(results_dir: Path) -> dict[CellKey, Result]:
    if not results_dir.is_dir():
        raise BenchError(f"no results folder {results_dir}")
    cells: dict[CellKey, Result] = {}
    for loaded in load_results(results_dir):
        key = CellKey.of(loaded.result)
        if key not in cells or loaded.result.created_at > cells[key].created_at:
            cells[key] = loaded.result
    if not cells:
        raise BenchError(f"no result files under {results_dir}")
    return cells


def folder_ceilings(results_dir: Path, result: Result) -> dict | None:
    """The machine file a folder keeps for the machine a result ran on (make ceilings RESULTS=<dir>), if any."""
    return (load_machine_file(results_dir, result.provenance.get("machine") or {}) or {}).get("ceilings")


def compare(a_dir: Path, b_dir: Path) -> Comparison:
    a, b = newest_by_cell(a_dir), newest_by_cell(b_dir)
    keys = sorted(a.keys() & b.keys())
    pairs = [Pair(k, a[k], b[k], folder_ceilings(a_dir, a[k]), folder_ceilings(b_dir, b[k])) for k in keys]
    return Comparison(a_dir, b_dir, pairs, sorted(a.keys() - b.keys()), sorted(b.keys() - a.keys()))


def ordered_pairs(comparison: Comparison, table: tuple[str, str]) -> list[tuple[RowKey, dict[Column, Pair]]]:
    """One profile's pairs as table rows in the published order."""
    grid: dict[RowKey, dict[Column, Pair]] = {}
    for pair in comparison.pairs:
        if pair.key.table == table:
            grid.setdefault(pair.key.row, {})[pair.key.column] = pair
    return [(row, grid[row]) for row in order_rows(table[0], grid)]


def markdown(comparison: Comparison, figure: str | None = None) -> str:
    lines = [
        f"# Comparison: B = `{comparison.b_dir}` over A = `{comparison.a_dir}`",
        "",
        "Each cell: B's median / A's median (> 1: B is slower), with the range [B.p10 / A.p90, B.p90 / A.p10]; "
        "**same** where the two p10–p90 intervals overlap (the move is within the step-to-step noise); "
        "**MFU**: A's MFU / B's MFU, each against its own machine's measured ceilings (> 1: B further from its "
        "machine's limit; docs/ROOFLINE.md), the move with each machine's speed divided out.",
        f"{len(comparison.pairs)} cells in both, {sum(p.same for p in comparison.pairs)} the same, "
        f"{len(comparison.only_a)} only in A, {len(comparison.only_b)} only in B.",
    ]
    headers = ["Model / task", "Batch", *[c.header for c in COLUMNS]]
    for profile, stack in comparison.tables():
        body = [
            [md(row.label()), str(row.batch_size), *[md(cells[c].text()) if c in cells else "" for c in COLUMNS]]
            for row, cells in ordered_pairs(comparison, (profile, stack))
        ]
        lines += ["", f"## {profile} profile" + ("" if stack == DEFAULT_STACK else f", stack {stack}"), "", github_table(body, headers)]
    lines += split_lines(comparison)
    for name, keys in (("A", comparison.only_a), ("B", comparison.only_b)):
        if keys:
            lines += ["", f"## Only in {name}", ""] + [f"- {k.text()}" for k in keys]
    if figure:
        lines += ["", f"![B / A per cell]({figure})"]
    return "\n".join(lines) + "\n"


def split_lines(comparison: Comparison) -> list[str]:
    """Generate cells split in both sets (bench/generate_split.py): B / A of TTFT and of TPOT, so a move is placed
    in the prefill or the decode."""
    body = []
    for pair in comparison.pairs:
        a, b = result_split(pair.a), result_split(pair.b)
        if not pair.comparable or not a or not b:
            continue
        ratios = [fmt_x(b[k] / a[k]) if a.get(k) and b.get(k) and a[k] > 0 else "n/a" for k in ("ttft_ms", "tpot_ms")]
        tpot = f"{a['tpot_ms']:.4g} → {b['tpot_ms']:.4g}" if None not in (a.get("tpot_ms"), b.get("tpot_ms")) else ""
        body.append([md(pair.key.text()), f"{a['ttft_ms']:.4g} → {b['ttft_ms']:.4g}", ratios[0], tpot, ratios[1]])
    if not body:
        return []
    return [
        "",
        "## Generate split: time to first token and time per output token, B / A",
        "",
        github_table(body, ["cell", "TTFT ms (A → B)", "TTFT B / A", "TPOT ms (A → B)", "TPOT B / A"]),
    ]


def draw(comparison: Comparison, path: Path) -> Path | None:
    """Ratios with their intervals, one line per comparable cell, log scale; None when there is none."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.style
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, NullFormatter

    rows = [
        (row, c, cells[c])
        for p in comparison.tables()
        for row, cells in ordered_pairs(comparison, p)
        for c in COLUMNS
        if c in cells and cells[c].ratio is not None
    ]
    if not rows:
        return None
    with matplotlib.style.context("default"), matplotlib.rc_context({"font.size": 8}):
        fig = Figure(figsize=(8, 1.5 + 0.22 * len(rows)))
        ax = fig.add_subplot()
        ax.set_xscale("log")
        for y, (_row, column, pair) in enumerate(rows):
            low, high = pair.interval or (pair.ratio, pair.ratio)
            color = column.color
            ax.errorbar(
                pair.ratio,
                y,
                xerr=[[pair.ratio - low], [high - pair.ratio]],
                fmt="o",
                color=color,
                mfc="white" if pair.same else color,
                capsize=2,
                markersize=4,
            )
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}×"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.axvline(1.0, color="black", linewidth=0.8, linestyle="--")
        ax.set_yticks(
            range(len(rows)), [f"{row.label()} b{row.batch_size} · {c.header}" for row, c, _ in rows], fontsize=6
        )
        ax.invert_yaxis()
        ax.set_xlabel("B median / A median (log scale); > 1: B slower; hollow: the same within p10–p90")
        ax.set_title(f"B = {comparison.b_dir} over A = {comparison.a_dir}")
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, format="png", dpi=100, metadata={"Software": None})
    return path


def run(a_dir: Path, b_dir: Path, out: Path) -> tuple[str, Path, Path | None]:
    """Write <out> (Markdown) and the PNG beside it; return the Markdown and both paths."""
    comparison = compare(a_dir, b_dir)
    png = draw(comparison, out.with_suffix(".png"))
    text = markdown(comparison, png.name if png else None)
    write_text_atomic(out, text)
    return text, out, png
