"""Every repository path the prose names exists: bench/..., tests/..., scripts/... and docs/... in docs/*.md, the
README and the docstrings of bench/, scripts/ and tests/. A path with a placeholder (`<name>`, `<model>`) or a glob
(`*`, `{a,b}`) must match at least one file; a path written as a pattern in text is still checked, not skipped."""

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROOTS = ("bench", "tests", "scripts", "docs")
# A path: a root folder, then path characters; placeholders <...> and globs * { } allowed inside it.
PATH = re.compile(r"(?<![\w/.$-])((?:" + "|".join(ROOTS) + r")/[\w.<>*{},/-]*[\w>*}/])")
# Files a run or a build writes, named as where they will be: nothing to find in a checkout.
WRITTEN = ("__pycache__", ".pyc")


def prose() -> dict[str, str]:
    """Source name -> the text whose paths are checked."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    texts = {str(p.relative_to(REPO)): p.read_text() for p in pages}
    for root in ("bench", "scripts", "tests"):
        for path in sorted((REPO / root).rglob("*.py")):
            tree = ast.parse(path.read_text())
            defined = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
            nodes = [tree, *(n for n in ast.walk(tree) if isinstance(n, defined))]
            docs = [ast.get_docstring(n, clean=False) for n in nodes]
            texts[str(path.relative_to(REPO))] = "\n".join(d for d in docs if d)
    return texts


def named_paths(text: str) -> set[str]:
    return {m.rstrip("/.,") for m in PATH.findall(text)}


def exists(named: str) -> bool:
    pattern = re.sub(r"<[^>]*>", "*", named)
    if "{" in pattern:  # {a,b}: each alternative must exist
        head, alternatives, tail = re.match(r"(.*?)\{([^}]*)\}(.*)", pattern).groups()
        return all(exists(head + a + tail) for a in alternatives.split(","))
    if "*" in pattern:
        return any(REPO.glob(pattern))
    return (REPO / pattern).exists()


def test_the_path_pattern_reads_placeholders_and_globs():
    text = (
        "see bench/models/<name>/plan.py, `tests/test_*.py`, bench/{run/runner,catalogue/config}.py and docs/METHOD.md."
    )
    named = {"bench/models/<name>/plan.py", "tests/test_*.py", "bench/{run/runner,catalogue/config}.py",
             "docs/METHOD.md"}
    assert named_paths(text) == named
    assert all(exists(p) for p in named_paths(text))
    assert not exists("bench/plan.py") and not exists("bench/models/<name>/nothing.py")


def test_every_path_the_docs_and_docstrings_name_exists():
    missing = [
        f"{source}: {named}"
        for source, text in prose().items()
        for named in sorted(named_paths(text))
        if not any(w in named for w in WRITTEN) and not exists(named)
    ]
    assert not missing, "paths named that do not exist:\n" + "\n".join(missing)
