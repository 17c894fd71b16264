"""Tests of the DP-Sniper suite in the zoo (Bichsel et al. 2021; module ``zoo/dpsniper.py``).

Every entry builds at eps = 0.1 and 1 with the documented output shape, seeded; the witness pairs
have DP-Sniper's query answers; output laws are checked against closed forms where cheap
(Laplace mean and scale, GeoSample's pmf against Balcer & Vadhan's integer CDF, noisy-max index
frequencies, RAPPOR's bit frequencies, SVT5's pattern probability).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit.mechanisms import draw
from dpaudit.mechanisms.zoo import dpsniper as dps
from dpaudit.mechanisms.zoo import entries, get
from dpaudit.mechanisms.zoo.noisy_max import noisy_max_index_probabilities

NAMES = sorted(dps.DPSNIPER_REFERENCE)

# name: (output columns, private)
SHAPES = {
    "dpsniper-laplace": (1, True),
    "dpsniper-laplace-parallel": (20, True),
    "dpsniper-trunc-geom": (1, False),
    "dpsniper-noisy-hist1": (5, True),
    "dpsniper-noisy-hist2": (5, False),
    "dpsniper-rnm1": (1, True),
    "dpsniper-rnm2": (1, True),
    "dpsniper-rnm3": (1, False),
    "dpsniper-rnm4": (1, False),
    "dpsniper-svt1": (10, True),
    "dpsniper-svt2": (10, True),
    "dpsniper-svt3": (20, False),
    "dpsniper-svt4": (10, False),
    "dpsniper-svt5": (10, False),
    "dpsniper-svt6": (10, False),
    "dpsniper-svt34-parallel": (30, False),
    "dpsniper-prefix-sum": (10, False),
    "dpsniper-numerical-svt": (20, True),
    "dpsniper-rappor": (20, False),
    "dpsniper-one-time-rappor": (20, False),
}


def test_the_suite_is_registered_with_reference_and_true_epsilons():
    listed = {e.name for e in entries() if e.name.startswith("dpsniper-")}
    assert listed == set(NAMES) == set(SHAPES) == set(dps.DPSNIPER_REFERENCE_MLP) == set(dps.DPSNIPER_TRUE_EPSILON)
    for name in NAMES:
        entry = get(name)
        assert entry.private is SHAPES[name][1], name
        assert entry.claim_kind == "pure"
        true_eps = dps.DPSNIPER_TRUE_EPSILON[name]
        # private entries meet eps = 0.1 exactly; the others exceed it; DP-Sniper's certified
        # lower bounds never exceed the true epsilon
        assert (true_eps == pytest.approx(0.1)) is entry.private, name
        assert dps.DPSNIPER_REFERENCE[name] <= true_eps and dps.DPSNIPER_REFERENCE_MLP[name] <= true_eps, name
        assert entry.violates(0.1) is (not entry.private)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("eps", [0.1, 1.0])
def test_entry_builds_with_documented_shape_and_is_seeded(name, eps):
    entry = get(name)
    mech = entry.mechanism(eps)
    assert mech.name == name
    cols = SHAPES[name][0]
    for pair in entry.witnesses():
        for d in (pair.d0, pair.d1):
            a = draw(mech, d, 200, np.random.default_rng(3))
            b = draw(mech, d, 200, np.random.default_rng(3))
            assert a.shape == (200, cols) and a.dtype == np.float64
            assert np.array_equal(a, b)


# --- witness pairs carry DP-Sniper's query answers --------------------------------------------


def _sums(name, d):
    return get(name).mechanism(0.1).query_values(np.asarray(d))


@pytest.mark.parametrize(
    "name, index, a, b",
    [
        ("dpsniper-laplace", 0, [1], [2]),
        ("dpsniper-laplace", 1, [0], [1]),
        ("dpsniper-laplace-parallel", 0, [1], [0]),
        ("dpsniper-rnm1", 0, [1, 1, 1, 1, 1], [0, 2, 2, 2, 2]),
        ("dpsniper-rnm3", 0, [0] * 5, [1] * 5),
        ("dpsniper-rnm4", 0, [1] * 5, [2] * 5),
        ("dpsniper-svt1", 0, [0] * 5 + [1] * 5, [1] * 5 + [0] * 5),
        ("dpsniper-svt1", 1, [1] * 10, [2] * 5 + [0] * 5),
        ("dpsniper-svt4", 0, [1] * 10, [2] * 5 + [0] * 5),
        ("dpsniper-svt5", 0, [2] * 5 + [0] * 5, [1] * 10),
        ("dpsniper-svt5", 1, [0] + [2] * 9, [1] * 10),
        ("dpsniper-prefix-sum", 0, [1] * 10, [0] * 10),
        ("dpsniper-numerical-svt", 0, [2] * 10, [1] * 10),
    ],
)
def test_witness_pairs_have_dpsnipers_query_answers(name, index, a, b):
    d0, d1 = get(name).witness_pairs[index]
    assert _sums(name, d0).tolist() == a and _sums(name, d1).tolist() == b


def test_histogram_and_count_witnesses():
    h = get("dpsniper-noisy-hist2").mechanism(0.1)
    (d0, d1), (e0, e1) = get("dpsniper-noisy-hist2").witness_pairs
    assert h.histogram(d0).tolist() == [0, 1, 1, 1, 1] and h.histogram(d1).tolist() == [1, 1, 1, 1, 1]
    assert h.histogram(e0).tolist() == [1, 1, 1, 1, 1] and h.histogram(e1).tolist() == [2, 1, 1, 1, 1]
    g = get("dpsniper-trunc-geom").mechanism(0.1)
    d0, d1 = get("dpsniper-trunc-geom").witness_pairs[0]
    assert (g.count(d0), g.count(d1)) == (2, 1)


def test_query_pair_rejects_non_neighbours():
    with pytest.raises(ValueError, match="component-wise"):
        dps.query_pair([0, 0], [2, 0])
    with pytest.raises(ValueError, match="equal length"):
        dps.query_pair([0], [0, 1])
    with pytest.raises(ValueError, match="one record"):
        dps.histogram_pair([0, 1], [1, 2])


# --- output laws ---------------------------------------------------------------------------------


def test_laplace_mean_and_scale():
    mech = get("dpsniper-laplace").mechanism(0.5)
    x = draw(mech, [[1.0], [1.0]], 200_000, np.random.default_rng(1))[:, 0]
    # Lap(2, 2): mean 2, E|x - 2| = 2
    assert abs(x.mean() - 2.0) < 5 * math.sqrt(8.0 / x.size)
    assert abs(np.abs(x - 2.0).mean() - 2.0) < 5 * 2.0 / math.sqrt(x.size)
    par = get("dpsniper-laplace-parallel").mechanism(1.0)
    y = draw(par, [[0.0]], 20_000, np.random.default_rng(2))
    assert abs(np.abs(y).mean() - 20.0) < 0.2  # each copy Lap(20/eps)


def test_prefix_sums_are_running_sums():
    mech = get("dpsniper-prefix-sum").mechanism(1.0)
    y = draw(mech, np.ones((1, 10)), 50_000, np.random.default_rng(4))
    steps = np.diff(y, axis=1, prepend=0.0)
    assert abs(steps.mean() - 1.0) < 0.03 and abs(np.abs(steps - 1.0).mean() - 1.0) < 0.03


def _geosample_cdf_alg48(eps: float, n: int, c: int) -> np.ndarray:
    """Balcer & Vadhan Alg. 4.8, Step 2: the integer CDF F(z), z = 0..n, divided by d."""
    k = math.ceil(math.log(2.0 / eps))
    d = (2 ** (k + 1) + 1) * (2**k + 1) ** (n - 1)
    f = [2 ** (k * (c - z)) * (2**k + 1) ** (n - (c - z)) for z in range(c)]
    f += [d - 2 ** (k * (z - c + 1)) * (2**k + 1) ** (n - 1 - (z - c)) for z in range(c, n)]
    f.append(d)
    return np.array([fz / d for fz in f])


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0])
def test_geosample_pmf_matches_alg_4_8_and_samples(eps):
    mech = get("dpsniper-trunc-geom").mechanism(eps)
    for c in range(6):
        assert np.allclose(np.cumsum(mech.pmf(c)), _geosample_cdf_alg48(eps, 5, c), atol=1e-12)
    # neighbouring counts: the largest log ratio is the true epsilon ln(1 + 2^-K)
    ratios = [np.max(np.abs(np.log(mech.pmf(c) / mech.pmf(c + 1)))) for c in range(5)]
    assert max(ratios) == pytest.approx(mech.true_epsilon, rel=1e-9)
    x = draw(mech, [[1.0], [1.0]], 100_000, np.random.default_rng(5))[:, 0]
    assert set(np.unique(x)) <= set(range(6))
    freq = np.bincount(x.astype(int), minlength=6) / x.size
    p = mech.pmf(2)
    assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / x.size) + 1e-12)


def test_trunc_geom_true_epsilon_at_dpsnipers_eps():
    assert get("dpsniper-trunc-geom").mechanism(0.1).true_epsilon == pytest.approx(math.log(9 / 8))
    entry = get("dpsniper-trunc-geom")
    assert entry.violates(0.1) and not entry.violates(0.5) and not entry.violates(1.0)


@pytest.mark.parametrize("name, noise", [("dpsniper-rnm1", "laplace"), ("dpsniper-rnm2", "exponential")])
def test_noisy_max_index_frequencies(name, noise):
    mech = get(name).mechanism(1.0)
    n = 100_000
    # trivial input: all queries equal, the index is uniform
    x = draw(mech, np.ones((1, 5)), n, np.random.default_rng(6))[:, 0].astype(int)
    freq = np.bincount(x, minlength=5) / n
    assert np.all(np.abs(freq - 0.2) < 5 * math.sqrt(0.16 / n))
    if noise == "laplace":  # exact law on an uneven input
        q = np.array([0.0, 2.0, 2.0, 2.0, 2.0])
        x = draw(mech, [[0, 1, 1, 1, 1], [0, 1, 1, 1, 1]], n, np.random.default_rng(7))[:, 0].astype(int)
        p = noisy_max_index_probabilities(q, "laplace", 2.0)
        freq = np.bincount(x, minlength=5) / n
        assert np.all(np.abs(freq - p) < 5 * np.sqrt(p * (1 - p) / n))


def test_noisy_max_values():
    # RNM4: the value is >= max_i a_i (one-sided noise); RNM3: E[max of 5 Lap(2)] on zeros is > 0
    x4 = draw(get("dpsniper-rnm4").mechanism(1.0), np.ones((2, 5)), 20_000, np.random.default_rng(8))
    assert x4.min() >= 2.0
    x3 = draw(get("dpsniper-rnm3").mechanism(1.0), np.zeros((1, 5)), 20_000, np.random.default_rng(8))
    assert x3.mean() > 1.0


def test_noisy_histograms_noise_scales():
    d = [[0.0], [1.0], [1.2], [4.0]]
    for name, scale in (("dpsniper-noisy-hist1", 1 / 0.5), ("dpsniper-noisy-hist2", 0.5)):
        mech = get(name).mechanism(0.5)
        assert mech.histogram(d).tolist() == [1, 2, 0, 0, 1]
        y = draw(mech, d, 100_000, np.random.default_rng(9))
        assert np.allclose(y.mean(axis=0), [1, 2, 0, 0, 1], atol=5 * math.sqrt(2) * scale / math.sqrt(1e5))
        assert np.allclose(np.abs(y - [1, 2, 0, 0, 1]).mean(axis=0), scale, rtol=0.02)


def test_svt5_pattern_probability_at_the_witness():
    eps = 1.0
    mech = get("dpsniper-svt5").mechanism(eps)
    d0, d1 = get("dpsniper-svt5").witness_pairs[0]
    n = 100_000
    pattern = np.array([1.0] * 5 + [0.0] * 5)
    hit0 = np.all(draw(mech, d0, n, np.random.default_rng(10)) == pattern, axis=1).mean()
    hit1 = np.all(draw(mech, d1, n, np.random.default_rng(11)) == pattern, axis=1).mean()
    p = 1 - math.exp(-eps / 2)
    assert abs(hit0 - p) < 5 * math.sqrt(p * (1 - p) / n) and hit1 == 0.0


def test_svt_codes_respect_the_cutoff():
    for name, c in (("dpsniper-svt1", 1), ("dpsniper-numerical-svt", 2)):
        y = draw(get(name).mechanism(1.0), np.ones((2, 10)), 5_000, np.random.default_rng(12))
        codes = y[:, :10]
        assert set(np.unique(codes)) <= {-1.0, 0.0, 1.0}
        assert np.all((codes == 1).sum(axis=1) <= c)
        # after the c-th "above", everything is unanswered
        after = np.cumsum(codes == 1, axis=1) - (codes == 1) >= c
        assert np.all(codes[after] == -1.0)
    y = draw(get("dpsniper-numerical-svt").mechanism(1.0), np.ones((2, 10)), 5_000, np.random.default_rng(13))
    assert np.all((y[:, 10:] != 0) <= (y[:, :10] == 1))
    z = draw(get("dpsniper-svt34-parallel").mechanism(1.0), np.ones((2, 10)), 5_000, np.random.default_rng(14))
    assert np.all((z[:, :10] == 1).sum(axis=1) <= 2) and np.all((z[:, 20:] == 1).sum(axis=1) <= 2)


# --- RAPPOR ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, seed, expected",
    [
        (b"", 0, 0),
        (b"", 1, 0x514E28B7),
        (b"\0\0\0\0", 0, 0x2362F9DE),
        (b"aaaa", 0x9747B28C, 0x5A97808A),
        (b"Hello, world!", 0x9747B28C, 0x24884CBA),
        (b"The quick brown fox jumps over the lazy dog", 0x9747B28C, 0x2FA826CD),
    ],
)
def test_murmur3_test_vectors(data, seed, expected):
    assert dps.murmur3_32(data, seed) == expected


def test_rappor_bits_and_true_epsilon():
    assert dps.rappor_bloom_bits(0) == [0, 11, 18] and dps.rappor_bloom_bits(1) == [3, 10, 13]
    full, one_time = get("dpsniper-rappor").mechanism(0.1), get("dpsniper-one-time-rappor").mechanism(0.1)
    assert full.bit_probabilities() == pytest.approx((0.5125, 0.4875))
    assert one_time.bit_probabilities() == pytest.approx((0.525, 0.475))
    assert full.true_epsilon() == pytest.approx(8 * math.log(0.5125 / 0.4875))
    assert one_time.true_epsilon() == pytest.approx(8 * math.log(0.525 / 0.475))
    n = 100_000
    y = draw(one_time, [[1.0]], n, np.random.default_rng(15))
    p = np.where(np.isin(np.arange(20), [3, 10, 13]), 0.525, 0.475)
    assert np.all(np.abs(y.mean(axis=0) - p) < 5 * np.sqrt(p * (1 - p) / n))


def test_rappor_rejects_bad_inputs():
    mech = get("dpsniper-rappor").mechanism(0.1)
    with pytest.raises(ValueError, match="one client value"):
        mech.sample([[1.0], [2.0]], 3, np.random.default_rng(0))
    with pytest.raises(ValueError, match="both p and q"):
        dps.Rappor(0.1, p=0.5, q=None)


def test_invalid_parameters_are_named():
    with pytest.raises(ValueError, match="dpsniper-trunc-geom: epsilon"):
        dps.GeoSample(-1.0)
    with pytest.raises(ValueError, match="scale"):
        dps.NoisyHistogram(0.1, scale="2/eps")
    with pytest.raises(ValueError, match="noise"):
        dps.DPSniperNoisyMax(0.1, noise="gumbel")
    with pytest.raises(ValueError, match="at most n = 5"):
        dps.GeoSample(0.1).count(np.ones((6, 1)))
    with pytest.raises(ValueError, match="copies > 1"):
        dps.LaplaceVector(0.1, num_queries=2, copies=2)
