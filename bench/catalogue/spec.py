"""What a workload is, on every backend: its tasks (TaskSpec), its model (ModelSpec) read from
bench/models/<name>/workload.toml, and the helpers that validate its shapes. Stdlib only.

What exists (the models found, the published rows, the cells) is bench/catalogue/registry.py's.
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.base.errors import BenchError
from bench.base.provenance import PACKAGE_DIR
from bench.base.published import Row, published_rows
from bench.catalogue.backends import BACKENDS, get_backend
from bench.catalogue.profiles import profiles

MODELS_DIR = PACKAGE_DIR / "models"
WORKLOAD_FILE = "workload.toml"  # a folder of MODELS_DIR holding one is a model
NEEDS_TABLE = "needs"  # workload.toml's one table that is no profile: what the unlocked route must find installed
TASKS = ("fit", "predict", "generate")
# How a task's steps are driven and timed (bench/measure/drivers.py holds one function per name).
DRIVERS = ("steps", "keras-fit", "keras-predict", "trainer", "step-pairs", "generate")


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
            raise BenchError(
                f"task {self.name!r}: unknown task or driver(s) {sorted(unknown)}; drivers: {', '.join(DRIVERS)}"
            )

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
class CellRule:
    """Cells of a model that cannot run, though the model runs on their backend: those on one stack, task or
    variant (a field left None matches every value). Checked from the cell alone, without importing a framework."""

    reason: str
    stack: str | None = None
    backend: str | None = None
    task: str | None = None
    variant: str | None = None

    def matches(self, cell) -> bool:
        return all(
            want is None or want == getattr(cell, name)
            for name, want in (
                ("stack", self.stack),
                ("backend", self.backend),
                ("task", self.task),
                ("variant", self.variant),
            )
        )


@dataclass(frozen=True)
class ModelSpec:
    """A model's framework-neutral definition, shared by every backend's implementation."""

    name: str
    display: str
    shape_type: type  # a frozen dataclass of the model's shapes and sizes
    shapes: dict[str, Any]  # profile name -> shape_type instance
    unsupported: dict[str, str]  # backend -> why the cell cannot exist
    task_specs: dict[str, TaskSpec]  # task name -> how it is driven and reported
    # A model that is no row of the published table has its own rows, as (task, batch size). A study's model also
    # names its study: `make bench-all` and the main table leave it out, and the study's section shows it.
    study: str | None = None
    own_rows: tuple[tuple[str, int], ...] = ()
    unsupported_cells: tuple[CellRule, ...] = ()  # narrower than `unsupported`: a stack, task or variant
    # (cell, shape) -> {setting: value} a cell's run must record: what the reference code ran (the fidelity checks)
    paper_settings: Callable[[Any, Any], dict[str, Any]] | None = None
    # family -> the distributions its implementation needs beyond the framework, each a tuple of alternatives
    needs: dict[str, tuple[tuple[str, ...], ...]] = dataclasses.field(default_factory=dict)

    def rows(self):
        """This model's rows (bench.base.published.Row), in order: its own, else the published table's."""
        if self.own_rows:
            return tuple(Row(self.name, task, batch) for task, batch in self.own_rows)
        return tuple(r for r in published_rows() if r.model == self.name)

    def tasks(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.task for r in self.rows()))

    def shape(self, profile: str) -> Any:
        """The profile's shape: its own table in workload.toml, else that of the profile it borrows shapes from."""
        if profile not in self.shapes:
            return self.shapes[profiles()[profile].shapes_from]
        return self.shapes[profile]

    def task(self, name: str) -> TaskSpec:
        try:
            return self.task_specs[name]
        except KeyError:
            raise BenchError(
                f"unknown task {name!r} for {self.name}; valid tasks: {', '.join(self.task_specs)}"
            ) from None

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

    def expected_settings(self, cell) -> dict[str, Any]:
        """The settings this cell's run must record (its `paper_settings`), against the cell's shape; {} if none."""
        return self.paper_settings(cell, self.shape(cell.profile)) if self.paper_settings else {}

    def why_cell_unsupported(self, cell) -> str | None:
        """Why this cell cannot run: its backend's reason, else the first rule of `unsupported_cells` it matches."""
        return self.why_unsupported(cell.backend) or next(
            (r.reason for r in self.unsupported_cells if r.matches(cell)), None
        )


def load_model_spec(
    name: str,
    display: str,
    shape_type: type,
    tasks: list[TaskSpec],
    unsupported: dict[str, str] | None = None,
    study: str | None = None,
    rows: list[tuple[str, int]] | None = None,
    unsupported_cells: tuple[CellRule, ...] = (),
    paper_settings: Callable[[Any, Any], dict[str, Any]] | None = None,
) -> ModelSpec:
    """Build a ModelSpec from bench/models/<name>/workload.toml, one table per profile (a profile with
    `shapes_from` borrows another's: a table of its own holds only the fields it changes). A model that is no row of
    the published table gives its own `rows`, as (task, batch size); a study's model gives its study too; `paper_settings(cell, shape)` gives the settings its runs must record (the tests'
    fidelity checks: what the reference code ran)."""
    path = MODELS_DIR / name / WORKLOAD_FILE
    with path.open("rb") as f:
        data = tomllib.load(f)
    needs = implementation_needs(path, data.pop(NEEDS_TABLE, {}))
    missing = {p for p, prof in profiles().items() if not prof.shapes_from} - set(data)
    if missing:
        raise BenchError(f"{path}: no shapes for profile(s) {sorted(missing)}")
    shapes = {}
    for profile, values in data.items():
        borrowed = profiles()[profile].shapes_from if profile in profiles() else ""
        try:
            shapes[profile] = shape_type(**({**data[borrowed], **values} if borrowed else values))
        except (TypeError, ValueError) as e:
            raise BenchError(f"{path} [{profile}]: {e}") from None
    if study and not rows:
        raise BenchError(f"{name}: a study's model needs its own rows")
    if rows and any(r.model == name for r in published_rows()):
        raise BenchError(f"{name}: the published table has its rows; it cannot declare its own")
    spec = ModelSpec(
        name,
        display,
        shape_type,
        shapes,
        dict(unsupported or {}),
        {t.name: t for t in tasks},
        study,
        tuple(rows or ()),
        tuple(unsupported_cells),
        paper_settings,
        needs,
    )
    published = set(spec.tasks())
    if published != set(spec.task_specs):
        where = "its own rows have" if rows else "the published table has"
        raise BenchError(f"{name}: {where} tasks {sorted(published)}, the spec declares {sorted(spec.task_specs)}")
    return spec


def implementation_needs(path: Path, table: Any) -> dict[str, tuple[tuple[str, ...], ...]]:
    """workload.toml's [needs]: family -> its implementation's needs, each a tuple of alternative distributions.
    Every implementation the folder holds must say what it needs ([] for nothing beyond its framework), so an
    unlocked run names what is missing instead of failing inside the cell."""
    families = {b.family for b in BACKENDS.values()}
    if not isinstance(table, dict) or set(table) - families:
        raise BenchError(f"{path} [{NEEDS_TABLE}]: keys are implementation families ({', '.join(sorted(families))})")
    needs = {}
    for family in sorted(families):
        module = f"{family.replace('-', '_')}.py"
        if family not in table:
            if (path.parent / module).exists():
                raise BenchError(
                    f"{path} [{NEEDS_TABLE}]: no `{family}` entry for {module}: list the distributions it needs "
                    "beyond its framework, each a list of alternatives ([] for none)"
                )
            continue
        entry = table[family]
        if not isinstance(entry, list) or not all(
            isinstance(need, list) and need and all(isinstance(name, str) and name for name in need) for need in entry
        ):
            raise BenchError(f"{path} [{NEEDS_TABLE}] {family}: a list of needs, each a non-empty list of names")
        needs[family] = tuple(tuple(need) for need in entry)
    return needs


def positive_fields(instance: Any) -> None:
    """Validation for shape dataclasses: every int field is a positive int."""
    for f in dataclasses.fields(instance):
        value = getattr(instance, f.name)
        if isinstance(value, bool):
            continue
        if isinstance(value, int) and value <= 0:
            raise BenchError(f"{type(instance).__name__}.{f.name} must be a positive integer, got {value}")
