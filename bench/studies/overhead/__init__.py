"""The framework-overhead study (`make overhead`): keras-team/keras issue #22561 and pull request
#22660's small CNN and 2-layer causal LM on eight columns (pure PyTorch and Keras on torch, pure JAX and Keras on
JAX, each eager and compiled). `spec.py` says what it is, `models.py` builds it in each framework from one set of
weights, `worker.py` times one env's columns, `run.py` orchestrates; its report is bench/studies/overhead/page.py."""


def overhead_command(argv: list[str]) -> int:
    """the framework-overhead study: Keras against pure torch and JAX -> OVERHEAD.md"""
    from bench.studies.overhead.run import main

    return main(argv)


COMMANDS = {"overhead": overhead_command}


def sections() -> list:
    from bench.studies.overhead.page import SECTIONS

    return SECTIONS


def pages(results_dir) -> list:
    from bench.studies.overhead.page import load_overhead, render_overhead

    return [render_overhead(results_dir)] if load_overhead(results_dir) else []


def result_files(results_dir) -> list:
    from bench.record.results import load, result_files
    from bench.studies.overhead.spec import STUDY_DIR

    return [("result files", results_dir / STUDY_DIR, result_files(results_dir / STUDY_DIR), load)]
