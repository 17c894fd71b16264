"""Structural leak sizes: a set one dataset never reaches, by construction.

When an output set ``S`` is reached under ``D_r`` and never under its neighbour ``D_o`` (``P[S |
D_o] = 0``, proved from the library's code, not estimated), every ``(epsilon, delta)`` guarantee
of the mechanism needs, at every epsilon,

    delta >= P[S | D_r] - e^epsilon P[S | D_o] = P[S | D_r]          (Dwork & Roth 2014, Def. 2.4)

so *no epsilon holds for delta below* ``P[S | D_r]``. With ``n`` outputs on ``D_r`` of which ``k``
fall in ``S`` (``S`` fixed before they are drawn, so no selection split is needed), a
Clopper-Pearson lower bound ``X`` on ``P[S | D_r]`` at level ``beta`` gives, with probability at
least ``1 - beta``: no epsilon holds for delta < X. The statistical "delta >= p_lo - e^epsilon
q_hi" of :mod:`dpaudit.audit.leak_size` uses an upper bound ``q_hi > 0`` on the other side even
when its count is 0, which makes a finite "epsilon horizon" out of what is no finite epsilon at
all; the structural statement replaces it wherever the zero is a theorem.

Where ``P[S | D_r] = 1`` by construction as well (:attr:`StructuralSet.always`), the true delta is
exactly 1 at every epsilon: the two datasets are told apart every time.

The float-addition lemma (:func:`float_addition_set`)
-----------------------------------------------------
Let ``c != 0`` be a double with ``2^P <= |c| < 2^(P+1)`` and ``z`` any double. Then the rounded sum
``fl(c + z)`` is a multiple of ``2^(P-53)``. Proof: if ``|z| >= 2^(P-1)`` then ``z`` and ``c`` are
multiples of ``2^(P-53)`` (a double in binade ``e`` is a multiple of ``2^(e-52)``), so is the exact
sum, and rounding to nearest keeps that (the result is the exact sum when its binade's spacing is
at most ``2^(P-53)``, else a multiple of a coarser spacing); otherwise ``|c + z| > 2^P - 2^(P-1) =
2^(P-1)``, and every double at least ``2^(P-1)`` is a multiple of ``2^(P-53)``. A mechanism whose
release on ``D_o`` is ``fl(c + z)`` (the true value plus float noise, then clamped or folded at
bounds that are multiples of ``2^(P-53)``, which keeps the property) therefore never releases a
value that is not a multiple of ``2^(P-53)``, whatever its noise; on ``D_r`` with true value 0 the
release is the noise itself, whose small values have bits below ``2^(P-53)``. This is Mironov's
(2012) observation as a proof of a zero.

Functions
---------
* :func:`off_grid` — the set's test for one value.
* :func:`float_addition_set` — the :class:`~dpaudit.library.entry.StructuralSet` of the lemma.
* :func:`in_set` — evaluate a set's predicate on outputs.
* :func:`size_structural` — the certified statement from counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .entry import StructuralSet

__all__ = ["StructuralSize", "float_addition_set", "in_set", "off_grid", "size_structural"]


def off_grid(v: float, k: int) -> bool:
    """Whether the double ``v`` is finite, non-zero and not a multiple of ``2^k``.

    ``math.fmod`` is exact on doubles, so the test has no rounding error.

    Parameters
    ----------
    v : float
    k : int
        Exponent of the grid.

    Returns
    -------
    bool
    """
    v = float(v)
    return math.isfinite(v) and v != 0.0 and math.fmod(v, 2.0 ** int(k)) != 0.0


def float_addition_set(column: int, value: float, *, reaches: str, d0, d1, release: str) -> StructuralSet:
    """The set of the float-addition lemma (module docstring) for one output coordinate.

    Parameters
    ----------
    column : int
        The output coordinate released as ``fl(c + z)``.
    value : float
        ``c``, the true value of that coordinate on the dataset that never reaches the set (non-zero).
    reaches : str
        ``"D0"`` or ``"D1"``: the other dataset of the pair.
    d0, d1 : sequence
        The pair (nested lists of records).
    release : str
        Where the library computes ``fl(c + z)`` (file and function), for the statement's proof.

    Returns
    -------
    StructuralSet
        ``S`` = outputs whose coordinate ``column`` is not a multiple of ``2^(P-53)``, where
        ``2^P <= |value| < 2^(P+1)``.

    Raises
    ------
    ValueError
        If ``value`` is zero or not finite, or ``column`` is negative.
    """
    if not (math.isfinite(value) and value != 0.0):
        raise ValueError(f"value must be a finite non-zero double, got {value!r}")
    if int(column) != column or column < 0:
        raise ValueError(f"column must be a non-negative integer, got {column!r}")
    p = math.frexp(abs(value))[1] - 1  # 2^p <= |value| < 2^(p+1)
    k = p - 53
    other = "D1" if reaches == "D0" else "D0"
    return StructuralSet(
        predicate=f"off_grid(y[{column}], {k})",
        words=f"outputs whose coordinate {column} is not a multiple of 2^{k} (only values below 2^{p - 1} in "
              "magnitude can be)",
        reaches=reaches,
        why=(f"{release}: on {other} the coordinate is fl({value:g} + z) for a double z, and for any double z that "
             f"is a multiple of 2^{k} (2^{p} <= {value:g} < 2^{p + 1}; if |z| >= 2^{p - 1} both terms are multiples "
             f"of 2^{k} and rounding keeps that, else the sum exceeds 2^{p - 1} in magnitude, where every double is "
             f"such a multiple)"),
        d0=tuple(map(tuple, d0)), d1=tuple(map(tuple, d1)))


def in_set(structural: StructuralSet, outputs) -> np.ndarray:
    """Which rows of ``outputs`` fall in the set.

    Parameters
    ----------
    structural : StructuralSet
    outputs : array_like, shape (n, d)

    Returns
    -------
    ndarray of bool, shape (n,)

    Raises
    ------
    ValueError
        If the predicate fails on an output (e.g. names a coordinate the outputs do not have).
    """
    code = compile(structural.predicate, "<structural set>", "eval")
    arr = np.asarray(outputs, dtype=float)
    arr = arr.reshape(len(arr), -1)
    env = {"math": math, "off_grid": off_grid, "__builtins__": {}}
    try:
        return np.array([bool(eval(code, env, {"y": row})) for row in arr], dtype=bool)  # noqa: S307 - registry data
    except Exception as exc:  # noqa: BLE001 - named with the predicate
        raise ValueError(f"structural predicate {structural.predicate!r} failed on an output of dimension "
                         f"{arr.shape[1]}: {type(exc).__name__}: {exc}") from None


@dataclass(frozen=True)
class StructuralSize:
    """A structural leak size: counts of ``S`` on both datasets and what they certify.

    Attributes
    ----------
    hits_reach, n_reach : int
        Outputs in ``S`` and outputs drawn on the reaching dataset.
    hits_other, n_other : int
        The same on the other dataset (0 hits unless the declaration is wrong).
    x_lower : float
        Clopper-Pearson lower bound on ``P[S | reaching]`` at level ``beta``: no epsilon holds for
        delta below it (with probability ``1 - beta``).
    beta : float
    always : bool
        ``P[S | reaching] = 1`` by construction too (true delta 1).
    refuted : bool
        The other dataset reached ``S``: the declaration is wrong and nothing structural is stated.
    """

    hits_reach: int
    n_reach: int
    hits_other: int
    n_other: int
    x_lower: float
    beta: float
    always: bool = False
    refuted: bool = False

    def text(self, structural: StructuralSet, claim_delta: float) -> str:
        """The statement for the table and the tracker (one sentence)."""
        other = "D1" if structural.reaches == "D0" else "D0"
        counts = (f"{structural.words}: {self.hits_reach}/{self.n_reach} outputs on {structural.reaches}, "
                  f"{self.hits_other}/{self.n_other} on {other}")
        if self.refuted:
            return (f"{counts}: the other dataset reached the set, so the structural declaration is wrong; no "
                    "structural size is stated")
        if self.always:
            return (f"{counts}; P[S | {structural.reaches}] = 1 and P[S | {other}] = 0 by construction, so the "
                    "true delta is 1 at every epsilon")
        below = "" if self.x_lower > claim_delta else (
            f" (at or below the claimed delta {claim_delta:g}: this set alone does not refute the claim)")
        return (f"{counts}; P[S | {other}] = 0 by construction, so no epsilon holds for delta < {self.x_lower:.3g} "
                f"(Clopper-Pearson lower bound on P[S | {structural.reaches}], confidence {1 - self.beta:g}){below}")

    def to_dict(self) -> dict:
        """Plain-JSON form."""
        return {"hits_reach": self.hits_reach, "n_reach": self.n_reach, "hits_other": self.hits_other,
                "n_other": self.n_other, "x_lower": self.x_lower, "beta": self.beta, "always": self.always,
                "refuted": self.refuted}


def size_structural(structural: StructuralSet, y0, y1, *, beta: float) -> StructuralSize:
    """Count ``S`` on the outputs of the pair and certify "no epsilon holds for delta < X".

    Parameters
    ----------
    structural : StructuralSet
    y0, y1 : array_like, shape (n0, d) and (n1, d)
        Independent outputs on the pair's D0 and D1 (drawn without looking at ``S``, which is
        fixed by the declaration).
    beta : float
        Failure probability of the lower bound, in (0, 1).

    Returns
    -------
    StructuralSize
        ``x_lower`` = Clopper-Pearson lower bound on ``P[S | reaching]`` at ``beta``; 1 when the
        set is reached with probability 1 by construction and every output fell in it.

    Raises
    ------
    ValueError
        If beta is not in (0, 1), a side has no outputs, or the predicate fails.
    """
    from ..bounds import clopper_pearson_lower

    if not 0.0 < beta < 1.0:
        raise ValueError(f"beta must be in (0, 1), got {beta!r}")
    h0, h1 = in_set(structural, y0), in_set(structural, y1)
    if len(h0) == 0 or len(h1) == 0:
        raise ValueError(f"need outputs on both datasets, got {len(h0)} and {len(h1)}")
    hr, ho = (h0, h1) if structural.reaches == "D0" else (h1, h0)
    k, n, ko = int(hr.sum()), len(hr), int(ho.sum())
    refuted = ko > 0
    always = structural.always and k == n and not refuted
    x = 1.0 if always else float(clopper_pearson_lower(k, n, beta))
    return StructuralSize(k, n, ko, len(ho), x, float(beta), always=always, refuted=refuted)
