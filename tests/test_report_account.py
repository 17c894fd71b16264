"""The ``dpaudit account --report`` page as a reader sees it (issue 38, item 7): no "not
reproducible bit for bit" for a deterministic computation, settings in words and numbers (not
raw JSON), no ``null``/``None``, a ``report written: PATH`` line, and values that wrap at a
phone's width instead of being cut off."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from dpaudit.cli import app

runner = CliRunner()



def _unspan(html: str) -> str:
    """The page without the ``<span class="t">`` that keep breakable tokens whole (issue 44)."""
    return re.sub(r'<span class="t">(.*?)</span>', r"\1", html)

def _visible(html: str) -> str:
    """The page's text outside the collapsed full-JSON block, styles and images."""
    html = re.sub(r"<details>.*?</details>", "", html, flags=re.S)
    html = re.sub(r"<(style|script)[^>]*>.*?</\1>", "", html, flags=re.S)
    html = re.sub(r"<img[^>]*>", "", html)
    return re.sub(r"<[^>]+>", " ", html)


def test_account_report_reads_as_a_report(tmp_path):
    import json

    from dpaudit.report import render_result

    res = runner.invoke(app, ["account", "-z", "1.1", "-q", "0.01", "-k", "10", "--delta", "1e-5", "--method", "pld",
                              "--report", str(tmp_path / "acc.json")], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert f"report written: {tmp_path / 'acc.json'}" in " ".join(res.stderr.split())
    data = json.loads((tmp_path / "acc.json").read_text())
    render_result(data, tmp_path / "acc.html", command="dpaudit account ...", versions={"dpaudit": "0"})
    html = _unspan((tmp_path / "acc.html").read_text())
    text = _visible(html)
    assert "not reproducible bit for bit" not in text and "deterministic" in text
    assert not re.search(r"\b(null|None)\b", text), re.findall(r".{40}\b(?:null|None)\b.{20}", text)
    assert '{"' not in text  # settings in words, not JSON
    assert re.search(r"segments\s*</td>\s*<td>kind subsampled_gaussian, sigma 1\.1, sampling rate 0\.01, count 10", html)
    css = re.search(r"<style>(.*?)</style>", html, re.S).group(1)
    # at 390 px nothing breaks mid-token (issue 44): breakable tokens stay whole, too-wide boxes scroll
    assert "overflow-wrap: anywhere" not in css and ".t { white-space: nowrap; }" in css
    assert '<span class="t">' in (tmp_path / "acc.html").read_text()
    # the Monte Carlo accountant draws random numbers: its seed stays in the report
    render_result({**data, "method": "mc", "seed": 3}, tmp_path / "mc.md", versions={})
    md = (tmp_path / "mc.md").read_text()
    assert "Seed: 3." in md and "deterministic" not in md
