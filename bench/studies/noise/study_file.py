"""A noise study's file: one per processor under <results>/noise/, an earlier one moved to history/ (never
overwritten), NOISE.md rendered beside it; and the line that sums it up."""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from bench.base import stats
from bench.base.atomic import write_json_atomic
from bench.judge.noise_file import NOISE_DIR, noise_file_name, read_noise_file
from bench.record.results import HISTORY, reserve_new_name
from bench.studies.noise.spec import AA, PARTS, PROBE


def write_study(results_dir: Path, data: dict[str, Any]) -> Path:
    """<results>/noise/<machine>--<fingerprint>.json, written atomically; an earlier study of the same processor
    moves to <results>/noise/history/ first (never overwritten); NOISE.md rendered beside it."""
    from bench.studies.noise.page import render_noise

    folder = Path(results_dir) / NOISE_DIR
    path = folder / noise_file_name(data["machine"])
    if path.exists():
        try:
            stamp = str(read_noise_file(path)["created_at"]).replace(":", "").replace("+", "Z")
        except (OSError, ValueError, KeyError):  # not a readable study: named by when it was written
            stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(path.stat().st_mtime))
        archived = reserve_new_name(folder / HISTORY, f"{path.stem}.{stamp}")
        os.replace(path, archived)
    write_json_atomic(path, data)
    render_noise(results_dir)
    return path


def summary_line(data: dict[str, Any]) -> str:
    aa, spread, mde = data["aa"], data["process_spread"], data["mde"]["calibration"]
    ran = data.get("parts") or PARTS
    parts = []
    if AA in ran:
        wrong = aa[stats.FASTER] + aa[stats.SLOWER]
        parts += [
            f"A/A: {wrong} of {aa['pairs']} identical pairs called different ({aa[stats.SAME]} same, "
            f"{aa[stats.INCONCLUSIVE]} inconclusive)",
            f"process spread {spread['log_sd']:.2%} (largest cell, dof {spread['dof']})" if spread
            else "no process spread",
        ]
    if PROBE in ran:
        parts.append(f"minimum detectable slowdown +{mde['slowdown']:.0%}" if mde["slowdown"] is not None
                     else mde["note"])
    for row in data.get("detection") or []:
        within, across, pooled = row["within"], row["across"], row.get("pooled") or {}
        several = (f", {pooled['detected']} of {pooled['pairs']} with {pooled['runs_a_side']} runs a side"
                   if pooled.get("pairs") else "")
        parts.append(f"+{row['share']:.0%} on {row['key']}: slower in {within['detected']} of {within['pairs']} "
                     f"pairs inside a run, {across['detected']} of {across['pairs']} across runs{several} "
                     f"({within['wrong'] + across['wrong'] + pooled.get('wrong', 0)} wrong)")
    parts.append(data["conditions"]["label"])
    if loaded := data.get("power_under_load"):
        rows = loaded["power"]
        wrong = sum(row["wrong"] for row in rows)
        parts.append(f"under {loaded['busy_processes']} busy loops: {wrong} of {sum(r['pairs'] for r in rows)} "
                     "probe pairs wrong")
    return "; ".join(parts)
