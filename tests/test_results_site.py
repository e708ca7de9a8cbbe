"""The explorable results page (bench/report/site.py): self-contained on disk, and working in a real headless
browser (Debian's chromium through selenium): it loads with no console error, a filter changes the visible rows,
a cell's drill-down draws its windows' plot. The browser test skips only where no browser is installed, and only
outside CI: with CI=true a missing browser fails it."""
import os
import re
import shutil

import pytest

pytest.importorskip("tabulate")
pytest.importorskip("matplotlib")
pytest.importorskip("plotly")

from test_table import paper_a100, smoke_cpu, write_all

from bench.report import site as site_module
from bench.report.site import DATA, PLOTLY, write_site
from bench.studies.table import render

IN_CI = os.environ.get("CI", "").lower() == "true"
CHROMIUM = ("chromium", "chromium-browser", "google-chrome")
INSTALL = "apt-get install chromium chromium-driver (scripts/install-system-deps.sh installs them)"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    results = write_all(tmp_path_factory.mktemp("results"), smoke_cpu() + paper_a100())
    report = render(results, results / "RESULTS.md", site=results / "site")
    return report, results / "site" / "index.html"


def test_the_page_is_self_contained_and_has_every_cell(site):
    report, page = site
    assert "[site/index.html](site/index.html)" in (page.parent.parent / "RESULTS.md").read_text()  # linked
    text = page.read_text()
    sources = re.findall(r'(?:src|href)="([^"]+)"', text)
    assert sources and all("://" not in s and not s.startswith("//") for s in sources), sources  # no network
    assert f'src="{PLOTLY}"' in text and (page.parent / PLOTLY).stat().st_size > 1_000_000
    cells = sum(len(facts.cells) for table in report.tables for facts in table.rows)
    ids = re.findall(r'<tr class="cell" id="(cell\d+)"', text)
    assert len(ids) == cells > 0
    data = (page.parent / DATA).read_text()
    assert all(f'"{cell_id}": {{' in data for cell_id in ids)
    for table in report.tables:
        assert table.group.title in text
    assert "not ranked (only Keras 3 backends are)" in text and ("winner" in text or "tie for fastest" in text)
    images = re.findall(r'<img src="([^"]+)"', text)
    assert any(i.endswith("-per-row.png") for i in images) and all((page.parent / i).is_file() for i in images)


def test_the_page_is_deterministic(site, tmp_path):
    report, page = site
    again = write_site(report, tmp_path / "again", page.parent.parent / "figures")
    assert (again.parent / DATA).read_bytes() == (page.parent / DATA).read_bytes()
    moved = os.path.relpath(page.parent.parent / "figures", again.parent)
    assert again.read_text() == page.read_text().replace('src="../figures/', f'src="{moved}/')


def test_plotly_is_copied_once_and_only_the_recorded_bundle(site, tmp_path, monkeypatch):
    report, page = site
    bundle = page.parent / PLOTLY
    before = bundle.stat().st_mtime_ns
    write_site(report, page.parent)
    assert bundle.stat().st_mtime_ns == before  # the same bundle: not rewritten
    bundle.write_text("stale")
    write_site(report, page.parent)
    assert bundle.read_bytes() == site_module.VENDORED_PLOTLY.read_bytes()
    tampered = tmp_path / PLOTLY
    tampered.write_bytes(site_module.VENDORED_PLOTLY.read_bytes() + b"//")
    monkeypatch.setattr(site_module, "VENDORED_PLOTLY", tampered)
    with pytest.raises(ValueError, match="sha256"):
        write_site(report, page.parent)


def test_the_vendored_bundle_matches_the_plotly_that_writes_the_figures():
    from plotly.offline import get_plotlyjs_version

    assert get_plotlyjs_version() == site_module.PLOTLY_BASIC_VERSION
    assert f"v{site_module.PLOTLY_BASIC_VERSION}" in site_module.VENDORED_PLOTLY.read_text()[:200]


def browser_paths() -> tuple[str, str]:
    browser = next((path for name in CHROMIUM if (path := shutil.which(name))), None)
    driver = shutil.which("chromedriver")
    if browser and driver:
        return browser, driver
    missing = "a chromium browser" if not browser else "chromedriver"
    if IN_CI:
        pytest.fail(f"CI must run the results page's browser test, but {missing} is not installed: {INSTALL}")
    pytest.skip(f"{missing} is not installed here ({INSTALL}); CI installs it and runs this test")


def visible_rows(driver) -> int:
    from selenium.webdriver.common.by import By

    return sum(row.is_displayed() for row in driver.find_elements(By.CSS_SELECTOR, "tr.cell"))


def severe(driver) -> list[str]:
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def keep_screenshot(driver, shot) -> None:
    """The page as drawn, copied to BENCH_ARTIFACTS where set (what a reviewer of a CI run looks at)."""
    driver.save_screenshot(str(shot))
    artifacts = os.environ.get("BENCH_ARTIFACTS")
    if artifacts:
        os.makedirs(artifacts, exist_ok=True)
        shot = shutil.copy(shot, artifacts)
    print(f"results page screenshot: {shot}")
    assert os.path.getsize(shot) > 10_000


def headless_chromium():
    """A selenium driver of the installed chromium, headless, keeping the page's console log (skips or fails as
    browser_paths says)."""
    browser, chromedriver = browser_paths()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = browser
    flags = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000")
    for flag in flags:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)


def test_the_page_works_in_a_headless_browser(site, tmp_path):
    driver = headless_chromium()
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    _, page = site
    try:
        driver.get(page.as_uri())
        WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.readyState") == "complete")
        assert driver.execute_script("return typeof Plotly !== 'undefined' && typeof BENCH_CELLS === 'object'")
        assert severe(driver) == []
        every = visible_rows(driver)
        assert every == len(driver.find_elements(By.CSS_SELECTOR, "tr.cell")) > 0

        Select(driver.find_element(By.CSS_SELECTOR, 'select[name="profile"]')).select_by_value("smoke")
        smoke = visible_rows(driver)
        assert 0 < smoke < every
        assert driver.find_element(By.ID, "shown").text == str(smoke)
        Select(driver.find_element(By.CSS_SELECTOR, 'select[name="backend"]')).select_by_value("Keras 3 (JAX)")
        assert 0 < visible_rows(driver) < smoke

        button = next(b for b in driver.find_elements(By.CSS_SELECTOR, "button.open") if b.is_displayed())
        button.click()
        drill = driver.find_element(By.ID, button.get_attribute("data-cell") + "-drill")
        WebDriverWait(driver, 30).until(lambda d: drill.find_elements(By.CSS_SELECTOR, ".windows-plot .main-svg"))
        traces = driver.execute_script("return document.querySelector('.windows-plot').data.length")
        assert traces >= 1 and drill.find_elements(By.CSS_SELECTOR, ".windows-plot .scatterlayer .trace")
        assert "provenance" in drill.text and "config" in drill.text
        assert severe(driver) == []
        keep_screenshot(driver, tmp_path / "results-page.png")
    finally:
        driver.quit()


def test_the_page_opens_on_the_gpu_table_and_the_findings(tmp_path):
    from test_table import paper_h100

    results = write_all(tmp_path / "results", smoke_cpu() + paper_h100())
    committed = {p.relative_to(results).as_posix() for p in results.rglob("*.json")}
    render(results, results / "RESULTS.md", site=results / "site", own=set())  # every file committed: none new
    text = (results / "site" / "index.html").read_text()
    findings = text.index("Findings, re-tested on a GPU (")
    tables = re.findall(r'<section class="table"><h2>\d+\. ([^<]+)</h2>', text)
    assert committed and findings < text.index('<section class="table">')
    assert "paper profile" in tables[0] and "smoke profile" in tables[-1], tables
