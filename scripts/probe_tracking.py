"""Does a machine-speed probe track a run's cells? `sample` reads the drift probe's matmul (bench/drift.py) and an
L3-sized triad (a = b + 3c over three 16 MiB arrays: memory traffic, which the matmul hardly makes) every --every
seconds into a JSON-lines file, beside a `make bench-all`; `analyse` then sets each cell process's ln(median) about
its cell's mean against each probe's ln(reading) about its median at the process's start (its log's time stamp).
A probe that tracked the cells could correct a cross-run comparison for the machine's speed; one that does not,
cannot. `cells` asks the same of the run's other cells: in each noise study, each cell's shift from round 1 to round 2
(its mean ln median over both sides' processes), and what is left once the other cells' median shift is taken off,
beside the shift a one-run-a-side comparison could carry and still call +20% slower in 6 of 8 pairs.

    python scripts/probe_tracking.py sample --out probes.jsonl &      (then make bench-all; kill it after)
    python scripts/probe_tracking.py analyse probes.jsonl <results folder of the run>
    python scripts/probe_tracking.py cells results/noise/*.json
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

    from bench.drift import _median_ms, reference_ms

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

    from bench.noise_file import read_noise_file, round_logs

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
    args = parser.parse_args()
    if args.action == "sample":
        sample(args.out, args.every)
    elif args.action == "cells":
        cells(args.studies)
    else:
        analyse(args.samples, args.results)


if __name__ == "__main__":
    main()
