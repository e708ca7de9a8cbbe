"""`make parity`'s findings as the report shows them (results/parity/parity.json, bench/studies/parity/): its tally and
each failure under RESULTS.md's studies, and a mark on every speed-up that joins two sides shown to compute
differently."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

PARITY_MARK = "ᵖ"
# the checks whose failure says a Keras 3 model and its native PyTorch counterpart differ (outputs or parameters)
KERAS_VS_NATIVE = ("keras-vs-native", "parameter-counts")


def load_parity(results_dir: Path | None) -> dict[str, Any] | None:
    """The parity file of a results folder; None where `make parity` has not run there."""
    found = Path(results_dir) / "parity" / "parity.json" if results_dir is not None else None
    if found is None or not found.is_file():
        return None
    return json.loads(found.read_text())


def float32_parity_runs(results_dir: Path | None) -> list[dict[str, Any]]:
    """Every float32 run of `make parity` kept in a results folder (parity.json, parity-<profile>.json): a function
    that differs at one profile's shapes differs at every one (at smoke widths some differences are too small to
    show). A bfloat16 run's failures are its precision's, not the functions'."""
    folder = Path(results_dir) / "parity" if results_dir is not None else None
    if folder is None or not folder.is_dir():
        return []
    runs = [json.loads(path.read_text()) for path in sorted(folder.glob("parity*.json"))]
    return [run for run in runs if (run.get("provenance") or {}).get("dtype", "float32") == "float32"]


def keras_native_differences(results_dir: Path | None) -> dict[str, list[str]]:
    """Per model, why `make parity` found its Keras 3 and native PyTorch sides to differ, at which profile's shapes
    (empty: none found). A failed output that passes when checked again under its stated cause (a check of the same
    model and output named "<output> ...", as Mistral's logits against float16-rounded weights: the converter's
    rounding, not another function) is explained, not a difference of the models."""
    # A why reads "<what differs>: <its cause>"; the outputs of one cause (a model's submodules' parameter counts)
    # are said once, each output's figure beside it.
    found: dict[str, dict[tuple[str, str], dict[str, str]]] = {}
    for run in float32_parity_runs(results_dir):
        checks, profile = run.get("checks") or [], (run.get("provenance") or {}).get("profile", "smoke")
        rechecked = {(c.get("check"), c.get("model"), c.get("output")) for c in checks if c.get("status") == "pass"}
        for check in checks:
            kind, model, output = check.get("check"), check.get("model"), str(check.get("output") or "")
            explained = any(k == kind and m == model and str(o).startswith(output + " ") for k, m, o in rechecked)
            if kind in KERAS_VS_NATIVE and check.get("status") == "fail" and not explained:
                why = check.get("why") or f"{check.get('output')} outside {check.get('tolerance')}"
                what, _, cause = why.partition(": ")
                found.setdefault(model, {}).setdefault((profile, cause), {}).setdefault(what, output)
    out: dict[str, list[str]] = {}
    for model, causes in found.items():
        for (profile, cause), whats in causes.items():
            what = next(iter(whats)) if len(whats) == 1 else ", ".join(f"{w} ({o})" for w, o in whats.items())
            out.setdefault(model, []).append(f"at {profile} shapes: {what}" + (f": {cause}" if cause else ""))
    return out


def parity_lines(results_dir: Path, out_dir: Path) -> list[str]:
    """`make parity`'s tally and its failures, one line each, linked to its page; none where it has not run."""
    data = load_parity(results_dir)
    if data is None:
        return []
    checks, provenance = data.get("checks") or [], data.get("provenance") or {}
    tally = ", ".join(f"{sum(c.get('status') == s for c in checks)} {s}" for s in ("pass", "fail", "not checked"))
    link = Path(os.path.relpath(results_dir / "PARITY.md", out_dir)).as_posix()
    kept = provenance.get("kept")  # a run narrowed by MODEL= keeps the other models' lines of the run before it
    when = provenance.get("date") or "undated"
    if kept:
        dates = " and ".join(str(run.get("date") or "an undated run") for run in kept.get("runs") or [])
        when += f"; {kept['lines']} of its lines from earlier runs: {dates}"
    lines = [
        f"Whether the sides compute the same function, shown by their outputs on shared weights (`make parity`, "
        f"{when}): {tally}. All lines, tolerances and what is unchecked: "
        f"[PARITY.md]({link}).",
        "",
    ]
    return lines + [
        f"- fail: {c.get('check')} {c.get('model')} {c.get('output')}: {c.get('why') or 'outside its tolerance'}"
        for c in checks
        if c.get("status") == "fail"
    ]
