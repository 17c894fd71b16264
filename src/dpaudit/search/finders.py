"""Dataset finders with an ask/tell interface.

A finder proposes neighbouring pairs (``ask``) and is told the objective each achieved (``tell``);
it never runs the loop itself, so the same finder works in a sequential loop, a parallel one or
after a resume. ``capacity`` is the number of pairs it can propose (``None``: unbounded) and is
known before the audit starts, so the failure probability can be split over the trials in advance.
"""

from __future__ import annotations

from typing import Protocol, Sequence

import numpy as np

from ..datasets import NeighbouringPair

__all__ = ["ChainFinder", "Finder", "GridFinder", "RandomFinder"]


class Finder(Protocol):
    name: str
    capacity: int | None

    def ask(self) -> NeighbouringPair | None:
        """Next pair to test, or None when exhausted."""

    def tell(self, pair: NeighbouringPair, objective: float) -> None:
        """Record the objective (divergence estimate) a pair achieved."""


class GridFinder:
    """Tests a fixed list of user-given (or zoo witness) pairs, in order (paper 000 §5, grid).

    Parameters
    ----------
    pairs : sequence of NeighbouringPair
        Validated pairs (e.g. from ``AddRemove.pair(d0, d1)``); must be non-empty.
    """

    name = "grid"

    def __init__(self, pairs: Sequence[NeighbouringPair]):
        self.pairs = list(pairs)
        if not self.pairs:
            raise ValueError("GridFinder needs at least one neighbouring pair")
        self.capacity = len(self.pairs)
        self._next = 0
        self.history: list[tuple[NeighbouringPair, float]] = []

    def ask(self) -> NeighbouringPair | None:
        if self._next >= len(self.pairs):
            return None
        pair = self.pairs[self._next]
        self._next += 1
        return pair

    def tell(self, pair: NeighbouringPair, objective: float) -> None:
        self.history.append((pair, float(objective)))


class RandomFinder:
    """Random search over a neighbouring relation (paper 000 §5, randomized search).

    Parameters
    ----------
    relation : AddRemove or Replace
        Supplies ``random_pair(rng)`` over its domain and size range.
    rng : Generator or int, optional
    """

    name = "random"
    capacity = None

    def __init__(self, relation, rng=None):
        self.relation = relation
        self.rng = np.random.default_rng(rng)
        self.history: list[tuple[NeighbouringPair, float]] = []

    def ask(self) -> NeighbouringPair:
        return self.relation.random_pair(self.rng)

    def tell(self, pair: NeighbouringPair, objective: float) -> None:
        self.history.append((pair, float(objective)))


class ChainFinder:
    """Exhausts each finder in turn: e.g. known witness pairs first, then random search."""

    def __init__(self, finders: Sequence):
        self.finders = list(finders)
        if not self.finders:
            raise ValueError("ChainFinder needs at least one finder")
        self.name = "+".join(f.name for f in self.finders)
        caps = [f.capacity for f in self.finders]
        self.capacity = None if any(c is None for c in caps) else sum(caps)
        self._owner: dict[int, object] = {}
        self.last_finder: str | None = None

    def ask(self) -> NeighbouringPair | None:
        for f in self.finders:
            pair = f.ask()
            if pair is not None:
                self._owner[id(pair)] = f
                self.last_finder = f.name
                return pair
        return None

    def tell(self, pair: NeighbouringPair, objective: float) -> None:
        owner = self._owner.pop(id(pair), None)
        if owner is not None:
            owner.tell(pair, objective)
