"""End to end, as a user runs it: `make bench BACKEND=<each> MODEL=bert` in the smoke profile."""
import subprocess

import pytest
from conftest import REPO, assert_paper_settings, env_python

from bench.catalogue.backends import BACKENDS
from bench.record.results import load_all

pytestmark = [pytest.mark.envs, pytest.mark.slow]


@pytest.mark.duration_s(90)
@pytest.mark.parametrize("backend", list(BACKENDS))
def test_make_bench_bert(backend, shared_smoke):
    """Read from the shared smoke run (tests/shared_run.py), which is exactly this command:
    `make bench BACKEND=<backend> MODEL=bert PROFILE=smoke REPEATS=1` (one process a cell: the test checks each
    backend's code path, not the process spread)."""
    shared = shared_smoke(backend)
    assert shared.returncode == 0, shared.output[-6000:]
    results = shared.results
    found = load_all(results)
    expected = 4 if backend == "native-torch" else 2  # fit + predict (x eager/compiled for native PyTorch)
    assert len(found) == expected
    for r in found:
        assert r.status == "ok", r.message
        run = r.runs[0]
        # sampled to the profile's precision: the fit and predict loops ran past the fewest steps and stopped early
        assert r.cell.timed_steps <= len(run.timed_ms) == run.sampling["steps"] <= r.cell.max_timed_steps
        assert run.first_step_ms > 0
        assert run.process["environment"]["backend"] == backend
        assert 0.1 < run.process["peak_rss_gib"] < 20  # the cell process's own peak, beside the plan's prediction
        assert run.framework["version"]
        assert "jit_compile" in run.settings or "variant" in run.settings
        assert_paper_settings(r.cell, run.settings)  # native: transformers' eager BERT attention, as published
        keras = run.settings.get("keras_version")
        if backend == "keras2":
            assert keras.startswith("2.") and "keras_nlp" in run.settings["model_class"]
        elif backend != "native-torch":
            assert keras.startswith("3.") and "keras_hub" in run.settings["model_class"]
        else:
            # the compiled training and predict steps ran graphs dynamo captured; eager compiled nothing (make
            # test's only native compiled fit and predict: the other models' are in make test-extended)
            assert (run.settings["compiled_graphs"] > 0) == (r.cell.variant == "compiled"), run.settings


OFFLINE_PROBE = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
from bench.catalogue import offline
offline.install_guard()
import urllib.request
start = time.perf_counter()
try:
    urllib.request.urlopen("https://huggingface.co/bert-base-cased/resolve/main/config.json", timeout=30)
except Exception as e:
    print(type(e).__name__, e, f"after {time.perf_counter() - start:.2f}s")
"""


def test_downloads_fail_at_once_with_a_clear_message():
    python = env_python("jax")
    out = subprocess.run([str(python), "-c", OFFLINE_PROBE, str(REPO)], capture_output=True, text=True, timeout=120)
    assert "benchmark cells run offline" in out.stdout and "huggingface.co" in out.stdout, out.stdout + out.stderr
    assert float(out.stdout.rsplit("after ", 1)[1].rstrip("s\n")) < 1.0
