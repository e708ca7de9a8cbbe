"""The results page's history views (bench/studies/history/page.py) in a real headless browser: the matrix of a
table coloured by verdict and its filter, a view switch by the URL's hash and by its links, two runs chosen in the
A-vs-B view and their verdicts, a key's series drawn with its change point, and the series filter, each view's
screenshot kept (BENCH_ARTIFACTS). The A-vs-B view's words are `make compare`'s for the same two runs, checked by
running the command make prints. Skips only where no browser is installed, and only outside CI
(tests/test_results_site.py's rule)."""
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
from dataclasses import replace

import pytest

pytest.importorskip("tabulate")
pytest.importorskip("plotly")
if os.environ.get("CI", "").lower() != "true":  # CI's tools env has it (envs/tools): there a missing one fails
    pytest.importorskip("ruptures")

from committed import committed_results
from test_export import make_result
from test_reliability import make
from test_results_site import headless_chromium, keep_screenshot, severe

from bench.record.results import Run, load
from bench.record.text import md
from bench.studies.table import render

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOISE = "results/noise/cpu-amd-epyc-2-cores--64dc9908f650.json"  # a committed study: the runs' run-to-run spread
# a committed result measured on that study's machine: its provenance's machine is the fixture's
MEASURED = ("noise/runs/20261125T180246Z/round-1/B/smoke/cpu-amd-epyc-2-cores--64dc9908f650/"
            "native-torch__bert__predict__bs2__eager.json")
STEP = 2.0  # the machine's run-to-run spread (about 15%) leaves a 30% step between two runs of 3 processes undecided
CELLS = (("jax", "fit"), ("jax", "predict"), ("torch", "fit"))


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """Twelve runs of three cells, a day apart, on the machine of a committed noise study (whose run-to-run spread
    lets two runs' cells be decided: a step of 2x, not one within its interval); the first cell's figure doubles from
    the seventh run."""
    results = tmp_path_factory.mktemp("results")
    (results / "noise").mkdir()
    shutil.copy(os.path.join(REPO, NOISE), results / "noise")
    machine = load(committed_results() / MEASURED).provenance["machine"]
    rng = random.Random(5)
    for day in range(1, 13):
        for n, (backend, task) in enumerate(CELLS):
            figure = (10.0 + n) * (STEP if n == 0 and day > 6 else 1.0) * math.exp(rng.gauss(0, 0.01))
            runs = [Run(status="ok", timed_ms=[figure * f for f in (0.99, 1.0, 1.01)]) for _ in range(3)]
            result = replace(make_result(backend=backend, task=task, runs=runs),
                             created_at=f"2026-01-{day:02d}T00:00:0{n}+00:00",
                             provenance={"git": {"commit": f"c{day:04d}"}, "run_id": f"run{day:02d}",
                                         "machine": machine})
            result.write(results)
    render(results, results / "RESULTS.md", site=results / "site")
    return results / "site" / "history.html"


def test_the_page_is_local_and_holds_the_series_the_runs_and_the_matrix(page):
    text = page.read_text()
    assert all("://" not in s for s in re.findall(r'(?:src|href)="([^"]+)"', text))
    data = (page.parent / "history.js").read_text()
    assert '"jax__bert__fit__bs2__default"' in data and '"20260107T000000Z"' in data  # the change's point
    assert 'href="history.html"' in (page.parent / "index.html").read_text()


def page_data(page) -> dict:
    text = (page.parent / "history.js").read_text()
    return json.loads(text.removeprefix("const BENCH_HISTORY = ").rstrip().removesuffix(";"))


def test_every_run_is_offered_and_every_two_are_compared_once(page):
    ab = page_data(page)["ab"]
    assert [r["id"] for r in ab["runs"]] == [f"run{day:02d}" for day in range(1, 13)]
    assert sorted(ab["pairs"]) == sorted(f"{i}|{j}" for i in range(12) for j in range(i + 1, 12))  # A the earlier


@pytest.mark.skipif(not shutil.which("make"), reason="GNU make is not installed")
@pytest.mark.parametrize("a,b", [("run03", "run09"), ("run06", "run07"), ("run01", "run02")])
def test_the_a_vs_b_words_are_what_make_compare_prints_for_the_two_runs(page, tmp_path, a, b):
    """Each row of the page's pair against `make compare A=<run a> B=<run b>` run as make shows it: the same cells,
    the same verdict and reason (its JSON), the same B / A text in its printed table, the same counts line."""
    ab = page_data(page)["ab"]
    words, ids = ab["words"], [r["id"] for r in ab["runs"]]
    pair = ab["pairs"][f"{ids.index(a)}|{ids.index(b)}"]
    out = tmp_path / "cmp" / "c.md"
    shown = make("-n", "compare", f"A={a}", f"B={b}", f"RESULTS={page.parent.parent}", f"OUT={out}",
                 tmp_path=tmp_path).stdout.strip().splitlines()[-1]
    ran = subprocess.run(["bash", "-c", shown.replace(".venvs/tools/bin/python", sys.executable, 1)], cwd=REPO,
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    printed = {p["cell"]: p for p in json.loads(out.with_suffix(".json").read_text())["pairs"]}
    assert [words[row[0]] for row in pair["rows"]] == list(printed) and len(printed) == len(CELLS)
    assert words[pair["counts"]] in ran.stdout
    for cell, _, _, text, verdict, why in pair["rows"]:
        assert (words[verdict], words[why]) == (printed[words[cell]]["verdict"], printed[words[cell]]["reason"])
        assert re.search(rf"\|\s*{re.escape(md(words[text]))}\s*\|", ran.stdout), words[text]
    stepped = next(row for row in pair["rows"] if "jax bert fit" in words[row[0]])
    if (a, b) == ("run03", "run09"):  # across the step, with the machine's run-to-run spread: decided
        assert words[stepped[4]] == "slower" and words[stepped[3]].startswith("**slower** ")
        assert abs(float(words[stepped[3]].split()[1].rstrip("×")) - STEP) < 0.1


def test_the_views_work_in_a_headless_browser(page, tmp_path):
    driver = headless_chromium()
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    shown = lambda view: driver.find_element(By.ID, f"{view}-view").is_displayed()  # noqa: E731
    rows = lambda what: driver.find_elements(By.CSS_SELECTOR, what)  # noqa: E731
    try:
        wait = WebDriverWait(driver, 30)
        driver.get(page.as_uri() + "#view=matrix")  # the matrix: colours, intervals, its filter
        wait.until(lambda d: rows("#matrix tr.matrix-row"))
        assert shown("matrix") and not shown("series") and not shown("ab")
        every = len(rows("#matrix tr.matrix-row"))
        cells = rows("#matrix tr.matrix-row td[title]")
        assert cells and all("95% interval" in c.get_attribute("title") for c in cells)
        assert {c.get_attribute("class") for c in cells} & {"v-faster", "v-slower", "v-inconclusive", "v-tie"}
        driver.find_element(By.ID, "matrix-filter").send_keys("predict")
        assert 0 < len(rows("#matrix tr.matrix-row")) < every
        assert all("predict" in r.text.lower() for r in rows("#matrix tr.matrix-row"))
        keep_screenshot(driver, tmp_path / "history-matrix.png")

        driver.find_element(By.CSS_SELECTOR, 'nav a[data-view="ab"]').click()  # the view switch, by its link
        wait.until(lambda d: shown("ab"))
        assert not shown("matrix") and "view=ab" in driver.current_url
        Select(driver.find_element(By.ID, "run-a")).select_by_value("run03")  # two runs chosen, not the newest
        Select(driver.find_element(By.ID, "run-b")).select_by_value("run09")
        wait.until(lambda d: "a=run03" in d.current_url and "b=run09" in d.current_url)
        wait.until(lambda d: "make compare A=run03 B=run09" == d.find_element(By.ID, "ab-command").text)
        verdicts = {r.find_element(By.CSS_SELECTOR, "td:first-child").text: r.find_element(
            By.CSS_SELECTOR, "td:nth-child(5)") for r in rows("#ab tr.ab-row")}  # fmt: skip
        assert len(verdicts) == len(CELLS) and "cells in both" in driver.find_element(By.ID, "ab-note").text
        stepped = next(td for cell, td in verdicts.items() if "jax bert fit" in cell)
        assert stepped.text == "slower" and stepped.get_attribute("class") == "v-slower"
        keep_screenshot(driver, tmp_path / "history-ab.png")
        Select(driver.find_element(By.ID, "run-a")).select_by_value("run12")  # a later A: the pair the other way
        wait.until(lambda d: "a=run09" in d.current_url and "b=run12" in d.current_url)
        assert len(rows("#ab tr.ab-row")) == len(CELLS)

        driver.get(page.as_uri() + "#view=series&cell=jax__bert__fit__bs2__default")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#series-plot .main-svg"))
        assert severe(driver) == [] and shown("series") and not shown("matrix")
        # the drawn series: one trace of 12 points, the change point a line at the seventh, named below the plot
        assert driver.execute_script("return document.getElementById('series-plot').data[0].y.length") == 12
        assert driver.execute_script(
            "return document.getElementById('series-plot').layout.shapes.map(s => s.x0)") == ["20260107T000000Z"]
        (change,) = driver.find_elements(By.CSS_SELECTOR, "li.change")
        size = re.search(r"between 20260106T000000Z and 20260107T000000Z ([\d.]+)×", change.text)
        assert size and abs(float(size[1]) - STEP) < 0.1, change.text
        keep_screenshot(driver, tmp_path / "history-series.png")

        every = int(driver.find_element(By.ID, "series-count").text)
        driver.find_element(By.ID, "series-filter").send_keys("torch")
        assert 0 < int(driver.find_element(By.ID, "series-count").text) < every
        assert severe(driver) == []
    finally:
        driver.quit()
