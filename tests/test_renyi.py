"""The Rényi tester (dpaudit.testers.renyi) and its estimator (dpaudit.estimators.renyi).

Reference values (derivations in ``docs/renyi.md``; each closed form is checked here by numerical
integration of its definition ``R_alpha(P||Q) = ln(int p^alpha q^(1-alpha)) / (alpha - 1)``):
* Gaussians with equal variance: ``R_alpha(N(0, s^2) || N(mu, s^2)) = alpha mu^2 / (2 s^2)``
  (Mironov 2017, Prop. 7);
* Laplace with equal scale, ``t = shift / b``:
  ``R_alpha = ln(alpha/(2 alpha - 1) e^{(alpha-1)t} + (alpha-1)/(2 alpha - 1) e^{-alpha t}) / (alpha - 1)``
  (Mironov 2017, Prop. 6);
* randomized response at eps: ``[ln cosh((alpha - 1/2) eps) - ln cosh(eps/2)] / (alpha - 1)``,
  the largest R_alpha of any eps-DP pair (``docs/renyi.md`` §4).

The promises under test:
1. each bound holds with probability >= 1 - beta: checked sharply on oracle test functions
   (clipped log-likelihood ratios, whose ``R^h`` is computed by integration) over many seeds
   with a one-sided binomial test — including a check that a broken bound fails that test —
   and end to end on trained functions (slow);
2. a mechanism exactly at its claim is accused with probability <= beta (slow);
3. clear violations are found, also with 10-dimensional outputs;
4. too few samples give "inconclusive: needs n >= N", never NaN or a silent pass.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpaudit.privacy.claims import ApproxDP, PureDP, RenyiDP
from dpaudit.errors import InvalidClaimError
from dpaudit.estimators.base import bound_from_dict
from dpaudit.estimators.renyi import (
    RenyiBound,
    VariationalRenyi,
    best_case_lower,
    needed_test_samples,
    renyi_bound_from_values,
    renyi_lower_bound,
)
from dpaudit.testers import TestOutcome, make_tester
from dpaudit.testers.base import NotApplicable
from dpaudit.testers.renyi import (
    RenyiTester,
    pure_dp_epsilon_from_renyi,
    pure_dp_renyi_bound,
    renyi_threshold,
)

from _harness import assert_rate_above, assert_rate_at_most

FAST = dict(hidden_sizes=(16, 16), epochs=20, batch_size=512, max_steps=200)


# --------------------------------------------------------------------------- reference values
def renyi_numeric(logp, logq, alpha, lo, hi, num=400_001):
    """``R_alpha(P||Q)`` by the trapezoidal rule on ``[lo, hi]`` (log-space, no overflow)."""
    x = np.linspace(lo, hi, num)
    v = alpha * logp(x) + (1.0 - alpha) * logq(x)
    m = v.max()
    return (m + math.log(np.trapezoid(np.exp(v - m), x))) / (alpha - 1.0)


def gaussian_renyi(mu, alpha, s=1.0):
    return alpha * mu**2 / (2.0 * s**2)


def laplace_renyi(t, alpha):
    a = alpha
    return math.log(a / (2 * a - 1) * math.exp((a - 1) * t) + (a - 1) / (2 * a - 1) * math.exp(-a * t)) / (a - 1)


def rr_renyi_direct(eps, alpha):
    """R_alpha of randomized response from the definition (two outcomes)."""
    p = np.array([math.exp(eps), 1.0]) / (1.0 + math.exp(eps))
    q = p[::-1]
    return math.log(np.sum(p**alpha * q ** (1.0 - alpha))) / (alpha - 1.0)


def test_closed_forms_match_numerical_integration():
    for mu, a in ((0.5, 1.5), (1.0, 2.0), (2.0, 3.0)):
        num = renyi_numeric(lambda x: stats.norm.logpdf(x), lambda x: stats.norm.logpdf(x, mu), a, -30, 30 + mu)
        assert num == pytest.approx(gaussian_renyi(mu, a), rel=1e-6)
    for t, a in ((0.5, 1.5), (1.0, 2.0), (1.0, 8.0)):
        num = renyi_numeric(
            lambda x: stats.laplace.logpdf(x), lambda x: stats.laplace.logpdf(x, t), a, -40, 40 + t, num=400_001
        )
        assert num == pytest.approx(laplace_renyi(t, a), rel=1e-5)


# --------------------------------------------------------------------------- pure-DP threshold
@pytest.mark.parametrize("alpha", [1.01, 1.5, 2.0, 8.0, 32.0])
def test_pure_dp_bound_is_randomized_response_and_below_known_bounds(alpha):
    eps = np.array([1e-4, 0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 20.0])
    got = pure_dp_renyi_bound(eps, alpha)
    direct = np.array([rr_renyi_direct(e, alpha) for e in eps])
    np.testing.assert_allclose(got, direct, rtol=1e-6, atol=1e-14)
    # Bun & Steinke 2016, Prop. 3.3 (alpha eps^2 / 2) and the trivial R_alpha <= D_inf <= eps;
    # also below Mironov's min(eps, 2 alpha eps^2), the threshold of paper 000 Alg. 2.
    assert np.all(got <= np.minimum(eps, alpha * eps**2 / 2) * (1 + 1e-9))
    assert np.all(got <= np.minimum(eps, 2 * alpha * eps**2))
    # small eps: alpha eps^2 / 2 to leading order
    assert pure_dp_renyi_bound(1e-4, alpha) == pytest.approx(alpha * 1e-8 / 2, rel=1e-3)
    assert np.all(np.diff(got) > 0)


def test_pure_dp_bound_dominates_eps_dp_pairs():
    """Any eps-DP pair has R_alpha at most the bound: Laplace mechanisms and random finite pairs."""
    rng = np.random.default_rng(5)
    for eps in (0.1, 1.0, 3.0):
        for a in (1.5, 4.0, 16.0):
            tau = pure_dp_renyi_bound(eps, a)
            assert laplace_renyi(eps, a) <= tau  # Lap(0, 1/eps) vs Lap(1, 1/eps) is exactly eps-DP
            for _ in range(200):
                # random pair on 5 outcomes with likelihood ratio in [e^-eps, e^eps]
                q = rng.dirichlet(np.ones(5))
                ratio = np.exp(rng.uniform(-eps, eps, 5))
                lam = np.linspace(0, 1, 2001)[:, None]  # rescale ratios to make p sum to one
                lo_r = np.minimum(ratio, 1.0)
                hi_r = np.maximum(ratio, 1.0)
                cand = lo_r + lam * (hi_r - lo_r)
                sums = cand @ q
                j = int(np.argmin(np.abs(sums - 1.0)))
                p = cand[j] * q / sums[j]
                if np.any(p / q > math.exp(eps)) or np.any(q / p > math.exp(eps)):
                    continue
                r = math.log(np.sum(p**a * q ** (1 - a))) / (a - 1)
                assert r <= tau + 1e-12


def test_pure_dp_epsilon_inverse():
    for a in (1.5, 8.0):
        for eps in (0.0, 0.01, 0.7, 3.0):
            v = pure_dp_renyi_bound(eps, a)
            assert pure_dp_epsilon_from_renyi(a, v) == pytest.approx(eps, abs=1e-9)
    assert pure_dp_epsilon_from_renyi(2.0, -1.0) == 0.0
    assert pure_dp_epsilon_from_renyi(2.0, -math.inf) == 0.0
    # brentq's root is moved to the safe side: the returned epsilon is still rejected.
    for a in (1.01, 2.0, 1000.0):
        for v in np.geomspace(1e-9, 1e3, 13):
            assert pure_dp_renyi_bound(pure_dp_epsilon_from_renyi(a, v), a) < v
    with pytest.raises(ValueError, match="epsilon"):
        pure_dp_renyi_bound(-0.1, 2.0)
    with pytest.raises(ValueError, match="alpha"):
        pure_dp_renyi_bound(0.1, 1.0)


def test_thresholds_of_claims():
    assert renyi_threshold(RenyiDP(2.0, 0.3), 2.0) == 0.3
    assert renyi_threshold(RenyiDP(2.0, 0.3), 1.5) == 0.3  # R_1.5 <= R_2 <= 0.3
    with pytest.raises(ValueError, match="alpha <= 2"):
        renyi_threshold(RenyiDP(2.0, 0.3), 3.0)
    assert renyi_threshold(PureDP(1.0), 1.5) == pytest.approx(rr_renyi_direct(1.0, 1.5))
    with pytest.raises(ValueError, match="cannot test"):
        renyi_threshold(ApproxDP(1.0, 1e-5), 2.0)


# --------------------------------------------------------------------------- oracle coverage
MU = 1.0


def _oracle_values(n, seed, lo, hi):
    """Clipped log-likelihood ratio of N(0,1) vs N(MU,1) on fresh samples (a fixed h)."""
    rng = np.random.default_rng(seed)
    x, y = rng.normal(0.0, 1.0, n), rng.normal(MU, 1.0, n)
    h = lambda z: np.clip(MU**2 / 2 - MU * z, lo, hi)  # noqa: E731
    return h(x), h(y)


def _exact_rh(alpha, lo, hi):
    """R^h_alpha(P||Q) for h = clip(ln p/q, lo, hi), by quadrature (the quantity the bound covers)."""
    h = lambda z: np.clip(MU**2 / 2 - MU * z, lo, hi)  # noqa: E731
    e1 = integrate.quad(lambda z: stats.norm.pdf(z) * np.exp((alpha - 1) * h(z)), -np.inf, np.inf, limit=200)[0]
    e2 = integrate.quad(lambda z: stats.norm.pdf(z, MU) * np.exp(alpha * h(z)), -np.inf, np.inf, limit=200)[0]
    return alpha / (alpha - 1) * math.log(e1) - math.log(e2)


OR_REPS, OR_N, OR_BETA = 400, 3000, 0.2


@pytest.mark.parametrize("concentration", ["bernstein", "chernoff"])
def test_oracle_bound_covers_rh(concentration):
    """The bound on R^h (not only on R_alpha) fails with probability <= beta. With a fixed h the
    plug-in estimate is centred on R^h, so this check is sharp: it rejects a bound whose penalty
    is too small (next test)."""
    alpha, lo, hi = 2.0, -1.0, 1.0
    exact = _exact_rh(alpha, lo, hi)
    assert exact < gaussian_renyi(MU, alpha)  # clipping loses a little
    lower = np.empty(OR_REPS)
    for rep in range(OR_REPS):
        hp, hq = _oracle_values(OR_N, [rep, 31], lo, hi)
        b = renyi_bound_from_values(hp, hq, alpha, lo, hi, beta=OR_BETA, concentration=concentration)
        lower[rep] = b.lower
        assert b.lower < b.estimate and b.beta == OR_BETA and not b.vacuous
    failures = int(np.sum(lower > exact))
    assert_rate_at_most(failures, OR_REPS, OR_BETA)
    # ... and the bound is informative: Bernstein within 0.25 nats, Chernoff (worst-case
    # constants) looser but positive on average at this size.
    if concentration == "bernstein":
        assert np.median(lower) > exact - 0.25
    else:
        assert np.median(lower) > 0.0


def test_coverage_check_rejects_a_broken_bound():
    """The same check fails for the plug-in estimate (no finite-sample penalty) and for a
    Bernstein bound computed as if there were 100x more samples."""
    alpha, lo, hi = 2.0, -1.0, 1.0
    exact = _exact_rh(alpha, lo, hi)
    plug, narrow = [], []
    for rep in range(120):
        hp, hq = _oracle_values(1000, [rep, 37], lo, hi)
        b = renyi_bound_from_values(hp, hq, alpha, lo, hi, beta=OR_BETA)
        plug.append(b.estimate > exact)
        b100 = renyi_bound_from_values(np.tile(hp, 100), np.tile(hq, 100), alpha, lo, hi, beta=OR_BETA)
        narrow.append(b100.lower > exact)
    assert_rate_above(sum(plug), 120, OR_BETA, what="plug-in failures")
    assert_rate_above(sum(narrow), 120, OR_BETA, what="narrow-bound failures")


def test_bound_fields_and_formula():
    hp, hq = _oracle_values(5000, 3, -1.0, 1.5)
    a, beta = 1.5, 0.1
    b = renyi_bound_from_values(hp, hq, a, -1.0, 1.5, beta=beta, direction="Q||P", n_train=77)
    assert isinstance(b, RenyiBound) and b.divergence == "renyi" and b.direction == "Q||P"
    assert b.width == 2.5 and b.function_bound == 1.25 and b.n_train == 77
    assert b.n_test_p == b.n_test_q == 5000
    u = np.exp((a - 1) * (hp - 1.5))
    v = np.exp(a * (hq - 1.5))
    assert b.mean_p == pytest.approx(u.mean()) and b.mean_q == pytest.approx(v.mean())
    # Maurer & Pontil Thm 4 at beta/2 for each mean, ranges 1 - e^{-(a-1)W} and 1 - e^{-aW}
    L = math.log(2 / (beta / 2))
    u_lo = u.mean() - math.sqrt(2 * u.var(ddof=1) * L / 5000) - 7 * (1 - math.exp(-(a - 1) * 2.5)) * L / (3 * 4999)
    v_hi = v.mean() + math.sqrt(2 * v.var(ddof=1) * L / 5000) + 7 * (1 - math.exp(-a * 2.5)) * L / (3 * 4999)
    assert b.mean_p_lower == pytest.approx(u_lo, rel=1e-12)
    assert b.mean_q_upper == pytest.approx(v_hi, rel=1e-12)
    assert b.lower == pytest.approx(a / (a - 1) * math.log(u_lo) - math.log(v_hi), rel=1e-12)
    assert b.estimate == pytest.approx(a / (a - 1) * math.log(u.mean()) - math.log(v.mean()), rel=1e-12)
    # adding a constant to h changes nothing (R^h is shift invariant)
    b2 = renyi_bound_from_values(hp + 3.0, hq + 3.0, a, 2.0, 4.5, beta=beta, direction="Q||P", n_train=77)
    assert b2.lower == pytest.approx(b.lower, rel=1e-9) and b2.estimate == pytest.approx(b.estimate, rel=1e-9)
    assert bound_from_dict(json.loads(json.dumps(b.to_dict()))) == b


def test_values_input_validation():
    hp, hq = np.zeros(10), np.zeros(10)
    with pytest.raises(ValueError, match="alpha"):
        renyi_bound_from_values(hp, hq, 1.0, -1, 1, beta=0.1)
    with pytest.raises(ValueError, match="beta"):
        renyi_bound_from_values(hp, hq, 2.0, -1, 1, beta=1.5)
    with pytest.raises(ValueError, match="lo < hi"):
        renyi_bound_from_values(hp, hq, 2.0, 1, 1, beta=0.1)
    with pytest.raises(ValueError, match="h_p needs at least 2"):
        renyi_bound_from_values(hp[:1], hq, 2.0, -1, 1, beta=0.1)
    with pytest.raises(ValueError, match="NaN"):
        renyi_bound_from_values(np.array([0.0, np.nan]), hq, 2.0, -1, 1, beta=0.1)
    with pytest.raises(ValueError, match="concentration"):
        renyi_bound_from_values(hp, hq, 2.0, -1, 1, beta=0.1, concentration="hoeffding")
    with pytest.raises(ValueError, match="float64"):
        renyi_bound_from_values(hp, hq, 100.0, -2, 2, beta=0.1)
    with pytest.raises(ValueError, match="max_width"):
        renyi_bound_from_values(hp, hq, 2.0, -1, 1, beta=0.1, max_width=1.0)


# --------------------------------------------------------------------------- vacuity / needed n
def test_needed_samples_is_where_the_best_case_stops_being_vacuous():
    a, tau, beta, w = 1.5, 0.5, 0.025, 8.0
    n = needed_test_samples(a, tau, beta, w)
    widths = np.linspace(w / 64, w, 64)
    assert np.max(best_case_lower(a, widths, n, n, beta)) > tau
    assert np.max(best_case_lower(a, widths, n - 1, n - 1, beta)) <= tau
    # Chernoff (paper constants) needs far more; a threshold above alpha * W is unreachable.
    assert needed_test_samples(a, tau, beta, w, "chernoff") > n
    assert needed_test_samples(a, a * w + 0.1, beta, w) is None
    # The best case bounds every data set: the bound with real data is never above it.
    hp, hq = _oracle_values(200, 9, -2.0, 2.0)
    b = renyi_bound_from_values(hp, hq, 2.0, -2.0, 2.0, beta=0.05)
    assert b.lower <= best_case_lower(2.0, 4.0, 200, 200, 0.05)


def test_tester_inconclusive_with_too_few_samples():
    rng = np.random.default_rng(0)
    p, q = rng.normal(0, 1, (20, 1)), rng.normal(5, 1, (20, 1))  # a huge divergence, too few samples
    claim, beta = RenyiDP(1.5, 0.5), 0.05
    out = RenyiTester(VariationalRenyi(**FAST)).test(p, q, claim, beta=beta, rng=1)
    assert out.status == "inconclusive" and out.inconclusive and not out.violation
    assert out.margin == -math.inf and all(b.lower == -math.inf and b.vacuous for b in out.bounds)
    n_test = needed_test_samples(1.5, 0.5, beta / 2, 8.0)
    n_total = VariationalRenyi().samples_for_test_size(n_test)
    assert 2 * n_test - 1 <= n_total <= 2 * n_test  # half of the samples are held out
    assert out.note == f"inconclusive: needs n >= {n_total} samples per dataset"
    assert not any(math.isnan(x) for x in (out.margin, out.objective))
    # with that many samples the test can speak (and here it finds the violation)
    p, q = rng.normal(0, 1, (n_total, 1)), rng.normal(5, 1, (n_total, 1))
    out2 = RenyiTester(VariationalRenyi(**FAST)).test(p, q, claim, beta=beta, rng=2)
    assert not out2.inconclusive and not any(b.vacuous for b in out2.bounds)
    # JSON keeps -inf and the note
    back = TestOutcome.from_dict(json.loads(json.dumps(out.to_dict())))
    assert back == out and back.status == "inconclusive"


# --------------------------------------------------------------------------- tester verdicts
def test_detects_clear_rdp_violation_and_round_trips():
    rng = np.random.default_rng(11)
    p, q = rng.normal(0, 1, (10_000, 1)), rng.normal(2.0, 1, (10_000, 1))  # R_1.5 = 3
    out = RenyiTester(VariationalRenyi(**FAST)).test(p, q, RenyiDP(1.5, 0.5), beta=0.05, rng=12)
    assert out.violation and out.status == "violation" and out.tester == "renyi"
    assert [b.direction for b in out.bounds] == ["P||Q", "Q||P"]
    assert all(b.beta == 0.025 for b in out.bounds)
    s = out.strongest_bound
    assert out.threshold == 0.5 and out.margin == pytest.approx(s.lower - 0.5)
    assert 0.5 < s.lower <= gaussian_renyi(2.0, s.alpha)
    assert out.epsilon_lower_bound == pytest.approx(max(b.lower for b in out.bounds))
    assert out.objective == pytest.approx(max(b.estimate - 0.5 for b in out.bounds))
    back = TestOutcome.from_dict(json.loads(json.dumps(out.to_dict())))
    assert back == out and isinstance(back.bounds[0], RenyiBound)


def test_detects_scale_mismatch_against_pure_dp():
    """NonDPLaplace1 of paper 000 at its witness pair: Lap(1, 2/eps) vs Lap(1/2, 1/eps)."""
    eps = 1.0
    rng = np.random.default_rng(21)
    p = 1.0 + rng.laplace(0, 2 / eps, (20_000, 1))
    q = 0.5 + rng.laplace(0, 1 / eps, (20_000, 1))
    out = RenyiTester(VariationalRenyi(**FAST)).test(p, q, PureDP(eps), beta=0.05, rng=22)
    assert out.violation
    s = out.strongest_bound
    assert out.threshold == pytest.approx(pure_dp_renyi_bound(eps, s.alpha))
    assert out.epsilon_lower_bound > eps
    assert out.epsilon_lower_bound == pytest.approx(
        max(pure_dp_epsilon_from_renyi(b.alpha, b.lower) for b in out.bounds)
    )


def test_detects_violation_in_ten_dimensions():
    """DP-SGD-like output: a 10-D Gaussian whose mean moves by 2 (spread over all coordinates)."""
    rng = np.random.default_rng(31)
    d, shift = 10, 2.0
    p = rng.normal(0, 1, (20_000, d))
    q = rng.normal(0, 1, (20_000, d)) + shift / math.sqrt(d)
    claim = RenyiDP(2.0, 1.0)  # true R_2 = 4
    out = RenyiTester(VariationalRenyi(**FAST)).test(p, q, claim, beta=0.05, rng=32)
    assert out.violation
    assert max(b.lower for b in out.bounds) <= gaussian_renyi(shift, 2.0)


def test_no_violation_on_identical_distributions():
    rng = np.random.default_rng(41)
    p, q = rng.laplace(size=(10_000, 2)), rng.laplace(size=(10_000, 2))
    for claim in (PureDP(0.0), RenyiDP(2.0, 0.0)):
        out = RenyiTester(VariationalRenyi(**FAST)).test(p, q, claim, beta=0.05, rng=42)
        assert not out.violation and not out.inconclusive and out.margin <= 0
        assert out.epsilon_lower_bound == 0.0


def test_chebyshev_function_class_on_1d_and_not_applicable_above():
    rng = np.random.default_rng(51)
    p, q = rng.normal(0, 1, (10_000, 1)), rng.normal(2.0, 1, (10_000, 1))
    est = VariationalRenyi(function_class="chebyshev", degree=8, epochs=20, max_steps=200)
    out = RenyiTester(est).test(p, q, RenyiDP(1.5, 0.5), beta=0.05, rng=52)
    assert out.violation and out.strongest_bound.function_class == "chebyshev"
    with pytest.raises(NotApplicable, match="1-D"):
        RenyiTester(est).test(np.zeros((100, 2)), np.zeros((100, 2)), RenyiDP(1.5, 0.5), beta=0.05)
    with pytest.raises(ValueError, match="1-D"):
        est.estimate(np.zeros((100, 2)), np.zeros((100, 2)), alphas=2.0, beta=0.05)


def test_claims_supported_and_validation():
    t = make_tester("renyi")
    assert isinstance(t, RenyiTester) and t.name == "renyi"
    assert t.supports(PureDP(1.0)) and t.supports(RenyiDP(2.0, 1.0))
    assert not t.supports(ApproxDP(1.0, 1e-5))
    with pytest.raises(InvalidClaimError):
        t.test(np.zeros((100, 1)), np.zeros((100, 1)), ApproxDP(1.0, 1e-5), beta=0.05)
    good = np.zeros((100, 1))
    with pytest.raises(ValueError, match="beta"):
        t.test(good, good, PureDP(1.0), beta=0.0)
    with pytest.raises(ValueError, match="NaN"):
        t.test(np.full((100, 1), np.nan), good, PureDP(1.0), beta=0.05)
    with pytest.raises(ValueError, match="output dimensions"):
        t.test(np.zeros((100, 2)), good, PureDP(1.0), beta=0.05)
    with pytest.raises(ValueError, match="at least 8"):
        t.test(good[:5], good[:5], PureDP(1.0), beta=0.05)
    with pytest.raises(ValueError, match="pure_alphas"):
        RenyiTester(pure_alphas=(1.0,))
    with pytest.raises(ValueError, match="function_class"):
        VariationalRenyi(function_class="rbf")
    with pytest.raises(ValueError, match="train_fraction"):
        VariationalRenyi(train_fraction=1.0)
    with pytest.raises(ValueError, match="thresholds"):
        VariationalRenyi().estimate(good, good, alphas=[2.0, 3.0], thresholds=[0.1], beta=0.05)
    cfg = t.config()
    assert cfg["tester"] == "renyi" and cfg["function_class"] == "mlp"


def test_notebook_function():
    rng = np.random.default_rng(61)
    p, q = rng.normal(0, 1, (4000, 1)), rng.normal(1.0, 1, (4000, 1))
    b = renyi_lower_bound(p, q, 2.0, beta=0.05, rng=62, **FAST)
    assert b.direction == "P||Q" and b.alpha == 2.0 and b.lower <= gaussian_renyi(1.0, 2.0)
    assert b.lower > 0.2  # R_2 = 1: 2000 held-out samples see most of it


# --------------------------------------------------------------------------- slow: end to end
E2E_REPS = 60


@pytest.mark.slow
@pytest.mark.parametrize("case", ["gaussian", "laplace"])
def test_trained_bound_covers_true_divergence(case):
    """Fitted function, window and order chosen on the training half: the held-out bound is below
    the true R_alpha in both directions at least 1 - beta of the time."""
    beta, alpha = 0.2, 2.0
    if case == "gaussian":
        exact = gaussian_renyi(1.0, alpha)
        sample = lambda rng: (rng.normal(0, 1, (4000, 1)), rng.normal(1.0, 1, (4000, 1)))  # noqa: E731
    else:
        exact = laplace_renyi(1.0, alpha)
        sample = lambda rng: (rng.laplace(0, 1, (4000, 1)), rng.laplace(1.0, 1, (4000, 1)))  # noqa: E731
    est = VariationalRenyi(**FAST)
    fails, lowers = np.zeros(2, int), []
    for rep in range(E2E_REPS):
        p, q = sample(np.random.default_rng([rep, 71]))
        ev = est.estimate(p, q, alphas=alpha, beta=beta, rng=[rep, 72])
        for j, b in enumerate(ev.bounds):
            fails[j] += b.lower > exact
            lowers.append(b.lower)
    for f in fails:
        assert_rate_at_most(f, E2E_REPS, beta)
    assert np.median(lowers) > 0.3 * exact  # and not trivially low


FPR_REPS = 40


@pytest.mark.slow
@pytest.mark.parametrize("case", ["randomized-response", "gaussian-rdp", "laplace-pure"])
def test_false_positive_rate_at_exact_guarantee(case):
    """Mechanisms exactly at their claim: randomized response (whose R_alpha equals the pure-DP
    threshold at every alpha), the Gaussian mechanism at its exact RDP (Mironov 2017, Prop. 7)
    and the Laplace mechanism at its exact epsilon."""
    beta, n = 0.2, 6000
    tester = RenyiTester(VariationalRenyi(**FAST))
    flagged = 0
    for rep in range(FPR_REPS):
        rng = np.random.default_rng([rep, 81])
        if case == "randomized-response":
            eps = 1.0
            pr = math.exp(eps) / (1 + math.exp(eps))
            p = (rng.random((n, 1)) < pr).astype(float)
            q = (rng.random((n, 1)) < 1 - pr).astype(float)
            claim = PureDP(eps)
        elif case == "gaussian-rdp":
            p, q = rng.normal(0, 1, (n, 1)), rng.normal(1.0, 1, (n, 1))
            claim = RenyiDP(2.0, gaussian_renyi(1.0, 2.0))
        else:
            p, q = rng.laplace(0, 1, (n, 1)), rng.laplace(1.0, 1, (n, 1))
            claim = PureDP(1.0)
        flagged += tester.test(p, q, claim, beta=beta, rng=[rep, 82]).violation
    assert_rate_at_most(flagged, FPR_REPS, beta, what="flagged")


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, eps, claim",
    [
        ("non-dp-laplace-1", 0.01, None),
        ("non-dp-laplace-1", 1.0, None),
        ("non-dp-laplace-2", 0.01, None),
        ("non-dp-gaussian-1", 0.01, 1.5),
        ("non-dp-gaussian-1", 1.0, 1.5),
    ],
)
def test_detects_zoo_mean_bugs_at_50k(name, eps, claim):
    """Paper 000 Table 1, Rényi column (and more: eps = 1 for the scale-mismatch bugs)."""
    from dpaudit.mechanisms import zoo

    entry = zoo.get(name)
    mech = entry.mechanism(eps)
    d0, d1 = entry.witness_pairs[0]
    rng = np.random.default_rng(91)
    p, q = mech.sample(np.array(d0), 50_000, rng), mech.sample(np.array(d1), 50_000, rng)
    c = PureDP(eps) if claim is None else RenyiDP(claim, eps)
    out = RenyiTester().test(p, q, c, beta=0.05, rng=92)
    assert out.violation, out.to_dict()


def test_fit_is_seeded_and_leaves_torch_global_state_alone():
    import torch

    rng = np.random.default_rng(0)
    p, q = rng.normal(size=(64, 1)), rng.normal(0.5, 1.0, size=(64, 1))
    est = VariationalRenyi(max_steps=5, hidden_sizes=(4,))
    state = torch.random.get_rng_state()
    g1, g2 = est.fit_function(p, q, 2.0, seed=3), est.fit_function(p, q, 2.0, seed=3)
    assert torch.equal(state, torch.random.get_rng_state())
    assert np.array_equal(g1(p), g2(p))
    assert not np.array_equal(g1(p), est.fit_function(p, q, 2.0, seed=4)(p))


def test_fit_trains_on_a_bounded_subset_and_scores_in_chunks(monkeypatch):
    """Large training parts: the MLP's features are built for at most max_steps * batch_size rows
    of each sample (a seeded subset: what its mini-batches could touch), and g scores in chunks
    with the same values as at once (to float32 rounding), so memory stays bounded at 10M+ rows."""
    import dpaudit.estimators.renyi as rn

    rng = np.random.default_rng(1)
    p, q = rng.normal(size=(3000, 2)), rng.normal(0.5, 1.0, size=(3000, 2))
    est = VariationalRenyi(max_steps=10, batch_size=64, hidden_sizes=(4,))  # cap: 640 < 3000 rows
    rows = []
    real = est._features

    def spy(x, center, scale):
        rows.append(len(x))
        return real(x, center, scale)

    monkeypatch.setattr(est, "_features", spy)
    g = est.fit_function(p, q, 2.0, seed=3)
    assert rows == [640, 640]  # the training features: the cap, not the 3000 rows
    g2 = est.fit_function(p, q, 2.0, seed=3)
    whole = g(p)
    assert np.array_equal(whole, g2(p))  # seeded subset
    monkeypatch.setattr(rn, "SCORE_CHUNK", 100)  # 30 chunks instead of one
    np.testing.assert_allclose(g(p), whole, rtol=1e-5, atol=1e-6)  # float32 matrix blocking may differ
    assert len(g(p[:0])) == 0
