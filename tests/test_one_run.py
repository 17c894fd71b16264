"""One-run audits (Steinke et al. 2023; the f-DP test of Mahloujifar et al. 2025) and the
whole-sample Clopper–Pearson audit: exactness of the f-DP test against a linear program, null
scores, bad input, and seeded coverage on mechanisms with known epsilon."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, special, stats

from dpaudit.privacy.profiles import gaussian_epsilon
from dpaudit.scores import clopper_pearson_audit, fdp_rejects, guess_grid, one_run_audit, steinke_p_value
from dpaudit.scores.one_run import approx_dp_inverse_tradeoff, gdp_inverse_tradeoff


# ----------------------------------------------------------------------------- Steinke et al.


def test_steinke_p_value_pure_dp_is_the_binomial_tail():
    for k, v, eps in [(10, 8, 0.5), (100, 90, 1.0), (50, 26, 0.0)]:
        expected = stats.binom.sf(v - 1, k, special.expit(eps))
        assert steinke_p_value(1000, k, v, eps, 0.0) == pytest.approx(expected, rel=1e-12)


def test_steinke_p_value_grows_with_delta_and_falls_with_more_correct():
    p0 = steinke_p_value(1000, 100, 90, 1.0, 0.0)
    p1 = steinke_p_value(1000, 100, 90, 1.0, 1e-4)
    assert p1 > p0
    assert steinke_p_value(1000, 100, 95, 1.0, 1e-4) < p1
    assert steinke_p_value(1000, 100, 90, 2.0, 1e-4) > p1  # a weaker claim is harder to refute


def _steinke_p_value_direct(m, k, v, eps, delta):
    # the definition, every tail evaluated (what steinke_p_value computes with shortcuts)
    p = special.expit(eps)
    tail = float(stats.binom.sf(v - 1, k, p))
    if delta == 0.0 or v == 0:
        return min(1.0, tail)
    i = np.arange(1, v + 1)
    return float(min(1.0, tail + 2.0 * m * delta * float(np.max((stats.binom.sf(v - i - 1, k, p) - tail) / i))))


def test_steinke_p_value_and_bound_are_the_definition_bit_for_bit():
    from dpaudit.scores.one_run import _largest_rejected, steinke_epsilon_lower_bound

    rng = np.random.default_rng(0)
    cases = [(10_000, 10_000, 5_600, 1e-5), (10_000, 1_280, 900, 1e-5), (1_000, 20, 19, 1e-3), (1_000, 300, 0, 1e-5)]
    cases += [(1_000, int(k), int(rng.integers(0, k + 1)), float(10 ** rng.uniform(-8, -2)))
              for k in rng.integers(1, 1_000, 40)]
    for m, k, v, delta in cases:
        for eps in (0.0, 0.05, 0.7, 3.0, 20.0):
            assert steinke_p_value(m, k, v, eps, delta) == _steinke_p_value_direct(m, k, v, eps, delta)
        beta = 0.05 / 3
        assert steinke_epsilon_lower_bound(m, k, v, delta, beta) == _largest_rejected(
            lambda e: _steinke_p_value_direct(m, k, v, e, delta) <= beta)


@pytest.mark.parametrize("args", [(10, 11, 5, 1.0, 0.0), (10, 5, 6, 1.0, 0.0), (10, 5, 3, -1.0, 0.0),
                                  (10, 5, 3, 1.0, 1.5), (10, 5, 3, float("nan"), 0.0)])
def test_steinke_p_value_rejects_bad_arguments(args):
    with pytest.raises(ValueError):
        steinke_p_value(*args)


# ----------------------------------------------------------------------------- the f-DP test


def _lp_largest_tail(m, k, v, eps, delta):
    """Largest P[V >= v] over all laws of V on 0..k obeying R_j <= 1 - f_{eps,delta}(H_{j-1}) for
    j = 1..k (docs/scores.md §9), by linear programming: the exact optimum the level-by-level
    construction of fdp_rejects claims to compute."""
    K = k + 1
    ee = math.exp(eps)
    rows, rhs = [], []
    for j in range(1, k + 1):
        R = np.array([l / m if l >= j else 0.0 for l in range(K)])
        H = np.array([(k - l) / m if l >= j - 1 else 0.0 for l in range(K)])
        rows.append(-H + R / ee)
        rhs.append(delta / ee)  # H >= (R - delta) e^-eps
        rows.append(-H + ee * R)
        rhs.append(ee - 1.0 + delta)  # H >= 1 - delta - e^eps (1 - R)
    c = -np.array([1.0 if l >= v else 0.0 for l in range(K)])
    res = optimize.linprog(c, A_ub=np.array(rows), b_ub=np.array(rhs), A_eq=np.ones((1, K)), b_eq=[1.0],
                           bounds=[(0, None)] * K, method="highs")
    assert res.status == 0
    return -res.fun


def _recursion_threshold(m, k, v, eps, delta):
    f = approx_dp_inverse_tradeoff(eps, delta)
    if not fdp_rejects(f, m, k, v, 1.0):
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(45):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if fdp_rejects(f, m, k, v, mid) else (mid, hi)
    return hi


@pytest.mark.parametrize("m,k", [(20, 10), (40, 20), (40, 40), (60, 15)])
def test_fdp_test_rejects_exactly_above_the_linear_programs_optimum(m, k):
    """The test refutes ``P[V >= v] >= tau`` exactly when ``tau`` exceeds the largest tail any law
    obeying the f-DP inequalities allows: never below it (that would be unsound), and not far
    above (it would be loose)."""
    worst_below = worst_above = 0.0
    for eps in (0.2, 0.7, 1.5, 3.0):
        for delta in (0.0, 1e-3, 0.05):
            for v in range(k // 2 + 1, k + 1, max(1, k // 8)):
                star = _lp_largest_tail(m, k, v, eps, delta)
                rec = _recursion_threshold(m, k, v, eps, delta)
                worst_below = min(worst_below, rec - star)
                worst_above = max(worst_above, rec - star)
    assert worst_below > -1e-7
    assert worst_above < 1e-6


def test_gdp_inverse_tradeoff_inverts_the_gaussian_tradeoff():
    mu = 1.3
    for r in (0.01, 0.3, 0.9):
        h = gdp_inverse_tradeoff(mu)(r)
        # G_mu(h) = Phi(Phi^{-1}(1 - h) - mu) = 1 - r
        assert special.ndtr(special.ndtri(1 - h) - mu) == pytest.approx(1 - r, rel=1e-9)


def test_guess_grid_is_data_independent_and_oriented():
    g = guess_grid(1000)
    assert g == guess_grid(1000)
    assert (10, 0) in g and (0, 10) in g and (5, 5) in g and (1000, 0) in g
    assert all(a >= 0 and b >= 0 for a, b in g)
    assert all(a <= 0 and b <= 0 for a, b in guess_grid(1000, alternative="less"))
    assert len(guess_grid(1000, alternative="two-sided")) == 2 * len(g)
    with pytest.raises(ValueError, match="alternative"):
        guess_grid(10, alternative="up")


# ----------------------------------------------------------------------------- one_run_audit


def _gaussian_run(mu, m, rng, offset_sd=0.0, interference=0.0):
    """Scores ``mu S_i + Z_i`` (+ ``interference * mu * S_{i+1}``: canary i's score also shows its
    neighbour's inclusion; + a run-wide ``N(0, offset_sd^2)`` offset). Per canary this is
    ``mu sqrt(1 + interference^2)``-GDP: its inclusion moves two independent unit Gaussians."""
    mask = rng.random(m) < 0.5
    scores = rng.normal(0.0, 1.0, m) + mu * mask + interference * mu * np.roll(mask, -1) + offset_sd * rng.normal()
    return scores, mask


def test_one_run_audit_is_zero_on_null_scores():
    for seed in range(20):
        rng = np.random.default_rng(seed)
        s, mask = _gaussian_run(0.0, 2000, rng)
        r = one_run_audit(s, mask, delta=1e-5, beta=0.05, alternative="two-sided", rng=seed)
        assert r.epsilon_lower_bound == 0 and r.epsilon_lower_bound_steinke == 0 and r.mu_lower_bound == 0
        assert r.epsilon_of_mu_estimate == 0


def test_one_run_audit_finds_a_leak_and_orders_its_bounds():
    rng = np.random.default_rng(3)
    s, mask = _gaussian_run(3.0, 4000, rng)
    r = one_run_audit(s, mask, delta=1e-5, beta=0.05, rng=1)
    assert 1.0 < r.epsilon_lower_bound < gaussian_epsilon(1e-5, 3.0)
    assert 0.5 < r.mu_lower_bound < 3.0
    assert r.guess.correct <= r.guess.guesses
    assert r.selection == "grid" and r.rules == len(guess_grid(4000))
    d = r.to_dict()
    assert d["method"] == "one-run" and "epsilon_of_mu_estimate" in d and d["guess"]["guesses"] == r.guess.guesses
    # Fixed guesses: no multiplicity paid, level = beta.
    f = one_run_audit(s, mask, delta=1e-5, beta=0.05, selection=(r.guess.k_plus, r.guess.k_minus), rng=1)
    assert f.level == 0.05 and f.epsilon_lower_bound >= r.epsilon_lower_bound
    sp = one_run_audit(s, mask, delta=1e-5, beta=0.05, selection="split", rng=1)
    assert sp.m < 4000 and 0 < sp.epsilon_lower_bound


@pytest.mark.parametrize("kwargs,match", [
    ({"mask": np.ones(5)}, "shape"),
    ({"mask": np.full(10, 2)}, "0/1"),
    ({"selection": "best"}, "selection"),
    ({"selection": (0, 0)}, "selection"),
    ({"alternative": "up"}, "alternative"),
    ({"delta": 1.5}, "delta"),
    ({"beta": 0.0}, "beta"),
])
def test_one_run_audit_rejects_bad_input(kwargs, match):
    args = {"scores": np.arange(10.0), "mask": np.arange(10) % 2, **kwargs}
    with pytest.raises(ValueError, match=match):
        one_run_audit(args.pop("scores"), args.pop("mask"), **args)


def test_one_run_audit_rejects_nonfinite_scores():
    with pytest.raises(ValueError, match="non-finite"):
        one_run_audit([0.0, np.nan, 1.0], [0, 1, 1])


# ----------------------------------------------------------------------------- coverage

# Mechanisms with a known guarantee, as one run's scores for canaries included with prob 1/2.
# Each returns (scores, mask) and its true epsilon at delta.


def _laplace_run(rng, m, eps0=2.0):
    mask = rng.random(m) < 0.5
    return rng.laplace(eps0 * mask, 1.0), mask  # shift eps0, scale 1: eps0-DP


def _rr_run(rng, m, eps0=2.0):
    mask = rng.random(m) < 0.5
    keep = rng.random(m) < special.expit(eps0)
    return np.where(keep, mask, ~mask).astype(float), mask  # randomized response: eps0-DP, all ties


def _laplace_true_epsilon(eps0, delta):
    return eps0 + 2.0 * math.log1p(-delta)  # delta(eps) = 1 - e^{(eps - eps0)/2}


@pytest.mark.slow
@pytest.mark.parametrize("case", ["gaussian", "gaussian-dependent", "laplace", "randomized-response"])
def test_one_run_bounds_cover_the_true_epsilon(case):
    """Over 120 seeded runs of 2,000 canaries at beta = 0.2, no certified one-run bound exceeds the
    truth in more than a beta fraction of runs (the scores of one run are dependent in the
    dependent case: every score carries the same N(0, 4) offset and half its neighbour's signal).
    A bound failing at twice beta (0.4) passes this check with probability < 1e-4."""
    beta, delta, runs, m = 0.2, 1e-3, 120, 2000
    over = {"fdp": 0, "steinke": 0, "mu": 0}
    for seed in range(runs):
        rng = np.random.default_rng([17, seed])
        if case == "gaussian":
            s, mask = _gaussian_run(2.0, m, rng)
            true_eps, true_mu = gaussian_epsilon(delta, 2.0), 2.0
        elif case == "gaussian-dependent":
            s, mask = _gaussian_run(2.0, m, rng, offset_sd=2.0, interference=0.5)
            true_mu = 2.0 * math.sqrt(1.25)
            true_eps = gaussian_epsilon(delta, true_mu)
        elif case == "laplace":
            s, mask = _laplace_run(rng, m)
            true_eps, true_mu = _laplace_true_epsilon(2.0, delta), None
        else:
            s, mask = _rr_run(rng, m)
            true_eps, true_mu = 2.0, None
        r = one_run_audit(s, mask, delta=delta, beta=beta, rng=seed)
        over["fdp"] += r.epsilon_lower_bound > true_eps
        over["steinke"] += r.epsilon_lower_bound_steinke > true_eps
        if true_mu is not None:
            over["mu"] += r.mu_lower_bound > true_mu
    assert max(over.values()) <= beta * runs, over


@pytest.mark.parametrize("case", ["gaussian", "laplace", "randomized-response"])
def test_clopper_pearson_audit_covers_the_true_epsilon(case):
    """Over 300 seeded pairs of samples at beta = 0.2, the whole-sample Clopper–Pearson bound
    exceeds the true epsilon at delta in at most a beta fraction (ties in the randomized-response
    case are all the scores)."""
    beta, delta, reps, n = 0.2, 1e-3, 300, 2000
    over = over_mu = 0
    for seed in range(reps):
        rng = np.random.default_rng([29, seed])
        if case == "gaussian":
            x, y = rng.normal(2.0, 1.0, n), rng.normal(0.0, 1.0, n)
            true_eps = gaussian_epsilon(delta, 2.0)
        elif case == "laplace":
            x, y = rng.laplace(2.0, 1.0, n), rng.laplace(0.0, 1.0, n)
            true_eps = _laplace_true_epsilon(2.0, delta)
        else:
            p = special.expit(2.0)
            x, y = (rng.random(n) < p).astype(float), (rng.random(n) < 1 - p).astype(float)
            true_eps = 2.0
        a = clopper_pearson_audit(x, y, confidence=1 - beta)
        over += a.epsilon_lower_bound(delta) > true_eps
        over_mu += case == "gaussian" and a.mu_lower_bound > 2.0
    assert over <= beta * reps and over_mu <= beta * reps, (over, over_mu)


def test_clopper_pearson_audit_is_zero_on_nulls_and_beats_the_split():
    for seed in range(20):
        rng = np.random.default_rng(seed)
        a = clopper_pearson_audit(rng.normal(size=3000), rng.normal(size=3000))
        assert a.epsilon_lower_bound(1e-5) == 0 and a.mu_lower_bound == 0
    from dpaudit.scores import threshold_audit

    rng = np.random.default_rng(5)
    x, y = rng.normal(2.0, 1.0, 10_000), rng.normal(0.0, 1.0, 10_000)
    whole = clopper_pearson_audit(x, y, alternative="greater").epsilon_lower_bound(1e-6)
    split = threshold_audit(x, y, rng=5).epsilon_lower_bound(1e-6)
    assert whole > split


@pytest.mark.parametrize("kwargs,match", [({"alternative": "up"}, "alternative"), ({"confidence": 1.0}, "confidence"),
                                          ({"grid_ratio": 1.0}, "ratio")])
def test_clopper_pearson_audit_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        clopper_pearson_audit(np.arange(10.0), np.arange(10.0), **kwargs)


def test_tpr_at_fpr_and_auc_intervals_cover_the_truth():
    """Seeded coverage at confidence 0.8 over 300 Gaussian sample pairs: the ROC point at FPR 0.01
    and the AUC of N(1, 1) vs N(0, 1) fall outside their intervals in at most 20 % of them."""
    from dpaudit.scores import auc_interval, tpr_at_fpr

    true_tpr = stats.norm.sf(stats.norm.isf(0.01) - 1.0)
    true_auc = stats.norm.cdf(1.0 / math.sqrt(2.0))
    miss_tpr = miss_auc = 0
    reps = 300
    for seed in range(reps):
        rng = np.random.default_rng([41, seed])
        x, y = rng.normal(1.0, 1.0, 3000), rng.normal(0.0, 1.0, 3000)
        t = tpr_at_fpr(x, y, 0.01, confidence=0.8)
        a = auc_interval(x, y, confidence=0.8)
        miss_tpr += not (t.lower <= true_tpr <= t.upper)
        miss_auc += not (a.lower <= true_auc <= a.upper)
        assert t.lower <= t.estimate <= t.upper or t.lower == 0.0
    assert miss_tpr <= 0.2 * reps and miss_auc <= 0.2 * reps, (miss_tpr, miss_auc)
    # "less": the same on negated scores.
    r = tpr_at_fpr(-x, -y, 0.01, alternative="less")
    assert r.estimate == tpr_at_fpr(x, y, 0.01).estimate
    with pytest.raises(ValueError, match="fpr"):
        tpr_at_fpr(x, y, 1.5)
    with pytest.raises(ValueError, match="alternative"):
        auc_interval(x, y, alternative="two-sided")
