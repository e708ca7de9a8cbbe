"""What an unlocked run must find installed for a model is said in the model's folder (workload.toml [needs]), so a
model added as docs/ADDING_A_MODEL.md says needs no entry anywhere else."""
import tomllib

import pytest
from conftest import REPO

from bench.base.errors import BenchError
from bench.catalogue import ownenv
from bench.catalogue.registry import MODELS, get_model
from bench.catalogue.spec import NEEDS_TABLE, WORKLOAD_FILE, implementation_needs

IMPLEMENTATIONS = {"keras": "keras.py", "native-torch": "native_torch.py"}


def folder_needs(model: str) -> dict:
    return tomllib.loads((REPO / "bench" / "models" / model / WORKLOAD_FILE).read_text()).get(NEEDS_TABLE, {})


def test_every_implementation_says_what_it_needs_installed():
    """An unlocked run names what is missing instead of failing inside the cell: each keras.py / native_torch.py
    has its entry in its folder's [needs]."""
    for model in MODELS:
        for family, module in IMPLEMENTATIONS.items():
            if (REPO / "bench" / "models" / model / module).exists():
                assert family in get_model(model).needs, (model, family)


@pytest.mark.parametrize("model", MODELS)
def test_model_needs_reads_the_models_folder(model):
    declared = folder_needs(model)
    for family in IMPLEMENTATIONS:
        assert ownenv.model_needs(family, model) == tuple(tuple(need) for need in declared.get(family, []))


def test_a_missing_need_is_named_from_the_models_folder(monkeypatch):
    need = folder_needs("bert")["native-torch"][0]
    monkeypatch.setattr(ownenv, "installed", lambda name: None if name in need else "1.0")
    assert ownenv.missing_distributions("native-torch", "bert") == [" or ".join(need)]


def test_an_implementation_without_its_needs_is_refused_naming_the_file(tmp_path):
    (tmp_path / "keras.py").write_text("")
    path = tmp_path / WORKLOAD_FILE
    with pytest.raises(BenchError, match=r"no `keras` entry for keras\.py"):
        implementation_needs(path, {"native-torch": []})
    assert implementation_needs(path, {"keras": [["a", "b"]]}) == {"keras": (("a", "b"),)}  # no native_torch.py


@pytest.mark.parametrize("table", [{"jax": []}, {"keras": [[]]}, {"keras": ["keras-hub"]}, {"keras": [[1]]}, []])
def test_malformed_needs_are_refused(tmp_path, table):
    with pytest.raises(BenchError):
        implementation_needs(tmp_path / WORKLOAD_FILE, table)
