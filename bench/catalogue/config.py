"""One resolved configuration per cell, built in one place: what the cell runs (its shape, its window plan, its
timeout, the variables its process runs with) and, for each value, where it came from. The orchestrator resolves
it (bench/run/runner.py Prepared.attempt), passes it to the cell process, which refuses to run anything else
(bench/measure/cell.py check_config), and writes it into the cell's result (`config`).

The values themselves live where they always did (bench/catalogue/profiles.toml, the published table, each model's
workload.toml, bench/catalogue/backends.py, the command line); this module only gathers them and says which one won.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from bench.base.provenance import REPO_ROOT
from bench.base.published import REFERENCE_CSV, published_rows
from bench.catalogue.backends import cell_environment
from bench.catalogue.profiles import PROFILES_TOML, get_profile
from bench.catalogue.registry import Cell
from bench.catalogue.spec import WORKLOAD_FILE

COMMAND_LINE = "the command line"


@dataclass(frozen=True)
class CellConfig:
    """A cell's resolved configuration. `sources` names, per field, where its value came from."""

    cell: dict[str, Any]
    shape: dict[str, Any]
    window_plan: dict[str, int | float | None]
    timeout_s: float
    environment: dict[str, str]
    sources: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def shape_of(cell: Cell) -> dict[str, Any]:
    """The model's shape for the cell's profile, as plain JSON values."""
    shape = cell.spec.shape(cell.profile)
    values = dataclasses.asdict(shape) if dataclasses.is_dataclass(shape) else dict(shape or {})
    return json.loads(json.dumps(values))  # tuples as lists: as it reads back from the result file


def window_plan_of(cell: Cell) -> dict[str, int | float | None]:
    """The cell's windows and its sampling rule (bench/base/timing.py WindowPlan): a fixed count has no max_timed_steps
    (or one equal to timed_steps) and no bounds in seconds."""
    plan = cell.window_plan()
    return {
        "warmup_steps": plan.warmup_steps,
        "max_warmup_steps": plan.max_warmup_steps,
        "timed_steps": plan.timed_steps,
        "windows_per_step": plan.windows_per_step,
        "max_timed_steps": plan.max_timed_steps,
        "target_half_width": plan.target_half_width,
        "min_timed_s": plan.min_timed_s,
        "max_timed_s": plan.max_timed_s,
    }


def resolve(cell: Cell, timeout_s: float | None = None, environment: dict[str, str] | None = None) -> CellConfig:
    """The cell's configuration. timeout_s: the command line's, if it gave one (else the cell's own: its published
    cost's multiple or its profile's floor); environment: variables the orchestrator adds for this process (its GPU,
    its core share), on top of the backend's."""
    from bench.catalogue.cost import cell_cost, cell_timeout_s

    profile = get_profile(cell.profile)
    spec = cell.spec
    at = f"{PROFILES_TOML.relative_to(REPO_ROOT)} [{cell.profile}]"
    sources: dict[str, str] = {}
    for name, planned in (("warmup_steps", profile.warmup_steps), ("timed_steps", profile.timed_steps)):
        sources[name] = f"{at} {name}" if getattr(cell, name) == planned else COMMAND_LINE
    sources["max_warmup_steps"] = (
        f"{at} max_warmup_steps"
        if cell.max_warmup_steps == max(cell.warmup_steps, profile.max_warmup_steps)
        else COMMAND_LINE
    )
    fixed = cell.window_plan().fixed
    if cell.exact:
        sources["timed_steps"] = sources["max_timed_steps"] = (
            f"{COMMAND_LINE} (--exact: the published procedure, {REFERENCE_CSV.name}'s note)"
        )
    elif cell.max_timed_steps is None:
        sources["max_timed_steps"] = f"{COMMAND_LINE} (--steps: a fixed count)"
    elif cell.max_timed_steps == profile.max_timed_steps:
        sources["max_timed_steps"] = f"{at} max_timed_steps" + (" (a fixed count)" if fixed else "")
    else:
        sources["max_timed_steps"] = f"the cell as given (the profile's is {profile.max_timed_steps})"
    sources["target_half_width"] = f"{at} target_half_width"
    for name in ("min_timed_s", "max_timed_s"):
        sources[name] = "none: a fixed count of timed steps" if fixed else f"{at} {name}"
    published = [r.batch_size for r in published_rows() if (r.model, r.task) == (cell.model, cell.task)]
    own = [r.batch_size for r in spec.rows() if r.task == cell.task]
    if any(profile.batch_size(b) == cell.batch_size for b in published):
        sources["batch_size"] = f"{REFERENCE_CSV.name} (the published table)" + (
            f", capped at {profile.max_batch_size} by {at}" if profile.max_batch_size else ""
        )
    elif any(profile.batch_size(b) == cell.batch_size for b in own):
        sources["batch_size"] = f"bench/models/{cell.model}/__init__.py (the model's own rows)"
    else:
        sources["batch_size"] = COMMAND_LINE
    shape_table = cell.profile if cell.profile in spec.shapes else profile.shapes_from
    sources["shape"] = f"bench/models/{cell.model}/{WORKLOAD_FILE} [{shape_table}]"
    if timeout_s:
        resolved_timeout, sources["timeout_s"] = float(timeout_s), COMMAND_LINE
    else:
        resolved_timeout = float(cell_timeout_s(cell))
        costed = cell_cost(cell) is not None and resolved_timeout > profile.timeout_s
        sources["timeout_s"] = (
            "bench/catalogue/cost.py cell_timeout_s (a multiple of the cell's cost at the published speed)"
            if costed
            else f"{at} timeout_s"
        )
    extra = dict(environment or {})
    variables = {**cell_environment(cell.env), **extra}
    sources["environment"] = "bench/catalogue/backends.py (the backend's variables)" + (
        f"; the orchestrator: {', '.join(sorted(extra))}" if extra else ""
    )
    return CellConfig(cell.to_dict(), shape_of(cell), window_plan_of(cell), resolved_timeout, variables, sources)


def mismatches(config: dict[str, Any], cell: Cell) -> list[str]:
    """What of a config passed to a cell process differs from what that process would run (an orchestrator and a
    cell of different code, or a config edited on the way): the cell refuses to run on any."""
    wrong = []
    if config.get("cell") != cell.to_dict():
        wrong.append("cell")
    if config.get("shape") != shape_of(cell):
        wrong.append("shape")
    if config.get("window_plan") != window_plan_of(cell):
        wrong.append("window_plan")
    return wrong
