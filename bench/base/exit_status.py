"""How every command ends, as its exit status: its own, 2 with one line on stderr for a refusal or a failed write,
or a stop by Ctrl-C or a signal as a shell reports it."""
from __future__ import annotations

import sys
from collections.abc import Callable

from bench.base.errors import BenchError, os_error_line
from bench.base.lifetime import stopped_status


def exit_status(
    command: Callable[[], int],
    refusals: tuple[type[Exception], ...] = (BenchError,),
    on_stop: Callable[[], None] | None = None,
) -> int:
    """Run `command`; a refusal (`refusals`) or an OSError is one line naming the problem, not a traceback; a stop
    calls `on_stop` (what is kept) and is 128 + the signal's number (Ctrl-C 130, SIGTERM 143)."""
    try:
        return command()
    except refusals as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a read-only or full disk, a path too long: one line naming the file
        print(f"error: {os_error_line(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        if on_stop is not None:
            on_stop()
        return stopped_status(e)
