"""Tests of the PipelineDP adapter and the PipelineDP example module (dpaudit.examples.pipelinedp_daily).

One pipeline run costs about 0.2-1 ms, and PipelineDP's noise (PyDP) cannot be seeded, so sample
counts stay in the hundreds in fast tests and statistical checks use 5-standard-error tolerances.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

pipeline_dp = pytest.importorskip("pipeline_dp")

from dpaudit import GridFinder, audit  # noqa: E402
from dpaudit.testers import HockeyStickTester  # noqa: E402
from dpaudit.privacy.claims import PureDP  # noqa: E402
from dpaudit.datasets import PrivacyUnitAddRemove  # noqa: E402
from dpaudit.errors import DPAuditError, MechanismError  # noqa: E402
from dpaudit.mechanisms import Mechanism, draw  # noqa: E402
from dpaudit.mechanisms.adapters import MissingDependencyError, PipelineDPMechanism, UnitRow  # noqa: E402
from dpaudit.mechanisms.adapters.pipelinedp import import_pipeline_dp, unit_rows  # noqa: E402

# One row per user, so contribution bounding keeps every row: exact per-partition sums
# (0.5, 1.0, 1.0) after clipping the 2.0 to max_value = 1.
ROWS = np.array([[0, 0, 0.5], [1, 1, 1.0], [2, 2, 2.0]])
BOUNDS = dict(max_partitions_contributed=1, max_contributions_per_partition=1, min_value=0.0, max_value=1.0)


def test_sum_over_public_partitions_has_the_right_mean_and_scale():
    mech = PipelineDPMechanism.aggregation(epsilon=1.0, metrics=["sum"], partitions=[0, 1, 2], **BOUNDS)
    assert mech.output_dim == 3 and "sum" in mech.name and "eps=1" in mech.name
    n = 600
    out = draw(mech, ROWS, n, np.random.default_rng(0))
    assert out.shape == (n, 3)
    # L1 sensitivity 1, epsilon 1: Laplace scale 1 per partition, standard deviation sqrt(2).
    sd = math.sqrt(2)
    np.testing.assert_array_less(np.abs(out.mean(axis=0) - [0.5, 1.0, 1.0]), 5 * sd / math.sqrt(n))
    np.testing.assert_allclose(out.std(axis=0) / sd, 1, atol=0.2)


def test_count_and_sum_split_the_budget():
    mech = PipelineDPMechanism.aggregation(epsilon=1.0, metrics=("COUNT", "Sum"), partitions=[0, 1, 2], **BOUNDS)
    assert mech.metrics == ("count", "sum") and mech.output_dim == 6
    n = 600
    out = draw(mech, ROWS, n, np.random.default_rng(0)).reshape(n, 3, 2)  # (run, partition, metric)
    np.testing.assert_array_less(np.abs(out[:, :, 0].mean(axis=0) - 1.0), 5 * 2 * math.sqrt(2 / n))
    # epsilon 1/2 per metric: Laplace scale 2, standard deviation 2 sqrt(2)
    assert abs(out.std() / (2 * math.sqrt(2)) - 1) < 0.15


def test_private_partition_selection_reports_presence():
    # Partition 0 has 30 users, partition 1 one user, partition 2 none.
    rows = np.array([[i, 0, 1.0] for i in range(30)] + [[30, 1, 1.0]])
    mech = PipelineDPMechanism.aggregation(
        epsilon=1.0, delta=1e-3, metrics=["count"], partitions=[0, 1, 2], public_partitions=False, **BOUNDS
    )
    assert mech.presence and mech.output_dim == 6
    out = draw(mech, rows, 200, np.random.default_rng(0)).reshape(200, 3, 2)
    flags = out[:, :, 0]
    assert set(np.unique(flags)) <= {0.0, 1.0}
    assert flags[:, 0].mean() > 0.95 and flags[:, 1].mean() < 0.2 and flags[:, 2].max() == 0.0
    assert np.all(out[:, 2, 1] == 0.0)  # a partition never released contributes zeros
    kept = flags[:, 0] == 1
    assert abs(out[kept, 0, 1].mean() - 30) < 2


def test_custom_pipeline_and_encoding_errors():
    def fixed(table):
        return PipelineDPMechanism(lambda rows: table, partitions=["a", "b"], metrics=["sum"], name="fixed")

    ok = draw(fixed([("b", {"sum": 2.0}), ("a", {"sum": 1.0})]), ROWS, 3, np.random.default_rng(0))
    np.testing.assert_array_equal(ok, [[1.0, 2.0]] * 3)
    cases = [
        ([("a", {"sum": 1.0}), ("c", {"sum": 1.0})], "not one of the candidate partitions"),
        ([("a", {"sum": 1.0}), ("a", {"sum": 1.0}), ("b", {"sum": 0.0})], "released twice"),
        ([("a", {"sum": 1.0})], r"\['b'\] are missing"),
        ([("a", {"count": 1.0}), ("b", {"sum": 0.0})], "no metric 'sum'"),
        ([("a",), ("b", {"sum": 0.0})], "not a \\(partition_key, metrics\\) pair"),
        ([("a", {"sum": float("nan")}), ("b", {"sum": 0.0})], "non-finite"),
    ]
    for table, shown in cases:
        with pytest.raises(MechanismError, match=shown):
            draw(fixed(table), ROWS, 2, np.random.default_rng(0))
    keys_only = PipelineDPMechanism(lambda rows: ["b"], partitions=["a", "b"], presence=True)
    np.testing.assert_array_equal(draw(keys_only, ROWS, 2, np.random.default_rng(0)), [[0.0, 1.0]] * 2)

    def broken(rows):
        raise RuntimeError("engine down")

    with pytest.raises(MechanismError, match=r"RuntimeError: engine down \(call 1 of 2\)"):
        draw(PipelineDPMechanism(broken, partitions=[0], metrics=["sum"]), ROWS, 2, np.random.default_rng(0))


def test_rows_reach_the_pipeline_as_unit_rows():
    seen = []

    def pipeline(rows):
        seen.append(rows)
        return [(0, {"sum": 0.0})]

    draw(PipelineDPMechanism(pipeline, partitions=[0], metrics=["sum"]), ROWS, 2, np.random.default_rng(0))
    assert seen[0] == [UnitRow(0, 0, 0.5), UnitRow(1, 1, 1.0), UnitRow(2, 2, 2.0)]
    assert isinstance(seen[0][0].privacy_id, int) and isinstance(seen[0][0].value, float)
    assert unit_rows(np.empty((0, 3))) == []
    with pytest.raises(ValueError, match=r"shape \(1, 2\)"):
        unit_rows(np.array([[0, 1]]))
    with pytest.raises(ValueError, match="non-integer privacy id"):
        unit_rows(np.array([[0.5, 1, 1.0]]))


def test_constructor_validation():
    with pytest.raises(TypeError, match="pipeline"):
        PipelineDPMechanism("not callable", partitions=[0], metrics=["sum"])
    with pytest.raises(ValueError, match="at least one"):
        PipelineDPMechanism(list, partitions=[], metrics=["sum"])
    with pytest.raises(ValueError, match="repeated"):
        PipelineDPMechanism(list, partitions=[0, 0], metrics=["sum"])
    with pytest.raises(ValueError, match="nothing to output"):
        PipelineDPMechanism(list, partitions=[0])
    with pytest.raises(ValueError, match="field names"):
        PipelineDPMechanism(list, partitions=[0], metrics=[1])
    with pytest.raises(ValueError, match="epsilon"):
        PipelineDPMechanism.aggregation(epsilon=0, metrics=["sum"], partitions=[0])
    with pytest.raises(ValueError, match="delta"):
        PipelineDPMechanism.aggregation(epsilon=1, delta=1.0, metrics=["sum"], partitions=[0])
    with pytest.raises(ValueError, match="noise_kind"):
        PipelineDPMechanism.aggregation(epsilon=1, metrics=["sum"], partitions=[0], noise_kind="cauchy")
    with pytest.raises(ValueError, match="median"):
        PipelineDPMechanism.aggregation(epsilon=1, metrics=["median"], partitions=[0])
    assert not PipelineDPMechanism.reproducible


def test_pipelinedp_parameter_errors_surface_as_mechanism_errors():
    # PipelineDP itself rejects a SUM without value bounds.
    mech = PipelineDPMechanism.aggregation(epsilon=1.0, metrics=["sum"], partitions=[0], max_partitions_contributed=1,
                                           max_contributions_per_partition=1)
    with pytest.raises(MechanismError, match="call 1"):
        draw(mech, ROWS, 2, np.random.default_rng(0))


def test_missing_pipelinedp_gives_an_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "pipeline_dp", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'dpaudit\[pipelinedp\]'") as info:
        import_pipeline_dp()
    assert isinstance(info.value, DPAuditError) and isinstance(info.value, ImportError)
    mech = PipelineDPMechanism(lambda rows: [(0, {"sum": 0.0})], partitions=[0], metrics=["sum"])
    with pytest.raises(MechanismError, match=r"pip install 'dpaudit\[pipelinedp\]'"):
        draw(mech, ROWS, 2, np.random.default_rng(0))


# --- the example module -----------------------------------------------------------------------


def test_example_objects_and_hints():
    from dpaudit.examples import pipelinedp_daily as ex

    for mech in (ex.daily_sum, ex.user_day_sum):
        assert isinstance(mech, Mechanism) and mech.output_dim == 3
        assert isinstance(mech.neighbouring, PrivacyUnitAddRemove) and mech.neighbouring.domain == ex.DOMAIN
        for d0, d1 in ex.WITNESS_PAIRS:
            pair = mech.neighbouring.pair(d0, d1)
            assert pair.description == f"privacy unit 0 ({len(d1) - len(d0)} rows) added"
    assert ex.NEIGHBOURING == ex.daily_sum.neighbouring.name == "privacy-unit"


def test_user_day_unit_lets_a_user_move_every_day():
    # At the witness D1 (user 1: amount 1 on day 0; user 0: amount 1 on days 0, 1, 2) the exact
    # totals are (2, 1, 1) with a user-day unit; with a user unit, user 0 keeps one sampled day,
    # so the three totals add up to 2 instead of 4. Noise: Laplace scale 1 per day.
    from dpaudit.examples import pipelinedp_daily as ex

    d1 = np.array(ex.WITNESS_PAIRS[0][1])
    n = 400
    wrong = draw(ex.user_day_sum, d1, n, np.random.default_rng(0))
    right = draw(ex.daily_sum, d1, n, np.random.default_rng(0))
    tol = 5 * math.sqrt(2 / n)
    np.testing.assert_array_less(np.abs(wrong.mean(axis=0) - [2.0, 1.0, 1.0]), tol)
    assert abs(wrong.sum(axis=1).mean() - 4.0) < 5 * math.sqrt(6 / n)
    assert abs(right.sum(axis=1).mean() - 2.0) < 5 * math.sqrt(6 / n)
    assert right.mean(axis=0)[0] > 1.0 + 1 / 3 - tol  # day 0 keeps user 1 and, a third of the time, user 0


def _witness_audit(mech, samples, seed, exhaustive=False):
    pairs = [mech.neighbouring.pair(d0, d1) for d0, d1 in mech.witness_pairs]
    return audit(mech, PureDP(1.0), GridFinder(pairs), num_samples=samples, trials=len(pairs), beta=0.01,
                 seed=seed, exhaustive=exhaustive, tester=HockeyStickTester())  # (the default also screens float bits)


@pytest.mark.slow
def test_user_day_sum_is_flagged_at_its_witness_pair():
    from dpaudit.examples import pipelinedp_daily as ex

    result = _witness_audit(ex.user_day_sum, 10_000, seed=0)
    assert result.violation, result.to_dict()["evidence"]
    # Monte Carlo H_{e^1} at the first witness: 0.31
    assert 0.1 < result.strongest.outcome.delta_lower_bound < 0.33  # a lower bound on 0.31


@pytest.mark.slow
def test_daily_sum_is_not_flagged_at_its_witness_pairs():
    from dpaudit.examples import pipelinedp_daily as ex

    result = _witness_audit(ex.daily_sum, 10_000, seed=1, exhaustive=True)
    assert not result.violation, result.to_dict()["evidence"]
    assert len(result.trials) == 2
