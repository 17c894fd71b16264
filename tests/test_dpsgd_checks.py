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

from dpaudit.dpsgd.checks import (Schedule, clipping_step, contribution_mean, cosine_p, coupling_crowd, coupling_ols,
                                  noise_cells,
                                  noise_independence, noise_pooled, nonfinite_association, nonfinite_contrast,
                                  scale_dependence, dispersion_p)

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


def test_crowd_test_is_valid_whatever_the_partners_do_and_sees_a_flip(rng):
    """The crowd test (``checks.coupling_crowd``): ``y_t = a m_t - b P_t + e_t`` with all crowd
    canaries in or out together (a fair coin per step) and a partner count that follows the batch;
    any ``a <= 1``, any ``b`` and any noise scale up to the ``sigma`` given are inside the null (also
    a clipping that changes from step to step, independently of the coin: the residual scale
    absorbs it); crowd canaries that flip their groups' clipped sums (``a = 1.3``) are seen."""
    T = 60
    rej = {"exact": 0, "drift": 0}
    for r in range(R):
        n0 = rng.integers(300, 500, T)
        P, M = np.ceil(0.15 * n0), np.ceil(0.05 * n0)
        m = M * (rng.random(T) < 0.5)
        s = 2.0 * (1.0, 0.8)[r % 2]  # noise scale at most the sigma given
        a, b = (1.0, 0.6)[r % 2], (0.3, 1.0, 1.7)[r % 3]
        rej["exact"] += coupling_crowd(a * m - b * P + s * rng.standard_normal(T), m, P, 2.0)[0] <= A
        # a clipping norm lowered to 0.8 C at a tenth of the steps (a schedule, an adaptive norm), independently
        # of the coin: a_t = b_t; the known sigma alone would reject about 9 % of these at 5 %
        bt = np.where(rng.random(T) < 0.1, 0.8, 1.0)
        rej["drift"] += coupling_crowd(bt * (m - P) + 2.0 * rng.standard_normal(T), m, P, 2.0)[0] <= A
    for k, v in rej.items():
        assert_rate_at_most(v, R, A, what=f"crowd rejections ({k})")
    n0 = rng.integers(300, 500, T)
    P, M = np.ceil(0.15 * n0), np.ceil(0.05 * n0)
    m = M * (rng.random(T) < 0.5)
    p, a, se, b = coupling_crowd(1.3 * m - P + 2.0 * rng.standard_normal(T), m, P, 2.0)
    assert p < 1e-20 and abs(a - 1.3) < 4 * se and abs(b - 1) < 0.01
    assert coupling_crowd(m[:2], m[:2], P[:2], 2.0)[0] == 1.0  # too few steps: nothing to say
    with pytest.raises(ValueError, match="one entry per step"):
        coupling_crowd(m, m[:-1], P, 2.0)
    with pytest.raises(ValueError, match="sigma"):
        coupling_crowd(m, m, P, 0.0)


def test_nonfinite_and_scale_tests_are_valid_under_independent_sampling(rng):
    """Cancellations, noise scales and contributions that do not depend on dpaudit's own coin and
    sampling are never accused beyond ``a`` (even with a noise scale that drifts over the steps);
    dependence is seen."""
    T, sigma = 60, 1.5
    rej = {"assoc": 0, "contrast": 0, "scale": 0, "dispersion": 0}
    for _ in range(R // 2):
        coin = rng.random(T) < 0.5
        cancelled = rng.random(T) < 0.2
        rej["assoc"] += nonfinite_association(cancelled, coin)[0] <= A
        groups = [(1 + sigma * rng.standard_normal(int(coin.sum()) * 5), 1 + sigma * rng.standard_normal(
            int((~coin).sum()) * 5)) for _ in range(2)]
        rej["contrast"] += nonfinite_contrast(groups, sigma)[0] <= A
        drift = np.linspace(0, 0.3, T) + 0.02 * rng.standard_normal(T)  # a public noise schedule
        rows = rng.binomial(400, 0.25, T)
        rej["scale"] += scale_dependence(drift, rows, 400, 0.25)[0] <= A
        rej["dispersion"] += dispersion_p(rng.binomial(T, 0.1, 300), T, 0.1) <= A
    for k, v in rej.items():
        assert_rate_at_most(v, R // 2, A, what=f"{k} rejections")
    coin = rng.random(T) < 0.5
    assert nonfinite_association(coin, coin)[0] < 1e-10  # every step with a non-finite row skipped
    yh, yt = sigma * rng.standard_normal(400), 1 + sigma * rng.standard_normal(400)  # the batch dropped
    assert nonfinite_contrast([(yh, yt)], sigma)[0] < 1e-10
    rows = rng.binomial(1200, 0.25, T).astype(float)
    ls = -np.log(100 + rows) + 0.02 * rng.standard_normal(T)  # the update divided by the realised batch
    assert scale_dependence(ls, rows, 1200, 0.25)[0] < 1e-6
    assert dispersion_p(np.full(300, 6), T, 0.1) < 1e-30  # shuffled: every example once per 10 steps


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


# --- end to end: a user's own NumPy step (tests/_dpsgd_user_loops.py), small setting ------------------------------

import _dpsgd_user_loops as loops  # noqa: E402

from dpaudit.dpsgd import Canaries, DPSGDViolation  # noqa: E402

SMALL = {"q0.1": dict(q=0.1, steps=40, sigma=1.6328125),  # noise_for_epsilon(2, 1e-5, 0.1, 40)
         "q1": dict(q=1.0, steps=20, sigma=8.921875)}  # noise_for_epsilon(2, 1e-5, 1.0, 20)


def _small(bug, setting, seed=0, **kw):
    loops.SETTINGS.setdefault(f"small-{setting}", SMALL[setting])
    kw = {"canaries": 600, **kw}
    return loops.run_assumption_loop(bug, f"small-{setting}", seed=seed, n=200, size=8, data_canaries=200, **kw)


@pytest.mark.parametrize("bug, setting", [("grouped-8", "q1"), ("strided-4", "q0.1"), ("hashed-4", "q1"),
                                          ("correct", "q1")])
def test_crowd_sees_groups_the_auditor_does_not_know(bug, setting):
    """Rows clipped in groups of 8 consecutive rows, in strided groups (rows ``k`` apart) or in groups
    picked by a hash of the position, in a user's own step with correlated real gradients: the crowd
    sub-test of the coupling check flags each in one run, with its message; the correct step's crowd
    estimate stays near 1 and is not flagged."""
    can = _small(bug, setting, crowd=0.4)  # this small setting (a tenth of the rows) needs a larger crowd
    a = can.audit(delta=1e-5, beta=0.05, estimates=False)
    crowd = a.checks["coupling"]["tests"]["crowd"]
    names = {f"{f.check}:{f.test}": f for f in a.violations}
    if bug == "correct":
        assert "coupling:crowd" not in names and abs(crowd["a"] - 1) < 4 * crowd["se"], a.summary()
        return
    assert "coupling:crowd" in names and crowd["a"] > 1.1, a.summary()
    assert "crowd canary moves the crowd coordinate" in names["coupling:crowd"].message


@pytest.mark.parametrize("bug, setting, check", [  # noqa: E501
    ("unclipped-last", "q1", "clipping:excess"),
    ("per-layer", "q0.1", "clipping:mean"),
    ("no-noise-step", "q1", "noise:cell"),
    ("no-noise-first-tensor", "q0.1", "noise:user|noise:user_tensor"),
    ("noise-reused", "q1", "noise:independence"),
    ("uniform-noise", "q0.1", "noise:tails"),
    ("replacement", "q1", "sampler:poisson"),
    ("shuffle", "q0.1", "sampler:poisson"),
    ("grouped-2", "q0.1+", "coupling:paired|coupling:crowd"),
    ("realised-batch", "q0.1", "scale:rows"),
    ("nan-propagated", "q1", "nonfinite:update"),
    ("nonfinite-skip", "q1", "nonfinite:association"),
    ("nonfinite-drop-batch", "q0.1", "nonfinite:contrast"),
])
def test_one_run_names_the_broken_assumption(bug, setting, check):
    """Each bug class, in a user's own step with correlated real gradients, is flagged after training
    by the check of the assumption it breaks (named with its step where it has one), and by the
    online audit (recording, not raising, so that the run goes to its end)."""
    more = setting.endswith("+")  # more canaries (paired ones: 250 of them)
    can = _small(bug, setting.rstrip("+"), monitor=dict(action="record"), **({"canaries": 1500} if more else {}))
    a = can.audit(delta=1e-5, beta=0.05, estimates=False)
    names = {f"{f.check}:{f.test}" for f in a.violations}
    check = next((c for c in check.split("|") if c in names), check)  # "a|b": either test of the assumption
    assert a.violated and check in names, a.summary()
    f = next(f for f in a.violations if f"{f.check}:{f.test}" == check)
    assert f.p_value <= f.level and f.message in a.findings
    if check.split(":")[1] in ("excess", "cell", "user", "independence", "update"):
        assert f.steps and f.at_step == f.steps[0]
    if bug != "grouped-2":  # 40 steps at q = 0.1 are too few for the online share of the coupling test
        assert can._monitor.violated, can._monitor.summary()


@pytest.mark.parametrize("setting", ["q0.1", "q1"])
def test_correct_steps_are_not_accused(setting):
    for seed in range(3):
        can = _small("correct+nonfinite", setting, seed=seed, monitor=dict(action="raise"))
        a = can.audit(delta=1e-5, beta=0.05, estimates=False)
        assert not a.violated, a.summary()
        assert can._monitor.bound_history and not a.notes, a.notes


def test_online_audit_raises_at_the_first_failed_check_and_the_run_can_still_be_audited():
    with pytest.raises(DPSGDViolation) as err:
        _small("unclipped-last", "q0.1", monitor=dict(action="raise"))
    f = err.value.finding
    assert err.value.check == f.check == "clipping" and err.value.step == f.at_step == 1
    assert "clipping" in str(err.value) and "step 1" in str(err.value)
    seen = []
    can = _small("no-noise-step", "q1", monitor=dict(action=seen.append))
    assert seen and seen[0].check == "noise" and seen[0].at_step == 11  # the step without noise
    assert can._monitor.first_step == 11 and "VIOLATION" in can._monitor.summary()
    with pytest.raises(ValueError, match="action"):
        can.monitor(action="shout")


def test_a_flat_vector_split_at_shifted_boundaries_is_noticed(rng):
    """A user step that concatenates every tensor into one flat vector and splits the noisy result
    back at boundaries shifted by a few coordinates (the dedicated tensors misplaced): the canaries'
    signal no longer reaches the coordinates dpaudit reads, and the audit says so (a note, not a
    violation: less signal is not less privacy)."""
    shapes = [(40,), (24,)]
    can = Canaries(shapes, noise_multiplier=1.0, max_grad_norm=1.0, sampling_rate=1.0, canaries=400, seed=3,
                   kinds=("dirac", "split", "large"))
    sizes = [int(np.prod(s)) for s in can.shapes]
    for _ in range(10):
        step = can.begin_step(batch_size=20)
        rows = step.insert([rng.normal(0, 0.1, (20, *s)) for s in shapes])
        flat = np.concatenate([r.reshape(len(r), -1) for r in rows], axis=1)
        flat *= np.minimum(1.0, 1.0 / np.linalg.norm(flat, axis=1, keepdims=True))[:, :]
        noisy = flat.sum(axis=0) + rng.normal(0, 1.0, flat.shape[1])
        noisy = np.roll(noisy, 5)  # the boundaries shifted by 5
        can.observe(np.split(noisy, np.cumsum(sizes)[:-1]))
    a = can.audit(estimates=False)
    assert any("do not reach the update" in n for n in a.notes), a.summary()
    assert [x[0] for x in can.layout()] == can.names and can.layout()[-1][3] == sum(sizes)


# --- the reference trainer's entry point: split canaries and the mean-contribution check ---------------------------


def test_run_clipping_check_is_valid_with_any_contribution_up_to_1_and_more_noise(rng):
    """The law of a Dirac-like run (``run_clipping_check``'s null): contributions ``a <= 1``, noise
    ``N(0, s^2 sigma^2)`` with ``s >= 1``, random signs, mask and participation; rejections at most
    ``beta``. A contribution of 1.6 (a row clipped per tensor over 4 tensors gives 2) is seen."""
    from types import SimpleNamespace

    T, m, sigma, q = 20, 200, 4.0, 0.3

    def run(a, s):
        mask = rng.random(m) < 0.5
        part = (rng.random((T, m)) < q) & mask
        pattern = np.where(rng.random((T, m)) < 0.5, -1.0, 1.0)
        o = pattern * a * part + s * sigma * rng.standard_normal((T, m))
        return SimpleNamespace(observations=o, mask=mask, participation=part, pattern=pattern,
                               config=SimpleNamespace(noise_multiplier=sigma), details={})

    from dpaudit.dpsgd import run_clipping_check

    rej = sum(run_clipping_check(run(a, s), beta=A)["violated"] for a, s in
              [(1.0, 1.0), (1.0, 1.3), (0.7, 1.0)] * (R // 4))
    assert_rate_at_most(rej, 3 * (R // 4), A, what="correct runs accused")
    seen = sum(run_clipping_check(run(1.6, 1.0), beta=A)["violated"] for _ in range(40))
    assert_rate_above(seen, 40, 0.5, what="a contribution of 1.6 seen")
    with pytest.raises(ValueError, match="Dirac-like"):
        run_clipping_check(SimpleNamespace(pattern=None, details={"canary_kind": "spread"}))


def test_reference_trainer_split_canaries_see_per_layer_clipping_in_one_run():
    """``train_with_canaries(variant="per-layer-clipping", canary_kind="split")``: the split canaries'
    mean contribution is 2 C (4 dedicated tensors each clipped on their own) and the check rejects;
    Dirac canaries (one tensor) cannot see it, and a correct run with split canaries is not accused."""
    from dpaudit.dpsgd import DPSGDConfig, run_clipping_check, train_with_canaries

    cfg = DPSGDConfig(noise_multiplier=8.921875, sampling_rate=1.0, steps=10)  # epsilon 2 at 20 steps
    bug = run_clipping_check(train_with_canaries(cfg, canaries=300, variant="per-layer-clipping", canary_kind="split",
                                                 seed=0, hidden=8))
    assert bug["violated"] and 1.5 < bug["contribution"] < 2.5, bug
    dirac = run_clipping_check(train_with_canaries(cfg, canaries=300, variant="per-layer-clipping", seed=0, hidden=8))
    ok = run_clipping_check(train_with_canaries(cfg, canaries=300, canary_kind="split", seed=0, hidden=8))
    assert not dirac["violated"] and not ok["violated"] and abs(ok["contribution"] - 1) < 0.5, (dirac, ok)


@pytest.mark.parametrize("q", [1.0, 0.2])
def test_paired_clusters_share_every_consecutive_group_and_keep_their_geometry_without_the_canary(q):
    """Where dpaudit puts a paired canary and its partners (``Canaries.begin_step``): whatever size
    ``g`` in 2..8 and offset a buggy step uses to clip *consecutive* rows together, an included
    canary in the batch with two partners or more shares its group with at least one of them (one
    partner: next to it); a canary not in the
    batch leaves its partners around one of the user's rows, in the same geometry (so that the
    coupling test's contrast is the canary's presence alone). Read from the rows handed back."""
    from dpaudit.dpsgd.canaries import PAIRED_NORM, PARTNER_NORM

    can = Canaries([(8,)], noise_multiplier=1.0, max_grad_norm=1.0, sampling_rate=q, canaries=120,
                   kinds=("paired",), blocks=2, seed=3, crowd=0)  # the paired clusters alone (the crowd: below)
    clusters_without = 0
    for _ in range(3):
        step = can.begin_step(batch_size=400)
        rows = step.insert([np.full((400, 8), 0.01)])
        user = rows[0].reshape(step.size, -1)
        blk = np.concatenate([r.reshape(step.size, -1) for r in rows[1:]], axis=1)
        is_user = np.abs(user).sum(axis=1) > 0
        coord = np.where(is_user, -1, np.argmax(np.abs(blk), axis=1))
        val = np.abs(blk[np.arange(step.size), np.maximum(coord, 0)])
        canary, partner = (~is_user) & np.isclose(val, PAIRED_NORM), (~is_user) & np.isclose(val, PARTNER_NORM)
        assert (canary | partner | is_user).all()
        for c in np.unique(coord[partner]):
            pp = np.flatnonzero(partner & (coord == c))
            cp = np.flatnonzero(canary & (coord == c))
            start = cp[0] - pp.size // 2 if cp.size else pp.min() - (pp.size == 1)  # [p.., middle, p..]
            middle = start + pp.size // 2
            assert set(range(start, start + pp.size + 1)) == set(pp) | {middle}  # one row among the partners
            if cp.size:
                assert cp[0] == middle
                for g in range(2, 9) if pp.size >= 2 else ():  # one partner: right after the canary
                    for off in range(g):
                        grp = (np.arange(step.size) + off) // g
                        assert (grp[pp] == grp[middle]).any(), (g, off)
            else:
                assert is_user[middle]
                clusters_without += 1
        can.observe([np.zeros(s) for s in can.shapes])
    assert clusters_without > 20


@pytest.mark.parametrize("how", ["grouped-2", "grouped-3", "grouped-4", "grouped-8"])
def test_coupling_check_sees_consecutive_groups_of_any_size_at_q1_with_coherent_real_rows(how):
    """A user's step that clips consecutive rows in groups of 2..8 (groups from row 0, or shifted by
    one row) at q = 1, with real rows that are coherent (they add up within a group, as correlated
    real gradients do) and many other rows around: the paired canaries' coupling test rejects it; the
    same step clipping each row on its own does not."""
    rng = np.random.default_rng([45, int(how[-1])])
    n, sigma = 600, 2.0
    direction = rng.standard_normal(16)
    for grouped in (True, False):
        for shift in (0, 1):
            can = Canaries([(16,)], noise_multiplier=sigma, max_grad_norm=1.0, sampling_rate=1.0, canaries=200,
                           kinds=("dirac", "paired"), seed=shift, crowd=0)  # paired clusters alone
            for _ in range(8):
                step = can.begin_step(batch_size=n)
                real = direction * 0.3 + 0.1 * rng.standard_normal((n, 16))  # norm ~1.2 C, all alike
                rows = step.insert([real])
                k = step.size
                lab = (np.arange(k) + shift) // int(how[-1]) if grouped else np.arange(k)
                flat = np.concatenate([r.reshape(k, -1) for r in rows], axis=1)
                g = np.zeros((lab.max() + 1, flat.shape[1]))
                np.add.at(g, lab, flat)
                g *= np.minimum(1.0, 1.0 / (np.linalg.norm(g, axis=1, keepdims=True) + 1e-12))
                u = g.sum(axis=0) + sigma * rng.standard_normal(flat.shape[1])
                can.observe(np.split(u, np.cumsum([int(np.prod(s)) for s in can.shapes])[:-1]))
            a = can.audit(delta=1e-5, beta=0.05, estimates=False)
            names = {f"{f.check}:{f.test}" for f in a.violations}
            assert ("coupling:paired" in names) == grouped, (how, shift, a.summary())
