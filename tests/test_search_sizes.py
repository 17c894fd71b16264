"""The adversarial list and the input-space search build pairs at the sizes the target's relation
declares (issue 42): a target whose dataset size is fixed (a public ``n``, as SmartNoise Synth's
DPcovariance) is searched at that size, never on one-record pairs it is not run on (whose outputs,
NaN on both sides, would make "no leak" meaningless), and a relation no neighbouring pair fits is
reported as "not searched: <reason>", not as a pass."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.audit.adversarial import screen_stage
from dpaudit.audit.input_space import search
from dpaudit.datasets import AcceptedInputs, AddRemove, Domain, Replace
from dpaudit.mechanisms.base import Mechanism
from dpaudit.search.adversarial import adversarial_pairs, pair_sizes

pytest.importorskip("hypothesis")

N = 5


class _FixedNMean(Mechanism):
    """A mean over a public ``n = 5`` with Laplace noise of scale ``1 / (5 epsilon)`` that skips NaN
    records but divides by the non-NaN count (the nanmean bug): leaks only on datasets of 5 records
    that hold several NaN next to an ordinary record that changes. Records every size it is run on."""

    def __init__(self):
        self.sizes = []

    def sample(self, dataset, num_samples, rng):
        d = np.asarray(dataset, dtype=float).reshape(-1, 1)
        self.sizes.append(len(d))
        if len(d) != N:
            return np.full((num_samples, 1), np.nan)  # what np.cov does off its size: NaN on both sides
        x = np.clip(d[:, 0], 0.0, 1.0)
        ok = ~np.isnan(x)
        v = float(np.mean(x[ok])) if ok.any() else 0.0
        return (v + rng.laplace(0.0, 1.0 / N, size=num_samples)).reshape(-1, 1)


def test_fixed_list_and_search_respect_a_fixed_size():
    rel = Replace(Domain((0.0,), (1.0,)), min_size=N, max_size=N)
    assert pair_sizes(rel) == (N, N) and pair_sizes(rel, cap=3) == (N, N)
    pairs = adversarial_pairs(rel, AcceptedInputs())
    assert pairs and all(len(p.d0) == N and len(p.d1) == N for p in pairs), [(p.kind, len(p.d0)) for p in pairs]
    mech = _FixedNMean()
    r = search(mech, rel, AcceptedInputs(kinds=("nan",)), epsilon=1.0, beta=0.05, budget=1, seed=0, samples=24,
               certify_samples=400)
    assert set(mech.sizes) == {N}  # every pair run, fixed list, seeds and draws, at the target's size
    # the seeds padded to 5 records reach the bug (k NaN records next to an ordinary one that changes)
    assert r.witnesses and np.isnan(r.witnesses[0].candidate.d0).any(), r.hunts


def test_add_remove_sizes_and_not_searched():
    dom = Domain((0.0,), (1.0,))
    rel = AddRemove(dom, min_size=3, max_size=4)
    assert pair_sizes(rel) == (3, 3)
    assert all((len(p.d0), len(p.d1)) == (3, 4) for p in adversarial_pairs(rel))
    assert "empty" not in {p.kind for p in adversarial_pairs(rel)}  # min_size 3: no empty dataset
    fixed = AddRemove(dom, min_size=N, max_size=N)
    with pytest.raises(ValueError, match="fixed size"):
        adversarial_pairs(fixed)
    mech = _FixedNMean()
    stage = screen_stage(mech, fixed, epsilon=1.0, beta=0.01, seed=0, samples=16)
    assert "fixed size" in stage["not_searched"] and [r["status"] for r in stage["results"]] == ["not searched"]
    assert mech.sizes == []
