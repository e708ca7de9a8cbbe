"""The studies, registered: the front door's study verbs and RESULTS.md's study sections come from this list alone,
so bench/cli.py and bench/report/ import no study (docs/ADDING_A_STUDY.md).

Each study's package (`bench/studies/<study>/__init__.py`) exports, importing nothing heavy at its top (a worker
inside a framework's environment imports the package too):

- `COMMANDS`: its verbs of `python -m bench`, each a function taking the rest of the command line (`argv`) and
  returning the exit status, which imports its study's code as it runs; its docstring's first line is its help.
- `sections()`, where the study has a part of RESULTS.md: its `Section`s (bench/report/sections.py), in page order.
- `pages(results_dir)`, where it has pages of its own that `python -m bench table` writes beside RESULTS.md: writes
  them where it has results, and returns their paths.
- `result_files(results_dir)`, where it writes result files of its own that `python -m bench validate` checks: for
  each kind, (what they are, their folder, their paths, the function reading one as its page does).
- `records()`, where it keeps JSON records beside the results (not result files): each file's name, and the function
  reading one (raising BenchError, naming it, where it is not readable).
- `compared_run(results_dir, run_id)`, where it keeps the results folder's runs by id (history): that run as a side
  of `python -m bench compare` (bench/report/compare.py), None where it has no run of that id.
- `site_files()` and `write_site(report, results_dir, site)`, where it writes files of the results page (`bench table
  --site`): each file's name, and how to tell one of them from its first bytes (a file that is not one is never
  replaced); then writing them into the folder `site`, from the analysed report.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bench.studies import ab, gpucheck, grid, history, noise, overhead, parity, sweep, tuning

# One entry a study (and its name on the import line above), in the order of their sections in RESULTS.md.
STUDIES = (tuning, noise, grid, overhead, ab, gpucheck, history, parity, sweep)

Command = Callable[[list[str]], int]
STUDY_COMMANDS: dict[str, Command] = {verb: command for study in STUDIES for verb, command in study.COMMANDS.items()}


# Each verb's line in `python -m bench --help`: its function's docstring's first line.
STUDY_HELP = {verb: (command.__doc__ or "").strip().splitlines()[0] for verb, command in STUDY_COMMANDS.items()}


def hooks(name: str) -> list[Callable]:
    """The registered studies' functions of that name, in STUDIES' order, of those that have one."""
    return [getattr(study, name) for study in STUDIES if hasattr(study, name)]


def study_sections() -> list:
    """Every registered study's sections, in STUDIES' order (imports each study's page)."""
    return [section for sections in hooks("sections") for section in sections()]


def study_pages(results_dir: Path) -> list[Path]:
    """Every study's own pages, written where it has results."""
    return [page for pages in hooks("pages") for page in pages(results_dir)]


def study_result_files(results_dir: Path) -> list[tuple[str, Path, list[Path], Callable[[Path], object]]]:
    """Every study's own result files, by kind: (what they are, their folder, their paths, how one is read)."""
    return [kind for result_files in hooks("result_files") for kind in result_files(results_dir)]


def study_records() -> dict[str, Callable[[Path], object]]:
    """Every study's records kept beside the results, by file name, each with the function reading one."""
    return {name: read for records in hooks("records") for name, read in records().items()}


def study_compared_run(results_dir: Path, run_id: str):
    """The run of that id as a side of compare, from the first study that keeps it; None where none does."""
    return next((side for compared_run in hooks("compared_run")
                 if (side := compared_run(results_dir, run_id)) is not None), None)


def study_site_files() -> dict[str, Callable[[bytes], bool]]:
    """Every study's files of the results page, each with the test of its head that marks it as one of ours."""
    return {name: ours for site_files in hooks("site_files") for name, ours in site_files().items()}


def write_study_site(report, results_dir: Path, site: Path) -> None:
    """Every study's files of the results page, written into `site`."""
    for write_site in hooks("write_site"):
        write_site(report, results_dir, site)
