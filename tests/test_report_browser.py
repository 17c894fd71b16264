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
