"""The framework-neutral registry: models, their tasks and batch sizes, profiles and cells.

Stdlib only. Per-framework code lives in bench/models/<model>/<family>.py and is imported lazily,
so each environment needs only its own framework.
"""
from __future__ import annotations

import csv
import dataclasses
import importlib
import importlib.util
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Callable

from bench.backends import BACKENDS, BenchError, get_backend

PACKAGE_DIR = Path(__file__).resolve().parent
REFERENCE_CSV = PACKAGE_DIR / "data" / "keras3_benchmarks_2024.csv"
PROFILES_TOML = PACKAGE_DIR / "profiles.toml"

# The published table's row order, model by model.
MODELS = ("sam", "stable_diffusion", "bert", "gemma", "mistral")
TASKS = ("fit", "predict", "generate")
VARIANTS = {"keras": ("default",), "native-torch": ("eager", "compiled")}
# How a task's steps are driven and timed (bench/drivers.py holds one function per name).
DRIVERS = ("steps", "keras-fit", "keras-predict", "trainer", "step-pairs")


@dataclass(frozen=True)
class TaskSpec:
    """What one of a model's tasks is, on every backend: which driver runs it per implementation family, the unit
    of its figures, what its first window holds, and its generated tokens per step (generate tasks)."""

    name: str
    drivers: dict[str, str]  # family ("keras", "native-torch") -> driver name
    unit: str = "ms/step"
    first_step_contains: str = "trace + compile + the first step"
    tokens_per_step: Callable[[Any, int], int] | None = None  # (shape, batch size) -> tokens
    derivation: str | None = None  # how timed figures come from the windows, when they are not the windows

    def __post_init__(self) -> None:
        unknown = set(self.drivers.values()) - set(DRIVERS)
        if self.name not in TASKS or unknown:
            raise BenchError(f"task {self.name!r}: unknown task or driver(s) {sorted(unknown)}; drivers: {', '.join(DRIVERS)}")

    def driver(self, family: str) -> str:
        try:
            return self.drivers[family]
        except KeyError:
            raise BenchError(f"task {self.name!r} has no driver for the {family!r} family") from None

    @property
    def windows_per_step(self) -> int:
        return 2 if self.derivation == "pair-difference" else 1


def fit_task(native: str = "steps") -> TaskSpec:
    """Keras fit() on every Keras backend; native PyTorch by `native` (a plain training loop, or the Trainer)."""
    return TaskSpec("fit", {"keras": "keras-fit", "native-torch": native})


def predict_task(native: str = "steps") -> TaskSpec:
    return TaskSpec("predict", {"keras": "keras-predict", "native-torch": native})


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    warmup_steps: int
    timed_steps: int
    timeout_s: int
    max_batch_size: int  # 0: use the published batch sizes unchanged
    max_warmup_steps: int  # warm-up goes on past warmup_steps, up to this, while steps still compile

    def __post_init__(self) -> None:
        if self.timed_steps < 1 or self.warmup_steps < 0 or self.timeout_s < 1 or self.max_batch_size < 0 or self.max_warmup_steps < self.warmup_steps:
            raise BenchError(f"profile {self.name!r} has invalid values: {self}")

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


@dataclass(frozen=True)
class Row:
    """One row of the published table: a model's task at its published batch size."""

    model: str
    task: str
    batch_size: int


@cache
def published_rows() -> tuple[Row, ...]:
    with REFERENCE_CSV.open() as f:
        lines = [line for line in f if not line.startswith("#")]
    return tuple(Row(r["model"], r["task"], int(r["batch_size"])) for r in csv.DictReader(lines))


@dataclass(frozen=True)
class ModelSpec:
    """A model's framework-neutral definition, shared by every backend's implementation."""

    name: str
    display: str
    shape_type: type  # a frozen dataclass of the model's shapes and sizes
    shapes: dict[str, Any]  # profile name -> shape_type instance
    unsupported: dict[str, str]  # backend -> why the cell cannot exist
    task_specs: dict[str, TaskSpec]  # task name -> how it is driven and reported

    def rows(self) -> tuple[Row, ...]:
        return tuple(r for r in published_rows() if r.model == self.name)

    def tasks(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.task for r in self.rows()))

    def shape(self, profile: str) -> Any:
        return self.shapes[profile]

    def task(self, name: str) -> TaskSpec:
        try:
            return self.task_specs[name]
        except KeyError:
            raise BenchError(f"unknown task {name!r} for {self.name}; valid tasks: {', '.join(self.task_specs)}") from None

    def module_name(self, backend: str) -> str:
        return f"bench.models.{self.name}.{get_backend(backend).family.replace('-', '_')}"

    def implementation(self, backend: str):
        """Import the per-framework module lazily: only the env under test has its framework."""
        return importlib.import_module(self.module_name(backend))

    def why_unsupported(self, backend: str) -> str | None:
        """Why this model's cell cannot run on this backend, or None. Checked without importing a framework."""
        if backend in self.unsupported:
            return self.unsupported[backend]
        if importlib.util.find_spec(self.module_name(backend)) is None:
            return f"not implemented in this suite yet ({self.module_name(backend)} does not exist)"
        return None


def load_model_spec(name: str, display: str, shape_type: type, tasks: list[TaskSpec], unsupported: dict[str, str] | None = None) -> ModelSpec:
    """Build a ModelSpec from bench/models/<name>/workload.toml, one table per profile."""
    path = PACKAGE_DIR / "models" / name / "workload.toml"
    with path.open("rb") as f:
        data = tomllib.load(f)
    missing = set(profiles()) - set(data)
    if missing:
        raise BenchError(f"{path}: no shapes for profile(s) {sorted(missing)}")
    shapes = {}
    for profile, values in data.items():
        try:
            shapes[profile] = shape_type(**values)
        except (TypeError, ValueError) as e:
            raise BenchError(f"{path} [{profile}]: {e}") from None
    spec = ModelSpec(name, display, shape_type, shapes, dict(unsupported or {}), {t.name: t for t in tasks})
    published = set(spec.tasks())
    if published != set(spec.task_specs):
        raise BenchError(f"{name}: the published table has tasks {sorted(published)}, the spec declares {sorted(spec.task_specs)}")
    return spec


def positive_fields(instance: Any) -> None:
    """Validation for shape dataclasses: every int field is a positive int."""
    for f in dataclasses.fields(instance):
        value = getattr(instance, f.name)
        if isinstance(value, bool):
            continue
        if isinstance(value, int) and value <= 0:
            raise BenchError(f"{type(instance).__name__}.{f.name} must be a positive integer, got {value}")


def get_model(name: str) -> ModelSpec:
    if name not in MODELS:
        raise BenchError(f"unknown model {name!r}; valid models: {', '.join(MODELS)}")
    return importlib.import_module(f"bench.models.{name}").SPEC


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

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise BenchError(f"unknown backend {self.backend!r}; valid backends: {', '.join(BACKENDS)}")
        spec = get_model(self.model)
        if self.task not in spec.tasks():
            raise BenchError(f"unknown task {self.task!r} for {self.model}; valid tasks: {', '.join(spec.tasks())}")
        get_profile(self.profile)
        for name in ("batch_size", "timed_steps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise BenchError(f"{name.replace('_', ' ')} must be a positive integer, got {value!r}")
        if isinstance(self.warmup_steps, bool) or not isinstance(self.warmup_steps, int) or self.warmup_steps < 0:
            raise BenchError(f"warm-up steps must be a non-negative integer, got {self.warmup_steps!r}")
        if self.max_warmup_steps is not None and (not isinstance(self.max_warmup_steps, int) or self.max_warmup_steps < self.warmup_steps):
            raise BenchError(f"max warm-up steps must be an integer >= warm-up steps ({self.warmup_steps}), got {self.max_warmup_steps!r}")
        variants = VARIANTS[get_backend(self.backend).family]
        if self.variant not in variants:
            raise BenchError(f"unknown variant {self.variant!r} for {self.backend}; valid variants: {', '.join(variants)}")

    @property
    def key(self) -> str:
        return f"{self.backend}__{self.model}__{self.task}__bs{self.batch_size}__{self.variant}"

    @property
    def task_spec(self) -> TaskSpec:
        return get_model(self.model).task(self.task)

    def window_plan(self):
        from bench.timing import WindowPlan

        return WindowPlan(self.warmup_steps, self.timed_steps, self.max_warmup_steps, self.task_spec.windows_per_step)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], validate: bool = True) -> "Cell":
        """validate=False restores an archived cell as it was written, even if today's registry no longer has it."""
        values = {f.name: data[f.name] if f.default is dataclasses.MISSING else data.get(f.name, f.default) for f in dataclasses.fields(cls)}
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
) -> list[Cell]:
    """The cells of the published table (narrowed by the arguments), backend by backend."""
    prof = get_profile(profile)
    for name in backends or []:
        if name not in BACKENDS:
            raise BenchError(f"unknown backend {name!r}; valid backends: {', '.join(BACKENDS)}")
    specs = [get_model(m) for m in (models or MODELS)]
    known_variants = {v for vs in VARIANTS.values() for v in vs}
    for variant in variants or []:
        if variant not in known_variants:
            raise BenchError(f"unknown variant {variant!r}; valid variants: {', '.join(sorted(known_variants))}")
    for task in tasks or []:
        if not any(task in s.tasks() for s in specs):
            valid = sorted({t for s in specs for t in s.tasks()})
            raise BenchError(f"unknown task {task!r} for {', '.join(s.name for s in specs)}; valid tasks: {', '.join(valid)}")
    warm = prof.warmup_steps if warmup_steps is None else warmup_steps
    cells = []
    for backend in backends or list(BACKENDS):
        family = get_backend(backend).family
        for spec in specs:
            seen = set()
            for row in spec.rows():
                if tasks and row.task not in tasks:
                    continue
                bs = batch_size if batch_size is not None else prof.batch_size(row.batch_size)
                for variant in VARIANTS[family]:
                    if variants and variant not in variants:
                        continue
                    cell = Cell(
                        backend=backend,
                        model=spec.name,
                        task=row.task,
                        batch_size=bs,
                        profile=profile,
                        variant=variant,
                        warmup_steps=warm,
                        timed_steps=prof.timed_steps if timed_steps is None else timed_steps,
                        max_warmup_steps=max(warm, prof.max_warmup_steps),
                    )
                    if cell.key not in seen:  # an explicit --batch-size can merge two rows
                        seen.add(cell.key)
                        cells.append(cell)
    return cells
