"""Write tests/durations.json, the seconds each test took, from the JUnit reports `make test` writes
(.venvs/test-*.xml): what tests/lanes.py splits `make test`'s two processes by. The file is replaced: run it after a
make test that ran to its end.

    python scripts/test_durations.py .venvs/test-*.xml        (make test-durations)
"""
from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.atomic import write_json_atomic  # noqa: E402  (after the path: the checkout's bench)

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
    document = {
        "about": "seconds each test took (setup, call and teardown), from pytest's JUnit reports; tests/lanes.py "
        "splits make test's two processes by them. Written by make test-durations.",
        "measured": measured,
        "seconds": dict(sorted(seconds.items())),
    }
    write_json_atomic(args.out, document)
    print(f"test-durations: {len(seconds)} tests from {len(args.reports)} reports -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
