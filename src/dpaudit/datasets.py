"""Datasets and neighbouring relations over a bounded record domain.

A dataset is an array of shape ``(n_records, record_dim)``; every record lies in a box
``domain.lower <= record <= domain.upper``. Two relations are provided:

* :class:`AddRemove` (unbounded DP): ``D1`` is ``D0`` with one record added.
* :class:`Replace` (bounded DP, "swap"): ``D1`` is ``D0`` with one record replaced.

Both are symmetric, so a tester checks both orders ``(D0, D1)`` and ``(D1, D0)``.
References: paper 000, Definition 2.1 and Remark 2.2.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .errors import NeighbouringError

__all__ = [
    "ADVERSARIAL_KINDS",
    "AcceptedInputs",
    "AddRemove",
    "Column",
    "InputSpace",
    "Domain",
    "LabelledAddRemove",
    "LabelledReplace",
    "NeighbouringPair",
    "PrivacyUnitAddRemove",
    "PrivacyUnitDomain",
    "Replace",
    "DEFAULT_MAX_SIZE",
    "adversarial_value",
    "as_dataset",
    "make_relation",
]


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


DEFAULT_MAX_SIZE = 10
"""Largest dataset size of a relation when none is given (``--max-size``)."""


class _Relation:
    name: str = ""
    #: Smallest dataset size when none is given (``--min-size``): 0 for add/remove relations, so
    #: that audits include the empty dataset (``[]`` vs ``[x]``, a classic corner); 1 for replace.
    default_min_size: int = 0

    def __init__(self, domain: Domain | None = None, min_size: int | None = None, max_size: int = DEFAULT_MAX_SIZE):
        self.domain = domain if domain is not None else Domain.unit(1)
        if min_size is None:
            min_size = self.default_min_size
        if isinstance(min_size, bool) or not isinstance(min_size, (int, float, np.integer)) or int(min_size) != min_size or min_size < 0:
            raise NeighbouringError(f"min_size must be a non-negative integer, got {min_size!r}")
        if isinstance(max_size, bool) or not isinstance(max_size, (int, float, np.integer)) or int(max_size) != max_size or max_size < min_size:
            raise NeighbouringError(f"max_size must be an integer >= min_size={min_size}, got {max_size!r}")
        self.min_size, self.max_size = int(min_size), int(max_size)

    #: What one record is called in messages ("a record", "records"; "an example", "examples").
    _one, _many = "a record", "records"

    def _random_records(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` random records of the domain, shape (n, record_dim)."""
        return self.domain.random_records(n, rng)

    def _check_size(self, label: str, size: int, units: str) -> None:
        """Raise :class:`NeighbouringError` if ``size`` is outside ``[min_size, max_size]``; the
        message names the option to change (``--min-size``/``--max-size``, ``min_size=``/``max_size=``
        in Python) and the value that would admit the dataset."""
        if size < self.min_size:
            raise NeighbouringError(
                f"{label} has {size} {units}, outside the size range [{self.min_size}, {self.max_size}]: "
                f"give --min-size {size} (min_size={size}) to include it"
            )
        if size > self.max_size:
            raise NeighbouringError(
                f"{label} has {size} {units}, outside the size range [{self.min_size}, {self.max_size}]: "
                f"give --max-size {size} (max_size={size}) to include it"
            )

    def _check_common(self, d0, d1) -> tuple[np.ndarray, np.ndarray]:
        dim = self.domain.record_dim
        a, b = as_dataset(d0, dim), as_dataset(d1, dim)
        for label, d in (("D0", a), ("D1", b)):
            if not self.domain.contains(d):
                raise NeighbouringError(
                    f"{label} = {d.ravel().tolist()} has records outside the domain "
                    f"[{list(self.domain.lower)}, {list(self.domain.upper)}]"
                )
            self._check_size(label, len(d), "records")
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
        Range of dataset sizes (both datasets of a pair must lie in it; ``--min-size`` and
        ``--max-size``). Defaults 0 and 10: the empty dataset is included unless excluded.
    """

    name = "add-remove"

    def pair(self, d0, d1, description: str = "") -> NeighbouringPair:
        """Validate and return the pair; raises :class:`NeighbouringError` if they are not neighbours."""
        a, b = self._check_common(d0, d1)
        small, big = (a, b) if len(a) < len(b) else (b, a)
        if len(big) != len(small) + 1 or _multiset_difference(small, big) is None:
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
        d0 = self._random_records(n0, rng)
        extra = self._random_records(1, rng)
        d1 = np.vstack([d0, extra])
        return NeighbouringPair(d0, d1, self.name, f"random {n0}+1 {self._many}")


class Replace(_Relation):
    """Replace-one adjacency: ``D1`` equals ``D0`` with one record replaced (paper 000, Remark 2.2).

    Parameters as :class:`AddRemove`, except that the default ``min_size`` is 1 (a replace pair
    needs a record to replace).
    """

    name = "replace"
    default_min_size = 1

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
            raise NeighbouringError(f"replace needs max_size >= 1 ({self._one} to replace)")
        n = int(rng.integers(max(self.min_size, 1), self.max_size + 1))
        d0 = self._random_records(n, rng)
        d1 = d0.copy()
        i = int(rng.integers(n))
        d1[i] = self._random_records(1, rng)[0]
        return NeighbouringPair(d0, d1, self.name, f"random {n} {self._many if n != 1 else self._one.split(' ', 1)[1]}, "
                                                   f"#{i} replaced")



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


def make_relation(name: str, domain: Domain | None = None, min_size: int | None = None, max_size: int | None = None):
    """Build a relation by its CLI name: ``"add-remove"`` or ``"replace"``, or one of the
    structured relations ``"privacy-unit"``, ``"labelled-add-remove"``, ``"labelled-replace"``.

    ``min_size``/``max_size`` (None: the relation's defaults, 0 for add/remove relations and 1 for
    replace, and 10) bound the dataset sizes of every pair, searched or given.

    Raises
    ------
    NeighbouringError
        For an unknown name.
    """
    relations = {"add-remove": AddRemove, "replace": Replace, **_STRUCTURED_RELATIONS}
    if name not in relations:
        raise NeighbouringError(f"unknown neighbouring relation {name!r}; choose one of {sorted(relations)}")
    return relations[name](domain, min_size, DEFAULT_MAX_SIZE if max_size is None else max_size)


# =========================================================================== structured data
# Relations for the adapters of dpaudit.mechanisms.adapters: rows that belong to privacy units
# (PipelineDP) and labelled examples (Opacus). Datasets stay float arrays of shape
# (n_records, record_dim); the structure lives in the relation and its domain.


def _integers_in(lo: float, hi: float) -> tuple[int, int]:
    """The smallest and largest integers in [lo, hi] (``first > last`` if there are none)."""
    return int(np.ceil(lo)), int(np.floor(hi))


def _multiset_difference(small: np.ndarray, big: np.ndarray) -> np.ndarray | None:
    """Rows of ``big`` left after removing one copy of each row of ``small``; None if some row
    of ``small`` is not in ``big``. Both of shape (n, record_dim); returns shape (m, record_dim)."""
    remaining = [tuple(r) for r in big]
    for r in small:
        t = tuple(r)
        if t in remaining:
            remaining.remove(t)
        else:
            return None
    return np.array(remaining, dtype=float).reshape(len(remaining), big.shape[1])


@dataclass(frozen=True)
class PrivacyUnitDomain(Domain):
    """A box of rows ``(privacy_id, column_1, ..., column_k)`` grouped into privacy units.

    Each row belongs to the privacy unit (user, household, ...) named by its column 0. A dataset
    of shape ``(n_rows, record_dim)`` holds the rows of several units; one unit may own several
    rows, at most ``max_rows_per_unit``. This is the input of user-level DP aggregations such as
    PipelineDP's: for rows ``(privacy_id, partition, value)`` use
    ``PrivacyUnitDomain((0, 0, 0.0), (99, 2, 1.0), integer_columns=(0, 1))``.

    Parameters
    ----------
    lower, upper : sequence of float, length record_dim >= 1
        Per-column bounds, as in :class:`Domain`; column 0 holds the privacy-unit id.
    integer_columns : sequence of int, default (0,)
        Columns whose values are integers (ids, partition keys). Column 0 is always one.
    max_rows_per_unit : int, default 3
        Largest number of rows a single privacy unit may contribute, ``>= 1``.

    Raises
    ------
    NeighbouringError
        If the box is invalid (see :class:`Domain`), a column index is not in
        ``[0, record_dim)``, an integer column's bounds contain no integer, or
        ``max_rows_per_unit`` is not a positive integer.
    """

    integer_columns: tuple = (0,)
    max_rows_per_unit: int = 3

    def __post_init__(self) -> None:
        super().__post_init__()
        dim = len(self.lower)
        try:
            cols = {0} | {int(c) for c in self.integer_columns if int(c) == c}
            bad = [c for c in self.integer_columns if int(c) != c or not 0 <= int(c) < dim]
        except (TypeError, ValueError):
            raise NeighbouringError(
                f"integer_columns must be column indices, got {self.integer_columns!r}"
            ) from None
        if bad:
            raise NeighbouringError(
                f"integer_columns {list(self.integer_columns)!r} has {bad[0]!r}, not a column index in "
                f"[0, {dim}) for rows of dimension {dim}"
            )
        for c in sorted(cols):
            first, last = _integers_in(self.lower[c], self.upper[c])
            if first > last:
                raise NeighbouringError(
                    f"integer column {c} has bounds [{self.lower[c]:g}, {self.upper[c]:g}], which contain no integer"
                )
        k = self.max_rows_per_unit
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise NeighbouringError(f"max_rows_per_unit must be a positive integer, got {k!r}")
        object.__setattr__(self, "integer_columns", tuple(sorted(cols)))
        object.__setattr__(self, "max_rows_per_unit", int(k))

    @classmethod
    def from_domain(cls, domain: Domain, **kwargs) -> "PrivacyUnitDomain":
        """``domain`` itself if it is a PrivacyUnitDomain, else its box with ``kwargs`` (defaults)."""
        if isinstance(domain, PrivacyUnitDomain):
            return domain
        return cls(domain.lower, domain.upper, **kwargs)

    @property
    def num_ids(self) -> int:
        """Number of distinct privacy-unit ids the domain allows (integers in column 0's bounds)."""
        first, last = _integers_in(self.lower[0], self.upper[0])
        return last - first + 1

    def contains(self, dataset: np.ndarray) -> bool:
        """True if every row is in the box and has integer values in the integer columns."""
        arr = np.asarray(dataset, dtype=float)
        if not super().contains(arr):
            return False
        if arr.size == 0:
            return True
        ints = arr.reshape(-1, len(self.lower))[:, list(self.integer_columns)]
        return bool(np.all(ints == np.round(ints)))

    def random_records(self, n: int, rng: np.random.Generator, extreme_probability: float = 0.5) -> np.ndarray:
        """Draw ``n`` rows as :meth:`Domain.random_records`, with uniform integers in the integer
        columns (column 0, the id, is drawn too; relations overwrite it). Shape (n, record_dim)."""
        rows = super().random_records(n, rng, extreme_probability)
        for c in self.integer_columns:
            first, last = _integers_in(self.lower[c], self.upper[c])
            rows[:, c] = rng.integers(first, last + 1, size=n)
        return rows

    def to_dict(self) -> dict:
        return {
            **super().to_dict(),
            "integer_columns": list(self.integer_columns),
            "max_rows_per_unit": self.max_rows_per_unit,
        }


class PrivacyUnitAddRemove(_Relation):
    """User-level add/remove adjacency: ``D1`` is ``D0`` plus **all** rows of one new privacy unit.

    Datasets are arrays of rows ``(privacy_id, ...)`` (see :class:`PrivacyUnitDomain`). Two
    datasets are neighbours when one equals the other (as multisets of rows) plus one or more
    rows that all carry the same privacy id, an id that does not occur in the smaller dataset.
    Removing a single row of a unit that has others, or rows of two units, is not a neighbour.
    This is the adjacency of user-level DP (PipelineDP, Google's DP libraries: "privacy unit"),
    the record-level :class:`AddRemove` applied to units rather than rows.

    Parameters
    ----------
    domain : PrivacyUnitDomain or Domain, optional
        Row domain. A plain :class:`Domain` is read as a PrivacyUnitDomain with default
        ``integer_columns=(0,)`` and ``max_rows_per_unit=3``. Default: rows
        ``(privacy_id, partition, value)`` with ids 0..99, partitions 0..2, values in [0, 1].
    min_size, max_size : int
        Range of the number of **privacy units** (not rows) in a dataset. Defaults 0 (the empty
        dataset included) and 10.

    Raises
    ------
    NeighbouringError
        If the sizes are invalid, or the id range holds fewer than ``max_size`` ids.

    References
    ----------
    Wilson et al., "Differentially Private SQL with Bounded User Contribution", PoPETs 2020,
    §2 (user-level neighbouring datasets).
    """

    name = "privacy-unit"

    def __init__(self, domain: Domain | None = None, min_size: int | None = None, max_size: int = DEFAULT_MAX_SIZE):
        if domain is None:
            domain = PrivacyUnitDomain((0.0, 0.0, 0.0), (99.0, 2.0, 1.0), integer_columns=(0, 1))
        super().__init__(PrivacyUnitDomain.from_domain(domain), min_size, max_size)
        if self.domain.num_ids < self.max_size:
            raise NeighbouringError(
                f"max_size={self.max_size} privacy units need as many distinct ids, but the id column's "
                f"bounds [{self.domain.lower[0]:g}, {self.domain.upper[0]:g}] hold {self.domain.num_ids}"
            )

    def _check_rows(self, data, label: str) -> np.ndarray:
        dom = self.domain
        arr = as_dataset(data, dom.record_dim)
        if arr.size and not Domain.contains(dom, arr):
            raise NeighbouringError(
                f"{label} = {arr.tolist()} has rows outside the domain [{list(dom.lower)}, {list(dom.upper)}]"
            )
        if arr.size and not dom.contains(arr):
            raise NeighbouringError(
                f"{label} = {arr.tolist()} has non-integer values in integer column(s) {list(dom.integer_columns)}"
            )
        ids, counts = np.unique(arr[:, 0], return_counts=True) if len(arr) else (np.empty(0), np.empty(0))
        if len(ids) and counts.max() > dom.max_rows_per_unit:
            i = int(np.argmax(counts))
            raise NeighbouringError(
                f"{label}: privacy unit {ids[i]:g} has {int(counts[i])} rows, more than "
                f"max_rows_per_unit={dom.max_rows_per_unit}"
            )
        self._check_size(label, len(ids), "privacy units")
        return arr

    def pair(self, d0, d1, description: str = "") -> NeighbouringPair:
        """Validate and return the pair (rows of shape (n_rows, record_dim) each).

        Raises
        ------
        NeighbouringError
            If a dataset is outside the domain or size range, or the two are not neighbours:
            the larger must equal the smaller plus all rows of exactly one privacy unit that is
            absent from the smaller.
        """
        a, b = self._check_rows(d0, "D0"), self._check_rows(d1, "D1")
        small, big = (a, b) if len(a) < len(b) else (b, a)
        extra = None if len(a) == len(b) else _multiset_difference(small, big)
        if extra is None:
            raise NeighbouringError(
                f"datasets {a.tolist()} and {b.tolist()} are not privacy-unit neighbours: one must equal "
                "the other plus all rows of one privacy unit"
            )
        extra_ids = np.unique(extra[:, 0])
        if len(extra_ids) != 1:
            raise NeighbouringError(
                f"datasets differ by rows of {len(extra_ids)} privacy units {extra_ids.tolist()}; "
                "privacy-unit neighbours differ by the rows of exactly one"
            )
        unit = extra_ids[0]
        if np.any(small[:, 0] == unit):
            raise NeighbouringError(
                f"datasets differ by {len(extra)} of the rows of privacy unit {unit:g}, which also has rows in "
                "both; privacy-unit neighbours differ by all rows of one unit"
            )
        if not description:
            verb = "added" if big is b else "removed"
            description = f"privacy unit {unit:g} ({len(extra)} row{'s' if len(extra) > 1 else ''}) {verb}"
        return NeighbouringPair(a, b, self.name, description)

    def random_pair(self, rng: np.random.Generator) -> NeighbouringPair:
        """A random pair: D0 with a uniform number of units in [min_size, max_size - 1], each with
        1..max_rows_per_unit random rows and a distinct id; D1 = D0 plus one more unit's rows."""
        if self.max_size < self.min_size + 1:
            raise NeighbouringError("privacy-unit add/remove needs max_size >= min_size + 1")
        dom = self.domain
        n0 = int(rng.integers(self.min_size, self.max_size))
        first_id, _ = _integers_in(dom.lower[0], dom.upper[0])
        ids = first_id + rng.choice(dom.num_ids, size=n0 + 1, replace=False)
        units = []
        for uid in ids:
            rows = dom.random_records(int(rng.integers(1, dom.max_rows_per_unit + 1)), rng)
            rows[:, 0] = uid
            units.append(rows)
        d0 = np.vstack(units[:-1]) if n0 else np.empty((0, dom.record_dim))
        d1 = np.vstack(units)
        return NeighbouringPair(
            d0, d1, self.name, f"random {n0} units + unit {ids[-1]:g} ({len(units[-1])} rows)"
        )


class _LabelledExamples:
    """Checks and draws labelled examples ``(x_1, ..., x_d, label)``: the label is the last
    column and an integer within the domain's bounds for it. Mixed into a relation (add/remove or
    replace), whose pairs and random pairs it restricts to labelled examples."""

    domain: Domain
    _one, _many = "an example", "examples"

    def __init__(self, domain: Domain | None = None, min_size: int | None = None, max_size: int = DEFAULT_MAX_SIZE):
        super().__init__(domain if domain is not None else Domain((0.0, 0.0), (1.0, 1.0)), min_size, max_size)
        self._check_labelled_domain()

    def pair(self, d0, d1, description: str = "") -> NeighbouringPair:
        """As the relation's ``pair``; also raises :class:`NeighbouringError` for a non-integer label."""
        self._check_labels(d0, "D0")
        self._check_labels(d1, "D1")
        return super().pair(d0, d1, description)

    def _check_labelled_domain(self) -> None:
        dom = self.domain
        if dom.record_dim < 2:
            raise NeighbouringError(
                f"labelled examples need at least one feature and a label (record_dim >= 2), got domain "
                f"of dimension {dom.record_dim}"
            )
        lo, hi = dom.lower[-1], dom.upper[-1]
        if lo != round(lo) or hi != round(hi):
            raise NeighbouringError(f"the label bounds must be integers (class indices), got [{lo:g}, {hi:g}]")

    def _check_labels(self, data, label: str) -> None:
        arr = as_dataset(data, self.domain.record_dim)
        if arr.size:
            labels = arr[:, -1]
            bad = labels[labels != np.round(labels)]
            if bad.size:
                raise NeighbouringError(f"{label} has a non-integer label {bad[0]:g} (the last column is the class)")

    def _random_records(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` random examples: features uniform in the domain, integer labels uniform."""
        rows = self.domain.random_records(n, rng)
        rows[:, -1] = rng.integers(int(self.domain.lower[-1]), int(self.domain.upper[-1]) + 1, size=n)
        return rows


class LabelledAddRemove(_LabelledExamples, AddRemove):
    """Add/remove-one adjacency on labelled examples ``(x_1, ..., x_d, label)``, for learning
    mechanisms (DP-SGD): one example, features and label together, is added or removed.

    Parameters
    ----------
    domain : Domain, optional
        Box of the examples, record_dim = d + 1; the last coordinate is the label, whose bounds
        must be integers (class indices ``lower[-1]..upper[-1]``). Default: one feature in
        [0, 1] and labels {0, 1}.
    min_size, max_size : int
        Range of the number of examples. Defaults 0 (the empty dataset included) and 10.

    Raises
    ------
    NeighbouringError
        If the domain has no feature column or non-integer label bounds, or sizes are invalid.
    """

    name = "labelled-add-remove"


class LabelledReplace(_LabelledExamples, Replace):
    """Replace-one adjacency on labelled examples ``(x_1, ..., x_d, label)``: one example (features
    and label) is replaced by another. Parameters and errors as :class:`LabelledAddRemove`."""

    name = "labelled-replace"


_STRUCTURED_RELATIONS = {
    PrivacyUnitAddRemove.name: PrivacyUnitAddRemove,
    LabelledAddRemove.name: LabelledAddRemove,
    LabelledReplace.name: LabelledReplace,
}
"""Relations :func:`make_relation` builds by name besides ``add-remove`` and ``replace``."""


# ------------------------------------------------------------------ adversarial inputs
# What a target's API accepts at the edges (dpaudit.search.adversarial builds the pairs, and
# dpaudit.audit.adversarial runs them); declared here, beside the domain, so that mechanisms can
# carry it without importing the search.

ADVERSARIAL_KINDS = ("nan", "+inf", "-inf", "-0.0", "subnormal", "max-double", "-max-double", "above-bounds", "below-bounds",
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
        raise ValueError(f"{kind!r} is not a single adversarial value; kinds: {', '.join(ADVERSARIAL_KINDS)}")
    return values[kind]


@dataclass(frozen=True)
class AcceptedInputs:
    """The adversarial inputs a target's API accepts: declared with the target, tried by the audit.

    Attributes
    ----------
    kinds : tuple of str
        Members of :data:`ADVERSARIAL_KINDS` to try (default: all). Leave a kind out when the API's documented
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
    unit_pairs : tuple of (kind, d0, d1, description), optional
        Structural pairs of the target's privacy-unit relation, tried after the value kinds: e.g. a
        unit contributing to more partitions, or more rows per partition, than the contribution
        bounds given to the library (the library must bound it), a unit whose rows are alone in an
        otherwise empty partition, the empty dataset against one unit. ``kind`` is a short name of
        the case (not one of :data:`ADVERSARIAL_KINDS`), ``d0``/``d1`` sequences of records of the
        domain's dimension that are neighbours under the target's relation (under add/remove
        ``d1`` is ``d0`` plus one unit), ``description`` the case in words. The screen runs a
        distributional check on them besides the non-finite and exact-value ones
        (:func:`dpaudit.audit.adversarial.screen_pair`).
    space : InputSpace, optional
        The input space the search of :mod:`dpaudit.search.input_space` explores: the record's
        columns and their roles (values, weights, labels, partition keys, privacy units), the
        dtypes the API accepts, and the public parameters it may set (bounds, dtype arguments),
        with a builder of the target under them. Default: one value column per coordinate of the
        relation's domain, float64 records, the target as it is.
    """

    kinds: tuple = ADVERSARIAL_KINDS
    record: Callable | None = field(default=None, compare=False)
    base: tuple | None = None
    note: str = ""
    unit_pairs: tuple = field(default=(), compare=False)
    space: "InputSpace | None" = field(default=None, compare=False)

    def __post_init__(self) -> None:
        unknown = [k for k in self.kinds if k not in ADVERSARIAL_KINDS]
        if unknown:
            raise ValueError(f"unknown adversarial kinds {unknown}; known: {', '.join(ADVERSARIAL_KINDS)}")
        for entry in self.unit_pairs:
            if len(entry) != 4 or not isinstance(entry[0], str) or not isinstance(entry[3], str):
                raise ValueError(f"a unit pair must be (kind, d0, d1, description), got {entry!r}")
            if entry[0] in ADVERSARIAL_KINDS:
                raise ValueError(f"unit pair kind {entry[0]!r} clashes with an adversarial value kind")


COLUMN_ROLES = ("value", "weight", "label", "partition", "unit")
"""What a record column carries (:class:`Column`): the values the statistic is computed on, or
per-record data besides them (a weight, a class label, a partition key, a privacy-unit id)."""


@dataclass(frozen=True)
class Column:
    """One column of a record, as the search of :mod:`dpaudit.search.input_space` draws it.

    Parameters
    ----------
    role : {"value", "weight", "label", "partition", "unit"}
        What the column carries (:data:`COLUMN_ROLES`). Value columns get the special values and
        magnitudes of the search; the others get the adversarial values of their role (a weight of
        0, -1, 2, 10, 1e6 or NaN; a label or partition key outside the declared ones; ...).
    lower, upper : float
        The ordinary range (a value's documented bounds; the declared weights, labels or keys).
    integer : bool
        Ordinary values are integers (labels, keys, ids, integer values).
    name : str
        For reports (e.g. ``"weights"``).

    Raises
    ------
    ValueError
        For an unknown role or ``lower > upper`` (or a non-finite bound).
    """

    role: str = "value"
    lower: float = 0.0
    upper: float = 1.0
    integer: bool = False
    name: str = ""

    def __post_init__(self) -> None:
        if self.role not in COLUMN_ROLES:
            raise ValueError(f"unknown column role {self.role!r}; roles: {', '.join(COLUMN_ROLES)}")
        if not (np.isfinite(self.lower) and np.isfinite(self.upper)) or self.lower > self.upper:
            raise ValueError(f"column bounds must be finite with lower <= upper, got [{self.lower!r}, {self.upper!r}]")


INPUT_DTYPES = ("float64", "float32", "int64", "int32", "bool")
"""Dtypes a dataset may be passed as (:attr:`InputSpace.dtypes`)."""


@dataclass(frozen=True)
class InputSpace:
    """What a target's API accepts beyond a box of float records: declared with the target, searched by
    :func:`dpaudit.audit.input_space.search`.

    Parameters
    ----------
    columns : tuple of Column
        The record layout (empty: one value column per coordinate of the relation's domain, bounded
        by it). A record may repeat columns (e.g. a privacy unit holding four ``(partition,
        value)`` contributions).
    build : callable, optional
        ``build(**config) -> Mechanism``: the target under public parameters ``config`` (the
        ``bounds`` keyword and each ``choices`` keyword), taking datasets of this layout. Without it
        the target itself is used and only the default configuration is searched.
    bounds : str, optional
        The keyword of ``build`` that takes the public ``(lower, upper)`` bounds of the value
        columns; the search draws them near the limits of the integer and float types
        (``bound_kinds``) with records at them.
    default_bounds : tuple, optional
        The bounds of the default configuration (the target's own), e.g. ``(0.0, 1.0)``.
    bound_kinds : tuple of {"float", "int"}
        Which number types the bounds may be (integer bounds make integer records, passed as int64).
    choices : tuple of (keyword, tuple of values)
        Other public parameters of ``build`` the search may set (the first value is the default),
        e.g. ``(("dtype", (None, "int64")),)``.
    dtypes : tuple of str
        Dtypes the API documents for the dataset (members of :data:`INPUT_DTYPES`; float64 first).
    max_size : int, optional
        Largest dataset the search builds (default: the relation's ``max_size``, at most 12).
    max_bound : float, optional
        Largest magnitude of a bound the search tries, for an API that does not return on larger
        ones (a hang is no privacy finding, and a call stuck in C code cannot be interrupted); say why
        in ``note``.
    note : str
        What the declaration rests on (the library's documented parameters), for reports.

    Raises
    ------
    ValueError
        For an unknown dtype or bound kind, ``bounds``/``choices`` without ``build``, or a choice
        without values.
    """

    columns: tuple = ()
    build: Callable | None = field(default=None, compare=False)
    bounds: str | None = None
    default_bounds: tuple | None = None
    bound_kinds: tuple = ("float", "int")
    choices: tuple = ()
    dtypes: tuple = ("float64",)
    max_size: int | None = None
    max_bound: float | None = None
    note: str = ""

    def __post_init__(self) -> None:
        if self.max_bound is not None and not self.max_bound > 0:
            raise ValueError(f"max_bound must be positive, got {self.max_bound!r}")
        bad = [d for d in self.dtypes if d not in INPUT_DTYPES]
        if bad or not self.dtypes:
            raise ValueError(f"unknown dtypes {bad or list(self.dtypes)}; known: {', '.join(INPUT_DTYPES)}")
        bad = [k for k in self.bound_kinds if k not in ("float", "int")]
        if bad or not self.bound_kinds:
            raise ValueError(f"bound_kinds must be 'float' and/or 'int', got {list(self.bound_kinds)}")
        if (self.bounds is not None or self.choices) and self.build is None:
            raise ValueError("an input space with bounds or choices needs build(**config) to make the target")
        for entry in self.choices:
            if len(entry) != 2 or not isinstance(entry[0], str) or not len(entry[1]):
                raise ValueError(f"a choice must be (keyword, (value, ...)) with at least one value, got {entry!r}")
        for c in self.columns:
            if not isinstance(c, Column):
                raise ValueError(f"columns must be Column objects, got {c!r}")

    def default_config(self) -> dict:
        """The configuration of the target as declared: its default bounds and each choice's first value."""
        config = {k: v[0] for k, v in self.choices}
        if self.bounds is not None and self.default_bounds is not None:
            config[self.bounds] = tuple(self.default_bounds)
        return config
