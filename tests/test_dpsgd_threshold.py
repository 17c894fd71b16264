"""The many-run harness's rank-test view (dpaudit.dpsgd.many.rank_threshold_profile and its exact
test rank_p_value: a threshold at a fixed rank of the runs without the canary, the count of runs
with it above that threshold): its p-value is its integral erring high, valid (and not vacuous) at
the boundary of its null; it certifies a 2x-sensitivity leak on the claim's own scores and
accuses the claimed mechanism at most beta of the time; and every many-run path keeps
dp_accounting's "failed to converge" warnings off the console."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest

from _harness import assert_rate_above, assert_rate_at_most

from dpaudit.accounting import Composition
from dpaudit.dpsgd import DPSGDConfig
from dpaudit.dpsgd.audit import canary_scores
from dpaudit.dpsgd.many import RANK_QUADRATURE, rank_p_value, rank_threshold_profile


def test_the_rank_test_is_its_integral_erring_high_and_grows_with_the_null():
    # deterministic: the p-value is E_B[P(Bin(n, min(1, w B + d0)) >= x)], B ~ Beta(k+1, m-k), summed at
    # the upper ends of equal-probability cells: at least the integral (quad), at most 1/N above it
    from scipy import integrate
    from scipy.stats import beta as beta_law
    from scipy.stats import binom

    for x, n, k, m, w, d0 in [(60, 100, 45, 100, 1.0, 0.0), (230, 400, 200, 400, 1.0, 0.05),
                              (90, 100, 20, 100, 1.5, 0.1), (5, 50, 0, 60, 1.0, 0.0)]:
        exact = integrate.quad(lambda b: beta_law.pdf(b, k + 1, m - k) * binom.sf(x - 1, n, min(1.0, w * b + d0)),
                               0, 1, limit=200, epsabs=1e-12)[0]
        p = rank_p_value(x, n, k, m, weight=w, delta0=d0)
        assert exact - 1e-9 <= p <= exact + 1.0 / RANK_QUADRATURE
        assert p <= rank_p_value(x, n, k, m, weight=w, delta0=min(0.99, d0 + 0.05))  # a wider null, a larger p
        assert rank_p_value(x, n, k, m, weight=w, delta0=d0) <= rank_p_value(x, n, k, m, weight=w + 0.5, delta0=d0)
    assert rank_p_value(0, 10, 3, 10) == 1.0
    for bad in [dict(x=5, n=4, k=0, m=4), dict(x=1, n=4, k=4, m=4), dict(x=1, n=4, k=0, m=4, weight=0.5),
                dict(x=1, n=4, k=0, m=4, delta0=1.0)]:
        with pytest.raises(ValueError):
            rank_p_value(**bad)


@pytest.mark.parametrize("w", [1.0, math.exp(0.5)])
def test_the_rank_test_is_valid_and_not_vacuous_at_the_boundary_of_its_null(rng, w):
    # Q uniform on (0, 1); P with survival min(1, w Q(score > t) + d0) for t above 0.46: P(S) = w Q(S) + d0
    # exactly at every threshold the test may meet, the worst law of H0. Rejections at level 0.1 over 300
    # samples of 300 + 300 scores: at most 0.1, and not far below (the law is exact, not a bound).
    d0, n, reps = 0.1, 300, 300
    t0 = 1 - (1 - d0) / w
    pv = []
    for _ in range(reps):
        out = rng.random(n)
        inn = np.where(rng.random(n) < d0, 2.0, t0 + (1 - t0) * rng.random(n))
        k = n // 2
        x = int(np.sum(inn > np.sort(out)[::-1][k]))
        pv.append(rank_p_value(x, n, k, n, weight=w, delta0=d0))
    rejected = int(np.sum(np.array(pv) <= 0.1))
    assert_rate_at_most(rejected, reps, 0.1, what="rejections of a true null")
    assert_rate_above(rejected, reps, 0.02, what="rejections at the boundary")


def _claim_scores(rng, runs, sensitivity, sigma=8.0, q=0.5, steps=16):
    """The claim's LR score (canary_scores "lr") of runs whose canary moves its coordinate by
    ``sensitivity`` (C units) in each step it is sampled (1: the claim; 0: the runs without it)."""
    o = rng.normal(0.0, sigma, (steps, runs)) + sensitivity * (rng.random((steps, runs)) < q)
    return canary_scores(o, sigma, q, "lr")


def test_the_threshold_view_accuses_the_claim_at_most_beta_and_certifies_a_2x_leak(rng):
    cfg = DPSGDConfig(noise_multiplier=8.0, sampling_rate=0.5, steps=16)  # accountant delta(0) 0.0995
    comp = cfg.composition()
    accused = sum(rank_threshold_profile(_claim_scores(rng, 2000, 1.0), _claim_scores(rng, 2000, 0.0), comp,
                                         beta=0.2)["violated"] for _ in range(40))
    assert_rate_at_most(accused, 40, 0.2, what="accusations of the claimed mechanism")
    caught = []
    for _ in range(10):  # sensitivity 2 C: delta(0) 0.197 against the claim's 0.0995
        r = rank_threshold_profile(_claim_scores(rng, 3000, 2.0), _claim_scores(rng, 3000, 0.0), comp, beta=0.05)
        caught.append(r["violated"])
        assert r["delta_lower_bound"] < 0.197 + 0.01  # a lower bound, here never above the truth
        if r["violated"]:  # the test rejects at the accountant's delta: its bound (bisection to 2e-3) is there too
            assert r["delta_lower_bound"] > r["accountant_delta"] - 2e-3
    assert_rate_above(int(sum(caught)), 10, 0.3, what="2x leaks certified")
    with pytest.raises(ValueError, match="scores_in"):
        rank_threshold_profile([1.0], [0.0, 1.0], comp, beta=0.05)
    with pytest.raises(ValueError, match="epsilons"):
        rank_threshold_profile([1.0, 2.0], [0.0, 1.0], comp, beta=0.05, epsilons=(-1.0,))
    with pytest.raises(ValueError, match="fractions"):
        rank_threshold_profile([1.0, 2.0], [0.0, 1.0], comp, beta=0.05, fractions=(1.0,))


def test_every_many_run_path_keeps_the_accountant_warnings_off_the_console(caplog):
    # dp_accounting logs "_compute_log_a_frac failed to converge" for fractional orders at q = 0.5,
    # sigma ~8 (issue 45). Each path below meets a claim no other test has cached (its own sigma), so
    # it calls the accountant afresh; DROPPED counts the records that were made and dropped.
    torch = pytest.importorskip("torch")
    from _dpsgd_user_steps import make_user_step

    from dpaudit.dpsgd.harness import audit_user_code, audit_user_step, audit_user_train, make_tasks, run_step_many
    from dpaudit.dpsgd.many import audit_train_many, detectable_leak
    from dpaudit.privacy.quiet import DROPPED

    def cfg(s):
        return DPSGDConfig(noise_multiplier=s, sampling_rate=0.5, steps=5)

    def train(data, seed):
        g = torch.Generator().manual_seed(seed)
        step = make_user_step("correct", q=0.5, sigma=8.3)
        p = torch.zeros(data.shape[1])
        for _ in range(5):
            p = step(p, data, g)
        return p

    before = DROPPED["count"]
    with caplog.at_level(logging.WARNING, logger="absl"):
        c = cfg(8.31)
        small = make_tasks(c, null_block=16, pair_null_block=16)
        audit_user_code(run_step_many(make_user_step("correct", q=0.5, sigma=8.31), c, runs=32, tasks=small))
        c = cfg(8.32)
        audit_user_step(make_user_step("correct", q=0.5, sigma=8.32), c, max_runs=64, first_runs=32,
                        tasks=make_tasks(c, null_block=16, pair_null_block=16))
        c = cfg(8.33)
        audit_user_train(train, c, max_runs=16, first_runs=8, workers=0,
                         tasks=make_tasks(c, null_block=16, pair_null_block=16))
        audit_train_many(cfg(8.34), max_runs=8, first_runs=4, data=(np.zeros((0, 4), np.float32), np.zeros(0)))
        detectable_leak(50, 50, beta_view=0.01, alternative="greater", config=cfg(8.35), profile=(0.0, 0.2))
        rank_threshold_profile([0.1, 0.2, 0.3], [0.0, 0.1, -0.1], Composition.dpsgd(8.36, 0.5, 5), beta=0.1,
                               epsilons=(0.0, 0.1))
    assert DROPPED["count"] > before  # the accountant did warn, and the warnings were dropped
    assert not [m for m in caplog.messages if "failed to converge" in m]
