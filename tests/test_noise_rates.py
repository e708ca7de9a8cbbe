"""NOISE.md's rates and minimum detectable effects, rendered from the committed noise studies: every rate with its
binomial bound (re-derived here from the study file with scipy.stats.beta, apart from the page's binomtest), every
minimum detectable effect with the design it holds for, and every delay pair of a study counted in its machine's
run-to-run spread. Fast: no framework env, nothing measured."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from committed import committed_results
from scipy.stats import beta

from bench.judge.noise_file import readable_studies, run_spread_of
from bench.studies.noise.page import PAGE, load_studies, pct, render_noise

REPO = Path(__file__).resolve().parent.parent
COMMITTED = committed_results() / "noise"  # HEAD's, not a user's run's


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> tuple[Path, str]:
    """The committed study files (and their history) rendered into a scratch results folder."""
    results = tmp_path_factory.mktemp("results")
    (results / "noise").mkdir()
    for path in COMMITTED.glob("*.json"):
        shutil.copy(path, results / "noise" / path.name)
    shutil.copytree(COMMITTED / "history", results / "noise" / "history")
    return results, render_noise(results).read_text()


def clopper_pearson(hits: int, pairs: int) -> tuple[float, float]:
    """The two-sided 95% exact interval from the beta quantiles."""
    low = 0.0 if hits == 0 else beta.ppf(0.025, hits, pairs - hits + 1)
    high = 1.0 if hits == pairs else beta.ppf(0.975, hits + 1, pairs - hits)
    return low, high


def test_the_committed_page_is_the_generators_output(rendered):
    assert (COMMITTED / PAGE).read_text() == rendered[1], "run `make noise-page` and commit results/noise/NOISE.md"


def test_each_aa_false_positive_rate_carries_its_clopper_pearson_bound(rendered):
    results, page = rendered
    studies = load_studies(results)
    assert studies
    for _, data in studies:
        aa = data["aa"]
        wrong = aa["faster"] + aa["slower"]
        low, high = clopper_pearson(wrong, aa["pairs"])
        bound = f"at most {pct(high)}" if wrong == 0 else f"{pct(low)}–{pct(high)}"
        claim = (f"**{wrong} of {aa['pairs']} pairs called different**")
        start = page.index(claim)
        sentence = page[start: page.index("\n", start)]
        assert f"{bound} at 95%, Clopper-Pearson" in sentence, sentence
        assert "not independent" in sentence or "they are not" in sentence, sentence
    assert "at most 20.6% at 95%" in page  # 0 of 16


def test_every_rate_on_the_page_carries_a_bound(rendered):
    page = rendered[1]
    rows = [line for line in page.splitlines() if re.match(r"\| \+\d+%\s+\| \d+", line)]  # the power tables' rows
    assert rows
    assert all("Clopper-Pearson" in row for row in rows), [r for r in rows if "Clopper-Pearson" not in r]
    detection = [line for line in page.splitlines() if re.search(r"\| \d+ / \d+ / \d+ of \d+", line)]
    assert detection
    for row in detection:
        counts = re.findall(r"\d+ / \d+ / \d+ of (\d+)([^|]*)", row)
        assert counts and all(n == "0" or "Clopper-Pearson" in rest for n, rest in counts), row
    assert "false-positive rate 0%)" not in page  # a rate with no bound


def test_every_minimum_detectable_effect_says_its_design(rendered):
    page = rendered[1]
    assert page.count("**Minimum detectable effect") == page.count("**Minimum detectable effect inside one invocation")
    headers = [line for line in page.splitlines() if line.startswith("| cell") and "MDE" in line]
    assert headers and all("inside one invocation" in h or "across runs" in h for h in headers)
    assert "MDE, 3 a side" not in page
    assert "only where those runs are independent" in page


def test_every_delay_pair_of_a_study_counts_in_its_machines_run_spread(rendered):
    results, page = rendered
    for path, data in load_studies(results):
        pairs = [p for row in data.get("detection") or [] for p in row.get("pairs") or []]
        assert all(p.get("medians_ms") and all(p["medians_ms"].values()) for p in pairs), path.name
        spread, dof, _, _ = run_spread_of(readable_studies(path))
        without = [{**s, "detection": []} for s in readable_studies(path)]
        if pairs:
            assert run_spread_of(without) is None or run_spread_of(without)[1] < dof
        assert f"**{pct(spread)}** a run ({dof} degrees of freedom)" in page
