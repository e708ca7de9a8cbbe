"""The published result format: docs/schema/result-v<N>.schema.json (JSON Schema draft 2020-12).

validate_result() picks the schema by the file's schema_version and raises BenchError naming the first
violation's JSON path. It needs `jsonschema`, which only the tools env has (the orchestrator, `make table`,
the tests). In a backend env (a cell process, or the orchestrator inside a container image) it is a no-op:
bench/record/results.py's own checks still apply there, and every file is validated again when the tools env
loads it.

A file's text that validated once in a process is not walked again (`source=`): a page reads the same files once
per table, and validation was 30% of rendering the committed results (jsonschema walks every field). The key is the
text itself, so a changed file is validated afresh; a document built in memory is always validated.
"""
from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any

from bench.base.errors import BenchError
from bench.base.provenance import REPO_ROOT

SCHEMA_DIR = REPO_ROOT / "docs" / "schema"
VERSIONS = (1, 2)
VALID_KEPT = 200_000  # digests of file texts that validated (about 100 bytes each); a full set starts again
_valid: set[bytes] = set()

try:
    import jsonschema
except ImportError:  # a backend env: see the module docstring
    jsonschema = None


def schema_path(version: int) -> Path:
    return SCHEMA_DIR / f"result-v{version}.schema.json"


@cache
def _validator(version: int):
    path = schema_path(version)
    try:
        schema = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise BenchError(f"cannot read the result schema {path}: {e}") from None
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def validate_result(data: dict[str, Any], source: str | None = None) -> None:
    """Raise BenchError at the first violation of the result schema; a no-op without jsonschema. `source`: the JSON
    text `data` was parsed from, whose validation is then kept for the process."""
    if jsonschema is None:
        return
    if not isinstance(data, dict):
        raise BenchError(f"$: a result must be a JSON object, got {type(data).__name__}")
    version = data.get("schema_version")
    if isinstance(version, bool) or version not in VERSIONS:
        raise BenchError(f"$.schema_version: {version!r} is not a known result schema version {VERSIONS}")
    digest = None if source is None else hashlib.blake2b(source.encode(), digest_size=20).digest()
    if digest is not None and digest in _valid:
        return
    validator = _validator(version)
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        raise BenchError(f"{error.json_path}: {error.message} ({schema_path(version).name})")
    if digest is not None:
        if len(_valid) >= VALID_KEPT:
            _valid.clear()
        _valid.add(digest)
