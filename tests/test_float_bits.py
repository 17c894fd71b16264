"""Bit-level evidence for floating-point outputs (estimators/float_bits.py, testers/float_bits.py)
and the floating-point zoo entries (float-laplace, float-gaussian, snapping-laplace)."""

from __future__ import annotations

import numpy as np
import pytest

from _harness import assert_rate_at_most
from dpaudit import PureDP
from dpaudit.estimators.float_bits import FloatBitsHockeyStick, atom_values, feature_codes, float_bits
from dpaudit.mechanisms import zoo
from dpaudit.testers import make_tester
from dpaudit.testers.float_bits import FloatBitsTester


# --------------------------------------------------------------------------- features
def test_features_of_known_doubles():
    f = float_bits([1.0, 0.75, 0.1, -2.0, 0.0, 5e-324, 1.0 + 2.0**-52])
    assert f.sign.tolist() == [0, 0, 0, 1, 0, 0, 0]
    assert f.exponent.tolist() == [1023, 1022, 1019, 1024, 0, 0, 1023]
    # 0.1 = 0x3FB999999999999A: mantissa ends in binary ...1010
    assert f.trailing_zeros.tolist() == [52, 51, 1, 52, 52, 0, 0]
    assert f.low_bits.tolist() == [0, 0, 0b1010, 0, 0, 1, 1]
    assert f.lowest_bit.tolist() == [0, -2, -55, 1, -1075, -1074, -52]


def test_x_plus_noise_lands_on_the_grid_of_x():
    # (1/3 + n) with |1/3 + n| small is computed exactly, so its lowest bit is >= ulp(n)
    n = -1.0 / 3.0 + np.array([1e-6, 3e-9, -7e-5])
    assert (float_bits(1.0 / 3.0 + n).lowest_bit >= -55).all()
    assert (float_bits(np.array([1e-6, 3e-9, -7e-5])).lowest_bit < -60).all()


def test_feature_codes_and_atoms():
    x = np.array([0.5, 0.5, 0.25, 3.0, 0.5, 3.0, 7.0])
    atoms = atom_values(x)
    assert atoms.tolist() == [0.5, 3.0]
    codes = feature_codes(x, "atoms", atoms)
    assert codes[[0, 1, 4]].tolist() == [0, 0, 0] and codes[[3, 5]].tolist() == [1, 1]
    assert codes[2] >= 2**40 and codes[6] >= 2**40
    g = feature_codes(x, "granularity")
    assert g[0] == g[1] and g[0] != g[2]
    with pytest.raises(ValueError, match="family"):
        feature_codes(x, "mantissa")
    with pytest.raises(ValueError, match="NaN"):
        float_bits([1.0, float("nan")])
    with pytest.raises(ValueError, match="families"):
        FloatBitsHockeyStick(families=())
    with pytest.raises(ValueError, match="NaN|finite"):
        FloatBitsHockeyStick().estimate(np.r_[np.ones(5), np.nan], np.ones(6), epsilon=1.0, beta=0.1)


def test_all_includes_float_bits():
    assert "float-bits" in [t.name for t in make_tester("all").testers]


# --------------------------------------------------------------------------- zoo
def _outcome(name, epsilon, n, seed, witness=0, tester=None):
    entry = zoo.get(name)
    mech, claim = entry.mechanism(epsilon), entry.claim(epsilon)
    d0, d1 = entry.witness_pairs[witness]
    rng = np.random.default_rng(seed)
    p, q = mech.sample(np.array(d0), n, rng), mech.sample(np.array(d1), n, rng)
    return (tester or FloatBitsTester()).test(p, q, claim, beta=0.05, rng=seed)


@pytest.mark.parametrize("epsilon", [1.0, 0.1])
@pytest.mark.parametrize("witness", [0, 1])
def test_float_laplace_is_flagged_by_its_bits(epsilon, witness):
    out = _outcome("float-laplace", epsilon, 5000, seed=3, witness=witness)
    assert out.violation and out.epsilon_lower_bound > epsilon
    assert "granularity" in out.note


def test_float_gaussian_is_flagged():
    out = _outcome("float-gaussian", 1.0, 20000, seed=3)
    assert out.violation, out.margin


@pytest.mark.parametrize("epsilon", [1.0, 0.1])
def test_snapping_is_not_flagged(epsilon):
    for seed in range(3):
        for witness in (0, 1):
            out = _outcome("snapping-laplace", epsilon, 20000, seed=seed, witness=witness)
            assert not out.violation, (seed, witness, out.margin)


def test_snapping_outputs_on_its_grid():
    m = zoo.get("snapping-laplace").mechanism(1.0)
    y = m.sample(np.array([[0.0], [1.0 / 3.0]]), 1000, np.random.default_rng(0))[:, 0]
    assert m.grid == 2.0 and np.all(y / m.grid == np.round(y / m.grid)) and np.abs(y).max() <= m.bound


# --------------------------------------------------------------------------- atoms
def _mixed(centre, n, rng, mass=0.01):
    """Laplace(centre, 1) noise rounded to a 2^-20 grid (exactly DP), but with probability
    ``mass`` the exact centre (a leak only a point mass shows)."""
    y = centre + np.round(rng.laplace(0.0, 1.0, n) * 2.0**20) * 2.0**-20
    return np.where(rng.random(n) < mass, centre, y)


def test_a_one_percent_point_mass_is_flagged_by_atoms():
    rng = np.random.default_rng(5)
    p, q = _mixed(0.0, 40000, rng), _mixed(0.5, 40000, rng)
    out = FloatBitsTester(families=("atoms",)).test(p, q, PureDP(1.0), beta=0.05, rng=1)
    assert out.violation and "[atoms, column 0]" in out.note and ("=0.5" in out.note or "=0.0" in out.note), out.note
    # without the point mass the same mechanism (0.5-DP) is not accused
    p, q = _mixed(0.0, 40000, rng, mass=0.0), _mixed(0.5, 40000, rng, mass=0.0)
    assert not FloatBitsTester().test(p, q, PureDP(1.0), beta=0.05, rng=1).violation


@pytest.mark.slow
def test_null_rate_on_a_correct_continuous_mechanism():
    # Laplace(1) on a 2^-20 grid shifted by 1 (a grid multiple, exact in float64): exactly 1-DP.
    rng = np.random.default_rng(11)
    reps, beta, accused = 200, 0.1, 0
    tester = FloatBitsTester()
    for rep in range(reps):
        p, q = _mixed(0.0, 4000, rng, mass=0.0), _mixed(1.0, 4000, rng, mass=0.0)
        accused += tester.test(p, q, PureDP(1.0), beta=beta, rng=rep).violation
    assert_rate_at_most(accused, reps, beta, what="float-bits accusations of an exactly 1-DP mechanism")


def test_cli_float_bits_flags_float_laplace_and_names_the_features():
    from typer.testing import CliRunner

    from dpaudit.cli import app

    res = CliRunner().invoke(app, ["test", "zoo:float-laplace", "--epsilon", "1", "--tester", "float-bits",
                                   "--samples", "2000", "--seed", "1", "--json"])
    assert res.exit_code == 5, res.output  # a floating-point leak alone (issue 44)
    assert "granularity features" in res.output
