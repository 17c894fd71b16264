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

from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from ..datasets import NeighbouringPair
from ..errors import DPAuditError

__all__ = [
    "ChainFinder",
    "Finder",
    "FinderBase",
    "FinderStateError",
    "GridFinder",
    "RandomFinder",
    "SpaceGridFinder",
    "as_finder",
]


class FinderStateError(DPAuditError, ValueError):
    """A finder cannot be restored to a stored search history (the stored pairs are not the ones it
    proposes with these settings)."""


@runtime_checkable
class Finder(Protocol):
    """What the audit loop needs from a finder (paper 000 Alg. 1, the dataset-search step).

    Every member is used by :func:`dpaudit.audit.loop.audit`; :class:`FinderBase` gives the
    optional ones a default, and :func:`as_finder` completes an object that has only
    ``ask``/``tell`` (and perhaps ``name``, ``capacity``, ``restore``). Finders know nothing of
    testers.

    Attributes
    ----------
    name : str
        Recorded in each trial and in the report.
    capacity : int or None
        Number of pairs it can propose (None: unbounded); caps the trial budget.
    uses_storage : bool
        True if it keeps its state in Optuna storage: the loop then calls :meth:`attach` with the
        ledger's storage before the first trial.
    last_finder : str or None
        Name of the finder that proposed the pair of the last :meth:`ask` (a chain's member);
        None means :attr:`name`.
    """

    name: str
    capacity: int | None
    uses_storage: bool
    last_finder: str | None

    def ask(self) -> NeighbouringPair | None:
        """Next pair to test, or None when exhausted."""

    def tell(self, pair: NeighbouringPair, objective: float) -> None:
        """Record the objective (divergence estimate, larger = closer to a violation) a pair
        returned by :meth:`ask` or :meth:`restore` achieved."""

    def abandon(self, pair: NeighbouringPair) -> None:
        """Forget a pair that will never be told (its trial was cancelled or failed)."""

    def restore(self, history: Sequence[tuple[NeighbouringPair, float | None]]) -> list[NeighbouringPair]:
        """Replay ``history`` (pairs in the order asked, objective or None if not finished);
        return the pair objects to :meth:`tell` later for the unfinished ones."""

    def attach(self, storage=None, study_name: str | None = None, *, run: int = 0) -> None:
        """Keep the finder's state in ``storage`` under ``study_name`` (run ``run`` of the audit)."""

    def config(self) -> dict:
        """Hyper-parameters, recorded in the report and compared when an audit resumes."""


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


class FinderBase:
    """Defaults for the optional members of :class:`Finder`, and the restore of a deterministic
    finder.

    A subclass sets ``name`` and ``capacity``, keeps ``self.history = []`` and defines ``ask``;
    it is told objectives into ``history``, never uses storage (``attach`` does nothing), has
    nothing to forget on ``abandon`` and restores by replaying its proposals (:func:`_replay`).
    """

    name = "finder"
    capacity: int | None = None
    uses_storage = False
    last_finder: str | None = None

    def ask(self) -> NeighbouringPair | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def tell(self, pair: NeighbouringPair, objective: float) -> None:
        """Append ``(pair, objective)`` to ``history``."""
        self.history.append((pair, float(objective)))

    def abandon(self, pair: NeighbouringPair) -> None:
        """Nothing to forget: a deterministic finder's proposals do not depend on objectives."""

    def attach(self, storage=None, study_name: str | None = None, *, run: int = 0) -> None:
        """Nothing to attach: the finder's state is rebuilt by :meth:`restore`."""

    def restore(self, history) -> list[NeighbouringPair]:
        """Propose the pairs of ``history`` again (checking each against the stored one) and
        tell the known objectives; see :class:`Finder`.

        Raises
        ------
        FinderStateError
            If a proposal differs from the stored pair (other pairs, relation or seed).
        """
        return _replay(self, history)

    def config(self) -> dict:
        """``{"finder": name}``; subclasses add their hyper-parameters."""
        return {"finder": self.name}


class _Completed(FinderBase):
    """A finder object that lacks some optional member of :class:`Finder`, completed with the
    :class:`FinderBase` defaults (see :func:`as_finder`)."""

    def __init__(self, inner):
        self.inner = inner
        self.name = getattr(inner, "name", type(inner).__name__)
        self.capacity = getattr(inner, "capacity", None)
        self.uses_storage = bool(getattr(inner, "uses_storage", False))
        self.history = []

    @property
    def last_finder(self) -> str | None:
        return getattr(self.inner, "last_finder", None)

    def ask(self) -> NeighbouringPair | None:
        return self.inner.ask()

    def tell(self, pair: NeighbouringPair, objective: float) -> None:
        self.inner.tell(pair, objective)

    def abandon(self, pair: NeighbouringPair) -> None:
        if hasattr(self.inner, "abandon"):
            self.inner.abandon(pair)

    def attach(self, *args, **kwargs) -> None:
        if hasattr(self.inner, "attach"):
            self.inner.attach(*args, **kwargs)

    def restore(self, history) -> list[NeighbouringPair]:
        return self.inner.restore(history) if hasattr(self.inner, "restore") else _replay(self, history)

    def config(self) -> dict:
        cfg = getattr(self.inner, "config", None)
        return cfg() if callable(cfg) else {"finder": self.name}


def as_finder(finder) -> Finder:
    """``finder`` itself if it has every member of :class:`Finder` (all built-in finders do),
    else a wrapper that gives the missing optional members their :class:`FinderBase` defaults.

    Parameters
    ----------
    finder : object
        Needs at least ``ask()`` and ``tell(pair, objective)``.

    Returns
    -------
    Finder

    Raises
    ------
    TypeError
        If ``finder`` has no ``ask`` or ``tell`` method.
    """
    if isinstance(finder, Finder):
        return finder
    if not (callable(getattr(finder, "ask", None)) and callable(getattr(finder, "tell", None))):
        raise TypeError(f"a finder needs ask() and tell(pair, objective) methods, got {finder!r}")
    return _Completed(finder)


class GridFinder(FinderBase):
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

    def config(self) -> dict:
        return {"finder": self.name, "pairs": [p.to_dict() for p in self.pairs]}


class RandomFinder(FinderBase):
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

    def config(self) -> dict:
        return {"finder": self.name, "relation": self.relation.to_dict()}


class SpaceGridFinder(FinderBase):
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

    def config(self) -> dict:
        return {"finder": self.name, "relation": self.space.relation.to_dict(), "max_resolution": self.max_resolution}


class ChainFinder(FinderBase):
    """Exhausts each finder in turn: e.g. known witness pairs first, then random search."""

    def __init__(self, finders: Sequence):
        self.finders = [as_finder(f) for f in finders]
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
        if owner is not None:
            owner.abandon(pair)

    def attach(self, *args, **kwargs) -> None:
        """Attach every member finder that keeps its state in Optuna storage."""
        for f in self.finders:
            f.attach(*args, **kwargs)

    @property
    def uses_storage(self) -> bool:
        """True if a member keeps its state in Optuna storage."""
        return any(f.uses_storage for f in self.finders)

    def restore(self, history) -> list[NeighbouringPair]:
        """Give each member the part of ``history`` it proposed: the chain exhausts its members in
        order, so the first ``capacity`` entries belong to the first member, and so on. A member
        that keeps its state in storage is restored even with no part (a proposal it made but
        the audit never recorded is reconciled); the others only with a part."""
        history = list(history)
        out: list[NeighbouringPair] = []
        start = 0
        for i, f in enumerate(self.finders):
            last = i == len(self.finders) - 1
            take = len(history) - start if (f.capacity is None or last) else min(f.capacity, len(history) - start)
            part = history[start:start + take]
            if not part and not f.uses_storage:
                continue
            pairs = f.restore(part)
            for (_, objective), p in zip(part, pairs):
                if objective is None:  # to be told later
                    self._owner[id(p)] = f
            out.extend(pairs)
            start += take
        return out

    def config(self) -> dict:
        return {"finder": self.name, "parts": [f.config() for f in self.finders]}
