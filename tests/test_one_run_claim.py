"""One-run audits against the claimed mechanism (``dpaudit.scores.one_run_claim``,
``docs/scores.md`` §6d): the trade-off function of a privacy profile, the f-DP test with a
profile claim against a linear program, the family bound, the rule chosen from the claim, the
DP-SGD family, and seeded coverage on mechanisms exactly at their claim (ideal and adversarial)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from _harness import assert_rate_above, assert_rate_at_most
from dpaudit.privacy.profiles import gaussian_delta, gaussian_epsilon
from dpaudit.scores import fdp_rejects, guess_grid, one_run_audit
from dpaudit.scores.one_run import _guess_counts, approx_dp_inverse_tradeoff, fdp_population, gdp_inverse_tradeoff
from dpaudit.scores.one_run_claim import (
    GaussianDPFamily,
    OneRunClaim,
    choose_cell,
    claim_bound,
    max_inverse_tradeoff,
    profile_inverse_tradeoff,
)

# ----------------------------------------------------------------------------- trade-off functions


def test_profile_inverse_tradeoff_is_the_envelope_of_its_lines(rng):
    eps = np.linspace(0.0, 6.0, 301)
    deltas = 0.4 * np.exp(-1.7 * eps)
    h = profile_inverse_tradeoff(eps, deltas)
    for r in rng.random(500):
        direct = max(0.0, float(np.max((r - deltas) * np.exp(-eps))), float(np.max(1 - deltas - np.exp(eps) * (1 - r))))
        assert h(r) == pytest.approx(direct, abs=1e-14)
    one, ref = profile_inverse_tradeoff([1.3], [1e-3]), approx_dp_inverse_tradeoff(1.3, 1e-3)
    assert all(one(r) == pytest.approx(ref(r), abs=1e-15) for r in rng.random(200))
    assert profile_inverse_tradeoff([0.5, 1.0], [np.nan, 1.0])(0.3) == 0.0  # nan and 1 say nothing
    with pytest.raises(ValueError):
        profile_inverse_tradeoff([-1.0], [0.1])
    with pytest.raises(ValueError):
        profile_inverse_tradeoff([1.0, 2.0], [0.1])
    with pytest.raises(ValueError):
        profile_inverse_tradeoff([1.0], [1.5])


def test_a_gaussian_profile_gives_gdp_from_below():
    """The exact GDP profile read at finitely many epsilons gives a lower bound on ``h*`` of GDP
    (a weaker claim: the safe side), within 1 % of it where the one-run test reads it."""
    mu = 0.8
    eps = np.linspace(0.0, 12.0, 1201)
    h = profile_inverse_tradeoff(eps, gaussian_delta(eps, mu))
    g = gdp_inverse_tradeoff(mu)
    for r in np.geomspace(1e-5, 0.9, 60):
        assert h(r) <= g(r) * (1 + 1e-9) + 1e-15
        assert h(r) >= 0.99 * g(r)


# ----------------------------------------------------------------------------- the f-DP test, exactly


def _lp_largest_tail(m, k, v, lines):
    """Largest P[V >= v] over laws of V on 0..k with H_{j-1} >= a R_j + b for every line (a, b)
    of the claim's h* and every j (docs/scores.md §6c): a linear program."""
    K = k + 1
    rows, rhs = [], []
    for j in range(1, k + 1):
        R = np.array([l / m if l >= j else 0.0 for l in range(K)])
        H = np.array([(k - l) / m if l >= j - 1 else 0.0 for l in range(K)])
        for a, b in lines:
            rows.append(a * R - H)
            rhs.append(-b)
    c = -np.array([1.0 if l >= v else 0.0 for l in range(K)])
    res = optimize.linprog(c, A_ub=np.array(rows), b_ub=np.array(rhs), A_eq=np.ones((1, K)), b_eq=[1.0],
                           bounds=[(0, None)] * K, method="highs")
    assert res.status == 0
    return -res.fun


@pytest.mark.parametrize("m,k", [(20, 10), (40, 20), (40, 40), (60, 15)])
def test_fdp_test_with_a_profile_claim_rejects_exactly_above_the_linear_programs_optimum(m, k):
    """With the h* of a whole privacy profile (many lines), the level-by-level construction refutes
    exactly when no law obeying the inequalities reaches the level: never below (unsound), never
    far above. Exactness also makes the test monotone in h* (a stronger claim has more
    constraints), which the family bound's coverage argument uses."""
    worst_below = worst_above = 0.0
    for mu in (0.5, 1.5):
        eps = np.linspace(0.0, 8.0, 41)
        deltas = gaussian_delta(eps, mu)
        h = profile_inverse_tradeoff(eps, deltas)
        lines = [(0.0, 0.0)] + [(math.exp(-e), -d * math.exp(-e)) for e, d in zip(eps, deltas)] + \
                [(math.exp(e), 1 - d - math.exp(e)) for e, d in zip(eps, deltas)]
        for v in range(k // 2 + 1, k + 1, max(1, k // 6)):
            star = _lp_largest_tail(m, k, v, lines)
            if not fdp_rejects(h, m, k, v, 1.0):
                rec = 1.0
            else:
                lo, hi = 0.0, 1.0
                for _ in range(40):
                    mid = 0.5 * (lo + hi)
                    lo, hi = (lo, mid) if fdp_rejects(h, m, k, v, mid) else (mid, hi)
                rec = hi
            worst_below = min(worst_below, rec - star)
            worst_above = max(worst_above, rec - star)
    assert worst_below > -1e-7
    assert worst_above < 1e-6


def test_one_sided_rules_use_half_the_population():
    assert fdp_population(1000, (40, 0)) == fdp_population(1000, (0, 40)) == 500.0
    assert fdp_population(1000, (-40, 0)) == 500.0
    assert fdp_population(1000, (20, 20)) == 1000.0
    # halving makes the same counts refute more (a stronger inequality), never less
    h = gdp_inverse_tradeoff(0.6)
    refuted = [(k, v) for k in (50, 100, 400) for v in range(k // 2 + 1, k + 1, 7)]
    for k, v in refuted:
        if fdp_rejects(h, 1000, k, v, 0.05):
            assert fdp_rejects(h, 500, k, v, 0.05)


# ----------------------------------------------------------------------------- the family bound


def _gaussian_run(mu, m, rng):
    mask = rng.random(m) < 0.5
    return rng.standard_normal(m) + mu * mask, mask


def test_claim_bound_on_null_scores_refutes_nothing_and_on_a_leak_refutes_the_claim(rng):
    fam = GaussianDPFamily(1.0)  # f_s = G_{1/s}
    m = 4000
    x, mask = _gaussian_run(0.0, m, rng)
    cells = [(200, 0), (100, 100), (1000, 1000)]
    ms = mask[np.argsort(x)]
    out = claim_bound(ms, cells, [0.05 / 3] * 3, fam, 2.0, delta=1e-5)
    assert out.epsilon_lower_bound == 0.0 and not out.claim_refuted and out.cell is None
    x, mask = _gaussian_run(1.5, m, rng)  # true mu 1.5 against a claimed 0.5
    ms = mask[np.argsort(x)]
    out = claim_bound(ms, cells, [0.05 / 3] * 3, fam, 2.0, delta=1e-5)
    assert out.claim_refuted and out.parameter_bound < 2.0
    assert out.epsilon_lower_bound > gaussian_epsilon(1e-5, 0.5)
    # the reported parameter is refuted by the winning rule, and the grid point below it is not
    k, v = _guess_counts(ms, out.cell)
    mp = fdp_population(m, out.cell)
    assert fdp_rejects(fam.inverse_tradeoff(out.parameter_bound), mp, k, v, out.level)
    assert not fdp_rejects(fam.inverse_tradeoff(out.parameter_bound / 1.01), mp, k, v, out.level)
    assert out.epsilon_lower_bound == pytest.approx(gaussian_epsilon(1e-5, 1.0 / out.parameter_bound))
    with pytest.raises(ValueError):
        claim_bound(ms, cells, [0.05], fam, 2.0, delta=1e-5)
    with pytest.raises(ValueError):
        claim_bound(ms, cells, [0.01] * 3, fam, -1.0, delta=1e-5)


def test_the_verdict_uses_the_strengthened_claim():
    """``claim_inverse`` (the claim and its accountant's (eps, delta) together) decides at s_claim."""
    fam = GaussianDPFamily(1.0)
    weak, strong = fam.inverse_tradeoff(2.0), approx_dp_inverse_tradeoff(0.01, 0.0)
    both = max_inverse_tradeoff(weak, strong)
    assert all(both(r) >= max(weak(r), strong(r)) - 1e-15 for r in np.linspace(0, 1, 101))
    mask = np.array([False] * 900 + [True] * 100)  # the top 100 all included
    no = claim_bound(mask, [(100, 0)], [0.05], fam, 2.0, delta=1e-5)
    yes = claim_bound(mask, [(100, 0)], [0.05], fam, 2.0, delta=1e-5, claim_inverse=both)
    assert yes.claim_refuted and yes.parameter_bound <= no.parameter_bound


def test_choose_cell_reads_only_the_simulations_and_prefers_stable_rules():
    fam = GaussianDPFamily(1.0)
    sims = []
    for r in range(3):
        x, mask = _gaussian_run(1.0, 3000, np.random.default_rng([5, r]))
        sims.append(mask[np.argsort(x)])
    cands = [(5, 0), (60, 60), (300, 300), (1400, 1400)]
    c1 = choose_cell(sims, cands, fam, 1.0, level=0.04, delta=1e-5)
    assert c1 == choose_cell(sims, cands, fam, 1.0, level=0.04, delta=1e-5) and c1 in cands
    assert c1 != (5, 0)  # five guesses cannot certify much however precise
    with pytest.raises(ValueError):
        choose_cell([], cands, fam, 1.0, level=0.04, delta=1e-5)
    with pytest.raises(ValueError):
        choose_cell(sims, [], fam, 1.0, level=0.04, delta=1e-5)


def test_one_run_audit_with_a_claim_keeps_the_grid_and_adds_the_chosen_rule(rng):
    mu, m = 0.8, 4000
    x, mask = _gaussian_run(mu, m, rng)
    claim = OneRunClaim(GaussianDPFamily(1.0), 1.0 / mu, simulate=lambda g: _gaussian_run(mu, m, g))
    a = one_run_audit(x, mask, beta=0.05, claim=claim, rng=0)
    rule = tuple(a.details["claim_rule"])
    assert a.details["levels"][1] == pytest.approx(0.8 * 0.05)  # the chosen rule's share
    assert a.claim is not None and 0 < a.epsilon_lower_bound_claim <= gaussian_epsilon(1e-5, mu)
    assert a.to_dict()["claim"]["epsilon_lower_bound"] == a.epsilon_lower_bound_claim
    plain = one_run_audit(x, mask, beta=0.05, rng=0)
    assert plain.claim is None and math.isnan(plain.epsilon_lower_bound_claim)
    assert rule in [tuple(c) for c in guess_grid(m, ratio=2 ** 0.25)]
    with pytest.raises(ValueError):
        OneRunClaim(GaussianDPFamily(1.0), 0.0)
    with pytest.raises(ValueError):
        OneRunClaim(GaussianDPFamily(1.0), 1.0, weight=1.5)


# ----------------------------------------------------------------------------- the DP-SGD family


def test_dpsgd_family_is_gdp_at_q1_and_the_pld_profile_below():
    from dpaudit.accounting import Composition, get_delta, get_epsilon
    from dpaudit.dpsgd.bounds import _optimistic_epsilon, dpsgd_family, dpsgd_profile

    fam = dpsgd_family(1.0, 16)
    assert isinstance(fam, GaussianDPFamily) and fam.mu(2.0) == pytest.approx(2.0)
    sigma, q, T = 1.2, 0.1, 40
    prof = dpsgd_profile(sigma, q, T)
    comp = Composition.dpsgd(sigma, q, T)
    for e in (0.0, 1.0):
        cert = float(get_delta(comp, e).delta)
        mine = float(dpsgd_profile(sigma, q, T, [e])[0])
        assert mine >= 0.999 * cert and mine <= 1.05 * cert + 1e-12  # an upper bound, close
    assert np.all(np.diff(prof) <= 1e-15) and prof[0] <= 1.0
    acc = float(get_epsilon(comp, 1e-5).epsilon)
    low = _optimistic_epsilon(sigma, q, T, 1e-5)
    assert 0.95 * acc <= low <= acc  # a lower estimate, within the documented 2 % (plus rounding)
    fam = dpsgd_family(q, T)
    assert fam.epsilon(sigma, 1e-5) == low
    g = fam.inverse_tradeoff(sigma)
    assert g(0.01) > fam.inverse_tradeoff(0.8 * sigma)(0.01)  # more noise, a stronger claim
    with pytest.raises(ValueError):
        dpsgd_profile(-1.0, q, T)


# ----------------------------------------------------------------------------- coverage


def _rr_branch_epsilon(tau0, profile):
    """Largest eps_L such that randomized response at eps_L on every canary, run with probability
    tau0 (a public coin; otherwise nothing is released), stays within the claimed profile:
    tau0 (e^L - e^e) / (1 + e^L) <= delta(e) for every e in [0, L]."""
    def fits(L):
        e = np.linspace(0.0, L, 801)
        return bool(np.all(tau0 * (np.exp(L) - np.exp(e)) / (1 + np.exp(L)) <= profile(e) * (1 - 1e-6)))
    lo, hi = 0.0, 12.0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def _mixture_run(rng, m, tau0, eps_l):
    """One run of the adversarial mixture: with probability tau0 every canary's score is its
    inclusion bit through randomized response at eps_l (ties broken by a tiny noise), otherwise
    pure noise. Per canary it is f-DP for the claim (the coin is public), and its canaries are
    dependent: the worst case of a one-run test is a leak concentrated in few runs."""
    mask = rng.random(m) < 0.5
    if rng.random() < tau0:
        keep = rng.random(m) < 1.0 / (1.0 + math.exp(-eps_l))
        return np.where(keep, mask, ~mask) + 1e-3 * rng.standard_normal(m), mask
    return rng.standard_normal(m), mask


@pytest.mark.slow
def test_claim_bound_coverage_on_mechanisms_exactly_at_their_claim():
    """Over seeded runs at beta = 0.2, the family bound exceeds the claim's epsilon (a false
    accusation of a mechanism that keeps its claim) in at most a beta fraction, for: the ideal
    Gaussian mechanism at q = 1 (GDP), the ideal Poisson-subsampled Gaussian at q = 0.2 for 12
    steps with the likelihood-ratio score (the DP-SGD family, PLD profile), and an adversarial
    mixture at each claim (randomized response on every canary in a fraction tau0 = beta of the
    runs, the leak one-run tests are weakest against). A plug-in fit of the parameter reported as
    a bound (no confidence) exceeds the truth in about half the runs and fails the same check."""
    from dpaudit.dpsgd.audit import _run_claim, _scores
    from dpaudit.dpsgd.bounds import dpsgd_family, dpsgd_profile
    from dpaudit.dpsgd.reference import DPSGDConfig

    beta, delta, m, reps = 0.2, 1e-5, 1500, 60
    over: dict = {}
    plug_over = 0
    # q = 1: f_s = G_{sqrt(T)/s}
    T, mu = 4, 1.0
    sigma = math.sqrt(T) / mu
    fam = GaussianDPFamily(math.sqrt(T))
    truth = gaussian_epsilon(delta, mu)
    ideal = OneRunClaim(fam, sigma, simulate=lambda g: _gaussian_run(mu, m, g))
    eps_l = _rr_branch_epsilon(beta, lambda e: gaussian_delta(e, mu))
    for r in range(reps):
        g = np.random.default_rng([31, r])
        x, mask = _gaussian_run(mu, m, g)
        a = one_run_audit(x, mask, delta=delta, beta=beta, rng=r, claim=ideal)
        over["gdp ideal"] = over.get("gdp ideal", 0) + (a.claim.epsilon_lower_bound > truth or a.claim.claim_refuted)
        # the plug-in: mu fitted as the difference of the two groups' mean scores, its epsilon
        fit = float(x[mask].mean() - x[~mask].mean())
        plug_over += gaussian_epsilon(delta, max(fit, 1e-9)) > truth
        x, mask = _mixture_run(g, m, beta, eps_l)
        a = one_run_audit(x, mask, delta=delta, beta=beta, rng=r, claim=ideal)
        over["gdp mixture"] = over.get("gdp mixture", 0) + a.claim.claim_refuted
    # q = 0.2, 12 steps: the DP-SGD family
    q, T2, sigma2 = 0.2, 12, 1.0
    cfg = DPSGDConfig(noise_multiplier=sigma2, sampling_rate=q, steps=T2)
    truth2 = dpsgd_family(q, T2).epsilon(sigma2, delta)
    claim2 = _run_claim("lr", cfg, math.inf, delta, simulate=True)
    eps_l2 = _rr_branch_epsilon(beta, lambda e: dpsgd_profile(sigma2, q, T2, e))
    for r in range(reps):
        g = np.random.default_rng([37, r])
        mask = g.random(m) < 0.5
        part = (g.random((T2, m)) < q) & mask
        sc = _scores(part + sigma2 * g.standard_normal((T2, m)), None, sigma2, q, "lr")
        a = one_run_audit(sc, mask, delta=delta, beta=beta, rng=r, claim=claim2)
        over["dpsgd ideal"] = over.get("dpsgd ideal", 0) + (a.claim.epsilon_lower_bound > truth2 or a.claim.claim_refuted)
        x, mask = _mixture_run(g, m, beta, eps_l2)
        a = one_run_audit(x, mask, delta=delta, beta=beta, rng=r, claim=claim2)
        over["dpsgd mixture"] = over.get("dpsgd mixture", 0) + a.claim.claim_refuted
    for name, n in over.items():
        assert_rate_at_most(n, reps, beta, what=f"false accusations ({name})")
    assert_rate_above(plug_over, reps, beta, what="plug-in fits above the truth")
