"""One environment per swept version: the backend's lock with the swept package at that version and the fewest
co-changes the resolver needs, itself hash-locked, kept and reused (built once).

The resolver (uv pip compile) is asked three times at most, each looser than the one before, and the first that
resolves is the version's lock:

1. `pinned`: the backend's top-level requirements with the package at the version, every other package of the
   backend's lock as a constraint: nothing else moves.
2. `transitive`: the top-level pins kept, the rest of the lock only preferred (uv keeps a preferred version where it
   can): only dependencies move.
3. `top-level`: the top-level requirements by name only, the lock preferred: a top-level package moves too (keras-hub
   that requires a newer Keras).

Where none resolves, the version is NA with the resolver's own reason. What moved beside the package (its
co-changes) is recorded in derivation.json beside the lock. `drop` leaves top-level requirements out that the swept
cell does not import (fewer packages to hold back the swept one); `keep` names packages of the backend's lock kept at
their locked version although no kept requirement declares them (a release that imports a package it does not
declare, such as Keras 3.0 and `packaging`, found it in the backend's env). Index options reach uv through its own
variables (UV_FIND_LINKS, UV_NO_INDEX, UV_OFFLINE): the tests serve a local folder that way.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import subprocess
import tempfile
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.base.atomic import write_json_atomic, write_text_atomic
from bench.base.provenance import REPO_ROOT, env_stamp, venvs_dir
from bench.envs.build import build_lock, build_locked
from bench.envs.common import uv_bin
from bench.envs.locks import canon, parse_req, req_versions

TIERS = ("pinned", "transitive", "top-level")
PYTHON_VERSION = "3.11"
PLATFORM = "x86_64-unknown-linux-gnu"
LOCKS_DIR = REPO_ROOT / "envs" / "sweep"
# beside the backends' envs (bench/base/provenance.py venvs_dir), one folder per backend and version
VENVS_DIR = venvs_dir() / "sweep"


@dataclass
class Derivation:
    """What one version's environment is, or why there is none."""

    backend: str
    package: str
    version: str
    base_lock_sha256: str
    drop: list[str]
    keep: list[str] = field(default_factory=list)
    status: str = "ok"  # ok, or na: no resolution beside the backend's pins
    tier: str | None = None
    reason: str | None = None
    co_changes: dict[str, list[str | None]] = field(default_factory=dict)  # name -> [base version, this version]
    removed: int = 0  # packages of the base lock this env does not have (what `drop` took away)
    lock_sha256: str | None = None
    lock: str | None = None  # the lock's path, relative to the repository where it lies in it

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def describe(self) -> str:
        if not self.ok:
            return f"NA: {self.reason}"
        moved = ", ".join(f"{n} {a or '-'}->{b or '-'}" for n, (a, b) in sorted(self.co_changes.items()))
        return f"{self.tier}; co-changes: {moved or 'none'}"


def slug(package: str, version: str) -> str:
    return f"{canon(package)}-{version}"


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def requirement_lines(text: str) -> list[str]:
    """The `name==version` lines of a hashed requirements file, markers and hashes left out."""
    return [f"{name}=={version}" for name, version in req_versions(text).items()]


def base_inputs(base_dir: Path) -> tuple[list[str], list[str], list[str]]:
    """The backend's top-level requirements, its overrides and constraints (envs/<backend>/pyproject.toml)."""
    spec = tomllib.loads((base_dir / "pyproject.toml").read_text())
    uv = spec.get("tool", {}).get("uv", {})
    return (
        list(spec.get("project", {}).get("dependencies", [])),
        list(uv.get("override-dependencies", [])),
        list(uv.get("constraint-dependencies", [])),
    )


def resolver_reason(stderr: str) -> str:
    """uv's explanation, without its progress lines."""
    lines = [ln.rstrip() for ln in stderr.splitlines() if ln.strip() and not ln.startswith(("Using ", "Resolved "))]
    return " ".join(" ".join(lines).split())[:1500] or "the resolver failed without a message"


def compile_lock(
    inputs: list[str], overrides: list[str], constraints: list[str], prefer: str | None, prereleases: bool = False
) -> tuple[str | None, str]:
    """uv pip compile with hashes: (the lock's text, "") or (None, the resolver's reason). Pre-releases only where
    asked: uv's default takes one where a dependency names one, and once resolved a TensorFlow release candidate that
    brought keras-nightly, a second `keras` package over the swept one."""
    with tempfile.TemporaryDirectory(prefix="sweep-lock-") as scratch:
        folder = Path(scratch)
        (folder / "requirements.in").write_text("\n".join(inputs) + "\n")
        command = [
            uv_bin(),
            "pip",
            "compile",
            str(folder / "requirements.in"),
            "--generate-hashes",
            "--no-header",
            "--no-annotate",
            "--python-version",
            PYTHON_VERSION,
            "--python-platform",
            PLATFORM,
            "-o",
            str(folder / "requirements.txt"),
        ]
        if not prereleases:
            command += ["--prerelease", "disallow"]
        if overrides:
            (folder / "overrides.txt").write_text("\n".join(overrides) + "\n")
            command += ["--override", str(folder / "overrides.txt")]
        if constraints:
            (folder / "constraints.txt").write_text("\n".join(constraints) + "\n")
            command += ["--constraint", str(folder / "constraints.txt")]
        if prefer is not None:  # an existing output file: uv keeps its versions where it can
            (folder / "requirements.txt").write_text(prefer)
        found = subprocess.run(command, capture_output=True, text=True)
        if found.returncode != 0:
            return None, resolver_reason(found.stderr)
        return (folder / "requirements.txt").read_text(), ""


def attempts(
    package: str, version: str, base_dir: Path, drop: list[str], keep: list[str]
) -> list[tuple[str, list[str], list[str], bool]]:
    """(tier, inputs, constraints, prefer the base lock) for each tier, loosest last."""
    top, _, constraints = base_inputs(base_dir)
    left_out = {canon(package), *(canon(d) for d in drop)}
    swept = f"{package}=={version}"
    pins = [
        line
        for line in requirement_lines((base_dir / "requirements.txt").read_text())
        if canon(line.split("==")[0]) != canon(package)
    ]
    kept_pins = [line for line in pins if canon(line.split("==")[0]) in {canon(k) for k in keep}]
    missing = {canon(k) for k in keep} - {canon(line.split("==")[0]) for line in kept_pins}
    if missing:
        raise ValueError(f"keep names packages the backend's lock does not have: {', '.join(sorted(missing))}")
    kept = [r for r in top if parse_req(r)[0] not in left_out] + kept_pins
    names = [parse_req(r)[0] + (f"[{','.join(parse_req(r)[1])}]" if parse_req(r)[1] else "") for r in kept]
    return [
        ("pinned", [swept, *kept], [*constraints, *pins], False),
        ("transitive", [swept, *kept], constraints, True),
        ("top-level", [swept, *names], constraints, True),
    ]


def derive(
    backend: str,
    package: str,
    version: str,
    base_dir: Path | None = None,
    drop: list[str] | None = None,
    keep: list[str] | None = None,
    locks_dir: Path = LOCKS_DIR,
    say=print,
) -> Derivation:
    """The version's lock (kept under <locks_dir>/<backend>/<package>-<version>/): reused while the backend's lock and
    `drop` are those it was derived from, else derived again."""
    base_dir = base_dir or REPO_ROOT / "envs" / backend
    drop, keep = sorted(canon(d) for d in drop or []), sorted(canon(k) for k in keep or [])
    base_text = (base_dir / "requirements.txt").read_text()
    folder = locks_dir / backend / slug(package, version)
    record = folder / "derivation.json"
    if record.exists():
        kept = Derivation(**json.loads(record.read_text()))
        lock_intact = kept.ok and (  # a failure (the network down, say) is not kept: it is tried again
            (folder / "requirements.txt").exists()
            and sha256_text((folder / "requirements.txt").read_text()) == kept.lock_sha256
        )
        if kept.base_lock_sha256 == sha256_text(base_text) and kept.drop == drop and kept.keep == keep and lock_intact:
            return kept
    _, overrides, _ = base_inputs(base_dir)
    # a pre-release only where the swept version or the backend's lock already is one
    prereleases = any(version_key(v).is_prerelease for v in [version, *req_versions(base_text).values()])
    derivation = Derivation(backend, package, version, sha256_text(base_text), drop, keep)
    reason = ""
    for tier, inputs, constraints, prefer in attempts(package, version, base_dir, drop, keep):
        text, reason = compile_lock(inputs, overrides, constraints, base_text if prefer else None, prereleases)
        if text is not None:
            break
        say(f"  {backend} {package}=={version}: no `{tier}` resolution: {reason[:300]}")
    if text is None:  # only a success is recorded: a failure's folder (an older suite kept them) goes
        derivation.status, derivation.reason = "na", f"cannot be resolved beside the {backend} lock: {reason}"
        if not (folder / "requirements.txt").exists():
            record.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                folder.rmdir()
        return derivation
    text = (
        f"# {backend} with {package}=={version}: derived from {relative(base_dir / 'requirements.txt')} "
        f"(sha256 {derivation.base_lock_sha256[:12]}) by bench/studies/sweep/derive.py, tier `{tier}`\n"
    ) + text
    before, after = req_versions(base_text), req_versions(text)
    derivation.tier = tier
    derivation.co_changes = {
        name: [before.get(name), version_now]
        for name, version_now in after.items()
        if name != canon(package) and before.get(name) != version_now
    }
    derivation.removed = len(set(before) - set(after) - {canon(package)})
    lock = folder / "requirements.txt"
    write_text_atomic(lock, text)
    derivation.lock, derivation.lock_sha256 = relative(lock), sha256_text(text)
    write_json_atomic(record, asdict(derivation))
    return derivation


def venv_for(derivation: Derivation, venvs_dir: Path = VENVS_DIR) -> Path:
    return venvs_dir / derivation.backend / slug(derivation.package, derivation.version)


def build(derivation: Derivation, locks_dir: Path = LOCKS_DIR, venvs_dir: Path = VENVS_DIR) -> Path:
    """The version's venv, built from its lock once (the suite's env build: a fresh venv, hashes checked, the stamp
    last), or the one already built from the same lock. Returns its interpreter."""
    venv = venv_for(derivation, venvs_dir)
    lock = locks_dir / derivation.backend / slug(derivation.package, derivation.version) / "requirements.txt"
    stamp = env_stamp(venv) or {}
    if stamp.get("lock_sha256") != hashlib.sha256(lock.read_bytes()).hexdigest():
        with build_lock(derivation.backend, venv):
            build_locked(derivation.backend, venv, lock)
    return venv / "bin" / "python"


def version_key(version: str):
    from packaging.version import Version

    return Version(version)


def valid_version(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9.+!_-]+", text):
        raise ValueError(f"not a version: {text!r}")
    return text
