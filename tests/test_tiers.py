"""What `make test` (CI) leaves to `make test-extended`: the cells it leaves repeat a code path CI's run takes."""
import subprocess

from conftest import REPO
from test_matrix import CELLS, CELLS_2024, params, repeats_a_ci_code_path

from bench.catalogue.backends import get_backend


def kind(cell) -> tuple:
    backend = get_backend(cell.backend)
    return (backend.family, backend.keras_major)


def test_ci_runs_every_model_and_task_on_every_kind_of_backend_and_every_backend():
    ci = [c for c in CELLS if not repeats_a_ci_code_path(c)]
    for cell in CELLS:
        assert any((c.model, c.task, kind(c)) == (cell.model, cell.task, kind(cell)) for c in ci), cell.key
    assert {c.backend for c in ci} == {c.backend for c in CELLS}
    assert len(ci) < len(CELLS)


def test_the_extended_marker_is_on_exactly_the_cells_left_out_and_on_every_2024_cell():
    extended = {p.id for p in params() if any(m.name == "extended" for m in p.marks)}
    assert extended == {c.key for c in CELLS if repeats_a_ci_code_path(c)} | {c.key for c in CELLS_2024}


def test_make_test_deselects_the_extended_tier_and_test_extended_selects_it():
    out = subprocess.run(
        ["make", "--no-print-directory", "-n", "test", "test-extended"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    lanes = '-m "not wall_clock and not extended"'
    test_part, _ = out.split("-m extended")  # test-extended's pytest, after test's
    # the wall-clock tests alone first, then both lanes of one selection: every other test but the extended tier,
    # those needing no env among them (in the checkout itself, not only in test_new_model's copy)
    assert '-m "not slow and wall_clock"' in test_part
    assert test_part.count(lanes) == 2 and "--lane 1/2" in test_part and "--lane 2/2" in test_part
