"""flake.nix: one dev shell per backend, each reading envs/NAME/requirements.txt, evaluated offline.

nixpkgs cannot be fetched here (no GitHub), so the flake is evaluated against tests/nix-stub, a stand-in
with just the attributes it uses (tests/nix-stub/check-flake.sh, also `make check-flake`). Without nix
these tests skip locally and fail in CI (CI=true), where scripts/install-system-deps.sh installs it.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from bench.envs.common import BACKEND_ENV_NAMES as BACKENDS  # every backend's env, on every stack

REPO = Path(__file__).resolve().parent.parent
CHECK = REPO / "tests" / "nix-stub" / "check-flake.sh"
IN_CI = os.environ.get("CI") == "true"
SYSTEM = "x86_64-linux"
NIXPKGS_REV = "ac62194c3917d5f474c1a844b6fd6da2db95077d"
NIXPKGS_NAR_HASH = "sha256-16KkgfdYqjaeRGBaYsNrhPRRENs0qzkQVUooNHtoy2w="
NIXPKGS_LAST_MODIFIED = 1767313136
NIX = ["nix", "--extra-experimental-features", "nix-command flakes"]
OVERRIDE = ["--override-input", "nixpkgs", "path:./tests/nix-stub"]


def require_nix() -> None:
    if shutil.which("nix") is None:
        msg = "nix not found (Debian's nix-bin): run scripts/install-system-deps.sh"
        if IN_CI:
            pytest.fail(msg)
        pytest.skip(msg)


@pytest.fixture(scope="module")
def staged_flake(tmp_path_factory) -> Path:
    """A copy of what the flake reads (check-flake.sh stages it the same way)."""
    require_nix()
    out = subprocess.run([str(CHECK)], env={**os.environ, "FLAKE_STAGE_ONLY": "1"},
                         capture_output=True, text=True, check=True)
    stage = Path(out.stdout.strip())
    yield stage
    shutil.rmtree(stage, ignore_errors=True)


def nix_eval_json(stage: Path, attr: str, apply: str | None = None):
    cmd = [*NIX, "eval", "--json", *OVERRIDE, f"path:{stage}#{attr}"]
    if apply:
        cmd += ["--apply", apply]
    p = subprocess.run(cmd, cwd=stage, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"nix eval {attr} failed:\n{p.stderr}"
    return json.loads(p.stdout)


def test_flake_lock_pins_nixpkgs():
    lock = json.loads((REPO / "flake.lock").read_text())
    assert lock["version"] == 7 and lock["root"] == "root"
    assert lock["nodes"]["root"]["inputs"] == {"nixpkgs": "nixpkgs"}
    node = lock["nodes"]["nixpkgs"]
    assert node["locked"] == {
        "lastModified": NIXPKGS_LAST_MODIFIED,
        "narHash": NIXPKGS_NAR_HASH,
        "owner": "NixOS",
        "repo": "nixpkgs",
        "rev": NIXPKGS_REV,
        "type": "github",
    }
    # The lock must match the flake's input, or nix would try to re-lock (needs GitHub).
    original = node["original"]
    url = re.search(r'inputs\.nixpkgs\.url\s*=\s*"([^"]+)"', (REPO / "flake.nix").read_text()).group(1)
    assert url == f"github:{original['owner']}/{original['repo']}/{original['ref']}"


def test_flake_check_and_show_offline():
    """`make check-flake`: nix flake check --no-build and nix flake show against the stub."""
    require_nix()
    p = subprocess.run([str(CHECK)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"check-flake failed:\n{p.stdout}\n{p.stderr}"
    for name in BACKENDS:
        assert f"development environment 'bench-{name}'" in p.stdout, p.stdout


def test_one_dev_shell_per_backend_reading_its_requirements(staged_flake):
    shells = nix_eval_json(
        staged_flake, f"devShells.{SYSTEM}",
        "shells: builtins.mapAttrs (n: d: { inherit (d) name BENCH_ENV BENCH_REQUIREMENTS BENCH_LOCK_SHA256 "
        "LD_LIBRARY_PATH UV_PYTHON_DOWNLOADS shellHook; }) shells",
    )
    assert set(BACKENDS) <= set(shells), f"missing dev shells: {set(BACKENDS) - set(shells)}"
    assert set(shells) - set(BACKENDS) <= {"tools", "default"}, sorted(shells)
    for name in [*BACKENDS, "tools"]:
        shell = shells[name]
        req = REPO / "envs" / name / "requirements.txt"
        assert shell["name"] == f"bench-{name}"
        assert shell["BENCH_ENV"] == name
        assert shell["BENCH_REQUIREMENTS"] == f"envs/{name}/requirements.txt"
        # The shell's derivation carries the lock's hash: the same value the venv stamp records.
        assert shell["BENCH_LOCK_SHA256"] == hashlib.sha256(req.read_bytes()).hexdigest(), name
        # The venv is built by the shared code path, then activated with the backend's variables.
        assert f'scripts/envs.py" build {name}' in shell["shellHook"]
        assert f".venvs/{name}/bin/activate" in shell["shellHook"]
        assert f'scripts/envs.py" vars {name}' in shell["shellHook"]
        # manylinux wheels need libstdc++ and zlib from the system; uv must not download a Python.
        assert "-lib/lib" in shell["LD_LIBRARY_PATH"] and "zlib" in shell["LD_LIBRARY_PATH"]
        assert shell["UV_PYTHON_DOWNLOADS"] == "never"
    assert shells["default"]["name"] == "bench-tools"


def test_dev_shell_changes_with_its_lock(staged_flake, tmp_path):
    """Editing envs/NAME/requirements.txt changes that shell's derivation (and no other)."""
    before = nix_eval_json(staged_flake, f"devShells.{SYSTEM}",
                           "shells: builtins.mapAttrs (n: d: d.drvPath) shells")
    req = staged_flake / "envs" / "jax" / "requirements.txt"
    original = req.read_bytes()
    try:
        req.write_bytes(original + b"# changed\n")
        after = nix_eval_json(staged_flake, f"devShells.{SYSTEM}",
                              "shells: builtins.mapAttrs (n: d: d.drvPath) shells")
    finally:
        req.write_bytes(original)
    assert before["jax"] != after["jax"]
    assert {k: v for k, v in before.items() if k != "jax"} == {k: v for k, v in after.items() if k != "jax"}
