"""The README a user reads in five minutes: short, in short sentences, the first GPU figure early, and its headline
(the published A100 table beside the GPU measurements, the findings re-tested) recomputed from the result files;
`make help` starting with the six targets a newcomer needs, every line short."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from committed import committed_results

pytest.importorskip("tabulate")

REPO = Path(__file__).resolve().parent.parent
MAX_PROSE_WORDS = 900  # the README's prose: its text less code, tables and marker comments
MAX_MEAN_SENTENCE = 18
MAX_SENTENCE = 40
FIRST_GPU_FIGURE_WITHIN = 400  # words from the top
START_HERE = ["doctor", "bench-all", "bench", "table", "compare", "test"]


def prose(text: str) -> str:
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"<!--.*?-->", "", text)
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("|"))


def sentences(text: str) -> list[str]:
    """The prose's sentences: a paragraph or list item split after . ! or ? before a capital, a backtick or a link;
    headings are not sentences."""
    found = []
    for block in re.split(r"\n\s*\n|\n(?=\s*- )", prose(text)):
        block = " ".join(block.split())
        if not block or block.startswith("#"):
            continue
        found += [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z`\[*(])", block.removeprefix("- ")) if s.split()]
    return found


def first_gpu_figure_at(text: str) -> int | None:
    """Words before the first measured GPU figure: the first headline cell reading 'published → ours ±interval'."""
    found = re.search(r"[\d.]+ → [\d.]+ ±", text)
    return len(text[: found.start()].split()) if found else None


def test_the_readme_is_short_and_its_sentences_too():
    text = (REPO / "README.md").read_text()
    lengths = [len(s.split()) for s in sentences(text)]
    assert len(prose(text).split()) <= MAX_PROSE_WORDS
    assert sum(lengths) / len(lengths) <= MAX_MEAN_SENTENCE
    assert max(lengths) <= MAX_SENTENCE, max(sentences(text), key=lambda s: len(s.split()))
    at = first_gpu_figure_at(text)
    assert at is not None and at <= FIRST_GPU_FIGURE_WITHIN, at
    assert "make bench-all" in text and "make test" in text


def test_the_limits_catch_a_long_readme():
    long = "A sentence " + "that goes on " * 20 + "and on.\n\n" + "word " * 1000
    assert max(len(s.split()) for s in sentences(long)) > MAX_SENTENCE
    assert len(prose(long).split()) > MAX_PROSE_WORDS
    assert first_gpu_figure_at("no figure here") is None


@pytest.mark.duration_s(60)
def test_the_readme_headline_is_the_result_files_own(tmp_path):
    """`make table`'s README parts, recomputed from the committed result files, are the README's; and each GPU cell
    the headline shows is its result file's own figure."""
    from bench.catalogue.registry import get_model
    from bench.record.results import load
    from bench.record.text import fmt_ms
    from bench.report.readme import README_END, README_START, TIMES_END, TIMES_START, update_readme
    from bench.studies.table import analyse

    readme = tmp_path / "README.md"
    shutil.copy(REPO / "README.md", readme)
    results = committed_results()
    report = analyse(results)
    update_readme(readme, report.tables, results)
    ours, theirs = readme.read_text(), (REPO / "README.md").read_text()
    for start, end in ((README_START, README_END), (TIMES_START, TIMES_END)):
        assert ours.split(start)[1].split(end)[0] == theirs.split(start)[1].split(end)[0], "run `make table`"
    headline = theirs.split(README_START)[1].split(README_END)[0]
    gpu = sorted(results.glob("env-current/*/paper/*/*/*.json"))
    assert gpu
    for path in gpu:
        result = load(path)
        if result.status != "ok":
            continue
        label = f"| {get_model(result.cell.model).display} {result.cell.task} "
        row = next(line for line in headline.splitlines()
                   if line.startswith(label) and f"| {result.cell.batch_size} " in line)  # fmt: skip
        assert f"{fmt_ms(result.figure())} ±" in row, (path.name, row)


def make_help() -> list[str]:
    out = subprocess.run(["make", "--no-print-directory", "help"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


@pytest.mark.skipif(not shutil.which("make"), reason="GNU make is not installed")
def test_make_help_starts_with_the_six_verbs_and_every_line_is_short():
    lines = make_help()
    assert lines[0] == "Start here:"
    assert [line.split()[0] for line in lines[1:7]] == START_HERE
    assert lines[7].endswith(":") and not lines[7].startswith(" ")  # the next group
    assert [line for line in lines if len(line) > 100] == []
    variables = lines.index("Variables, each given on the command line (make bench MODEL=bert):")
    groups = [line for line in lines[:variables] if re.match(r"^[A-Z][^:]*:$", line)]
    assert groups == ["Start here:", "Studies:", "Environments:", "GPU and cluster:", "Results upkeep:",
                      "Development:"], groups  # fmt: skip  (a target in no group would stand under "Other:")
    assert variables > lines.index("Development:")


@pytest.mark.skipif(not shutil.which("make"), reason="GNU make is not installed")
def test_make_help_vars_lists_the_variables_alone():
    out = subprocess.run(["make", "--no-print-directory", "help-vars"], cwd=REPO, capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert out.stdout.startswith("Variables, each given") and "Start here:" not in out.stdout
    assert all(len(line) <= 100 for line in out.stdout.splitlines())
