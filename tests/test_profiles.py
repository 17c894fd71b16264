"""Analytic privacy profiles and trade-off functions (dpaudit.privacy.profiles).

Reference values come from first principles, not from dpaudit's own outputs:
* hockey-stick divergences by direct numerical integration of ``(p - e^eps q)_+`` (scipy quad);
* trade-off functions by the Neyman–Pearson parametrisation (threshold tests on the likelihood
  ratio) and by paper 001 Lemma 7 applied to the independently integrated profile;
* T-fold compositions of the Gaussian mechanism: ``N(0, s^2)^T`` vs ``N(1, s^2)^T`` is the Gaussian
  pair with ``mu = sqrt(T)/s`` (Dong et al. 2022, Cor. 3.3);
* dp_accounting's PLD for the one-step subsampled Gaussian.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpaudit.privacy import profiles as pr


def npdf(m, s):
    """Normal density as a plain function (scipy's frozen pdf is slow inside quad)."""
    c = 1.0 / (s * math.sqrt(2 * math.pi))
    return lambda x: c * math.exp(-0.5 * ((x - m) / s) ** 2)


def lpdf(m, b):
    """Laplace density as a plain function."""
    return lambda x: math.exp(-abs(x - m) / b) / (2 * b)


def hockey_stick_numeric(p_pdf, q_pdf, eps, lo=-40.0, hi=40.0, points=None):
    a = math.exp(eps)
    val, _ = integrate.quad(lambda x: max(p_pdf(x) - a * q_pdf(x), 0.0), lo, hi, limit=800, points=points)
    return val


@pytest.mark.parametrize("mu", [0.3, 1.0, 2.5])
def test_gaussian_delta_matches_integration_both_directions(mu):
    p = npdf(mu, 1)
    q = npdf(0, 1)
    for eps in [-1.0, 0.0, 0.3, 1.0, 2.0, 4.0]:
        kinks = [0.0, mu, eps / mu + mu / 2, mu / 2 - eps / mu]  # where p = e^eps q (either way)
        ref = hockey_stick_numeric(p, q, eps, points=kinks)
        ref_rev = hockey_stick_numeric(q, p, eps, points=kinks)
        assert pr.gaussian_delta(eps, mu) == pytest.approx(ref, rel=1e-6, abs=1e-10)
        assert pr.gaussian_delta(eps, mu) == pytest.approx(ref_rev, rel=1e-6, abs=1e-10)


def test_gaussian_delta_large_eps_no_overflow_and_vectorised():
    eps = np.array([[0.0, 50.0], [800.0, 5.0]])
    out = pr.gaussian_delta(eps, 1.0)
    assert out.shape == (2, 2)
    assert np.all(np.isfinite(out)) and np.all(out >= 0)
    assert out[0, 1] == 0.0 and out[1, 0] == 0.0


@pytest.mark.parametrize("mu", [0.5, 1.0, 3.0])
@pytest.mark.parametrize("delta", [1e-6, 1e-3, 0.1])
def test_gaussian_epsilon_inverts_profile(mu, delta):
    e = pr.gaussian_epsilon(delta, mu)
    if e > 0:
        assert pr.gaussian_delta(e, mu) == pytest.approx(delta, rel=1e-6)
    else:
        assert pr.gaussian_delta(0.0, mu) <= delta


@pytest.mark.parametrize("mu", [0.5, 1.0, 2.0])
def test_gaussian_tradeoff_is_neyman_pearson_curve_and_lemma7(mu):
    # Threshold tests reject N(0,1) (type I = P(X > t)) in favour of N(mu,1): type II = P_mu(X <= t).
    t = np.linspace(-6, 8, 401)
    alpha = stats.norm.sf(t)
    beta = stats.norm.cdf(t - mu)
    assert np.allclose(pr.gaussian_tradeoff(alpha, mu), beta, atol=1e-9)
    # Lemma 7 on the profile (checked against integration above) over a dense grid gives the curve.
    grid = np.linspace(0, 3 * mu + 6, 400)
    prof = pr.gaussian_delta(grid, mu)
    a = np.linspace(0.0, 1.0, 41)
    f7 = pr.tradeoff_from_profile(a, grid, prof)
    assert np.all(f7 <= pr.gaussian_tradeoff(a, mu) + 1e-7)  # a finite grid only lowers the curve
    assert np.allclose(f7, pr.gaussian_tradeoff(a, mu), atol=2e-3)


@pytest.mark.parametrize("eps0", [0.5, 1.0, 3.0])
def test_laplace_delta_matches_integration(eps0):
    p = lpdf(0, 1.0 / eps0)
    q = lpdf(1, 1.0 / eps0)
    for eps in [-eps0 - 0.5, -eps0 / 2, 0.0, eps0 / 3, eps0 * 0.9, eps0, eps0 + 1]:
        ref = hockey_stick_numeric(p, q, eps, points=[0.0, 1.0])
        ref_rev = hockey_stick_numeric(q, p, eps, points=[0.0, 1.0])
        assert pr.laplace_delta(eps, eps0) == pytest.approx(ref, rel=1e-6, abs=1e-9)
        assert pr.laplace_delta(eps, eps0) == pytest.approx(ref_rev, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("eps0", [0.5, 1.0, 3.0])
def test_laplace_tradeoff_is_neyman_pearson_curve(eps0):
    # Likelihood ratio of Lap(0,b) vs Lap(1,b) is monotone: threshold tests are optimal.
    b = 1.0 / eps0
    t = np.linspace(-8 * b, 1 + 8 * b, 801)
    alpha = stats.laplace(0, b).sf(t)      # reject P = Lap(0, b) when X > t
    beta = stats.laplace(1, b).cdf(t)      # accept when X <= t under Q = Lap(1, b)
    assert np.allclose(pr.laplace_tradeoff(alpha, eps0), beta, atol=1e-9)
    grid = np.linspace(0, eps0, 2001)
    a = np.linspace(0, 1, 51)
    assert np.allclose(pr.tradeoff_from_profile(a, grid, pr.laplace_delta(grid, eps0)), pr.laplace_tradeoff(a, eps0), atol=1e-3)


def test_laplace_epsilon_inverts_profile():
    for eps0 in [0.2, 1.0, 4.0]:
        for d in [1e-6, 0.01, 0.3]:
            e = pr.laplace_epsilon(d, eps0)
            if e > 0:
                assert pr.laplace_delta(e, eps0) == pytest.approx(d, rel=1e-9)
            else:
                assert pr.laplace_delta(0.0, eps0) <= d + 1e-12


@pytest.mark.parametrize("sigma, q", [(0.5, 0.2), (2.0, 0.5)])
def test_subsampled_gaussian_one_step_matches_integration(sigma, q):
    n0, n1 = npdf(0, sigma), npdf(1, sigma)
    p = lambda x: (1 - q) * n0(x) + q * n1(x)  # noqa: E731
    qq = n0
    for eps in [0.0, 1.0, 2.5]:
        # Kinks where p = e^{+-eps} q: p/q = (1 - q) + q exp((2x - 1)/(2 s^2)) is increasing.
        kinks = [0.0, 1.0] + [sigma**2 * math.log((r - 1 + q) / q) + 0.5 for r in (math.exp(eps), math.exp(-eps)) if r > 1 - q]
        fwd = hockey_stick_numeric(p, qq, eps, lo=-20 * sigma, hi=1 + 20 * sigma, points=kinks)
        rev = hockey_stick_numeric(qq, p, eps, lo=-20 * sigma, hi=1 + 20 * sigma, points=kinks)
        assert pr.subsampled_gaussian_delta(eps, sigma, q, direction="P||Q") == pytest.approx(fwd, rel=1e-6, abs=1e-10)
        assert pr.subsampled_gaussian_delta(eps, sigma, q, direction="Q||P") == pytest.approx(rev, rel=1e-6, abs=1e-10)
        assert pr.subsampled_gaussian_delta(eps, sigma, q) == pytest.approx(max(fwd, rev), rel=1e-6, abs=1e-10)


def test_subsampled_gaussian_one_step_matches_dp_accounting():
    from dp_accounting.pld import privacy_loss_distribution as pld

    sigma, q = 0.8, 0.2
    ref = pld.from_gaussian_mechanism(sigma, sampling_prob=q, value_discretization_interval=1e-3)
    for eps in [0.0, 0.5, 1.0, 2.0, 3.0]:
        # dp_accounting is pessimistic (upper estimate) with discretisation 1e-3.
        assert pr.subsampled_gaussian_delta(eps, sigma, q) <= ref.get_delta_for_epsilon(eps) + 1e-12
        assert pr.subsampled_gaussian_delta(eps, sigma, q) == pytest.approx(ref.get_delta_for_epsilon(eps), rel=1e-2, abs=1e-6)


@pytest.mark.parametrize("steps", [10])
def test_composed_gaussian_without_subsampling_is_gaussian_dp(steps):
    # N(0, s^2)^T vs N(1, s^2)^T = Gaussian pair with mu = sqrt(T)/s (Dong et al. 2022, Cor. 3.3).
    sigma = 3.0
    eps = np.array([0.0, 0.5, 1.0, 2.0])
    got = pr.subsampled_gaussian_delta(eps, sigma, 1.0, steps, value_discretization_interval=1e-3)
    exact = pr.gaussian_delta(eps, math.sqrt(steps) / sigma)
    assert np.all(got >= exact - 1e-9)          # pessimistic PLD: an upper estimate
    assert np.allclose(got, exact, atol=2e-3)


def test_composition_increases_delta_and_epsilon():
    one = pr.SubsampledGaussianProfile(1.0, 0.1, 1)
    many = pr.SubsampledGaussianProfile(1.0, 0.1, 5)
    assert many.delta(1.0) > one.delta(1.0)
    assert many.epsilon(1e-5) > one.epsilon(1e-5)


def test_tv_mu_conversions_are_inverse_and_match_integration():
    for mu in [0.0, 0.2, 1.0, 3.0]:
        assert pr.mu_from_tv(pr.tv_from_mu(mu)) == pytest.approx(mu, abs=1e-9)
        assert pr.tv_from_mu(mu) == pytest.approx(pr.gaussian_delta(0.0, mu) if mu > 0 else 0.0, abs=1e-12)
    assert pr.mu_from_tv(-0.1) == 0.0 and math.isinf(pr.mu_from_tv(1.0))


def test_mu_from_rates_recovers_mu_on_the_gdp_curve():
    a = np.array([0.01, 0.1, 0.5, 0.9])
    for mu in [0.3, 1.0, 2.0]:
        assert np.allclose(pr.mu_from_rates(a, pr.gaussian_tradeoff(a, mu)), mu, atol=1e-8)
    # Identical distributions (fpr = 1 - fnr) give mu = 0, and a worse-than-random test a negative mu.
    assert pr.mu_from_rates(0.3, 0.7) == pytest.approx(0.0, abs=1e-12)
    assert pr.mu_from_rates(0.3, 0.9) < 0


def test_gdp_mu_for_profile():
    grid = np.linspace(0, 8, 300)
    assert pr.gdp_mu_for_profile(grid, pr.gaussian_delta(grid, 1.3)) == pytest.approx(1.3, abs=1e-4)
    prof = pr.SubsampledGaussianProfile(0.8, 0.2)
    mu = prof.gdp_mu()
    g = np.linspace(0, 6, 200)
    assert np.all(pr.gaussian_delta(g, mu + 1e-5) >= prof.delta(g) - 1e-9)
    assert np.any(pr.gaussian_delta(g, mu * 0.98) < prof.delta(g))  # and it is the smallest such mu


def test_subsampled_tradeoff_against_neyman_pearson_and_symmetrisation():
    sigma, q = 0.8, 0.2
    prof = pr.SubsampledGaussianProfile(sigma, q)
    a = np.linspace(0.0, 1.0, 21)
    f = prof.tradeoff(a)
    # The symmetric curve is below both T(P,Q) and T(Q,P) (each from threshold tests).
    t = np.linspace(-8, 9, 4001)
    pa = (1 - q) * stats.norm.cdf(t / sigma) + q * stats.norm.cdf((t - 1) / sigma)   # type I: P(X < t)
    qb = stats.norm.sf(t / sigma)                                                      # type II: Q(X >= t)
    t_pq = np.interp(a, pa, qb)
    t_qp = np.interp(a, qb[::-1], pa[::-1])
    assert np.all(f <= np.minimum(t_pq, t_qp) + 2e-3)
    assert np.all(f >= 0) and np.all(np.diff(f) <= 1e-12)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: pr.gaussian_delta(1.0, -1.0), "mu"),
        (lambda: pr.gaussian_epsilon(0.0, 1.0), "delta"),
        (lambda: pr.gaussian_epsilon(1.0, 1.0), "delta"),
        (lambda: pr.gaussian_tradeoff([0.2, 1.5], 1.0), "alpha"),
        (lambda: pr.laplace_delta(0.5, 0.0), "epsilon0"),
        (lambda: pr.subsampled_gaussian_delta(1.0, 1.0, 0.0), "sampling_rate"),
        (lambda: pr.subsampled_gaussian_delta(1.0, -1.0, 0.5), "sigma"),
        (lambda: pr.subsampled_gaussian_delta(1.0, 1.0, 0.5, steps=0), "steps"),
        (lambda: pr.subsampled_gaussian_delta(1.0, 1.0, 0.5, direction="up"), "direction"),
        (lambda: pr.tradeoff_from_profile([0.5], [0.0, 1.0], [0.1]), "same shape"),
        (lambda: pr.mu_from_tv(float("nan")), "tv"),
        (lambda: pr.GaussianProfile(float("nan")), "mu"),
        (lambda: pr.LaplaceProfile.from_noise(0.0), "scale"),
    ],
)
def test_bad_input_names_the_value(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_value_objects_serialise():
    import json

    for obj in [pr.GaussianProfile.from_noise(2.0), pr.LaplaceProfile(1.0), pr.SubsampledGaussianProfile(1.0, 0.1, 3)]:
        d = json.loads(json.dumps(obj.to_dict()))
        assert d["kind"] in ("gaussian", "laplace", "subsampled-gaussian")
        assert 0.0 <= float(obj.delta(0.5)) <= 1.0


def test_profiles_convert_from_and_to_dp_events():
    import dp_accounting as dpa

    g = pr.GaussianProfile.from_noise(2.0)
    assert g.to_event() == dpa.GaussianDpEvent(2.0)
    assert pr.GaussianProfile.from_event(g.to_event()) == g
    # a composition of Gaussians is mu-GDP with mu = sqrt(sum 1/sigma^2)
    comp = dpa.ComposedDpEvent([dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(2.0), 3), dpa.GaussianDpEvent(1.0)])
    assert pr.GaussianProfile.from_event(comp).mu == pytest.approx(math.sqrt(3 / 4 + 1))
    lap = pr.LaplaceProfile.from_noise(4.0)
    assert lap.to_event() == dpa.LaplaceDpEvent(4.0)
    assert pr.LaplaceProfile.from_event(lap.to_event()) == lap
    assert lap.delta(0.1) == pr.laplace_delta(0.1, scale=4.0) == pr.laplace_delta(0.1, 0.25)
    assert lap.epsilon(0.01) == pr.laplace_epsilon(0.01, scale=4.0)
    sub = pr.SubsampledGaussianProfile(1.2, 0.05, 7)
    assert sub.to_event() == dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.05, dpa.GaussianDpEvent(1.2)), 7)
    assert pr.SubsampledGaussianProfile.from_event(sub.to_event()) == sub
    assert pr.SubsampledGaussianProfile.from_event(dpa.GaussianDpEvent(2.0)).sampling_rate == 1.0
    with pytest.raises(ValueError, match="GaussianDpEvent"):
        pr.GaussianProfile.from_event(dpa.LaplaceDpEvent(1.0))
    with pytest.raises(ValueError, match="exactly one"):
        pr.laplace_delta(0.1, 0.5, scale=2.0)
    with pytest.raises(ValueError, match="mu"):
        pr.GaussianProfile(0.0).to_event()


def test_one_pld_builder_matches_dp_accounting():
    import dp_accounting as dpa
    from dp_accounting.pld import privacy_loss_distribution as pldm

    from dpaudit.privacy.events import pld_from_event

    ev = dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.1, dpa.GaussianDpEvent(1.0)), 5)
    ref = pldm.from_gaussian_mechanism(1.0, sampling_prob=0.1, value_discretization_interval=1e-2,
                                       pessimistic_estimate=True).self_compose(5)
    assert pld_from_event(ev, 1e-2).get_delta_for_epsilon(1.0) == ref.get_delta_for_epsilon(1.0)
