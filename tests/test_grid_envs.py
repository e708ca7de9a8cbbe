"""The inference grid in the real envs: a smoke grid (tiny BERT, two points) through every column, and the
weight-transfer parity of every model (PyTorch -> transformers-TF and -> Keras 3), tiny configs."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import env_python

from bench.studies.grid.run import TOLERANCE
from bench.studies.grid.spec import COLUMNS, MODELS

REPO = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.envs, pytest.mark.slow]


@pytest.mark.duration_s(240)
def test_smoke_grid_runs_every_column_on_the_same_weights(tmp_path):
    for env in {c.env for c in COLUMNS.values()}:
        env_python(env)  # skips (locally) or fails (CI) naming the missing env
    results = tmp_path / "results"
    env = {**os.environ, "BENCH_GRID_TMP": str(tmp_path)}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "grid",
            "--grid",
            "smoke",
            "--model",
            "bert,gpt2",
            "--results-dir",
            str(results),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    files = sorted((results / "grid").rglob("*.json"))
    found = {(p.parent.name, json.loads(p.read_text())["cell"]["variant"], p.name.split("__", 1)[1]) for p in files}
    assert found == {
        (m, c, point) for m in ("bert", "gpt2") for c in COLUMNS for point in ("bs1__len8.json", "bs2__len8.json")
    }
    worker_pids: dict[str, set] = {}
    for path in files:
        data = json.loads(path.read_text())
        run = data["runs"][0]
        assert data["status"] == "ok", (path.name, data["message"])
        assert len(run["timed_ms"]) >= 2 and run["first_step_ms"] > 0
        assert run["settings"]["max_abs_diff"] <= TOLERANCE, path.name
        if data["cell"]["variant"] == "torch-traced":  # the legacy trace's DeprecationWarning is recorded, not fatal
            assert any("DeprecationWarning" in w for w in run["settings"]["trace_warnings"])
        worker_pids.setdefault(data["cell"]["backend"], set()).add(run["settings"]["worker_pid"])
    assert all(len(pids) == 1 for pids in worker_pids.values()), worker_pids  # one worker per env served both models
    assert "Then and now" in (results / "GRID.md").read_text()


PARITY = r"""
import json, sys
from pathlib import Path
import numpy as np
from bench.studies.grid.spec import MODELS, SEED
from bench.studies.grid.worker import token_ids
from bench.studies.grid import frameworks_grid as fg
family, root = sys.argv[1], Path(sys.argv[2])
out = {}
for name, model in MODELS.items():
    folder = root / name
    if family == "torch":
        out[name] = fg.export_weights(model, "tiny", folder)["parameters"]
    if family == "keras" and model.keras_class is None:
        continue
    column = {"torch": "torch-eager", "tf": "tf-xla", "keras": "keras-jax"}[family]
    factories, facts = fg.BUILDERS[family](model, folder, [column])
    y = factories[column](token_ids(1000, 2, 16, SEED))(None)
    y = np.asarray(y.detach() if hasattr(y, "detach") else y)
    np.save(folder / f"{family}.npy", y)
    out[name] = facts["parameters"]
print("PARAMS " + json.dumps(out))
"""


def run_family(family: str, env: str, root: Path) -> dict:
    from bench.catalogue.backends import cell_environment

    vars_ = {**os.environ, **cell_environment(env), "JAX_PLATFORMS": "cpu"}
    p = subprocess.run(
        [str(env_python(env)), "-c", PARITY, family, str(root)],
        cwd=REPO,
        env=vars_,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return json.loads(p.stdout.split("PARAMS ", 1)[1])


@pytest.mark.duration_s(330)
@pytest.mark.extended  # make test-extended: the same weights load into every column in make test's smoke grid
def test_weights_transfer_to_the_tensorflow_and_keras_twins_with_the_same_outputs(tmp_path):
    import numpy as np

    torch_params = run_family("torch", "native-torch", tmp_path)
    tf_params = run_family("tf", "tf-transformers", tmp_path)
    keras_params = run_family("keras", "jax", tmp_path)
    assert tf_params == torch_params  # every model has its TF twin, parameter for parameter
    assert set(keras_params) == {m for m, spec in MODELS.items() if spec.keras_class}
    for name, spec in MODELS.items():
        ref = np.load(tmp_path / name / "torch.npy")
        assert np.abs(np.load(tmp_path / name / "tf.npy") - ref).max() <= TOLERANCE, name
        if spec.keras_class and not spec.keras_converter:  # XLNet: random init, so the count is the check
            assert keras_params[name] == torch_params[name], name
        if spec.keras_converter:  # (keras-hub's RoBERTa has no pooler: counts differ there, outputs must not)
            assert np.abs(np.load(tmp_path / name / "keras.npy") - ref).max() <= TOLERANCE, name
