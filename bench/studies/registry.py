"""The studies, registered: the front door's study verbs and RESULTS.md's study sections come from this list alone,
so bench/cli.py and bench/report/ import no study (docs/ADDING_A_STUDY.md).

Each study's package (`bench/studies/<study>/__init__.py`) exports, importing nothing heavy at its top (a worker
inside a framework's environment imports the package too):

- `COMMANDS`: its verbs of `python -m bench`, each a function taking the rest of the command line (`argv`) and
  returning the exit status, which imports its study's code as it runs; its docstring's first line is its help.
- `sections()`, where the study has a part of RESULTS.md: its `Section`s (bench/report/sections.py), in page order.
"""
from __future__ import annotations

from collections.abc import Callable

from bench.studies import ab, gpucheck, grid, history, noise, overhead, parity, sweep, tuning

# One entry a study (and its name on the import line above), in the order of their sections in RESULTS.md.
STUDIES = (tuning, noise, grid, overhead, ab, gpucheck, history, parity, sweep)

Command = Callable[[list[str]], int]
STUDY_COMMANDS: dict[str, Command] = {verb: command for study in STUDIES for verb, command in study.COMMANDS.items()}


def command_help(command: Command) -> str:
    """A study verb's line in `python -m bench --help`: its function's docstring's first line."""
    return (command.__doc__ or "").strip().splitlines()[0].replace("%", "%%")


def study_sections() -> list:
    """Every registered study's sections, in STUDIES' order (imports each study's page)."""
    return [section for study in STUDIES if hasattr(study, "sections") for section in study.sections()]
