"""`make compare A=<dir> B=<dir>`: did each cell move from result set A to result set B, and can this data say so?

Cells match on (backend, model, task, batch, variant, profile, stack), whatever machine they ran on. For a cell ok
in both, B / A of the cell's figure (the geometric mean of its processes' median step times; > 1: B is slower) with
its 95% interval and a verdict, as bench.judge.Judge decides every comparison the suite prints: Welch's interval on
the logarithms of the per-process medians; `same` where the whole interval lies within the equivalence band (±5%),
`faster` / `slower` where it excludes 1, `inconclusive` otherwise, or where the comparison cannot decide (a side
measured while the machine was disturbed, a cell of one process whose process-to-process spread is not measured, two
different processors unless told to compare across them), with the reason. docs/METHOD.md says why.

Output: Markdown in the published table's layout (rows = model / task / batch in the published order, one column
per backend; bench/record/load.py's COLUMNS and order_rows), a PNG of the ratios with their intervals, and the same
comparison as JSON for tools (`make noise` counts verdicts in-process with `verdicts`). Where one folder holds the
same cell from two machines, the newest file is used.

Beside the ratio, the ratio of MFU (docs/ROOFLINE.md): A's MFU / B's MFU, each against its own machine's ceilings
(the run's probe, else the folder's `make ceilings` file for the same processor), which is B's median / A's median
times B's ceiling / A's ceiling: what is left of the move once each machine's speed is divided out (> 1: B further
from its machine's limit). Where either side has no ceiling, no MFU ratio.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from bench.base import stats
from bench.base.atomic import outputs_beside, refuse_to_replace, together, write_stream_atomic, write_text_atomic
from bench.base.errors import BenchError
from bench.base.generate_split import result_split, run_split
from bench.base.provenance import git_info, now_utc
from bench.base.stats import FASTER, INCONCLUSIVE, NOT_COMPARABLE, SAME, SLOWER, Ratio, fmt_factor, fmt_ratio
from bench.base.tables import github_table
from bench.catalogue.backends import DEFAULT_STACK
from bench.judge import Judge, processor_differences
from bench.judge.across_runs import decider, run_spread_keeps_wide
from bench.judge.same_work import mode_label
from bench.record.load import COLUMNS, Column, RowKey, load_results, order_rows
from bench.record.results import Result
from bench.record.text import md, status_label
from bench.roofline.utilisation import use_of
from bench.run.ceilings import machine_file_for

VERDICTS = (FASTER, SLOWER, SAME, INCONCLUSIVE, NOT_COMPARABLE)
JSON_FORMAT = "compare-1"
# what marks the files a comparison writes, so that OUT= replaces only an earlier comparison (refuse_to_replace)
MARKDOWN_MARK = b"# Comparison: B = "
PNG_MARK = "written by python -m bench compare"
TOO_WIDE = f"the interval holds 1 and reaches beyond ±{stats.EQUIVALENCE_BAND:.0%}: more processes would narrow it"
METHOD = (
    "B / A of the cell's figure (the geometric mean of its processes' median step times; a side of several runs: "
    "the geometric mean of its runs' figures; > 1: B is slower) with its interval, Welch's on the logarithms of the "
    "per-process medians (Student t; a side of several runs: their spread within the runs), and for cells measured "
    "in separate runs the machine's run-to-run spread on each side, over its number of runs (its noise studies' "
    "rounds, `make noise`); every "
    "pair judged with the others at the Benjamini-Hochberg threshold of the comparison (a 5% false discovery rate "
    f"over it, not 5% a cell): **faster** / **slower** where the interval excludes 1 (\"within "
    f"{stats.EQUIVALENCE_BAND:.0%}\" where it also lies within ±{stats.EQUIVALENCE_BAND:.0%}), **same** where it "
    f"holds 1 and lies wholly within ±{stats.EQUIVALENCE_BAND:.0%} (1/{1 + stats.EQUIVALENCE_BAND:g} to "
    f"{1 + stats.EQUIVALENCE_BAND:g}), **inconclusive** otherwise, or where the comparison cannot decide: a side "
    "measured while the machine was disturbed (a noise gate), a cell of one process whose process-to-process spread "
    "is not measured (a cell of one process borrows its machine's spread from a noise study of its own profile, "
    "`make noise PROFILE=`, where there is one), separate runs on a machine whose run-to-run spread is unmeasured, "
    "or two different processors. "
    "docs/METHOD.md says how and why."
)


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
    """One cell present in both sets, judged: `judged` is B / A with its interval (None unless both are ok)."""

    key: CellKey
    a: Result
    b: Result
    a_ceilings: dict | None = None  # the side's machine file (bench/run/ceilings.py), for a run without its own
    b_ceilings: dict | None = None
    judged: Ratio | None = None

    @property
    def comparable(self) -> bool:
        return self.a.status == "ok" and self.b.status == "ok"

    @property
    def ratio(self) -> float | None:
        """B's figure / A's figure; None unless both are ok with a figure."""
        if self.judged is None or not self.judged.value > 0:
            return None
        return self.judged.value

    @property
    def interval(self) -> tuple[float, float] | None:
        return self.judged.interval() if self.judged is not None and self.ratio is not None else None

    @property
    def verdict(self) -> str | None:
        """faster / slower / same / inconclusive; None where a side is not ok (nothing to compare)."""
        return stats.verdict(self.judged) if self.comparable else None

    @property
    def reason(self) -> str:
        """Why an inconclusive cell is: the judge's reason, else the interval too wide to decide; empty otherwise."""
        if self.verdict == NOT_COMPARABLE:
            return self.judged.reason
        if self.verdict != INCONCLUSIVE:
            return ""
        if self.judged is None or self.ratio is None:
            return "no figure on a side"
        if self.judged.reason:
            return self.judged.reason
        if run_spread_keeps_wide(self.judged):
            return undecided_across_runs(self.judged, self.a, self.b)
        return TOO_WIDE if self.interval else "no interval"

    @property
    def decide_with(self) -> str | None:
        """Undecided across runs: the command that would decide it (bench/judge/across_runs.py decider)."""
        return decider(self.a, self.b).command if self.reason.startswith(UNDECIDED_ACROSS_RUNS) else None

    @property
    def why(self) -> str:
        """The reason as the JSON gives it: for a pair not compared, each side's status."""
        return self.reason if self.comparable else f"A {status_text(self.a)} / B {status_text(self.b)}"

    @property
    def mfu_ratio(self) -> float | None:
        """A's MFU / B's MFU, each against its own machine's ceilings; None where either has none."""
        if not self.comparable:
            return None
        a, b = use_of(self.a, self.a_ceilings), use_of(self.b, self.b_ceilings)
        if a is None or b is None or not a.mfu or not b.mfu or a.exceeds or b.exceeds:  # no share of a wrong ceiling
            return None
        return a.mfu / b.mfu

    def text(self) -> str:
        if not self.comparable:
            return f"A {status_text(self.a)} / B {status_text(self.b)}"
        verdict, said = self.verdict, stats.verdict_text(self.judged)
        if verdict == NOT_COMPARABLE:  # a ratio of unlike work is no speed: not printed
            return f"{said}: {self.reason}"
        text = (f"**{said}**" if verdict in (FASTER, SLOWER) else said) + " " + fmt_ratio(self.judged)
        if (mfu := self.mfu_ratio) is not None:
            text += f" · MFU {fmt_factor(mfu)}"
        if self.a.unit != self.b.unit:
            text += f" [units differ: {self.a.unit} vs {self.b.unit}]"
        return text

    def to_dict(self) -> dict[str, Any]:
        """The pair as the JSON comparison holds it (and `verdicts` returns)."""
        interval = self.interval
        return {
            "key": self.key._asdict(),
            "cell": self.key.text(),
            "a_status": self.a.status,
            "b_status": self.b.status,
            "ratio": self.ratio,
            "low": interval[0] if interval else None,
            "high": interval[1] if interval else None,
            "confidence": self.judged.confidence if self.judged is not None else stats.CONFIDENCE,
            "verdict": self.verdict,
            "verdict_text": stats.verdict_text(self.judged) if self.comparable else None,
            "reason": self.why,
            "mfu_ratio": self.mfu_ratio,
            "decide_with": self.decide_with,
            "note": self.judged.note if self.judged is not None else "",
        }


UNDECIDED_ACROSS_RUNS = "undecided across runs"


def undecided_across_runs(judged: Ratio, a: Result, b: Result) -> str:
    """Why a comparison of separate runs is undecided: the runs' spread, not the processes; advising more runs a side
    only where those runs would be independent of the ones measured."""
    ka, kb = judged.run_counts
    held = "one run a side" if ka == kb == 1 else f"{ka} and {kb} runs a side"
    floor = judged.runs_floor()
    reach = f" alone keeps it to ±{floor - 1:.0%} or wider whatever the processes" if floor else " keeps it wide"
    return (f"{UNDECIDED_ACROSS_RUNS}: measured in separate runs ({held}), whose spread ({judged.runs.log_sd:.1%} a "
            f"run on this machine){reach}; both sides re-measured interleaved in one invocation would decide it")


def status_text(result: Result) -> str:
    return status_label(result.status) if result.status != "ok" else "ok"


@dataclass
class Comparison:
    a_dir: Path | str  # a folder, or the name of a run of a folder's history (Side.name)
    b_dir: Path | str
    pairs: list[Pair]
    only_a: list[CellKey]
    only_b: list[CellKey]
    across_processors: bool = False
    processor_differences: list[str] = field(default_factory=list)  # A's processor against B's, where they differ
    ceilings_notes: list[str] = field(default_factory=list)  # how each side's ceilings file matched (or did not)
    judged_together: int = 0  # the pairs with an interval, judged as one family
    threshold: float = 1 - stats.CONFIDENCE  # their Benjamini-Hochberg threshold
    judge: Judge | None = field(default=None, repr=False)  # the Judge that judged it (its machines' noise figures)

    def tables(self) -> list[tuple[str, str]]:
        """(profile, stack) of each table, today's stack first."""
        return sorted({p.key.table for p in self.pairs}, key=lambda t: (t[0], t[1] != DEFAULT_STACK, t[1]))

    def counts(self) -> dict[str, int]:
        """Pairs per verdict, and those not compared (a side not ok)."""
        found = Counter(p.verdict for p in self.pairs)
        return {**{v: found.get(v, 0) for v in VERDICTS}, "not compared": found.get(None, 0)}

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": JSON_FORMAT,
            "a": str(self.a_dir),
            "b": str(self.b_dir),
            "method": METHOD.replace("**", ""),
            "confidence": stats.CONFIDENCE,
            "judged_together": self.judged_together,
            "family_threshold": self.threshold,
            "equivalence_band": stats.EQUIVALENCE_BAND,
            "across_processors": self.across_processors,
            "processor_differences": self.processor_differences,
            "counts": self.counts(),
            "pairs": [p.to_dict() for p in self.pairs],
            "only_a": [k._asdict() for k in self.only_a],
            "only_b": [k._asdict() for k in self.only_b],
        }


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a results folder's current files, or one run of a folder's history
    (bench/studies/history/ runs.py); `folder` is where its ceilings files (and, for A, the noise studies) are looked
    up."""

    name: str  # what the output calls it
    folder: Path
    results: list[Result]
    folders: tuple[Path, ...] = ()  # every folder it was read from (several: runs pooled); () for a history's run
    files: frozenset[Path] = frozenset()  # every result file it read, resolved: two sides may share none


def folder_side(results_dir: Path) -> Side:
    if not results_dir.is_dir():
        raise BenchError(f"no results folder {results_dir}")
    loaded = load_results(results_dir)
    return Side(str(results_dir), results_dir, [item.result for item in loaded], (results_dir,),
                frozenset((results_dir / item.path).resolve() for item in loaded))


def pooled_side(folders: list[Path]) -> Side:
    """Several results folders, each a separate run of the same code, as one side: each cell's newest result of every
    folder pooled (bench/judge/__init__.py pool_runs), so that its interval carries the run-to-run spread over that many
    runs. Its noise studies and ceilings are looked up from the first folder."""
    from bench.judge import pool_runs

    by_cell: dict[CellKey, list[Result]] = {}
    files: set[Path] = set()
    for folder in folders:
        side = folder_side(folder)
        files |= side.files
        for key, result in newest_by_cell(side).items():
            by_cell.setdefault(key, []).append(result)
    name = " + ".join(str(f) for f in folders) + f" ({len(folders)} runs)"
    return Side(name, folders[0], [pool_runs(results) for results in by_cell.values()], tuple(folders),
                frozenset(files))


def run_side(results_dir: Path, run) -> Side:
    """A run of the folder's history (a HistoryRun): its files, read as a folder's are (bench/record/results.py
    load)."""
    from bench.record.results import load

    return Side(f"run {run.id} of {results_dir}", results_dir, [load(results_dir / path) for path in run.paths],
                files=frozenset((results_dir / path).resolve() for path in run.paths))


def refuse_overlap(a: Side, b: Side) -> None:
    """Two sides that read a result file in common (A=<dir> B=<dir>/smoke, a parent and its child run, a folder and
    a run of its history) would judge those cells against themselves: refused, naming how many and one of them."""
    shared = sorted(set(a.files) & set(b.files))
    if shared:
        more = ", ..." if len(shared) > 1 else ""
        raise BenchError(f"A and B read {len(shared)} result file(s) in common ({shared[0]}{more}): each cell would "
                         "be judged against itself; name the results folders, or runs, of each side apart")


def refuse_output_inside(out: Path, *sides: Side) -> None:
    """The comparison's files in a side's results folder: its JSON would be read there as a result file."""
    where = out.parent.resolve()
    for side in sides:
        for folder in side.folders or (side.folder,):
            if where == folder.resolve() or folder.resolve() in where.parents:
                raise BenchError(f"the comparison's output {out} is inside {folder}, a side's results folder, where "
                                 "its JSON would be read as a result file: name a file outside it (default: compare/)")


def newest_by_cell(side: Side) -> dict[CellKey, Result]:
    cells: dict[CellKey, Result] = {}
    for result in side.results:
        key = CellKey.of(result)
        if key not in cells or result.created_at > cells[key].created_at:
            cells[key] = result
    if not cells:
        raise BenchError(f"no result files in {side.name}")
    return cells


def folder_ceilings(results_dir: Path, result: Result, notes: list[str] | None = None) -> dict | None:
    """The machine file a folder keeps for the processor a result ran on (make ceilings RESULTS=<dir>), if any; how
    it matched (or why it was not used) goes to `notes`."""
    data, note = machine_file_for(results_dir, result.provenance.get("machine") or {})
    if note and notes is not None and note not in notes:
        notes.append(note)
    return (data or {}).get("ceilings")


def machine_of(result: Result) -> dict:
    return result.provenance.get("machine") or {}


def compare(a_dir: Path, b_dir: Path, across_processors: bool = False) -> Comparison:
    """Every cell of both folders paired and judged by one Judge over both (its noise studies looked up in A's
    folder, then in the folders that hold it, then the repository's results/)."""
    return compare_sides(folder_side(a_dir), folder_side(b_dir), across_processors)


def compare_sides(side_a: Side, side_b: Side, across_processors: bool = False) -> Comparison:
    """Two folders, two runs of a history, or one of each, compared as `compare` compares two folders."""
    a, b = newest_by_cell(side_a), newest_by_cell(side_b)
    judge = Judge([*a.values(), *b.values()], side_a.folder, across_processors=across_processors)
    notes: list[str] = []
    pairs = [
        Pair(k, a[k], b[k], folder_ceilings(side_a.folder, a[k], notes), folder_ceilings(side_b.folder, b[k], notes),
             judge.ratio(a[k], b[k]))
        for k in sorted(a.keys() & b.keys())
    ]
    # every pair's verdict judged with the others: a false discovery rate of 5% over the comparison, not 5% a cell
    judged, together, threshold = stats.judged_as_family([pair.judged for pair in pairs])
    for pair, ratio in zip(pairs, judged):
        pair.judged = ratio
    differences = list(
        dict.fromkeys(d for p in pairs for d in processor_differences(machine_of(p.a), machine_of(p.b)))
    )
    return Comparison(side_a.name, side_b.name, pairs, sorted(a.keys() - b.keys()), sorted(b.keys() - a.keys()),
                      across_processors, differences, notes, together, threshold, judge)


def verdicts(a_dir: Path, b_dir: Path, across_processors: bool = False) -> list[dict[str, Any]]:
    """Every pair with its ratio, interval, verdict and reason (Pair.to_dict), for a caller that counts verdicts
    in-process (`make noise`)."""
    return [p.to_dict() for p in compare(a_dir, b_dir, across_processors).pairs]


def ordered_pairs(comparison: Comparison, table: tuple[str, str]) -> list[tuple[RowKey, dict[Column, Pair]]]:
    """One profile's pairs as table rows in the published order."""
    grid: dict[RowKey, dict[Column, Pair]] = {}
    for pair in comparison.pairs:
        if pair.key.table == table:
            grid.setdefault(pair.key.row, {})[pair.key.column] = pair
    return [(row, grid[row]) for row in order_rows(table[0], grid)]


def counts_text(comparison: Comparison) -> str:
    counts = comparison.counts()
    verdict_counts = ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts[v] or v != NOT_COMPARABLE)
    not_compared = f", {counts['not compared']} not compared (a side not ok)" if counts["not compared"] else ""
    m = comparison.judged_together
    family = (
        f" The {m} pairs with an interval were judged together, each at {1 - comparison.threshold:.2%} "
        f"(Benjamini-Hochberg); one by one at 95%, {m} identical cells would be called different about "
        f"{m * (1 - stats.CONFIDENCE):.1f} times by chance."
        if m
        else ""
    )
    return (
        f"{len(comparison.pairs)} cells in both: {verdict_counts}{not_compared}; "
        f"{len(comparison.only_a)} only in A, {len(comparison.only_b)} only in B.{family}"
    )


def processors_text(comparison: Comparison) -> list[str]:
    if not comparison.processor_differences:
        return []
    which = "; ".join(comparison.processor_differences)
    if comparison.across_processors:
        return [
            "",
            f"**This comparison crosses processors** (`--across-processors`, `ACROSS=1`): A and B ran on different "
            f"processors ({which}). Its verdicts hold the machines' difference as well as the code's.",
        ]
    return [
        "",
        f"**Different processors**: A and B ran on different processors ({which}), so every cell that crosses them "
        "is inconclusive: a move there may be the machine's. `make compare ... ACROSS=1` (`--across-processors`) "
        "decides them anyway, and says so.",
    ]


def precision_marks(cells: dict[Column, Pair]) -> dict[Column, str]:
    """Where a row's float32 cells ran at different matmul precisions, on either side or between a cell's two sides
    (bench/judge/same_work.py mode_label): each cell's, as the tables mark them (" · TF32"; " · A TF32, B FP32" where
    its own sides differ: then its pair is not comparable); empty where every cell of the row ran at one."""
    a = {c: mode_label(p.a) for c, p in cells.items()}
    b = {c: mode_label(p.b) for c, p in cells.items()}
    seen = {m for m in (*a.values(), *b.values()) if m}
    if len(seen) < 2:
        return {}
    return {c: (f" · {a[c]}" if a[c] == b[c] else f" · A {a[c] or 'not recorded'}, B {b[c] or 'not recorded'}")
            for c in cells if a[c] or b[c]}  # fmt: skip


def markdown(comparison: Comparison, figure: str | None = None) -> str:
    lines = [
        f"# Comparison: B = `{comparison.b_dir}` over A = `{comparison.a_dir}`",
        "",
        "Each cell: " + METHOD + " **MFU**: A's MFU / B's MFU, each against its own machine's measured ceilings "
        "(> 1: B further from its machine's limit; docs/ROOFLINE.md), the move with each machine's speed divided "
        "out.",
        "",
        counts_text(comparison),
        *processors_text(comparison),
    ]
    headers = ["Model / task", "Batch", *[c.header for c in COLUMNS]]
    for profile, stack in comparison.tables():
        body = [
            [md(row.label()), str(row.batch_size),
             *[md(cells[c].text() + marks.get(c, "")) if c in cells else "" for c in COLUMNS]]
            for row, cells in ordered_pairs(comparison, (profile, stack))
            for marks in [precision_marks(cells)]
        ]  # fmt: skip
        heading = f"## {profile} profile" + ("" if stack == DEFAULT_STACK else f", stack {stack}")
        lines += ["", heading, "", github_table(body, headers)]
    lines += inconclusive_lines(comparison)
    lines += decide_lines(comparison)
    lines += note_lines(comparison)
    lines += split_lines(comparison)
    if comparison.ceilings_notes:
        lines += ["", "Ceilings files: " + "; ".join(comparison.ceilings_notes) + "."]
    for name, keys in (("A", comparison.only_a), ("B", comparison.only_b)):
        if keys:
            lines += ["", f"## Only in {name}", ""] + [f"- {k.text()}" for k in keys]
    if figure:
        lines += ["", f"![B / A per cell]({figure})"]
    return "\n".join(lines) + "\n"


LISTED_CELLS = 8  # an inconclusive reason names at most this many cells, then counts the rest


def inconclusive_lines(comparison: Comparison) -> list[str]:
    """Why each inconclusive cell is, one line per reason with the cells it holds."""
    by_reason: dict[str, list[CellKey]] = {}
    for pair in comparison.pairs:
        if pair.verdict == INCONCLUSIVE:
            by_reason.setdefault(pair.reason, []).append(pair.key)
    if not by_reason:
        return []
    lines = ["", "## Inconclusive: why", ""]
    for reason, keys in sorted(by_reason.items(), key=lambda item: -len(item[1])):
        named = ", ".join(k.text() for k in keys[:LISTED_CELLS])
        more = f" and {len(keys) - LISTED_CELLS} more" if len(keys) > LISTED_CELLS else ""
        lines.append(f"- {reason} ({len(keys)} cell{'s' if len(keys) != 1 else ''}: {named}{more})")
    return lines


def decide_lines(comparison: Comparison) -> list[str]:
    """For each cell undecided across runs, the exact command that would decide it: both sides re-measured interleaved
    in one invocation (`make ab`), or, for an A/A of one code, `make noise`; then whether more runs a side would."""
    from bench.judge.across_runs import decider

    found = [(pair, decider(pair.a, pair.b)) for pair in comparison.pairs if pair.decide_with]
    if not found:
        return []
    lines = ["", "## Undecided across runs: what would decide it", ""]
    for pair, decides in found:
        lines.append(f"- {pair.key.text()}: `{decides.command}` ({decides.why})")
    lines += ["", more_runs_text(comparison, [pair for pair, _ in found])]
    return lines


def more_runs_text(comparison: Comparison, pairs: list[Pair]) -> str:
    """Whether more runs a side would narrow these comparisons: only runs that lie apart beyond the machine's short
    time scale are independent of the ones measured (bench/judge/across_runs.py); back to back they share its slow
    drift."""
    from bench.judge.across_runs import RunSpreadParts, independent_runs

    parts: RunSpreadParts | None = comparison.judge.run_spread_parts(pairs[0].a) if comparison.judge else None
    if parts is None:
        return ""
    together = [p.key.text() for p in pairs if not (independent_runs(p.a, parts) and independent_runs(p.b, parts))]
    scale = f"{parts.scale_s / 60:.0f} minutes"
    said = (f"More runs a side narrow a comparison only where they are independent: started more than {scale} apart "
            f"on this machine (the run spread {parts.text()}); runs back to back share its slow drift, and pooling "
            "them narrows only the short part.")
    if together:
        said += (f" {len(together)} of these cells' sides hold runs measured within that time of each other: more "
                 "such runs would not decide them.")
    return said


LISTED_NOTES = 20  # notes printed in the page; the JSON holds every pair's


def note_lines(comparison: Comparison) -> list[str]:
    """What each verdict stands on beyond its processes (a process set aside, processes in two groups, the runs'
    spread carried, the machine's own speed), one line per cell that has any."""
    noted = [pair for pair in comparison.pairs if pair.judged is not None and pair.judged.note]
    if not noted:
        return []
    lines = ["", "## Beside the verdicts", ""]
    lines += [f"- {pair.key.text()}: {pair.judged.note}" for pair in noted[:LISTED_NOTES]]
    if len(noted) > LISTED_NOTES:
        lines.append(f"- and {len(noted) - LISTED_NOTES} more cells (each pair's `note` in the JSON)")
    return lines


def split_values(result: Result, name: str) -> list[float]:
    """One figure of the generate split (ttft_ms, tpot_ms) per process that has it."""
    return [s[name] for run in result.runs if (s := run_split(run)) and s.get(name) is not None]


def split_ratio_text(a: Result, b: Result, name: str, a_split: dict, b_split: dict) -> str:
    """B / A of a split figure: with its interval where both sides have it from two or more processes (their
    values through bench.base.stats.estimate), else the point ratio of the two medians and "no interval"."""
    a_values, b_values = split_values(a, name), split_values(b, name)
    if len(a_values) >= 2 and len(b_values) >= 2:
        ea, eb = stats.estimate([[v] for v in a_values]), stats.estimate([[v] for v in b_values])
        if ea is not None and eb is not None:
            found = stats.ratio(ea, eb)
            if found.interval() is not None:
                return fmt_ratio(found)
    if a_split.get(name) and b_split.get(name) and a_split[name] > 0 and b_split[name] > 0:
        return f"{fmt_factor(b_split[name] / a_split[name])} (no interval)"
    return "n/a"


def split_lines(comparison: Comparison) -> list[str]:
    """Generate cells split in both sets (bench/base/generate_split.py): B / A of TTFT and of TPOT, so a move is placed
    in the prefill or the decode."""
    body = []
    for pair in comparison.pairs:
        a, b = result_split(pair.a), result_split(pair.b)
        if not pair.comparable or not a or not b:
            continue
        ratios = [split_ratio_text(pair.a, pair.b, k, a, b) for k in ("ttft_ms", "tpot_ms")]
        tpot = f"{a['tpot_ms']:.4g} → {b['tpot_ms']:.4g}" if None not in (a.get("tpot_ms"), b.get("tpot_ms")) else ""
        body.append([md(pair.key.text()), f"{a['ttft_ms']:.4g} → {b['ttft_ms']:.4g}", ratios[0], tpot, ratios[1]])
    if not body:
        return []
    return [
        "",
        "## Generate split: time to first token and time per output token, B / A",
        "",
        "The medians of each side's processes; B / A with its 95% interval where both sides have the split from two "
        "or more processes (Welch on the logarithms of the per-process values), else the point ratio.",
        "",
        github_table(body, ["cell", "TTFT ms (A → B)", "TTFT B / A", "TPOT ms (A → B)", "TPOT B / A"]),
    ]


def ratio_ticks(low: float, high: float, most: int = 9) -> list[float]:
    """Round ratios to mark a log axis from `low` to `high`: fine steps near 1 on a narrow axis (a log axis's own
    ticks would mark 1 alone there), 1-2-5 per decade on a wide one, every few decades on a very wide one."""
    fine = (1, 1.05, 1.1, 1.2, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 9, 9.5)  # 9, 9.5: 0.9 and 0.95 below 1
    for mantissas in (fine, (1, 1.5, 2, 3, 5), (1, 2, 5), (1,)):
        ticks = sorted({round(m * 10.0**e, 12) for e in range(-8, 8) for m in mantissas})
        inside = [t for t in ticks if low <= t <= high]
        if len(inside) <= most:
            return inside or [1.0]
    return inside[:: len(inside) // most + 1]


def draw(comparison: Comparison, path: Path) -> Path | None:
    """Ratios with their intervals, one line per comparable cell, log scale; the marker says the verdict (filled:
    faster or slower; hollow: same; grey: inconclusive). None when there is no ratio to draw."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.style
    from matplotlib.figure import Figure
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

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
        band = 1 + stats.EQUIVALENCE_BAND
        ax.axvspan(1 / band, band, color="0.92", zorder=0)
        for y, (_row, column, pair) in enumerate(rows):
            verdict = pair.verdict
            color = "0.6" if verdict == INCONCLUSIVE else column.color
            low, high = pair.interval or (pair.ratio, pair.ratio)
            ax.errorbar(
                pair.ratio,
                y,
                xerr=[[pair.ratio - low], [high - pair.ratio]],
                fmt="o",
                color=color,
                mfc=color if verdict in (FASTER, SLOWER) else "white",
                capsize=2,
                markersize=4,
            )
        ends = [e for _, _, p in rows for e in (p.interval or (p.ratio, p.ratio))]
        ax.xaxis.set_major_locator(FixedLocator(ratio_ticks(min(ends + [1 / band]), max(ends + [band]))))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: fmt_factor(x)))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.axvline(1.0, color="black", linewidth=0.8, linestyle="--")
        ax.set_yticks(
            range(len(rows)), [f"{row.label()} b{row.batch_size} · {c.header}" for row, c, _ in rows], fontsize=6
        )
        ax.invert_yaxis()
        ax.set_xlabel(
            f"B / A with its 95% interval (log scale; > 1: B slower; shaded: the ±{stats.EQUIVALENCE_BAND:.0%} band)\n"
            "filled: faster or slower · hollow: same · grey: inconclusive"
        )
        title = f"B = {comparison.b_dir} over A = {comparison.a_dir}"
        if comparison.processor_differences:
            title += " (across processors)" if comparison.across_processors else " (different processors)"
        ax.set_title(title)
        fig.tight_layout()
        metadata = {"Software": None, "Description": PNG_MARK}
        write_stream_atomic(path, lambda f: fig.savefig(f, format="png", dpi=100, metadata=metadata))
    return path


@dataclass
class Written:
    text: str
    markdown: Path
    json: Path
    png: Path | None


def run(a: Path | Side, b: Path | Side, out: Path, across_processors: bool = False) -> Written:
    """Write <out> (Markdown, a .md file), the PNG and the JSON beside it; refused, before anything is written, where
    <out> names another kind, where any of the three would replace a file that is not an earlier comparison's (a
    result file, say), or would land in a side's results folder (its JSON would be read there as a result)."""
    refuse_to_replace(out, lambda head: head.startswith(MARKDOWN_MARK), "the comparison's output")
    out, data, figure = outputs_beside(out, (".md", ".json", ".png"), "the comparison's output",
                                       "the comparison's Markdown report")
    refuse_to_replace(data, lambda head: f'"format": "{JSON_FORMAT}"'.encode() in head,
                      f"the comparison's JSON (beside {out.name})")
    refuse_to_replace(figure, lambda head: head.startswith(b"\x89PNG") and PNG_MARK.encode() in head,
                      f"the comparison's figure (beside {out.name})")
    a, b = (side if isinstance(side, Side) else folder_side(side) for side in (a, b))  # a folder: its current files
    refuse_output_inside(out, a, b)
    comparison = compare_sides(a, b, across_processors)
    with together():  # the three files of one comparison, or none
        png = draw(comparison, figure)
        text = markdown(comparison, png.name if png else None)
        write_text_atomic(out, text)
        write_comparison_json(comparison, data)
    return Written(text, out, data, png)


def write_comparison_json(comparison: Comparison, data: Path) -> None:
    # the code that judged it: its verdicts are that commit's rules, whatever commits the results themselves record
    judged_by = {"git": git_info(), "created_at": now_utc()}
    write_text_atomic(data, json.dumps({**comparison.to_dict(), "provenance": judged_by}, indent=1, allow_nan=False)
                      + "\n")

