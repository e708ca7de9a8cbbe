"""An offline wheel bundle for a box that already has its frameworks (`make wheelhouse`, docs/OWN_ENVIRONMENT.md):
the libraries the workloads need, at the locked versions, hash-checked, for another Python (3.12 by default) on
manylinux x86_64. Stdlib only; the download is pip's (`pip download --only-binary=:all: --no-deps`).

The list: every distribution the workload libraries (WORKLOAD_ROOTS) need in today's locks of the TensorFlow-free
backends (LOCK_ENVS), found through each uv.lock's dependency graph, without the frameworks and what comes with them
(FRAMEWORK_OWNED, never entered). A version is the locks' (they must agree); a pure-Python wheel must have a hash the
lock has (`--require-hashes`). A compiled wheel for another Python is no file the lock (resolved for Python 3.11)
names: it is downloaded at the locked version, checked against the index's hash by pip, and its sha256 recorded.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from bench.base.atomic import write_text_atomic
from bench.envs.common import ROOT, EnvError, say

LOCK_ENVS = ("jax", "torch", "native-torch")  # today's backends that run without TensorFlow
# The libraries the Keras 3 and native workloads import (each model folder's workload.toml [needs], read by bench.catalogue.ownenv.model_needs), and tabulate for the table.
WORKLOAD_ROOTS = (
    "keras",
    "keras-hub",
    "keras-cv",
    "transformers",
    "diffusers",
    "peft",
    "accelerate",
    "segment-anything",
    "tabulate",
)
TABLE_LOCK = "tools"  # tabulate's lock: `make table ENV=current` renders in the user's own Python
# The frameworks and what they bring: the box has its own, matched to its CUDA; never bundled, never walked into.
FRAMEWORKS = {"torch", "jax", "tensorflow", "tensorflow-cpu"}  # what a cell runs on: the box's own, never bundled
FRAMEWORK_OWNED = re.compile(
    r"^(torch|torchvision|torchaudio|triton|jax|jaxlib|jax-cuda\d+-.*|tensorflow.*|tf-keras|tensorboard.*|keras-nlp|"
    r"nvidia-.*|numpy|ml-dtypes|scipy|opt-einsum|sympy|mpmath|networkx|setuptools|wheel|pip)$"
)
DEFAULT_PYTHON = "3.12"
PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64")
BUDGET_MIB = 100  # the bundle must stay well under this: no framework wheels


def canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class Pin:
    name: str
    version: str
    hashes: set[str] = field(default_factory=set)  # the locks' sha256s of this version's files
    pure: bool = False  # the lock has a py3-none-any wheel: one file for every Python
    envs: list[str] = field(default_factory=list)


def lock_packages(env: str) -> dict[str, dict]:
    lock = tomllib.loads((ROOT / "envs" / env / "uv.lock").read_text())
    return {canon(p["name"]): p for p in lock["package"]}


def requirement_hashes(env: str) -> dict[str, tuple[str, set[str]]]:
    """name -> (version, its sha256s) from envs/<env>/requirements.txt (what the env is built from)."""
    out: dict[str, tuple[str, set[str]]] = {}
    current = None
    for line in (ROOT / "envs" / env / "requirements.txt").read_text().splitlines():
        if m := re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;\\]+)", line):
            current = canon(m.group(1))
            out[current] = (m.group(2), set())
        for digest in re.findall(r"--hash=sha256:([0-9a-f]{64})", line):
            if current:
                out[current][1].add(digest)
    return out


def closure(packages: dict[str, dict], roots: tuple[str, ...], have: frozenset[str] = frozenset()) -> list[str]:
    """The roots this lock has and everything they depend on, not entering the frameworks' own nor what the target
    interpreter has (`have`, canonical names: what it has stays, with what it brought)."""
    seen: list[str] = []
    todo = [canon(r) for r in roots if canon(r) in packages]
    while todo:
        name = todo.pop()
        if name in seen or FRAMEWORK_OWNED.match(name) or name in have:
            continue
        seen.append(name)
        package = packages[name]
        todo.extend(canon(d["name"]) for d in package.get("dependencies", []) if canon(d["name"]) in packages)
    return seen


def workload_roots(have: dict[str, str]) -> tuple[str, ...]:
    """For an interpreter that has `have`: the libraries of every cell it could then run and cannot yet, and tabulate.
    A cell counts when each of its needs (its backend's, its model's: bench/catalogue/ownenv.py) is installed or can be
    bundled; a need only a framework can meet (torch, jax, TensorFlow: never bundled) must be installed. So without
    TensorFlow, keras-cv (whose StableDiffusion imports TensorFlow) is not brought."""
    from bench.catalogue.backends import get_backend
    from bench.catalogue.ownenv import FRAMEWORK_NEEDS, model_needs
    from bench.catalogue.registry import MODELS

    versions = {canon(name) for name in have}
    locked = set().union(*(lock_packages(env) for env in LOCK_ENVS))
    bundleable = {name for name in locked if not FRAMEWORK_OWNED.match(name)}
    roots: list[str] = []
    for backend, framework_needs in FRAMEWORK_NEEDS.items():
        family = get_backend(backend).family
        for model in MODELS:
            try:
                needs = (*framework_needs, *model_needs(family, model))
            except KeyError:  # no implementation of this model on this family
                continue
            unmet = [need for need in needs if not any(canon(n) in versions for n in need)]
            brought = [next((canon(n) for n in need if canon(n) in bundleable), None) for need in unmet]
            if None not in brought:
                roots += [name for name in brought if name not in roots]
    return tuple(roots)


def plan(
    envs: tuple[str, ...] = LOCK_ENVS, roots: tuple[str, ...] = WORKLOAD_ROOTS, have: dict[str, str] | None = None
) -> list[Pin]:
    """Every distribution of the bundle with its locked version and hashes; refuses locks that disagree. With
    `have` (a target interpreter's distributions, name -> version), only what it lacks."""
    pins: dict[str, Pin] = {}
    installed = frozenset(canon(name) for name in have or {})
    for env in (*envs, TABLE_LOCK):
        packages, hashes = lock_packages(env), requirement_hashes(env)
        for name in closure(packages, ("tabulate",) if env == TABLE_LOCK else roots, installed):
            version = packages[name]["version"]
            pin = pins.setdefault(name, Pin(name, version))
            if pin.version != version:
                raise EnvError(
                    f"the locks disagree on {name}: {pin.version} ({', '.join(pin.envs)}) vs {version} ({env})"
                )
            pin.envs.append(env)
            pin.hashes |= hashes.get(name, ("", set()))[1]
            pin.pure |= any(w["url"].endswith("-none-any.whl") for w in packages[name].get("wheels", []))
    return sorted(pins.values(), key=lambda p: p.name)


def planned_bytes(pins: list[Pin], env_order: tuple[str, ...] = (*LOCK_ENVS, TABLE_LOCK)) -> int:
    """The bundle's size before any download, from the sizes the locks record: a pure wheel's own; a compiled one's
    by its Linux x86_64 wheel for the locks' Python (the target's differs by its build, not by much)."""
    total = 0
    for pin in pins:
        package = next(lock_packages(env)[canon(pin.name)] for env in env_order if env in pin.envs)
        wheels = package.get("wheels", [])
        pure = [w for w in wheels if w["url"].endswith("-none-any.whl")]
        linux = [w for w in wheels if "manylinux" in w["url"] and "x86_64" in w["url"]]
        chosen = (pure or linux or wheels)[:1]
        total += chosen[0].get("size", 0) if chosen else 0
    return total


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download(pins: list[Pin], out: Path, python_version: str) -> list[dict]:
    """pip download, wheels only, for python_version on manylinux x86_64, no dependency resolution: the pure wheels
    with the locks' hashes required, then the compiled ones at the locked versions (pip checks the index's hash)."""
    out.mkdir(parents=True, exist_ok=True)
    target = [
        "--only-binary=:all:",
        "--no-deps",
        "--python-version",
        python_version,
        "--implementation",
        "cp",
        *(f"--platform={p}" for p in PLATFORMS),
        "-d",
        str(out),
    ]
    pure = [p for p in pins if p.pure]
    compiled = [p for p in pins if not p.pure]
    pure_req = out / ".pure-requirements.txt"
    pure_req.write_text(
        "".join(
            f"{p.name}=={p.version} " + " ".join(f"--hash=sha256:{h}" for h in sorted(p.hashes)) + "\n" for p in pure
        )
    )
    for args in (["-r", str(pure_req), "--require-hashes"], [f"{p.name}=={p.version}" for p in compiled]):
        if args:
            proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", *target, *args])
            if proc.returncode:
                raise EnvError(
                    f"pip download failed (exit {proc.returncode}); nothing of this bundle is to be trusted: remove {out}"
                )
    pure_req.unlink()
    files = {canon(f.name.split("-")[0]): f for f in out.glob("*.whl")}
    rows = []
    for pin in pins:
        path = files.get(canon(pin.name))
        if path is None:
            raise EnvError(f"pip download left no wheel for {pin.name}=={pin.version} in {out}")
        wheel_version = path.name.split("-")[1]
        if wheel_version != pin.version:
            raise EnvError(f"{path.name} is not the locked {pin.name}=={pin.version}")
        digest = sha256(path)
        if pin.pure and digest not in pin.hashes:
            raise EnvError(f"{path.name}: sha256 {digest} is none of the lock's")
        rows.append(
            {
                "name": pin.name,
                "version": pin.version,
                "file": path.name,
                "sha256": digest,
                "bytes": path.stat().st_size,
                "hash_source": "lock"
                if digest in pin.hashes
                else f"index (the lock was resolved for Python 3.11: no {python_version} file in it)",
                "locks": pin.envs,
            }
        )
    return rows


# Asked of the target interpreter, from outside the checkout (its cwd is /): its Python, then every installed
# distribution. Python 2 must be able to read it as far as the version check (it is refused with its version).
OLDEST_PYTHON = (3, 8)  # importlib.metadata
TOO_OLD_EXIT = 3
WHAT_IT_HAS = f"""import sys
if sys.version_info < {OLDEST_PYTHON!r}:
    sys.stdout.write('%d.%d' % sys.version_info[:2])
    sys.exit({TOO_OLD_EXIT})
import importlib.metadata as m, json
print(json.dumps({{'python': '%d.%d' % sys.version_info[:2],
    'distributions': {{d.metadata['Name']: d.version for d in m.distributions() if d.metadata['Name']}}}}))
"""
ANSWER_TIMEOUT_S = 120  # listing a few thousand distributions takes seconds; a program that never answers is ended


def interpreter_distributions(python: str) -> tuple[str, dict[str, str]]:
    """A target interpreter's Python (3.12) and its installed distributions (name -> version), as it reports them.
    Whatever it is (not a Python, Python 2, one that hangs), a one-line EnvError; it is ended with all it started."""
    not_python = f"FOR={python} is not a Python {'.'.join(map(str, OLDEST_PYTHON))} or newer interpreter"
    try:
        proc = subprocess.Popen([python, "-c", WHAT_IT_HAS], cwd="/", stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)  # fmt: skip
    except OSError as e:
        raise EnvError(f"cannot run {python}: {e.strerror or e}") from e
    try:
        stdout, stderr = proc.communicate(timeout=ANSWER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise EnvError(f"{not_python}: it did not answer in {ANSWER_TIMEOUT_S} s and was ended") from None
    finally:  # on a timeout or Ctrl-C: whatever it started goes with it (it leads its own process group)
        if proc.returncode is None:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    if proc.returncode == TOO_OLD_EXIT and re.fullmatch(r"\d+\.\d+", stdout.strip()):
        raise EnvError(f"{not_python}: it is Python {stdout.strip()}")
    if proc.returncode:
        raise EnvError(f"{python} could not list its distributions (exit {proc.returncode}): {stderr.strip()[-300:]}")
    try:
        answer = json.loads((stdout.strip().splitlines() or [""])[-1])
        return answer["python"], dict(answer["distributions"])
    except (ValueError, TypeError, KeyError):
        raise EnvError(f"{not_python}: it printed {stdout.strip()[-200:]!r} when asked what it has") from None


def kept_distributions(have: dict[str, str]) -> list[dict]:
    """What the whole bundle would hold and the target already has: kept as it is, never replaced; a version other
    than the lock's is said here (and recorded in each result, as every unlocked run records its distributions)."""
    versions = {canon(name): version for name, version in have.items()}
    return [
        {"name": pin.name, "installed": versions[pin.name], "locked": pin.version}
        for pin in plan()
        if pin.name in versions
    ]


def tracked_bytes() -> int | None:
    """The project's tracked files, in bytes (what a checkout copied to the machine weighs); None outside git."""
    try:
        names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return sum((ROOT / n).stat().st_size for n in names.decode().split("\0") if n and (ROOT / n).is_file())


def install_command(out: Path, python: str = "python") -> str:
    return f"{python} -m pip install --no-index --no-deps --find-links {out} -r {out / 'requirements.txt'}"


def build(out: Path, python_version: str = DEFAULT_PYTHON, target: str | None = None) -> dict:
    """The bundle for a Python version (every workload library), or for one interpreter (`target`): only what it
    lacks, at its own Python version, installed by that interpreter."""
    have = interpreter_distributions(target)[1] if target else None
    pins = plan(roots=workload_roots(have), have=have) if have is not None else plan()
    if not pins:
        raise EnvError(f"{target} has every library the workloads need: nothing to bundle")
    rows = download(pins, out, python_version)
    total = sum(r["bytes"] for r in rows)
    # --no-deps on install too: the box's frameworks stay as they are, and keras-hub's tensorflow-text (a TensorFlow
    # wheel, for its tokenizers' preprocessing, which the benchmarks never use) is not asked for.
    write_text_atomic(
        out / "requirements.txt", "".join(f"{r['name']}=={r['version']} --hash=sha256:{r['sha256']}\n" for r in rows)
    )
    manifest = {
        "python_version": python_version,
        "platforms": list(PLATFORMS),
        "locks": [*LOCK_ENVS, TABLE_LOCK],
        "bytes": total,
        "wheels": rows,
        "install": install_command(out, target or "python"),
    }
    if target:
        manifest["for"] = {"interpreter": target, "kept": kept_distributions(have)}
    write_text_atomic(out / "manifest.json", json.dumps(manifest, indent=2) + "\n")
    if total >= BUDGET_MIB * 2**20:
        raise EnvError(
            f"the bundle is {total / 2**20:.1f} MiB, over its {BUDGET_MIB} MiB budget: a framework's wheel got in?"
        )
    return manifest


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench wheelhouse", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--python-version", default=DEFAULT_PYTHON, help=f"the target box's Python (default {DEFAULT_PYTHON})"
    )
    parser.add_argument(
        "--for", dest="target", metavar="PYTHON", help="an interpreter: bundle only what it lacks, for its Python"
    )
    parser.add_argument("--out", type=Path, help="folder (default: wheelhouse/py<version>[-for-<its fingerprint>])")
    parser.add_argument("--list", action="store_true", help="print the planned name==version list (offline) and exit")
    args = parser.parse_args(argv)
    try:
        version, have, suffix = args.python_version, None, ""
        if args.target:
            version, have = interpreter_distributions(args.target)
            listing = "".join(f"{canon(n)}=={v}\n" for n, v in sorted(have.items()))
            suffix = "-for-" + hashlib.sha256(f"{args.target}\n{listing}".encode()).hexdigest()[:8]
            if not FRAMEWORKS & {canon(n) for n in have}:  # a bare Python: the bundle alone runs no cell
                say(f"note: {args.target} has none of {', '.join(sorted(FRAMEWORKS))}: no cell runs there until one is "
                    "installed (never bundled); the bundle holds only the libraries every workload shares")
        if args.list:
            for pin in plan(roots=workload_roots(have), have=have) if have is not None else plan():
                say(f"{pin.name}=={pin.version}  ({'pure' if pin.pure else 'compiled'}; {', '.join(pin.envs)})")
            return 0
        out = (args.out or ROOT / "wheelhouse" / f"py{version}{suffix}").absolute()
        if out.exists() and any(out.iterdir()):
            raise EnvError(f"{out} is not empty: remove it first (a bundle is built whole, never on top of another)")
        manifest = build(out, version, args.target)
    except EnvError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    size = manifest["bytes"] / 2**20
    say(f"wrote {len(manifest['wheels'])} wheels, {size:.1f} MiB, to {out} (manifest.json says where each hash came from)")
    for kept in manifest.get("for", {}).get("kept", []):
        if kept["installed"] != kept["locked"]:
            say(f"kept {kept['name']} {kept['installed']} as installed (the lock has {kept['locked']})")
    if (tracked := tracked_bytes()) is not None:
        say(f"with the project's tracked files ({tracked / 2**20:.1f} MiB): {size + tracked / 2**20:.1f} MiB to copy")
    say(f"on the box, in its Python {version} environment: {manifest['install']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
