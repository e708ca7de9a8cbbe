"""What a `make` command said on stderr, less make's own trailer for a failed recipe ("make: *** [Makefile:N: t] Error
2", or "make[1]: *** ..." when make runs under make, as `make test` runs these tests)."""
from __future__ import annotations

import re

TRAILER = re.compile(r"^make(\[\d+\])?: \*\*\* \[")


def said_lines(stderr: str) -> list[str]:
    """The non-blank lines of `stderr` that are not make's failed-recipe trailer."""
    return [line for line in stderr.splitlines() if line.strip() and not TRAILER.match(line)]
