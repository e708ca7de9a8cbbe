"""Every run remembered: a cell's history across commits, releases and machines (`make history`), its change points
found, judged and triaged. The result files stay the source of truth; `index.py` is an SQLite index rebuilt from
them, `series.py` reads a cell's series from it, `changes.py` finds and confirms its change points, `triage.py`
keeps what a user said about each."""


def history_command(argv: list[str]) -> int:
    """a key's results across commits, releases and machines: show, triage, commits (a bisect), keys, runs"""
    from bench.studies.history.cli import main

    return main(argv)


COMMANDS = {"history": history_command}


def site_files() -> dict:
    from bench.studies.history import page

    return {page.PAGE: lambda head: page.TITLE.encode() in head,
            page.DATA: lambda head: head.startswith(b"const BENCH_HISTORY = ")}


def write_site(report, results_dir, site) -> None:
    from bench.studies.history.page import write_history_page

    write_history_page(report, results_dir, site)


def records() -> dict:
    from bench.record.results import TRIAGE_FILE
    from bench.studies.history import triage

    return {TRIAGE_FILE: lambda path: triage.read(path.parent)}


def compared_run(results_dir, run_id: str):
    from bench.report.compare import run_side
    from bench.studies.history import index
    from bench.studies.history.runs import find_run

    index.refresh(results_dir)
    return run_side(results_dir, found) if (found := find_run(results_dir, run_id)) is not None else None
