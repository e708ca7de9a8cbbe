"""The product's text says what a thing is, not which ticket made it: no "(issue 30)" in code, comments, docs, notes
or tests. A public project's issue (keras #22561, keras-hub issue 2593) is a source and is named with its project."""

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# "issue 13", "Issue 30 item 3", "issues 11": a number of one to three digits is this project's tracker
TICKET = re.compile(r"\bissues? #?\d{1,3}\b", re.IGNORECASE)
# a public project's issue names its project just before it ("keras issue 22561", "keras-hub issue #2593")
PROJECT_BEFORE = re.compile(r"(keras|keras-hub|keras-nlp|tensorflow|jax|pytorch|torch|transformers|github)\W{0,3}$",
                            re.IGNORECASE)


def ticket_mentions(text: str) -> list[str]:
    found = []
    for match in TICKET.finditer(text):
        if PROJECT_BEFORE.search(text[max(0, match.start() - 20):match.start()]):
            continue
        found.append(match.group(0))
    return found


def test_the_pattern_finds_a_ticket_and_passes_a_named_project():
    assert ticket_mentions("The tuning study (issue 15): ViT") == ["issue 15"]
    assert ticket_mentions("# Issue 30 item 3: the published") == ["Issue 30"]
    assert ticket_mentions("keras issue 22561 and keras-hub issue #2593") == []


def test_no_tracked_text_file_cites_a_ticket():
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    this = Path(__file__).relative_to(REPO).as_posix()
    offenders = []
    for name in files:
        # results' JSON and the bundled JavaScript are data a run or a library wrote
        if name == this or name.endswith((".json", ".js", ".png", ".lock")) or "/history/" in name:
            continue
        path = REPO / name
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            offenders += [f"{name}:{lineno}: {m}" for m in ticket_mentions(line)]
    assert offenders == [], "say what the thing is instead:\n" + "\n".join(offenders[:40])
