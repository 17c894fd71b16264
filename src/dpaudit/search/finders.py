"""Dataset finders with an ask/tell interface.

A finder proposes neighbouring pairs (``ask``) and is told the objective each achieved (``tell``);
it never runs the loop itself, so the same finder works in a sequential loop, a parallel one or
after a resume. ``capacity`` is the number of pairs it can propose (``None``: unbounded) and is
known before the audit starts, so the failure probability can be split over the trials in advance.

Resumption: ``restore(history)`` brings a fresh finder to the state it had after proposing the
pairs of ``history`` (in the order they were asked) and being told the objectives known so far.
The finders here are deterministic given their seed, so they replay their proposals and check
that each equals the stored pair (a different ``--pairs`` list or seed is an error, not a silent
change of the audit). The Optuna finders (:mod:`dpaudit.search.optuna_finders`) keep their history
in Optuna storage instead.

The objective a finder is told is a number to maximise (the tester's point estimate of the
divergence margin, ``TestOutcome.objective``); finders know nothing of testers.
"""

from __future__ import annotations

from typing import Protocol, Sequence

import numpy as np

from ..datasets import NeighbouringPair
from ..errors import DPAuditError

__all__ = ["ChainFinder", "Finder", "FinderStateError", "GridFinder", "RandomFinder", "SpaceGridFinder"]


class FinderStateError(DPAuditError, ValueError):
    """A finder cannot be restored to a stored search history (the stored pairs are not the ones it
    proposes with these settings)."""


class Finder(Protocol):
    """What the audit loop needs from a finder (paper 000 Alg. 1, the dataset-search step).

    ``ask()`` proposes the next :class:`~dpaudit.datasets.NeighbouringPair` (None when the finder
    is exhausted); ``tell(pair, objective)`` reports the tester's objective for it (a divergence
    estimate, larger = closer to a violation); ``capacity`` is the number of pairs it can propose
    (None: unbounded), which caps the trial budget; ``restore(history)`` replays a stored search
    when an audit resumes. Finders know nothing of testers.
    """

    name: str
    capacity: int | None

    def ask(self) -> NeighbouringPair | None:
        """Next pair to test, or None when exhausted."""

    def tell(self, pair: NeighbouringPair, objective: float) -> None:
        """Record the objective (divergence estimate) a pair achieved."""

    def restore(self, history: Sequence[tuple[NeighbouringPair, float | None]]) -> list[NeighbouringPair]:
        """Replay ``history`` (pairs in the order asked, objective or None if not finished);
        return the pair objects to :meth:`tell` later for the unfinished ones."""


def _check_replay(name: str, position: int, proposed, stored: NeighbouringPair) -> None:
    if proposed is None or proposed != stored:
        got = "nothing (exhausted)" if proposed is None else f"{proposed.d0.ravel().tolist()} vs {proposed.d1.ravel().tolist()}"
        raise FinderStateError(
            f"cannot resume the {name} finder: its proposal #{position + 1} is {got}, but the stored trial "
            f"tested {stored.d0.ravel().tolist()} vs {stored.d1.ravel().tolist()} ({stored.description!r}); "
            "the search settings (pairs, relation, seed) differ from the stored audit"
        )


def _replay(finder, history) -> list[NeighbouringPair]:
    """Generic restore of a deterministic finder: ask again, check, tell the known objectives."""
    out = []
    for i, (stored, objective) in enumerate(history):
        pair = finder.ask()
        _check_replay(finder.name, i, pair, stored)
        if objective is not None:
            finder.tell(pair, objective)
        out.append(pair)
    return out


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

    def restore(self, history) -> list[NeighbouringPair]:
        """Skip the pairs already proposed (checking them); see :class:`Finder`."""
        return _replay(self, history)

    def config(self) -> dict:
        return {"finder": self.name, "pairs": [p.to_dict() for p in self.pairs]}


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

    def restore(self, history) -> list[NeighbouringPair]:
        """Draw the proposals again from the seeded generator (checking them); see :class:`Finder`.

        Only a finder built with the same integer seed as the stored audit can be restored."""
        return _replay(self, history)

    def config(self) -> dict:
        return {"finder": self.name, "relation": self.relation.to_dict()}


class SpaceGridFinder:
    """Deterministic grid over the dataset space (paper 000 §5, grid search).

    Enumerates :meth:`PairSpace.grid <dpaudit.search.space.PairSpace.grid>`: lattice records with
    the domain's faces first, then halving the spacing; datasets from the smallest size up; every
    multiset of lattice records as D0 and every lattice record as the one that differs. Unlike
    :class:`GridFinder` it needs no pairs from the user.

    Parameters
    ----------
    relation : AddRemove or Replace
    max_resolution : int, default 4
        Finest lattice: ``2^(max_resolution - 1) + 1`` values per coordinate.

    Raises
    ------
    NeighbouringError
        For a relation the search space does not cover.
    """

    name = "grid-space"
    capacity = None

    def __init__(self, relation, max_resolution: int = 4):
        from .space import PairSpace

        self.space = PairSpace(relation)
        self.max_resolution = int(max_resolution)
        self._it = self.space.grid(self.max_resolution, description=self.name)
        self.history: list[tuple[NeighbouringPair, float]] = []

    def ask(self) -> NeighbouringPair | None:
        return next(self._it, None)

    def tell(self, pair: NeighbouringPair, objective: float) -> None:
        self.history.append((pair, float(objective)))

    def restore(self, history) -> list[NeighbouringPair]:
        """Skip the grid points already proposed (checking them); see :class:`Finder`."""
        return _replay(self, history)

    def config(self) -> dict:
        return {"finder": self.name, "relation": self.space.relation.to_dict(), "max_resolution": self.max_resolution}


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

    def abandon(self, pair: NeighbouringPair) -> None:
        """Forget a pair that will never be told (its trial was cancelled)."""
        owner = self._owner.pop(id(pair), None)
        if owner is not None and hasattr(owner, "abandon"):
            owner.abandon(pair)

    def attach(self, *args, **kwargs) -> None:
        """Attach every member finder that keeps its state in Optuna storage."""
        for f in self.finders:
            if hasattr(f, "attach"):
                f.attach(*args, **kwargs)

    @property
    def uses_storage(self) -> bool:
        return any(getattr(f, "uses_storage", False) for f in self.finders)

    def restore(self, history) -> list[NeighbouringPair]:
        """Give each member the part of ``history`` it proposed: the chain exhausts its members in
        order, so the first ``capacity`` entries belong to the first member, and so on."""
        history = list(history)
        out: list[NeighbouringPair] = []
        start = 0
        for i, f in enumerate(self.finders):
            last = i == len(self.finders) - 1
            take = len(history) - start if (f.capacity is None or last) else min(f.capacity, len(history) - start)
            part = history[start:start + take]
            pairs = f.restore(part) if part else []
            for (_, objective), p in zip(part, pairs):
                if objective is None:  # to be told later
                    self._owner[id(p)] = f
            out.extend(pairs)
            start += take
            if start >= len(history):
                break
        return out

    def config(self) -> dict:
        return {"finder": self.name, "parts": [getattr(f, "config", lambda f=f: {"finder": f.name})() for f in self.finders]}
