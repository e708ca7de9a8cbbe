"""One preamble for every process inside a framework env (bench/measure/env_process.py): a cell, a grid worker and an
overhead worker set the env's variables, JAX's platform and the network guard the same way."""
import os

import pytest
from conftest import REPO

from bench.catalogue import offline
from bench.catalogue.backends import cell_environment
from bench.measure import env_process

ENTRY_POINTS = ["bench/measure/cell.py", "bench/studies/grid/worker.py", "bench/studies/overhead/worker.py"]


@pytest.fixture
def guard(monkeypatch):
    installed = []
    monkeypatch.setattr(offline, "install_guard", lambda: installed.append(True))
    for key in (*cell_environment("jax"), "JAX_PLATFORMS"):
        monkeypatch.delenv(key, raising=False)
    return installed


@pytest.mark.parametrize("on_gpu,platform", [(False, "cpu"), (True, "cuda")])
def test_jax_is_told_its_platform_and_the_guard_is_installed(guard, on_gpu, platform):
    env_process.enter_env("jax", uses_jax=True, on_gpu=on_gpu)
    assert os.environ["JAX_PLATFORMS"] == platform and guard == [True]
    assert all(os.environ[key] == value for key, value in cell_environment("jax").items())


def test_a_value_already_set_wins_and_other_frameworks_leave_jax_alone(guard, monkeypatch):
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    env_process.enter_env("jax", uses_jax=True, on_gpu=True)
    assert os.environ["JAX_PLATFORMS"] == "cpu"
    monkeypatch.delenv("JAX_PLATFORMS")
    env_process.enter_env("torch", uses_jax=False, on_gpu=True)
    assert "JAX_PLATFORMS" not in os.environ


@pytest.mark.parametrize("path", ENTRY_POINTS)
def test_every_process_in_an_env_enters_it_through_the_one_helper(path):
    code = (REPO / path).read_text()
    assert "enter_env(" in code
    assert "JAX_PLATFORMS" not in code and "install_guard" not in code and "cell_environment(" not in code
