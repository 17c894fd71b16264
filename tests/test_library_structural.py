"""Structural leak sizes (``dpaudit.library.structural``): the float-addition lemma, the set's
predicate, the certified "no epsilon holds for delta < X", and the declarations of the rows.

The lemma (for a double ``c`` with ``2^P <= |c| < 2^(P+1)`` and any double ``z``, ``fl(c + z)`` is a
multiple of ``2^(P-53)``) is what makes ``P[S | other] = 0`` a theorem for the floating-point rows;
it is checked here on 300,000 seeded pairs over every binade that matters, including the
boundary cases the proof distinguishes (``|z|`` near ``2^(P-1)``). The lower bound X is checked for
coverage: over many seeded repetitions it is above the true probability at most beta of the time.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _harness import assert_coverage_at_least

from dpaudit.library import registry
from dpaudit.library.entry import StructuralSet
from dpaudit.library.structural import float_addition_set, in_set, off_grid, size_structural


def test_float_addition_lemma_holds_on_300k_pairs(rng):
    n = 300_000
    c = np.ldexp(rng.uniform(1.0, 2.0, n), rng.integers(-60, 60, n)) * rng.choice([-1.0, 1.0], n)
    c[: n // 10] = np.ldexp(1.0, rng.integers(-60, 60, n // 10))  # exact powers of two: the tightest case
    p = np.frexp(np.abs(c))[1] - 1
    # z at every scale around c, and right at the proof's boundary |z| = 2^(P-1) (+- a few ulps)
    scale = np.ldexp(1.0, p + rng.integers(-70, 4, n))
    z = rng.standard_normal(n) * scale
    edge = slice(n // 2, n // 2 + n // 10)
    z[edge] = -np.sign(c[edge]) * np.nextafter(np.ldexp(1.0, p[edge] - 1), np.inf * rng.choice([-1, 1], n // 10))
    y = c + z  # IEEE double addition, round to nearest: fl(c + z)
    assert np.all(np.fmod(y, np.ldexp(1.0, p - 53)) == 0.0)
    # and the bound is attained: the noise alone (value 0) is off that grid often
    assert np.mean(np.fmod(z, np.ldexp(1.0, p - 53)) != 0.0) > 0.5


def test_off_grid_is_exact_and_rejects_zero_and_non_finite():
    assert off_grid(2.0**-54, -53) and not off_grid(2.0**-53, -53) and not off_grid(0.0, -53)
    assert not off_grid(float("nan"), -53) and not off_grid(float("inf"), 0) and not off_grid(-0.0, 3)
    assert off_grid(1.0 + 2.0**-52, -51) and not off_grid(1.0 + 2.0**-51, -51)


def test_float_addition_set_states_the_grid_of_the_values_binade():
    s = float_addition_set(1, 4.0, reaches="D0", d0=[[0.0]], d1=[[1.0]], release="a release")
    assert s.predicate == "off_grid(y[1], -51)" and s.reaches == "D0" and not s.always
    assert "fl(4 + z)" in s.why and "2^-51" in s.words
    assert list(in_set(s, [[0.0, 2.0**-52], [0.0, 2.0**-51], [7.0, 0.0]])) == [True, False, False]
    with pytest.raises(ValueError, match="non-zero"):
        float_addition_set(0, 0.0, reaches="D0", d0=[], d1=[], release="x")
    with pytest.raises(ValueError, match="reaches"):
        StructuralSet("y[0] > 1", "w", "D2", "why")
    with pytest.raises(SyntaxError):
        StructuralSet("y[0] >", "w", "D0", "why")
    with pytest.raises(ValueError, match="failed on an output"):
        in_set(StructuralSet("y[3] > 0", "w", "D0", "why"), [[1.0]])


def test_size_structural_certifies_x_and_refutes_a_wrong_declaration():
    s = StructuralSet("y[0] > 1.0", "outputs above 1", "D1", "truncation")
    y0 = np.zeros((100, 1))
    y1 = np.concatenate([np.full((40, 1), 2.0), np.zeros((60, 1))])
    size = size_structural(s, y0, y1, beta=0.01)
    assert (size.hits_reach, size.n_reach, size.hits_other) == (40, 100, 0) and not size.refuted
    assert 0.25 < size.x_lower < 0.4  # a Clopper-Pearson lower bound on 0.4 at n = 100
    assert "no epsilon holds for delta < " in size.text(s, 0.0)
    wrong = size_structural(s, np.full((100, 1), 2.0), y1, beta=0.01)
    assert wrong.refuted and "declaration is wrong" in wrong.text(s, 0.0)
    always = StructuralSet("y[0] == 0.0", "zero", "D0", "by code", always=True)
    a = size_structural(always, y0, y1 + 1.0, beta=0.01)
    assert a.always and a.x_lower == 1.0 and "true delta is 1" in a.text(always, 0.0)
    with pytest.raises(ValueError, match="beta"):
        size_structural(s, y0, y1, beta=1.0)


def test_structural_lower_bound_covers_the_true_probability(rng):
    """X is a lower confidence bound on P[S | reaching] at 1 - beta: over 400 seeded repetitions at
    p = 0.3, n = 200, X exceeds p at most beta of the time (binomial test, tests/_harness.py)."""
    s = StructuralSet("y[0] > 0.5", "above 1/2", "D0", "by construction")
    p, n, beta, reps = 0.3, 200, 0.05, 400
    covered = 0
    for _ in range(reps):
        y0 = (rng.random((n, 1)) < p).astype(float)
        covered += size_structural(s, y0, np.zeros((n, 1)), beta=beta).x_lower <= p
    assert_coverage_at_least(covered, reps, 1 - beta, what="X below the true probability")


def test_every_declared_structural_set_parses_and_names_its_pair():
    declared = [e for e in registry.REGISTRY if e.structural is not None]
    assert len(declared) >= 20
    for e in declared:
        s = e.structural
        assert s.d0 is not None and s.d1 is not None, e.key
        assert len(s.why) > 40 and s.words, e.key
        # each pair is a neighbouring pair of the row's relation (one record added, or one replaced)
        d0, d1 = np.asarray(s.d0, dtype=float), np.asarray(s.d1, dtype=float)
        if e.guarantee.neighbouring == "add-remove":
            assert abs(len(d0) - len(d1)) == 1, e.key
        else:
            assert len(d0) == len(d1) and (d0 != d1).any(axis=1).sum() == 1, e.key
    # the two examples: the Gaussian grid leak on COUNT, and GaussianNB's absent class (delta = 1)
    assert registry.find("pipelinedp.count_gaussian").structural.predicate == "off_grid(y[1], -51)"
    assert registry.find("diffprivlib.gaussian_nb").structural.always


@pytest.mark.parametrize("key", ["diffprivlib.laplace", "diffprivlib.gaussian_nb"])
def test_a_declaration_holds_on_the_library(key):
    """The library's own outputs on the declared pair: the other side never reaches S (120 seeded
    draws of diffprivlib per dataset; the theorem is the proof, this catches a declaration of the wrong
    coordinate or pair)."""
    pytest.importorskip("diffprivlib")
    from dpaudit.library.entry import resolve_mechanism
    from dpaudit.library.stages import pair_outputs

    e = registry.find(key)
    y0, y1 = pair_outputs(resolve_mechanism(e), [list(r) for r in e.structural.d0], [list(r) for r in e.structural.d1],
                          samples=120, seed=3)
    size = size_structural(e.structural, y0, y1, beta=0.01)
    assert not size.refuted and size.hits_reach > 0
    assert size.always == e.structural.always
    assert math.isfinite(size.x_lower)
