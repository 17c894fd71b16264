"""The Monte Carlo accountant's device sampler (accounting/mc_device.py), exercised on the CPU.

The tiled sampler runs wherever the torch backend draws with torch's own generator (CUDA by
default; ``TorchOps('cpu', native_rng=True)`` here, as no GPU is needed to test it). Checked:
no host synchronisation inside a tile; reproducibility per key; statistical agreement with the
NumPy cell sampler (two independent unbiased estimates, compared with their standard errors);
end-to-end coverage of dp_accounting's PLD value; the redraw of failed tiles; and the conditional
estimates' device evaluation (equal to NumPy's up to rounding). Statistical assertions use fixed
seeds and say how likely they are to fail by chance.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from dpaudit.accounting import (  # noqa: E402
    Composition,
    GaussianStep,
    LaplaceStep,
    MonteCarloAccountant,
    SubsampledGaussianStep,
    reference,
)
from dpaudit.accounting import mc_device  # noqa: E402
from dpaudit.accounting import monte_carlo as mc  # noqa: E402
from dpaudit.accounting._backend import NumpyOps, TorchOps  # noqa: E402
from dpaudit.accounting.monte_carlo import _run_offline, _Sampler, _samples_from  # noqa: E402

MIXED = Composition.from_steps([(SubsampledGaussianStep(1.0, 0.05), 150), (GaussianStep(3.0), 5),
                                (SubsampledGaussianStep(0.8, 0.02), 20)])


def _native():
    return TorchOps("cpu", native_rng=True)


def _draw(ops, comp, direction, est, lam, key, m):
    s = _Sampler(comp, direction, est, lam, None, key, ops, 1 << 21, True)
    return s, _samples_from(s, _run_offline(s, m, None), lam)


def test_a_tile_never_waits_for_the_device(monkeypatch):
    # every way a tensor reaches the host raises inside the tile: the tile queues work only
    s = _Sampler(MIXED, "add", "is-cmc", (0.0, 2.5), None, 3, _native(), 1 << 21, True)
    s.num_samples = 1000
    s._device_gen = torch.Generator()
    plans = [[mc_device._DevicePlan(s.ops, st, lam, "add") for lam in s.tilts] for st, _ in MIXED.segments]
    assert any(p.rejection for row in plans for p in row)

    def host(*a, **k):
        raise AssertionError("host synchronisation inside a tile")

    for name in ("item", "tolist", "cpu", "numpy", "__bool__", "__int__", "__float__", "nonzero"):
        monkeypatch.setattr(torch.Tensor, name, host)
    (L, S, M, pick), fail = mc_device._tile(s, plans, 0, 1000, 0, True)
    monkeypatch.undo()
    assert L.shape == S.shape == M.shape == pick.shape == (1000,) and int(fail) == 0


@pytest.mark.parametrize("direction, est", [("remove", "is-cmc"), ("add", "is"), ("add", "is-cmc")])
def test_tiled_draws_are_reproducible_and_agree_with_the_cell_sampler(direction, est):
    lam = (0.0, 2.5) if direction == "add" else (0.0, 3.25)  # non-integer: both directions reject
    eps = 1.5
    s, a = _draw(_native(), MIXED, direction, est, lam, 11, 6000)
    assert mc_device.supports_tiled(s)
    _, b = _draw(_native(), MIXED, direction, est, lam, 11, 6000)
    np.testing.assert_array_equal(a.losses, b.losses)
    np.testing.assert_array_equal(a.log_weights, b.log_weights)
    _, c = _draw(_native(), MIXED, direction, est, lam, 12, 6000)
    assert not np.allclose(a.losses, c.losses)
    _, n = _draw(NumpyOps(), MIXED, direction, est, lam, 11, 6000)
    (da, sa), (dn, sn) = a.delta(eps), n.delta(eps)
    # two independent unbiased estimates: within 4.5 combined standard errors (chance ~1e-5)
    assert abs(da - dn) < 4.5 * math.hypot(sa, sn) and sa < 0.1 * da
    if est == "is-cmc":  # the integrated coordinate is uniform over the 175 steps (5 sigma: chance ~1e-6)
        counts = np.bincount(a.segment, minlength=3)
        p = np.array([150, 5, 20]) / 175
        assert np.all(np.abs(counts - 6000 * p) <= 5 * np.sqrt(6000 * p * (1 - p)))
        assert np.all(np.isfinite(a.others_max)) and np.all(np.isfinite(a.log_weights_others))


def test_laplace_and_collapsed_gaussian_steps_on_the_device():
    comp = Composition.from_steps([(LaplaceStep(4.0), 30), (GaussianStep(5.0), 40)])
    lam = (1.0,)
    s, a = _draw(_native(), comp, "remove", "is", lam, 5, 20_000)
    _, n = _draw(NumpyOps(), comp, "remove", "is", lam, 5, 20_000)
    # E[w L] = E_P[L] = K'(0): the weighted means of both samplers agree (chance ~1e-5)
    wa, wn = np.exp(a.log_weights), np.exp(n.log_weights)
    ma, mn = np.mean(wa * a.losses), np.mean(wn * n.losses)
    se = math.hypot(np.std(wa * a.losses), np.std(wn * n.losses)) / math.sqrt(20_000)
    assert abs(ma - mn) < 4.5 * se


def test_accountant_on_the_tiled_sampler_covers_pld(monkeypatch):
    comp = Composition.dpsgd(1.1, 256 / 60000, 200)
    monkeypatch.setattr(mc, "get_ops", lambda backend, device: _native())
    r = MonteCarloAccountant(num_samples=4000, rng=0).get_epsilon(comp, 1e-5)
    assert r.backend == "torch" and r.trusted
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pld = reference.epsilon("pld", comp, 1e-5)["epsilon"]
    # the one-sided bound covers the PLD value (pessimistic: at least the truth), P(fail) <= 5% (seeded)
    assert r.epsilon_upper >= pld - 1e-3 and r.ci_low - 2e-3 <= pld <= r.ci_high + 2e-3


def test_failed_tiles_are_redrawn_then_refused(monkeypatch):
    s = _Sampler(MIXED, "add", "is", (2.5,), None, 3, _native(), 1 << 21, True)
    calls = []
    real = mc_device._tile

    def counting(*args):
        calls.append(args[3:5])  # (n, attempt)
        return real(*args)

    monkeypatch.setattr(mc_device, "_tile", counting)
    monkeypatch.setattr(mc_device, "PENDING_TARGET", 1e12)  # no rejection stages: every tile fails
    with pytest.raises(RuntimeError, match="rejection sampler did not finish"):
        _run_offline(s, 500, None)
    assert [a for _, a in calls] == list(range(mc_device.MAX_ATTEMPTS + 1))
    with pytest.raises(ValueError, match="tilted sampler could not draw"):
        monkeypatch.setattr(mc, "get_ops", lambda backend, device: _native())
        MonteCarloAccountant(500, estimator="is", rng=0).get_delta(MIXED, 2.0)


def test_conditional_components_shared_tails_and_device_evaluation():
    s, smp = _draw(NumpyOps(), MIXED, "remove", "is-cmc", (0.0, 3.25), 9, 3000)
    for eps in (0.0, 0.7, 2.0):
        both = smp.components(eps)
        # the tails shared by the 'cmc' and 'cond' columns give what separate evaluations give
        np.testing.assert_array_equal(both[:, 1], smp.components(eps, (1,))[:, 1])
        np.testing.assert_array_equal(both[:, 2], smp.components(eps, (2,))[:, 2])
        dev = smp.use_device(TorchOps("cpu")).components(eps)
        smp.use_device(None)
        np.testing.assert_allclose(dev, both, rtol=1e-9, atol=1e-300)
