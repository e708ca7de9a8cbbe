"""What a user said of a change: acknowledged, expected, or noise, with a reason, kept in one small JSON file beside
the results (<results>/history-triage.json) so that `make history` reports it as triaged, not as new."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from bench.base.atomic import update_json_atomic
from bench.base.errors import BenchError
from bench.record.results import TRIAGE_FILE  # noqa: F401  (named there, among the files every reader passes by)

STATES = ("acknowledged", "expected", "noise")


@dataclass(frozen=True)
class Triage:
    cell: str  # the key make history was given
    where: str  # which of its series (Series.where)
    at: str  # the label of the first point after the change: a release, or a time stamp (20261125T211853Z)
    state: str
    reason: str
    when: str  # when it was said, UTC


def triage_path(results_dir: Path) -> Path:
    return Path(results_dir) / TRIAGE_FILE


def read(results_dir: Path) -> list[Triage]:
    path = triage_path(results_dir)
    if not path.exists():
        return []
    try:
        return [Triage(**entry) for entry in json.loads(path.read_text())["triage"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise BenchError(f"{path}: not a triage file ({e}): mend it or move it away") from None


def find(entries: list[Triage], cell: str, where: str, at: str) -> Triage | None:
    """The newest word on one change (a later triage of the same change replaces an earlier one)."""
    found = [t for t in entries if (t.cell, t.where, t.at) == (cell, where, at)]
    return found[-1] if found else None


def check(state: str, reason: str) -> None:
    """What a triage says, refused in one line where it is no state or no reason."""
    if state not in STATES:
        raise BenchError(f"STATE={state!r}: one of {', '.join(STATES)}")
    if not reason.strip():
        raise BenchError("REASON= is empty: say why (a triage without a reason cannot be reviewed)")


def record(results_dir: Path, cell: str, where: str, at: str, state: str, reason: str) -> Triage:
    """Add a triage (atomically, one writer at a time; the file keeps every earlier one, the newest of a change
    counts)."""
    check(state, reason)
    entry = Triage(cell, where, at, state, reason.strip(), datetime.now(UTC).isoformat(timespec="seconds"))
    # read and written back under the store's lock: triages said at once each keep the others
    update_json_atomic(triage_path(results_dir),
                       lambda _: {"triage": [asdict(t) for t in read(results_dir) + [entry]]}, read=lambda _: None)
    return entry
