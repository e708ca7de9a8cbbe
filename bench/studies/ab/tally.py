"""`make ab-tally`: what many `make ab` comparisons of one kind called, counted, each rate with its binomial bound.

A design is known by what it detects and what it calls falsely, and both are rates over repeated comparisons:
+20% pairs (B_DELAY=0.2) called slower, A/A pairs called different. Each group (cell, step delay, A/A or not, and
the rule's processes: a raised cap is another design) says
how many of its pairs each verdict took, the rate that matters with its 95% Clopper-Pearson interval (scipy), how
many named machine states, and the process spread its pairs show (each side's process medians, log standard deviation
pooled within the sides), with the processes a side that spread would need for 80% power against the group's effect
under the rule with its cap raised to them (its looks, and so each look's confidence, counted at that cap)."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from bench.base.atomic import write_text_atomic
from bench.base.errors import BenchError
from bench.base.packed import unpacked
from bench.base.stats import FASTER, INCONCLUSIVE, SAME, SLOWER
from bench.record.results import load, result_files
from bench.studies.noise.detection import ok_medians
from bench.studies.noise.figures import pooled_spread

RECORD_SUFFIX = ".ab.json"
DIFFERENT = (SLOWER, FASTER)
# the effect an A/A group's power is sized for: the smallest change the acceptance asks the design to find
AA_EFFECT = 0.2


@dataclass
class Group:
    key: str
    delay: float
    same_code: bool
    first: int  # the rule's processes a side to start with and its cap, and its alpha over all looks
    cap: int
    verdicts: list[str] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)
    processes: list[int] = field(default_factory=list)  # both sides' processes, a pair each
    states: int = 0  # pairs whose machine switched between two states
    sides: list[list[float]] = field(default_factory=list)  # each side's process medians, two a pair
    alpha: float = 0.05

    @property
    def label(self) -> str:
        return "A/A" if self.same_code else f"+{self.delay:.0%} on B" if self.delay else "A against B"

    @property
    def effect(self) -> float:
        return self.delay or AA_EFFECT

    def rate(self) -> tuple[str, int, tuple[float, float]]:
        """What this group's rate counts, the count, and its 95% Clopper-Pearson interval."""
        from scipy.stats import binomtest

        what, hits = (("called different", sum(v in DIFFERENT for v in self.verdicts)) if self.same_code or not
                      self.delay else ("called slower", self.verdicts.count(SLOWER)))  # fmt: skip
        ci = binomtest(hits, len(self.verdicts)).proportion_ci(0.95, method="exact")
        return what, hits, (ci.low, ci.high)

    def log_sd(self) -> tuple[float, int] | None:
        """The process spread within the sides, pooled (log standard deviation) and its degrees of freedom."""
        return pooled_spread(self.sides)

    def processes_for_power(self, most: int = 1000) -> int | None:
        """The fewest processes a side n at which the rule, its cap raised to n, decides the group's effect with 80%
        power (bench/judge/replication.py decided_at): each raise adds looks, so each look is judged stricter
        (1 - alpha / looks). None without a spread, or past `most`."""
        from bench.judge.replication import SequentialRule, decided_at

        spread = self.log_sd()
        if spread is None:
            return None
        for n in range(max(self.first, 2), most + 1):
            rule = SequentialRule(self.first, n, self.alpha)
            if decided_at(math.log1p(self.effect), (spread[0], spread[0]), n, rule.confidence):
                return n
        return None


def records(results_dir: Path) -> list[tuple[Path, dict]]:
    folder = Path(results_dir) / "ab"
    if not folder.is_dir():
        raise BenchError(f"{folder}: no comparisons of make ab here")
    found = []
    for path in sorted(folder.rglob(f"*{RECORD_SUFFIX}")):
        try:
            found.append((path, json.loads(path.read_text())))
        except (OSError, ValueError) as e:
            raise BenchError(f"{path}: unreadable ({e})") from None
    return found


def side_medians(path: Path, record: dict, side: str) -> list[float]:
    """The process medians of one side of the comparison recorded at `path`: the record's, else (a record written
    before it kept them) its raw results', unpacked from the comparison's archive where only that is kept."""
    if "medians_ms" in record:
        return record["medians_ms"][side]
    folder = unpacked(path.with_name(path.name[: -len(RECORD_SUFFIX)]) / side)
    return [m for f in result_files(folder) for m in ok_medians(load(f).runs)] if folder.is_dir() else []


def tally(results_dir: Path, machine: str | None = None) -> list[Group]:
    groups: dict[tuple, Group] = {}
    for path, record in records(results_dir):
        if machine and machine not in record.get("machine", ""):
            continue
        if not record.get("verdict"):  # cut short: no verdict to count
            continue
        delay = float(record["B"].get("step_delay") or 0.0)
        rule = record["rule"]
        kind = (record["key"], delay, record["same_code"], rule["first"], rule["cap"])
        group = groups.setdefault(kind, Group(*kind))
        group.verdicts.append(record["verdict"])
        group.ratios.append(record["ratio"]["ratio"] if record.get("ratio") else math.nan)
        group.processes.append(sum(record["processes"].values()))
        group.states += bool(record.get("machine_states"))
        group.alpha = rule["alpha"]
        group.sides += [side_medians(path, record, side) for side in ("A", "B")]
    return sorted(groups.values(), key=lambda g: (g.same_code, g.key, g.delay, g.cap))


def markdown(groups: list[Group], results_dir: Path) -> str:
    from tabulate import tabulate

    rows = []
    for g in groups:
        what, hits, (low, high) = g.rate()
        counts = ", ".join(f"{v} {g.verdicts.count(v)}" for v in (SLOWER, SAME, INCONCLUSIVE, FASTER)
                           if g.verdicts.count(v))  # fmt: skip
        spread = g.log_sd()
        finite = [r for r in g.ratios if math.isfinite(r)]
        rows.append([
            f"`{g.key}`", g.label, f"{g.first}-{g.cap}", len(g.verdicts), counts,
            f"{what} {hits}/{len(g.verdicts)} ({low:.0%}-{high:.0%})",
            f"{math.exp(sum(map(math.log, finite)) / len(finite)):.3g}" if finite else "-",
            f"{min(g.processes)}-{max(g.processes)}", g.states,
            f"{spread[0]:.1%} ({spread[1]} dof)" if spread else "-", g.processes_for_power() or "-",
        ])  # fmt: skip
    table = tabulate(rows, headers=["cell", "pairs of", "processes a side (rule)", "pairs", "verdicts",
                                    "rate (95% Clopper-Pearson)",
                                    "geometric mean B/A", "processes a pair", "machine states named",
                                    "process spread (log sd)", "processes a side for 80% power (cap raised)"],
                     tablefmt="github")  # fmt: skip
    return (f"# make ab's comparisons in {results_dir}, counted\n\n"
            "Written by `python -m bench ab-tally` from each comparison's record (`*.ab.json`) and its processes' "
            "results. The process spread is pooled within the sides; the processes a side for 80% power are where the "
            "rule, its cap raised to them (each look judged stricter for the looks it adds), decides the pairs' "
            "step delay (A/A: +20%) with that spread.\n\n" + table + "\n")


def main(argv: list[str] | None = None) -> int:
    import argparse

    from bench.base.exit_status import exit_status
    from bench.base.resultsdir import results_folder

    parser = argparse.ArgumentParser(prog="python -m bench ab-tally", description=__doc__.splitlines()[0])
    parser.add_argument("--results-dir", type=results_folder, default=Path("results"))
    parser.add_argument("--machine", help="only the comparisons whose machine label holds this text")
    parser.add_argument("--out", type=Path, help="write the Markdown here as well as printing it")
    args = parser.parse_args(argv)

    def command() -> int:
        groups = tally(args.results_dir, args.machine)
        if not groups:
            raise BenchError(f"{args.results_dir / 'ab'}: no finished comparison"
                             + (f" on a machine matching {args.machine!r}" if args.machine else ""))
        text = markdown(groups, args.results_dir)
        if args.out:
            write_text_atomic(args.out, text)
        print(text, end="")
        return 0

    return exit_status(command)
