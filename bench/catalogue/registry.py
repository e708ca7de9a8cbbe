"""What exists: the models found under bench/models/, the published table's rows, the cells. Stdlib only.

A model is a folder bench/models/<name>/ holding a workload.toml (found by directory, as TorchBench finds its
models: adding one edits no list). MODELS is in the published table's row order
(bench/data/keras3_benchmarks_2024.csv), then any other model found, by name. Backends, their families and
variants are bench/catalogue/backends.py's.
"""
from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.base.errors import BenchError
from bench.base.published import PUBLISHED_TIMED_STEPS, published_rows
from bench.catalogue import variants as variant_rules
from bench.catalogue.backends import BACKENDS, DEFAULT_STACK, env_name, get_backend, get_stack
from bench.catalogue.profiles import get_profile
from bench.catalogue.spec import MODELS_DIR, WORKLOAD_FILE, ModelSpec, TaskSpec


def discover_models(models_dir: Path = MODELS_DIR) -> tuple[str, ...]:
    """Every folder of models_dir with a workload.toml: the published table's models in its row order, then the
    rest by name."""
    found = {path.parent.name for path in models_dir.glob(f"*/{WORKLOAD_FILE}")}
    published = [m for m in dict.fromkeys(r.model for r in published_rows()) if m in found]
    return (*published, *sorted(found - set(published)))


MODELS = discover_models()


def paper_models() -> tuple[str, ...]:
    """The models of the published table (`make bench-all`'s default): MODELS less the studies' own models."""
    return tuple(m for m in MODELS if not get_model(m).study)


def get_model(name: str) -> ModelSpec:
    if name not in MODELS:
        raise BenchError(f"unknown model {name!r}; valid models: {', '.join(MODELS)}")
    return importlib.import_module(f"bench.models.{name}").SPEC


def _check_positive(name: str, value: Any, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        what = "a positive integer" if minimum == 1 else "a non-negative integer"
        raise BenchError(f"{name} must be {what}, got {value!r}")


@dataclass(frozen=True)
class Cell:
    """One benchmark cell: what one process measures. Validated at construction."""

    backend: str
    model: str
    task: str
    batch_size: int
    profile: str
    variant: str
    warmup_steps: int
    timed_steps: int
    max_warmup_steps: int | None = None  # None: no extension past warmup_steps
    stack: str = DEFAULT_STACK  # the software stack (bench/catalogue/backends.py STACKS); results before stacks are today's
    # Sampling to the profile's precision takes timed_steps at the least and this many at the most; None: exactly
    # timed_steps (a fixed count: --steps on the command line, and every result written before sampling)
    max_timed_steps: int | None = None
    # The published procedure exactly (--exact): PUBLISHED_TIMED_STEPS timed steps, a fixed count, one process a cell
    exact: bool = False

    def __post_init__(self) -> None:
        backend = get_backend(self.backend)
        get_stack(self.stack)
        spec = self.spec
        if self.task not in spec.tasks():
            raise BenchError(f"unknown task {self.task!r} for {self.model}; valid tasks: {', '.join(spec.tasks())}")
        get_profile(self.profile)
        _check_positive("batch size", self.batch_size)
        _check_positive("timed steps", self.timed_steps)
        _check_positive("warm-up steps", self.warmup_steps, minimum=0)
        if self.max_warmup_steps is not None and (
            not isinstance(self.max_warmup_steps, int) or self.max_warmup_steps < self.warmup_steps
        ):
            raise BenchError(
                f"max warm-up steps must be an integer >= warm-up steps ({self.warmup_steps}), got {self.max_warmup_steps!r}"
            )
        if self.max_timed_steps is not None and (
            isinstance(self.max_timed_steps, bool)
            or not isinstance(self.max_timed_steps, int)
            or self.max_timed_steps < self.timed_steps
        ):
            raise BenchError(
                f"max timed steps must be an integer >= timed steps ({self.timed_steps}), got {self.max_timed_steps!r}"
            )
        if self.exact and (self.timed_steps != PUBLISHED_TIMED_STEPS or self.max_timed_steps is not None):
            raise BenchError(
                f"an exact reproduction times exactly the published {PUBLISHED_TIMED_STEPS} steps, "
                f"not {self.timed_steps} to {self.max_timed_steps}"
            )
        variant_rules.check(backend.name, self.model, self.task, self.variant)

    @property
    def key(self) -> str:
        # today's keys predate stacks and stay as they were; another stack's cell never shares a name with them
        suffix = "" if self.stack == DEFAULT_STACK else f"__stack-{self.stack}"
        return f"{self.backend}__{self.model}__{self.task}__bs{self.batch_size}__{self.variant}{suffix}"

    @property
    def procedure(self) -> str:
        """How the cell chose its timed steps: "exact" (the published procedure), "sampled" (to its profile's
        precision) or "fixed" (a count from the command line, or a result written before sampling)."""
        if self.exact:
            return "exact"
        return "fixed" if self.max_timed_steps is None or self.max_timed_steps == self.timed_steps else "sampled"

    @property
    def env(self) -> str:
        """The env (envs/<env>/, .venvs/<env>) that runs this cell: its backend on its stack."""
        return env_name(self.backend, self.stack)

    @property
    def spec(self) -> ModelSpec:
        """The cell's model (bench/models/<model>/): looked up, not stored, so a Cell compares, hashes, pickles and
        writes as its names alone."""
        return get_model(self.model)

    @property
    def task_spec(self) -> TaskSpec:
        return self.spec.task(self.task)

    def window_plan(self):
        """The cell's windows and its sampling rule: a fixed count of timed steps (no max_timed_steps, or one equal
        to timed_steps) is still reported against the profile's target; a sampling cell takes the profile's
        target and its bounds in seconds."""
        from bench.base.timing import WindowPlan

        profile = get_profile(self.profile)
        steps = (self.warmup_steps, self.timed_steps, self.max_warmup_steps, self.task_spec.windows_per_step)
        if self.max_timed_steps is None or self.max_timed_steps == self.timed_steps:
            return WindowPlan(*steps, max_timed_steps=self.max_timed_steps, target_half_width=profile.target_half_width)
        return WindowPlan(
            *steps,
            max_timed_steps=self.max_timed_steps,
            target_half_width=profile.target_half_width,
            min_timed_s=profile.min_timed_s,
            max_timed_s=profile.max_timed_s or None,
        )

    def to_dict(self) -> dict[str, Any]:
        values = dataclasses.asdict(self)
        if not self.exact:  # a sampled or --steps cell reads as it always has (and as a version 1 result)
            del values["exact"]
        return values

    @classmethod
    def from_dict(cls, data: dict[str, Any], validate: bool = True) -> Cell:
        """validate=False restores an archived cell as it was written, even if today's registry no longer has it."""
        values = {
            f.name: data[f.name] if f.default is dataclasses.MISSING else data.get(f.name, f.default)
            for f in dataclasses.fields(cls)
        }
        if validate:
            return cls(**values)
        cell = object.__new__(cls)
        for name, value in values.items():
            object.__setattr__(cell, name, value)
        return cell

    def why_not_in_registry(self) -> str | None:
        """None if today's registry still has this cell, else why not (for archived results)."""
        try:
            Cell.from_dict(self.to_dict())
        except BenchError as e:
            return str(e)
        return None


def plan_cells(
    profile: str,
    backends: list[str] | None = None,
    models: list[str] | None = None,
    tasks: list[str] | None = None,
    batch_size: int | None = None,
    variants: list[str] | None = None,
    timed_steps: int | None = None,
    warmup_steps: int | None = None,
    stack: str = DEFAULT_STACK,
    exact: bool = False,
) -> list[Cell]:
    """The cells of the published table (narrowed by the arguments; a study's model only when named), backend by
    backend. Each backend runs its own variants unless `variants` names others; a tuning variant runs only where it
    applies, and one that applies to none of the chosen cells is refused, naming where it applies. The timed steps
    sample to the profile's precision up to its max_timed_steps, unless `timed_steps` is given: the user's count is
    then fixed. `exact`: the published procedure, its fixed count of timed steps (the caller runs one process)."""
    prof = get_profile(profile)
    if exact:
        if timed_steps is not None:
            raise BenchError("--exact times the published number of steps: leave out --steps")
        if (prof.shapes_from or profile) != "paper" or prof.max_batch_size:
            raise BenchError(
                f"--exact reproduces the published procedure at the published shapes and batch sizes: "
                f"use --profile paper, not {profile}"
            )
        timed_steps = PUBLISHED_TIMED_STEPS
    chosen = [get_backend(name) for name in backends or BACKENDS]
    specs = [get_model(m) for m in (models or paper_models())]
    for variant in variants or []:
        if not variant_rules.known(variant):
            raise BenchError(
                f"unknown variant {variant!r}; valid variants: {', '.join(sorted(variant_rules.all_names()))}"
            )
    for task in tasks or []:
        if not any(task in s.tasks() for s in specs):
            valid = sorted({t for s in specs for t in s.tasks()})
            raise BenchError(
                f"unknown task {task!r} for {', '.join(s.name for s in specs)}; valid tasks: {', '.join(valid)}"
            )
    warm = prof.warmup_steps if warmup_steps is None else warmup_steps
    cells = []
    for backend in chosen:
        for spec in specs:
            seen = set()
            for row in spec.rows():
                if tasks and row.task not in tasks:
                    continue
                bs = batch_size if batch_size is not None else prof.batch_size(row.batch_size)
                for variant in variants or backend.variants:
                    if variant not in backend.variants and not variant_rules.applies(
                        variant, backend.name, spec.name, row.task
                    ):
                        continue
                    cell = Cell(
                        backend=backend.name,
                        model=spec.name,
                        task=row.task,
                        batch_size=bs,
                        profile=profile,
                        variant=variant,
                        warmup_steps=warm,
                        timed_steps=prof.timed_steps if timed_steps is None else timed_steps,
                        max_warmup_steps=max(warm, prof.max_warmup_steps),
                        stack=stack,
                        max_timed_steps=prof.max_timed_steps if timed_steps is None else None,
                        exact=exact,
                    )
                    if cell.key not in seen:  # an explicit --batch-size can merge two rows
                        seen.add(cell.key)
                        cells.append(cell)
    for variant in variants or []:
        if not any(c.variant == variant for c in cells):
            if variant_rules.is_tuning(variant):
                where = variant_rules.tuning_variant(variant).where()
                raise BenchError(f"variant {variant!r} applies to none of the chosen cells: it applies to {where}")
            owners = [b.name for b in BACKENDS.values() if variant in b.variants]
            raise BenchError(
                f"variant {variant!r} applies to none of the chosen cells: it is a variant of {', '.join(owners)}"
            )
    return cells
