"""Leak sizing (dpaudit.audit.leak_size): the certified delta of a set one side never reaches."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit.audit.leak_size import LeakSize, certify_set, describe_cells, float_cells, size_float_leak


def test_certify_set_bounds_and_errors():
    leak = certify_set(300, 1000, 0, 1000, beta=0.02, description="S")
    # zero hits: the exact Clopper-Pearson upper bound is 1 - (beta/2)^(1/n)
    assert leak.q_upper == pytest.approx(1 - 0.01 ** (1 / 1000), rel=1e-9)
    assert 0.25 < leak.p_lower < 0.3
    assert leak.delta_lower(0.0) == pytest.approx(leak.p_lower - leak.q_upper)
    assert leak.delta_lower(1.0) < leak.delta_lower(0.0)  # decreasing in epsilon
    e = leak.epsilon_horizon(1e-5)
    assert e == pytest.approx(math.log((leak.p_lower - 1e-5) / leak.q_upper))
    assert leak.delta_lower(e * 0.999) > 1e-5 >= leak.delta_lower(e * 1.001) - 1e-12
    assert leak.disjoint and "delta >=" in leak.describe(1.0, 1e-5)
    assert LeakSize.from_dict(leak.to_dict()) == leak
    assert certify_set(0, 10, 0, 10, beta=0.1).epsilon_horizon(0.0) == 0.0
    for bad in ((5, 4, 0, 4), (1, 0, 0, 4), (-1, 4, 0, 4), (1, 4, 5, 4)):
        with pytest.raises(ValueError):
            certify_set(*bad, beta=0.1)
    with pytest.raises(ValueError, match="beta"):
        certify_set(1, 4, 0, 4, beta=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        leak.delta_lower(-1.0)


def test_float_cells_of_known_doubles():
    cells = float_cells([1.0, 0.75, -0.3, 5e-324, 0.0, 3 * 2.0**-54])
    assert cells.tolist() == [[1, 0, 0], [1, -1, -2], [-1, -2, -54], [1, -1074, -1074], [0, 0, 0], [1, -53, -54]]
    assert describe_cells({(1, -3): -54, (1, -2): -54, (-1, 0): -52}) == (
        "outputs in -[2^0, 2^1) not a multiple of 2^-51 or +[2^-3, 2^-1) not a multiple of 2^-53")
    with pytest.raises(ValueError, match="finite"):
        float_cells([np.nan])


def test_size_float_leak_finds_the_grid_one_side_misses_and_not_a_leak_that_is_absent():
    # Mironov's set: 0 + noise takes doubles near 0 that 1 + noise (rounded) never takes
    rng = np.random.default_rng(3)
    noise = rng.laplace(size=(2, 4000))
    leak = size_float_leak(noise[0], 1.0 + noise[1], beta=0.01, epsilon=1.0)
    assert leak is not None and leak.hits_q == 0 and leak.direction == "P||Q"
    assert leak.delta_lower(1.0) > 0.2 and "not a multiple of" in leak.description
    # the same distribution on both sides: no delta certified at epsilon 0, whichever set is chosen
    for seed in range(10):
        r = np.random.default_rng(seed)
        same = size_float_leak(r.laplace(size=2000), r.laplace(size=2000), beta=0.01)
        assert same is None or same.delta_lower(0.0) == 0.0
    with pytest.raises(ValueError, match="dimension"):
        size_float_leak(np.zeros((8, 2)), np.zeros((8, 1)), beta=0.1)


def test_size_range_leak_finds_a_truncation_the_other_side_cannot_reach():
    from dpaudit.audit.leak_size import size_range_leak

    r = np.random.default_rng(5)
    d0 = np.clip(r.laplace(size=2000), 0.0, 1.0)  # truncated to [0, 1]
    d1 = np.clip(1.0 + r.laplace(size=2000), 0.0, 2.0)  # reaches (1, 2]
    leak = size_range_leak(d0, d1, beta=0.01, epsilon=1.0)
    assert leak.direction == "Q||P" and leak.hits_q == 0 and leak.delta_lower(1.0) > 0.3
    assert leak.description.startswith("outputs above 1")
    same = size_range_leak(r.laplace(size=2000), r.laplace(size=2000), beta=0.01, epsilon=0.0)
    assert same is None or same.delta_lower(0.0) == 0.0


def test_audit_result_sizes_a_region_one_dataset_never_reached():
    """`dpaudit test`'s finding sized to the end: the deciding region's held-out counts, no new beta."""
    import json

    from dpaudit import audit
    from dpaudit.audit import AuditResult
    from dpaudit.datasets import AddRemove, Domain
    from dpaudit.mechanisms.base import CallableMechanism
    from dpaudit.privacy import PureDP
    from dpaudit.search.finders import GridFinder

    def shifted_coin(dataset, rng):  # outputs {n_ones, n_ones + 1}: D1 reaches a value D0 never does
        return float(np.sum(dataset)) + float(rng.integers(0, 2))

    rel = AddRemove(Domain((0.0,), (1.0,)))
    finder = GridFinder([rel.pair([[0.0]], [[0.0], [1.0]])])
    r = audit(CallableMechanism(shifted_coin, pass_rng=True), PureDP(1.0), finder, num_samples=2000, trials=1,
              seed=0, stages="off")
    b = r.strongest.outcome.bounds[r.strongest.outcome.strongest]
    leak = r.leak_size
    assert r.violation and leak is not None and leak.hits_q == 0 == b.q_count
    assert (leak.p_lower, leak.q_upper, leak.beta) == (b.p_mass_lower, b.q_mass_upper, b.beta)  # the finding's own
    d = json.loads(r.to_json())["evidence"]["leak_size"]
    assert d["delta_at_claimed_epsilon"] == pytest.approx(leak.p_lower - math.e * leak.q_upper)
    assert 0.4 < d["delta_at_claimed_epsilon"] < 0.5 and "never reached" in d["text"]
    assert AuditResult.from_dict(json.loads(r.to_json())).leak_size == leak


def test_set_epsilon_lower_edges_and_errors():
    import math

    import pytest

    from dpaudit.bounds import set_epsilon_lower

    assert set_epsilon_lower(0.5, 0.1, 0.0) == pytest.approx(math.log(5.0))
    assert set_epsilon_lower(0.5, 0.1, 0.1) == pytest.approx(math.log(4.0))
    assert set_epsilon_lower(0.05, 0.01, 0.1) == 0.0  # nothing certified at that delta
    assert set_epsilon_lower(0.5, 0.0, 0.0) == math.inf
    assert set_epsilon_lower(0.1, 0.5, 0.0) == 0.0  # never below 0
    with pytest.raises(ValueError, match="delta"):
        set_epsilon_lower(0.5, 0.1, 1.5)
    with pytest.raises(ValueError, match="p_lower and q_upper"):
        set_epsilon_lower(1.2, 0.1, 0.0)
