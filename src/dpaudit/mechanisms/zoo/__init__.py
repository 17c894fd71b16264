"""The zoo: reference mechanisms, correct and buggy, each with its claim, its bug and a witness pair.

Entries are registered by name (the CLI's ``zoo:NAME``). An entry builds its mechanism for the
privacy parameters under test, so ``dpaudit test zoo:dp-laplace --epsilon 0.01`` audits the
mechanism instantiated at epsilon = 0.01 against the claim it makes at that epsilon.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ...claims import ApproxDP, Claim, PureDP
from ...datasets import AddRemove, Domain, NeighbouringPair, Replace
from ...errors import DPAuditError
from ..base import Mechanism

__all__ = ["ZooEntry", "get", "entries", "register"]


@dataclass(frozen=True)
class ZooEntry:
    """A reference mechanism with everything needed to audit it.

    Attributes
    ----------
    name : str
        CLI name (``zoo:NAME``), lower-case with hyphens.
    factory : callable
        ``factory(epsilon, delta) -> Mechanism``: the mechanism as implemented for those
        parameters (delta is ignored by pure-DP mechanisms).
    claim_kind : {"pure", "approx"}
        Which guarantee the implementation claims.
    private : bool
        Whether the mechanism really satisfies its claim.
    summary : str
        One line: what it computes.
    bug : str or None
        What is wrong (None for correct mechanisms).
    true_guarantee : str
        The real guarantee, with its source, or why there is none.
    relation : {"add-remove", "replace"}
    domain : Domain
    min_size, max_size : int
        Dataset size range for random search.
    witness_pairs : tuple of (list, list)
        Neighbouring datasets (as nested lists of records) where the bug shows; for a correct
        mechanism, pairs where it would show if it were wrong.
    default_delta : float or None
        Delta used when the user gives none (approximate-DP mechanisms).
    source : str
        Where the mechanism comes from (paper and section).
    """

    name: str
    factory: Callable[[float, float], Mechanism]
    claim_kind: str
    private: bool
    summary: str
    bug: str | None
    true_guarantee: str
    relation: str = "add-remove"
    domain: Domain = field(default_factory=lambda: Domain.unit(1))
    min_size: int = 1
    max_size: int = 10
    witness_pairs: tuple = ()
    default_delta: float | None = None
    source: str = ""

    def claim(self, epsilon: float, delta: float | None = None) -> Claim:
        """The guarantee the mechanism claims at these parameters."""
        if self.claim_kind == "pure":
            return PureDP(epsilon)
        d = self.default_delta if delta is None else delta
        return ApproxDP(epsilon, d)

    def mechanism(self, epsilon: float, delta: float | None = None) -> Mechanism:
        """Instantiate the mechanism at (epsilon, delta)."""
        d = self.default_delta if delta is None else delta
        return self.factory(epsilon, d if d is not None else 0.0)

    def neighbouring(self):
        """The neighbouring relation of this entry (AddRemove or Replace over its domain)."""
        cls = AddRemove if self.relation == "add-remove" else Replace
        return cls(self.domain, self.min_size, self.max_size)

    def witnesses(self) -> list[NeighbouringPair]:
        """The witness pairs, validated against the entry's relation."""
        rel = self.neighbouring()
        return [rel.pair(d0, d1, description=f"witness pair of {self.name}") for d0, d1 in self.witness_pairs]


_REGISTRY: dict[str, ZooEntry] = {}


def register(entry: ZooEntry) -> ZooEntry:
    """Add an entry to the zoo (names must be unique)."""
    if entry.name in _REGISTRY:
        raise ValueError(f"zoo entry {entry.name!r} registered twice")
    _REGISTRY[entry.name] = entry
    return entry


def _load() -> None:
    from . import mean  # noqa: F401  (registers the mean mechanisms of paper 000 §6.1)


def entries() -> list[ZooEntry]:
    """All zoo entries, sorted by name."""
    _load()
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def get(name: str) -> ZooEntry:
    """The entry called ``name``; raises :class:`DPAuditError` listing the valid names otherwise."""
    _load()
    if name not in _REGISTRY:
        raise DPAuditError(f"no zoo mechanism called {name!r}; available: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]
