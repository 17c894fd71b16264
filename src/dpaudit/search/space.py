"""The search space of neighbouring pairs, as a fixed set of numeric parameters.

Black-box optimisers (Optuna's samplers) propose points of a fixed box of named parameters; a
:class:`PairSpace` turns such a point into a :class:`~dpaudit.datasets.NeighbouringPair` that is
valid under the relation by construction, and enumerates a deterministic grid of pairs
(:meth:`PairSpace.grid`). The encoding (``docs/search.md``):

==============  ==========================================  ===================================
parameter       distribution                                meaning
==============  ==========================================  ===================================
``size``        integer in ``[n_lo, n_hi]``                 records in D0 (add/remove: the
                                                            smaller dataset; replace: both)
``r{i}_{j}``    float in ``[lo_j - m_j, hi_j + m_j]``       coordinate ``j`` of record slot
                                                            ``i`` of D0 (slots ``>= size`` are
                                                            unused)
``x_{j}``       as ``r{i}_{j}``                             coordinate ``j`` of the record that
                                                            differs (added, or the replacement)
``which``       float in ``[0, 1]``                         where it differs: insertion position
                                                            (add/remove) or replaced slot
                                                            (replace), ``floor(which * k)``
==============  ==========================================  ===================================

Coordinates are **clipped** to the domain ``[lo_j, hi_j]`` after decoding. The margin
``m_j = b (hi_j - lo_j) / (1 - 2 b)`` makes a uniform draw land exactly on ``lo_j`` with
probability ``b`` and on ``hi_j`` with probability ``b`` (``b = boundary``, default 0.25): the box's
faces, where sensitivity bugs usually show (paper 000 §5, "exploitation"), get positive mass while
the optimiser still sees a continuous parameter. Every slot is always suggested, so the space is the
same for every trial: Optuna's GP and NSGA-II samplers model parameters jointly only over a fixed
("intersection") space and fall back to independent random sampling otherwise.

References
----------
Paper 000 (DP-Auditorium) §5, dataset search; paper 002 (RényiTester) §4.4 and §5.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from ..datasets import AddRemove, Domain, NeighbouringPair, Replace
from ..errors import NeighbouringError

__all__ = ["ParamSpec", "PairSpace"]


@dataclass(frozen=True)
class ParamSpec:
    """One parameter of the search space (plain data, independent of any optimiser library).

    Attributes
    ----------
    name : str
    kind : {"int", "float"}
    low, high : float
        Inclusive bounds (``low <= high``).
    """

    name: str
    kind: str
    low: float
    high: float

    def to_optuna(self):
        """The matching ``optuna.distributions`` object (imports Optuna)."""
        from optuna.distributions import FloatDistribution, IntDistribution

        if self.kind == "int":
            return IntDistribution(int(self.low), int(self.high))
        return FloatDistribution(float(self.low), float(self.high))


class PairSpace:
    """Encoding of the neighbouring pairs of a relation as a fixed box of parameters.

    Parameters
    ----------
    relation : AddRemove or Replace (or their labelled variants)
        Supplies the record domain (a box of dimension ``record_dim``) and the size range.
        For labelled relations the last coordinate (the class) is rounded to an integer.
    boundary : float, default 0.25
        Probability, under a uniform draw of a coordinate parameter, of landing exactly on each
        face of the domain (so ``2 * boundary`` on a face in all). In ``[0, 0.5)``.

    Raises
    ------
    NeighbouringError
        For a relation this encoding does not cover (privacy-unit adjacency), or a size range
        with no pair (add/remove needs ``max_size >= min_size + 1``, replace ``max_size >= 1``).
    ValueError
        For ``boundary`` outside ``[0, 0.5)``.

    Examples
    --------
    >>> space = PairSpace(AddRemove(max_size=3))
    >>> [p.name for p in space.params]
    ['size', 'r0_0', 'r1_0', 'x_0', 'which']
    >>> space.decode({"size": 1, "r0_0": 1.3, "r1_0": 0.2, "x_0": -0.7, "which": 0.9}).d1.ravel().tolist()
    [1.0, 0.0]
    """

    def __init__(self, relation, *, boundary: float = 0.25):
        if not (0.0 <= float(boundary) < 0.5):
            raise ValueError(f"boundary must be in [0, 0.5), got {boundary!r}")
        if not isinstance(relation, (AddRemove, Replace)):
            raise NeighbouringError(
                f"the dataset search space covers add-remove and replace relations (and their labelled "
                f"variants), not {getattr(relation, 'name', type(relation).__name__)!r}; use random search"
            )
        self.relation = relation
        self.boundary = float(boundary)
        self.add_remove = isinstance(relation, AddRemove)
        dom: Domain = relation.domain
        self.lower = np.asarray(dom.lower, dtype=float)
        self.upper = np.asarray(dom.upper, dtype=float)
        self.record_dim = dom.record_dim
        self.labelled = type(relation).__name__.startswith("Labelled")
        if self.add_remove:
            if relation.max_size < relation.min_size + 1:
                raise NeighbouringError(
                    f"add-remove needs max_size >= min_size + 1, got sizes [{relation.min_size}, {relation.max_size}]"
                )
            self.size_low, self.size_high = relation.min_size, relation.max_size - 1
        else:
            if relation.max_size < 1:
                raise NeighbouringError("replace needs max_size >= 1 (a record to replace)")
            self.size_low, self.size_high = max(relation.min_size, 1), relation.max_size
        self.slots = self.size_high
        width = self.upper - self.lower
        margin = self.boundary * width / (1.0 - 2.0 * self.boundary)
        self._lo_enc = self.lower - margin
        self._hi_enc = self.upper + margin
        params = []
        if self.size_high > self.size_low:
            params.append(ParamSpec("size", "int", self.size_low, self.size_high))
        coords = [j for j in range(self.record_dim) if width[j] > 0]
        self._coords = coords
        for i in range(self.slots):
            for j in coords:
                params.append(ParamSpec(f"r{i}_{j}", "float", float(self._lo_enc[j]), float(self._hi_enc[j])))
        for j in coords:
            params.append(ParamSpec(f"x_{j}", "float", float(self._lo_enc[j]), float(self._hi_enc[j])))
        params.append(ParamSpec("which", "float", 0.0, 1.0))
        self.params: tuple[ParamSpec, ...] = tuple(params)

    # ------------------------------------------------------------------ description
    def to_dict(self) -> dict:
        """JSON description: the relation and the parameters."""
        return {
            "relation": self.relation.to_dict(),
            "boundary": self.boundary,
            "params": [(p.name, p.kind, p.low, p.high) for p in self.params],
        }

    def optuna_distributions(self) -> dict:
        """``{name: optuna distribution}`` for ``study.ask(fixed_distributions=...)``."""
        return {p.name: p.to_optuna() for p in self.params}

    # ------------------------------------------------------------------ decoding
    def _record(self, params: dict, prefix: str) -> np.ndarray:
        rec = self.lower.copy()
        for j in self._coords:
            rec[j] = min(max(float(params[f"{prefix}_{j}"]), self.lower[j]), self.upper[j])
        if self.labelled:
            rec[-1] = min(max(round(rec[-1]), math.ceil(self.lower[-1])), math.floor(self.upper[-1]))
        return rec

    def decode(self, params: dict, description: str = "") -> NeighbouringPair:
        """The pair encoded by ``params`` (a mapping holding every parameter of :attr:`params`).

        Parameters
        ----------
        params : dict
            ``{name: value}``; values outside a coordinate's domain are clipped to it.
        description : str, optional
            Prefix of the pair's description (e.g. the finder's name).

        Returns
        -------
        NeighbouringPair
            D0 of shape ``(size, record_dim)``; add/remove: D1 of shape ``(size + 1, record_dim)``
            with the record ``x`` inserted at position ``floor(which * (size + 1))``; replace: D1
            equal to D0 with slot ``floor(which * size)`` replaced by ``x``. Validated by the
            relation's ``pair``.

        Raises
        ------
        KeyError
            If a parameter is missing.
        """
        size = int(params["size"]) if "size" in params else self.size_low
        if not (self.size_low <= size <= self.size_high):
            raise ValueError(f"size must be in [{self.size_low}, {self.size_high}], got {size!r}")
        d0 = np.array([self._record(params, f"r{i}") for i in range(size)], dtype=float).reshape(size, self.record_dim)
        x = self._record(params, "x")
        u = min(max(float(params["which"]), 0.0), 1.0)
        prefix = f"{description}: " if description else ""
        if self.add_remove:
            pos = min(int(u * (size + 1)), size)
            d1 = np.insert(d0, pos, x, axis=0)
            text = f"{prefix}{size}+1 records, record added at #{pos}"
        else:
            pos = min(int(u * size), size - 1)
            d1 = d0.copy()
            d1[pos] = x
            text = f"{prefix}{size} record{'' if size == 1 else 's'}, #{pos} replaced"
        return self.relation.pair(d0, d1, description=text)

    # ------------------------------------------------------------------ grid
    def levels(self, resolution: int) -> np.ndarray:
        """Grid values of each coordinate at ``resolution`` k >= 1: ``2^(k-1) + 1`` evenly spaced
        points from ``lo`` to ``hi`` (k = 1: the two faces; k = 2 adds the midpoint...).

        Returns
        -------
        ndarray, shape (2^(k-1) + 1, record_dim)
        """
        k = int(resolution)
        if k < 1:
            raise ValueError(f"resolution must be >= 1, got {resolution!r}")
        t = np.linspace(0.0, 1.0, 2 ** (k - 1) + 1)
        # faces first, then the interior points (so each resolution starts with what is new).
        order = np.concatenate([[0, len(t) - 1], np.arange(1, len(t) - 1)])
        vals = self.lower[None, :] + t[order, None] * (self.upper - self.lower)[None, :]
        if self.labelled:
            vals[:, -1] = np.round(vals[:, -1])
        return vals

    def grid(self, max_resolution: int = 4, description: str = "grid") -> Iterator[NeighbouringPair]:
        """Deterministic grid of pairs: coarse lattice first, small datasets first, largest change first.

        For resolution ``k = 1..max_resolution`` (grid values :meth:`levels`), for each size
        ``n`` from the smallest: every multiset of ``n`` lattice records as D0 (permutations are
        skipped, the mechanisms of interest being functions of the multiset) with every lattice
        record as the one that differs (appended for add/remove; replacing each distinct record
        for replace). Within a block of equal ``(k, n)`` the pairs come in decreasing order of the
        distance between the differing record and D0's mean (for replace: between the replaced
        and the new record), so the datasets that change the most come first. Pairs already
        produced at a coarser resolution are skipped. This is paper 000 §5's "divide the search
        space over a grid and deterministically evaluate the test over the grid", ordered by the
        "exploitation" heuristic of the same section (extreme datasets first).

        Yields
        ------
        NeighbouringPair
            The decoding (:meth:`decode`) of :meth:`grid_params`.
        """
        for i, params in enumerate(self.grid_params(max_resolution)):
            yield self.decode(params, description=f"{description} #{i}")

    def grid_params(self, max_resolution: int = 4) -> Iterator[dict]:
        """The points of :meth:`grid` as parameters of this space (for an optimiser's initial
        design, e.g. ``study.enqueue_trial``). Unused record slots hold the domain's lower
        corner."""
        seen: set = set()
        for k in range(1, int(max_resolution) + 1):
            points = _cartesian_in_level_order(self.levels(k))
            for n in range(self.size_low, self.size_high + 1):
                block = []
                for combo in itertools.combinations_with_replacement(range(len(points)), n):
                    rows = [points[c] for c in combo]
                    base = tuple(sorted(rows))
                    mean = np.mean(np.asarray(rows, dtype=float), axis=0) if rows else None
                    if self.add_remove:
                        for extra in points:
                            sig = (base, extra)
                            if sig in seen:
                                continue
                            seen.add(sig)
                            dist = 0.0 if mean is None else float(np.abs(np.asarray(extra) - mean).sum())
                            block.append((-dist, len(block), self._params(rows, extra, 1.0)))
                    else:
                        for pos in sorted({rows.index(r) for r in rows}):
                            for extra in points:
                                if extra == rows[pos]:
                                    continue
                                new = list(rows)
                                new[pos] = extra
                                sig = frozenset([base, tuple(sorted(new))])
                                if sig in seen:
                                    continue
                                seen.add(sig)
                                dist = float(np.abs(np.asarray(extra) - np.asarray(rows[pos])).sum())
                                block.append((-dist, len(block), self._params(rows, extra, (pos + 0.5) / n)))
                block.sort(key=lambda item: (item[0], item[1]))
                for _, _, params in block:
                    yield params

    def _params(self, rows, extra, which: float) -> dict:
        params: dict = {}
        if any(p.name == "size" for p in self.params):
            params["size"] = len(rows)
        for i in range(self.slots):
            rec = rows[i] if i < len(rows) else tuple(self.lower.tolist())
            for j in self._coords:
                params[f"r{i}_{j}"] = float(rec[j])
        for j in self._coords:
            params[f"x_{j}"] = float(extra[j])
        params["which"] = float(which)
        return params


def _cartesian_in_level_order(vals: np.ndarray) -> list:
    """All records whose coordinates are grid values, ordered by the rank of their coordinates
    in :meth:`PairSpace.levels` order (records made of face values first)."""
    per_coord = []
    for j in range(vals.shape[1]):
        seen, col = set(), []
        for v in vals[:, j].tolist():
            if v not in seen:
                seen.add(v)
                col.append(v)
        per_coord.append(col)
    ranked = sorted(
        itertools.product(*[list(enumerate(c)) for c in per_coord]),
        key=lambda items: (max(i for i, _ in items), [i for i, _ in items]),
    )
    return [tuple(v for _, v in items) for items in ranked]
