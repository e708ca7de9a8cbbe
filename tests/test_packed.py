"""Packed folders (bench/base/packed.py): a finished noise study's raw runs kept as one deterministic archive, unpacked
where read (a compare of its sides, the history index, a re-judge, the tests' committed results), and nothing the
committed studies name lost by packing."""
import json
import subprocess
import tarfile
from pathlib import Path

import pytest
from committed import committed_results

from bench.base.errors import BenchError
from bench.base.packed import SUFFIX, archive_of, pack, unpack, unpack_all, unpacked
from bench.cli_parsers import folder_or_run
from bench.judge.noise_file import read_noise_file
from bench.studies.history import index

REPO = Path(__file__).resolve().parent.parent
SIDE = "round-1/B/smoke/cpu-amd-epyc-2-cores--64dc9908f650/native-torch__bert__predict__bs2__eager.json"


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def a_study(root: Path) -> Path:
    """A copy of a committed study's runs folder under root/noise/runs."""
    import shutil

    folder = root / "noise" / "runs" / "20261125T180246Z"
    shutil.copytree(committed_results() / "noise" / "runs" / "20261125T180246Z", folder)
    return folder


def test_pack_is_deterministic_and_unpack_gives_the_same_files(tmp_path):
    folder = tmp_path / "runs" / "study"
    (folder / "a" / "b").mkdir(parents=True)
    (folder / "a" / "b" / "x.json").write_text('{"x": 1}')
    (folder / "y.log").write_text("log\n")
    (folder / "half.json.tmp").write_text("a write cut short")  # not packed
    first = pack(folder).read_bytes()
    assert pack(folder).read_bytes() == first and folder.is_dir()  # the same bytes: git sees no change
    kept = tree(folder)
    del kept["half.json.tmp"]
    import shutil

    shutil.rmtree(folder)
    assert unpack(archive_of(folder)) == folder and tree(folder) == kept
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]  # no staging folder left


def test_a_path_inside_a_packed_folder_is_unpacked_on_demand_and_bad_archives_refused(tmp_path):
    folder = tmp_path / "noise" / "runs" / "s"
    (folder / "round-1" / "A").mkdir(parents=True)
    (folder / "round-1" / "A" / "r.json").write_text("{}")
    pack(folder)
    import shutil

    shutil.rmtree(folder)
    inner = folder / "round-1" / "A"
    assert unpacked(inner) == inner and (inner / "r.json").is_file()
    assert unpacked(tmp_path / "elsewhere") == tmp_path / "elsewhere"  # no archive: left as given
    assert unpacked(Path("run03")) == Path("run03")  # a run's id, not a folder: left as given
    with pytest.raises(BenchError, match="nothing to pack"):
        (tmp_path / "empty").mkdir()
        pack(tmp_path / "empty")
    bad = tmp_path / "noise" / "runs" / f"t{SUFFIX}"
    with tarfile.open(bad, "w:xz") as tar:  # a member outside the archive's own folder
        info = tarfile.TarInfo("other/x.json")
        tar.addfile(info)
    with pytest.raises(BenchError, match="not all under t/"):
        unpack(bad)
    (tmp_path / "noise" / "runs" / f"u{SUFFIX}").write_bytes(b"not an archive")
    with pytest.raises(BenchError, match="cannot unpack"):
        unpack(tmp_path / "noise" / "runs" / f"u{SUFFIX}")


def test_a_packed_studys_sides_are_compared_and_indexed_as_its_folders_were(tmp_path):
    results = tmp_path / "results"
    folder = a_study(results)
    rows_unpacked = len(index.rows(results, "source = ?", ("noise",))) if index.refresh(results) else None
    pack(folder)
    import shutil

    shutil.rmtree(folder)
    (results / index.INDEX_NAME).unlink()
    index.refresh(results)  # unpacks the study: its rounds stay points of their cells' history
    assert len(index.rows(results, "source = ?", ("noise",))) == rows_unpacked > 0
    shutil.rmtree(folder)
    side = folder_or_run(str(folder / "round-1" / "A"))
    assert isinstance(side, Path) and (folder / SIDE).is_file()  # make compare A=<a packed study's side>


def test_every_committed_archive_stands_for_an_ignored_folder_and_holds_what_the_studies_name():
    archives = subprocess.run(["git", "ls-files", f"*{SUFFIX}"], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.split()  # fmt: skip
    assert any(a.startswith("results/noise/runs/") for a in archives)
    for archive in archives:
        folder = archive[: -len(SUFFIX)]
        # ignored, so that an unpacked copy is never committed twice
        assert subprocess.run(["git", "check-ignore", "-q", f"{folder}/x.json"], cwd=REPO).returncode == 0, folder
        assert not subprocess.run(["git", "ls-files", folder + "/"], cwd=REPO, capture_output=True,
                                  text=True).stdout, folder  # fmt: skip
    results = committed_results()
    for path in sorted((results / "noise").glob("*.json")) + sorted((results / "noise" / "history").glob("*.json")):
        study = read_noise_file(path)
        runs = results / study["runs_dir"]
        assert runs.is_dir() and (runs / "study.json").is_file(), path  # unpacked by committed_results
        for row in study.get("detection") or []:
            for pair in row["pairs"]:
                assert all((runs / side).is_dir() for side in pair["folders"].values()), pair["folders"]
    assert json.loads((results / "noise" / "runs" / "20261125T180246Z" / SIDE).read_text())["runs"]
    assert unpack_all(results) == []  # nothing left packed


def test_a_side_slowed_on_purpose_is_no_point_of_its_cells_history(tmp_path):
    """A noise study's delay pairs: side B ran with the step-delay fixture (each step held 20% longer), so it is no
    measurement of the cell and the history index leaves it out; side A, untouched, is a point like any run."""
    import shutil

    results = tmp_path / "results"
    stamp = read_noise_file(committed_results() / "noise" / "cpu-intel-r-xeon-r-processor-2-cores--9f54d01d90ed.json")[
        "runs_dir"].rsplit("/", 1)[-1]  # fmt: skip
    shutil.copytree(committed_results() / "noise" / "runs" / stamp, results / "noise" / "runs" / stamp)
    index.refresh(results)
    paths = [row["path"] for row in index.rows(results, "source = ?", ("noise",))]
    delayed = [p for p in paths if "/delay-" in p]
    assert delayed and all("/A/" in p for p in delayed), delayed[:3]
    assert any("/round-1/B/" in p for p in paths)  # an A/A round's B side is the same code: a point


def test_the_committed_grid_is_read_from_its_archives_as_from_its_folders(tmp_path):
    """The inference grid's results are tracked packed, one archive per grid and machine: GRID.md's reader unpacks
    them, so a fresh clone renders the same groups of points as the folders gave."""
    import shutil

    from bench.studies.grid.page import load_grid

    grid = committed_results() / "grid"  # HEAD's archives
    archives = sorted(grid.glob(f"*/*{SUFFIX}"))
    assert {a.parent.name for a in archives} >= {"grid-cpu", "grid-lengths"}
    results = tmp_path / "results"
    for archive in archives:
        (results / "grid" / archive.parent.name).mkdir(parents=True, exist_ok=True)
        shutil.copy(archive, results / "grid" / archive.parent.name / archive.name)
    groups = load_grid(results)
    assert [(g.grid, len(g.results)) for g in groups] and all(g.results for g in groups)
    assert all((results / "grid" / a.parent.name / a.name[: -len(SUFFIX)]).is_dir() for a in archives)


@pytest.mark.parametrize("given", ["typo", "a-file", "/", "/etc/passwd"])
def test_make_unpack_of_no_results_folder_is_refused_in_one_line(tmp_path, capsys, given):
    from bench.base.packed import main

    (tmp_path / "a-file").write_text("x")
    target = given if given.startswith("/") else str(tmp_path / given)
    with pytest.raises(SystemExit) as refused:
        main(["unpack", target])
    assert refused.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err


def test_make_unpack_says_what_it_unpacked_and_what_was_unpacked_already(tmp_path, capsys):
    from bench.base.packed import main

    folder = tmp_path / "results" / "noise" / "runs" / "study"
    folder.mkdir(parents=True)
    (folder / "x.json").write_text("{}")
    pack(folder)
    import shutil

    shutil.rmtree(folder)
    assert main(["unpack", str(tmp_path / "results")]) == 0
    assert capsys.readouterr().out.splitlines() == [f"unpacked {folder}", f"1 archive under {tmp_path / 'results'} "
                                                    "unpacked (0 were already)"]
    assert main(["unpack", str(tmp_path / "results")]) == 0
    assert capsys.readouterr().out.splitlines() == [f"0 archives under {tmp_path / 'results'} unpacked (1 was already)"]
