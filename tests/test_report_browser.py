"""The HTML report as a reviewer sees it: opened in a real headless Chromium (driven by Selenium).

Needs the ``test`` extra (selenium) and Debian's ``chromium`` and ``chromium-driver`` (``make test``
installs them when it can). Without them the test skips, saying what is missing; it installs
nothing itself. Screenshots at 1280 and 390 px are saved as ``report-<width>.png`` in the test's tmp dir.
"""

from __future__ import annotations

import os
import shutil

import pytest
from typer.testing import CliRunner

from dpaudit.cli import app


def _find(*names):
    for n in names:
        path = shutil.which(n)
        if path:
            return path
    return None


def _browser():
    """(chromium binary, chromedriver) or a pytest skip naming what is missing."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        pytest.skip("selenium is not installed (pip install -e '.[test]')")
    binary = os.environ.get("DPAUDIT_CHROMIUM") or _find("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
    driver = os.environ.get("DPAUDIT_CHROMEDRIVER") or _find("chromedriver")
    missing = [what for what, path in (("chromium (the browser)", binary), ("chromedriver (package chromium-driver)", driver)) if not path]
    if missing:
        pytest.skip("not found on PATH: " + ", ".join(missing) + "; `make test` installs them as root with apt "
                    "(apt-get install chromium chromium-driver), or set DPAUDIT_CHROMIUM / DPAUDIT_CHROMEDRIVER")
    return binary, driver


def _start(binary: str, driver_path: str):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,900", "--disable-extensions", "--no-first-run"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # an explicit Service path: Selenium Manager (which would download a driver) is never used
    return webdriver.Chrome(service=Service(executable_path=driver_path), options=opts)


def test_html_report_renders_in_a_browser(tmp_path):
    binary, driver_path = _browser()
    report = tmp_path / "report.html"
    res = CliRunner().invoke(app, ["test", "zoo:non-dp-laplace-1", "--epsilon", "0.01", "--samples", "6000",
                                   "--trials", "1", "--seed", "3", "--quiet", "--report", str(report)],
                             catch_exceptions=False)
    assert res.exit_code == 1, res.output
    assert report.exists()

    from selenium.webdriver.common.by import By

    driver = _start(binary, driver_path)
    try:
        driver.set_page_load_timeout(60)
        driver.get(report.as_uri())
        assert driver.title.startswith("dpaudit test")
        verdict = driver.find_element(By.ID, "verdict").text
        assert verdict.startswith("VIOLATION") and "0.01-DP" in verdict
        pair = driver.find_element(By.ID, "pair").text
        assert "D0" in pair and "[1]" in pair and "[1, 0]" in pair
        # every plot is an image that decoded and takes up room on the page
        figures = driver.find_elements(By.CSS_SELECTOR, "img, svg")
        ids = {f.find_element(By.XPATH, "..").get_attribute("id") for f in figures}
        assert {"plot-outputs", "plot-privacy-profile"} <= ids
        for f in figures:
            size = f.size
            assert size["width"] > 0 and size["height"] > 0, f.get_attribute("alt")
            if f.tag_name == "img":
                assert driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0;", f)
        # self-contained: nothing was fetched but the page itself and data: URIs
        fetched = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name);")
        assert all(u.startswith(("data:", "file:")) for u in fetched), fetched
        for text in ("Privacy profile", "Trials", "Settings", "Reproduce", "dpaudit test zoo:non-dp-laplace-1",
                     "What to do next", "Glossary", "The mechanism"):
            assert text in driver.page_source
        # the settings beyond the key ones are folded away: closed <details>, its table not displayed
        folded = driver.find_element(By.CSS_SELECTOR, "#settings details")
        assert folded.get_attribute("open") is None
        assert not folded.find_element(By.CSS_SELECTOR, "table").is_displayed()
        assert driver.find_element(By.CSS_SELECTOR, "#settings table").is_displayed()
        errors = [e for e in driver.get_log("browser") if e.get("level") in ("SEVERE", "ERROR")]
        assert errors == [], errors
        for width in (1280, 390):  # a laptop and a phone
            driver.set_window_size(width, 900)
            inner = driver.execute_script("return window.innerWidth;")
            # the page never scrolls sideways: wide tables and commands scroll inside their own container
            scroll = driver.execute_script("return document.documentElement.scrollWidth;")
            assert scroll <= inner, (width, scroll, inner)
            assert driver.find_element(By.ID, "next").location["y"] < driver.find_element(By.ID, "pair").location["y"]
            height = driver.execute_script("return document.documentElement.scrollHeight;")
            driver.set_window_size(width, min(int(height) + 100, 8000))
            shot = tmp_path / f"report-{width}.png"
            assert driver.save_screenshot(str(shot))
            assert shot.stat().st_size > 10_000
    finally:
        driver.quit()


# A word of the page (a whitespace-separated token of a text node) laid out on more than one line is a
# word broken mid-token ("mecha/nism", "2.3851/6"): Range.getClientRects() gives one rect per line box.
_BROKEN_WORDS = r"""
const broken = [];
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
let node, words = 0;
while ((node = walker.nextNode())) {
  const el = node.parentElement;
  if (!el || el.closest("details:not([open]), script, style") || el.getClientRects().length === 0) continue;
  const re = /\S+/g;
  let m;
  while ((m = re.exec(node.data))) {
    words += 1;
    const r = document.createRange();
    r.setStart(node, m.index);
    r.setEnd(node, m.index + m[0].length);
    const tops = new Set(Array.from(r.getClientRects()).filter(x => x.width > 0).map(x => Math.round(x.top)));
    if (tops.size > 1) broken.push(m[0]);
  }
}
return {words: words, broken: broken};
"""


def _reports_for_a_phone(tmp_path) -> list:
    """Three reports whose tables hold long numbers and identifiers: ``dpaudit test`` (a floating-point
    leak with a long file target name, pairs and notes), ``dpaudit account`` (composition.num_steps,
    epsilon to many digits) and ``dpaudit audit-scores``."""
    import numpy as np

    runner = CliRunner()
    out = []
    test = tmp_path / "test.html"
    res = runner.invoke(app, ["test", "zoo:dp-laplace", "--epsilon", "1", "--tester", "float-bits", "--samples", "20000",
                              "--trials", "2", "--seed", "1", "--quiet", "--report", str(test)], catch_exceptions=False)
    assert res.exit_code == 5, res.output
    out.append(test)
    account = tmp_path / "account.html"
    res = runner.invoke(app, ["account", "-z", "1.1", "-q", "0.0042666667", "-k", "1000", "--delta", "1e-5",
                              "--report", str(account)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    out.append(account)
    rng = np.random.default_rng(0)
    np.save(tmp_path / "in.npy", rng.normal(1.5, 1.0, 2000))
    np.save(tmp_path / "out.npy", rng.normal(0.0, 1.0, 2000))
    scores = tmp_path / "scores.html"
    res = runner.invoke(app, ["audit-scores", str(tmp_path / "in.npy"), str(tmp_path / "out.npy"), "--seed", "0",
                              "--quiet", "--report", str(scores)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    out.append(scores)
    return out


def test_on_a_phone_no_number_or_identifier_breaks(tmp_path):
    """Issue 44, item 5: at 390 px the reports broke words and numbers mid-token ("mecha/nism",
    "com/posi/tion./num/_ste/ps", epsilon as "2.3851/6"). Every word of every report now lies on one line
    (wide tables and code scroll inside their own box), the page never scrolls sideways, and labels still
    wrap (between words: more than one line of text in a narrow cell)."""
    binary, driver_path = _browser()
    reports = _reports_for_a_phone(tmp_path)
    driver = _start(binary, driver_path)
    try:
        driver.set_page_load_timeout(60)
        driver.set_window_size(390, 900)
        for report in reports:
            driver.get(report.as_uri())
            inner = driver.execute_script("return window.innerWidth;")
            assert inner <= 390, inner
            seen = driver.execute_script(_BROKEN_WORDS)
            assert seen["words"] > 150, (report.name, seen["words"])  # the check saw the page
            assert seen["broken"] == [], (report.name, seen["broken"][:20])
            scroll = driver.execute_script("return document.documentElement.scrollWidth;")
            assert scroll <= inner, (report.name, scroll, inner)
            # labels wrap between words: the verdict paragraph takes several lines at this width
            lines = driver.execute_script(
                "const r = document.createRange(); r.selectNodeContents(document.getElementById('verdict'));"
                "return new Set(Array.from(r.getClientRects()).map(x => Math.round(x.top))).size;")
            assert lines >= 2, (report.name, lines)
            height = driver.execute_script("return document.documentElement.scrollHeight;")
            driver.set_window_size(390, min(int(height) + 100, 8000))
            assert driver.save_screenshot(str(tmp_path / f"{report.stem}-390.png"))
            driver.set_window_size(390, 900)
    finally:
        driver.quit()
