"""`make wheelhouse FOR=<python>`: a bundle of only what an interpreter lacks, never replacing what it has. The
interpreter is a throwaway venv whose distributions are listed (importlib.metadata) with no code behind them; the
download is replaced by tiny files, so no network is needed."""

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from committed import committed_results
from conftest import REPO
from fakes import make_interpreter

from bench.envs import wheelhouse

# A GPU machine's own Python, in part: frameworks and Hugging Face libraries at versions of its own, no Keras.
MACHINE = {
    "torch": "2.11.0",
    "jax": "0.11.2",
    "jaxlib": "0.11.2",
    "numpy": "2.5.2",
    "transformers": "5.17.0",
    "huggingface_hub": "1.33.0",
    "peft": "0.21.2",
    "accelerate": "1.15.0",
}


@pytest.fixture(scope="module")
def machine(tmp_path_factory):
    return make_interpreter(tmp_path_factory.mktemp("machine") / "venv", MACHINE)


def fake_download(pins, out, python_version):
    """What download() returns, for tiny files of the pins' names (the real one asks PyPI)."""
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for pin in pins:
        path = out / f"{pin.name.replace('-', '_')}-{pin.version}-py3-none-any.whl"
        path.write_bytes(pin.name.encode() * 1000)
        rows.append(
            {
                "name": pin.name,
                "version": pin.version,
                "file": path.name,
                "sha256": wheelhouse.sha256(path),
                "bytes": path.stat().st_size,
                "hash_source": "lock",
                "locks": pin.envs,
            }
        )
    return rows


def test_the_interpreter_says_what_it_has(machine):
    version, have = wheelhouse.interpreter_distributions(str(machine))
    assert version == f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert {k: have[k] for k in MACHINE} == MACHINE


def test_only_what_it_lacks_and_can_use_is_bundled(machine):
    _, have = wheelhouse.interpreter_distributions(str(machine))
    names = {p.name for p in wheelhouse.plan(roots=wheelhouse.workload_roots(have), have=have)}
    assert {"keras", "keras-hub", "segment-anything", "diffusers", "tabulate"} <= names
    # what it has stays (its own versions, not the locks'), and so does what came with it
    assert not names & {"transformers", "huggingface-hub", "peft", "accelerate", "torch", "jax", "numpy"}
    assert "keras-cv" not in names  # its StableDiffusion needs TensorFlow, which the machine lacks


def test_with_tensorflow_installed_keras_cv_is_bundled(tmp_path):
    python = make_interpreter(tmp_path / "venv", {**MACHINE, "tensorflow": "2.21.0"})
    _, have = wheelhouse.interpreter_distributions(str(python))
    assert "keras-cv" in wheelhouse.workload_roots(have)


def test_the_bundle_replaces_nothing_and_says_what_it_kept(machine, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(wheelhouse, "download", fake_download)
    out = tmp_path / "bundle"
    assert wheelhouse.main(["--for", str(machine), "--out", str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    wanted = {line.split("==")[0] for line in (out / "requirements.txt").read_text().splitlines()}
    assert wanted and not wanted & {wheelhouse.canon(n) for n in MACHINE}
    kept = {k["name"]: k for k in manifest["for"]["kept"]}
    assert kept["transformers"]["installed"] == "5.17.0" and kept["transformers"]["locked"] != "5.17.0"
    printed = capsys.readouterr().out
    size = manifest["bytes"] / 2**20
    assert f"wrote {len(wanted)} wheels, {size:.1f} MiB" in printed
    assert "kept transformers 5.17.0 as installed" in printed and "tracked files" in printed
    install = [line for line in printed.splitlines() if "pip install" in line]
    assert len(install) == 1 and f"{machine} -m pip install --no-index --no-deps" in install[0]


def test_make_wheelhouse_passes_the_interpreter(tmp_path):
    out = subprocess.run(
        ["make", "--no-print-directory", "-n", "wheelhouse", f"FOR={tmp_path}/py thon"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0 and f"--for '{tmp_path}/py thon'" in out.stdout, out.stdout + out.stderr


# What travels to a GPU machine: the tracked checkout and the bundle for the machine's own Python, under the device's
# 64 MiB hand-over (the goal: under 50 MiB, so a session may carry more than one result folder back and forth).
TRAVEL_LIMIT_MIB = 60


def gpu_machine_distributions() -> dict[str, str]:
    """What the lent GPU machine's Python had before the bundle, from its committed session: what pip froze after the
    install, less what the install added, with what it replaced as it was (results/gpu-session/*/install.log)."""
    session = sorted((committed_results() / "gpu-session").glob("*/install.log"))[-1].parent
    before = session / "pip-freeze-before.txt"
    if before.exists():
        return dict(line.split("==", 1) for line in before.read_text().split() if "==" in line)
    frozen = dict(line.split("==", 1) for line in (session / "pip-freeze.txt").read_text().split() if "==" in line)
    log = (session / "install.log").read_text()
    installed = re.search(r"Successfully installed (.*)", log).group(1).split()
    # pip names a distribution as its metadata does (importlib_metadata in the freeze, importlib-metadata in the log):
    # compared canonically, or what the install added would be taken for what the machine had
    added = {wheelhouse.canon(re.sub(r"-\d[^-]*$", "", name)) for name in installed}
    replaced = dict(re.findall(r"Found existing installation: (\S+) (\S+)", log))
    return {**{k: v for k, v in frozen.items() if wheelhouse.canon(k) not in added}, **replaced}


def test_the_checkout_and_the_gpu_machines_bundle_fit_what_a_gpu_session_carries():
    have = gpu_machine_distributions()
    assert "torch" in have and "keras" not in have  # the image's own Python, before the bundle
    pins = wheelhouse.plan(roots=wheelhouse.workload_roots(have), have=have)
    assert {"keras", "keras-hub"} <= {p.name for p in pins} and not {"torch", "jax"} & {p.name for p in pins}
    # every distribution the session's install added is in the bundle counted here (the log's names, canonical)
    log = sorted((committed_results() / "gpu-session").glob("*/install.log"))[-1].read_text()
    added = {wheelhouse.canon(re.sub(r"-\d[^-]*$", "", n)) for n in re.search(r"Successfully installed (.*)", log)
             .group(1).split()} - {"zipp"}  # zipp: the image had one, which the install replaced  # fmt: skip
    assert added <= {p.name for p in pins}, added - {p.name for p in pins}
    bundle, tracked = wheelhouse.planned_bytes(pins), wheelhouse.tracked_bytes()
    total = (bundle + tracked) / 2**20
    assert total < TRAVEL_LIMIT_MIB, (
        f"the tracked checkout ({tracked / 2**20:.1f} MiB) and the GPU machine's bundle ({bundle / 2**20:.1f} MiB) "
        f"come to {total:.1f} MiB, over {TRAVEL_LIMIT_MIB}: keep raw per-process files compressed or aggregated"
    )


def script(path, text: str):
    path.write_text(text)
    path.chmod(0o755)
    return str(path)


def test_an_interpreter_that_is_not_a_python_3_8_or_newer_is_one_line_naming_it(tmp_path):
    from bench.envs.common import EnvError

    python2 = script(tmp_path / "python2.7", f'#!/bin/sh\nexec {sys.executable} -c "import sys; '
                     f"sys.version_info = (2, 7, 18, 'final', 0); exec(sys.argv[1])\" \"$2\"\n")
    cases = {
        "/bin/echo": "is not a Python 3.8 or newer interpreter: it printed",
        "/bin/true": "is not a Python 3.8 or newer interpreter: it printed ''",
        script(tmp_path / "braces", "#!/bin/sh\necho '{}'\n"): "it printed '{}'",
        python2: "is not a Python 3.8 or newer interpreter: it is Python 2.7",
    }
    for python, said in cases.items():
        with pytest.raises(EnvError) as refused:
            wheelhouse.interpreter_distributions(python)
        assert said in str(refused.value) and "\n" not in str(refused.value), (python, str(refused.value))


def test_an_interpreter_that_never_answers_is_ended_with_what_it_started(tmp_path, monkeypatch):
    from bench.envs.common import EnvError

    child = tmp_path / "child.pid"
    hangs = script(tmp_path / "hangs", f"#!/bin/sh\nsleep 600 &\necho $! > {child}\nwait\n")
    monkeypatch.setattr(wheelhouse, "ANSWER_TIMEOUT_S", 1)
    with pytest.raises(EnvError, match="did not answer in 1 s and was ended"):
        wheelhouse.interpreter_distributions(hangs)
    pid = int(child.read_text())

    def state() -> str:
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return "gone"

    # a SIGKILL is acted on when the process next runs: on a loaded machine that can be a moment later
    deadline = time.monotonic() + 10
    while state() not in ("gone", "Z") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert state() in ("gone", "Z"), f"the program's child {pid} is still running 10 s after it was ended"


@pytest.mark.parametrize("target,variable,option", [
    ("wheelhouse", "FOR", "--for"),
    ("sweep", "CALL", "--call"),
    ("bisect", "KEY", "--key"),
])  # fmt: skip
def test_a_value_with_a_quote_reaches_the_command_as_written(tmp_path, target, variable, option):
    argv_of = script(tmp_path / "argv", f"#!{sys.executable}\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    value = f"{tmp_path}/o'k \"a b\" `x` ;$HOME $(PYTHON)/python"  # a $ too: make does not expand it
    out = subprocess.run(
        ["make", "--no-print-directory", target, f"{variable}={value}", f"PYTHON={argv_of}", f"TOOLS_PY={argv_of}",
         "ENVS_PY=true", "PACKAGE=keras", "BACKEND=jax", "VERSIONS=1.0", "GOOD=1.0", "BAD=2.0",
         f"RESULTS={tmp_path}"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    passed = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("[") and option in line]
    assert len(passed) == 1 and passed[0][passed[0].index(option) + 1] == value, out.stdout


def test_a_python_without_a_framework_is_told_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(wheelhouse, "download", fake_download)
    bare = make_interpreter(tmp_path / "bare", {})
    assert wheelhouse.main(["--for", str(bare), "--out", str(tmp_path / "bundle")]) == 0
    assert f"note: {bare} has none of jax, tensorflow, tensorflow-cpu, torch" in capsys.readouterr().out
