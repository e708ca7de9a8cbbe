"""The suite's one error type. Depends on nothing, so every module may import it."""
from __future__ import annotations


class BenchError(ValueError):
    """Bad input or an unusable state, reported as a clear one-line message and a non-zero exit."""


def os_error_line(e: OSError) -> str:
    """A failed file operation (a read-only or full disk, a path too long) as one line naming the file."""
    return f"{e.strerror or e}: {e.filename}" if e.filename else str(e.strerror or e)
