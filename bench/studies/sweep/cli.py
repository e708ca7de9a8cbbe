"""`python -m bench.studies.sweep sweep|bisect|report`: the front door of `make sweep`, `make bisect` (docs/STUDIES.md).

What to measure is a study file (bench/studies/sweep/studies/*.toml: the package, its versions, one part per backend) or
the command line: a benchmark cell (--backend --model --task), or one function of the package (--call module:function).
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from dataclasses import replace
from pathlib import Path

from bench.base import stats
from bench.base.argtypes import batch_count, process_count, step_count
from bench.base.errors import BenchError
from bench.base.exit_status import exit_status
from bench.base.provenance import REPO_ROOT
from bench.base.resultsdir import results_folder
from bench.studies.sweep.derive import LOCKS_DIR, VENVS_DIR, valid_version
from bench.studies.sweep.run import Part, Sweep
from bench.studies.sweep.targets import CallTarget, CellTarget, OverheadTarget

STUDIES_DIR = Path(__file__).resolve().parent / "studies"


def csv(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def study_path(text: str) -> Path:
    """A study file: a path (its .toml may be left out, as the usage line shows it) or a committed study's name."""
    for path in (Path(text), Path(f"{text}.toml"), STUDIES_DIR / f"{text}.toml"):
        if path.is_file():
            return path
    known = ", ".join(p.stem for p in sorted(STUDIES_DIR.glob("*.toml")))
    raise BenchError(f"no study file {text!r}: name one of the committed studies ({known}) or a study file's path")


STUDY_FORM = (
    "a study file names name, package and versions, then one [[part]] or more, each with backend and its target's "
    "fields (overhead: columns, benchmarks; call: call = \"module:function\"): see bench/studies/sweep/studies/"
)


def load_study(path: Path, versions: list[str] | None = None, processes: int | None = None) -> Sweep:
    try:
        return read_study(path, versions, processes)
    except KeyError as e:
        raise BenchError(f"{path}: no {e.args[0]}: {STUDY_FORM}") from None
    except (tomllib.TOMLDecodeError, TypeError, AttributeError) as e:
        raise BenchError(f"{path}: not a study file ({e}): {STUDY_FORM}") from None


def read_study(path: Path, versions: list[str] | None = None, processes: int | None = None) -> Sweep:
    data = tomllib.loads(path.read_text())
    parts = []
    for part in data["part"]:
        kind = part.get("target", "overhead")
        if kind == "overhead":
            target = OverheadTarget(part["backend"], part["columns"], part["benchmarks"], part.get("size", "sweep"))
        elif kind == "call":
            target = CallTarget(part["backend"], part["call"], part.get("warmup", 2), part.get("timed", 20))
        else:
            raise BenchError(f"{path}: unknown target {kind!r} (overhead or call; a cell: the command line)")
        parts.append(Part(target, part.get("drop", []), part.get("keep", [])))
    return Sweep(
        data["name"],
        data["package"],
        versions or data["versions"],
        parts,
        processes or data.get("processes", 3),
        f"make sweep STUDY={path.stem}",
    )


def command_line_sweep(args) -> Sweep:
    if not (args.package and args.versions is not None and args.backend):
        raise BenchError("name PACKAGE=, VERSIONS= and BACKEND= (and MODEL= TASK=, or CALL=), or a STUDY= file")
    base_dir = Path(args.base_dir) if args.base_dir else None
    if args.call:
        target = CallTarget(args.backend, args.call, args.warmup, args.timed)
        label = args.call.split(":")[1]
    else:
        from bench.catalogue.registry import plan_cells

        if not (args.model and args.task):
            raise BenchError("a cell sweep needs MODEL= and TASK= (or CALL=module:function)")
        cells = plan_cells(
            args.profile,
            [args.backend],
            [args.model],
            [args.task],
            args.batch_size,
            [args.variant] if args.variant else None,
            args.steps,
        )
        if len(cells) != 1:
            raise BenchError(f"the sweep measures one cell; these name {len(cells)}: narrow with VARIANT= or BATCH=")
        target = CellTarget(cells[0], args.timeout)
        label = f"{args.model}-{args.task}"
    name = args.name or f"{args.package}-{args.backend}-{label}"
    drop, keep = csv(args.drop or ""), csv(args.keep or "")
    return Sweep(
        name, args.package, args.versions, [Part(target, drop, keep, base_dir)], args.processes, " ".join(sys.argv)
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.studies.sweep", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("sweep", "bisect"):
        sub = commands.add_parser(name)
        sub.add_argument("--study", help="a study file (bench/studies/sweep/studies/<name>.toml or a path)")
        sub.add_argument("--package")
        sub.add_argument("--backend", help="the env whose lock the versions derive from (a test: any name)")
        sub.add_argument(
            "--base-dir", help="that env's folder (pyproject.toml, requirements.txt); default envs/<backend>"
        )
        sub.add_argument("--model")
        sub.add_argument("--task")
        sub.add_argument("--variant")
        sub.add_argument("--batch-size", type=batch_count)
        sub.add_argument("--profile", default="smoke")
        sub.add_argument("--steps", type=step_count, help="a cell's timed steps (fixed)")
        sub.add_argument("--call", help="module:function of the package, timed call by call")
        sub.add_argument("--warmup", type=int, default=2, help="--call: warm-up calls")
        sub.add_argument("--timed", type=int, default=20, help="--call: timed calls")
        sub.add_argument("--drop", help="comma list: top-level requirements of the env left out")
        sub.add_argument("--keep", help="comma list: packages of the env's lock kept though nothing declares them")
        sub.add_argument("--processes", type=process_count, help="processes per version (default: the study's, else 3)")
        sub.add_argument("--max-processes", type=process_count,
                         help="more processes, up to this many, for the versions of a comparison still undecided "
                         "(default: twice --processes; equal to it: a fixed count)")
        sub.add_argument("--name", help="the results' folder name under <results>/sweep/")
        sub.add_argument("--timeout", type=float, default=1800.0, help="seconds per process")
        sub.add_argument("--results-dir", type=results_folder, default=REPO_ROOT / "results")
        sub.add_argument("--locks-dir", type=Path, default=LOCKS_DIR)
        sub.add_argument("--venvs-dir", type=Path, default=VENVS_DIR)
        if name == "sweep":
            sub.add_argument("--versions", type=lambda t: [valid_version(v) for v in csv(t)])
        else:
            sub.add_argument("--good", required=True, type=valid_version)
            sub.add_argument("--bad", required=True, type=valid_version)
            sub.add_argument(
                "--key",
                help="the result key judged (default: the target's first; e.g. "
                "llm_forward__keras_torch_eager), or A/B: A over B paired in each process",
            )
            sub.add_argument("--faster", action="store_true", help="look for the first faster release (an improvement)")
            sub.set_defaults(versions=[])
    report = commands.add_parser("report")
    report.add_argument("--results-dir", type=results_folder, default=REPO_ROOT / "results")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return exit_status(
        lambda: sweep_command(args),
        refusals=(BenchError, ValueError),
        on_stop=lambda: print("stopped: the processes finished so far are written", file=sys.stderr),
    )  # Ctrl-C or a signal (bench/base/lifetime.py): finished results are kept


def sweep_command(args: argparse.Namespace) -> int:
    from bench.studies.sweep.page import render_sweeps

    if args.command == "report":
        print(f"wrote {render_sweeps(args.results_dir)}")
        return 0
    if args.command == "sweep" and args.versions == []:  # VERSIONS=, once swept nothing and exited 0
        raise BenchError("VERSIONS= names no version: give them as a,b,c")
    if args.processes is not None and args.processes < 1:
        raise BenchError(f"--processes must be at least 1, got {args.processes}")
    sweep = (
        load_study(study_path(args.study), args.versions or None, args.processes)
        if args.study
        else command_line_sweep(args)
    )
    if args.max_processes is not None:
        if args.max_processes < sweep.processes:
            raise BenchError(f"--max-processes ({args.max_processes}) must be at least --processes "
                             f"({sweep.processes})")
        sweep = replace(sweep, max_processes=args.max_processes)
    options = {"locks_dir": args.locks_dir, "venvs_dir": args.venvs_dir, "timeout_s": args.timeout}
    from bench.studies.sweep.index import use_configured_index

    use_configured_index()  # the envs resolve and build from the index the user configured, as the bisect lists
    from bench.base.lifetime import stop_on_signals

    stop_on_signals()  # TERM, HUP, INT (to it, or to the make that started it) end the process it runs too
    if args.command == "sweep":
        from bench.studies.sweep.run import run_sweep

        run_sweep(sweep, args.results_dir, **options)
    else:
        from bench.studies.sweep.bisect import run_bisect

        key = args.key or sweep.parts[0].target.keys()[0]
        if len(sweep.parts) > 1:
            raise BenchError(
                "a bisect judges one part: name a study with one part, or the cell on the command line"
            )
        if any(k not in sweep.parts[0].target.keys() for k in key.split("/")):
            raise BenchError(f"--key {key!r} is none of {', '.join(sweep.parts[0].target.keys())}")
        sweep.name = args.name or f"bisect-{sweep.name}-{args.good}-{args.bad}"
        change = stats.FASTER if args.faster else stats.SLOWER
        run_bisect(sweep, key, args.good, args.bad, args.results_dir, change=change, **options)
    print(f"wrote {render_sweeps(args.results_dir)}")
    return 0
