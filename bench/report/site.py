"""The results page: <site>/index.html, every table of RESULTS.md as rows a reader filters (profile, stack, model,
backend, task) and opens, a cell at a time, to its raw windows (a plotly plot), its warm-up and compile events,
its config and its provenance.

It opens from disk with no server and no network: the tables are plain HTML written here, each cell's drill-down
(plotly figure JSON, made by plotly's Python API, and the cell's records) is in data.js beside it, and plotly.js's
basic partial bundle (bench/report/vendor/, 1.2 MB against the full bundle's 4.8) beside it, copied once and again
only when it changes, so the committed page stays small. The only JavaScript of our own is the glue in GLUE: filter
rows, draw a figure on open.
The output is deterministic (no render time, sorted keys), as RESULTS.md's is.
"""
from __future__ import annotations

import hashlib
import html
import json
import os
from pathlib import Path

from bench.base.atomic import write_bytes_atomic
from bench.catalogue.registry import get_model
from bench.judge.analysis import INCONCLUSIVE, TIE, WINNER, Report, TableAnalysis
from bench.record.load import COLUMNS, KERAS3, Column, Loaded
from bench.record.text import status_label, write_text_atomic
from bench.report.markdown import LEGEND, measured_text

INDEX = "index.html"
DATA = "data.js"
PLOTLY = "plotly-basic.min.js"
VENDORED_PLOTLY = Path(__file__).resolve().parent / "vendor" / PLOTLY
PLOTLY_BASIC_VERSION = "4.1.1"  # npm plotly.js-basic-dist-min: bench/report/vendor/README.md
PLOTLY_BASIC_SHA256 = "99784e3abfb07b142a15e521a439e6d9addceadb3f79553fd24c72774f0649ba"
FILTERS = ("profile", "stack", "model", "backend", "task")
DIGITS = 5  # significant digits kept of each window (ms): the page's data stays small, the plot unchanged


def verdict(table: TableAnalysis, loaded: Loaded, facts, column: Column) -> str:
    """The cell's word in its row's ranking, as RESULTS.md's bold, ≈ and marks say it."""
    if loaded.result.status != "ok":
        return status_label(loaded.result.status)
    if table.noise(loaded).noisy:
        return "noisy: not ranked"
    if column.backend not in KERAS3 or column.variant != "default":
        return "not ranked (only Keras 3 backends are)"
    if column.backend not in facts.ranked:
        return "not ranked"
    if facts.outcome == WINNER:
        return "winner" if column.backend in facts.winners else "slower than the winner"
    if facts.outcome == TIE:
        return "tie for fastest" if column.backend in facts.winners else "slower than the tied fastest"
    if facts.outcome == INCONCLUSIVE:
        return "inconclusive row"
    return "alone in its row"


def rounded(values) -> list[float]:
    return [float(f"{v:.{DIGITS}g}") for v in values or []]


def windows_figure(loaded: Loaded, center: float | None, interval) -> dict:
    """Each process's warm-up and timed windows in order (ms), its compile events marked, the figure and its
    interval drawn across: plotly figure JSON."""
    import plotly.graph_objects as go

    fig = go.Figure(layout={"template": "none"})
    for n, run in enumerate(loaded.result.runs, 1):
        warm = rounded(run.warmup_ms)
        timed = rounded(run.windows_ms if run.windows_ms and not run.timed_ms else run.timed_ms)
        steps = list(range(1, len(warm) + len(timed) + 1))
        if warm:
            fig.add_scatter(x=steps[: len(warm)], y=warm, mode="markers", name=f"process {n} warm-up",
                            marker={"color": "lightgray", "size": 5})
        fig.add_scatter(x=steps[len(warm):], y=timed, mode="lines+markers", name=f"process {n} timed",
                        marker={"size": 4})
        events = run.compile_events or []
        compiled = [(s, v) for s, v, e in zip(steps, warm + timed, events) if e]
        if compiled:
            fig.add_scatter(x=[s for s, _ in compiled], y=[v for _, v in compiled], mode="markers",
                            name=f"process {n} compile events", marker={"symbol": "x", "size": 9, "color": "red"})
    if center:
        fig.add_hline(y=center, line={"color": "black", "width": 1}, annotation_text="figure")
    if interval:
        fig.add_hrect(y0=interval[0], y1=interval[1], fillcolor="gray", opacity=0.15, line_width=0)
    fig.update_layout(height=320, margin={"l": 50, "r": 10, "t": 30, "b": 40},
                      xaxis_title="window (warm-up, then timed)", yaxis_title=loaded.result.unit,
                      title={"text": f"{loaded.path}", "font": {"size": 11}})
    return fig.to_plotly_json()


def cell_data(loaded: Loaded, center: float | None, interval) -> dict:
    result = loaded.result
    return {
        "figure": windows_figure(loaded, center, interval) if result.runs else None,
        "events": [
            {
                "process": n,
                "status": run.status,
                "first_step_ms": run.first_step_ms,
                "first_step_contains": run.first_step_contains,
                "warmup_ms": rounded(run.warmup_ms),
                "compile_events": run.compile_events,
                "steadiness": run.steadiness,
                "message": run.message,
            }
            for n, run in enumerate(result.runs, 1)
        ],
        "config": result.config,
        "provenance": result.provenance,
        "file": loaded.path,
    }


def table_rows(table: TableAnalysis, start: int, choices: dict[str, set[str]]) -> tuple[list[str], dict[str, dict]]:
    """The table's HTML rows, one per cell, each followed by its hidden drill-down row; and the cells' data. Each
    row's filter values are added to `choices`."""
    group = table.group
    rows, data = [], {}
    n = start
    for facts in table.rows:
        for column in COLUMNS:
            loaded = facts.cells.get(column)
            if loaded is None:
                continue
            n += 1
            cell_id = f"cell{n}"
            found = table.estimate(loaded) if loaded.result.status == "ok" else None
            interval = found.interval() if found else None
            figure = measured_text(table, loaded, facts.unit_in_cell) if found else status_label(
                loaded.result.status
            )
            values = {
                "profile": group.profile,
                "stack": group.stack,
                "model": get_model(facts.key.model).display,
                "backend": column.header,
                "task": facts.key.task,
            }
            for name, value in values.items():
                choices[name].add(html.escape(value))
            attrs = " ".join(f'data-{k}="{html.escape(v)}"' for k, v in values.items())
            cells = [
                facts.key.label(),
                str(facts.key.batch_size),
                column.header,
                figure,
                f"{interval[0]:.4g}–{interval[1]:.4g}" if interval else "",
                found.basis if found else "",
                verdict(table, loaded, facts, column),
            ]
            tds = "".join(f"<td>{html.escape(c)}</td>" for c in cells)
            rows.append(
                f'<tr class="cell" id="{cell_id}" {attrs}>{tds}'
                f'<td><button class="open" data-cell="{cell_id}">windows</button></td></tr>'
            )
            rows.append(f'<tr class="drill" id="{cell_id}-drill" hidden><td colspan="8"></td></tr>')
            data[cell_id] = cell_data(loaded, found.center if found else None, interval)
    return rows, data


HEADERS = ["Model / task", "Batch", "Backend", "Figure ± interval's wider side", "95% interval", "Interval basis",
           "Verdict", ""]

GLUE = """
function applyFilters() {
  const chosen = {};
  document.querySelectorAll("select.filter").forEach(s => { if (s.value) chosen[s.name] = s.value; });
  let shown = 0;
  document.querySelectorAll("tr.cell").forEach(row => {
    const keep = Object.entries(chosen).every(([k, v]) => row.dataset[k] === v);
    row.hidden = !keep;
    if (!keep) document.getElementById(row.id + "-drill").hidden = true;
    shown += keep ? 1 : 0;
  });
  document.querySelectorAll("section.table").forEach(t => { t.hidden = !t.querySelector("tr.cell:not([hidden])"); });
  document.getElementById("shown").textContent = shown;
}
function openCell(id) {
  const drill = document.getElementById(id + "-drill");
  drill.hidden = !drill.hidden;
  const td = drill.firstElementChild;
  if (drill.hidden || td.dataset.drawn) return;
  td.dataset.drawn = "1";
  const cell = BENCH_CELLS[id];
  const plot = document.createElement("div");
  plot.className = "windows-plot";
  td.appendChild(plot);
  if (cell.figure) Plotly.newPlot(plot, cell.figure.data, cell.figure.layout, {displaylogo: false});
  for (const [title, value] of [["warm-up and compile events", cell.events], ["config", cell.config],
                                ["provenance", cell.provenance]]) {
    const box = document.createElement("details");
    box.innerHTML = "<summary></summary><pre></pre>";
    box.firstChild.textContent = title + " (" + cell.file + ")";
    box.lastChild.textContent = JSON.stringify(value, null, 1);
    td.appendChild(box);
  }
}
document.querySelectorAll("select.filter").forEach(s => s.addEventListener("change", applyFilters));
document.querySelectorAll("button.open").forEach(b => b.addEventListener("click", () => openCell(b.dataset.cell)));
applyFilters();
"""

STYLE = """
body { font-family: sans-serif; font-size: 13px; margin: 1em 2em; }
table { border-collapse: collapse; margin-bottom: 1.5em; }
td, th { border: 1px solid #ccc; padding: 2px 6px; text-align: left; }
tr.drill td { background: #fafafa; }
pre { max-height: 20em; overflow: auto; font-size: 11px; }
.filters label { margin-right: 1em; }
"""


def options(values: set[str]) -> str:
    """A filter's choices: "all", then every value a row has (already escaped), sorted."""
    return '<option value="">all</option>' + "".join(f'<option value="{v}">{v}</option>' for v in sorted(values))


def write_plotly(site: Path) -> None:
    """The vendored plotly.js bundle beside the page, copied only when it differs from the one there. Refused when
    it is not the one recorded or not the plotly.js version whose figure JSON plotly's Python API writes."""
    from plotly.offline import get_plotlyjs_version

    bundle = VENDORED_PLOTLY.read_bytes()
    if hashlib.sha256(bundle).hexdigest() != PLOTLY_BASIC_SHA256:
        raise ValueError(f"{VENDORED_PLOTLY} is not the vendored plotly.js {PLOTLY_BASIC_VERSION} (sha256 differs)")
    if get_plotlyjs_version() != PLOTLY_BASIC_VERSION:
        raise ValueError(
            f"the tools env's plotly writes figures for plotly.js {get_plotlyjs_version()}, the vendored bundle is "
            f"{PLOTLY_BASIC_VERSION}: vendor the matching plotly.js-basic-dist-min (bench/report/vendor/README.md)"
        )
    there = site / PLOTLY
    if not (there.is_file() and there.read_bytes() == bundle):
        write_bytes_atomic(there, bundle)
    for stale in ("plotly.min.js", "plotly.version"):  # the full bundle an earlier page used
        (site / stale).unlink(missing_ok=True)


def figures_html(table: TableAnalysis, site: Path, fig_dir: Path | None) -> str:
    """The table's figures (make table's PNGs), linked relatively, folded away until asked for."""
    pngs = sorted(fig_dir.glob(f"{table.group.slug}-*.png")) if fig_dir and fig_dir.is_dir() else []
    if not pngs:
        return ""
    images = "".join(
        f'<img src="{html.escape(Path(os.path.relpath(png, site)).as_posix())}" alt="{html.escape(png.stem)}" '
        'style="max-width: 48%; margin: 4px">'
        for png in pngs
    )
    return f"<details><summary>figures</summary>{images}</details>"


def findings_html(report: Report) -> str:
    """The published findings re-tested on the first GPU table, as RESULTS.md opens on them; empty without a paper
    table."""
    from bench.report.headline import findings, gpu_tables

    if not any(t.paper for t in report.tables):
        return ""
    gpus = gpu_tables(report.tables)
    table = gpus[0] if gpus else None
    where = table.group.machine if table else "not yet measured on a GPU"
    head = "".join(f"<th>{html.escape(h)}</th>" for h in ("published finding (A100)", "published", "ours", "verdict"))
    rows = "".join(
        f"<tr><td>{html.escape(f.claim)}</td><td>{html.escape(f.published)}</td><td>{html.escape(f.ours)}</td>"
        f"<td><b>{html.escape(f.verdict)}</b></td></tr>"
        for f in findings(table)
    )
    return (f'<section class="findings"><h2>Findings, re-tested on a GPU ({html.escape(where)})</h2>'
            f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></section>")


def write_site(report: Report, site: Path, fig_dir: Path | None = None) -> Path:
    """Write <site>/index.html, data.js and the plotly.js bundle from the analysed report (each table's figures linked
    from `fig_dir`); returns the page's path."""
    site = Path(site)
    site.mkdir(parents=True, exist_ok=True)
    sections, data, n = [], {}, 0
    choices: dict[str, set[str]] = {name: set() for name in FILTERS}
    for index, table in enumerate(report.tables, 1):
        rows, cells = table_rows(table, n, choices)
        n += len(cells)
        data.update(cells)
        head = "".join(f"<th>{html.escape(h)}</th>" for h in HEADERS)
        figures = figures_html(table, site.resolve(), fig_dir.resolve() if fig_dir else None)
        sections.append(
            f'<section class="table"><h2>{index}. {html.escape(table.group.title)}</h2>{figures}'
            f"<table><thead><tr>{head}</tr></thead><tbody>\n" + "\n".join(rows) + "\n</tbody></table></section>"
        )
    body = "\n".join(sections)
    filters = "".join(
        f'<label>{name} <select class="filter" name="{name}">{options(choices[name])}</select></label>'
        for name in FILTERS
    )
    legend = "".join(f"<li>{html.escape(text.replace('**', ''))}</li>" for text in LEGEND)
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Benchmark results</title>
<style>{STYLE}</style>
<script src="{PLOTLY}"></script><script src="{DATA}"></script></head>
<body><h1>Benchmark results</h1>
<p>Every table of <a href="../RESULTS.md">RESULTS.md</a>, one row per cell (as a matrix, two runs side by side, and
each cell's history with its change points: <a href="history.html">history.html</a>); <b id="shown">{n}</b> of {n}
cells shown.
Open a cell to see its raw windows, its warm-up and compile events, its config and its provenance.</p>
{findings_html(report)}
<div class="filters">{filters}</div>
<details><summary>How to read a cell</summary><ul>{legend}</ul></details>
{body}
<script>{GLUE}</script>
</body></html>
"""
    write_text_atomic(site / DATA, "const BENCH_CELLS = " + json.dumps(data, sort_keys=True, default=str) + ";\n")
    write_plotly(site)
    write_text_atomic(site / INDEX, page)
    return site / INDEX
