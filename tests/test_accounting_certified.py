"""The certified accounting entry point (dpaudit.accounting.certified) and the RDP bounds it relies on.

Reference values and where they come from:
* the exact profile of mu-GDP (Balle & Wang 2018, Thm 8) for compositions of Gaussian steps;
* the exact one-step Laplace profile ``1 - exp((eps - 1/b)/2)`` (docs/accounting.md §1);
* prv_accountant's ``lower`` end (Gopi, Lee & Wutschitz 2021), a bound below the truth, for
  Poisson-subsampled compositions, computed in the test with a fine error budget;
* dp_accounting's PLD with the optimistic estimate, below the truth.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dpaudit.accounting import Composition, GaussianStep, LaplaceStep, reference
from dpaudit.accounting.certified import (
    AccountingFailure,
    AccountingResult,
    get_delta,
    get_epsilon,
    pld_epsilon,
)
from dpaudit.accounting._pld import pmf_delta as _pmf_delta, pmf_epsilon as _pmf_epsilon
from dpaudit.accounting.prv import delta_upper_bound, epsilon_upper_bound, gaussian_delta, gaussian_epsilon

GAUSS10 = Composition.from_steps([(GaussianStep(2.0), 10)])  # mu = sqrt(10)/2
MU10 = math.sqrt(10.0) / 2.0


def _prv_lower(comp, delta):
    return reference.epsilon("prv", comp, delta, eps_error=1e-3, delta_error=delta * 1e-3)["lower"]


# --------------------------------------------------------------------------------------------
# RDP bounds: never below the truth
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("sigma, q, k, delta", [
    (3.0, 1e-2, 100, 1e-5),       # the remove direction's fractional-order quadrature overflowed to nan here
    (1.1, 256 / 60000, 1000, 1e-5),
    (0.8, 0.05, 50, 1e-6),
    (2.0, 0.2, 10, 1e-8),
])
def test_rdp_epsilon_bound_is_never_below_the_truth(sigma, q, k, delta):
    comp = Composition.dpsgd(sigma, q, k)
    assert epsilon_upper_bound(comp, delta) >= _prv_lower(comp, delta)


def test_rdp_delta_bound_is_never_below_the_truth():
    comp = Composition.dpsgd(3.0, 1e-2, 100)
    for eps in (0.05, 0.1, 0.3):
        # optimistic PLD lies below the true delta(eps)
        opt = reference.delta("pld", comp, eps, value_discretization_interval=1e-4, pessimistic=False)["delta"]
        assert delta_upper_bound(comp, eps) >= opt


# --------------------------------------------------------------------------------------------
# the PMF helpers (exact small cases)
# --------------------------------------------------------------------------------------------
def test_pmf_delta_and_epsilon_invert_each_other_and_charge_noise():
    losses = np.linspace(-1.0, 3.0, 401)
    probs = np.exp(-0.5 * ((losses - 0.5) / 0.6) ** 2)
    probs /= probs.sum()
    for eps in (0.0, 0.4, 1.3):
        d, charge = _pmf_delta(losses, probs, 1e-9, eps)
        direct = 1e-9 + sum(p * (1 - math.exp(eps - l)) for l, p in zip(losses, probs) if l > eps)
        assert d == pytest.approx(direct, rel=1e-12) and charge == 0.0
        e, _ = _pmf_epsilon(losses, probs, 1e-9, d)
        assert e == pytest.approx(eps, abs=1e-9)
    # a negative entry (round-off) is clipped and its size charged once per bin above eps
    noisy = probs.copy()
    noisy[0] = -1e-12
    d, charge = _pmf_delta(losses, noisy, 0.0, 0.4)
    assert charge == pytest.approx(1e-12 * np.count_nonzero(losses > 0.4))
    e_clean, _ = _pmf_epsilon(losses, probs, 0.0, 1e-3)
    e_noisy, c = _pmf_epsilon(losses, noisy, 0.0, 1e-3)
    assert c > 0 and e_noisy >= e_clean  # the charge can only make eps larger
    assert _pmf_epsilon(losses, probs, 0.5, 0.1)[0] == math.inf  # infinity mass above delta


# --------------------------------------------------------------------------------------------
# get_epsilon / get_delta
# --------------------------------------------------------------------------------------------
def test_dpsgd_worked_example_is_certified_and_tight():
    comp = Composition.dpsgd(1.1, 256 / 60000, 14100)
    r = get_epsilon(comp, 1e-5)
    # dp_accounting PLD at grid 1e-5 gives 2.38512; prv_accountant's bracket contains it
    assert r.method == "pld" and r.kind == "upper_bound"
    assert abs(r.epsilon / 2.3852 - 1) < 1e-3
    assert r.epsilon >= _prv_lower(comp, 1e-5)
    assert r.epsilon <= r.rdp_bound
    grids = r.details["grids"]
    assert len(grids) >= 2 and abs(grids[-1]["value"] - grids[-2]["value"]) <= 1e-3 * grids[-1]["value"]
    assert "certified upper bound" in r.statement()


@pytest.mark.parametrize("delta", [1e-3, 1e-7, 1e-10])
def test_gaussian_composition_upper_bound_matches_exact(delta):
    r = get_epsilon(GAUSS10, delta)
    exact = gaussian_epsilon(delta, MU10)
    assert r.kind == "upper_bound"
    assert exact <= r.epsilon <= exact * (1 + 5e-3) + 1e-3


@pytest.mark.parametrize("eps", [0.5, 2.0, 5.0])
def test_gaussian_delta_upper_bound_matches_exact(eps):
    r = get_delta(GAUSS10, eps)
    exact = gaussian_delta(eps, MU10)
    assert r.query == "delta" and r.epsilon == eps and r.kind == "upper_bound"
    assert exact <= r.delta <= exact * 1.01


def test_laplace_single_step_is_exact_up_to_the_grid():
    b = 0.5
    r = get_epsilon(Composition.from_steps([LaplaceStep(b)]), 0.01)
    exact = 1.0 / b + 2.0 * math.log(1.0 - 0.01)  # from delta(eps) = 1 - exp((eps - 1/b) / 2)
    assert exact <= r.epsilon <= exact + 5e-3


def test_tiny_delta_falls_back_from_pld_and_stays_above_the_truth():
    comp = Composition.dpsgd(0.5, 1e-3, 30)
    r = get_epsilon(comp, 1e-13)
    first = r.attempts[0]
    assert first["method"] == "pld" and first["status"] == "failed" and "floating-point" in first["reason"]
    assert r.kind == "upper_bound" and r.method in ("prv", "rdp")
    assert r.epsilon >= _prv_lower(comp, 1e-13)
    assert r.epsilon <= r.rdp_bound


def test_explicit_method_that_cannot_answer_raises_with_the_reason():
    with pytest.raises(ValueError, match="method 'pld' cannot answer.*floating-point"):
        get_epsilon(Composition.dpsgd(0.5, 1e-3, 30), 1e-13, method="pld")
    with pytest.raises(AccountingFailure):
        pld_epsilon(Composition.dpsgd(0.5, 1e-3, 30), 1e-13)


def test_rdp_method_and_json():
    r = get_epsilon(GAUSS10, 1e-5, method="rdp")
    assert r.method == "rdp" and r.epsilon == r.rdp_bound >= gaussian_epsilon(1e-5, MU10)
    d = json.loads(json.dumps(r.to_dict()))
    assert d["kind"] == "upper_bound" and d["statement"].startswith("(") and d["composition"]


def test_fallback_chain_reaches_monte_carlo_then_rdp(monkeypatch):
    from dpaudit.accounting import certified

    def fail(*a, **k):
        raise AccountingFailure("forced")

    monkeypatch.setattr(certified, "_pld_refined", fail)
    monkeypatch.setattr(certified, "_prv_value", fail)
    r = get_epsilon(GAUSS10, 1e-5, num_samples=4000, rng=3)
    assert [a["status"] for a in r.attempts] == ["failed", "failed", "answered"]
    assert r.method in ("mc", "rdp")
    if r.method == "mc":
        assert r.kind == "upper_confidence_bound" and r.confidence == 0.95
        assert r.estimate <= r.epsilon
        assert "Monte Carlo, not certified" in r.statement()
    monkeypatch.setattr(certified, "_mc_value", fail)
    r = get_epsilon(GAUSS10, 1e-5)
    assert r.method == "rdp" and r.kind == "upper_bound" and r.epsilon == r.rdp_bound


def test_answer_above_the_rdp_bound_is_replaced(monkeypatch):
    from dpaudit.accounting import certified

    monkeypatch.setattr(certified, "_pld_refined", lambda *a, **k: {"value": 99.0, "interval": 1e-3, "grids": []})
    r = get_epsilon(GAUSS10, 1e-5)
    assert r.method == "rdp" and r.epsilon == r.rdp_bound < 99.0
    assert r.details["replaced_by_rdp"]["value"] == 99.0


@pytest.mark.parametrize("call, match", [
    (lambda: get_epsilon(GAUSS10, 0.0), "delta must be in"),
    (lambda: get_epsilon(GAUSS10, 1e-5, method="fft"), "method must be one of"),
    (lambda: get_epsilon(GAUSS10, 1e-5, tolerance=0), "tolerance must be a number in"),
    (lambda: get_delta(GAUSS10, -1.0), "epsilon must be finite and >= 0, got -1.0"),
    (lambda: get_delta(GAUSS10, float("nan")), "epsilon must be a finite number"),
    (lambda: get_epsilon(GAUSS10, 1e-5, confidence=1.5), "confidence must be a number in"),
])
def test_bad_input_names_the_value(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_result_is_frozen():
    r = get_epsilon(GAUSS10, 1e-5, method="rdp")
    assert isinstance(r, AccountingResult)
    with pytest.raises(AttributeError):
        r.epsilon = 0.0  # type: ignore[misc]


# --------------------------------------------------------------------------------------------
# online
# --------------------------------------------------------------------------------------------
def test_online_pld_matches_offline_pld_on_the_same_grid():
    from dpaudit.accounting import SubsampledGaussianStep
    from dpaudit.accounting.pld_online import pld_online_epsilons

    comp = Composition.from_steps([(SubsampledGaussianStep(1.0, 0.01), 30), (GaussianStep(3.0), 3),
                                   (SubsampledGaussianStep(0.8, 0.05), 7)])
    out = pld_online_epsilons(comp, [1e-5, 1e-8], interval=1e-3, steps=[1, 17, 30, 33, 40])
    assert out["steps"] == [1, 17, 30, 33, 40] and out["unresolved"] == 0
    for j, delta in enumerate((1e-5, 1e-8)):
        for i, k in enumerate(out["steps"]):
            pre = comp.prefix(k)
            offline = reference.epsilon("pld", pre, delta, value_discretization_interval=1e-3)["epsilon"]
            truth_low = reference.epsilon("pld", pre, delta, value_discretization_interval=1e-4,
                                          pessimistic=False)["epsilon"]
            assert out["epsilon"][j][i] == pytest.approx(offline, rel=1e-6, abs=1e-9)
            assert out["epsilon"][j][i] >= truth_low


def test_get_epsilon_online_is_certified_and_close_to_exact_gaussian():
    from dpaudit.accounting.certified import get_epsilon_online

    comp = Composition.from_steps([(GaussianStep(2.0), 40)])
    r = get_epsilon_online(comp, 1e-6, steps=[1, 4, 40])
    assert r.kind == "upper_bound" and r.method == "pld" and r.steps == (1, 4, 40)
    for k, e in zip(r.steps, r.epsilon):
        exact = gaussian_epsilon(1e-6, math.sqrt(k) / 2.0)
        assert exact <= e <= exact * (1 + r.details["online_tolerance"]) + 1e-3
    assert all(e <= b for e, b in zip(r.epsilon, r.rdp_bound))
    with pytest.raises(ValueError, match="steps must lie in 1..40"):
        get_epsilon_online(comp, 1e-6, steps=[0, 3])
    with pytest.raises(ValueError, match="method must be one of"):
        get_epsilon_online(comp, 1e-6, method="prv")


def test_get_epsilon_online_tiny_delta_falls_back_and_never_exceeds_rdp(monkeypatch):
    from dpaudit.accounting import certified

    comp = Composition.dpsgd(0.5, 1e-3, 12)
    r = certified.get_epsilon_online(comp, 1e-13, num_samples=2000, rng=0)
    assert r.attempts[0]["method"] == "pld" and r.attempts[0]["status"] == "failed"
    assert r.kind in ("upper_bound", "upper_confidence_bound")
    assert all(e <= b for e, b in zip(r.epsilon, r.rdp_bound))
    # the last step is never below the truth's lower end
    assert r.epsilon[-1] >= _prv_lower(comp, 1e-13)


def test_huge_grids_are_refused_before_they_are_built():
    # sigma=0.5, q=0.01, k=1e5, delta=1e-13: prv_accountant's grid would need ~9e7 bins (it ran out of
    # 24 GB of memory here); the precheck refuses it from the domain size alone
    from dpaudit.accounting.certified import MAX_BINS, _prv_precheck

    with pytest.raises(AccountingFailure, match="over the memory cap"):
        _prv_precheck(Composition.dpsgd(0.5, 0.01, 100_000), 1e-2, 1e-16, 1e-13)
    with pytest.raises(AccountingFailure, match="would refuse delta=1e-13"):
        _prv_precheck(Composition.dpsgd(0.5, 1e-3, 1000), 1e-3, 1e-16, 1e-13)  # refused by prv itself
    _prv_precheck(Composition.dpsgd(1.1, 0.01, 100), 1e-2, 1e-8, 1e-5)  # an ordinary case passes
    assert MAX_BINS >= 1 << 20


def test_one_conversion_between_compositions_and_dp_events_serves_both_directions():
    # issue 38: Composition <-> DpEvent goes through prv.convert only; an event converts back to
    # the same composition, every old entry point gives convert's event, and one composition is
    # converted once however many grids and accountants ask
    import dp_accounting as dpa

    from dpaudit.accounting import prv
    from dpaudit.accounting._pld import build_pld
    from dpaudit.privacy import profiles as pr
    from dpaudit.privacy.events import UnsupportedEventError, leaf_event, leaf_parameters

    comp = Composition.from_steps([(prv.SubsampledGaussianStep(1.3, 0.03), 7), (GaussianStep(2.0), 1),
                                   (LaplaceStep(4.0), 2)])
    event = prv.convert(comp, "event")
    assert event == dpa.ComposedDpEvent([
        dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.03, dpa.GaussianDpEvent(1.3)), 7),
        dpa.GaussianDpEvent(2.0), dpa.SelfComposedDpEvent(dpa.LaplaceDpEvent(4.0), 2)])
    assert prv.convert(event, "composition") == comp == Composition.from_dp_event(event) == prv.as_composition(event)
    assert comp.to_event() == prv.as_dp_event(comp) == reference.to_dp_event(comp) == prv.as_dp_event(event) == event
    assert GaussianStep(2.0).to_event() == leaf_event("gaussian", 2.0) == dpa.GaussianDpEvent(2.0)
    assert leaf_parameters(leaf_event("gaussian", 1.3, 0.03)) == ("gaussian", 1.3, 0.03)
    assert prv.as_composition(pr.SubsampledGaussianProfile(1.3, 0.03, 7)) == Composition.dpsgd(1.3, 0.03, 7)
    fresh = Composition.dpsgd(1.7, 0.011, 13)
    before = prv._event_of.cache_info().misses
    for interval in (1e-2, 5e-3):
        build_pld(fresh, interval)
    reference.epsilon("rdp", fresh, 1e-5)
    assert prv._event_of.cache_info().misses == before + 1
    with pytest.raises(ValueError, match="to must be one of"):
        prv.convert(comp, "dp_event")
    with pytest.raises(UnsupportedEventError, match="only the Gaussian leaf"):
        leaf_event("laplace", 1.0, 0.5)
    with pytest.raises(ValueError, match="cannot build a composition from int"):
        prv.convert(3, "event")
