"""The results page's history views (bench/report/history_page.py) in a real headless browser: the matrix of a
table coloured by verdict, a view switch by the URL's hash and by its links, two runs judged side by side, a key's
series drawn with its change point, and the series filter. Skips only where no browser is installed, and only
outside CI (tests/test_results_site.py's rule)."""
import math
import os
import random
import re
from dataclasses import replace

import pytest

pytest.importorskip("tabulate")
pytest.importorskip("plotly")
if os.environ.get("CI", "").lower() != "true":  # CI's tools env has it (envs/tools): there a missing one fails
    pytest.importorskip("ruptures")

from test_export import make_result
from test_results_site import headless_chromium, keep_screenshot, severe

from bench.report import render
from bench.results import Run

CELLS = (("jax", "fit"), ("jax", "predict"), ("torch", "fit"))


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """Twelve runs of three cells, a day apart; the first one's figure steps up by 30% from the seventh run."""
    results = tmp_path_factory.mktemp("results")
    rng = random.Random(5)
    for day in range(1, 13):
        for n, (backend, task) in enumerate(CELLS):
            figure = (10.0 + n) * (1.3 if n == 0 and day > 6 else 1.0) * math.exp(rng.gauss(0, 0.01))
            runs = [Run(status="ok", timed_ms=[figure * f for f in (0.99, 1.0, 1.01)]) for _ in range(3)]
            result = replace(make_result(backend=backend, task=task, runs=runs),
                             created_at=f"2026-01-{day:02d}T00:00:0{n}+00:00",
                             provenance={"git": {"commit": f"c{day:04d}"}, "run_id": f"run{day:02d}",
                                         "machine": {"cpu": "Test CPU", "logical_cpus": 4, "gpus": []}})
            result.write(results)
    render(results, results / "RESULTS.md", site=results / "site")
    return results / "site" / "history.html"


def test_the_page_is_local_and_holds_the_series_the_runs_and_the_matrix(page):
    text = page.read_text()
    assert all("://" not in s for s in re.findall(r'(?:src|href)="([^"]+)"', text))
    data = (page.parent / "history.js").read_text()
    assert '"jax__bert__fit__bs2__default"' in data and '"20260107T000000Z"' in data  # the change's point
    assert 'href="history.html"' in (page.parent / "index.html").read_text()


def test_the_views_work_in_a_headless_browser(page, tmp_path):
    driver = headless_chromium()
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    shown = lambda view: driver.find_element(By.ID, f"{view}-view").is_displayed()  # noqa: E731
    try:
        driver.get(page.as_uri() + "#view=series&cell=jax__bert__fit__bs2__default")
        wait = WebDriverWait(driver, 30)
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#series-plot .main-svg"))
        assert severe(driver) == [] and shown("series") and not shown("matrix")
        # the drawn series: one trace of 12 points, the change point a line at the seventh, named below the plot
        assert driver.execute_script("return document.getElementById('series-plot').data[0].y.length") == 12
        assert driver.execute_script(
            "return document.getElementById('series-plot').layout.shapes.map(s => s.x0)") == ["20260107T000000Z"]
        (change,) = driver.find_elements(By.CSS_SELECTOR, "li.change")
        assert "between 20260106T000000Z and 20260107T000000Z 1.3" in change.text
        keep_screenshot(driver, tmp_path / "history-series.png")

        every = int(driver.find_element(By.ID, "series-count").text)
        driver.find_element(By.ID, "series-filter").send_keys("torch")
        assert 0 < int(driver.find_element(By.ID, "series-count").text) < every

        driver.find_element(By.CSS_SELECTOR, 'nav a[data-view="matrix"]').click()  # the view switch
        wait.until(lambda d: shown("matrix"))
        assert not shown("series") and "view=matrix" in driver.current_url
        cells = driver.find_elements(By.CSS_SELECTOR, "#matrix tr.matrix-row td[title]")
        assert cells and all("95% interval" in c.get_attribute("title") for c in cells)
        assert {c.get_attribute("class") for c in cells} & {"v-faster", "v-slower", "v-inconclusive", "v-tie"}

        driver.get(page.as_uri() + "#view=ab&a=run11&b=run12")
        wait.until(lambda d: shown("ab"))
        rows = driver.find_elements(By.CSS_SELECTOR, "#ab tr.ab-row")
        assert len(rows) == len(CELLS) and "cells measured in both" in driver.find_element(By.ID, "ab-note").text
        assert severe(driver) == []
    finally:
        driver.quit()
