"""The argument parser of `python -m bench`: one small builder per command, the arguments they share declared once."""
from __future__ import annotations

import argparse
from pathlib import Path

from bench.base.argtypes import (
    OneLineErrors,
    batch_count,
    budget_minutes,
    csv_list,
    listing,
    non_negative_int,
    positive_int,
    process_count,
    step_count,
)
from bench.base.resultsdir import add_results_dir, results_folder
from bench.catalogue.backends import BACKENDS
from bench.catalogue.profiles import profiles
from bench.catalogue.registry import MODELS
from bench.catalogue.spec import TASKS
from bench.catalogue.variants import TUNING
from bench.run.cluster import cli as cluster_cli
from bench.studies.registry import STUDY_HELP

# Backends run in more than one way (bench/catalogue/backends.py Backend.variants), e.g. "native-torch: eager and/or
# compiled".
VARIANT_HELP = "; ".join(f"{b.name}: {listing(b.variants)}" for b in BACKENDS.values() if len(b.variants) > 1) + (
    "; tuning variants, only where they apply (bench/catalogue/variants.py): " + ", ".join(TUNING))



def build_parser(passed_on: dict[str, str] | None = None) -> argparse.ArgumentParser:
    """The front door's parser; `passed_on`: the verbs whose own parser reads the rest of the line, each with its help
    (bench/cli.py PASSED_ON_HELP; default the studies' alone), listed in its help."""
    parser = OneLineErrors(prog="python -m bench", description="Keras 3 benchmarks, re-run reproducibly.")
    sub = parser.add_subparsers(dest="command", required=True)
    add_run_parser(sub)
    add_plan_parser(sub)
    add_cell_parser(sub)
    add_validate_parser(sub)
    add_clean_results_parser(sub)
    add_table_parser(sub)
    add_doctor_parser(sub)
    add_export_parser(sub)
    add_compare_parser(sub)
    cluster_cli.add_parsers(sub)  # submit, submit-status
    for verb, text in (STUDY_HELP if passed_on is None else passed_on).items():  # each reads the rest of the line
        sub.add_parser(verb, help=text.replace("%", "%%"), add_help=False)
    return parser


def add_run_parser(sub) -> None:
    run = sub.add_parser("run", help="run benchmark cells (all of the published table unless narrowed)")
    run.add_argument("--backend", type=csv_list, help=f"one or more of: {', '.join(BACKENDS)} (default: all)")
    run.add_argument("--model", type=csv_list, help=f"one or more of: {', '.join(MODELS)} (default: all)")
    run.add_argument("--task", type=csv_list, help=f"{listing(TASKS)} (default: every task of the model)")
    run.add_argument("--variant", type=csv_list, help=f"{VARIANT_HELP} (default: each backend's own)")
    run.add_argument("--batch-size", type=batch_count, help="override the profile's batch size")
    run.add_argument(
        "--profile", help=f"{listing(profiles(), 'or')} (default: paper when a CUDA GPU is visible, else smoke)"
    )
    run.add_argument(
        "--steps",
        type=step_count,
        help="a fixed count of timed steps (default: the profile's sampling: its fewest steps, then until the "
        "median's 95%% interval is within its target, up to its cap)",
    )
    run.add_argument(
        "--exact",
        action="store_true",
        help="the published procedure, for an exact reproduction: 100 timed steps after the first and the warm-up, one "
        "process a cell (paper profile; the default samples to a precision, with more processes)",
    )
    run.add_argument("--warmup", type=non_negative_int, help="warm-up steps after the first (default: the profile's)")
    run.add_argument(
        "--repeats", type=process_count,
        help="processes per cell, interleaved across the cells (default: the profile's)",
    )  # fmt: skip
    run.add_argument(
        "--max-processes", type=process_count, metavar="N",
        help="processes until decided: after the first --repeats, one more a round for a cell whose comparison is "
        "undecided, up to N (default: the profile's max_repeats; smoke and cpu: none added)",
    )  # fmt: skip
    run.add_argument(
        "--against", type=Path, metavar="DIR",
        help="a results folder (an earlier run, a reviewer's) whose cells this run's are compared with, as make "
        "compare compares them: one still undecided gets processes up to --max-processes",
    )  # fmt: skip
    run.add_argument("--timeout", type=positive_int, help="seconds per cell process (default: the profile's)")
    add_results_dir(run)
    run.add_argument(
        "--resume",
        action="store_true",
        help="skip cells whose current result is ok (or NA) and measured with the env lock current now",
    )
    run.add_argument("--dry-run", action="store_true", help="list the cells and exit")
    run.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="after each finished cell's short line, its full one: every noise gate's reason, the steps' spread, "
        "its result file",
    )
    run.add_argument(
        "--budget-minutes",
        type=budget_minutes,
        help="one cell per model x backend first, then the rest; stop cleanly at this, naming what is left "
        "(--resume goes on)",
    )
    run.add_argument(
        "--jobs", type=process_count, default=1, help="cells in parallel, one GPU each (needs a GPU per job)"
    )
    run.add_argument(
        "--stack",
        default="today",
        help="the software stack: today (default) or 2024 (keras-benchmarks v0.0.5's pins; envs/<backend>-2024)",
    )
    run.add_argument(
        "--ignore-plan",
        action="store_true",
        help="run cells that <results-dir>/plan-<profile>.json predicts will not fit (oom-predicted)",
    )
    run.add_argument(
        "--env",
        choices=("locked", "current"),
        default="locked",
        help="locked (default): each backend's built env (.venvs/<backend>); current: this interpreter, unlocked, "
        "whatever it has "
        "installed (docs/OWN_ENVIRONMENT.md); results under <results-dir>/env-current/<environment>/",
    )


def add_plan_parser(sub) -> None:
    plan = sub.add_parser("plan", help="every cell's parameters and memory, predicted without allocating a model")
    plan.add_argument("--profile", default="paper", help="paper or smoke (default: paper)")
    add_results_dir(plan, "writes plan-<profile>.json and plan.json here")
    plan.add_argument(
        "--batch-size",
        type=batch_count,
        help="also plan every cell at this batch (what `bench run --batch-size` will run)",
    )


def add_cell_parser(sub) -> None:
    cell = sub.add_parser("cell", help="(internal) measure one cell in this process")
    cell.add_argument("--cell", required=True, help="the cell as JSON")
    cell.add_argument("--out", required=True, type=Path)
    cell.add_argument(
        "--config",
        help="the cell's resolved configuration as JSON (bench/catalogue/config.py): the cell refuses to run anything "
             "else",
    )


def add_validate_parser(sub) -> None:
    val = sub.add_parser("validate", help="check every result file under a results folder")
    add_results_dir(val)
    val.add_argument(
        "--quarantine",
        action="store_true",
        help="move every unreadable result file to <results-dir>/quarantine/ (at its own relative path)",
    )


def add_clean_results_parser(sub) -> None:
    clean = sub.add_parser(
        "clean-results", help="delete the logs the suite wrote (<results-dir>/logs/<a profile or study>/**/*.log), "
        "nothing else"
    )
    add_results_dir(clean)


def add_table_parser(sub) -> None:
    table = sub.add_parser("table", help="render RESULTS.md and figures from the result files")
    add_results_dir(table)
    table.add_argument("--out", type=Path, help="Markdown file (default: <results-dir>/RESULTS.md)")
    table.add_argument("--readme", type=Path, help="also fill this file's marked results section with the first table")
    table.add_argument("--site", type=Path, help="also write the explorable results page (index.html) into this folder")


def add_doctor_parser(sub) -> None:
    doctor = sub.add_parser(
        "doctor", help="preflight: Python, make, compiler, disk, memory, NVIDIA driver (stdlib only)"
    )
    doctor.add_argument(
        "--plan",
        type=Path,
        help="per-cell memory figures to compare RAM with (default: <results-dir>/plan-<profile>.json)",
    )
    add_results_dir(doctor)
    doctor.add_argument(
        "--profile",
        help="the profile about to run, whose plan is compared with RAM (default: paper when an NVIDIA GPU is seen, "
        "else smoke)",
    )


def add_export_parser(sub) -> None:
    export = sub.add_parser("export", help="every current result file as one flat CSV")
    add_results_dir(export)
    export.add_argument("--out", type=Path, help="CSV file (default: <results-dir>/results.csv)")


def folder_or_run(text: str) -> Path | str | list[Path]:
    """A side of compare: a results folder (checked as every results folder is), several separated by commas (runs
    of the same code pooled as one side), or else a run's id (looked up by the command, in --results-dir's history).
    A folder of a packed study (bench/base/packed.py) is unpacked first."""
    from bench.base.packed import unpacked

    if "," in text:
        folders = [part.strip() for part in text.split(",") if part.strip()]
        missing = [f for f in folders if not unpacked(Path(f)).is_dir()]
        if missing:
            raise argparse.ArgumentTypeError(f"no results folder {', '.join(missing)} (several runs a side are "
                                             "folders, separated by commas)")
        return [results_folder(f) for f in folders]
    return results_folder(text) if unpacked(Path(text)).is_dir() else text


def add_compare_parser(sub) -> None:
    comp = sub.add_parser(
        "compare",
        help="per cell in both, B / A with its 95%% interval and a verdict (faster, slower, same, inconclusive); "
        "Markdown + PNG + JSON",
    )
    comp.add_argument(
        "a", type=folder_or_run, help="results folder A (the baseline; its noise/ holds the noise studies used), "
        "several separated by commas (separate runs of the same code, pooled as one side: the run-to-run spread it "
        "carries shrinks with their number), or the id of a run of --results-dir's history (python -m "
        "bench.studies.history "
        "runs lists them)"
    )
    comp.add_argument("b", type=folder_or_run, help="results folder B, several separated by commas, or a run's id")
    add_results_dir(comp, help="the results folder whose history's runs A and B may name (default: results)")
    comp.add_argument(
        "--out-dir",
        type=Path,
        default=Path("compare"),
        help="writes compare.md, compare.png and compare.json here (default: ./compare)",
    )
    comp.add_argument("--out", type=Path, help="the Markdown file instead (its PNG and JSON beside it)")
    comp.add_argument(
        "--across-processors",
        action="store_true",
        help="decide cells whose two sides ran on different processors (by default they are inconclusive); the "
        "output says the comparison crosses processors",
    )
