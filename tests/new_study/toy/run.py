"""How the toy study runs: it reads a results folder and says how many result files it holds."""
from __future__ import annotations

from bench.base.argtypes import OneLineErrors
from bench.base.resultsdir import add_results_dir
from bench.record.results import result_files


def main(argv: list[str] | None = None) -> int:
    parser = OneLineErrors(prog="python -m bench toy", description="the toy study")
    add_results_dir(parser)
    args = parser.parse_args(argv)
    print(f"toy study: {len(list(result_files(args.results_dir)))} result files under {args.results_dir}")
    return 0
