"""The move of the package into one folder a layer, as a script that a later checkout can run again: every module's
old and new place (MOVES), `git mv` for each, then every reference rewritten: imports (`import`, `from ... import`,
a module imported by name from its package), dotted names in strings and text (mock targets, `-m` calls,
messages), file paths in docs, comments and messages, the image's COPY lines.

Two stages, one commit each, the studies first:

    python3 scripts/relayout.py studies    # each study into one folder under the studies' wing; make lint as it was
    python3 scripts/relayout.py layers     # every other module into its layer's folder; make lint by import-linter
    python3 scripts/relayout.py check      # what is placed, what is not, which stages are done; changes nothing

Then it sorts each rewritten file's imports as ruff does and wraps a line the longer names took past the line length
(a comment or docstring at a space, a string literal in two, code after a comma or by `ruff format --range`). It
works every file out before it moves one, and refuses, changing nothing, where the package holds a file that no line
of MOVES or KEEP places (a module a later change added: give it a line), where the working tree has uncommitted
changes, where a stage's files are half moved, or where a line would not wrap; a stage already applied is left as it
is (exit 0). What it leaves alone on purpose: results/ (each result and note records the paths that were true when
it was measured or written), the environments' locks and derived locks (hashed: their sha256 is recorded), the
vendored plotly bundle, this script and its test. It needs git and ruff (the tools env's, or --ruff).
"""
from __future__ import annotations

import argparse
import ast
import fnmatch
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "bench"

# (stage, old path, new path), paths relative to the checkout. A module keeps its name unless a folder's entry name
# (spec, worker, run, page) says plainly what it is, or its folder already says what its prefix did.
MOVES: list[tuple[str, str, str]] = []


def _move(stage: str, old_dir: str, new_dir: str, names: dict[str, str] | list[str]) -> None:
    pairs = names.items() if isinstance(names, dict) else [(n, n) for n in names]
    for old, new in pairs:
        MOVES.append((stage, f"{old_dir}/{old}".replace("//", "/"), f"{new_dir}/{new}".replace("//", "/")))


# --- stage 1: the studies, one folder each, the same entry names in each
S = "studies"
_move(S, "bench/grid", "bench/studies/grid", [
    "__init__.py", "findings.py", "frameworks_grid.py", "run.py", "spec.py", "worker.py", "workers.py"])
_move(S, "bench/report", "bench/studies/grid", {"grid.py": "page.py", "grid_figures.py": "figures.py"})
_move(S, "bench/overhead", "bench/studies/overhead", ["__init__.py", "models.py", "run.py", "spec.py", "worker.py"])
_move(S, "bench/report", "bench/studies/overhead", {"overhead.py": "page.py"})
_move(S, "bench/sweep", "bench/studies/sweep", [
    "__init__.py", "__main__.py", "bisect.py", "callworker.py", "cli.py", "derive.py", "index.py", "run.py",
    "targets.py", "studies/keras-overhead-torch-forward.toml", "studies/keras-overhead.toml"])
_move(S, "bench/sweep", "bench/studies/sweep", {"report.py": "page.py"})
_move(S, "bench/history", "bench/studies/history", [
    "__init__.py", "__main__.py", "changes.py", "cli.py", "commits.py", "confirm.py", "index.py", "report.py",
    "runs.py", "series.py", "triage.py"])
_move(S, "bench/report", "bench/studies/history", {"history_page.py": "page.py", "history_data.py": "page_data.py"})
_move(S, "bench/noise", "bench/studies/noise", [
    "__init__.py", "conditions.py", "detection.py", "figures.py", "study_file.py"])
_move(S, "bench/noise", "bench/studies/noise", {
    "study.py": "run.py", "settings.py": "spec.py", "probe.py": "worker.py"})
_move(S, "bench/report", "bench/studies/noise", {"noise.py": "page.py"})
_move(S, "bench/parity", "bench/studies/parity", ["__init__.py", "compare.py", "run.py", "worker.py"])
_move(S, "bench/report", "bench/studies/tuning", {"tuning.py": "page.py"})
_move(S, "bench", "bench/studies/gpucheck", {
    "gpucheck.py": "run.py", "gpucheck_report.py": "page.py",
    "gpu_session.py": "session.py"})  # the findings' cells a lent GPU's session runs after the check
# RESULTS.md's assembly lists every study's section, so it stands above the studies (until each study registers its
# own); report/ keeps a package docstring of its own.
_move(S, "bench/report", "bench/studies", {"__init__.py": "table.py"})

# --- stage 2: the layers, lowest first
L = "layers"
_move(L, "bench", "bench/base", [
    "errors.py", "atomic.py", "stats.py", "provenance.py", "lifetime.py", "progress.py", "failures.py", "runlock.py",
    "generate_split.py", "published.py", "timing.py", "argtypes.py", "tables.py", "exit_status.py", "packed.py",
    "resultsdir.py"])
_move(L, "bench", "bench/catalogue", [
    "backends.py", "profiles.py", "profiles.toml", "spec.py", "variants.py", "registry.py", "work.py", "cost.py",
    "config.py", "ownenv.py", "offline.py", "compile_cache.py"])
_move(L, "bench/roofline", "bench/catalogue", ["hardware.py"])
_move(L, "bench", "bench/record", [
    "results.py", "result_checks.py", "result_text.py", "results_upkeep.py", "schema.py", "schema_doc.py"])
_move(L, "bench/report", "bench/record", ["load.py", "text.py"])
_move(L, "bench", "bench/measure", ["cell.py", "drivers.py", "frameworks.py", "env_process.py", "drift.py"])
_move(L, "bench/roofline", "bench/measure", {
    "probe.py": "ceiling_probe.py", "counter.py": "torch_counter.py", "xla_counter.py": "xla_counter.py"})
_move(L, "bench/roofline", "bench/models", ["torch_checks.py", "xla_checks.py"])
_move(L, "bench", "bench/judge", {"judge.py": "__init__.py"})
_move(L, "bench", "bench/judge", ["same_work.py", "noise_file.py", "replication.py", "claims.py"])
_move(L, "bench/report", "bench/judge", ["analysis.py", "comparisons.py"])
_move(L, "bench", "bench/run", [
    "runner.py", "cell_process.py", "worker_process.py", "deadline.py", "env_lookup.py", "results_folder.py",
    "doctor.py", "budget.py"])
_move(L, "bench", "bench/run", {"run_planning.py": "planning.py"})
_move(L, "bench/roofline", "bench/run", ["ceilings.py"])
_move(L, "bench/cluster", "bench/run/cluster", [
    "__init__.py", "cli.py", "jobdir.py", "localslurm.py", "parallel.py", "resources.py", "slurmstate.py", "status.py",
    "submit.py", "task.py"])
# The time to a decided table, what GPU cells cost and which GPU a cell takes are the run's planning, which the
# one-machine ETA uses: beside it, so that run/'s folders import one way (the cluster takes them from run/).
_move(L, "bench/cluster", "bench/run", ["decided.py", "gpus.py", "measured.py"])
_move(L, "bench", "bench/report", ["compare.py", "export.py"])

# What stays where it is (fnmatch on the path): the front door, the folders kept whole, what remains of report/ and
# roofline/, the data. A file of the package that neither a move nor a line here places is refused.
KEEP = [
    "bench/__init__.py", "bench/__main__.py", "bench/cli.py", "bench/cli_parsers.py",
    "bench/models/*", "bench/envs/*", "bench/plan/*", "bench/data/*",
    "bench/roofline/__init__.py", "bench/roofline/published.py", "bench/roofline/utilisation.py",
    "bench/report/costs.py", "bench/report/figures.py", "bench/report/findings.py", "bench/report/generate.py",
    "bench/report/gpu_beside_a100.py", "bench/report/markdown.py", "bench/report/parity.py",
    "bench/report/provenance.py", "bench/report/readme.py", "bench/report/roofline.py", "bench/report/sections.py",
    "bench/report/site.py", "bench/report/stacks.py", "bench/report/vendor/*",
]
# The layer rule's old checker and its own tests, replaced by import-linter in the layers stage.
DROPPED = {L: ["bench/layers.toml", "scripts/import_cycles.py", "tests/test_import_cycles.py"]}
# A folder that text names whose files mostly moved into one new folder: where a path into it goes (a folder all of
# whose files move into one folder follows them without a line here).
FOLDERS = {L: {"bench/cluster": "bench/run/cluster"}}
# Paths that text names which the layers stage removes: what takes their place.
RENAMED_PATHS = {L: {"bench/layers.toml": ".importlinter", "scripts/import_cycles.py": ".importlinter"}}

# The packages a stage creates, each with the docstring that says what its floor holds.
NEW_PACKAGES = {
    S: {
        "bench/studies/__init__.py": (
            "The studies' wing: one folder a study, each with the same entry names (`spec.py`, what it measures; "
            "`worker.py`, what runs inside an environment's process; `run.py`, how it runs; `page.py`, its section "
            "and page), and `table.py`, RESULTS.md with every study's section. The folder imports any folder below "
            "it; only the front door imports it."
        ),
        "bench/studies/tuning/__init__.py": (
            "The tuning study: each tuning variant (bench/variants.py) beside its backend's reference "
            "cell, and the published findings beside ours. Its cells run in the matrix; `page.py` is its section."
        ),
        "bench/studies/gpucheck/__init__.py": (
            "`make gpu-check`: on one GPU, within a budget, the checks only a GPU can answer (`run.py`), and its "
            "report beside the results (`page.py`); then a lent GPU's session (scripts/gpu-session.sh): the cells "
            "that decide the published findings still open, in order (`session.py`)."
        ),
        "bench/report/__init__.py": (
            "RESULTS.md's own sections and the results page's core, from the result files alone: the main table, "
            "its findings, figures, provenance, the machine's limits, costs, the README splice, `make compare` and "
            "`make export`. They import no study; RESULTS.md with every study's section is "
            "bench/studies/table.py."
        ),
    },
    L: {
        "bench/base/__init__.py": (
            "The foundation: what every other folder may use, importing nothing of the project: errors, atomic "
            "writes, statistics, the clock (timing), provenance, progress, run locks, failures, lifetime, packed "
            "archives, the published reference table, Markdown tables, argument types, exit statuses and what may "
            "be a results folder."
        ),
        "bench/catalogue/__init__.py": (
            "What can be run and what it costs: backends, profiles, specs, variants, the registry of models and "
            "cells, each step's work, cost, each cell's resolved configuration, compile caches, the offline rule "
            "and the datasheets of GPUs."
        ),
        "bench/record/__init__.py": (
            "The result file: what a measurement writes and everything else reads (Result, Run), its schema and "
            "the schema's doc, its checks, its text forms, its upkeep, and result files loaded as tables."
        ),
        "bench/measure/__init__.py": (
            "What runs inside a cell's process: the cell, its drivers, each framework's device, the drift "
            "reference, what every process in an environment does first, and the machine's ceiling probe and the "
            "frameworks' own FLOP counters."
        ),
        "bench/run/__init__.py": (
            "Orchestration: the runner and its rounds, cell and worker processes, what a run measures and in what "
            "order, deadlines and budgets, the results folder as a run writes it, the preflight (doctor), the "
            "machine's ceilings, and beyond one machine (cluster/)."
        ),
    },
}

# The folder order make lint keeps after the layers stage, highest first; `|` separates independent siblings, `:`
# siblings that may import one another (import-linter's layers contract).
LAYERS = [
    "__main__ : cli : cli_parsers",
    "studies",
    "report",
    "run",
    "judge",
    "models | envs | roofline",
    "measure",
    "plan",
    "record",
    "catalogue",
    "base",
]
# Modules that run inside a framework's environment although their folder is a study's: none of them may reach,
# directly or through another module, judging, orchestration or the report.
IN_ENVIRONMENT = [
    "bench.studies.grid.worker", "bench.studies.grid.frameworks_grid", "bench.studies.overhead.worker",
    "bench.studies.overhead.models", "bench.studies.parity.worker", "bench.studies.sweep.callworker",
]
COMMAND_LINES = ["bench.cli", "bench.studies.sweep.cli", "bench.envs.cli"]


def importlinter_config() -> str:
    layers = "\n".join(f"    {layer}" for layer in LAYERS)
    in_env = "\n".join(f"    {m}" for m in IN_ENVIRONMENT)
    parsers = "\n".join(f"    {m}" for m in COMMAND_LINES)
    return f"""\
# make lint's import rules (import-linter; docs/LAYOUT.md). The package's folders are its layers: a folder imports
# only the folders below it in this list, never one above, and every module of bench/ stands in one of them (a new
# module or folder is placed on purpose). No exception is allowed: move the code down instead.

[importlinter]
root_package = bench

[importlinter:contract:layers]
name = each folder of bench/ imports only the folders below it
type = layers
containers =
    bench
exhaustive = true
layers =
{layers}

[importlinter:contract:acyclic]
name = no import cycle among the modules, or the folders, of any folder
type = acyclic_siblings
ancestors =
    bench

[importlinter:contract:in-environment]
name = what a study runs inside a framework's environment reaches no judging, orchestration or report
type = forbidden
source_modules =
{in_env}
forbidden_modules =
    bench.judge
    bench.run
    bench.report
    bench.roofline

[importlinter:contract:command-lines]
name = each command line stands on its own (python -m bench, python -m bench.studies.sweep, scripts/envs.py)
type = independence
modules =
{parsers}
"""


MAKE_LINT_OLD = "\t$(TOOLS_PY) scripts/import_cycles.py\n"
MAKE_LINT_NEW = (
    "\t$(TOOLS_PY) -c 'from importlinter.cli import lint_imports_command; lint_imports_command()' --no-cache\n"
)
PINS_ALLOWED_OLD = (  # tests/test_pins.py's allowance for the pin that make lint takes up in the layers stage
    '    "import-linter": "make lint\'s import rules by folder, once scripts/relayout.py has moved bench/ into its '
    'layers\' "\n    "folders (its layers stage drops this line)",\n'
)
MAKE_LINT_HELP_OLD = "no import cycle in bench/ and its layer order kept (bench/layers.toml)"
MAKE_LINT_HELP_NEW = "the import rules of .importlinter (import-linter: bench/'s folders in layer order, no cycle)"

# Never rewritten: records of what was true when they were made, hashed artifacts, vendored code, this script.
NOT_REWRITTEN = [
    "results/*", "envs/*/uv.lock", "envs/*/requirements.txt", "envs/sweep/*", "bench/report/vendor/*",
    "scripts/relayout.py", "tests/test_relayout.py", "*.png", "*.tar.xz", "*.sqlite",
]


class Refused(Exception):
    pass


def git(*args: str, capture: bool = True) -> str:
    out = subprocess.run(["git", *args], cwd=ROOT, capture_output=capture, text=True)
    if out.returncode != 0:
        raise Refused(f"git {' '.join(args)} failed: {out.stderr.strip()}")
    return out.stdout


def tracked() -> list[str]:
    return git("ls-files", "-z").split("\0")[:-1]


def module_of(path: str) -> str | None:
    if not path.endswith(".py"):
        return None
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def matches(path: str, patterns) -> bool:
    return any(fnmatch.fnmatchcase(path, p) for p in patterns)


@dataclass
class Stage:
    name: str
    moves: list[tuple[str, str]]

    def recreated(self, path: str) -> bool:  # an old path the stage writes anew (a package's __init__ moved away)
        return path in NEW_PACKAGES.get(self.name, {})

    @property
    def done(self) -> bool:
        return all((ROOT / n).exists() and (self.recreated(o) or not (ROOT / o).exists()) for o, n in self.moves)

    @property
    def untouched(self) -> bool:
        return all((ROOT / o).exists() and not (ROOT / n).exists() for o, n in self.moves)


def stages() -> dict[str, Stage]:
    found: dict[str, Stage] = {}
    for stage, old, new in MOVES:
        found.setdefault(stage, Stage(stage, [])).moves.append((old, new))
    return found


def unplaced(files: list[str]) -> list[str]:
    """The package's files that no move (either side) and no KEEP line places."""
    placed = {p for _, o, n in MOVES for p in (o, n)} | {p for s in NEW_PACKAGES.values() for p in s}
    placed |= {p for s in DROPPED.values() for p in s}
    return [f for f in files if f.startswith(f"{PACKAGE}/") and f not in placed and not matches(f, KEEP)]


# ----------------------------------------------------------------------------------------------- the rewriting


class Rewriter:
    """Old names and paths -> new ones for one stage, from the modules the checkout holds now."""

    def __init__(self, moves: list[tuple[str, str]], files: list[str], renamed_paths: dict[str, str],
                 folders: dict[str, str], read=lambda path: (ROOT / path).read_text()):  # fmt: skip
        self.files = {old: new for old, new in moves}
        self.files.update(renamed_paths)
        self.modules: dict[str, str] = {}  # every module of the package now -> its name after the stage
        for path in files:
            module = module_of(path)
            if module and (module == PACKAGE or module.startswith(PACKAGE + ".")):
                new = self.files.get(path, path)
                self.modules[module] = module_of(new)
        # A folder all of whose files move into one new folder (names may change, subfolders stay): a path into it
        # (a glob, a placeholder, a file a later change adds) follows it. A folder that keeps some of its files where
        # they are (report/, roofline/) or sends them to several folders keeps its name.
        found: dict[str, set[str]] = {}
        for path in files:
            if not path.startswith(f"{PACKAGE}/"):
                continue
            new_parent = self.files.get(path, path).rsplit("/", 1)[0]
            folder = path.rsplit("/", 1)[0]
            while folder != PACKAGE:
                below = path.rsplit("/", 1)[0][len(folder):]  # the subfolders between the folder and the file
                found.setdefault(folder, set()).add(new_parent[: len(new_parent) - len(below)]
                                                    if new_parent.endswith(below) else "")  # fmt: skip
                folder = folder.rsplit("/", 1)[0]
        self.dirs = {d: new for d, news in found.items() if len(news) == 1 and (new := next(iter(news))) not in ("", d)}
        self.dirs.update(folders)
        # A package whose __init__ moves away while its folder stays (report/): its name alone names the folder;
        # its name and an attribute its __init__ defined name the module the __init__ became.
        self.init_names: dict[str, set[str]] = {}
        for old, new in moves:
            if old.endswith("/__init__.py") and old.rsplit("/", 1)[0] not in self.dirs and old != new:
                module = module_of(old)
                self.init_names[module] = defined_names(read(old))

    # -- names
    def module(self, name: str) -> str:
        return self.modules.get(name, name)

    def dotted(self, token: str) -> str:
        """bench.a.b.c -> its longest prefix that is a module, renamed; the rest kept."""
        parts = token.split(".")
        for n in range(len(parts), 1, -1):
            prefix = ".".join(parts[:n])
            if prefix in self.modules:
                rest = parts[n:]
                if prefix in self.init_names and (not rest or rest[0] not in self.init_names[prefix]):
                    return token  # the folder, or something in it that is not the moved __init__'s
                return ".".join([self.modules[prefix], *rest])
        return token

    # -- paths
    def path(self, path: str) -> str:
        if path in self.files:
            return self.files[path]
        if "{" in path:
            match = re.match(r"(.*?)\{([^}]*)\}(.*)", path)
            head, alternatives, tail = match.groups()
            news = [self.path(head + a + tail) for a in alternatives.split(",")]
            if news == [head + a + tail for a in alternatives.split(",")]:
                return path
            common = os.path.commonprefix([n.rsplit("/", 1)[0] + "/" for n in news])
            common = common[: common.rfind("/") + 1]
            suffix = tail if all(n.endswith(tail) for n in news) else ""
            middles = [n[len(common): len(n) - len(suffix)] for n in news]
            return f"{common}{{{','.join(middles)}}}{suffix}"
        for d in sorted(self.dirs, key=len, reverse=True):
            if path == d or path.startswith(d + "/"):
                return self.dirs[d] + path[len(d):]
        return path


def defined_names(source: str) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


NAME = r"[A-Za-z_][A-Za-z0-9_]*"
REFERENCE = re.compile(
    rf"""(?P<dunder>__import__\((?P<quote>['"])(?P<dunder_module>bench(?:\.{NAME})+)(?P=quote)\)"""
    rf"(?P<dunder_attrs>(?:\.{NAME})+))"
    rf"|\bfrom (?P<from_module>bench(?:\.{NAME})*) import "
    rf"(?P<from_names>{NAME}(?: as {NAME})?(?:, {NAME}(?: as {NAME})?)*)"
    rf"|(?<![\w.])(?P<dotted>bench(?:\.{NAME})+)"
    r"|(?<![\w/.$-])(?P<path>(?:bench|scripts|tests)/[\w.<>*{},/-]*[\w>*}/])"
)


def from_import(rewriter: Rewriter, module: str, names: list[tuple[str, str | None]]) -> list[tuple[str, str]]:
    """`from module import names` -> [(from what, the names' text)], a name that is a module taken from its new
    package (as its old name where its own changes), any other from the module's new name."""
    buckets: dict[str, list[str]] = {}
    for name, asname in names:
        full = f"{module}.{name}"
        if full in rewriter.modules:
            target = rewriter.modules[full]
            parent, last = target.rsplit(".", 1)
            bound = asname or name
            buckets.setdefault(parent, []).append(last if last == bound else f"{last} as {bound}")
        else:
            buckets.setdefault(rewriter.module(module), []).append(f"{name} as {asname}" if asname else name)
    return list(buckets.items())


def rewrite_text(rewriter: Rewriter, text: str, name: str) -> str:
    """Every reference in `text`, each occurrence rewritten once (one pass: a new name is never read again)."""

    def sub(m: re.Match) -> str:
        if m.group("dunder"):  # __import__("bench.a.b").a.b.c: the attributes walk the new name
            old, attrs = m.group("dunder_module"), m.group("dunder_attrs")
            new, tail = rewriter.dotted(old), old.split(".", 1)[1]
            if attrs[1:] == tail or attrs[1:].startswith(tail + "."):
                attrs = "." + new.split(".", 1)[1] + attrs[1 + len(tail):]
            return f"__import__({m.group('quote')}{new}{m.group('quote')}){attrs}"
        if m.group("from_module"):
            names = [(n.split(" as ")[0], n.split(" as ")[1] if " as " in n else None)
                     for n in m.group("from_names").split(", ")]  # fmt: skip
            parts = from_import(rewriter, m.group("from_module"), names)
            return "; ".join(f"from {mod} import {', '.join(ns)}" for mod, ns in parts)
        if m.group("dotted"):
            return rewriter.dotted(m.group("dotted"))
        return rewriter.path(m.group("path"))

    text = REFERENCE.sub(sub, text)
    if Path(name).name.startswith("Containerfile"):
        text = "\n".join(regroup_copy(line) for line in text.split("\n"))
    return text


def regroup_copy(line: str) -> str:
    """A COPY of several of the package's files into one folder, after they moved to several: one COPY a folder,
    each with its package's __init__.py, so that the image holds them where they are."""
    m = re.match(r"COPY ((?:bench/\S+\.py )+)(bench/)$", line)
    if not m:
        return line
    sources = m.group(1).split()
    folders: dict[str, list[str]] = {}
    for source in sources:
        folders.setdefault(source.rsplit("/", 1)[0], []).append(source)
    if list(folders) == ["bench"]:
        return line
    lines = []
    for folder, files in folders.items():
        init = f"{folder}/__init__.py"
        files = ([init] if init not in files else []) + files
        lines.append(f"COPY {' '.join(files)} {folder}/")
    return "\n".join(lines)


def byte_offsets(text: str) -> list[int]:
    """Each line's start as a character offset (ast gives columns in UTF-8 bytes)."""
    starts, at = [], 0
    for line in text.splitlines(keepends=True):
        starts.append(at)
        at += len(line)
    return starts + [at]


def char_offset(text: str, starts: list[int], lineno: int, col_bytes: int) -> int:
    line = text[starts[lineno - 1]: starts[lineno]]
    return starts[lineno - 1] + len(line.encode()[:col_bytes].decode())


def rewrite_python(rewriter: Rewriter, text: str, name: str) -> str:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return rewrite_text(rewriter, text, name)
    starts = byte_offsets(text)
    spans: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == PACKAGE for a in node.names):
            if all(rewriter.module(a.name) == a.name for a in node.names):
                continue
            new = "import " + ", ".join(
                rewriter.module(a.name) + (f" as {a.asname}" if a.asname else "") for a in node.names
            )
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == PACKAGE:
            parts = from_import(rewriter, node.module, [(a.name, a.asname) for a in node.names])
            start = char_offset(text, starts, node.lineno, node.col_offset)
            end = char_offset(text, starts, node.end_lineno, node.end_col_offset)
            original = text[start:end]
            same_names = len(parts) == 1 and parts[0][1] == [
                f"{a.name} as {a.asname}" if a.asname else a.name for a in node.names
            ]
            if same_names and parts[0][0] == node.module:
                continue
            if same_names:  # only the module's name changes: keep the statement's own layout and comments
                new = original.replace(f"from {node.module} import", f"from {parts[0][0]} import", 1)
            else:
                if "#" in original:
                    raise Refused(f"{name}:{node.lineno}: an import with a comment inside it splits: write it "
                                  "as one import a line first")  # fmt: skip
                indent = text[starts[node.lineno - 1]: start]
                joiner = "\n" + indent if not indent.strip() else "; "
                new = joiner.join(f"from {mod} import {', '.join(ns)}" for mod, ns in parts)
            spans.append((start, end, new))
            continue
        else:
            continue
        start = char_offset(text, starts, node.lineno, node.col_offset)
        end = char_offset(text, starts, node.end_lineno, node.end_col_offset)
        spans.append((start, end, new))
    out, at = [], 0
    for start, end, new in sorted(spans):
        out.append(rewrite_text(rewriter, text[at:start], name))
        out.append(new)
        at = end
    out.append(rewrite_text(rewriter, text[at:], name))
    return "".join(out)


# ----------------------------------------------------------------------------------------------- long lines

LINE_LENGTH = 120  # ruff.toml's line-length


def e501_exempt() -> list[str]:
    """The files ruff.toml lets run over the line length (its E501 ratchet): their long lines are theirs."""
    import tomllib

    ignores = tomllib.loads((ROOT / "ruff.toml").read_text()).get("lint", {}).get("per-file-ignores", {})
    return [pattern for pattern, codes in ignores.items() if "E501" in codes]


def too_long(line: str) -> bool:
    return len(line) > LINE_LENGTH and len(line.split()) > 1 and "noqa" not in line


def docstring_tokens(tree: ast.AST) -> set[tuple[int, int]]:
    """(line, column) where each docstring starts."""
    found = set()
    for node in [tree, *ast.walk(tree)]:
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(
                first.value.value, str
            ):
                found.add((first.value.lineno, first.value.col_offset))
    return found


def split_at_space(line: str, low: int, high: int, avoid=()) -> int | None:
    """The last space of line[low:high] outside the spans in `avoid`, or None."""
    for at in range(min(high, len(line)) - 1, low, -1):
        if line[at] == " " and line[at - 1] != " " and not any(a <= at < b for a, b in avoid):
            return at
    return None


def reflowed(lines: list[str], row: int, at: int, indent: str, mark: str, more: bool = True) -> str:
    """Line `row` broken at `at`, the words after it carried to the start of the next line where that line goes on
    with the same paragraph (same indent and mark, not a list item), else onto a line of their own."""
    line, carried = lines[row], lines[row][at + 1:]
    after = lines[row + 1] if more and row + 1 < len(lines) else ""
    body = after[len(indent) + len(mark):] if after.startswith(indent + mark) else ""
    goes_on = body.strip() and not body.startswith((" ", "- ", "* ", ">>>", '"""', "|")) and body.strip() != '"""'
    if goes_on and not (mark and not after.lstrip().startswith("#")):
        lines[row: row + 2] = [line[:at].rstrip(), f"{indent}{mark}{carried} {body}"]
    else:
        lines[row: row + 1] = [line[:at].rstrip(), f"{indent}{mark}{carried}"]
    return "\n".join(lines)


def fit_line(text: str, row: int, path: str, ruff: list[str]) -> str | None:
    """The text with its line `row` (0-based) over the line length wrapped once, as a reader would: a comment or a
    docstring at a space, a string literal inside brackets into two, code after a comma inside brackets (visual
    indent), else the statement by `ruff format --range`. None where none applies."""
    import io
    import tokenize

    lines = text.split("\n")
    line = lines[row]
    docstrings = docstring_tokens(ast.parse(text))
    opens: list[int] = []  # the column after each open bracket
    start, end, comma = 0, len(lines) - 1, None  # the statement holding the line; the last comma to break after
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        (srow, scol), (erow, ecol) = (tok.start[0] - 1, tok.start[1]), (tok.end[0] - 1, tok.end[1])
        if tok.type == tokenize.NEWLINE:
            if srow >= row:
                end = srow
                break
            start = srow + 1
            continue
        covers = srow <= row <= erow and (srow < row or scol < LINE_LENGTH) and (erow > row or ecol > LINE_LENGTH)
        if covers and tok.type == tokenize.COMMENT:
            pragma = re.search(r"#\s*(noqa|fmt:|type:|pragma)", tok.string)
            if line[:scol].strip() and not pragma:  # a trailing comment goes above its line, at the line's indent
                indent = re.match(r"\s*", line).group(0)
                lines[row: row + 1] = [indent + tok.string, line[:scol].rstrip()]
                return "\n".join(lines)
            at = split_at_space(line, scol + 2, LINE_LENGTH + 1)
            if at is None:
                return None
            indent = " " * scol if not line[:scol].strip() else re.match(r"\s*", line).group(0)
            return reflowed(lines, row, at, indent, "# ")
        if covers and tok.type == tokenize.STRING:
            quote = re.match(r"[A-Za-z]*('\'\'|\"\"\"|'|\")", tok.string).group(1)
            if len(quote) == 3:
                if (srow + 1, scol) not in docstrings:
                    return None  # a triple-quoted string that is data, not prose: its lines are its content
                low = scol + 3 if srow == row else len(line) - len(line.lstrip())
                at = split_at_space(line, low, LINE_LENGTH + 1)
                if at is None:
                    return None
                indent = " " * scol if srow == row else re.match(r"\s*", line).group(0)
                return reflowed(lines, row, at, indent, "", erow > row)
            if opens and srow == row:
                prefix = tok.string[: tok.string.index(quote)]
                braces = [(m.start() + scol, m.end() + scol) for m in re.finditer(r"\{[^}]*\}", tok.string)]
                at = split_at_space(line, scol + len(prefix) + 2, LINE_LENGTH - len(quote),
                                    braces if "f" in prefix.lower() else [])  # fmt: skip
                if at is not None:
                    lines[row: row + 1] = [line[: at + 1] + quote, " " * scol + prefix + quote + line[at + 1:]]
                    return "\n".join(lines)
        if tok.type == tokenize.OP and tok.string in "([{":
            opens.append(ecol)
        elif tok.type == tokenize.OP and tok.string in ")]}" and opens:
            opens.pop()
        elif tok.type == tokenize.OP and tok.string == "," and srow == row and ecol <= LINE_LENGTH and opens:
            rest = line[ecol:].strip()
            if rest and not rest.startswith("#"):
                comma = (ecol, opens[-1])
    if comma is not None:  # code: after the last comma inside brackets that fits, aligned inside the bracket
        at, column = comma
        lines[row: row + 1] = [line[:at], " " * column + line[at:].lstrip()]
        return "\n".join(lines)
    statement = "\n".join(lines[start: end + 1])
    if "fmt: skip" in statement or "fmt: off" in text:
        return None
    out = subprocess.run([*ruff, "format", "--quiet", "--stdin-filename", path, "--range", f"{start + 1}-{end + 2}",
                          "-"], cwd=ROOT, input=text, capture_output=True, text=True, check=False)  # fmt: skip
    return out.stdout if out.returncode == 0 and out.stdout != text else None


def fit_long_lines(path: str, text: str, ruff: list[str]) -> str:
    for _ in range(500):
        row = next((i for i, line in enumerate(text.split("\n")) if too_long(line)), None)
        if row is None:
            return text
        fitted = fit_line(text, row, path, ruff)
        if fitted is None:
            raise Refused(f"{path}:{row + 1} runs over {LINE_LENGTH} characters after the rewrite and this script "
                          "cannot wrap it: shorten it in the old layout first, then run again")  # fmt: skip
        text = fitted
    raise Refused(f"{path}: its long lines would not fit")


# ----------------------------------------------------------------------------------------------- the stages


def check_clean() -> None:
    status = git("status", "--porcelain", "--untracked-files=no")
    if status.strip():
        raise Refused("the working tree has uncommitted changes: commit or stash them first, so that the move is "
                      "a commit of its own:\n" + status)  # fmt: skip


def refuse_unplaced(files: list[str]) -> None:
    missing = unplaced(files)
    if missing:
        raise Refused(
            "these files of the package are placed by no line of scripts/relayout.py (MOVES or KEEP): give each "
            "its place, then run it again:\n  " + "\n  ".join(missing)
        )


def docstring_file(docstring: str) -> str:
    import textwrap

    lines = textwrap.wrap(docstring, LINE_LENGTH - 3)
    return '"""' + "\n".join(lines) + '\n"""\n' if len(lines) > 1 else f'"""{docstring}"""\n'


def special_edits(stage: str, path: str, text: str) -> str:
    """The few edits that are not a rename, each refused where the text is not what this script knows."""
    if stage == S and path == "bench/layers.toml":  # until the layers stage replaces it, the studies' wing's own
        anchor = '    "bench.noise", '  # modules (its __init__, table.py, a new study's __init__) join the studies
        if anchor not in text:
            raise Refused("bench/layers.toml has no studies layer starting with bench.noise: see special_edits")
        return text.replace(anchor, '    "bench.studies", "bench.noise", ', 1)
    if stage == L and path == "Makefile":  # make lint checks the import rules by import-linter
        if MAKE_LINT_OLD not in text or MAKE_LINT_HELP_OLD not in text:
            raise Refused("the Makefile's lint target is not the one this script knows: see MAKE_LINT_OLD")
        return text.replace(MAKE_LINT_OLD, MAKE_LINT_NEW).replace(MAKE_LINT_HELP_OLD, MAKE_LINT_HELP_NEW)
    if stage == L and path == "tests/test_pins.py":  # the pin is used now: its allowance goes
        if PINS_ALLOWED_OLD not in text:
            raise Refused("tests/test_pins.py has no allowance for import-linter as this script knows it")
        return text.replace(PINS_ALLOWED_OLD, "")
    return text


def plan(stage: Stage, ruff: list[str]) -> dict[str, str]:
    """Every file the stage writes (its path after the stage -> its text), worked out before anything changes."""
    files = tracked()
    rewriter = Rewriter(stage.moves, files, RENAMED_PATHS.get(stage.name, {}), FOLDERS.get(stage.name, {}))
    dropped = DROPPED.get(stage.name, [])
    written: dict[str, str] = {}
    origin: dict[str, str] = {}  # a written path -> the path it had before the stage
    for path in files:
        if path in dropped or not (ROOT / path).is_file() or matches(path, NOT_REWRITTEN):
            continue
        raw = (ROOT / path).read_bytes()
        if b"\0" in raw:
            continue
        try:
            text = raw.decode()
        except UnicodeDecodeError:
            continue
        edited = special_edits(stage.name, path, text)
        new = rewrite_python(rewriter, edited, path) if path.endswith(".py") else rewrite_text(rewriter, edited, path)
        if new != text:
            written[rewriter.files.get(path, path)] = new
            origin[rewriter.files.get(path, path)] = path
    for path, docstring in NEW_PACKAGES.get(stage.name, {}).items():
        written[path] = docstring_file(docstring)
    if stage.name == L:
        written[".importlinter"] = importlinter_config()
    exempt = e501_exempt()
    for path, text in written.items():
        if not path.endswith(".py"):
            continue
        # the import order as ruff keeps it (a module's new name sorts elsewhere), then the lines that the longer
        # names took past the line length, wrapped (a file ruff.toml exempts keeps its own)
        # (bench first-party by name: ruff would take a folder not yet moved into place for a third party's)
        out = subprocess.run([*ruff, "check", "--fix", "--select", "I", "--quiet", "--exit-zero", "--config",
                              "lint.isort.known-first-party = ['bench']", "--stdin-filename", path, "-"], cwd=ROOT,
                             input=text, capture_output=True, text=True)  # fmt: skip
        if out.returncode != 0:
            raise Refused(f"ruff could not sort the imports of {path}: {out.stderr.strip()}")
        exempted = matches(origin.get(path, path), exempt)
        written[path] = out.stdout if exempted else fit_long_lines(path, out.stdout, ruff)
    return written


def atomic_writer():
    """bench's own atomic write (a temporary beside the file, fsync, rename), loaded before anything moves: the
    layers stage moves the module itself."""
    sys.path.insert(0, str(ROOT))
    try:
        from bench.base.atomic import write_text_atomic
    except ImportError:
        from bench.atomic import write_text_atomic
    return write_text_atomic


def apply(stage: Stage, ruff: list[str]) -> None:
    write_text_atomic = atomic_writer()
    written = plan(stage, ruff)  # refuses, changing nothing, before the first move
    for old, new in stage.moves:
        (ROOT / new).parent.mkdir(parents=True, exist_ok=True)
        git("mv", old, new)
    for path in DROPPED.get(stage.name, []):
        if (ROOT / path).exists():
            git("rm", "-q", path)
    for folder in sorted({str(Path(old).parent) for old, _ in stage.moves}, key=len, reverse=True):
        leftover = ROOT / folder  # a folder emptied by the moves: its bytecode goes with it, and then it does
        if leftover.is_dir() and not any(p.is_file() and "__pycache__" not in p.parts for p in leftover.rglob("*")):
            shutil.rmtree(leftover)
    for path, text in written.items():
        target = ROOT / path
        target.parent.mkdir(parents=True, exist_ok=True)
        mode = target.stat().st_mode & 0o777 if target.exists() else 0o666  # a script stays executable
        write_text_atomic(target, text, mode)
        git("add", path)


def default_ruff() -> list[str]:
    tools = ROOT / ".venvs" / "tools" / "bin" / "python"
    return [str(tools), "-m", "ruff"] if tools.exists() else ["ruff"]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python3 scripts/relayout.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("stage", choices=["studies", "layers", "check"])
    parser.add_argument("--ruff", help="the command that runs ruff (default: the tools env's, else ruff on PATH)")
    args = parser.parse_args(argv)
    ruff = args.ruff.split() if args.ruff else default_ruff()
    try:
        files = tracked()
        refuse_unplaced(files)
        found = stages()
        if args.stage == "check":
            for stage in found.values():
                state = "applied" if stage.done else "not applied" if stage.untouched else "half applied"
                print(f"{stage.name}: {len(stage.moves)} files, {state}")
            return 0
        stage = found[args.stage]
        if stage.done:
            print(f"{stage.name}: already applied; nothing to do")
            return 0
        if not stage.untouched:
            half = [o for o, _ in stage.moves if not (ROOT / o).exists()]
            raise Refused(f"{stage.name} is half applied (moved already: {', '.join(half[:8])}...): "
                          "reset the checkout to its last commit and run it again")  # fmt: skip
        if args.stage == L and not found[S].done:
            raise Refused("the layers stage needs the studies stage first: python3 scripts/relayout.py studies")
        check_clean()
        apply(stage, ruff)
        print(f"{stage.name}: {len(stage.moves)} files moved and every reference rewritten; review, then commit")
        return 0
    except Refused as e:
        print(f"relayout: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
