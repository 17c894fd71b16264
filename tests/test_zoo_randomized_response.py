"""Tests of the randomized-response zoo entries: exact law of the reported count, the flip
probabilities, the bug's divergence and its detection. Frequencies within 5 binomial standard
errors per cell; seeds fixed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit import GridFinder, audit
from dpaudit.datasets import Domain, Replace
from dpaudit.mechanisms import draw
from dpaudit.mechanisms.zoo import get
from dpaudit.mechanisms.zoo._common import hockey_stick_discrete
from dpaudit.mechanisms.zoo.randomized_response import RandomizedResponse

N = 50_000


@pytest.mark.parametrize("name, private, rule", [
    ("randomized-response", True, "correct"),
    ("randomized-response-wrong-flip", False, "coin"),
])
def test_entries(name, private, rule):
    entry = get(name)
    assert entry.private is private and (entry.bug is None) is private
    assert entry.claim_kind == "pure" and entry.relation == "replace" and entry.domain == Domain.unit(1)
    rel = Replace(Domain.unit(1), 1, 10)
    for d0, d1 in entry.witness_pairs:
        rel.pair(d0, d1)
    mech = entry.mechanism(0.7)
    assert isinstance(mech, RandomizedResponse) and mech.name == name and mech.flip_rule == rule


def test_flip_probabilities_and_true_epsilon():
    for eps in (0.01, 1.0, 3.0):
        good, bad = RandomizedResponse(eps), RandomizedResponse(eps, flip_rule="coin")
        assert good.flip_probability == pytest.approx(1 / (1 + math.exp(eps)))
        assert bad.flip_probability == pytest.approx(0.5 / (1 + math.exp(eps)))
        assert good.true_epsilon == pytest.approx(eps, rel=1e-9)
        assert bad.true_epsilon == pytest.approx(math.log(1 + 2 * math.exp(eps)))
    assert RandomizedResponse(1.0, flip_rule="coin").true_epsilon == pytest.approx(1.862, abs=1e-3)


def test_validation():
    with pytest.raises(ValueError, match="flip_rule"):
        RandomizedResponse(1.0, flip_rule="fair")
    with pytest.raises(ValueError, match="epsilon"):
        RandomizedResponse(-1.0)
    with pytest.raises(ValueError, match=r"shape \(n, 1\)"):
        RandomizedResponse(1.0).sample(np.zeros((2, 2)), 3, np.random.default_rng(0))


def test_bits_threshold_and_order_invariance():
    m = RandomizedResponse(1.0)
    assert m.bits(np.array([[0.0], [0.49], [0.5], [1.0]])).tolist() == [False, False, True, True]
    a, b = np.array([[0.0], [1.0], [1.0]]), np.array([[1.0], [0.0], [1.0]])
    np.testing.assert_array_equal(m.count_probabilities(a), m.count_probabilities(b))
    np.testing.assert_array_equal(m.sample(a, 100, np.random.default_rng(1)), m.sample(b, 100, np.random.default_rng(1)))


@pytest.mark.parametrize("rule", ["correct", "coin"])
@pytest.mark.parametrize("eps", [0.01, 1.0])
def test_count_frequencies_match_the_exact_law(rule, eps):
    m = RandomizedResponse(eps, flip_rule=rule)
    d = np.array([[0.0], [1.0], [1.0], [0.2], [0.9]])
    out = draw(m, d, N, np.random.default_rng(int(100 * eps) + len(rule)))
    assert out.shape == (N, 1)
    law = m.count_probabilities(d)
    f = m.flip_probability
    # Closed form of the mean: 3 ones reported with prob 1 - f, 2 zeros with prob f.
    assert np.dot(np.arange(6), law) == pytest.approx(3 * (1 - f) + 2 * f)
    freq = np.bincount(out[:, 0].astype(int), minlength=6) / N
    assert np.all(np.abs(freq - law) <= 5 * np.sqrt(law * (1 - law) / N) + 1e-9)


@pytest.mark.parametrize("eps", [0.01, 1.0, 3.0])
def test_divergences(eps):
    for name, expected in (("randomized-response", 0.0), ("randomized-response-wrong-flip", 0.5)):
        m = get(name).mechanism(eps)
        for a, b in get(name).witness_pairs:
            p = dict(enumerate(m.count_probabilities(np.array(a))))
            q = dict(enumerate(m.count_probabilities(np.array(b))))
            h = max(hockey_stick_discrete(p, q, eps), hockey_stick_discrete(q, p, eps))
            assert h == pytest.approx(expected, abs=1e-12)
            # Every mechanism meets its true epsilon, and the correct one is tight (loss = eps).
            assert hockey_stick_discrete(p, q, m.true_epsilon) < 1e-12
    m = RandomizedResponse(eps)
    p, q = m.count_probabilities(np.array([[0.0]])), m.count_probabilities(np.array([[1.0]]))
    assert np.max(np.abs(np.log(p / q))) == pytest.approx(eps, rel=1e-9)


def test_wrong_flip_is_flagged_and_correct_is_not():
    for eps in (0.01, 1.0):
        for name, expect in (("randomized-response-wrong-flip", True), ("randomized-response", False)):
            entry = get(name)
            result = audit(entry.mechanism(eps), entry.claim(eps), GridFinder(entry.witnesses()[:1]),
                           num_samples=10_000, trials=1, beta=0.01, seed=4)
            assert result.violation is expect, (name, eps, result.to_dict()["evidence"])
            if expect:
                assert result.strongest.outcome.epsilon_lower_bound > eps
