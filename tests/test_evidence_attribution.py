"""Each number of the evidence is shown with the tester and kind that produced it (issue 44, item 0).

Before the fix a combined outcome (the default tester on float outputs: hockey-stick plus the
float-bits screen) carried the *largest* epsilon and delta lower bounds of any of its parts, next to
the strongest part's name: a hockey-stick VIOLATION was shown with the float screen's epsilon
(2.35 where the hockey-stick bound was 1.39). Now every number of a combined outcome is its
strongest part's; the result lists each kind's largest epsilon apart (``epsilon_lower_bounds``), and
a floating-point-only finding exits 5, not 1, so that CI can gate on distributional violations.

Every audit has a fixed seed; the mechanisms are chosen so that both testers reject (with
different epsilons), whatever the seed's luck, at the sample sizes used.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest
from typer.testing import CliRunner

from dpaudit import GridFinder, PureDP, audit
from dpaudit.cli import app
from dpaudit.datasets import NeighbouringPair
from dpaudit.mechanisms import zoo

runner = CliRunner()
PAIR = NeighbouringPair(np.array([[0.0]]), np.array([[0.0], [1.0]]), relation="add-remove", description="[0] vs [0, 1]")


@pytest.fixture(scope="module")
def both_found():
    """float-laplace's float64 Laplace sum built for eps = 1.3 but claimed 1-DP, one fixed-size trial
    of 8,000 outputs per dataset: the hockey-stick tester rejects the too-small noise and the
    float-bits screen the bit patterns, in the same (combined) test."""
    mech = zoo.get("float-laplace").mechanism(1.3)
    return audit(mech, PureDP(1.0), GridFinder([PAIR]), num_samples=8000, trials=1, seed=0, stages="off", processes=1)


def _part(outcome, tester):
    (p,) = [p for p in outcome.parts if p.tester == tester]
    return p


def test_the_evidence_carries_the_strongest_testers_own_epsilon(both_found):
    res = both_found
    o = res.trials[0].outcome
    hs, fb = _part(o, "hockey-stick"), _part(o, "float-bits")
    assert hs.violation and fb.violation  # both kinds found: the case of the issue
    # the float screen's epsilon differs from the hockey-stick tester's (else this test could not fail)
    assert fb.epsilon_lower_bound != pytest.approx(hs.epsilon_lower_bound, rel=1e-3)
    assert o.strongest_part is hs and o.evidence_kind == "distributional"
    assert o.epsilon_lower_bound == hs.epsilon_lower_bound and o.delta_lower_bound == hs.delta_lower_bound
    assert o.margin == hs.margin
    d = json.loads(res.to_json())
    ev = d["evidence"]
    assert (ev["tester"], ev["kind"], ev["violation_kind"]) == ("hockey-stick", "distributional", "distributional")
    assert ev["epsilon_lower_bound"] == hs.epsilon_lower_bound
    assert d["epsilon_lower_bounds"]["distributional"] == {"epsilon_lower_bound": hs.epsilon_lower_bound,
                                                           "tester": "hockey-stick", "trial": 1}
    assert d["epsilon_lower_bounds"]["floating-point"] == {"epsilon_lower_bound": fb.epsilon_lower_bound,
                                                           "tester": "float-bits", "trial": 1}
    assert res.exit_code == 1
    assert f"epsilon >= {fb.epsilon_lower_bound:.4g} for the float64 bit patterns" in res.also_found


def test_the_terminal_and_the_report_name_the_tester_of_each_number(both_found, tmp_path):
    from rich.console import Console

    from dpaudit.cli.app import _render
    from dpaudit.report import render_result

    hs = _part(both_found.trials[0].outcome, "hockey-stick")
    console = Console(width=200, record=True, file=open(os.devnull, "w"))
    _render(both_found, console)
    text = " ".join(console.export_text().replace("│", " ").split())
    assert (f"empirical epsilon lower bound (delta=0) {hs.epsilon_lower_bound:.4g} (hockey-stick tester, the output "
            "distribution)") in text, text
    render_result(json.loads(both_found.to_json()), tmp_path / "r.html", versions={})
    html = re.sub(r"<[^>]+>", "", (tmp_path / "r.html").read_text())  # the text, without the token spans
    assert (f"this one&#39;s epsilon is at least {hs.epsilon_lower_bound:.4g} (the hockey-stick tester&#39;s bound, "
            "distributional evidence)") in html


def test_a_floating_point_leak_alone_exits_5_with_the_screens_numbers():
    """The textbook float64 Laplace sum at exactly its claimed epsilon: a FLOATING-POINT LEAK, exit 5
    (not 1), the evidence is the float-bits tester's, and the distributional bound stays apart (below
    the claim) for whoever gates on it."""
    args = ["test", "zoo:float-laplace", "-e", "1", "--samples", "2000", "--trials", "1", "--stages", "off",
            "--search", "grid", "--seed", "0", "--json"]
    res = runner.invoke(app, args, catch_exceptions=False)
    assert res.exit_code == 5, res.output
    d = json.loads(res.stdout)
    assert d["violation_kind"] == "floating-point"
    assert (d["evidence"]["tester"], d["evidence"]["kind"]) == ("float-bits", "floating-point")
    fp, dist = d["epsilon_lower_bounds"]["floating-point"], d["epsilon_lower_bounds"]["distributional"]
    assert fp["tester"] == "float-bits" and fp["epsilon_lower_bound"] == d["evidence"]["epsilon_lower_bound"]
    assert dist["tester"] == "hockey-stick" and dist["epsilon_lower_bound"] <= 1.0


def test_exit_code_5_is_in_the_help_and_the_readme():
    from pathlib import Path

    from dpaudit.cli.options import EXIT_CODES, EXIT_FLOAT_LEAK

    assert EXIT_FLOAT_LEAK == 5 and any(code == 5 and "FLOATING-POINT LEAK" in text for code, text in EXIT_CODES)
    top = runner.invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert "5: FLOATING-POINT LEAK only" in top.output
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert "| 5 | FLOATING-POINT LEAK only" in readme


def test_an_adversarial_leak_with_a_floating_point_one_is_no_floating_point_verdict():
    """The README's ``dpl_mean --adversarial`` run: the adversarial stage certifies NaN outputs (a leak
    of the implementation's input handling, exit 1) and the trial finds diffprivlib's float64 leak.
    Before, the verdict read FLOATING-POINT LEAK (and with exit code 5 would have let CI pass it)."""
    from dpaudit.audit.result import AuditResult

    args = ["test", "zoo:float-laplace", "-e", "1", "--samples", "2000", "--trials", "1", "--stages", "off",
            "--search", "grid", "--seed", "0", "--json"]
    d = json.loads(runner.invoke(app, args, catch_exceptions=False).stdout)
    assert d["violation_kind"] == "floating-point"
    d["adversarial"] = {"beta": 0.001, "samples": 1000, "accepts": "nan", "results": [
        {"kind": "nan", "status": "leak", "description": "[nan] vs []", "detail": "",
         "leak": {"description": "outputs holding a NaN"}}]}
    res = AuditResult.from_dict(d)
    assert res.violation_kind == "adversarial input" and res.exit_code == 1
    assert "when a record is nan" in res.advice
    assert res.also_found.startswith("a FLOATING-POINT LEAK too (float-bits, trial 1")
