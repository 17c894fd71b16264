"""Tests of the diffprivlib adapter and the diffprivlib example module.

diffprivlib calls cost about 0.1-0.3 ms each, so sample counts stay in the hundreds.
"""

from __future__ import annotations

import math
import subprocess
import sys
import warnings

import numpy as np
import pytest

diffprivlib = pytest.importorskip("diffprivlib")
from diffprivlib.accountant import BudgetAccountant  # noqa: E402
from diffprivlib.tools import mean  # noqa: E402

from dpaudit.datasets import Domain, Replace  # noqa: E402
from dpaudit.errors import MechanismError  # noqa: E402
from dpaudit.mechanisms import Mechanism, draw  # noqa: E402
from dpaudit.mechanisms.adapters import DiffprivlibMechanism  # noqa: E402
from dpaudit.mechanisms.adapters.diffprivlib import import_diffprivlib  # noqa: E402

DATA = np.array([[0.2], [0.9], [0.4]])


def test_shape_range_and_default_name():
    mech = DiffprivlibMechanism(mean, epsilon=1.0, bounds=(0, 1))
    out = draw(mech, DATA, 300, np.random.default_rng(0))
    assert out.shape == (300, 1)
    assert out.min() >= 0.0 and out.max() <= 1.0  # diffprivlib truncates to the bounds
    assert len(np.unique(out)) > 100  # independent draws, not one value repeated
    assert "mean" in mech.name and "epsilon=1.0" in mech.name
    assert DiffprivlibMechanism(mean, name="m", epsilon=1.0, bounds=(0, 1)).name == "m"


def test_reproducible_from_the_seed():
    mech = DiffprivlibMechanism(mean, epsilon=1.0, bounds=(0, 1))
    a = draw(mech, DATA, 200, np.random.default_rng(7))
    b = draw(mech, DATA, 200, np.random.default_rng(7))
    c = draw(mech, DATA, 200, np.random.default_rng(8))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_truncated_laplace_atom_matches_diffprivlib_mean():
    # mean([0.0]) with bounds (0, 1), eps = 1: Laplace(0, scale 1) truncated to [0, 1], so the
    # output is exactly 0 with probability 1/2 and exactly 1 with probability exp(-1)/2.
    n = 800
    out = draw(DiffprivlibMechanism(mean, epsilon=1.0, bounds=(0, 1)), np.array([[0.0]]), n, np.random.default_rng(1))
    for value, p in ((0.0, 0.5), (1.0, 0.5 * math.exp(-1))):
        frac = np.mean(out == value)
        assert abs(frac - p) <= 5 * math.sqrt(p * (1 - p) / n), (value, frac, p)


def test_one_random_state_per_sample_call_and_flattened_records():
    seen = []

    def tool(x, random_state=None):
        seen.append((x.shape, random_state))
        return float(random_state.random_sample())

    mech = DiffprivlibMechanism(tool)
    out = draw(mech, DATA, 5, np.random.default_rng(0))
    assert [shape for shape, _ in seen] == [(3,)] * 5  # record_dim 1 -> 1-D array
    states = {id(rs) for _, rs in seen}
    assert len(states) == 1 and isinstance(seen[0][1], np.random.RandomState)
    assert len(np.unique(out)) == 5  # the shared state advances between calls
    seen.clear()
    draw(mech, np.zeros((4, 2)), 2, np.random.default_rng(0))
    assert [shape for shape, _ in seen] == [(4, 2)] * 2  # vector records are passed unchanged


def test_nan_output_is_a_mechanism_error():
    def nan_tool(x, random_state=None):
        return float("nan")

    with pytest.raises(MechanismError, match="non-finite"):
        draw(DiffprivlibMechanism(nan_tool, name="nan-tool"), DATA, 10, np.random.default_rng(0))


def test_exception_and_ragged_output_are_mechanism_errors():
    calls = []

    def flaky(x, random_state=None):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("boom")
        return 0.5

    with pytest.raises(MechanismError, match=r"RuntimeError: boom \(call 3 of 10\)"):
        draw(DiffprivlibMechanism(flaky), DATA, 10, np.random.default_rng(0))

    def growing(x, random_state=None):
        calls.append(1)
        return np.zeros(len(calls))

    calls.clear()
    with pytest.raises(MechanismError, match="fixed shape"):
        draw(DiffprivlibMechanism(growing), DATA, 3, np.random.default_rng(0))


def test_a_tool_that_writes_to_its_input_is_reported():
    def clips_in_place(x, random_state=None):
        x[x > 0.5] = 0.5
        return float(x.mean())

    data = DATA.copy()
    with pytest.raises(MechanismError, match="read-only"):
        draw(DiffprivlibMechanism(clips_in_place), data, 3, np.random.default_rng(0))
    np.testing.assert_array_equal(data, DATA)


def test_constructor_validation():
    with pytest.raises(TypeError, match="callable"):
        DiffprivlibMechanism("mean")
    with pytest.raises(ValueError, match="random_state"):
        DiffprivlibMechanism(mean, epsilon=1.0, bounds=(0, 1), random_state=0)

    def no_state(x):
        return 0.0

    with pytest.raises(TypeError, match="random_state"):
        DiffprivlibMechanism(no_state)


def test_warnings_are_silenced_but_kept_and_default_accountant_is_untouched():
    default = BudgetAccountant.load_default(None)
    before = len(default.spent_budget)
    mech = DiffprivlibMechanism(mean, epsilon=1.0)  # no bounds: diffprivlib warns PrivacyLeakWarning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        draw(mech, DATA, 50, np.random.default_rng(0))
    assert not caught
    assert any(w.startswith("PrivacyLeakWarning") for w in mech.library_warnings)
    assert len(default.spent_budget) == before
    # A caller's own accountant is used (and records every call).
    acc = BudgetAccountant()
    draw(DiffprivlibMechanism(mean, epsilon=0.5, bounds=(0, 1), accountant=acc), DATA, 20, np.random.default_rng(0))
    assert len(acc.spent_budget) == 20 and acc.total()[0] == pytest.approx(10.0)


def test_missing_diffprivlib_gives_an_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "diffprivlib", None)  # makes `import diffprivlib` fail
    with pytest.raises(ImportError, match=r"pip install 'dpaudit\[diffprivlib\]'"):
        import_diffprivlib()
    mech = DiffprivlibMechanism(lambda x, random_state=None: 0.0, name="needs-diffprivlib")
    with pytest.raises(MechanismError, match=r"pip install 'dpaudit\[diffprivlib\]'"):
        draw(mech, DATA, 2, np.random.default_rng(0))


def test_importing_the_adapter_and_the_example_does_not_import_diffprivlib():
    code = (
        "import sys, dpaudit.mechanisms.adapters, dpaudit.examples.diffprivlib_mean as ex; "
        "assert 'diffprivlib' not in sys.modules, 'imported eagerly'; print(ex.broken_mean.name)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "broken_mean" in res.stdout


# --- the example module -----------------------------------------------------------------------


def test_example_objects_and_constants():
    from dpaudit.examples import diffprivlib_mean as ex

    assert isinstance(ex.dpl_mean, Mechanism) and isinstance(ex.broken_mean, Mechanism)
    assert ex.dpl_mean.name != ex.broken_mean.name
    assert ex.NEIGHBOURING == "replace" and ex.EPSILON == 1.0
    rel = Replace(Domain((ex.BOUNDS[0],), (ex.BOUNDS[1],)), 1, 10)
    for d0, d1 in ex.WITNESS_PAIRS:
        rel.pair(d0, d1)


def test_broken_mean_releases_the_single_record():
    # The documented bug: bounds from the data -> with one record the output is the record itself.
    from dpaudit.examples import diffprivlib_mean as ex

    rng = np.random.default_rng(0)
    (d0, d1) = ex.WITNESS_PAIRS[0]
    np.testing.assert_array_equal(draw(ex.broken_mean, np.array(d0), 50, rng), 0.0)
    np.testing.assert_array_equal(draw(ex.broken_mean, np.array(d1), 50, rng), 1.0)
    assert any("PrivacyLeakWarning" in w for w in ex.broken_mean.library_warnings)


def test_dpl_mean_is_diffprivlibs_bounded_mean():
    # Same distribution as mean(x, epsilon=1, bounds=(0, 1)): on [[1.0]] the output is exactly 1
    # with probability 1/2 (Laplace(1, 1) truncated to [0, 1]).
    from dpaudit.examples import diffprivlib_mean as ex

    n = 800
    out = draw(ex.dpl_mean, np.array([[1.0]]), n, np.random.default_rng(2))
    assert out.min() >= 0.0 and out.max() <= 1.0
    assert abs(np.mean(out == 1.0) - 0.5) <= 5 * math.sqrt(0.25 / n)
    assert ex.dpl_mean.library_warnings == ()
