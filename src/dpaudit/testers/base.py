"""The interface every tester implements and the result it returns.

A tester knows which divergence to bound and how to compare the bound with a claim; it knows
nothing of datasets or search (``docs/architecture.md``). Every tester bounds both directions
``P||Q`` and ``Q||P`` and splits its failure probability between them (and among anything else
it bounds), so a mechanism that satisfies the claim gets ``violation=True`` with probability at
most the ``beta`` it was given.
"""

from __future__ import annotations

import dataclasses
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, fields

import numpy as np

from .._validate import check_probability
from ..errors import InvalidClaimError
from ..estimators.base import NotApplicable, bound_from_dict, profile_grid
from ..estimators.region import ClaimComparison, rdp_epsilon_lower_bound
from ..privacy.claims import Claim

__all__ = [
    "NotApplicable",
    "ProfileTester",
    "TestOutcome",
    "Tester",
    "VIOLATION_KINDS",
    "ViolationKind",
    "profile_grid",
    "profile_outcome",
    "rdp_epsilon_lower_bound",
    "verdict_word",
]


def verdict_word(violation: bool, inconclusive: bool, passed: str = "pass") -> str:
    """``"violation"`` if ``violation``, else ``"inconclusive"`` if ``inconclusive``, else ``passed``:
    the one wording of a verdict (a test outcome's ``status``, an audit's ``verdict`` with
    ``passed="no violation found"``)."""
    if violation:
        return "violation"
    return "inconclusive" if inconclusive else passed


@dataclass(frozen=True)
class ViolationKind:
    """What kind of violation a test found: its name, the words of its verdict and what to do.

    Attributes
    ----------
    name : str
        ``"distributional"`` (the output distributions themselves violate the claim) or
        ``"floating-point"`` (only the outputs' float64 bit patterns do: the mechanism may be
        private in exact arithmetic). The ``violation_kind`` of the JSON result.
    headline : str
        The verdict's words: ``"VIOLATION"`` or ``"FLOATING-POINT LEAK"``.
    meaning : str
        What the finding says, one clause.
    advice : str
        One sentence: what to do about it.
    """

    name: str
    headline: str
    meaning: str
    advice: str


VIOLATION_KINDS = {k.name: k for k in (
    ViolationKind(
        "distributional", "VIOLATION", "the evidence rejects the claim",
        "The output distributions themselves violate the claim: check the mechanism's sensitivity and "
        "noise scale (and that the noise does not depend on the data).",
    ),
    ViolationKind(
        "floating-point", "FLOATING-POINT LEAK",
        "the outputs' floating-point bit patterns reject the claim (the mechanism may be private in exact arithmetic)",
        "The float64 outputs leak the input through which doubles they can take (Mironov 2012): use a snapping "
        "mechanism (Mironov 2012) or a discrete/exact sampler such as OpenDP's. To test the output distribution "
        "alone (the claim in exact arithmetic), run again with --tester hockey-stick (tester=\"hockey-stick\" in "
        "Python).",
    ),
)}
"""The violation kinds by name (:class:`ViolationKind`)."""


@dataclass(frozen=True)
class TestOutcome(ClaimComparison):
    """What one test of two samples showed (the same object for every tester).

    Attributes
    ----------
    tester : str
        ``"hockey-stick"``, ``"renyi"``, ``"mmd"``, ``"histogram"`` or ``"all"``.
    violation : bool
        True when some bound exceeds what the claim allows.
    beta : float
        Probability that a mechanism satisfying the claim gets ``violation=True`` (at most).
    bounds : tuple of DivergenceBound
        The bounds the verdict rests on (typically one per direction, ``P||Q`` then ``Q||P``),
        each at its share of ``beta``. For ``tester="all"``: every part's bounds, in order.
    strongest : int
        Index in ``bounds`` of the bound with the largest margin.
    margin : float
        Largest ``lower bound - what the claim allows``, in the units of the strongest bound's
        divergence: positive iff ``violation``.
    objective : float
        Point estimate of the divergence margin, used by finders to rank pairs (same units for
        every test made by one tester).
    threshold : float or None
        What the claim allows for the strongest bound's divergence (at ``witness_epsilon`` for
        hockey-stick bounds, ``tau`` of paper 000 Alg. 1 otherwise).
    witness_epsilon : float or None
        For hockey-stick evidence: the eps' (nats) where the margin is attained.
    delta_lower_bound : float or None
        Lower bound on ``max(H_{e^eps}(P||Q), H_{e^eps}(Q||P))`` at the claimed epsilon (>= 0),
        when the tester can give one.
    claimed_delta : float or None
        What the claim allows for that hockey-stick divergence.
    epsilon_lower_bound : float or None
        Empirical epsilon lower bound at confidence ``1 - beta``, of the claim's kind: the
        largest epsilon whose ``(epsilon, delta)``-DP the evidence rejects at the claim's delta
        (delta = 0 for pure claims), and for a Rényi claim the largest Rényi epsilon at the
        claim's alpha that it rejects. 0.0 if none; None if the tester cannot give one.
    inconclusive : bool
        True when the sample size was too small for the bound to say anything (see ``note``).
    note : str
        Human-readable remark, e.g. ``"inconclusive: needs n >= 81234 samples per dataset"``.
    parts : tuple of TestOutcome
        For ``tester="all"``: the outcome of each tester run, each at its share of ``beta``.

    ``margin``, ``threshold``, ``witness_epsilon``, ``delta_lower_bound``, ``claimed_delta`` and
    ``epsilon_lower_bound`` are the keyword-only fields of
    :class:`~dpaudit.estimators.region.ClaimComparison`, as in a score audit's ``ClaimCheck``.
    """

    __test__ = False  # not a pytest class

    tester: str
    violation: bool
    beta: float
    bounds: tuple
    strongest: int
    objective: float
    inconclusive: bool = False
    note: str = ""
    parts: tuple = ()

    @property
    def status(self) -> str:
        """``"violation"``, ``"inconclusive"`` or ``"pass"`` (:func:`verdict_word`)."""
        return verdict_word(self.violation, self.inconclusive)

    @property
    def violation_kind(self) -> str | None:
        """``"floating-point"``, ``"distributional"`` or None (no violation): see :class:`ViolationKind`.

        A violation is a floating-point one when the bound it rests on is a float-bits bound of a
        bit-level family (:data:`~dpaudit.estimators.float_bits.BIT_LEVEL_FAMILIES`: its region is
        a set of doubles chosen by their bit patterns, which no region of output values can see).
        Every other tester, and the float-bits tester's ``"atoms"`` family (point masses), bounds
        the output distribution itself: a distributional violation. A combined outcome is
        floating-point only when every violating part is; one distributional part makes it
        distributional (fixing the floating point would not fix that part).
        """
        if not self.violation:
            return None
        if self.parts:
            kinds = {p.violation_kind for p in self.parts if p.violation}
            return "floating-point" if kinds == {"floating-point"} else "distributional"
        return self.evidence_kind

    @property
    def evidence_kind(self) -> str:
        """The kind of the evidence this outcome's numbers come from, violation or not:
        ``"floating-point"`` when its strongest bound is a float-bits bound of a bit-level family
        (:data:`~dpaudit.estimators.float_bits.BIT_LEVEL_FAMILIES`), else ``"distributional"``; for
        a combined outcome, that of :attr:`strongest_part` (whose numbers it carries). Equal to
        :attr:`violation_kind` for a violating outcome without parts."""
        if self.parts:
            return self.strongest_part.evidence_kind
        from ..estimators.float_bits import BIT_LEVEL_FAMILIES, bound_family

        return "floating-point" if bound_family(self.bounds[self.strongest]) in BIT_LEVEL_FAMILIES else "distributional"

    @property
    def strongest_part_index(self) -> int:
        """For a combined outcome, the index of the part whose bounds contain ``bounds[strongest]``
        (``bounds`` is the parts' bounds in order); 0 when there are no parts."""
        seen = 0
        for i, p in enumerate(self.parts):
            seen += len(p.bounds)
            if self.strongest < seen:
                return i
        return 0

    @property
    def strongest_part(self) -> "TestOutcome":
        """The outcome that holds the strongest bound: that part of a combined outcome, else ``self``."""
        return self.parts[self.strongest_part_index] if self.parts else self

    @property
    def strongest_bound(self):
        """The bound with the largest margin (``bounds[strongest]``)."""
        return self.bounds[self.strongest]

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["bounds"] = [b.to_dict() for b in self.bounds]
        d["parts"] = [p.to_dict() for p in self.parts]
        d["status"] = self.status
        d["violation_kind"] = self.violation_kind
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "TestOutcome":
        names = {f.name for f in fields(cls)}
        d = {k: v for k, v in d.items() if k in names}
        d["bounds"] = tuple(bound_from_dict(b) for b in d["bounds"])
        d["parts"] = tuple(cls.from_dict(p) for p in d.get("parts", ()))
        return cls(**d)


class Tester(ABC):
    """A claim, two samples and a failure probability in; a :class:`TestOutcome` out.

    Subclasses set ``name`` and implement :meth:`test`; :meth:`supports` says which claims they
    can test. Every tester can be used alone on two sample arrays::

        outcome = RenyiTester().test(x0, x1, RenyiDP(2.0, 0.5), beta=0.05, rng=0)
    """

    name: str = ""

    peek_samples: int = 0
    """Outputs per dataset the tester asks to see once, before an audit's first trial, to settle
    its configuration (:meth:`resolve`); 0 (the default): none."""

    def resolve(self, outputs) -> "Tester":
        """The tester to run for a mechanism whose outputs look like ``outputs`` (a peek of
        :attr:`peek_samples` per dataset of the first pair, drawn from a random stream no trial
        uses, so that the configuration is independent of every test's samples); default ``self``."""
        return self

    floating_point_screen: bool = False
    """True for a tester that screens float outputs for bit-level leaks (the float-bits tester):
    :meth:`distributional_part` drops it after a floating-point-only finding."""

    def distributional_part(self, claim: Claim) -> "tuple[Tester, float] | None":
        """The tester(s) that bound the output distribution itself, without the floating-point
        screen, and the fraction of ``beta`` they hold within this tester's split: what an audit
        keeps running after a floating-point-only finding (:func:`dpaudit.audit.executors.run_trial`),
        each later test at that fraction of its beta, so no beta is spent beyond the fixed split.

        Returns
        -------
        (Tester, float) or None
            None (the default) when this tester holds no separable screen: it is all distributional
            (a floating-point finding cannot happen) or all screen (nothing would be left).
        """
        return None

    def supports(self, claim: Claim) -> bool:
        """Whether this tester can test ``claim`` (default: every claim)."""
        return True

    def require(self, claim: Claim) -> None:
        """Raise :class:`InvalidClaimError` if :meth:`supports` is False for ``claim``."""
        if not self.supports(claim):
            raise InvalidClaimError(f"the {self.name} tester cannot test {claim.describe()}")

    @abstractmethod
    def test(self, p_samples, q_samples, claim: Claim, *, beta: float, rng=None) -> TestOutcome:
        """Test ``claim`` on samples of the outputs on two neighbouring datasets.

        Parameters
        ----------
        p_samples, q_samples : array, shape (n, output_dim)
            Outputs on D0 and on D1.
        claim : PureDP, ApproxDP or RenyiDP
        beta : float
            Failure probability of this whole test (both directions), in (0, 1).
        rng : Generator or int, optional

        Returns
        -------
        TestOutcome
        """

    def config(self) -> dict:
        """Hyper-parameters, recorded in audit reports."""
        return {"tester": self.name}


def profile_outcome(name: str, bounds, claim: Claim, beta: float) -> TestOutcome:
    """Verdict from hockey-stick bounds valid simultaneously for every eps'.

    Each bound is :class:`~dpaudit.estimators.region.ProfileEvidence` (e.g.
    :class:`~dpaudit.estimators.HockeyStickBound`) and is compared with the claim by its
    :meth:`~dpaudit.estimators.region.ProfileEvidence.against`; the verdict rests on the bound
    with the largest margin. Since the evidence bounds
    ``H_{e^eps'}`` for all eps' at once, it is compared with the claim's whole privacy profile
    ``delta(eps')`` (:meth:`PureDP.delta_profile` etc.) at no cost in confidence; for an
    (eps, delta) claim this includes ``eps' = eps`` (paper 000 Alg. 6's ``tau = delta``).
    """
    grid = profile_grid(claim.epsilon)
    checks = [b.against(claim, grid) for b in bounds]
    strongest = int(np.argmax([c.margin for c in checks]))
    best = checks[strongest]
    return TestOutcome(
        tester=name,
        violation=best.violated,
        beta=beta,
        bounds=tuple(bounds),
        strongest=strongest,
        margin=best.margin,
        objective=float(max(b.estimate - best.claimed_delta for b in bounds)),
        threshold=best.threshold,
        witness_epsilon=best.witness_epsilon,
        delta_lower_bound=max(0.0, max(c.delta_lower_bound for c in checks)),
        claimed_delta=best.claimed_delta,
        epsilon_lower_bound=float(max(c.epsilon_lower_bound for c in checks)),
    )


class ProfileTester(Tester):
    """A tester whose estimator bounds the hockey-stick divergence of both directions with region
    bounds valid for every eps' at once (:class:`~dpaudit.estimators.region.ProfileEvidence`).

    The verdict compares them with the claim's whole privacy profile (:func:`profile_outcome`);
    when the sample size makes the test unable to reject whatever the data, the outcome is
    inconclusive with the sample size that would do. Subclasses set ``estimator`` (with
    ``estimate(p, q, *, epsilon, beta, delta_profile, rng)`` returning ``forward``/``reverse``
    bounds), ``estimator_share`` (the fraction of ``beta`` the estimate gets) and
    :meth:`_needed_samples`.
    """

    estimator_share: float = 1.0

    def _needed_samples(self, evidence, outcome: TestOutcome, n_p: int, n_q: int, claim: Claim,
                        beta: float) -> int | None:
        """Samples per dataset the test needs when these sizes make it vacuous, else None (by
        default the estimator's own figure: ``evidence.needed_samples`` when
        ``evidence.vacuous``)."""
        return getattr(evidence, "needed_samples", None) if getattr(evidence, "vacuous", False) else None

    def _estimate(self, p_samples, q_samples, claim: Claim, beta: float, rng):
        """The estimator's evidence at failure probability ``beta`` (``self.estimator`` by default)."""
        return self.estimator.estimate(
            p_samples, q_samples, epsilon=claim.epsilon, beta=beta, delta_profile=claim.delta_profile, rng=rng,
        )

    def test(self, p_samples, q_samples, claim: Claim, *, beta: float, rng=None) -> TestOutcome:
        """:meth:`Tester.test` (at least 4 rows per sample) from the estimator's region bounds.

        The outcome is ``inconclusive=True`` (with ``note`` "inconclusive: needs n >= N samples
        per dataset") when the sample size makes the bounds unable to reject the claim whatever
        the data. Raises ValueError on invalid samples or beta, :class:`NotApplicable` on samples
        the estimator cannot handle.
        """
        beta = check_probability(beta, "beta")
        self.require(claim)
        evidence = self._estimate(p_samples, q_samples, claim, beta * self.estimator_share, rng)
        outcome = profile_outcome(self.name, evidence.bounds, claim, beta)
        needed = self._needed_samples(evidence, outcome, len(p_samples), len(q_samples), claim, beta)
        if needed is None:
            return outcome
        return dataclasses.replace(
            outcome, violation=False, inconclusive=True, margin=-math.inf,
            note=f"inconclusive: needs n >= {needed} samples per dataset",
        )


def finite_or_none(x) -> float | None:
    """``float(x)`` or None for None/NaN (keeps reports free of NaN where a value is absent)."""
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x
