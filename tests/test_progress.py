"""Live progress: today's plain lines without a terminal; a rich bar with ETA and phase on one."""
import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from bench.base.progress import Progress, hms
from bench.catalogue.registry import Cell

CELLS = [
    Cell("jax", "bert", "fit", 2, "smoke", "default", 1, 3),
    Cell("jax", "bert", "predict", 2, "smoke", "default", 1, 3),
    Cell("native-torch", "bert", "fit", 2, "smoke", "compiled", 1, 3),
]


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def play(progress: Progress, clock: Clock, finish: int = 3) -> None:
    """What the orchestrator does: each cell takes 65 s, printing two phase lines."""
    progress.start(CELLS)
    for cell in CELLS[:finish]:
        progress.cell_started(cell)
        progress.phase("[cell] setting up ...")
        clock.now += 20
        progress.phase("[cell] set up in 20.0 s; running 1 first + 1 warm-up + 3 timed steps\n")
        clock.now += 45
        progress.cell_finished(cell, f"median 3.40 ms/step (n=3)  [smoke/m/{cell.key}.json]")


def test_plain_mode_prints_todays_lines_exactly():
    out, clock = io.StringIO(), Clock()
    progress = Progress(out=out, clock=clock)  # a StringIO is no terminal
    assert not progress.fancy
    play(progress, clock)
    progress.message("3 cells in 0:03:15: 3 ok")
    progress.close()
    assert out.getvalue().splitlines() == [
        "[1/3] jax bert fit batch=2 default (smoke; elapsed 0:00:00)",
        "    [cell] setting up ...",
        "    [cell] set up in 20.0 s; running 1 first + 1 warm-up + 3 timed steps",
        "    -> median 3.40 ms/step (n=3)  [smoke/m/jax__bert__fit__bs2__default.json]",
        "[2/3] jax bert predict batch=2 default (smoke; elapsed 0:01:05)",
        "    [cell] setting up ...",
        "    [cell] set up in 20.0 s; running 1 first + 1 warm-up + 3 timed steps",
        "    -> median 3.40 ms/step (n=3)  [smoke/m/jax__bert__predict__bs2__default.json]",
        "[3/3] native-torch bert fit batch=2 compiled (smoke; elapsed 0:02:10)",
        "    [cell] setting up ...",
        "    [cell] set up in 20.0 s; running 1 first + 1 warm-up + 3 timed steps",
        "    -> median 3.40 ms/step (n=3)  [smoke/m/native-torch__bert__fit__bs2__compiled.json]",
        "3 cells in 0:03:15: 3 ok",
    ]


def test_plain_header_is_the_orchestrators_format():
    """The header a cell's process gets (bench/run/runner.py Rounds.run_one makes it with cell_line), with which of
    its processes it is and the run's ETA where one is known."""
    from bench.base.progress import cell_line

    cell, index, total, elapsed = CELLS[2], 3, 72, 3725.0
    assert cell_line(index, total, cell, elapsed) == "[3/72] native-torch bert fit batch=2 compiled (smoke; elapsed 1:02:05)"
    assert cell_line(index, total, cell, elapsed, " repeat 1/2", "ETA ~0:12:00 from this run's times, 3 processes so far") \
        == ("[3/72] native-torch bert fit batch=2 compiled repeat 1/2 (smoke; elapsed 1:02:05; ETA ~0:12:00 from this "
            "run's times, 3 processes so far)")


def test_the_orchestrators_eta_stands_in_for_the_bars_own():
    clock = Clock()
    progress = Progress(out=io.StringIO(), clock=clock)
    progress.start(CELLS, {CELLS[0].key: 100.0}, eta_s=lambda: 42.0)
    assert progress.eta_s() == 42.0


def rich_output(finish: int, estimates=None, clock=None) -> tuple[str, Progress]:
    buffer, clock = io.StringIO(), clock or Clock()
    console = Console(file=buffer, force_terminal=True, width=140, color_system=None)
    progress = Progress(console=console, clock=clock, auto_refresh=False)
    assert progress.fancy
    progress.start(CELLS, estimates)
    for i, cell in enumerate(CELLS):
        progress.cell_started(cell)
        progress.phase("[cell] setting up ...")
        clock.now += 20
        progress.phase("[cell] set up in 20.0 s; running 1 first + 1 warm-up + 3 timed steps")
        if i == finish:
            text = buffer.getvalue()
            progress.close()
            return text, progress
        clock.now += 45
        progress.cell_finished(cell, f"median 3.40 ms/step  [{cell.key}.json]")
    progress.close()
    return buffer.getvalue(), progress


def test_rich_mode_shows_the_bar_eta_current_cell_and_phase():
    text, progress = rich_output(finish=1)
    assert "━" in text and "1/3" in text  # the bar, one cell done of three
    # one finished cell took 65 s: two cells left at 65 s each, 20 s into the current one
    assert progress.eta_s() == pytest.approx(110.0) and "ETA 0:01:50" in text
    assert "now: jax bert predict batch=2 default: set up in 20.0 s; running 1 first" in text
    assert "    -> median 3.40 ms/step  [jax__bert__fit__bs2__default.json]" in text  # printed above the bar
    assert "[1/3] jax bert fit batch=2 default (smoke; elapsed 0:00:00)" in text


def test_rich_mode_eta_from_estimates_and_before_any_basis():
    estimates = {CELLS[0].key: 100.0, CELLS[1]: 50.0, CELLS[2].key: 300.0}
    text, progress = rich_output(finish=0, estimates=estimates)
    assert progress.eta_s() == pytest.approx(450.0 - 20.0) and "ETA 0:07:10" in text
    _, unknown = rich_output(finish=0)
    assert unknown.eta_s() is None


def test_rich_mode_runs_to_the_end():
    text, progress = rich_output(finish=99)
    assert "3/3" in text and progress.eta_s() == 0.0 and "ETA 0:00:00" in text
    assert len(re.findall(r"    -> median", text)) == 3


def test_a_terminal_picks_rich_and_hms_formats():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    assert Progress(out=Tty()).fancy and not Progress(out=io.StringIO()).fancy
    assert hms(3725.9) == "1:02:05"


def test_paper_cells_get_eta_estimates_from_the_published_figures_and_smoke_cells_none():
    from bench.catalogue.registry import plan_cells
    from bench.run.planning import time_estimates

    paper = time_estimates(plan_cells("paper", backends=["jax", "keras2"], models=["bert", "gemma"]))
    assert paper["jax__bert__fit__bs32__default"] > 0 and "keras2__gemma__fit__bs8__default" in paper
    assert paper["keras2__gemma__fit__bs8__default"] == 0.0  # unsupported: recorded without running
    assert time_estimates(plan_cells("smoke", backends=["jax"], models=["bert"])) == {}
    three = time_estimates(plan_cells("paper", backends=["jax"], models=["bert"]), repeats=3)
    assert three["jax__bert__fit__bs32__default"] == pytest.approx(3 * paper["jax__bert__fit__bs32__default"])


def test_the_display_never_runs_in_a_cell_process():
    """The live display is the orchestrator's: a cell's process (bench/measure/cell.py and the drivers that time its
    windows) never imports bench.base.progress or rich, so nothing of it can run inside a timed window."""
    import subprocess
    import sys

    probe = "import sys, bench.cli, bench.measure.cell, bench.measure.drivers, bench.base.timing; print(sorted(m for m in ('rich', 'bench.base.progress') if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout
