"""The machine's noise file, read beside the judge: the process-to-process spread a cell of one process borrows for
its interval (bench/base/stats.py MACHINE_SPREAD) and the run-to-run spread separate runs carry.

One file per processor under <results>/noise/: `<machine slug>--<processor fingerprint>.json` (the slug alone where
the processor was not recorded). This module only finds and reads it; the noise study, bench/studies/noise/run.py, makes
it.
"""
from __future__ import annotations

import functools
import json
import math
import statistics
from pathlib import Path
from typing import Any

from bench.base.provenance import REPO_ROOT, hardware_slug
from bench.base.stats import ProcessSpread

NOISE_DIR = "noise"
NOISE_FORMAT = "noise-1"


def processor_fingerprint(machine: dict[str, Any]) -> str | None:
    """The fingerprint of the processor a result ran on (bench/base/provenance.py processor_info); None before it was
    recorded."""
    return ((machine or {}).get("processor") or {}).get("fingerprint")


def noise_file_name(machine: dict[str, Any]) -> str:
    fingerprint = processor_fingerprint(machine)
    return f"{hardware_slug(machine)}--{fingerprint[:12]}.json" if fingerprint else f"{hardware_slug(machine)}.json"


def noise_folders(results_dir: Path | None) -> list[Path]:
    """Where a machine's noise file is looked for: the results folder's own, then those of the folders that hold it
    (a folder inside a results folder, such as a study's runs or one side of a compare, is judged by that results
    folder's studies, wherever it lies), then the repository's results/."""
    folders: list[Path] = []
    if results_dir is not None:
        here = Path(results_dir).resolve()
        folders = [here / NOISE_DIR] + [folder / NOISE_DIR for folder in here.parents if (folder / NOISE_DIR).is_dir()]
    default = (REPO_ROOT / "results" / NOISE_DIR).resolve()
    return folders + ([default] if default not in folders else [])


def find_noise_file(results_dir: Path | None, machine: dict[str, Any]) -> tuple[Path, bool] | None:
    """The noise file for a result's machine, and whether it matched on the processor's fingerprint (True) or, for a
    result that recorded none, on the machine's label only (False). None: no study for this machine."""
    fingerprint = processor_fingerprint(machine)
    slug = hardware_slug(machine or {})
    for folder in noise_folders(results_dir):
        if not folder.is_dir():
            continue
        if fingerprint:
            exact = folder / noise_file_name(machine)
            if exact.is_file():
                return exact, True
            continue  # another processor's study does not describe this one
        bare = folder / f"{slug}.json"
        labelled = sorted(folder.glob(f"{slug}--*.json")) + ([bare] if bare.is_file() else [])
        if labelled:
            return labelled[-1], False
    return None


def read_noise_file(path: Path) -> dict[str, Any]:
    data = json.loads(Path(path).read_text())
    if not isinstance(data, dict) or data.get("format") != NOISE_FORMAT:
        raise ValueError(f"{path}: not a noise study file ({NOISE_FORMAT})")
    return data


def read_study(path: Path) -> dict[str, Any]:
    """A noise study as the judge's readers take it (read only: the same dict each time): parsed once while the file
    is unchanged, since a table asks each machine's spread, run spread and quiet reading of the same files."""
    stat = Path(path).stat()
    return _parsed(str(Path(path).resolve()), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=64)
def _parsed(path: str, mtime_ns: int, size: int) -> dict[str, Any]:
    return read_noise_file(Path(path))


def machine_spread(
    results_dir: Path | None, machine: dict[str, Any], profile: str | None = None, key: str | None = None
) -> ProcessSpread | None:
    """The process-to-process spread a cell of one process borrows, from the machine's noise studies (the latest
    first, then its earlier ones): only from a study of the cell's own profile, since a smoke cell's spread says
    nothing of a full-size one's; the cell's own spread where the study measured that cell (its model, task and batch),
    else the widest of the study's cells. None: no study of this profile on this machine (the cell decides nothing).
    `profile` None: the latest study's, whatever its profile."""
    found = find_noise_file(results_dir, machine)
    if found is None:
        return None
    path, exact = found
    for study_path in study_files(path):
        try:
            study = read_study(study_path)
            if profile is not None and (study.get("settings") or {}).get("profile") != profile:
                continue
            return borrowed_spread(study, key, study_path.name, exact)
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return None


def borrowed_spread(study: dict[str, Any], key: str | None, name: str, exact: bool) -> ProcessSpread:
    """The spread a one-process cell borrows from `study`: the cell's own where the study measured it (with two
    processes or more a round), else the study's widest."""
    label = "" if exact else "; matched by machine label, processor not recorded"
    profile = (study.get("settings") or {}).get("profile")
    own = next((c for c in study.get("cells") or [] if key and c.get("key") == key and c.get("dof")), None)
    if own is not None:
        return ProcessSpread(float(own["log_sd"]), float(own["dof"]), f"make noise, {name}: this cell's own, {profile}"
                             f" profile{label}")  # fmt: skip
    spread = study["process_spread"]
    return ProcessSpread(float(spread["log_sd"]), float(spread["dof"]),
                         f"make noise, {name}: the widest of its {profile} cells{label}")  # fmt: skip


def study_files(path: Path) -> list[Path]:
    """A machine's noise study and its earlier ones (history/<stem>.<stamp>.json): each a separate invocation."""
    return [path, *sorted((path.parent / "history").glob(f"{path.stem}.*.json"))]


def readable_studies(path: Path) -> list[dict[str, Any]]:
    """A machine's study and its earlier ones (study_files), those that read (read only: read_study's dicts)."""
    studies = []
    for study in study_files(path):
        try:
            studies.append(read_study(study))
        except (OSError, ValueError):
            continue
    return studies


def median_logs(medians: list[Any]) -> list[float]:
    """ln of each process's median that was measured (a number above zero)."""
    return [math.log(m) for m in medians if isinstance(m, (int, float)) and m > 0]


def round_logs(cell: dict[str, Any]) -> list[tuple[int | None, list[float]]]:
    """A study cell's A/A rounds in order, each one run of identical code: (its number, None where a file names none;
    ln(a process's median), both sides)."""
    def both_sides(found: dict[str, Any]) -> list[Any]:
        return [m for side in ("A", "B") for m in (found.get("medians_ms") or {}).get(side, [])]

    return [(found.get("round"), median_logs(both_sides(found))) for found in cell.get("rounds") or []]


def run_groups(study: dict[str, Any]) -> dict[str, list[list[float]]]:
    """Each cell's separate runs of identical code in a study, as lists of ln(a process's median): every A/A round
    (both sides, one run), and the untouched side A of every delay pair (each pair its own run)."""
    groups: dict[str, list[list[float]]] = {}

    def add(key: str, logs: list[float]) -> None:
        if len(logs) >= 2:
            groups.setdefault(key, []).append(logs)

    for cell in study.get("cells") or []:
        for _, logs in round_logs(cell):
            add(cell["key"], logs)
    for row in study.get("detection") or []:
        for pair in row.get("pairs") or []:
            add(row["key"], median_logs((pair.get("medians_ms") or {}).get("A", [])))
    return groups


def run_variance_of(studies: list[dict[str, Any]]) -> tuple[float, int, int, int] | None:
    """The run-to-run variance of a cell's figure beyond its processes' (run_spread_of), before its floor at zero:
    (variance, degrees of freedom, the most runs a cell had, cells); None without two runs of a cell."""
    runs: dict[str, list[list[float]]] = {}
    for study in studies:
        for key, groups in run_groups(study).items():
            runs.setdefault(key, []).extend(groups)
    weighted, dof, most, cells = 0.0, 0, 0, 0
    for groups in runs.values():
        if len(groups) < 2:
            continue
        most, cells = max(most, len(groups)), cells + 1
        within = sum(statistics.variance(g) * (len(g) - 1) for g in groups) / sum(len(g) - 1 for g in groups)
        between = statistics.variance([statistics.fmean(g) for g in groups])
        weighted += (between - statistics.fmean(within / len(g) for g in groups)) * (len(groups) - 1)
        dof += len(groups) - 1
    if not dof:
        return None
    return weighted / dof, dof, most, cells


def run_spread_of(studies: list[dict[str, Any]]) -> tuple[float, int, int, int] | None:
    """The run-to-run spread of a cell's figure beyond its processes': per cell, the variance of its runs' mean
    ln(median) (every A/A round and every delay pair's untouched side is a separate stretch of the machine's time;
    the studies, separate invocations) less the mean of the within-run process variance over each run's processes;
    pooled over cells by their runs less one, and floored at zero. Returns (log sd, degrees of freedom, the most runs
    a cell had, cells); None without two runs of a cell."""
    found = run_variance_of(studies)
    if found is None:
        return None
    variance, dof, most, cells = found
    return math.sqrt(max(variance, 0.0)), dof, most, cells


def machine_run_spread(results_dir: Path | None, machine: dict[str, Any]) -> ProcessSpread | None:
    """The machine's run-to-run spread from its noise studies (this one's and the earlier ones), which a comparison
    of cells measured in separate runs carries; None without a study of two rounds or more."""
    found = find_noise_file(results_dir, machine)
    if found is None:
        return None
    path, exact = found
    studies = readable_studies(path)
    spread = run_spread_of(studies)
    if spread is None:
        return None
    log_sd, dof, rounds, cells = spread
    source = (f"make noise, up to {rounds} runs of each of {cells} cells in {len(studies)} studies, {path.name}"
              + ("" if exact else "; matched by machine label, processor not recorded"))  # fmt: skip
    return ProcessSpread(log_sd, float(dof), source)


def machine_quiet_reference(results_dir: Path | None, machine: dict[str, Any]) -> tuple[float, str] | None:
    """The machine's quiet drift-probe reading (ms): the lowest its noise studies saw (`conditions.drift_probe_ms
    .quietest`), with where it came from; None without a study that recorded one."""
    found = find_noise_file(results_dir, machine)
    if found is None:
        return None
    readings = []
    for study in study_files(found[0]):
        try:
            quietest = ((read_study(study).get("conditions") or {}).get("drift_probe_ms") or {}).get("quietest")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(quietest, (int, float)) and quietest > 0:
            readings.append(float(quietest))
    return (min(readings), f"make noise, {found[0].name}") if readings else None
