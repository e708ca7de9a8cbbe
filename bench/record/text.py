"""Formatting shared by every renderer: number formats, Markdown-safe cells, atomic writes (tables:
bench/base/tables.py)."""
from __future__ import annotations

import html
import sys
from collections.abc import Iterable
from typing import Any

from bench.base.atomic import write_text_atomic  # noqa: F401  (the report's writers import it from here)
from bench.base.provenance import env_stamp
from bench.catalogue.backends import BACKENDS, short_name

try:
    from tabulate import tabulate
except ImportError:  # reported by render() as a clear error, not a traceback
    tabulate = None


def install_hint(package: str) -> str:
    """How to get `package` into the Python that runs: the tools env is built by make; any other (ENV=current, an
    own environment) installs it itself, which `make env-tools` would not do."""
    if (env_stamp() or {}).get("backend") == "tools":
        return "rebuild the tools env (`make env-tools`)"
    return (
        f"install it in this Python ({sys.executable} -m pip install {package}; offline: the wheel bundle of "
        "`make wheelhouse`, docs/OWN_ENVIRONMENT.md)"
    )


STATUS_TEXT = {
    "unsupported": "NA",
    "oom": "OOM",
    "timeout": "timeout",
    "error": "error",
    "killed": "killed",
    "unsteady": "unsteady",
    "oom-predicted": "OOM (predicted)",
}
SHORT = {name: short_name(name) for name in BACKENDS}
BEST = "Keras 3 (best)"


def status_label(status: str) -> str:
    return STATUS_TEXT.get(status, status)


def fmt_ms(value: float) -> str:
    if value >= 100:
        return f"{value:.1f}"
    if value >= 10:
        return f"{value:.2f}"
    return f"{value:.3f}"


def plural(n: int, word: str) -> str:
    return f"{n} {word}{('es' if word.endswith('s') else 's') if n != 1 else ''}"


def recorded(text: Any) -> str:
    """Text a result recorded from its machine (its OS, CPU, environment variables) as Markdown shows it, markup and
    all: any HTML in it is escaped, not rendered (the results page escapes it likewise)."""
    return html.escape(str(text), quote=False)


def md(text: Any) -> str:
    """Safe inside a Markdown table cell: one line, no stray pipes."""
    return " ".join(str(text).split()).replace("|", "\\|")


def distinct(values: Iterable[Any]) -> list[str]:
    """Distinct non-empty values, as text, in first-seen order."""
    out: list[str] = []
    for v in values:
        if v is None or v == "" or v == [] or v == {}:
            continue
        text = str(v)
        if text not in out:
            out.append(text)
    return out


def joined(values: Iterable[Any], sep: str = "; ") -> str:
    return sep.join(distinct(values))
