"""Monte Carlo accountant, DP verifier and EVR (dpaudit.accounting): fast tests.

Reference values and where they come from:
* exact privacy profile of mu-GDP (k Gaussian steps), Balle & Wang 2018 Thm 8, checked here against
  a 50-digit mpmath evaluation;
* Rényi divergences of the Poisson-subsampled Gaussian from dp_accounting's RDP accountant
  (``RdpAccountant(orders=[alpha])``), which computes them by an independent series;
* the one-step Laplace profile ``1 - exp((eps - 1/b)/2)`` (derived in docs/accounting.md) and
  Mironov 2017's Laplace RDP;
* loss tails by adaptive quadrature of the densities (scipy.integrate.quad);
* dp_accounting's PLD for subsampled compositions (pessimistic and optimistic estimates bracket
  the truth).
Statistical assertions use fixed seeds and say in a comment how likely they are to fail by chance.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from scipy import integrate, optimize, stats

import dp_accounting as dpa
from dpaudit import bounds
from dpaudit.accounting import (
    Composition,
    GaussianStep,
    LaplaceStep,
    MonteCarloAccountant,
    SubsampledGaussianStep,
    UnsupportedEventError,
    VerifiableMechanism,
    delta_upper_bound,
    epsilon_upper_bound,
    estimate_delta,
    estimate_epsilon,
    estimate_epsilon_online,
    gaussian_delta,
    gaussian_epsilon,
    plan_verification,
    release,
    sample_privacy_loss,
    second_moment_bound,
    verify,
)
from dpaudit.accounting.prv import REMOVE, ADD, saddlepoint_tilt
from dpaudit.accounting.prv import as_composition as dpaudit_as_composition
from dpaudit.privacy.profiles import laplace_delta
from dpaudit.accounting._backend import NumpyOps

from _harness import assert_rate_above, assert_rate_at_most

GAUSS10 = Composition.from_steps([(GaussianStep(2.0), 10)])  # mu = sqrt(10)/2
MU10 = math.sqrt(10.0) / 2.0


# --------------------------------------------------------------------------------------------
# dominating pairs, PRVs and their cumulant generating functions
# --------------------------------------------------------------------------------------------
def test_gaussian_profile_matches_high_precision():
    import mpmath

    mpmath.mp.dps = 50
    for mu in (0.3, 1.0, 4.0):
        for eps in (0.0, 0.5, 3.0, 12.0):
            a = mpmath.ncdf(-eps / mu + mu / 2) - mpmath.e ** eps * mpmath.ncdf(-eps / mu - mu / 2)
            assert gaussian_delta(eps, mu) == pytest.approx(float(a), rel=1e-9)
    d = 1e-10
    assert gaussian_delta(gaussian_epsilon(d, MU10), MU10) == pytest.approx(d, rel=1e-9)


@pytest.mark.parametrize("alpha", [2.0, 3.0, 7.0, 12.0])
@pytest.mark.parametrize("sigma, q", [(1.1, 256 / 60000), (0.8, 0.05), (2.0, 0.3)])
def test_subsampled_log_mgf_matches_dp_accounting_rdp(alpha, sigma, q):
    # dp_accounting's RDP of the Poisson-subsampled Gaussian at integer orders is the remove
    # direction's D_alpha(P || Q) (binomial series); our K(lam) = lam * D_{lam+1}.
    acc = dpa.rdp.RdpAccountant(orders=[alpha])
    acc.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)))
    rdp = float(np.asarray(acc._rdp)[0])
    step = SubsampledGaussianStep(sigma, q)
    assert step.log_mgf(alpha - 1.0, REMOVE) == pytest.approx((alpha - 1.0) * rdp, rel=1e-9, abs=1e-15)
    # the add direction's Rényi divergence is never larger (Mironov, Talwar & Zhang 2019)
    assert step.log_mgf(alpha - 1.0, ADD) <= step.log_mgf(alpha - 1.0, REMOVE) * (1 + 1e-9) + 1e-15


@pytest.mark.parametrize("lam", [0.3, 1.5, 9.75])
@pytest.mark.parametrize("direction", [REMOVE, ADD])
def test_subsampled_log_mgf_fractional_matches_mpmath(lam, direction):
    # Non-integer tilts use quadrature; reference: 30-digit mpmath quadrature of E_N(0,s^2)[a^(1+lam)]
    # (remove) or E_N(0,s^2)[a^(-lam)] (add), a(t) = 1 - q + q exp((2t - 1)/(2 s^2)). (dp_accounting's
    # fractional-order series differs from both by ~1e-4 relative at alpha = 2.5.)
    import mpmath as mp

    mp.mp.dps = 30
    s, q = mp.mpf(1.1), mp.mpf(256) / 60000
    expo = (1 + mp.mpf(lam)) if direction == REMOVE else -mp.mpf(lam)
    f = lambda t: mp.npdf(t, 0, s) * (1 - q + q * mp.e ** ((2 * t - 1) / (2 * s * s))) ** expo  # noqa: E731
    want = float(mp.log(mp.quad(f, [-mp.inf, -5, 0, 1, 3, 8, 15, mp.inf])))
    got = SubsampledGaussianStep(1.1, 256 / 60000).log_mgf(lam, direction)
    assert got == pytest.approx(want, rel=1e-8, abs=1e-14)


def test_laplace_log_mgf_matches_quadrature():
    step = LaplaceStep(0.7)
    b = 0.7
    for lam in (0.3, 1.0, 4.5):
        dens = lambda t: math.exp(-(1 + lam) * abs(t - 1) / b + lam * abs(t) / b) / (2 * b)  # noqa: E731
        val = sum(integrate.quad(dens, lo, hi, limit=200)[0] for lo, hi in ((-60, 0), (0, 1), (1, 60)))
        assert step.log_mgf(lam) == pytest.approx(math.log(val), rel=1e-9)


@pytest.mark.parametrize("direction", [REMOVE, ADD])
def test_subsampled_tails_match_quadrature(direction):
    sigma, q = 0.9, 0.02
    step = SubsampledGaussianStep(sigma, q)
    mix = lambda t: (1 - q) * stats.norm.pdf(t, 0, sigma) + q * stats.norm.pdf(t, 1, sigma)  # noqa: E731
    base = lambda t: stats.norm.pdf(t, 0, sigma)  # noqa: E731
    p_dens, q_dens = (mix, base) if direction == REMOVE else (base, mix)
    for c in (-0.01, 0.0, 0.05, 0.5, 2.0):
        loss = lambda t: float(step.privacy_loss(t, direction)) - c  # noqa: E731
        lo_t, hi_t = -30.0, 30.0
        if loss(lo_t) * loss(hi_t) > 0:  # no crossing: the region is all or nothing
            inside = loss(0.0) > 0
            want_p = want_q = 1.0 if inside else 0.0
        else:
            t_c = optimize.brentq(loss, lo_t, hi_t, xtol=1e-14)
            if direction == REMOVE:  # loss increasing in t
                want_p = integrate.quad(p_dens, t_c, np.inf, epsabs=0, epsrel=1e-12)[0]
                want_q = integrate.quad(q_dens, t_c, np.inf, epsabs=0, epsrel=1e-12)[0]
            else:
                want_p = integrate.quad(p_dens, -np.inf, t_c, epsabs=0, epsrel=1e-12)[0]
                want_q = integrate.quad(q_dens, -np.inf, t_c, epsabs=0, epsrel=1e-12)[0]
        lp, lq = step.log_tails(NumpyOps(), np.array([c]), direction)
        assert float(np.exp(lp[0])) == pytest.approx(want_p, rel=1e-7, abs=1e-300)
        assert float(np.exp(lq[0])) == pytest.approx(want_q, rel=1e-7, abs=1e-300)


@pytest.mark.parametrize("step, direction, lam", [
    (GaussianStep(1.3), REMOVE, 2.2),
    (LaplaceStep(0.8), REMOVE, 1.7),
    (SubsampledGaussianStep(1.0, 0.05), REMOVE, 3.0),     # integer: exact mixture
    (SubsampledGaussianStep(1.0, 0.05), REMOVE, 2.4),     # rejection from the ceil mixture
    (SubsampledGaussianStep(1.0, 0.05), ADD, 3.3),        # rejection from N(0, s^2)
])
def test_tilted_samplers_are_exponential_tilts(step, direction, lam):
    # Under P_lam, E[exp(K - lam L)] = 1 and E[L exp(K - lam L)] = E_P[L] = K'(0) (the KL
    # divergence), while E[L] = K'(lam). Tolerance 5 standard errors (chance failure < 1e-6).
    comp = Composition(((step, 1),))
    s = sample_privacy_loss(comp, 200_000, direction=direction, estimator="is", tilts=(lam,), rng=11)
    w = np.exp(s.log_weights)
    L = s.losses
    h = 1e-5
    k1 = (comp.log_mgf(h, direction) - comp.log_mgf(0.0, direction)) / h
    klam = (comp.log_mgf(lam + h, direction) - comp.log_mgf(lam - h, direction)) / (2 * h)
    for vals, want in ((w, 1.0), (L * w, k1), (L, klam)):
        se = vals.std() / math.sqrt(vals.size)
        assert abs(vals.mean() - want) < 5 * se + 1e-9


def test_composition_from_dp_events_and_errors():
    ev = dpa.ComposedDpEvent([
        dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.0)), 900),
        dpa.GaussianDpEvent(2.0),
        dpa.SelfComposedDpEvent(dpa.LaplaceDpEvent(3.0), 2),
        dpa.NoOpDpEvent(),
    ])
    comp = Composition.from_dp_event(ev)
    assert comp.num_steps == 903
    assert comp.segments == ((SubsampledGaussianStep(1.0, 0.01), 900), (GaussianStep(2.0), 1), (LaplaceStep(3.0), 2))
    assert Composition.from_dp_event(dpa.PoissonSampledDpEvent(1.0, dpa.GaussianDpEvent(1.5))).is_gaussian
    with pytest.raises(UnsupportedEventError, match="SampledWithReplacementDpEvent"):
        Composition.from_dp_event(dpa.SampledWithReplacementDpEvent(10, 2, dpa.GaussianDpEvent(1.0)))
    with pytest.raises(UnsupportedEventError, match="LaplaceDpEvent"):
        Composition.from_dp_event(dpa.PoissonSampledDpEvent(0.1, dpa.LaplaceDpEvent(1.0)))
    with pytest.raises(ValueError, match="sigma"):
        Composition.from_dp_event(dpa.GaussianDpEvent(0.0))


@pytest.mark.parametrize("call, match", [
    (lambda: GaussianStep(0.0), "sigma"),
    (lambda: GaussianStep(float("nan")), "sigma"),
    (lambda: SubsampledGaussianStep(1.0, 0.0), "sampling_rate"),
    (lambda: SubsampledGaussianStep(1.0, 1.5), "sampling_rate"),
    (lambda: Composition.dpsgd(1.0, 0.1, 0), "steps"),
    (lambda: estimate_delta(GAUSS10, -0.1, num_samples=10), "epsilon"),
    (lambda: estimate_delta(GAUSS10, float("nan"), num_samples=10), "epsilon"),
    (lambda: estimate_epsilon(GAUSS10, 1.0, num_samples=10), "delta"),
    (lambda: estimate_epsilon(GAUSS10, 0.0, num_samples=10), "delta"),
    (lambda: estimate_epsilon(GAUSS10, float("nan"), num_samples=10), "delta"),
    (lambda: estimate_delta(GAUSS10, 1.0, num_samples=10, estimator="magic"), "estimator"),
    (lambda: estimate_delta(Composition.from_steps([LaplaceStep(1.0)]), 1.0, num_samples=10, estimator="cmc"), "laplace"),
    (lambda: plan_verification(GAUSS10, 1.0, 0.01, tau=1.5), "tau"),
    (lambda: plan_verification(GAUSS10, 1.0, 0.01, tau=0.9, rho=0.5), "rho"),
    (lambda: plan_verification(GAUSS10, 1.0, 0.01, false_positive_rate=0.0), "false_positive_rate"),
])
def test_bad_input_names_the_value(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_cuda_request_fails_clearly_without_cuda():
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    with pytest.raises(ValueError, match="CUDA is not available"):
        MonteCarloAccountant(100, device="cuda")


def test_rdp_bounds_are_upper_bounds_and_match_dp_accounting():
    comp = Composition.dpsgd(1.1, 256 / 60000, 14100)
    # dp_accounting RDP eps for this run is 2.6003 (NOTES-accounting.md worked example)
    assert epsilon_upper_bound(comp, 1e-5) == pytest.approx(2.6003, abs=2e-3)
    for eps in (0.5, 2.0, 6.0):
        assert delta_upper_bound(GAUSS10, eps) >= gaussian_delta(eps, MU10)


# --------------------------------------------------------------------------------------------
# Monte Carlo accountant
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("estimator", ["simple", "is"])
@pytest.mark.parametrize("eps", [1.0, 4.0])
def test_delta_estimate_close_to_exact_gaussian(estimator, eps):
    r = estimate_delta(GAUSS10, eps, num_samples=40_000, estimator=estimator, rng=3)
    truth = gaussian_delta(eps, MU10)
    # within 4.5 standard errors (chance failure ~1e-5 for a fixed seed, i.e. never once it passes)
    assert abs(r.delta - truth) < 4.5 * r.std_error
    assert r.ci_low <= r.delta <= r.ci_high
    json.dumps(r.to_dict())


def test_importance_sampling_reaches_one_percent_at_1e_minus_10_where_simple_mc_cannot():
    eps = gaussian_epsilon(1e-10, MU10)
    truth = gaussian_delta(eps, MU10)
    m = 50_000
    is_ = estimate_delta(GAUSS10, eps, num_samples=m, estimator="is", rng=5)
    simple = estimate_delta(GAUSS10, eps, num_samples=m, estimator="simple", rng=5)
    assert is_.relative_std_error < 0.01
    assert abs(is_.delta - truth) / truth < 0.03  # 3% = more than 3 standard errors
    # simple MC sees no loss above eps in 50 000 draws (probability of any ~ 1e-5)
    assert simple.delta == 0.0


def test_epsilon_estimate_and_interval_cover_exact_gaussian():
    for delta in (1e-5, 1e-10):
        r = estimate_epsilon(GAUSS10, delta, num_samples=20_000, rng=8)
        truth = gaussian_epsilon(delta, MU10)
        assert r.ci_low <= truth <= r.ci_high
        assert abs(r.epsilon - truth) / truth < 0.005


def test_numpy_and_torch_backends_agree_and_chunking_does_not_matter():
    comp = Composition.from_steps([(SubsampledGaussianStep(1.0, 0.02), 30), (GaussianStep(3.0), 3),
                                   (SubsampledGaussianStep(0.8, 0.05), 10)])
    for est in ("is-cmc", "is", "simple"):
        a = sample_privacy_loss(comp, 2000, estimator=est, target_epsilon=1.5, rng=4)
        b = sample_privacy_loss(comp, 2000, estimator=est, target_epsilon=1.5, rng=4, backend="torch", device="cpu")
        c = sample_privacy_loss(comp, 2000, estimator=est, target_epsilon=1.5, rng=4, chunk_elements=1024)
        np.testing.assert_allclose(a.losses, b.losses, rtol=0, atol=1e-12)
        np.testing.assert_allclose(a.log_weights, b.log_weights, rtol=0, atol=1e-12)
        np.testing.assert_allclose(a.losses, c.losses, rtol=0, atol=1e-12)
        assert a.delta(1.5)[0] == pytest.approx(b.delta(1.5)[0], rel=1e-10)
    # different seeds give different draws
    d = sample_privacy_loss(comp, 2000, estimator="is", target_epsilon=1.5, rng=5)
    assert not np.allclose(d.losses, a.losses)


def test_offline_and_online_use_the_same_draws():
    from dpaudit.accounting._backend import TILE_ROWS
    from dpaudit.accounting.monte_carlo import _Sampler, _run_offline

    # segment boundaries inside a tile of steps, a partial last tile of samples, two tilt groups,
    # non-integer tilts (the remove sampler rejects some draws; the add sampler always does)
    comp = Composition.from_steps([(SubsampledGaussianStep(1.0, 0.02), 21), (GaussianStep(3.0), 3),
                                   (SubsampledGaussianStep(0.8, 0.05), 10)])
    m = 2 * TILE_ROWS + 300  # two tilts: tiles of 2 * TILE_ROWS samples
    for d, lam in ((REMOVE, (0.5, 3.25)), (ADD, (0.0, 2.5))):
        off = _Sampler(comp, d, "is", lam, None, 77, NumpyOps(), 1 << 21, False)
        L_off, lw_off = _run_offline(off, m, None)
        on = _Sampler(comp, d, "is", lam, None, 77, NumpyOps(), 1 << 21, False)
        *_, (i, L_on, lw_on) = on.online(m)
        assert i == comp.num_steps
        np.testing.assert_allclose(L_on, L_off, rtol=0, atol=1e-12)  # only the summation order differs
        np.testing.assert_allclose(lw_on, lw_off, rtol=0, atol=1e-12)
        # any split into blocks gives the same draws
        blocks = np.concatenate([off.draw(a, b)[0] for a, b in ((0, 1000), (1000, 2100), (2100, m))])
        np.testing.assert_array_equal(blocks, L_off)


def test_draws_of_a_sample_do_not_depend_on_the_number_of_samples():
    comp = Composition.from_steps([(SubsampledGaussianStep(1.0, 0.02), 20), (GaussianStep(3.0), 3)])
    a = sample_privacy_loss(comp, 2000, estimator="simple", rng=3)
    b = sample_privacy_loss(comp, 5000, estimator="simple", rng=3)
    np.testing.assert_array_equal(a.losses, b.losses[:2000])


def test_torch_generator_is_reproducible_and_agrees_statistically_with_numpy():
    # the generator used on CUDA (torch's own, per cell), exercised on the CPU
    from dpaudit.accounting._backend import TorchOps
    from dpaudit.accounting.monte_carlo import PrivacyLossSamples, _Sampler, _run_offline

    comp = Composition.from_steps([(SubsampledGaussianStep(1.0, 0.05), 20), (GaussianStep(2.0), 4)])
    eps = 1.0
    lam = (saddlepoint_tilt(comp, eps),)

    def run(ops, key, m=20_000):
        smp = _Sampler(comp, REMOVE, "is", lam, None, key, ops, 1 << 21, False)
        return smp, PrivacyLossSamples(*_run_offline(smp, m, None), REMOVE, "is", lam)

    native = TorchOps("cpu", native_rng=True)
    s1, a = run(native, 11)
    _, b = run(TorchOps("cpu", native_rng=True), 11)
    np.testing.assert_array_equal(a.losses, b.losses)
    np.testing.assert_array_equal(s1.draw(0, 20_000)[0], np.concatenate([s1.draw(0, 777)[0], s1.draw(777, 20_000)[0]]))
    _, c = run(native, 12)
    assert not np.allclose(a.losses, c.losses)
    _, n = run(NumpyOps(), 11)
    assert not np.allclose(a.losses[:100], n.losses[:100])  # other generator, other draws
    (da, sa), (dn, sn) = a.delta(eps), n.delta(eps)
    # two independent unbiased estimates: within 4.5 combined standard errors (chance ~1e-5)
    assert abs(da - dn) < 4.5 * math.hypot(sa, sn)
    assert sa / da < 0.05 and sn / dn < 0.05


@pytest.mark.parametrize("sigma, q", [(1.1, 0.004), (1.0, 0.1), (0.5, 0.6)])
def test_mixture_components_and_losses_match_the_reference_formulas(sigma, q):
    from dpaudit.accounting._backend import Cell

    ops = NumpyOps()
    step = SubsampledGaussianStep(sigma, q)
    for lam in (0.0, 1.0, 3.0, 11.0, 20.0):
        plan = step.plan(lam, REMOVE)
        rs = Cell(ops, 5, 0, 2048, 0, 16).group(0, 2048)
        t = plan._draw_mixture(ops, rs)
        comp = plan.means[np.searchsorted(plan.edges, rs.uniform(0), side="right")]
        np.testing.assert_allclose(t, sigma * rs.normal(1) + comp, rtol=0, atol=1e-12)
    # the loss ln(1 - q + q e^x), x = (2t - 1)/(2 s^2), also beyond exp's range (x > 700)
    tiny = SubsampledGaussianStep(0.05, q)
    t = np.array([[-3.0, 0.0, 0.5, 1.0, 2.0, 5.0, 40.0]])
    x = (2 * t - 1) / (2 * 0.05 ** 2)
    ref = np.logaddexp(math.log1p(-q), math.log(q) + x)
    np.testing.assert_allclose(tiny.plan(0.0, REMOVE).loss(ops, t), ref, rtol=1e-13, atol=2e-16)
    np.testing.assert_allclose(tiny.plan(0.0, ADD).loss(ops, t), -ref, rtol=1e-13, atol=2e-16)


def test_dpsgd_estimate_within_pld_bracket():
    # k = 300, where dp_accounting's pessimistic and optimistic PLDs bracket the truth tightly.
    sigma, q, k, eps = 0.9, 0.02, 300, 1.5
    comp = Composition.dpsgd(sigma, q, k)
    from dpaudit.accounting import reference

    hi = reference.delta("pld", comp, eps, pessimistic=True)["delta"]
    lo = reference.delta("pld", comp, eps, pessimistic=False)["delta"]
    r = estimate_delta(comp, eps, num_samples=6000, rng=2)
    assert r.estimator == "is-cmc"
    assert lo - 4.5 * r.std_error <= r.delta <= hi + 4.5 * r.std_error
    assert r.relative_std_error < 0.05


def test_online_matches_exact_gaussian_and_rdp_bounds_it():
    comp = Composition.from_steps([(GaussianStep(2.0), 40)])
    on = estimate_epsilon_online(comp, 1e-6, num_samples=20_000, rng=1)
    assert len(on.epsilon) == 40 and on.steps[-1] == 40
    truth = [gaussian_epsilon(1e-6, math.sqrt(i) / 2.0) for i in range(1, 41)]
    covered = sum(lo <= t <= hi for lo, t, hi in zip(on.ci_low, truth, on.ci_high))
    assert covered >= 34  # 95% intervals; >= 34 of 40 fails by chance with probability < 2e-3
    np.testing.assert_allclose(on.epsilon, truth, rtol=0.05)
    assert abs(on.epsilon[-1] - truth[-1]) / truth[-1] < 0.01
    assert np.all(np.diff(on.cumulative_seconds) >= 0)
    sub = Composition.dpsgd(1.0, 0.01, 60)
    on2 = estimate_epsilon_online(sub, 1e-5, num_samples=4000, rng=2)
    from dpaudit.accounting import reference

    rdp = reference.online_epsilons("rdp", sub, 1e-5)["epsilon"][0]
    assert np.all(np.asarray(on2.ci_low) <= np.asarray(rdp))  # RDP is an upper bound


def test_online_report_steps_match_the_full_run():
    sub = Composition.dpsgd(1.0, 0.01, 40)
    full = estimate_epsilon_online(sub, 1e-5, num_samples=3000, rng=9)
    part = estimate_epsilon_online(sub, 1e-5, num_samples=3000, rng=9, report_steps=[40, 10, 25])
    assert part.steps == (10, 25, 40) and len(part.epsilon) == 3
    for s, e, lo, hi in zip(part.steps, part.epsilon, part.ci_low, part.ci_high):
        # 'is-cmc' fixes its combination weights at the warm start (the previous reported step), so
        # the estimate differs slightly from the every-step run (far inside the interval)
        assert abs(e - full.epsilon[s - 1]) < 0.1 * (full.ci_high[s - 1] - full.ci_low[s - 1])
        assert lo == pytest.approx(full.ci_low[s - 1], rel=1e-2) and hi == pytest.approx(full.ci_high[s - 1], rel=1e-2)
    comp = Composition.from_steps([(GaussianStep(2.0), 12)])
    full = MonteCarloAccountant(4000, rng=5).get_epsilon_online(comp, 1e-6)
    part = MonteCarloAccountant(4000, rng=5).get_epsilon_online(comp, 1e-6, report_steps=(3, 12))
    assert part.epsilon == (full.epsilon[2], full.epsilon[11])  # exact solves: identical
    for bad in ([0], [13], [], ["x"]):
        with pytest.raises(ValueError, match="report_steps"):
            MonteCarloAccountant(100, rng=5).get_epsilon_online(comp, 1e-6, report_steps=bad)


def test_accountant_results_are_reproducible_from_the_seed():
    a = MonteCarloAccountant(3000, rng=123).get_epsilon(GAUSS10, 1e-6)
    b = MonteCarloAccountant(3000, rng=123).get_epsilon(GAUSS10, 1e-6)
    assert a.epsilon == b.epsilon and a.seed == 123
    c = MonteCarloAccountant(3000, rng=124).get_epsilon(GAUSS10, 1e-6)
    assert c.epsilon != a.epsilon


# --------------------------------------------------------------------------------------------
# bounds
# --------------------------------------------------------------------------------------------
def test_bennett_and_kl_bounds():
    # b -> 0 limit is the sub-Gaussian form; the bound grows with b
    assert bounds.bennett_tail_bound(0.1, 1.0, 50) == pytest.approx(math.exp(-50 * 0.01 / 2))
    assert bounds.bennett_tail_bound(0.1, 1.0, 50, b=1e-9) == pytest.approx(math.exp(-0.25), rel=1e-6)
    assert bounds.bennett_tail_bound(0.1, 1.0, 50, b=0.5) > bounds.bennett_tail_bound(0.1, 1.0, 50, b=0.1)
    n = bounds.bennett_sample_size(0.01, 0.2, 1e-3)
    assert n == math.ceil(2 * 0.2 * math.log(1e3) / 1e-4)
    assert bounds.bennett_tail_bound(0.01, 0.2, n) <= 1e-3 < bounds.bennett_tail_bound(0.01, 0.2, n - 1)
    # KL bound dominates the exact binomial lower tail
    for nn, p, a in ((100, 0.3, 0.2), (1000, 0.01, 0.005), (50, 0.5, 0.1)):
        exact = stats.binom.cdf(math.floor(nn * a), nn, p)
        assert exact <= bounds.kl_lower_tail_bound(a, p, nn)
    m = bounds.kl_sample_size(0.05, 0.1, 1e-4)
    assert bounds.kl_lower_tail_bound(0.05, 0.1, m) <= 1e-4 < bounds.kl_lower_tail_bound(0.05, 0.1, m - 1)


# --------------------------------------------------------------------------------------------
# verifier
# --------------------------------------------------------------------------------------------
def _exact_second_moment_gaussian(mu, eps, lam):
    """E_{P_lam}[X^2] for the lam-tilted estimator of mu-GDP by quadrature (L ~ N(mu^2/2, mu^2) under P)."""
    def integrand(x):
        dens = stats.norm.pdf(x, mu * mu / 2, mu)
        k = lam * (lam + 1) * mu * mu / 2
        return (-math.expm1(eps - x)) ** 2 * math.exp(k - lam * x) * dens
    return integrate.quad(integrand, eps, eps + 60 * mu, epsabs=0, epsrel=1e-10, limit=200)[0]


def test_second_moment_bound_is_an_upper_bound():
    for eps in (1.0, 3.0, 6.0):
        for lam in (0.0, 0.5, 1.0, 2.0):
            exact = _exact_second_moment_gaussian(MU10, eps, lam)
            bound = second_moment_bound(GAUSS10, eps, lam)
            assert exact <= bound
            if lam == 0.0:
                assert bound <= 1.0


def test_verification_plan_numbers():
    eps, d, tau, beta = 3.0, 0.05, 0.8, 0.01
    plan = plan_verification(GAUSS10, eps, d, tau=tau, false_positive_rate=beta)
    rho = (1 + tau) / 2
    assert plan.rho == rho
    assert plan.offset == pytest.approx(0.4 * (1 / tau - 1 / rho) * d)
    assert plan.threshold == pytest.approx(d / tau - plan.offset)
    row = plan.per_direction[REMOVE]
    # Bennett's sample size from the second-moment bound (paper 004, Thm "smcsamplecomp")
    nu = second_moment_bound(GAUSS10, eps, row["tilt"])
    assert row["samples_bennett"] == math.ceil(2 * min(nu, row["term_bound"] ** 2) * math.log(1 / beta) / plan.offset ** 2)
    assert plan.num_samples == min(row["samples_bennett"], row["samples_kl"])
    assert row["term_bound"] >= gaussian_delta(eps, MU10)  # B is an RDP upper bound on delta
    # the default false-positive rate is delta / tau (what EVR's theorem needs)
    assert plan_verification(GAUSS10, eps, 1e-4).false_positive_rate == pytest.approx(1e-4 / 0.9)


def test_verifier_proves_without_sampling_when_rdp_suffices():
    eps = 6.0
    d = delta_upper_bound(GAUSS10, eps) * 2.0
    r = verify(GAUSS10, eps, d, rng=0)
    assert r.accepted and r.plan.proven_by_rdp and r.plan.num_samples == 0


def test_verifier_false_positive_rate_with_underestimated_epsilon():
    """The proposal (eps, delta) underestimates eps: delta(eps) = delta / tau exactly (the worst
    case of Def. 8). Over 300 independent verifications the acceptance count must not be
    significantly above beta (one-sided binomial test at level 1e-3); the same test applied to a
    broken verifier (threshold at delta / tau, no offset) must flag it, so the test can fail."""
    tau, beta, eps = 0.5, 0.05, 3.0
    true_delta = gaussian_delta(eps, MU10)
    proposal = tau * true_delta
    plan = plan_verification(GAUSS10, eps, proposal, tau=tau, false_positive_rate=beta)
    n = 300
    acc = sum(verify(GAUSS10, eps, proposal, tau=tau, false_positive_rate=beta, plan=plan,
                     rng=np.random.default_rng(1000 + i)).accepted for i in range(n))
    assert_rate_at_most(acc, n, beta, what="acceptances")
    broken = dataclasses.replace(plan, threshold=proposal / tau)
    acc_broken = sum(verify(GAUSS10, eps, proposal, tau=tau, false_positive_rate=beta, plan=broken,
                            rng=np.random.default_rng(2000 + i)).accepted for i in range(n))
    assert_rate_above(acc_broken, n, beta, what="acceptances by the broken verifier")
    # false negatives at a correct estimate (delta(eps) = proposal): reported in the docs; here
    # only that they are rarer than the false-positive target.
    plan_ok = plan_verification(GAUSS10, eps, true_delta, tau=tau, false_positive_rate=beta)
    rej = sum(not verify(GAUSS10, eps, true_delta, tau=tau, false_positive_rate=beta, plan=plan_ok,
                         rng=np.random.default_rng(3000 + i)).accepted for i in range(n))
    assert_rate_at_most(rej, n, beta, what="rejections")


def test_verifier_result_has_no_randomness_and_subsampled_checks_both_directions():
    comp = Composition.dpsgd(1.0, 0.05, 20)
    r = verify(comp, 1.0, 0.05, tau=0.5, false_positive_rate=0.05, rng=9)
    d = r.to_dict()
    text = json.dumps(d)
    assert "seed" not in text and "rng" not in text and "key" not in text
    assert set(r.plan.per_direction) == {REMOVE, ADD}
    too_big = 1e-12
    with pytest.raises(ValueError, match="max_samples"):
        verify(comp, 0.1, too_big, tau=0.99, max_samples=1000)


# --------------------------------------------------------------------------------------------
# EVR
# --------------------------------------------------------------------------------------------
def test_release_accepts_runs_mechanism_and_states_guarantee():
    calls = []

    def mech(data, rng):
        calls.append(1)
        return float(np.sum(data)) + rng.normal(0, 2.0)

    vm = VerifiableMechanism(mech, Composition.from_steps([GaussianStep(2.0)]), name="noisy sum")
    eps = 2.0
    d = gaussian_delta(eps, 0.5)
    out = release(vm, np.ones(5), (eps, d), tau=0.5, false_positive_rate=1e-3, rng=0, verifier_rng=1)
    assert out.released and calls == [1] and out.output is not None
    assert out.delta_guarantee == pytest.approx(d / 0.5 + 1e-3)
    assert out.delta_guarantee_tight <= out.delta_guarantee
    assert "output" not in out.to_dict()
    json.dumps(out.to_dict())


def test_release_rejects_underestimate_and_uses_fallback():
    calls = []
    vm = VerifiableMechanism(lambda data, rng: calls.append("main") or 1.0, GAUSS10)
    fb = VerifiableMechanism(lambda data, rng: calls.append("fallback") or 2.0,
                             Composition.from_steps([(GaussianStep(20.0), 10)]))
    eps = 1.0
    d = gaussian_delta(eps, MU10) / 100  # a 100x underestimate: rejected w.p. >= 1 - beta
    out = release(vm, None, {"epsilon": eps, "delta": d}, tau=0.5, false_positive_rate=1e-3, fallback=fb,
                  verifier_rng=2)
    assert not out.released and out.used_fallback and calls == ["fallback"] and out.output == 2.0
    fb_delta = delta_upper_bound(fb.composition, eps)
    assert out.delta_fallback == pytest.approx(fb_delta)
    assert out.delta_guarantee == pytest.approx(max(d / 0.5, fb_delta) + 1e-3)
    nothing = release(vm, None, (eps, d), tau=0.5, false_positive_rate=1e-3, verifier_rng=3)
    assert nothing.output is None and not nothing.released and calls == ["fallback"]
    with pytest.raises(ValueError, match="composition"):
        release(lambda x, r: 0, None, (eps, d))


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------
def _cli(*args):
    from typer.testing import CliRunner

    from dpaudit.cli import app

    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def test_cli_account_json_and_plot(tmp_path):
    png = tmp_path / "profile.png"
    res = _cli("account", "--noise-multiplier", "2", "--steps", "10", "--delta", "1e-6", "--samples", "5000",
               "--method", "mc", "--seed", "0", "--json", "--plot", str(png))
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["method"] == "mc" and data["seed"] == 0 and data["kind"] == "upper_confidence_bound"
    mc = data["details"]["monte_carlo"]
    assert mc["ci_low"] <= gaussian_epsilon(1e-6, MU10) <= mc["ci_high"]
    assert png.stat().st_size > 1000
    res = _cli("account", "-z", "2", "-k", "10", "--epsilon", "3", "--method", "rdp", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["delta"] >= gaussian_delta(3.0, MU10)
    res = _cli("account", "-z", "2", "-k", "5", "--delta", "1e-5", "--online", "--method", "mc", "--samples",
               "2000", "--json", "--plot", str(tmp_path / "online.png"))
    assert res.exit_code == 0 and len(json.loads(res.stdout)["epsilon"]) == 5
    res = _cli("account", "-z", "1.1", "-q", "0.01", "-k", "20", "--delta", "1e-5", "--samples", "2000", "--seed", "1",
               "--method", "mc")
    assert res.exit_code == 0 and "upper confidence bound" in res.stdout


def test_cli_account_default_is_a_certified_upper_bound(tmp_path):
    res = _cli("account", "-z", "2", "-k", "10", "--delta", "1e-6", "--json", "--plot", str(tmp_path / "p.png"))
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    exact = gaussian_epsilon(1e-6, MU10)
    assert data["method"] == "pld" and data["kind"] == "upper_bound" and data["method_requested"] == "auto"
    assert exact <= data["epsilon"] <= exact * 1.005
    assert "certified upper bound" in data["statement"]
    res = _cli("account", "-z", "2", "-k", "10", "--delta", "1e-6")
    assert res.exit_code == 0 and "certified upper bound" in res.stdout and "time" in res.stdout
    res = _cli("account", "-z", "2", "-k", "50", "--delta", "1e-6", "--online", "--json")
    data = json.loads(res.stdout)
    assert res.exit_code == 0 and data["kind"] == "upper_bound" and len(data["epsilon"]) == 50
    exact_steps = [gaussian_epsilon(1e-6, math.sqrt(i) / 2.0) for i in (1, 10, 50)]
    for i, e in zip((1, 10, 50), exact_steps):
        assert e <= data["epsilon"][i - 1] <= e * 1.01 + 1e-3


@pytest.mark.parametrize("args, needle", [
    (("account", "-z", "0", "-k", "10", "--delta", "1e-5"), "--noise-multiplier must be finite and > 0, got 0.0"),
    (("account", "-z", "1", "-q", "1.5", "-k", "10", "--delta", "1e-5"), "--sampling-rate must be in (0, 1], got 1.5"),
    (("account", "-z", "1", "-k", "0", "--delta", "1e-5"), "--steps must be an integer >= 1, got 0"),
    (("account", "-z", "1", "-k", "10", "--delta", "2"), "--delta must be in (0, 1), got 2.0"),
    (("account", "-z", "1", "-k", "10", "--epsilon", "-1"), "--epsilon must be finite and >= 0, got -1.0"),
    (("account", "-z", "1", "-k", "10"), "exactly one of --delta"),
    (("verify", "-z", "1", "-k", "10", "--epsilon", "1", "--delta", "0.01", "--tau", "0"), "tau"),
])
def test_cli_bad_input_exits_2(args, needle):
    res = _cli(*args)
    assert res.exit_code == 2
    assert needle in " ".join(res.output.split())


def test_cli_verify_exit_codes():
    eps = 3.0
    good = f"{gaussian_delta(eps, MU10):.6g}"
    bad = f"{gaussian_delta(eps, MU10) / 50:.6g}"
    common = ("verify", "-z", "2", "-k", "10", "--epsilon", str(eps), "--tau", "0.5", "--beta", "0.01")
    res = _cli(*common, "--delta", good)
    assert res.exit_code == 0, res.output
    assert "ACCEPTED" in res.stdout
    res = _cli(*common, "--delta", bad, "--json")
    assert res.exit_code == 1
    assert json.loads(res.stdout)["accepted"] is False
    res = _cli(*common, "--delta", good, "--plan-only", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["plan"]["num_samples"] > 0


def test_laplace_single_step_profile_and_composition_estimate():
    b = 0.8
    comp = Composition.from_steps([LaplaceStep(b)])
    for eps in (0.2, 0.9):
        r = estimate_delta(comp, eps, num_samples=40_000, rng=6)
        truth = laplace_delta(eps, scale=b)
        assert abs(r.delta - truth) < 4.5 * r.std_error
    # saddle point tilt is 0 when eps is below the mean loss
    assert saddlepoint_tilt(comp, 0.0) == 0.0


def test_thread_count_does_not_change_monte_carlo_results():
    from dpaudit.accounting import monte_carlo as mc

    comp = Composition.dpsgd(1.1, 0.01, 300)
    try:
        out = []
        for n in (1, 3):
            mc.set_num_threads(n)
            r = MonteCarloAccountant(num_samples=6000, rng=4, chunk_elements=1 << 16).get_epsilon(comp, 1e-6)
            out.append((r.epsilon, r.epsilon_upper, r.ci_high))
        assert out[0] == out[1]
    finally:
        mc.set_num_threads(None)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="positive integer"):
            mc.set_num_threads(bad)


def test_entry_points_accept_dp_events_and_profiles():
    """A dp_accounting DpEvent (or a privacy profile) describes the same mechanism as a Composition."""
    from dpaudit.accounting import reference
    from dpaudit.privacy.profiles import GaussianProfile, SubsampledGaussianProfile

    event = dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(2.0), 10)
    assert Composition.from_dp_event(event) == GAUSS10
    assert GAUSS10.to_event() == event
    assert reference.to_dp_event(GAUSS10) == event
    profile = GaussianProfile.from_event(event)
    assert profile.mu == pytest.approx(MU10)
    for obj in (event, GaussianProfile(1 / 2.0)):
        comp = dpaudit_as_composition(obj)
        assert comp.is_gaussian
    for obj in (GAUSS10, event):
        assert epsilon_upper_bound(obj, 1e-6) == epsilon_upper_bound(GAUSS10, 1e-6)
        assert delta_upper_bound(obj, 2.0) == delta_upper_bound(GAUSS10, 2.0)
        assert reference.epsilon("pld", obj, 1e-6, value_discretization_interval=1e-2)["epsilon"] == \
            reference.epsilon("pld", GAUSS10, 1e-6, value_discretization_interval=1e-2)["epsilon"]
        assert MonteCarloAccountant(num_samples=2000, rng=1).get_delta(obj, 2.0).delta == \
            MonteCarloAccountant(num_samples=2000, rng=1).get_delta(GAUSS10, 2.0).delta
        assert plan_verification(obj, 3.0, 1e-3).num_samples == plan_verification(GAUSS10, 3.0, 1e-3).num_samples
    sub = SubsampledGaussianProfile(1.0, 0.01, 50)
    assert Composition.from_dp_event(sub.to_event()) == Composition.dpsgd(1.0, 0.01, 50)


def test_old_laplace_delta_name_points_to_the_one_profile():
    with pytest.raises(ImportError, match="scale=scale"):
        from dpaudit.accounting import laplace_delta as _  # noqa: F401
    assert laplace_delta(0.3, scale=2.0) == laplace_delta(0.3, 0.5)
