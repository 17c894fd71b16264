"""Adversarial record values: the edges of what an API accepts, as neighbouring pairs to try.

Real bugs of DP libraries live where the search's ordinary box of floats never goes: NaN and
infinities, negative zero, subnormals and the largest finite doubles, values outside the declared
bounds, integer dtypes (and integers above 2^53, which a double cannot hold), the empty dataset
(Casacuberta et al. 2022 list such implementation bugs; Mironov 2012 the floating-point ones).
This module names those values (:data:`KINDS`), lets a target declare which of them its API
accepts (:class:`AcceptedInputs`, the target's ``accepts`` attribute), and builds the pairs to try
(:func:`adversarial_pairs`): ``D1`` is ``D0`` with one record that holds the value added (add/remove)
or in place of a record (replace).

The pairs are raw arrays, not :class:`~dpaudit.datasets.NeighbouringPair` objects: a NaN record is
outside every :class:`~dpaudit.datasets.Domain` and a pair of them could not be checked or stored
by the ordinary audit. They are run by :func:`dpaudit.audit.adversarial.screen`, which counts a
rejected input (the library raises) as a pass for that input and sizes any output set only one side
reaches. The stage is opt-in (nothing in the ordinary search proposes these values); a target opts
out of a value by leaving it out of its ``accepts``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..datasets import ADVERSARIAL_KINDS as KINDS
from ..datasets import AcceptedInputs, adversarial_value

__all__ = ["KINDS", "AcceptedInputs", "AdversarialPair", "adversarial_pairs", "adversarial_value", "pair_sizes"]


def pair_sizes(relation, cap: int | None = None) -> tuple:
    """The sizes of the pairs a search may build under ``relation``: a valid neighbouring pair the
    target accepts at its declared sizes (a row whose dataset size is fixed, e.g. a public ``n``,
    gets pairs of exactly that size, never a one-record pair it would not be run on).

    Parameters
    ----------
    relation : AddRemove or Replace (or their labelled forms)
        Its ``min_size``/``max_size`` (records or units) bound every dataset of a pair.
    cap : int, optional
        The largest dataset the search should build (e.g. ``InputSpace.max_size``, default 12 in
        :func:`dpaudit.search.input_space.explore`); raised to the smallest valid size when that is
        larger (a target whose datasets all hold 20 records is searched at 20, not skipped).

    Returns
    -------
    (int, int)
        ``(n_lo, n_hi)``: the range of the size of ``D0``, the smaller dataset under add/remove
        (``D1`` has one record more, at most ``max_size``), the dataset under replace (``D1`` has
        the same size, at least 1).

    Raises
    ------
    ValueError
        If no neighbouring pair fits the sizes: add/remove with ``max_size < min_size + 1`` (a
        fixed size: no record can be added), replace with ``max_size < 1``; the message says so,
        and the callers report the target as not searched for that reason.
    """
    name = getattr(relation, "name", "")
    name = {"labelled-add-remove": "add-remove", "labelled-replace": "replace"}.get(name, name)
    lo_size = int(getattr(relation, "min_size", 0))
    hi_size = int(getattr(relation, "max_size", 10**9))
    if name == "add-remove":
        n_lo, n_max = lo_size, hi_size - 1
        if n_max < n_lo:
            raise ValueError(f"add-remove pairs need a dataset of {n_lo} records and one of {n_lo + 1}, but the "
                             f"relation's sizes are [{lo_size}, {hi_size}] (a fixed size admits no added record)")
    elif name == "replace":
        n_lo, n_max = max(1, lo_size), hi_size
        if n_max < n_lo:
            raise ValueError(f"replace pairs need a dataset of at least one record, but the relation's sizes are "
                             f"[{lo_size}, {hi_size}]")
    else:
        raise ValueError(f"adversarial pairs need an add-remove or replace relation, got {name!r}")
    if cap is not None:
        n_max = min(n_max, max(n_lo, int(cap) - (1 if name == "add-remove" else 0)))
    return n_lo, n_max


@dataclass(frozen=True)
class AdversarialPair:
    """One adversarial pair: ``d1`` differs from ``d0`` by one record holding the value of ``kind``.

    Attributes
    ----------
    kind : str
    d0, d1 : ndarray, shape (n0, d) and (n1, d)
        Float64 arrays (``int64`` for the integer kinds); may hold NaN or infinities.
    description : str
        E.g. ``"add a record holding nan"``.
    structural : bool
        A declared privacy-unit pair (:attr:`AcceptedInputs.unit_pairs`), not a value kind: the
        screen also runs its distributional check on it.
    """

    kind: str
    d0: np.ndarray = field(repr=False)
    d1: np.ndarray = field(repr=False)
    description: str
    structural: bool = False


def adversarial_pairs(relation, accepts: AcceptedInputs | None = None) -> list:
    """The adversarial pairs of ``relation`` for the inputs ``accepts`` declares.

    Parameters
    ----------
    relation : AddRemove or Replace (or their labelled forms)
        Its domain gives the bounds (``above-bounds``/``below-bounds``) and the record dimension;
        ``relation.name`` ("add-remove" or "replace", "labelled-add-remove" or "labelled-replace")
        how the pairs differ.
    accepts : AcceptedInputs, optional
        The declared accepted set (default: every kind).

    Returns
    -------
    list of AdversarialPair
        One per kind accepted (``empty`` only under add/remove with ``min_size == 0``), in
        :data:`KINDS` order, then one per declared unit pair (``accepts.unit_pairs``,
        ``structural=True``), in declared order. Every pair is of the relation's sizes
        (:func:`pair_sizes`): ``D0`` is ``accepts.base`` (default: one record at the domain's lower
        corner), its records repeated in turn up to the relation's ``min_size`` and cut to its
        largest valid size.

    Raises
    ------
    ValueError
        If the relation is neither add/remove nor replace, no neighbouring pair fits its sizes
        (:func:`pair_sizes`), ``accepts.record`` builds a record of the wrong dimension, or a unit
        pair's records are not of the domain's dimension or (under add/remove) its datasets do not
        differ in size by one. (A declared unit pair is taken as the target states it, whatever the
        relation's sizes: e.g. the empty dataset against one unit of a library that accepts it.)
    """
    accepts = accepts or AcceptedInputs()
    name = getattr(relation, "name", "")
    # labelled examples (LabelledAddRemove / LabelledReplace) differ as their plain relations do
    name = {"labelled-add-remove": "add-remove", "labelled-replace": "replace"}.get(name, name)
    n_lo, n_hi = pair_sizes(relation)  # raises for a relation that is neither, or sizes no pair fits
    lo = np.asarray(relation.domain.lower, dtype=float)
    hi = np.asarray(relation.domain.upper, dtype=float)
    dim = lo.size
    base = np.asarray(accepts.base, dtype=float).reshape(-1, dim) if accepts.base is not None else lo.reshape(1, dim)
    if len(base) == 0:
        base = lo.reshape(1, dim)
    n0 = min(max(len(base), n_lo), n_hi)  # D0 at a size the target accepts (e.g. a fixed public n)
    base = base[np.arange(n0) % len(base)]

    def record(value) -> np.ndarray:
        rec = accepts.record(value) if accepts.record is not None else [value] * dim
        arr = np.asarray(rec, dtype=np.int64 if isinstance(value, (int, np.integer)) else float).reshape(-1)
        if arr.size != dim:
            raise ValueError(f"accepts.record({value!r}) has {arr.size} coordinates, the domain {dim}")
        return arr

    def pair(kind: str, rec: np.ndarray, verb: str, d0: np.ndarray) -> AdversarialPair:
        if name == "add-remove":
            d1 = np.vstack([d0.astype(rec.dtype), rec.reshape(1, dim)])
            return AdversarialPair(kind, d0.astype(rec.dtype), d1, f"add a record {verb}")
        d1 = d0.astype(rec.dtype).copy()
        d1[-1] = rec
        return AdversarialPair(kind, d0.astype(rec.dtype), d1, f"replace the last record by one {verb}")

    out = []
    for kind in accepts.kinds:
        if kind == "empty":
            if name == "add-remove" and n_lo == 0:
                out.append(AdversarialPair(kind, np.zeros((0, dim)), base[:1].copy(), "the empty dataset vs one record"))
            continue
        if kind == "integer-dtype":
            ints = np.rint(np.clip(hi, -2.0**62, 2.0**62)).astype(np.int64)
            out.append(pair(kind, ints, "with integer (int64) coordinates, the dataset as int64",
                            np.rint(base).astype(np.int64)))
            continue
        value = adversarial_value(kind, float(lo.min()), float(hi.max()))
        d0 = np.rint(base).astype(np.int64) if kind == "above-2^53" else base
        out.append(pair(kind, record(value), f"holding {value!r}" if kind != "above-2^53" else
                        f"holding the int64 {value} (2^53 + 1)", d0))
    for kind, d0, d1, description in accepts.unit_pairs:
        a0, a1 = (np.asarray(d, dtype=float) if np.size(d) else np.zeros((0, dim)) for d in (d0, d1))
        if a0.ndim != 2 or a1.ndim != 2 or a0.shape[1] != dim or a1.shape[1] != dim:
            raise ValueError(f"unit pair {kind!r}: records must have the domain's {dim} coordinates, got "
                             f"datasets of shapes {a0.shape} and {a1.shape}")
        if name == "add-remove" and abs(len(a1) - len(a0)) != 1:
            raise ValueError(f"unit pair {kind!r}: under add/remove the datasets differ by one unit, got "
                             f"{len(a0)} and {len(a1)} records")
        out.append(AdversarialPair(kind, a0, a1, description, structural=True))
    return out
