"""The audit loop (paper 000, Algorithm 1) and its immutable, JSON-serialisable result.

For t = 1..T: a finder proposes neighbouring datasets (D0, D1); the mechanism is sampled on both;
the tester bounds the divergence in both directions; a violation is reported when a lower bound
exceeds what the claim allows. The failure probability ``beta`` is spent uniformly over the trial
budget: each trial is tested at ``beta / T`` (and each direction at ``beta / 2T``), so by the union
bound a mechanism that satisfies its claim is accused with probability at most ``beta`` however
many trials run and whether or not the audit stops early. (DP-Auditorium tests every trial and
direction at ``beta`` and still reports ``beta``.)
"""

from __future__ import annotations

import datetime as _dt
import json
import platform
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .claims import Claim, claim_from_dict
from .datasets import NeighbouringPair
from .mechanisms.base import Mechanism, draw
from .testers import HockeyStickTester, Tester, TestOutcome

__all__ = ["AuditResult", "TrialRecord", "audit", "library_versions"]

SCHEMA_VERSION = 2
_READABLE_SCHEMAS = (1, 2)


def library_versions() -> dict:
    """Versions of Python and of the libraries a result depends on."""
    import scipy
    import torch

    from . import __version__

    return {
        "dpaudit": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "torch": torch.__version__,
    }


@dataclass(frozen=True)
class TrialRecord:
    """One trial: the pair tested, how many samples, what the tester found, how long it took.

    Attributes
    ----------
    index : int
        0-based trial number.
    finder : str
        Which finder proposed the pair.
    pair : NeighbouringPair
    num_samples : int
        Outputs drawn on each dataset.
    outcome : TestOutcome
    seed_key : list of int
        ``SeedSequence`` spawn key of this trial's random stream (reproduces it from the seed).
    sample_seconds, test_seconds : float
        Wall time spent sampling the mechanism (both datasets) and testing.
    """

    index: int
    finder: str
    pair: NeighbouringPair
    num_samples: int
    outcome: TestOutcome
    seed_key: tuple
    sample_seconds: float
    test_seconds: float

    def to_dict(self) -> dict:
        return {
            "index": self.index,
            "finder": self.finder,
            "pair": self.pair.to_dict(),
            "num_samples": self.num_samples,
            "outcome": self.outcome.to_dict(),
            "seed_key": list(self.seed_key),
            "sample_seconds": self.sample_seconds,
            "test_seconds": self.test_seconds,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "TrialRecord":
        return cls(
            index=d["index"],
            finder=d["finder"],
            pair=NeighbouringPair.from_dict(d["pair"]),
            num_samples=d["num_samples"],
            outcome=TestOutcome.from_dict(d["outcome"]),
            seed_key=tuple(d["seed_key"]),
            sample_seconds=d["sample_seconds"],
            test_seconds=d["test_seconds"],
        )


@dataclass(frozen=True)
class AuditResult:
    """Everything an audit did and found; serialises to JSON with :meth:`to_json`.

    Attributes
    ----------
    mechanism : str
    claim : Claim
    violation : bool
        True if any trial found a violation (a false accusation has probability <= beta).
    beta : float
        Failure probability of the whole audit.
    beta_per_trial : float
        ``beta / trial_budget``.
    trial_budget : int
        Number of trials the failure probability was split over.
    trials : tuple of TrialRecord
        Every trial run, in order.
    strongest_trial : int or None
        Index of the trial with the strongest evidence: a violating trial if any (the largest
        margin among them), else the trial with the largest margin.
    stopped_early : bool
        True when the audit stopped at the first violation before its budget.
    seed : int
        Root seed; every trial's stream is ``SeedSequence(seed).spawn`` ed from it.
    neighbouring : dict
        The relation used by the finders (name, domain, size range), if known.
    tester : dict
        Tester name and hyper-parameters.
    finder : str
    versions : dict
    started_at : str
        ISO-8601 UTC time.
    wall_seconds : float
    """

    mechanism: str
    claim: Claim
    violation: bool
    beta: float
    beta_per_trial: float
    trial_budget: int
    trials: tuple
    strongest_trial: int | None
    stopped_early: bool
    seed: int
    tester: dict
    finder: str
    neighbouring: dict = field(default_factory=dict)
    versions: dict = field(default_factory=dict)
    started_at: str = ""
    wall_seconds: float = 0.0

    @property
    def strongest(self) -> TrialRecord | None:
        """The trial with the strongest evidence, or None if no trial ran."""
        return None if self.strongest_trial is None else self.trials[self.strongest_trial]

    @property
    def inconclusive(self) -> bool:
        """True when no violation was found and every trial was inconclusive (samples too few
        for the tester's bound to say anything; see each outcome's ``note``)."""
        return (not self.violation) and bool(self.trials) and all(t.outcome.inconclusive for t in self.trials)

    @property
    def verdict(self) -> str:
        """``"violation"``, ``"inconclusive"`` or ``"no violation found"``."""
        if self.violation:
            return "violation"
        return "inconclusive" if self.inconclusive else "no violation found"

    @property
    def exit_code(self) -> int:
        """CLI exit code: 1 if a violation was found, 3 if inconclusive, else 0."""
        if self.violation:
            return 1
        return 3 if self.inconclusive else 0

    def to_dict(self) -> dict:
        s = self.strongest
        summary = None
        if s is not None:
            o = s.outcome
            b = o.bounds[o.strongest]
            summary = {
                "trial": s.index,
                "tester": o.tester if not o.parts else o.parts[_part_of(o)].tester,
                "status": o.status,
                "note": o.note,
                "pair": s.pair.to_dict(),
                "direction": b.direction,
                "divergence": b.divergence,
                "divergence_estimate": b.estimate,
                "divergence_lower_bound": b.lower,
                "delta_lower_bound_at_claimed_epsilon": o.delta_lower_bound,
                "claimed_delta": o.claimed_delta,
                "epsilon_lower_bound": o.epsilon_lower_bound,
                "witness_epsilon": o.witness_epsilon,
                "margin": o.margin,
            }
        return {
            "schema_version": SCHEMA_VERSION,
            "mechanism": self.mechanism,
            "claim": self.claim.to_dict(),
            "verdict": self.verdict,
            "violation": self.violation,
            "beta": self.beta,
            "beta_per_trial": self.beta_per_trial,
            "trial_budget": self.trial_budget,
            "trials_run": len(self.trials),
            "stopped_early": self.stopped_early,
            "strongest_trial": self.strongest_trial,
            "evidence": summary,
            "seed": self.seed,
            "tester": self.tester,
            "finder": self.finder,
            "neighbouring": self.neighbouring,
            "versions": self.versions,
            "started_at": self.started_at,
            "wall_seconds": self.wall_seconds,
            "trials": [t.to_dict() for t in self.trials],
        }

    def to_json(self, indent: int | None = 2) -> str:
        """The result as a JSON document (see :meth:`to_dict`)."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=True)

    @classmethod
    def from_dict(cls, d: dict) -> "AuditResult":
        """Rebuild a result from :meth:`to_dict` output (e.g. a JSON report)."""
        if d.get("schema_version") not in _READABLE_SCHEMAS:
            raise ValueError(f"unsupported report schema_version {d.get('schema_version')!r}")
        return cls(
            mechanism=d["mechanism"],
            claim=claim_from_dict(d["claim"]),
            violation=d["violation"],
            beta=d["beta"],
            beta_per_trial=d["beta_per_trial"],
            trial_budget=d["trial_budget"],
            trials=tuple(TrialRecord.from_dict(t) for t in d["trials"]),
            strongest_trial=d["strongest_trial"],
            stopped_early=d["stopped_early"],
            seed=d["seed"],
            tester=d["tester"],
            finder=d["finder"],
            neighbouring=d.get("neighbouring", {}),
            versions=d.get("versions", {}),
            started_at=d.get("started_at", ""),
            wall_seconds=d.get("wall_seconds", 0.0),
        )


def _part_of(outcome: TestOutcome) -> int:
    """Index of the part (of a combined outcome) that holds the strongest bound."""
    seen = 0
    for i, p in enumerate(outcome.parts):
        seen += len(p.bounds)
        if outcome.strongest < seen:
            return i
    return 0


def audit(
    mechanism: Mechanism,
    claim: Claim,
    finder,
    *,
    tester: Tester | None = None,
    num_samples: int = 50_000,
    trials: int = 10,
    beta: float = 0.01,
    exhaustive: bool = False,
    seed: int | None = None,
    neighbouring: dict | None = None,
    on_trial_start: Callable[[int, NeighbouringPair], None] | None = None,
    on_trial_end: Callable[[TrialRecord], None] | None = None,
) -> AuditResult:
    """Search neighbouring datasets for a violation of ``claim`` (paper 000, Algorithm 1).

    Parameters
    ----------
    mechanism : Mechanism
        The mechanism under audit (anything with ``sample(dataset, num_samples, rng)``).
    claim : PureDP, ApproxDP or RenyiDP
        The guarantee it claims.
    finder : Finder
        Proposes pairs (``GridFinder``, ``RandomFinder``, ``ChainFinder``...).
    tester : Tester, optional
        Default: ``HockeyStickTester()`` on CPU. Any :class:`~dpaudit.testers.Tester`, e.g.
        ``make_tester("all")``.
    num_samples : int, default 50_000
        Outputs drawn on **each** dataset per trial.
    trials : int, default 10
        Trial budget T. If the finder can propose fewer pairs, its capacity is the budget.
    beta : float, default 0.01
        Probability of accusing a mechanism that satisfies its claim (whole audit).
    exhaustive : bool, default False
        Run every trial instead of stopping at the first violation.
    seed : int, optional
        Root seed (drawn at random and recorded if omitted).
    neighbouring : dict, optional
        Description of the relation, stored in the result.
    on_trial_start, on_trial_end : callable, optional
        Progress callbacks.

    Returns
    -------
    AuditResult

    Raises
    ------
    ValueError
        On invalid num_samples, trials or beta.
    InvalidClaimError
        If the tester cannot test this kind of claim.
    MechanismError
        If the mechanism fails or returns unusable outputs (never silently dropped).
    """
    if int(num_samples) != num_samples or num_samples < 8:
        raise ValueError(f"num_samples must be an integer >= 8, got {num_samples!r}")
    if int(trials) != trials or trials < 1:
        raise ValueError(f"trials must be a positive integer, got {trials!r}")
    if not (0.0 < beta < 1.0):
        raise ValueError(f"beta must be in (0, 1), got {beta!r}")
    tester = tester or HockeyStickTester()
    tester.require(claim)
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % (2**63))
    budget = int(trials)
    if getattr(finder, "capacity", None) is not None:
        budget = min(budget, int(finder.capacity))
    beta_trial = beta / budget
    root = np.random.SeedSequence(seed)
    streams = root.spawn(budget)

    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    t_start = time.perf_counter()
    records: list[TrialRecord] = []
    stopped_early = False
    name = getattr(mechanism, "name", type(mechanism).__name__)
    for t in range(budget):
        pair = finder.ask()
        if pair is None:
            break
        if on_trial_start:
            on_trial_start(t, pair)
        ss = streams[t]
        sample_rng, test_rng = (np.random.default_rng(s) for s in ss.spawn(2))
        t0 = time.perf_counter()
        x0 = draw(mechanism, pair.d0, int(num_samples), sample_rng)
        x1 = draw(mechanism, pair.d1, int(num_samples), sample_rng, output_dim=x0.shape[1])
        t1 = time.perf_counter()
        outcome = tester.test(x0, x1, claim, beta=beta_trial, rng=test_rng)
        t2 = time.perf_counter()
        record = TrialRecord(
            index=t,
            finder=getattr(finder, "last_finder", None) or getattr(finder, "name", type(finder).__name__),
            pair=pair,
            num_samples=int(num_samples),
            outcome=outcome,
            seed_key=tuple(int(k) for k in ss.spawn_key),
            sample_seconds=t1 - t0,
            test_seconds=t2 - t1,
        )
        records.append(record)
        finder.tell(pair, outcome.objective)
        if on_trial_end:
            on_trial_end(record)
        if outcome.violation and not exhaustive:
            stopped_early = t + 1 < budget
            break

    strongest = None
    if records:
        strongest = max(
            range(len(records)), key=lambda i: (records[i].outcome.violation, records[i].outcome.margin)
        )
    return AuditResult(
        mechanism=name,
        claim=claim,
        violation=any(r.outcome.violation for r in records),
        beta=beta,
        beta_per_trial=beta_trial,
        trial_budget=budget,
        trials=tuple(records),
        strongest_trial=strongest,
        stopped_early=stopped_early,
        seed=int(seed),
        tester=tester.config(),
        finder=getattr(finder, "name", type(finder).__name__),
        neighbouring=neighbouring or {},
        versions=library_versions(),
        started_at=started,
        wall_seconds=time.perf_counter() - t_start,
    )
