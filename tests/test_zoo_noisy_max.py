"""Tests of the report-noisy-max zoo entries: exact laws, sampling, the bugs' divergences, detection.

Frequencies are compared with exact laws within 5 binomial standard errors (4 cells); seeds fixed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate

from dpaudit import GridFinder, audit
from dpaudit.testers import HockeyStickTester
from dpaudit.datasets import Domain
from dpaudit.mechanisms import draw
from dpaudit.mechanisms.zoo import get
from dpaudit.mechanisms.zoo._common import hockey_stick_discrete
from dpaudit.mechanisms.zoo.noisy_max import (
    WITNESS_ALL_RISE,
    WITNESS_ONE_RISES,
    NoisyMax,
    noisy_max_index_probabilities,
)

ENTRIES = {
    "noisy-max-laplace": ("laplace", 2.0, "index", True),
    "noisy-max-gumbel": ("gumbel", 2.0, "index", True),
    "noisy-max-half-noise": ("laplace", 1.0, "index", False),
    "noisy-max-value": ("laplace", 2.0, "value", False),
}
N = 50_000


def lap_pdf(x, b):
    return math.exp(-abs(x) / b) / (2 * b)


def lap_cdf(x, b):
    return 0.5 * math.exp(x / b) if x < 0 else 1 - 0.5 * math.exp(-x / b)


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_entries(name):
    noise, factor, release, private = ENTRIES[name]
    entry = get(name)
    assert entry.private is private and (entry.bug is None) is private
    assert entry.claim_kind == "pure" and entry.relation == "replace" and entry.domain == Domain.unit(4)
    mech = entry.mechanism(0.5)
    assert isinstance(mech, NoisyMax) and mech.name == name
    assert (mech.noise, mech.scale_factor, mech.release) == (noise, factor, release)
    assert mech.scale == pytest.approx(factor / 0.5)
    assert [len(p.d0) for p in entry.witnesses()]  # valid replace pairs


@pytest.mark.parametrize("kwargs, match", [
    ({"noise": "cauchy"}, "noise"),
    ({"release": "both"}, "release"),
    ({"scale_factor": 0.0}, "scale_factor"),
    ({"scale_factor": "two"}, "scale_factor"),
    ({"num_queries": 0}, "num_queries"),
])
def test_invalid_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        NoisyMax(1.0, **kwargs)
    with pytest.raises(ValueError, match="epsilon"):
        NoisyMax(float("nan"))


def test_wrong_record_dimension():
    with pytest.raises(ValueError, match=r"shape \(n, 4\)"):
        NoisyMax(1.0).sample(np.zeros((2, 2)), 3, np.random.default_rng(0))


def test_exact_law_against_direct_integration_and_closed_forms():
    q = np.array([0.0, 1.0, 0.5, 2.0])
    b = 1.3
    law = noisy_max_index_probabilities(q, "laplace", b)
    for i in range(4):
        f = lambda x: lap_pdf(x - q[i], b) * np.prod([lap_cdf(x - q[j], b) for j in range(4) if j != i])  # noqa: E731
        val, _ = integrate.quad(f, -60, 60, points=list(q), limit=400)
        assert law[i] == pytest.approx(val, abs=1e-9)
    assert law.sum() == pytest.approx(1.0, abs=1e-12)
    # Two equal queries: 1/2 each; Gumbel: softmax(q / scale).
    assert noisy_max_index_probabilities([1.0, 1.0], "laplace", 2.0) == pytest.approx([0.5, 0.5], abs=1e-12)
    g = noisy_max_index_probabilities(q, "gumbel", b)
    assert g == pytest.approx(np.exp(q / b) / np.exp(q / b).sum(), rel=1e-12)
    with pytest.raises(ValueError, match="noise"):
        noisy_max_index_probabilities(q, "normal", 1.0)
    with pytest.raises(ValueError, match="scale"):
        noisy_max_index_probabilities(q, "laplace", 0.0)


@pytest.mark.parametrize("name", ["noisy-max-laplace", "noisy-max-gumbel", "noisy-max-half-noise"])
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_index_frequencies_match_the_exact_law(name, eps):
    mech = get(name).mechanism(eps)
    for j, data in enumerate((WITNESS_ONE_RISES[0], [[0.2, 1.0, 0.6, 0.0], [0.3, 0.5, 0.5, 0.9]])):
        d = np.array(data)
        out = draw(mech, d, N, np.random.default_rng(int(10 * eps) + j))
        assert out.shape == (N, 1)
        freq = np.bincount(out[:, 0].astype(int), minlength=4) / N
        law = mech.index_probabilities(d)
        se = np.sqrt(law * (1 - law) / N)
        assert np.all(np.abs(freq - law) <= 5 * se), (freq, law)


def test_value_release_matches_the_law_of_the_maximum():
    # max_i (q_i + Lap(b)) has CDF prod_i F(v - q_i); compare at a few points (5 SE).
    mech = get("noisy-max-value").mechanism(1.0)
    d = np.array([[0.0, 1.0, 0.5, 0.25]])
    q, b = mech.query_values(d), mech.scale
    v = draw(mech, d, N, np.random.default_rng(5))[:, 0]
    for t in (-2.0, 0.0, 1.0, 2.5, 6.0):
        cdf = np.prod([lap_cdf(t - qi, b) for qi in q])
        assert abs(np.mean(v <= t) - cdf) <= 5 * math.sqrt(cdf * (1 - cdf) / N) + 1e-12, t


def test_index_and_value_release():
    mech = NoisyMax(1.0, release="index-and-value")
    out = mech.sample(np.array([[1.0, 0.0, 0.0, 0.0]] * 5), 1000, np.random.default_rng(6))
    assert out.shape == (1000, 2)
    assert set(np.unique(out[:, 0])) <= {0.0, 1.0, 2.0, 3.0}
    # With q = (5, 0, 0, 0) index 0 usually wins, and then the value is 5 + noise.
    assert np.mean(out[:, 0] == 0) > 0.7


# Exact H_{e^eps}(D1 || D0) at the witness pair of the half-noise bug (quadrature) and of the
# correct versions there (0): the privacy loss of index 0 is 1.64 eps at eps = 1.
@pytest.mark.parametrize("name, eps, expected", [
    ("noisy-max-half-noise", 1.0, 0.2378),
    ("noisy-max-half-noise", 0.01, 0.001884),
    ("noisy-max-laplace", 1.0, 0.0),
    ("noisy-max-gumbel", 1.0, 0.0),
    ("noisy-max-laplace", 0.01, 0.0),
])
def test_exact_divergence_at_the_witness(name, eps, expected):
    mech = get(name).mechanism(eps)
    p = dict(enumerate(mech.index_probabilities(np.array(WITNESS_ONE_RISES[0]))))
    q = dict(enumerate(mech.index_probabilities(np.array(WITNESS_ONE_RISES[1]))))
    h = max(hockey_stick_discrete(p, q, eps), hockey_stick_discrete(q, p, eps))
    assert h == pytest.approx(expected, rel=1e-3, abs=1e-12)


def test_half_noise_meets_two_epsilon_and_correct_versions_meet_epsilon():
    # On random replace pairs (each query moves by at most 1): the correct versions have
    # H_{e^eps} = 0, the half-noise bug H_{e^{2 eps}} = 0 (it is 2 eps-DP).
    rng = np.random.default_rng(7)
    for _ in range(50):
        base = rng.uniform(0, 3, 4)
        a, b = base + rng.uniform(0, 1, 4), base + rng.uniform(0, 1, 4)
        for eps in (0.5, 2.0):
            for noise, factor, order in (("laplace", 2.0, eps), ("gumbel", 2.0, eps), ("laplace", 1.0, 2 * eps)):
                p = dict(enumerate(noisy_max_index_probabilities(a, noise, factor / eps)))
                q = dict(enumerate(noisy_max_index_probabilities(b, noise, factor / eps)))
                assert hockey_stick_discrete(p, q, order) < 1e-12
                assert hockey_stick_discrete(q, p, order) < 1e-12


def test_value_release_divergence_at_the_witness():
    # All queries rise by 1: the maximum of 4 Laplace(2/eps) shifts by 1. H_{e^eps} by quadrature
    # of max(0, g(v - 1) - e^eps g(v)), g the density of the maximum (docstring: 0.083 at eps = 1).
    eps, b, k = 1.0, 2.0, 4

    def g(v):
        return k * lap_pdf(v, b) * lap_cdf(v, b) ** (k - 1)

    h, _ = integrate.quad(lambda v: max(0.0, g(v - 1) - math.exp(eps) * g(v)), -80, 80, points=[0, 1], limit=500)
    h2, _ = integrate.quad(lambda v: max(0.0, g(v) - math.exp(eps) * g(v - 1)), -80, 80, points=[0, 1], limit=500)
    assert max(h, h2) == pytest.approx(0.0827, rel=0.01)
    # ... while the index law is the same on both datasets (no test of the index releases).
    mech = get("noisy-max-laplace").mechanism(eps)
    a, b = (mech.index_probabilities(np.array(d)) for d in WITNESS_ALL_RISE)
    assert a == pytest.approx(b, abs=1e-12)
    assert mech.query_values(np.array(WITNESS_ALL_RISE[1])).tolist() == [1.0] * k


# --- detection --------------------------------------------------------------------------------


def _audit(name, eps, samples, seed):
    entry = get(name)
    return audit(entry.mechanism(eps), entry.claim(eps), GridFinder(entry.witnesses()[:1]),
                 num_samples=samples, trials=1, beta=0.01, seed=seed, tester=HockeyStickTester())


def test_half_noise_is_flagged_at_eps_one():
    result = _audit("noisy-max-half-noise", 1.0, 20_000, seed=1)
    assert result.violation, result.to_dict()["evidence"]
    assert result.strongest.outcome.epsilon_lower_bound > 1.0


@pytest.mark.slow
@pytest.mark.parametrize("name", ["noisy-max-half-noise", "noisy-max-value"])
def test_noisy_max_bugs_are_flagged_at_eps_one_every_time(name):
    for seed in (2, 3):
        result = _audit(name, 1.0, 50_000, seed)
        assert result.violation, (name, seed, result.to_dict()["evidence"])
        assert result.strongest.outcome.epsilon_lower_bound > 1.0
