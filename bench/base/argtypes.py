"""The command line's argument types, its one-line errors and the results folder's default: what every command's
parser shares (in the foundation layer, so a study's own entry point may import it too)."""
from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

from bench.base.provenance import REPO_ROOT

DEFAULT_RESULTS = Path(os.environ.get("BENCH_RESULTS_DIR", REPO_ROOT / "results"))


def int_at_least(minimum: int, what: str):
    """An argparse type: an integer >= minimum, refused with `must be a <what> integer, got '<text>'`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(f"must be a {what} integer, got {text!r}")
        return value

    return parse


# A budget past this is a typo (1e308 once overflowed the deadline's arithmetic): about two years
MAX_BUDGET_MINUTES = 10**6


def budget_minutes(text: str) -> float:
    """An argparse type: minutes, a finite number above 0 (nan, inf, 0 and -1 once ran with no budget or none left)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= MAX_BUDGET_MINUTES:  # false for nan too
        raise argparse.ArgumentTypeError(
            f"must be minutes, a number above 0 and at most {MAX_BUDGET_MINUTES}, got {text!r}"
        )
    return value


positive_int = int_at_least(1, "positive")
non_negative_int = int_at_least(0, "non-negative")

# The largest value of each count the Makefile passes on: past it is a typo (REPEATS=99999999999999999999 was once
# taken as that many processes a cell). Each a power of ten; the Makefile's COUNT_CAPS holds the same for its make
# variables, so that make refuses them before any env is built (tests/test_make_variables.py checks they agree).
PROCESSES_CAP = 1000  # processes a cell, a side or a commit; rounds, pairs, jobs, busy loops
STEPS_CAP = 10**6
BATCH_CAP = 10**5
WAIT_CAP_S = 10**6  # seconds submit-status polls: about 11 days


def count_up_to(cap: int):
    """An argparse type: a whole number from 1 to `cap`, refused with `must be a positive integer, at most <cap>`."""
    at_least_one = int_at_least(1, "positive")

    def parse(text: str) -> int:
        value = at_least_one(text)
        if value > cap:
            raise argparse.ArgumentTypeError(f"must be a positive integer, at most {cap}, got {text!r}")
        return value

    return parse


process_count = count_up_to(PROCESSES_CAP)
step_count = count_up_to(STEPS_CAP)
batch_count = count_up_to(BATCH_CAP)
wait_seconds = count_up_to(WAIT_CAP_S)


def listing(names, last: str = "and/or") -> str:
    """`a, b and/or c`: the choices of an option, for its help, from where they are defined."""
    names = list(names)
    return f"{', '.join(names[:-1])} {last} {names[-1]}" if len(names) > 1 else "".join(names)


def csv_list(text: str) -> list[str]:
    """'a,b a' -> ['a', 'b']: a name given twice is one (MODEL=bert,bert once ran the cell twice into one result)."""
    return list(dict.fromkeys(item for item in text.replace(",", " ").split() if item))


class OneLineErrors(argparse.ArgumentParser):
    """Bad input is one line naming the problem (no usage block above it: `--help` has that), exit status 2."""

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {message}\n")
