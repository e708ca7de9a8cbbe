"""The orchestrator's side of the ceilings probe (bench/measure/ceiling_probe.py), and a machine's ceilings file.

Once per run, beside the drift probe (bench/run/runner.py), `measure_run` records in every result's provenance
(`provenance.ceilings`):

- `host`: the framework-free probe (NumPy's float32 matmul and triad) in the orchestrator's own process, about a
  second; always.
- one entry per framework the run's cells use (torch, jax, tensorflow), each measured through that framework's
  own kernels in the first of the run's envs that has it, as a subprocess (a second or two plus the import): on a
  machine with a GPU, where the framework's kernels are the ceiling and a run takes hours; on a CPU when asked
  (BENCH_CEILINGS=1; BENCH_CEILINGS=0 turns them off on a GPU), since a smoke run's cells take seconds each and
  the imports would dwarf them.
- `datasheet`: the GPU's datasheet peaks where its name is known (bench/catalogue/hardware.py).

`python -m bench ceilings` (`make ceilings`) measures every built env's framework and writes
results/ceilings/<machine>.json: the figures MFU is taken against for results that recorded none (those run before
this probe existed, such as the committed full-size CPU results); the report says which source each figure used.
The file records the machine's processor (bench/base/provenance.py processor_info): hosts that share a label can hold
different processors, and a file measured on another processor than a result's is not used for it (it says so).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bench.base.atomic import write_json_atomic
from bench.base.provenance import REPO_ROOT, git_info, hardware_slug, machine_info, machine_label, machine_slug, now_utc
from bench.base.resultsdir import results_folder
from bench.base.runlock import holds_results_folder
from bench.catalogue.backends import cell_environment, get_backend
from bench.catalogue.hardware import datasheet_for
from bench.judge import processor_differences
from bench.measure.ceiling_probe import PREFIX, measure

FOLDER = "ceilings"  # under the results folder: not result files (bench/record/results.py NOT_RESULTS)
TIMEOUT_S = 180
ENABLE = "BENCH_CEILINGS"


def frameworks_wanted(machine: dict) -> bool:
    """Framework probes on a GPU machine, or when asked; a CPU run takes only the host probe unless asked."""
    setting = os.environ.get(ENABLE, "").strip().lower()
    if setting in ("0", "no", "false"):
        return False
    return bool(machine.get("gpus")) or setting in ("1", "yes", "true")


def run_probe(backend: str, python: Path, framework: str) -> dict:
    """The framework's probe in an env's python (the backend's cell variables set), or {"error": why}."""
    env = {**os.environ, **cell_environment(backend)}
    cmd = [str(python), "-m", "bench.measure.ceiling_probe", framework]
    try:
        out = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"framework": framework, "error": f"{type(e).__name__}: {e}"[:300]}
    line = next((text for text in out.stdout.splitlines() if text.startswith(PREFIX)), None)
    if line is None:
        tail = " | ".join(out.stderr.strip().splitlines()[-2:])
        return {"framework": framework, "error": f"the probe printed no figures (exit {out.returncode}): {tail}"[:300]}
    return {**json.loads(line[len(PREFIX) :]), "env": backend}


def first_envs(backend_pythons: dict[str, Path]) -> dict[str, tuple[str, Path]]:
    """framework -> (backend, python) of the first backend using it."""
    out: dict[str, tuple[str, Path]] = {}
    for backend, python in backend_pythons.items():
        out.setdefault(get_backend(backend).framework, (backend, python))
    return out


def measure_run(backend_pythons: dict[str, Path], machine: dict, echo=None, frameworks: bool | None = None) -> dict:
    """What a run records: the host probe, the frameworks' (`frameworks`, else frameworks_wanted) and a known GPU's
    datasheet."""
    out: dict = {"host": measure("numpy")}
    if frameworks_wanted(machine) if frameworks is None else frameworks:
        for framework, (backend, python) in sorted(first_envs(backend_pythons).items()):
            out[framework] = run_probe(backend, python, framework)
    gpus = machine.get("gpus") or []
    sheet = datasheet_for(gpus[0].get("name")) if gpus else None
    if sheet:
        out["datasheet"] = sheet.to_dict()
    if echo:
        echo("ceilings probe (bench/measure/ceiling_probe.py): " + summary(out))
    return out


def summary(ceilings: dict) -> str:
    parts = []
    for name, entry in ceilings.items():
        if name == "datasheet" or not isinstance(entry, dict):
            continue
        if "error" in entry:
            parts.append(f"{name}: {entry['error'][:80]}")
            continue
        mm = ", ".join(f"{d} {v['median'] / 1e9:.0f} GFLOP/s" for d, v in (entry.get("matmul") or {}).items())
        parts.append(f"{name}: {mm}, triad {entry['triad']['median'] / 1e9:.1f} GB/s")
    return "; ".join(parts)


def machine_file(results_dir: Path, machine: dict) -> Path:
    return Path(results_dir) / FOLDER / f"{machine_slug(machine)}.json"


def figures(entry: dict | None) -> dict:
    """A probe entry's medians: {dtype: matmul FLOP/s, "triad": bytes/s}; empty for a failed probe."""
    if not isinstance(entry, dict) or "error" in entry:
        return {}
    return {
        **{d: v["median"] for d, v in (entry.get("matmul") or {}).items()},
        "triad": (entry.get("triad") or {}).get("median"),
    }


def best_of(probes: list[dict]) -> dict:
    """Per probe (host, each framework): the repeat whose float32 matmul median was highest. On a machine others
    share, each repeat's median still carries their load; the best of a few is the nearest to what it can do."""
    out = dict(probes[0])
    for name in probes[0]:
        if name != "datasheet":
            out[name] = max((p.get(name) for p in probes), key=lambda e: figures(e).get("float32") or 0.0)
    return out


@holds_results_folder
def measure_machine(results_dir: Path, venvs: Path, echo=print, repeats: int = 3) -> Path:
    """`make ceilings`: every built env's framework probe (the first env of each framework) and the host's, `repeats`
    times, the best of each kept (best_of) with every repeat's medians beside it, written to
    results/ceilings/<machine>.json; an earlier file moves aside to <name>.<its created_at>.json."""
    from bench.catalogue.backends import BACKENDS

    machine = machine_info()
    pythons = {b: venvs / b / "bin" / "python" for b in BACKENDS if (venvs / b / "bin" / "python").exists()}
    probes = [measure_run(pythons, machine, echo=echo, frameworks=True) for _ in range(repeats)]
    data = {
        "machine_label": machine_label(machine),
        "machine": machine,  # its `processor` too: a file is used only for results of the same processor
        "created_at": now_utc(),
        "provenance": {"git": git_info()},  # the code that measured: a ceilings file names its commit as a result does
        "budget_s": float(os.environ.get("BENCH_PROBE_BUDGET_S") or 0) or None,
        "load_average": list(os.getloadavg()),
        "repeats": repeats,
        "ceilings": best_of(probes),
        "all_medians": {name: [figures(p.get(name)) for p in probes] for name in probes[0] if name != "datasheet"},
    }
    path = machine_file(results_dir, machine)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        old = json.loads(path.read_text()).get("created_at", "earlier").replace(":", "")
        os.replace(path, path.with_name(f"{path.stem}.{old}.json"))
    write_json_atomic(path, data)
    return path


def candidate_file(results_dir: Path, machine: dict) -> Path:
    """The file of the machine's own name if there is one; else the file of its hardware's name, written before names
    carried the processor (checked against the result's processor by the caller); for a result that recorded no
    processor, the newest file of its hardware's name with any processor's tag."""
    own, folder = machine_file(results_dir, machine), Path(results_dir) / FOLDER
    if own.is_file():
        return own
    legacy = folder / f"{hardware_slug(machine)}.json"
    if legacy.is_file() or (machine or {}).get("processor"):
        return legacy
    tagged = sorted(folder.glob(f"{hardware_slug(machine)}--*.json"), key=lambda p: p.stat().st_mtime)
    return tagged[-1] if tagged else legacy


def machine_file_for(results_dir: Path, machine: dict) -> tuple[dict | None, str | None]:
    """The machine file for a result's machine (its folder name, bench/base/provenance.py machine_slug; else the file of
    its hardware's name, from before names carried the processor) and a note on
    the match: (None, why) where the file was measured on another processor than the result's (two hosts of one
    label can differ: its ceilings are not this host's, so they are not used); (file, why) where one side recorded
    no processor, so the match stands on the label alone; (file, None) for the same processor; (None, None) without
    a file."""
    path = candidate_file(results_dir, machine)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None, None
    if not isinstance(data, dict):
        return None, None
    theirs = data.get("machine") or {}
    if not (theirs.get("processor") and (machine or {}).get("processor")):
        side = "the file" if not theirs.get("processor") else "the result"
        return data, f"{path} matched by the machine's label only ({side} recorded no processor)"
    differences = processor_differences(theirs, machine)
    if differences:
        return None, f"{path} not used: measured on another processor ({'; '.join(differences)})"
    return data, None


_said: set[str] = set()


def load_machine_file(results_dir: Path, machine: dict) -> dict | None:
    """The ceilings a machine's file holds (the newest), or None; a file measured on another processor than the
    result's is not used, and that is said on stderr (once per file and processor) so no report goes silent."""
    data, note = machine_file_for(results_dir, machine)
    if data is None and note and note not in _said:
        _said.add(note)
        print(f"warning: {note}", file=sys.stderr)
    return data


def main(argv: list[str] | None = None) -> int:
    import argparse

    from bench.base.provenance import venvs_dir

    parser = argparse.ArgumentParser(
        prog="python -m bench ceilings",
        description="Measure this machine's ceilings in every built env (make ceilings).",
    )
    parser.add_argument("--results-dir", type=results_folder, default=REPO_ROOT / "results")
    parser.add_argument("--budget-s", type=float, default=1.0, help="seconds per figure (the run's probe takes 0.25)")
    args = parser.parse_args(argv)
    os.environ["BENCH_PROBE_BUDGET_S"] = str(args.budget_s)  # read by the probe, here and in each env's subprocess
    path = measure_machine(args.results_dir, venvs_dir())
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
