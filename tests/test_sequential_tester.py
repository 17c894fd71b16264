"""The sequential tester (testing by betting): level, power, lower bounds, trials, CLI (issue 43)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from dpaudit.audit.executors import TrialSpec, run_trial, screen_checkpoints
from dpaudit.audit.targets import assemble, load_target
from dpaudit.cli.app import app
from dpaudit.estimators.betting import (
    CAP_FRACTIONS, EProcessBound, OrderedCells, candidate_masses, outcome_steps, region_mask,
)
from dpaudit.privacy.claims import ApproxDP, PureDP, RenyiDP
from dpaudit.testers import make_tester
from dpaudit.testers.sequential import SequentialTester, batch_schedule

from _harness import assert_coverage_at_least, assert_rate_above, assert_rate_at_most

KEEP = math.exp(1.0) / (1.0 + math.exp(1.0))


def _rr(rng, n, eps=1.0):
    keep = math.exp(eps) / (1.0 + math.exp(eps))
    return (rng.random(n) < keep).astype(float), (rng.random(n) >= keep).astype(float)


# ------------------------------------------------------------------ the parts
def test_batch_schedule_grows_and_ends_at_the_budget():
    assert batch_schedule(1000, 32, 1.5) == (32, 64, 96, 144, 216, 324, 486, 729, 1000)
    assert batch_schedule(10, 32, 1.5) == (10,)
    s = batch_schedule(50_000, 32, 1.25)
    assert s[-1] == 50_000 and all(b > a for a, b in zip(s, s[1:]))
    for bad in ({"budget": 0}, {"budget": 10, "first": 0}, {"budget": 10, "growth": 1.0}):
        with pytest.raises(ValueError):
            batch_schedule(**{"first": 32, "growth": 1.5, **bad})


def test_every_bet_keeps_the_wealth_positive():
    """The cap 1/(e^eps' + delta') and fractions <= 0.9: no outcome loses more than 90 % of a strategy."""
    for e, d in ((1.0, 0.0), (math.e, 1e-5), (math.exp(10.0), 0.3)):
        steps = outcome_steps(np.concatenate([[0.9], CAP_FRACTIONS]), e, d)
        assert np.all(np.isfinite(steps)) and steps.min() >= math.log(0.1) - 1e-12


def test_cells_count_and_assign_alike():
    rng = np.random.default_rng(0)
    v = np.concatenate([rng.normal(size=500), np.zeros(40), np.full(7, 2.5)])  # two atoms
    cells = OrderedCells.from_sorted(np.sort(v), 32)
    assert {0.0, 2.5} <= set(cells.points[cells.atoms])
    assert np.array_equal(cells.counts(np.sort(v)), np.bincount(cells.assign(v), minlength=cells.num_cells))
    a = cells.counts(np.sort(v)).astype(float)
    b = np.ones_like(a)
    for fam in ("threshold", "interval", "level"):
        c = candidate_masses(a, b, fam)
        i = int(np.argmax(c.a - c.b))
        m = region_mask(c.spec[i], a, b)
        assert a[m].sum() == c.a[i] and b[m].sum() == c.b[i]


# ------------------------------------------------------------------ level (false accusations)
def test_exact_mechanisms_are_accused_at_most_beta_of_the_time(rng):
    """Randomized response and Laplace exactly at their claimed eps (tight profiles), with the
    stopping rule (futility, budget): accusations over seeds at rate <= beta."""
    tester = SequentialTester()
    accused, runs = 0, 0
    for _ in range(40):
        p, q = _rr(rng, 3000)
        accused += tester.test(p, q, PureDP(1.0), beta=0.2, rng=0).violation
        p, q = rng.laplace(0, 1, 3000), 1 + rng.laplace(0, 1, 3000)
        accused += tester.test(p, q, PureDP(1.0), beta=0.2, rng=0).violation
        runs += 2
    assert_rate_at_most(accused, runs, 0.2, what="accusations of exact mechanisms")


def test_the_level_check_can_fail(rng):
    """The same count flags a claim below the truth (randomized response at eps 1.5 against 1-DP)."""
    tester = SequentialTester()
    accused = sum(tester.test(*_rr(rng, 3000, eps=1.5), PureDP(1.0), beta=0.2, rng=0).violation for _ in range(20))
    assert_rate_above(accused, 20, 0.2, what="accusations of a violated claim")


def test_exact_renyi_gaussian_is_not_over_accused(rng):
    tester = SequentialTester()
    sigma = math.sqrt(2.0 / 2.0)  # (2, 1)-RDP exactly
    accused = sum(tester.test(rng.normal(0, sigma, 3000), 1 + rng.normal(0, sigma, 3000), RenyiDP(2.0, 1.0),
                              beta=0.2, rng=0).violation for _ in range(15))
    assert_rate_at_most(accused, 15, 0.2, what="accusations of the exact RDP Gaussian")


# ------------------------------------------------------------------ power and what it reports
def test_a_blatant_violation_stops_within_a_few_hundred_pairs(rng):
    p, q = _rr(rng, 50_000, eps=3.0)
    o = SequentialTester().test(p, q, PureDP(0.5), beta=0.001)
    b = o.bounds[0]
    assert o.violation and o.margin > 0 and isinstance(b, EProcessBound)
    assert b.samples_used <= 300 and b.samples_drawn < 500 and b.e_value >= 1000
    assert o.epsilon_lower_bound > 0.5 and "e-value" in o.note  # the eps family rejects above the claim


def test_an_atom_on_one_side_is_found(rng):
    """noisy-sum-empty-shortcut's bug: an exact 0 on one dataset, continuous noise on the other."""
    p = np.where(rng.random(5000) < 0.5, 0.0, rng.laplace(0, 1, 5000))
    q = rng.laplace(0, 1, 5000)
    o = SequentialTester().test(p, q, PureDP(1.0), beta=0.001)
    assert o.violation and "{0}" in o.bounds[0].region


def test_discrete_and_continuous_vectors(rng):
    keep = math.exp(2.0) / (1 + math.exp(2.0))
    p = (rng.random((20_000, 3)) < keep).astype(float)
    q = (rng.random((20_000, 3)) >= keep).astype(float)
    o = SequentialTester().test(p, q, PureDP(1.0), beta=0.01)
    assert o.violation and "row key" in o.bounds[0].region
    x = rng.normal(0, 1, (20_000, 3))
    y = rng.normal(0, 1, (20_000, 3)) + np.array([2.0, 0, 0])
    o = SequentialTester().test(x, y, ApproxDP(0.5, 1e-5), beta=0.01)
    assert o.violation and "score" in o.bounds[0].region


def test_renyi_bug_hidden_from_the_profile_is_found(rng):
    """The conversion-calibrated Gaussian of docs/renyi.md §9: every (eps', delta') of the claim holds,
    so only the Rényi e-process can reject it."""
    from dpaudit.mechanisms.zoo.corners import conversion_hidden_sigma

    sigma = conversion_hidden_sigma(2.0, 1.0)
    o = SequentialTester().test(rng.normal(0, sigma, 20_000), 1 + rng.normal(0, sigma, 20_000), RenyiDP(2.0, 1.0),
                                beta=0.01)
    assert o.violation and o.bounds[0].divergence == "renyi"


def test_epsilon_lower_bound_covers_the_true_epsilon(rng):
    """The step-down epsilon bound (docs/sequential.md §4) is below the true epsilon (2: Laplace of
    scale 1/2, shift 1) in at least 1 - beta of the runs, and is informative."""
    tester = SequentialTester(futility=False)
    below, bounds = 0, []
    for _ in range(20):
        o = tester.test(rng.laplace(0, 0.5, 4000), 1 + rng.laplace(0, 0.5, 4000), PureDP(1.0), beta=0.2, rng=0)
        below += o.epsilon_lower_bound <= 2.0
        bounds.append(o.epsilon_lower_bound)
    assert_coverage_at_least(below, 20, 0.8, what="epsilon lower bounds below the truth")
    assert np.median(bounds) > 1.0


def test_a_pass_says_what_it_could_have_detected(rng):
    p, q = rng.laplace(0, 1, 8000), 1 + rng.laplace(0, 1, 8000)
    o = SequentialTester(futility=False).test(p, q, PureDP(1.0), beta=0.01)
    assert not o.violation and o.bounds[0].detectable_margin > 0 and "would have been expected" in o.note
    o = SequentialTester().test(p[:40], q[:40], PureDP(1.0), beta=0.01)
    assert o.inconclusive and "needs n >=" in o.note


def test_futility_stops_a_correct_mechanism_early(rng):
    p, q = rng.laplace(0, 1, 20_000), 1 + rng.laplace(0, 1, 20_000)
    r = SequentialTester().run(lambda s, m: (p[s:s + m], q[s:s + m]), PureDP(1.0), beta=0.01, budget=20_000)
    assert r.stop_reason == "futility" and r.samples_drawn < 20_000 and "futility" in r.outcome.note


def test_bad_options_are_named():
    with pytest.raises(ValueError, match="growth"):
        SequentialTester(growth=1.0)
    with pytest.raises(ValueError, match="first_batch"):
        SequentialTester(first_batch=0)
    with pytest.raises(ValueError, match="cuda"):
        SequentialTester(device="cuda:99")


# ------------------------------------------------------------------ trials
def _spec(name, eps, n, beta=0.01, index=0):
    obj, kind = load_target(name)
    s = assemble(obj, kind, epsilon=eps)
    return s.mechanism, s.claim, TrialSpec(index, s.known[0], "grid", n, beta, 0, 5000)


def test_trial_stops_at_the_violating_batch_and_records_it():
    mech, claim, spec = _spec("zoo:non-dp-laplace-1", 0.01, 20_000)
    rec = run_trial(mech, make_tester("sequential+float-screen").resolve(np.array([[0.5]])), claim, spec)
    assert rec.outcome.violation and rec.stop_reason == "violation" and rec.num_samples < 2000
    assert rec.stages[-1].num_samples == rec.num_samples and rec.stages[-1].status == "violation"
    sched = SequentialTester().schedule(20_000)  # refits at the schedule; draws in chunks within a batch
    assert [s.num_samples for s in rec.stages[:-1]] == list(sched[:len(rec.stages) - 1])
    assert sched[len(rec.stages) - 2] < rec.stages[-1].num_samples <= sched[len(rec.stages) - 1]
    assert rec.stages[0].beta == pytest.approx(0.009)  # 0.9 of the trial's beta: the screen keeps 0.1


def test_float_screen_runs_at_its_checkpoints_within_the_beta_split():
    """float-laplace: the float-bits screen finds the leak at the 2,000-pair checkpoint (at 0.1 of
    the trial's beta, spread over the checkpoints); the e-process goes on alone."""
    mech, claim, spec = _spec("zoo:float-laplace", 1.0, 8000)
    rec = run_trial(mech, make_tester("sequential+float-screen").resolve(np.array([[0.5]])), claim, spec)
    o = rec.outcome
    assert o.violation and o.violation_kind == "floating-point"
    assert "at the 2,000-sample stage" in o.note and [p.tester for p in o.parts] == ["sequential", "float-bits"]
    screen_beta = [p.beta for p in o.parts if p.tester == "float-bits"][0]
    checks = screen_checkpoints(8000, SequentialTester().schedule(8000))  # 2000, the batches from 2000 on, 8000
    assert checks[0] == 2000 and checks[-1] == 8000 and len(checks) >= 4
    assert screen_beta == pytest.approx(0.001 * 2000 / sum(checks))  # stage_betas: the first checkpoint's share
    assert o.parts[0].beta == pytest.approx(0.009)


def test_screen_checkpoints_cover_every_futility_stop():
    """The screen runs wherever the e-process may stop for futility (every batch from n/4 on), so a
    float leak is screened on every pair a futile trial drew; dpl_mean-like budgets included."""
    for n in (4000, 20_000, 50_000):
        batches = batch_schedule(n, 32, 1.5)
        checks = screen_checkpoints(n, batches)
        assert list(checks) == sorted(set(checks)) and checks[-1] == n
        assert all(b in checks for b in batches if b >= max(n // 4, 2000))
    assert screen_checkpoints(50_000, batch_schedule(50_000, 32, 1.5))[:4] == (2000, 8000, 12500, 18698)


# ------------------------------------------------------------------ CLI
def _cli(*args):
    res = CliRunner().invoke(app, list(args))
    return res.exit_code, res.stdout, res.stderr


def test_cli_default_and_tester_options():
    code, out, err = _cli("test", "zoo:non-dp-laplace-1", "--epsilon", "0.01", "--samples", "4000", "--seed", "0",
                          "--json")
    assert code == 1 and json.loads(out)["tester"]["tester"] == "sequential+float-screen"
    code, out, _ = _cli("test", "zoo:non-dp-laplace-1", "--epsilon", "0.01", "--samples", "4000", "--seed", "0",
                        "--json", "--first-batch", "16", "--batch-growth", "2")
    d = json.loads(out)
    assert code == 1 and [s["num_samples"] for s in d["trials"][0]["stages"]][:3] == [16, 32, 64]
    code, out, _ = _cli("test", "zoo:non-dp-laplace-1", "--epsilon", "0.01", "--samples", "4000", "--seed", "0",
                        "--json", "--stages", "off")  # explicit stages: the staged default
    assert code == 1 and json.loads(out)["tester"]["tester"] == "hockey-stick+float-screen"
    code, _, err = _cli("test", "zoo:dp-laplace", "--epsilon", "1", "--tester", "hockey-stick", "--first-batch", "8")
    assert code == 2 and "--first-batch" in err
    code, _, err = _cli("test", "zoo:dp-laplace", "--epsilon", "1", "--tester", "sequential", "--stages", "off")
    assert code == 2 and "--stages" in err
