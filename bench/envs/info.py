"""`scripts/envs.py info`: an env's fingerprint (python, lock, stamp, versions, framework build and devices).

The facts are gathered inside the env by bench.envs.probe (bench.measure.frameworks.framework_info for the
frameworks), one process each, so one framework failing to import does not hide the others.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.base.provenance import env_stamp
from bench.catalogue.backends import STACKS, env_name
from bench.envs.common import (
    ROOT,
    TOOLS,
    EnvError,
    check_name,
    default_venv,
    env_vars,
    rel,
    run,
    say,
    selected_names,
    sha256_file,
    venv_python,
)
from bench.envs.probe import MARK

PROBE = "import sys; from bench.envs.probe import main; main(sys.argv[1:])"


def probe(python: Path, what: str, env: dict[str, str], timeout: int = 600) -> dict:
    """Run bench.envs.probe WHAT in the env's python, outside the repo. PYTHONPATH names this checkout, so the
    probe is the one this module speaks with even when the env's .pth points at another (the probe tells whether
    the .pth alone makes bench importable)."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    try:
        p = run([str(python), "-c", PROBE, what], env={**os.environ, **env, "PYTHONPATH": path},
                capture_output=True, text=True,
                timeout=timeout, cwd=tempfile.gettempdir())
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout}s"}
    for line in reversed(p.stdout.splitlines()):
        if line.startswith(MARK):
            return json.loads(line[len(MARK):])
    tail = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
    return {"error": f"exit {p.returncode}: {tail}"}


def _venv_python_version(venv: Path) -> str | None:
    """The python version uv recorded in pyvenv.cfg: the fingerprint's fallback when the probe cannot run."""
    try:
        for line in (venv / "pyvenv.cfg").read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "version_info":
                return value.strip()
    except OSError:
        pass
    return None


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
    stamp = env_stamp(venv)
    env = env_vars(name)
    base = probe(py, "base", env)
    pk = base.get("packages", {})
    res = {
        "env": name,
        "venv": rel(venv),
        "python": base.get("python") or _venv_python_version(venv),
        "requirements": rel(req),
        "lock_sha256": current,
        "stamp": stamp,
        "status": (
            "not stamped (incomplete build)"
            if not stamp
            else "current"
            if stamp.get("lock_sha256") == current
            else "STALE (requirements.txt changed since build)"
        ),
        "bench_importable": bool(base.get("bench_importable")),
        "packages": pk,
        "frameworks": {},
    }
    if "error" in base:
        res["error"] = base["error"]
    fw = res["frameworks"]
    if "tensorflow" in pk or "tensorflow-cpu" in pk:
        fw["tensorflow"] = probe(py, "tensorflow", env)
    if "jax" in pk:
        fw["jax"] = probe(py, "jax", env)
    if "torch" in pk:
        fw["torch"] = probe(py, "torch", env)
    if "keras" in pk and name not in (
        TOOLS,
        *(env_name("keras2", s) for s in STACKS),
    ):  # keras2: tf.keras (under tensorflow)
        fw["keras"] = probe(py, "keras", env)
    return res


def print_info(r: dict) -> None:
    say(f"== {r['env']}  ({r['venv']})")
    say(f"  python        {r['python']}")
    say(f"  requirements  {r['requirements']}  sha256 {r['lock_sha256']}")
    st = r["stamp"] or {}
    say(f"  stamp         {r['status']}; built_at {st.get('built_at', '-')}")
    say(
        f"  bench import  {'ok' if r['bench_importable'] else 'NOT importable'}"
        + (f" ({r['error']})" if "error" in r else "")
    )
    say("  packages      " + ", ".join(f"{k}=={v}" for k, v in r["packages"].items()))
    for fw, d in r["frameworks"].items():
        if "error" in d:
            say(f"  {fw:<13} ERROR {d['error']}")
        elif fw == "keras":
            say(f"  keras         {d['version']} backend={d['backend']}")
        elif fw == "jax":
            say(
                f"  jax           {d['version']} jaxlib={d.get('jaxlib')} backend={d.get('default_backend')} "
                f"cuda-plugin={d.get('cuda_plugin')} devices={d.get('devices')}"
            )
        else:  # tensorflow, torch: framework_info's build and device facts
            cuda_build = f" cuda_build={d['is_cuda_build']}" if "is_cuda_build" in d else ""
            say(
                f"  {fw:<13} {d['version']}{cuda_build} cuda={d.get('cuda_build')} cudnn={d.get('cudnn_build')} "
                f"devices={d.get('devices')} gpus={d.get('gpus')}"
            )
            if fw == "tensorflow":
                tk = d.get("tf_keras", {})
                say(f"  tf.keras      -> {tk.get('module')} {tk.get('version')} ({tk.get('class', tk.get('error'))})")


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
