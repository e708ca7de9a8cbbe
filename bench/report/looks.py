"""The looks `make compare` has taken: each comparison's two sides, as the sets of runs they read, kept in a ledger
beside the comparison's output (looks.json), so that the same runs are not judged again with runs added.

A comparison judged at 95% calls identical code different 5% of the time. Comparing again after adding a run to a
pooled side (A=<run>,<run> B=...), and again after the next, gives the same question another 5% chance each time;
the looks share their runs, so each is no fresh test, and stopping at the first that calls a difference makes the
chance of a false call grow with every look. So a comparison whose sides share runs with both sides of a comparison
already taken (either way round) is refused, unless it is that same comparison again (the same runs on each side:
the same verdict, no new look). A question that one look leaves undecided is decided by measuring both sides
interleaved in one invocation, or by comparing runs neither side has been compared on before. Runs are named by
their run ids (provenance.run_id; a pooled side's pooled_runs); a result written before run ids counts by its file.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from bench.base.atomic import write_text_atomic
from bench.base.errors import BenchError
from bench.base.provenance import now_utc

LEDGER = "looks.json"
FORMAT = "compare-looks-1"


@dataclass(frozen=True)
class Look:
    a: frozenset[str]  # the runs side A read
    b: frozenset[str]
    a_name: str = ""  # how the output named each side
    b_name: str = ""
    at: str = ""

    def same_as(self, other: Look) -> bool:
        return {self.a, self.b} == {other.a, other.b}

    def shares_both(self, other: Look) -> bool:
        """Whether each side of one shares a run with a side of the other, either way round: the same question asked
        again of some of the same data."""
        return bool((self.a & other.a and self.b & other.b) or (self.a & other.b and self.b & other.a))

    def to_dict(self) -> dict:
        return {"a": sorted(self.a), "b": sorted(self.b), "a_name": self.a_name, "b_name": self.b_name, "at": self.at}

    @classmethod
    def of(cls, data: dict) -> Look:
        return cls(frozenset(data["a"]), frozenset(data["b"]), data.get("a_name", ""), data.get("b_name", ""),
                   data.get("at", ""))  # fmt: skip


def runs_of(results, files=()) -> frozenset[str]:
    """The runs a side's results came from: each result's run id, every pooled run's where it pools several; a
    result without one is named by the file it was read from (`files`, else its cell)."""
    ids: set[str] = set()
    unnamed = False
    for result in results:
        pooled = result.provenance.get("pooled_runs") or [{"run_id": result.provenance.get("run_id")}]
        for run in pooled:
            if run.get("run_id"):
                ids.add(f"run:{run['run_id']}")
            else:
                unnamed = True
    if unnamed:
        ids |= {f"file:{f}" for f in files} or {f"cell:{r.cell.key}:{r.created_at}" for r in results}
    return frozenset(ids)


def look_of(side) -> frozenset[str]:
    """A compare Side's runs (bench/report/compare.py Side)."""
    return runs_of(side.results, side.files)


def earlier_look(looks: list[Look], look: Look) -> Look | None:
    """The first look taken already that `look` would repeat on some of the same runs with others added or left
    out; None where there is none (or `look` is one of them exactly: the same verdict again, no new look)."""
    if any(look.same_as(taken) for taken in looks):
        return None
    return next((taken for taken in looks if look.shares_both(taken)), None)


def ledger_path(out: Path) -> Path:
    return out.parent / LEDGER


def read_looks(ledger: Path) -> list[Look]:
    if not ledger.is_file():
        return []
    try:
        data = json.loads(ledger.read_text())
        if data.get("format") != FORMAT:
            raise ValueError(f"format {data.get('format')!r}, not {FORMAT}")
        return [Look.of(item) for item in data["looks"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise BenchError(f"cannot read the comparisons' ledger {ledger} ({e}): mend or remove it") from None


def refuse_repeated_look(out: Path, a, b) -> Look:
    """The look `make compare` is about to take (sides A and B, its output at `out`), refused where it would judge
    again runs an earlier look there judged (earlier_look), naming that look and what decides the question instead."""
    ledger = ledger_path(out)
    look = Look(look_of(a), look_of(b), a.name, b.name)
    taken = earlier_look(read_looks(ledger), look)
    if taken is not None:
        raise BenchError(
            f"A ({a.name}) and B ({b.name}) share runs with both sides of a comparison already taken "
            f"({taken.a_name} against {taken.b_name}, {taken.at}; recorded in {ledger}): comparing the same runs "
            "again with runs added or left out spends the 5% chance of a false call again at each look, so "
            "repeated looks call identical code different more often than 5%. Decide it by measuring both sides "
            "interleaved in one invocation, or compare runs that neither side has been compared on before"
        )
    return look


def record_look(out: Path, look: Look) -> None:
    """Keep `look` in the ledger beside the comparison's output (once: the same look again adds nothing)."""
    ledger = ledger_path(out)
    looks = read_looks(ledger)
    if any(look.same_as(taken) for taken in looks):
        return
    looks.append(Look(look.a, look.b, look.a_name, look.b_name, now_utc()))
    write_text_atomic(ledger, json.dumps({"format": FORMAT, "looks": [t.to_dict() for t in looks]}, indent=1) + "\n")
