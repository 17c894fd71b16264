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



def _unspan(html: str) -> str:
    """The page without the ``<span class="t">`` that keep breakable tokens whole (issue 44)."""
    return re.sub(r'<span class="t">(.*?)</span>', r"\1", html)

def _run(*args):
    return runner.invoke(app, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def audit_json(tmp_path_factory):
    path = tmp_path_factory.mktemp("json") / "r.json"
    # the staged tester's region evidence (held-out counts, ratio test): what these report tests read
    res = _run("test", "zoo:non-dp-laplace-1", "--epsilon", "0.01", "--samples", "4000", "--trials", "1",
               "--seed", "5", "--quiet", "--report", str(path), "--tester", "staged")
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
               "--seed", "5", "--quiet", "--report", str(out), "--tester", "hockey-stick")
    assert res.exit_code == 1, res.output
    html = _unspan(out.read_text())
    assert 'id="verdict"' in html and "VIOLATION" in html
    assert html.count("data:image/png;base64,") == 2  # outputs at the pair, privacy profile
    assert not re.search(r"(src|href)=\"(https?:)?//", html)  # nothing fetched from the network
    assert "<script" not in html
    assert "dpaudit test zoo:non-dp-laplace-1 --epsilon 0.01 --samples 4000 --trials 1 --seed 5" in html
    for text in ("0.01-DP (pure)", "[1, 0]", "numpy", "Settings", "tester.regions"):
        assert text in html
    assert "tester.epochs" not in html  # 1-D outputs: exact regions, no classifier trained


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
    html = _unspan((tmp_path / "r.html").read_text())
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
    html = _unspan((tmp_path / "s.html").read_text())
    assert "VIOLATION" in html and "log-log" in html and html.count("data:image/png;base64,") == 1
    assert "dpaudit audit-scores" in html and "--seed 2" in html
    assert "<td>trade-off curve</td>" in _section(html, "glossary")
    assert "0.1-DP (pure): contradicted by the scores" in _section(html, "summary")  # the claim in words, not JSON
    settings = _section(html, "settings")
    assert settings.index("<td>delta</td>") < settings.index("<details>") < settings.index("histogram.method")
    assert (tmp_path / "s_files" / "tradeoff.png").exists()
    res = _run("audit-scores", str(tmp_path / "in.npy"), str(tmp_path / "out.npy"), "--seed", "2", "--report", str(tmp_path / "s.json"))
    assert res.exit_code == 0 and json.loads((tmp_path / "s.json").read_text())["inputs"]["seed"] == 2


@pytest.mark.parametrize("online", [False, True])
def test_account_report(tmp_path, online):
    out = tmp_path / "a.html"
    args = ["account", "-z", "1.0", "-q", "0.01", "-k", "50", "--delta", "1e-5", "--quiet", "--report", str(out)]
    res = _run(*(args + (["--online"] if online else [])))
    assert res.exit_code == 0, res.output
    html = _unspan(out.read_text())
    assert html.count("data:image/png;base64,") == 1
    assert ("Epsilon over steps" in html) == online and ("Privacy profile" in html) == (not online)
    assert "dpaudit account --noise-multiplier 1.0 --sampling-rate 0.01 --steps 50 --delta 1e-05" in html


def test_report_says_when_the_witness_trial_stopped_at_a_stage(tmp_path):
    """A staged trial that stops at its first violation says how many of the planned samples it used."""
    out = tmp_path / "r.md"
    res = _run("test", "zoo:non-dp-laplace-1", "--epsilon", "0.01", "--samples", "20000", "--trials", "1",
               "--seed", "0", "--quiet", "--report", str(out), "--tester", "staged")
    assert res.exit_code == 1, res.output
    assert "2,000 per dataset (of 20,000: the trial stopped at the violation)" in _unspan(out.read_text())


def test_report_of_the_sequential_default(tmp_path):
    """The default (sequential) report: the pairs its trial drew, its e-value, the profile plot of its
    anytime-valid delta lower bound, the command that reproduces it."""
    out = tmp_path / "r.md"
    res = _run("test", "zoo:non-dp-laplace-1", "--epsilon", "0.01", "--samples", "20000", "--trials", "1",
               "--seed", "0", "--quiet", "--report", str(out))
    assert res.exit_code == 1, res.output
    text = out.read_text()
    drawn = json.loads(_run("test", "zoo:non-dp-laplace-1", "--epsilon", "0.01", "--samples", "20000", "--trials",
                            "1", "--seed", "0", "--json").stdout)["trials"][0]["num_samples"]
    assert drawn < 2000 and f"{drawn:,} per dataset (of 20,000: the trial stopped at the violation)" in text
    assert "e-value" in text and "1/beta" in text
    assert (tmp_path / "r_files" / "privacy-profile.png").exists()


def test_report_shows_the_sequential_sizing_bound(tmp_path):
    """After a detection the sequential tester sizes the leak on fresh pairs (docs/sequential.md §10):
    the HTML and Markdown reports show that bound (the number the JSON result holds) in the witness
    pair's table and the verdict; with --no-size neither shows one."""
    args = ["test", "zoo:non-dp-laplace-1", "--epsilon", "0.01", "--samples", "20000", "--trials", "1", "--seed", "0",
            "--quiet"]
    for extra, sized in (((), True), (("--no-size",), False)):
        path = tmp_path / "r.json"
        assert _run(*args, *extra, "--report", str(path)).exit_code == 1
        data = json.loads(path.read_text())
        bound = data["trials"][0]["outcome"]["bounds"][0]
        assert (bound["sized_epsilon"] is not None) == sized
        for name in ("r.html", "r.md"):
            render_result(data, tmp_path / name)
            text = _unspan((tmp_path / name).read_text())
            if not sized:
                assert "sizing step" not in text and "sized after the detection" not in text
                continue
            assert "size of the leak (sizing step)" in _section(text, "pair") if name == "r.html" else True
            want = (f"epsilon &gt;= {bound['sized_epsilon']:.4g} at delta = 0 on {bound['sizing_samples']:,} fresh pairs"
                    if name == "r.html" else
                    f"epsilon \\>= {bound['sized_epsilon']:.4g} at delta = 0 on {bound['sizing_samples']:,} fresh pairs")
            assert "size of the leak (sizing step)" in text and "sized after the detection: " + want in text
            assert text.count(want) == 2  # the verdict and the witness pair's table


def _section(html: str, anchor: str) -> str:
    """The HTML of the report's section ``anchor``."""
    start = html.index(f'<section id="{anchor}">')
    return html[start:html.index("</section>", start)]


def test_report_speaks_to_a_reviewer(audit_json, tmp_path):
    """Glossary, settings that matter first and the rest folded, the zoo's description of the bug,
    and what to do next with the command that reproduces the violation (HTML and Markdown alike)."""
    from dpaudit.mechanisms.zoo import get
    from dpaudit.report.builders import GLOSSARY

    command = "dpaudit test zoo:non-dp-laplace-1 --epsilon 0.01 --samples 4000 --trials 1 --seed 5"
    render_result(audit_json, tmp_path / "r.html", command=command)
    render_result(audit_json, tmp_path / "r.md", command=command)
    html = _unspan((tmp_path / "r.html").read_text())
    md = (tmp_path / "r.md").read_text()
    assert audit_json["violation_kind"] == "distributional"
    verdict = html[html.index('id="verdict"'):html.index("</p>", html.index('id="verdict"'))]
    assert "distributional violation" in verdict and "[1, 0]" in verdict
    glossary = _section(html, "glossary")
    for term in ("hockey-stick divergence", "privacy profile", "P||Q / Q||P", "margin", "ratio test",
                 "certified lower bound", "witness pair"):
        assert term in GLOSSARY
        assert f"<td>{term}</td>" in glossary, term
        assert term.replace("|", "\\|") in md, term
    settings = _section(html, "settings")
    folded = settings.index("<details>")
    for key in ("claim", "samples", "trials", "beta", "seed", "tester"):
        assert settings.index(f"<td>{key}</td>") < folded, key  # the settings that matter come first
    assert "<summary>All other settings (" in settings and "neighbouring.domain.lower" in settings[folded:]
    assert "hockey-stick.hidden_sizes" in settings  # named as left out: no model was trained
    assert "<details><summary>All other settings (" in md
    entry = get("non-dp-laplace-1")
    for text in (entry.summary, entry.bug, entry.true_guarantee):
        assert text in _section(html, "mechanism").replace("&#39;", "'").replace("&amp;", "&")
        assert text.split("(")[0].strip() in md.replace("\\", "")
    nxt = _section(html, "next")
    assert audit_json["advice"].replace("'", "&#39;") in nxt
    assert command in nxt and "assert_dp(&#39;zoo:non-dp-laplace-1&#39;" in nxt
    md_next = md[md.index("## What to do next"):md.index("## Witness pair")]
    assert f"```sh\n{command}\n```" in md_next and audit_json["advice"].split(":")[0] in md_next
    assert html.index('id="next"') < html.index('id="pair"')  # before the evidence: a reviewer reads it first


def test_report_of_a_pass_says_it_is_no_proof(tmp_path):
    out = tmp_path / "p.html"
    res = _run("test", "zoo:dp-laplace", "--epsilon", "1", "--samples", "2000", "--trials", "1", "--seed", "1",
               "--quiet", "--report", str(out))
    assert res.exit_code == 0, res.output
    nxt = _section(_unspan(out.read_text()), "next")
    assert "No violation found is not a proof" in nxt
    assert "dpaudit test zoo:dp-laplace --epsilon 1.0 --samples 20000 --trials 20 --seed 1" in nxt


def test_no_model_settings_only_when_no_model_was_trained():
    from dpaudit.report.builders import _untrained_settings_removed

    cfg = {"tester": "hockey-stick", "regions": "auto", "epochs": 8, "hidden_sizes": [32, 32]}
    kept, removed = _untrained_settings_removed(cfg, {"HistogramBound"})
    assert "epochs" not in kept and kept["regions"] == "auto" and removed == ["hockey-stick.hidden_sizes", "hockey-stick.epochs"]
    assert _untrained_settings_removed(cfg, {"HockeyStickBound"}) == (cfg, [])  # the classifier ran
    both = {"tester": "all", "parts": [cfg, {"tester": "renyi", "epochs": 3}]}
    kept, removed = _untrained_settings_removed(both, {"HistogramBound", "RenyiBound"})
    assert "epochs" not in kept["parts"][0] and kept["parts"][1]["epochs"] == 3


def _legend_labels(fig):
    return [t.get_text() for t in fig.axes[0].get_legend().get_texts()]


def test_privacy_profile_axes_follow_the_data():
    from dpaudit.estimators.base import profile_grid
    from dpaudit.privacy.claims import ApproxDP, PureDP
    from dpaudit.report.plots import privacy_profile_figure, profile_scale

    claim = PureDP(0.01)
    grid = profile_grid(claim.epsilon)
    allowed = claim.delta_profile(grid)
    # two bounds per direction (one per test region), all below 0.06: P(S) - e^eps' Q(S)
    curves = [(d, p - np.exp(grid) * q) for d, p, q in (("P||Q", 0.30, 0.25), ("Q||P", 0.20, 0.17),
                                                         ("P||Q", 0.10, 0.08), ("Q||P", 0.05, 0.04))]
    top = max(float(np.max(y)) for _, y in curves)
    assert top < 0.06
    fig = privacy_profile_figure(grid, curves, allowed, claimed_epsilon=claim.epsilon, witness_epsilon=claim.epsilon)
    ax = fig.axes[0]
    lo, hi = ax.get_ylim()
    assert ax.get_yscale() == "linear" and lo < 0 and top < hi <= 2 * top  # not 0..1
    assert ax.get_xlim()[1] < grid.max()  # the x axis ends a little after the last positive bound
    labels = _legend_labels(fig)
    assert len(labels) == len(set(labels))  # each direction once, though it has two curves
    assert sum("P||Q" in t for t in labels) == 1 and sum("Q||P" in t for t in labels) == 1
    assert any(t.startswith("claimed \u03b5 = 0.01") for t in labels) and any(t.startswith("violation") for t in labels)
    assert "\u03b4(\u03b5\u2032)" in ax.get_ylabel() and "H_" not in ax.get_ylabel()  # words, not raw maths

    # a claimed delta of 1e-5 against a bound of 0.1: the values span decades, so the y axis is logarithmic
    approx = ApproxDP(1.0, 1e-5)
    grid = profile_grid(approx.epsilon)
    curves = [("P||Q", 0.4 - np.exp(grid) * 0.1)]
    scale = profile_scale(grid, curves, approx.delta_profile(grid), claimed_epsilon=1.0)
    assert scale.yscale == "log" and scale.ylim[0] <= 1e-5 and scale.ylim[1] <= 1.5
    fig = privacy_profile_figure(grid, curves, approx.delta_profile(grid), claimed_epsilon=1.0)
    assert fig.axes[0].get_yscale() == "log" and fig.axes[0].get_ylim() == pytest.approx(scale.ylim)

    # nothing found against a pure claim: the whole probability range, linear
    flat = profile_scale(grid, [("P||Q", -np.ones_like(grid))], PureDP(1.0).delta_profile(grid), claimed_epsilon=1.0)
    assert flat.yscale == "linear" and flat.ylim[1] <= 1.02 and flat.xlim[1] == pytest.approx(3 * 1.0)  # 3 x the claim


def test_one_run_report(tmp_path):
    rng = np.random.default_rng(7)
    mask = rng.random(4000) < 0.5
    np.save(tmp_path / "scores.npy", rng.normal(0.0, 1.0, 4000) + 2.0 * mask)
    np.savetxt(tmp_path / "mask.txt", mask.astype(int), fmt="%d")
    out = tmp_path / "one.html"
    res = _run("audit-scores", str(tmp_path / "scores.npy"), "--mask", str(tmp_path / "mask.txt"), "--epsilon", "0.5",
               "--delta", "1e-5", "--seed", "1", "--quiet", "--report", str(out))
    assert res.exit_code == 1, res.output
    html = _unspan(out.read_text())
    data = json.loads(_run("audit-scores", str(tmp_path / "scores.npy"), "--mask", str(tmp_path / "mask.txt"),
                           "--epsilon", "0.5", "--delta", "1e-5", "--seed", "1", "--json", "--quiet").output)
    assert f"the attack guessed {data['guess']['guesses']} and {data['guess']['correct']} were right" in html
    for term in ("canary", "guess", "p-value"):
        assert f"<td>{term}</td>" in _section(html, "glossary")
    assert f"dpaudit audit-scores {tmp_path / 'scores.npy'} --mask" in html  # no 'None' for the absent second file
    assert "(0.5, 1e-05)-DP: contradicted by the scores" in html
