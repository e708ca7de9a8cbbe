"""Profiles: one harness, one set of numbers per profile (bench/catalogue/profiles.toml). Stdlib only."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from bench.base.errors import BenchError

PROFILES_TOML = Path(__file__).resolve().parent / "profiles.toml"


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    warmup_steps: int
    timed_steps: int
    timeout_s: int
    max_batch_size: int  # 0: use the published batch sizes unchanged
    max_warmup_steps: int  # warm-up goes on past warmup_steps, up to this, while steps still compile
    # Sampling to a precision (bench/base/timing.py): timed_steps is the fewest, max_timed_steps the most (equal: a
    # fixed count); the median's 95% interval, as a share of it, that ends sampling; timed seconds at least and at most
    # (max 0: no cap in seconds).
    max_timed_steps: int
    target_half_width: float
    min_timed_s: float
    max_timed_s: float
    repeats: int  # processes per cell when `bench run` is not given --repeats (the first round's, replicating)
    shapes_from: str = (
        ""  # a profile whose model shapes this one runs (a workload.toml table of its own overrides fields)
    )
    gpu: bool = False  # a GPU profile: where the machine has a GPU, a cell whose framework sees none fails at set-up
    # What a profile that borrows shapes runs, for its tables' titles, when it is not the borrowed shapes unchanged.
    scope: str = ""
    # The most processes a cell gets where a comparison it takes part in is still undecided
    # (bench/judge/replication.py); 0: exactly `repeats`.
    max_repeats: int = 0

    def __post_init__(self) -> None:
        if (
            self.timed_steps < 1
            or self.warmup_steps < 0
            or self.timeout_s < 1
            or self.max_batch_size < 0
            or self.max_warmup_steps < self.warmup_steps
            or self.max_timed_steps < self.timed_steps
            or not 0 < self.target_half_width < 1
            or self.min_timed_s < 0
            or self.max_timed_s < 0
            or (self.max_timed_s and self.max_timed_s < self.min_timed_s)
            or self.repeats < 1
            or (self.max_repeats and self.max_repeats < self.repeats)
        ):
            raise BenchError(f"profile {self.name!r} has invalid values: {self}")
        if self.max_timed_steps > self.timed_steps and not self.max_timed_s and self.min_timed_s:
            raise BenchError(f"profile {self.name!r} asks for {self.min_timed_s} s timed with no cap in seconds")

    @property
    def samples(self) -> bool:
        """Whether the profile samples to a precision (else a fixed count of timed steps)."""
        return self.max_timed_steps > self.timed_steps
        if self.shapes_from == self.name:
            raise BenchError(f"profile {self.name!r} cannot borrow its own shapes")

    def batch_size(self, published: int) -> int:
        return min(published, self.max_batch_size) if self.max_batch_size else published


@cache
def profiles() -> dict[str, Profile]:
    with PROFILES_TOML.open("rb") as f:
        data = tomllib.load(f)
    return {name: Profile(name=name, **values) for name, values in data.items()}


def get_profile(name: str) -> Profile:
    try:
        return profiles()[name]
    except KeyError:
        raise BenchError(f"unknown profile {name!r}; valid profiles: {', '.join(profiles())}") from None


def why_not_without_a_gpu(profile: str) -> str | None:
    """Why a profile's cells are refused on a machine with no GPU in use, or None: the paper profile is the published
    GPU settings (Gemma 7B at batch 32 and the like), which on a CPU would run for hours a cell and compare with
    nothing published; the cpu profile runs the same shapes at batch <= 2."""
    if profile != "paper":
        return None
    return (
        "the paper profile is the published GPU settings and this machine has no GPU in use (nvidia-smi, "
        "CUDA_VISIBLE_DEVICES): PROFILE=cpu runs the paper shapes at batch <= 2 (make bench-cpu-full), "
        "PROFILE=smoke the same code small"
    )
