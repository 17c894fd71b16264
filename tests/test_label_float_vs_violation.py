"""A floating-point finding does not hide a distributional bug (issue 37).

The default tester screens float outputs with the float-bits tester at a tenth of beta. When the
screen fires first, the audit keeps running the distributional tester(s) alone at their share of
beta (the rest of the trial's stages, then the later trials) and labels the result by what it
found: a distributional violation is a VIOLATION with the floating-point leak as an additional
finding; a mechanism whose only finding is the float64 leak stays a FLOATING-POINT LEAK.

Every audit here has a fixed seed (deterministic); the seeds are not chosen for luck: each case
checks what the code does with the findings it is given, whichever stage or trial they come from.
"""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from dpaudit import GridFinder, PureDP, audit
from dpaudit.audit.sequential import stage_betas
from dpaudit.cli import app
from dpaudit.mechanisms import zoo
from dpaudit.testers import CombinedTester, FloatBitsTester, FloatScreenTester, HockeyStickTester, make_tester
from dpaudit.testers.screened import FLOAT_SCREEN_SHARE

runner = CliRunner()

# zoo:float-laplace's mechanism (sum + textbook float64 Laplace) built for eps = 1.3 but claimed
# 1-DP: its noise scale is too small, a distributional bug, on top of the float64 leak. At its
# witness pair [0] vs [0, 1], with stages 1,000/8,000, the float-bits screen finds the leak at
# 1,000 samples (the hockey-stick tester does not), and the hockey-stick tester alone finds the
# too-small noise at 8,000: before issue 37's fix the audit stopped at 1,000 and said
# FLOATING-POINT LEAK.
MODULE = "label_float_mechanism_37"
TOO_LITTLE_NOISE = ["test", f"{MODULE}:too_little_noise", "-e", "1", "--pairs", "[[[0.0],[0.0,1.0]]]",
                    "--samples", "8000", "--stages", "1000,8000", "--trials", "1", "--seed", "1"]


@pytest.fixture(scope="module")
def too_little_noise_json(tmp_path_factory):
    """``dpaudit test`` of the mechanism above, --json (one audit for the tests that read it)."""
    import os
    import sys

    folder = tmp_path_factory.mktemp("target")
    (folder / f"{MODULE}.py").write_text(
        "from dpaudit.mechanisms import zoo\ntoo_little_noise = zoo.get('float-laplace').mechanism(1.3)\n")
    cwd = os.getcwd()
    os.chdir(folder)
    sys.path.insert(0, str(folder))
    try:
        res = runner.invoke(app, [*TOO_LITTLE_NOISE, "--json"], catch_exceptions=False)
    finally:
        os.chdir(cwd)
        sys.path.remove(str(folder))
        sys.modules.pop(MODULE, None)
    assert res.exit_code == 1, res.output
    return json.loads(res.stdout)


def test_a_float_mechanism_with_too_little_noise_is_a_violation_and_the_float_leak_is_mentioned(too_little_noise_json):
    d = too_little_noise_json
    assert d["verdict"] == "violation" and d["violation_kind"] == "distributional"
    assert "noise scale" in d["advice"] and "FLOATING-POINT LEAK" in d["also_found"]
    assert [(f["kind"], f["tester"], f["trial"]) for f in d["findings"]] == [
        ("distributional", "hockey-stick", 1), ("floating-point", "float-bits", 1)]
    assert d["evidence"]["tester"] == "hockey-stick" and d["evidence"]["violation_kind"] == "distributional"
    # the trial went on past the screen's finding with the hockey-stick tester alone, at its 0.9 of
    # the 8,000-sample stage's beta: no beta beyond the fixed split
    (trial,) = d["trials"]
    b1, b2 = stage_betas((1000, 8000), d["beta_per_trial"])
    assert [(s["num_samples"], s["status"], s["distributional_only"]) for s in trial["stages"]] == [
        (1000, "violation", False), (8000, "violation", True)]
    assert [s["beta"] for s in trial["stages"]] == pytest.approx([b1, (1 - FLOAT_SCREEN_SHARE) * b2])
    parts = trial["outcome"]["parts"]
    assert [(p["tester"], p["violation_kind"]) for p in parts] == [("hockey-stick", "distributional"),
                                                                   ("float-bits", "floating-point")]
    assert parts[1]["note"].startswith("at the 1,000-sample stage")
    assert trial["outcome"]["beta"] == pytest.approx(b1 + (1 - FLOAT_SCREEN_SHARE) * b2)
    assert trial["outcome"]["beta"] <= d["beta_per_trial"]
    assert trial["stop_reason"] == "violation" and trial["num_samples"] == 8000


def test_the_text_verdict_and_the_markdown_report_say_violation_and_also_the_float_leak(too_little_noise_json,
                                                                                        monkeypatch):
    from rich.console import Console

    from dpaudit.audit.result import AuditResult
    from dpaudit.cli.app import _render
    from dpaudit.report import plots
    from dpaudit.report.builders import audit_document
    from dpaudit.report.markdown import render_markdown

    monkeypatch.setattr(plots, "privacy_profile_png", lambda *a, **k: b"")  # the text is checked, not the plot

    console = Console(width=200, record=True, file=open(os.devnull, "w"))
    _render(AuditResult.from_dict(too_little_noise_json), console)
    text = console.export_text()
    assert "VIOLATION FOUND" in text and "also found" in text
    assert "a FLOATING-POINT LEAK too (float-bits, trial 1; its own bound: epsilon >=" in text
    assert "may be private in exact arithmetic" not in text  # the wrong diagnosis of before
    md = render_markdown(audit_document(too_little_noise_json))
    assert "distributional (VIOLATION)" in md and "Also found: a FLOATING-POINT LEAK too" in md


def test_float_laplace_stays_a_floating_point_leak_and_the_later_trials_run_the_hockey_stick_tester_alone():
    # correct in exact arithmetic: only the float64 leak is there, whatever runs after it
    e = zoo.get("float-laplace")
    res = audit(e.mechanism(1.0), e.claim(1.0), GridFinder(e.witnesses()[:1] * 3), num_samples=2000, trials=3,
                seed=0, stages="off", processes=1)
    assert res.violation and res.violation_kind == "floating-point" and res.exit_code == 5
    assert [(f["kind"], f["trial"]) for f in res.findings] == [("floating-point", 1)] and res.also_found is None
    assert len(res.trials) == 3 and not res.stopped_early  # no distributional violation: every trial ran
    first, *later = res.trials
    assert first.outcome.violation_kind == "floating-point" and not first.stages[0].distributional_only
    for t in later:  # the hockey-stick tester alone, at its 0.9 of the trial's beta
        assert t.outcome.tester == "hockey-stick" and not t.outcome.violation and t.stages[0].distributional_only
        assert t.outcome.beta == pytest.approx((1 - FLOAT_SCREEN_SHARE) * res.beta_per_trial)
    d = json.loads(res.to_json())
    assert d["violation_kind"] == "floating-point" and d["findings"][0]["headline"] == "FLOATING-POINT LEAK"
    assert d["also_found"] is None and d["evidence"]["tester"] == "float-bits"


def test_integer_outputs_are_unchanged_and_stop_at_the_first_violation():
    # randomized response with the wrong flip probability outputs bits: no screen, the hockey-stick
    # tester at the whole beta, the same trials and outcomes as the hockey-stick tester alone
    e = zoo.get("randomized-response-wrong-flip")
    kw = dict(num_samples=4000, trials=3, seed=3, stages="off", processes=1)
    default = audit(e.mechanism(1.0), e.claim(1.0), GridFinder(e.witnesses() * 3), **kw)
    alone = audit(e.mechanism(1.0), e.claim(1.0), GridFinder(e.witnesses() * 3), tester=HockeyStickTester(), **kw)
    assert default.tester["float_outputs"] is False
    assert default.violation_kind == "distributional" and default.stopped_early and len(default.trials) == 1
    assert [t.outcome for t in default.trials] == [t.outcome for t in alone.trials]
    assert [f["kind"] for f in default.findings] == ["distributional"] and default.also_found is None


def test_which_part_runs_on_after_a_floating_point_finding():
    claim = PureDP(1.0)
    # the default: the primary at 0.9 of beta on float outputs (or undecided), all of it on integers
    screened = make_tester("hockey-stick+float-screen")
    primary, frac = screened.distributional_part(claim)
    assert primary is screened.primary and frac == pytest.approx(1 - FLOAT_SCREEN_SHARE)
    assert FloatScreenTester(HockeyStickTester(), float_outputs=False).distributional_part(claim)[1] == 1.0
    # --tester all: every applicable tester but float-bits, with the shares they had
    every = make_tester("all")
    rest, frac = every.distributional_part(claim)
    k = len(every.applicable(claim))
    assert isinstance(rest, CombinedTester) and "float-bits" not in [t.name for t in rest.testers]
    assert len(rest.testers) == k - 1 and frac == pytest.approx((k - 1) / k)
    assert rest.beta_shares(claim) == pytest.approx([1 / (k - 1)] * (k - 1))
    # nothing to run on: the float-bits tester alone, or a tester without a screen
    assert FloatBitsTester().distributional_part(claim) is None
    assert HockeyStickTester().distributional_part(claim) is None
    assert CombinedTester([HockeyStickTester(), FloatBitsTester()]).distributional_part(claim)[0].name == "hockey-stick"


def test_assert_dp_names_the_violation_and_also_the_float_leak():
    # the same too-little-noise mechanism through assert_dp with the staged tester (stages
    # 2,000/8,000: the screen at 2,000, the hockey-stick tester alone at 8,000 for seed 0; the
    # sequential default finds the distributional violation at 1,641 pairs, before the screen's
    # first checkpoint)
    from dpaudit.testing import DPViolation, assert_dp

    with pytest.raises(DPViolation) as info:
        assert_dp(zoo.get("float-laplace").mechanism(1.3), epsilon=1.0, pairs=[([[0.0]], [[0.0], [1.0]])],
                  samples=8000, trials=1, seed=0, tester="staged")
    msg = str(info.value)
    assert msg.startswith("dpaudit found a DP violation (violation kind: distributional)")
    assert "\n  also found: a FLOATING-POINT LEAK too (float-bits, trial 1; its own bound" in msg
    assert [s.distributional_only for s in info.value.result.trials[0].stages] == [False, True]
