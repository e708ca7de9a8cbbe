"""The inference grid study's report: <results>/GRID.md and <results>/figures/grid/*.png from the grid's result
files (<results>/grid/, written by bench/studies/grid/run.py; the figures are bench/studies/grid/figures.py's), and a line per
grid in RESULTS.md's studies (registered in bench/studies/table.py SECTIONS) linking it.

One page part per (grid, machine): numbers from different hardware never share a table.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from bench.base.packed import unpack_all
from bench.base.provenance import machine_label, machine_slug
from bench.base.stats import ProcessSpread, fmt_factor
from bench.base.tables import github_table, reasons_once
from bench.judge import Judge
from bench.record import text
from bench.record.results import Result, load, result_files
from bench.record.text import md, write_text_atomic
from bench.report.sections import Section
from bench.studies.grid.figures import draw_figures, length_of
from bench.studies.grid.findings import PointFigure, column_means, findings, framework_means
from bench.studies.grid.run import GRID_DIR, TOLERANCE, WORKER_ENVIRONMENT, beyond_tolerance
from bench.studies.grid.spec import COLUMNS, MODELS

FIG_SUBDIR = "grid"


@dataclass
class GridGroup:
    grid: str
    machine: str
    slug: str
    on_gpu: bool
    results: list[Result] = field(default_factory=list)
    results_dir: Path | None = None  # where the machine's noise study is looked for (bench/judge/noise_file.py)

    @cached_property
    def judge(self) -> Judge:
        return Judge(self.results, self.results_dir)

    @property
    def spread(self) -> ProcessSpread | None:
        """The machine's process-to-process spread from its noise study: each column is one worker process."""
        return self.judge.spread(self.results[0]) if self.results else None

    def points(self) -> list[PointFigure]:
        """Each result as a point: its arithmetic mean (the published way), its median with the standard error of
        its logarithm from its own steps (the worker's offset is added once per comparison, bench/studies/grid/findings.py)
        and the noise gates' reason."""
        out = []
        for r in self.results:
            s = r.summary()
            steps = r.estimate() if s else None  # no spread: the point's own steps only
            noise = self.judge.noise(r) if s else None
            out.append(PointFigure(r.cell.model, r.cell.variant, r.cell.batch_size, length_of(r), r.status,
                                   s.mean if s else None, steps.center if steps else None,
                                   steps.log_se if steps else None, steps.dof if steps else math.inf,
                                   "; ".join(noise.reasons) if noise and noise.noisy else ""))
        return out


def load_grid(results_dir: Path) -> list[GridGroup]:
    """Every current grid result, grouped by (grid, machine label); an unreadable file raises, naming itself."""
    root = Path(results_dir) / GRID_DIR
    unpack_all(results_dir, (GRID_DIR,))  # each grid's machines, tracked packed
    groups: dict[tuple[str, str], GridGroup] = {}
    for path in result_files(root):
        result = load(path)
        machine = result.provenance.get("machine", {})
        key = (result.cell.profile, machine_label(machine))
        group = groups.setdefault(
            key,
            GridGroup(
                result.cell.profile.removeprefix("grid-"),
                key[1],
                machine_slug(machine),
                bool(machine.get("gpus")),
                results_dir=Path(results_dir),
            ),
        )
        group.results.append(result)
    return list(groups.values())


def cell_text(result: Result) -> str:
    if result.status == "unsupported":
        return "NA"
    if result.status != "ok":
        return result.status
    s = result.summary()
    return f"{text.fmt_ms(s.mean)} / {text.fmt_ms(s.median)} ({text.fmt_ms(s.p10)}–{text.fmt_ms(s.p90)}, n={s.count})"


def model_table(group: GridGroup, model: str) -> list[str]:
    results = [r for r in group.results if r.cell.model == model]
    columns = [c for c in COLUMNS if any(r.cell.variant == c for r in results)]
    points = sorted({(r.cell.batch_size, length_of(r)) for r in results})
    by = {(r.cell.variant, r.cell.batch_size, length_of(r)): r for r in results}
    rows = [[f"{b} x {n}"] + [cell_text(by[(c, b, n)]) if (c, b, n) in by else "" for c in columns] for b, n in points]
    lines = [
        github_table(rows, ["batch x length"] + [COLUMNS[c].display for c in columns]),
        "",
    ]
    notes = sorted(
        {
            f"{COLUMNS[r.cell.variant].display} at {r.cell.batch_size} x {length_of(r)}: {r.status}: {r.message}"
            for r in results
            if r.status != "ok"
        }
    )
    notes += sorted(
        f"{COLUMNS[r.cell.variant].display} at {r.cell.batch_size} x {length_of(r)}: its output differs from PyTorch eager's by "
        f"{r.runs[0].settings['max_abs_diff']:.2g}, beyond the tolerance ({TOLERANCE:g} relative): timed, but not the same computation "
        f"(this file predates the check)"
        for r in results
        if r.status == "ok" and beyond_tolerance(r.runs[0].settings)
    )
    first = [
        (COLUMNS[r.cell.variant].display, r.runs[0].first_step_ms)
        for r in results
        if r.status == "ok" and r.runs[0].first_step_ms is not None
    ]
    diffs: dict[str, float] = {}
    for r in results:
        d = r.runs[0].settings.get("max_abs_diff")
        if d is not None and r.cell.variant != "torch-eager":
            diffs[COLUMNS[r.cell.variant].display] = max(d, diffs.get(COLUMNS[r.cell.variant].display, 0.0))
    if first:
        per_col: dict[str, list[float]] = {}
        for c, ms in first:
            per_col.setdefault(c, []).append(ms)
        lines += [
            "First call (trace/compile + the first forward; median over the points): "
            + "; ".join(f"{c} {text.fmt_ms(statistics.median(v))} ms" for c, v in per_col.items())
            + ".",
            "",
        ]
    if diffs:
        lines += [
            "Largest difference of the last hidden state from PyTorch eager's, same weights (over the points; the "
            "tolerance is relative to the output's largest magnitude): "
            + "; ".join(f"{c} {d:.2g}" for c, d in diffs.items())
            + ".",
            "",
        ]
    lines += [f"- {md(n)}" for n in notes[:20]] + ([""] if notes else [])
    return lines


def verdict_cell(finding) -> str:
    """The verdict in bold, its reason after it."""
    reason = finding.verdict[len(finding.decided):].strip()
    return f"**{finding.decided}**" + (f" {md(reason)}" if reason else "")


def findings_table(group: GridGroup) -> list[str]:
    rows = [
        [md(f.claim), md(f.published), md(f.ours), verdict_cell(f)]
        for f in findings(group.points(), group.on_gpu, group.spread)
    ]
    rows, notes = reasons_once(rows, 3)
    return [github_table(rows, ["published finding (HF, Oct 2019)", "published", "ours", "verdict"]),
            *(["", *notes] if notes else [])]  # fmt: skip


METHOD = [
    "Re-test of Hugging Face's \"Benchmarking Transformers: PyTorch and TensorFlow\" (October 2019; published figures in "
    "`bench/data/hf_2019_pytorch_vs_tensorflow.csv`), with Keras 3 beside it. How a number is made:",
    "",
    "- **Models** from their transformers configs (BERT base, DistilBERT base, GPT-2 124M, DistilGPT-2, RoBERTa base, XLNet base, "
    "XLM mlm-en-2048) with seeded random weights, nothing downloaded. **Dropout 0 on every framework** (inference; Keras's "
    "MultiHeadAttention would take its slower einsum path with dropout > 0).",
    "- **Same weights**: the PyTorch model's `model.safetensors` is loaded into the TensorFlow twin (transformers 4.57.6, env "
    "`tf-transformers`) and, through keras-hub 0.32's converters, into Keras 3 (BERT, DistilBERT, GPT-2, RoBERTa). keras-hub has no "
    "XLNet converter (random init, parameter count must equal the PyTorch model's) and no XLM (NA). Each column's last hidden state "
    f"is compared with PyTorch eager's at every point; beyond {TOLERANCE:g} (relative to its largest magnitude) the point fails.",
    "- **Timing**: forward pass only (inference mode / no gradient), synchronised by the suite's timing core. The first call "
    "(trace, compile) is reported apart, warm-up follows until nothing compiles, then the timed calls, **round-robin across the "
    "columns of a point** (call r of every column, then call r+1), each framework in its own process, so the machine's drift "
    f"touches every column alike. Workers run with {', '.join(f'`{k}={v}`' for k, v in WORKER_ENVIRONMENT.items())} so that an idle "
    "framework's threads do not spin on the cores the next column needs.",
    "- **Cells**: mean / median (p10–p90, n) ms per forward. The published figures are means of 30 timeit repeats; ours report "
    "the mean to compare with them and the median with its spread. NA: the length is above the model's position table, or "
    "the column has no such model.",
    "- **Averages**: over the points where every compared column succeeded, and separately the published way (each framework "
    "over its own successful points), which favours a framework that failed the largest points.",
    "- **Verdicts**: a finding about means or speed-ups is decided by a ratio with its 95% interval, the geometric "
    "mean over the paired points of one column's median over the other's (bench/studies/grid/findings.py). Each column is one"
    " worker process that measured every point, so a worker's offset is shared by all its points and averaging points"
    " does not shrink it: the interval adds the two workers' offsets once, from a process spread measured for this grid on this "
    "machine (a noise study of the grid's own profile; the benchmark cells' spread lends none); without one such a "
    "finding is inconclusive. A point a noise gate flagged is left out"
    " of the verdicts, and said so. The published way's arithmetic figures stay beside.",
]


def every_column_table(points: list[PointFigure]) -> list[str]:
    """Per model, every column's mean over the points where all of its columns succeeded, and its ratio to PyTorch eager."""
    means = column_means(points)
    columns = [c for c in COLUMNS if any(c in m for m in means.values())]
    rows = []
    for model, m in means.items():
        base = m.get("torch-eager")
        rows.append(
            [MODELS[model].display, m["points"]]
            + [
                ""
                if c not in m
                else "–"
                if m[c] is None
                else f"{text.fmt_ms(m[c] * 1000)}" + (f" (x{fmt_factor(m[c] / base, unit='')})" if base else "")
                for c in columns
            ]
        )
    if not rows:
        return []
    return [
        "### Every column over the same points",
        "",
        "Mean ms per forward per column over the points where every column that ran on the model succeeded "
        "(x: its time / PyTorch eager's; a point one column failed is left out for all).",
        "",
        github_table(rows, ["model", "points", *[COLUMNS[c].display for c in columns]]),
        "",
    ]


def group_page(group: GridGroup, fig_dir: Path, out_dir: Path) -> list[str]:
    lines = [f"## grid `{group.grid}` — {group.machine}", ""]
    points = group.points()
    means = framework_means(points)
    lines += ["### Then and now", ""] + findings_table(group) + [""]
    p = means["paired"]
    if p["points"]:
        lines += [
            f"PyTorch eager vs TensorFlow (tf.function), mean over the {p['points']} points where both succeeded: "
            f"{p['pytorch']:.4g} s vs {p['tensorflow']:.4g} s.",
            "",
        ]
    lines += every_column_table(points)
    figures = draw_figures(group, fig_dir)
    for model in [m for m in MODELS if any(r.cell.model == m for r in group.results)]:
        lines += [f"### {MODELS[model].display}", ""] + model_table(group, model)
        if f"{model}-time" in figures:
            lines += [
                f"![{MODELS[model].display}: time against sequence length]({figures[f'{model}-time'].relative_to(out_dir).as_posix()})",
                "",
            ]
    if "ratio" in figures:
        lines += [
            "### PyTorch / TensorFlow over the grid",
            "",
            f"![PyTorch eager / TensorFlow mean time]({figures['ratio'].relative_to(out_dir).as_posix()})",
            "",
        ]
    commits = sorted(
        {
            (r.provenance.get("git") or {}).get("commit", "")[:12]
            + (" (dirty)" if (r.provenance.get("git") or {}).get("dirty") else "")
            for r in group.results
        }
    )
    envs = sorted({r.cell.backend for r in group.results})
    stamps = sorted(
        {
            f"{r.cell.backend} {((r.runs[0].process or {}).get('environment') or {}).get('lock_sha256', '')[:12]}"
            for r in group.results
            if r.runs[0].process
        }
    )
    probes = [r.provenance.get("reference") or {} for r in group.results]
    probe_ms = [v for p in probes for k, v in p.items() if k in ("start_ms", "at_write_ms") and v]
    loads = [r.provenance["load_average_1m"] for r in group.results if r.provenance.get("load_average_1m") is not None]
    cores = next((r.provenance.get("cpu_count") for r in group.results if r.provenance.get("cpu_count")), None)
    quiet = (
        [
            f"- Machine load: the framework-free drift probe (bench/measure/drift.py) read {min(probe_ms):.1f} to {max(probe_ms):.1f} ms "
            f"(x{max(probe_ms) / min(probe_ms):.1f})"
            + (f"; 1-minute load average {min(loads):.1f} to {max(loads):.1f} on {cores} cores" if loads else "")
            + machine_state(max(probe_ms) / min(probe_ms), max(loads) if loads else None, cores)
        ]
        if probe_ms
        else []
    )
    lines += (
        ["### Where these numbers come from", ""]
        + quiet
        + [
            f"- {len(group.results)} result files under `{GRID_DIR}/grid-{group.grid}/{group.slug}/`; commit(s) {', '.join(commits)}; envs {', '.join(envs)}.",
            f"- env locks (requirements sha256): {', '.join(stamps)}."
            if stamps
            else "- env locks: not recorded (no run of these files reached a framework).",
            f"- created {min(r.created_at for r in group.results)} to {max(r.created_at for r in group.results)}.",
            "",
        ]
    )
    return lines


def machine_state(probe_ratio: float, max_load: float | None, cores: int | None) -> str:
    """What the probe and the load say of the run. The grid's own busy worker keeps the load near the core count
    (its threads), so only a load well above it says other jobs ran; a probe that moved says the speed drifted."""
    if max_load is not None and cores and max_load > 1.5 * cores:
        return (
            ". **The machine was shared with other jobs while this ran** (a load above 1.5x its cores): absolute times are "
            "noisy; the round-robin keeps the columns of one point comparable."
        )
    if probe_ratio > 1.3:
        return (
            ". The machine's speed drifted while this ran (the probe's spread), with no sign of other jobs: absolute times "
            "carry that drift; the round-robin keeps the columns of one point comparable."
        )
    return "."


def render_grid(results_dir: Path, out: Path | None = None) -> Path | None:
    """Write <results>/GRID.md and its figures; None (nothing written) where there is no grid result."""
    results_dir = Path(results_dir)
    groups = load_grid(results_dir)
    if not groups:
        return None
    out = out or results_dir / "GRID.md"
    fig_dir = results_dir.resolve() / "figures" / FIG_SUBDIR
    lines = (
        [
            "# Inference grid: PyTorch vs TensorFlow vs Keras 3 (re-test of HF, Oct 2019)",
            "",
            "Rendered by `python -m bench grid` / `make grid` (and `make table`) from the grid's result files alone.",
            "",
        ]
        + METHOD
        + [""]
    )
    for group in groups:
        lines += group_page(group, fig_dir, out.resolve().parent)
        if not group.on_gpu:
            lines += [
                "This grid ran on a CPU only: its GPU findings are \"not tested on this hardware\". Where the machine was "
                "shared with other jobs while it ran, absolute times are noisy; the round-robin order keeps the comparison "
                "between columns of one point fair, not the absolute figures.",
                "",
            ]
    write_text_atomic(out, "\n".join(lines).rstrip("\n") + "\n")
    return out


def grid_section(table, page) -> list[str]:
    """RESULTS.md's line per grid on this table's machine, linking GRID.md (its full page, the findings with it).
    No grid result on this machine: no lines, so the section leaves no trace."""
    results_dir = page.fig_dir.parent
    target = (results_dir / "GRID.md").resolve()
    link = target.relative_to(page.out_dir.resolve()).as_posix() if target.is_relative_to(page.out_dir.resolve()) else "GRID.md"
    return [
        f"- Grid `{group.grid}`: {len(group.results)} points x columns, Hugging Face's October 2019 findings "
        f"re-tested beside ours: [GRID.md]({link})."
        for group in load_grid(results_dir)
        if group.machine == table.group.machine
    ]


# RESULTS.md's part: once a machine, under its "Studies"
SECTIONS = [Section("Inference grid study: then and now", grid_section, per_machine=True)]
