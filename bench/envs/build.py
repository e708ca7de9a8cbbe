"""`scripts/envs.py build`: a fresh venv from a hash-pinned requirements file, the repo .pth, then the stamp."""
from __future__ import annotations

import datetime as _dt
import fcntl
import json
import os
import shutil
import time
from contextlib import contextmanager
from pathlib import Path

from bench.base.atomic import write_text_atomic
from bench.base.provenance import ENV_STAMP, env_stamp
from bench.envs.common import (
    ROOT,
    EnvError,
    check_name,
    default_venv,
    fmt_s,
    rel,
    run,
    say,
    selected_names,
    sha256_file,
    uv_bin,
    venv_python,
)

PTH = "bench_repo.pth"
PYTHON_SPEC = "3.11"


@contextmanager
def build_lock(name: str, venv: Path):
    """One build of an env at a time: an flock on .<name>.lock beside it (the kernel releases it however its holder
    ends). Two builds share the staging folder; without it one's cleanup deleted the other's half-built env. A second
    build waits, saying so in one line, then finds the env the first built current."""
    lock = venv.with_name(f".{venv.name}.lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            say(f"{name}: waiting for another build of {rel(venv)} ({f.read().strip() or 'holder unknown'}) to end")
            fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        f.truncate()
        f.write(f"PID {os.getpid()} since {_dt.datetime.now(_dt.UTC).isoformat(timespec='seconds')}\n")
        f.flush()
        yield


def build_one(name: str, venv: Path | None, requirements: Path | None) -> None:
    check_name(name)
    venv = (venv or default_venv(name)).absolute()
    req = (requirements or ROOT / "envs" / name / "requirements.txt").absolute()
    if not req.is_file():
        raise EnvError(f"{name}: requirements file not found: {req}")
    with build_lock(name, venv):  # the stamp is read under the lock: a build that waited finds the env current
        build_locked(name, venv, req)


def build_locked(name: str, venv: Path, req: Path) -> None:
    t0 = time.monotonic()
    digest = sha256_file(req)
    stamp = env_stamp(venv)
    if stamp and stamp.get("lock_sha256") == digest and venv_python(venv).exists():
        say(f"{name}: {rel(venv)} is current (lock sha256 {digest[:12]}, built {stamp.get('built_at')}); nothing to do")
        return

    say(f"{name}: building {rel(venv)} from {rel(req)} (sha256 {digest[:12]})")
    # Built beside the env and swapped in only when complete: a failed build (a tampered hash, the network) or an
    # interrupted one leaves the env that was there untouched, usable and stamped with the lock it was built from.
    staging = venv.with_name(f".{venv.name}.new")
    shutil.rmtree(staging, ignore_errors=True)  # what an interrupted build left
    try:
        build_into(name, staging, req, digest)
    except BaseException as e:  # also Ctrl-C: no half-built folder left behind
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(e, EnvError):
            kept = (
                f"{rel(venv)} is untouched (built from lock sha256 {str(stamp.get('lock_sha256'))[:12]})"
                if stamp
                else f"{rel(venv)} was not built before"
            )
            raise EnvError(f"{e}; {kept}") from None
        raise
    swap_in(staging, venv)
    say(f"{name}: built {rel(venv)} in {fmt_s(time.monotonic() - t0)}")


def build_into(name: str, venv: Path, req: Path, digest: str) -> None:
    """A fresh venv at `venv` (a new folder), synced to the requirements' hashes, the repo .pth, then the stamp."""
    uv = uv_bin()
    # Always a fresh venv (hardlinked from uv's cache: seconds when the cache is warm). Repairing in place
    # would be weaker: uv pip sync keeps an installed dist of the right version without re-checking its
    # hash (and --reinstall implies --refresh, i.e. re-downloading everything). A fresh sync checks every
    # dist against this file's hashes, so the stamp vouches for all of it. Relocatable: its scripts find their
    # interpreter beside them, so the folder works once renamed into place.
    cmd = [uv, "venv", "--relocatable", "--python", PYTHON_SPEC, "--no-project", str(venv)]
    say(f"{name}: $ {' '.join(cmd)}")
    if run(cmd).returncode != 0:
        raise EnvError(f"{name}: `uv venv` failed")
    cmd = [uv, "pip", "sync", "--require-hashes", "--python", str(venv_python(venv)), str(req)]
    say(f"{name}: $ {' '.join(cmd)}")
    t1 = time.monotonic()
    if run(cmd).returncode != 0:
        raise EnvError(f"{name}: `uv pip sync` failed (see uv's message above)")
    say(f"{name}: synced in {fmt_s(time.monotonic() - t1)}")

    # Make the repo's `bench` package importable without an index or an install step.
    site = sorted(venv.glob("lib/python3.*/site-packages"))
    if not site:
        raise EnvError(f"{name}: no site-packages under {venv}/lib")
    write_text_atomic(site[0] / PTH, str(ROOT) + "\n")
    say(f"{name}: wrote {rel(site[0] / PTH)} -> {ROOT}")

    # LAST: the stamp, atomically.
    data = {
        "backend": name,
        "requirements": rel(req),
        "lock_sha256": digest,
        "built_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
    write_text_atomic(venv / ENV_STAMP, json.dumps(data, indent=2) + "\n")


def swap_in(staging: Path, venv: Path) -> None:
    """Two renames: the old env aside, the new one in its place; then the old one goes."""
    old = venv.with_name(f".{venv.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if venv.exists() or venv.is_symlink():
        os.rename(venv, old)
    os.rename(staging, venv)
    shutil.rmtree(old, ignore_errors=True)


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
