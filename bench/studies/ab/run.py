"""`make ab`: did B make a cell slower or faster than A? Both sides re-measured interleaved in one invocation (A B,
B A, ...), processes until decided, each side's processes pooled and judged as one run (bench/run/interleaved.py).

Interleaving is what makes the answer safe on a shared machine: separate runs minutes apart differ by 6-7% here, and
runs back to back share the machine's slow drift, so pooling more of them a side calls identical code different
far more often than 5%. Inside one interleaved invocation both sides see the same drift.

Each comparison writes <results>/ab/<key>/<stamp>-<A>-vs-<B>/ (each side's processes and logs) and the record
<that folder>.ab.json beside it from the start, so that a comparison cut short keeps what it measured."""
from __future__ import annotations

from pathlib import Path

from bench.base import stats
from bench.base.atomic import write_json_atomic
from bench.base.errors import BenchError
from bench.base.lifetime import stopped_text
from bench.base.packed import pack
from bench.base.provenance import git_info, machine_info, machine_label, now_utc
from bench.base.runlock import holding
from bench.judge.machine_states import within_state
from bench.judge.replication import SequentialRule
from bench.run.interleaved import judged_pair, measure_together, run_process
from bench.run.results_folder import check_writable
from bench.studies.ab.sides import CellArgs, Side, worktrees
from bench.studies.noise.detection import ok_medians

AB_DIR = "ab"
SIDES = ("A", "B")


def same_code(a: Side, b: Side) -> bool:
    return a.to_dict() | {"spec": ""} == b.to_dict() | {"spec": ""}


def keep_processes(folder: Path) -> None:
    """The comparison's processes, packed beside their folder (<folder>.tar.xz, what git keeps of them; the folder
    stays): a results folder of many comparisons stays small (bench/base/packed.py)."""
    if folder.is_dir() and any(p.is_file() for p in folder.rglob("*")):
        pack(folder)


def compare(results_dir: Path, a: Side, b: Side, cells: list[CellArgs], rule: SequentialRule, say=print) -> list[dict]:
    """Each cell re-measured on both sides, interleaved; the records, in the cells' order."""
    check_writable(results_dir)
    records = []
    with holding(results_dir / AB_DIR), worktrees() as tree:
        for cell in cells:
            records.append(compare_cell(results_dir, a, b, cell, rule, tree, say))
    return records


def compare_cell(results_dir: Path, a: Side, b: Side, cell: CellArgs, rule: SequentialRule, tree, say) -> dict:
    sides = {"A": a, "B": b}
    for side in sides.values():
        side.prepare(cell, say)
    stamp = now_utc()[:19].replace(":", "")
    folder = results_dir / AB_DIR / cell.key / f"{stamp}-{a.label}-vs-{b.label}"
    path = folder.with_name(folder.name + ".ab.json")
    machine = machine_label(machine_info())
    aa = same_code(a, b)
    record: dict = {
        "key": cell.key, "profile": cell.profile, "machine": machine, "A": a.to_dict(), "B": b.to_dict(),
        "same_code": aa, "rule": rule.to_dict(), "started_at": now_utc(), "design": "interleaved, one invocation",
        "provenance": {"git": git_info()},  # the code that drove it; each process records its own
    }  # fmt: skip
    write_json_atomic(path, record)
    say(f"{cell.key} ({cell.profile} profile) on {machine}: A = {a.spec} ({a.kind}), B = {b.spec} ({b.kind}), "
        f"interleaved; {rule.describe()}" + ("; A/A: one code against itself, a call of different is a false one"
                                             if aa else ""))

    def run(name: str, out: Path, log: Path):
        argv, cwd, env = sides[name].command(cell, out, tree)
        return run_process(argv, cwd, env, out, log, f"{cell.key} did not run on side {name} ({sides[name].spec})")

    def record_of(name: str, files: list[str]) -> dict:
        return {"ab": {"side": name, **sides[name].to_dict(), "invocations": files,
                       "how": "one process per invocation, the sides in turns (A B, B A, ...)"}}  # fmt: skip

    try:
        found = measure_together(list(SIDES), [SIDES], run, folder, rule, results_dir, say, record_of)
    except (BenchError, KeyboardInterrupt) as e:  # what finished is kept in its folder; the record says where
        record["stopped"] = str(e) if isinstance(e, BenchError) else stopped_text(e)
        record["ended_at"] = now_utc()
        write_json_atomic(path, record)
        keep_processes(folder)
        say(f"stopped: {record['stopped']}: record {path}")
        raise
    states = within_state(found.judge, found.sides["A"], found.sides["B"])
    ratio = judged_pair(found.judge, found.sides["A"], found.sides["B"], states)
    verdict = stats.verdict(ratio)
    record.update(verdict=verdict, ratio=ratio.to_dict() if ratio else None, ended_at=now_utc(),
                  processes={n: len(found.sides[n].runs) for n in SIDES},
                  medians_ms={n: ok_medians(found.sides[n].runs) for n in SIDES},
                  machine_states=states[0].to_dict() if states else None)  # fmt: skip
    write_json_atomic(path, record)
    keep_processes(folder)
    why = ratio.reason if ratio is not None and ratio.reason else ""
    if not why and verdict == stats.INCONCLUSIVE:
        why = (f"{rule.cap} processes a side did not decide it at the ratio and spreads measured (MAX_PROCESSES= "
               "raises the cap)")
    say(f"{cell.key}: B against A: {stats.verdict_text(ratio)} {stats.fmt_ratio(ratio)}, "
        f"{record['processes']['A']} + {record['processes']['B']} processes interleaved in one invocation"
        + (f" ({why})" if why else ""))
    if states:
        say(f"  {states[0].text(found.sides['A'].unit)}")
    say(f"record: {path}")
    return record
