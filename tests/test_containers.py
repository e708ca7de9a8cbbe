"""Containers: the Containerfiles lint clean, agree with the backends, and an image builds reproducibly.

The image tests (marked `container`, minutes each and ~7 GB of disk) are in `make test-extended`: it builds ONE
backend's image and runs smoke commands and a cell in it, then builds it twice more with no layer cache and requires
the same image ID. `make test` keeps the static tests: the Containerfiles lint clean, declare every cell variable, copy
only what the context lets in, and the env layer's few modules run alone. The backend is
BENCH_CONTAINER_BACKEND, default keras2: the smallest env to install (measured venv sizes: keras2 6.96 GB,
tensorflow 6.97, native-torch 7.42, jax 7.62, torch 9.16). It needs root (debootstrap, rootful podman).
A missing tool skips locally, with the reason, and fails in CI (CI=true).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.catalogue.backends import BACKENDS, cell_environment
from bench.record.results import load_all

REPO = Path(__file__).resolve().parent.parent
CONTAINERS = REPO / "containers"
CONTAINERFILE = CONTAINERS / "Containerfile"
IN_CI = os.environ.get("CI") == "true"
CONTAINER_BACKEND = os.environ.get("BENCH_CONTAINER_BACKEND", "keras2")


def missing(reason: str) -> None:
    if IN_CI:
        pytest.fail(reason)
    pytest.skip(reason)


def require_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        missing(f"{name} not found: run scripts/install-system-deps.sh")
    return path


def base_lock() -> dict[str, str]:
    pins = {}
    for line in (CONTAINERS / "base.lock").read_text().splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            pins[key] = value
    return pins


# ----------------------------------------------------------------------------- static, fast


def test_hadolint_clean():
    hadolint = require_tool("hadolint")
    p = subprocess.run(
        [
            hadolint,
            "--config",
            str(CONTAINERS / ".hadolint.yaml"),
            str(CONTAINERFILE),
            str(CONTAINERS / "Containerfile.base"),
        ],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, f"hadolint:\n{p.stdout}{p.stderr}"


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_containerfile_declares_every_cell_variable(backend):
    """build-image.sh passes `scripts/envs.py vars BACKEND` as build args; each must become an ENV."""
    text = CONTAINERFILE.read_text()
    env_block = text[text.index("\nENV BENCH_BACKEND=") :]
    for key in cell_environment(backend):
        assert re.search(rf"^ARG {key}(=|$)", text, re.M), f"{key}: no ARG in the Containerfile"
        assert f"{key}=${{{key}}}" in env_block, f"{key}: not set by the ENV instruction"


def test_base_is_pinned():
    pins = base_lock()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", pins["BASE_TIMESTAMP"])
    assert re.fullmatch(r"[0-9a-f]{64}", pins["BASE_ROOTFS_SHA256"])
    assert re.fullmatch(r"[0-9a-f]{64}", pins["BASE_IMAGE_ID"])
    # The Containerfile's default base and its release-date check name the same pinned release.
    text = CONTAINERFILE.read_text()
    assert f"ARG BASE_IMAGE={pins['BASE_NAME']}:{pins['BASE_TAG']}" in text
    assert '"Sat, 11 Jul 2026 10:16:37 UTC"' in text and pins["BASE_TIMESTAMP"] == "2026-07-11T10:16:37Z"


def test_context_allowlist_covers_what_is_copied():
    """Every COPY source is let in by Containerfile.dockerignore (and the staged context)."""
    allowed = [
        line[1:]
        for line in (CONTAINERS / "Containerfile.dockerignore").read_text().splitlines()
        if line.startswith("!")
    ]
    sources = []
    for m in re.finditer(r"^COPY (.+?) \S+$", CONTAINERFILE.read_text(), re.M):
        sources += m.group(1).split()
    assert sources
    for src in sources:
        src = src.rstrip("/").replace("${BACKEND}", "*")
        assert any(src == a or src.startswith(a + "/") for a in allowed), f"COPY {src} is not in the allowlist"


# ----------------------------------------------------------------------------- the image (slow)


def pinned_base_engine() -> tuple[str, dict]:
    """The engine, with the tools and root an image build needs, and the pinned base built if missing."""
    assert CONTAINER_BACKEND in BACKENDS, f"BENCH_CONTAINER_BACKEND={CONTAINER_BACKEND!r} is not a backend"
    engine = require_tool("podman")  # the reproducibility guarantee is podman's (--timestamp)
    for tool in ("debuerreotype-init", "debootstrap"):
        require_tool(tool)
    if os.geteuid() != 0:
        missing("building the base (debootstrap) and rootful podman need root")
    env = {**os.environ, "ENGINE": engine}
    # The base: built if missing; either way it must be the pinned one.
    pins = base_lock()
    base = f"{pins['BASE_NAME']}:{pins['BASE_TAG']}"
    if subprocess.run([engine, "image", "exists", base]).returncode != 0:
        subprocess.run([str(CONTAINERS / "build-base.sh")], env=env, check=True, timeout=1800)
    base_id = subprocess.run(
        [engine, "image", "inspect", "--format", "{{.Id}}", base], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert base_id == pins["BASE_IMAGE_ID"], "the base image is not the pinned one"
    return engine, env


def tagged_id(engine: str, image: str) -> str:
    return subprocess.run(
        [engine, "image", "inspect", "--format", "{{.Id}}", image], capture_output=True, text=True, check=True
    ).stdout.strip().removeprefix("sha256:")


@pytest.mark.container
@pytest.mark.slow
@pytest.mark.extended  # beside the build and run below: it builds the image twice more
@pytest.mark.duration_s(300)
def test_image_builds_reproducibly():
    engine, env = pinned_base_engine()
    # Two --no-cache builds of one staged context: the same ID.
    p = subprocess.run(
        [str(CONTAINERS / "build-image.sh"), CONTAINER_BACKEND, "--repro"],
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    ids = re.findall(r"^image-repro \S+: build \d ([0-9a-f]{64})$", p.stdout, re.M)
    assert p.returncode == 0 and len(ids) == 2 and ids[0] == ids[1], (
        f"image IDs differ or the build failed:\n{p.stdout}\n{p.stderr[-4000:]}"
    )
    assert tagged_id(engine, f"localhost/bench:{CONTAINER_BACKEND}") == ids[0]


@pytest.mark.container
@pytest.mark.slow  # it measures no time
@pytest.mark.extended  # 200 s here, more on a fresh host that builds the base first; make test keeps the static tests
@pytest.mark.duration_s(200)
def test_image_builds_and_runs(tmp_path):
    engine, env = pinned_base_engine()
    p = subprocess.run(
        [str(CONTAINERS / "build-image.sh"), CONTAINER_BACKEND], env=env, capture_output=True, text=True, timeout=3600
    )
    assert p.returncode == 0, f"the build failed:\n{p.stdout}\n{p.stderr[-4000:]}"
    image = f"localhost/bench:{CONTAINER_BACKEND}"
    built = tagged_id(engine, image)
    assert p.stdout.split()[-1] == built, p.stdout  # the script names the image it tagged

    # Smoke: the framework imports and reports its version, with the backend's variables set.
    framework = BACKENDS[CONTAINER_BACKEND].framework
    code = (
        "import importlib, json, os\n"
        f"m = importlib.import_module({framework!r})\n"
        "env = {k: os.environ.get(k) for k in %r}\n"
        "print('SMOKE', json.dumps({'version': m.__version__, 'env': env}))\n"
        % sorted(cell_environment(CONTAINER_BACKEND))
    )
    run = [engine, "run", "--rm", "--pull=never", "--network=none"]
    p = subprocess.run(
        [*run, "--entrypoint", "/opt/venv/bin/python", image, "-c", code], capture_output=True, text=True, timeout=600
    )
    assert p.returncode == 0, p.stderr[-4000:]
    smoke = next(line for line in p.stdout.splitlines() if line.startswith("SMOKE "))
    got = json.loads(smoke[len("SMOKE ") :])
    assert got["version"], got
    assert got["env"] == cell_environment(CONTAINER_BACKEND)
    print(f"{image}: {framework} {got['version']}")

    # The entrypoint is the benchmark CLI.
    p = subprocess.run([*run, image, "--help"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "usage: python -m bench" in p.stdout, p.stdout + p.stderr
    p = subprocess.run([*run, image, "run", "--help"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "--results-dir" in p.stdout, p.stdout + p.stderr

    # A benchmark cell in the image, through the make target, its result written to the host's folder.
    results = tmp_path / "results"
    p = subprocess.run(
        [
            "make",
            "--no-print-directory",
            "bench-container",
            f"BACKEND={CONTAINER_BACKEND}",
            "MODEL=bert",
            "TASK=predict",
            "PROFILE=smoke",
            f"RESULTS={results}",
            f"CONTAINER_ENGINE={engine}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    (result,) = load_all(results)
    assert result.status == "ok" and result.cell.backend == CONTAINER_BACKEND, result.message
    variables = result.runs[0].process["variables"]
    assert variables["BENCH_IMAGE"] == f"{image}@{built}", variables  # the image's ID beside the number


def test_the_env_layer_has_every_module_its_build_imports(tmp_path):
    """The image's env layer copies only a few files of bench/ (so that editing the benchmark code does not rebuild
    a multi-GB layer): scripts/envs.py must run from those alone (bench/base/errors.py was once missing)."""
    text = CONTAINERFILE.read_text()
    env_layer = text[: text.index("COPY bench/ bench/")]
    for line in re.findall(r"^COPY (.+)$", env_layer, re.M):
        *sources, dest = line.split()
        for source in sources:
            source = source.replace("${BACKEND}", "jax")
            target = tmp_path / source
            if (REPO / source).is_dir():
                shutil.copytree(REPO / source, target, dirs_exist_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(REPO / source, target)
    out = subprocess.run(
        [sys.executable, "scripts/envs.py", "vars", "jax"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PATH": os.environ["PATH"], "PYTHONPATH": ""},
    )
    assert out.returncode == 0 and "KERAS_BACKEND=jax" in out.stdout, out.stderr[-2000:]
