"""The command line's output at fixed terminal widths (80, 100, 120 columns; also what a pipe
gets): no line wider than the terminal, no cell cut short ("-0.0…", "Clopper–Pear…"), every number
of the result printed whole, ``dpaudit zoo`` short enough to read, ``dpaudit zoo NAME`` in full."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from rich.console import Console
from rich.table import Table
from typer.testing import CliRunner

from dpaudit.cli import app
from dpaudit.cli.options import fit_table, print_table
from dpaudit.mechanisms import zoo

runner = CliRunner()
WIDTHS = (80, 100, 120)
ZOO_LINES_AT_80 = 150  # the bound on `COLUMNS=80 dpaudit zoo | wc -l` (1,630 before)


def run(*args, width=None):
    return runner.invoke(app, list(args), catch_exceptions=False, env=None if width is None else {"COLUMNS": str(width)})


def assert_fits(text: str, width: int) -> None:
    """No line wider than ``width`` and no ellipsis next to a digit (a number cut short)."""
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width, max(lines, key=len)
    assert not re.search(r"\d…|…\d|[-+.]…", text), text


def assert_whole(number: str, text: str) -> None:
    """``number`` (as formatted) appears in ``text`` with no digit glued to either end."""
    assert re.search(r"(?<![\d.])" + re.escape(number) + r"(?![\d])", text), f"{number} not printed whole in:\n{text}"


def words(text: str) -> list[str]:
    return text.split()


# ------------------------------------------------------------------------------------- tables --
def _table() -> Table:
    t = Table(title="t")
    t.add_column("method")
    t.add_column("eps lower bound (delta=1e-05)", justify="right", no_wrap=True)
    t.add_column("note")
    t.add_row("threshold MIA + Clopper–Pearson", "1.12734", "63 thresholds, Bonferroni")
    t.add_row("GDP audit (Nasr et al. 2023)", "3.309* estimate", "best test score > -0.280768")
    return t


@pytest.mark.parametrize("width", (40, 60) + WIDTHS)
def test_print_table_never_cuts_a_word_or_number(width):
    console = Console(width=width, record=True, file=None, force_terminal=False, color_system=None)
    with console.capture() as cap:
        print_table(console, _table())
    text = cap.get()
    assert_fits(text, width)
    for cell in ("Clopper–Pearson", "1.12734", "3.309*", "-0.280768", "Bonferroni"):
        assert cell in text
    assert "…" not in text


def test_fit_table_reports_a_table_that_cannot_fit():
    assert fit_table(_table(), 120)
    assert not fit_table(_table(), 30)  # the widest number and longest words alone need more


# ---------------------------------------------------------------------------------------- zoo --
@pytest.mark.parametrize("width", WIDTHS)
def test_zoo_lists_every_entry_by_family_in_few_lines(width):
    res = run("zoo", width=width)
    assert res.exit_code == 0
    assert_fits(res.stdout, width)
    lines = res.stdout.splitlines()
    assert len(lines) < ZOO_LINES_AT_80
    starts = {line.split()[0]: line for line in lines if line.strip()}
    for title, items in zoo.families().items():
        assert title in lines
        for e in items:
            first = starts[e.name]  # one line starts with the name, with its claim and private? cell
            assert {"pure": "eps-DP", "approx": "(eps, delta)-DP", "renyi": "(alpha, eps)-RDP"}[e.claim_kind] in first
            if e.exact_arithmetic_only:
                assert "in exact arithmetic" in res.stdout.split(e.name, 1)[1].split("\n", 2)[1] + first
            else:
                assert ("yes" if e.private else "no") in first
    # a summary is cut only between words: every word shown (before " …") is a word of it
    summaries = {w for e in zoo.entries() for w in words(e.summary)}
    for line in lines:
        shown = line.split("  ")[-1].strip()
        if shown.endswith(" …"):
            assert set(words(shown[:-2])) <= summaries, line


def test_zoo_piped_reads_as_80_columns():
    """``python -m dpaudit zoo | ...``: no terminal, no COLUMNS: Rich's default of 80 columns."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    res = subprocess.run([sys.executable, "-m", "dpaudit", "zoo"], capture_output=True, text=True, env=env, check=True)
    assert_fits(res.stdout, 80)
    assert len(res.stdout.splitlines()) < ZOO_LINES_AT_80
    assert res.stdout == run("zoo", width=80).stdout


def test_zoo_is_shorter_at_wider_terminals():
    counts = [len(run("zoo", width=w).stdout.splitlines()) for w in WIDTHS]
    assert counts == sorted(counts, reverse=True), counts


@pytest.mark.parametrize("width", WIDTHS)
def test_zoo_name_describes_one_entry_in_full(width):
    e = zoo.get("non-dp-laplace-2")
    res = run("zoo", e.name, width=width)
    assert res.exit_code == 0
    assert_fits(res.stdout, width)
    shown = " ".join(words(re.sub(r"[│╭╮╰╯─]", " ", res.stdout)))  # the panel's text, lines joined
    for field in (e.summary, e.bug, e.true_guarantee, e.source):
        assert " ".join(words(field)) in shown  # whole, not clipped
    assert f"no for eps < {e.violates_for[1]:g}; yes beyond" in res.stdout
    assert run("zoo", f"zoo:{e.name}").stdout == run("zoo", e.name).stdout  # the TARGET spelling works too


def test_zoo_unknown_name_is_bad_input_with_close_matches():
    res = run("zoo", "dp-laplce")
    assert res.exit_code == 2
    assert "no zoo mechanism called 'dp-laplce'" in res.output and "did you mean dp-laplace" in res.output


def test_zoo_json_is_one_entry_with_a_name_and_every_entry_without():
    everything = json.loads(run("zoo", "--json").stdout)
    assert [e["name"] for e in everything] == [e.name for e in zoo.entries()]
    one = json.loads(run("zoo", "dp-gaussian", "--json").stdout)
    assert one == next(e for e in everything if e["name"] == "dp-gaussian")


# -------------------------------------------------------------------------------- dpaudit test --
TEST_ARGS = ("test", "zoo:non-dp-laplace-1", "-e", "0.01", "--samples", "2000", "--trials", "4", "--seed", "0",
             "--exhaustive", "--quiet")


@pytest.fixture(scope="module")
def test_json():
    return json.loads(run(*TEST_ARGS, "--json").stdout)


@pytest.mark.parametrize("width", WIDTHS)
def test_trials_table_prints_every_number_whole(width, test_json):
    res = run(*TEST_ARGS, width=width)
    assert res.exit_code == 1
    text = res.stdout
    assert_fits(text, width)
    table = text[text.index("Trials"):]
    assert len(test_json["trials"]) == 4
    for t in test_json["trials"]:
        o = t["outcome"]
        b = o["bounds"][o["strongest"]]
        assert re.search(rf"^\W*{t['index'] + 1}\W", table, re.M)  # the # column is not empty
        for number in (f"{b['estimate']:+.4f}", f"{b['lower']:+.4f}", f"{o['margin']:+.4f}", f"{t['num_samples']:,}"):
            assert_whole(number, table)
        assert set(words(t["pair"]["description"])) <= set(words(re.sub(r"[│┃]", " ", table)))  # wrapped, not cut


# ------------------------------------------------------------------------------- audit-scores --
@pytest.fixture(scope="module")
def scores(tmp_path_factory):
    d = tmp_path_factory.mktemp("scores")
    rng = np.random.default_rng(0)
    np.save(d / "a.npy", rng.normal(1.0, 1.0, 2000))
    np.save(d / "b.npy", rng.normal(0.0, 1.0, 2000))
    mask = rng.random(2000) < 0.5
    np.save(d / "mask.npy", mask.astype(float))
    np.save(d / "s.npy", rng.normal(0.0, 1.0, 2000) + 1.5 * mask)
    return d


@pytest.mark.parametrize("width", WIDTHS)
def test_audit_scores_two_samples_prints_every_number_whole(width, scores):
    args = ("audit-scores", str(scores / "a.npy"), str(scores / "b.npy"), "--seed", "0")
    data = json.loads(run(*args, "--json").stdout)
    res = run(*args, width=width)
    assert res.exit_code == 0
    assert_fits(res.stdout, width)
    for key in ("epsilon_lower_bound", "tv_lower_bound", "mu_lower_bound"):
        assert_whole(f"{data[key]:.4g}", res.stdout)
    for a in [data["attack"]["auc"], *data["attack"]["tpr_at_fpr"].values()]:
        assert f"[{a['lower']:.4f}, {a['upper']:.4f}]" in res.stdout
    assert "Clopper–Pearson" in res.stdout and "Bonferroni" in res.stdout


@pytest.mark.parametrize("width", WIDTHS)
def test_audit_scores_one_run_prints_every_number_whole(width, scores):
    args = ("audit-scores", str(scores / "s.npy"), "--mask", str(scores / "mask.npy"), "--seed", "0")
    data = json.loads(run(*args, "--json").stdout)
    res = run(*args, width=width)
    assert res.exit_code == 0
    assert_fits(res.stdout, width)
    for key in ("epsilon_lower_bound", "epsilon_lower_bound_steinke", "mu_lower_bound", "epsilon_of_mu_estimate"):
        assert_whole(f"{data[key]:.4g}", res.stdout)


# ---------------------------------------------------------------------------- account, verify --
ACCOUNT = ("-z", "1.1", "-q", "0.004267", "-k", "1000", "--delta", "1e-5")


@pytest.fixture(scope="module")
def account_json():
    return json.loads(run("account", *ACCOUNT, "--json").stdout)


@pytest.mark.parametrize("width", WIDTHS)
def test_account_and_verify_print_every_number_whole(width, account_json):
    res = run("account", *ACCOUNT, width=width)
    assert res.exit_code == 0
    assert_fits(res.stdout, width)
    assert_whole(f"{account_json['epsilon']:.6g}", res.stdout)
    assert_whole(f"{account_json['rdp_bound']:.6g}", res.stdout)
    res = run("verify", *ACCOUNT, "--epsilon", "1.2", "--beta", "0.05", width=width)
    assert res.exit_code == 0
    assert_fits(res.stdout, width)
    assert "ACCEPTED" in res.stdout
