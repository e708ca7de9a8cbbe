"""The result format's field table, generated from the JSON Schema's descriptions (docs/schema/), so the schema is
the one place a field is described. `python -m bench schema-doc` (`make docs`) rewrites the table between the
markers of docs/RESULT_FORMAT.md; tests/test_result_format.py fails when a field has no description or the page is stale.

A field is a property of the schema, named by its path (`runs[].timed_ms`); a property whose value is a shared
definition ($defs: the statistics) is one row, and the definition's own fields have a table of their own.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from bench.base.atomic import write_text_atomic
from bench.record.schema import SCHEMA_DIR, VERSIONS

PAGE = SCHEMA_DIR.parent / "RESULT_FORMAT.md"
START = "<!-- result-fields:start (written by make docs from docs/schema/; do not edit) -->"
END = "<!-- result-fields:end -->"
EXPANDED_DEFS = ("run",)  # definitions shown field by field where they are used; the others get a table of their own


def load_schema(version: int = VERSIONS[-1]) -> dict[str, Any]:
    return json.loads((SCHEMA_DIR / f"result-v{version}.schema.json").read_text())


def _refs(node: dict) -> list[str]:
    """The definitions a property refers to, directly or in an anyOf/oneOf alternative."""
    alternatives = [node, *node.get("anyOf", []), *node.get("oneOf", [])]
    return [alt["$ref"].split("/")[-1] for alt in alternatives if "$ref" in alt]


def _type(node: dict, defs: dict) -> str:
    alternatives = node.get("anyOf") or node.get("oneOf") or [node]
    names = []
    for alt in alternatives:
        if "$ref" in alt:
            names.append(alt["$ref"].split("/")[-1] if alt["$ref"].split("/")[-1] not in EXPANDED_DEFS else "object")
        elif "const" in alt:
            names.append(json.dumps(alt["const"]))
        elif "enum" in alt:
            names.append(" / ".join(json.dumps(v) for v in alt["enum"]))
        else:
            kind = alt.get("type", "any")
            kind = " or ".join(kind) if isinstance(kind, list) else kind
            if kind == "array" and isinstance(alt.get("items"), dict):
                kind = f"array of {_type(alt['items'], defs)}"
            names.append(kind)
    return " or ".join(dict.fromkeys(names))


def fields(schema: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    """(path, type, description) of every property, depth first: the top level's, then each definition's that is
    not expanded in place (under the definition's name)."""
    defs = schema.get("$defs", {})
    rows: list[tuple[str, str, str | None]] = []

    def walk(node: dict, path: str) -> None:
        for alt in [node, *node.get("anyOf", []), *node.get("oneOf", [])]:
            target = (
                defs[alt["$ref"].split("/")[-1]]
                if "$ref" in alt and alt["$ref"].split("/")[-1] in EXPANDED_DEFS
                else alt
            )
            for name, prop in target.get("properties", {}).items():
                where = f"{path}.{name}" if path else name
                rows.append((where, _type(prop, defs), prop.get("description")))
                if not any(ref not in EXPANDED_DEFS for ref in _refs(prop)):
                    walk(prop, where)
            items = target.get("items")
            if isinstance(items, dict):
                walk(items, f"{path}[]")

    walk(schema, "")
    for name, definition in defs.items():
        if name not in EXPANDED_DEFS:
            walk(definition, name)
    return list(dict.fromkeys(rows))


def undescribed(schema: dict[str, Any]) -> list[str]:
    return [path for path, _, description in fields(schema) if not description]


def markdown(version: int = VERSIONS[-1]) -> str:
    schema = load_schema(version)
    defs = schema.get("$defs", {})
    head = ["| field | type | what |", "|---|---|---|"]
    cell = lambda text: (text or "").replace("|", "\\|").replace("\n", " ")
    top = [
        f"| `{path}` | {cell(kind)} | {cell(text)} |"
        for path, kind, text in fields(schema)
        if path.split(".")[0].split("[")[0] not in defs or path in schema["properties"]
    ]
    lines = [
        f"Schema version {version} (`docs/schema/result-v{version}.schema.json`): {schema.get('description', '')}",
        "",
        *head,
        *top,
    ]
    for name, definition in defs.items():
        if name in EXPANDED_DEFS:
            continue
        users = [path for path, kind, _ in fields(schema) if name in kind.split(" or ")]
        if not users:  # a definition no field uses (kept for older readers) needs no table
            continue
        lines += [
            "",
            f"`{name}` ({', '.join(f'`{u}`' for u in users)}): {definition.get('description', '')}",
            "",
            *head,
            *(
                f"| `{path.split('.', 1)[1]}` | {cell(kind)} | {cell(text)} |"
                for path, kind, text in fields(schema)
                if path.startswith(f"{name}.")
            ),
        ]
    return "\n".join(lines)


def splice(page: str, table: str) -> str:
    if START not in page or END not in page:
        raise ValueError(f"{PAGE}: the markers {START!r} and {END!r} are missing")
    before, rest = page.split(START, 1)
    return before + START + "\n\n" + table + "\n\n" + END + rest.split(END, 1)[1]


def main(argv: list[str] | None = None) -> int:
    import argparse

    argparse.ArgumentParser(prog="python -m bench schema-doc", description=f"Regenerate {PAGE.name}'s field table "
                            "from docs/schema/.").parse_args(argv)
    write_text_atomic(PAGE, splice(PAGE.read_text(), markdown()))
    print(f"wrote the result field table of {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
