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

import sys
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = ["KINDS", "AcceptedInputs", "AdversarialPair", "adversarial_pairs", "adversarial_value"]

KINDS = ("nan", "+inf", "-inf", "-0.0", "subnormal", "max-double", "-max-double", "above-bounds", "below-bounds",
         "integer-dtype", "above-2^53", "empty")
"""The adversarial inputs, in the order tried:

* ``nan``, ``+inf``, ``-inf``, ``-0.0``: the IEEE specials;
* ``subnormal``: the smallest positive double, 2^-1074; ``max-double`` / ``-max-double``: +-(2 - 2^-52) 2^1023;
* ``above-bounds`` / ``below-bounds``: the declared domain's upper (lower) bound plus (minus) its width;
* ``integer-dtype``: the first witness-style pair, records as ``int64``; ``above-2^53``: an ``int64``
  record ``2^53 + 1`` (no double equals it);
* ``empty``: the empty dataset against one ordinary record (add/remove only).
"""


def adversarial_value(kind: str, lower: float = 0.0, upper: float = 1.0):
    """The value of one scalar ``kind`` (every kind but ``integer-dtype`` and ``empty``).

    Parameters
    ----------
    kind : str
        One of :data:`KINDS`.
    lower, upper : float
        The declared bounds of a record coordinate (for ``above-bounds``/``below-bounds``).

    Returns
    -------
    float or int

    Raises
    ------
    ValueError
        For an unknown kind or one that is not a single value.
    """
    width = upper - lower if upper > lower else 1.0
    values = {"nan": float("nan"), "+inf": float("inf"), "-inf": float("-inf"), "-0.0": -0.0,
              "subnormal": 5e-324, "max-double": sys.float_info.max, "-max-double": -sys.float_info.max,
              "above-bounds": upper + width, "below-bounds": lower - width, "above-2^53": 2**53 + 1}
    if kind not in values:
        raise ValueError(f"{kind!r} is not a single adversarial value; kinds: {', '.join(KINDS)}")
    return values[kind]


@dataclass(frozen=True)
class AcceptedInputs:
    """The adversarial inputs a target's API accepts: declared with the target, tried by the audit.

    Attributes
    ----------
    kinds : tuple of str
        Members of :data:`KINDS` to try (default: all). Leave a kind out when the API's documented
        input type excludes it (e.g. a function typed on integers does not take NaN); a kind the
        library rejects by raising may stay in: the rejection is recorded as a pass.
    record : callable, optional
        ``value -> record`` (a 1-D sequence) building the record that carries an adversarial value
        (e.g. a privacy unit whose contributions all hold it); by default every coordinate holds it.
    base : sequence of records, optional
        ``D0`` of the add/remove pairs and the unchanged records of the replace pairs (default: one
        record at the domain's lower corner).
    note : str
        What the declaration rests on (the library's documented input type), for the report.
    """

    kinds: tuple = KINDS
    record: Callable | None = field(default=None, compare=False)
    base: tuple | None = None
    note: str = ""

    def __post_init__(self) -> None:
        unknown = [k for k in self.kinds if k not in KINDS]
        if unknown:
            raise ValueError(f"unknown adversarial kinds {unknown}; known: {', '.join(KINDS)}")


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
    """

    kind: str
    d0: np.ndarray = field(repr=False)
    d1: np.ndarray = field(repr=False)
    description: str


def adversarial_pairs(relation, accepts: AcceptedInputs | None = None) -> list:
    """The adversarial pairs of ``relation`` for the inputs ``accepts`` declares.

    Parameters
    ----------
    relation : AddRemove or Replace
        Its domain gives the bounds (``above-bounds``/``below-bounds``) and the record dimension;
        ``relation.name`` ("add-remove" or "replace") how the pairs differ.
    accepts : AcceptedInputs, optional
        The declared accepted set (default: every kind).

    Returns
    -------
    list of AdversarialPair
        One per kind accepted (``empty`` only under add/remove), in :data:`KINDS` order.

    Raises
    ------
    ValueError
        If the relation is neither add/remove nor replace, or ``accepts.record`` builds a record of
        the wrong dimension.
    """
    accepts = accepts or AcceptedInputs()
    name = getattr(relation, "name", "")
    if name not in ("add-remove", "replace"):
        raise ValueError(f"adversarial pairs need an add-remove or replace relation, got {name!r}")
    lo = np.asarray(relation.domain.lower, dtype=float)
    hi = np.asarray(relation.domain.upper, dtype=float)
    dim = lo.size
    base = np.asarray(accepts.base, dtype=float).reshape(-1, dim) if accepts.base is not None else lo.reshape(1, dim)

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
            if name == "add-remove" and relation.min_size == 0:
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
    return out
