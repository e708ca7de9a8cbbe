"""`scripts/envs.py lock` and `check-locks`: specs (pyproject.toml) -> uv.lock -> requirements.txt. Stdlib only."""
from __future__ import annotations

import difflib
import re
import time
import tomllib
from pathlib import Path

from bench.base.atomic import write_text_atomic
from bench.catalogue.backends import BACKENDS, STACKS, env_name
from bench.envs.common import ENV_NAMES, EnvError, check_name, fmt_s, rel, run, say, uv_bin
from bench.envs.rules import check_cross_env


def header(name: str) -> str:
    """Deterministic header of envs/NAME/requirements.txt."""
    return (
        f"# envs/{name}/requirements.txt: generated from envs/{name}/uv.lock by\n"
        f"#   python3 scripts/envs.py lock {name}\n"
        "# Do not edit. Install with `uv pip sync --require-hashes` (what scripts/envs.py build does)\n"
        "# or `pip install --no-deps --require-hashes -r`: uv overrides may leave dependencies out on purpose.\n"
    )


def export_text(env_dir: Path, name: str) -> str:
    p = run([uv_bin(), "export", "--frozen", "--offline", "--no-emit-project", "--no-header",
             "--format", "requirements-txt", "--quiet"],
            cwd=env_dir, capture_output=True, text=True)
    if p.returncode != 0:
        raise EnvError(f"{name}: uv export failed: {p.stderr.strip()}")
    return header(name) + p.stdout


def cmd_lock(args) -> int:
    envs_dir = Path(args.envs_dir).resolve()
    names = args.names or ENV_NAMES
    for n in names:
        check_name(n)
    for n in names:
        d = envs_dir / n
        cmd = [uv_bin(), "lock"] + (["--upgrade"] if args.upgrade else [])
        say(f"{n}: $ {' '.join(cmd)}  (in {rel(d)})")
        t0 = time.monotonic()
        if run(cmd, cwd=d).returncode != 0:
            raise EnvError(f"{n}: uv lock failed")
        write_text_atomic(d / "requirements.txt", export_text(d, n))
        say(f"{n}: locked and exported {rel(d / 'requirements.txt')} in {fmt_s(time.monotonic() - t0)}")
    return 0


# ----------------------------------------------------------------------------- spec vs lock

_REQ = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?\s*([^;]*?)\s*(?:;\s*(.*))?$")


def canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _norm_spec(spec: str) -> str:
    return ",".join(sorted(x.strip().replace(" ", "") for x in spec.split(",") if x.strip()))


def _norm_marker(marker: str) -> str:
    return re.sub(r"\s+", " ", marker.replace('"', "'")).strip()


def parse_req(s: str) -> tuple:
    m = _REQ.match(s)
    if not m:
        raise EnvError(f"cannot parse requirement {s!r}")
    name, extras, spec, marker = m.groups()
    ex = tuple(sorted(canon(e) for e in (extras or "").split(",") if e.strip()))
    return canon(name), ex, _norm_spec(spec), _norm_marker(marker or "")


def lock_entry(e: dict) -> tuple:
    ex = tuple(sorted(canon(x) for x in e.get("extras", [])))
    return canon(e["name"]), ex, _norm_spec(e.get("specifier", "")), _norm_marker(e.get("marker", ""))


def show(t: tuple) -> str:
    name, ex, spec, marker = t
    return f"{name}{'[' + ','.join(ex) + ']' if ex else ''}{spec}{'; ' + marker if marker else ''}"


def spec_vs_lock(spec: dict, lock: dict, name: str) -> list[str]:
    """Offline, cache-free: compare the spec's inputs with what the lock records it was resolved from."""
    problems = []
    proj = spec.get("project", {})
    pname = canon(proj.get("name", ""))
    root = [p for p in lock.get("package", []) if canon(p.get("name", "")) == pname]
    if not root:
        return [f"project {pname!r} not in uv.lock"]
    meta = root[0].get("metadata", {})

    def compare(label: str, want: set, have: set) -> None:
        for t in sorted(want - have):
            problems.append(f"{label}: spec has `{show(t)}` but uv.lock was resolved without it")
        for t in sorted(have - want):
            problems.append(f"{label}: uv.lock was resolved from `{show(t)}`, no longer in the spec")

    compare("dependencies", {parse_req(s) for s in proj.get("dependencies", [])},
            {lock_entry(e) for e in meta.get("requires-dist", [])})
    uvt = spec.get("tool", {}).get("uv", {})
    compare("override-dependencies", {parse_req(s) for s in uvt.get("override-dependencies", [])},
            {lock_entry(e) for e in lock.get("manifest", {}).get("overrides", [])})
    compare("constraint-dependencies", {parse_req(s) for s in uvt.get("constraint-dependencies", [])},
            {lock_entry(e) for e in lock.get("manifest", {}).get("constraints", [])})
    if proj.get("requires-python") != lock.get("requires-python"):
        problems.append(
            f"requires-python: spec {proj.get('requires-python')!r} vs uv.lock {lock.get('requires-python')!r}"
        )
    if not uvt.get("environments"):
        problems.append("[tool.uv] environments is not set")
    return problems


def req_versions(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;\\]+)", line)
        if m:
            out[canon(m.group(1))] = m.group(2)
    return out


# ----------------------------------------------------------------------------- check-locks


def _check_one(d: Path, n: str, fail) -> dict[str, str] | None:
    """Check env dir d; the package versions of its requirements.txt, or None when it cannot be read."""
    missing = [f for f in ("pyproject.toml", "uv.lock", "requirements.txt") if not (d / f).is_file()]
    if missing:
        fail(n, f"missing {', '.join(missing)} in {d}")
        return None
    try:
        spec = tomllib.loads((d / "pyproject.toml").read_text())
        lock = tomllib.loads((d / "uv.lock").read_text())
    except tomllib.TOMLDecodeError as e:
        fail(n, f"TOML error: {e}")
        return None
    ok = True
    # (1a) spec inputs == lock's recorded inputs (no uv, no cache, no network)
    for p in spec_vs_lock(spec, lock, n):
        fail(n, f"uv.lock is stale w.r.t. pyproject.toml: {p}; run `python3 scripts/envs.py lock {n}`")
        ok = False
    # (1b) uv's own check, offline (works with an empty cache when the lock is current)
    p = run([uv_bin(), "lock", "--check", "--offline"], cwd=d, capture_output=True, text=True)
    if p.returncode != 0:
        lines = [ln.strip() for ln in p.stderr.splitlines() if ln.strip() and not ln.startswith("Using ")]
        key = [ln for ln in lines if ln.startswith(("error:", "cause:", "hint:"))] or lines[-3:]
        why = " | ".join(key)[:500]
        fail(
            n,
            f"`uv lock --check --offline` failed (uv.lock does not match pyproject.toml; "
            f"run `python3 scripts/envs.py lock {n}`): {why}",
        )
        ok = False
    # (2) export in sync
    try:
        want = export_text(d, n)
    except EnvError as e:
        fail(n, str(e))
        return None
    have = (d / "requirements.txt").read_text()
    if want != have:
        diff = list(
            difflib.unified_diff(
                have.splitlines(),
                want.splitlines(),
                "requirements.txt (committed)",
                "uv export of uv.lock",
                lineterm="",
                n=0,
            )
        )
        fail(
            n,
            f"requirements.txt differs from `uv export` of uv.lock ({len(diff)} diff lines); "
            f"run `python3 scripts/envs.py lock {n}`\n      " + "\n      ".join(diff[:12]),
        )
        ok = False
    versions = req_versions(have)
    if ok:
        say(
            f"  ok   {n}: uv.lock matches pyproject.toml; requirements.txt matches the export "
            f"({len(versions)} packages)"
        )
    return versions


def cmd_check_locks(args) -> int:
    envs_dir = Path(args.envs_dir).resolve()
    names = args.names or ENV_NAMES
    for n in names:
        check_name(n)
    say(f"checking {len(names)} envs under {envs_dir} (offline)")
    failures: list[str] = []
    versions: dict[str, dict[str, str]] = {}

    def fail(n: str, msg: str) -> None:
        failures.append(f"{n}: {msg}")
        say(f"  FAIL {n}: {msg}")

    for n in names:
        found = _check_one(envs_dir / n, n, fail)
        if found is not None:
            versions[n] = found

    # (3) cross-env consistency, on the install artifacts; the rules are declared on the backends and hold within
    # each stack (a 2024 env is never compared with today's)
    for stack in STACKS:
        by_backend = {b: versions[env_name(b, stack)] for b in BACKENDS if env_name(b, stack) in versions}
        label = "" if stack == "today" else f"[stack {stack}] "
        check_cross_env(
            by_backend,
            lambda n, msg: fail(env_name(n, stack) if n in BACKENDS else n, label + msg),
            lambda msg: say(f"  ok   {label}{msg}"),
        )

    if failures:
        say(f"check-locks: {len(failures)} problem(s)")
        return 1
    say("check-locks: all good")
    return 0
