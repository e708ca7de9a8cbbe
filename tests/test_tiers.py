"""What `make test` (CI) leaves to `make test-extended`: the cells it leaves repeat a code path CI's run takes."""
import subprocess

from conftest import REPO
from test_matrix import CELLS, CELLS_2024, params, repeats_a_ci_code_path

from bench.backends import get_backend


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
    other_slow = '-m "slow and not beside_fast and not keras_cv_sd and not container and not extended"'
    test_part, extended_part = out.split(other_slow)
    assert '-m "slow and (keras_cv_sd or container) and not extended"' in test_part
    # the fast tests as two selections that add up to "not slow", and the slow test run beside the second
    assert '-m "not slow and wall_clock"' in test_part and '-m "not slow and not wall_clock"' in test_part
    assert '-m "slow and beside_fast"' in test_part
    assert "-m extended" in extended_part
