"""Running trials: in this process (serially or with a process pool), or on a Dask cluster.

One trial of the audit (paper 000, Alg. 1, one iteration) is: draw ``num_samples`` outputs of the
mechanism on each dataset of a pair, then run the tester on the two samples at failure probability
``beta / T``. :func:`run_trial` does it in this process; the executors run many trials:

* :class:`InProcessExecutor` (the default of :func:`dpaudit.audit`): one trial at a time, in this
  process, exactly the sequential loop of Alg. 1. For a per-call (non-vectorised) mechanism on a
  machine with more than one core it draws the trial's sampling chunks on a
  :class:`SamplingPool` -- a ``concurrent.futures.ProcessPoolExecutor`` of ``spawn``-ed processes,
  one per usable core (``processes=``; ``dpaudit test --processes N|auto``; ``1`` turns it off).
  With ``"auto"``, the default, the first trial times a few calls of the mechanism in this process
  (:func:`time_per_call`) and the pool is used only when :func:`choose_processes` says its
  start-up is repaid. The pool is started on the first draw of at least two chunks per dataset in a
  trial that plans at least :data:`MIN_POOL_CALLS` calls, all stages counted (smaller trials would
  not repay its start-up); from then on it draws every draw of two or more chunks -- each stage
  of a sequential trial too -- until :meth:`InProcessExecutor.close` at the end of the audit.
  Vectorised mechanisms never start one. A mechanism that cannot be pickled is sampled in this process, with one warning.
* :class:`DaskExecutor`: trials as tasks on a Dask cluster (``dask.distributed``): a
  ``LocalCluster`` sized to the machine, or an existing scheduler (``tcp://host:port``). Several
  trials are in flight at once so the workers stay busy while the finder proposes the next
  pairs; for per-call (non-vectorised) mechanisms the sampling itself is split into chunks that
  run as separate tasks, and the test runs where the chunks are gathered.

Randomness never depends on where or in which order trials run: trial ``t`` uses
``SeedSequence(seed).spawn`` key ``t``; its child ``(t, 0)`` drives the sampling and ``(t, 1)``
the tester. A per-call mechanism's samples on dataset ``j`` (0: D0, 1: D1) come in chunks
(:func:`chunk_sizes`: at most ``chunk_size`` calls each, and smaller for small samples so that
there are up to :data:`CHUNKS_PER_DATASET` chunks of at least :data:`MIN_CHUNK_SIZE` calls; a
function of ``(num_samples, chunk_size)`` only), chunk ``c`` drawn from the stream with spawn key
``(t, 0, j, c)`` -- the same chunks serially, on any number of pool processes and on any number of
Dask workers, so the samples are identical.

Mechanisms, testers and claims are shipped to Dask workers and pool processes with cloudpickle
(:func:`pickle_context`; once per audit or pool, unpickled once per worker by ``_context``); on
Dask, one that cannot be pickled raises :class:`NotShippableError` before any trial runs.
"""

from __future__ import annotations

import contextvars
import dataclasses
import hashlib
import math
import os
import threading
import time
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from .._killpoints import kill_point
from ..datasets import NeighbouringPair
from ..errors import DPAuditError, MechanismError
from ..mechanisms.base import CallableMechanism, draw
from .result import StageRecord, TrialRecord
from .sequential import is_futile, stage_betas, stage_stream

__all__ = [
    "CHUNKS_PER_DATASET",
    "DEFAULT_CHUNK_SIZE",
    "MIN_CHUNK_SIZE",
    "MIN_POOL_CALLS",
    "POOL_STARTUP_SECONDS",
    "POOL_TASK_SECONDS",
    "DaskExecutor",
    "Executor",
    "InProcessExecutor",
    "NotShippableError",
    "SamplingPool",
    "TrialSpec",
    "chunk_sizes",
    "choose_processes",
    "chunk_stream",
    "continued_outcome",
    "distributional_part",
    "pickle_context",
    "usable_cores",
    "is_per_call",
    "is_sequential",
    "run_sequential_trial",
    "run_trial",
    "sequential_parts",
    "sample_pair",
    "time_per_call",
    "trial_streams",
    "trial_tester",
]

DEFAULT_CHUNK_SIZE = 5000
"""Calls of a per-call mechanism per sampling chunk, at most (one Dask or pool task; about 0.5 s
at 100 us/call)."""

MIN_CHUNK_SIZE = 500
"""Smallest chunk :func:`chunk_sizes` makes when it splits a small sample below ``chunk_size``."""

MIN_POOL_CALLS = 20_000
"""Planned calls per trial (both datasets, all stages) below which a per-call mechanism's
:class:`SamplingPool` is not started: about 2 s at 100 us per call, the order of a spawned pool's
start-up (the samples are the same either way). A pool already running serves every draw."""

POOL_STARTUP_SECONDS = 2.0
"""Estimated start-up of a :class:`SamplingPool` (spawned processes that import dpaudit and
unpickle the mechanism), charged by :func:`choose_processes`. Measured on the project machine (2
cores shared with other jobs, 2026-11-27): 1.4-2.8 s from the first ``draw_pair`` of two one-call
chunks to its result, for 2 processes."""

POOL_TASK_SECONDS = 1e-3
"""Estimated overhead of one pool task (a sampling chunk: submit, pickle the outputs back), charged
by :func:`choose_processes`. Measured as above: 0.3-0.6 ms per one-call chunk on a warm pool."""

TIMING_SECONDS = 0.005
""":func:`time_per_call` times batches of calls until one batch takes at least this long."""

CHUNKS_PER_DATASET = 8
"""Chunks per dataset :func:`chunk_sizes` aims for when ``num_samples`` is small, so that many
cores get work (chunks stay at least :data:`MIN_CHUNK_SIZE` calls)."""


class NotShippableError(DPAuditError):
    """The mechanism (or tester, or claim) cannot be pickled to run on Dask workers."""


@dataclass(frozen=True)
class TrialSpec:
    """What one trial needs besides the mechanism, tester and claim (small, picklable).

    Attributes
    ----------
    index : int
        Trial number ``t`` (0-based); its random stream is spawn key ``t`` of ``seed``.
    pair : NeighbouringPair
    finder : str
        Name of the finder that proposed the pair.
    num_samples : int
        Outputs drawn on each dataset.
    beta : float
        Failure probability of this trial's test (its share of beta, :func:`dpaudit.audit.beta_split.trial_betas`).
    seed : int
        Root seed of the audit.
    chunk_size : int or None
        Calls per sampling chunk for per-call mechanisms (None: no chunks).
    stages : tuple of int or None
        Cumulative samples per dataset after each stage of a sequential trial
        (:func:`~dpaudit.audit.sequential.stage_schedule`, ending at ``num_samples``); None or
        one stage: a fixed-size trial, exactly as without stages.
    distributional_only : bool, default False
        Run only the tester's distributional part (:meth:`~dpaudit.testers.Tester.distributional_part`:
        without the floating-point screen, each test at that part's fraction of its beta): the audit
        asks for it after an earlier trial's floating-point-only finding (:func:`run_trial`). A
        tester without such a part runs whole.
    """

    index: int
    pair: NeighbouringPair
    finder: str
    num_samples: int
    beta: float
    seed: int
    chunk_size: int | None = DEFAULT_CHUNK_SIZE
    stages: tuple | None = None
    distributional_only: bool = False

    @property
    def schedule(self) -> tuple:
        """The stages to run: :attr:`stages`, or ``(num_samples,)`` when None.

        Raises
        ------
        ValueError
            If :attr:`stages` does not end at ``num_samples`` or is not strictly increasing.
        """
        if not self.stages:
            return (int(self.num_samples),)
        sched = tuple(int(n) for n in self.stages)
        if sched[-1] != int(self.num_samples) or any(b <= a for a, b in zip(sched, sched[1:])) or sched[0] < 1:
            raise ValueError(f"TrialSpec.stages {list(sched)} must be strictly increasing and end at "
                             f"num_samples={self.num_samples}")
        return sched


def trial_streams(seed: int, index: int) -> tuple[np.random.SeedSequence, np.random.SeedSequence]:
    """The sampling and testing streams of trial ``index``: spawn keys ``(index, 0)`` and
    ``(index, 1)`` of ``SeedSequence(seed)`` (``SeedSequence(seed).spawn(T)[index].spawn(2)``)."""
    ss = np.random.SeedSequence(int(seed), spawn_key=(int(index),))
    sample_ss, test_ss = ss.spawn(2)
    return sample_ss, test_ss


def is_per_call(mechanism) -> bool:
    """Whether ``mechanism`` makes one call per output, so that chunked (and pooled) sampling is
    worth it: a :class:`CallableMechanism`, a library adapter (``LibraryMechanism``: diffprivlib,
    OpenDP, PipelineDP, Opacus; one library call per output), or any mechanism with
    ``vectorised = False``. A mechanism that sets ``vectorised = True`` is never per-call."""
    from ..mechanisms.adapters._common import LibraryMechanism

    flag = getattr(mechanism, "vectorised", None)
    if flag is not None:
        return flag is False
    return isinstance(mechanism, (CallableMechanism, LibraryMechanism))


def chunk_sizes(num_samples: int, chunk_size: int) -> list[int]:
    """Sizes of the chunks ``num_samples`` calls of a per-call mechanism are split into.

    Every chunk has ``size`` calls but the last (the rest), where ``size`` is ``chunk_size``
    lowered for small samples to ``max(MIN_CHUNK_SIZE, ceil(num_samples / CHUNKS_PER_DATASET))``
    so that up to :data:`CHUNKS_PER_DATASET` chunks keep several cores busy (a chunk never grows
    above ``chunk_size``). The split is a function of ``(num_samples, chunk_size)`` only -- never
    of the cores or workers -- so the samples of a seed are the same wherever they are drawn.

    Parameters
    ----------
    num_samples : int
        Calls to split, ``>= 0``.
    chunk_size : int
        Largest chunk, ``>= 1``.

    Returns
    -------
    list of int
        The chunk sizes, in order (empty for ``num_samples == 0``).

    Raises
    ------
    ValueError
        If ``chunk_size < 1`` or ``num_samples < 0``.
    """
    n, chunk = int(num_samples), int(chunk_size)
    if chunk < 1 or n < 0:
        raise ValueError(f"chunk_sizes needs num_samples >= 0 and chunk_size >= 1, got {num_samples!r} and {chunk_size!r}")
    size = min(chunk, max(MIN_CHUNK_SIZE, -(-n // CHUNKS_PER_DATASET)))
    full, rest = divmod(n, size)
    return [size] * full + ([rest] if rest else [])


def _duration(seconds: float) -> str:
    """``seconds`` in the unit that reads best: "4.2 µs", "150 µs", "650 ms", "2.4 s"."""
    value, unit = (seconds * 1e6, "µs") if seconds < 1e-3 else (seconds * 1e3, "ms") if seconds < 1.0 else (seconds, "s")
    return f"{value:.2g} {unit}" if value < 10 else f"{value:.0f} {unit}"


def choose_processes(per_call_seconds: float, calls: int, chunks: int, cores: int, *,
                     startup_seconds: float = POOL_STARTUP_SECONDS,
                     task_seconds: float = POOL_TASK_SECONDS) -> tuple[int, str]:
    """How many processes should sample a per-call mechanism under ``processes="auto"``.

    A trial's draws cost ``calls * per_call_seconds`` in this process, and about
    ``startup_seconds + calls * per_call_seconds / cores + chunks * task_seconds`` on a pool of
    ``cores`` processes (its start-up, the calls spread over the cores, and each chunk's task
    overhead). Workers are started only when the pool would finish the trial's draws sooner,
    start-up included: the pool then also serves every later trial, so this errs toward one
    process (an audit whose trials are each too small to repay the start-up stays in this
    process however many trials it runs).

    Parameters
    ----------
    per_call_seconds : float
        Measured seconds per call of the mechanism (:func:`time_per_call`), ``>= 0``.
    calls : int
        Calls a trial plans (both datasets, all stages), ``>= 0``.
    chunks : int
        Sampling chunks (pool tasks) of those calls, ``>= 0``.
    cores : int
        Usable cores (:func:`usable_cores`), ``>= 1``.
    startup_seconds, task_seconds : float
        Pool start-up and per-task overhead (defaults :data:`POOL_STARTUP_SECONDS`,
        :data:`POOL_TASK_SECONDS`, measured on the project machine).

    Returns
    -------
    processes : int
        ``cores`` or 1.
    reason : str
        One sentence for the output, e.g. "measured 4.2 µs per call: workers would not pay off;
        a trial's 100,000 calls take about 420 ms here, about 2.3 s on 2 processes with their
        start-up".

    Raises
    ------
    ValueError
        If ``per_call_seconds`` is negative or not finite, or ``calls``, ``chunks`` or ``cores``
        is out of range (the message names it and quotes the value).
    """
    if not (isinstance(per_call_seconds, (int, float, np.floating)) and math.isfinite(per_call_seconds)
            and per_call_seconds >= 0):
        raise ValueError(f"per_call_seconds must be a finite number >= 0, got {per_call_seconds!r}")
    for name, value, low in (("calls", calls, 0), ("chunks", chunks, 0), ("cores", cores, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    measured = f"measured {_duration(per_call_seconds)} per call"
    if cores < 2:
        return 1, f"{measured}: one usable core"
    serial = calls * per_call_seconds
    pooled = startup_seconds + serial / cores + chunks * task_seconds
    work = f"a trial's {calls:,} calls take about {_duration(serial)} here, about {_duration(pooled)} on {cores} processes with their start-up"
    if pooled < serial:
        return int(cores), f"{measured}: {cores} processes pay off; {work}"
    return 1, f"{measured}: workers would not pay off; {work}"


def time_per_call(mechanism, pair: NeighbouringPair, *, target_seconds: float = TIMING_SECONDS,
                  max_calls: int = 4096) -> float:
    """Seconds per call of a per-call mechanism, timed in this process on both datasets of ``pair``.

    One call per dataset first (warm-up, and a mechanism that raises raises here, before any
    pool starts); if those two take ``10 * target_seconds`` or more, their mean is returned (a
    costly mechanism is not called further). Otherwise batches of ``k = 1, 2, 4, ...`` calls per
    dataset are timed until one takes ``target_seconds`` or the next would exceed ``max_calls``
    calls; that batch size is timed twice more and the fastest of the three batches' means is
    returned (the minimum: other jobs on the machine only ever add time). The calls draw from a
    generator of their own (seed 0), so the audit's samples do not depend on them.

    Parameters
    ----------
    mechanism : Mechanism
        A per-call mechanism (:func:`is_per_call`).
    pair : NeighbouringPair
        The datasets to call it on (a trial's pair).
    target_seconds : float, default :data:`TIMING_SECONDS`
        Duration of the batch whose size is kept.
    max_calls : int, default 4096
        Most calls of one batch (both datasets together).

    Returns
    -------
    float
        Seconds per call, ``> 0``.

    Raises
    ------
    MechanismError
        If the mechanism fails or returns unusable outputs (:func:`~dpaudit.mechanisms.draw`).
    """
    rng = np.random.default_rng(0)

    def batch(k: int) -> float:
        t0 = time.perf_counter()
        for d in (pair.d0, pair.d1):
            draw(mechanism, d, k, rng)
        return time.perf_counter() - t0

    warm = batch(1)
    if warm >= 10 * target_seconds:
        return warm / 2
    k = 1
    elapsed = batch(k)
    while elapsed < target_seconds and 4 * k <= max_calls:
        k *= 2
        elapsed = batch(k)
    return max(min(elapsed, batch(k), batch(k)), 1e-9) / (2 * k)


def chunk_stream(sample_ss: np.random.SeedSequence, dataset: int, chunk: int) -> np.random.Generator:
    """Generator of chunk ``chunk`` of dataset ``dataset`` (0: D0, 1: D1): spawn key
    ``sample_ss.spawn_key + (dataset, chunk)``."""
    return np.random.default_rng(
        np.random.SeedSequence(sample_ss.entropy, spawn_key=tuple(sample_ss.spawn_key) + (int(dataset), int(chunk)))
    )


def _concat_chunks(mechanism, parts: list, dataset: np.ndarray) -> np.ndarray:
    dims = {p.shape[1] for p in parts}
    if len(dims) > 1:
        from ..mechanisms.base import describe_dataset

        raise MechanismError(
            f"returned outputs of different dimensions {sorted(dims)} in different calls: outputs must "
            "have a fixed shape",
            mechanism=getattr(mechanism, "name", type(mechanism).__name__),
            dataset=describe_dataset(dataset),
        )
    return np.concatenate(parts, axis=0)


def _dimension_error(mechanism, got: int, expected: int, dataset: np.ndarray) -> MechanismError:
    """The error :func:`draw` raises for D1 outputs whose dimension is not D0's."""
    from ..mechanisms.base import describe_dataset

    return MechanismError(
        f"returned outputs of dimension {got} but dimension {expected} on the "
        "neighbouring dataset: output shape must not depend on the dataset",
        mechanism=getattr(mechanism, "name", type(mechanism).__name__),
        dataset=describe_dataset(dataset),
    )


_ACTIVE_POOL: contextvars.ContextVar = contextvars.ContextVar("dpaudit_sampling_pool", default=None)


def sample_pair(mechanism, pair: NeighbouringPair, num_samples: int, sample_ss, chunk_size: int | None, *,
                pool: "SamplingPool | None" = None, planned_calls: int | None = None):
    """Draw ``num_samples`` validated outputs on each dataset of ``pair``.

    Vectorised mechanisms (and any mechanism when ``chunk_size`` is None) draw D0's then D1's
    outputs from one generator seeded by ``sample_ss``; per-call mechanisms draw the chunks of
    :func:`chunk_sizes` from :func:`chunk_stream`, in this process or, when a
    :class:`SamplingPool` for this mechanism is given (or set by the running
    :class:`InProcessExecutor`) and there are at least two chunks per dataset, on its processes --
    if the pool is already running, or the trial plans at least the pool's ``min_calls`` calls
    (:data:`MIN_POOL_CALLS`), worth its start-up. A trial that plans that many calls in stages
    smaller than ``min_calls`` starts the pool without waiting for it
    (:meth:`SamplingPool.warm_up`) and draws its first stage here while the processes start;
    its later stages are drawn on the pool.
    The chunks and their streams are the same either way, so are the samples.

    Parameters
    ----------
    mechanism : Mechanism
    pair : NeighbouringPair
    num_samples : int
        Outputs per dataset, ``> 0``.
    sample_ss : numpy.random.SeedSequence
        The sampling stream (e.g. of :func:`trial_streams`).
    chunk_size : int or None
        Largest chunk of a per-call mechanism (None: no chunks, one generator).
    pool : SamplingPool, optional
        Draw the chunks on this pool; default: the pool of the :class:`InProcessExecutor` running
        the trial, if any. A pool made for another mechanism is not used.
    planned_calls : int, optional
        Calls the whole trial plans, both datasets and all its stages (default
        ``2 * num_samples``); compared with the pool's ``min_calls`` to decide whether to start it.

    Returns
    -------
    x0, x1 : ndarray, shape (num_samples, output_dim)

    Raises
    ------
    MechanismError
        If the mechanism fails or returns unusable outputs (the error the serial path raises, also
        when the chunks ran on a pool).
    """
    if chunk_size and is_per_call(mechanism):
        sizes = chunk_sizes(num_samples, chunk_size)
        pool = pool if pool is not None else _ACTIVE_POOL.get()
        planned = 2 * int(num_samples) if planned_calls is None else int(planned_calls)
        if (pool is not None and len(sizes) >= 2 and pool.serves(mechanism)
                and (pool.running or planned >= pool.min_calls)):
            if not pool.running and 2 * int(num_samples) < pool.min_calls:
                pool.warm_up()  # start it for the trial's later draws; draw this small one here meanwhile
            else:
                drawn = pool.draw_pair(pair, sizes, sample_ss)
                if drawn is not None:
                    return drawn
        out = []
        dim = None
        for j, d in enumerate((pair.d0, pair.d1)):
            parts = [draw(mechanism, d, m, chunk_stream(sample_ss, j, c), output_dim=dim)
                     for c, m in enumerate(sizes)]
            x = _concat_chunks(mechanism, parts, d)
            dim = x.shape[1]
            out.append(x)
        return out[0], out[1]
    rng = np.random.default_rng(sample_ss)
    x0 = draw(mechanism, pair.d0, int(num_samples), rng)
    x1 = draw(mechanism, pair.d1, int(num_samples), rng, output_dim=x0.shape[1])
    return x0, x1


def _record(spec: TrialSpec, outcome, sample_seconds: float, test_seconds: float, *, stages=None,
            stop_reason: str | None = None, used: int | None = None, fraction: float = 1.0,
            distributional_only: bool = False):
    """The :class:`TrialRecord` of a trial; without ``stages``, of a fixed-size trial (at ``spec.beta``,
    or at ``fraction`` of it, the distributional part's, with ``distributional_only``)."""
    if stages is None:
        stages = (StageRecord(int(spec.num_samples), float(fraction * spec.beta), outcome.status,
                              float(outcome.margin), distributional_only=distributional_only),)
    return TrialRecord(
        index=spec.index,
        finder=spec.finder,
        pair=spec.pair,
        num_samples=int(spec.num_samples if used is None else used),
        outcome=outcome,
        seed_key=(int(spec.index),),
        sample_seconds=sample_seconds,
        test_seconds=test_seconds,
        stages=tuple(stages),
        stop_reason=stop_reason or ("violation" if outcome.violation else "budget"),
        planned_samples=int(spec.num_samples),
    )


def distributional_part(tester, claim):
    """``tester.distributional_part(claim)`` (:meth:`~dpaudit.testers.Tester.distributional_part`),
    or None for a tester object without that method (duck-typed testers)."""
    method = getattr(tester, "distributional_part", None)
    return None if method is None else method(claim)


def trial_tester(tester, claim, spec: TrialSpec) -> tuple:
    """The tester a trial runs and the fraction of each test's beta it gets: ``(tester, 1.0)``, or
    with ``spec.distributional_only`` the tester's distributional part
    (:meth:`~dpaudit.testers.Tester.distributional_part`) when it has one."""
    if spec.distributional_only:
        part = distributional_part(tester, claim)
        if part is not None:
            return part[0], float(part[1])
    return tester, 1.0


def _is_float_only(outcome) -> bool:
    return bool(outcome.violation) and outcome.violation_kind == "floating-point"


def _leaves(outcome) -> tuple:
    """The outcome's parts (flattened), or the outcome itself."""
    if not outcome.parts:
        return (outcome,)
    return tuple(leaf for p in outcome.parts for leaf in _leaves(p))


def continued_outcome(tester_name: str, found, found_samples: int, later, later_samples: int, fraction: float):
    """One trial's outcome when a floating-point-only finding at an earlier stage (``found``) was
    followed by the distributional tester(s) alone (``later``, the last of those stages).

    The parts are ``later``'s (flattened) then ``found``'s violating parts (the floating-point
    screen's); the strongest bound, the margin, the witness and the epsilon/delta lower bounds are
    those of ``later`` when it rejects the claim (a distributional violation: the label the audit
    reports, the float finding kept as an additional one), else those of the floating-point finding.
    ``beta`` is the sum of the two tests' betas (union bound: both hold together with probability
    at least ``1 - beta``).

    Parameters
    ----------
    tester_name : str
        The trial's tester (``"hockey-stick+float-screen"``, ``"all"``...).
    found : TestOutcome
        The floating-point-only violation.
    found_samples : int
        Samples per dataset of its stage.
    later : TestOutcome
        The distributional part's outcome at the trial's last stage.
    later_samples : int
        Samples per dataset of that stage.
    fraction : float
        The distributional part's fraction of each stage's beta (for the note).

    Returns
    -------
    TestOutcome
        A violation; ``violation_kind`` "distributional" iff ``later`` is a violation.
    """
    from ..testers.base import TestOutcome

    stage_note = f"at the {found_samples:,}-sample stage"
    fl = tuple(dataclasses.replace(p, note=f"{stage_note}; {p.note}" if p.note else stage_note)
               for p in _leaves(found) if p.violation)
    dl = _leaves(later)
    parts = dl + fl
    bounds = tuple(b for p in parts for b in p.bounds)
    if later.violation:
        best, offset = later, later.strongest
    else:
        i = max(range(len(fl)), key=lambda j: fl[j].margin)
        best = fl[i]
        offset = len(later.bounds) + sum(len(p.bounds) for p in fl[:i]) + fl[i].strongest
    screen = ", ".join(p.tester for p in fl)
    note = (f"{screen} found a floating-point leak {stage_note}; {later.tester} then ran on alone at "
            f"{fraction:g} of each stage's beta to {later_samples:,} samples per dataset: {later.status}")
    notes = [note] + [f"{p.tester}: {p.note}" for p in parts if p.note]
    return TestOutcome(
        tester=tester_name,
        violation=True,
        beta=float(found.beta) + float(later.beta),
        bounds=bounds,
        strongest=offset,
        margin=best.margin,
        objective=later.objective,
        threshold=best.threshold,
        witness_epsilon=best.witness_epsilon,
        delta_lower_bound=best.delta_lower_bound,
        claimed_delta=best.claimed_delta,
        epsilon_lower_bound=best.epsilon_lower_bound,
        inconclusive=False,
        note="; ".join(notes),
        parts=parts,
    )


def run_trial(mechanism, tester, claim, spec: TrialSpec):
    """Run one trial in this process: fixed-size, or in stages (:mod:`dpaudit.audit.sequential`).

    With one stage (``spec.stages`` None or ``(num_samples,)``) the trial draws ``num_samples``
    outputs per dataset from the sampling stream and tests them once at ``spec.beta`` with the
    testing stream (:func:`trial_streams`). With stages ``n_1 < ... < n_K``, stage ``k`` (0-based)
    draws ``n_k - n_{k-1}`` more outputs per dataset with :func:`sample_pair` from the stream
    :func:`~dpaudit.audit.sequential.stage_stream` ``(sampling stream, k)``, tests the first
    ``n_k`` of each at ``beta_k`` (:func:`~dpaudit.audit.sequential.stage_betas`, summing to at
    most ``spec.beta``) with the generator of ``stage_stream(testing stream, k)``, and stops at
    the first violation or when :func:`~dpaudit.audit.sequential.is_futile` says so.

    A floating-point-only violation (:attr:`~dpaudit.testers.TestOutcome.violation_kind`, e.g. the
    float-bits screen of the default tester) before the last stage does not stop the trial when the
    tester has a distributional part (:meth:`~dpaudit.testers.Tester.distributional_part`): the
    later stages run that part alone, at its fraction of their betas (the split is fixed, no beta
    is added), until it rejects the claim, futility or the last stage; the record's outcome then
    holds both findings (:func:`continued_outcome`), a distributional violation if the part
    rejected. With ``spec.distributional_only`` every stage runs the distributional part
    (:func:`trial_tester`).

    Parameters
    ----------
    mechanism, tester, claim
        What is audited, how, and against what.
    spec : TrialSpec
        The trial (pair, sizes, beta, seed, stages).

    Returns
    -------
    TrialRecord
        The last stage's outcome, the samples used, the stages run and why the trial stopped.

    Raises
    ------
    MechanismError
        If the mechanism fails or returns unusable outputs.
    ValueError
        If ``spec.stages`` is invalid (see :attr:`TrialSpec.schedule`).
    """
    if is_sequential(tester):
        return run_sequential_trial(mechanism, tester, claim, spec)
    sample_ss, test_ss = trial_streams(spec.seed, spec.index)
    schedule = spec.schedule
    name, whole = tester.name, tester
    tester, fraction = trial_tester(tester, claim, spec)
    alone = tester is not whole  # the distributional part alone from the start
    if len(schedule) == 1:
        t0 = time.perf_counter()
        x0, x1 = sample_pair(mechanism, spec.pair, spec.num_samples, sample_ss, spec.chunk_size)
        kill_point("trial.sampled")
        t1 = time.perf_counter()
        outcome = tester.test(x0, x1, claim, beta=fraction * spec.beta, rng=np.random.default_rng(test_ss))
        t2 = time.perf_counter()
        return _record(spec, outcome, t1 - t0, t2 - t1, fraction=fraction, distributional_only=alone)
    betas = stage_betas(schedule, spec.beta)
    parts0, parts1, stages = [], [], []
    sample_s = test_s = 0.0
    have, reason, outcome = 0, "budget", None
    found = None  # (the floating-point-only outcome, its stage's samples) when the trial went on past it
    part = None if alone else distributional_part(tester, claim)
    for k, (n_k, beta_k) in enumerate(zip(schedule, betas)):
        t0 = time.perf_counter()
        y0, y1 = sample_pair(mechanism, spec.pair, n_k - have, stage_stream(sample_ss, k), spec.chunk_size,
                             planned_calls=2 * int(spec.num_samples))
        kill_point("trial.sampled")
        parts0.append(y0)
        parts1.append(y1)
        x0 = _concat_chunks(mechanism, parts0, spec.pair.d0) if k else y0
        x1 = _concat_chunks(mechanism, parts1, spec.pair.d1) if k else y1
        have = n_k
        t1 = time.perf_counter()
        outcome = tester.test(x0, x1, claim, beta=fraction * beta_k,
                              rng=np.random.default_rng(stage_stream(test_ss, k)))
        last = k == len(schedule) - 1
        futile = (not last) and is_futile(outcome, claim, scale=schedule[-1] / n_k, beta_ratio=betas[-1] / beta_k)
        test_s += time.perf_counter() - t1
        sample_s += t1 - t0
        stages.append(StageRecord(int(n_k), float(fraction * beta_k), outcome.status, float(outcome.margin),
                                  bool(futile), distributional_only=alone))
        if outcome.violation and not last and part is not None and found is None and _is_float_only(outcome):
            # a floating-point-only finding: the distributional part runs on alone, within its share
            found, (tester, fraction), alone = (outcome, int(n_k)), part, True
            continue
        if outcome.violation:
            reason = "violation"
            break
        if futile:
            reason = "futility"
            break
    if found is not None:
        outcome = continued_outcome(name, found[0], found[1], outcome, have, fraction)
    return _record(spec, outcome, sample_s, test_s, stages=stages, stop_reason=reason, used=have)


def is_sequential(tester) -> bool:
    """Whether ``tester`` runs trials sequentially (a :class:`~dpaudit.testers.sequential.SequentialTester`,
    alone or as the distributional part of the floating-point screen)."""
    return bool(getattr(tester, "sequential", False))


def sequential_parts(tester, claim) -> tuple:
    """How a sequential trial spends its beta: ``(sequential tester, its fraction, screen or None,
    the screen's fraction, screen_undecided)``.

    A :class:`~dpaudit.testers.FloatScreenTester` around a sequential tester gives the screen its
    ``share`` on non-integer float outputs (or when undecided: the split is kept and the screen runs
    only on non-integer float samples, as :meth:`FloatScreenTester.test <dpaudit.testers.FloatScreenTester.test>`),
    the whole beta to the sequential tester on integer outputs. The fractions sum to at most 1."""
    from ..testers.screened import FloatScreenTester

    if isinstance(tester, FloatScreenTester):
        if tester.float_outputs is False:
            return tester.primary, 1.0, None, 0.0, False
        return tester.primary, 1.0 - tester.share, tester.screen, tester.share, tester.float_outputs is None
    return tester, 1.0, None, 0.0, False


def screen_checkpoints(num_samples: int, batches) -> tuple:
    """Pairs at which a sequential trial's floating-point screen runs (when the trial reaches them).

    The ``"auto"`` stage schedule (:func:`~dpaudit.audit.sequential.stage_schedule`: 2,000, 8,000,
    ..., n/4, n) and every batch boundary of the e-process from ``max(n/4, min(2000, n))`` on: the
    e-process may stop for futility at any batch from a quarter of the budget on
    (:data:`~dpaudit.testers.sequential.FUTILITY_FRACTION`), and the screen then has just run on
    every pair drawn. Fixed by ``num_samples`` and the batch schedule alone (never by the draws), so
    the union bound over the checkpoints holds (docs/sequential.md §3).

    Parameters
    ----------
    num_samples : int
        The trial's budget ``n`` (pairs), ``>= 1``.
    batches : sequence of int
        The e-process's cumulative batch sizes (ending at ``n``).

    Returns
    -------
    tuple of int
        Strictly increasing, ending at ``n``.
    """
    from .sequential import stage_schedule

    n = int(num_samples)
    low = max(n // 4, min(2000, n))
    return tuple(sorted(set(stage_schedule(n, "auto")) | {int(b) for b in batches if low <= b <= n}))


def run_sequential_trial(mechanism, tester, claim, spec: TrialSpec):
    """Run one trial with a sequential tester (:class:`~dpaudit.testers.sequential.SequentialTester`).

    The trial draws its pairs in the tester's batches (batch ``k`` from the stream
    :func:`~dpaudit.audit.sequential.stage_stream` ``(sampling stream, k)``, chunked as
    :func:`sample_pair` chunks any draw) and bets on them at ``fraction * spec.beta``, stopping at
    the first violation or at ``spec.num_samples`` pairs. With the floating-point screen
    (:func:`sequential_parts`), the float-bits tester runs at the checkpoints of the ``"auto"``
    stage schedule (:func:`~dpaudit.audit.sequential.stage_schedule`: 2,000, 8,000, ..., n/4, n
    pairs, and every batch boundary from n/4 on, where the e-process may stop for futility:
    :func:`screen_checkpoints`) that the trial reaches, on the first ``n_c`` pairs, each at its part
    (:func:`~dpaudit.audit.sequential.stage_betas`) of the screen's share: by the union bound the
    trial accuses a mechanism that satisfies the claim with probability at most ``spec.beta``
    (docs/sequential.md §3). A floating-point finding does not stop the trial: the sequential
    test goes on to its budget or a distributional violation (:func:`continued_outcome`).

    Returns
    -------
    TrialRecord
        One :class:`StageRecord` per batch; ``num_samples`` the pairs drawn; ``stop_reason``
        ``"violation"``, ``"futility"`` (:class:`~dpaudit.testers.sequential.SequentialTester`'s
        ``futility``) or ``"budget"``.

    Raises
    ------
    MechanismError
        If the mechanism fails or returns unusable outputs.
    """
    from ..testers.screened import has_noninteger_floats
    from .sequential import stage_schedule

    sample_ss, test_ss = trial_streams(spec.seed, spec.index)
    whole_name = tester.name
    tester, fraction = trial_tester(tester, claim, spec)
    alone = spec.distributional_only and fraction < 1.0
    seq, seq_frac, screen, screen_frac, undecided = sequential_parts(tester, claim)
    beta_seq = fraction * seq_frac * spec.beta
    per_call = bool(spec.chunk_size) and is_per_call(mechanism)
    batches = seq.schedule(int(spec.num_samples), per_call)
    checks, check_betas = (), ()
    if screen is not None:
        checks = screen_checkpoints(int(spec.num_samples), batches)
        check_betas = stage_betas(checks, fraction * screen_frac * spec.beta)
    kept0, kept1 = [], []
    state = {"k": 0, "have": 0, "found": None, "check": 0, "screen_s": 0.0, "screen_notes": []}

    def draw(start: int, m: int):
        k = state["k"]
        y0, y1 = sample_pair(mechanism, spec.pair, m, stage_stream(sample_ss, k), spec.chunk_size,
                             planned_calls=2 * int(spec.num_samples))
        kill_point("trial.sampled")
        state["k"] = k + 1
        if screen is not None and state["found"] is None and state["check"] < len(checks):
            kept0.append(y0)
            kept1.append(y1)
        return y0, y1

    def on_batch(rec) -> None:
        have = rec.num_samples
        while screen is not None and state["found"] is None and state["check"] < len(checks) \
                and checks[state["check"]] <= have:
            c = state["check"]
            n_c = checks[c]
            x0 = _concat_chunks(mechanism, kept0, spec.pair.d0)[:n_c]
            x1 = _concat_chunks(mechanism, kept1, spec.pair.d1)[:n_c]
            t0 = time.perf_counter()
            if not undecided or has_noninteger_floats(x0) or has_noninteger_floats(x1):
                out = screen.test(x0, x1, claim, beta=check_betas[c], rng=np.random.default_rng(stage_stream(test_ss, c)))
                state["screen_notes"].append(f"{screen.name} at {n_c:,} pairs: {out.status}")
                if out.violation:
                    state["found"] = (out, int(n_c))
                    kept0.clear()
                    kept1.clear()
            state["screen_s"] += time.perf_counter() - t0
            state["check"] = c + 1

    result = seq.run(draw, claim, beta=beta_seq, rng=np.random.default_rng(test_ss), budget=int(spec.num_samples),
                     per_call=per_call, schedule=batches, on_batch=on_batch)
    outcome = result.outcome
    if state["found"] is not None:
        found, n_found = state["found"]
        outcome = continued_outcome(whole_name, found, n_found, outcome, int(result.samples_drawn - result.sizing_samples), seq_frac)
    elif state["screen_notes"]:
        outcome = dataclasses.replace(outcome, note=outcome.note + "; " + "; ".join(state["screen_notes"]),
                                      beta=fraction * spec.beta)
    last = result.batches[-1] if result.batches else None
    stages = tuple(StageRecord(int(b.num_samples), float(beta_seq),
                               "violation" if (b is last and result.outcome.violation) else "pass",
                               float(b.log_e_value - math.log(1.0 / beta_seq)),
                               futile=bool(b is last and result.stop_reason == "futility"), distributional_only=alone)
                   for b in result.batches)
    reason = "violation" if result.outcome.violation else result.stop_reason  # as run_trial: the distributional part's
    return TrialRecord(
        # the pairs the verdict rests on; the sizing step's fresh pairs after a violation are in the
        # bound (EProcessBound.sizing_samples) and the note
        index=spec.index, finder=spec.finder, pair=spec.pair, num_samples=int(result.samples_drawn - result.sizing_samples),
        outcome=outcome,
        seed_key=(int(spec.index),), sample_seconds=float(result.sample_seconds),
        test_seconds=float(result.test_seconds + state["screen_s"]), stages=stages, stop_reason=reason,
        planned_samples=int(spec.num_samples),
    )


# =========================================================================== executors
@runtime_checkable
class Executor(Protocol):
    """Where the audit loop runs trials: every member :func:`dpaudit.audit.loop.audit` uses.

    The loop calls :meth:`start` once before the first trial, keeps up to :attr:`capacity` trials
    submitted (:meth:`submit`), collects them one by one with :meth:`wait_any`, calls
    :meth:`cancel_all` when it stops early or a trial fails, and :meth:`close` at the end.

    Attributes
    ----------
    kind : str
        ``"in-process"`` or ``"dask"``; reported when no trial was left to run.
    capacity : int
        Trials kept in flight at once (read after :meth:`start`).
    """

    kind: str
    capacity: int

    def start(self, mechanism, tester, claim, *, num_samples: int | None = None,
              chunk_size: int | None = None) -> None:
        """Get ready to run trials of ``mechanism`` tested by ``tester`` against ``claim``."""

    def submit(self, spec: TrialSpec) -> None:
        """Queue one trial."""

    def wait_any(self) -> tuple:
        """Block until a submitted trial ends: ``(spec, TrialRecord or the exception it raised)``."""

    def cancel_all(self) -> list[TrialSpec]:
        """Cancel every trial still in flight; return their specs."""

    def describe(self) -> dict:
        """JSON summary for the report (``{"executor": kind, "workers": ...}``)."""

    def close(self) -> None:
        """Release workers and clients (idempotent)."""


def usable_cores() -> int:
    """CPU cores this process may run on: ``len(os.sched_getaffinity(0))`` where the platform has
    it (Linux: respects taskset, cgroups cpusets), else ``os.cpu_count()``; at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _check_processes(processes, what: str = "processes"):
    """``processes`` as ``"auto"`` (None or "auto") or an int >= 1; ``ValueError`` naming it."""
    if processes is None or (isinstance(processes, str) and processes.strip().lower() == "auto"):
        return "auto"
    if isinstance(processes, bool) or not isinstance(processes, (int, np.integer)) or processes < 1:
        raise ValueError(f"{what} must be a positive integer or 'auto', got {processes!r}")
    return int(processes)


class InProcessExecutor:
    """Runs each trial in this process when asked for its result (one trial in flight).

    The audit loop is then exactly paper 000's sequential Alg. 1: ask, run, tell. A per-call
    mechanism's sampling chunks are drawn on a :class:`SamplingPool` of ``processes`` spawned
    processes (started on the first trial with at least two chunks per dataset, kept until
    :meth:`close`); the samples are those of the serial path (:func:`sample_pair`).

    Parameters
    ----------
    processes : int or "auto", optional
        Processes that sample a per-call mechanism: ``"auto"`` (default, also None) decides on
        the first trial by a short measurement: a few calls of the mechanism are timed in this
        process (:func:`time_per_call`; a mechanism that raises then fails in this process, no
        pool is started) and one process per usable core (:func:`usable_cores`) is started only
        when :func:`choose_processes` says the trial's calls repay the pool's start-up;
        :meth:`describe` states the choice. ``1``: in this process (no pool); ``N``: N processes.
        Vectorised mechanisms, and any mechanism on a one-core machine, are always sampled in
        this process.
    min_pool_calls : int, default MIN_POOL_CALLS
        Trials of fewer calls (both datasets) are sampled in this process: a pool's start-up would
        cost more than it saves.

    Raises
    ------
    ValueError
        If ``processes`` is not a positive integer or ``"auto"``, or ``min_pool_calls`` is negative.
    """

    kind = "in-process"
    capacity = 1

    def __init__(self, processes: int | str | None = None, *, min_pool_calls: int = MIN_POOL_CALLS):
        self.processes = _check_processes(processes)
        if isinstance(min_pool_calls, bool) or not isinstance(min_pool_calls, (int, np.integer)) or min_pool_calls < 0:
            raise ValueError(f"min_pool_calls must be an integer >= 0, got {min_pool_calls!r}")
        self.min_pool_calls = int(min_pool_calls)
        self._queue: list[TrialSpec] = []
        self._ctx = None
        self._pool: SamplingPool | None = None
        self._measure = False  # processes="auto": decide on the first trial (_decide)
        self._choice: dict = {}

    def pool_size(self) -> int:
        """Processes a per-call mechanism would be sampled on (1: in this process)."""
        return usable_cores() if self.processes == "auto" else int(self.processes)

    def start(self, mechanism, tester, claim, *, num_samples: int | None = None, chunk_size: int | None = None) -> None:
        """Keep the trial's objects; plan a sampling pool for a per-call mechanism whose trials have
        at least two chunks per dataset and ``min_pool_calls`` calls (``num_samples``, ``chunk_size``)
        when :meth:`pool_size` > 1 (with ``processes="auto"``, only if the first trial's
        measurement says it pays off).

        A mechanism that cannot be pickled is sampled in this process, with a ``RuntimeWarning``.
        """
        self.close()
        self._ctx = (mechanism, tester, claim)
        self._measure, self._choice = False, {}
        size = self.pool_size()
        chunked = bool(chunk_size) and is_per_call(mechanism)
        if size < 2 or not chunked:
            return
        if num_samples is not None and (
                len(chunk_sizes(num_samples, chunk_size)) < 2 or 2 * int(num_samples) < self.min_pool_calls):
            return
        if self.processes == "auto":
            self._measure = True  # the first trial times the mechanism first (_decide)
            return
        self._make_pool(mechanism, size)

    def _make_pool(self, mechanism, size: int) -> None:
        try:
            self._pool = SamplingPool(mechanism, size, min_calls=self.min_pool_calls)
        except NotShippableError as exc:
            warnings.warn(f"sampling in this process, not on {size} processes: {exc}", RuntimeWarning, stacklevel=3)

    def submit(self, spec: TrialSpec) -> None:
        self._queue.append(spec)

    def wait_any(self):
        """Run the oldest submitted trial; return ``(spec, TrialRecord or exception)``."""
        spec = self._queue.pop(0)
        if self._measure:  # before the pool is handed to the trial: the choice may start one
            try:
                self._decide(spec)
            except Exception as exc:  # returned, the loop decides
                return spec, exc
        token = _ACTIVE_POOL.set(self._pool)
        try:
            return spec, run_trial(*self._ctx, spec)
        except Exception as exc:  # returned, the loop decides
            return spec, exc
        finally:
            _ACTIVE_POOL.reset(token)

    def cancel_all(self) -> list[TrialSpec]:
        out, self._queue = self._queue, []
        return out

    def _decide(self, spec: TrialSpec) -> None:
        """``processes="auto"``: time the mechanism on ``spec``'s pair (:func:`time_per_call`) and
        start a pool if :func:`choose_processes` says so, for this trial's planned calls."""
        self._measure = False
        mechanism = self._ctx[0]
        try:
            per_call = time_per_call(mechanism, spec.pair)
        except Exception as exc:  # the trial raises it again, in this process
            self._choice = {"processes_choice": f"the mechanism raised when timed ({type(exc).__name__}): "
                                                "sampled in this process"}
            return
        chunk = spec.chunk_size or 1
        steps = np.diff((0,) + tuple(spec.schedule))
        chunks = 2 * sum(len(chunk_sizes(int(n), chunk)) for n in steps)
        size, reason = choose_processes(per_call, 2 * int(spec.num_samples), chunks, self.pool_size())
        self._choice = {"processes_choice": reason, "seconds_per_call": float(per_call)}
        if size > 1:
            self._make_pool(mechanism, size)
            if self._pool is None:  # could not be pickled (warned)
                self._choice["processes_choice"] = reason + "; but the mechanism cannot be pickled: sampled in this process"

    def describe(self) -> dict:
        """``{"executor": "in-process", "workers": 1, "processes": P}``: ``P`` processes sample a
        per-call mechanism (1: in this process). With ``processes="auto"``, once the first trial
        has decided, also ``"processes_choice"`` (the reason, e.g. "measured 4.2 µs per call:
        workers would not pay off; ...", from :func:`choose_processes`) and
        ``"seconds_per_call"`` (the measurement; absent when the mechanism raised while timed)."""
        return {"executor": self.kind, "workers": 1, "processes": self._pool.processes if self._pool else 1,
                **self._choice}

    def close(self) -> None:
        """Forget queued trials and shut the sampling pool down (idempotent)."""
        self._queue = []
        if self._pool is not None:
            self._pool.close()
            self._pool = None


class _Failure:
    """An exception raised on a worker, in a form that survives pickling (dpaudit's errors have
    keyword-only constructor arguments that plain exception pickling loses)."""

    def __init__(self, exc: BaseException):
        self.type_name = type(exc).__name__
        self.module = type(exc).__module__
        self.message = str(exc)
        self.mechanism = getattr(exc, "mechanism", None)
        self.dataset = getattr(exc, "dataset", None)

    def exception(self) -> BaseException:
        if self.type_name == "MechanismError":
            exc = MechanismError.__new__(MechanismError)
            Exception.__init__(exc, self.message)
            exc.mechanism, exc.dataset = self.mechanism, self.dataset
            return exc
        try:
            import importlib

            cls = getattr(importlib.import_module(self.module), self.type_name)
            return cls(self.message)
        except Exception:
            return DPAuditError(f"{self.type_name} on a Dask worker: {self.message}")


_CTX_CACHE: "OrderedDict[tuple, tuple]" = OrderedDict()
_CTX_LOCK = threading.Lock()


def _context(blob: bytes):
    """Unpickle the (mechanism, tester, claim) blob once per worker thread (cached)."""
    import cloudpickle

    key = (hashlib.sha1(blob).hexdigest(), threading.get_ident())
    with _CTX_LOCK:
        if key in _CTX_CACHE:
            _CTX_CACHE.move_to_end(key)
            return _CTX_CACHE[key]
    ctx = cloudpickle.loads(blob)
    with _CTX_LOCK:
        _CTX_CACHE[key] = ctx
        while len(_CTX_CACHE) > 16:
            _CTX_CACHE.popitem(last=False)
    return ctx


def _task_trial(blob: bytes, spec: TrialSpec):
    try:
        return run_trial(*_context(blob), spec)
    except Exception as exc:
        return _Failure(exc)


def _task_chunk(blob: bytes, spec: TrialSpec, dataset: int, chunk: int, size: int):
    try:
        mechanism = _context(blob)[0]
        sample_ss, _ = trial_streams(spec.seed, spec.index)
        d = spec.pair.d0 if dataset == 0 else spec.pair.d1
        t0 = time.perf_counter()
        x = draw(mechanism, d, size, chunk_stream(sample_ss, dataset, chunk))
        return x, time.perf_counter() - t0
    except Exception as exc:
        return _Failure(exc)


def _task_test(blob: bytes, spec: TrialSpec, n0: int, *chunks):
    for c in chunks:
        if isinstance(c, _Failure):
            return c
    try:
        mechanism, tester, claim = _context(blob)
        parts = [c[0] for c in chunks]
        sample_seconds = float(sum(c[1] for c in chunks))
        x0 = _concat_chunks(mechanism, parts[:n0], spec.pair.d0)
        x1 = _concat_chunks(mechanism, parts[n0:], spec.pair.d1)
        if x0.shape[1] != x1.shape[1]:
            raise _dimension_error(mechanism, x1.shape[1], x0.shape[1], spec.pair.d1)
        _, test_ss = trial_streams(spec.seed, spec.index)
        t0 = time.perf_counter()
        used, fraction = trial_tester(tester, claim, spec)
        outcome = used.test(x0, x1, claim, beta=fraction * spec.beta, rng=np.random.default_rng(test_ss))
        return _record(spec, outcome, sample_seconds, time.perf_counter() - t0, fraction=fraction,
                       distributional_only=used is not tester)
    except Exception as exc:
        return _Failure(exc)


def pickle_context(mechanism, tester, claim, *, where: str = "on Dask workers",
                   instead: str = "run without --scheduler/--workers (in this process)") -> bytes:
    """cloudpickle ``(mechanism, tester, claim)`` for the workers (read back by ``_context``).

    Parameters
    ----------
    mechanism, tester, claim
        What the workers need (None for what they do not: the sampling pool ships the mechanism
        alone).
    where, instead : str
        For the error: where the objects were to run, and what to do instead.

    Returns
    -------
    bytes

    Raises
    ------
    NotShippableError
        Naming the object that cannot be pickled and why.
    """
    import cloudpickle

    for label, obj in (("mechanism", mechanism), ("tester", tester), ("claim", claim)):
        try:
            cloudpickle.dumps(obj)
        except Exception as exc:
            name = getattr(obj, "name", None) or type(obj).__name__
            raise NotShippableError(
                f"the {label} {name!r} cannot be pickled to run {where} ({type(exc).__name__}: {exc}). "
                "Make it picklable (no open files, locks, sockets or live database connections as "
                "attributes; define classes and functions at module level), or " + instead
            ) from None
    return cloudpickle.dumps((mechanism, tester, claim))


_POOL_BLOB: bytes | None = None


class _Unloadable:
    """A pool process could not unpickle the mechanism (e.g. its module does not import there)."""

    def __init__(self, exc: BaseException):
        self.message = f"{type(exc).__name__}: {exc}"


def _pool_init(blob: bytes) -> None:
    """Initialiser of a pool process: keep the mechanism's blob; Ctrl-C is the parent's to handle."""
    global _POOL_BLOB
    import signal

    _POOL_BLOB = blob
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except (ValueError, OSError):  # pragma: no cover
        pass


def _pool_ping():
    """Load the mechanism in a pool process (its first task after :meth:`SamplingPool.warm_up`)."""
    try:
        _context(_POOL_BLOB)
    except Exception as exc:
        return _Unloadable(exc)
    return None


def _pool_chunk(dataset: np.ndarray, j: int, c: int, size: int, sample_ss):
    """Draw chunk ``c`` of dataset ``j`` in a pool process (the serial path's :func:`draw` call)."""
    try:
        mechanism = _context(_POOL_BLOB)[0]
    except Exception as exc:
        return _Unloadable(exc)
    try:
        return draw(mechanism, dataset, size, chunk_stream(sample_ss, j, c))
    except Exception as exc:
        return _Failure(exc)


class SamplingPool:
    """Draws the sampling chunks of one per-call mechanism on a pool of spawned processes.

    A ``concurrent.futures.ProcessPoolExecutor`` with the ``spawn`` start method (the same on
    Linux, macOS and Windows; never forks a process that holds torch or threads), started on the
    first :meth:`draw_pair`. The mechanism is pickled once (:func:`pickle_context`) and unpickled
    once per process. Each chunk is the serial path's: same sizes (:func:`chunk_sizes`), same stream
    (:func:`chunk_stream`), same validation (:func:`draw`), so the samples are identical.

    If the pool cannot run (its processes die, e.g. a script that starts an audit at import time
    without an ``if __name__ == "__main__":`` guard, or the mechanism does not unpickle there),
    :meth:`draw_pair` warns once and returns None from then on: the caller samples in this process.

    Parameters
    ----------
    mechanism : Mechanism
        The per-call mechanism the pool samples.
    processes : int, optional
        Pool size, ``>= 1``; default :func:`usable_cores`.
    min_calls : int, default MIN_POOL_CALLS
        :func:`sample_pair` starts the pool for a trial of at least this many calls (both
        datasets, all stages); once it runs, it serves every draw of two or more chunks.

    Raises
    ------
    NotShippableError
        If the mechanism cannot be pickled.
    ValueError
        If ``processes`` is not a positive integer or ``min_calls`` is negative.
    """

    def __init__(self, mechanism, processes: int | None = None, *, min_calls: int = MIN_POOL_CALLS):
        if isinstance(min_calls, bool) or not isinstance(min_calls, (int, np.integer)) or min_calls < 0:
            raise ValueError(f"min_calls must be an integer >= 0, got {min_calls!r}")
        self.min_calls = int(min_calls)
        n = usable_cores() if processes is None else _check_processes(processes)
        if n == "auto":
            n = usable_cores()
        self.mechanism = mechanism
        self.processes = int(n)
        self._blob = pickle_context(
            mechanism, None, None, where="on a pool of processes",
            instead="sample in this process (processes=1; dpaudit test --processes 1)",
        )
        self._executor = None
        self._broken: str | None = None

    @property
    def running(self) -> bool:
        """Whether the processes have been started (by :meth:`warm_up` or :meth:`draw_pair`) and
        not closed."""
        return self._executor is not None

    def serves(self, mechanism) -> bool:
        """Whether this pool samples ``mechanism`` (the very object) and still works."""
        return mechanism is self.mechanism and self._broken is None

    def _start(self) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self._executor = ProcessPoolExecutor(
            max_workers=self.processes, mp_context=multiprocessing.get_context("spawn"),
            initializer=_pool_init, initargs=(self._blob,),
        )

    def warm_up(self) -> None:
        """Start the processes now, without waiting for them: each gets one task that loads the
        mechanism, and :meth:`draw_pair`'s chunks queue behind it. No-op if running or broken."""
        from concurrent.futures.process import BrokenProcessPool

        if self._executor is not None or self._broken is not None:
            return
        self._start()
        try:
            for _ in range(self.processes):
                self._executor.submit(_pool_ping)
        except BrokenProcessPool as exc:  # e.g. a script without an ``if __name__ == "__main__":`` guard
            self._give_up(f"{type(exc).__name__}: {exc}")

    def _give_up(self, reason: str) -> None:
        self._broken = reason
        name = getattr(self.mechanism, "name", type(self.mechanism).__name__)
        warnings.warn(f"sampling {name!r} in this process from now on: the pool of {self.processes} processes "
                      f"failed ({reason}). The samples are the same.", RuntimeWarning, stacklevel=4)
        self.close()

    def draw_pair(self, pair: NeighbouringPair, sizes: list[int], sample_ss):
        """Draw the chunks ``sizes`` of each dataset of ``pair`` on the pool.

        Parameters
        ----------
        pair : NeighbouringPair
        sizes : list of int
            The chunk sizes of :func:`chunk_sizes` (the same for both datasets).
        sample_ss : numpy.random.SeedSequence
            The sampling stream; chunk ``c`` of dataset ``j`` uses :func:`chunk_stream`.

        Returns
        -------
        (x0, x1) or None
            The samples, as the serial path of :func:`sample_pair` draws them; None if the pool
            failed (warned once): sample in this process.

        Raises
        ------
        MechanismError
            The first error the serial path would raise (chunks checked in the serial order).
        """
        from concurrent.futures.process import BrokenProcessPool

        if self._broken is not None:
            return None
        futures: list = []
        try:
            if self._executor is None:
                self._start()
            for j, d in enumerate((pair.d0, pair.d1)):
                futures.append([self._executor.submit(_pool_chunk, d, j, c, m, sample_ss) for c, m in enumerate(sizes)])
            out, dim = [], None
            for j, d in enumerate((pair.d0, pair.d1)):
                parts = []
                for f in futures[j]:
                    part = f.result()
                    if isinstance(part, _Unloadable):
                        self._give_up(f"the mechanism could not be unpickled there: {part.message}")
                        return None
                    if isinstance(part, _Failure):
                        raise part.exception()
                    if dim is not None and part.shape[1] != dim:
                        raise _dimension_error(self.mechanism, part.shape[1], dim, d)
                    parts.append(part)
                x = _concat_chunks(self.mechanism, parts, d)
                dim = x.shape[1]
                out.append(x)
            return out[0], out[1]
        except BrokenProcessPool as exc:
            self._give_up(f"{type(exc).__name__}: {exc}")
            return None
        finally:
            for fs in futures:
                for f in fs:
                    f.cancel()

    def close(self) -> None:
        """Shut the processes down (idempotent); a later :meth:`draw_pair` starts new ones."""
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None


class DaskExecutor:
    """Runs trials on a Dask cluster (``dask.distributed``).

    Parameters
    ----------
    address : str, optional
        Scheduler of an existing cluster, e.g. ``"tcp://10.0.0.5:8786"``.
    n_workers : int, optional
        Without ``address``: workers of a new ``LocalCluster`` (default: one per CPU core).
    threads_per_worker : int, default 1
        Threads per local worker. The testers train PyTorch models; one thread per worker
        process avoids oversubscribing the cores.
    processes : bool, default True
        Local workers as processes (False: threads of this process, for tests).
    client : distributed.Client, optional
        Use this client (not closed by :meth:`close`).
    in_flight : int, optional
        Trials submitted at once; default: see :attr:`capacity` (about the cluster's threads + 1
        for vectorised mechanisms, so a worker never waits for the driver to ask the finder for
        the next pair).

    Raises
    ------
    DPAuditError
        If dask.distributed is not installed, the scheduler cannot be reached, or a parameter is
        invalid.
    """

    kind = "dask"

    def __init__(self, address: str | None = None, *, n_workers: int | None = None, threads_per_worker: int = 1,
                 processes: bool = True, client=None, in_flight: int | None = None):
        if n_workers is not None and (int(n_workers) != n_workers or n_workers < 1):
            raise DPAuditError(f"the number of Dask workers must be a positive integer, got {n_workers!r}")
        if address is not None and not isinstance(address, str):
            raise DPAuditError(f"the Dask scheduler address must be a string like tcp://host:8786, got {address!r}")
        self.address = address
        self.n_workers = None if n_workers is None else int(n_workers)
        self.threads_per_worker = int(threads_per_worker)
        self.processes = bool(processes)
        self._client = client
        self._own_client = client is None
        self._cluster = None
        self._in_flight = in_flight
        self._futures: dict = {}
        self._ac = None
        self._blob = None
        self._per_call = False
        self._num_samples = None
        self._chunk = None

    # ------------------------------------------------------------------ lifecycle
    def start(self, mechanism, tester, claim, *, num_samples: int | None = None, chunk_size: int | None = None) -> None:
        """Connect (or start a local cluster) and ship the mechanism, tester and claim.

        ``num_samples`` and ``chunk_size`` (the trials' sampling plan) size :attr:`capacity`."""
        try:
            from distributed import Client, LocalCluster, as_completed
        except ImportError:  # pragma: no cover
            raise DPAuditError("--scheduler/--workers need dask.distributed: pip install 'dpaudit[search]'") from None
        blob = pickle_context(mechanism, tester, claim)
        if self._client is None:
            if self.address is not None:
                try:
                    self._client = Client(self.address, timeout="20s")
                except (OSError, TimeoutError) as exc:
                    raise DPAuditError(f"cannot reach the Dask scheduler at {self.address!r}: {exc}") from None
            else:
                n = self.n_workers or max(1, (os.cpu_count() or 1) // self.threads_per_worker)
                self._cluster = LocalCluster(
                    n_workers=n, threads_per_worker=self.threads_per_worker, processes=self.processes,
                    dashboard_address=None,
                )
                self._client = Client(self._cluster)
        self._blob = self._client.scatter(blob, broadcast=True, hash=False)
        self._ac = as_completed()
        self._per_call = is_per_call(mechanism) and bool(chunk_size)
        self._num_samples, self._chunk = num_samples, chunk_size
        self._threads = self._count_threads()

    def _count_threads(self) -> int:
        info = self._client.scheduler_info(n_workers=-1) if self._client is not None else {"workers": {}}
        return max(1, sum(w.get("nthreads", 1) for w in info.get("workers", {}).values()))

    @property
    def threads(self) -> int:
        """Total worker threads of the cluster when it was started (at least 1)."""
        return getattr(self, "_threads", None) or self._count_threads()

    @property
    def capacity(self) -> int:
        """Trials kept in flight: ``in_flight`` if given; else, for vectorised mechanisms (one
        task per trial), the cluster's threads + 1; for per-call mechanisms, whose trials are
        already split into chunk tasks, enough trials to give every thread a chunk, plus one to
        fill the workers left idle while a trial's test runs (none on a single thread, where a
        queued trial would only interleave with the running one)."""
        if self._in_flight:
            return int(self._in_flight)
        threads = self.threads
        if not self._per_call:
            return threads + 1
        tasks = max(1, 2 * len(chunk_sizes(self._num_samples or 1, self._chunk or 1)))
        return -(-threads // tasks) + (1 if threads > 1 else 0)

    def describe(self) -> dict:
        info = self._client.scheduler_info(n_workers=-1) if self._client is not None else {}
        workers = info.get("workers", {})
        return {
            "executor": self.kind,
            "scheduler": info.get("address", self.address),
            "workers": len(workers),
            "threads": sum(w.get("nthreads", 1) for w in workers.values()),
            "local_cluster": self._cluster is not None,
        }

    def close(self) -> None:
        if self._client is not None and self._own_client:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()
        self._client = self._cluster = None

    # ------------------------------------------------------------------ trials
    def submit(self, spec: TrialSpec) -> None:
        """Submit a trial: one task (vectorised mechanisms) or its sampling chunks plus a test task."""
        c = self._client
        prio = -int(spec.index)
        if self._per_call and spec.chunk_size:
            sizes = chunk_sizes(spec.num_samples, spec.chunk_size)
            chunks = [
                c.submit(_task_chunk, self._blob, spec, j, k, m, pure=False, priority=prio)
                for j in (0, 1) for k, m in enumerate(sizes)
            ]
            fut = c.submit(_task_test, self._blob, spec, len(sizes), *chunks, pure=False, priority=prio)
            self._futures[fut.key] = (spec, fut, chunks)
        else:
            fut = c.submit(_task_trial, self._blob, spec, pure=False, priority=prio)
            self._futures[fut.key] = (spec, fut, [])
        self._ac.add(fut)

    def wait_any(self):
        """Block until some submitted trial finishes; return ``(spec, TrialRecord or exception)``."""
        fut = next(self._ac)
        spec, _, chunks = self._futures.pop(fut.key)
        try:
            result = fut.result()
        except Exception as exc:  # lost worker, cancelled, ...
            return spec, DPAuditError(f"trial {spec.index} failed on the Dask cluster: {type(exc).__name__}: {exc}")
        finally:
            for ch in chunks:
                ch.release()
        if isinstance(result, _Failure):
            return spec, result.exception()
        return spec, result

    def cancel_all(self) -> list[TrialSpec]:
        """Cancel every trial still in flight; return their specs."""
        specs = []
        futs = []
        for spec, fut, chunks in self._futures.values():
            specs.append(spec)
            futs.append(fut)
            futs.extend(chunks)
        if futs:
            self._client.cancel(futs)
        self._futures.clear()
        self._ac = type(self._ac)() if self._ac is not None else None
        return specs
