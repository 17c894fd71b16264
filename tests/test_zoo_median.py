"""Tests of the exponential-mechanism median (zoo entry ``dp-median``).

Frequencies are compared with the exact softmax law within 5 binomial standard errors per grid
point (21 points); seeds fixed. The privacy loss is checked exhaustively on small datasets.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpaudit.datasets import AddRemove, Domain
from dpaudit.mechanisms import draw
from dpaudit.mechanisms.zoo import get
from dpaudit.mechanisms.zoo.median import ExponentialQuantile

N = 50_000


def test_entry():
    entry = get("dp-median")
    assert entry.factory is ExponentialQuantile and entry.private and entry.bug is None
    assert entry.claim_kind == "pure" and entry.relation == "add-remove" and entry.domain == Domain.unit(1)
    rel = AddRemove(Domain.unit(1), 1, 10)
    for d0, d1 in entry.witness_pairs:
        rel.pair(d0, d1)
    mech = entry.mechanism(0.5)
    assert mech.name == "dp-median" and mech.grid_size == 21 and mech.quantile == 0.5


@pytest.mark.parametrize("kwargs, match", [
    ({"quantile": 0.0}, "quantile"),
    ({"quantile": 1.0}, "quantile"),
    ({"quantile": "half"}, "quantile"),
    ({"grid_size": 1}, "grid_size"),
    ({"grid_size": 10.5}, "grid_size"),
])
def test_invalid_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ExponentialQuantile(1.0, **kwargs)
    with pytest.raises(ValueError, match="epsilon"):
        ExponentialQuantile(0.0)


def test_vector_records_are_refused():
    with pytest.raises(ValueError, match=r"shape \(n, 1\)"):
        ExponentialQuantile(1.0).sample(np.zeros((3, 2)), 5, np.random.default_rng(0))


def test_utility_by_hand():
    m = ExponentialQuantile(1.0, grid_size=5)  # grid 0, .25, .5, .75, 1
    d = np.array([[0.1], [0.5], [0.9]])
    # #{x < y} - #{x > y} at each grid point: 0 - 3, 1 - 2, 1 - 1, 2 - 1, 3 - 0.
    assert m.utility(d).tolist() == [-3.0, -1.0, -0.0, -1.0, -3.0]
    # Quantile 1/4 at y: -|0.75 #< - 0.25 #>| / 0.75.
    m25 = ExponentialQuantile(1.0, quantile=0.25, grid_size=5)
    expected = [-abs(0.75 * lo - 0.25 * hi) / 0.75 for lo, hi in ((0, 3), (1, 2), (1, 1), (2, 1), (3, 0))]
    assert m25.utility(d) == pytest.approx(expected)
    # Empty dataset: every grid point has utility 0 -> uniform.
    assert m.probabilities(np.zeros((0, 1))) == pytest.approx(np.full(5, 0.2))


@pytest.mark.parametrize("eps", [0.1, 1.0, 5.0])
def test_frequencies_match_the_exact_law(eps):
    mech = ExponentialQuantile(eps)
    d = np.array([[0.0], [0.3], [0.35], [0.8], [1.0]])
    out = draw(mech, d, N, np.random.default_rng(int(10 * eps)))
    assert out.shape == (N, 1)
    idx = np.rint(out[:, 0] * 20).astype(int)
    assert np.allclose(out[:, 0], idx / 20)
    freq = np.bincount(idx, minlength=21) / N
    law = mech.probabilities(d)
    assert law.sum() == pytest.approx(1.0)
    assert np.all(np.abs(freq - law) <= 5 * np.sqrt(law * (1 - law) / N) + 1e-9)


def test_privacy_loss_is_at_most_epsilon_on_small_datasets():
    # Every add/remove pair of up to 4 + 1 records with values in {0, 0.25, ..., 1} (and 0.3):
    # |ln P(y|D)/P(y|D')| <= eps. The witnesses are where it is largest (0.93 eps and 0.96 eps).
    vals = [0.0, 0.25, 0.3, 0.5, 0.75, 1.0]
    for eps in (0.5, 1.0, 3.0):
        m = ExponentialQuantile(eps)
        worst = 0.0
        for n in range(1, 5):
            for d in itertools.combinations_with_replacement(vals, n):
                p = m.probabilities(np.array(d)[:, None])
                for x in vals:
                    q = m.probabilities(np.array(d + (x,))[:, None])
                    worst = max(worst, float(np.max(np.abs(np.log(p / q)))))
        assert worst <= eps * (1 + 1e-12)
    m = ExponentialQuantile(1.0)
    losses = [np.max(np.abs(np.log(m.probabilities(np.array(a)) / m.probabilities(np.array(b)))))
              for a, b in get("dp-median").witness_pairs]
    assert losses == pytest.approx([0.9314, 0.9568], abs=1e-4)


def test_clipping_and_reproducibility():
    m = ExponentialQuantile(1.0)
    assert m.utility(np.array([[5.0], [-2.0]])) == pytest.approx(m.utility(np.array([[1.0], [0.0]])))
    d = np.array([[0.2], [0.4]])
    np.testing.assert_array_equal(m.sample(d, 100, np.random.default_rng(1)), m.sample(d, 100, np.random.default_rng(1)))
    assert math.isclose(m.probabilities(d).sum(), 1.0)
