"""Judging cells measured in separate runs: the machine's run-to-run spread split into its two time scales, when
pooled runs a side count as independent, the interleaved command that would decide an undecided comparison, and the
drift probe's correction where the machine's study shows the probe tracks the runs' level.

Two time scales live in one run-to-run spread. Runs minutes apart (the runs of one noise study: its A/A rounds and
its delay pairs) differ by the short part; the machine's level also wanders over hours, which runs of different
studies add (the slow part). The mean of k runs a side carries the short part over k, but the slow part over k only
where the runs lie further apart than the machine's short time scale (the longest of its studies: runs that close
were seen to share one level); runs back to back share one slow draw, and their mean carries it whole.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench.base import stats
from bench.base.stats import ProcessSpread, Ratio
from bench.judge.noise_file import find_noise_file, readable_studies, run_variance_of
from bench.record.results import Result

# Where a machine has no study that spans time: runs closer than this share the slow drift. Two hours: the
# committed studies saw the level move within one hour (6.3 -> 8.5 -> 9-10.7 ms, same code), so an hour would
# not be safe; stated wherever it is used.
DEFAULT_SHORT_SCALE_S = 2 * 3600.0
PROBE_TRACKS_P = 0.05  # the Pearson test's level at which a study's drift probe is taken to track its runs


@dataclass(frozen=True)
class RunSpreadParts:
    """A machine's run-to-run spread (`total`, as the Judge has always carried it for one run a side), its short
    part (runs minutes apart: within one study) and its slow part (the rest: sqrt(total^2 - short^2)), and the time
    beyond which two runs' starts count as independent draws of the slow part."""

    total: ProcessSpread
    short_log_sd: float
    short_dof: float
    scale_s: float
    scale_source: str

    @property
    def slow_log_sd(self) -> float:
        return math.sqrt(max(self.total.log_sd**2 - self.short_log_sd**2, 0.0))

    def side_variance(self, clusters: list[int]) -> float:
        """The run-to-run variance of one side's mean over its runs, grouped in `clusters` (the runs in each group
        of starts within the time scale of each other): the short part over k, the slow part over k only for
        independent runs (the sum of the squared group sizes over k^2: 1 for k runs back to back, 1/k apart)."""
        k = sum(clusters)
        short = min(self.short_log_sd, self.total.log_sd) ** 2
        return short / k + self.slow_log_sd**2 * sum(n * n for n in clusters) / k**2

    def text(self) -> str:
        return (f"{self.short_log_sd:.1%} between runs minutes apart, {self.slow_log_sd:.1%} more over hours; runs "
                f"count as independent where they started more than {minutes(self.scale_s)} apart "
                f"({self.scale_source})")


def minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds < 3 * 3600 else f"{seconds / 3600:.1f} h"


def parse_time(text: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text))
    except (TypeError, ValueError):
        return None


def study_span_s(study: dict[str, Any]) -> float | None:
    """How long a study ran: its runs lay at most this far apart."""
    start, end = parse_time(study.get("created_at")), parse_time(study.get("finished_at"))
    if start is None or end is None or end <= start:
        wall = (study.get("conditions") or {}).get("wall_s")
        return float(wall) if isinstance(wall, (int, float)) and wall > 0 else None
    return (end - start).total_seconds()


def split_run_spread(studies: list[dict[str, Any]], total: ProcessSpread) -> RunSpreadParts:
    """The short part from each study's own runs (minutes apart), pooled over the studies by their degrees of
    freedom; the time scale the longest study's span. Without a study of two runs of a cell, the short part is taken
    as the whole spread (no claim that runs average out) and the time scale is the stated default."""
    pooled, dof = 0.0, 0
    for study in studies:
        found = run_variance_of([study])
        if found is not None:
            pooled, dof = pooled + found[0] * found[1], dof + found[1]
    spans = [s for study in studies if (s := study_span_s(study))]
    if spans:
        scale, source = max(spans), f"the longest of its {len(spans)} noise studies"
    else:
        scale, source = DEFAULT_SHORT_SCALE_S, "no study spans time on this machine: the default"
    if not dof:
        return RunSpreadParts(total, total.log_sd, total.dof, scale, source)
    short = math.sqrt(min(max(pooled / dof, 0.0), total.log_sd**2))
    return RunSpreadParts(total, short, float(dof), scale, source)


def machine_run_spread_parts(results_dir: Path | None, machine: dict[str, Any],
                             total: ProcessSpread | None) -> RunSpreadParts | None:
    """The machine's run spread split (split_run_spread) from the studies that measured `total`; None without it."""
    if total is None:
        return None
    found = find_noise_file(results_dir, machine)
    return split_run_spread(readable_studies(found[0]) if found else [], total)


def run_starts(result: Result) -> list[datetime | None]:
    """When each run of a side began measuring the cell: a pooled side's runs (provenance.pooled_runs), else the
    result's own; each its result's time less its processes' wall time (a run's record gives when it was written)."""
    pooled = result.provenance.get("pooled_runs") or ()
    if not pooled:
        return [measured_from(result.created_at, sum(r.wall_s or 0.0 for r in result.runs))]
    return [parse_time(p.get("measured_from")) or parse_time(p.get("created_at")) for p in pooled]


def measured_from(created_at: str, wall_s: float) -> datetime | None:
    written = parse_time(created_at)
    return written - timedelta(seconds=wall_s) if written is not None else None


def clusters_of(starts: list[datetime | None], scale_s: float) -> list[int]:
    """The runs' starts grouped where each lies within `scale_s` of the one before (sorted): the sizes of the groups
    that count as independent draws of the slow part. A run with no start joins one group with every other such run
    (it is not shown apart)."""
    known = sorted(s for s in starts if s is not None)
    unknown = len(starts) - len(known)
    groups: list[int] = []
    for i, start in enumerate(known):
        if i and (start - known[i - 1]).total_seconds() <= scale_s:
            groups[-1] += 1
        else:
            groups.append(1)
    if unknown:
        groups.append(unknown)
    return groups


def with_pooled_run_spread(found: Ratio, parts: RunSpreadParts, a: Result, b: Result,
                           run_counts: tuple[int, int]) -> Ratio:
    """B / A of cells from separate runs carrying each side's run-to-run variance, its runs grouped by their starts
    (clusters_of, run_starts): with_clustered_run_spread."""
    clusters = (clusters_of(run_starts(a), parts.scale_s), clusters_of(run_starts(b), parts.scale_s))
    if tuple(sum(c) for c in clusters) != run_counts:  # a side's starts not one per run: none shown apart
        clusters = ([run_counts[0]], [run_counts[1]])
    return with_clustered_run_spread(found, parts, clusters)


def with_clustered_run_spread(found: Ratio, parts: RunSpreadParts, clusters: tuple[list[int], list[int]]) -> Ratio:
    """B / A carrying each side's run-to-run variance (RunSpreadParts.side_variance of its runs' `clusters`, A then
    B): for one run a side the whole spread, as before; for a pooled side the 1/k on the short part only, and on the
    slow part only as far as its runs lie apart."""
    run_counts = (sum(clusters[0]), sum(clusters[1]))
    weight = (sum(parts.side_variance(c) for c in clusters) / parts.total.log_sd**2 if parts.total.log_sd
              else None)  # fmt: skip
    judged = found.with_run_spread(parts.total, run_counts, weight)
    if run_counts == (1, 1) or judged.log_se is None:
        return judged
    apart = [f"{len(c)} of {sum(c)}" for c in clusters]
    return judged.noted(f"pooled runs: A's {apart[0]}, B's {apart[1]} independent; the run spread {parts.text()}; "
                        "1/k on the short part, and on the slow part only across independent runs")


def independent_runs(result: Result, parts: RunSpreadParts) -> bool:
    """Whether a side's runs (one, or several pooled) lie apart beyond the time scale: a further run started that far
    from them would narrow a comparison."""
    starts = run_starts(result)
    return len(clusters_of(starts, parts.scale_s)) == len(starts)


# -- what an undecided comparison across runs says


def processes_only_interval(judged: Ratio) -> tuple[float, float] | None:
    """The interval the comparison would have without the run spread (its processes alone)."""
    if judged.runs is None or judged.log_se is None:
        return None
    weight = judged.run_weight if judged.run_weight is not None else stats.runs_weight(judged.run_counts)
    left = judged.log_se**2 - weight * judged.runs.log_sd**2
    if left <= 0:
        return None
    half = stats.t_quantile((1 + judged.confidence) / 2, judged.dof) * math.sqrt(left)
    return judged.value * math.exp(-half), judged.value * math.exp(half)


def run_spread_keeps_wide(judged: Ratio | None) -> bool:
    """An inconclusive comparison of separate runs that the run spread keeps wide: no number of processes could
    decide it (the runs' floor beyond the band), or its processes alone would have decided it."""
    if judged is None or judged.runs is None or not judged.decidable or judged.interval() is None:
        return False
    floor = judged.runs_floor()
    if floor is not None and floor > 1 + stats.EQUIVALENCE_BAND:
        return True
    inner = processes_only_interval(judged)
    band = 1 + stats.EQUIVALENCE_BAND
    return inner is not None and (inner[0] > 1 or inner[1] < 1 or (inner[0] >= 1 / band and inner[1] <= band))


def commits_of(result: Result) -> set[str]:
    """The commits a side's code came from: each pooled run's, else the result's."""
    pooled = result.provenance.get("pooled_runs") or ()
    found = {p.get("commit") for p in pooled} if pooled else {(result.provenance.get("git") or {}).get("commit")}
    return {c for c in found if c}


def packages_of(result: Result) -> dict[str, str]:
    """The package versions its processes recorded (the first process that recorded any)."""
    for run in result.runs:
        packages = (run.process or {}).get("packages") if isinstance(run.process, dict) else None
        if packages:
            return dict(packages)
    return {}


def interpreter_of(result: Result) -> str | None:
    for run in result.runs:
        if isinstance(run.process, dict) and run.process.get("python_executable"):
            return run.process["python_executable"]
    return None


@dataclass(frozen=True)
class Decider:
    """What would decide a comparison across runs: the interleaved command (`make ab`) with each side derived from
    the results' provenance, or, where both runs measured one code, `make noise` (an A/A: nothing to re-measure
    between them); `why` says how the sides were derived, and any doubt."""

    command: str
    why: str
    aa: bool = False


def decider(a: Result, b: Result) -> Decider:
    """The command that decides A against B measured interleaved in one invocation: the two commits where the code
    differs, else the one package whose version differs (<package>==<version>), else the two environments'
    interpreters where several differ; identical code and versions: an A/A of one code, for which `make noise`
    measures the machine's own spread."""
    cell, profile = a.cell.key, a.cell.profile
    tail = f"CELL={cell} PROFILE={profile}"
    ca, cb = commits_of(a), commits_of(b)
    dirty = [side for side, r in (("A", a), ("B", b)) if (r.provenance.get("git") or {}).get("dirty")]
    doubt = (f"; {' and '.join(dirty)} ran from a tree with uncommitted changes: its commit does not hold all the "
             "code it measured" if dirty else "")  # fmt: skip
    if len(ca) != 1 or len(cb) != 1:
        several = "A" if len(ca) != 1 else "B"
        return Decider(f"make ab A=<A's code> B=<B's code> {tail}",
                       f"{several}'s pooled runs record {len(ca if several == 'A' else cb) or 'no'} commits: name "
                       "each side's code yourself" + doubt)
    (commit_a,), (commit_b,) = ca, cb
    if commit_a != commit_b:
        return Decider(f"make ab A={commit_a[:12]} B={commit_b[:12]} {tail}", "the runs' code differs" + doubt)
    pa, pb = packages_of(a), packages_of(b)
    moved = sorted(name for name in set(pa) | set(pb) if pa.get(name) != pb.get(name))
    if len(moved) == 1 and pa.get(moved[0]) and pb.get(moved[0]):
        name = moved[0]
        return Decider(f"make ab A={name}=={pa[name]} B={name}=={pb[name]} {tail}",
                       f"one commit ({commit_a[:12]}), one package's version differs" + doubt)
    if moved:
        ia, ib = interpreter_of(a), interpreter_of(b)
        listed = ", ".join(f"{n} {pa.get(n, 'absent')} -> {pb.get(n, 'absent')}" for n in moved[:4])
        more = f" and {len(moved) - 4} more" if len(moved) > 4 else ""
        if ia and ib and ia != ib:
            return Decider(f"make ab A={ia} B={ib} {tail}",
                           f"one commit, {len(moved)} packages differ ({listed}{more}): each side's environment"
                           + doubt)
        return Decider(f"make ab A=<the env of A's packages> B=<the env of B's packages> {tail}",
                       f"one commit, {len(moved)} packages differ ({listed}{more}) in one interpreter's place: "
                       "rebuild each side's environment and name its interpreter" + doubt)
    return Decider(f"make noise PROFILE={profile} CELLS={cell}",
                   f"an A/A comparison of one code: both runs measured commit {commit_a[:12]} with the same package "
                   "versions, so their difference is the machine's own; re-measuring one code against itself decides "
                   "nothing about it, and the machine's noise study measures its spread" + doubt, aa=True)


# -- the drift probe's correction, where the machine's study shows it tracks


@dataclass(frozen=True)
class ProbeTracking:
    """How the drift probe's level follows a cell's level over a study's runs: Pearson's r and its p-value
    (scipy.stats.pearsonr) over the runs, each run's ln(probe level) and its cells' mean ln(median), both about each
    cell's mean; with the run spread left after dividing each run by its probe (the corrected spread)."""

    r: float
    p: float
    runs: int
    corrected_log_sd: float | None

    @property
    def tracks(self) -> bool:
        return self.r > 0 and self.p < PROBE_TRACKS_P

    def to_dict(self) -> dict[str, Any]:
        return {"pearson_r": self.r, "p_value": self.p, "runs": self.runs, "corrected_log_sd": self.corrected_log_sd,
                "tracks": self.tracks,
                "how": ("scipy.stats.pearsonr over the study's runs: each run's ln(median drift-probe reading beside "
                        "its processes) against its processes' mean ln(median), each about its cell's mean; "
                        f"tracks where r > 0 and p < {PROBE_TRACKS_P:g}")}  # fmt: skip


def run_points(study: dict[str, Any]) -> list[tuple[float, float]]:
    """Per run of each cell (an A/A round, a delay pair's side A): (ln probe, mean ln median), both about the cell's
    mean over its runs; only runs that recorded the probe's readings beside their processes (`reference_ms`)."""
    points = []
    for cell in study.get("cells") or []:
        found = []
        for run in cell.get("rounds") or []:
            medians = [m for side in ("A", "B") for m in (run.get("medians_ms") or {}).get(side, [])]
            probes = [v for side in ("A", "B") for v in (run.get("reference_ms") or {}).get(side, [])]
            if medians and probes and min(medians) > 0 and min(probes) > 0:
                found.append((math.log(statistics.median(probes)), statistics.fmean(math.log(m) for m in medians)))
        if len(found) >= 2:
            px, py = statistics.fmean(x for x, _ in found), statistics.fmean(y for _, y in found)
            points += [(x - px, y - py) for x, y in found]
    return points


def probe_tracking(points: list[tuple[float, float]]) -> ProbeTracking | None:
    """Pearson's r of the runs' probe against their level; None under three runs or without spread."""
    if len(points) < 3:
        return None
    xs, ys = [x for x, _ in points], [y for _, y in points]
    if statistics.pstdev(xs) == 0 or statistics.pstdev(ys) == 0:
        return None
    library = stats.scipy_stats()
    if library is None:
        return None
    found = library.pearsonr(xs, ys)
    corrected = statistics.stdev(y - x for x, y in points) if len(points) >= 2 else None
    return ProbeTracking(float(found.statistic), float(found.pvalue), len(points), corrected)


def study_tracking(study: dict[str, Any]) -> ProbeTracking | None:
    """A study's drift-probe tracking: its derived figure where recorded, else from its runs' readings."""
    recorded = (study.get("derived") or {}).get("probe_tracking")
    if isinstance(recorded, dict) and isinstance(recorded.get("pearson_r"), (int, float)):
        return ProbeTracking(float(recorded["pearson_r"]), float(recorded["p_value"]), int(recorded["runs"]),
                             recorded.get("corrected_log_sd"))
    return probe_tracking(run_points(study))


def machine_probe_tracking(results_dir: Path | None, machine: dict[str, Any]) -> tuple[ProbeTracking, str] | None:
    """The machine's drift-probe tracking over all its studies' runs pooled, with where it came from; None where no
    study recorded the probe's readings beside its runs."""
    found = find_noise_file(results_dir, machine)
    if found is None:
        return None
    studies = readable_studies(found[0])
    recorded = [t for s in studies if (t := (s.get("derived") or {}).get("probe_tracking"))]
    points = [p for s in studies for p in run_points(s)]
    tracking = probe_tracking(points) if points else (study_tracking(studies[0]) if recorded else None)
    return (tracking, f"make noise, {found[0].name}") if tracking is not None else None


def probe_level(result: Result) -> float | None:
    """The median drift-probe reading beside a cell's processes."""
    readings = [v for run in result.runs if run.reference
                for k in ("before_ms", "after_ms") if isinstance(v := run.reference.get(k), (int, float)) and v > 0]
    return statistics.median(readings) if readings else None


def probe_corrected(found: Ratio, a: Result, b: Result, tracking: ProbeTracking, source: str) -> str | None:
    """B / A divided by the drift probe's B / A beside the cells, as a note beside the verdict (never the verdict),
    where the study shows the probe tracks the runs' level: its interval with the run spread replaced by the spread
    left after the correction, where the study measured that."""
    qa, qb = probe_level(a), probe_level(b)
    if not tracking.tracks or not qa or not qb or found.value <= 0:
        return None
    corrected = found.value / (qb / qa)
    text = (f"corrected by the drift probe (B's probe / A's {qb / qa:.3g}; the machine's study: Pearson r "
            f"{tracking.r:+.2f}, p {tracking.p:.2g}, over {tracking.runs} runs, {source}): {corrected:.3g}x")
    if found.runs is not None and found.log_se is not None and tracking.corrected_log_sd is not None:
        weight = found.run_weight if found.run_weight is not None else stats.runs_weight(found.run_counts)
        processes = max(found.log_se**2 - weight * found.runs.log_sd**2, 0.0)
        se = math.sqrt(processes + weight * tracking.corrected_log_sd**2)
        half = stats.t_quantile((1 + found.confidence) / 2, found.dof) * se
        text += f" ({corrected * math.exp(-half):.3g}-{corrected * math.exp(half):.3g})"
    return text + "; beside the verdict, not in it"
