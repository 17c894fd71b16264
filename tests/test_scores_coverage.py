"""Seeded coverage of every score-audit bound (slow: many repetitions).

For each bound, the number of repetitions in which it fails (overstates the privacy loss) is
compared with the stated failure probability ``beta = 1 - confidence`` by a one-sided binomial test
(``assert_rate_at_most`` of tests/_harness.py: scipy.stats.binomtest, alternative "greater"): the
test fails when the observed failure count is implausibly high (p <= 1e-3) for a true rate of at
most ``beta``. The confidence is 0.8 so that
a bound that is wrong by a constant would show.

Null inputs: two samples from one distribution. Any positive TV lower bound (equivalently any
positive profile, epsilon or mu lower bound) is then a false accusation.

Coverage: Gaussian (mu = 1) and Laplace (eps0 = 1) pairs with closed-form profiles and
trade-off functions (tests/test_profiles.py checks them against integration). A repetition fails
if *any* of its bounds is on the wrong side anywhere: the profile on an epsilon grid (both
directions), epsilon at several deltas, the trade-off curve on an alpha grid, mu.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from scipy import stats

from dpaudit.privacy.profiles import (
    gaussian_delta,
    gaussian_epsilon,
    gaussian_tradeoff,
    gdp_mu_for_profile,
    laplace_delta,
    laplace_epsilon,
    laplace_tradeoff,
)
from dpaudit.scores import gdp_audit, histogram_audit, threshold_audit

from _harness import assert_rate_above, assert_rate_at_most

pytestmark = pytest.mark.slow

CONFIDENCE = 0.8
BETA = 1.0 - CONFIDENCE
EPS = np.linspace(0.0, 6.0, 121)
ALPHA = np.linspace(0.0, 1.0, 101)
DELTAS = (1e-5, 1e-3, 0.05)


def audit(method, x, y, seed):
    if method == "threshold":
        return threshold_audit(x, y, confidence=CONFIDENCE, rng=seed, thresholds=16)
    return histogram_audit(x, y, method=method, confidence=CONFIDENCE, rng=seed)


NULLS = {
    "normal": lambda rng, n: rng.normal(size=n),
    "laplace": lambda rng, n: rng.laplace(size=n),
    "poisson-ties": lambda rng, n: rng.poisson(3.0, size=n).astype(float),
}


@pytest.mark.parametrize("method", ["auto", "canonne", "split", "threshold"])
@pytest.mark.parametrize("null", sorted(NULLS))
def test_null_inputs_rarely_give_a_positive_bound(method, null):
    rng = np.random.default_rng(zlib.crc32(f"{method}/{null}".encode()))
    reps, n = 400, 400
    draw = NULLS[null]
    positives = 0
    for r in range(reps):
        res = audit(method, draw(rng, n), draw(rng, n), r)
        positives += res.tv_lower_bound > 0
    assert_rate_at_most(positives, reps, BETA, what="positive bounds")


def test_null_gdp_audit_rarely_gives_positive_mu():
    rng = np.random.default_rng(7)
    reps = 250
    positives = sum(
        gdp_audit(rng.normal(size=400), rng.normal(size=400), confidence=CONFIDENCE, rng=r, thresholds=16).mu_lower_bound > 0
        for r in range(reps)
    )
    assert_rate_at_most(positives, reps, BETA, what="positive bounds")


def test_the_binomial_harness_catches_a_broken_bound():
    # Reporting the plug-in estimate as if it were a bound must fail the null test.
    rng = np.random.default_rng(8)
    reps = 100
    positives = sum(histogram_audit(rng.normal(size=400), rng.normal(size=400), rng=r).tv_estimate > 0 for r in range(reps))
    assert_rate_above(positives, reps, BETA, what="positive plug-in estimates")


PAIRS = {
    # name: (sampler of (P, Q) samples, profile, epsilon(delta), trade-off, GDP mu of the pair)
    "gaussian": (
        lambda rng, n: (rng.normal(1.0, 1.0, n), rng.normal(0.0, 1.0, n)),
        lambda e: gaussian_delta(e, 1.0),
        lambda d: gaussian_epsilon(d, 1.0),
        lambda a: gaussian_tradeoff(a, 1.0),
        1.0,
    ),
    "laplace": (
        lambda rng, n: (rng.laplace(0.0, 1.0, n), rng.laplace(1.0, 1.0, n)),
        lambda e: laplace_delta(e, 1.0),
        lambda d: laplace_epsilon(d, 1.0),
        lambda a: laplace_tradeoff(a, 1.0),
        gdp_mu_for_profile(np.linspace(0, 1.0, 400), laplace_delta(np.linspace(0, 1.0, 400), 1.0)),
    ),
}


def wrong_side(res, profile, eps_of, tradeoff, mu) -> bool:
    for d in ("P||Q", "Q||P"):
        if np.any(res.delta_lower_bound(EPS, direction=d) > profile(EPS) + 1e-12):
            return True
    if any(res.epsilon_lower_bound(d) > eps_of(d) + 1e-9 for d in DELTAS):
        return True
    if np.any(res.tradeoff_upper_bound(ALPHA) < tradeoff(ALPHA) - 1e-12):
        return True
    return res.mu_lower_bound > mu + 1e-6


@pytest.mark.parametrize("method", ["auto", "canonne", "split", "threshold"])
@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_coverage_on_closed_form_pairs(method, pair):
    sample, profile, eps_of, tradeoff, mu = PAIRS[pair]
    rng = np.random.default_rng(zlib.crc32(f"{method}/{pair}/coverage".encode()))
    reps, n = 300, 1000
    failures = 0
    informative = 0
    for r in range(reps):
        x, y = sample(rng, n)
        res = audit(method, x, y, r)
        failures += wrong_side(res, profile, eps_of, tradeoff, mu)
        informative += res.tv_lower_bound > 0
    assert_rate_at_most(failures, reps, BETA)
    assert informative > reps // 2  # and the bounds are not vacuous


@pytest.mark.parametrize("method", ["canonne", "split"])
def test_coverage_against_the_binned_truth(method):
    # The sharpest target: the histogram bounds are about the *binned* pair (paper 001 §4.2,
    # Lemma 1), whose divergences are computed exactly from the CDFs for fixed bins.
    edges = np.linspace(-3.0, 4.0, 15)
    cdf = np.concatenate([[0.0], stats.norm.cdf(edges[1:-1]), [1.0]])
    pk = np.diff(np.concatenate([[0.0], stats.norm.cdf(edges[1:-1], loc=1.0), [1.0]]))
    qk = np.diff(cdf)
    a = np.exp(EPS)[:, None]
    binned = np.maximum(np.maximum(pk - a * qk, 0).sum(axis=1), np.maximum(qk - a * pk, 0).sum(axis=1))
    rng = np.random.default_rng(21 if method == "canonne" else 22)
    reps, n = 300, 600
    failures = 0
    for r in range(reps):
        x, y = rng.normal(1.0, 1.0, n), rng.normal(0.0, 1.0, n)
        res = histogram_audit(x, y, bins=edges, method=method, confidence=CONFIDENCE, rng=r)
        failures += bool(np.any(res.delta_lower_bound(EPS) > binned + 1e-12))
    assert_rate_at_most(failures, reps, BETA)


def test_gdp_audit_coverage_on_gaussian_scores():
    rng = np.random.default_rng(23)
    reps, mu = 200, 1.0
    failures = sum(
        gdp_audit(rng.normal(mu, 1, 1000), rng.normal(0, 1, 1000), confidence=CONFIDENCE, rng=r, thresholds=16).mu_lower_bound > mu
        for r in range(reps)
    )
    assert_rate_at_most(failures, reps, BETA)
