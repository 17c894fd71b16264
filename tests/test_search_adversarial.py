"""The adversarial-values stage: pairs at the edges of an API (dpaudit.search.adversarial) and the
screen that runs them (dpaudit.audit.adversarial): a rejected input is a pass, a NaN that shows is a
certified leak, a mechanism that cleans its inputs passes."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.audit.adversarial import screen
from dpaudit.datasets import ADVERSARIAL_KINDS, AcceptedInputs, AddRemove, Domain, Replace
from dpaudit.mechanisms.base import Mechanism
from dpaudit.search.adversarial import adversarial_pairs


def test_pairs_hold_the_declared_values_and_differ_by_one_record():
    rel = AddRemove(Domain((0.0,), (1.0,)), min_size=0, max_size=5)
    pairs = {p.kind: p for p in adversarial_pairs(rel)}
    assert list(pairs) == list(ADVERSARIAL_KINDS)
    assert np.isnan(pairs["nan"].d1[-1, 0]) and len(pairs["nan"].d1) == len(pairs["nan"].d0) + 1
    assert pairs["-0.0"].d1[-1, 0] == 0.0 and np.signbit(pairs["-0.0"].d1[-1, 0])
    assert pairs["subnormal"].d1[-1, 0] == 5e-324 and pairs["above-bounds"].d1[-1, 0] == 2.0
    assert pairs["integer-dtype"].d1.dtype == np.int64 and pairs["above-2^53"].d1[-1, 0] == 2**53 + 1
    assert pairs["empty"].d0.shape == (0, 1) and pairs["empty"].d1.shape == (1, 1)
    rep = adversarial_pairs(Replace(Domain((0.0, 0.0), (1.0, 1.0)), min_size=1, max_size=3),
                            AcceptedInputs(kinds=("nan", "empty"), record=lambda v: (0.0, v)))
    assert [p.kind for p in rep] == ["nan"] and rep[0].d0.shape == rep[0].d1.shape == (1, 2)
    assert rep[0].d1[0, 0] == 0.0 and np.isnan(rep[0].d1[0, 1])
    with pytest.raises(ValueError, match="unknown adversarial kinds"):
        AcceptedInputs(kinds=("nan", "huge"))
    with pytest.raises(ValueError, match="coordinates"):
        adversarial_pairs(rel, AcceptedInputs(kinds=("nan",), record=lambda v: (v, v)))


def _geometric_count(clean: bool, raise_on_nan: bool = False):
    def release(x, rng):
        x = np.asarray(x, dtype=float).ravel()
        if raise_on_nan and np.isnan(x).any():
            raise ValueError("NaN records are not accepted")
        if clean:
            x = np.nan_to_num(x, nan=0.0)
        count = np.sum(np.clip(x, 0.0, 1.0) >= 0.5) if clean else np.sum(x)  # the unclean one propagates NaN
        return float(count + rng.geometric(0.5) - rng.geometric(0.5))
    mech = Mechanism.from_callable(release)
    mech.neighbouring = AddRemove(Domain((0.0,), (1.0,)), min_size=0, max_size=5)
    return mech


def test_screen_rejected_is_a_pass_a_nan_that_shows_is_a_leak_and_a_clean_target_passes():
    kinds = AcceptedInputs(kinds=("nan", "+inf", "subnormal", "integer-dtype", "empty"))
    leaky = {r.kind: r for r in screen(_geometric_count(clean=False), accepts=kinds, epsilon=1.0, samples=200)}
    assert leaky["nan"].status == "leak" and leaky["nan"].leak.hits_p == 200 and "NaN" in leaky["nan"].detail
    assert leaky["nan"].leak.delta_lower(1.0) > 0.75 and leaky["nan"].leak.beta == 0.01
    assert leaky["+inf"].status == "leak"  # an infinite count shows itself too
    clean = screen(_geometric_count(clean=True), accepts=kinds, epsilon=1.0, samples=200)
    assert [r.status for r in clean] == ["pass"] * 5
    picky = {r.kind: r for r in screen(_geometric_count(clean=True, raise_on_nan=True), accepts=kinds, epsilon=1.0,
                                       samples=200)}
    assert picky["nan"].status == "rejected" and "ValueError: NaN records" in picky["nan"].detail
    with pytest.raises(ValueError, match="relation"):
        screen(Mechanism.from_callable(lambda x: 0.0), epsilon=1.0)
