"""The unlocked route: `--env current` in an interpreter of the user's own, its provenance, its own table;
the offline wheel bundle's list against the locks; `gpu-check`'s refusal without a GPU and its verdicts on fakes."""
import json
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from committed import committed_results
from conftest import REPO
from fakes import a100, install_fake_nvidia_smi

from bench.base.provenance import distributions_sha256
from bench.catalogue.ownenv import environment_key
from bench.envs import wheelhouse

NO_GPU = {
    "CUDA_VISIBLE_DEVICES": "",
    "PATH": "/usr/bin:/bin",
    "HOME": "/tmp",
}  # no nvidia-smi: no GPU, whatever this machine has


def fake_distribution(site: Path, name: str, version: str) -> None:
    """A distribution the interpreter lists as installed (importlib.metadata), with no code behind it."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


@pytest.fixture(scope="module")
def own_env(tmp_path_factory):
    """A throwaway venv of this Python without torch, transformers, keras: the user's own environment, which has
    JAX (listed as installed) but no torch, honestly (no site-packages of any built env)."""
    root = tmp_path_factory.mktemp("own-env")
    venv.EnvBuilder(with_pip=False, symlinks=True).create(root / "venv")
    python = root / "venv" / "bin" / "python"
    site = Path(
        subprocess.check_output(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
        ).strip()
    )
    fake_distribution(site, "jax", "0.4.99")
    fake_distribution(site, "jaxlib", "0.4.99")
    assert subprocess.run([str(python), "-c", "import torch"], capture_output=True).returncode != 0
    return python


@pytest.fixture(scope="module")
def unlocked_run(own_env, tmp_path_factory):
    results = tmp_path_factory.mktemp("results")
    out = subprocess.run(
        [
            str(own_env),
            "-m",
            "bench",
            "run",
            "--env",
            "current",
            "--profile",
            "smoke",
            "--backend",
            "jax,native-torch",
            "--model",
            "bert",
            "--results-dir",
            str(results),
        ],
        cwd=REPO,
        env={**NO_GPU},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    files = sorted(results.rglob("*__stack-current.json"))
    return own_env, results, files, out.stdout


def test_an_unlocked_run_records_a_missing_framework_as_na_naming_it(unlocked_run):
    python, results, files, stdout = unlocked_run
    assert len(files) == 6  # jax: fit, predict; native-torch: fit, predict, each eager and compiled
    for path in files:
        data = json.loads(path.read_text())
        assert data["status"] == "unsupported", data
        message = data["runs"][0]["message"]
        assert f"not installed in this environment ({python})" in message
        if data["cell"]["backend"] == "native-torch":
            assert message.endswith(": torch, transformers"), message
        else:  # jax is there: only Keras and its NLP library are missing
            assert message.endswith(": keras, keras-hub or keras-nlp"), message
    assert "environment: unlocked environment" in stdout


def test_an_unlocked_result_records_its_environment_and_lives_apart(unlocked_run):
    python, results, files, _ = unlocked_run
    data = json.loads(files[0].read_text())
    environment = data["provenance"]["environment"]
    assert environment["unlocked"] is True and environment["interpreter"] == str(python)
    assert environment["distributions"]["jax"] == "0.4.99" and "torch" not in environment["distributions"]
    assert environment["distributions_sha256"] == distributions_sha256(environment["distributions"])
    assert environment["frameworks"] == {"jax": "0.4.99"}
    assert data["cell"]["stack"] == "current"
    relative = files[0].relative_to(results).parts
    assert (
        relative[0] == "env-current"
        and relative[1]
        == f"py{sys.version_info[0]}.{sys.version_info[1]}-jax0.4.99-{environment_key(environment)['sha256'][:8]}"
    )  # the folder is named by the environment's key (its frameworks and workload libraries), not every package


def test_an_unlocked_environment_gets_its_own_table_titled_with_it(unlocked_run, tmp_path):
    from bench.studies.table import analyse

    python, results, files, _ = unlocked_run
    folder = tmp_path / "results"
    shutil.copytree(results, folder)
    locked = sorted((committed_results() / "smoke").glob("*/jax__bert__predict__bs2__default.json"))[0]
    (folder / "smoke" / "m").mkdir(parents=True)
    shutil.copy(locked, folder / "smoke" / "m" / locked.name)
    report = analyse(folder)
    stacks = [t.group.stack for t in report.tables]
    assert stacks.count("today") == 1 and stacks.count("current") == 1
    own = next(t for t in report.tables if t.group.stack == "current")
    today = next(t for t in report.tables if t.group.stack == "today")
    assert (
        str(python) in own.group.title and "unlocked environment" in own.group.title and "jax 0.4.99" in own.group.title
    )
    assert all(item.result.cell.stack == "current" for item in own.group.items)
    assert all(item.result.cell.stack == "today" for item in today.group.items)  # never mixed into a locked table


def test_an_unlocked_table_stands_after_every_locked_one_whatever_its_profile(tmp_path):
    """A user's own environment's paper table (the committed GPU run) comes after a locked smoke table, so that the
    README's table, the first, stays a reproducible one."""
    from bench.studies.table import analyse

    unlocked = sorted((committed_results() / "env-current").glob("*/paper/*/*/jax__bert__fit__*.json"))[0]
    locked = sorted((committed_results() / "smoke").glob("*/jax__bert__predict__bs2__default.json"))[0]
    own = tmp_path / "env-current" / "own" / "paper" / "m" / "s"
    for source, folder in ((unlocked, own), (locked, tmp_path / "smoke" / "m")):
        folder.mkdir(parents=True)
        shutil.copy(source, folder / source.name)
    tables = analyse(tmp_path).tables
    assert [(t.group.profile, t.group.stack) for t in tables] == [("smoke", "today"), ("paper", "current")]


def test_env_current_refuses_another_stack_in_one_line(own_env, tmp_path):
    out = subprocess.run(
        [
            str(own_env),
            "-m",
            "bench",
            "run",
            "--env",
            "current",
            "--stack",
            "2024",
            "--backend",
            "jax",
            "--model",
            "bert",
            "--results-dir",
            str(tmp_path),
        ],
        cwd=REPO,
        env=NO_GPU,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr


# --------------------------------------------------------------------------- the wheel bundle


def test_the_wheelhouse_list_has_the_locked_versions_and_no_framework():
    from bench.envs.locks import req_versions

    pins = wheelhouse.plan()
    names = {p.name for p in pins}
    assert {
        "keras",
        "keras-hub",
        "keras-cv",
        "transformers",
        "diffusers",
        "peft",
        "segment-anything",
        "tabulate",
    } <= names
    assert not [n for n in names if wheelhouse.FRAMEWORK_OWNED.match(n)]
    locks = {
        env: req_versions((REPO / "envs" / env / "requirements.txt").read_text())
        for env in (*wheelhouse.LOCK_ENVS, wheelhouse.TABLE_LOCK)
    }
    for pin in pins:
        assert pin.envs, pin
        for env in pin.envs:
            assert locks[env][pin.name] == pin.version, (pin, env)
        if pin.pure:  # downloaded with --require-hashes against these
            assert pin.hashes, pin


def test_locks_that_disagree_are_refused(monkeypatch):
    real = wheelhouse.lock_packages

    def skewed(env):
        packages = real(env)
        if env == "torch":
            packages["keras"] = {**packages["keras"], "version": "3.0.0"}
        return packages

    monkeypatch.setattr(wheelhouse, "lock_packages", skewed)
    with pytest.raises(wheelhouse.EnvError, match="the locks disagree on keras"):
        wheelhouse.plan()


# --------------------------------------------------------------------------- gpu-check


def test_gpu_check_refuses_without_a_gpu_in_one_line_running_nothing(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "bench", "gpu-check", "--results-dir", str(tmp_path / "r")],
        cwd=REPO,
        env=NO_GPU,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0
    assert out.stderr.strip().splitlines() == ["gpu-check: no NVIDIA GPU visible (nvidia-smi lists none): nothing run"]
    assert out.stdout == "" and not (tmp_path / "r").exists()


def test_make_gpu_check_refuses_without_a_gpu(tmp_path):
    out = subprocess.run(
        ["make", "--no-print-directory", "gpu-check", f"RESULTS={tmp_path / 'r'}", f"TOOLS_PY={sys.executable}"],
        cwd=REPO,
        env=NO_GPU,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0
    assert out.stderr.splitlines()[0] == "gpu-check: no NVIDIA GPU visible (nvidia-smi lists none): nothing run"
    assert not (tmp_path / "r").exists()


def test_sync_verdicts():
    from bench.studies.gpucheck.run import judge_sync

    good = {
        "framework": "torch",
        "op_ms": 40.0,
        "clock": "CUDA events",
        "before": {"window_ms": 0.2, "total_ms": 41.0},
        "inside": {"window_ms": 40.5},
    }
    assert judge_sync(good)["ok"]
    leaked = {**good, "before": {"window_ms": 39.0, "total_ms": 41.0}}
    assert "leaked into it" in judge_sync(leaked)["problems"][0]
    uncovered = {**good, "inside": {"window_ms": 3.0}}
    assert "does not cover" in judge_sync(uncovered)["problems"][0]


def fake_result(variant: str, framework: dict, device_memory: dict | None = None):
    from bench.catalogue.registry import plan_cells
    from bench.record.results import Result, Run

    cell = plan_cells(
        "paper", backends=["native-torch"], models=["bert"], tasks=["predict"], variants=[variant], timed_steps=5
    )[0]
    run = Run(
        status="ok", first_step_ms=100.0, warmup_ms=[10.0], timed_ms=[10.0, 11.0, 12.0, 10.0, 11.0], framework=framework
    )
    if device_memory is not None:
        run.device_memory = device_memory
    return Result(
        cell=cell,
        runs=[run],
        unit="ms/step",
        provenance={"git": {}, "machine": {}},
        created_at="2026-11-25T00:00:00+00:00",
    )


def test_cell_verdicts_cuda_graphs_and_memory_against_the_plan():
    from bench.studies.gpucheck.run import Report, judge_cell

    replayed = judge_cell(
        fake_result(
            "compiled",
            {"inductor_cudagraphs": {"skips": 0, "recordings": 3, "skip_reasons": []}},
            {"peak_allocated_gib": 2.0, "peak_reserved_gib": 2.5, "source": "torch.cuda"},
        ),
        {"memory_gib": 1.8},
    )
    assert (
        replayed["cudagraphs"]["verdict"] == "replayed" and replayed["memory"]["verdict"] == "within the plan's range"
    )
    skipped = judge_cell(
        fake_result(
            "compiled", {"inductor_cudagraphs": {"skips": 2, "recordings": 0, "skip_reasons": ["mutated inputs"]}}
        ),
        None,
    )
    assert (
        skipped["cudagraphs"]["verdict"].startswith("NOT replayed")
        and skipped["memory"]["measured"] == "not recorded by this version"
    )
    old = judge_cell(fake_result("compiled", {}), {"memory_gib": 1.8})
    assert old["cudagraphs"]["verdict"] == "not recorded by this version"
    far = judge_cell(
        fake_result("eager", {}, {"peak_allocated_gib": 9.0, "peak_reserved_gib": 9.5, "source": "torch.cuda"}),
        {"memory_gib": 1.8},
    )
    assert "cudagraphs" not in far and far["memory"]["verdict"] == "far from the plan: look"
    assert replayed["timed_steps"] == 5 and replayed["paper_timed_steps"] == "10 to 100"  # fewer than the paper's
    report = Report({"gpus": [{"name": "NVIDIA H100"}]}, "locked", "now", 900, cells=[replayed, skipped, old, far])
    text = report.markdown()
    assert "fewer than the paper profile's" in text and "| 5 (" in text and "NOT replayed" in text


def test_short_cells_are_those_of_the_frameworks_present():
    from bench.studies.gpucheck.run import CHECK_TIMED_STEPS, short_cells

    torch_only = short_cells({"torch": "python"}, "locked")
    assert {c.backend for c in torch_only} == {"native-torch"}
    assert [c.batch_size for c in torch_only if c.task == "generate"] == [1]
    assert all(c.timed_steps == CHECK_TIMED_STEPS and c.profile == "paper" for c in torch_only)
    both = short_cells({"torch": "python", "jax": "python"}, "current")
    assert any(c.backend == "jax" for c in both) and all(c.stack == "current" for c in both)


# --------------------------------------------------------------------------- Keras 3 without TensorFlow

NO_TENSORFLOW = (
    'raise ImportError("TensorFlow is not installed here (a test stand-in: the user\'s own image has none)")\n'
)


@pytest.mark.envs
@pytest.mark.slow
@pytest.mark.duration_s(60)
@pytest.mark.parametrize("task", ["fit", "predict"])
def test_keras3_bert_runs_without_tensorflow_through_keras_own_input_and_says_so(task, tmp_path):
    from conftest import env_python

    from bench.catalogue.backends import cell_environment
    from bench.catalogue.registry import plan_cells

    python = env_python("jax")
    stub = tmp_path / "stub" / "tensorflow"  # `import tensorflow` fails in the cell, as where TF is not installed
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text(NO_TENSORFLOW)
    cell = plan_cells("smoke", backends=["jax"], models=["bert"], tasks=[task])[0]
    out = subprocess.run(
        [str(python), "-m", "bench", "cell", "--cell", json.dumps(cell.to_dict()), "--out", str(tmp_path / "run.json")],
        cwd=REPO,
        env={**NO_GPU, **cell_environment("jax"), "PYTHONPATH": str(tmp_path / "stub"), "JAX_PLATFORMS": "cpu"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["status"] == "ok", out.stdout[-3000:]
    assert run["settings"]["input_pipeline"].startswith("keras.utils.PyDataset (TensorFlow is not installed"), run[
        "settings"
    ]
    assert "PipelineModel.fit/predict" in run["settings"]["input_pipeline"]


@pytest.mark.envs
@pytest.mark.slow
@pytest.mark.duration_s(40)
def test_keras3_keeps_tf_data_where_tensorflow_is_installed(shared_smoke):
    """Keras 3 JAX's BERT predict in the shared smoke run (tests/shared_run.py), in the jax env, where TensorFlow is
    installed: its input is tf.data, as published (no input_pipeline recorded)."""
    from bench.record.results import load_all

    shared = shared_smoke("jax")
    (result,) = [r for r in load_all(shared.results) if r.cell.task == "predict"]
    assert result.status == "ok", (result.message, shared.output[-3000:])
    run = result.runs[0]
    assert run.process["environment"]["backend"] == "jax" and "input_pipeline" not in run.settings, run.settings


def test_a_gpu_check_report_and_its_short_cells_stay_out_of_the_tables(tmp_path):
    from bench.record.results import result_files
    from bench.studies.gpucheck.run import Report

    folder = tmp_path / "gpu-check" / "1x-nvidia-h100"
    Report({"gpus": [{"name": "NVIDIA H100"}]}, "locked", "now", 900).write(folder)
    locked = sorted((committed_results() / "smoke").glob("*/jax__bert__predict__bs2__default.json"))[0]
    (folder / "cells" / "paper" / "m").mkdir(parents=True)
    shutil.copy(locked, folder / "cells" / "paper" / "m" / locked.name)  # a short cell: fewer steps than the profile's
    assert (folder / "gpu-check.json").exists() and result_files(tmp_path) == []


@pytest.mark.envs
@pytest.mark.parametrize("backend,framework", [("native-torch", "torch"), ("jax", "jax")])
def test_the_gpu_checks_sync_probe_runs_and_passes_on_a_cpu(backend, framework, monkeypatch):
    """The probe's code is the GPU's, smaller: on a CPU the harness's windows must pass the same verdicts (JAX
    dispatches asynchronously on a CPU too, so its barrier is really exercised)."""
    from conftest import env_python

    from bench.studies.gpucheck.run import run_sync_probe

    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    verdict = run_sync_probe(
        framework, str(env_python(backend)), timeout_s=300, size=1400
    )  # long enough to stand out of a shared CPU's noise
    assert verdict["ok"], verdict
    assert verdict["op_ms"] > 5 and verdict["window_before_ms"] < verdict["op_ms"] / 3 <= verdict["window_inside_ms"], (
        verdict
    )


def test_gpu_check_on_a_fake_gpu_runs_every_part_and_reports_what_failed(own_env, tmp_path):
    """With a GPU listed (a fake nvidia-smi) in the own venv, which lists JAX but cannot import it: the JAX sync
    probe fails and is reported as failed, its short cell is NA naming what is missing, the report is written."""
    h100 = a100(0, name="NVIDIA H100 80GB HBM3", **{"memory.total": "81559"})
    fake = install_fake_nvidia_smi(tmp_path / "bin", [h100])
    env = {k: v for k, v in NO_GPU.items() if k != "CUDA_VISIBLE_DEVICES"}  # the fake H100 visible
    out = subprocess.run(
        [str(own_env), "-m", "bench", "gpu-check", "--env", "current", "--results-dir", str(tmp_path / "r")],
        cwd=REPO,
        env={**env, **fake, "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 1, out.stdout[-2000:] + out.stderr[-2000:]
    folder = tmp_path / "r" / "gpu-check" / "1x-nvidia-h100-80gb-hbm3"
    report = json.loads((folder / "gpu-check.json").read_text())
    assert report["env"] == "current" and report["environment"]["unlocked"] is True
    assert [s["framework"] for s in report["sync"]] == ["jax"] and not report["sync"][0]["ok"]
    assert "the probe failed" in report["sync"][0]["problems"][0]
    assert [c["cell"] for c in report["cells"]] == ["jax__bert__predict__bs256__default__stack-current"]
    assert report["cells"][0]["status"] == "unsupported" and "keras" in report["cells"][0]["message"]
    text = (folder / "GPU-CHECK.md").read_text()
    assert text.startswith("# GPU check — 1x NVIDIA H100 80GB HBM3") and "jax: FAILED: the probe failed" in text


def test_make_bench_env_current_builds_no_env_and_renders_the_environments_table(tmp_path):
    """The front door: `make bench ENV=current` with the user's Python (here a venv that sees the tools env's
    packages, tabulate among them, and no framework) runs the orchestrator there and renders the table."""
    import sysconfig

    venv.EnvBuilder(with_pip=False, symlinks=True).create(tmp_path / "venv")
    python = tmp_path / "venv" / "bin" / "python"
    site = Path(
        subprocess.check_output(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
        ).strip()
    )
    (site / "tools-env.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n"
    )  # this interpreter's packages (the tools env)
    out = subprocess.run(
        [
            "make",
            "--no-print-directory",
            "bench",
            "ENV=current",
            "BACKEND=jax",
            "MODEL=bert",
            "PROFILE=smoke",
            f"PYTHON={python}",
            f"RESULTS={tmp_path / 'r'}",
        ],
        cwd=REPO,
        env=NO_GPU,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "envs.py" not in out.stdout + out.stderr  # no env built or checked
    page = (tmp_path / "r" / "env-current" / "RESULTS.md").read_text()
    assert f"unlocked environment {python}" in page and "NA" in page
