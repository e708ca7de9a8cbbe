"""The framework-neutral registry's old front: every public name of bench/spec.py (what a workload is),
bench/profiles.py (profiles) and bench/registry.py (what exists: models, published rows, cells), re-exported
so that `from bench.workloads import ...` keeps working. New code imports from those modules.

Stdlib only. Per-framework code lives in bench/models/<model>/<family>.py and is imported lazily,
so each environment needs only its own framework.
"""
from __future__ import annotations

from pathlib import Path

from bench.backends import family_variants
from bench.profiles import PROFILES_TOML, Profile, get_profile, profiles
from bench.registry import MODELS, REFERENCE_CSV, Cell, Row, discover_models, get_model, plan_cells, published_rows
from bench.spec import DRIVERS, MODELS_DIR, TASKS, ModelSpec, TaskSpec, fit_task, load_model_spec, positive_fields, predict_task

PACKAGE_DIR = Path(__file__).resolve().parent
VARIANTS = family_variants()  # family -> its variants, from bench/backends.py

__all__ = [
    "Cell", "DRIVERS", "MODELS", "MODELS_DIR", "ModelSpec", "PACKAGE_DIR", "PROFILES_TOML", "Profile", "REFERENCE_CSV", "Row",
    "TASKS", "TaskSpec", "VARIANTS", "discover_models", "fit_task", "get_model", "get_profile", "load_model_spec",
    "plan_cells", "positive_fields", "predict_task", "profiles", "published_rows",
]  # fmt: skip
