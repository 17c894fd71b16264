"""Classifier lower bounds on the hockey-stick divergence (dpaudit.estimators.hockey_stick).

The exact divergences come from closed forms derived in ``exact_divergences.py`` and checked here
by numerical integration:
* ``H_{e^eps}(N(0,1) || N(mu,1)) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)``
  (Balle & Wang 2018, Thm 8, with s = 1/mu);
* ``H_{e^eps}(Lap(0,b) || Lap(1,b)) = 1 - exp((eps - 1/b)/2)`` for ``0 <= eps <= 1/b``, 0 beyond.
Both pairs are symmetric, so the reverse divergence has the same value.

The promise under test: each direction's bound holds with probability >= 1 - beta, for every eps
at once through ``delta_lower_bound``. Coverage is checked over many seeded repetitions with a
one-sided binomial test (marked slow).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy import stats

from dpaudit.bounds import clopper_pearson_lower, clopper_pearson_upper, poisson_rate, poisson_ratio_lower
from dpaudit.estimators.region import RATIO_SHARE
from dpaudit.estimators import (
    ClassifierHockeyStick, HistogramBound, HistogramHockeyStick, HockeyStickBound, NotApplicable, bound_from_dict,
    hockey_stick_lower_bound,
)

from _harness import assert_rate_at_most
from exact_divergences import gaussian_hockey_stick, hockey_stick_numeric, laplace_hockey_stick


def gaussian_samples(n, mu, seed):
    rng = np.random.default_rng(seed)
    return rng.normal(0.0, 1.0, (n, 1)), rng.normal(mu, 1.0, (n, 1))


def laplace_samples(n, seed, b=1.0):
    rng = np.random.default_rng(seed)
    return rng.laplace(0.0, b, (n, 1)), rng.laplace(1.0, b, (n, 1))


# --------------------------------------------------------------------------- reference values
def test_closed_forms_match_numerical_integration():
    eps = np.array([0.0, 0.1, 0.5, 0.9, 1.0, 1.5, 3.0])
    for mu in (0.5, 1.0, 3.0):
        numeric = hockey_stick_numeric(
            lambda x: stats.norm.logpdf(x), lambda x: stats.norm.logpdf(x, mu), eps, -40.0, 40.0 + mu
        )
        np.testing.assert_allclose(gaussian_hockey_stick(mu, eps), numeric, atol=1e-7)
        # Symmetry: the reverse direction has the same divergence.
        reverse = hockey_stick_numeric(
            lambda x: stats.norm.logpdf(x, mu), lambda x: stats.norm.logpdf(x), eps, -40.0, 40.0 + mu
        )
        np.testing.assert_allclose(reverse, numeric, atol=1e-7)
    for b in (0.5, 1.0, 4.0):
        numeric = hockey_stick_numeric(
            lambda x: stats.laplace.logpdf(x, 0.0, b),
            lambda x: stats.laplace.logpdf(x, 1.0, b),
            eps,
            -60.0 * b,
            1.0 + 60.0 * b,
            num=2_000_001,
        )
        np.testing.assert_allclose(laplace_hockey_stick(b, eps), numeric, atol=1e-6)
    # Hand values: TV(Lap(0,1), Lap(1,1)) = 1 - e^{-1/2}; H vanishes at eps = 1/b.
    assert laplace_hockey_stick(1.0, 0.0) == pytest.approx(1.0 - math.exp(-0.5), rel=1e-14)
    assert laplace_hockey_stick(1.0, 1.0) == 0.0
    # TV(N(0,1), N(1,1)) = 2 Phi(1/2) - 1.
    assert gaussian_hockey_stick(1.0, 0.0) == pytest.approx(2.0 * stats.norm.cdf(0.5) - 1.0, rel=1e-12)


# --------------------------------------------------------------------------- fast: one run each
def test_gaussian_bound_is_valid_and_tight_at_20k():
    mu, eps, beta = 1.0, 0.5, 0.05
    exact = float(gaussian_hockey_stick(mu, eps))  # 0.2384
    p, q = gaussian_samples(20_000, mu, seed=11)
    ev = ClassifierHockeyStick().estimate(p, q, epsilon=eps, beta=beta, rng=12)
    for bound, direction in ((ev.forward, "P||Q"), (ev.reverse, "Q||P")):
        assert bound.direction == direction
        assert bound.lower <= exact
        assert bound.lower >= exact - 0.05
        # The same evidence bounds every eps' (one-sided, grid of orders).
        grid = np.linspace(0.0, 3.0, 61)
        assert np.all(bound.delta_lower_bound(grid) <= gaussian_hockey_stick(mu, grid))
    assert ev.train_seconds > 0 and ev.total_seconds >= ev.train_seconds


def test_laplace_bound_is_valid_and_tight_at_20k():
    eps, beta = 0.25, 0.05
    exact = float(laplace_hockey_stick(1.0, eps))  # 1 - e^{-3/8} = 0.3127
    p, q = laplace_samples(20_000, seed=5)
    ev = ClassifierHockeyStick().estimate(p, q, epsilon=eps, beta=beta, rng=6)
    for bound in (ev.forward, ev.reverse):
        assert exact - 0.06 <= bound.lower <= exact


def test_bound_fields_are_consistent():
    """lower = P_lo - e^eps Q_hi with Clopper–Pearson at beta/2 each on the held-out counts."""
    eps, beta = 0.3, 0.1
    p, q = gaussian_samples(3000, 1.0, seed=3)
    ev = ClassifierHockeyStick(epochs=3, ratio_test=False).estimate(p, q, epsilon=eps, beta=beta, rng=4)
    for b in (ev.forward, ev.reverse):
        assert b.ratio_lower is None and b.poisson_p_count is None
        assert b.divergence == "hockey-stick" and b.epsilon == eps and b.beta == beta
        assert b.n_test_p == 1500 and b.n_test_q == 1500 and b.n_train == 3000
        assert 0 <= b.p_count <= b.n_test_p and 0 <= b.q_count <= b.n_test_q
        assert b.p_mass_lower == clopper_pearson_lower(b.p_count, b.n_test_p, beta / 2)
        assert b.q_mass_upper == clopper_pearson_upper(b.q_count, b.n_test_q, beta / 2)
        assert b.lower == pytest.approx(b.p_mass_lower - math.exp(eps) * b.q_mass_upper, abs=1e-15)
        assert b.estimate == pytest.approx(b.p_count / b.n_test_p - math.exp(eps) * b.q_count / b.n_test_q)
        assert b.lower < b.estimate
        assert b.delta_lower_bound(eps) == pytest.approx(b.lower, abs=1e-15)
        assert b.region.startswith(("classifier score", "product-of-marginals score"))
        d = b.to_dict()
        assert bound_from_dict(d) == b and d["type"] == "HockeyStickBound"


def test_ratio_certified_fields_are_consistent():
    """The ratio test (small tail regions of a Laplace shift, epsilon objective): its bound on
    P(S)/Q(S) from the Poissonised counts at RATIO_SHARE of beta, the mass bounds at the rest."""
    eps, beta = 0.1, 0.1
    p, q = laplace_samples(40_000, seed=5)
    ev = ClassifierHockeyStick(epochs=3, objective="epsilon").estimate(p, q, epsilon=eps, beta=beta, rng=6)
    ratio = [b for b in ev.bounds if b.ratio_lower is not None]
    assert ratio, "the ratio test is never chosen on tail regions"
    for b in ratio:
        lam_p, lam_q = poisson_rate(b.n_test_p), poisson_rate(b.n_test_q)
        assert (b.poisson_rate_p, b.poisson_rate_q) == (lam_p, lam_q)
        assert 0 <= b.poisson_p_count <= b.p_count and 0 <= b.poisson_q_count <= b.q_count
        assert b.ratio_lower == poisson_ratio_lower(b.poisson_p_count, lam_p, b.poisson_q_count, lam_q,
                                                    RATIO_SHARE * b.beta)
        mass_beta = (1.0 - RATIO_SHARE) * b.beta / 2
        assert b.p_mass_lower == clopper_pearson_lower(b.p_count, b.n_test_p, mass_beta)
        assert b.q_mass_upper == clopper_pearson_upper(b.q_count, b.n_test_q, mass_beta)
        plain = b.p_mass_lower - math.exp(eps) * b.q_mass_upper
        assert b.lower == pytest.approx(max(plain, b.p_mass_lower * (1 - math.exp(eps) / b.ratio_lower)), abs=1e-15)
        plain_eps = math.log(b.p_mass_lower / b.q_mass_upper)
        assert b.epsilon_lower_bound(0.0) == pytest.approx(max(0.0, plain_eps, math.log(b.ratio_lower)))
        assert bound_from_dict(b.to_dict()) == b


def test_identical_distributions_give_no_evidence():
    rng = np.random.default_rng(21)
    p, q = rng.normal(size=(20_000, 2)), rng.normal(size=(20_000, 2))
    ev = ClassifierHockeyStick().estimate(p, q, epsilon=0.0, beta=0.05, rng=22)
    for b in (ev.forward, ev.reverse):
        assert b.lower <= 0.0
        assert b.epsilon_lower_bound(0.0) == 0.0


def test_reproducible_from_the_same_seed():
    p, q = laplace_samples(4000, seed=1)
    est = ClassifierHockeyStick(epochs=2)
    a = est.estimate(p, q, epsilon=0.5, beta=0.05, rng=99)
    b = est.estimate(p, q, epsilon=0.5, beta=0.05, rng=np.random.default_rng(99))
    assert a.forward == b.forward and a.reverse == b.reverse
    # Also when the caller passes the same generator state twice.
    c = est.estimate(p, q, epsilon=0.5, beta=0.05, rng=np.random.default_rng(99))
    assert c.forward == a.forward
    # The convenience wrapper with regions="classifier" returns the forward bound of the same computation.
    w = hockey_stick_lower_bound(p, q, 0.5, beta=0.05, rng=99, epochs=2, regions="classifier")
    assert w == a.forward


def test_delta_profile_changes_only_the_region_choice():
    """Region choice against a claim's profile is still a valid bound (same data, other S)."""
    p, q = gaussian_samples(20_000, 1.0, seed=31)
    ev = ClassifierHockeyStick().estimate(
        p, q, epsilon=0.5, beta=0.05, rng=32, delta_profile=lambda e: np.full_like(e, 0.1)
    )
    grid = np.linspace(0, 3, 31)
    for b in (ev.forward, ev.reverse):
        assert np.all(b.delta_lower_bound(grid) <= gaussian_hockey_stick(1.0, grid))


@pytest.mark.parametrize(
    "p, q, shown",
    [
        (np.r_[np.zeros(9), np.nan], np.zeros(10), "p_samples contains NaN"),
        (np.zeros(10), np.r_[np.zeros(9), np.inf], "q_samples contains NaN or infinite"),
        (np.zeros((10, 2)), np.zeros((10, 3)), "different output dimensions: 2 vs 3"),
        (np.zeros(3), np.zeros(10), "at least 4 samples"),
        (np.zeros(10), np.zeros((3, 1)), "at least 4 samples"),
        (np.zeros((10, 1, 1)), np.zeros((10, 1)), "shape"),
    ],
)
def test_estimate_rejects_bad_samples(p, q, shown):
    with pytest.raises(ValueError, match=shown):
        ClassifierHockeyStick().estimate(p, q, epsilon=0.5, beta=0.05, rng=0)


@pytest.mark.parametrize("kwargs, shown", [
    ({"epsilon": -0.1, "beta": 0.05}, "epsilon"),
    ({"epsilon": float("nan"), "beta": 0.05}, "epsilon"),
    ({"epsilon": float("inf"), "beta": 0.05}, "epsilon"),
    ({"epsilon": 0.5, "beta": 0.0}, "beta"),
    ({"epsilon": 0.5, "beta": 1.0}, "beta"),
    ({"epsilon": 0.5, "beta": float("nan")}, "beta"),
])
def test_estimate_rejects_bad_parameters(kwargs, shown):
    p, q = gaussian_samples(100, 1.0, seed=0)
    with pytest.raises(ValueError, match=shown):
        ClassifierHockeyStick().estimate(p, q, rng=0, **kwargs)


@pytest.mark.parametrize("kwargs", [
    {"train_fraction": 0.0}, {"train_fraction": 1.0}, {"epochs": 0}, {"batch_size": 0},
    {"max_steps": 0}, {"learning_rate": 0.0},
])
def test_constructor_validation(kwargs):
    with pytest.raises(ValueError):
        ClassifierHockeyStick(**kwargs)


def test_divergence_bound_epsilon_and_delta_conversions():
    def bound(p_lo, q_hi):
        return HockeyStickBound(
            divergence="hockey-stick", direction="P||Q", estimate=0.0, lower=p_lo - q_hi, beta=0.05,
            epsilon=0.0, p_mass_lower=p_lo, q_mass_upper=q_hi, p_count=0, q_count=0,
            n_test_p=1, n_test_q=1, n_train=2,
        )

    b = bound(0.5, 0.1)
    # p_lo - e^eps q_hi = delta  <=>  eps = ln((p_lo - delta) / q_hi).
    assert b.epsilon_lower_bound(0.0) == pytest.approx(math.log(5.0))
    assert b.epsilon_lower_bound(0.2) == pytest.approx(math.log(3.0))
    assert b.epsilon_lower_bound(0.5) == 0.0
    assert bound(0.05, 0.1).epsilon_lower_bound(0.0) == 0.0  # p_lo < q_hi: rejects no eps >= 0
    assert bound(0.5, 0.0).epsilon_lower_bound(0.0) == math.inf
    np.testing.assert_allclose(b.delta_lower_bound(np.array([0.0, math.log(2.0)])), [0.4, 0.3])
    assert isinstance(b.delta_lower_bound(1.0), float)


# --------------------------------------------------------------------------- product of marginals
def test_marginal_score_is_the_log_likelihood_ratio_of_independent_coordinates():
    """For independent bits (randomized response per coordinate) ln p(x)/q(x) is the sum of the
    per-bit log-ratios; the fitted score recovers it on all 16 patterns."""
    from dpaudit.estimators.hockey_stick import MarginalScore

    rng = np.random.default_rng(11)
    pa, pb = np.array([0.6, 0.5, 0.3, 0.8]), np.array([0.4, 0.5, 0.35, 0.6])
    p = (rng.random((200_000, 4)) < pa).astype(float)
    q = (rng.random((200_000, 4)) < pb).astype(float)
    score = MarginalScore(p, q, bins=8)  # binary coordinates: the 8 quantile bins merge to 2
    assert all(len(e) <= 2 for e in score.edges)
    patterns = np.array(np.meshgrid(*[[0.0, 1.0]] * 4, indexing="ij")).reshape(4, -1).T
    exact = np.sum(np.where(patterns == 1, np.log(pa / pb), np.log((1 - pa) / (1 - pb))), axis=1)
    np.testing.assert_allclose(score(patterns), exact, atol=0.03)
    with pytest.raises(ValueError, match="bins"):
        MarginalScore(p, q, bins=1)
    with pytest.raises(ValueError, match="dimension"):
        MarginalScore(p, q[:, :3], bins=4)


@pytest.mark.parametrize("bad", [(1,), (), (2.5,), (True,)])
def test_marginal_bins_validation(bad):
    with pytest.raises(ValueError, match="marginal_bins"):
        ClassifierHockeyStick(marginal_bins=bad)


def test_product_of_marginals_region_wins_on_many_weak_coordinates(monkeypatch):
    """20 independent coordinates, each shifted by a tenth of the Laplace scale: the sum of
    per-coordinate log-ratios is the exact privacy loss, which a small MLP does not learn from
    its few steps. The product-of-marginals region is chosen (its value judged on rows neither
    it nor its threshold saw, and the MLP's on rows it did not train on) and certifies far more,
    on the same samples, than the MLP alone."""
    import dpaudit.estimators.hockey_stick as hs

    monkeypatch.setattr(hs, "UNSEEN_MIN_ROWS", 1000)  # the small MLP below sees 1280 rows
    small = dict(max_steps=20, batch_size=64, hidden_sizes=(8,))
    for seed in range(3):
        rng = np.random.default_rng([seed, 5])
        p, q = rng.laplace(0.0, 1.0, (20_000, 20)), rng.laplace(0.1, 1.0, (20_000, 20))
        both = ClassifierHockeyStick(**small).estimate(p, q, epsilon=0.0, beta=0.05, rng=seed)
        mlp_only = ClassifierHockeyStick(**small, marginal_bins=None).estimate(p, q, epsilon=0.0, beta=0.05, rng=seed)
        for b, m in ((both.forward, mlp_only.forward), (both.reverse, mlp_only.reverse)):
            assert b.region.startswith("product-of-marginals score")
            assert m.region.startswith("classifier score")
            assert b.lower > m.lower + 0.03


def test_dependent_coordinates_keep_the_classifier():
    """Identical marginals, different joint law (x2 = x1 vs x2 = -x1, plus a little noise): no
    product-of-marginals score can tell them apart, so the MLP's region is certified."""
    rng = np.random.default_rng(8)
    z = rng.normal(size=(2, 6000, 1))
    e = 0.3 * rng.normal(size=(2, 6000, 1))
    p = np.hstack([z[0], z[0] + e[0]])
    q = np.hstack([z[1], -z[1] + e[1]])
    ev = ClassifierHockeyStick().estimate(p, q, epsilon=0.5, beta=0.05, rng=3)
    for b in (ev.forward, ev.reverse):
        assert b.region.startswith("classifier score")
        assert b.lower > 0.3


# --------------------------------------------------------------------------- the notebook function's regions
def test_lower_bound_takes_the_testers_region_choice():
    """hockey_stick_lower_bound chooses its regions as ``dpaudit test`` does: exact regions on 1-D
    and discrete outputs (no training), the classifier on continuous vectors, and ``regions``
    forces either."""
    p, q = laplace_samples(20_000, seed=41)
    auto = hockey_stick_lower_bound(p, q, 0.5, beta=0.05, rng=42)
    assert isinstance(auto, HistogramBound) and auto.mode == "binned" and auto.tolerance == "split"
    assert not auto.region.startswith("classifier") and auto.direction == "P||Q"
    assert 0.0 < auto.beta <= 0.05  # the exact regions' share of beta for this direction
    # the bound of HockeyStickTester(regions="exact")'s estimator (the tester's machinery)
    ev = HistogramHockeyStick().estimate(p, q, epsilon=0.5, beta=0.05, rng=42)
    assert auto == ev.forward
    assert hockey_stick_lower_bound(p, q, 0.5, beta=0.05, rng=42, regions="exact") == auto
    # discrete outputs: each value a cell
    bits_p, bits_q = bits_samples(5000, seed=43, d=2)
    assert hockey_stick_lower_bound(bits_p, bits_q, 0.5, rng=44).mode == "discrete"
    # regions="classifier" forces the old path: the classifier's bound at the whole beta
    forced = hockey_stick_lower_bound(p, q, 0.5, beta=0.05, rng=42, regions="classifier", **SMALL)
    assert type(forced) is HockeyStickBound and forced.region.startswith(("classifier score", "product-of-marginals"))
    assert forced == ClassifierHockeyStick(**SMALL).estimate(p, q, epsilon=0.5, beta=0.05, rng=42).forward
    # continuous vectors, the difference spread over both columns: the classifier under "auto"
    rng = np.random.default_rng(45)
    vp, vq = rng.normal(0.0, 1.0, (3000, 2)), rng.normal(0.7, 1.0, (3000, 2))
    vec = hockey_stick_lower_bound(vp, vq, 0.5, rng=46, **SMALL)
    assert type(vec) is HockeyStickBound
    with pytest.raises(NotApplicable):
        hockey_stick_lower_bound(vp, vq, 0.5, rng=46, regions="exact")


@pytest.mark.parametrize("bad", ["Auto", "histogram", "", None, 1])
def test_lower_bound_rejects_unknown_regions(bad):
    p, q = laplace_samples(100, seed=1)
    with pytest.raises(ValueError, match=f"regions must be one of .*got {re.escape(repr(bad))}"):
        hockey_stick_lower_bound(p, q, 0.5, regions=bad)


NOTEBOOK_SEEDS = 50
NOTEBOOK_N = 20_000  # per distribution


def test_lower_bound_default_coverage_on_laplace():
    """The default (exact-region) bound exceeds the true H_{e^eps}(Lap(0,1) || Lap(1,1)) in no more
    than a beta fraction of seeded runs (one-sided binomial test), at the claimed eps and over a
    grid of eps at once."""
    beta, eps = 0.1, 0.5
    exact, exact_grid = laplace_hockey_stick(1.0, eps), laplace_hockey_stick(1.0, GRID)
    above = on_grid = 0
    for seed in range(NOTEBOOK_SEEDS):
        p, q = laplace_samples(NOTEBOOK_N, seed=[seed, 8001])
        b = hockey_stick_lower_bound(p, q, eps, beta=beta, rng=[seed, 8002])
        assert isinstance(b, HistogramBound)
        above += b.lower > exact
        on_grid += bool(np.any(b.delta_lower_bound(GRID) > exact_grid))
    assert_rate_at_most(above, NOTEBOOK_SEEDS, beta)
    assert_rate_at_most(on_grid, NOTEBOOK_SEEDS, beta)


# --------------------------------------------------------------------------- slow: coverage
# beta = 0.2 over 120 runs catches a failure rate of 0.377 (1.89x beta) with probability 0.9, the
# power of beta = 0.1 over 300 runs (0.187, 1.87x), in 40 % of the runs.
COVERAGE_REPS = 120
COVERAGE_N = 2000  # samples per distribution: half train, half test
COVERAGE_BETA = 0.2
COVERAGE_EPS = 0.5
GRID = np.linspace(0.0, 2.0, 41)  # eps' for the simultaneous check; both H's vanish or are tiny at 2
SMALL = dict(hidden_sizes=(16,), epochs=10, batch_size=128, max_steps=100)

def bits_samples(n, seed, d=6, a=0.6, b=0.4):
    """``d`` independent bits, each 1 with probability ``a`` under P and ``b`` under Q (a product
    law: the product-of-marginals scores compete with the MLP)."""
    rng = np.random.default_rng(seed)
    return (rng.random((n, d)) < a).astype(float), (rng.random((n, d)) < b).astype(float)


def bits_hockey_stick(eps, d=6, a=0.6, b=0.4):
    """Exact ``H_{e^eps}`` of :func:`bits_samples` (symmetric), summed over the number of ones."""
    k = np.arange(d + 1)
    p = stats.binom.pmf(k, d, a)
    q = stats.binom.pmf(k, d, b)
    e = np.exp(np.atleast_1d(np.asarray(eps, dtype=float)))
    out = np.maximum(0.0, p[None, :] - e[:, None] * q[None, :]).sum(axis=1)
    return out if np.ndim(eps) else float(out[0])


CASES = {
    # name: (sampler(seed) -> (P, Q), exact H as a function of eps)
    "bits": (lambda seed: bits_samples(COVERAGE_N, seed), bits_hockey_stick),
    "gaussian": (lambda seed: gaussian_samples(COVERAGE_N, 1.0, seed), lambda e: gaussian_hockey_stick(1.0, e)),
    "laplace": (lambda seed: laplace_samples(COVERAGE_N, seed), lambda e: laplace_hockey_stick(1.0, e)),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def coverage_runs(request):
    sampler, exact = CASES[request.param]
    est = ClassifierHockeyStick(**SMALL)
    lower = np.empty((COVERAGE_REPS, 2))
    grid_fail = np.zeros((COVERAGE_REPS, 2), dtype=bool)
    exact_grid = exact(GRID)
    for rep in range(COVERAGE_REPS):
        p, q = sampler([rep, 7001])
        ev = est.estimate(p, q, epsilon=COVERAGE_EPS, beta=COVERAGE_BETA, rng=[rep, 7002])
        for j, b in enumerate((ev.forward, ev.reverse)):
            lower[rep, j] = b.lower
            grid_fail[rep, j] = bool(np.any(b.delta_lower_bound(GRID) > exact_grid))
    return {"name": request.param, "lower": lower, "grid_fail": grid_fail, "exact": float(exact(COVERAGE_EPS))}


@pytest.mark.slow
def test_coverage_at_the_reported_epsilon(coverage_runs):
    lower, exact = coverage_runs["lower"], coverage_runs["exact"]
    for j, direction in enumerate(("P||Q", "Q||P")):
        failures = int(np.sum(lower[:, j] > exact))
        print(f"{coverage_runs['name']} {direction}: {failures}/{COVERAGE_REPS} failures at beta={COVERAGE_BETA}")
        assert_rate_at_most(failures, COVERAGE_REPS, COVERAGE_BETA)


@pytest.mark.slow
def test_coverage_simultaneous_over_epsilon_grid(coverage_runs):
    fails = coverage_runs["grid_fail"]
    for j, direction in enumerate(("P||Q", "Q||P")):
        failures = int(fails[:, j].sum())
        print(f"{coverage_runs['name']} {direction} grid: {failures}/{COVERAGE_REPS} failures at beta={COVERAGE_BETA}")
        assert_rate_at_most(failures, COVERAGE_REPS, COVERAGE_BETA)


@pytest.mark.slow
def test_bound_is_not_absurdly_loose(coverage_runs):
    lower, exact = coverage_runs["lower"], coverage_runs["exact"]
    # At n = 2000 (1000 held out per distribution) Clopper-Pearson alone costs about 0.05; the
    # small classifier loses a little more. Most runs must find real evidence.
    for j in range(2):
        assert np.median(lower[:, j]) >= exact - 0.1
        assert np.mean(lower[:, j] > 0.05) >= 0.9


def test_classifier_trains_on_a_bounded_subset_and_scores_in_chunks(monkeypatch):
    """Large samples: training sees at most max_steps * batch_size rows (a seeded subset), and
    scoring in chunks gives the same scores as scoring at once, so the bounds do not change."""
    import dpaudit.estimators.hockey_stick as hs

    rng = np.random.default_rng(3)
    p, q = rng.normal(0.0, 1.0, (3000, 2)), rng.normal(0.5, 1.0, (3000, 2))
    est = ClassifierHockeyStick(max_steps=20, batch_size=64, hidden_sizes=(8,))  # cap: 1280 < 3000 rows
    seen = []
    real_batches = hs.epoch_batches

    def spy(n, batch_size, gen, device):
        seen.append(n)
        return real_batches(n, batch_size, gen, device)

    monkeypatch.setattr(hs, "epoch_batches", spy)
    a = est.estimate(p, q, epsilon=0.5, beta=0.1, rng=7)
    b = est.estimate(p, q, epsilon=0.5, beta=0.1, rng=7)
    assert seen == [20 * 64, 20 * 64]  # rows trained on: the cap, not the 3000 training rows
    assert (a.forward.lower, a.reverse.lower) == (b.forward.lower, b.reverse.lower)  # seeded subset
    monkeypatch.setattr(hs, "SCORE_CHUNK", 100)  # 15 chunks per scored part instead of one
    c = est.estimate(p, q, epsilon=0.5, beta=0.1, rng=7)
    assert (c.forward.p_count, c.forward.q_count, c.reverse.p_count) == (a.forward.p_count, a.forward.q_count, a.reverse.p_count)
    assert a.forward.lower > 0  # a shift of half a standard deviation is seen from the subset
