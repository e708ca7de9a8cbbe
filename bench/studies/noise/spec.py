"""What a noise study measures unless told otherwise, and the command line's choices of it: its cells (by key), its
slowdowns, its parts, its rounds, pairs and processes."""
from __future__ import annotations

import argparse
import math

from bench.base.errors import BenchError
from bench.catalogue.profiles import get_profile
from bench.catalogue.registry import Cell, plan_cells

DEFAULT_PROFILE = "smoke"
# The product cells of the A/A test: BERT on Keras 3 (JAX, PyTorch) and native PyTorch (eager, compiled), fit and
# predict: the cells whose same-code verdicts first showed the problem.
DEFAULT_BACKENDS = ("jax", "torch", "native-torch")
DEFAULT_MODEL = "bert"
DEFAULT_ROUNDS = 2
DEFAULT_PAIRS = 8
DEFAULT_SLOWDOWNS = (0.0, 0.05, 0.10, 0.20)
AA, PROBE, DELAY = "aa", "probe", "delay"
PARTS = (AA, PROBE, DELAY)  # A/A on product cells, power on the calibration probe, power on product cells


def default_repeats(profile: str) -> int:
    """The profile's default processes per cell (bench/catalogue/profiles.toml `repeats`): what `make compare`
    compares."""
    return get_profile(profile).repeats


def default_cells(profile: str = DEFAULT_PROFILE) -> list[Cell]:
    return plan_cells(profile, backends=list(DEFAULT_BACKENDS), models=[DEFAULT_MODEL])


def choose_cells(keys: list[str] | None, profile: str = DEFAULT_PROFILE) -> list[Cell]:
    """The cells named by key (as `python -m bench run --dry-run` lists them), in the order given; none: the
    default eight."""
    if not keys:
        return default_cells(profile)
    known = {c.key: c for c in plan_cells(profile)}
    known.update({c.key: c for c in default_cells(profile)})
    unknown = [k for k in keys if k not in known]
    if unknown:
        raise BenchError(
            f"unknown cell(s) for the {profile} profile: {', '.join(unknown)}; a cell is named by its key, as "
            f"`python -m bench run --profile {profile} --dry-run` lists them (e.g. {next(iter(known))})"
        )
    return [known[k] for k in dict.fromkeys(keys)]


def parse_slowdowns(text: str) -> list[float]:
    """'0,0.05,0.1' -> [0.0, 0.05, 0.1]: shares of added work per step (0.1 = 10% more), none negative."""
    try:
        values = [float(v) for v in text.replace(",", " ").split()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"slowdowns must be numbers such as 0,0.05,0.1, got {text!r}") from None
    if not values or any(v < 0 or not math.isfinite(v) for v in values):
        raise argparse.ArgumentTypeError(f"slowdowns must be one or more numbers >= 0, got {text!r}")
    return sorted(set(values))
