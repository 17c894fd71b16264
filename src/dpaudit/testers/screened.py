"""The default tester: a distributional tester plus a floating-point screen for float outputs.

Textbook float64 noise (``x + numpy Laplace``) leaks through the set of doubles its outputs take
(Mironov 2012), which no region of output *values* can see; only the float-bits tester
(:mod:`dpaudit.testers.float_bits`) finds it. :class:`FloatScreenTester` runs it by default, but
only where it can matter: when a mechanism's outputs are non-integer floats, the failure
probability is split, ``(1 - share) * beta`` to the distributional tester(s) and ``share * beta``
to the float-bits screen; integer outputs (counts, indices, bits, snapped integers) are tested by
the distributional tester alone at the whole ``beta``, exactly as without the screen.

Whether the outputs are non-integer floats is decided once per audit, before any trial, from a
few outputs drawn for it alone (a *peek*: :attr:`FloatScreenTester.peek_samples` per dataset of
the first pair, from a random stream no trial uses; :func:`dpaudit.audit.loop.audit`). The split
is then a function of the peek, independent of every trial's samples, so each test still holds
at its ``beta`` (union bound over the parts). Used without a peek (``test`` called directly), the
tester keeps the split whatever the samples and runs the screen when they hold non-integer floats:
``(1 - share) * beta + share * beta = beta``, sound whatever the decision (docs/floating_point.md §4).

A floating-point finding does not end an audit: the primary is this tester's distributional part
(:meth:`FloatScreenTester.distributional_part`), which the audit keeps running alone at its
``1 - share`` of each later test's beta, so a real distributional bug is still reported as a
violation (:func:`dpaudit.audit.executors.run_trial`, docs/floating_point.md §5).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._validate import check_probability
from ..privacy.claims import Claim
from .base import Tester, TestOutcome
from .combined import CombinedTester

__all__ = ["FLOAT_SCREEN_SHARE", "FloatScreenTester", "has_noninteger_floats"]

FLOAT_SCREEN_SHARE = 0.1
"""Fraction of ``beta`` the float-bits screen gets on non-integer float outputs (the rest goes to
the distributional tester(s)): the float-bits tester's Clopper–Pearson bounds need only
``log(1/beta)``-many more samples at a tenth of beta, and the distributional testers lose about
as little (docs/floating_point.md §4 measures both)."""


def has_noninteger_floats(outputs) -> bool:
    """Whether any output coordinate is a finite non-integer number.

    Parameters
    ----------
    outputs : array, shape (n, output_dim) or (n,)
        Mechanism outputs (a peek).

    Returns
    -------
    bool
        False for integer and boolean arrays and for floats that are all integers (counts,
        indices, bits released as float64) or non-finite; True as soon as one value has a
        fractional part.

    Raises
    ------
    ValueError
        If ``outputs`` is not numeric.
    """
    x = np.asarray(outputs)
    if x.dtype.kind in "biu":
        return False
    try:
        x = x.astype(np.float64, copy=False)
    except (TypeError, ValueError):
        raise ValueError(f"outputs must be numeric, got an array of {x.dtype}") from None
    x = x[np.isfinite(x)]
    return bool(np.any(x != np.round(x)))


class FloatScreenTester(Tester):
    """A distributional tester plus the float-bits screen on non-integer float outputs (β split).

    Parameters
    ----------
    primary : Tester
        The distributional tester (``HockeyStickTester``, or ``hockey-stick+renyi`` for Rényi
        claims); its outcome's ``objective`` is the combined objective.
    screen : Tester, optional
        The floating-point screen; default ``FloatBitsTester()``.
    share : float, default :data:`FLOAT_SCREEN_SHARE`
        Fraction of ``beta`` the screen gets when it runs, in (0, 1).
    float_outputs : bool or None, default None
        Whether the mechanism's outputs are non-integer floats, from a peek (:meth:`resolve`);
        None: not decided (``test`` keeps the split and runs the screen on float samples).
    name : str, optional
        Default ``primary.name + "+float-screen"``.

    Raises
    ------
    ValueError
        If ``share`` is not in (0, 1).

    References
    ----------
    Mironov (2012), CCS (the floating-point attack); the union bound over the parts as
    :class:`~dpaudit.testers.combined.CombinedTester`.
    """

    PEEK = 16
    """Outputs per dataset the audit draws (once, on its first pair) to decide :attr:`float_outputs`."""

    @property
    def peek_samples(self) -> int:
        """:data:`PEEK` while :attr:`float_outputs` is undecided, then 0."""
        return self.PEEK if self.float_outputs is None else 0

    def __init__(self, primary: Tester, screen: Tester | None = None, *, share: float = FLOAT_SCREEN_SHARE,
                 float_outputs: bool | None = None, name: str | None = None):
        if screen is None:
            from .float_bits import FloatBitsTester

            screen = FloatBitsTester()
        share = check_probability(share, "share")
        self.primary, self.screen, self.share = primary, screen, float(share)
        self.float_outputs = None if float_outputs is None else bool(float_outputs)
        self.name = name or f"{primary.name}+float-screen"

    def supports(self, claim: Claim) -> bool:
        return self.primary.supports(claim)

    @property
    def sequential(self) -> bool:
        """Whether the primary is a sequential tester (:class:`~dpaudit.testers.sequential.SequentialTester`):
        an audit's trials then bet sequentially and run the screen at checkpoints
        (:func:`dpaudit.audit.executors.run_sequential_trial`)."""
        return bool(getattr(self.primary, "sequential", False))

    def distributional_part(self, claim: Claim) -> "tuple[Tester, float]":
        """The primary and its fraction of ``beta``: ``1 - share`` wherever the screen may run
        (float outputs, or undecided), the whole ``beta`` (1.0) on integer outputs
        (:meth:`Tester.distributional_part`)."""
        return self.primary, (1.0 if self.float_outputs is False else 1.0 - self.share)

    def resolve(self, outputs) -> "FloatScreenTester":
        """This tester with :attr:`float_outputs` decided from ``outputs`` (a peek drawn apart from
        the trials' samples: :func:`has_noninteger_floats`)."""
        return FloatScreenTester(self.primary, self.screen, share=self.share, name=self.name,
                                 float_outputs=has_noninteger_floats(outputs))

    def _combined(self) -> CombinedTester:
        """The primary's testers and the screen, with the primary's share split as the primary splits it."""
        inner = self.primary.testers if isinstance(self.primary, CombinedTester) else (self.primary,)
        if isinstance(self.primary, CombinedTester) and self.primary.shares is not None:
            w = [x / sum(self.primary.shares) for x in self.primary.shares]
        else:
            w = [1.0 / len(inner)] * len(inner)
        return CombinedTester((*inner, self.screen), name=self.name,
                              shares=[(1.0 - self.share) * x for x in w] + [self.share])

    def describe(self) -> str:
        """One line saying how beta is split, for reports."""
        parts = f"{self.primary.name} at {1 - self.share:g} of beta, {self.screen.name} screen at {self.share:g}"
        if self.float_outputs is None:
            return f"not decided from a peek: {parts} (the screen runs on non-integer float samples)"
        if self.float_outputs:
            return f"non-integer float outputs: {parts}"
        return f"integer outputs: {self.primary.name} alone at the whole beta (no floating-point screen)"

    def config(self) -> dict:
        """The name, the screen, its share, the decision, a ``beta_split`` sentence, and either
        ``parts`` (every tester's config) with ``shares`` (their fractions of beta) when the screen
        runs, or ``primary`` (the primary's config) when it does not."""
        out = {"tester": self.name, "screen": self.screen.name, "screen_share": self.share,
               "float_outputs": self.float_outputs, "beta_split": self.describe()}
        if self.float_outputs:
            comb = self._combined().config()
            out["parts"], out["shares"] = comb["parts"], comb["shares"]
        else:
            out["primary"] = self.primary.config()
        return out

    def test(self, p_samples, q_samples, claim: Claim, *, beta: float, rng=None) -> TestOutcome:
        """Test with the primary alone (integer outputs) or with the screen, beta split.

        Integer outputs (``float_outputs`` False): the primary's outcome at ``beta``, unchanged.
        Non-integer float outputs: a :class:`CombinedTester` outcome (the primary's parts and the
        screen, ``beta`` split as :meth:`describe` says; ``note`` states the split). Undecided: the
        primary at ``(1 - share) * beta``, combined with the screen at ``share * beta`` when the
        samples hold non-integer floats.

        Raises
        ------
        InvalidClaimError
            If the primary cannot test ``claim``.
        NotApplicable, ValueError
            As the primary.
        """
        beta = check_probability(beta, "beta")
        self.require(claim)
        run_screen = self.float_outputs
        if run_screen is None:
            run_screen = has_noninteger_floats(p_samples) or has_noninteger_floats(q_samples)
            if not run_screen:  # the screen's share stays reserved: the split must not depend on the data
                return self.primary.test(p_samples, q_samples, claim, beta=(1.0 - self.share) * beta, rng=rng)
        if not run_screen:
            return self.primary.test(p_samples, q_samples, claim, beta=beta, rng=rng)
        out = self._combined().test(p_samples, q_samples, claim, beta=beta, rng=rng)
        split = f"beta split: {self.describe()}"
        return _with_note(out, split)


def _with_note(out: TestOutcome, text: str) -> TestOutcome:
    return dataclasses.replace(out, note=f"{out.note}; {text}" if out.note else text)
