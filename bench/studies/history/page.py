"""The results page's history views, <site>/history.html beside index.html: each table as a matrix (rows by
backends, coloured by verdict, the interval on hover), any two runs of the history side by side (B against A, as
`make compare A=<run> B=<run>` prints it), and a key's series with its change points (make history's). Static,
local files only: the data in history.js, plotly.js's bundle the main page already has. The view and its choices
are in the URL's hash (#view=series&cell=<key>, #view=ab&a=<run>&b=<run>, #view=matrix&table=<n>), so a link or a
test opens one."""
from __future__ import annotations

import json
from pathlib import Path

from bench.judge.analysis import Report
from bench.record.text import write_text_atomic
from bench.report.site import PLOTLY
from bench.studies.history.page_data import every_series, matrix, runs_and_pairs

PAGE = "history.html"
DATA = "history.js"
TITLE = "<title>Benchmark results: matrix, A vs B, history</title>"  # what marks the page as ours (bench table)

STYLE = """
body { font-family: sans-serif; font-size: 13px; margin: 1em 2em; }
nav a { margin-right: 1.2em; font-weight: bold; }
nav a.active { text-decoration: none; color: black; }
table { border-collapse: collapse; margin-bottom: 1.5em; }
td, th { border: 1px solid #ccc; padding: 2px 6px; text-align: left; }
td.v-winner, td.v-faster { background: #b7e1b0; }
td.v-tie { background: #d9f0d3; }
td.v-slower { background: #f9c89b; }
td.v-inconclusive { background: #fff3b0; }
td.v-noisy { background: #ddd; }
td.v-failed { background: #f4b6b6; }
td.v-same { background: #dbe9f6; }
#series-plot { width: 100%; height: 420px; }
"""

GLUE = """
const H = BENCH_HISTORY;
function params() { return Object.fromEntries(new URLSearchParams(location.hash.slice(1))); }
function go(changes) { location.hash = new URLSearchParams({...params(), ...changes}).toString(); }
function verdictClass(v) {
  if (/^winner|^faster/.test(v)) return "v-faster";
  if (/^tie/.test(v)) return "v-tie";
  if (/^slower/.test(v)) return "v-slower";
  if (/^same/.test(v)) return "v-same";
  if (/inconclusive/.test(v)) return "v-inconclusive";
  if (/^noisy/.test(v)) return "v-noisy";
  if (/^not ranked|^alone|^not compar/.test(v)) return "";
  return "v-failed";
}
function cell(tr, text, title, cls) {
  const td = document.createElement("td"); td.textContent = text;
  if (title) td.title = title; if (cls) td.className = cls; tr.appendChild(td); return td;
}
function header(table, names) {
  const tr = document.createElement("tr");
  names.forEach(n => { const th = document.createElement("th"); th.textContent = n; tr.appendChild(th); });
  table.appendChild(tr);
}
function options(select, items, chosen) {
  select.replaceChildren(...items.map(([value, label]) => new Option(label, value, false, value === chosen)));
}
function showMatrix(p) {
  const pick = document.getElementById("matrix-table");
  options(pick, H.matrix.map((t, i) => [String(i), t.title]), p.table || "0");
  const t = H.matrix[Number(pick.value)] || H.matrix[0];
  const table = document.getElementById("matrix");
  table.replaceChildren();
  if (!t) return;
  header(table, ["row", ...t.columns]);
  const filter = document.getElementById("matrix-filter").value.toLowerCase();
  const rows = t.rows.filter(r => r.label.toLowerCase().includes(filter) ||
                                  r.cells.some(c => c && c.key.toLowerCase().includes(filter)));
  document.getElementById("matrix-count").textContent = rows.length + " of " + t.rows.length + " rows";
  rows.forEach(r => {
    const tr = document.createElement("tr"); tr.className = "matrix-row";
    cell(tr, r.label);
    r.cells.forEach(c => c ? cell(tr, c.text, c.interval + " — " + c.verdict, verdictClass(c.verdict)) : cell(tr, ""));
    table.appendChild(tr);
  });
}
function pairIndex() {  // the default pair: the newest two runs that measured a cell in common
  return Object.keys(H.ab.pairs).map(k => k.split("|").map(Number)).sort((x, y) => y[1] - x[1] || y[0] - x[0])[0];
}
function bold(td, text) {  // make compare's Markdown: **slower** is bold there
  td.replaceChildren(...text.split("**").map((part, i) => {
    if (i % 2 === 0) return document.createTextNode(part);
    const b = document.createElement("b"); b.textContent = part; return b;
  }));
}
function showAB(p) {
  const runs = H.ab.runs, W = H.ab.words, at = Object.fromEntries(runs.map((r, i) => [r.id, i]));
  const first = pairIndex() || [0, 1];
  let i = p.a in at ? at[p.a] : first[0], j = p.b in at ? at[p.b] : first[1];
  if (i > j) { go({a: runs[j].id, b: runs[i].id}); return; }  // A is the earlier run: each pair is held so
  options(document.getElementById("run-a"), runs.map(r => [r.id, r.label]), runs[i] && runs[i].id);
  options(document.getElementById("run-b"), runs.map(r => [r.id, r.label]), runs[j] && runs[j].id);
  const table = document.getElementById("ab"), note = document.getElementById("ab-note");
  const command = document.getElementById("ab-command");
  table.replaceChildren(); command.textContent = "";
  if (!runs[i] || !runs[j]) { note.textContent = "The history holds fewer than two runs."; return; }
  if (i === j) { note.textContent = "A and B are one run: choose two."; return; }
  command.textContent = "make compare A=" + runs[i].id + " B=" + runs[j].id;
  const pair = H.ab.pairs[i + "|" + j];
  if (!pair) {
    note.textContent = runs[i].table !== runs[j].table
      ? "Not compared: A is " + runs[i].table + ", B is " + runs[j].table + "; cells pair only within one " +
        "profile and stack, so make compare finds no cell in both."
      : "Not compared: these two runs measured no cell in common.";
    return;
  }
  note.textContent = W[pair.counts] + " A is the earlier run of the two; B / A and the verdicts are make " +
    "compare's, word for word.";
  header(table, ["cell", "A", "B", "B / A (make compare)", "verdict", "why"]);
  pair.rows.forEach(x => {
    const tr = document.createElement("tr"); tr.className = "ab-row";
    cell(tr, W[x[0]]); cell(tr, W[x[1]]); cell(tr, W[x[2]]); bold(cell(tr, ""), W[x[3]]);
    cell(tr, W[x[4]], W[x[5]], verdictClass(W[x[4]])); cell(tr, W[x[5]]);
    table.appendChild(tr);
  });
}
function showSeries(p) {
  const filter = document.getElementById("series-filter");
  const keys = Object.keys(H.series).sort().filter(k => k.includes(filter.value));
  const key = p.cell && H.series[p.cell] ? p.cell : keys[0];
  options(document.getElementById("series-key"), keys.map(k => [k, k]), key);
  document.getElementById("series-count").textContent = keys.length;
  const plot = document.getElementById("series-plot");
  const list = document.getElementById("series-changes");
  list.replaceChildren();
  if (!key) { Plotly.purge(plot); return; }
  const traces = [], shapes = [];
  H.series[key].forEach(s => {
    traces.push({x: s.points.map(q => q.label), y: s.points.map(q => q.center), name: s.where, mode: "lines+markers",
      type: "scatter", text: s.points.map(q => q.commit ? "commit " + q.commit : ""),
      error_y: {type: "data", symmetric: false, array: s.points.map(q => q.high == null ? 0 : q.high - q.center),
                arrayminus: s.points.map(q => q.low == null ? 0 : q.center - q.low)}});
    s.changes.forEach(c => {
      shapes.push({type: "line", xref: "x", yref: "paper", x0: c.at, x1: c.at, y0: 0, y1: 1,
                   line: {color: c.status === "change" ? "red" : "orange", dash: "dot"}});
      const li = document.createElement("li"); li.className = "change";
      li.textContent = s.where + ": between " + c.before + " and " + c.at + " " + c.size + ", p " + c.p +
        "; judge: " + c.verdict + "; " + c.bisect + "; status: " + c.status + (c.triage ? "; triaged " + c.triage : "");
      list.appendChild(li);
    });
  });
  if (!list.children.length) {
    const li = document.createElement("li"); li.textContent = H.searched || "no change point"; list.appendChild(li);
  }
  Plotly.react(plot, traces, {shapes: shapes, margin: {l: 60, r: 10, t: 30, b: 90},
    title: {text: key, font: {size: 12}}, xaxis: {type: "category"},
    yaxis: {title: {text: H.series[key][0].unit}}, template: "none"}, {displaylogo: false});
}
const VIEWS = {matrix: showMatrix, ab: showAB, series: showSeries};
function show() {
  const p = params(), view = VIEWS[p.view] ? p.view : "matrix";
  document.querySelectorAll("section.view").forEach(s => { s.hidden = s.id !== view + "-view"; });
  document.querySelectorAll("nav a").forEach(a => a.classList.toggle("active", a.dataset.view === view));
  VIEWS[view](p);
}
document.querySelectorAll("nav a").forEach(a => a.addEventListener("click", e => {
  e.preventDefault(); go({view: a.dataset.view}); }));
document.getElementById("matrix-table").addEventListener("change", e => go({table: e.target.value}));
document.getElementById("matrix-filter").addEventListener("input", () => showMatrix(params()));
document.getElementById("run-a").addEventListener("change", e => go({a: e.target.value}));
document.getElementById("run-b").addEventListener("change", e => go({b: e.target.value}));
document.getElementById("series-key").addEventListener("change", e => go({cell: e.target.value}));
document.getElementById("series-filter").addEventListener("input", () => showSeries({...params(), cell: ""}));
window.addEventListener("hashchange", show);
show();
"""


def write_history_page(report: Report, results_dir: Path, site: Path) -> Path:
    """Write <site>/history.html and history.js (deterministic: sorted keys, no render time)."""
    from bench.studies.history import index

    index.refresh(results_dir)
    series, searched = every_series(results_dir)
    data = {"matrix": matrix(report), "ab": runs_and_pairs(results_dir), "series": series, "searched": searched}
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">{TITLE}
<style>{STYLE}</style>
<script src="{PLOTLY}"></script><script src="{DATA}"></script></head>
<body><h1>Benchmark results: matrix, A vs B, history</h1>
<p><a href="index.html">Every cell, filterable</a> · rendered by <code>make table</code> from the result files and
their history (<code>make history CELL=&lt;key&gt;</code> prints the same series and change points).</p>
<nav><a href="#view=matrix" data-view="matrix">matrix</a><a href="#view=ab" data-view="ab">A vs B</a>
<a href="#view=series" data-view="series">series</a></nav>
<section class="view" id="matrix-view"><h2>Matrix</h2><label>table <select id="matrix-table"></select></label>
<label>filter <input id="matrix-filter" placeholder="part of a row or cell key"></label> <span id="matrix-count"></span>
<p>Each row's cells coloured by their verdict in the row (hover: the 95% interval and the verdict).</p>
<table id="matrix"></table></section>
<section class="view" id="ab-view" hidden><h2>A vs B</h2>
<p>Any two runs of the history (a run: one invocation, or, before runs had ids, one commit's files of a profile on a
machine; a release sweep's are in the series view), compared as <code>make compare</code> compares them.</p>
<label>A <select id="run-a"></select></label>
<label>B <select id="run-b"></select></label><p id="ab-note"></p><p><code id="ab-command"></code></p>
<table id="ab"></table></section>
<section class="view" id="series-view" hidden><h2>Series</h2>
<label>filter <input id="series-filter" placeholder="part of a key"></label>
<label>key (<span id="series-count"></span>) <select id="series-key"></select></label>
<div id="series-plot"></div><ul id="series-changes"></ul></section>
<script>{GLUE}</script>
</body></html>
"""
    write_text_atomic(site / DATA, "const BENCH_HISTORY = " + json.dumps(data, sort_keys=True, default=str) + ";\n")
    write_text_atomic(site / PAGE, page)
    return site / PAGE
