"""The result format has one source: the JSON Schema's descriptions (docs/schema/). Every field is described there,
docs/RESULT_FORMAT.md's field table is generated from them, and every field a committed result holds is one of them."""
import json

from conftest import REPO

from bench.record import schema_doc

SCHEMA = schema_doc.load_schema()
FIELDS = {path for path, _, _ in schema_doc.fields(SCHEMA)}


def test_every_field_of_the_schema_is_described():
    assert schema_doc.undescribed(SCHEMA) == []
    assert {"cell.stack", "cell.max_warmup_steps", "runs[].steadiness.steady"} <= FIELDS  # nested fields are fields too


def test_the_docs_field_table_is_the_schemas():
    page = schema_doc.PAGE.read_text()
    assert schema_doc.splice(page, schema_doc.markdown()) == page, "docs/RESULT_FORMAT.md is stale: run `make docs`"


def test_every_field_a_committed_result_holds_is_described():
    def paths(data: dict, prefix: str = ""):
        for key, value in data.items():
            path = f"{prefix}{key}"
            yield path
            if path in ("cell", "runs[].steadiness", "runs[].reference") and isinstance(value, dict):
                yield from paths(value, f"{path}.")
            if path == "runs":
                for run in value:
                    yield from paths(run, "runs[].")

    files = [f for f in REPO.glob("results/**/*.json") if "plan" not in f.name]
    held = set()
    for f in files:
        data = json.loads(f.read_text())
        if isinstance(data, dict) and data.get("schema_version") == 2:
            held |= set(paths(data))
    assert len(held) > 30, "no committed schema-2 results were read"
    assert held - FIELDS == set()
