"""Monte Carlo accountant and verifier: long statistical runs (``pytest -m slow``).

Coverage tests run many seeded repetitions and check the number of confidence intervals that
contain the truth with a one-sided binomial test at level 1e-3 (a correct 95% interval fails it
with probability < 1e-3, and the seeds are fixed, so a passing test keeps passing). Ground truths:
the exact mu-GDP profile for Gaussian compositions; dp_accounting's pessimistic and optimistic PLD
estimates (which bracket the exact profile) for subsampled ones.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit.accounting import (
    Composition,
    GaussianStep,
    MonteCarloAccountant,
    estimate_delta,
    gaussian_delta,
    gaussian_epsilon,
    plan_verification,
    reference,
    verify,
)

from _harness import assert_coverage_at_least, assert_rate_at_most

pytestmark = pytest.mark.slow

GAUSS10 = Composition.from_steps([(GaussianStep(2.0), 10)])
MU10 = math.sqrt(10.0) / 2.0


@pytest.mark.parametrize("estimator, eps, m", [("simple", 2.0, 2000), ("is", 2.0, 2000), ("is", 8.0, 2000)])
def test_delta_interval_coverage_gaussian(estimator, eps, m):
    truth = gaussian_delta(eps, MU10)  # 8.0 -> about 6e-7
    acc = MonteCarloAccountant(m, estimator, confidence=0.95, rng=np.random.default_rng(20240 + int(eps)))
    reps = 400
    hits = 0
    for _ in range(reps):
        r = acc.get_delta(GAUSS10, eps)
        hits += r.ci_low <= truth <= r.ci_high
    assert_coverage_at_least(hits, reps, 0.95)
    assert hits < reps  # intervals that always cover would be uselessly wide at 95%


def test_epsilon_interval_coverage_gaussian():
    delta = 1e-8
    truth = gaussian_epsilon(delta, MU10)
    acc = MonteCarloAccountant(2000, "is", confidence=0.9, rng=np.random.default_rng(77))
    reps = 300
    hits = 0
    for _ in range(reps):
        r = acc.get_epsilon(GAUSS10, delta)
        hits += r.ci_low <= truth <= r.ci_high
    assert_coverage_at_least(hits, reps, 0.9)


def test_delta_interval_coverage_subsampled_against_pld_bracket():
    """is-cmc on a short DP-SGD run: the interval must contain the PLD bracket's midpoint at the
    stated rate (the bracket is ~1e-4 relative wide, the intervals ~5%)."""
    comp = Composition.dpsgd(0.9, 0.05, 30)
    eps = 2.5
    hi = reference.delta("pld", comp, eps, pessimistic=True, value_discretization_interval=1e-5)["delta"]
    lo = reference.delta("pld", comp, eps, pessimistic=False, value_discretization_interval=1e-5)["delta"]
    assert (hi - lo) / hi < 0.005
    truth = 0.5 * (hi + lo)
    acc = MonteCarloAccountant(2000, "auto", confidence=0.95, rng=np.random.default_rng(5))
    reps = 200
    hits = 0
    for _ in range(reps):
        r = acc.get_delta(comp, eps)
        hits += r.ci_low <= truth <= r.ci_high
    assert_coverage_at_least(hits, reps, 0.95)


def test_epsilon_agrees_with_pld_on_dpsgd_within_one_percent():
    # NOTES-accounting.md worked example: sigma = 1.1, q = 256/60000, 14100 steps, delta = 1e-5;
    # dp_accounting PLD eps ~ 2.385 (pessimistic estimate with 1e-4 discretisation).
    comp = Composition.dpsgd(1.1, 256 / 60000, 14100)
    pld = reference.epsilon("pld", comp, 1e-5)["epsilon"]
    r = MonteCarloAccountant(2000, rng=2024).get_epsilon(comp, 1e-5)
    assert abs(r.epsilon - pld) / pld < 0.01, (r.epsilon, pld)
    assert r.ci_low < r.epsilon < r.ci_high


def test_importance_sampling_one_percent_at_1e_minus_10_on_dpsgd():
    """sigma = 1.1, q = 256/60000, 1000 steps, at the eps where dp_accounting's PLD gives
    delta = 1e-10: the default estimator (is-cmc) reaches a relative standard error below 1% with
    30 000 samples and agrees with the PLD (connect-the-dots, pessimistic, discretisation 2e-5,
    which converges from above: 1.0004e-10 at 1e-4, 0.9996e-10 at 2e-5); simple Monte Carlo with
    the same budget cannot (it sees at most a handful of losses above eps)."""
    comp = Composition.dpsgd(1.1, 256 / 60000, 1000)
    eps = reference.epsilon("pld", comp, 1e-10)["epsilon"]
    ref = reference.delta("pld", comp, eps, value_discretization_interval=2e-5)["delta"]
    r = estimate_delta(comp, eps, num_samples=30_000, rng=31)
    assert r.relative_std_error < 0.01
    assert abs(r.delta - ref) < max(4 * r.std_error, 0.002 * ref)
    s = estimate_delta(comp, eps, num_samples=30_000, estimator="simple", rng=31)
    assert s.delta == 0.0 or s.relative_std_error > 0.3


def test_verifier_false_positive_rate_subsampled_both_directions():
    """Underestimated epsilon on a subsampled mechanism: the proposal's delta is tau times the true
    delta(eps) (PLD bracket midpoint; the bracket is far narrower than the verifier's margin)."""
    comp = Composition.dpsgd(1.0, 0.05, 30)
    eps, tau, beta = 2.0, 0.5, 0.05
    hi = reference.delta("pld", comp, eps, pessimistic=True, value_discretization_interval=1e-5)["delta"]
    lo = reference.delta("pld", comp, eps, pessimistic=False, value_discretization_interval=1e-5)["delta"]
    proposal = tau * lo  # true delta(eps) >= lo = proposal / tau: a false positive if accepted
    plan = plan_verification(comp, eps, proposal, tau=tau, false_positive_rate=beta)
    n = 150
    acc = sum(verify(comp, eps, proposal, tau=tau, false_positive_rate=beta, plan=plan,
                     rng=np.random.default_rng(500 + i)).accepted for i in range(n))
    assert_rate_at_most(acc, n, beta, what="acceptances")
    good = 0.5 * (hi + lo)
    plan_ok = plan_verification(comp, eps, good, tau=tau, false_positive_rate=beta)
    rej = sum(not verify(comp, eps, good, tau=tau, false_positive_rate=beta, plan=plan_ok,
                         rng=np.random.default_rng(900 + i)).accepted for i in range(n))
    assert_rate_at_most(rej, n, beta, what="rejections")


# --------------------------------------------------------------------------------------------
# one-sided upper confidence bounds (epsilon_upper / delta_upper); the expensive settings
# (sigma = 1, q = 1e-3, k = 1e4, delta = 1e-9 and k = 1000 at delta = 1e-13) are in
# benchmarks/mc_coverage.py (results in benchmarks/results/mc_coverage.md)
# --------------------------------------------------------------------------------------------
def test_epsilon_upper_coverage_gaussian():
    delta = 1e-8
    truth = gaussian_epsilon(delta, MU10)
    acc = MonteCarloAccountant(1000, "is", confidence=0.95, rng=np.random.default_rng(78))
    reps = 300
    hits = sum(acc.get_epsilon(GAUSS10, delta).epsilon_upper >= truth for _ in range(reps))
    assert_coverage_at_least(hits, reps, 0.95)


def test_delta_upper_coverage_gaussian():
    eps = 8.0
    truth = gaussian_delta(eps, MU10)
    acc = MonteCarloAccountant(1000, "is", confidence=0.95, rng=np.random.default_rng(79))
    reps = 300
    hits = sum(acc.get_delta(GAUSS10, eps).delta_upper >= truth for _ in range(reps))
    assert_coverage_at_least(hits, reps, 0.95)


@pytest.mark.parametrize("k", [2, 30])
def test_epsilon_upper_coverage_tiny_delta(k):
    """sigma = 0.5, q = 1e-3, delta = 1e-13 (where the rejection sampler used to crash): the
    one-sided bound covers prv_accountant's upper end (a conservative truth) at >= 95%."""
    comp = Composition.dpsgd(0.5, 1e-3, k)
    truth = reference.epsilon("prv", comp, 1e-13)["upper"]
    acc = MonteCarloAccountant(2000, confidence=0.95, rng=np.random.default_rng(800 + k))
    reps = 200
    hits = sum(acc.get_epsilon(comp, 1e-13).epsilon_upper >= truth for _ in range(reps))
    assert_coverage_at_least(hits, reps, 0.95)
