"""Result files -> tables: load every current file, group by (profile, machine label), lay each group out as
rows (model / task / batch, in the published order) by columns (backend / variant). Also the published
reference CSV, read once, since row order and the comparison both follow it.
"""
from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from bench.base.errors import BenchError
from bench.base.provenance import hardware_label, machine_label, machine_slug
from bench.base.published import published_ms, published_note, published_rows
from bench.catalogue.backends import BACKENDS, STACKS, UNLOCKED_STACK, keras3_backends
from bench.catalogue.ownenv import describe_environment, environment_key
from bench.catalogue.profiles import get_profile
from bench.catalogue.registry import MODELS, get_model
from bench.catalogue.spec import TASKS
from bench.record.results import Result, load_each, placement_problems, unreadable_error

PROFILE_ORDER = ("paper", "smoke")  # paper before smoke; any other profile after, by name
KERAS3 = keras3_backends()
PUBLISHED_HARDWARE = "1x NVIDIA A100 40GB"
COLORS = {  # fixed per column, so every figure (and make compare's) reads the same
    ("keras2", "default"): "#7f7f7f",
    ("tensorflow", "default"): "#ff7f0e",
    ("jax", "default"): "#1f77b4",
    ("torch", "default"): "#d62728",
    ("native-torch", "eager"): "#9467bd",
    ("native-torch", "compiled"): "#2ca02c",
}


def profile_scope(name: str) -> str:
    """What a profile that borrows another's shapes runs, said in its tables' titles: the cpu profile's tables are
    full-size models (paper shapes) at a small batch, which a reader must not take for smoke's tiny configs."""
    try:
        profile = get_profile(name)
    except BenchError:  # an archived result's profile that this checkout no longer defines: the bare name says enough
        return ""
    if not profile.shapes_from:
        return ""
    batch = f", batch ≤ {profile.max_batch_size}" if profile.max_batch_size else ""
    return f" ({profile.scope or f'full size: {profile.shapes_from} shapes'}{batch})"


@dataclass(frozen=True)
class Column:
    backend: str
    variant: str

    @property
    def header(self) -> str:
        display = BACKENDS[self.backend].display
        return f"{display} ({self.variant})" if len(BACKENDS[self.backend].variants) > 1 else display

    @property
    def color(self) -> str:
        return COLORS[(self.backend, self.variant)]


COLUMNS = tuple(Column(b.name, v) for b in BACKENDS.values() for v in b.variants)  # the published order
NATIVE = tuple(c for c in COLUMNS if BACKENDS[c.backend].family == "native-torch")


@dataclass(frozen=True)
class RowKey:
    """A row's identity: model, task and the batch size actually run."""

    model: str
    task: str
    batch_size: int

    def label(self) -> str:
        return f"{get_model(self.model).display} {self.task}"


@dataclass
class Loaded:
    path: str  # relative to the results folder, POSIX separators
    result: Result


@dataclass
class Group:
    """The results of one table: one profile on one machine label, on one software stack."""

    profile: str
    machine: str
    items: list[Loaded] = field(default_factory=list)
    stack: str = "today"
    # an unlocked environment's key (bench/catalogue/ownenv.py environment_key): one table per key
    environment: str = ""

    @property
    def slug(self) -> str:
        slug = f"{self.profile}__{machine_slug(self.items[0].result.provenance.get('machine', {}))}"
        slug = slug if self.stack == "today" else f"{slug}__stack-{self.stack}"
        return f"{slug}-{self.environment[:12]}" if self.environment else slug

    @property
    def title(self) -> str:
        """How a table is named: profile and machine, and its stack where that is not today's (an unlocked
        environment by its interpreter, Python, frameworks and fingerprint)."""
        title = f"{self.profile} profile{profile_scope(self.profile)} — {self.machine}"
        if self.stack == UNLOCKED_STACK.name:
            return f"{title} — {describe_environment(self.items[0].result.provenance.get('environment') or {})}"
        return title if self.stack == "today" else f"{title} — {self.stack} stack ({STACKS[self.stack].description})" \
            if self.stack in STACKS else f"{title} — {self.stack} stack"

    @property
    def results(self) -> list[Result]:
        return [l.result for l in self.items]

    def grid(self) -> dict[RowKey, dict[Column, Loaded]]:
        grid: dict[RowKey, dict[Column, Loaded]] = {}
        for item in self.items:
            c = item.result.cell
            row = grid.setdefault(RowKey(c.model, c.task, c.batch_size), {})
            column = Column(c.backend, c.variant)
            if column not in row or item.result.created_at > row[column].result.created_at:
                row[column] = item  # one file per cell by construction; the newest wins otherwise
        return {key: grid[key] for key in order_rows(self.profile, grid)}


def load_results(results_dir: Path) -> list[Loaded]:
    """Every current result file; unreadable ones raise CorruptResult naming every one of them, and the fix."""
    loaded, errors = load_each(results_dir)
    if errors:
        raise unreadable_error(errors, results_dir)
    for problem in placement_problems(loaded, results_dir):  # a duplicate would be a second row, or a silent choice
        print(f"warning: {problem} (python -m bench validate)", file=sys.stderr)
    return [Loaded(p.relative_to(results_dir).as_posix(), result) for p, result in loaded]


def group_results(items: list[Loaded]) -> list[Group]:
    """One group per (profile, machine, stack, unlocked environment): two stacks' or two environments' numbers never
    share a table (nor overwrite each other)."""
    groups: dict[tuple[str, str, str, str], Group] = {}
    for item in items:
        profile = item.result.cell.profile
        label = machine_label(item.result.provenance.get("machine", {}))
        stack = getattr(item.result.cell, "stack", "today")
        recorded = item.result.provenance.get("environment") or {}
        # one table per environment key: incidental packages do not split a table (bench/catalogue/ownenv.py)
        environment = (
            (environment_key(recorded)["sha256"] if recorded.get("distributions") else
             recorded.get("distributions_sha256") or "")
            if stack == UNLOCKED_STACK.name
            else ""
        )  # fmt: skip
        groups.setdefault(
            (profile, label, stack, environment), Group(profile, label, stack=stack, environment=environment)
        ).items.append(item)
    rank = lambda g: (  # a user's own environment after the locked tables (the report puts a new run first)
        g.stack == UNLOCKED_STACK.name,
        PROFILE_ORDER.index(g.profile) if g.profile in PROFILE_ORDER else len(PROFILE_ORDER),
        g.profile,
        hardware_label(g.items[0].result.provenance.get("machine", {})),  # an older stack after today's on its hardware
        g.stack != "today",
        g.machine,
        g.stack,
        g.environment,
    )
    return sorted(groups.values(), key=rank)


def expected_rows(profile: str) -> list[tuple[RowKey, int]]:
    """The published rows at the batch sizes this profile runs them at, with the published batch size."""
    prof = get_profile(profile)
    rows, seen = [], set()
    for r in published_rows():
        key = RowKey(r.model, r.task, prof.batch_size(r.batch_size))
        if key not in seen:
            seen.add(key)
            rows.append((key, r.batch_size))
    return rows


def order_rows(profile: str, keys: Iterable[RowKey]) -> list[RowKey]:
    """Published order; a row only in the results goes after the published rows of its model and task."""
    expected = [k for k, _ in expected_rows(profile)]
    task_rank = {}
    for i, k in enumerate(expected):
        task_rank.setdefault((k.model, k.task), i)

    def rank(k: RowKey) -> tuple:
        first = task_rank.get((k.model, k.task), len(expected) + TASKS.index(k.task))
        if k in expected:
            return (MODELS.index(k.model), first, 0, expected.index(k))
        return (MODELS.index(k.model), first, 1, -k.batch_size)

    return sorted(set(keys), key=rank)


def published_batch(profile: str, key: RowKey) -> int | None:
    for k, published in expected_rows(profile):
        if k == key:
            return published
    return None


@cache
def read_published() -> tuple[list[str], dict[RowKey, dict[str, float | None]]]:
    """The reference CSV: its source note (comment lines) and ms/step per (row, backend); None for NA."""
    return published_note(), {RowKey(*key): figures for key, figures in published_ms().items()}
