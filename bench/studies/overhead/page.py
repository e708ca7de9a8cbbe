"""The framework-overhead study's report: <results>/OVERHEAD.md from its result files
(<results>/overhead/, written by bench/studies/overhead/run.py), and a Section of RESULTS.md (registered in
bench/studies/table.py SECTIONS) with its verdicts for the table's machine.

One page part per (size, machine): numbers from different hardware never share a table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from bench.base.provenance import machine_label
from bench.base.stats import Ratio, claim_rule, fmt_factor
from bench.base.tables import github_table, reasons_once
from bench.judge import Judge, claims
from bench.judge.claims import HOLDS_FACTOR
from bench.record import text
from bench.record.results import Result, load, result_files
from bench.record.text import write_text_atomic
from bench.report.sections import Section
from bench.studies.overhead.spec import (
    BENCHMARKS,
    COLUMNS,
    FINDINGS,
    SOURCES,
    STUDY_DIR,
    TOLERANCE,
    published,
    published_ratio,
)

PAGE = "OVERHEAD.md"


@dataclass
class OverheadGroup:
    size: str
    machine: str
    results: list[Result] = field(default_factory=list)
    results_dir: Path | None = None  # where the machine's noise study is looked for (bench/judge/noise_file.py)

    @cached_property
    def judge(self) -> Judge:
        return Judge(self.results, self.results_dir)

    def ms(self, benchmark: str, column: str) -> float | None:
        for r in self.results:
            if r.cell.model == benchmark and r.cell.variant == column and r.status == "ok":
                return r.summary().median
        return None

    def result(self, benchmark: str, column: str) -> Result | None:
        return next((r for r in self.results if r.cell.model == benchmark and r.cell.variant == column), None)

    def ratio(self, benchmark: str, numerator: str, denominator: str) -> Ratio | None:
        """numerator / denominator with its interval. One worker process per env times all of its columns, so each
        column's figure is one process: its interval borrows the machine's process spread (its noise study), and
        without one the ratio decides nothing. None unless both columns are ok."""
        a, b = self.result(benchmark, denominator), self.result(benchmark, numerator)
        if a is None or b is None:
            return None
        return claims.judged(self.judge, a, b, claims.ONE_PROCESS_COLUMN)


def load_overhead(results_dir: Path) -> list[OverheadGroup]:
    """Every current overhead result, grouped by (size, machine label); an unreadable file raises, naming itself."""
    root = Path(results_dir) / STUDY_DIR
    groups: dict[tuple[str, str], OverheadGroup] = {}
    for path in result_files(root):
        result = load(path)
        key = (result.cell.profile.removeprefix("overhead-"), machine_label(result.provenance.get("machine", {})))
        groups.setdefault(key, OverheadGroup(*key, results_dir=Path(results_dir))).results.append(result)
    return list(groups.values())


def cell_text(result: Result | None) -> str:
    if result is None:
        return ""
    if result.status != "ok":
        return result.status
    s = result.summary()
    return f"{text.fmt_ms(s.median)} ({text.fmt_ms(s.p10)}–{text.fmt_ms(s.p90)})"


def fmt_published(value: float | None) -> str:
    return fmt_factor(value) if value else "–"


def findings_table(group: OverheadGroup) -> list[str]:
    rows = []
    for f in FINDINGS:
        ours = group.ratio(f.benchmark, f.numerator, f.denominator)
        rows.append(
            [
                f.text,
                SOURCES[f.source],
                fmt_published(published_ratio(f)),
                claims.ours(ours),
                claims.within(ours, f.claimed, HOLDS_FACTOR),
            ]
        )
    rows, notes = reasons_once(rows, 4)
    return [github_table(rows, ["published finding", "source", "published ratio", "ours", "verdict"]),
            *(["", *notes] if notes else [])]  # fmt: skip


def group_lines(group: OverheadGroup) -> list[str]:
    columns = list(COLUMNS)
    lines = [
        f"Median ms per call (p10–p90) over each column's timed calls; {group.results[0].cell.timed_steps} timed calls "
        "per column, "
        "the columns of one env called round-robin in one process.",
        "",
    ]
    rows = [[BENCHMARKS[b].display] + [cell_text(group.result(b, c)) for c in columns] for b in BENCHMARKS]
    lines += [
        github_table(rows, ["benchmark"] + [COLUMNS[c].display for c in columns]),
        "",
    ]
    lines += ["The published figures (Apple MPS; `bench/data/keras_overhead_2026.csv`), ms per call:", ""]
    figures = published()
    rows = [
        [f"{BENCHMARKS[b].display}, {SOURCES[s]}"]
        + [text.fmt_ms(v) if (v := figures.get((s, b, c))) else "–" for c in columns]
        for b in BENCHMARKS
        for s in SOURCES
    ]
    lines += [
        github_table(rows, ["benchmark, source"] + [COLUMNS[c].display for c in columns]),
        "",
    ]
    keras = [c for c, spec in COLUMNS.items() if spec.keras]
    lines += [
        "Overhead: each Keras column's ms per call over its plain framework's (the pull request's overhead analysis); "
        "ours with its 95% interval (inconclusive: it decides nothing, for the reason numbered under the table), "
        "then the pull request's and the issue's:",
        "",
    ]
    rows, undecided = [], []
    for b in BENCHMARKS:
        row = [BENCHMARKS[b].display]
        for c in keras:
            base = COLUMNS[c].baseline
            pub = [
                figures.get((s, b, c)) and figures.get((s, b, base)) and figures[(s, b, c)] / figures[(s, b, base)]
                for s in SOURCES
            ]
            ours = group.ratio(b, c, base)
            shown = claims.ours(ours)
            if ours is not None and not ours.decidable:
                undecided.append(f"({len(undecided) + 1}) {BENCHMARKS[b].display}, {COLUMNS[c].display} / "
                                 f"{COLUMNS[base].display}: {text.md(ours.reason)}")
                shown += f" inconclusive ({len(undecided)})"
            row.append(f"{shown} ({' / '.join(fmt_published(p) for p in reversed(pub))})")
        rows.append(row)
    headers = ["benchmark"] + [f"{COLUMNS[c].display} / {COLUMNS[COLUMNS[c].baseline].display}" for c in keras]
    lines += [github_table(rows, headers), ""]
    if undecided:
        lines += ["Why a ratio above is inconclusive:", ""] + [f"- {line}" for line in undecided] + [""]
    lines += [
        "Published findings re-tested on this machine (a finding holds when our ratio's whole 95% interval is "
        f"{claim_rule(HOLDS_FACTOR)}, and does not hold when it lies wholly outside that; each "
        "column is one process (one worker per env times all its columns), so its interval borrows this machine's "
        "process spread from its noise study, and without one the finding is inconclusive):",
        "",
    ]
    lines += findings_table(group) + [""]
    mismatched = [r for r in group.results if r.status == "error" and "not the same computation" in (r.message or "")]
    compared = [
        r
        for r in group.results
        if r.status == "ok" and r.runs[0].settings.get("parity") in ("within tolerance", "same token ids")
    ]
    lines.append(
        f"Same computation: {len(compared)} of {len(group.results)} columns' outputs equal PyTorch eager's "
        "(forward within "
        f"{TOLERANCE:g} of its largest magnitude, generate the same token ids); "
        + (
            f"{len(mismatched)} differ: " + ", ".join(f"{r.cell.model} {r.cell.variant}" for r in mismatched)
            if mismatched
            else "none differs."
        )
    )
    failed = [r for r in group.results if r.status != "ok" and r not in mismatched]
    if failed:
        lines += [""] + [f"- {r.cell.model} {r.cell.variant}: {r.status}: {text.md(r.message or '')}" for r in failed]
    first = [
        [BENCHMARKS[b].display]
        + [
            text.fmt_ms(r.runs[0].first_step_ms) if (r := group.result(b, c)) and r.runs[0].first_step_ms else ""
            for c in columns
        ]
        for b in BENCHMARKS
    ]
    lines += [
        "",
        "First call (trace, compile) apart, ms:",
        "",
        github_table(first, ["benchmark"] + [COLUMNS[c].display for c in columns]),
    ]
    return lines


def render_overhead(results_dir: Path) -> Path:
    """Write <results_dir>/OVERHEAD.md from the study's result files; returns its path."""
    groups = load_overhead(results_dir)
    lines = [
        "# Framework-overhead study",
        "",
        "Rendered by `make overhead` (`python -m bench overhead`) from the result files under "
        f"`{STUDY_DIR}/`: keras-team/keras issue #22561 and pull request #22660's workload "
        f"(bench/studies/overhead/spec.py) on "
        "eight columns, the same seeded weights in every column and every output compared with PyTorch eager's. "
        "One table per size and machine.",
        "",
    ]
    if not groups:
        lines += ["No results yet: run `make overhead`.", ""]
    for group in groups:
        lines += [f"## {group.size} — {group.machine}", ""]
        if group.size != "default":
            lines += [
                f"The `{group.size}` size: toy shapes that run the same code; its figures say nothing about the "
                "frameworks.",
                "",
            ]
        lines += group_lines(group) + [""]
    out = Path(results_dir) / PAGE
    write_text_atomic(out, "\n".join(lines).rstrip("\n") + "\n")
    return out


def overhead_section(table, page) -> list[str]:
    """RESULTS.md's section: the study's verdicts for this table's machine (the published size only), linking
    OVERHEAD.md. No such result: no lines, so the section leaves no trace."""
    results_dir = page.fig_dir.parent
    groups = [g for g in load_overhead(results_dir) if g.machine == table.group.machine and g.size == "default"]
    lines = []
    for group in groups:
        lines += [
            "The framework-overhead study on this machine (keras#22561 / #22660's workload; all columns and figures in "
            f"[{PAGE}]({PAGE})):",
            "",
        ]
        lines += findings_table(group) + [""]
    return lines


# RESULTS.md's part: once a machine, under its "Studies"
SECTIONS = [Section("Framework-overhead study", overhead_section, per_machine=True)]
