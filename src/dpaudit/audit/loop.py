"""The audit loop (paper 000, Algorithm 1) and its immutable, JSON-serialisable result.

For t = 1..T: a finder proposes neighbouring datasets (D0, D1); the mechanism is sampled on both;
the tester bounds the divergence in both directions; a violation is reported when a lower bound
exceeds what the claim allows. The failure probability ``beta`` is spent uniformly over the trial
budget: each trial is tested at ``beta / T`` (and each direction at ``beta / 2T``), so by the union
bound a mechanism that satisfies its claim is accused with probability at most ``beta`` however
many trials run and whether or not the audit stops early. (DP-Auditorium tests every trial and
direction at ``beta`` and still reports ``beta``.)

The budget ``T`` is fixed before the first trial and never changes: a persistent audit
(``storage=...``) stores it with the claim, tester, seed and the other settings, and a resumed
audit refuses different ones (:mod:`dpaudit.audit.ledger`). Trial ``t``'s randomness is spawn key ``t`` of
the root seed whichever process or Dask worker runs it (:mod:`dpaudit.audit.executors`), and trials may run
in parallel: the pairs are chosen from earlier trials only, so each test still holds at
``beta / T`` given its pair.
"""

from __future__ import annotations

import datetime as _dt
import time
from dataclasses import replace
from typing import Callable

import numpy as np

from .._killpoints import kill_point
from .._validate import check_int, check_probability
from ..datasets import NeighbouringPair
from ..mechanisms.base import Mechanism
from ..privacy.claims import Claim
from ..search.finders import Finder, as_finder
from ..testers import Tester, default_tester_name, make_tester
from .executors import DEFAULT_CHUNK_SIZE, Executor, InProcessExecutor, TrialSpec, distributional_part
from .beta_split import resolve_beta_split, trial_betas
from .ledger import resolve_study, stored_setting
from .sequential import normalise_stages, stage_schedule
from .result import AuditResult, TrialRecord, library_versions

__all__ = ["AuditResult", "TrialRecord", "audit", "library_versions"]

DEFAULT_NUM_SAMPLES = 50_000
DEFAULT_TRIALS = 10
DEFAULT_BETA = 0.01


PEEK_SPAWN_KEY = 2**32
"""Spawn key of the peek's random stream under the root seed (trials use keys 0..T-1 < 2**32)."""


def _peek_resolve(tester: Tester, mechanism: Mechanism, pair: NeighbouringPair, seed: int) -> Tester:
    """``tester.resolve(outputs)`` on ``tester.peek_samples`` outputs per dataset of ``pair``, drawn
    from spawn key :data:`PEEK_SPAWN_KEY` of the root seed (independent of every trial's samples,
    and the same on resume). A mechanism that fails here is left to fail in its trial, where the
    error is reported: the tester is then returned unresolved (it stays sound without a peek)."""
    from ..errors import MechanismError
    from ..mechanisms.base import draw

    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(PEEK_SPAWN_KEY,)))
    n = int(tester.peek_samples)
    try:
        x0 = draw(mechanism, pair.d0, n, rng)
        x1 = draw(mechanism, pair.d1, n, rng, output_dim=x0.shape[1])
    except (MechanismError, ValueError):
        return tester
    return tester.resolve(np.concatenate([x0, x1]))


def _check_inputs(num_samples, trials, beta) -> None:
    """The numbers :func:`audit` is given (None: take the default or the stored one)."""
    if num_samples is not None:
        check_int(num_samples, "num_samples", 8)
    if trials is not None:
        check_int(trials, "trials", 1)
    if beta is not None:
        check_probability(beta, "beta")


def _jsonable_stages(stages):
    """A normalised ``stages`` setting as stored in a ledger (a list for explicit sizes)."""
    return stages if isinstance(stages, str) else [int(n) for n in stages]


def audit(
    mechanism: Mechanism,
    claim: Claim,
    finder: Finder,
    *,
    tester: Tester | None = None,
    num_samples: int | None = None,
    trials: int | None = None,
    beta: float | None = None,
    exhaustive: bool = False,
    seed: int | None = None,
    neighbouring: dict | None = None,
    on_trial_start: Callable[[int, NeighbouringPair], None] | None = None,
    on_trial_end: Callable[[TrialRecord], None] | None = None,
    on_start: Callable[[int, tuple], None] | None = None,
    storage=None,
    study_name: str | None = None,
    resume: bool = False,
    executor: Executor | None = None,
    chunk_size: int | None = None,
    stages="auto",
    processes: int | str | None = None,
    adversarial=False,
    adversarial_pairs=(),
    beta_split: str | None = "auto",
) -> AuditResult:
    """Search neighbouring datasets for a violation of ``claim`` (paper 000, Algorithm 1).

    Parameters
    ----------
    mechanism : Mechanism
        The mechanism under audit (anything with ``sample(dataset, num_samples, rng)``).
    claim : PureDP, ApproxDP or RenyiDP
        The guarantee it claims.
    finder : Finder
        Proposes pairs (``GridFinder``, ``RandomFinder``, ``SpaceGridFinder``, ``BayesFinder``,
        ``EvolutionFinder``, ``ChainFinder``...).
    tester : Tester, optional
        Default: ``make_tester(default_tester_name(claim))`` on CPU, as ``dpaudit test``: the
        sequential tester (:class:`~dpaudit.testers.sequential.SequentialTester`, testing by
        betting, docs/sequential.md), plus the float-bits screen at a tenth of beta when the outputs
        are non-integer floats (:class:`~dpaudit.testers.FloatScreenTester`); with ``stages``
        other than ``"auto"``, the staged default of before (``default_tester_name(claim,
        sequential=False)``: the hockey-stick tester, with the Rényi tester for a Rényi claim). Any :class:`~dpaudit.testers.Tester`, e.g.
        ``make_tester("all")``. A tester with ``peek_samples > 0`` is resolved
        (:meth:`~dpaudit.testers.Tester.resolve`) before the first trial from that many outputs
        per dataset of the first pair, drawn from spawn key :data:`PEEK_SPAWN_KEY` of the seed; the
        result records the resolved tester's ``config()``.
    num_samples : int, default 50_000
        Outputs drawn on **each** dataset per trial.
    trials : int, default 10
        Trial budget T. If the finder can propose fewer pairs, its capacity is the budget.
    beta : float, default 0.01
        Probability of accusing a mechanism that satisfies its claim (whole audit); each trial
        is tested at ``beta / T``.
    exhaustive : bool, default False
        Run every trial instead of stopping at the first violation. Without it, a
        floating-point-only violation (the float-bits screen's) does not stop the audit when the
        tester has a distributional part (:meth:`~dpaudit.testers.Tester.distributional_part`):
        the rest of that trial's stages and every later trial run that part alone, at its share
        of their beta (no beta is added), and the audit stops at the first distributional
        violation, which is then the verdict (``violation_kind`` "distributional", the float
        finding listed in :attr:`AuditResult.findings`).
    seed : int, optional
        Root seed (drawn at random and recorded if omitted). Trial ``t`` uses spawn key ``t``.
    neighbouring : dict, optional
        Description of the relation, stored in the result.
    on_trial_start, on_trial_end : callable, optional
        Progress callbacks: ``on_trial_start(t, pair)`` when trial ``t`` is started (submitted,
        for a parallel executor), ``on_trial_end(record)`` when it has finished and been stored.
    on_start : callable, optional
        ``on_start(budget, finished)`` once before the first new trial, with the trial budget
        and the records already finished by earlier runs (empty for a new audit).
    storage : str or optuna.storages.BaseStorage, optional
        Keep the audit in Optuna storage (e.g. ``"sqlite:///audit.db"``) so that it can be
        resumed after an interruption (:mod:`dpaudit.audit.ledger`; storage, name and resume are
        resolved by :func:`~dpaudit.audit.ledger.resolve_study`, as for the CLI). Needs Optuna.
    study_name : str, optional
        Name of the audit in ``storage``; default ``"dpaudit-<mechanism name>"``.
    resume : bool, default False
        Continue the audit stored under ``study_name`` (or start it if there is none). Settings
        left as None (``num_samples``, ``trials``, ``beta``, ``seed``) are taken from storage;
        given ones must equal the stored ones.
    executor : Executor, optional
        An :class:`~dpaudit.audit.executors.Executor`, e.g. ``InProcessExecutor`` or ``DaskExecutor``.
        Where trials run (:mod:`dpaudit.audit.executors`); default: in this process, one at a time
        (``InProcessExecutor(processes=processes)``).
    chunk_size : int, optional
        Largest sampling chunk of a per-call mechanism, in calls (default
        :data:`dpaudit.audit.executors.DEFAULT_CHUNK_SIZE`; smaller chunks for small ``num_samples``,
        see :func:`~dpaudit.audit.executors.chunk_sizes`; 0: no chunks, one stream per trial). The
        samples depend on it and on ``num_samples``, never on the executor or the processes.
    stages : "auto", "off", None or list of int, default "auto"
        For the staged testers (a sequential tester draws in its own batches and ignores it):
        sample sizes within each trial (:mod:`dpaudit.audit.sequential`): each trial
        draws its samples in stages and stops at the first stage that finds a violation, or
        early when continuing is futile; the stages' failure probabilities sum to the trial's
        ``beta / T``. ``"auto"``: 2000, 8000, 32000, ... per dataset below ``num_samples / 6``, then ``num_samples / 4``,
        then ``num_samples`` (one stage below 4000 samples); ``"off"`` or None: one stage of
        ``num_samples`` (the samples and results of a fixed-size trial); a list: those
        cumulative sizes, ``num_samples`` appended if the list ends below it. On resume the
        default ``"auto"`` takes the stored setting. The chunked sampling of per-call mechanisms
        on a Dask cluster runs fixed-size trials (see :mod:`dpaudit.audit.executors`).
    processes : int or "auto", optional
        Without ``executor``: processes that draw a per-call mechanism's chunks, ``"auto"`` (the
        default) one per usable core when a short measurement of the mechanism's calls says they
        pay off, else 1 (:class:`~dpaudit.audit.executors.InProcessExecutor`; the result's
        ``execution`` states the choice), ``1`` in this process. Vectorised mechanisms are always
        sampled in this process. The result is the same for any value.
    adversarial : bool or relation, default False
        Run the adversarial-inputs stage before the trials
        (:func:`dpaudit.audit.adversarial.screen_stage`: NaN, +-inf, -0.0, subnormals, the largest
        doubles, out-of-bounds values, integer dtypes, the empty dataset, as the mechanism's
        ``accepts`` declares) at ``beta * ADVERSARIAL_BETA_SHARE`` (a tenth); the trials share the
        rest. A certified leak makes the result a violation of kind ``"adversarial input"``. True
        takes the relation from the mechanism's ``neighbouring`` hint, else from ``neighbouring``
        (add-remove or replace with a domain); or pass the relation itself. Not with ``storage``, nor
        for a Rényi claim.
    beta_split : {"auto", "even", "front"}, default "auto"
        How the trials' beta is split over the trial budget ``T``, fixed before the run
        (:mod:`dpaudit.audit.beta_split`; a Bonferroni split, valid whatever the stopping rule):
        ``"even"`` ``beta / T`` each; ``"front"`` ``beta / 2`` to the first trial and the other
        half shared evenly by the others; ``"auto"`` ``"front"`` for a sequential tester, ``"even"``
        for the staged ones. Stored with a persistent audit (audits stored before it existed ran
        ``"even"``); on resume ``"auto"`` takes the stored split.
    adversarial_pairs : sequence of (d0, d1), optional
        Pairs the user states that no relation's domain holds (records with NaN or infinities; the
        CLI's ``--pairs`` sends them here): certified in the adversarial stage (at its share of
        beta, Bonferroni over them and the search's candidates), before the search when
        ``adversarial`` is set, alone otherwise.

    Returns
    -------
    AuditResult
        With every finished trial, of every run for a resumed audit.

    Raises
    ------
    ValueError
        On invalid num_samples, trials, beta, stages, chunk_size or processes, ``processes`` given
        with an ``executor``, ``resume`` without a storage, or ``adversarial`` with a storage or
        without a relation it can use.
    DPAuditError
        If ``study_name`` is given without a storage (see :func:`dpaudit.audit.ledger.resolve_study`).
    InvalidClaimError
        If the tester cannot test this kind of claim.
    MechanismError
        If the mechanism fails or returns unusable outputs (never silently dropped).
    SettingsMismatchError
        If resuming with settings different from the stored audit's.
    NotShippableError
        If a Dask executor is given a mechanism that cannot be pickled.
    """
    _check_inputs(num_samples, trials, beta)
    stages_default = isinstance(stages, str) and stages.strip().lower() == "auto"
    stages = normalise_stages(stages)
    if num_samples is not None:
        stage_schedule(num_samples, stages)  # bad explicit stages fail before any storage is opened
    # explicit stages ask for the staged tester: without a tester they select the staged default
    tester = tester or make_tester(default_tester_name(claim, sequential=stages_default))
    tester.require(claim)
    split_default = beta_split is None or (isinstance(beta_split, str) and beta_split.strip().lower() == "auto")
    split = resolve_beta_split(beta_split, tester)
    name = getattr(mechanism, "name", type(mechanism).__name__)
    finder = as_finder(finder)
    capacity = finder.capacity
    chunk = DEFAULT_CHUNK_SIZE if chunk_size is None else (int(chunk_size) if chunk_size else None)
    if chunk is not None and chunk < 1:
        raise ValueError(f"chunk_size must be a positive integer or 0 (no chunks), got {chunk_size!r}")
    if executor is not None and processes is not None:
        raise ValueError(f"processes={processes!r} is for the default in-process executor; give it to "
                         "InProcessExecutor(processes=...) or leave the executor out")
    default_executor = InProcessExecutor(processes=processes) if executor is None else None

    def budget_of(t):
        return None if t is None else (int(t) if capacity is None else min(int(t), int(capacity)))

    ledger = None
    previous: dict[int, TrialRecord] = {}
    pending: list = []
    t_start = time.perf_counter()
    plan = resolve_study(storage, study_name, resume, name)
    if plan.storage is not None:
        given = {
            "mechanism": name,
            "claim": claim.to_dict(),
            "tester": tester.config(),
            "seed": None if seed is None else int(seed),
            "trial_budget": budget_of(trials),
            "beta": None if beta is None else float(beta),
            "num_samples": None if num_samples is None else int(num_samples),
            "neighbouring": neighbouring,
            "finder": finder.config(),
            "stages": None if (stages_default and resume) else _jsonable_stages(stages),
            "beta_split": None if (split_default and resume) else split,
        }
        defaults = {
            "trial_budget": budget_of(DEFAULT_TRIALS),
            "beta": DEFAULT_BETA,
            "num_samples": DEFAULT_NUM_SAMPLES,
            "neighbouring": {},
            "stages": "auto",
            "beta_split": split,
        }
        ledger = plan.open(given, defaults, record_from_dict=TrialRecord.from_dict)
        st = ledger.settings
        seed, budget, beta, num_samples = int(st["seed"]), int(st["trial_budget"]), float(st["beta"]), int(st["num_samples"])
        neighbouring = st.get("neighbouring") or neighbouring
        stages = normalise_stages(stored_setting(st, "stages"))
        split = stored_setting(st, "beta_split") or "even"  # None: a ledger written without it (even)
        run = ledger.run
        try:
            if finder.uses_storage:
                finder.attach(ledger.storage, ledger.search_study_name(), run=run)
            history = [(pair, obj) for _, pair, obj in ledger.assigned]
            # also with no trial recorded: a proposal killed before its trial was recorded is
            # still running in the search's storage and must be reconciled (marked failed)
            restored = finder.restore(history)
        except BaseException:
            ledger.close(0.0, 0)
            raise
        by_index = {idx: p for (idx, _, _), p in zip(ledger.assigned, restored)}
        known_pairs = dict(by_index)
        previous = dict(ledger.finished)
        pending = [(p.index, by_index.get(p.index, p.pair), p.finder) for p in ledger.pending]
        next_index = ledger.next_index
        started = ledger.runs[0]["started_at"] if ledger.runs else _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        earlier_wall = sum(float(r.get("wall_seconds", 0.0)) for r in ledger.runs if r.get("run") != run)
    else:
        num_samples = DEFAULT_NUM_SAMPLES if num_samples is None else int(num_samples)
        beta = DEFAULT_BETA if beta is None else float(beta)
        budget = budget_of(DEFAULT_TRIALS if trials is None else trials)
        if seed is None:
            seed = int(np.random.SeedSequence().entropy % (2**63))
        run, next_index = 0, 0
        known_pairs = {}
        started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        earlier_wall = 0.0
    stage = {}
    adversarial_pairs = list(adversarial_pairs or ())
    searching = adversarial is not False and adversarial is not None
    if searching or adversarial_pairs:
        from .adversarial import ADVERSARIAL_BETA_SHARE, screen_stage

        if plan.storage is not None:
            raise ValueError("the adversarial stage is not kept in a stored audit: leave storage/resume out")
        if getattr(claim, "alpha", None) is not None:  # a set one side never reaches: not sized in Renyi terms
            raise ValueError("the adversarial stage audits (epsilon, delta) claims, not a Renyi claim")
        beta_stage = beta * ADVERSARIAL_BETA_SHARE
        stage = screen_stage(mechanism, _adversarial_relation(adversarial if searching else True, mechanism, neighbouring),
                             epsilon=float(getattr(claim, "epsilon", 0.0)), delta=float(getattr(claim, "delta", 0.0) or 0.0),
                             beta=beta_stage, seed=int(seed), given=adversarial_pairs, search=searching,
                             search_options=getattr(mechanism, "search_options", None))
        beta_trials = beta - beta_stage
    else:
        beta_trials = beta
    betas = trial_betas(beta_trials, budget, split)
    schedule = stage_schedule(num_samples, stages)
    fallback_name = finder.name

    records: dict[int, TrialRecord] = dict(previous)
    # a floating-point-only finding does not stop the audit when the tester has a distributional
    # part: later trials run that part alone (each at its share of beta / T) to tell a real
    # distributional bug from a float64 sampler's leak (docs/floating_point.md §5)
    go_on = (not exhaustive) and distributional_part(tester, claim) is not None

    def stops(r: TrialRecord) -> bool:
        return r.outcome.violation and not (go_on and r.outcome.violation_kind == "floating-point")

    stop = (not exhaustive) and any(stops(r) for r in records.values())
    if on_start:
        on_start(budget, tuple(records[i] for i in sorted(records)))
    executor = executor or default_executor
    in_flight: dict[int, tuple] = {}
    finished_now = 0
    execution = {}
    exhausted = False

    def cancel_in_flight(reason: str) -> None:
        for spec in executor.cancel_all():
            _, pair_obj, handle = in_flight.pop(spec.index, (None, spec.pair, None))
            if ledger is not None and handle is not None:
                ledger.fail(handle, reason)
            finder.abandon(pair_obj)
        for idx, (spec, pair_obj, handle) in list(in_flight.items()):
            if ledger is not None and handle is not None:
                ledger.fail(handle, reason)
            finder.abandon(pair_obj)
        in_flight.clear()

    try:
        if not stop and (pending or next_index < budget) and getattr(tester, "peek_samples", 0):
            # The tester settles its configuration (the default: whether to screen float outputs)
            # from a peek at the first pair, drawn from a stream no trial uses.
            first = known_pairs[min(known_pairs)] if known_pairs else None  # a resumed audit's trial 0
            if first is None and next_index < budget:
                pair = finder.ask()
                if pair is None:
                    exhausted = True
                else:
                    kill_point("search.asked")
                    pending.append((next_index, pair, finder.last_finder or fallback_name))
                    next_index += 1
                    first = pair
            if first is not None:
                tester = _peek_resolve(tester, mechanism, first, int(seed))
        if not stop and (pending or next_index < budget):
            executor.start(mechanism, tester, claim, num_samples=int(num_samples), chunk_size=chunk)
            execution = executor.describe()
        else:
            execution = {"executor": executor.kind, "note": "no trial left to run"}
        while True:
            while not stop and len(in_flight) < executor.capacity:
                if pending:
                    idx, pair, fname = pending.pop(0)
                elif next_index < budget and not exhausted:
                    pair = finder.ask()
                    if pair is None:
                        exhausted = True
                        break
                    kill_point("search.asked")
                    idx = next_index
                    next_index += 1
                    fname = finder.last_finder or fallback_name
                else:
                    break
                handle = ledger.begin(idx, pair, fname) if ledger is not None else None
                spec = TrialSpec(idx, pair, fname, int(num_samples), betas[idx], int(seed), chunk,
                                 schedule if len(schedule) > 1 else None,
                                 distributional_only=go_on and any(r.outcome.violation for r in records.values()))
                if on_trial_start:
                    on_trial_start(idx, pair)
                executor.submit(spec)
                in_flight[idx] = (spec, pair, handle)
            if not in_flight:
                break
            spec, result = executor.wait_any()
            _, pair, handle = in_flight.pop(spec.index)
            if isinstance(result, BaseException):
                if ledger is not None:
                    ledger.fail(handle, f"{type(result).__name__}: {result}")
                finder.abandon(pair)
                cancel_in_flight("cancelled: another trial failed")
                raise result
            record = replace(result, run=run)
            if ledger is not None:
                ledger.finish(handle, record)
            kill_point("trial.recorded")
            finder.tell(pair, record.outcome.objective)
            kill_point("trial.told")
            records[record.index] = record
            finished_now += 1
            if on_trial_end:
                on_trial_end(record)
            if stops(record) and not exhaustive:
                stop = True
                cancel_in_flight("cancelled: a violation was found")
    except BaseException as exc:  # Ctrl-C, a failing trial: leave the ledger resumable
        reason = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"{type(exc).__name__}: {exc}"
        try:
            cancel_in_flight(reason)
        finally:
            executor.close()
            if ledger is not None:
                ledger.close(time.perf_counter() - t_start, finished_now)
        raise
    if isinstance(executor, InProcessExecutor) and "note" not in execution:
        execution = executor.describe()  # with processes="auto", the choice the first trial made
    executor.close()
    wall = time.perf_counter() - t_start
    study_info = {}
    if ledger is not None:
        ledger.close(wall, finished_now)
        study_info = ledger.describe()

    ordered = tuple(records[i] for i in sorted(records))
    violation = any(r.outcome.violation for r in ordered)
    leaked = any(r["status"] == "leak" for r in stage.get("results", ()))
    strongest = None
    if ordered:  # a distributional violation before a floating-point one, whatever the margins' units
        strongest = max(range(len(ordered)), key=lambda i: (ordered[i].outcome.violation,
                                                            ordered[i].outcome.violation_kind == "distributional",
                                                            ordered[i].outcome.margin))
    return AuditResult(
        mechanism=name,
        claim=claim,
        violation=violation or leaked,
        beta=beta,
        beta_per_trial=betas[0],
        trial_betas=betas,
        beta_split=split,
        trial_budget=budget,
        trials=ordered,
        strongest_trial=strongest,
        stopped_early=(not exhaustive) and any(stops(r) for r in ordered) and len(ordered) < budget,
        seed=int(seed),
        tester=tester.config(),
        finder=fallback_name,
        neighbouring=neighbouring or {},
        versions=library_versions(),
        started_at=started,
        wall_seconds=earlier_wall + wall,
        study=study_info,
        execution=execution,
        adversarial=stage,
    )


def _adversarial_relation(adversarial, mechanism, neighbouring: dict | None):
    """The relation of the adversarial stage: ``adversarial`` itself, else the mechanism's hint,
    else rebuilt from the ``neighbouring`` dict (``relation``, ``domain``, ``min_size``, ``max_size``).

    Raises
    ------
    ValueError
        If none of them gives a relation.
    """
    if adversarial is not True:
        return adversarial
    hint = getattr(mechanism, "neighbouring", None)
    if hint is not None and not isinstance(hint, str):
        return hint
    d = neighbouring or {}
    if d.get("relation") and d.get("domain"):
        from ..datasets import Domain, make_relation

        dom = Domain(tuple(d["domain"]["lower"]), tuple(d["domain"]["upper"]))
        return make_relation(d["relation"], dom, d.get("min_size"), d.get("max_size"))
    raise ValueError("adversarial=True needs a relation: pass adversarial=<relation>, neighbouring=relation.to_dict(), "
                     "or give the mechanism a neighbouring hint")
