"""What the judging detects on product cells: a real per-step slowdown (tests/fixtures/step_delay: each timed step
held for a share of its own length after its work is synchronised) on side B of a cell's pairs, A the same cell
untouched, judged as `make compare` judges.

Inside one run: each pair's A and B ran interleaved in one invocation (one run id), as a table's columns do. Across
runs: A of one pair against B of the next, minutes apart and under different run ids, so the comparison carries the
machine's run-to-run spread as `make compare` of two separate runs does. A slowdown called slower is right;
inconclusive is a miss; same or faster is wrong.
"""
from __future__ import annotations

import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.base import stats
from bench.base.errors import BenchError
from bench.base.packed import unpacked
from bench.base.provenance import REPO_ROOT
from bench.catalogue.registry import Cell
from bench.record.results import Run

FIXTURE = REPO_ROOT / "tests" / "fixtures" / "step_delay"
DELAY_VARIABLE = "BENCH_TEST_STEP_DELAY"


def delay_environment(share: float, code: Path = REPO_ROOT) -> dict[str, str]:
    """The variables that slow a cell process's every timed step by `share` (0.2: +20%) through the fixture, ahead
    of `code` (the checkout whose bench the process runs) on the path."""
    if not (FIXTURE / "sitecustomize.py").is_file():
        raise BenchError(f"the step-delay fixture is missing ({FIXTURE / 'sitecustomize.py'}): a checkout with tests/")
    paths = [str(FIXTURE), str(code), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {"PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)), DELAY_VARIABLE: f"{share:g}"}


@dataclass
class DelayRecord:
    """One cell at one delay: each pair's verdict inside its run, and the folders its across-run pairs are judged
    from."""

    cell: Cell
    share: float
    within: list[dict[str, Any]] = field(default_factory=list)  # pair k: compare's pair for A(k) vs B(k)
    folders: list[dict[str, str]] = field(default_factory=list)  # pair k: side -> its folder, relative
    medians: list[dict[str, list[float]]] = field(default_factory=list)  # pair k: side -> its ok processes' medians

    def to_dict(self) -> dict[str, Any]:
        c = self.cell
        return {
            "key": c.key,
            "cell": f"{c.backend} {c.model} {c.task} batch={c.batch_size} {c.variant}",
            "share": self.share,
            "within": outcome_counts(self.within),
            "across": outcome_counts([]),  # judged once the machine's study is on file (judge_across)
            "pooled": outcome_counts([]),
            "pairs": [{"within": pair_summary(w), "folders": f, "medians_ms": m}
                      for w, f, m in zip(self.within, self.folders, self.medians)],
            "across_pairs": [],
            "pooled_pairs": [],
        }


def pair_summary(pair: dict[str, Any]) -> dict[str, Any]:
    return {k: pair.get(k) for k in ("verdict", "ratio", "low", "high", "reason")}


def outcome_counts(pairs: list[dict[str, Any]]) -> dict[str, int]:
    """Slower is right (detected), inconclusive a miss, same or faster wrong, not compared (a side failed) apart."""
    verdicts = [p.get("verdict") for p in pairs]
    return {
        "pairs": len(verdicts),
        "detected": verdicts.count(stats.SLOWER),
        "missed": verdicts.count(stats.INCONCLUSIVE),
        "wrong": verdicts.count(stats.SAME) + verdicts.count(stats.FASTER),
        "not_compared": sum(v not in (stats.SLOWER, stats.INCONCLUSIVE, stats.SAME, stats.FASTER) for v in verdicts),
    }


def across_pairs(a_folders: list[Path], b_folders: list[Path]) -> list[tuple[Path, Path]]:
    """A of pair k against B of pair k + 1 (the last A against the first B): each side from another run."""
    n = len(a_folders)
    return [(a_folders[k], b_folders[(k + 1) % n]) for k in range(n)] if n > 1 else []


def cell_key_of(pair: dict[str, Any]) -> str:
    """A compare pair's cell, as a cell key (bench/catalogue/registry.py Cell.key)."""
    k = pair.get("key") or {}
    return "__".join([str(k.get("backend")), str(k.get("model")), str(k.get("task")), f"bs{k.get('batch')}",
                      str(k.get("variant"))])


def judge_across(data: dict[str, Any], runs_dir: Path) -> None:
    """Each delay row's across-run pairs (A of pair k against B of pair k + 1) judged as `make compare` judges
    separate runs, into `data` in place. Judged once the machine's study is written, so that its run-to-run spread,
    measured by this study's own rounds where it has them, is the one each comparison carries."""
    from bench.report.compare import verdicts

    # one compare per pair of folders: they hold every row's cell
    compared: dict[tuple[Path, Path], list[dict[str, Any]] | BenchError] = {}

    def judged(a: Path, b: Path, key: str) -> dict[str, Any]:
        if (a, b) not in compared:
            try:
                compared[a, b] = verdicts(runs_dir / a, runs_dir / b)
            except BenchError as e:  # a side with no result (its processes failed): no verdict, and why
                compared[a, b] = e
        found = compared[a, b]
        if isinstance(found, BenchError):
            return {"verdict": None, "reason": str(found)}
        return next((p for p in found if cell_key_of(p) == key), None) or {"verdict": None, "reason": "no pair"}

    for row in data.get("detection") or []:
        folders = [pair["folders"] for pair in row.get("pairs") or []]
        sides = across_pairs([f["A"] for f in folders], [f["B"] for f in folders])
        pairs = [judged(a, b, row["key"]) for a, b in sides]
        row["across_pairs"] = [pair_summary(p) for p in pairs]
        row["across"] = outcome_counts(pairs)
        pooled = [pooled_judged(runs_dir, a, b, row["key"]) for a, b in pooled_halves(folders)]
        row["pooled_pairs"] = [pair_summary(p) for p in pooled]
        row["pooled"] = {**outcome_counts(pooled), "runs_a_side": len(folders) // 2}


def pooled_halves(folders: list[dict[str, str]]) -> list[tuple[list[str], list[str]]]:
    """Several runs a side: A of the first half of the pairs against B of the second half, and A of the second
    against B of the first, each side its half's runs pooled (`make compare A=a1,a2,... B=b1,b2,...`); none with
    fewer than four pairs (two runs a side)."""
    k = len(folders) // 2
    if k < 2:
        return []
    first, second = folders[:k], folders[k : 2 * k]
    return [([f["A"] for f in first], [f["B"] for f in second]), ([f["A"] for f in second], [f["B"] for f in first])]


def pooled_judged(runs_dir: Path, a: list[str], b: list[str], key: str) -> dict[str, Any]:
    """`make compare`'s pair for cell `key` between two sides of several runs each."""
    from bench.report.compare import compare_sides, pooled_side

    try:
        found = compare_sides(pooled_side([runs_dir / f for f in a]), pooled_side([runs_dir / f for f in b]))
    except BenchError as e:
        return {"verdict": None, "reason": str(e)}
    pair = next((p.to_dict() for p in found.pairs if cell_key_of(p.to_dict()) == key), None)
    return pair or {"verdict": None, "reason": "no pair"}


def ok_medians(runs: list[Run]) -> list[float]:
    """Each ok process's median step time: what a study keeps of a side."""
    return [statistics.median(r.timed_ms) for r in runs if r.status == "ok" and r.timed_ms]


def side_medians(folder: Path, key: str) -> list[float]:
    """The medians of a side's ok processes of cell `key`, read from its results folder (an empty list: none)."""
    from bench.record.results import load, result_files

    for path in result_files(folder) if folder.is_dir() else []:
        result = load(path)
        if result.cell.key == key:
            return ok_medians(result.runs)
    return []


def fill_medians(data: dict[str, Any], runs_dir: Path) -> int:
    """Each delay pair's process medians read from its folders where the study file has none (a study written
    before it recorded them); returns how many pairs were filled."""
    filled = 0
    for row in data.get("detection") or []:
        for pair in row.get("pairs") or []:
            if pair.get("medians_ms") is None and pair.get("folders"):
                pair["medians_ms"] = {s: side_medians(runs_dir / f, row["key"]) for s, f in pair["folders"].items()}
                filled += 1
    return filled


def main(argv: list[str] | None = None) -> int:
    """Judge a written study again: its delay pairs' process medians filled from their folders where it has none, its
    across-run delay pairs against the machine's study as it stands now (a study judged before its machine's
    run-to-run spread was on file) and its machine's conditions under today's rule, and render the page again."""
    import argparse
    import json

    from bench.base.atomic import write_json_atomic
    from bench.judge.noise_file import read_noise_file
    from bench.studies.noise.conditions import labelled
    from bench.studies.noise.page import render_noise

    parser = argparse.ArgumentParser(prog="python -m bench.studies.noise.detection",
                                     description=main.__doc__.split(".")[0])
    parser.add_argument("study", type=Path, help="<results>/noise/<machine>--<processor>.json")
    args = parser.parse_args(argv)
    data = read_noise_file(args.study)
    results_dir = args.study.resolve().parent.parent
    unpacked(results_dir / data["runs_dir"])
    fill_medians(data, results_dir / data["runs_dir"])
    write_json_atomic(args.study, data)  # the run spread the pairs are judged with counts their runs too
    judge_across(data, results_dir / data["runs_dir"])
    if data.get("conditions"):
        data["conditions"] = labelled(data["conditions"])
    write_json_atomic(args.study, data)
    write_json_atomic(results_dir / data["runs_dir"] / "study.json", data)
    render_noise(results_dir)
    print(json.dumps([{k: row[k] for k in ("key", "share", "within", "across")} for row in data["detection"] or []]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
