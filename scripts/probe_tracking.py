"""Does a machine-speed probe track a run's cells? `sample` reads the drift probe's matmul (bench/measure/drift.py) and
an L3-sized triad (a = b + 3c over three 16 MiB arrays: memory traffic, which the matmul hardly makes) every --every
seconds into a JSON-lines file, beside a `make bench-all`; `analyse` then sets each cell process's ln(median) about
its cell's mean against each probe's ln(reading) about its median at the process's start (its log's time stamp).
A probe that tracked the cells could correct a cross-run comparison for the machine's speed; one that does not,
cannot. `cells` asks the same of the run's other cells: in each noise study, each cell's shift from round 1 to round 2
(its mean ln median over both sides' processes), and what is left once the other cells' median shift is taken off,
beside the shift a one-run-a-side comparison could carry and still call +20% slower in 6 of 8 pairs.

    python scripts/probe_tracking.py sample --out probes.jsonl &      (then make bench-all; kill it after)
    python scripts/probe_tracking.py analyse probes.jsonl <results folder of the run>
    python scripts/probe_tracking.py cells results/noise/*.json
    python scripts/probe_tracking.py runs results/noise/*.json     (each run's level against its drift probe)
"""
from __future__ import annotations

import argparse
import bisect
import datetime
import json
import math
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PROBES = ("matmul_ms", "triad_ms")
NEAREST_S = 60  # a process without a probe reading this close is left out


def sample(out: Path, every_s: float) -> None:
    import numpy

    from bench.measure.drift import _median_ms, reference_ms

    n = 2 * 1024 * 1024  # 16 MiB of float64: beyond a core's L2, inside a shared L3
    b, c = numpy.random.default_rng(0).random(n), numpy.random.default_rng(1).random(n)
    a = numpy.empty(n)

    def triad():
        numpy.multiply(c, 3.0, out=a)
        numpy.add(a, b, out=a)

    with out.open("a") as f:
        while True:
            f.write(json.dumps({"t": time.time(), "matmul_ms": reference_ms(), "triad_ms": _median_ms(triad, 0.05)})
                    + "\n")
            f.flush()
            time.sleep(every_s)


def process_rows(results: Path) -> list[tuple[float, float, float | None]]:
    """(start time, ln median about the cell's mean, the product's own before_ms) for each ok process of a cell with
    two or more."""
    rows = []
    for path in sorted(results.glob("*.json")):  # this run's cells, not a stack-2024/ or history/ beside them
        try:
            found = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(found, dict) or "runs" not in found:
            continue
        processes = []
        for run in found["runs"]:
            steps = run.get("timed_ms") or []
            stamp = re.search(r"\.(\d{8}T\d{6}Z)\.", (run.get("process") or {}).get("log") or "")
            if run.get("status") != "ok" or not steps or min(steps) <= 0 or not stamp:
                continue
            started = datetime.datetime.strptime(stamp.group(1), "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.UTC)
            processes.append((started.timestamp(), math.log(statistics.median(steps)),
                              (run.get("reference") or {}).get("before_ms")))
        if len(processes) >= 2:
            mean = statistics.fmean(p[1] for p in processes)
            rows += [(t, lm - mean, before) for t, lm, before in processes]
    return rows


def analyse(samples_path: Path, results: Path) -> None:
    from scipy import stats

    samples = [json.loads(line) for line in samples_path.read_text().splitlines() if line.strip()]
    times = [s["t"] for s in samples]
    medians = {k: statistics.median(s[k] for s in samples) for k in PROBES}

    def reading(t: float, key: str) -> float | None:
        i = bisect.bisect_left(times, t)
        j = min((j for j in (i - 1, i) if 0 <= j < len(times)), key=lambda j: abs(times[j] - t))
        return math.log(samples[j][key] / medians[key]) if abs(times[j] - t) < NEAREST_S else None

    rows = process_rows(results)
    print(f"{len(rows)} processes; {len(samples)} probe readings; process deviations sd "
          f"{statistics.pstdev(r[1] for r in rows):.2%}")
    for key in PROBES:
        pairs = [(x, r[1]) for r in rows if (x := reading(r[0], key)) is not None]
        low, high = min(s[key] for s in samples), max(s[key] for s in samples)
        r = stats.pearsonr(*zip(*pairs))
        print(f"{key}: {low:.3f}-{high:.3f}; {len(pairs)} processes: Pearson r {r.statistic:.3f} (p {r.pvalue:.2g}), "
              f"Spearman {stats.spearmanr(*zip(*pairs)).statistic:.3f}")


def cells(studies: list[Path], effect: float = 0.20, power: float = 0.75) -> None:
    from scipy import stats

    from bench.judge.noise_file import read_noise_file, round_logs

    # One run a side: the ratio's log carries one round-to-round shift; a two-sided 95% call at this power needs its
    # standard deviation at most ln(1 + effect) / (z_0.975 + z_power).
    allowed = math.log1p(effect) / (stats.norm.ppf(0.975) + stats.norm.ppf(power))
    print(f"a shift of rms <= {allowed:.3f} calls +{effect:.0%} slower in {power:.0%} of one-run-a-side pairs")
    for path in studies:
        shifts = {}
        for cell in read_noise_file(path)["cells"]:
            by_round = {k: statistics.fmean(logs) for k, logs in round_logs(cell) if k is not None and logs}
            if {1, 2} <= set(by_round):
                shifts[cell["key"]] = by_round[2] - by_round[1]
        if len(shifts) < 3:
            print(f"{path.name}: fewer than 3 cells in two rounds")
            continue
        left = [s - statistics.median(t for other, t in shifts.items() if other != key) for key, s in shifts.items()]
        rms = math.sqrt(statistics.mean(s * s for s in shifts.values()))
        print(f"{path.name}: {len(shifts)} cells, round-to-round shift rms {rms:.3f} "
              f"({', '.join(f'{s:+.2f}' for s in shifts.values())}); less the other cells' median shift: rms "
              f"{math.sqrt(statistics.mean(x * x for x in left)):.3f}")


def run_folders(study: dict, results_dir: Path) -> list[list[Path]]:
    """A study's separate runs of identical code, as bench/judge/noise_file.py run_groups counts them: each A/A round
    (both sides' folders) and the untouched side A of each delay pair (each pair its own run)."""
    from bench.base.packed import unpacked

    runs_dir = results_dir / study["runs_dir"]
    unpacked(runs_dir)
    rounds = sorted({r["round"] for cell in study.get("cells") or [] for r in cell.get("rounds") or []})
    pairs = {pair["folders"]["A"]: None for row in study.get("detection") or [] for pair in row.get("pairs") or []
             if pair.get("folders")}  # one folder per pair holds every delay cell: each once
    return [[runs_dir / f"round-{k}" / side for side in ("A", "B")] for k in rounds] + [[runs_dir / a] for a in pairs]


def run_level(folders: list[Path]) -> tuple[dict[str, float], float | None]:
    """A run's mean ln(median) per cell over its ok processes, and the mean ln of the drift probe's readings
    (before and after each of those processes); None where no process recorded one."""
    from bench.record.results import load, result_files

    logs: dict[str, list[float]] = {}
    probe: list[float] = []
    for folder in folders:
        for path in result_files(folder) if folder.is_dir() else []:
            result = load(path)
            for run in result.runs:
                if run.status != "ok" or not run.timed_ms:
                    continue
                logs.setdefault(result.cell.key, []).append(math.log(statistics.median(run.timed_ms)))
                probe += [math.log(v) for k, v in (run.reference or {}).items()
                          if k in ("before_ms", "after_ms") and isinstance(v, (int, float)) and v > 0]
    return {k: statistics.fmean(v) for k, v in logs.items()}, (statistics.fmean(probe) if probe else None)


def runs(study_paths: list[Path], verbose: bool = False) -> None:
    """Per machine (a current study and its noise/history/ ones): over its runs, each run's level (the mean over its
    cells of the cell's run mean ln median less that cell's mean over the runs) against the run's mean ln drift-probe
    reading: Pearson's r with its test and 95% interval (scipy.stats.pearsonr), and Spearman's."""
    from scipy import stats

    from bench.judge.noise_file import read_noise_file, study_files

    for path in study_paths:
        results_dir = path.resolve().parent.parent
        measured = [(n, *run_level(f)) for n, study in enumerate(study_files(path))
                    for f in run_folders(read_noise_file(study), results_dir)]
        studies = [n for n, cells, probe in measured if cells and probe is not None]
        measured = [(cells, probe) for _, cells, probe in measured if cells and probe is not None]
        by_cell: dict[str, list[float]] = {}
        for cells, _ in measured:
            for key, value in cells.items():
                by_cell.setdefault(key, []).append(value)
        centre = {key: statistics.fmean(values) for key, values in by_cell.items()}
        level = [statistics.fmean(v - centre[k] for k, v in cells.items()) for cells, _ in measured]
        probe = [p for _, p in measured]
        if verbose:
            for (cells, p), x in zip(measured, level):
                print(f"  probe {math.exp(p):.3f} ms, level {x:+.3f}, {len(cells)} cells")
        if len(level) < 3:
            print(f"{path.name}: fewer than 3 runs with a probe reading")
            continue
        r = stats.pearsonr(probe, level)
        ci = r.confidence_interval(0.95)
        print(f"{path.name}: {len(level)} runs in {len(study_files(path))} studies; run level sd "
              f"{statistics.stdev(level):.2%}, probe sd {statistics.stdev(probe):.2%}; Pearson r {r.statistic:+.2f} "
              f"(p {r.pvalue:.2g}, 95% interval {ci.low:+.2f} to {ci.high:+.2f}), Spearman "
              f"{stats.spearmanr(probe, level).statistic:+.2f}")
        # the same within each study (each invocation's runs about their own means): the short time scale alone
        def about_study(values: list[float]) -> list[float]:
            means = {n: statistics.fmean(v for m, v in zip(studies, values) if m == n) for n in set(studies)}
            return [v - means[n] for n, v in zip(studies, values)]

        if len(level) - len(set(studies)) >= 3:
            w = stats.pearsonr(about_study(probe), about_study(level))
            print(f"  within each study ({len(level)} runs about their study's means): Pearson r {w.statistic:+.2f} "
                  f"(p {w.pvalue:.2g})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="action", required=True)
    s = sub.add_parser("sample")
    s.add_argument("--out", type=Path, required=True)
    s.add_argument("--every", type=float, default=30.0)
    a = sub.add_parser("analyse")
    a.add_argument("samples", type=Path)
    a.add_argument("results", type=Path)
    c = sub.add_parser("cells")
    c.add_argument("studies", type=Path, nargs="+")
    r = sub.add_parser("runs")
    r.add_argument("studies", type=Path, nargs="+")
    r.add_argument("-v", "--verbose", action="store_true", help="each run's probe reading and level")
    args = parser.parse_args()
    if args.action == "runs":
        runs(args.studies, args.verbose)
    elif args.action == "sample":
        sample(args.out, args.every)
    elif args.action == "cells":
        cells(args.studies)
    else:
        analyse(args.samples, args.results)


if __name__ == "__main__":
    main()
