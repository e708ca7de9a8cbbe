"""Live progress of `make bench-all`: what runs now, what is done, how long is left.

On a terminal (and with rich importable): one overall bar (cells done of total, elapsed, ETA), the current
cell and its phase on the line below, and each finished cell's line printed above the bar. Otherwise (a log
file, CI, a pipe) the plain lines the orchestrator has always printed, byte for byte:

    [3/72] jax bert fit batch=2 default (smoke; elapsed 0:01:02; ETA ~0:12:00 from this run's times, 2 processes so far)
        [cell] setting up ...
        -> jax__bert__fit__bs2__default: ok, 3.40 ms/step, 95% interval 3.31–3.52 (2 processes); noisy (1 reason)

ETA: the orchestrator's own where it gives one to start() (bench/run/eta.py), else the estimates given to start()
for the cells still to run (by Cell or by cell key), else the mean duration of the finished cells times the cells
left.
"""
from __future__ import annotations

import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, TextIO


def hms(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600:d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def status_counts(results: Iterable[Any]) -> dict[str, int]:
    """How many results have each status, in the order the statuses first appear (a run's closing line)."""
    return dict(Counter(r.status for r in results))


def closing_line(results: list[Any], what: str, elapsed_s: float) -> str:
    """A run's closing line: how many results (`what`: "cells", "grid results", ...) in how long, and their statuses."""
    return f"{len(results)} {what} in {hms(elapsed_s)}: " + ", ".join(
        f"{n} {s}" for s, n in status_counts(results).items()
    )


def probe_line(label: str, start_ms: float, end_ms: float, ratio: bool = True) -> str:
    """The drift probe's reading at a run's start and end (bench/measure/drift.py), with their ratio unless `ratio` is False."""
    return f"{label}: {start_ms:.3f} ms at the start, {end_ms:.3f} ms at the end" + (
        f" (x{end_ms / start_ms:.2f})" if ratio else ""
    )


class Steps:
    """Progress of a run of a known number of steps that each take a while in silence (a study's worker processes):
    a line as each starts, `<prefix>[3/12] <what> (elapsed 0:01:02)`, and one as it ends with how long it took and
    how it ended. A step beyond the total counts it up (a count planned before a step was added)."""

    def __init__(self, total: int, prefix: str = "", out: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.total, self.prefix, self.out, self.clock = total, prefix, out, clock
        self.done, self.started_at = 0, clock()
        self.step_started = self.started_at

    def started(self, what: str) -> None:
        self.done += 1
        self.total = max(self.total, self.done)
        self.step_started = self.clock()
        self._say(f"{self.prefix}[{self.done}/{self.total}] {what} (elapsed {hms(self.step_started - self.started_at)})")

    def ended(self, how: str) -> None:
        self._say(f"{self.prefix}    -> {how} ({self.clock() - self.step_started:.0f} s)")

    def _say(self, line: str) -> None:
        print(line, file=self.out or sys.stderr, flush=True)


def cell_line(index: int, total: int, cell: Any, elapsed_s: float, repeat: str = "", eta: str | None = None) -> str:
    """The orchestrator's header line of a cell's process (bench/run/runner.py): `repeat` which of its processes,
    `eta` the run's time left in words (bench/run/eta.py), where known."""
    return (f"[{index}/{total}] {cell.backend} {cell.model} {cell.task} batch={cell.batch_size} {cell.variant}{repeat} "
            f"({cell.profile}; elapsed {hms(elapsed_s)}{f'; {eta}' if eta else ''})")


class Progress:
    """Fed by the orchestrator; renders with rich on a terminal, plain lines otherwise."""

    def __init__(self, out: TextIO | None = None, fancy: bool | None = None, console: Any = None,
                 clock: Callable[[], float] = time.perf_counter, auto_refresh: bool = True):
        self.out = out or sys.stdout
        self.clock = clock
        self.auto_refresh = auto_refresh
        if fancy is None:
            fancy = console is not None or (hasattr(self.out, "isatty") and self.out.isatty())
        self.console = console
        self.fancy = fancy and self._rich_available()
        self.cells: list[Any] = []
        self.estimates: dict[Any, float] = {}
        self.eta_source: Callable[[], float | None] | None = None
        self.durations: list[float] = []
        self.done = 0
        self.current: Any = None
        self.current_phase = ""
        self.started = self.cell_started_at = 0.0
        self._live = self._bar = None

    @staticmethod
    def _rich_available() -> bool:
        try:
            import rich.live  # noqa: F401  (not in every backend env; then plain lines)
        except ImportError:
            return False
        return True

    # ------------------------------------------------------------------ the orchestrator's calls

    def start(self, cells: list, estimates_s: dict | None = None, eta_s: Callable[[], float | None] | None = None) -> None:
        """`eta_s`: the orchestrator's own time left, in place of the estimates' and the finished cells' mean."""
        self.cells, self.estimates, self.eta_source = list(cells), dict(estimates_s or {}), eta_s
        self.started = self.clock()
        if self.fancy:
            self._start_live()

    def cell_started(self, cell: Any, line: str | None = None) -> None:
        """`line`: the orchestrator's own header (with its numbering and repeat), else one made here."""
        self.current, self.current_phase = cell, "starting"
        self.cell_started_at = self.clock()
        line = line or cell_line(self.done + 1, len(self.cells), cell, self.cell_started_at - self.started)
        if self.fancy:
            self._print(line)
            self._refresh()
        else:
            self._plain(line)

    def phase(self, text: str) -> None:
        """A line the cell process printed (`[cell] ...`): the current phase."""
        text = text.rstrip()
        if self.fancy:
            self.current_phase = text.removeprefix("[cell]").strip()
            self._refresh()
        else:
            self._plain("    " + text)

    def cell_finished(self, cell: Any, description_line: str) -> None:
        self.durations.append(self.clock() - self.cell_started_at)
        self.done += 1
        self.current, self.current_phase = None, ""
        if self.fancy:
            self._bar.update(self._task, completed=self.done)
            self._print("    -> " + description_line)
            self._refresh()
        else:
            self._plain("    -> " + description_line)

    def message(self, text: str) -> None:
        """Any other line (a failed cell's log path, the final count): printed as is."""
        self._print(text) if self.fancy else self._plain(text)

    def close(self) -> None:
        if self._live is not None:
            self._refresh()
            self._live.stop()
            self._live = None

    # ------------------------------------------------------------------ time left

    def _estimate(self, cell: Any) -> float | None:
        for key in (cell, getattr(cell, "key", None)):
            try:
                if key in self.estimates:
                    return float(self.estimates[key])
            except TypeError:  # an unhashable cell
                pass
        return None

    def eta_s(self) -> float | None:
        """Seconds left: the orchestrator's where it gives them, else the estimates where given, else the mean
        finished cell; None before any basis."""
        if self.eta_source is not None:
            return self.eta_source()
        left = self.cells[self.done:]
        if not left:
            return 0.0
        known = [e for e in map(self._estimate, self.cells) if e is not None]
        mean = statistics.fmean(self.durations) if self.durations else (statistics.fmean(known) if known else None)
        if mean is None:
            return None
        per_cell = [e if (e := self._estimate(c)) is not None else mean for c in left]
        in_current = self.clock() - self.cell_started_at if self.current is not None else 0.0
        return max(0.0, sum(per_cell) - in_current)

    # ------------------------------------------------------------------ rendering

    def _plain(self, line: str) -> None:
        print(line, file=self.out, flush=True)

    def _start_live(self) -> None:
        from rich.console import Console, Group
        from rich.live import Live
        from rich.progress import BarColumn, MofNCompleteColumn, ProgressColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as Bar
        from rich.text import Text

        progress = self

        class EtaColumn(ProgressColumn):
            def render(self, task):
                eta = progress.eta_s()
                return Text(f"ETA {hms(eta) if eta is not None else '?'}")

        class View:
            def __rich__(self):
                if progress.current is None:
                    now = Text("")
                else:
                    c = progress.current
                    now = Text(f"  now: {c.backend} {c.model} {c.task} batch={c.batch_size} {c.variant}: {progress.current_phase}")
                return Group(progress._bar.get_renderable(), now)

        self.console = self.console or Console(file=self.out)
        self._bar = Bar(
            TextColumn("cells"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("elapsed"),
            TimeElapsedColumn(),
            EtaColumn(),
            console=self.console,
            get_time=self.clock,
        )
        self._task = self._bar.add_task("cells", total=len(self.cells))
        # sys.stdout/stderr are left alone: the orchestrator prints through this object, and an interrupted run
        # must not leave them redirected
        self._live = Live(
            View(),
            console=self.console,
            auto_refresh=self.auto_refresh,
            refresh_per_second=2,
            transient=False,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._live.start()

    def _print(self, line: str) -> None:
        from rich.text import Text

        self.console.print(Text(line))  # above the live bar while it runs

    def _refresh(self) -> None:
        if self._live is not None:
            self._live.refresh()
