"""Write tests/durations.json, the seconds each test took, from the JUnit reports `make test` writes
(.venvs/test-*.xml): what tests/lanes.py splits `make test`'s two processes by. The reports' tests take their new
seconds; every other test keeps its earlier figure (a lane's report alone once replaced the whole file by its few
tests), unless its test function is no longer in tests/. Read and written back under the file's lock, atomically.

    python scripts/test_durations.py .venvs/test-*.xml        (make test-durations)
"""
from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.base.atomic import read_json_or_none, update_json_atomic  # noqa: E402  (after the path: the checkout's bench)

OUT = REPO / "tests" / "durations.json"


def node_id(case: ET.Element) -> str:
    """pytest's node id from a JUnit testcase: classname tests.test_x (no test classes here) and the name."""
    return f"{case.get('classname', '').replace('.', '/')}.py::{case.get('name')}"


def read_report(path: Path) -> tuple[dict[str, float], dict[str, str]]:
    """The seconds of each test that ran (skipped ones left out), and the run's host and start."""
    root = ET.parse(path).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    if suite is None:
        raise ValueError(f"{path}: no testsuite element: not a pytest JUnit report")
    found = {
        node_id(case): round(float(case.get("time", 0)), 2)
        for case in suite.iter("testcase")
        if case.find("skipped") is None
    }
    return found, {"report": path.name, "host": suite.get("hostname", ""), "started": suite.get("timestamp", "")}


def existing(node: str) -> bool:
    """Whether a test's function is still defined in its file (a parametrised test by its function's name)."""
    file, _, name = node.partition("::")
    try:
        return f"def {name.split('[')[0]}(" in (REPO / file).read_text()
    except OSError:
        return False


def merged(before: dict | None, seconds: dict[str, float], measured: list[dict]) -> tuple[dict, int, int]:
    """The file with the reports' tests' seconds and every earlier figure of a test still defined; how many earlier
    figures were kept and how many dropped (tests no longer in tests/)."""
    before = before if isinstance(before, dict) else {}
    earlier = {node: s for node, s in (before.get("seconds") or {}).items() if node not in seconds}
    kept = {node: s for node, s in earlier.items() if existing(node)}
    reports = {m["report"] for m in measured}
    document = {
        "about": "seconds each test took (setup, call and teardown), from pytest's JUnit reports; tests/lanes.py "
        "splits make test's two processes by them. Written by make test-durations: the tests of the reports it "
        "read take their new figure, every other test keeps its earlier one.",
        "measured": measured + [m for m in before.get("measured") or [] if m.get("report") not in reports],
        "seconds": dict(sorted({**kept, **seconds}.items())),
    }
    return document, len(kept), len(earlier) - len(kept)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", type=Path, help="JUnit XML reports from pytest --junitxml")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    seconds: dict[str, float] = {}
    measured = []
    for path in args.reports:
        try:
            found, where = read_report(path)
        except (OSError, ET.ParseError, ValueError) as error:
            print(f"test-durations: {path}: {error}", file=sys.stderr)
            return 2
        seconds.update(found)
        measured.append({**where, "tests": len(found)})
    counts = {}

    def change(before):
        document, counts["kept"], counts["dropped"] = merged(before, seconds, measured)
        return document

    try:
        update_json_atomic(args.out, change, read=read_earlier)
    except (OSError, ValueError) as error:
        print(f"test-durations: {args.out}: {error}", file=sys.stderr)
        return 2
    print(f"test-durations: {len(seconds)} tests from {len(args.reports)} reports -> {args.out}; "
          f"{counts['kept']} kept from before (not in these reports), {counts['dropped']} dropped (no longer in "
          "tests/)")
    return 0


def read_earlier(path: Path) -> dict | None:
    """The file as it is, None where there is none; one that is no JSON is an error, not a file to write over."""
    try:
        return read_json_or_none(path)
    except ValueError as error:
        raise ValueError(f"not JSON ({error}): mend it or move it away") from None


if __name__ == "__main__":
    sys.exit(main())
