"""Every run remembered: a cell's history across commits, releases and machines (`make history`), its change points
found, judged and triaged. The result files stay the source of truth; `index.py` is an SQLite index rebuilt from
them, `series.py` reads a cell's series from it, `changes.py` finds and confirms its change points, `triage.py`
keeps what a user said about each."""


def history_command(argv: list[str]) -> int:
    """a key's results across commits, releases and machines: show, triage, commits (a bisect), keys, runs"""
    from bench.studies.history.cli import main

    return main(argv)


COMMANDS = {"history": history_command}
