"""Generated-length assertions: every generate call must write exactly the workload's tokens, prompt intact.

The unit tests drive the shared check (bench/models/llm.py) with outputs of each kind; the env tests run a real
smoke generate on Keras 3 (JAX) and native PyTorch, check its outputs pass, and a cut-short copy fail.
"""
import json
import os
import re
import subprocess

import numpy as np
import pytest
from conftest import REPO, env_python

from bench.catalogue.backends import cell_environment
from bench.models.llm import GenerationCheckError, check_generated

PROMPT = np.array([[5, 6, 7], [8, 9, 10]])


def output(length=8, prompt=PROMPT):
    ids = np.full((prompt.shape[0], length), 4)
    ids[:, : prompt.shape[1]] = prompt
    return ids


def test_exact_outputs_pass():
    check_generated([(output(), np.ones((2, 8), bool)), (output(), None)], PROMPT, 8, calls=2)


@pytest.mark.parametrize(
    "outputs,calls,message",
    [
        ([(output(), None)], 2, "1 generate calls recorded, expected 2"),
        ([(output(length=6), None)], 1, "shape (2, 6), expected (2, 8) (3 prompt + 5 new tokens per sequence)"),
        ([(output()[:1], None)], 1, "shape (1, 8), expected (2, 8)"),
        ([(output(prompt=PROMPT + 1), None)], 1, "overwrote the prompt"),
    ],
)
def test_wrong_outputs_fail(outputs, calls, message):
    with pytest.raises(GenerationCheckError, match=re.escape(message)):
        check_generated(outputs, PROMPT, 8, calls)


def test_unfilled_positions_fail():
    filled = np.ones((2, 8), bool)
    filled[1, 7] = False  # keras-hub's mask for a sequence that stopped one token early
    with pytest.raises(GenerationCheckError, match="call 0 left 1 of 16 positions unfilled"):
        check_generated([(output(), filled)], PROMPT, 8, calls=1)


REAL_GENERATE = r"""
import json, sys
from bench.catalogue import offline
offline.install_guard()
from bench.models.llm import GenerationCheckError
from bench.measure.drivers import drive
from bench.base.timing import StepTimer
from bench.catalogue.registry import Cell, get_model
backend = sys.argv[1]
cell = Cell(backend, "gemma", "generate", 2, "smoke", "eager" if backend == "native-torch" else "default", 0, 2)
spec = get_model("gemma")
workload = spec.implementation(backend).create(cell, spec.shape("smoke"))
workload.setup()
timer = StepTimer(workload.timing_device, cell.window_plan())
drive(workload, timer)
workload.steps_run = timer.steps_done
workload.check()  # the real outputs pass
outputs = workload.outputs
last = outputs[-1]
if isinstance(last, dict):  # keras-hub: one sequence stopped a token early
    cut = dict(last)
    cut["padding_mask"] = cut["padding_mask"].copy()
    cut["padding_mask"][0, -1] = False
else:  # transformers: a call that returned one token short
    cut = last[:, :-1]
outputs[-1] = cut
try:
    workload.check()
    caught = None
except GenerationCheckError as e:
    caught = str(e)
outputs[-1] = last
# the split's one-token and partial calls are checked too: one token short fails
split_tokens = sorted(workload.split_outputs)
one = workload.split_outputs[1]
if isinstance(one, dict):
    cut = dict(one)
    cut["padding_mask"] = cut["padding_mask"].copy()
    cut["padding_mask"][0, -1] = False
else:
    cut = one[:, :-1]
workload.split_outputs[1] = cut
try:
    workload.check()
    split_caught = None
except GenerationCheckError as e:
    split_caught = str(e)
print("GENERATE " + json.dumps({"calls": len(outputs), "tokens_per_step": workload.tokens_per_step(), "caught": caught,
                                "split_tokens": split_tokens, "split_caught": split_caught}))
"""


@pytest.mark.envs
@pytest.mark.parametrize("backend", ["jax", "native-torch"])
def test_real_generate_passes_and_a_short_one_fails(backend):
    python = env_python(backend)
    env = {**os.environ, **cell_environment(backend), "JAX_PLATFORMS": "cpu"}
    out = subprocess.run(
        [str(python), "-c", REAL_GENERATE, backend], cwd=REPO, env=env, capture_output=True, text=True, timeout=900
    )
    assert out.returncode == 0, out.stderr[-4000:]
    got = json.loads(next(line for line in out.stdout.splitlines() if line.startswith("GENERATE "))[len("GENERATE ") :])
    assert got["calls"] == 3  # 1 first + 2 timed
    assert got["tokens_per_step"] == 2 * 6  # batch 2 x (12 - 6: BOS + 5 words) new tokens in the smoke shape
    assert got["caught"] and ("unfilled" in got["caught"] or "shape (2, 11)" in got["caught"]), got
    assert got["split_tokens"] == [1, 3] and got["split_caught"], got  # smoke: 6 new tokens, so k = 3
