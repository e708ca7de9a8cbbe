"""make doctor: every verdict from faked probes, and a real run that passes on this machine, importing no framework."""
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from bench.run import doctor
from bench.run.doctor import ENV_DISK_GB, FAIL, GB, GIB, OK, WARN, Probes

REPO = Path(__file__).resolve().parent.parent


def healthy(tmp_path: Path, **overrides) -> Probes:
    """A machine on which every check passes, with every probe faked."""
    probes = Probes(
        venvs=tmp_path / ".venvs",
        plan_path=tmp_path / "plan.json",
        python_version=lambda: (3, 11, 7),
        which=lambda name: f"/usr/bin/{name}",
        make_version=lambda: "GNU Make 4.3\nBuilt for x86_64-pc-linux-gnu\n",
        free_disk_bytes=lambda path: 100 * GB,
        total_memory_bytes=lambda: 64 * GIB,
        nvidia_driver=lambda: "550.54.15",
        built_envs=lambda venvs: set(),
        read_plan=lambda path: None,
        environ={},
    )
    return replace(probes, **overrides)


def by_name(probes: Probes) -> dict:
    return {c.name: c for c in doctor.diagnose(probes)}


def test_a_healthy_machine_passes_every_check(tmp_path):
    checks = by_name(healthy(tmp_path))
    assert {c.verdict for c in checks.values()} == {OK}
    assert "550.54.15" in checks["NVIDIA driver"].value
    assert f"{sum(ENV_DISK_GB.values()):.1f} GB needed" in checks["disk (envs)"].value  # every env to build
    lines = []
    assert doctor.main(healthy(tmp_path), out=lines.append) == 0
    assert lines[-1] == "doctor: ready" and len(lines) == len(doctor.CHECKS) + 1


def test_no_disk_fails_with_the_fix_and_a_non_zero_exit(tmp_path):
    probes = healthy(tmp_path, free_disk_bytes=lambda path: 2 * GB)
    check = by_name(probes)["disk (envs)"]
    assert (
        check.verdict == FAIL
        and "2.0 GB free" in check.value
        and f"{sum(ENV_DISK_GB.values()):.1f} GB needed" in check.value
    )
    assert f"free {sum(ENV_DISK_GB.values()) - 2.0:.1f} GB more" in check.fix
    assert by_name(probes)["disk (images)"].verdict == WARN  # the container line is never fatal
    lines = []
    assert doctor.main(probes, out=lines.append) == 1
    assert any(line.startswith("FAIL  disk (envs)") for line in lines) and "fix:" in "\n".join(lines)
    assert lines[-1] == "doctor: 1 failed (disk (envs))"


def test_disk_needed_is_only_the_missing_envs_share(tmp_path):
    built = set(ENV_DISK_GB) - {"torch"}
    probes = healthy(tmp_path, built_envs=lambda venvs: built, free_disk_bytes=lambda path: 5 * GB)
    check = by_name(probes)["disk (envs)"]
    assert check.verdict == OK and f"{ENV_DISK_GB['torch']:.1f} GB needed" in check.value and "torch" in check.value
    everything = healthy(tmp_path, built_envs=lambda venvs: set(ENV_DISK_GB), free_disk_bytes=lambda path: 0)
    assert by_name(everything)["disk (envs)"].verdict == OK


def test_real_built_envs_are_found_by_their_stamp(tmp_path):
    venvs = tmp_path / ".venvs"
    (venvs / "jax").mkdir(parents=True)
    (venvs / "jax" / "bench-env.json").write_text("{}")
    (venvs / "torch").mkdir()  # an interrupted build: no stamp, still to be built
    assert doctor._built_envs(venvs) == {"jax"}


def test_no_compiler_fails(tmp_path):
    check = by_name(healthy(tmp_path, which=lambda name: None))["C compiler"]
    assert check.verdict == FAIL and "torch.compile" in check.value and "apt-get install gcc" in check.fix


def test_cc_variable_names_the_compiler(tmp_path):
    seen = []
    probes = healthy(tmp_path, environ={"CC": "clang"}, which=lambda name: seen.append(name) or None)
    assert by_name(probes)["C compiler"].verdict == FAIL and seen == ["clang"]


def test_an_old_driver_fails(tmp_path):
    check = by_name(healthy(tmp_path, nvidia_driver=lambda: "470.82.01"))["NVIDIA driver"]
    assert check.verdict == FAIL and "470.82.01" in check.value and "525" in check.fix


def test_the_paper_profile_without_a_gpu_in_use_fails_before_anything_is_built(tmp_path):
    """The published GPU settings on a CPU would run Gemma 7B at batch 32 for hours and compare with nothing."""
    for no_gpu in ({"nvidia_driver": lambda: None}, {"environ": {"CUDA_VISIBLE_DEVICES": ""}}):
        check = by_name(healthy(tmp_path, profile="paper", **no_gpu))["profile"]
        assert check.verdict == FAIL and "no GPU in use" in check.value and "PROFILE=cpu" in check.fix, check
    assert by_name(healthy(tmp_path, profile="paper"))["profile"].verdict == OK  # a GPU in use
    for profile in ("smoke", "cpu", None):
        assert by_name(healthy(tmp_path, profile=profile, nvidia_driver=lambda: None))["profile"].verdict == OK


def test_a_paper_cell_is_refused_by_the_runner_where_no_gpu_is_in_use(tmp_path, monkeypatch):
    """The runner refuses too: ENV=current and `python -m bench run` do not pass through the doctor."""
    import bench.run.runner
    from bench.base.errors import BenchError
    from bench.catalogue.registry import Cell

    monkeypatch.setattr(bench.run.runner, "machine_info", lambda: {"cpu": "AMD EPYC", "logical_cpus": 2, "gpus": []})
    paper = Cell("jax", "bert", "fit", 32, "paper", "default", 10, 100)
    with pytest.raises(BenchError, match="the paper profile is the published GPU settings"):
        bench.run.runner.prepare([paper], tmp_path / "results", repeats=1)
    assert not (tmp_path / "results").exists()  # nothing written


def test_no_nvidia_smi_is_fine_and_a_broken_one_warns(tmp_path):
    assert by_name(healthy(tmp_path, nvidia_driver=lambda: None))["NVIDIA driver"].verdict == OK
    assert by_name(healthy(tmp_path, nvidia_driver=lambda: ""))["NVIDIA driver"].verdict == WARN


@pytest.mark.parametrize(
    "version,verdict", [((3, 10, 12), FAIL), ((3, 8, 0), FAIL), ((3, 12, 1), WARN), ((3, 11, 0), OK)]
)
def test_wrong_python(tmp_path, version, verdict):
    check = by_name(healthy(tmp_path, python_version=lambda: version))["python"]
    assert check.verdict == verdict
    if verdict != OK:
        assert "PYTHON=python3.11" in check.fix


def test_make_missing_or_not_gnu_fails(tmp_path):
    assert by_name(healthy(tmp_path, make_version=lambda: None))["make"].verdict == FAIL
    assert by_name(healthy(tmp_path, make_version=lambda: "bmake 20200710"))["make"].verdict == FAIL


def test_memory_against_the_plans_largest_cell(tmp_path):
    plan = {
        "cells": [
            {"key": "jax__gemma__fit__bs8__default", "memory_gib": 80.0},
            {"key": "jax__bert__fit", "memory_gib": 4},
        ]
    }
    cpu = dict(nvidia_driver=lambda: None)  # on a GPU the cells' memory is the GPU's, not compared with RAM
    check = by_name(healthy(tmp_path, read_plan=lambda path: plan, **cpu))["memory"]
    assert check.verdict == WARN and "jax__gemma__fit__bs8__default" in check.value and "80.0 GiB" in check.value
    small = {"cells": [{"key": "jax__bert__fit", "memory_gib": 4}]}
    assert by_name(healthy(tmp_path, read_plan=lambda path: small))["memory"].verdict == OK
    no_plan = by_name(healthy(tmp_path))["memory"]
    assert no_plan.verdict == OK and "64.0 GiB total" in no_plan.value and "not compared" in no_plan.value


def test_a_real_plan_file_is_read(tmp_path):
    (tmp_path / "plan.json").write_text('{"cells": [{"key": "big", "memory_gib": 1000}]}')
    probes = replace(healthy(tmp_path), read_plan=doctor._read_plan, nvidia_driver=lambda: None)
    assert by_name(probes)["memory"].verdict == WARN


FRAMEWORKS = {"torch", "jax", "jaxlib", "tensorflow", "keras", "tf_keras", "flax", "transformers", "numpy"}


def test_a_real_run_passes_on_this_machine_without_a_framework_import():
    """The system python3 and the CLI, as make runs it (this machine has 3.11, make, cc and room). It is quick
    because it imports no framework: -X importtime lists every module the run imported, so that is what is asserted,
    not a wall-clock bound a loaded machine could break."""
    command = [sys.executable, "-X", "importtime", "-m", "bench", "doctor"]
    out = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.splitlines()[-1] == "doctor: ready"
    listing = [line for line in out.stderr.splitlines() if line.startswith("import time:")]
    imported = {line.rsplit("|", 1)[1].strip().split(".")[0] for line in listing}
    assert "bench" in imported  # the listing is there to read
    assert not imported & FRAMEWORKS, f"doctor imported {sorted(imported & FRAMEWORKS)}"


def test_make_stops_before_building_when_the_doctor_fails():
    """`make -n` shows the doctor first in each target that builds or runs."""
    for target in ("envs", "test", "bench-all", "bench-cpu-full"):
        # --no-print-directory: under `make test` MAKEFLAGS carries -w, which adds "Entering directory" lines.
        out = subprocess.run(
            ["make", "--no-print-directory", "-n", target], cwd=REPO, capture_output=True, text=True, timeout=30
        )
        assert out.returncode == 0, out.stderr
        plan = (
            '--results-dir "results/cpu-full" --profile cpu'
            if target == "bench-cpu-full"
            else '--results-dir "results"'
        )
        assert out.stdout.splitlines()[0].rstrip().endswith("-m bench doctor " + plan), (target, out.stdout)


def test_a_failed_check_stops_make_before_anything_is_built(tmp_path):
    """CC names no compiler: the doctor FAILs and make never reaches the build (here a harmless echo)."""
    uv = tmp_path / "uv"
    uv.write_text("")  # newer than containers/uv-requirements.txt: make does not fetch uv
    out = subprocess.run(
        ["make", "envs", "CC=no-such-compiler", "ENVS_PY=echo BUILT", f"UV={uv}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode != 0
    assert "FAIL  C compiler" in out.stdout and "BUILT" not in out.stdout


def test_cli_reads_the_plan_it_is_given(tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text('{"cells": [{"key": "jax__gemma__fit__bs8__default", "memory_gib": 100000}]}')
    out = subprocess.run(
        [sys.executable, "-m", "bench", "doctor", "--plan", str(plan)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=30,
    )
    line = next(l for l in out.stdout.splitlines() if "memory" in l)
    assert line.startswith("warn") and "jax__gemma__fit__bs8__default" in line and out.returncode == 0


def test_the_disk_check_knows_every_env_make_envs_builds():
    from bench.envs.common import stack_names

    assert set(stack_names()) == set(ENV_DISK_GB), set(stack_names()) ^ set(ENV_DISK_GB)
