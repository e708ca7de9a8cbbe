"""`make ab` (bench/studies/ab/): a cell re-measured on two sides interleaved in one invocation, in a clone of this
checkout whose commits differ in how fast a fake env's cell runs (`fake-scale` in the tree, as
tests/test_history_commits.py builds them)."""
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from committed import committed_results
from conftest import REPO
from fakes import make_fake_envs, quiet_probe_path
from test_history_commits import KEY, repo  # noqa: F401  (the clone: a fixture)

from bench.base.errors import BenchError
from bench.studies.ab.sides import parse_side


def ab(tree: Path, venvs: Path, results: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "BENCH_VENVS_DIR": str(venvs), "FAKE_JITTER": "0.01", **extra}
    return subprocess.run([sys.executable, "-m", "bench.studies.ab", *args, "--results-dir", str(results)], cwd=tree,
                          env=env, capture_output=True, text=True, timeout=600)  # fmt: skip


def the_record(results: Path) -> tuple[Path, dict]:
    (path,) = (results / "ab" / KEY).glob("*.ab.json")
    return path, json.loads(path.read_text())


def test_a_slower_commit_is_called_slower_from_processes_taken_in_turns(repo, tmp_path):  # noqa: F811
    repo, (first, slower, _) = repo
    venvs = make_fake_envs(tmp_path / "venvs", ["native-torch"])
    results = tmp_path / "results"
    done = ab(repo, venvs, results, "--a", first, "--b", slower, "--cell", KEY, "--processes", "3",
              "--max-processes", "4", PYTHONPATH=quiet_probe_path(tmp_path / "quiet"))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{KEY}: B against A: slower" in done.stdout and "interleaved in one invocation" in done.stdout
    path, record = the_record(results)
    assert record["verdict"] == "slower" and 1.4 < record["ratio"]["ratio"] < 1.6
    assert (record["A"]["commit"], record["B"]["commit"]) == (first, slower) and not record["same_code"]
    # the sides took turns: A B, then B A, then A B
    order = [line.split()[0] for line in done.stdout.splitlines() if " process " in line and "median" in line]
    assert order[:6] == ["A", "B", "B", "A", "A", "B"], order
    # each process is its own invocation of its own commit's code
    folder = path.with_name(path.name.removesuffix(".ab.json"))
    for side, commit in (("A", first), ("B", slower)):
        files = sorted(folder.glob(f"{side}/process*/**/{KEY}.json"))
        assert len(files) == record["processes"][side] >= 3
        assert {json.loads(f.read_text())["provenance"]["git"]["commit"] for f in files} == {commit}
    # the record keeps each process's median, and the processes are packed beside their folder (what git keeps)
    assert [len(record["medians_ms"][side]) for side in ("A", "B")] == [record["processes"][side] for side in "AB"]
    assert folder.with_name(folder.name + ".tar.xz").is_file()


def test_one_commit_against_itself_is_said_to_be_an_a_a_comparison_and_not_called_a_change(repo, tmp_path):  # noqa: F811
    repo, (first, *_) = repo
    venvs = make_fake_envs(tmp_path / "venvs", ["native-torch"])
    results = tmp_path / "results"
    done = ab(repo, venvs, results, "--a", first, "--b", first, "--cell", KEY, "--processes", "3",
              "--max-processes", "3", PYTHONPATH=quiet_probe_path(tmp_path / "quiet"))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "A/A: one code against itself" in done.stdout
    _, record = the_record(results)
    assert record["same_code"] and record["verdict"] not in ("slower", "faster")


def test_a_side_whose_cell_fails_stops_with_its_log_and_keeps_a_record(repo, tmp_path):  # noqa: F811
    repo, (first, slower, _) = repo
    venvs = make_fake_envs(tmp_path / "venvs", ["native-torch"])
    results = tmp_path / "results"
    done = ab(repo, venvs, results, "--a", first, "--b", slower, "--cell", KEY, FAKE_MODE_NATIVE_TORCH="crash")
    assert done.returncode == 2
    assert "on side A" in done.stderr and ".log" in done.stderr
    _, record = the_record(results)
    assert "did not run" in record["stopped"] and "verdict" not in record


def test_each_way_of_writing_a_side_is_read_as_what_it_names(tmp_path):
    wheel = tmp_path / "keras-3.16.0.dev0-py3-none-any.whl"
    wheel.write_bytes(b"")
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.symlink_to(sys.executable)  # a venv's python: a link, kept as named
    sides = {text: parse_side(text) for text in ("HEAD", "keras==3.15.1", str(wheel), str(python), "stack:2024")}
    assert sides["HEAD"].kind == "commit" and len(sides["HEAD"].commit) == 40
    assert (sides["keras==3.15.1"].kind, sides["keras==3.15.1"].package, sides["keras==3.15.1"].version) == (
        "version", "keras", "3.15.1")
    assert (sides[str(wheel)].kind, sides[str(wheel)].package, sides[str(wheel)].version) == (
        "wheel", "keras", "3.16.0.dev0")
    assert sides[str(python)].kind == "interpreter" and sides[str(python)].python == str(python)
    assert sides["stack:2024"].kind == "stack" and sides["stack:2024"].stack == "2024"


@pytest.mark.parametrize("text,words", [
    ("", "an empty side"),
    ("stack:1999", "unknown stack '1999'"),
    ("keras==", "is no <package>==<version>"),
    ("/no/such/python", "no such interpreter or wheel"),
    ("missing.whl", "no wheel file"),
    ("0" * 40, "is not in this clone"),
])  # fmt: skip
def test_a_side_that_names_nothing_is_refused_naming_why(text, words):
    with pytest.raises(BenchError, match=words):
        parse_side(text)


def test_make_ab_without_its_sides_or_cells_prints_its_usage():
    done = subprocess.run(["make", "--no-print-directory", "ab", "A=HEAD", "B=HEAD"], cwd=REPO, capture_output=True,
                          text=True)  # fmt: skip
    assert done.returncode == 2 and "usage: make ab A=<commit" in done.stderr


def test_a_step_delay_reaches_side_bs_processes_alone_ahead_of_its_own_code(tmp_path):
    from bench.studies.ab.sides import CellArgs

    cell = CellArgs.parse(KEY, "smoke")
    a, b = parse_side("HEAD"), parse_side("HEAD")
    b.step_delay = 0.2
    tree = tmp_path / "tree"
    _, _, env_a = a.command(cell, tmp_path / "a", lambda commit: tree)
    _, cwd, env_b = b.command(cell, tmp_path / "b", lambda commit: tree)
    assert "BENCH_TEST_STEP_DELAY" not in env_a and env_b["BENCH_TEST_STEP_DELAY"] == "0.2"
    first, second = env_b["PYTHONPATH"].split(os.pathsep)[:2]
    assert first.endswith("tests/fixtures/step_delay") and second == str(tree) == str(cwd)
    assert b.to_dict()["step_delay"] == 0.2 and "step_delay" not in a.to_dict()


def test_make_ab_passes_the_delay_to_side_b():
    done = subprocess.run(["make", "-n", "--no-print-directory", "ab", "A=HEAD", "B=HEAD", f"CELL={KEY}",
                           "B_DELAY=0.2"], cwd=REPO, capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0 and "--b-delay 0.2" in done.stdout


def test_a_comparisons_processes_kept_in_a_results_folder_are_not_its_results(tmp_path):
    """`make ab` writes each side's processes as ordinary results folders under <results>/ab/: the table, export and
    validate of that results folder read its own results alone, never a comparison's processes, and the cell's
    history has no point of them (side B may be slowed on purpose: B_DELAY=)."""
    from bench.record.results import load_all
    from bench.studies.history import index
    from bench.studies.history.series import cell_series

    mine = sorted((committed_results() / "smoke").glob(f"*/{KEY}.json"))[0]
    relative = mine.relative_to(committed_results())
    for place in (tmp_path, tmp_path / "ab" / KEY / "2026-12-03T074007-a-vs-b" / "A" / "process1"):
        (place / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(mine, place / relative)
    assert [r.cell.key for r in load_all(tmp_path)] == [KEY]
    index.refresh(tmp_path)
    (series,) = cell_series(tmp_path, KEY)
    assert [p.paths for p in series.points] == [[relative.as_posix()]]


def write_record(results: Path, n: int, verdict: str, medians: dict, delay: float = 0.0, raw: bool = False,
                 states: bool = False, cap: int = 6) -> Path:
    """A finished comparison's record as make ab writes it; raw: without medians_ms (as records before it kept them),
    its processes' result files in its folder instead, a committed result's steps scaled to each median."""
    path = results / "ab" / KEY / f"2026-12-03T0{n:05d}-a-vs-b.ab.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"key": KEY, "machine": "CPU test", "A": {"spec": "HEAD"}, "B": {"spec": "HEAD"}, "same_code": not delay,
              "rule": {"first": 3, "cap": cap, "alpha": 0.05, "confidence": 1 - 0.05 / (cap - 2)}, "verdict": verdict,
              "ratio": {"ratio": statistics.fmean(medians["B"]) / statistics.fmean(medians["A"])},
              "processes": {side: len(ms) for side, ms in medians.items()},
              "machine_states": {"x": 1} if states else None}  # fmt: skip
    if delay:
        record["B"]["step_delay"] = delay
    if raw:
        from bench.record.results import load

        committed = sorted((committed_results() / "smoke").glob(f"*/{KEY}.json"))[0]
        for side, ms in medians.items():
            for i, m in enumerate(ms, 1):
                result = load(committed)
                run = result.runs[0]
                run.timed_ms = [t * m / statistics.median(run.timed_ms) for t in run.timed_ms]
                result.runs = [run]  # one process a result file, as a comparison's process writes it
                process = path.with_name(path.name.removesuffix(".ab.json")) / side / f"process{i}"
                out = process / committed.relative_to(committed_results())
                out.parent.mkdir(parents=True)
                out.write_text(json.dumps(result.to_dict()))
    else:
        record["medians_ms"] = medians
    path.write_text(json.dumps(record))
    return path


def test_the_tally_counts_each_kind_of_pair_with_its_binomial_bound_spread_and_power(tmp_path, capsys):
    from scipy.stats import binomtest

    from bench.judge.replication import SequentialRule, decided_at
    from bench.studies.ab import tally

    results = tmp_path / "results"
    a, b = [10.0, 11.4, 9.0], [12.0, 13.8, 11.0, 13.0]  # a spread of 9%: its cap raised, the rule finds +20%
    for n in range(8):
        write_record(results, n, "slower" if n else "inconclusive", {"A": a, "B": b}, delay=0.2, states=n == 3)
    for n in range(8, 24):
        write_record(results, n, "faster" if n == 8 else "same", {"A": a, "B": a})
    write_record(results, 24, "slower", {"A": a, "B": b}, delay=0.2, cap=20)  # a raised cap: another design
    (delayed, raised, aa) = tally.tally(results)  # the delayed pairs first, as the table lists them
    assert (delayed.cap, len(delayed.verdicts), raised.cap, raised.verdicts) == (6, 8, 20, ["slower"])
    assert (aa.label, len(aa.verdicts), aa.rate()[:2]) == ("A/A", 16, ("called different", 1))
    assert delayed.label == "+20% on B" and delayed.rate()[:2] == ("called slower", 7) and delayed.states == 1
    low, high = binomtest(7, 8).proportion_ci(0.95, method="exact")
    assert delayed.rate()[2] == pytest.approx((low, high))
    logs = lambda ms: [math.log(m) for m in ms]  # noqa: E731
    squares = sum(sum((x - statistics.fmean(logs(ms))) ** 2 for x in logs(ms)) for ms in (a, b))
    sd = math.sqrt(squares / 5)  # (3 - 1) + (4 - 1) degrees of freedom a pair
    assert delayed.log_sd() == (pytest.approx(sd), 40)
    need = delayed.processes_for_power()  # each raise of the cap adds a look: every look is judged stricter
    assert 3 < need < 20
    for n, decided in ((need - 1, False), (need, True)):
        rule = SequentialRule(3, n)
        assert decided_at(math.log(1.2), (sd, sd), n, rule.confidence) is decided
    assert SequentialRule(3, need).confidence > 0.9875  # more looks than the default cap's 4: each judged stricter
    assert tally.main(["--results-dir", str(results), "--out", str(tmp_path / "t.md")]) == 0
    printed = capsys.readouterr().out
    assert printed == (tmp_path / "t.md").read_text() and "called slower 7/8 (" in printed and "1/16" in printed


def test_the_tally_reads_an_older_records_spread_from_its_processes_packed_or_not(tmp_path):
    from bench.base.packed import pack
    from bench.studies.ab import tally

    results = tmp_path / "results"
    medians = {"A": [10.0, 11.0, 10.5], "B": [12.0, 12.5, 13.0]}
    path = write_record(results, 1, "slower", medians, delay=0.2, raw=True)
    (group,) = tally.tally(results)
    sd, dof = group.log_sd()
    folder = path.with_name(path.name.removesuffix(".ab.json"))
    pack(folder)
    shutil.rmtree(folder)
    (again,) = tally.tally(results)
    assert dof == 4 and again.log_sd() == (pytest.approx(sd), 4) and folder.is_dir()  # unpacked to be read


def test_a_results_folder_without_comparisons_is_one_line():
    from bench.studies.ab import tally

    with pytest.raises(BenchError, match="no comparisons of make ab here"):
        tally.tally(Path("/nonexistent-results"))
