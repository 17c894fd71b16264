"""Monte Carlo accountant: one-sided upper confidence bounds, diagnostics, refusal, no-crash
settings and the PLD cross-check (fast tests; the coverage runs are in test_accounting_slow.py
and benchmarks/mc_coverage.py).

Truths: the exact mu-GDP profile for Gaussian compositions; prv_accountant's upper end or
dp_accounting's pessimistic PLD (both upper estimates, so covering them is the harder test) for
subsampled ones, computed in the test through ``dpaudit.accounting.reference``. Statistical
assertions use fixed seeds; each says how likely it is to fail by chance.
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings

import numpy as np
import pytest
from scipy import integrate

from dpaudit.accounting import (
    Composition,
    GaussianStep,
    MonteCarloAccountant,
    MonteCarloCrossCheckWarning,
    SubsampledGaussianStep,
    cross_check,
    epsilon_upper_bound,
    gaussian_epsilon,
    reference,
    sample_privacy_loss,
)
from dpaudit.accounting import monte_carlo as mc
from dpaudit.accounting.prv import feasible_tilt, sampler_acceptance

from _harness import assert_coverage_at_least

GAUSS10 = Composition.from_steps([(GaussianStep(2.0), 10)])
MU10 = math.sqrt(10.0) / 2.0


# --------------------------------------------------------------------------------------------
# the bound itself
# --------------------------------------------------------------------------------------------
def test_nonnegative_upper_bound_algebra():
    assert mc.nonnegative_upper_bound(0.3, 0.0, 100, 0.95) == pytest.approx(0.3)
    b = mc.nonnegative_upper_bound(1e-9, 1e-5, 10_000, 0.95)
    # the defining equation: m (U - mean)^2 / (2 B U) = ln(1/alpha)
    assert 10_000 * (b - 1e-9) ** 2 / (2 * 1e-5 * b) == pytest.approx(math.log(20.0), rel=1e-9)
    assert mc.nonnegative_upper_bound(1e-9, 1e-5, 10_000, 0.99) > b > 1e-9
    with pytest.raises(ValueError, match="confidence"):
        mc.nonnegative_upper_bound(0.1, 1.0, 10, 1.5)


def test_nonnegative_upper_bound_covers_heavy_tailed_terms():
    # terms B with probability p, else 0: the sample mean is 0 in most sets of m = 200 draws
    # (p m = 0.1), the situation where the Wald bound fails; the bound must still cover at 95%.
    rng = np.random.default_rng(7)
    B, p, m, reps = 1.0, 5e-4, 200, 4000
    hits = rng.binomial(m, p, size=reps)
    ucb = np.array([mc.nonnegative_upper_bound(h * B / m, B, m, 0.95) for h in hits])
    covered = int(np.sum(ucb >= B * p))
    wald = int(np.sum(hits * B / m + 1.645 * np.sqrt(hits * (1 - hits / m)) * B / m / math.sqrt(m - 1) >= B * p))
    assert_coverage_at_least(covered, reps, 0.95)
    assert wald < 0.95 * reps  # the normal approximation does undercover here (about 10% coverage)


@pytest.mark.parametrize("estimator, tilts", [("is", (3.0,)), ("is", (0.0, 2.0, 5.5)), ("is-cmc", (1.0, 4.0))])
def test_every_importance_sampling_term_is_below_the_a_priori_bound(estimator, tilts):
    comp = Composition.dpsgd(0.8, 0.01, 50)
    for direction in ("remove", "add"):
        s = sample_privacy_loss(comp, 4000, direction=direction, estimator=estimator, tilts=tilts, rng=3)
        for eps in (0.0, 0.5, 2.0):
            log_b = mc.term_log_bound(comp, direction, s.tilts, eps)
            t = mc._is_terms(s, eps)
            assert np.all(t <= math.exp(log_b) * (1 + 1e-9))
            if estimator == "is-cmc":  # cmc column <= k B, cond column <= B (docs/accounting.md §3)
                y = s.components(eps)
                assert np.all(y[:, 1] <= comp.num_steps * math.exp(log_b) * (1 + 1e-9))
                assert np.all(y[:, 2] <= math.exp(log_b) * (1 + 1e-9))


def test_term_diagnostics():
    d = mc.term_diagnostics(np.array([1.0, 1.0, 1.0, 1.0, 0.0]))
    assert d == {"ess": pytest.approx(4.0), "max_term_share": pytest.approx(0.25), "nonzero": 4}
    d = mc.term_diagnostics(np.array([1e-300, 0.0, 1e-310]))
    assert d["ess"] == pytest.approx(1.0) and d["max_term_share"] == pytest.approx(1.0)
    assert mc.term_diagnostics(np.zeros(3)) == {"ess": 0.0, "max_term_share": 1.0, "nonzero": 0}


# --------------------------------------------------------------------------------------------
# result fields
# --------------------------------------------------------------------------------------------
def test_epsilon_estimate_has_upper_bound_and_diagnostics():
    r = MonteCarloAccountant(4000, rng=1).get_epsilon(GAUSS10, 1e-6)
    truth = gaussian_epsilon(1e-6, MU10)
    assert r.epsilon <= r.epsilon_upper <= epsilon_upper_bound(GAUSS10, 1e-6) + 1e-12
    assert r.epsilon_upper >= truth  # fails with probability <= 5% for this fixed seed
    assert r.upper_method in ("maurer", "rdp") and r.confidence == 0.95
    assert 1.0 <= r.ess <= 4000 and 0.0 < r.max_term_share <= 1.0 and isinstance(r.trusted, bool)
    d = json.loads(json.dumps(r.to_dict()))
    for key in ("epsilon_upper", "upper_method", "ess", "max_term_share", "trusted", "cross_check"):
        assert key in d
    per = d["per_direction"]["remove"]
    assert per["pilot_history"][0]["epsilon"] == pytest.approx(epsilon_upper_bound(GAUSS10, 1e-6, "remove"))
    assert 1 <= len(per["pilot_history"]) <= mc.PILOT_MAX_ITER


def test_delta_estimate_has_upper_bound():
    comp = Composition.dpsgd(1.1, 256 / 60000, 200)
    r = MonteCarloAccountant(4000, rng=2).get_delta(comp, 1.0)
    pld = reference.delta("pld", comp, 1.0)["delta"]
    assert r.delta <= r.delta_upper and r.delta_upper >= pld * (1 - 1e-3)  # P(fail) <= 5% (seeded)
    d = r.to_dict()
    assert d["delta_upper"] == r.delta_upper and d["trusted"] == r.trusted
    for v in r.per_direction.values():
        assert v["delta_upper"] <= v["rdp_upper_bound"] * (1 + 1e-12)


def test_online_estimate_has_upper_bound_at_every_step():
    r = MonteCarloAccountant(2000, confidence=0.999, rng=4).get_epsilon_online(GAUSS10, 1e-6)
    assert len(r.epsilon_upper) == 10 and r.upper_checkpoints[-1] == 10
    for i, (e, u) in enumerate(zip(r.epsilon, r.epsilon_upper), start=1):
        truth = gaussian_epsilon(1e-6, math.sqrt(i) / 2.0)
        assert u >= truth  # pointwise 99.9% bounds; P(any fails) <= 1% (seeded)
        # capped by the RDP bound of the step (on the coarser tilt grid of online accounting)
        assert u <= 1.01 * epsilon_upper_bound(Composition.from_steps([(GaussianStep(2.0), i)]), 1e-6)
    assert "epsilon_upper" in r.to_dict()


def test_pilot_iterates_until_the_tilt_settles():
    comp = Composition.dpsgd(0.8, 0.01, 100)
    r = MonteCarloAccountant(4000, rng=5).get_epsilon(comp, 1e-8)
    for d, v in r.per_direction.items():
        if v.get("skipped"):
            continue
        h = v["pilot_history"]
        assert h[0]["epsilon"] == pytest.approx(epsilon_upper_bound(comp, 1e-8, d))
        for a, b in zip(h, h[1:]):
            assert b["epsilon"] == a["pilot_epsilon"]  # each pilot is placed at the previous estimate
        if len(h) < mc.PILOT_MAX_ITER:  # stopped because the tilt moved by < PILOT_RTOL
            last = mc._choose_tilts(comp, d, [h[-1]["pilot_epsilon"]])[-1]
            assert abs(last - h[-1]["tilts"][-1]) <= mc.PILOT_RTOL * h[-1]["tilts"][-1]
        assert v["pilot_epsilon"] == h[-1]["pilot_epsilon"]


# --------------------------------------------------------------------------------------------
# untrusted estimates: refuse or widen
# --------------------------------------------------------------------------------------------
HARD = Composition.dpsgd(0.5, 1e-3, 2)  # plain IS has an ESS of a few dozen at delta = 1e-13


def test_untrusted_estimate_is_refused_with_a_clear_message():
    with pytest.raises(ValueError, match=r"effective sample size .* Increase num_samples"):
        MonteCarloAccountant(2000, estimator="is", rng=0, untrusted="raise").get_epsilon(HARD, 1e-13)
    with pytest.raises(ValueError, match="untrusted"):
        MonteCarloAccountant(2000, untrusted="ignore")


def test_untrusted_estimate_is_widened_and_still_covers():
    r = MonteCarloAccountant(2000, estimator="is", rng=0).get_epsilon(HARD, 1e-13)
    assert not r.trusted and (r.ess < mc.MIN_ESS or r.max_term_share > mc.MAX_TERM_SHARE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        truth = reference.epsilon("prv", HARD, 1e-13)["upper"]
    assert r.epsilon_upper >= truth  # rigorous bound; P(fail) <= 5% (seeded)


def test_untrusted_wald_bound_of_the_paper_estimator_is_widened_to_rdp():
    comp = Composition.dpsgd(0.5, 1e-3, 1000)
    r = MonteCarloAccountant(2000, estimator="is-paper", rng=0).get_epsilon(comp, 1e-13)
    paper = r.per_direction["remove"]
    assert paper["estimator"] == "is-paper" and not paper["trusted"]  # the branch under test is taken
    assert paper["upper_method"] == "rdp" and paper["epsilon_upper"] == paper["rdp_upper_bound"]


# --------------------------------------------------------------------------------------------
# no crash anywhere: tilts the samplers can draw
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("sigma, q, lam, direction", [(0.5, 1e-3, 3.44, "remove"), (1.0, 0.01, 2.5, "remove"),
                                                      (0.3, 0.5, 0.7, "remove"), (1.0, 0.1, 5.0, "add"),
                                                      (0.5, 0.5, 40.0, "add")])
def test_sampler_acceptance_matches_quadrature(sigma, q, lam, direction):
    def a(t):
        return 1 - q + q * math.exp((2 * t - 1) / (2 * sigma ** 2))

    def e_q(f):  # E_{N(0, sigma^2)} f
        return integrate.quad(lambda t: f(t) * math.exp(-t * t / (2 * sigma ** 2)), -40 * sigma, 40 * sigma,
                              limit=400, points=[0.0, 0.5, 5.0])[0] / (sigma * math.sqrt(2 * math.pi))

    if direction == "remove":
        n = math.ceil(1 + lam)
        want = e_q(lambda t: a(t) ** (1 + lam)) / e_q(lambda t: a(t) ** n) * (1 - q) ** (n - 1 - lam)
    else:
        want = e_q(lambda t: ((1 - q) / a(t)) ** lam)
    assert sampler_acceptance(SubsampledGaussianStep(sigma, q), lam, direction) == pytest.approx(want, rel=1e-6)


def test_feasible_tilt():
    comp = Composition.dpsgd(0.5, 1e-3, 2)
    assert sampler_acceptance(comp.segments[0][0], 3.44, "remove") < 0.1  # the tilt that used to crash
    assert feasible_tilt(comp, 3.44, "remove") == 3.0
    assert feasible_tilt(comp, 2.5, "remove") == 2.5 or sampler_acceptance(comp.segments[0][0], 2.5, "remove") < 0.1
    add = Composition.dpsgd(2.0, 0.5, 3)
    lam = feasible_tilt(add, 40.0, "add")
    assert lam < 40.0 and sampler_acceptance(add.segments[0][0], lam, "add") >= 0.1 - 1e-9
    assert feasible_tilt(GAUSS10, 123.0, "remove") == 123.0


EXTREME = [  # sigma, q, k, delta, truth: 'exact' (mu-GDP), 'prv' (upper end), 'pld' or None (neither answers)
    (0.5, 1e-3, 2, 1e-13, "prv"), (0.5, 1e-3, 30, 1e-13, "prv"), (0.5, 1e-3, 1000, 1e-13, None),
    (1.0, 1.0, 10, 1e-15, "exact"), (1.0, 0.5, 10, 1e-15, None), (0.3, 1e-3, 1, 1e-15, "pld"),
    (0.3, 0.5, 1, 1e-15, "pld"), (0.5, 1.0, 1, 1e-15, "exact"),
]


@pytest.mark.parametrize("sigma, q, k, delta, truth", EXTREME)
def test_extreme_settings_finish_and_bound_the_truth(sigma, q, k, delta, truth):
    comp = Composition.dpsgd(sigma, q, k)
    r = MonteCarloAccountant(2000, rng=11).get_epsilon(comp, delta)
    assert math.isfinite(r.epsilon) and r.epsilon <= r.epsilon_upper <= epsilon_upper_bound(comp, delta) + 1e-9
    if truth == "exact":
        value = gaussian_epsilon(delta, math.sqrt(k) / sigma)
    elif truth is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = reference.epsilon(truth, comp, delta)
        value = ref["upper"] if truth == "prv" else ref["epsilon"]
    if truth is not None:
        assert r.epsilon_upper >= value  # P(fail) <= 5% per setting (seeded)


@pytest.mark.parametrize("estimator", ["is", "cmc", "simple", "is-paper"])
def test_tiny_delta_finishes_with_every_estimator(estimator):
    r = MonteCarloAccountant(1000, estimator=estimator, rng=0).get_epsilon(Composition.dpsgd(0.5, 1e-3, 30), 1e-13)
    assert r.epsilon_upper >= r.epsilon >= 0.0


def test_tiny_delta_finishes_for_delta_queries_and_online():
    comp = Composition.dpsgd(0.5, 1e-3, 30)
    r = MonteCarloAccountant(1000, rng=0).get_delta(comp, 8.0)
    assert r.delta_upper >= r.delta > 0
    o = MonteCarloAccountant(1000, rng=0).get_epsilon_online(comp, 1e-13)
    assert all(u >= 0 for u in o.epsilon_upper) and len(o.epsilon_upper) == 30


# --------------------------------------------------------------------------------------------
# cross-check against PLD
# --------------------------------------------------------------------------------------------
def test_cross_check_agrees_when_monte_carlo_is_right():
    comp = Composition.dpsgd(1.1, 256 / 60000, 200)
    with warnings.catch_warnings():
        warnings.simplefilter("error", MonteCarloCrossCheckWarning)
        r = MonteCarloAccountant(4000, rng=6).get_epsilon(comp, 1e-6, cross_check=True)
    c = r.cross_check
    assert c["available"] and not c["flagged"]
    assert c["value"] == pytest.approx(reference.epsilon("pld", comp, 1e-6)["epsilon"])
    assert c["excess"] == pytest.approx(c["value"] - r.epsilon_upper)


def test_cross_check_warns_when_pld_is_above_the_monte_carlo_bound():
    comp = Composition.dpsgd(1.1, 256 / 60000, 200)
    r = MonteCarloAccountant(4000, rng=6).get_epsilon(comp, 1e-6)
    low = dataclasses.replace(r, epsilon=0.5 * r.epsilon, epsilon_upper=0.55 * r.epsilon)  # an under-report
    with pytest.warns(MonteCarloCrossCheckWarning, match="may under-report"):
        out = cross_check(low, comp)
    assert out.cross_check["flagged"] and out.cross_check["excess"] > out.cross_check["half_width"]
    d = MonteCarloAccountant(4000, rng=6).get_delta(comp, 1.0)
    with pytest.warns(MonteCarloCrossCheckWarning):
        cross_check(dataclasses.replace(d, delta=d.delta / 10, delta_upper=d.delta / 9), comp)
    with pytest.raises(ValueError, match="EpsilonEstimate"):
        cross_check({"epsilon": 1.0}, comp)


def test_cross_check_records_when_pld_does_not_answer():
    comp = Composition.dpsgd(1.0, 0.5, 10)  # PLD returns inf at delta = 1e-15
    r = MonteCarloAccountant(1000, rng=0).get_epsilon(comp, 1e-15)
    with warnings.catch_warnings():
        warnings.simplefilter("error", MonteCarloCrossCheckWarning)
        out = cross_check(r, comp)
    assert out.cross_check["available"] is False and "error" in out.cross_check


def test_a_sampler_that_cannot_finish_becomes_a_value_error(monkeypatch):
    def stuck(*args, **kwargs):
        raise RuntimeError("rejection sampler did not finish; the tilt is too large for this step")

    monkeypatch.setattr(mc, "_run_offline", stuck)
    with pytest.raises(ValueError, match="tilted sampler could not draw"):
        MonteCarloAccountant(1000, rng=0).get_epsilon(Composition.dpsgd(0.5, 1e-3, 2), 1e-13)
    with pytest.raises(ValueError, match="tilted sampler could not draw"):
        MonteCarloAccountant(1000, rng=0).get_delta(Composition.dpsgd(0.5, 1e-3, 2), 8.0)
