"""results/SWEEP.md: every release sweep and bisect under <results>/sweep/, from their result files alone.

Per sweep and backend: a trend table per key (version, what moved beside the package, the figure with its 95%
interval, the verdict against the version before it, by bench/judge/__init__.py) and one figure (version on the x axis,
each key's figure with its interval). For the framework-overhead study's columns, the overhead itself: a Keras column
over its plain framework, paired within each process (both ran interleaved call by call in it), the geometric mean of
the processes' ratios with its t interval, its verdict against the version before, and the published claims of
bench/studies/overhead/spec.py that compare those two columns: holds / does not hold / inconclusive per version.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from pathlib import Path

from bench.base import stats
from bench.base.atomic import together, write_stream_atomic, write_text_atomic
from bench.base.stats import Ratio
from bench.judge import Judge
from bench.record.results import HISTORY, CorruptResult, Result, load
from bench.studies.sweep.derive import version_key

PAGE = "SWEEP.md"
STUDY_DIR = "sweep"


def sweep_files(results_dir: Path) -> list[Path]:
    """The current sweep result files: sweep/<name>/<machine>/<backend>/<key>/<version>.json."""
    root = Path(results_dir) / STUDY_DIR
    return [path for path in sorted(root.glob("*/*/*/*/*.json")) if HISTORY not in path.parts]


def load_sweep(path: Path) -> Result:
    """A sweep's result file; one that is not (another kind of result copied there) is a CorruptResult naming it."""
    result = load(path)
    sweep = result.provenance.get("sweep")
    if not isinstance(sweep, dict) or not all(k in sweep for k in ("name", "backend", "version")):
        raise CorruptResult(f"cannot read result file {path}: not a sweep's result (its provenance names no sweep, "
                            "backend and version): move it out of sweep/", path)
    return result


def load_sweeps(results_dir: Path) -> dict[tuple[str, str, str], list[Result]]:
    """(sweep name, machine slug, backend) -> its results, in version order."""
    found: dict[tuple[str, str, str], list[Result]] = defaultdict(list)
    for path in sweep_files(results_dir):
        result = load_sweep(path)
        sweep = result.provenance["sweep"]
        found[sweep["name"], path.parts[-4], sweep["backend"]].append(result)
    for results in found.values():
        results.sort(key=lambda r: version_key(r.provenance["sweep"]["version"]))
    return dict(found)


def version_of(result: Result) -> str:
    return result.provenance["sweep"]["version"]


def figure_text(judge: Judge, result: Result) -> str:
    if result.status != "ok":
        return f"{'NA' if result.status == 'unsupported' else result.status}: {(result.message or '')[:160]}"
    found = judge.estimate(result)
    interval = found.interval() if found else None
    text = f"{found.center:.4g}" if found else "n/a"
    return text + (f" ({interval[0]:.4g}–{interval[1]:.4g})" if interval else f" (no interval: {found.basis})")


def co_changes(result: Result) -> str:
    derivation = result.provenance["sweep"]["derivation"]
    if derivation["status"] != "ok":
        return "no env"
    moved = derivation.get("co_changes") or {}
    text = ", ".join(f"{n} {a or '+'}→{b or '−'}" for n, (a, b) in sorted(moved.items()))
    return f"`{derivation['tier']}`: {text or 'none'}"


def paired_estimate(numerator: Result, denominator: Result) -> stats.Estimate | None:
    """A column over another measured in the same processes: each process's median over median, then their
    geometric mean with its t interval over processes (one process: no interval)."""
    if numerator.status != "ok" or denominator.status != "ok":
        return None
    per_process = [
        [statistics.median(a.timed_ms) / statistics.median(b.timed_ms)]
        for a, b in zip(numerator.runs, denominator.runs)
        if a.timed_ms and b.timed_ms
    ]
    return stats.estimate(per_process)


def as_ratio(found: stats.Estimate | None) -> Ratio | None:
    return None if found is None else Ratio(found.center, found.log_se, found.dof, found.decidable, found.note)


def brief(reason: str) -> str:
    """A verdict's reason in a table cell: which side was noisy and the first cause (each result file has them all)."""
    sides = [side for side in ("A", "B") if f"{side} noisy" in reason]
    if not sides:
        return reason[:160]
    first = reason.split(": ", 1)[-1].split(";")[0]
    return f"{' and '.join('the earlier' if s == 'A' else 'this' for s in sides)} noisy, e.g. {first}"


Trend = dict[tuple[str, int], Ratio | None]  # (key, the version's place) -> its ratio to the ok version before


def trend_ratios(judge: Judge, by_key: dict[str, list[Result]]) -> tuple[Trend, int, float]:
    """Every version against the ok version before it, per key, judged together as one family (Benjamini-Hochberg:
    a sweep of many versions and keys calls a chance difference no more often than a single comparison)."""
    keys: list[tuple[str, int]] = []
    ratios: list[Ratio | None] = []
    for key, results in by_key.items():
        previous = None
        for i, result in enumerate(results):
            if previous is not None and result.status == "ok":
                keys.append((key, i))
                ratios.append(judge.ratio(previous, result))
            if result.status == "ok":
                previous = result
    judged, together, threshold = stats.judged_as_family(ratios)
    return dict(zip(keys, judged)), together, threshold


def family_sentence(together: int, threshold: float) -> str:
    if not together:
        return ""
    return (f"The {together} version-to-version comparisons with an interval were judged together, each at "
            f"{1 - threshold:.2%} (Benjamini-Hochberg); one by one at 95%, {together} comparisons of identical "
            f"versions would be called different about {together * (1 - stats.CONFIDENCE):.1f} times by chance.")


def trend_lines(judge: Judge, key: str, results: list[Result], ratios: Trend) -> list[str]:
    lines = [
        f"**{key}** ({results[0].unit}; 95% interval over processes)",
        "",
        "| version | co-changes | figure (95% interval) | processes | against the version before |",
        "|---|---|---|---|---|",
    ]
    for i, result in enumerate(results):
        against = ""
        if (key, i) in ratios:
            r = ratios[(key, i)]
            against = f"{stats.verdict(r)} {stats.fmt_ratio(r)}" + (f" ({brief(r.reason)})" if r and r.reason else "")
        processes = sum(1 for run in result.runs if run.timed_ms)
        lines.append(
            f"| {version_of(result)} | {co_changes(result)} | {figure_text(judge, result)} | {processes} | {against} |"
        )
    return lines + [""]


def overhead_pairs(by_key: dict[str, list[Result]]) -> list[tuple[str, str]]:
    """(Keras column key, its plain framework's key) pairs present in this sweep."""
    from bench.studies.overhead.spec import COLUMNS

    pairs = []
    for key in by_key:
        benchmark, _, column = key.partition("__")
        baseline = COLUMNS[column].baseline if column in COLUMNS else None
        if baseline and f"{benchmark}__{baseline}" in by_key:
            pairs.append((key, f"{benchmark}__{baseline}"))
    return pairs


def overhead_lines(by_key: dict[str, list[Result]]) -> tuple[list[str], dict[str, dict[str, Ratio | None]]]:
    from bench.judge.claims import HOLDS_FACTOR
    from bench.studies.overhead.spec import FINDINGS, SOURCES, Finding, published_ratio

    lines, ratios = [], {}
    for key, base in overhead_pairs(by_key):
        estimates = {version_of(a): paired_estimate(a, b) for a, b in zip(by_key[key], by_key[base])}
        per_version = {version: as_ratio(found) for version, found in estimates.items()}
        ratios[f"{key} / {base}"] = per_version
        lines += [
            f"**Overhead: {key.split('__')[1]} over {base.split('__')[1]} on {key.split('__')[0]}** (paired "
            "within each process)",
            "",
            "| version | ratio (95% interval) | against the version before |",
            "|---|---|---|",
        ]
        previous = None
        for version, found in estimates.items():
            against = ""
            if previous is not None and found is not None:
                change = stats.ratio(previous, found)
                against = f"{stats.verdict(change)} {stats.fmt_ratio(change)}"
            r = per_version[version]
            lines.append(f"| {version} | {stats.fmt_ratio(r) if r else 'no figure'} | {against} |")
            previous = found or previous
        lines.append("")
        benchmark, column, baseline = key.split("__")[0], key.split("__")[1], base.split("__")[1]
        for source, where in SOURCES.items():
            # the published pair's ratio, recomputed from its figures; the claim's words where spec.py states one
            claimed = published_ratio(Finding("", benchmark, column, baseline, 0.0, source))
            if claimed is None:
                continue
            said = [
                f.text
                for f in FINDINGS
                if (f.source, f.benchmark, f.numerator, f.denominator) == (source, benchmark, column, baseline)
            ]
            verdicts = ", ".join(f"{v}: {stats.claim_within(r, claimed, HOLDS_FACTOR)}" for v, r in per_version.items())
            lines += [
                f"- {where}: {column} over {baseline} on {benchmark} published {claimed:.2f}×"
                + (f" (“{said[0]}”)" if said else "")
                + f"; it holds where our whole interval is {stats.claim_rule(HOLDS_FACTOR)}: {verdicts}",
                "",
            ]
    return lines, ratios


def draw(
    path: Path, title: str, by_key: dict[str, list[Result]], judge: Judge, ratios: dict[str, dict[str, Ratio | None]]
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    panels = 2 if ratios else 1
    fig = Figure(figsize=(8, 3.6 * panels))
    axes = [fig.add_subplot(panels, 1, i + 1) for i in range(panels)]
    versions = sorted({version_of(r) for rs in by_key.values() for r in rs}, key=version_key)
    x = {v: i for i, v in enumerate(versions)}

    def plot(ax, label, points):
        points = [(x[v], c, lo, hi) for v, c, lo, hi in points]
        if points:
            xs, cs = [p[0] for p in points], [p[1] for p in points]
            errors = [[c - p[2] for c, p in zip(cs, points)], [p[3] - c for c, p in zip(cs, points)]]
            ax.errorbar(xs, cs, yerr=errors, marker="o", capsize=3, label=label)

    for key, results in by_key.items():
        points = []
        for result in results:
            found = judge.estimate(result)
            if found is not None:
                low, high = found.interval() or (found.center, found.center)
                points.append((version_of(result), found.center, low, high))
        plot(axes[0], key, points)
    axes[0].set_ylabel(f"{next(iter(by_key.values()))[0].unit} (log)")
    axes[0].set_yscale("log")
    axes[0].set_title(title, fontsize=9)
    for name, per_version in ratios.items():
        plot(axes[1], name, [(v, r.value, *(r.interval() or (r.value, r.value))) for v, r in per_version.items() if r])
        axes[1].set_ylabel("overhead ratio")
    for ax in axes:
        ax.set_xticks(range(len(versions)), versions)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    write_stream_atomic(path, lambda f: fig.savefig(f, format="png", dpi=100, metadata={"Software": None}))


def ratio_text(ratio: dict | None) -> str:
    ratio = ratio or {}
    if ratio.get("low") is None:
        return f"({ratio.get('reason') or 'no ratio'})"
    return f"{ratio['ratio']:.3g}× ({ratio['low']:.3g}–{ratio['high']:.3g})"


def bisect_lines(results_dir: Path) -> list[str]:
    lines = []
    for path in sorted((Path(results_dir) / STUDY_DIR).glob("*.bisect.json")):
        record = json.loads(path.read_text())
        answer = (
            f"first {record.get('change', 'slower')} release: **{record['answer']}**"
            if record.get("answer")
            else f"stopped: {record.get('stopped', 'not finished')}"
        )
        lines += [
            f"### {path.name.removesuffix('.bisect.json')}: {record['package']} {record['good']} → {record['bad']} "
            f"on {record['key']}",
            "",
            f"Releases: {', '.join(record['releases'])}"
            + (f"; {record['processes']} processes per release and step" if record.get("processes") else "")
            + f". {answer}.",
            "",
            "| step | candidate | against the good end | verdict | bad end against it | evidence |",
            "|---|---|---|---|---|---|",
        ]
        for step in record["steps"]:
            bad = f"{step['bad']}: {step['bad_verdict']} {ratio_text(step.get('bad_ratio'))}" if step.get("bad") else ""
            lines.append(
                f"| {step['number']} | {step['candidate']} | {step['good']} | {step['verdict']} "
                f"{ratio_text(step.get('ratio'))} | {bad} | `{STUDY_DIR}/{step['sweep']}/` |"
            )
        lines.append("")
    return lines


def render_sweeps(results_dir: Path) -> Path:
    """Write <results_dir>/SWEEP.md (and a figure per sweep and backend beside its results); returns its path. The
    page and its figures are written together: all, or (a full disk, a signal) none."""
    with together():
        return render_sweep_page(Path(results_dir))


def render_sweep_page(results_dir: Path) -> Path:
    lines = [
        "# Performance across releases",
        "",
        "Rendered by `make sweep`, `make bisect` and `make table` (bench/studies/sweep/page.py) from the result files "
        f"under `{STUDY_DIR}/`. Each version ran in its own env, derived from the backend's lock with the package "
        "at that version and only the co-changes the resolver needed (listed; `pinned`: none). A figure is the "
        "geometric mean of its processes' medians with its 95% interval; each verdict compares a version with "
        "the one before it (faster / slower / same within ±5% / inconclusive; docs/METHOD.md).",
        "",
    ]
    sweeps = load_sweeps(results_dir)
    if not sweeps:
        lines += ["No sweep yet: `make sweep` (docs/STUDIES.md).", ""]
    for (name, machine, backend), results in sweeps.items():
        if "-step" in name and name.startswith("bisect-"):
            continue  # a bisect's steps: its own table below
        judge = Judge(results, results_dir)
        by_key: dict[str, list[Result]] = defaultdict(list)
        for result in results:
            by_key[result.provenance["sweep"]["key"]].append(result)
        first = results[0].provenance
        loads = [
            run.settings.get("load_average_1m")
            for r in results
            for run in r.runs
            if run.settings.get("load_average_1m") is not None
        ]
        lines += [
            f"## {name}: {first['sweep']['package']} on {backend} — {machine}",
            "",
            f"{first.get('profile_choice')}; run {str(first.get('run_id'))[:8]}, commit "
            f"{(first.get('git') or {}).get('commit', '?')[:10]}, written {results[0].created_at}"
            + (
                f"; the machine's 1-minute load average after each process: {min(loads):.1f} to "
                f"{max(loads):.1f} on {first.get('cpu_count')} cores"
                if loads
                else ""
            )
            + ".",
            "",
        ]
        ratios, together, threshold = trend_ratios(judge, by_key)
        if together:
            lines += [family_sentence(together, threshold), ""]
        for key, found in by_key.items():
            lines += trend_lines(judge, key, found, ratios)
        extra, ratios = overhead_lines(by_key)
        lines += extra
        figure = results_dir / STUDY_DIR / name / f"{machine}__{backend}.png"
        draw(figure, f"{name}: {backend}, {machine}", by_key, judge, ratios)
        lines += [
            f"![{name} on {backend}: each key's figure per version with its 95% interval]"
            f"({figure.relative_to(results_dir)})",
            "",
        ]
    bisects = bisect_lines(results_dir)
    if bisects:
        lines += ["## Bisects", ""] + bisects
    out = results_dir / PAGE
    write_text_atomic(out, "\n".join(lines).rstrip("\n") + "\n")
    return out


def finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)
