"""A cell's later processes load what its first compiled (bench/catalogue/compile_cache.py): one cache per cell and run,
its state recorded per process, nothing shared between cells, nothing left after the run."""
import tempfile
from pathlib import Path

from fakes import make_fake_envs

from bench.catalogue.compile_cache import CompileCaches, cache_environment
from bench.catalogue.registry import plan_cells
from bench.record.results import load_all


def test_each_framework_is_pointed_at_the_cells_own_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("BENCH_COMPILE_CACHE_DIR", raising=False)  # the test suite's own shared cache
    assert cache_environment("jax", tmp_path)["JAX_COMPILATION_CACHE_DIR"] == str(tmp_path / "jax")
    assert cache_environment("jax", tmp_path)["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] == "0"
    torch = cache_environment("torch", tmp_path)
    assert torch["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "inductor")
    assert torch["TORCHINDUCTOR_FX_GRAPH_CACHE"] == "1"
    assert cache_environment("tensorflow", tmp_path)["TF_XLA_FLAGS"].endswith(str(tmp_path / "xla"))
    caches = CompileCaches()
    jax, torch_cell = plan_cells("smoke", backends=["jax", "torch"], models=["bert"], tasks=["fit"])
    a = Path(caches.environment(jax)["JAX_COMPILATION_CACHE_DIR"])
    b = Path(caches.environment(torch_cell)["TORCHINDUCTOR_CACHE_DIR"])
    assert a.parent.name == jax.key and b.parent.name == torch_cell.key and a.parent.parent == b.parent.parent
    assert caches.state(jax) == "cold"
    root = a.parent.parent
    caches.close()
    assert not root.exists()


def test_the_first_process_of_a_cell_compiles_cold_and_the_later_ones_find_its_cache(tmp_path, monkeypatch):
    from bench.run import runner

    monkeypatch.delenv("BENCH_COMPILE_CACHE_DIR", raising=False)
    cells = plan_cells("smoke", backends=["jax", "torch"], models=["bert"], tasks=["fit"])
    monkeypatch.setattr("bench.run.env_lookup.VENVS_DIR", make_fake_envs(tmp_path / "venvs", ["jax", "torch"]))
    before = set(Path(tempfile.gettempdir()).glob("bench-compile-cache-*"))
    runner.run_cells(cells, tmp_path / "results", runner.RunOptions(repeats=3, echo=lambda line: None))
    for result in load_all(tmp_path / "results"):
        states = [run.process["compile_cache"] for run in result.runs]
        assert states[0] == "cold" and states[1] == "warm: 1 files from the cell's earlier processes", states
        assert states[2].startswith("warm: 2 files")  # its own cell's processes only, never the other cell's
    assert set(Path(tempfile.gettempdir()).glob("bench-compile-cache-*")) == before  # removed with the run


def test_a_cache_named_for_every_run_is_shared_kept_and_said_to_be(tmp_path, monkeypatch):
    from bench.run import runner

    shared = tmp_path / "kept"
    monkeypatch.setenv("BENCH_COMPILE_CACHE_DIR", str(shared))
    cells = plan_cells("smoke", backends=["jax", "torch"], models=["bert"], tasks=["fit"])
    monkeypatch.setattr("bench.run.env_lookup.VENVS_DIR", make_fake_envs(tmp_path / "venvs", ["jax", "torch"]))
    runner.run_cells(cells, tmp_path / "results", runner.RunOptions(repeats=2, echo=lambda line: None))
    states = [run.process["compile_cache"] for result in load_all(tmp_path / "results") for run in result.runs]
    assert states.count(f"shared across runs ({shared}): cold") == 1, states  # the very first process of all
    # the others find every earlier process's files, the other cell's too: 1, 2 and 3 of them
    assert sorted(s for s in states if not s.endswith("cold")) == [
        f"shared across runs ({shared}): {n} files" for n in (1, 2, 3)
    ], states
    assert shared.is_dir()  # kept after the run
