"""A zoo entry: a reference mechanism with its claim, its bug and its witness pairs.

:class:`ZooEntry` is the record the catalogue (:mod:`dpaudit.mechanisms.zoo.catalogue`) registers;
:func:`variant` builds the factory of an entry that is one configuration of a parametrised
mechanism class (several entries share one class).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ...privacy.claims import ApproxDP, Claim, PureDP, RenyiDP
from ...datasets import AddRemove, Domain, NeighbouringPair, Replace
from ..base import Mechanism

__all__ = ["ZooEntry", "variant"]


@dataclass(frozen=True)
class ZooEntry:
    """A reference mechanism with everything needed to audit it.

    Only ``name``, ``factory``, ``claim_kind``, ``private``, ``summary``, ``bug`` and
    ``true_guarantee`` are required; the rest have defaults.

    Attributes
    ----------
    name : str
        CLI name (``zoo:NAME``), lower-case with hyphens.
    factory : callable
        ``factory(epsilon, delta) -> Mechanism``: the mechanism as implemented for those
        parameters (delta is ignored by pure-DP mechanisms).
    claim_kind : {"pure", "approx", "renyi"}
        Which guarantee the implementation claims (``renyi``: (alpha, epsilon)-RDP; the factory
        is then ``factory(epsilon, alpha)``).
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
        Dataset size range of the entry's relation (every finder and every given pair stays in
        it). ``min_size`` None (the default): the relation's own, 0 for add-remove (the empty
        dataset is audited) and 1 for replace.
    min_size_reason : str
        Why an add-remove entry excludes the empty dataset (required when ``min_size > 0``
        under add-remove, e.g. "divides by the true count").
    witness_pairs : tuple of (list, list)
        Neighbouring datasets (as nested lists of records) where the bug shows; for a correct
        mechanism, pairs where it would show if it were wrong. The first pair is the main witness
        (the one the detection benchmark uses).
    default_delta : float or None
        Delta used when the user gives none (approximate-DP mechanisms).
    source : str
        Where the mechanism comes from (paper and section).
    default_alpha : float or None
        Rényi order used when the user gives none (``renyi`` entries only).
    exact_arithmetic_only : bool
        True when the claim holds in exact arithmetic but not in float64: the mechanism adds
        continuous noise drawn by a textbook floating-point sampler to a value that depends on
        the data, so the set of doubles an output can take leaks the input (Mironov 2012, §3).
        ``private`` is then the exact-arithmetic answer for a correct mechanism (``dp-laplace``),
        and False for an entry whose bug is this leak (``float-laplace``); the float-bits tester
        (``--tester float-bits`` or ``all``) reports a floating-point violation on both.
    family : str
        Title of the family the entry belongs to in the catalogue (e.g. ``"report noisy max"``):
        ``dpaudit zoo`` lists the entries family by family. Default: ``""``.
    violates_for : (float, float) or None
        For a mechanism that is not private: the open interval ``(eps_low, eps_high)`` of the
        privacy parameter epsilon (nats) over which it violates its claim (at ``default_delta``
        for approximate-DP claims); outside it the mechanism meets its claim. ``None`` (the
        default): violated at every epsilon > 0. Must be ``None`` for private entries. The ends
        are numerical estimates (see the mechanism's docstring); close to them the violation is
        too small for any test to see.

    Raises
    ------
    ValueError
        If ``violates_for`` is given for a private entry or is not ``0 <= eps_low < eps_high``.
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
    min_size: int | None = None
    max_size: int = 10
    witness_pairs: tuple = ()
    default_delta: float | None = None
    source: str = ""
    violates_for: tuple[float, float] | None = None
    min_size_reason: str = ""
    default_alpha: float | None = None
    exact_arithmetic_only: bool = False
    family: str = ""

    def __post_init__(self) -> None:
        if self.min_size is None:
            object.__setattr__(self, "min_size", 0 if self.relation == "add-remove" else 1)
        if self.relation == "add-remove" and self.min_size > 0 and not self.min_size_reason:
            raise ValueError(
                f"zoo entry {self.name!r}: min_size={self.min_size} excludes the empty dataset; say why in min_size_reason"
            )
        if self.claim_kind not in ("pure", "approx", "renyi"):
            raise ValueError(f"zoo entry {self.name!r}: claim_kind must be pure, approx or renyi, got {self.claim_kind!r}")
        if (self.claim_kind == "renyi") != (self.default_alpha is not None):
            raise ValueError(f"zoo entry {self.name!r}: default_alpha is given for, and only for, claim_kind='renyi'")
        if self.violates_for is None:
            return
        if self.private:
            raise ValueError(f"zoo entry {self.name!r}: violates_for is only for non-private entries")
        try:
            lo, hi = (float(v) for v in self.violates_for)
        except (TypeError, ValueError):
            raise ValueError(
                f"zoo entry {self.name!r}: violates_for must be a pair (eps_low, eps_high), got {self.violates_for!r}"
            ) from None
        if not (0.0 <= lo < hi):
            raise ValueError(f"zoo entry {self.name!r}: violates_for needs 0 <= eps_low < eps_high, got {self.violates_for!r}")
        object.__setattr__(self, "violates_for", (lo, hi))

    def violates(self, epsilon: float) -> bool:
        """Whether the mechanism built at ``epsilon`` violates its claim at that epsilon.

        False for private entries; for the others True unless ``violates_for`` excludes epsilon.
        (A violation may still be too small to detect: see the entry's ``true_guarantee``.)
        """
        if self.private:
            return False
        if self.violates_for is None:
            return True
        lo, hi = self.violates_for
        return lo < float(epsilon) < hi

    def claim(self, epsilon: float, delta: float | None = None, alpha: float | None = None) -> Claim:
        """The guarantee the mechanism claims at these parameters (``alpha``: the Rényi order of
        a ``renyi`` entry, default ``default_alpha``)."""
        if self.claim_kind == "pure":
            return PureDP(epsilon)
        if self.claim_kind == "renyi":
            return RenyiDP(alpha=self.default_alpha if alpha is None else alpha, epsilon=epsilon)
        d = self.default_delta if delta is None else delta
        return ApproxDP(epsilon, d)

    def mechanism(self, epsilon: float, delta: float | None = None, alpha: float | None = None) -> Mechanism:
        """Instantiate the mechanism at (epsilon, delta); a ``renyi`` entry's factory gets
        ``(epsilon, alpha)`` instead (alpha default ``default_alpha``)."""
        if self.claim_kind == "renyi":
            return self.factory(epsilon, self.default_alpha if alpha is None else alpha)
        d = self.default_delta if delta is None else delta
        return self.factory(epsilon, d if d is not None else 0.0)

    def neighbouring(self):
        """The neighbouring relation of this entry (AddRemove or Replace over its domain)."""
        cls = AddRemove if self.relation == "add-remove" else Replace
        return cls(self.domain, self.min_size, self.max_size)

    def witnesses(self) -> list[NeighbouringPair]:
        """The witness pairs, validated against the entry's relation."""
        rel = self.neighbouring()
        n = len(self.witness_pairs)
        return [rel.pair(d0, d1, description=witness_label(self.name, k, n)) for k, (d0, d1) in enumerate(self.witness_pairs)]


def witness_label(name: str, index: int, count: int) -> str:
    """The label of an entry's witness pair ``index`` (0-based) of ``count``: ``"witness pair of
    NAME"`` for the only one, ``"witness pair 2 of NAME"`` where there are several (so that the
    progress line and the trials tell them apart)."""
    return f"witness pair {index + 1} of {name}" if count > 1 else f"witness pair of {name}"


def variant(cls: type, name: str, **config) -> Callable[[float, float], Mechanism]:
    """The factory of the zoo entry ``name``: ``cls(epsilon, delta, name=name, **config)``.

    Parameters
    ----------
    cls : type
        A mechanism class whose constructor takes ``(epsilon, delta, *, name=..., **config)``.
    name : str
        The entry name; also the factory's ``name`` attribute (the catalogue reads it).
    **config
        Keyword arguments fixing the variant (noise, scale factor, flip rule...).

    Returns
    -------
    callable
        ``factory(epsilon, delta=0.0) -> Mechanism``.
    """

    def build(epsilon: float, delta: float = 0.0) -> Mechanism:
        return cls(epsilon, delta, name=name, **config)

    build.__name__ = build.__qualname__ = f"build_{name.replace('-', '_')}"
    build.__doc__ = f"Build the zoo entry {name!r}: ``{cls.__name__}(epsilon, delta, {config})``."
    build.name = name
    return build
