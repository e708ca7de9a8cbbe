"""What a side of `make ab` is, and how one process of a cell runs on it.

A side is written as one of:
- a git commit (a hash, a branch, a tag, HEAD~3): that commit's code, checked out in a worktree of its own and run by
  its own `python -m bench run`, in this checkout's built envs (a commit whose lock of the cell's env differs is
  refused: what it measured ran in another env);
- `<package>==<version>`: the cell's env with that release in place of the locked one (an env derived from the lock
  and built once, as `make sweep` derives them: bench/studies/sweep/derive.py);
- a path to a wheel file (`dist/keras-3.16.0.dev0-py3-none-any.whl`): the same, its package and version from the
  file's name, resolved from its folder;
- a path to a Python interpreter: that environment as it is, unlocked (`bench run --env current`);
- `stack:<name>`: this checkout's cell on another software stack (`stack:2024`, keras-benchmarks v0.0.5's pins).
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bench.base.errors import BenchError
from bench.base.provenance import REPO_ROOT, venvs_dir
from bench.catalogue.backends import STACKS, env_name
from bench.catalogue.registry import plan_cells
from bench.run.interleaved import child_env

SHORT = 10  # a commit as printed and as a step names it


@dataclass(frozen=True)
class CellArgs:
    """What `bench run` needs to run one cell again, from its key and profile (keys have been stable since the first
    commit the history holds)."""

    key: str
    backend: str
    model: str
    task: str
    batch_size: int
    variant: str
    stack: str
    profile: str

    @classmethod
    def parse(cls, key: str, profile: str) -> CellArgs:
        parts = key.split("__")
        stack = "today"
        if len(parts) == 6 and parts[5].startswith("stack-"):
            stack = parts.pop()[len("stack-"):]
        if len(parts) != 5 or not parts[3].startswith("bs") or not parts[3][2:].isdigit():
            raise BenchError(f"{key!r} is no cell key (backend__model__task__bs<N>__variant, as "
                             "python -m bench history keys lists them)")
        backend, model, task, batch, variant = parts
        return cls(key, backend, model, task, int(batch[2:]), variant, stack, profile)

    @property
    def env(self) -> str:
        return env_name(self.backend, self.stack)

    def on_stack(self, stack: str) -> CellArgs:
        key = "__".join([self.backend, self.model, self.task, f"bs{self.batch_size}", self.variant])
        return CellArgs(key + ("" if stack == "today" else f"__stack-{stack}"), self.backend, self.model, self.task,
                        self.batch_size, self.variant, stack, self.profile)  # fmt: skip

    def argv(self, results_dir: Path, python: str = sys.executable) -> list[str]:
        return [python, "-m", "bench", "run", "--backend", self.backend, "--model", self.model,
                "--task", self.task, "--variant", self.variant, "--batch-size", str(self.batch_size),
                "--profile", self.profile, "--stack", self.stack, "--repeats", "1",
                "--results-dir", str(results_dir)]  # fmt: skip


def cells_named(profile: str, keys: list[str], backends: list[str], models: list[str], tasks: list[str],
                variants: list[str]) -> list[CellArgs]:  # fmt: skip
    """The cells a comparison runs: the keys given, else those of the profile's table that BACKEND= MODEL= TASK=
    (VARIANT=) select, each its own comparison."""
    if keys:
        return [CellArgs.parse(key, profile) for key in keys]
    if not (backends and models):
        raise BenchError("name the cells: CELL=<cell key>[,<key>...], or BACKEND= and MODEL= (TASK=, VARIANT= narrow "
                         "them)")
    return [CellArgs.parse(cell.key, profile)
            for cell in plan_cells(profile, backends=backends, models=models, tasks=tasks or None,
                                   variants=variants or None)]  # fmt: skip


def git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True)
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["failed"])[-1]
        raise BenchError(f"git {' '.join(args)}: {last}")
    return done.stdout.strip()


def resolve(commit: str) -> str:
    try:
        return git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}")
    except BenchError:
        raise BenchError(f"commit {commit} is not in this clone (git fetch the branch that holds it, then again)"
                         ) from None


def lock_problems(env: str, commits: list[str]) -> list[str]:
    """Each commit whose lock of `env` (envs/<env>/requirements.txt, from which .venvs/<env> is built) differs from
    this checkout's."""
    path = f"envs/{env}/requirements.txt"
    here = (REPO_ROOT / path).read_bytes() if (REPO_ROOT / path).is_file() else None
    out = []
    for commit in commits:
        theirs = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=REPO_ROOT, capture_output=True)
        if theirs.returncode or theirs.stdout != here:
            out.append(f"{path} at {commit[:SHORT]} " + ("is missing" if theirs.returncode else
                                                         "differs from this checkout's"))
    return out


@contextlib.contextmanager
def worktrees() -> Iterator[Callable[[str], Path]]:
    """A function giving each commit its checked-out tree (made once, on first use), all removed at the end. Each tree
    reaches the built envs through a .venvs link (git status ignores it: untracked, and ignored as a directory)."""
    root = Path(tempfile.mkdtemp(prefix="bench-commits-"))
    trees: dict[str, Path] = {}

    def tree(commit: str) -> Path:
        if commit not in trees:
            path = root / commit[:12]
            git("worktree", "add", "--detach", "--quiet", str(path), commit)
            trees[commit] = path
            (path / ".venvs").symlink_to(venvs_dir().resolve())
        return trees[commit]

    try:
        yield tree
    finally:
        for path in trees.values():
            subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=REPO_ROOT, capture_output=True)
        shutil.rmtree(root, ignore_errors=True)
        subprocess.run(["git", "worktree", "prune"], cwd=REPO_ROOT, capture_output=True)


@dataclass
class Side:
    """One side as written, and once prepared for a cell, how its process runs."""

    spec: str  # as the user wrote it
    kind: str  # commit, version, wheel, interpreter, stack
    label: str  # short, for folders and lines
    commit: str | None = None
    stack: str | None = None
    package: str | None = None
    version: str | None = None
    wheel: Path | None = None
    python: str | None = None
    about: dict = field(default_factory=dict)  # what it was built from (a derivation), recorded
    # a test fixture's per-step slowdown of this side (0.2: +20%; tests/fixtures/step_delay), for measuring what a
    # comparison detects; never a product setting
    step_delay: float = 0.0

    def to_dict(self) -> dict:
        out = {"spec": self.spec, "kind": self.kind}
        for name in ("commit", "stack", "package", "version", "python"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.wheel is not None:
            out["wheel"] = str(self.wheel)
        if self.step_delay:
            out["step_delay"] = self.step_delay
        return {**out, **self.about}

    def cell_of(self, cell: CellArgs) -> CellArgs:
        return cell.on_stack(self.stack) if self.stack else cell

    def prepare(self, cell: CellArgs, say) -> None:
        """What the side needs before its first process: a commit's lock checked, a release's env derived and
        built (once; kept under .venvs/sweep/ for the next comparison)."""
        if self.kind == "commit":
            if problems := lock_problems(cell.env, [self.commit]):
                raise BenchError(f"cannot run {cell.key} at {self.spec} in this checkout's envs: {problems[0]}: what "
                                 f"changed may be the env's (compare releases with A=<package>==<version>)")
        elif self.kind in ("version", "wheel"):
            self.python, self.about = built_release(cell.env, self.package, self.version, self.wheel, say)

    def command(self, cell: CellArgs, out: Path, tree: Callable[[str], Path]) -> tuple[list[str], Path, dict]:
        """(argv, cwd, environment) of one process of the cell on this side, writing under `out`."""
        env = child_env()
        cell = self.cell_of(cell)
        if self.kind == "commit":
            argv, cwd = cell.argv(out), tree(self.commit)
        elif self.python is not None:  # an interpreter, or a release's built env: that env as it is
            argv, cwd = cell.argv(out, self.python) + ["--env", "current"], REPO_ROOT
        else:
            argv, cwd = cell.argv(out), REPO_ROOT
        if self.step_delay:
            from bench.studies.noise.detection import delay_environment

            env.update(delay_environment(self.step_delay, cwd))
        return argv, cwd, env


def built_release(env: str, package: str, version: str, wheel: Path | None, say) -> tuple[str, dict]:
    """The interpreter of `env` derived with package==version (from the wheel's folder where a wheel is named), and
    the derivation that built it."""
    from dataclasses import asdict

    from bench.envs.common import EnvError
    from bench.studies.sweep.derive import build, derive

    if wheel is not None:  # uv finds the file beside the index (a folder of wheels, as the sweep's tests serve)
        links = os.environ.get("UV_FIND_LINKS")
        os.environ["UV_FIND_LINKS"] = " ".join(filter(None, [str(wheel.parent), links]))
    derivation = derive(env, package, version, say=say)
    if not derivation.ok:
        raise BenchError(f"{package}=={version} cannot be put in the {env} env: {derivation.reason}")
    try:
        python = str(build(derivation))
    except EnvError as e:
        raise BenchError(f"the {env} env with {package}=={version} did not build: {e}") from e
    say(f"{env} with {package}=={version}: {derivation.describe()}")
    return python, {"derivation": asdict(derivation)}


def parse_side(text: str) -> Side:
    """A side as written (see the module's docstring); an error naming the forms where it is none of them."""
    text = text.strip()
    if not text:
        raise BenchError("an empty side: A= and B= each name a commit, <package>==<version>, a wheel file, a "
                         "Python interpreter, or stack:<name>")
    if text.startswith("stack:"):
        stack = text[len("stack:"):]
        if stack not in STACKS:
            raise BenchError(f"unknown stack {stack!r} in {text!r}; stacks: {', '.join(STACKS)}")
        return Side(text, "stack", f"stack-{stack}", stack=stack)
    if "==" in text:
        from bench.studies.sweep.derive import valid_version

        package, _, version = text.partition("==")
        if not package or not version:
            raise BenchError(f"{text!r} is no <package>==<version>")
        return Side(text, "version", f"{package}-{valid_version(version)}", package=package, version=version)
    path = Path(text).expanduser()
    if text.endswith(".whl"):
        from packaging.utils import InvalidWheelFilename, parse_wheel_filename

        if not path.is_file():
            raise BenchError(f"no wheel file {text}")
        try:
            name, version = parse_wheel_filename(path.name)[:2]
        except InvalidWheelFilename:
            raise BenchError(f"{path.name} is no wheel file name (<package>-<version>-...-<platform>.whl)") from None
        return Side(text, "wheel", f"{name}-{version}-wheel", package=name, version=str(version), wheel=path.resolve())
    if os.sep in text and path.is_file() and os.access(path, os.X_OK):
        python = str(path.absolute())  # not resolved: a venv's python is a link to the interpreter it was made from
        return Side(text, "interpreter", f"python-{hashlib.sha256(python.encode()).hexdigest()[:8]}", python=python)
    if os.sep in text and not path.exists():
        raise BenchError(f"no such interpreter or wheel: {text}")
    commit = resolve(text)
    return Side(text, "commit", commit[:SHORT], commit=commit)
