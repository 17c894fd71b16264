"""Mechanism output validation: everything a mechanism returns goes through ``draw`` and anything
dpaudit cannot use raises a MechanismError that names the mechanism, the dataset and the value."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit import GridFinder, HockeyStickTester, PureDP, audit
from dpaudit.datasets import AddRemove
from dpaudit.errors import DPAuditError, MechanismError
from dpaudit.estimators import ClassifierHockeyStick
from dpaudit.mechanisms import Mechanism, describe_dataset, draw

D = np.array([[0.25], [1.0]])  # described as "[0.25, 1]"
D_DESC = "[0.25, 1]"


def rng():
    return np.random.default_rng(0)


# --------------------------------------------------------------------------- per-call mechanisms
@pytest.mark.parametrize(
    "func, expected",
    [
        (lambda d: 3.5, [[3.5]] * 4),
        (lambda d: np.float32(2.0), [[2.0]] * 4),
        (lambda d: 7, [[7.0]] * 4),
        (lambda d: np.int64(-2), [[-2.0]] * 4),
        (lambda d: True, [[1.0]] * 4),
        (lambda d: np.bool_(False), [[0.0]] * 4),
        (lambda d: [1, 2, 3], [[1.0, 2.0, 3.0]] * 4),
        (lambda d: np.array([0.5, -0.5]), [[0.5, -0.5]] * 4),
        (lambda d: np.array([True, False]), [[1.0, 0.0]] * 4),
        (lambda d: float(d.sum()), [[1.25]] * 4),
    ],
)
def test_callable_outputs_accepted(func, expected):
    out = draw(Mechanism.from_callable(func, name="ok"), D, 4, rng())
    assert out.dtype == float and out.shape == np.asarray(expected).shape
    np.testing.assert_array_equal(out, expected)


def test_callable_receives_rng_and_is_reproducible():
    def noisy(dataset, rng):
        return float(dataset.mean() + rng.normal())

    mech = Mechanism.from_callable(noisy)
    assert mech.pass_rng and mech.name.endswith("noisy")
    a = draw(mech, D, 50, np.random.default_rng(3))
    b = draw(mech, D, 50, np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)
    assert np.unique(a).size == 50
    # pass_rng=False: the function is called without rng even though it declares one.
    with pytest.raises(MechanismError, match="TypeError"):
        draw(Mechanism.from_callable(noisy, name="no-rng", pass_rng=False), D, 2, rng())


def test_from_callable_requires_a_callable():
    with pytest.raises(TypeError, match="callable"):
        Mechanism.from_callable(3.0)


class _calls:
    """A per-call function returning ``values[i % len(values)]`` on call i (the bad value is last,
    so every run of ``num_samples >= len(values)`` calls starts again from the first value)."""

    def __init__(self, values):
        self.values = values
        self.i = 0

    def __call__(self, dataset):
        value = self.values[self.i % len(self.values)]
        self.i += 1
        return value


@pytest.mark.parametrize(
    "func, value_shown, what",
    [
        (lambda d: float("nan"), "nan", "non-finite"),
        (lambda d: float("inf"), "inf", "non-finite"),
        (lambda d: [1.0, float("-inf")], "-inf", "non-finite"),
        (_calls([1.0, 2.0, float("nan")]), "nan", "call 3"),
        (_calls([1.0, [1.0, 2.0]]), "[1.0, 2.0]", "fixed shape"),  # shape changes between calls
        (_calls([[1.0, 2.0], [3.0]]), "[3.0]", "fixed shape"),
        (lambda d: [1.0, [2.0, 3.0]], "[1.0, [2.0, 3.0]]", "ragged"),  # ragged within one call
        (lambda d: "0.5", "'0.5'", "non-numeric"),
        (lambda d: None, "None", "non-numeric"),
        (lambda d: {"x": 1}, "{'x': 1}", "non-numeric"),
        (lambda d: 1.0 + 2.0j, "(1+2j)", "complex"),
        (lambda d: np.zeros((2, 2)), "(2, 2)", "1-D"),  # 2-D output per call
    ],
)
def test_callable_bad_outputs(func, value_shown, what):
    mech = Mechanism.from_callable(func, name="bad-mech")
    with pytest.raises(MechanismError) as info:
        draw(mech, D, 5, rng())
    msg = str(info.value)
    assert "'bad-mech'" in msg
    assert D_DESC in msg
    assert value_shown in msg
    assert what in msg
    assert info.value.mechanism == "bad-mech" and info.value.dataset == D_DESC
    # The per-call wrapper itself reports the same error (nothing depends on draw catching it).
    with pytest.raises(MechanismError) as direct:
        mech.sample(D, 5, rng())
    assert str(direct.value) == msg


def test_exception_inside_callable_is_chained():
    def broken(dataset):
        if len(dataset) > 1:
            raise ZeroDivisionError("boom 42")
        return 0.0

    mech = Mechanism.from_callable(broken, name="broken-mech")
    assert draw(mech, D[:1], 3, rng()).shape == (3, 1)
    with pytest.raises(MechanismError) as info:
        draw(mech, D, 3, rng())
    msg = str(info.value)
    assert "'broken-mech'" in msg and D_DESC in msg
    assert "ZeroDivisionError" in msg and "boom 42" in msg and "call 1" in msg
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert isinstance(info.value, DPAuditError)


def test_mechanism_error_raised_inside_passes_through_unchanged():
    original = MechanismError("custom", mechanism="inner", dataset="[x]")

    def raiser(dataset):
        raise original

    with pytest.raises(MechanismError) as info:
        draw(Mechanism.from_callable(raiser, name="outer"), D, 2, rng())
    assert info.value is original


# --------------------------------------------------------------------------- vectorised mechanisms
class Vectorised(Mechanism):
    """Returns ``make(dataset, num_samples, rng)`` as is."""

    def __init__(self, make, name="vec-mech"):
        self.make = make
        self.name = name

    def sample(self, dataset, num_samples, rng):
        return self.make(dataset, num_samples, rng)


def test_vectorised_1d_output_accepted_as_column():
    mech = Vectorised(lambda d, n, r: d.mean() + r.laplace(size=n))
    out = draw(mech, D, 100, rng())
    assert out.shape == (100, 1) and out.dtype == float
    np.testing.assert_array_equal(out[:, 0], 0.625 + np.random.default_rng(0).laplace(size=100))


def test_vectorised_integer_and_bool_outputs():
    ints = draw(Vectorised(lambda d, n, r: r.integers(0, 5, size=(n, 2))), D, 30, rng())
    assert ints.shape == (30, 2) and ints.dtype == float
    bools = draw(Vectorised(lambda d, n, r: r.random(n) < 0.5), D, 30, rng())
    assert bools.shape == (30, 1) and set(np.unique(bools)) <= {0.0, 1.0}


@pytest.mark.parametrize(
    "make, shown",
    [
        (lambda d, n, r: np.zeros(n + 1), "returned 6 samples but 5 were requested"),
        (lambda d, n, r: np.zeros((n - 1, 2)), "returned 4 samples but 5 were requested"),
        (lambda d, n, r: np.zeros((n, 2, 2)), "(5, 2, 2)"),
        (lambda d, n, r: np.r_[np.zeros(n - 1), np.nan], "nan"),
        (lambda d, n, r: np.r_[np.zeros(n - 1), -np.inf], "-inf"),
        (lambda d, n, r: [[0.0]] * (n - 1) + [[0.0, 1.0]], "ragged"),
        (lambda d, n, r: np.array(["a"] * n), "'a'"),
        (lambda d, n, r: np.full(n, 1.0 + 1.0j), "complex"),
        (lambda d, n, r: np.array([None] * n), "None"),
    ],
)
def test_vectorised_bad_outputs(make, shown):
    with pytest.raises(MechanismError) as info:
        draw(Vectorised(make), D, 5, rng())
    msg = str(info.value)
    assert "'vec-mech'" in msg and D_DESC in msg and shown in msg


def test_vectorised_nan_reports_position_and_count():
    def make(d, n, r):
        out = np.zeros((n, 3))
        out[2, 1] = np.nan
        out[4, 0] = np.inf
        return out

    with pytest.raises(MechanismError, match=r"sample 2, coordinate 1 \(2 of 6 samples affected\)"):
        draw(Vectorised(make), D, 6, rng())


def test_vectorised_exception_is_chained():
    def make(d, n, r):
        raise RuntimeError("device lost")

    with pytest.raises(MechanismError) as info:
        draw(Vectorised(make, name="gpu-mech"), D, 5, rng())
    assert "'gpu-mech'" in str(info.value) and "device lost" in str(info.value) and D_DESC in str(info.value)
    assert isinstance(info.value.__cause__, RuntimeError)


def test_output_dim_mismatch_detected():
    mech = Vectorised(lambda d, n, r: np.zeros((n, len(d))))  # output shape depends on the dataset
    x0 = draw(mech, D[:1], 5, rng())
    with pytest.raises(MechanismError) as info:
        draw(mech, D, 5, rng(), output_dim=x0.shape[1])
    assert "dimension 2" in str(info.value) and "dimension 1" in str(info.value) and D_DESC in str(info.value)
    assert draw(mech, D, 5, rng(), output_dim=2).shape == (5, 2)


def test_num_samples_must_be_positive():
    with pytest.raises(ValueError, match="num_samples"):
        draw(Vectorised(lambda d, n, r: np.zeros(n)), D, 0, rng())


def test_describe_dataset_is_short():
    assert describe_dataset(np.array([[0.5], [1.0]])) == "[0.5, 1]"
    assert describe_dataset(np.array([[0.5, 2.0]])) == "[(0.5, 2)]"
    long = describe_dataset(np.arange(20.0).reshape(-1, 1))
    assert long.endswith("... (20 records)]") and "6" not in long.split(",")[5]


# --------------------------------------------------------------------------- audit propagates
def test_audit_propagates_mechanism_error():
    """A failure on the second trial's dataset must stop the audit with the error, not be skipped."""

    class FailsOnThreeRecords(Mechanism):
        name = "fails-on-3"

        def sample(self, dataset, num_samples, rng):
            out = dataset.sum() + rng.laplace(size=num_samples)
            if len(dataset) == 3:
                out[7] = np.nan
            return out

    rel = AddRemove(max_size=5)
    finder = GridFinder([rel.pair([0.0], [0.0, 1.0]), rel.pair([0.0, 1.0], [0.0, 1.0, 0.5])])
    tester = HockeyStickTester(ClassifierHockeyStick(hidden_sizes=(8,), epochs=1, max_steps=5))
    seen = []
    with pytest.raises(MechanismError) as info:
        audit(
            FailsOnThreeRecords(),
            PureDP(1.0),
            finder,
            tester=tester,
            num_samples=200,
            trials=2,
            seed=0,
            on_trial_end=seen.append,
        )
    msg = str(info.value)
    assert "'fails-on-3'" in msg and "[0, 1, 0.5]" in msg and "nan" in msg and "sample 7" in msg
    assert len(seen) == 1  # the first trial ran; the second raised instead of being dropped
