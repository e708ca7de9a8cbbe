"""`python -m bench grid`: the inference grid study's command line (its parser, then the run and the page)."""
from __future__ import annotations

from bench.base.argtypes import OneLineErrors, csv_list
from bench.base.resultsdir import add_results_dir
from bench.studies.grid import run
from bench.studies.grid.page import render_grid
from bench.studies.grid.spec import DEFAULT_GRID, MODELS, columns_for_envs, get_grid, select


def main(argv: list[str] | None = None) -> int:
    """`python -m bench grid`: run the grid's points, then render GRID.md (--dry-run: list them)."""
    parser = OneLineErrors(prog="python -m bench grid", description=main.__doc__)
    parser.add_argument(
        "--grid",
        default=None,
        help="cpu (default: every length at batch 1, a capped corner above), full (the published grid, 30 repeats), "
        "lengths (batch 1 and 8 at every length), sample (batch 1 at 8, 128, 512) or smoke (tiny models, the tests')",
    )
    parser.add_argument(
        "--model",
        type=csv_list,
        help="grid models (default: all): bert, distilbert, gpt2, distilgpt2, roberta, xlnet, xlm",
    )
    parser.add_argument(
        "--backend",
        type=csv_list,
        help="envs or columns (default: all): native-torch, tf-transformers, jax, tensorflow, torch, or a column name",
    )
    add_results_dir(parser)
    parser.add_argument("--dry-run", action="store_true", help="list the points and columns and exit")
    args = parser.parse_args(argv)
    grid = get_grid(args.grid or DEFAULT_GRID)
    models, columns = select(args.model, MODELS, "grid model"), columns_for_envs(args.backend)
    if args.dry_run:
        for model in models:
            for batch, length in grid.points():
                print(f"{model} batch {batch} x length {length}: {', '.join(columns)}")
        return 0
    results = run.run_grid(models, columns, grid, args.results_dir)
    out = render_grid(args.results_dir)
    print(f"wrote {out}", flush=True)
    return 0 if all(r.status in ("ok", "unsupported") for r in results) else 1
