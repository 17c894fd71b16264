"""dpaudit.dpsgd.checks: one check per assumption of the DP-SGD accountant, and the online audit.

Every check is a p-value that must be valid under the exact law of a correct implementation
(including one that is more private: more noise, smaller contributions). Each test function below
draws that law directly (no training) many times, seeded, and asserts the rejection rate at a level
``a`` is at most ``a`` (``tests/_harness.py``), then shows the check rejects the deviation it is for.
The end-to-end tests run a small user step through the public ``Canaries`` API
(``tests/_dpsgd_user_loops.py``); the large setting of issue 45 is ``benchmarks/dpsgd_assumptions.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _harness import assert_rate_above, assert_rate_at_most

from dpaudit.dpsgd.checks import (Schedule, clipping_step, contribution_mean, cosine_p, coupling_ols, noise_cells,
                                  noise_independence, noise_pooled, nonfinite_association, nonfinite_contrast,
                                  scale_permutation)

A = 0.05  # the level the null rates are checked at
R = 400  # repetitions of each null


def test_noise_tests_are_valid_for_any_noise_at_least_sigma_and_see_less(rng):
    """Null coordinates ``N(0, s^2)`` with ``s >= 1`` (units of sigma) and user tensors with any mean
    (the clipped sum) never reject more than ``a``; half the noise in one tensor, one step, or
    everywhere, and bounded (uniform) noise of the right variance are seen."""
    K, n0, L, d, T = 4, 64, 3, 16, 20
    dof = np.full(L, d)
    rej = {k: 0 for k in ("cell", "step", "user", "tensor", "all", "tails", "user_tensor", "indep")}
    for r in range(R):
        s = 1.0 if r % 2 else 1.3  # more noise than claimed is inside the null
        z = s * rng.standard_normal((T, K, n0))
        mean = rng.normal(0, 3.0, (T, L, d))  # any clipped sum, fixed before the noise
        x = mean + s * rng.standard_normal((T, L, d))
        uss = np.square(x - 0.5 * mean).sum(axis=2)  # centred on anything independent of this step's noise
        c = noise_cells(z[0], uss[0], dof)
        rej["cell"] += c["cell"][0] <= A
        rej["step"] += c["step"] <= A
        rej["user"] += c["user"][0] <= A
        p = noise_pooled(z, uss, dof)
        rej["tensor"] += p["tensor"][0] <= A
        rej["all"] += p["all"] <= A
        rej["tails"] += p["tails"][0] <= A
        rej["user_tensor"] += p["user_tensor"][0] <= A
        rej["indep"] += noise_independence(z[-1], z[:-1])[0] <= A
    for k, v in rej.items():
        assert_rate_at_most(v, R, A, what=f"rejections by the {k} noise test")
    z = rng.standard_normal((T, K, n0))
    z[:, 2] *= 0.5  # one tensor at half the noise, every step
    assert noise_pooled(z, None, dof)["tensor"] == (pytest.approx(0, abs=1e-12), 2)
    z[:, 2] *= 2
    z[7] *= 0.5  # one step at half the noise
    assert noise_cells(z[7], None, dof)["step"] < 1e-12
    u = rng.uniform(-math.sqrt(3), math.sqrt(3), (200, K, n0))  # variance 1, no tails
    assert noise_pooled(u, None, dof)["tails"][0] < 1e-6 and noise_pooled(u, None, dof)["all"] > 0.01
    x = rng.standard_normal((T, L, d))
    x[:, 1] = rng.normal(0, 0.5, (T, d))  # no noise: only the clipped sum's change from step to step
    assert noise_pooled(None, np.square(x).sum(axis=2), dof)["user_tensor"][:2] == (pytest.approx(0, abs=1e-9), 1)
    same = rng.standard_normal((K, n0))  # noise reused at lag 3
    earlier = rng.standard_normal((9, K, n0))
    earlier[-3] = same
    p, (lag, k), cos = noise_independence(same, earlier)
    assert p < 1e-30 and lag == 3 and cos == pytest.approx(1.0)
    assert cosine_p(0.0, 64) == pytest.approx(1.0) and cosine_p(1.0, 64) == 0.0


def test_clipping_and_contribution_tests_are_valid_and_see_larger_contributions(rng):
    sigma = 2.0
    rej_exc = rej_mean = 0
    for r in range(R):
        a = rng.uniform(0, 1, 500)  # contributions of at most C, any of them
        o = np.abs(a + sigma * rng.standard_normal(500))
        rej_exc += clipping_step(o - 1.0, sigma)[0] <= A
        y = (1.0 if r % 2 else 0.7) + sigma * rng.standard_normal(300)  # one contribution <= 1 for the kind
        rej_mean += contribution_mean(y, sigma)[0] <= A
    assert_rate_at_most(rej_exc, R, A, what="largest-excess rejections")
    assert_rate_at_most(rej_mean, R, A, what="mean-contribution rejections")
    o = np.abs(sigma * rng.standard_normal(500))
    o[17] += 1000.0  # one unclipped row
    p, i, z = clipping_step(o - 1.0, sigma)
    assert p < 1e-100 and i == 17 and z > 400
    assert contribution_mean(2.0 + sigma * rng.standard_normal(400), sigma)[0] < 1e-15  # per-tensor clipping


def test_coupling_test_is_valid_whatever_the_partners_do_and_sees_grouped_clipping(rng):
    """``y = a I - b N + e``: any ``a <= 1`` and any partner contribution ``b`` (clipped to less than
    C, or not at all) is inside the null; a canary that flips its partners' group (``a = 2``) is seen."""
    sigma, T, m, P, q = 3.0, 40, 60, 10, 0.1
    rej = 0
    for r in range(R):
        inc = (rng.random(m) < 0.5)[None, :] & (rng.random((T, m)) < q)
        npart = rng.binomial(P, q, (T, m))
        b = (0.3, 1.0, 1.7)[r % 3]
        y = 1.0 * inc - b * npart + sigma * rng.standard_normal((T, m))
        rej += coupling_ols(y, inc, npart, sigma)[0] <= A
    assert_rate_at_most(rej, R, A, what="coupling rejections")
    inc = (rng.random(300) < 0.5)[None, :] & np.ones((40, 300), bool)
    npart = np.full((40, 300), 2)
    y = 2.0 * inc - 1.0 * npart + sigma * rng.standard_normal((40, 300))
    p, a, se, b = coupling_ols(y, inc, npart, sigma)
    assert p < 1e-20 and abs(a - 2) < 4 * se


def test_nonfinite_and_scale_tests_are_valid_under_independent_sampling(rng):
    """Cancellations, noise scales and contributions that do not depend on dpaudit's own coin and
    sampling are never accused beyond ``a`` (even with a noise scale that drifts over the steps);
    dependence is seen."""
    T, sigma = 60, 1.5
    rej = {"assoc": 0, "contrast": 0, "scale": 0}
    for _ in range(R // 2):
        coin = rng.random(T) < 0.5
        cancelled = rng.random(T) < 0.2
        rej["assoc"] += nonfinite_association(cancelled, coin)[0] <= A
        groups = [(1 + sigma * rng.standard_normal(int(coin.sum()) * 5), 1 + sigma * rng.standard_normal(
            int((~coin).sum()) * 5)) for _ in range(2)]
        rej["contrast"] += nonfinite_contrast(groups, sigma)[0] <= A
        drift = np.linspace(0, 0.3, T) + 0.02 * rng.standard_normal(T)  # a public noise schedule
        rows = rng.poisson(100, T)
        rej["scale"] += scale_permutation(drift, rows, draws=199, seed=int(rng.integers(1 << 30)))[0] <= A
    for k, v in rej.items():
        assert_rate_at_most(v, R // 2, A, what=f"{k} rejections")
    coin = rng.random(T) < 0.5
    assert nonfinite_association(coin, coin)[0] < 1e-10  # every step with a non-finite row skipped
    yh, yt = sigma * rng.standard_normal(400), 1 + sigma * rng.standard_normal(400)  # the batch dropped
    assert nonfinite_contrast([(yh, yt)], sigma)[0] < 1e-10
    rows = rng.poisson(300, T).astype(float)
    ls = -np.log(rows) + 0.01 * rng.standard_normal(T)  # the update divided by the realised batch
    assert scale_permutation(ls, rows, draws=999)[0] == pytest.approx(1 / 1000)


def test_schedule_spends_at_most_beta_whatever_the_stopping_step():
    for steps in (1, 7, 100, 200):
        s = Schedule(steps)
        assert sum(s.step_weight(t) for t in range(1, 3 * steps)) == pytest.approx(1.0)
        assert sum(s.checkpoint_weight(t) for t in range(1, 3 * steps)) == pytest.approx(1.0)
        assert s.checkpoints[-1] == steps and s.checkpoint_weight(steps) > 0
    s = Schedule(0)
    assert sum(s.step_weight(t) for t in range(1, 20000)) < 1.0
    assert sum(s.checkpoint_weight(1 << j) for j in range(60)) < 1.0


def test_rate_harness_sees_a_miscalibrated_test(rng):
    """The rate assertions above can fail: a noise test that ignores the chi-square's degrees of
    freedom (judging the sum of 64 squares against chi2(48)) accuses correct noise."""
    from dpaudit.dpsgd.checks import chi2_lower

    rej = sum(chi2_lower(np.square(rng.standard_normal(64)).sum() * 48 / 64 * 0.8, 48) <= A for _ in range(R))
    assert_rate_above(int(rej), R, A)
