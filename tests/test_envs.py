"""Tests of the per-backend envs (envs/, scripts/envs.py, mk/envs.mk).

Run from the repo root with the tools env:  .venvs/tools/bin/python -m pytest tests/test_envs.py -q
They assume `make envs` has run. A test that needs an env skips if .venvs/NAME is missing, unless
BENCH_REQUIRE_ENVS is set (CI sets it), in which case it fails.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENVS_PY = ROOT / "scripts" / "envs.py"
sys.path.insert(0, str(ROOT))
from bench.catalogue.backends import BACKENDS, cell_environment  # noqa: E402
from bench.envs.common import default_venv  # noqa: E402

ENV_NAMES = [*BACKENDS, "tools"]
REQUIRE_ENVS = bool(os.environ.get("BENCH_REQUIRE_ENVS"))
KERAS3 = ["tensorflow", "jax", "torch"]


def env_python(name: str) -> Path:
    venv = default_venv(name)
    if not venv.is_dir():
        msg = f".venvs/{name} is not built; run `make envs` (or `python3 scripts/envs.py build {name}`)"
        if REQUIRE_ENVS:
            pytest.fail(msg + " [BENCH_REQUIRE_ENVS is set]")
        pytest.skip(msg)
    assert (venv / "bench-env.json").is_file(), f"{venv} has no bench-env.json: an incomplete build; rerun the build"
    return venv / "bin" / "python"


def probe(name: str, code: str, timeout: int = 600) -> dict:
    """Run code in the env's python with the cell variables; code prints one JSON line last."""
    env = {**os.environ, **(cell_environment(name) if name in BACKENDS else {})}
    p = subprocess.run([str(env_python(name)), "-c", code], env=env, cwd=ROOT, capture_output=True, text=True,
                       timeout=timeout)
    assert p.returncode == 0, f"{name}: probe failed (exit {p.returncode}):\n{p.stderr[-3000:]}"
    return json.loads(p.stdout.strip().splitlines()[-1])


def envs_py(*args: str, env: dict | None = None, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ENVS_PY), *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=timeout)


OPEN_CLIP_VOCAB = """
import importlib.metadata as md
f = [f for f in md.files("open-clip-torch") if f.name == "bpe_simple_vocab_16e6.txt.gz"]
out["open_clip_vocab"] = bool(f) and f[0].locate().exists()
"""

KERAS2_PROBE = """
import json
import tensorflow as tf, tf_keras, keras
m = tf.keras.Sequential([tf.keras.layers.Input((3,)), tf.keras.layers.Dense(2)])
out = {"tf": tf.__version__, "tf_keras": tf_keras.__version__, "is_tf_keras_model": isinstance(m, tf_keras.Model),
       "model_module": type(m).__module__, "is_keras3_model": isinstance(m, keras.Model),
       "bench": __import__("bench.catalogue.backends").catalogue.backends.BACKENDS["keras2"].keras_major}
""" + OPEN_CLIP_VOCAB + "print(json.dumps(out))"

KERAS3_PROBE = """
import json, importlib
import numpy as np, keras
fw = importlib.import_module({fw!r})
m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
y = m.predict(np.ones((1, 3), "float32"), verbose=0)
out = {{"keras": keras.__version__, "backend": keras.backend.backend(), "framework": fw.__version__,
        "shape": list(y.shape), "bench": __import__("bench.catalogue.backends").catalogue.backends.BACKENDS[{name!r}].keras_major}}
""" + OPEN_CLIP_VOCAB.replace("{", "{{").replace("}", "}}") + "print(json.dumps(out))"

NATIVE_TORCH_PROBE = """
import json
import torch, torchvision, transformers, diffusers, peft, accelerate, segment_anything
x = torch.ones(2, 3) @ torch.ones(3, 4)
print(json.dumps({"torch": torch.__version__, "cuda": torch.version.cuda, "torchvision": torchvision.__version__,
                  "transformers": transformers.__version__, "diffusers": diffusers.__version__,
                  "sum": float(x.sum()), "bench": __import__("bench.catalogue.backends").catalogue.backends.BACKENDS["native-torch"].keras_major}))
"""


@pytest.mark.envs
def test_keras2_tf_keras_is_keras2():
    out = probe("keras2", KERAS2_PROBE)
    assert out["tf_keras"].startswith("2."), out
    assert out["tf"].startswith("2.21"), out
    assert out["is_tf_keras_model"] and out["model_module"].startswith("tf_keras."), out
    assert not out["is_keras3_model"], f"tf.keras resolved to Keras 3: {out}"
    assert out["open_clip_vocab"], "open_clip/bpe_simple_vocab_16e6.txt.gz missing (keras-cv SD tokenizer needs it)"
    assert out["bench"] == 2


@pytest.mark.envs
@pytest.mark.parametrize("name", KERAS3)
def test_keras3_backend(name):
    out = probe(name, KERAS3_PROBE.format(fw=BACKENDS[name].framework, name=name))
    assert out["keras"].startswith("3."), out
    assert out["backend"] == name, out
    assert out["shape"] == [1, 2], out
    assert out["open_clip_vocab"], "open_clip/bpe_simple_vocab_16e6.txt.gz missing (keras-cv SD tokenizer needs it)"
    assert out["bench"] == 3


@pytest.mark.envs
def test_native_torch_stack():
    out = probe("native-torch", NATIVE_TORCH_PROBE)
    assert out["torch"].startswith("2.10."), out
    assert out["cuda"] and out["cuda"].startswith("12."), f"expected a CUDA 12 torch build: {out}"
    assert out["sum"] == 24.0
    assert out["bench"] is None


@pytest.mark.envs
@pytest.mark.parametrize("name", ["jax", "torch"])
def test_tensorflow_is_cpu_only_in(name):
    out = probe(
        name,
        """
import json, importlib.metadata as md
import tensorflow as tf
try:
    gpu_dist = md.version("tensorflow")
except md.PackageNotFoundError:
    gpu_dist = None
print(json.dumps({"devices": [f"{d.device_type}:{d.name}" for d in tf.config.list_physical_devices()],
                  "tensorflow_cpu": md.version("tensorflow-cpu"), "tensorflow_dist": gpu_dist,
                  "cuda_build": tf.sysconfig.get_build_info().get("is_cuda_build")}))
""",
    )
    print(f"{name}: TensorFlow sees {out['devices']} (tensorflow-cpu {out['tensorflow_cpu']})")
    assert out["devices"] and all(d.startswith("CPU:") for d in out["devices"]), out
    assert out["tensorflow_dist"] is None, f"the GPU `tensorflow` dist is installed in {name}: {out}"
    assert not out["cuda_build"], out


@pytest.mark.envs
@pytest.mark.parametrize("name", ENV_NAMES)
def test_second_build_is_current_and_reinstalls_nothing(name):
    python = env_python(name)
    before = untouched_marks(python.parent.parent)
    p = envs_py("build", name)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "is current" in p.stdout and "building" not in p.stdout, p.stdout
    assert untouched_marks(python.parent.parent) == before  # no reinstall: the same folder and stamp


def untouched_marks(venv: Path) -> tuple:
    """What a rebuild changes: the env is built beside and swapped in (a new folder), and its stamp rewritten."""
    stamp = venv / "bench-env.json"
    return venv.stat().st_ino, stamp.stat().st_mtime_ns, stamp.read_bytes()


def test_info_json():
    env_python("tools")
    p = envs_py("info", "tools", "--json")
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    assert info["python"].startswith("3.11.") and info["status"] == "current" and info["bench_importable"], info
    assert info["packages"]["pytest"]


def test_check_locks_passes_on_repo():
    p = envs_py("check-locks")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "all good" in p.stdout


@pytest.fixture
def envs_copy(tmp_path):
    dst = tmp_path / "envs"
    shutil.copytree(ROOT / "envs", dst)
    return dst


def test_check_locks_fails_on_spec_drift_offline_with_empty_cache(envs_copy, tmp_path):
    spec = envs_copy / "tools" / "pyproject.toml"
    text = spec.read_text()
    assert '"tabulate==0.10.0"' in text
    spec.write_text(text.replace('"tabulate==0.10.0"', '"tabulate==0.9.0"'))
    empty = tmp_path / "empty-uv-cache"
    empty.mkdir()
    p = envs_py("check-locks", "--envs-dir", str(envs_copy), env={"UV_CACHE_DIR": str(empty), "UV_OFFLINE": "1"})
    assert p.returncode != 0, p.stdout
    assert re.search(r"FAIL tools: uv.lock is stale .*tabulate==0.9.0", p.stdout), p.stdout
    assert "FAIL keras2" not in p.stdout


def test_check_locks_fails_on_export_drift(envs_copy):
    req = envs_copy / "jax" / "requirements.txt"
    text = req.read_text()
    assert re.search(r"^keras==3\.15\.1 ", text, re.M)
    req.write_text(re.sub(r"^keras==3\.15\.1 ", "keras==3.15.0 ", text, flags=re.M))
    p = envs_py("check-locks", "--envs-dir", str(envs_copy))
    assert p.returncode != 0, p.stdout
    assert "FAIL jax: requirements.txt differs" in p.stdout, p.stdout
    assert "-keras==3.15.0" in p.stdout
    assert "keras differs across the Keras 3 envs" in p.stdout  # the cross-env rule sees it too


def test_unknown_backend_names_the_valid_ones(tmp_path):
    for args in (["build", "kears2"], ["vars", "kears2"], ["validate", "kears2"]):
        p = envs_py(*args)
        assert p.returncode != 0
        assert "kears2" in p.stderr and all(b in p.stderr for b in BACKENDS), p.stderr
    if shutil.which("make"):
        mk = tmp_path / "Makefile"
        mk.write_text(f"PYTHON ?= python3\nBACKEND ?=\ninclude {ROOT}/mk/envs.mk\n")
        p = subprocess.run(
            ["make", "-s", "-C", str(ROOT), "-f", str(mk), "env", "BACKEND=kears2", f"PYTHON={sys.executable}"],
            capture_output=True,
            text=True,
        )
        assert p.returncode != 0
        assert "unknown backend 'kears2'" in p.stderr and "native-torch" in p.stderr, p.stderr


def test_vars():
    p = envs_py("vars", "keras2")
    assert p.returncode == 0
    lines = p.stdout.splitlines()
    assert "TF_USE_LEGACY_KERAS=1" in lines and "KERAS_BACKEND=tensorflow" in lines
    assert dict(ln.split("=", 1) for ln in lines) == cell_environment("keras2")


def _blocks(text: str, names: set[str]) -> list[str]:
    """The requirement entries (with their --hash continuation lines) of the named packages."""
    out, cur = [], None
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==", line)
        if m:
            cur = [line] if m.group(1).lower() in names else None
            if cur is not None:
                out.append(cur)
        elif cur is not None and line.startswith("    --hash"):
            cur.append(line)
        else:
            cur = None
    for b in out:  # a block's last hash line has no continuation
        b[-1] = b[-1].rstrip(" \\")
    return ["\n".join(b) + "\n" for b in out]


@pytest.mark.envs  # builds a venv
def test_tampered_hash_refuses_then_correct_file_builds(tmp_path):
    good = "".join(_blocks((ROOT / "envs" / "keras2" / "requirements.txt").read_text(), {"six", "absl-py"}))
    assert len(re.findall(r"^(six|absl-py)==", good, re.M)) == 2 and "--hash=sha256:" in good, good
    bad = re.sub(
        r"(six==.*?)(?=\n[a-z]|\Z)",
        lambda m: re.sub(r"sha256:[0-9a-f]{64}", "sha256:" + "0" * 64, m.group(1)),
        good,
        flags=re.S,
    )
    assert bad != good and "absl-py" in bad
    venv = tmp_path / "venv"
    req = tmp_path / "requirements.txt"
    req.write_text(bad)
    p = envs_py("build", "keras2", "--venv", str(venv), "--requirements", str(req))
    out = p.stdout + p.stderr
    assert p.returncode != 0, out
    assert re.search(r"hash", out, re.I) and "six" in out, out
    assert not (venv / "bench-env.json").exists(), "a refused build left a stamp"

    req.write_text(good)
    p = envs_py("build", "keras2", "--venv", str(venv), "--requirements", str(req))
    assert p.returncode == 0, p.stdout + p.stderr
    stamp = json.loads((venv / "bench-env.json").read_text())
    assert stamp["lock_sha256"] == hashlib.sha256(good.encode()).hexdigest()
    assert stamp["backend"] == "keras2" and stamp["built_at"]
    # the repo's bench package is importable without an install step
    q = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import bench.catalogue.backends, six, absl; print('ok')"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert q.stdout.strip() == "ok", q.stderr

    before = untouched_marks(venv)
    p = envs_py("build", "keras2", "--venv", str(venv), "--requirements", str(req))
    assert p.returncode == 0 and "is current" in p.stdout, p.stdout
    assert untouched_marks(venv) == before  # nothing reinstalled

    # A failed rebuild (the tampered file again) leaves the working env as it was, and says so.
    req.write_text(bad)
    p = envs_py("build", "keras2", "--venv", str(venv), "--requirements", str(req))
    assert (
        p.returncode != 0
        and f"is untouched (built from lock sha256 {stamp['lock_sha256'][:12]})" in p.stdout + p.stderr
    ), p.stdout + p.stderr
    assert json.loads((venv / "bench-env.json").read_text()) == stamp
    q = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import bench.catalogue.backends, six, absl; print('ok')"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert q.stdout.strip() == "ok", q.stderr
    # no half-built folder beside it; the build lock's file stays (removing an flock's file races a waiting build)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".venv.lock", "requirements.txt", "venv"]


SLOW_UV = """#!/bin/sh
# uv, except that `uv pip sync` announces itself and hangs: the moment a user presses Ctrl-C in `make env`.
if [ "$1" = pip ] && [ "$2" = sync ]; then echo SYNCING; exec sleep 600; fi
exec {uv} "$@"
"""


@pytest.mark.envs  # builds a venv
def test_interrupted_build_is_never_taken_for_complete(tmp_path):
    """Kill a rebuild mid-install: the env that was there stays as it was (built from the old lock, which the
    orchestrator refuses as stale), and the next build replaces it."""
    real_uv = ROOT / ".venvs" / ".uv" / "uv"
    if not real_uv.exists():
        pytest.skip("the pinned uv is not fetched yet; run `make env-tools`")
    req = tmp_path / "requirements.txt"
    req.write_text("".join(_blocks((ROOT / "envs" / "keras2" / "requirements.txt").read_text(), {"six"})))
    venv = tmp_path / "venv"
    args = ["build", "keras2", "--venv", str(venv), "--requirements", str(req)]
    assert envs_py(*args).returncode == 0 and (venv / "bench-env.json").exists()
    before = json.loads((venv / "bench-env.json").read_text())

    req.write_text(
        req.read_text() + "".join(_blocks((ROOT / "envs" / "keras2" / "requirements.txt").read_text(), {"absl-py"}))
    )
    slow_uv = tmp_path / "slow-uv"
    slow_uv.write_text(SLOW_UV.format(uv=real_uv))
    slow_uv.chmod(0o755)
    proc = subprocess.Popen(
        [sys.executable, str(ENVS_PY), *args],
        cwd=ROOT,
        env={**os.environ, "UV": str(slow_uv)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    for line in proc.stdout:
        if "SYNCING" in line:
            break
    os.killpg(proc.pid, 9)  # no chance to clean up: the worst interruption
    proc.wait(timeout=30)
    # The stamp is what `make bench` and the orchestrator take for a complete env (env_lookup.env_python): the old
    # env's, naming the old lock, never the new lock's.
    assert json.loads((venv / "bench-env.json").read_text()) == before, "an interrupted build touched the working env"
    assert subprocess.run([str(venv / "bin" / "python"), "-c", "import six"]).returncode == 0

    p = envs_py(*args)
    assert p.returncode == 0 and "building" in p.stdout, p.stdout + p.stderr
    q = subprocess.run([str(venv / "bin" / "python"), "-c", "import absl, six"], capture_output=True, text=True)
    assert q.returncode == 0, q.stderr


def test_torch_in_the_jax_env_is_pinned_like_the_torch_envs_where_it_is_there():
    """jax's torch (the tuning study's DataLoader) is an optional shared pin: absent is fine, another version is not."""
    from bench.envs.rules import check_cross_env

    def problems(jax_packages):
        failed = []
        versions = {"jax": jax_packages, "torch": {"torch": "2.10.0"}, "native-torch": {"torch": "2.10.0"}}
        check_cross_env(versions, lambda where, what: failed.append(what), lambda what: None)
        return [p for p in failed if p.startswith("torch ")]

    assert problems({"torch": "2.10.0"}) == [] and problems({}) == []
    assert problems({"torch": "2.9.1"}) == [
        "torch differs across jax, torch, native-torch: {'jax': '2.9.1', 'torch': '2.10.0', 'native-torch': '2.10.0'}"
    ]


@pytest.mark.envs
def test_the_jax_env_feeds_keras_from_a_torch_dataloader_without_changing_jax_cuda_libraries():
    out = probe(
        "jax",
        """
import json, torch, keras
from torch.utils.data import DataLoader, TensorDataset
model = keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(3)])
model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
history = model.fit(DataLoader(TensorDataset(torch.rand(8, 2, 2), torch.randint(0, 3, (8,))), batch_size=4), verbose=0)
print(json.dumps({"torch": torch.__version__, "backend": keras.backend.backend(), "losses": len(history.history["loss"])}))
""",
    )
    assert out["torch"].startswith("2.10.") and out["backend"] == "jax" and out["losses"] == 1
    lock = (ROOT / "envs" / "jax" / "uv.lock").read_text()
    assert 'name = "nvidia-cudnn-cu12"\nversion = "9.28.0.42"' in lock  # jax[cuda12]'s cuDNN, not torch's 9.10


FAKE_UV = """#!/bin/sh
# uv without a network: `uv venv DIR` makes a venv's shape; `uv pip sync` says so and waits for {go} to exist.
if [ "$1" = venv ]; then
  for a; do d="$a"; done
  mkdir -p "$d/bin" "$d/lib/python3.11/site-packages" && ln -s {python} "$d/bin/python"
  echo "home = /" > "$d/pyvenv.cfg"
  exit 0
fi
if [ "$1" = pip ] && [ "$2" = sync ]; then echo SYNCING; while [ ! -e {go} ]; do sleep 0.1; done; exit 0; fi
exit 1
"""


def test_a_second_build_of_one_env_waits_for_the_first_and_finds_it_current(tmp_path):
    """Two `make env BACKEND=jax` at once once shared the staging folder: one's cleanup deleted the other's, leaving
    an env stamped current with no bin/python. The second waits for the first, then has nothing to do."""
    req, venv, uv, go = tmp_path / "requirements.txt", tmp_path / "venv", tmp_path / "uv", tmp_path / "go"
    req.write_text("six==1.16.0\n")
    uv.write_text(FAKE_UV.format(python=sys.executable, go=go))
    uv.chmod(0o755)
    args = [sys.executable, str(ENVS_PY), "build", "keras2", "--venv", str(venv), "--requirements", str(req)]
    start = lambda: subprocess.Popen(  # noqa: E731
        args, cwd=ROOT, env={**os.environ, "UV": str(uv)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    first = start()
    before = []
    for line in first.stdout:  # the first build is installing
        before.append(line)
        if "SYNCING" in line:
            break
    second = start()
    seen = []
    for line in second.stdout:  # the second waits, or (with no lock) builds into the same staging folder
        seen.append(line)
        if "waiting for another build" in line or "SYNCING" in line:
            break
    go.touch()
    outs = ["".join(before) + first.communicate(timeout=60)[0], "".join(seen) + second.communicate(timeout=60)[0]]
    assert first.returncode == 0 and second.returncode == 0, outs
    assert f"waiting for another build of {venv}" in outs[1] and "is current" in outs[1], outs[1]
    assert "building" not in outs[1] and outs[1].count("\n") == 2, outs[1]
    assert (venv / "bin" / "python").exists() and (venv / "pyvenv.cfg").exists() and (venv / "bench-env.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".venv.lock", "go", "requirements.txt", "uv", "venv"]
