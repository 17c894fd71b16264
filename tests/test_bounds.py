"""Exact binomial confidence bounds (dpaudit.bounds).

Reference values: closed forms of the Clopper–Pearson bounds at k = 0 and k = n, and SciPy's
exact two-sided interval (``scipy.stats.binomtest(...).proportion_ci(method="exact")``), whose ends
at confidence ``1 - 2 beta`` are the one-sided bounds at ``beta`` (Clopper & Pearson 1934: the
two-sided exact interval puts ``alpha / 2`` in each tail).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpaudit.bounds import (
    POISSON_MISS,
    clopper_pearson_lower,
    clopper_pearson_upper,
    hoeffding_lower,
    poisson_rate,
    poisson_ratio_lower,
    poisson_sample_size,
)

from _harness import assert_rate_at_most


@pytest.mark.parametrize("n", [1, 2, 7, 100, 5000])
@pytest.mark.parametrize("beta", [0.001, 0.05, 0.3])
def test_closed_forms_at_the_ends(n, beta):
    # k = 0: Pr[K = 0] = (1 - p)^n = beta  =>  upper = 1 - beta^(1/n); lower is 0 by definition.
    assert clopper_pearson_upper(0, n, beta) == pytest.approx(1.0 - beta ** (1.0 / n), rel=1e-10)
    assert clopper_pearson_lower(0, n, beta) == 0.0
    # k = n: Pr[K = n] = p^n = beta  =>  lower = beta^(1/n); upper is 1 by definition.
    assert clopper_pearson_lower(n, n, beta) == pytest.approx(beta ** (1.0 / n), rel=1e-10)
    assert clopper_pearson_upper(n, n, beta) == 1.0


@pytest.mark.parametrize("n", [1, 10, 37, 1000])
@pytest.mark.parametrize("beta", [0.005, 0.025, 0.1])
def test_matches_scipy_exact_interval(n, beta):
    # The two-sided exact (Clopper–Pearson) interval at level 1 - 2 beta has beta in each tail.
    for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
        ci = stats.binomtest(k, n).proportion_ci(confidence_level=1.0 - 2.0 * beta, method="exact")
        assert clopper_pearson_lower(k, n, beta) == pytest.approx(ci.low, rel=1e-9, abs=1e-12)
        assert clopper_pearson_upper(k, n, beta) == pytest.approx(ci.high, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize(
    "n, p",
    [(1, 0.5), (5, 0.01), (20, 0.3), (50, 0.97), (200, 0.5), (1000, 0.002), (1000, 0.9)],
)
@pytest.mark.parametrize("beta", [0.01, 0.1, 0.4])
def test_exact_coverage(n, p, beta):
    """P_p[lower(K) <= p] and P_p[upper(K) >= p] computed exactly over K ~ Binomial(n, p)."""
    k = np.arange(n + 1)
    pmf = stats.binom.pmf(k, n, p)
    lo = clopper_pearson_lower(k, n, beta)
    hi = clopper_pearson_upper(k, n, beta)
    assert pmf[lo <= p].sum() >= 1.0 - beta - 1e-12
    assert pmf[hi >= p].sum() >= 1.0 - beta - 1e-12
    # And the bounds are not trivially conservative: lower < k/n < upper away from the ends.
    mid = (k > 0) & (k < n)
    assert np.all(lo[mid] < k[mid] / n) and np.all(hi[mid] > k[mid] / n)


def test_lower_and_upper_are_monotone_in_k_and_beta():
    n = 60
    k = np.arange(n + 1)
    lo, hi = clopper_pearson_lower(k, n, 0.05), clopper_pearson_upper(k, n, 0.05)
    assert np.all(np.diff(lo) > 0) and np.all(np.diff(hi) > 0)
    # Smaller beta (more confidence) gives a wider interval.
    assert np.all(clopper_pearson_lower(k, n, 0.01) <= lo)
    assert np.all(clopper_pearson_upper(k, n, 0.01) >= hi)


def test_vectorised_matches_scalar_and_broadcasts():
    k = np.array([0, 3, 10, 10])
    n = np.array([10, 10, 10, 40])
    lo = clopper_pearson_lower(k, n, 0.05)
    hi = clopper_pearson_upper(k, n, 0.05)
    assert isinstance(lo, np.ndarray) and lo.shape == (4,)
    assert isinstance(hi, np.ndarray) and hi.shape == (4,)
    for i in range(4):
        assert lo[i] == clopper_pearson_lower(int(k[i]), int(n[i]), 0.05)
        assert hi[i] == clopper_pearson_upper(int(k[i]), int(n[i]), 0.05)
    # A scalar trials count broadcasts over an array of successes; a 2-D array keeps its shape.
    grid = np.arange(6).reshape(2, 3)
    assert clopper_pearson_lower(grid, 5, 0.1).shape == (2, 3)
    assert clopper_pearson_upper(grid, 5, 0.1).shape == (2, 3)
    # Scalar in, Python float out.
    assert isinstance(clopper_pearson_lower(2, 5, 0.1), float)
    assert isinstance(clopper_pearson_upper(2, 5, 0.1), float)


@pytest.mark.parametrize("func", [clopper_pearson_lower, clopper_pearson_upper])
@pytest.mark.parametrize("beta", [0.0, 1.0, -0.1, 1.5, float("nan")])
def test_rejects_beta_outside_unit_interval(func, beta):
    with pytest.raises(ValueError, match="beta"):
        func(1, 10, beta)


@pytest.mark.parametrize("func", [clopper_pearson_lower, clopper_pearson_upper])
def test_rejects_invalid_counts(func):
    with pytest.raises(ValueError, match="successes"):
        func(11, 10, 0.05)
    with pytest.raises(ValueError, match="successes"):
        func(-1, 10, 0.05)
    with pytest.raises(ValueError, match="trials"):
        func(0, 0, 0.05)
    with pytest.raises(ValueError, match="trials"):
        func(0, -3, 0.05)
    # One bad entry in a vector is enough.
    with pytest.raises(ValueError, match="successes"):
        func(np.array([1, 12]), np.array([10, 10]), 0.05)


def test_hoeffding_lower_formula_and_errors():
    # Paper 000, Prop. 4.11: mean - sqrt(ln(1/beta) / (2n)).
    assert hoeffding_lower(0.7, 200, 0.05) == pytest.approx(0.7 - math.sqrt(math.log(20.0) / 400.0))
    assert hoeffding_lower(0.7, 200, 0.05, value_range=2.0) == pytest.approx(
        0.7 - 2.0 * math.sqrt(math.log(20.0) / 400.0)
    )
    with pytest.raises(ValueError, match="n must be positive"):
        hoeffding_lower(0.5, 0, 0.05)
    with pytest.raises(ValueError, match="beta"):
        hoeffding_lower(0.5, 10, 1.0)


# --------------------------------------------------------------------------- the ratio test
@pytest.mark.parametrize("n", [1, 10, 1000, 250_000, 10_000_000])
def test_poisson_rate_is_the_largest_with_the_miss_probability(n):
    lam = poisson_rate(n)
    assert 0.0 < lam <= n
    assert stats.poisson.sf(n, lam) <= POISSON_MISS * (1 + 1e-6)
    assert stats.poisson.sf(n, lam * (1 + 1e-6) + 1e-9) > POISSON_MISS * (1 - 1e-4)  # largest such rate
    if n >= 1000:  # n - O(sqrt(n)) rows: about 3.7 standard deviations at miss = 1e-4
        assert n - 4.5 * math.sqrt(n) < lam < n - 3.0 * math.sqrt(n)


def test_poisson_sample_size_draws_from_the_rate():
    rng = np.random.default_rng(0)
    draws = [poisson_sample_size(5000, rng) for _ in range(4000)]
    lam = draws[0][1]
    sizes = np.array([d[0] for d in draws])
    assert all(d[1] == lam for d in draws) and np.all(sizes <= 5000)
    assert abs(sizes.mean() - lam) < 4 * math.sqrt(lam / len(sizes))


@pytest.mark.parametrize("rho", [0.2, 1.0, 1.105, 3.0])
@pytest.mark.parametrize("rates", [(1000.0, 1000.0), (900.0, 1300.0)])
@pytest.mark.parametrize("beta", [0.01, 0.1, 0.4])
def test_ratio_bound_has_exact_conditional_coverage(rho, rates, beta):
    """Given x + y = k, P[bound > p/q] <= beta, computed exactly over x ~ Binomial(k, pi)."""
    lam_x, lam_y = rates
    pi = lam_x * rho / (lam_x * rho + lam_y)
    for k in (1, 2, 5, 40, 300):
        x = np.arange(k + 1)
        lo = poisson_ratio_lower(x, lam_x, k - x, lam_y, beta)
        miss = stats.binom.pmf(x, k, pi)[lo > rho].sum()
        assert miss <= beta + 1e-12
        assert np.all(np.diff(lo) > 0)  # increasing in x at fixed k: not trivially conservative
        assert lo[0] == 0.0


@pytest.mark.parametrize("p, q", [(0.01, 0.009), (0.3, 0.27), (0.002, 0.002), (0.05, 0.02)])
def test_ratio_bound_covers_binomial_rows_with_poissonised_sizes(p, q):
    """The whole procedure as the estimators run it: n i.i.d. rows per sample, the first
    N ~ Poisson(poisson_rate(n)) of them counted; the bound exceeds P(S)/Q(S) at most beta of the time."""
    rng = np.random.default_rng(11)
    n, beta, trials, fails = 4000, 0.1, 3000, 0
    for _ in range(trials):
        a, b = rng.random(n) < p, rng.random(n) < q
        (big_a, lam_a), (big_b, lam_b) = poisson_sample_size(n, rng), poisson_sample_size(n, rng)
        if big_a <= n and big_b <= n:
            fails += poisson_ratio_lower(a[:big_a].sum(), lam_a, b[:big_b].sum(), lam_b, beta) > p / q
    assert_rate_at_most(fails, trials, beta, what="ratio bounds above P(S)/Q(S)")


def test_ratio_bound_is_tighter_than_two_mass_bounds_on_small_regions():
    """ln(p/q) = 0.1 on a region of mass 1e-3, 10M rows: one test at beta beats two CP bounds at beta/2."""
    n, beta = 10_000_000, 0.1
    x, y = 1e-3 * n, 1e-3 * n * math.exp(-0.1)
    lam = poisson_rate(n)
    two = math.log(clopper_pearson_lower(x, n, beta / 2) / clopper_pearson_upper(y, n, beta / 2))
    one = math.log(poisson_ratio_lower(x * lam / n, lam, y * lam / n, lam, beta))
    assert one > two + 0.005 and one < 0.1


def test_ratio_bound_rejects_invalid_input():
    with pytest.raises(ValueError, match="counts"):
        poisson_ratio_lower(-1, 10.0, 3, 10.0, 0.1)
    with pytest.raises(ValueError, match="rates"):
        poisson_ratio_lower(1, 0.0, 3, 10.0, 0.1)
    with pytest.raises(ValueError, match="beta"):
        poisson_ratio_lower(1, 1.0, 3, 10.0, 1.5)
    with pytest.raises(ValueError, match="n must"):
        poisson_rate(-3)


def test_clopper_pearson_takes_one_level_per_bound():
    """An array of levels broadcasts with the counts and equals the scalar calls entry by entry
    (the whole-sample audit gives every row its own level); a bad entry is named."""
    import numpy as np
    import pytest

    from dpaudit.bounds import clopper_pearson_lower, clopper_pearson_upper

    k, n, b = np.array([0, 3, 10, 50]), 50, np.array([0.01, 0.2, 0.05, 0.3])
    lo, hi = clopper_pearson_lower(k, n, b), clopper_pearson_upper(k, n, b)
    for i in range(k.size):
        assert lo[i] == clopper_pearson_lower(int(k[i]), n, float(b[i]))
        assert hi[i] == clopper_pearson_upper(int(k[i]), n, float(b[i]))
    with pytest.raises(ValueError, match="beta must hold"):
        clopper_pearson_lower(k, n, np.array([0.1, 0.0, 0.1, 0.1]))
    with pytest.raises(ValueError, match="beta"):
        clopper_pearson_upper(k, n, 1.5)
