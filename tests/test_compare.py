"""make compare: per cell B / A with its 95% interval and a verdict (bench.judge), on synthetic result folders whose
answer is known, and on the committed smoke results against a copy with some medians scaled."""
import itertools
import json
import random
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from committed import committed_results
from fakes import write_noise_study

from bench.base import stats
from bench.base.errors import BenchError
from bench.catalogue.registry import Cell
from bench.judge.noise_file import processor_fingerprint
from bench.record.load import COLUMNS
from bench.record.results import Result, Run, load_all
from bench.report import compare

REPO = Path(__file__).resolve().parent.parent
COMMITTED = committed_results()  # HEAD's, not what a user's own run left in results/
SCALED = {"jax__bert__fit__bs2__default": 3.0, "native-torch__gemma__fit__bs2__eager": 0.25}
DROPPED = "torch__sam__fit__bs1__default"


def processor(fingerprint: str, family: str = "26") -> dict:
    return {
        "vendor": "AuthenticAMD",
        "family": family,
        "model": "2",
        "stepping": "1",
        "model_name": "AMD EPYC",
        "microcode": "0x1000065",
        "flags": ["avx2", "fma", "avx512f"] if family == "26" else ["avx2", "fma"],
        "mhz": 2596.1,
        "cache_size": "1024 KB",
        "fingerprint": fingerprint * 64,
    }


MACHINE = {"os": "Linux-6.1-x86_64", "cpu": "AMD EPYC", "logical_cpus": 2, "memory_gib": 23.5, "gpus": [],
           "processor": processor("a")}
OTHER_PROCESSOR = {**MACHINE, "processor": processor("b", family="23")}
# Cells of today's smoke table, each in its own column or row
CELLS = [("jax", "bert", "fit"), ("torch", "bert", "fit"), ("jax", "bert", "predict"), ("torch", "bert", "predict"),
         ("tensorflow", "bert", "fit"), ("tensorflow", "bert", "predict")]
QUIET_MS = 0.3  # the drift probe's quiet reading in every synthetic process


def process(median: float, rng: random.Random, steps: int = 12, reference_ms: float = QUIET_MS) -> Run:
    """One process's timed steps around `median` (about 1% step noise)."""
    timed = [median * (1 + rng.gauss(0, 0.01)) for _ in range(steps)]
    return Run(status="ok", timed_ms=timed, first_step_ms=500.0,
               reference={"before_ms": QUIET_MS, "after_ms": reference_ms})


def cell_result(backend, model, task, medians, machine=MACHINE, seed=0, reference_ms=QUIET_MS, steps=12) -> Result:
    """A cell of len(medians) processes, each around its median."""
    rng = random.Random(f"{backend}{model}{task}{seed}")
    cell = Cell(backend, model, task, 2, "smoke", "default", 1, steps)
    runs = [process(m, rng, steps, reference_ms) for m in medians]
    return Result(cell, runs, "ms/step", {"git": {"commit": "c0ffee"}, "machine": machine},
                  "2026-11-25T03:00:00+00:00")


def write(folder: Path, results: list[Result]) -> Path:
    for result in results:
        result.write(folder)
    return folder


def processes_around(center: float, rng: random.Random, n: int = 3, spread: float = 0.02) -> list[float]:
    """n per-process medians around `center`, with a process-to-process spread (log sd)."""
    return [center * (1 + rng.gauss(0, spread)) for _ in range(n)]


def folder(path: Path, factor: float = 1.0, seed: int = 0, n: int = 3, machine=MACHINE, reference_ms=QUIET_MS):
    """Every CELLS cell with n processes around 10 ms x factor, drawn with its own seed."""
    rng = random.Random(seed)
    return write(path, [
        cell_result(b, m, t, processes_around(10.0 * factor, rng, n), machine, seed, reference_ms) for b, m, t in CELLS
    ])


def verdicts_of(comparison) -> list[str]:
    return [p.verdict for p in comparison.pairs]


def test_identical_folders_are_never_called_faster_or_slower(tmp_path):
    a = folder(tmp_path / "a")
    same_copy = compare.compare(a, a)
    assert set(verdicts_of(same_copy)) <= {"same", "inconclusive"} and "same" in verdicts_of(same_copy)
    assert all(p.ratio == pytest.approx(1.0) for p in same_copy.pairs)
    for seed in range(1, 6):  # A/A: the same code measured again, its processes drawn afresh
        again = compare.compare(a, folder(tmp_path / f"b{seed}", seed=seed))
        assert set(verdicts_of(again)) <= {"same", "inconclusive"}, [p.to_dict() for p in again.pairs]


def test_a_planted_slowdown_is_called_slower_and_a_speedup_faster(tmp_path):
    a = folder(tmp_path / "a")
    slower = compare.compare(a, folder(tmp_path / "b", factor=1.2, seed=1))
    assert verdicts_of(slower) == ["slower"] * len(CELLS)
    for pair in slower.pairs:
        low, high = pair.interval
        assert 1 < low < pair.ratio < high and pair.ratio == pytest.approx(1.2, rel=0.05)
        assert pair.reason == ""
    faster = compare.compare(tmp_path / "b", a)
    assert verdicts_of(faster) == ["faster"] * len(CELLS)


def test_a_noisy_side_is_inconclusive_with_its_gate(tmp_path):
    a = folder(tmp_path / "a")
    b = folder(tmp_path / "b", factor=1.2, seed=1, reference_ms=QUIET_MS * 10)  # the drift probe read 10x quiet
    comparison = compare.compare(a, b)
    assert verdicts_of(comparison) == ["inconclusive"] * len(CELLS)
    reason = comparison.pairs[0].reason
    assert reason.startswith("B noisy:") and "drift probe" in reason and "limit 2x" in reason
    text = compare.markdown(comparison)
    assert "## Inconclusive: why" in text and "B noisy" in text


def test_different_processors_are_inconclusive_unless_told_and_the_header_names_the_difference(tmp_path):
    a = folder(tmp_path / "a")
    b = folder(tmp_path / "b", factor=1.2, seed=1, machine=OTHER_PROCESSOR)
    comparison = compare.compare(a, b)
    assert verdicts_of(comparison) == ["inconclusive"] * len(CELLS)
    assert "different processors" in comparison.pairs[0].reason
    assert 'family: "26" vs "23"' in comparison.processor_differences
    text = compare.markdown(comparison)
    assert "**Different processors**" in text and 'family: "26" vs "23"' in text and "flags:" in text
    assert f"0 faster, 0 slower, 0 same, {len(CELLS)} inconclusive" in text
    across = compare.compare(a, b, across_processors=True)
    assert verdicts_of(across) == ["slower"] * len(CELLS)
    text = compare.markdown(across)
    assert "**This comparison crosses processors**" in text and 'family: "26" vs "23"' in text
    assert compare.compare(a, folder(tmp_path / "c", seed=2)).processor_differences == []


def test_one_process_cells_are_inconclusive_without_a_noise_study_and_decided_with_one(tmp_path):
    a = folder(tmp_path / "a", n=1)
    b = folder(tmp_path / "b", factor=1.2, seed=1, n=1)
    alone = compare.compare(a, b)
    assert verdicts_of(alone) == ["inconclusive"] * len(CELLS)
    assert all("one process" in p.reason for p in alone.pairs)
    # the machine's noise study, in A's folder: its process-to-process spread stands in for the unmeasured one
    write_noise_study(a, MACHINE, "smoke")
    decided = compare.compare(a, b)
    assert verdicts_of(decided) == ["slower"] * len(CELLS)
    # another processor's study does not stand in for this one's
    other = folder(tmp_path / "c", n=1, machine=OTHER_PROCESSOR)
    assert set(verdicts_of(compare.compare(a, other, across_processors=True))) == {"inconclusive"}


def test_a_tiny_ratio_prints_with_significant_digits(tmp_path):
    a = write(tmp_path / "a", [cell_result("jax", "bert", "fit", [10.0, 10.1, 9.9])])
    b = write(tmp_path / "b", [cell_result("jax", "bert", "fit", [0.001, 0.00101, 0.00099])])
    comparison = compare.compare(a, b)
    (pair,) = comparison.pairs
    assert pair.verdict == "faster" and pair.text().startswith("**faster** 0.000100× (9.69e-05–")
    text = compare.markdown(comparison)
    assert "0.00×" not in text and "0.000100×" in text


def test_the_json_and_png_beside_the_markdown_hold_every_pair(tmp_path):
    a = folder(tmp_path / "a")
    b = folder(tmp_path / "b", factor=1.2, seed=1)
    written = compare.run(a, b, tmp_path / "cmp" / "compare.md")
    data = json.loads(written.json.read_text())
    assert written.json == tmp_path / "cmp" / "compare.json" and data["format"] == "compare-1"
    assert len(data["provenance"]["git"]["commit"]) == 40 and data["provenance"]["created_at"]
    assert data["counts"] == {
        "faster": 0, "slower": len(CELLS), "same": 0, "inconclusive": 0, "not comparable": 0, "not compared": 0
    }
    first = data["pairs"][0]
    assert set(first) >= {"key", "ratio", "low", "high", "verdict", "reason"}
    assert first["key"]["backend"] in {b for b, _, _ in CELLS} and first["low"] < first["ratio"] < first["high"]
    assert data["pairs"] == compare.verdicts(a, b)  # what `make noise` counts in-process
    assert written.png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "![B / A per cell](compare.png)" in written.text


def test_the_png_marks_each_verdict(tmp_path, monkeypatch):
    """filled: faster or slower; hollow: same; grey: inconclusive; the error bar is the interval."""
    from matplotlib.axes import Axes

    calls = []
    real = Axes.errorbar
    monkeypatch.setattr(Axes, "errorbar", lambda self, x, y, **kw: calls.append((x, kw)) or real(self, x, y, **kw))
    a = write(tmp_path / "a", [cell_result(b, m, t, [10.0, 10.1, 9.9]) for b, m, t in CELLS[:3]])
    b = write(tmp_path / "b", [
        cell_result("jax", "bert", "fit", [12.0, 12.1, 11.9]),  # slower
        cell_result("torch", "bert", "fit", [10.0, 10.1, 9.9], seed=1),  # same
        cell_result("jax", "bert", "predict", [10.0, 10.1, 9.9], reference_ms=3.0),  # noisy: inconclusive
    ])
    comparison = compare.compare(a, b)
    compare.draw(comparison, tmp_path / "cmp.png")
    by_verdict = {p.verdict: p for p in comparison.pairs}
    assert set(by_verdict) == {"slower", "same", "inconclusive"}
    style = {x: kw for x, kw in calls}
    slower, same, grey = (style[by_verdict[v].ratio] for v in ("slower", "same", "inconclusive"))
    assert slower["mfc"] == slower["color"] != "white" and same["mfc"] == "white" and same["color"] != "0.6"
    assert grey["color"] == "0.6" and grey["mfc"] == "white"
    low, high = by_verdict["slower"].interval
    assert slower["xerr"] == [[pytest.approx(by_verdict["slower"].ratio - low)],
                              [pytest.approx(high - by_verdict["slower"].ratio)]]


def test_the_generate_split_has_an_interval_with_two_processes_a_side(tmp_path):
    from test_generate_split import split_of

    def generate(folder, ttfts, tpot):
        cell = Cell("torch", "mistral", "generate", 1, "smoke", "default", 1, 12)
        runs = []
        for i, ttft in enumerate(ttfts):
            run = process(100.0 + i, random.Random(i))
            run.generate_split = split_of(ttft, tpot * (1 + i / 100), 6)
            runs.append(run)
        result = Result(cell, runs, "ms/call", {"git": {}, "machine": MACHINE}, "2026-11-25T03:00:00+00:00")
        return write(folder, [result])

    text = compare.markdown(compare.compare(generate(tmp_path / "a", [10.0, 10.2, 9.8], 2.0),
                                            generate(tmp_path / "b", [30.0, 30.3, 29.7], 2.0)))
    row = next(line for line in text.splitlines() if "mistral generate" in line and "→" in line)
    assert re.search(r"\| 3\.00× \(2\.\d\d–3\.\d\d\) \|", row) and "no interval" not in row, row
    one = compare.markdown(
        compare.compare(generate(tmp_path / "c", [10.0], 2.0), generate(tmp_path / "d", [30.0], 2.0))
    )
    row = next(line for line in one.splitlines() if "mistral generate" in line and "→" in line)
    assert "3.00× (no interval)" in row


# -- the committed smoke results against a scaled copy


def scaled_copy(source: Path, dest: Path) -> Path:
    """`source`'s results re-written: two cells' step times scaled, one cell dropped, one cell added."""
    for result in load_all(source):
        key = result.cell.key
        if key == DROPPED:
            continue
        factor = SCALED.get(key, 1.0)
        runs = [replace(r, timed_ms=[t * factor for t in r.timed_ms]) for r in result.runs]
        Result(result.cell, runs, result.unit, result.provenance, result.created_at).write(dest)
        if key == "jax__bert__predict__bs2__default":  # a batch size only B has
            extra = replace(result.cell, batch_size=7)
            Result(extra, result.runs, result.unit, result.provenance, result.created_at).write(dest)
    return dest


TODAYS_MACHINE = "64dc9908f650"  # the AMD host's processor: one machine's table (another's cells share their keys)


def todays() -> list:
    """The committed smoke results of today's stack on one machine (the 2024 stack's pair with each other, never with
    these; the full-size CPU run in results/cpu-full is another profile)."""
    return [r for r in load_all(COMMITTED) if r.cell.stack == "today" and r.cell.profile == "smoke"
            and processor_fingerprint(r.provenance.get("machine") or {}).startswith(TODAYS_MACHINE)]  # fmt: skip


def todays_copy(dest: Path) -> Path:
    for result in todays():
        result.write(dest)
    return dest


def todays_ok() -> int:
    """The committed today's-stack smoke cells of that machine that are ok."""
    ok = sum(r.status == "ok" for r in todays())
    assert ok >= 60
    return ok


@pytest.fixture(scope="module")
def comparison(tmp_path_factory):
    a = todays_copy(tmp_path_factory.mktemp("a") / "results")
    return compare.compare(a, scaled_copy(a, tmp_path_factory.mktemp("b") / "results"))


def test_the_two_stacks_cells_pair_only_with_their_own_stack():
    pairs = compare.compare(COMMITTED, COMMITTED).pairs
    stacks = {p.key.stack for p in pairs}
    # today's, the 2024 stack's and a user's own environment's (the committed GPU run): each only with its own
    assert stacks == {"today", "2024", "current"}
    assert all(p.a.cell.stack == p.b.cell.stack == p.key.stack for p in pairs)


def pair(comparison, key: str):
    return next(p for p in comparison.pairs if p.a.cell.key == key)


def test_scaled_cells_show_their_ratio_and_are_never_called_the_same(comparison):
    slower = pair(comparison, "jax__bert__fit__bs2__default")
    assert slower.ratio == pytest.approx(3.0)
    low, high = slower.interval
    assert low < 3.0 < high and slower.verdict in ("slower", "inconclusive")
    assert re.search(r"(\*\*slower\*\*|inconclusive) 3\.00× \(", slower.text())
    faster = pair(comparison, "native-torch__gemma__fit__bs2__eager")
    assert faster.ratio == pytest.approx(0.25) and faster.verdict in ("faster", "inconclusive")


def test_unchanged_cells_are_never_called_faster_or_slower(comparison):
    unchanged = pair(comparison, "jax__sam__fit__bs1__default")
    assert unchanged.ratio == pytest.approx(1.0) and unchanged.verdict in ("same", "inconclusive")
    untouched = [p for p in comparison.pairs if p.comparable and p.a.cell.key not in SCALED]
    assert len(untouched) == todays_ok() - 2 - 1  # every ok cell but the scaled and the dropped
    assert {p.verdict for p in untouched} <= {"same", "inconclusive"}
    for p in comparison.pairs:  # an inconclusive cell says why
        assert (p.verdict == "inconclusive") == bool(p.reason)


def test_cells_in_only_one_set_are_listed(comparison):
    assert [k.backend + " " + k.model for k in comparison.only_a] == ["torch sam"]
    assert [(k.model, k.batch) for k in comparison.only_b] == [("bert", 7)]
    assert len(comparison.pairs) == 71


def test_unsupported_cells_show_both_statuses(comparison):
    na = pair(comparison, "keras2__gemma__fit__bs2__default")
    assert na.ratio is None and na.verdict is None and na.text() == "A NA / B NA"


def test_markdown_follows_the_published_layout(comparison):
    text = compare.markdown(comparison, "compare.png")
    assert "Welch" in text and "±5%" in text and "docs/METHOD.md" in text
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))  # the first table (others follow)
    table = list(itertools.takewhile(lambda line: line.startswith("|"), lines[start:]))
    headers = [h.strip() for h in table[0].strip("|").split("|")]
    assert headers == ["Model / task", "Batch", *[c.header for c in COLUMNS]]
    labels = [line.strip("|").split("|")[0].strip() for line in table[2:]]
    assert labels[0] == "SegmentAnything fit" and labels[-1] == "Mistral generate"
    assert labels.index("BERT fit") < labels.index("Gemma fit")  # the published order, model by model
    bert_fit = next(line for line in table if line.startswith("| BERT fit "))
    jax_column = 2 + [c.header for c in COLUMNS].index("Keras 3 (JAX)")
    assert "3.00× (" in bert_fit.strip("|").split("|")[jax_column]
    assert "## Only in A" in text and "torch sam fit batch=1" in text and "## Only in B" in text
    counts = comparison.counts()
    assert sum(counts.values()) == 71 and counts["not compared"] == 71 - (todays_ok() - 1)
    assert (
        f"71 cells in both: {counts['faster']} faster, {counts['slower']} slower, {counts['same']} same, "
        f"{counts['inconclusive']} inconclusive, {counts['not compared']} not compared (a side not ok); "
        "1 only in A, 1 only in B." in text
    )
    assert "![B / A per cell](compare.png)" in text


def test_cli_prints_markdown_and_writes_the_three_files(comparison, tmp_path):
    b_dir = comparison.b_dir
    out = subprocess.run(
        [sys.executable, "-m", "bench", "compare", str(next((COMMITTED / "smoke").glob(f"*--{TODAYS_MACHINE}"))),
         str(b_dir), "--out-dir", str(tmp_path / "cmp")],  # the machine B was copied from: its cells are B's
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == (tmp_path / "cmp" / "compare.md").read_text() and "3.00×" in out.stdout
    assert (tmp_path / "cmp" / "compare.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((tmp_path / "cmp" / "compare.json").read_text())["across_processors"] is False


def test_make_compare_passes_across_on(tmp_path):
    out = subprocess.run(["make", "-n", "compare", "A=x", "B=y", "ACROSS=1"], cwd=REPO, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert re.search(r'-m bench compare "x" "y" --results-dir "results" +--across-processors', out.stdout), out.stdout


def test_an_empty_or_missing_folder_is_an_error(tmp_path):
    with pytest.raises(BenchError, match="no results folder"):
        compare.compare(COMMITTED, tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BenchError, match="no result files"):
        compare.compare(tmp_path / "empty", COMMITTED)


def test_an_output_path_never_replaces_a_file_the_comparison_did_not_write(tmp_path):
    a = folder(tmp_path / "a")
    b = folder(tmp_path / "b", factor=1.2, seed=1)
    result_file = next(b.rglob("*.json"))
    before = result_file.read_bytes()
    with pytest.raises(BenchError, match="did not write"):  # its JSON would land on B's own result file
        compare.run(a, b, result_file.with_suffix(".md"))
    assert result_file.read_bytes() == before and not result_file.with_suffix(".md").exists()
    notes = tmp_path / "notes.md"
    notes.write_text("my notes\n")
    with pytest.raises(BenchError, match="did not write"):
        compare.run(a, b, notes)
    assert notes.read_text() == "my notes\n"
    figure = tmp_path / "figure.png"  # another program's PNG beside the Markdown
    figure.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
    with pytest.raises(BenchError, match="figure"):
        compare.run(a, b, tmp_path / "figure.md")
    with pytest.raises(BenchError, match="is a folder"):
        compare.run(a, b, tmp_path / "a")
    out = tmp_path / "cmp" / "compare.md"
    compare.run(a, b, out)
    first = {p: p.read_bytes() for p in out.parent.iterdir()}
    compare.run(a, b, out)  # an earlier comparison's files are its own: replaced
    assert set(first) == set(out.parent.iterdir()) and (tmp_path / "cmp" / "compare.png").exists()


def test_comparing_a_folder_with_itself_is_refused_saying_so(tmp_path, capsys):
    from bench import cli

    a = folder(tmp_path / "a")
    assert cli.main(["compare", str(a), str(tmp_path / "." / "a"), "--out", str(tmp_path / "c.md")]) == 2
    assert "A and B share a folder" in capsys.readouterr().err and not (tmp_path / "c.md").exists()


def test_processes_in_two_groups_are_named_beside_the_verdict(tmp_path):
    """A slow minority (one process of three at 1.45x, as native compiled BERT predict once ran) is named in the
    comparison's page and JSON, not only folded into a wider interval; one group is not."""
    assert stats.process_groups([0.22, 0.22, 0.32]) == ([0.22, 0.22], [0.32])
    assert stats.process_groups([10.0, 11.0, 12.0]) is None and stats.process_groups([1.0, 2.0]) is None
    a = write(tmp_path / "a", [cell_result("jax", "bert", "fit", [10.0, 10.1, 9.9])])
    b = write(tmp_path / "b", [cell_result("jax", "bert", "fit", [10.0, 10.1, 14.5])])
    found = compare.compare(a, b)
    (pair,) = found.pairs
    said = pair.to_dict()["note"]
    named = r"B: processes in two groups, 2 near 10\.\d+ ms/step and 1 near 14\.\d+ ms/step \(1\.4\dx apart\)"
    assert re.fullmatch(named, said), said
    assert f"- {pair.key.text()}: {said}" in compare.markdown(found)
    assert compare.compare(a, a).pairs[0].to_dict()["note"] == ""


@pytest.mark.parametrize("name", ["x.json", "x.png", "x", "x.csv"])
def test_out_naming_another_kind_than_the_markdown_is_refused_and_nothing_is_written(tmp_path, capsys, name):
    from bench import cli

    a, b = folder(tmp_path / "a"), folder(tmp_path / "b", factor=1.2, seed=1)
    out = tmp_path / "out" / name
    assert cli.main(["compare", str(a), str(b), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(out.with_suffix(".md")) in err, err
    assert not out.parent.exists() or list(out.parent.iterdir()) == []


def test_out_names_the_files_written_each_of_its_own_kind(tmp_path, capsys):
    from bench import cli

    a, b = folder(tmp_path / "a"), folder(tmp_path / "b", factor=1.2, seed=1)
    out = tmp_path / "out" / "x.md"
    assert cli.main(["compare", str(a), str(b), "--out", str(out)]) == 0
    said = capsys.readouterr().err
    assert f"wrote {out}, {out.with_suffix('.json')} and {out.with_suffix('.png')}" in said, said
    assert out.read_text().startswith("# Comparison") and json.loads(out.with_suffix(".json").read_text())
    assert out.with_suffix(".png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize("sides", ["child", "parent", "pooled", "run-id", "inside-out"])
def test_sides_that_read_the_same_files_are_refused_not_judged_against_themselves(tmp_path, capsys, sides):
    """A=<dir> B=<dir>/smoke (or a parent and its child run) once judged the same files against themselves."""
    from bench import cli
    from bench.studies.history import index
    from bench.studies.history.runs import history_runs

    top = folder(tmp_path / "results")
    other = folder(tmp_path / "other", factor=1.2, seed=1)
    out = tmp_path / "c.md"
    if sides == "inside-out":  # the comparison's own JSON would be read as a result of a side
        given = [str(top), str(other), "--out", str(top / "compare.md")]
        out = top / "compare.md"
    else:
        index.refresh(top)
        run_id = history_runs(top)[0].id
        a, b = {"child": (top, top / "smoke"), "parent": (top / "smoke", top),
                "pooled": (f"{other},{top}", f"{top / 'smoke'}"), "run-id": (top, run_id)}[sides]  # fmt: skip
        given = [str(a), str(b), "--results-dir", str(top), "--out", str(out)]
    assert cli.main(["compare", *given]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert not out.exists() and not out.with_suffix(".json").exists()


def test_a_run_against_a_folder_inside_its_own_is_refused(tmp_path):
    from bench.cli import check_against

    top = folder(tmp_path / "results")
    for against, results in ((top / "smoke", top), (top, top / "sub")):
        with pytest.raises(BenchError, match="one inside the other"):
            check_against(against, results)
    check_against(folder(tmp_path / "other"), top)


def test_an_output_that_cannot_be_written_is_named_not_its_temporary(tmp_path, capsys):
    from bench import cli

    a, b = folder(tmp_path / "a"), folder(tmp_path / "b", factor=1.2, seed=1)
    assert cli.main(["compare", str(a), str(b), "--out", "/proc/x.md"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ".tmp" not in err and "/proc/x." in err, err
