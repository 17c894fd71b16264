"""A new user's first hour with ``dpaudit test`` (issue 38): a typo'd ``zoo:`` target answers "did
you mean ...?" in one line (item 6 of the issue), and ``--quiet`` prints no "Auditing ..." header
(item 9)."""

from __future__ import annotations

from typer.testing import CliRunner

from dpaudit.cli import app
from dpaudit.mechanisms import zoo

runner = CliRunner()
FAST = ["--samples", "2000", "--stages", "off", "--trials", "1", "--seed", "0"]


def run(*args):
    return runner.invoke(app, list(args), catch_exceptions=False, env={"COLUMNS": "80"})


def test_typo_in_zoo_target_suggests_names_instead_of_listing_all():
    res = run("test", "zoo:dp-laplce", "--epsilon", "1")
    assert res.exit_code == 2
    err = res.stderr.strip()
    assert "did you mean dp-laplace" in err and "dpaudit zoo lists them all" in err, err
    shown = [e.name for e in zoo.entries() if e.name in err]
    assert len(shown) <= 4, shown  # a few close names, not all 53
    assert len(err.splitlines()) <= 3, err
    part = run("test", "zoo:laplace", "--epsilon", "1")  # a part of a name still finds its entries
    assert part.exit_code == 2 and "did you mean" in part.stderr


def test_quiet_prints_no_header():
    loud = run("test", "zoo:dp-laplace", "--epsilon", "1", *FAST)
    quiet = run("test", "zoo:dp-laplace", "--epsilon", "1", *FAST, "--quiet")
    assert loud.exit_code == quiet.exit_code == 0
    assert "Auditing" in loud.stderr
    assert "Auditing" not in quiet.stderr and quiet.stderr.strip() == "", quiet.stderr
    assert "no violation found" in quiet.stdout


def test_witness_pairs_have_their_own_labels():
    """Trials 1 and 2 of a zoo entry with two witness pairs are told apart (issue 38, item 8)."""
    from dpaudit.audit.targets import assemble, load_target

    for entry in zoo.entries():
        if len(entry.witness_pairs) > 1:
            setup = assemble(*load_target(f"zoo:{entry.name}"), epsilon=1.0)
            labels = [p.description for p in setup.known]
            assert len(set(labels)) == len(labels) and f"witness pair 2 of {entry.name}" in labels, labels
            assert [p.description for p in entry.witnesses()] == labels


def test_floating_point_finding_reads_right(tmp_path):
    """dp-laplace is correct in exact arithmetic: its float64 leak is said so, not "the bug: none: a
    correct mechanism" under the FLOATING-POINT LEAK banner, and the note does not repeat the test
    region (issue 38, item 8)."""
    import json
    import re

    from dpaudit.report import render_result

    args = ["zoo:dp-laplace", "--epsilon", "1", "--tester", "float-bits", "--samples", "20000", "--trials", "2",
            "--seed", "1", "--quiet"]
    res = run("test", *args)
    assert res.exit_code == 5 and "FLOATING-POINT LEAK" in res.stdout, res.stdout
    terminal = " ".join(res.stdout.replace("│", " ").split())
    assert "the test region S (above)" in terminal
    data = json.loads(run("test", *args, "--json").stdout)
    render_result(data, tmp_path / "r.html", versions={})  # the report without the outputs' plot
    html = (tmp_path / "r.html").read_text()
    assert "FLOATING-POINT LEAK" in html and "none: a correct mechanism" not in html
    assert "correct as mathematics, but its floating-point implementation leaks" in html
    region = re.search(r"test region S \(a set of outputs\)</td><td>(.*?)</td>", html).group(1)
    note = re.search(r">note</td><td>(.*?)</td>", html).group(1)
    assert region not in note and "the test region S (above)" in note
