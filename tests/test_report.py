"""dpaudit.report: --report out.html / out.md of test, audit-scores and account (docs/reports.md)."""

from __future__ import annotations

import json
import re
from importlib import resources

import numpy as np
import pytest
from typer.testing import CliRunner

from dpaudit.cli import app
from dpaudit.report import render_result, report_format, reproduce_command  # noqa: F401

runner = CliRunner()


def _run(*args):
    return runner.invoke(app, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def audit_json(tmp_path_factory):
    path = tmp_path_factory.mktemp("json") / "r.json"
    res = _run("test", "zoo:non-dp-laplace-1", "--epsilon", "0.01", "--samples", "4000", "--trials", "1",
               "--seed", "5", "--quiet", "--report", str(path))
    assert res.exit_code == 1, res.output
    return json.loads(path.read_text())


def test_templates_are_package_data():
    names = {p.name for p in resources.files("dpaudit.report").joinpath("templates").iterdir()}
    assert {"report.html.j2", "report.md.j2"} <= names


@pytest.mark.parametrize("name, shown", [("r.txt", "'.txt'"), ("r", "'(none)'"), ("r.pdf", "'.pdf'")])
def test_unknown_report_suffix_is_bad_input(tmp_path, name, shown):
    for cmd in (["test", "zoo:dp-laplace", "--epsilon", "1"],
                ["audit-scores", "in.npy", "out.npy"],
                ["account", "-z", "1", "-k", "10", "--delta", "1e-5"]):
        res = _run(*cmd, "--report", str(tmp_path / name))
        assert res.exit_code == 2, res.output
        assert f"unknown report suffix {shown}" in " ".join(res.output.split()), res.output
    assert not any(tmp_path.iterdir())


def test_report_format():
    assert report_format("a.HTML") == "html" and report_format("a.md") == "markdown" and report_format("x/a.json") == "json"
    with pytest.raises(ValueError, match=r"'\.csv'"):
        report_format("a.csv")


def test_html_report_of_test_is_self_contained(tmp_path):
    out = tmp_path / "r.html"
    res = _run("test", "zoo:non-dp-laplace-1", "--epsilon", "0.01", "--samples", "4000", "--trials", "1",
               "--seed", "5", "--quiet", "--report", str(out))
    assert res.exit_code == 1, res.output
    html = out.read_text()
    assert 'id="verdict"' in html and "VIOLATION" in html
    assert html.count("data:image/png;base64,") == 2  # outputs at the pair, privacy profile
    assert not re.search(r"(src|href)=\"(https?:)?//", html)  # nothing fetched from the network
    assert "<script" not in html
    assert "dpaudit test zoo:non-dp-laplace-1 --epsilon 0.01 --samples 4000 --trials 1 --seed 5" in html
    for text in ("0.01-DP (pure)", "[1, 0]", "numpy", "Settings", "tester.epochs"):
        assert text in html


def test_render_is_deterministic_and_markdown_writes_plots(audit_json, tmp_path):
    a, b = tmp_path / "a.html", tmp_path / "b.html"
    x = np.arange(200.0).reshape(-1, 1)
    render_result(audit_json, a, command="dpaudit test x", samples=(x, x + 1))
    render_result(audit_json, b, command="dpaudit test x", samples=(x, x + 1))
    assert a.read_bytes() == b.read_bytes()
    md = tmp_path / "rep.md"
    rng = np.random.default_rng(0)
    written = render_result(audit_json, md, samples=(rng.normal(size=(50, 3)), rng.normal(size=(50, 3))))
    assert [p.name for p in written] == ["rep.md", "outputs.png", "privacy-profile.png"]
    text = md.read_text()
    assert "](rep_files/outputs.png)" in text and "](rep_files/privacy-profile.png)" in text
    assert text.startswith("# dpaudit test: non-dp-laplace-1") and "VIOLATION" in text
    assert "principal axes" in text  # 3-D outputs: a 2-D projection
    for p in written[1:]:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_discrete_outputs_are_drawn_as_frequencies(audit_json, tmp_path):
    x0 = np.array([[0.0, 1.0], [1.0, 1.0], [0.0, 1.0]] * 10)
    render_result(audit_json, tmp_path / "d.md", samples=(x0, x0[::-1]))
    assert "frequency of each of the 2 distinct output values" in (tmp_path / "d.md").read_text()


def test_report_from_saved_json_without_mechanism(audit_json, tmp_path):
    from dpaudit.report import _main

    src = tmp_path / "r.json"
    src.write_text(json.dumps(audit_json))
    assert _main([str(src), str(tmp_path / "r.html")]) == 0
    html = (tmp_path / "r.html").read_text()
    assert "No output plot" in html and html.count("data:image/png;base64,") == 1
    assert _main([str(src), str(tmp_path / "r.txt")]) == 2


def test_audit_scores_report(tmp_path):
    rng = np.random.default_rng(0)
    np.save(tmp_path / "in.npy", rng.normal(1.0, 1.0, 800))
    np.save(tmp_path / "out.npy", rng.normal(0.0, 1.0, 800))
    for name in ("s.html", "s.md"):
        res = _run("audit-scores", str(tmp_path / "in.npy"), str(tmp_path / "out.npy"), "--claim-epsilon", "0.1",
                   "--seed", "2", "--report", str(tmp_path / name))
        assert res.exit_code == 1, res.output
    html = (tmp_path / "s.html").read_text()
    assert "VIOLATION" in html and "log-log" in html and html.count("data:image/png;base64,") == 1
    assert "dpaudit audit-scores" in html and "--seed 2" in html
    assert (tmp_path / "s_files" / "tradeoff.png").exists()
    res = _run("audit-scores", str(tmp_path / "in.npy"), str(tmp_path / "out.npy"), "--seed", "2", "--report", str(tmp_path / "s.json"))
    assert res.exit_code == 0 and json.loads((tmp_path / "s.json").read_text())["inputs"]["seed"] == 2


@pytest.mark.parametrize("online", [False, True])
def test_account_report(tmp_path, online):
    out = tmp_path / "a.html"
    args = ["account", "-z", "1.0", "-q", "0.01", "-k", "50", "--delta", "1e-5", "--quiet", "--report", str(out)]
    res = _run(*(args + (["--online"] if online else [])))
    assert res.exit_code == 0, res.output
    html = out.read_text()
    assert html.count("data:image/png;base64,") == 1
    assert ("Epsilon over steps" in html) == online and ("Privacy profile" in html) == (not online)
    assert "dpaudit account --noise-multiplier 1.0 --sampling-rate 0.01 --steps 50 --delta 1e-05" in html


def test_report_says_when_the_witness_trial_stopped_at_a_stage(tmp_path):
    """A staged trial that stops at its first violation says how many of the planned samples it used."""
    out = tmp_path / "r.md"
    res = _run("test", "zoo:non-dp-laplace-1", "--epsilon", "0.01", "--samples", "20000", "--trials", "1",
               "--seed", "0", "--quiet", "--report", str(out))
    assert res.exit_code == 1, res.output
    assert "2,000 per dataset (of 20,000: the trial stopped at the violation)" in out.read_text()
