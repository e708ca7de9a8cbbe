"""RESULTS.md's reading order (bench/report/reading_order.py): a user's own run's tables first, then the GPU
tables, then every other CPU table as a short entry, each whole on its machine's page."""
import subprocess
from dataclasses import replace

from test_export import make_result

from bench.studies.table import render

MINE = {"cpu": "My CPU", "logical_cpus": 8, "gpus": []}
OTHER = {"cpu": "Their CPU", "logical_cpus": 2, "gpus": []}
GPU = {"cpu": "Host CPU", "logical_cpus": 16, "gpus": [{"name": "NVIDIA H200", "memory_total_mib": 143771}]}


def write(results, machine, backends=("jax", "torch")):
    for backend in backends:
        result = make_result(backend, "bert", "fit")
        result = replace(result, provenance={**result.provenance, "machine": machine})
        result.write(results)


def headings(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("## ") and ". " in line]


def test_my_run_comes_first_then_the_gpu_then_other_machines_on_pages_of_their_own(tmp_path):
    results = tmp_path / "results"
    for machine in (OTHER, MINE):
        write(results, machine)
    gpu = replace(make_result("jax", "bert", "fit"), provenance={"git": {"commit": "c0ffee"}, "machine": GPU})
    gpu = replace(gpu, cell=replace(gpu.cell, profile="paper", batch_size=32, warmup_steps=1, timed_steps=3))
    gpu.write(results)
    mine = {item.relative_to(results).as_posix() for item in results.rglob("*.json") if "my-cpu" in str(item)}
    assert mine
    render(results, results / "RESULTS.md", own=mine)
    main = (results / "RESULTS.md").read_text()
    order = headings(main)
    assert "My CPU" in order[0] and "H200" in order[1] and "Their CPU" in order[2], order
    # my table and the GPU's are whole in RESULTS.md; the other machine's is an entry linking its page
    mine_part = main.split(order[0])[1].split(order[1])[0]
    assert "| BERT fit" in mine_part
    other_part = main.split(order[2])[1]
    assert "| BERT fit" not in other_part and "It can say that every code path runs on its CPU" in other_part
    (page,) = results.glob("tables-*.md")
    assert f"({page.name}#3-" in other_part
    assert "| BERT fit" in page.read_text() and order[2] in page.read_text()
    # another run the user's own: its page replaces the one no longer written
    theirs = {item.relative_to(results).as_posix() for item in results.rglob("*.json") if "their-cpu" in str(item)}
    render(results, results / "RESULTS.md", own=theirs)
    assert "Their CPU" in headings((results / "RESULTS.md").read_text())[0]
    (page,) = results.glob("tables-*.md")
    assert "my-cpu" in page.name and "My CPU" in page.read_text()


def test_a_results_folder_outside_git_is_all_the_users_own_and_every_table_stays_whole(tmp_path):
    results = tmp_path / "results"
    for machine in (OTHER, MINE):
        write(results, machine)
    render(results, results / "RESULTS.md")
    main = (results / "RESULTS.md").read_text()
    assert main.count("| BERT fit") == 2 and not list(results.glob("tables-*.md"))


def test_in_a_checkout_the_files_git_does_not_track_are_the_users_own(tmp_path):
    from bench.report.reading_order import new_files

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "committed.json").write_text("{}")
    subprocess.run(["git", "-C", str(tmp_path), "add", "results/committed.json"], check=True)
    (tmp_path / "results" / "mine.json").write_text("{}")
    assert new_files(tmp_path / "results") == {"mine.json"}
