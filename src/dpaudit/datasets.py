"""Datasets and neighbouring relations over a bounded record domain.

A dataset is an array of shape ``(n_records, record_dim)``; every record lies in a box
``domain.lower <= record <= domain.upper``. Two relations are provided:

* :class:`AddRemove` (unbounded DP): ``D1`` is ``D0`` with one record added.
* :class:`Replace` (bounded DP, "swap"): ``D1`` is ``D0`` with one record replaced.

Both are symmetric, so a tester checks both orders ``(D0, D1)`` and ``(D1, D0)``.
References: paper 000, Definition 2.1 and Remark 2.2.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .errors import NeighbouringError

__all__ = ["AddRemove", "Domain", "NeighbouringPair", "Replace", "as_dataset", "make_relation"]


def as_dataset(data, record_dim: int | None = None) -> np.ndarray:
    """Convert a list/array of records to a float array of shape (n_records, record_dim).

    A 1-D input is read as ``n`` scalar records when ``record_dim`` is 1 or None.

    Raises
    ------
    NeighbouringError
        If the records are ragged, non-numeric, non-finite, or have the wrong dimension.
    """
    try:
        arr = np.asarray(data, dtype=float)
    except (TypeError, ValueError) as exc:
        raise NeighbouringError(f"dataset {data!r} is not a numeric array of records ({exc})") from None
    if arr.ndim == 1:
        if record_dim not in (None, 1) and arr.size:
            raise NeighbouringError(f"dataset {data!r} has scalar records but records must have dimension {record_dim}")
        arr = arr.reshape(-1, 1) if (record_dim in (None, 1)) else arr.reshape(0, record_dim)
    if arr.ndim != 2:
        raise NeighbouringError(f"dataset must have shape (n_records, record_dim), got shape {arr.shape}")
    if record_dim is not None and arr.shape[0] and arr.shape[1] != record_dim:
        raise NeighbouringError(f"dataset records have dimension {arr.shape[1]}, expected {record_dim}")
    if not np.all(np.isfinite(arr)):
        raise NeighbouringError(f"dataset contains NaN or infinite values: {data!r}")
    return arr


@dataclass(frozen=True)
class Domain:
    """A box of records: ``lower[j] <= record[j] <= upper[j]`` for each coordinate ``j``.

    Parameters
    ----------
    lower, upper : sequence of float, length record_dim
        Finite per-coordinate bounds with ``lower <= upper``.

    Raises
    ------
    NeighbouringError
        If the bounds are not finite, have different lengths, or ``lower > upper``.
    """

    lower: tuple
    upper: tuple

    def __post_init__(self) -> None:
        lo = np.atleast_1d(np.asarray(self.lower, dtype=float))
        hi = np.atleast_1d(np.asarray(self.upper, dtype=float))
        if lo.ndim != 1 or lo.shape != hi.shape or lo.size == 0:
            raise NeighbouringError(f"domain bounds must be two vectors of equal length, got {self.lower!r}, {self.upper!r}")
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
            raise NeighbouringError(f"domain bounds must be finite, got lower={self.lower!r}, upper={self.upper!r}")
        if np.any(lo > hi):
            raise NeighbouringError(f"domain lower bound exceeds upper bound: lower={lo.tolist()}, upper={hi.tolist()}")
        object.__setattr__(self, "lower", tuple(lo.tolist()))
        object.__setattr__(self, "upper", tuple(hi.tolist()))

    @classmethod
    def unit(cls, record_dim: int = 1) -> "Domain":
        """The box [0, 1]^record_dim."""
        return cls((0.0,) * record_dim, (1.0,) * record_dim)

    @property
    def record_dim(self) -> int:
        return len(self.lower)

    def contains(self, dataset: np.ndarray) -> bool:
        arr = np.asarray(dataset, dtype=float)
        return bool(np.all(arr >= np.asarray(self.lower)) and np.all(arr <= np.asarray(self.upper)))

    def random_records(self, n: int, rng: np.random.Generator, extreme_probability: float = 0.5) -> np.ndarray:
        """Draw ``n`` records: each coordinate is a box corner value with probability
        ``extreme_probability`` (violations often show at the extremes) and uniform otherwise."""
        lo, hi = np.asarray(self.lower), np.asarray(self.upper)
        uniform = lo + (hi - lo) * rng.random((n, self.record_dim))
        corner = np.where(rng.random((n, self.record_dim)) < 0.5, lo, hi)
        use_corner = rng.random((n, self.record_dim)) < extreme_probability
        return np.where(use_corner, corner, uniform)

    def to_dict(self) -> dict:
        return {"lower": list(self.lower), "upper": list(self.upper)}


@dataclass(frozen=True)
class NeighbouringPair:
    """Two neighbouring datasets, each of shape (n_records, record_dim), and how they differ."""

    d0: np.ndarray = field(repr=False)
    d1: np.ndarray = field(repr=False)
    relation: str
    description: str = ""

    def __eq__(self, other) -> bool:
        # The generated __eq__ compares the arrays with ``==`` inside a tuple comparison, which
        # raises "truth value of an array is ambiguous" for datasets of more than one value.
        if not isinstance(other, NeighbouringPair):
            return NotImplemented
        return (
            self.relation == other.relation
            and self.description == other.description
            and np.array_equal(self.d0, other.d0)
            and np.array_equal(self.d1, other.d1)
        )

    def to_dict(self) -> dict:
        return {
            "d0": self.d0.tolist(),
            "d1": self.d1.tolist(),
            "relation": self.relation,
            "description": self.description,
        }

    @classmethod
    def from_dict(cls, data: dict) -> "NeighbouringPair":
        return cls(as_dataset(data["d0"]), as_dataset(data["d1"]), data["relation"], data.get("description", ""))


class _Relation:
    name: str = ""

    def __init__(self, domain: Domain | None = None, min_size: int = 1, max_size: int = 10):
        self.domain = domain if domain is not None else Domain.unit(1)
        if int(min_size) != min_size or min_size < 0:
            raise NeighbouringError(f"min_size must be a non-negative integer, got {min_size!r}")
        if int(max_size) != max_size or max_size < min_size:
            raise NeighbouringError(f"max_size must be an integer >= min_size={min_size}, got {max_size!r}")
        self.min_size, self.max_size = int(min_size), int(max_size)

    def _check_common(self, d0, d1) -> tuple[np.ndarray, np.ndarray]:
        dim = self.domain.record_dim
        a, b = as_dataset(d0, dim), as_dataset(d1, dim)
        for label, d in (("D0", a), ("D1", b)):
            if not self.domain.contains(d):
                raise NeighbouringError(
                    f"{label} = {d.ravel().tolist()} has records outside the domain "
                    f"[{list(self.domain.lower)}, {list(self.domain.upper)}]"
                )
            if not (self.min_size <= len(d) <= self.max_size):
                raise NeighbouringError(
                    f"{label} has {len(d)} records, outside the size range [{self.min_size}, {self.max_size}]"
                )
        return a, b

    def to_dict(self) -> dict:
        return {"relation": self.name, "domain": self.domain.to_dict(), "min_size": self.min_size, "max_size": self.max_size}


class AddRemove(_Relation):
    """Add/remove-one adjacency: ``D1`` equals ``D0`` with one record added (paper 000, Def. 2.1).

    Parameters
    ----------
    domain : Domain, optional
        Record domain; default [0, 1].
    min_size, max_size : int
        Range of dataset sizes (both datasets of a pair must lie in it). Defaults 1 and 10.
    """

    name = "add-remove"

    def pair(self, d0, d1, description: str = "") -> NeighbouringPair:
        """Validate and return the pair; raises :class:`NeighbouringError` if they are not neighbours."""
        a, b = self._check_common(d0, d1)
        small, big = (a, b) if len(a) < len(b) else (b, a)
        if len(big) != len(small) + 1 or not _is_sub_multiset(small, big):
            raise NeighbouringError(
                f"datasets {a.ravel().tolist()} and {b.ravel().tolist()} are not add/remove neighbours: "
                "one must equal the other with exactly one record added"
            )
        return NeighbouringPair(a, b, self.name, description)

    def random_pair(self, rng: np.random.Generator) -> NeighbouringPair:
        """A random pair: D0 of a uniform size in [min_size, max_size - 1], D1 = D0 + one record."""
        if self.max_size < max(self.min_size, 0) + 1:
            raise NeighbouringError("add-remove needs max_size >= min_size + 1")
        n0 = int(rng.integers(self.min_size, self.max_size))  # max_size exclusive
        d0 = self.domain.random_records(n0, rng)
        extra = self.domain.random_records(1, rng)
        d1 = np.vstack([d0, extra])
        return NeighbouringPair(d0, d1, self.name, f"random {n0}+1 records")


class Replace(_Relation):
    """Replace-one adjacency: ``D1`` equals ``D0`` with one record replaced (paper 000, Remark 2.2).

    Parameters as :class:`AddRemove`.
    """

    name = "replace"

    def pair(self, d0, d1, description: str = "") -> NeighbouringPair:
        """Validate and return the pair; raises :class:`NeighbouringError` if they are not neighbours."""
        a, b = self._check_common(d0, d1)
        if len(a) != len(b) or len(a) == 0:
            raise NeighbouringError(
                f"datasets of sizes {len(a)} and {len(b)} are not replace neighbours: sizes must be equal and > 0"
            )
        # Neighbours iff the multisets differ in at most one record.
        if not _differ_in_at_most_one(a, b):
            raise NeighbouringError(
                f"datasets {a.ravel().tolist()} and {b.ravel().tolist()} are not replace neighbours: "
                "they differ in more than one record"
            )
        return NeighbouringPair(a, b, self.name, description)

    def random_pair(self, rng: np.random.Generator) -> NeighbouringPair:
        """A random pair: D0 of a uniform size in [max(min_size, 1), max_size], one record replaced."""
        if self.max_size < 1:
            raise NeighbouringError("replace needs max_size >= 1 (a record to replace)")
        n = int(rng.integers(max(self.min_size, 1), self.max_size + 1))
        d0 = self.domain.random_records(n, rng)
        d1 = d0.copy()
        i = int(rng.integers(n))
        d1[i] = self.domain.random_records(1, rng)[0]
        return NeighbouringPair(d0, d1, self.name, f"random {n} records, #{i} replaced")



def _is_sub_multiset(small: np.ndarray, big: np.ndarray) -> bool:
    remaining = [tuple(r) for r in big]
    for r in small:
        t = tuple(r)
        if t in remaining:
            remaining.remove(t)
        else:
            return False
    return True


def _differ_in_at_most_one(a: np.ndarray, b: np.ndarray) -> bool:
    remaining = [tuple(r) for r in b]
    missing = 0
    for r in a:
        t = tuple(r)
        if t in remaining:
            remaining.remove(t)
        else:
            missing += 1
    return missing <= 1


def make_relation(name: str, domain: Domain | None = None, min_size: int = 1, max_size: int = 10):
    """Build a relation by its CLI name: ``"add-remove"`` or ``"replace"``.

    Raises
    ------
    NeighbouringError
        For an unknown name.
    """
    relations = {"add-remove": AddRemove, "replace": Replace}
    if name not in relations:
        raise NeighbouringError(f"unknown neighbouring relation {name!r}; choose one of {sorted(relations)}")
    return relations[name](domain, min_size, max_size)
