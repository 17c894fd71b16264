"""Tests of the SVT zoo entries (Lyu, Su, Li 2017, Algorithms 1-6).

Distribution checks compare answer-pattern frequencies with the exact law of
``SparseVector.answer_probabilities`` (quadrature), within 5 binomial standard errors per pattern
(at most 16 patterns, so a false alarm has probability below 1e-5); seeds are fixed. The exact law
is itself checked against closed forms and against the privacy theorems (the hockey-stick
divergence must vanish at each mechanism's true epsilon).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit import GridFinder, audit
from dpaudit.testers import HockeyStickTester
from dpaudit.datasets import Domain
from dpaudit.errors import MechanismError
from dpaudit.mechanisms import draw
from dpaudit.mechanisms.zoo import get
from dpaudit.mechanisms.zoo._common import hockey_stick_discrete
from dpaudit.mechanisms.zoo.svt import (
    SVT1,
    SVT2,
    SVT3,
    SVT4,
    SVT5,
    SVT6,
    WITNESS_ONE_FALLS,
    WITNESS_ONE_FALLS_HIGH,
    WITNESS_STAIRCASE,
    WITNESS_X_SHAPE,
)

CLASSES = {"svt1": SVT1, "svt2": SVT2, "svt3": SVT3, "svt4": SVT4, "svt5": SVT5, "svt6": SVT6}
PRIVATE = {"svt1": True, "svt2": True, "svt3": False, "svt4": False, "svt5": False, "svt6": False}
WITNESSES = [WITNESS_ONE_FALLS, WITNESS_ONE_FALLS_HIGH, WITNESS_X_SHAPE, WITNESS_STAIRCASE]
N = 50_000


def pattern_frequencies(answers: np.ndarray) -> dict:
    pats, counts = np.unique(answers.astype(int), axis=0, return_counts=True)
    return {tuple(int(v) for v in p): c / len(answers) for p, c in zip(pats, counts)}


def assert_matches_law(freq: dict, law: dict, n: int, label: str) -> None:
    assert set(freq) <= set(law), f"{label}: impossible patterns observed {set(freq) - set(law)}"
    assert sum(law.values()) == pytest.approx(1.0, abs=1e-10)
    for pattern, p in law.items():
        se = math.sqrt(max(p * (1 - p), 1e-12) / n)
        assert abs(freq.get(pattern, 0.0) - p) <= 5 * se + 1e-9, (label, pattern, freq.get(pattern, 0.0), p)


def set_queries(mech, by_dataset: dict):
    """Let a mechanism read query values straight from a dict (to test the law at any q)."""
    mech.query_values = lambda d: np.asarray(by_dataset[d], dtype=float)
    return mech


# --- registry ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_svt_entries(name):
    entry = get(name)
    assert entry.factory is CLASSES[name]
    assert entry.private is PRIVATE[name]
    assert (entry.bug is None) is PRIVATE[name]
    assert entry.claim_kind == "pure" and entry.relation == "replace"
    assert entry.domain == Domain.unit(4) and (entry.min_size, entry.max_size) == (1, 10)
    assert entry.violates_for is None
    assert entry.violates(0.01) is (not PRIVATE[name])
    for pair in entry.witnesses():  # valid replace neighbours in [0, 1]^4
        assert pair.relation == "replace" and len(pair.d0) == len(pair.d1)
    mech = entry.mechanism(0.5)
    assert mech.name == name and mech.epsilon == 0.5


def test_witness_query_values():
    m = SVT1(1.0)
    assert m.query_values(np.array(WITNESS_ONE_FALLS[0])).tolist() == [0, 0, 0, 2]
    assert m.query_values(np.array(WITNESS_ONE_FALLS[1])).tolist() == [1, 1, 1, 1]
    assert m.query_values(np.array(WITNESS_ONE_FALLS_HIGH[1])).tolist() == [2, 2, 2, 1]
    assert m.query_values(np.array(WITNESS_X_SHAPE[1])).tolist() == [1, 1.5, 1, 1]
    assert m.query_values(np.array(WITNESS_STAIRCASE[0])).tolist() == [0, 2, 2, 4]
    assert m.query_values(np.array(WITNESS_STAIRCASE[1])).tolist() == [1, 1, 3, 3]
    # Records are clipped to the box before summing.
    assert m.query_values(np.array([[2.0, -1.0, 0.5, 1.0]])).tolist() == [1.0, 0.0, 0.5, 1.0]


# --- validation -------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", list(CLASSES.values()))
@pytest.mark.parametrize("eps", [0.0, -1.0, float("nan"), float("inf"), "one", None, True])
def test_invalid_epsilon(cls, eps):
    with pytest.raises(ValueError, match="epsilon"):
        cls(eps)


@pytest.mark.parametrize("kwargs, match", [
    ({"num_queries": 0}, "num_queries"),
    ({"num_queries": 2.5}, "num_queries"),
    ({"threshold": float("nan")}, "threshold"),
    ({"threshold": "high"}, "threshold"),
    ({"cutoff": 0}, "cutoff"),
    ({"cutoff": True}, "cutoff"),
])
def test_invalid_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SVT1(1.0, **kwargs)


@pytest.mark.parametrize("cls", [SVT5, SVT6])
def test_no_cutoff_variants_refuse_a_cutoff(cls):
    assert cls(1.0).cutoff is None
    with pytest.raises(ValueError, match="no cut-off"):
        cls(1.0, cutoff=2)


def test_wrong_record_dimension_is_reported():
    with pytest.raises(ValueError, match=r"shape \(n, 4\)"):
        SVT1(1.0).sample(np.zeros((2, 3)), 5, np.random.default_rng(0))
    with pytest.raises(MechanismError, match=r"shape \(n, 4\)"):
        draw(SVT1(1.0), np.zeros((2, 3)), 5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="k = 15"):
        SVT1(1.0, num_queries=15).answer_probabilities(np.zeros((1, 15)))


# --- outputs ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_output_shape_codes_and_reproducibility(name):
    mech = get(name).mechanism(1.0)
    data = np.array(WITNESS_X_SHAPE[0])
    out = draw(mech, data, 2000, np.random.default_rng(0))
    k = 4
    assert out.shape == (2000, 2 * k if name == "svt3" else k)
    codes = out[:, :k]
    assert set(np.unique(codes)) <= {-1.0, 0.0, 1.0}
    if mech.has_cutoff:  # at most c = 1 "above", then nothing is answered
        assert np.all((codes == 1).sum(axis=1) <= 1)
        first = np.argmax(codes == 1, axis=1)
        hit = (codes == 1).any(axis=1)
        after = np.arange(k)[None, :] > first[:, None]
        assert np.all(codes[hit[:, None] & after] == -1)
        assert np.all(codes[~hit] == 0)
    else:
        assert np.all(codes >= 0)
    np.testing.assert_array_equal(out, draw(mech, data, 2000, np.random.default_rng(0)))


def test_svt3_releases_values_only_for_above_answers():
    out = SVT3(1.0).sample(np.array(WITNESS_ONE_FALLS_HIGH[0]), 5000, np.random.default_rng(1))
    codes, values = out[:, :4], out[:, 4:]
    assert np.all(values[codes != 1] == 0.0)
    assert np.all(values[codes == 1] != 0.0)


def test_svt3_released_value_is_the_noisy_query():
    # One query far above the threshold (q = 50, T = 1): "above" with probability 1 - O(e^-24), and
    # the released value is q + Lap(2c/eps): mean 50, mean absolute deviation 2 (eps = 1, c = 1).
    mech = SVT3(1.0, num_queries=1)
    out = mech.sample(np.ones((50, 1)), N, np.random.default_rng(2))
    assert np.all(out[:, 0] == 1.0)
    v = out[:, 1]
    assert abs(v.mean() - 50.0) <= 5 * math.sqrt(2 * 4.0 / N)
    assert abs(np.abs(v - 50.0).mean() - 2.0) <= 5 * 2.0 / math.sqrt(N)


def test_cutoff_two_answers_at_most_two():
    mech = SVT1(1.0, cutoff=2)
    out = mech.sample(np.ones((3, 4)), 5000, np.random.default_rng(3))
    assert np.all((out == 1).sum(axis=1) <= 2)
    assert ((out == 1).sum(axis=1) == 2).any()


# --- the exact law ----------------------------------------------------------------------------


def test_exact_law_closed_forms():
    # A query equal to the threshold is "above" with probability 1/2 (nu - rho is symmetric).
    m = SVT1(0.7, num_queries=1, threshold=3.0)
    assert m.answer_probabilities(np.full((3, 1), 1.0))[(1,)] == pytest.approx(0.5, abs=1e-12)
    # SVT5, one query: "above" iff rho <= q - T, i.e. the Laplace(2/eps) CDF at q - T.
    m5 = SVT5(0.5, num_queries=1, threshold=1.0)
    b = 2.0 / 0.5
    assert m5.answer_probabilities(np.full((3, 1), 1.0))[(1,)] == pytest.approx(1 - 0.5 * math.exp(-2 / b), abs=1e-12)
    # SVT5 at the staircase witness: patterns impossible on D1 have total mass P(rho in (-1, 3]).
    for eps in (0.01, 1.0):
        m = SVT5(eps)
        p = m.answer_probabilities(np.array(WITNESS_STAIRCASE[0]))
        q = m.answer_probabilities(np.array(WITNESS_STAIRCASE[1]))
        only_p = sum(v for o, v in p.items() if q.get(o, 0.0) < 1e-15)
        b = 2.0 / eps
        assert only_p == pytest.approx(1 - 0.5 * math.exp(-3 / b) - 0.5 * math.exp(-1 / b), abs=1e-12)


@pytest.mark.parametrize("name", sorted(CLASSES))
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_answer_frequencies_match_the_exact_law(name, eps):
    cutoff = {"cutoff": 2} if CLASSES[name].has_cutoff else {}
    mech = CLASSES[name](eps, **cutoff)
    rng = np.random.default_rng(10 + int(4 * eps) + int(name[-1]))
    d = np.array(WITNESS_X_SHAPE[0] if eps < 1 else WITNESS_STAIRCASE[1])
    out = mech.sample(d, N, rng)[:, :4]
    assert_matches_law(pattern_frequencies(out), mech.answer_probabilities(d), N, f"{name} eps={eps}")


def test_answer_frequencies_default_cutoff_one():
    mech = SVT2(1.0)
    d = np.array(WITNESS_ONE_FALLS[1])
    law = mech.answer_probabilities(d)
    assert len(law) == 5  # below^j then above, j = 0..3, or all below
    assert_matches_law(pattern_frequencies(mech.sample(d, N, np.random.default_rng(20))), law, N, "svt2 c=1")


# --- privacy: the theorems hold and the bugs show, on the exact law ---------------------------

# Exact H_{e^eps}(D0 || D1) at the first witness pair (docstrings): eps -> value.
EXPECTED_H = {
    ("svt4", 1.0): 0.0328, ("svt4", 0.01): 1.79e-4,
    ("svt5", 1.0): 0.585, ("svt5", 0.01): 0.00994,
    ("svt6", 1.0): 0.0322, ("svt6", 0.01): 1.89e-4,
}


@pytest.mark.parametrize("name, eps", sorted(EXPECTED_H))
def test_exact_divergence_at_the_witness(name, eps):
    entry = get(name)
    mech = entry.mechanism(eps)
    d0, d1 = (np.array(d) for d in entry.witness_pairs[0])
    h = hockey_stick_discrete(mech.answer_probabilities(d0), mech.answer_probabilities(d1), eps)
    assert h == pytest.approx(EXPECTED_H[(name, eps)], rel=0.01)


@pytest.mark.parametrize("cls, factor", [(SVT1, 1.0), (SVT2, 1.0), (SVT4, 1.75), (SVT6, 2.0)])
def test_divergence_vanishes_at_the_true_epsilon(cls, factor):
    # eps-DP <=> H_{e^eps} = 0 for every neighbouring pair: checked at the witnesses and at random
    # query vectors q, q' with |q_i - q'_i| <= 1 (c = 1, k = 4). SVT4: ((1 + 6c)/4) eps (Lyu et al.);
    # SVT6 with k = 4 queries: 2 eps (each answer's conditional probability moves by <= e^{eps/2}).
    rng = np.random.default_rng(30)
    pairs = [(np.array(a), np.array(b)) for a, b in WITNESSES]
    for _ in range(40):
        base = rng.uniform(0, 3, 4)
        pairs.append((base + rng.choice([0.0, 1.0], 4), base + rng.choice([0.0, 1.0], 4)))
    for eps in (0.3, 1.0, 3.0):
        mech = cls(eps)
        for i, (a, b) in enumerate(pairs):
            if i < len(WITNESSES):
                p, q = mech.answer_probabilities(a), mech.answer_probabilities(b)
            else:
                set_queries(mech, {0: a, 1: b})
                p, q = mech.answer_probabilities(0), mech.answer_probabilities(1)
                del mech.query_values
            assert hockey_stick_discrete(p, q, factor * eps) < 1e-12
            assert hockey_stick_discrete(q, p, factor * eps) < 1e-12


def test_svt4_with_two_answers_meets_its_true_epsilon():
    rng = np.random.default_rng(31)
    mech = SVT4(1.0, cutoff=2)
    for _ in range(30):
        base = rng.uniform(0, 3, 4)
        set_queries(mech, {0: base + rng.choice([0.0, 1.0], 4), 1: base + rng.choice([0.0, 1.0], 4)})
        p, q = mech.answer_probabilities(0), mech.answer_probabilities(1)
        assert hockey_stick_discrete(p, q, 3.25) < 1e-12  # (1 + 6 * 2) / 4


# --- detection (hockey-stick tester through the audit loop) -----------------------------------


def _audit(name, eps, samples, seed):
    entry = get(name)
    return audit(entry.mechanism(eps), entry.claim(eps), GridFinder(entry.witnesses()[:1]),
                 num_samples=samples, trials=1, beta=0.01, seed=seed, tester=HockeyStickTester())


def test_svt5_is_flagged_at_eps_one():
    # Answer patterns of total probability P(rho in (-1, 3]) = 0.585 on D0 are impossible on D1.
    result = _audit("svt5", 1.0, 5_000, seed=3)
    assert result.violation, result.to_dict()["evidence"]
    assert result.strongest.outcome.epsilon_lower_bound > 1.0


@pytest.mark.slow
def test_svt5_is_flagged_at_eps_001():
    # The same patterns have probability 0.0099 at eps = 0.01: 50k samples suffice (measured).
    for seed in (3, 4):
        result = _audit("svt5", 0.01, 50_000, seed=seed)
        assert result.violation, result.to_dict()["evidence"]
        assert result.strongest.outcome.epsilon_lower_bound > 0.01


@pytest.mark.slow
@pytest.mark.parametrize("name", ["svt3", "svt4", "svt6"])
def test_svt_bugs_are_flagged_at_eps_one(name):
    samples = {"svt3": 100_000, "svt4": 50_000, "svt6": 50_000}[name]
    for seed in (1, 2):
        result = _audit(name, 1.0, samples, seed)
        assert result.violation, (name, seed, result.to_dict()["evidence"])
        assert result.strongest.outcome.epsilon_lower_bound > 1.0


@pytest.mark.slow
@pytest.mark.parametrize("name", ["svt1", "svt2"])
def test_private_svt_not_flagged_with_many_samples(name):
    entry = get(name)
    for eps in (0.01, 1.0):
        result = audit(entry.mechanism(eps), entry.claim(eps), GridFinder(entry.witnesses()),
                       num_samples=200_000, trials=len(entry.witness_pairs), beta=0.01, seed=5, exhaustive=True)
        assert not result.violation, result.to_dict()["evidence"]
