#!/usr/bin/env python3
"""Build, fingerprint and check the per-backend Python environments.

Stdlib only (Python 3.11). The envs are defined by envs/NAME/pyproject.toml (top-level pins),
resolved into envs/NAME/uv.lock and exported to envs/NAME/requirements.txt, the one install
artifact (hash-pinned) used by the venvs here, the containers and the Nix flake.

  build NAME... [--all] [--venv DIR] [--requirements FILE]   build/repair .venvs/NAME
  info NAME... [--json]                                       the env fingerprint
  check-locks [NAME...] [--envs-dir DIR]                      offline: locks current, exports in sync, envs consistent
  lock [NAME...] [--upgrade]                                  re-resolve (needs PyPI) and re-export
  vars NAME                                                   the cell environment variables, KEY=VALUE
  validate NAME                                               exit non-zero unless NAME is a backend
  names                                                       the env names, one a line
"""
from __future__ import annotations

import argparse
import datetime as _dt
import difflib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.backends import BACKENDS, COMMON_ENVIRONMENT, cell_environment  # noqa: E402

TOOLS = "tools"  # the orchestrator/test env: not a backend
ENV_NAMES = [*BACKENDS, TOOLS]
STAMP = "bench-env.json"
PTH = "bench_repo.pth"
PYTHON_SPEC = "3.11"

# Cross-env consistency rules (checked on the requirements.txt artifacts).
KERAS3_ENVS = ("tensorflow", "jax", "torch")
KERAS3_PACKAGES = ("keras", "keras-hub", "keras-cv")
SAME_TORCH_ENVS = ("torch", "native-torch")
TF_CPU_ONLY_ENVS = ("jax", "torch")


def header(name: str) -> str:
    """Deterministic header of envs/NAME/requirements.txt."""
    return (
        f"# envs/{name}/requirements.txt: generated from envs/{name}/uv.lock by\n"
        f"#   python3 scripts/envs.py lock {name}\n"
        "# Do not edit. Install with `uv pip sync --require-hashes` (what scripts/envs.py build does)\n"
        "# or `pip install --no-deps --require-hashes -r`: uv overrides may leave dependencies out on purpose.\n"
    )


# ----------------------------------------------------------------------------- helpers


class EnvError(Exception):
    """A user-facing error: printed without a traceback, exit status 2."""


def say(msg: str = "") -> None:
    print(msg, flush=True)


def uv_bin() -> str:
    # $UV (the Makefile exports its pinned .venvs/.uv/uv), else that pinned uv if present, else PATH.
    pinned = ROOT / ".venvs" / ".uv" / "uv"
    found = os.environ.get("UV") or (str(pinned) if os.access(pinned, os.X_OK) else None) or shutil.which("uv")
    if not found:
        raise EnvError("uv not found: set UV, run `make` (fetches the pinned uv) or `python3 -m pip install uv==0.13.9`")
    return found


def check_name(name: str, allowed: list[str] | None = None, what: str = "envs") -> str:
    allowed = ENV_NAMES if allowed is None else allowed
    if name not in allowed:
        if name == "":
            raise EnvError(f"no {what[:-1]} given (e.g. BACKEND=...); valid {what}: {', '.join(allowed)}")
        raise EnvError(f"unknown {what[:-1]} {name!r}; valid {what}: {', '.join(allowed)}")
    return name


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def rel(path: Path) -> str:
    path = path.resolve()
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def default_venv(name: str) -> Path:
    return ROOT / ".venvs" / name


def read_stamp(venv: Path) -> dict | None:
    try:
        return json.loads((venv / STAMP).read_text())
    except (OSError, ValueError):
        return None


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, **kw)


def fmt_s(seconds: float) -> str:
    return f"{seconds:.1f}s" if seconds < 120 else f"{seconds / 60:.1f}min"


# ----------------------------------------------------------------------------- build


def build_one(name: str, venv: Path | None, requirements: Path | None) -> None:
    check_name(name)
    venv = (venv or default_venv(name)).absolute()
    req = (requirements or ROOT / "envs" / name / "requirements.txt").absolute()
    if not req.is_file():
        raise EnvError(f"{name}: requirements file not found: {req}")
    t0 = time.monotonic()
    digest = sha256_file(req)
    stamp = read_stamp(venv)
    if stamp and stamp.get("lock_sha256") == digest and venv_python(venv).exists():
        say(f"{name}: {rel(venv)} is current (lock sha256 {digest[:12]}, built {stamp.get('built_at')}); nothing to do")
        return

    say(f"{name}: building {rel(venv)} from {rel(req)} (sha256 {digest[:12]})")
    # The stamp goes first: an interrupted or failed build must never look complete.
    (venv / STAMP).unlink(missing_ok=True)
    uv = uv_bin()
    # Always a fresh venv (hardlinked from uv's cache: seconds when the cache is warm). Repairing in place
    # would be weaker: uv pip sync keeps an installed dist of the right version without re-checking its
    # hash (and --reinstall implies --refresh, i.e. re-downloading everything). A fresh sync checks every
    # dist against this file's hashes, so the stamp vouches for all of it.
    cmd = [uv, "venv", "--python", PYTHON_SPEC, "--no-project", str(venv)]
    if venv.exists():
        cmd.insert(2, "--clear")  # uv refuses to clear a directory that is not a venv
    say(f"{name}: $ {' '.join(cmd)}")
    if run(cmd).returncode != 0:
        raise EnvError(f"{name}: `uv venv` failed; no stamp written")
    cmd = [uv, "pip", "sync", "--require-hashes", "--python", str(venv_python(venv)), str(req)]
    say(f"{name}: $ {' '.join(cmd)}")
    t1 = time.monotonic()
    if run(cmd).returncode != 0:
        raise EnvError(f"{name}: `uv pip sync` failed (see uv's message above); no stamp written; the next build starts afresh")
    say(f"{name}: synced in {fmt_s(time.monotonic() - t1)}")

    # Make the repo's `bench` package importable without an index or an install step.
    site = sorted(venv.glob("lib/python3.*/site-packages"))
    if not site:
        raise EnvError(f"{name}: no site-packages under {venv}/lib; no stamp written")
    (site[0] / PTH).write_text(str(ROOT) + "\n")
    say(f"{name}: wrote {rel(site[0] / PTH)} -> {ROOT}")

    # LAST: the stamp, atomically.
    data = {
        "backend": name,
        "requirements": rel(req),
        "lock_sha256": digest,
        "built_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    tmp = venv / (STAMP + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, venv / STAMP)
    say(f"{name}: built {rel(venv)} in {fmt_s(time.monotonic() - t0)}")


def selected_names(args, command: str) -> list[str]:
    """The env names a command was given (or all of them with --all), each checked."""
    names = list(ENV_NAMES) if args.all else args.names
    if not names:
        raise EnvError(f"{command}: name an env or pass --all; valid envs: {', '.join(ENV_NAMES)}")
    for n in names:
        check_name(n)
    return names


def cmd_build(args) -> int:
    names = selected_names(args, "build")
    if len(names) > 1 and (args.venv or args.requirements):
        raise EnvError("build: --venv/--requirements take exactly one env name")
    t0 = time.monotonic()
    for n in names:
        build_one(n, Path(args.venv) if args.venv else None, Path(args.requirements) if args.requirements else None)
    if len(names) > 1:
        say(f"all {len(names)} envs done in {fmt_s(time.monotonic() - t0)}")
    return 0


# ----------------------------------------------------------------------------- info

KEY_PACKAGES = [
    "tensorflow", "tensorflow-cpu", "tf-keras", "keras", "keras-hub", "keras-cv", "keras-nlp",
    "tensorflow-text", "jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt", "torch", "torchvision",
    "transformers", "diffusers", "peft", "accelerate", "segment-anything", "open-clip-torch", "numpy",
    "nvidia-cudnn-cu12", "nvidia-cuda-runtime-cu12", "pytest", "matplotlib",
]

PROBE_BASE = r"""
import importlib.metadata as md, json, platform, sys
pk = {}
for n in %r:
    try: pk[n] = md.version(n)
    except md.PackageNotFoundError: pass
import importlib.util
out = {"python": platform.python_version(), "executable": sys.executable, "packages": pk,
       "bench_importable": importlib.util.find_spec("bench") is not None}
print("BENCH_PROBE " + json.dumps(out))
""" % (KEY_PACKAGES,)

PROBE_TF = r"""
import json, os
import tensorflow as tf
bi = dict(tf.sysconfig.get_build_info())
out = {"version": tf.__version__, "is_cuda_build": bi.get("is_cuda_build"),
       "cuda_version": bi.get("cuda_version"), "cudnn_version": bi.get("cudnn_version"),
       "devices": [f"{d.device_type}:{d.name}" for d in tf.config.list_physical_devices()]}
try:
    seq = tf.keras.Sequential
    out["tf_keras"] = {"module": seq.__module__.split(".")[0], "class": f"{seq.__module__}.{seq.__qualname__}",
                       "version": getattr(__import__(seq.__module__.split(".")[0]), "__version__", None),
                       "TF_USE_LEGACY_KERAS": os.environ.get("TF_USE_LEGACY_KERAS")}
except Exception as e:
    out["tf_keras"] = {"error": repr(e)}
print("BENCH_PROBE " + json.dumps(out))
"""

PROBE_JAX = r"""
import json, importlib.metadata as md
import jax, jaxlib
out = {"version": jax.__version__, "jaxlib": jaxlib.__version__, "default_backend": jax.default_backend(),
       "devices": [str(d) for d in jax.devices()]}
for p in ("jax-cuda12-plugin", "jax-cuda12-pjrt"):
    try: out[p] = md.version(p)
    except md.PackageNotFoundError: out[p] = None
print("BENCH_PROBE " + json.dumps(out))
"""

PROBE_TORCH = r"""
import json
import torch
avail = torch.cuda.is_available()
try: cudnn = torch.backends.cudnn.version()
except Exception as e: cudnn = repr(e)
out = {"version": torch.__version__, "cuda": torch.version.cuda, "cudnn": cudnn, "cuda_available": avail,
       "devices": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if avail else ["cpu"]}
print("BENCH_PROBE " + json.dumps(out))
"""

PROBE_KERAS = r"""
import json
import keras
print("BENCH_PROBE " + json.dumps({"version": keras.__version__, "backend": keras.backend.backend()}))
"""


def env_vars(name: str) -> dict[str, str]:
    return cell_environment(name) if name in BACKENDS else dict(COMMON_ENVIRONMENT)


def probe(python: Path, code: str, env: dict[str, str], timeout: int = 600) -> dict:
    try:
        p = run([str(python), "-c", code], env={**os.environ, **env}, capture_output=True, text=True,
                timeout=timeout, cwd=tempfile.gettempdir())
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout}s"}
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("BENCH_PROBE "):
            return json.loads(line[len("BENCH_PROBE "):])
    tail = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
    return {"error": f"exit {p.returncode}: {tail}"}


def info_one(name: str) -> dict:
    check_name(name)
    venv = default_venv(name)
    py = venv_python(venv)
    if not py.exists():
        hint = "make env-tools" if name == TOOLS else f"make env BACKEND={name}"
        raise EnvError(f"{name}: env not built ({rel(venv)} missing); run `{hint}` "
                       f"or `python3 scripts/envs.py build {name}`")
    req = ROOT / "envs" / name / "requirements.txt"
    current = sha256_file(req) if req.is_file() else None
    stamp = read_stamp(venv)
    env = env_vars(name)
    base = probe(py, PROBE_BASE, env)
    pk = base.get("packages", {})
    res = {
        "env": name, "venv": rel(venv), "python": base.get("python"), "requirements": rel(req),
        "lock_sha256": current, "stamp": stamp,
        "status": ("not stamped (incomplete build)" if not stamp else
                   "current" if stamp.get("lock_sha256") == current else "STALE (requirements.txt changed since build)"),
        "bench_importable": base.get("bench_importable"), "packages": pk, "frameworks": {},
    }
    if "error" in base:
        res["error"] = base["error"]
    fw = res["frameworks"]
    if "tensorflow" in pk or "tensorflow-cpu" in pk:
        fw["tensorflow"] = probe(py, PROBE_TF, env)
    if "jax" in pk:
        fw["jax"] = probe(py, PROBE_JAX, env)
    if "torch" in pk:
        fw["torch"] = probe(py, PROBE_TORCH, env)
    if "keras" in pk and name != "keras2":  # keras2 uses tf.keras (reported under tensorflow)
        fw["keras"] = probe(py, PROBE_KERAS, env)
    return res


def print_info(r: dict) -> None:
    say(f"== {r['env']}  ({r['venv']})")
    say(f"  python        {r['python']}")
    say(f"  requirements  {r['requirements']}  sha256 {r['lock_sha256']}")
    st = r["stamp"] or {}
    say(f"  stamp         {r['status']}; built_at {st.get('built_at', '-')}")
    say(f"  bench import  {'ok' if r['bench_importable'] else 'NOT importable'}")
    say("  packages      " + ", ".join(f"{k}=={v}" for k, v in r["packages"].items()))
    for fw, d in r["frameworks"].items():
        if "error" in d:
            say(f"  {fw:<13} ERROR {d['error']}")
            continue
        if fw == "tensorflow":
            say(f"  tensorflow    {d['version']} cuda_build={d['is_cuda_build']} cuda={d['cuda_version']} "
                f"cudnn={d['cudnn_version']} devices={d['devices']}")
            tk = d.get("tf_keras", {})
            say(f"  tf.keras      -> {tk.get('module')} {tk.get('version')} ({tk.get('class', tk.get('error'))})")
        elif fw == "jax":
            say(f"  jax           {d['version']} jaxlib={d['jaxlib']} backend={d['default_backend']} "
                f"cuda12-plugin={d['jax-cuda12-plugin']} devices={d['devices']}")
        elif fw == "torch":
            say(f"  torch         {d['version']} cuda={d['cuda']} cudnn={d['cudnn']} "
                f"cuda_available={d['cuda_available']} devices={d['devices']}")
        elif fw == "keras":
            say(f"  keras         {d['version']} backend={d['backend']}")


def cmd_info(args) -> int:
    names = selected_names(args, "info")
    results, failed = [], False
    for n in names:
        try:
            results.append(info_one(n))
        except EnvError as e:
            print(f"error: {e}", file=sys.stderr)
            failed = True
    if args.json:
        print(json.dumps(results if len(names) > 1 else (results[0] if results else None), indent=2))
    else:
        for r in results:
            print_info(r)
    return 1 if failed else 0


# ----------------------------------------------------------------------------- lock / export


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
        (d / "requirements.txt").write_text(export_text(d, n))
        say(f"{n}: locked and exported {rel(d / 'requirements.txt')} in {fmt_s(time.monotonic() - t0)}")
    return 0


# ----------------------------------------------------------------------------- check-locks

_REQ = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?\s*([^;]*?)\s*(?:;\s*(.*))?$")


def canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_req(s: str) -> tuple:
    m = _REQ.match(s)
    if not m:
        raise EnvError(f"cannot parse requirement {s!r}")
    name, extras, spec, marker = m.groups()
    ex = tuple(sorted(canon(e) for e in (extras or "").split(",") if e.strip()))
    spec = ",".join(sorted(x.strip().replace(" ", "") for x in spec.split(",") if x.strip()))
    marker = re.sub(r"\s+", " ", (marker or "").replace('"', "'")).strip()
    return canon(name), ex, spec, marker


def lock_entry(e: dict) -> tuple:
    ex = tuple(sorted(canon(x) for x in e.get("extras", [])))
    spec = ",".join(sorted(x.strip().replace(" ", "") for x in e.get("specifier", "").split(",") if x.strip()))
    marker = re.sub(r"\s+", " ", e.get("marker", "").replace('"', "'")).strip()
    return canon(e["name"]), ex, spec, marker


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
        problems.append(f"requires-python: spec {proj.get('requires-python')!r} vs uv.lock {lock.get('requires-python')!r}")
    envs_spec = sorted(re.sub(r"\s+", " ", m.replace('"', "'")) for m in uvt.get("environments", []))
    if not envs_spec:
        problems.append("[tool.uv] environments is not set")
    return problems


def req_versions(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;\\]+)", line)
        if m:
            out[canon(m.group(1))] = m.group(2)
    return out


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
        d = envs_dir / n
        missing = [f for f in ("pyproject.toml", "uv.lock", "requirements.txt") if not (d / f).is_file()]
        if missing:
            fail(n, f"missing {', '.join(missing)} in {d}")
            continue
        try:
            spec = tomllib.loads((d / "pyproject.toml").read_text())
            lock = tomllib.loads((d / "uv.lock").read_text())
        except tomllib.TOMLDecodeError as e:
            fail(n, f"TOML error: {e}")
            continue
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
            fail(n, f"`uv lock --check --offline` failed (uv.lock does not match pyproject.toml; "
                    f"run `python3 scripts/envs.py lock {n}`): {why}")
            ok = False
        # (2) export in sync
        try:
            want = export_text(d, n)
        except EnvError as e:
            fail(n, str(e))
            continue
        have = (d / "requirements.txt").read_text()
        if want != have:
            diff = list(difflib.unified_diff(have.splitlines(), want.splitlines(), "requirements.txt (committed)",
                                             "uv export of uv.lock", lineterm="", n=0))
            fail(n, f"requirements.txt differs from `uv export` of uv.lock ({len(diff)} diff lines); "
                    f"run `python3 scripts/envs.py lock {n}`\n      " + "\n      ".join(diff[:12]))
            ok = False
        versions[n] = req_versions(have)
        if ok:
            say(f"  ok   {n}: uv.lock matches pyproject.toml; requirements.txt matches the export "
                f"({len(versions[n])} packages)")

    # (3) cross-env consistency, on the install artifacts
    def ver(n, pkg):
        return versions.get(n, {}).get(pkg)

    k3 = [n for n in KERAS3_ENVS if n in versions]
    for pkg in KERAS3_PACKAGES:
        vs = {n: ver(n, pkg) for n in k3}
        if len(set(vs.values())) > 1 or None in vs.values():
            fail("cross-env", f"{pkg} differs across the Keras 3 envs: {vs}")
        elif vs:
            say(f"  ok   cross-env: {pkg}=={next(iter(vs.values()))} in {', '.join(vs)}")
    tv = {n: ver(n, "torch") for n in SAME_TORCH_ENVS if n in versions}
    if len(set(tv.values())) > 1 or None in tv.values():
        fail("cross-env", f"torch differs between {' and '.join(SAME_TORCH_ENVS)}: {tv}")
    elif tv:
        say(f"  ok   cross-env: torch=={next(iter(tv.values()))} in {', '.join(tv)}")
    tf_ref = ver("tensorflow", "tensorflow")
    for n in TF_CPU_ONLY_ENVS:
        if n not in versions:
            continue
        if ver(n, "tensorflow"):
            fail(n, f"has `tensorflow=={ver(n, 'tensorflow')}` (GPU build): must be tensorflow-cpu only")
        elif not ver(n, "tensorflow-cpu"):
            fail(n, "tensorflow-cpu missing")
        elif tf_ref and ver(n, "tensorflow-cpu") != tf_ref:
            fail(n, f"tensorflow-cpu=={ver(n, 'tensorflow-cpu')} differs from the tensorflow env's tensorflow=={tf_ref}")
        else:
            say(f"  ok   cross-env: {n} has tensorflow-cpu=={ver(n, 'tensorflow-cpu')} and no tensorflow")

    if failures:
        say(f"check-locks: {len(failures)} problem(s)")
        return 1
    say("check-locks: all good")
    return 0


# ----------------------------------------------------------------------------- vars / validate / names


def cmd_vars(args) -> int:
    check_name(args.name, list(BACKENDS), "backends")
    for k, v in cell_environment(args.name).items():
        print(f"{k}={v}")
    return 0


def cmd_validate(args) -> int:
    check_name(args.name, list(BACKENDS) + ([TOOLS] if args.allow_tools else []),
               "envs" if args.allow_tools else "backends")
    return 0


def cmd_names(args) -> int:
    print("\n".join(list(BACKENDS) if args.backends else ENV_NAMES))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="scripts/envs.py", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build or repair .venvs/NAME from envs/NAME/requirements.txt")
    b.add_argument("names", nargs="*", metavar="NAME")
    b.add_argument("--all", action="store_true", help="every env, in order")
    b.add_argument("--venv", help="venv dir (default .venvs/NAME)")
    b.add_argument("--requirements", help="requirements file (default envs/NAME/requirements.txt)")
    b.set_defaults(func=cmd_build)
    i = sub.add_parser("info", help="env fingerprint: python, lock, stamp, versions, framework build/devices")
    i.add_argument("names", nargs="*", metavar="NAME")
    i.add_argument("--all", action="store_true")
    i.add_argument("--json", action="store_true")
    i.set_defaults(func=cmd_info)
    for cname, func, hlp in (("check-locks", cmd_check_locks, "offline consistency check of specs, locks, exports"),
                             ("lock", cmd_lock, "re-resolve (needs PyPI) and re-export")):
        c = sub.add_parser(cname, help=hlp)
        c.add_argument("names", nargs="*", metavar="NAME")
        c.add_argument("--envs-dir", "--root", dest="envs_dir", default=str(ROOT / "envs"),
                       help="the envs/ dir to use (default: the repo's)")
        if cname == "lock":
            c.add_argument("--upgrade", action="store_true", help="allow newer transitive versions")
        c.set_defaults(func=func)
    v = sub.add_parser("vars", help="the cell environment variables of a backend, KEY=VALUE")
    v.add_argument("name", metavar="NAME")
    v.set_defaults(func=cmd_vars)
    va = sub.add_parser("validate", help="exit non-zero unless NAME is a backend")
    va.add_argument("name", metavar="NAME")
    va.add_argument("--allow-tools", action="store_true", help="also accept the tools env")
    va.set_defaults(func=cmd_validate)
    na = sub.add_parser("names", help="the env names")
    na.add_argument("--backends", action="store_true", help="backends only (no tools)")
    na.set_defaults(func=cmd_names)
    args = ap.parse_args(argv)
    try:
        return args.func(args)
    except EnvError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
