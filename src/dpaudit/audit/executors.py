"""Running trials: in this process, or on a Dask cluster.

One trial of the audit (paper 000, Alg. 1, one iteration) is: draw ``num_samples`` outputs of the
mechanism on each dataset of a pair, then run the tester on the two samples at failure probability
``beta / T``. :func:`run_trial` does it in this process; the executors run many trials:

* :class:`InProcessExecutor` (the default of :func:`dpaudit.audit`): one trial at a time, in this
  process, exactly the sequential loop of Alg. 1;
* :class:`DaskExecutor`: trials as tasks on a Dask cluster (``dask.distributed``): a
  ``LocalCluster`` sized to the machine, or an existing scheduler (``tcp://host:port``). Several
  trials are in flight at once so the workers stay busy while the finder proposes the next
  pairs; for per-call (non-vectorised) mechanisms the sampling itself is split into chunks that
  run as separate tasks, and the test runs where the chunks are gathered.

Randomness never depends on where or in which order trials run: trial ``t`` uses
``SeedSequence(seed).spawn`` key ``t``; its child ``(t, 0)`` drives the sampling and ``(t, 1)``
the tester. A per-call mechanism's samples on dataset ``j`` (0: D0, 1: D1) come in chunks of
``chunk_size`` calls, chunk ``c`` drawn from the stream with spawn key ``(t, 0, j, c)`` -- the same
chunks in this process and on any number of Dask workers, so the samples are identical.

Mechanisms, testers and claims are shipped to workers with cloudpickle (once per audit, as a
scattered blob); one that cannot be pickled raises :class:`NotShippableError` before any trial
runs.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from ..datasets import NeighbouringPair
from ..errors import DPAuditError, MechanismError
from ..mechanisms.base import CallableMechanism, draw
from .result import StageRecord, TrialRecord
from .sequential import is_futile, stage_betas, stage_stream

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "DaskExecutor",
    "Executor",
    "InProcessExecutor",
    "NotShippableError",
    "TrialSpec",
    "is_per_call",
    "run_trial",
    "sample_pair",
    "trial_streams",
]

DEFAULT_CHUNK_SIZE = 5000
"""Calls of a per-call mechanism per sampling chunk (one Dask task; about 0.5 s at 100 us/call)."""


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
        Failure probability of this trial's test (``beta / T``).
    seed : int
        Root seed of the audit.
    chunk_size : int or None
        Calls per sampling chunk for per-call mechanisms (None: no chunks).
    stages : tuple of int or None
        Cumulative samples per dataset after each stage of a sequential trial
        (:func:`~dpaudit.audit.sequential.stage_schedule`, ending at ``num_samples``); None or
        one stage: a fixed-size trial, exactly as without stages.
    """

    index: int
    pair: NeighbouringPair
    finder: str
    num_samples: int
    beta: float
    seed: int
    chunk_size: int | None = DEFAULT_CHUNK_SIZE
    stages: tuple | None = None

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
    """Whether ``mechanism`` makes one call per output (a :class:`CallableMechanism`, or any
    mechanism with ``vectorised = False``), so that chunked sampling is worth it."""
    return isinstance(mechanism, CallableMechanism) or getattr(mechanism, "vectorised", True) is False


def chunk_sizes(num_samples: int, chunk_size: int) -> list[int]:
    """Sizes of the chunks ``num_samples`` calls are split into (all ``chunk_size`` but the last)."""
    full, rest = divmod(int(num_samples), int(chunk_size))
    return [int(chunk_size)] * full + ([rest] if rest else [])


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


def sample_pair(mechanism, pair: NeighbouringPair, num_samples: int, sample_ss, chunk_size: int | None):
    """Draw ``num_samples`` validated outputs on each dataset of ``pair``.

    Vectorised mechanisms (and any mechanism when ``chunk_size`` is None) draw D0's then D1's
    outputs from one generator seeded by ``sample_ss``; per-call mechanisms draw chunks from
    :func:`chunk_stream`.

    Returns
    -------
    x0, x1 : ndarray, shape (num_samples, output_dim)

    Raises
    ------
    MechanismError
        If the mechanism fails or returns unusable outputs.
    """
    if chunk_size and is_per_call(mechanism):
        out = []
        dim = None
        for j, d in enumerate((pair.d0, pair.d1)):
            parts = [draw(mechanism, d, m, chunk_stream(sample_ss, j, c), output_dim=dim)
                     for c, m in enumerate(chunk_sizes(num_samples, chunk_size))]
            x = _concat_chunks(mechanism, parts, d)
            dim = x.shape[1]
            out.append(x)
        return out[0], out[1]
    rng = np.random.default_rng(sample_ss)
    x0 = draw(mechanism, pair.d0, int(num_samples), rng)
    x1 = draw(mechanism, pair.d1, int(num_samples), rng, output_dim=x0.shape[1])
    return x0, x1


def _record(spec: TrialSpec, outcome, sample_seconds: float, test_seconds: float, *, stages=None,
            stop_reason: str | None = None, used: int | None = None):
    """The :class:`TrialRecord` of a trial; without ``stages``, of a fixed-size trial at ``spec.beta``."""
    if stages is None:
        stages = (StageRecord(int(spec.num_samples), float(spec.beta), outcome.status, float(outcome.margin)),)
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
    sample_ss, test_ss = trial_streams(spec.seed, spec.index)
    schedule = spec.schedule
    if len(schedule) == 1:
        t0 = time.perf_counter()
        x0, x1 = sample_pair(mechanism, spec.pair, spec.num_samples, sample_ss, spec.chunk_size)
        t1 = time.perf_counter()
        outcome = tester.test(x0, x1, claim, beta=spec.beta, rng=np.random.default_rng(test_ss))
        t2 = time.perf_counter()
        return _record(spec, outcome, t1 - t0, t2 - t1)
    betas = stage_betas(schedule, spec.beta)
    parts0, parts1, stages = [], [], []
    sample_s = test_s = 0.0
    have, reason, outcome = 0, "budget", None
    for k, (n_k, beta_k) in enumerate(zip(schedule, betas)):
        t0 = time.perf_counter()
        y0, y1 = sample_pair(mechanism, spec.pair, n_k - have, stage_stream(sample_ss, k), spec.chunk_size)
        parts0.append(y0)
        parts1.append(y1)
        x0 = _concat_chunks(mechanism, parts0, spec.pair.d0) if k else y0
        x1 = _concat_chunks(mechanism, parts1, spec.pair.d1) if k else y1
        have = n_k
        t1 = time.perf_counter()
        outcome = tester.test(x0, x1, claim, beta=beta_k, rng=np.random.default_rng(stage_stream(test_ss, k)))
        last = k == len(schedule) - 1
        futile = (not last) and is_futile(outcome, claim, scale=schedule[-1] / n_k, beta_ratio=betas[-1] / beta_k)
        test_s += time.perf_counter() - t1
        sample_s += t1 - t0
        stages.append(StageRecord(int(n_k), float(beta_k), outcome.status, float(outcome.margin), bool(futile)))
        if outcome.violation:
            reason = "violation"
            break
        if futile:
            reason = "futility"
            break
    return _record(spec, outcome, sample_s, test_s, stages=stages, stop_reason=reason, used=have)


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


class InProcessExecutor:
    """Runs each trial in this process when asked for its result (one trial in flight).

    The audit loop is then exactly paper 000's sequential Alg. 1: ask, run, tell.
    """

    kind = "in-process"
    capacity = 1

    def __init__(self):
        self._queue: list[TrialSpec] = []
        self._ctx = None

    def start(self, mechanism, tester, claim, *, num_samples: int | None = None, chunk_size: int | None = None) -> None:
        self._ctx = (mechanism, tester, claim)

    def submit(self, spec: TrialSpec) -> None:
        self._queue.append(spec)

    def wait_any(self):
        """Run the oldest submitted trial; return ``(spec, TrialRecord or exception)``."""
        spec = self._queue.pop(0)
        try:
            return spec, run_trial(*self._ctx, spec)
        except Exception as exc:  # returned, the loop decides
            return spec, exc

    def cancel_all(self) -> list[TrialSpec]:
        out, self._queue = self._queue, []
        return out

    def describe(self) -> dict:
        return {"executor": self.kind, "workers": 1}

    def close(self) -> None:
        self._queue = []


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
            from ..mechanisms.base import describe_dataset

            raise MechanismError(
                f"returned outputs of dimension {x1.shape[1]} but dimension {x0.shape[1]} on the "
                "neighbouring dataset: output shape must not depend on the dataset",
                mechanism=getattr(mechanism, "name", type(mechanism).__name__),
                dataset=describe_dataset(spec.pair.d1),
            )
        _, test_ss = trial_streams(spec.seed, spec.index)
        t0 = time.perf_counter()
        outcome = tester.test(x0, x1, claim, beta=spec.beta, rng=np.random.default_rng(test_ss))
        return _record(spec, outcome, sample_seconds, time.perf_counter() - t0)
    except Exception as exc:
        return _Failure(exc)


def pickle_context(mechanism, tester, claim) -> bytes:
    """cloudpickle ``(mechanism, tester, claim)`` for the workers.

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
                f"the {label} {name!r} cannot be pickled to run on Dask workers ({type(exc).__name__}: {exc}). "
                "Make it picklable (no open files, locks, sockets or live database connections as "
                "attributes; define classes and functions at module level), or run without "
                "--scheduler/--workers (in this process)"
            ) from None
    return cloudpickle.dumps((mechanism, tester, claim))


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
