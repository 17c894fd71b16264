"""The immutable, JSON-serialisable result of an audit (paper 000, Algorithm 1): one
:class:`TrialRecord` per trial and the :class:`AuditResult` of the whole audit.

Kept apart from the loop (:mod:`dpaudit.audit.loop`) so that the executors, the ledger and the
reports can build and read results without importing the loop.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from .._version import library_versions
from ..datasets import NeighbouringPair
from ..privacy.claims import Claim, claim_from_dict
from ..testers import TestOutcome
from ..testers.base import VIOLATION_KINDS, verdict_word

__all__ = ["AuditResult", "SCHEMA_VERSION", "StageRecord", "TrialRecord", "library_versions"]

SCHEMA_VERSION = 2
EXIT_FLOAT_LEAK = 5
"""Exit code of an audit whose only finding is a floating-point leak (= ``dpaudit.cli.options.EXIT_FLOAT_LEAK``;
kept here too so that results need not import the command line)."""
_READABLE_SCHEMAS = (1, 2)


@dataclass(frozen=True)
class StageRecord:
    """One stage of a sequential trial (:mod:`dpaudit.audit.sequential`).

    Attributes
    ----------
    num_samples : int
        Samples per dataset the stage's test used (cumulative over the stages so far).
    beta : float
        Failure probability of the stage's test (the stages' betas sum to at most the trial's).
    status : str
        The stage's verdict: ``"violation"``, ``"inconclusive"`` or ``"pass"``.
    margin : float
        The stage's margin (positive iff a violation).
    futile : bool
        Whether the stage met the futility rule (:func:`~dpaudit.audit.sequential.is_futile`).
    distributional_only : bool
        Whether the stage ran only the tester's distributional part, without its floating-point
        screen, after a floating-point-only finding (:func:`dpaudit.audit.executors.run_trial`);
        ``beta`` is then that part's share.
    """

    num_samples: int
    beta: float
    status: str
    margin: float
    futile: bool = False
    distributional_only: bool = False

    def to_dict(self) -> dict:
        """Plain-JSON form (read back by :meth:`from_dict`)."""
        return {"num_samples": self.num_samples, "beta": self.beta, "status": self.status,
                "margin": self.margin, "futile": self.futile, "distributional_only": self.distributional_only}

    @classmethod
    def from_dict(cls, d: dict) -> "StageRecord":
        """Rebuild a stage from :meth:`to_dict` output."""
        return cls(num_samples=int(d["num_samples"]), beta=float(d["beta"]), status=str(d["status"]),
                   margin=float(d["margin"]), futile=bool(d.get("futile", False)),
                   distributional_only=bool(d.get("distributional_only", False)))


@dataclass(frozen=True)
class TrialRecord:
    """One trial: the pair tested, how many samples, what the tester found, how long it took.

    Attributes
    ----------
    index : int
        0-based position of the trial: the key of its random stream (``seed_key``). Tables and
        reports number trials from 1; ``to_dict`` gives that number as ``trial`` (``index + 1``).
    finder : str
        Which finder proposed the pair.
    pair : NeighbouringPair
    num_samples : int
        Outputs drawn on each dataset and used by the last test (fewer than ``planned_samples``
        when a sequential trial stopped early).
    outcome : TestOutcome
        The last stage's outcome (the only one for a fixed-size trial).
    seed_key : list of int
        ``SeedSequence`` spawn key of this trial's random stream (reproduces it from the seed).
    sample_seconds, test_seconds : float
        Time spent sampling the mechanism (both datasets; summed over chunks when the sampling
        was split across Dask workers) and testing.
    run : int
        Which run of a persistent audit ran it (0: the first, then one per resume).
    stages : tuple of StageRecord
        The stages run, in order (one for a fixed-size trial; empty in records written before
        stages existed).
    stop_reason : str
        Why the trial stopped: ``"violation"`` (a stage rejected the claim), ``"futility"``
        (:func:`~dpaudit.audit.sequential.is_futile`) or ``"budget"`` (the last stage ran).
    planned_samples : int or None
        Samples per dataset of the full trial (its last planned stage); None: ``num_samples``.
    """

    index: int
    finder: str
    pair: NeighbouringPair
    num_samples: int
    outcome: TestOutcome
    seed_key: tuple
    sample_seconds: float
    test_seconds: float
    run: int = 0
    stages: tuple = ()
    stop_reason: str = ""
    planned_samples: int | None = None

    @property
    def stopped_by(self) -> str:
        """:attr:`stop_reason`, or for a record without one ``"violation"``/``"budget"`` from its outcome."""
        return self.stop_reason or ("violation" if self.outcome.violation else "budget")

    @property
    def full_samples(self) -> int:
        """Samples per dataset the trial would have used without stopping early."""
        return int(self.planned_samples if self.planned_samples is not None else self.num_samples)

    @property
    def stopped_early_at_violation(self) -> bool:
        """True when a sequential trial stopped at a rejecting stage before its full samples: its
        evidence (the epsilon lower bound included) rests on ``num_samples`` of ``full_samples``."""
        return self.stopped_by == "violation" and self.num_samples < self.full_samples

    def to_dict(self) -> dict:
        return {
            "trial": self.index + 1,
            "index": self.index,
            "finder": self.finder,
            "pair": self.pair.to_dict(),
            "num_samples": self.num_samples,
            "outcome": self.outcome.to_dict(),
            "seed_key": list(self.seed_key),
            "sample_seconds": self.sample_seconds,
            "test_seconds": self.test_seconds,
            "run": self.run,
            "planned_samples": self.full_samples,
            "stop_reason": self.stopped_by,
            "stages": [st.to_dict() for st in self.stages],
        }

    @classmethod
    def from_dict(cls, d: dict) -> "TrialRecord":
        """Rebuild a trial from :meth:`to_dict` output; records written before stages existed
        (no ``stages``, ``stop_reason``, ``planned_samples``) load as fixed-size trials."""
        return cls(
            index=d["index"],
            finder=d["finder"],
            pair=NeighbouringPair.from_dict(d["pair"]),
            num_samples=d["num_samples"],
            outcome=TestOutcome.from_dict(d["outcome"]),
            seed_key=tuple(d["seed_key"]),
            sample_seconds=d["sample_seconds"],
            test_seconds=d["test_seconds"],
            run=d.get("run", 0),
            stages=tuple(StageRecord.from_dict(st) for st in d.get("stages", ())),
            stop_reason=d.get("stop_reason", ""),
            planned_samples=d.get("planned_samples"),
        )


def _leaves(outcome) -> list:
    """The outcomes of the testers that ran (the parts of a combined outcome, flattened)."""
    if not outcome.parts:
        return [outcome]
    return [leaf for p in outcome.parts for leaf in _leaves(p)]


def _violating_leaves(outcome) -> list:
    """The violating outcomes of the testers that ran (the parts of a combined outcome, flattened)."""
    if not outcome.parts:
        return [outcome] if outcome.violation else []
    return [leaf for p in outcome.parts for leaf in _violating_leaves(p)]


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
        The first trial's failure probability (``trial_betas[0]``): ``beta / trial_budget`` with
        the even split, half the trials' beta with the front-loaded one.
    trial_budget : int
        Number of trials the failure probability was split over.
    trials : tuple of TrialRecord
        Every finished trial, by index (for a resumed audit: of every run).
    strongest_trial : int or None
        Index of the trial with the strongest evidence: a violating trial if any (a
        distributional one before a floating-point one, then the largest margin), else the trial
        with the largest margin.
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
        ISO-8601 UTC time (of the first run, for a resumed audit).
    wall_seconds : float
        Wall time of the audit (summed over runs for a resumed audit).
    study : dict
        For a persistent audit: storage (password redacted), study name, and the runs (start,
        wall time, trials finished); empty otherwise.
    execution : dict
        Where trials ran: ``{"executor": "in-process"}`` or the Dask scheduler and workers.
    adversarial : dict
        The adversarial-inputs stage run before the trials
        (:func:`dpaudit.audit.adversarial.screen_stage`: its beta, samples and one result per
        input); empty when it was not run. A certified leak there makes ``violation`` True.
    trial_betas : tuple of float
        Each trial's failure probability, by trial index, fixed before the run
        (:func:`dpaudit.audit.beta_split.trial_betas`); they sum to at most the trials' beta.
        Empty in results read from reports written before it existed (their split was even:
        see :attr:`betas`).
    beta_split : str
        ``"even"`` or ``"front"`` (:mod:`dpaudit.audit.beta_split`).
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
    study: dict = field(default_factory=dict)
    execution: dict = field(default_factory=dict)
    adversarial: dict = field(default_factory=dict)
    trial_betas: tuple = ()
    beta_split: str = "even"

    @property
    def betas(self) -> tuple:
        """Each trial's failure probability: :attr:`trial_betas`, or for a result read from an
        older report (even split) ``beta_per_trial`` repeated ``trial_budget`` times."""
        return tuple(self.trial_betas) or (self.beta_per_trial,) * int(self.trial_budget)

    @property
    def split_summary(self) -> str:
        """The split in words, e.g. ``"0.001 each"`` or ``"0.005 to the first, 0.000556 to each
        of the other 9"``."""
        b = self.betas
        if self.beta_split == "front" and len(b) > 1:
            return f"front-loaded: {b[0]:g} to the first, {b[1]:g} to each of the other {len(b) - 1}"
        return f"{b[0]:g} each" if b else "-"

    @property
    def adversarial_leaks(self) -> list:
        """The adversarial inputs with a certified leak (dicts of :attr:`adversarial`'s ``results``)."""
        return [r for r in self.adversarial.get("results", ()) if r.get("status") == "leak"]

    @property
    def kind(self):
        """The :class:`~dpaudit.testers.ViolationKind` of :attr:`violation_kind` (None without a violation)."""
        name = self.violation_kind
        if name != "adversarial input":
            return None if name is None else VIOLATION_KINDS[name]
        from ..testers.base import ViolationKind

        return ViolationKind("adversarial input", "ADVERSARIAL-INPUT LEAK",
                             "on an adversarial record value the outputs reach a set the neighbouring dataset never "
                             "reaches (a certified leak)", self.advice or "")

    @property
    def leak_size(self):
        """The finding sized to the end, or None: when the strongest trial is a violation whose
        deciding region ``S`` held no held-out output of one dataset (``q_count == 0``), a finite
        epsilon under-states it; this is the :class:`~dpaudit.audit.leak_size.LeakSize` of ``S``
        from the bound's own held-out counts and Clopper-Pearson bounds (the finding's confidence,
        no further beta): every (epsilon', delta') guarantee has ``delta' >= P(S) lower bound -
        e^epsilon' Q(S) upper bound``.
        """
        s = self.strongest
        if s is None or not s.outcome.violation or getattr(self.claim, "alpha", None) is not None:
            return None
        b = s.outcome.bounds[s.outcome.strongest]
        counts = [getattr(b, a, None) for a in ("p_count", "n_test_p", "q_count", "n_test_q", "p_mass_lower",
                                                  "q_mass_upper")]
        if any(c is None for c in counts) or counts[2] != 0 or counts[0] <= 0:
            return None
        from .leak_size import LeakSize

        return LeakSize(getattr(b, "region", "") or "the test region S", int(counts[0]), int(counts[1]), 0,
                        int(counts[3]), float(counts[4]), float(counts[5]), float(b.beta), direction=b.direction)

    def leak_size_dict(self) -> dict | None:
        """:attr:`leak_size` in plain JSON with the certified delta at the claimed epsilon and a
        sentence (``text``), or None."""
        leak = self.leak_size
        if leak is None:
            return None
        eps = float(self.claim.epsilon)
        d = leak.delta_lower(eps)
        text = (f"no epsilon <= {eps:g} holds below delta = {d:.3g} (an output set one dataset never reached: "
                f"{leak.hits_p}/{leak.n_p} held-out outputs vs 0/{leak.n_q}; P(S) >= {leak.p_lower:.3g}, so delta "
                f"may be that large at every epsilon; confidence {1 - leak.beta:g})")
        return {**leak.to_dict(), "delta_at_claimed_epsilon": d, "text": text}

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
    def exit_code(self) -> int:
        """CLI exit code (:data:`dpaudit.cli.options.EXIT_CODES`): 1 for a violation of the claim by the
        output distribution (or an adversarial-input leak), 5 when the only finding is a
        floating-point leak (:attr:`violation_kind` ``"floating-point"``: the float64 bit patterns
        reject the claim, the distribution did not), 3 if inconclusive, else 0. A CI job that
        gates on distributional violations alone fails on 1 and accepts 5."""
        if self.violation:
            return EXIT_FLOAT_LEAK if self.violation_kind == "floating-point" else 1
        return 3 if self.inconclusive else 0

    @property
    def trials_summary(self) -> str:
        """How many trials ran of the budget, as the CLI and the reports print it: ``"10 of 10
        run"``, ``"1 of 10 run (stopped at the first violation)"``."""
        return (f"{len(self.trials)} of {self.trial_budget} run"
                + (" (stopped at the first violation)" if self.stopped_early else ""))

    @property
    def violation_kind(self) -> str | None:
        """``"distributional"``, ``"floating-point"``, ``"adversarial input"`` (the adversarial stage,
        :attr:`adversarial`, certified a leak and no trial found a distributional violation; a
        floating-point finding of the trials is then an additional one) or None (no violation found).

        ``"floating-point"`` when every violating trial's outcome is a floating-point one (only
        bit-level features of the outputs rejected the claim:
        :attr:`TestOutcome.violation_kind <dpaudit.testers.TestOutcome.violation_kind>`); a
        single distributional trial makes the audit's violation distributional.
        """
        if not self.violation:
            return None
        kinds = {t.outcome.violation_kind for t in self.trials if t.outcome.violation}
        if self.adversarial_leaks and kinds <= {"floating-point"}:
            # the adversarial stage's leak (e.g. NaN outputs) is no floating-point finding: it names the
            # verdict, and a floating-point leak of the trials is an additional finding (exit 1, not 5)
            return "adversarial input"
        return "floating-point" if kinds == {"floating-point"} else "distributional"

    @property
    def findings(self) -> list:
        """Every violation the trials found, by kind: one dict per violating tester of each
        violating trial (the parts of a combined outcome), distributional ones first, with
        ``kind`` ("distributional" or "floating-point"), ``headline``, ``trial`` (1-based),
        ``tester``, ``margin``, ``epsilon_lower_bound`` and ``note``. A distributional verdict
        (:attr:`violation_kind`) may come with floating-point findings (the float64 sampler leaks
        too): :attr:`additional_findings` lists them. Empty without a violating trial."""
        out = []
        for t in self.trials:
            o = t.outcome
            if not o.violation:
                continue
            for p in _violating_leaves(o):
                kind = p.violation_kind
                out.append({"kind": kind, "headline": VIOLATION_KINDS[kind].headline, "trial": t.index + 1,
                            "tester": p.tester, "margin": p.margin, "epsilon_lower_bound": p.epsilon_lower_bound,
                            "note": p.note})
        return sorted(out, key=lambda f: (f["kind"] != "distributional", f["trial"]))

    @property
    def epsilon_lower_bounds(self) -> dict:
        """The largest certified empirical epsilon of each kind of evidence, with the tester and
        trial that produced it: ``{"distributional": {...} or None, "floating-point": {...} or None}``,
        each ``{"epsilon_lower_bound", "tester", "trial"}``.

        Every tester that ran in every trial gives its own bound (the parts of a combined outcome,
        :attr:`TestOutcome.evidence_kind <dpaudit.testers.TestOutcome.evidence_kind>` labelling
        each); all of them hold together with probability at least ``1 - beta`` (each test holds
        at its share of beta, union bound), so each kind's largest is a lower bound at that
        confidence. The two kinds are never mixed: the floating-point one bounds the float64
        implementation (its bit patterns), the distributional one the output distribution, which
        is what a distributional verdict is about. Values are of the claim's kind (an RDP epsilon
        at the claim's alpha for a Rényi claim); 0.0 where the evidence rejects no epsilon.
        """
        best: dict = {"distributional": None, "floating-point": None}
        for t in self.trials:
            for leaf in _leaves(t.outcome):
                eps = leaf.epsilon_lower_bound
                if eps is None:
                    continue
                kind = leaf.evidence_kind
                if best[kind] is None or eps > best[kind]["epsilon_lower_bound"]:
                    best[kind] = {"epsilon_lower_bound": float(eps), "tester": leaf.tester, "trial": t.index + 1}
        return best

    @property
    def additional_findings(self) -> list:
        """The :attr:`findings` of another kind than :attr:`violation_kind` (the floating-point
        ones under a distributional verdict); empty otherwise."""
        kind = self.violation_kind
        if kind not in VIOLATION_KINDS and kind != "adversarial input":
            return []
        return [f for f in self.findings if f["kind"] != kind]

    @property
    def also_found(self) -> str | None:
        """One sentence on :attr:`additional_findings` for the CLI, reports and ``assert_dp``, or None."""
        extra = self.additional_findings
        if not extra:
            return None
        trials = sorted({f["trial"] for f in extra})
        testers = ", ".join(sorted({f["tester"] for f in extra}))
        eps = [f["epsilon_lower_bound"] for f in extra if f.get("epsilon_lower_bound") is not None]
        return (f"a FLOATING-POINT LEAK too ({testers}, trial{'s' if len(trials) > 1 else ''} "
                f"{', '.join(map(str, trials))}"
                + (f"; its own bound: epsilon >= {max(eps):.4g} for the float64 bit patterns" if eps else "")
                + "): the float64 outputs also leak through their bit patterns. Fix the "
                "finding above first; then use a snapping mechanism or a discrete sampler.")

    @property
    def advice(self) -> str | None:
        """One sentence on what the violation means and what to do (:class:`~dpaudit.testers.ViolationKind`);
        None when no violation was found."""
        kind = self.violation_kind
        if kind == "adversarial input":
            from .adversarial import stage_advice

            return stage_advice(self.adversarial)
        return None if kind is None else VIOLATION_KINDS[kind].advice

    @property
    def verdict(self) -> str:
        """``"violation"``, ``"inconclusive"`` or ``"no violation found"`` (one per :attr:`exit_code`)."""
        return verdict_word(self.violation, self.inconclusive, "no violation found")

    def to_dict(self) -> dict:
        s = self.strongest
        summary = None
        if s is not None:
            o = s.outcome
            b = o.bounds[o.strongest]
            summary = {
                "trial": s.index + 1,
                "index": s.index,
                "tester": o.strongest_part.tester,  # every number below is this tester's (issue 44)
                "kind": o.evidence_kind,  # "distributional" or "floating-point": what the numbers are about
                "status": o.status,
                "violation_kind": o.violation_kind,
                "note": o.note,
                "pair": s.pair.to_dict(),
                "direction": b.direction,
                "divergence": b.divergence,
                "divergence_estimate": b.estimate,
                "divergence_lower_bound": b.lower,
                "region": getattr(b, "region", None) or None,  # the test region S, as its estimator describes it
                "delta_lower_bound_at_claimed_epsilon": o.delta_lower_bound,
                "claimed_delta": o.claimed_delta,
                "epsilon_lower_bound": o.epsilon_lower_bound,
                "witness_epsilon": o.witness_epsilon,
                "margin": o.margin,
                "leak_size": self.leak_size_dict(),  # a region one dataset never reached, sized to the end
            }
        return {
            "schema_version": SCHEMA_VERSION,
            "mechanism": self.mechanism,
            "claim": self.claim.to_dict(),
            "verdict": self.verdict,
            "violation": self.violation,
            "violation_kind": self.violation_kind,
            "advice": self.advice,
            "findings": self.findings,
            "also_found": self.also_found,
            "epsilon_lower_bounds": self.epsilon_lower_bounds,
            "beta": self.beta,
            "beta_per_trial": self.beta_per_trial,
            "beta_split": self.beta_split,
            "trial_betas": list(self.betas),
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
            "study": self.study,
            "execution": self.execution,
            **({"adversarial": self.adversarial} if self.adversarial else {}),
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
            study=d.get("study", {}),
            execution=d.get("execution", {}),
            adversarial=d.get("adversarial", {}),
            trial_betas=tuple(d.get("trial_betas", ())),
            beta_split=d.get("beta_split", "even"),
        )
