"""The inference grid study: Hugging Face's October 2019 "Benchmarking Transformers: PyTorch and
TensorFlow" re-run on today's stacks, with Keras 3 beside it.

- `spec`: the models (from their configs, random seeded weights), the columns, the grids and the NA rules. Stdlib.
- `worker`: runs inside one env, one process per (model, env): builds the model's columns from one set of weights
  and times forward passes on command, through the suite's timing core (bench.base.timing.StepTimer).
- `frameworks_grid`: the per-framework builders the worker calls (PyTorch, transformers-TF, Keras 3).
- `run`: the orchestrator: per model, one weight export, one worker per env, the points' repeats round-robin
  across every column, results written as schema-2 result files under <results>/grid/.
- `findings`: the published findings (bench/data/hf_2019_pytorch_vs_tensorflow.csv) against ours.
The report is bench/studies/grid/page.py (GRID.md, figures; a Section of `make table`).
"""


def grid_command(argv: list[str]) -> int:
    """the inference grid study (HF 2019 PyTorch vs TensorFlow, with Keras 3): run, then render GRID.md"""
    from bench.studies.grid.cli import main

    return main(argv)


COMMANDS = {"grid": grid_command}


def sections() -> list:
    from bench.studies.grid.page import SECTIONS

    return SECTIONS


def pages(results_dir) -> list:
    from bench.studies.grid.page import render_grid

    return [page] if (page := render_grid(results_dir)) else []


def result_files(results_dir) -> list:
    from bench.base.packed import unpack_all
    from bench.record.results import load, result_files
    from bench.studies.grid.run import GRID_DIR

    unpack_all(results_dir, (GRID_DIR,))  # each grid's machines, tracked packed
    return [("inference grid result files", results_dir / GRID_DIR, result_files(results_dir / GRID_DIR), load)]
