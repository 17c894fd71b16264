"""dpaudit.dpsgd.Canaries: canaries for any DP-SGD step, its kinds, and the bug classes one run catches.

The user's step is NumPy (``tests/_dpsgd_user_loops.py``): dpaudit sees only the rows it hands out
and the noisy update it gets back. Noise multipliers are the accountant's for epsilon 2 at
delta 1e-5 (``noise_for_epsilon(2, 1e-5, q, steps)``, given as literals to keep the tests fast).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("sklearn")

from _dpsgd_user_loops import run_user_loop  # noqa: E402

from dpaudit.dpsgd import Canaries, sampler_check  # noqa: E402

SIGMA_Q1_T10 = 6.30859375  # noise_for_epsilon(2, 1e-5, 1.0, 10)
SIGMA_Q1_T5 = SIGMA_Q1_T10 * math.sqrt(0.5)  # the same Gaussian-DP mu = sqrt(T) / sigma, so the same epsilon
SIGMA_Q01_T30 = 1.5048828125  # noise_for_epsilon(2, 1e-5, 0.1, 30)
DEEP = (64, 32, 32, 32, 32, 32, 32, 10)  # 14 parameter tensors, 13 of them observed (>= 32 coordinates)


def test_rows_positions_shapes_and_observations():
    """The layout (user tensors, then K dedicated tensors), each kind's row, the positions (partners
    next to their canary, large canaries at the batch's ends), and the observations of an update
    that is the plain sum of the rows. The defaults changed with issue 45 (split and paired
    canaries, several dedicated tensors): this test pins the new ones."""
    shapes = [(30, 20), (3,), (20, 20)]
    can = Canaries(shapes, noise_multiplier=1.0, max_grad_norm=2.0, sampling_rate=1.0, canaries=60, seed=1,
                   null_coordinates=8, crowd=0)  # the crowd's rows: test_crowd_rows_and_observations
    assert can.kinds == ("dirac", "split", "spread", "large", "paired") and can.blocks == 4
    assert can.counts == {"dirac": 15, "split": 10, "spread": 15, "large": 10, "paired": 10} and can.partners == 2
    assert can.shapes[:3] == shapes and can.shapes[3:] == can.block_shapes and len(can.block_shapes) == 4
    assert can.names[3:] == [f"dpaudit_canary_block_{b}" for b in range(4)] and can.names[:3] == [
        "param[0]", "param[1]", "param[2]"]
    assert sum(s[0] for s in can.block_shapes) == can.block_size == 4 * 8 + 4 * 10 + 15 + 10 + 10
    assert [x[2:] for x in can.layout()][3] == (1003, 1003 + can.block_shapes[0][0])  # after the user's 1,003
    step = can.begin_step(batch_size=7)
    inc = {k: int(m.sum()) for k, m in can.masks.items()}
    k = len(step.positions)
    assert k == sum(inc.values()) + 2 * can.counts["paired"] and step.size == 7 + k  # partners of every canary
    norms = np.sqrt(sum(np.square(r.reshape(k, -1)).sum(axis=1) for r in step.rows))
    user = np.sqrt(sum(np.square(r.reshape(k, -1)).sum(axis=1) for r in step.rows[:3]))
    per_block = np.array([np.linalg.norm(r, axis=1) for r in step.rows[3:]])
    spread = user > 0
    assert np.allclose(user[spread], 8.0 * math.sqrt(3))  # canary_norm 4C in each user tensor
    split = (per_block > 0).sum(axis=0) == 4
    assert np.allclose(per_block[:, split], 8.0) and split.sum() == inc["split"]  # 4C in each dedicated tensor
    assert sorted(set(np.round(norms[~spread & ~split], 6))) == [8.0, 100.0, 400.0, 2000.0]  # dirac, partner
    order = np.argsort(step.positions)  # 50C, paired 200C, large 1000C
    assert norms[order[0]] == norms[order[-1]] == 2000.0  # large canaries take the first and the last rows
    pos = {float(v): step.positions[np.isclose(norms, v)] for v in (100.0, 400.0)}
    for p in pos[400.0]:  # every included paired canary has its two partners around it
        assert {p - 1, p + 1} <= set(pos[100.0].tolist())
    real = [np.full((7, *s), 0.5) for s in shapes]
    rows = step.insert(real)  # the dedicated tensors' zero rows are added when left out
    assert [r.shape for r in rows] == [(step.size, *s) for s in can.shapes]
    assert np.all(rows[0][np.setdiff1d(np.arange(step.size), step.positions)] == 0.5)
    # an update that is the plain sum of dpaudit's rows: each observation is the row's norm along the
    # canary's direction, in units of C, times its sign (a paired canary's, minus its two partners')
    obs = can.observe([r[step.positions].sum(axis=0) for r in rows])
    runs = can.runs()
    for kind, value in (("dirac", 4.0), ("large", 1000.0), ("split", 8.0), ("paired", 200.0 - 2 * 50.0)):
        part = runs[kind].participation[0]
        assert np.allclose((obs[kind] * runs[kind].pattern[0])[part], value), kind
    sp = runs["spread"]
    assert np.allclose((obs["spread"] * sp.pattern[0])[sp.participation[0]], 4.0 * math.sqrt(3), rtol=0.2)
    torch = pytest.importorskip("torch")
    step = can.begin_step(batch_size=2)
    out = step.insert({f"w{i}": torch.ones((2, *s), dtype=torch.float32) for i, s in enumerate(shapes)})
    assert all(isinstance(o, torch.Tensor) and o.dtype == torch.float32 for o in out.values())
    assert list(out)[3:] == can.block_names
    with pytest.raises(ValueError, match="begin_step called twice"):
        can.begin_step(batch_size=2)
    with pytest.raises(ValueError, match="shapes"):
        can.observe([np.zeros(s) for s in shapes])
    can.cancel_step()
    with pytest.raises(ValueError, match="without begin_step"):
        can.observe([np.zeros(s) for s in can.shapes])
    with pytest.raises(ValueError, match="dataset_size"):
        Canaries(shapes, noise_multiplier=1.0, max_grad_norm=1.0, sampling_rate=0.1, kinds=("data",))
    with pytest.raises(ValueError, match="dedicated"):
        Canaries(shapes, noise_multiplier=1.0, max_grad_norm=1.0, sampling_rate=0.1, block=False, kinds=("dirac",))
    with pytest.raises(ValueError, match="2 dedicated"):
        Canaries(shapes, noise_multiplier=1.0, max_grad_norm=1.0, sampling_rate=0.1, blocks=1, kinds=("split",))
    with pytest.raises(ValueError, match="kinds"):
        Canaries(shapes, noise_multiplier=1.0, max_grad_norm=1.0, sampling_rate=0.1, kinds=("input",))
    with pytest.raises(ValueError, match="batch_divisor"):
        Canaries(shapes, noise_multiplier=1.0, max_grad_norm=1.0, sampling_rate=0.1, batch_divisor="expected")
    data = Canaries(shapes, noise_multiplier=1.0, max_grad_norm=1.0, sampling_rate=0.1, dataset_size=100,
                    data_canaries=50, batch_divisor="expected")
    assert data.dataset_size_with_canaries == 150 and data.batch_divisor == pytest.approx(15.0)


@pytest.mark.parametrize("bug, expect", [
    ("correct", None),
    ("unclipped-last", "clipping norm"),  # large canaries at random positions: one is last, unclipped
    ("fast-clip", "certify"),  # clipped to 1 while C = 0.25: 4x the claimed sensitivity
])
def test_one_run_sees_clipping_bugs_of_a_users_step(bug, expect):
    can = run_user_loop(bug, sigma=SIGMA_Q1_T5, steps=5, n=50, C=0.25 if bug == "fast-clip" else 1.0)
    a = can.audit(delta=1e-5, beta=0.05)
    assert a.violated == (expect is not None), a.summary()
    if expect:
        assert any(expect in f for f in a.findings), a.summary()
    else:
        assert a.epsilon_lower_bound < a.accountant_epsilon and a.clipping["p_value"] > 0.05 / 4


def test_spread_canaries_see_per_layer_clipping_that_block_canaries_cannot():
    """Each of 14 tensors clipped to C with noise for one overall norm: sensitivity sqrt(14) C,
    true epsilon 9.2 against the accountant's 2.0 (q = 1, 5 steps). A spread canary's
    observation carries about sqrt(13) times a correct step's signal; the correct step with the
    same canaries is not accused. (A dedicated block is one tensor: per-layer clipping treats a
    block canary exactly as flat clipping does.)"""
    kw = dict(sigma=SIGMA_Q1_T5, steps=5, n=50, widths=DEEP, canaries=2000, kinds=("spread",))
    bug = run_user_loop("per-layer", **kw).audit()
    assert bug.violated and bug.epsilon_lower_bound > bug.accountant_epsilon, bug.summary()
    ok = run_user_loop("correct", **kw).audit()
    assert not ok.violated, ok.summary()


def test_crowd_rows_and_observations():
    """The coupling check's crowd (``Canaries(crowd=)``): at every step ``ceil(crowd n)`` partner rows
    (``-2,000 C``) and, at the steps of the coin, ``ceil(crowd n / 3)`` crowd canaries (``+20,000 C``),
    ``n`` the step's other rows, all on one coordinate of a dedicated tensor that nothing else
    touches, spread over the batch (not in one block); the observation recorded is the update's crowd
    coordinate, sign-corrected, in units of C (``a m - b P`` for the plain clipped sum); ``crowd=0``
    removes the crowd and its coordinate."""
    from dpaudit.dpsgd.canaries import CROWD_NORM, CROWD_PARTNER_NORM

    C = 2.0
    can = Canaries([(6,)], noise_multiplier=1.0, max_grad_norm=C, sampling_rate=1.0, canaries=40,
                   kinds=("dirac", "paired"), seed=4, null_coordinates=8)
    assert can.crowd == 0.15 and can.block_size == Canaries(
        [(6,)], noise_multiplier=1.0, max_grad_norm=C, sampling_rate=1.0, canaries=40, kinds=("dirac", "paired"),
        seed=4, null_coordinates=8, crowd=0).block_size + 1
    b, c = can._crowd_at
    L = len(can.user_shapes)
    others = {(int(t), int(x)) for k in ("dirac", "paired") for t, x in zip(*can._coords[k])}
    assert (b, c) not in others and c >= can.null_coordinates
    seen_on = seen_off = 0
    for _ in range(6):
        step = can.begin_step(batch_size=300)
        rows = step.insert([np.full((300, 6), 0.01)])
        flat = np.concatenate([r.reshape(step.size, -1) for r in rows], axis=1)
        col = L * 6 + sum(s[0] for s in can.block_shapes[:b]) + c
        v = flat[:, col] / C
        canary, partner = np.abs(v) == CROWD_NORM, np.abs(v) == CROWD_PARTNER_NORM
        assert (np.abs(flat[canary | partner]).sum(axis=1) == np.abs(flat[canary | partner, col])).all()  # one coordinate
        n0 = step.size - canary.sum() - partner.sum()
        assert partner.sum() == math.ceil(0.15 * n0) and canary.sum() in (0, math.ceil(0.15 * n0 / 3))
        assert len(set(np.sign(v[canary | partner]) * np.where(canary, 1, -1)[canary | partner])) == 1  # one sign
        assert np.diff(np.flatnonzero(partner)).max() > 1  # spread over the batch, not one block
        seen_on += canary.any()
        seen_off += not canary.any()
        g = flat * np.minimum(1.0, C / np.linalg.norm(flat, axis=1, keepdims=True))[:, :]  # a correct step, no noise
        u = g.sum(axis=0) / C * 1.0
        can.observe(np.split(u * C, np.cumsum([int(np.prod(s)) for s in can.shapes])[:-1]))
        y, m, P = can._crowd_obs[-1]
        assert (m, P) == (canary.sum(), partner.sum()) and y == pytest.approx(m - P)
    assert seen_on and seen_off
    assert Canaries([(6,)], noise_multiplier=1.0, max_grad_norm=C, sampling_rate=1.0, canaries=40,
                    kinds=("dirac", "paired"), crowd=0)._crowd_at is None
    with pytest.raises(ValueError, match="paired"):
        Canaries([(6,)], noise_multiplier=1.0, max_grad_norm=C, sampling_rate=1.0, canaries=40, kinds=("dirac",),
                 crowd=0.2)
    with pytest.raises(ValueError, match="crowd must be"):
        Canaries([(6,)], noise_multiplier=1.0, max_grad_norm=C, sampling_rate=1.0, canaries=40, crowd=-1)


@pytest.mark.parametrize("sampler", ["poisson", "shuffle", "weighted"])
def test_data_canaries_see_the_users_sampler(sampler):
    can = run_user_loop(sigma=SIGMA_Q01_T30, q=0.1, steps=30, n=100, canaries=600, kinds=("dirac", "data"),
                        sampler=sampler, data_canaries=400)
    a = can.audit()
    assert a.sampler is not None and a.violated == (sampler != "poisson"), a.summary()
    run = can.runs()["data"]
    assert not run.participation[:, ~run.mask].any() and run.participation.any()


def test_sampler_check_is_exact_under_poisson_and_names_the_deviation():
    rng = np.random.default_rng(0)
    ps = [sampler_check((rng.random((20, 50)) < 0.1).astype(int), 0.1, draws=199, seed=s)["p_value"] for s in range(40)]
    assert sum(p <= 0.05 for p in ps) <= 5  # at most beta of them, with binomial slack (40 x 0.05 = 2)
    shuffled = np.zeros((20, 50), dtype=int)
    for e in range(2):
        for j, t in enumerate(rng.permutation(50) // 5):
            shuffled[10 * e + t, j] = 1
    out = sampler_check(shuffled, 0.1)
    assert out["p_value"] < 0.01 and out["variance"] == 0
    assert sampler_check(np.full((3, 4), 2), 0.1)["repeats"] == 12
    with pytest.raises(ValueError, match="counts"):
        sampler_check(np.ones(5), 0.1)
    with pytest.raises(ValueError, match="rate"):
        sampler_check(np.ones((2, 2), dtype=int), 1.5)
    # q = 1: every example exactly once in every step; a sampler with replacement leaves some out
    assert sampler_check(np.ones((4, 6), dtype=int), 1.0)["p_value"] == 1.0
    boot = np.bincount(rng.choice(6, 6), minlength=6)[None, :]
    assert sampler_check(boot, 1.0)["p_value"] == 0.0 and sampler_check(boot, 1.0)["missing"] > 0


def test_reference_trainer_offers_spread_canaries():
    """train_with_canaries(canary_kind="spread"): norm canary_norm in each of the MLP's 4 tensors,
    observed along its unit direction; correct clipping cuts it to C (signal 1 in units of C)."""
    pytest.importorskip("torch")
    from dpaudit.dpsgd import DPSGDConfig, audit_run, train_with_canaries

    run = train_with_canaries(DPSGDConfig(noise_multiplier=1.0, steps=4), canaries=400, canary_kind="spread",
                              data=run_user_loop.__globals__["load_digits_task"](num_train=40), hidden=8)
    o = run.observations
    assert run.details["canary_kind"] == "spread" and abs(o[run.participation].mean() - o[:, ~run.mask].mean() - 1) < 0.3
    assert not audit_run(run).violated


def _adaptive_run(tell: bool, *, seed: int = 3, T: int = 20, n: int = 200):
    """A correct NumPy step whose clipping norm tracks a quantile (Andrew et al. 2021, Algorithm 1:
    ``C <- C exp(-eta (b~ - gamma))``, ``b~`` the batch's unclipped fraction plus Gaussian noise of
    standard deviation ``n / 20`` rows, ``eta = 0.2``, ``gamma = 0.1``), noise ``sigma C_t`` at every
    step; the canaries told each step's norm (``begin_step(max_grad_norm=C_t)``) or not."""
    sigma = SIGMA_Q1_T10 * math.sqrt(T / 10)  # the accountant's epsilon 2 at T steps, q = 1
    rng = np.random.default_rng(seed)
    can = Canaries([(16,)] * 4, noise_multiplier=sigma, max_grad_norm=1.0, sampling_rate=1.0, canaries=600,
                   batch_divisor=n, seed=seed)
    C, norms = 1.0, []
    for _ in range(T):
        g = rng.standard_normal((n, 64)) * rng.lognormal(-1.2, 0.5, (n, 1)) / 8.0  # norms about 0.3
        step = can.begin_step(batch_size=n, max_grad_norm=C if tell else None)
        rows = step.insert([g[:, 16 * i:16 * (i + 1)] for i in range(4)])
        nrm = np.sqrt(sum(np.square(r.reshape(step.size, -1)).sum(axis=1) for r in rows))
        f = np.minimum(1.0, C / nrm)
        can.observe([((r * f.reshape(-1, *[1] * (r.ndim - 1))).sum(axis=0)
                      + rng.normal(0.0, sigma * C, r.shape[1:])) / n for r in rows])
        norms.append(C)
        unclipped = (f >= 1.0).sum() + rng.normal(0.0, n / 20)
        C *= math.exp(-0.2 * (unclipped / step.size - 0.1))
    return can, norms


def test_a_clipping_norm_that_changes_every_step():
    """Adaptive clipping (a norm that changes at every step, a correct step): with each step's norm
    given to ``begin_step(max_grad_norm=)`` dpaudit's rows are in units of it and so are the
    observations, and nothing is accused; told nothing, the same run looks like a step with less
    noise than ``sigma C`` (its norm fell) and is accused. The rows scale with the norm exactly."""
    can, norms = _adaptive_run(True)
    assert can.clip_norms == norms and min(norms) < 0.8 * max(norms)  # the norm did change, at every step
    assert (np.diff(norms) != 0).all()
    a = can.audit(delta=1e-5, beta=0.05)
    assert not a.violated, a.summary()
    crowd = a.checks["coupling"]["tests"]["crowd"]
    assert abs(crowd["a"] - 1.0) < 4 * crowd["se"]  # each crowd canary moves its coordinate by C_t
    fixed, _ = _adaptive_run(False)
    bad = fixed.audit(delta=1e-5, beta=0.05)
    assert bad.violated and {f.check for f in bad.violations} >= {"noise"}
    # rows in units of the step's norm; the observation read in units of it
    one, two = (Canaries([(16,)] * 4, noise_multiplier=1.0, max_grad_norm=1.0, sampling_rate=1.0, canaries=60,
                         seed=2) for _ in range(2))
    r1 = one.begin_step(batch_size=5).insert([np.zeros((5, 16))] * 4)
    r2 = two.begin_step(batch_size=5, max_grad_norm=2.5).insert([np.zeros((5, 16))] * 4)
    assert all(np.array_equal(2.5 * x, y) for x, y in zip(r1, r2))
    o1, o2 = one.observe([x.sum(axis=0) for x in r1]), two.observe([y.sum(axis=0) for y in r2])
    assert all(np.allclose(o1[k], o2[k]) for k in o1) and two.clip_norms == [2.5]
    for bad_norm in (0.0, -1.0, float("nan"), "1"):
        with pytest.raises((ValueError, TypeError), match="max_grad_norm"):
            two.begin_step(batch_size=5, max_grad_norm=bad_norm)
