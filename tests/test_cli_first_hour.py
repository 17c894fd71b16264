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
