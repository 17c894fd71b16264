"""Violation kinds: a floating-point leak reads differently from a distributional violation, in the
result objects, the JSON, the CLI verdict, the reports, assert_dp's message and the zoo listing."""

from __future__ import annotations

import dataclasses
import json

import pytest
from typer.testing import CliRunner

from dpaudit.audit.result import AuditResult
from dpaudit.cli import app
from dpaudit.mechanisms import zoo
from dpaudit.testers import VIOLATION_KINDS, TestOutcome
from dpaudit.testing import DPViolation, assert_dp

runner = CliRunner()

# zoo:dp-laplace is eps-DP in exact arithmetic; its textbook float64 sampler leaks through the bit
# patterns at its second witness pair ([0] vs [0, 1]), which the float-bits tester finds at 20,000
# samples (seeds 0 to 3 all find it at trial 2 and nowhere else).
FLOAT_LEAK = ["test", "zoo:dp-laplace", "-e", "1", "--tester", "all", "--samples", "20000", "--trials", "2",
              "--seed", "1", "--quiet"]
DISTRIBUTIONAL = ["test", "zoo:non-dp-laplace-1", "-e", "0.01", "--samples", "20000", "--seed", "0", "--quiet"]


def run(*args, env=None):
    return runner.invoke(app, list(args), catch_exceptions=False, env=env)


@pytest.fixture(scope="module")
def float_leak_json():
    res = run(*FLOAT_LEAK, "--json")
    assert res.exit_code == 5, res.output  # a floating-point leak only: its own exit code (issue 44)
    return json.loads(res.stdout)


def test_the_float_bits_finding_on_dp_laplace_is_named_floating_point(float_leak_json):
    d = float_leak_json
    assert d["verdict"] == "violation" and d["violation"] is True
    assert d["violation_kind"] == "floating-point"
    assert d["advice"] == VIOLATION_KINDS["floating-point"].advice and "snapping" in d["advice"]
    assert d["evidence"]["tester"] == "float-bits" and d["evidence"]["violation_kind"] == "floating-point"
    violating = [t for t in d["trials"] if t["outcome"]["violation"]]
    assert violating and all(t["outcome"]["violation_kind"] == "floating-point" for t in violating)
    assert all(t["outcome"]["violation_kind"] is None for t in d["trials"] if not t["outcome"]["violation"])
    # the other testers (values, not bits) found nothing: the kind rests on the float-bits part alone
    parts = violating[0]["outcome"]["parts"]
    assert [p["tester"] for p in parts if p["violation"]] == ["float-bits"]
    assert AuditResult.from_dict(d).violation_kind == "floating-point"  # derived again from a JSON report


def test_a_distributional_part_makes_a_combined_outcome_distributional(float_leak_json):
    trial = next(t for t in float_leak_json["trials"] if t["outcome"]["violation"])
    outcome = TestOutcome.from_dict(trial["outcome"])
    assert outcome.violation_kind == "floating-point"
    parts = list(outcome.parts)
    i = next(i for i, p in enumerate(parts) if p.tester == "hockey-stick")
    parts[i] = dataclasses.replace(parts[i], violation=True)  # a value-based tester rejects too
    assert dataclasses.replace(outcome, parts=tuple(parts)).violation_kind == "distributional"
    # the float-bits "atoms" family finds point masses: a property of the distribution itself
    fb = next(p for p in outcome.parts if p.tester == "float-bits")
    b = fb.bounds[fb.strongest]
    atoms = dataclasses.replace(b, binning="atoms features of column 0 (3 cells seen in the selection half)")
    bounds = list(fb.bounds)
    bounds[fb.strongest] = atoms
    assert dataclasses.replace(fb, bounds=tuple(bounds)).violation_kind == "distributional"
    assert dataclasses.replace(fb, violation=False).violation_kind is None


def test_the_text_verdict_and_the_html_report_say_floating_point_leak(tmp_path):
    report = tmp_path / "r.html"
    res = run(*FLOAT_LEAK, "--report", str(report), env={"COLUMNS": "200"})
    assert res.exit_code == 5  # its own exit code: a CI job can gate on distributional violations (1) alone
    assert "FLOATING-POINT LEAK" in res.stdout and "VIOLATION FOUND" not in res.stdout
    assert "snapping mechanism" in res.stdout
    html = report.read_text()
    assert "FLOATING-POINT LEAK" in html and "floating-point" in html
    assert "snapping mechanism (Mironov 2012)" in html


def test_a_distributional_violation_is_named_so_everywhere(tmp_path):
    res = run(*DISTRIBUTIONAL, "--json")
    assert res.exit_code == 1
    d = json.loads(res.stdout)
    assert d["violation_kind"] == "distributional" and d["evidence"]["violation_kind"] == "distributional"
    assert d["advice"] == VIOLATION_KINDS["distributional"].advice and "noise scale" in d["advice"]
    report = tmp_path / "r.md"
    res = run(*DISTRIBUTIONAL, "--report", str(report), env={"COLUMNS": "200"})
    assert res.exit_code == 1
    assert "VIOLATION FOUND" in res.stdout and "FLOATING-POINT" not in res.stdout
    assert "sensitivity and noise scale" in res.stdout
    md = report.read_text()
    assert "distributional" in md and "sensitivity and noise scale" in md and "FLOATING-POINT" not in md


def test_a_passing_audit_has_no_kind():
    res = run("test", "zoo:dp-laplace", "-e", "1", "--samples", "5000", "--trials", "1", "--seed", "0", "--json")
    assert res.exit_code == 0
    d = json.loads(res.stdout)
    assert d["violation_kind"] is None and d["advice"] is None


def test_assert_dp_names_the_kind():
    with pytest.raises(DPViolation) as info:
        assert_dp("zoo:dp-laplace", epsilon=1.0, tester="all", samples=20_000, trials=2, seed=0)
    msg = str(info.value)
    assert msg.startswith("dpaudit found a FLOATING-POINT LEAK (violation kind: floating-point)")
    assert VIOLATION_KINDS["floating-point"].advice in msg
    assert info.value.result.violation_kind == "floating-point"
    with pytest.raises(DPViolation) as info:
        assert_dp("zoo:non-dp-laplace-1", epsilon=1.0, samples=20_000, trials=1, seed=3, tester="hockey-stick")
    assert str(info.value).startswith("dpaudit found a DP violation (violation kind: distributional)")
    assert VIOLATION_KINDS["distributional"].advice in str(info.value)


def test_the_zoo_says_which_entries_are_private_only_in_exact_arithmetic():
    exact = {e.name for e in zoo.entries() if e.exact_arithmetic_only}
    assert {"dp-laplace", "dp-gaussian", "float-laplace", "float-gaussian", "laplace-sum"} <= exact
    # the fix (snapping) and discrete outputs are private in floating point too
    assert not exact & {"snapping-laplace", "randomized-response", "noisy-max-laplace", "svt1", "dp-median"}
    listed = {e["name"]: e for e in json.loads(run("zoo", "--json").stdout)}
    assert listed["dp-laplace"]["exact_arithmetic_only"] is True and listed["dp-laplace"]["private"] is True
    assert listed["snapping-laplace"]["exact_arithmetic_only"] is False
    res = run("zoo", env={"COLUMNS": "250"})
    rows = {line.split()[0]: line for line in res.stdout.splitlines() if line.strip()}  # an entry's first line
    assert "yes in exact arithmetic" in rows["dp-laplace"]
    assert "no in float64" in rows["float-laplace"]
    assert "exact arithmetic" not in rows["snapping-laplace"] and "yes" in rows["snapping-laplace"]


# --- the default tester's floating-point screen (issue 37) --------------------------------------


def _default_audit(name, eps, samples, seed, tester=None):
    """The Python API's default audit of a zoo entry at its witness pairs (one trial, one stage)."""
    from dpaudit.audit.loop import audit
    from dpaudit.audit.targets import assemble, load_target, make_finder

    setup = assemble(*load_target(f"zoo:{name}"), epsilon=eps)
    finder = make_finder("grid", setup.known, setup.relation, seed)
    return audit(setup.mechanism, setup.claim, finder, tester=tester, num_samples=samples, trials=1, seed=seed,
                 stages="off")


def test_the_default_screens_float_outputs_with_a_tenth_of_beta():
    # zoo:float-laplace (textbook float64 Laplace, Mironov 2012) at its first witness pair: the
    # float-bits screen at beta/10 finds the leak at 2,000 samples (margin ~0.26, seed 0)
    cli = run("test", "zoo:float-laplace", "-e", "1", "--samples", "2000", "--trials", "1", "--stages", "off",
              "--search", "grid", "--seed", "0", "--json")
    assert cli.exit_code == 5, cli.output
    d = json.loads(cli.stdout)
    assert d["violation_kind"] == "floating-point"
    t = d["tester"]
    assert t["tester"] == "hockey-stick+float-screen" and t["float_outputs"] is True
    assert t["shares"] == pytest.approx([0.9, 0.1]) and "float-bits screen at 0.1" in t["beta_split"]
    parts = d["trials"][0]["outcome"]["parts"]
    assert [(p["tester"], p["beta"]) for p in parts] == [("hockey-stick", pytest.approx(0.009)),
                                                        ("float-bits", pytest.approx(0.001))]
    assert "beta split" in d["trials"][0]["outcome"]["note"]
    api = _default_audit("float-laplace", 1.0, 2000, 0)  # the Python API's default is the CLI's
    assert api.violation_kind == "floating-point" and api.tester == t
    assert api.trials[0].outcome.margin == pytest.approx(d["trials"][0]["outcome"]["margin"])
    # --tester hockey-stick: the hockey-stick tester alone, at the whole beta
    alone = json.loads(run("test", "zoo:float-laplace", "-e", "1", "--samples", "2000", "--trials", "1", "--stages",
                           "off", "--search", "grid", "--seed", "0", "--json", "--tester", "hockey-stick").stdout)
    assert alone["tester"]["tester"] == "hockey-stick" and "parts" not in alone["tester"]
    assert alone["trials"][0]["outcome"]["beta"] == pytest.approx(0.01)


def test_the_default_leaves_integer_outputs_unsplit():
    # randomized response outputs bits: no screen, the whole beta, the hockey-stick tester's outcome
    from dpaudit.testers import HockeyStickTester

    res = _default_audit("randomized-response", 1.0, 4000, 3)
    assert res.tester["float_outputs"] is False and "parts" not in res.tester
    assert "no floating-point screen" in res.tester["beta_split"]
    o = res.trials[0].outcome
    assert o.tester == "hockey-stick" and not o.parts and o.beta == pytest.approx(res.beta_per_trial)
    plain = _default_audit("randomized-response", 1.0, 4000, 3, tester=HockeyStickTester())
    assert o == plain.trials[0].outcome  # bit for bit what the hockey-stick tester alone gives


def test_the_float_screen_tester_alone_and_its_inputs():
    import numpy as np

    from dpaudit import PureDP, RenyiDP
    from dpaudit.testers import CombinedTester, FloatScreenTester, HockeyStickTester, make_tester
    from dpaudit.testers.screened import has_noninteger_floats

    assert not has_noninteger_floats(np.arange(5.0)) and not has_noninteger_floats(np.array([1, 2]))
    assert not has_noninteger_floats(np.array([np.inf, 2.0])) and has_noninteger_floats(np.array([[1.0, 0.5]]))
    with pytest.raises(ValueError, match="numeric"):
        has_noninteger_floats(np.array(["a"]))
    screened = make_tester("hockey-stick+float-screen")
    assert isinstance(screened, FloatScreenTester) and screened.peek_samples == 16 and screened.float_outputs is None
    assert screened.resolve(np.array([[1.0], [2.0]])).peek_samples == 0
    rdp = make_tester("hockey-stick+renyi+float-screen").resolve(np.array([[0.5]]))
    assert [p["tester"] for p in rdp.config()["parts"]] == ["hockey-stick", "renyi", "float-bits"]
    assert rdp.config()["shares"] == pytest.approx([0.45, 0.45, 0.1]) and rdp.supports(RenyiDP(2.0, 1.0))
    # undecided (no peek): integer samples get the hockey-stick tester at (1 - share) beta, the
    # screen's share stays reserved (the split never depends on the samples)
    rng = np.random.default_rng(0)
    x0, x1 = rng.integers(0, 2, (400, 1)).astype(float), rng.integers(0, 2, (400, 1)).astype(float)
    o = screened.test(x0, x1, PureDP(1.0), beta=0.1, rng=1)
    assert o.beta == pytest.approx(0.09) and o == HockeyStickTester().test(x0, x1, PureDP(1.0), beta=(1 - 0.1) * 0.1, rng=1)
    with pytest.raises(ValueError, match="shares"):
        CombinedTester([HockeyStickTester()], shares=[0.0])
    with pytest.raises(ValueError, match="share"):
        FloatScreenTester(HockeyStickTester(), share=1.5)
