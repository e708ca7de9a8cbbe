"""The suite's one error type. Depends on nothing, so every module may import it."""
from __future__ import annotations


class BenchError(ValueError):
    """Bad input or an unusable state, reported as a clear one-line message and a non-zero exit."""
