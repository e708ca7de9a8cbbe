"""Performance across releases: `make sweep` (one package at several versions, each in an environment derived from a
backend's lock), `make bisect` (the first release where a cell got slower) and their page, results/SWEEP.md."""


def sweep_command(argv: list[str]) -> int:
    """one package at several versions on one cell (or a sweep study) -> SWEEP.md"""
    from bench.studies.sweep.cli import main

    return main(["sweep", *argv])


def bisect_command(argv: list[str]) -> int:
    """the first release between a good and a bad one where a cell got slower (or faster)"""
    from bench.studies.sweep.cli import main

    return main(["bisect", *argv])


def sweep_report_command(argv: list[str]) -> int:
    """render SWEEP.md again from the sweeps' result files, measuring nothing"""
    from bench.studies.sweep.cli import main

    return main(["report", *argv])


COMMANDS = {"sweep": sweep_command, "bisect": bisect_command, "sweep-report": sweep_report_command}


def result_files(results_dir) -> list:
    from bench.studies.sweep.page import STUDY_DIR, load_sweep, sweep_files

    return [("result files", results_dir / STUDY_DIR, sweep_files(results_dir), load_sweep)]
