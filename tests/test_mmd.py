"""MMD lower bounds (dpaudit.estimators.mmd) and the MMD tester (dpaudit.testers.mmd).

Reference values
----------------
* Gaussian pairs: for ``Z ~ N(m, v)``, ``E exp(-b Z^2) = (1 + 2 b v)^(-1/2) exp(-b m^2 / (1 + 2 b v))``
  and ``E exp(-c |Z|) = e^{c^2 v / 2} [e^{-c m} Phi((m - c v)/sqrt v) + e^{c m} Phi((-m - c v)/sqrt v)]``
  (completing the square). With ``X - X' ~ N(0, 2 s_P^2)``, ``X - Y ~ N(mu_P - mu_Q, s_P^2 + s_Q^2)``
  and product kernels over independent coordinates this gives ``MMD^2 = E k(X,X') + E k(Y,Y') -
  2 E k(X,Y)`` in closed form (checked here against numerical integration).
* Randomized response at eps (outputs 0/1 with probabilities ``e^eps/(1+e^eps)`` and
  ``1/(1+e^eps)``) is exactly eps-DP and its total variation is exactly ``tanh(eps/2)``, the
  largest pure eps-DP allows: the sharpest false-positive check of ``MMD^2 <= 2 TV^2``.
* Gaussian mechanism N(0, s^2) vs N(1, s^2): TV = ``2 Phi(1/(2s)) - 1``; it is
  ``(alpha, alpha/(2 s^2))``-RDP for every alpha (Mironov 2017, Prop. 7).

The promise under test: ``mmd2_lower <= MMD^2`` (for the kernel the bound names) with probability
``>= 1 - beta``; coverage is checked over many seeded repetitions with a one-sided binomial test
(marked slow), and the same test is shown to reject a broken bound.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpaudit.bounds import empirical_bernstein_lower
from dpaudit.privacy.claims import ApproxDP, PureDP, RenyiDP
from dpaudit.errors import InvalidClaimError
from dpaudit.estimators.mmd import KernelMMD, MMDBound, mmd_lower_bound, pairwise_kernel
from dpaudit.mechanisms.zoo import get as zoo_get
from dpaudit.testers import CombinedTester, TestOutcome, make_tester
from dpaudit.testers.mmd import MMDTester, mmd_threshold, renyi_epsilon_from_tv, tv_cap

from _harness import assert_rate_above, assert_rate_at_most


# --------------------------------------------------------------------------- closed forms
def _rbf_expectation(m, v, b):
    """E exp(-b Z^2), Z ~ N(m, v) (v may be 0)."""
    return (1.0 + 2.0 * b * v) ** -0.5 * np.exp(-b * m * m / (1.0 + 2.0 * b * v))


def _laplacian_expectation(m, v, c):
    """E exp(-c |Z|), Z ~ N(m, v), v > 0, evaluated in log space."""
    s = math.sqrt(v)
    a = c * c * v / 2.0 - c * m + stats.norm.logcdf((m - c * v) / s)
    b = c * c * v / 2.0 + c * m + stats.norm.logcdf((-m - c * v) / s)
    return math.exp(a) + math.exp(b)


def gaussian_mmd2(mu_p, s_p, mu_q, s_q, kernel, bandwidth, scale=None):
    """MMD^2 between N(mu_p, diag s_p^2) and N(mu_q, diag s_q^2) for the product kernel
    ``exp(-bandwidth * sum_j ((x_j - y_j)/scale_j)^2)`` (rbf) or ``... sum_j |x_j - y_j|/scale_j``."""
    mu_p, s_p, mu_q, s_q = (np.atleast_1d(np.asarray(a, dtype=float)) for a in (mu_p, s_p, mu_q, s_q))
    d = max(len(mu_p), len(mu_q))
    scale = np.ones(d) if scale is None or len(scale) == 0 else np.asarray(scale, dtype=float)
    exx = eyy = exy = 1.0
    for j in range(d):
        mp, sp, mq, sq = (a[j] if len(a) > 1 else a[0] for a in (mu_p, s_p, mu_q, s_q))
        if kernel == "rbf":
            bj = bandwidth / scale[j] ** 2
            f = lambda m, v: _rbf_expectation(m, v, bj)  # noqa: E731
        else:
            cj = bandwidth / scale[j]
            f = lambda m, v: _laplacian_expectation(m, v, cj)  # noqa: E731
        exx *= f(0.0, 2 * sp * sp)
        eyy *= f(0.0, 2 * sq * sq)
        exy *= f(mp - mq, sp * sp + sq * sq)
    return float(exx + eyy - 2.0 * exy)


def test_closed_forms_match_numerical_integration():
    for m, v in ((0.0, 0.5), (0.7, 2.0), (-1.3, 0.2)):
        dens = lambda z: stats.norm.pdf(z, m, math.sqrt(v))  # noqa: E731
        for b in (0.1, 1.0, 5.0):
            num = integrate.quad(lambda z: math.exp(-b * z * z) * dens(z), -np.inf, np.inf)[0]
            assert _rbf_expectation(m, v, b) == pytest.approx(num, rel=1e-8)
            f = lambda z: math.exp(-b * abs(z)) * dens(z)  # noqa: E731
            num = integrate.quad(f, -np.inf, 0.0)[0] + integrate.quad(f, 0.0, np.inf)[0]
            assert _laplacian_expectation(m, v, b) == pytest.approx(num, rel=1e-7)
    # Identical distributions have MMD 0; MMD^2 <= 2 (kernel in (0, 1]).
    assert gaussian_mmd2(0, 1, 0, 1, "rbf", 1.0) == pytest.approx(0.0, abs=1e-15)
    assert 0 < gaussian_mmd2(0, 1, 50, 1, "laplacian", 1.0) <= 2.0


# --------------------------------------------------------------------------- bounds.py
def test_empirical_bernstein_constants():
    # Maurer & Pontil (2009), Thm 4, for [0, 1]: mean - sqrt(2 V ln(2/b)/n) - 7 ln(2/b)/(3(n-1)).
    m, v, n, beta = 0.3, 0.05, 1000, 0.1
    log = math.log(2 / beta)
    assert empirical_bernstein_lower(m, v, n, beta) == pytest.approx(
        m - math.sqrt(2 * v * log / n) - 7 * log / (3 * (n - 1)), rel=1e-14
    )
    # Range [-2, 2]: rescaling Z = (h + 2)/4 gives the 28/3 of paper 000 (proof of Thm 4.15).
    assert empirical_bernstein_lower(m, v, n, beta, value_range=4.0) == pytest.approx(
        m - math.sqrt(2 * v * log / n) - 28 * log / (3 * (n - 1)), rel=1e-14
    )
    # Equivariance: the bound for a + R Z equals a + R * (bound for Z).
    a, r = -2.0, 4.0
    z_bound = empirical_bernstein_lower(m, v, n, beta)
    assert empirical_bernstein_lower(a + r * m, r * r * v, n, beta, value_range=r) == pytest.approx(a + r * z_bound)
    np.testing.assert_allclose(
        empirical_bernstein_lower(np.array([m, m]), np.array([v, 0.0]), np.array([n, n]), beta),
        [z_bound, m - 7 * log / (3 * (n - 1))],
    )


@pytest.mark.parametrize(
    "args, shown",
    [((0.1, 0.1, 1, 0.1), "n must be >= 2"), ((0.1, -0.1, 10, 0.1), "variance"), ((0.1, 0.1, 10, 1.5), "beta"),
     ((0.1, 0.1, 10, 0.1, 0.0), "value_range")],
)
def test_empirical_bernstein_validation(args, shown):
    with pytest.raises(ValueError, match=shown):
        empirical_bernstein_lower(*args)


@pytest.mark.slow
def test_empirical_bernstein_coverage_on_skewed_variables():
    """Direct coverage of the bound on Bernoulli(0.05) (small variance, where the range term
    matters); the sample mean used as a 'bound' must fail the same test."""
    reps, n, beta, p = 4000, 60, 0.1, 0.05
    rng = np.random.default_rng(5)
    z = (rng.random((reps, n)) < p).astype(float)
    mean, var = z.mean(axis=1), z.var(axis=1, ddof=1)
    lo = empirical_bernstein_lower(mean, var, n, beta)
    fails = int(np.sum(lo > p))
    assert_rate_at_most(fails, reps, beta)
    broken = mean
    broken_fails = int(np.sum(broken > p))
    assert_rate_above(broken_fails, reps, beta, level=1e-6)


# --------------------------------------------------------------------------- MMD vs TV vs (eps, delta)
def test_mmd_is_at_most_sqrt2_tv_and_tight():
    """For distributions on a finite set with a kernel in [0, 1]: MMD^2 = (p-q)' K (p-q) <= 2 TV^2,
    approached when the kernel separates the points; tighter than paper 000 Thm 4.13."""
    rng = np.random.default_rng(3)
    pts = rng.normal(size=(6, 2))
    sq = ((pts[:, None, :] - pts[None, :, :]) ** 2).sum(-1)
    for _ in range(200):
        p, q = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
        b = rng.choice([0.01, 0.3, 3.0, 100.0])
        d = p - q
        mmd2 = d @ np.exp(-b * sq) @ d
        tv = 0.5 * np.abs(d).sum()
        assert mmd2 <= 2 * tv * tv + 1e-12
    # Randomized response at eps: TV = tanh(eps/2), MMD^2 = 2 TV^2 (1 - e^{-b}) -> 2 TV^2.
    for eps in (0.01, 0.5, 1.0, 3.0):
        pr = math.exp(eps) / (1 + math.exp(eps))
        tv = 2 * pr - 1
        assert tv == pytest.approx(math.tanh(eps / 2))
        for b in (1.0, 10.0, 50.0):
            d = np.array([pr - (1 - pr), (1 - pr) - pr])
            mmd2 = d @ np.array([[1, math.exp(-b)], [math.exp(-b), 1]]) @ d
            assert mmd2 == pytest.approx(2 * tv * tv * (1 - math.exp(-b)))
            assert math.sqrt(mmd2) <= mmd_threshold(PureDP(eps)) + 1e-15
        # The threshold is attained in the limit: nothing smaller would be sound.
        assert mmd_threshold(PureDP(eps)) == pytest.approx(math.sqrt(2) * tv)
    # Paper 000 Thm 4.13 bound e^eps - 1 + (1 + e^-eps) delta is never smaller.
    for eps in (0.0, 0.01, 0.3, 1.0, 5.0):
        for delta in (0.0, 1e-5, 0.01, 0.2):
            paper = math.expm1(eps) + (1 + math.exp(-eps)) * delta
            assert mmd_threshold(ApproxDP(eps, delta)) <= paper + 1e-15


def test_tv_cap_of_each_claim():
    for eps in (0.0, 0.01, 1.0, 4.0):
        assert tv_cap(PureDP(eps)) == pytest.approx(math.tanh(eps / 2), abs=1e-15)
        for delta in (1e-5, 0.01, 0.3):
            want = (math.exp(eps) - 1 + 2 * delta) / (math.exp(eps) + 1)
            assert tv_cap(ApproxDP(eps, delta)) == pytest.approx(want)
            # The same value is the claim's privacy profile at eps' = 0 (H_1 = TV).
            assert tv_cap(ApproxDP(eps, delta)) == pytest.approx(float(ApproxDP(eps, delta).delta_profile(0.0)))
    # Renyi claims: sound on the Gaussian mechanism, which is (alpha, alpha/(2 s^2))-RDP.
    for s in (0.5, 1.0, 3.0, 20.0):
        tv = 2 * stats.norm.cdf(1 / (2 * s)) - 1
        for alpha in (1.1, 1.5, 2.0, 5.0, 32.0):
            cap = tv_cap(RenyiDP(alpha, alpha / (2 * s * s)))
            assert tv <= cap
            assert cap <= math.sqrt(alpha / (4 * s * s)) + 1e-15  # Pinsker part
    # Monotone in eps, and the inverse used for epsilon lower bounds.
    caps = [tv_cap(RenyiDP(2.0, e)) for e in (0.001, 0.01, 0.1, 1.0, 3.0)]
    assert caps == sorted(caps)
    for e in (0.01, 0.3, 2.0):
        t = tv_cap(RenyiDP(2.0, e))
        assert renyi_epsilon_from_tv(t, 2.0) == pytest.approx(e, rel=1e-6)
    assert renyi_epsilon_from_tv(0.0, 2.0) == 0.0
    assert renyi_epsilon_from_tv(1.0, 2.0) == math.inf
    for t in (1e-3, 0.2, 0.9, 0.999):  # the safe side: the returned epsilon is rejected
        assert tv_cap(RenyiDP(3.0, renyi_epsilon_from_tv(t, 3.0))) < t


def _bound_with(mmd2_lower):
    return MMDBound(
        divergence="mmd", direction="both", estimate=0.0, lower=math.sqrt(max(mmd2_lower, 0)), beta=0.05,
        mmd2_estimate=mmd2_lower, mmd2_lower=mmd2_lower, variance=0.0, n_blocks=10, block_size=2,
        variance_penalty=0.0, range_penalty=0.0, kernel="rbf", bandwidth=1.0,
    )


def test_delta_and_epsilon_inversions():
    # A bound exactly at randomized response's TV: rejects every eps below eps0 and no more.
    for eps0 in (0.01, 0.5, 2.0):
        t = math.tanh(eps0 / 2)
        b = _bound_with(2 * t * t)
        assert b.tv_lower_bound() == pytest.approx(t)
        assert b.epsilon_lower_bound(0.0) == pytest.approx(eps0, rel=1e-9)
        assert b.delta_lower_bound(eps0) == pytest.approx(0.0, abs=1e-12)
    b = _bound_with(0.08)  # TV >= 0.2
    for delta in (0.0, 0.05, 0.15):
        eps = b.epsilon_lower_bound(delta)
        assert eps > 0
        # At that eps the delta lower bound is exactly the given delta (the two inversions agree).
        assert b.delta_lower_bound(eps) == pytest.approx(delta, abs=1e-12)
    assert b.epsilon_lower_bound(0.2) == 0.0  # t <= delta
    np.testing.assert_allclose(b.delta_lower_bound(np.array([0.0, 0.1])), [0.2, 0.5 * (0.2 * (math.exp(0.1) + 1) - math.expm1(0.1))])
    assert b.delta_lower_bound(800.0) == 0.0
    assert _bound_with(2.0).epsilon_lower_bound(0.0) == math.inf
    assert _bound_with(-0.3).tv_lower_bound() == 0.0
    with pytest.raises(ValueError, match="delta"):
        b.epsilon_lower_bound(1.0)
    with pytest.raises(ValueError, match="epsilon"):
        b.delta_lower_bound(-1.0)


# --------------------------------------------------------------------------- estimator
def test_block_statistic_is_unbiased():
    """The mean block statistic matches the closed-form MMD^2 within 5 standard errors, for each
    block size and both statistics (a wrong normalisation shifts it by many)."""
    rng = np.random.default_rng(21)
    n = 120_000
    p = rng.normal(0.0, 1.0, (n, 2))
    q = rng.normal([0.4, 0.0], [1.0, 1.5], (n, 2))
    for kernel, bw in (("rbf", 0.3), ("laplacian", 0.8)):
        exact = gaussian_mmd2([0, 0], [1, 1], [0.4, 0.0], [1.0, 1.5], kernel, bw)
        for block, statistic in ((2, "symmetric"), (4, "symmetric"), (8, "symmetric"), (2, "paper")):
            est = KernelMMD(kernels=(kernel,), bandwidth=bw, block_sizes=(block,), statistic=statistic)
            b = est.estimate(p, q, beta=0.05, rng=22)
            se = math.sqrt(b.variance / b.n_blocks)
            assert abs(b.mmd2_estimate - exact) < 5 * se, (kernel, block, statistic, b.mmd2_estimate, exact)
            assert b.n_blocks == n // block and b.n_select == 0 and b.feature_scale == ()
            assert b.mmd2_lower < b.mmd2_estimate


def test_symmetric_statistic_has_smaller_variance_than_papers():
    rng = np.random.default_rng(4)
    p, q = rng.normal(0, 1, (40_000, 1)), rng.normal(0.5, 1, (40_000, 1))
    sym = KernelMMD(kernels="rbf", bandwidth=0.5, block_sizes=(2,)).estimate(p, q, beta=0.05, rng=0)
    pap = KernelMMD(kernels="rbf", bandwidth=0.5, block_sizes=(2,), statistic="paper").estimate(p, q, beta=0.05, rng=0)
    assert sym.variance < pap.variance


def test_bound_fields_and_kernel():
    rng = np.random.default_rng(8)
    p, q = rng.normal(0, 2, (30_000, 3)), rng.normal(0, 2, (30_000, 3)) + [1.0, 0, 0]
    b = mmd_lower_bound(p, q, beta=0.05, rng=9)
    assert b.divergence == "mmd" and b.direction == "both"
    assert b.kernel in ("rbf", "laplacian") and b.block_size in (2, 4, 8)
    assert len(b.feature_scale) == 3 and all(s > 0 for s in b.feature_scale)
    assert b.n_select == 6000  # select_fraction 0.2
    assert b.n_blocks == (30_000 - 6000) // b.block_size
    log = math.log(2 / 0.05)
    assert b.range_penalty == pytest.approx(28 * log / (3 * (b.n_blocks - 1)))
    assert b.variance_penalty == pytest.approx(math.sqrt(2 * b.variance * log / b.n_blocks))
    assert b.mmd2_lower == pytest.approx(b.mmd2_estimate - b.variance_penalty - b.range_penalty)
    assert b.lower == pytest.approx(math.sqrt(max(b.mmd2_lower, 0)))
    assert b.estimate == pytest.approx(math.copysign(math.sqrt(abs(b.mmd2_estimate)), b.mmd2_estimate))
    # The bound is below the exact MMD^2 of the kernel it names (one seeded run).
    exact = gaussian_mmd2([0, 0, 0], [2, 2, 2], [1, 0, 0], [2, 2, 2], b.kernel, b.bandwidth, b.feature_scale)
    assert 0 < b.mmd2_lower <= exact
    # kernel_values applies the same kernel on raw outputs.
    k = b.kernel_values(p[:5], q[:5])
    z = (p[:5] - q[:5]) / np.array(b.feature_scale)
    want = np.exp(-b.bandwidth * ((z**2).sum(1) if b.kernel == "rbf" else np.abs(z).sum(1)))
    np.testing.assert_allclose(k, want)


def test_chunking_and_seed_do_not_change_the_result():
    rng = np.random.default_rng(2)
    p, q = rng.laplace(0, 1, (5000, 2)), rng.laplace(0.2, 1, (5000, 2))
    a = KernelMMD().estimate(p, q, beta=0.1, rng=5)
    b = KernelMMD(chunk_size=7).estimate(p, q, beta=0.1, rng=5)
    assert a.mmd2_estimate == pytest.approx(b.mmd2_estimate, rel=1e-12)
    assert (a.kernel, a.bandwidth, a.block_size) == (b.kernel, b.bandwidth, b.block_size)
    assert KernelMMD().estimate(p, q, beta=0.1, rng=5) == a


def test_pairwise_kernel():
    a = np.array([[0.0, 0.0], [1.0, 1.0]])
    b = np.array([[1.0, 0.0], [1.0, 3.0]])
    np.testing.assert_allclose(pairwise_kernel(a, b, "rbf", 0.5), np.exp([-0.5, -2.0]))
    np.testing.assert_allclose(pairwise_kernel(a, b, "laplacian", 0.5, scale=[1.0, 2.0]), np.exp([-0.5, -0.5]))
    with pytest.raises(ValueError, match="kernel"):
        pairwise_kernel(a, b, "cosine", 1.0)
    with pytest.raises(ValueError, match="bandwidth"):
        pairwise_kernel(a, b, "rbf", 0.0)
    with pytest.raises(ValueError, match="same shape"):
        pairwise_kernel(a, b[:1], "rbf", 1.0)


@pytest.mark.parametrize(
    "kwargs, shown",
    [
        (dict(kernels=("rbf", "cosine")), "kernel"),
        (dict(kernels=()), "at least one"),
        (dict(bandwidth=-1.0, kernels="rbf", block_sizes=2), "bandwidth"),
        (dict(bandwidth=1.0), "exactly one kernel"),
        (dict(block_sizes=(1, 2)), "block_sizes"),
        (dict(statistic="paper"), "block_sizes=\\(2,\\)"),
        (dict(statistic="biased"), "statistic"),
        (dict(select_fraction=1.0), "select_fraction"),
        (dict(length_factors=(1.0, -2.0)), "length_factors"),
        (dict(chunk_size=0), "chunk_size"),
        (dict(max_select=3), "max_select"),
    ],
)
def test_estimator_validation(kwargs, shown):
    with pytest.raises(ValueError, match=shown):
        KernelMMD(**kwargs)


@pytest.mark.parametrize(
    "p, q, shown",
    [
        (np.full((100, 1), np.nan), np.zeros((100, 1)), "NaN"),
        (np.zeros((100, 2)), np.zeros((100, 1)), "output dimensions"),
        (np.zeros((100, 2, 2)), np.zeros((100, 1)), "shape"),
        (np.zeros((10, 1)), np.zeros((10, 1)), "needs at least"),
    ],
)
def test_estimate_rejects_bad_samples(p, q, shown):
    with pytest.raises(ValueError, match=shown):
        KernelMMD().estimate(p, q, beta=0.05, rng=0)


def test_estimate_rejects_bad_beta():
    x = np.zeros((200, 1))
    for beta in (0.0, 1.0, True, "0.1"):
        with pytest.raises(ValueError, match="beta"):
            KernelMMD().estimate(x, x, beta=beta)


# --------------------------------------------------------------------------- tester
def _rr(eps, n, seed):
    """Randomized response at eps: P outputs 1 w.p. e^eps/(1+e^eps), Q w.p. 1/(1+e^eps)."""
    rng = np.random.default_rng(seed)
    pr = math.exp(eps) / (1 + math.exp(eps))
    return (rng.random((n, 1)) < pr).astype(float), (rng.random((n, 1)) < 1 - pr).astype(float)


def test_detects_non_private_mean():
    """non-dp-laplace-1 of paper 000 at its witness pair: Lap(1, 200) vs Lap(0.5, 100) at eps = 0.01."""
    entry = zoo_get("non-dp-laplace-1")
    mech = entry.mechanism(0.01)
    rng = np.random.default_rng(31)
    d0, d1 = entry.witness_pairs[0]
    p, q = mech.sample(np.array(d0), 20_000, rng), mech.sample(np.array(d1), 20_000, rng)
    out = MMDTester().test(p, q, PureDP(0.01), beta=0.01, rng=32)
    assert out.violation and out.status == "violation" and not out.inconclusive
    assert out.margin > 0 and out.margin == pytest.approx(out.bounds[0].lower - out.threshold)
    assert out.threshold == pytest.approx(mmd_threshold(PureDP(0.01)))
    assert out.delta_lower_bound > 0 and out.claimed_delta == 0.0
    assert out.epsilon_lower_bound > 0.01
    assert len(out.bounds) == 1 and out.bounds[0].direction == "both" and out.bounds[0].beta == 0.01
    assert out.objective > 0


def test_randomized_response_at_its_guarantee_is_not_flagged():
    """The tightest case for MMD^2 <= 2 TV^2: TV equals what eps-DP allows."""
    for seed in range(3):
        p, q = _rr(1.0, 50_000, seed)
        out = MMDTester().test(p, q, PureDP(1.0), beta=0.05, rng=seed)
        assert not out.violation
        # ... but the evidence is strong: the bound reaches a good part of the threshold.
        assert out.bounds[0].lower > 0.8 * out.threshold
        # A claim well below the truth is rejected by the same samples.
        assert MMDTester().test(p, q, PureDP(0.7), beta=0.05, rng=seed).violation


def test_renyi_and_approx_claims():
    rng = np.random.default_rng(40)
    p, q = rng.normal(0, 1, (20_000, 1)), rng.normal(1.5, 1, (20_000, 1))
    t = MMDTester()
    for claim in (RenyiDP(2.0, 0.1), ApproxDP(0.1, 1e-5), PureDP(0.1)):
        assert t.supports(claim)
        out = t.test(p, q, claim, beta=0.05, rng=41)
        assert out.violation
        assert out.epsilon_lower_bound > claim.epsilon
    # The exact Renyi guarantee of this pair (alpha * 1.5^2 / 2) is not rejected.
    out = t.test(p, q, RenyiDP(2.0, 2.25), beta=0.05, rng=41)
    assert not out.inconclusive
    assert not out.violation
    assert 0 < out.epsilon_lower_bound < 2.25


def test_inconclusive_when_the_range_term_alone_is_too_large():
    t = MMDTester()
    claim = PureDP(1.0)
    beta = 0.05
    out = t.test(np.zeros((30, 1)), np.ones((30, 1)), claim, beta=beta, rng=0)
    assert out.inconclusive and not out.violation and out.status == "inconclusive"
    assert out.margin == -math.inf and out.bounds[0].lower == -math.inf
    n_needed = int(out.note.split("n >= ")[1].split()[0])
    assert out.note == f"inconclusive: needs n >= {n_needed} samples per dataset"
    # N is the smallest size at which the bound can exceed the threshold at all: there,
    # completely separated samples (h = 2 everywhere) give a violation; one fewer is inconclusive.
    tau = 2 * math.tanh(0.5) ** 2
    est = t.estimator
    nb = est.n_blocks(n_needed, n_needed)
    assert est.range_penalty(nb, beta) < 2 - tau <= est.range_penalty(est.n_blocks(n_needed - 1, n_needed - 1), beta)
    ok = t.test(np.zeros((n_needed, 1)), np.full((n_needed, 1), 1e6), claim, beta=beta, rng=0)
    assert not ok.inconclusive and ok.violation
    short = t.test(np.zeros((n_needed - 1, 1)), np.full((n_needed - 1, 1), 1e6), claim, beta=beta, rng=0)
    assert short.inconclusive and not short.violation
    # Too few samples for even two blocks: still an outcome, not an error.
    tiny = t.test(np.zeros((3, 1)), np.ones((3, 1)), claim, beta=beta)
    assert tiny.inconclusive and tiny.bounds[0].n_blocks == 0


def test_unsupported_claims_and_bad_input():
    t = MMDTester()
    assert not t.supports(PureDP(80.0))  # allows TV = 1: nothing to test
    with pytest.raises(InvalidClaimError):
        t.test(np.zeros((100, 1)), np.zeros((100, 1)), PureDP(80.0), beta=0.05)
    with pytest.raises(ValueError, match="beta"):
        t.test(np.zeros((100, 1)), np.zeros((100, 1)), PureDP(1.0), beta=1.5)
    with pytest.raises(ValueError, match="NaN"):
        t.test(np.full((100, 1), np.inf), np.zeros((100, 1)), PureDP(1.0), beta=0.05)
    with pytest.raises(ValueError, match="not both"):
        MMDTester(KernelMMD(), select_fraction=0.5)


def test_outcome_json_round_trip():
    rng = np.random.default_rng(50)
    p, q = rng.normal(0, 1, (5000, 2)), rng.normal(0.5, 1, (5000, 2))
    for claim in (PureDP(0.1), ApproxDP(1.0, 1e-3), RenyiDP(3.0, 0.5)):
        o = MMDTester().test(p, q, claim, beta=0.05, rng=51)
        back = TestOutcome.from_dict(json.loads(json.dumps(o.to_dict())))
        assert back == o
        assert isinstance(back.bounds[0], MMDBound)
    o = MMDTester().test(p[:20], q[:20], PureDP(0.1), beta=0.05)  # inconclusive: -inf survives
    assert TestOutcome.from_dict(json.loads(json.dumps(o.to_dict()))) == o


def test_registry_and_combined_tester():
    t = make_tester("mmd")
    assert isinstance(t, MMDTester) and t.config()["tester"] == "mmd"
    rng = np.random.default_rng(60)
    p, q = rng.normal(0, 1, (4000, 1)), rng.normal(4.0, 1, (4000, 1))
    out = CombinedTester([MMDTester(), MMDTester(block_sizes=(2,))]).test(p, q, PureDP(0.5), beta=0.1, rng=1)
    assert out.violation and [part.beta for part in out.parts] == [0.05, 0.05]


def test_sorted_input_is_shuffled():
    """Samples of one distribution handed over sorted must not look different from each other."""
    rng = np.random.default_rng(70)
    x = np.sort(rng.normal(size=(20_000, 1)), axis=0)
    y = np.sort(rng.normal(size=(20_000, 1)), axis=0)
    out = MMDTester().test(x, y, PureDP(0.01), beta=0.05, rng=71)
    assert not out.violation


# --------------------------------------------------------------------------- slow: coverage, FPR
COVERAGE_REPS = 300
COVERAGE_BETA = 0.2

COVERAGE_CASES = {
    # name: (mu_p, s_p, mu_q, s_q, n): Gaussian pairs with closed-form MMD for any chosen kernel,
    # far enough apart that the bound is positive (informative) in most runs
    "gauss-1d-shift": (0.0, 1.0, 1.0, 1.0, 3000),
    "gauss-2d-shift-scale": ([0.0, 0.0], [1.0, 1.0], [1.0, 0.0], [1.3, 1.0], 3000),
}


@pytest.fixture(scope="module", params=sorted(COVERAGE_CASES))
def coverage_runs(request):
    mu_p, s_p, mu_q, s_q, n = COVERAGE_CASES[request.param]
    d = len(np.atleast_1d(mu_p))
    est = KernelMMD()
    rows = []
    for rep in range(COVERAGE_REPS):
        rng = np.random.default_rng([rep, 9001])
        p = rng.normal(mu_p, s_p, (n, d))
        q = rng.normal(mu_q, s_q, (n, d))
        b = est.estimate(p, q, beta=COVERAGE_BETA, rng=[rep, 9002])
        exact = gaussian_mmd2(mu_p, s_p, mu_q, s_q, b.kernel, b.bandwidth, b.feature_scale)
        rows.append((b.mmd2_lower, b.mmd2_estimate, exact))
    return request.param, np.array(rows)


@pytest.mark.slow
def test_mmd_bound_coverage(coverage_runs):
    name, rows = coverage_runs
    lower, exact = rows[:, 0], rows[:, 2]
    failures = int(np.sum(lower > exact))
    print(f"{name}: {failures}/{COVERAGE_REPS} failures at beta={COVERAGE_BETA}; "
          f"median lower/exact {np.median(lower / exact):.2f}, lower > 0 in {np.mean(lower > 0):.0%}")
    assert_rate_at_most(failures, COVERAGE_REPS, COVERAGE_BETA)
    assert np.mean(lower > 0) > 0.5  # the runs are informative, not vacuous


@pytest.mark.slow
def test_coverage_test_rejects_a_broken_bound(coverage_runs):
    """The point estimate used as a 'bound' fails about half the time: the test must see it."""
    name, rows = coverage_runs
    failures = int(np.sum(rows[:, 1] > rows[:, 2]))
    assert_rate_above(failures, COVERAGE_REPS, COVERAGE_BETA, level=1e-6)


@pytest.mark.slow
def test_false_positive_rate_at_exact_guarantees():
    """Mechanisms exactly at their claim: randomized response (pure eps, TV attains the cap) and
    the Gaussian mechanism with its exact (alpha, alpha/(2 s^2))-RDP guarantee."""
    beta, reps = 0.2, 150
    t = MMDTester()
    fails = 0
    for rep in range(reps):
        p, q = _rr(0.5, 4000, [rep, 1])
        fails += t.test(p, q, PureDP(0.5), beta=beta, rng=[rep, 2]).violation
    print(f"randomized response: {fails}/{reps} false positives at beta={beta}")
    assert_rate_at_most(fails, reps, beta, what="false positives")
    fails = 0
    for rep in range(reps):
        rng = np.random.default_rng([rep, 3])
        p, q = rng.normal(0, 0.5, (4000, 1)), rng.normal(1, 0.5, (4000, 1))
        fails += t.test(p, q, RenyiDP(2.0, 2.0 / (2 * 0.25)), beta=beta, rng=[rep, 4]).violation
    print(f"gaussian mechanism, exact RDP: {fails}/{reps} false positives at beta={beta}")
    assert_rate_at_most(fails, reps, beta, what="false positives")


def test_samples_needed_is_the_smallest_size():
    for est in (KernelMMD(), KernelMMD(select_fraction=0.9, max_select=100)):
        for nb in (2, 3, 17, 1000):
            n = est.samples_needed(nb)
            assert est.n_blocks(n, n) >= nb > est.n_blocks(n - 1, n - 1)
