"""Tests of the OpenDP adapter and the OpenDP example module (dpaudit.examples.opendp_sum).

OpenDP invocations cost about 0.1-0.3 ms each and cannot be seeded (OpenDP draws from the OS's
secure generator), so sample counts stay in the low thousands and statistical checks use
tolerances of 5 standard errors.
"""

from __future__ import annotations

import math
import pickle
import sys

import numpy as np
import pytest

dp = pytest.importorskip("opendp.prelude")

from dpaudit import GridFinder, audit  # noqa: E402
from dpaudit.testers import HockeyStickTester  # noqa: E402
from dpaudit.privacy.claims import ApproxDP, PureDP  # noqa: E402
from dpaudit.datasets import AddRemove, Domain, Replace  # noqa: E402
from dpaudit.errors import DPAuditError, MechanismError  # noqa: E402
from dpaudit.mechanisms import Mechanism, draw  # noqa: E402
from dpaudit.mechanisms.adapters import MissingDependencyError, OpenDPMechanism  # noqa: E402
from dpaudit.mechanisms.adapters.opendp import import_opendp, vector_input  # noqa: E402

dp.enable_features("contrib")
FLOATS = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()


def laplace_sum(scale, bounds=(0.0, 1.0)):
    return FLOATS >> dp.t.then_clamp(bounds) >> dp.t.then_sum() >> dp.m.then_laplace(scale)


def test_laplace_sum_has_the_right_mean_and_scale():
    # clamp([0.3, 0.9, 1.7]) sums to 2.2; Laplace(scale 2) has standard deviation 2 sqrt(2).
    n = 4000
    out = draw(OpenDPMechanism(laplace_sum(2.0)), np.array([[0.3], [0.9], [1.7]]), n, np.random.default_rng(0))
    assert out.shape == (n, 1)
    sd = 2 * math.sqrt(2)
    assert abs(out.mean() - 2.2) < 5 * sd / math.sqrt(n)
    assert abs(out.std() / sd - 1) < 0.1
    # Laplace: the mean absolute deviation is the scale
    assert abs(np.mean(np.abs(out - 2.2)) - 2.0) < 0.15


def test_integer_and_vector_outputs():
    ints = dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance()
    count = OpenDPMechanism(ints >> dp.t.then_count() >> dp.m.then_laplace(0.5))
    out = draw(count, np.array([[3.0], [4.0], [5.0]]), 500, np.random.default_rng(0))
    assert np.all(out == np.round(out))  # discrete Laplace on an integer count
    assert abs(out.mean() - 3) < 0.2
    cats = ints >> dp.t.then_count_by_categories(categories=[1, 2]) >> dp.m.then_laplace(1.0)
    out = draw(OpenDPMechanism(cats), np.array([[1.0], [1.0], [2.0], [7.0]]), 400, np.random.default_rng(0))
    assert out.shape == (400, 3)  # counts of 1, 2 and "other"
    np.testing.assert_allclose(out.mean(axis=0), [2, 1, 1], atol=0.4)
    with pytest.raises(MechanismError, match="not an integer"):
        draw(count, np.array([[0.5]]), 3, np.random.default_rng(0))


def test_preprocess_runs_once_per_output_on_a_read_only_copy():
    seen = []

    def preprocess(data):
        seen.append(data.flags.writeable)
        return float(data.sum())

    scalar = (dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)) >> dp.m.then_laplace(1.0)
    out = draw(OpenDPMechanism(scalar, preprocess=preprocess), np.array([[1.0, 2.0]]), 7, np.random.default_rng(0))
    assert out.shape == (7, 1) and seen == [False] * 7


def test_builder_is_called_once_and_lazily():
    calls = []

    def build():
        calls.append(1)
        return laplace_sum(1.0)

    mech = OpenDPMechanism(build)
    assert calls == [] and mech.name == "opendp:test_builder_is_called_once_and_lazily.<locals>.build"
    draw(mech, np.array([[0.5]]), 5, np.random.default_rng(0))
    draw(mech, np.array([[0.5]]), 5, np.random.default_rng(0))
    assert calls == [1]
    with pytest.raises(MechanismError, match="not an OpenDP Measurement"):
        draw(OpenDPMechanism(lambda: 42), np.array([[0.5]]), 2, np.random.default_rng(0))


def test_claim_reads_the_privacy_map():
    # sensitivity 1 (slightly more for float rounding) over scale 2
    c = OpenDPMechanism(laplace_sum(2.0)).claim()
    assert isinstance(c, PureDP) and c.epsilon == pytest.approx(0.5, rel=1e-6) and c.epsilon >= 0.5
    assert OpenDPMechanism(laplace_sum(2.0), d_in=2).claim().epsilon == pytest.approx(1.0, rel=1e-6)
    assert OpenDPMechanism(laplace_sum(2.0)).claim(2.0).epsilon == pytest.approx(1.0, rel=1e-6)  # u32 metric
    with pytest.raises(ValueError, match="counts records"):
        OpenDPMechanism(laplace_sum(2.0)).claim(1.5)
    zcdp = FLOATS >> dp.t.then_clamp((0.0, 1.0)) >> dp.t.then_sum() >> dp.m.then_gaussian(1.0)
    with pytest.raises(ValueError, match="ZeroConcentratedDivergence"):
        OpenDPMechanism(zcdp).claim()
    profile = OpenDPMechanism(dp.c.make_zCDP_to_approxDP(zcdp))
    with pytest.raises(ValueError, match="delta="):
        profile.claim()
    c = profile.claim(delta=1e-6)
    assert isinstance(c, ApproxDP) and c.delta == 1e-6 and 4 < c.epsilon < 6
    fixed = OpenDPMechanism(dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(zcdp), 1e-6)).claim()
    assert fixed.delta == 1e-6 and fixed.epsilon == pytest.approx(c.epsilon)


def test_relation_follows_the_input_metric():
    rel = OpenDPMechanism(laplace_sum(1.0)).relation(Domain.unit(1), 1, 5)
    assert type(rel) is AddRemove and (rel.min_size, rel.max_size) == (1, 5)
    # A sized domain under symmetric_distance: a replacement, at distance 2.
    sized = dp.vector_domain(dp.atom_domain(bounds=(0.0, 1.0)), size=4), dp.symmetric_distance()
    mean = OpenDPMechanism(sized >> dp.t.then_mean() >> dp.m.then_laplace(0.25))
    rel = mean.relation(max_size=10)
    assert type(rel) is Replace and (rel.min_size, rel.max_size) == (4, 4)
    assert mean.claim(2).epsilon == pytest.approx(1.0)  # sensitivity 1/4 per replacement, scale 1/4
    change_one = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=4), dp.change_one_distance()
    count = change_one >> dp.t.then_metric_unbounded() >> dp.t.then_count() >> dp.m.then_laplace(1.0)
    rel = OpenDPMechanism(count).relation()
    assert type(rel) is Replace and (rel.min_size, rel.max_size) == (4, 4)
    scalar = (dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)) >> dp.m.then_laplace(1.0)
    with pytest.raises(ValueError, match="AbsoluteDistance"):
        OpenDPMechanism(scalar).relation()


def test_vector_input_conversions_and_errors():
    assert vector_input(np.array([[1.0], [2.5]]), "Vec<f64>") == [1.0, 2.5]
    assert vector_input(np.array([[1.0], [2.0]]), "Vec<i64>") == [1, 2]
    assert vector_input(np.array([[3.0]]), "Vec<usize>") == [3]
    assert vector_input(np.array([[1.0], [0.0]]), "Vec<bool>") == [True, False]
    with pytest.raises(ValueError, match="not 0 or 1"):
        vector_input(np.array([[2.0]]), "Vec<bool>")
    with pytest.raises(ValueError, match="preprocess="):
        vector_input(np.array([[1.0, 2.0]]), "Vec<f64>")
    with pytest.raises(ValueError, match="not a vector"):
        vector_input(np.array([[1.0]]), "f64")
    with pytest.raises(ValueError, match="String"):
        vector_input(np.array([[1.0]]), "Vec<String>")


def test_bad_records_and_opendp_errors_are_mechanism_errors():
    with pytest.raises(MechanismError, match=r"preprocess=.*\(call 1 of 3\)"):
        draw(OpenDPMechanism(laplace_sum(1.0)), np.zeros((2, 2)), 3, np.random.default_rng(0))

    def bad_preprocess(data):
        return "text"

    with pytest.raises(MechanismError, match="OpenDPMechanism|raised"):
        draw(OpenDPMechanism(laplace_sum(1.0), preprocess=bad_preprocess), np.zeros((2, 1)), 3, np.random.default_rng(0))


def test_constructor_validation():
    with pytest.raises(TypeError, match="Measurement"):
        OpenDPMechanism(3.0)
    with pytest.raises(TypeError, match="preprocess"):
        OpenDPMechanism(laplace_sum(1.0), preprocess="sum")
    for bad in (0, -1, float("inf"), True, "1"):
        with pytest.raises(ValueError, match="d_in"):
            OpenDPMechanism(laplace_sum(1.0), d_in=bad)
    assert not OpenDPMechanism.reproducible


def test_missing_opendp_gives_an_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "opendp.prelude", None)  # makes the import fail
    with pytest.raises(MissingDependencyError, match=r"pip install 'dpaudit\[opendp\]'") as info:
        import_opendp()
    assert isinstance(info.value, DPAuditError) and isinstance(info.value, ImportError)
    with pytest.raises(MechanismError, match=r"pip install 'dpaudit\[opendp\]'"):
        draw(OpenDPMechanism(lambda: None, name="needs-opendp"), np.zeros((1, 1)), 2, np.random.default_rng(0))


# --- the example module -----------------------------------------------------------------------


def test_example_objects_claims_and_hints():
    from dpaudit.examples import opendp_sum as ex

    for mech in (ex.dp_sum, ex.wrong_d_in_sum):
        assert isinstance(mech, Mechanism)
        assert isinstance(mech.neighbouring, AddRemove) and mech.neighbouring.domain == Domain((0.0,), (10.0,))
        for d0, d1 in ex.WITNESS_PAIRS:
            mech.neighbouring.pair(d0, d1)
    assert ex.dp_sum.claim() == PureDP(1.0)  # OpenDP's map at d_in = 1
    assert type(ex.dp_sum.relation()) is AddRemove  # symmetric_distance
    assert ex.wrong_d_in_sum.claim() == PureDP(10.0)  # the map at the true sensitivity
    assert ex.wrong_d_in_sum.claim(1) == PureDP(1.0)  # what the user read off


def test_example_output_distributions():
    from dpaudit.examples import opendp_sum as ex

    n = 2000
    data = np.array([[4.0], [12.0]])  # clipped sum 14
    wrong = draw(ex.wrong_d_in_sum, data, n, np.random.default_rng(0))
    right = draw(ex.dp_sum, data, n, np.random.default_rng(0))
    # Laplace scales 1 and 10: standard deviations sqrt(2) and 10 sqrt(2).
    assert abs(wrong.mean() - 14) < 5 * math.sqrt(2 / n) and abs(wrong.std() / math.sqrt(2) - 1) < 0.1
    assert abs(right.mean() - 14) < 5 * 10 * math.sqrt(2 / n) and abs(right.std() / (10 * math.sqrt(2)) - 1) < 0.1


def test_example_mechanisms_pickle_and_rebuild():
    # Dask ships mechanisms to workers by pickling them; a built Measurement cannot be pickled.
    from dpaudit.examples import opendp_sum as ex

    assert ex.dp_sum.claim() == PureDP(1.0)  # builds the measurement in this process
    copy = pickle.loads(pickle.dumps(ex.dp_sum))
    assert copy._measurement is None and copy.neighbouring.to_dict() == ex.dp_sum.neighbouring.to_dict()
    assert draw(copy, np.array([[1.0]]), 5, np.random.default_rng(0)).shape == (5, 1)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(OpenDPMechanism(laplace_sum(1.0)))


def _witness_audit(mech, samples, seed):
    pairs = [mech.neighbouring.pair(d0, d1) for d0, d1 in mech.witness_pairs]
    return audit(mech, PureDP(1.0), GridFinder(pairs), num_samples=samples, trials=len(pairs), beta=0.01, seed=seed,
                 tester=HockeyStickTester())  # (its detection; the default also screens float bits)


def test_wrong_d_in_sum_is_flagged_at_its_witness_pair():
    from dpaudit.examples import opendp_sum as ex

    result = _witness_audit(ex.wrong_d_in_sum, 2000, seed=0)
    assert result.violation and result.strongest.index == 0
    # exact H_{e^1} = 1 - e^{-4.5} = 0.989 in each direction
    assert result.strongest.outcome.delta_lower_bound > 0.8


@pytest.mark.slow
def test_dp_sum_is_not_flagged_at_its_witness_pairs():
    from dpaudit.examples import opendp_sum as ex

    result = _witness_audit(ex.dp_sum, 10_000, seed=1)
    assert not result.violation, result.to_dict()["evidence"]
    assert len(result.trials) == 2
