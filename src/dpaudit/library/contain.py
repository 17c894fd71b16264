"""Rows that run in dpaudit's own process, contained: a worker process, a hard time limit per stage.

A row whose library is installed next to dpaudit (diffprivlib, OpenDP, PipelineDP, PyDP, Opacus)
calls that library in-process. A call that never returns in C code (PyDP's C++
``CalculateGaussianStddev`` looping on an infinite sensitivity, issue 43) cannot be cut by the
per-pair time limit (a SIGALRM the interpreter only sees between bytecodes), and it used to stop a
whole ``dpaudit library audit`` run. :class:`RowWorker` runs such rows in a worker process instead:

* the worker is started once (a fresh interpreter, its own process group) and runs the
  rows one after the other, exactly as the single process did before (same
  :func:`~dpaudit.library.runner.audit_entry`, same seeds, the library imported once), so a row
  that finishes has the record it had in-process;
* it reports each stage as it starts (:data:`~dpaudit.library.runner.STAGE_NAMES`) with the record
  so far, each log line and each finished trial;
* each stage gets a hard wall-clock limit (:func:`stage_limit`); when one runs past it the parent
  kills the worker's whole process group (SIGKILL: nothing in C code can ignore it) and records
  the row as :data:`TIMED_OUT`, ``"timed out (stage S after N s)"`` — an outcome of its own, never
  a pass and never a finding (no verdict of the row is kept; what its finished stages said is
  kept apart under ``partial``); the next row gets a fresh worker;
* a worker that dies (a segmentation fault in the library) makes the row an ``error`` (exit code 2,
  as a failing mechanism), with the signal and stage; the run goes on too.

Rows with an environment of their own (:mod:`dpaudit.library.envs`) already call their library in
a worker with a deadline per request and stay in the calling process.

What it costs: one interpreter start and dpaudit import per run (and per timed-out row), measured in
``benchmarks/results/library_contain.md``; the rows themselves run as before.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import traceback
from multiprocessing.connection import Connection

from .entry import Entry
from .registry import fingerprint

__all__ = ["CONFIRM_FACTOR", "PRELOAD", "STAGE_SECONDS", "START_SECONDS", "TIMED_OUT", "TIME_FIELDS", "RowWorker",
           "RowWorkerError", "stage_limit", "without_times"]

TIMED_OUT = "timed out"
"""The verdict of a row whose stage ran past its time limit (:class:`RowWorker`)."""

STAGE_SECONDS = 1800.0
"""Default wall-clock limit of one stage of a row at its own budget, in seconds: about twice the
longest stage recorded for an in-process row on the shared 2-core machine under load (Opacus
``dp_optimizer_secure``'s audit, 959 s; ``benchmarks/results/library_audits.json``)."""

CONFIRM_FACTOR = 3.0
"""The confirmation run draws twice the samples, and when its targeted tester does not reproduce
the finding the table's own run follows (:func:`dpaudit.library.runner.confirm_run`): its limit is
this many stage limits."""

START_SECONDS = 300.0
"""Longest wait for a worker to start (a fresh interpreter importing dpaudit)."""


PRELOAD = ("dpaudit.library.runner", "dpaudit.library.stages", "dpaudit.audit.loop", "dpaudit.audit.targets",
           "dpaudit.audit.executors", "dpaudit.testers", "dpaudit.mechanisms.zoo")
"""Modules a worker imports before it says it is ready (what every row needs; the row's library and
the testers' frameworks, e.g. torch for the Renyi tester, are imported by the row as in-process)."""


class RowWorkerError(RuntimeError):
    """A row raised an exception that is dpaudit's own (not the library's: those are the row's
    ``error`` outcome); the message carries the worker's traceback."""


TIME_FIELDS = ("seconds", "audit_seconds", "ran_at")
"""The fields of a record that are times (:func:`without_times`)."""


def without_times(record):
    """``record`` (a dict, list or value, nested) without its :data:`TIME_FIELDS`: what two runs of a
    seeded row must agree on, whether in-process or in a worker (seeds, witnesses, bounds, leak sizes).

    Returns
    -------
    The same structure, copied, every dict's time fields left out.
    """
    if isinstance(record, dict):
        return {k: without_times(v) for k, v in record.items() if k not in TIME_FIELDS}
    if isinstance(record, list):
        return [without_times(v) for v in record]
    return record


def stage_limit(entry: Entry, samples: int | None = None, seconds: float | None = None) -> float:
    """The wall-clock limit of one stage of ``entry``'s row, in seconds.

    Parameters
    ----------
    entry : Entry
    samples : int, optional
        The run's samples per dataset and trial when not the row's budget (``--samples``): the
        limit scales with them when there are more (never below the default).
    seconds : float, optional
        An explicit limit (``--time-limit``, the API's override), used as given.

    Returns
    -------
    float
        ``seconds`` when given, else :data:`STAGE_SECONDS` times ``max(1, samples / budget samples)``.
        The confirmation stage gets :data:`CONFIRM_FACTOR` times it (:meth:`RowWorker.audit`).

    Raises
    ------
    ValueError
        If ``seconds`` is not a positive finite number.
    """
    if seconds is not None:
        seconds = float(seconds)
        if not (0.0 < seconds < float("inf")):
            raise ValueError(f"the time limit must be a positive number of seconds, got {seconds!r}")
        return seconds
    scale = 1.0 if samples is None else max(1.0, float(samples) / float(entry.budget.samples))
    return STAGE_SECONDS * scale


def _main(down_fd: int, up_fd: int) -> None:
    """The worker's loop (``python -c``): one request at a time, :func:`~dpaudit.library.runner.audit_entry`
    on it; messages back on ``up_fd``."""
    down, conn = Connection(down_fd, writable=False), Connection(up_fd, readable=False)
    _op, path = down.recv()
    sys.path[:] = list(dict.fromkeys([*path, *sys.path]))  # the caller's import path (its targets)
    import importlib

    for name in PRELOAD:  # dpaudit's own machinery, before "ready": never counted against a row's stage
        importlib.import_module(name)
    from .runner import audit_entry, rerun_entry

    conn.send(("ready", os.getpid()))
    while True:
        try:
            msg = down.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        op, entry, kwargs, want_trials = msg

        def on_trial_end(rec):
            try:
                conn.send(("trial", rec))
            except Exception:  # noqa: BLE001 - a record that does not pickle: its index and status
                conn.send(("trial", _TrialNote(rec.index, str(getattr(rec.outcome, "status", "?")))))

        try:
            if op == "rerun":
                record = rerun_entry(entry, **kwargs)
            else:
                record = audit_entry(entry, log=lambda text: conn.send(("log", text)),
                                     on_stage=lambda name, record: conn.send(("stage", name, record)),
                                     on_trial_end=on_trial_end if want_trials else None, **kwargs)
        except Exception as exc:  # noqa: BLE001 - handed to the caller, which raises it
            conn.send(("raised", f"{type(exc).__name__}: {exc}", traceback.format_exc()))
            continue
        conn.send(("done", record))


class _Status:
    def __init__(self, status: str):
        self.status = status


class _TrialNote:
    """A finished trial as the progress line needs it (``index``, ``outcome.status``), when the
    trial's own record cannot be sent."""

    def __init__(self, index: int, status: str):
        self.index = index
        self.outcome = _Status(status)


class RowWorker:
    """A worker process that audits in-process rows one at a time, each stage under a hard time limit.

    Use it as a context manager (or call :meth:`close`): the worker is started on the first row
    and stopped (killed if need be) at the end.

    Parameters
    ----------
    start_seconds : float
        Longest wait for the worker to start.

    Attributes
    ----------
    starts : int
        Worker processes started (1 plus one per timed-out or crashed row that was followed by another).
    start_seconds_total : float
        Wall time spent starting them (until each had imported dpaudit's runner and said so), in seconds.
    """

    def __init__(self, start_seconds: float = START_SECONDS):
        self.start_timeout = float(start_seconds)
        self._proc = self._send = self._conn = None
        self._busy = False
        self.starts = 0
        self.start_seconds_total = 0.0

    def __enter__(self) -> "RowWorker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- the process -----------------------------------------------------------------------
    def _start(self) -> None:
        # a fresh interpreter (not multiprocessing's spawn, which re-runs the caller's __main__), in its
        # own session so that one kill takes its process group (sampling pools included); two pipes
        # carry pickled messages (multiprocessing.connection framing)
        t0 = time.perf_counter()
        down_r, down_w = os.pipe()
        up_r, up_w = os.pipe()
        code = f"from dpaudit.library.contain import _main; _main({down_r}, {up_w})"
        try:
            proc = subprocess.Popen([sys.executable, "-c", code], pass_fds=(down_r, up_w), start_new_session=True)
        finally:
            os.close(down_r)
            os.close(up_w)
        self._proc = proc
        self._send = Connection(down_w, readable=False)
        self._conn = Connection(up_r, writable=False)
        self._send.send(("hello", list(sys.path)))
        self.starts += 1
        try:
            ready = self._conn.poll(self.start_timeout)
            msg = self._conn.recv() if ready else None
        except (EOFError, OSError):
            msg = None
        self.start_seconds_total += time.perf_counter() - t0
        if not (isinstance(msg, tuple) and msg and msg[0] == "ready"):
            code = self._proc.poll()
            self._kill()
            raise RowWorkerError(f"the row worker did not start within {self.start_timeout:g} s (exit code {code})")

    def _alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _kill(self) -> None:
        proc, conns = self._proc, (self._send, self._conn)
        self._proc = self._send = self._conn = None
        if proc is None:
            return
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                proc.kill()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            pass
        for c in conns:
            if c is not None:
                c.close()

    def close(self) -> None:
        """Stop the worker: ask it to finish (kill its process group at once when a row is still running
        in it, e.g. after Ctrl-C, or when it does not finish). Idempotent."""
        if self._alive() and not self._busy:
            try:
                self._send.send(None)
                self._proc.wait(timeout=5)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                pass
        self._kill()

    # -- one row ---------------------------------------------------------------------------
    def audit(self, entry: Entry, *, time_limit: float | None = None, log=None, on_trial_end=None,
              **kwargs) -> dict:
        """Audit ``entry`` in the worker as :func:`~dpaudit.library.runner.audit_entry` does.

        Parameters
        ----------
        entry : Entry
            An in-process row (``entry.env`` None; another row works too, its environment's worker
            then starts inside this one).
        time_limit : float, optional
            Seconds each stage may take (the confirmation :data:`CONFIRM_FACTOR` times it); default
            :func:`stage_limit` of the row and ``samples``.
        log, on_trial_end : callable, optional
            As :func:`~dpaudit.library.runner.audit_entry`'s, called in this process.
        **kwargs
            The other arguments of :func:`~dpaudit.library.runner.audit_entry` (``stages``,
            ``confirm``, ``processes``, ``samples``, ``beta``, ``leak_samples``, ``search_budget``).

        Returns
        -------
        dict
            The row's record; a row cut by its time limit has ``verdict`` :data:`TIMED_OUT`,
            ``timed_out`` (``stage``, ``seconds`` in it, ``limit``), ``first`` (outcome
            ``timed out``, ``message`` ``"timed out (stage S after N s)"``, ``seconds`` of the whole
            row, the command and seed) and ``partial`` (the fields its finished stages wrote); a row
            whose worker died has ``verdict`` ``error`` and ``crashed`` likewise.

        Raises
        ------
        RowWorkerError
            If the row raised an exception of dpaudit's own (what :func:`audit_entry` raises in
            this process); the worker keeps serving.
        ValueError
            If ``time_limit`` is not a positive number.
        """
        base = stage_limit(entry, kwargs.get("samples"), time_limit)
        return self._request("audit", entry, kwargs, "starting", base, base, log, on_trial_end)

    def rerun(self, entry: Entry, k: int, *, time_limit: float | None = None, samples: int | None = None,
              trials: int | None = None, processes: int | str = 1) -> dict:
        """:func:`~dpaudit.library.runner.rerun_entry` in the worker, all ``k`` audits under ``k`` stage limits.

        Returns
        -------
        dict
            The reruns' record; when cut by the limit, ``key``, ``k``, ``verdict`` :data:`TIMED_OUT`,
            ``message`` (``"timed out (stage reruns after N s)"``), ``seconds`` and ``timed_out``.

        Raises
        ------
        RowWorkerError, ValueError
            As :meth:`audit`; ValueError also for ``k < 1``.
        """
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k!r}")
        base = stage_limit(entry, samples, time_limit)
        kwargs = {"k": int(k), "samples": samples, "trials": trials, "processes": processes}
        return self._request("rerun", entry, kwargs, "reruns", base * k, base, None, None)

    def _request(self, op, entry, kwargs, stage, limit, base, log, on_trial_end) -> dict:
        if not self._alive():
            self._kill()
            self._start()
        t_row = time.perf_counter()
        self._send.send((op, entry, kwargs, on_trial_end is not None))
        self._busy = True
        try:
            return self._wait(entry, kwargs, stage, limit, base, t_row, log or (lambda _text: None), on_trial_end)
        finally:
            self._busy = False

    def _wait(self, entry, kwargs, stage, limit, base, t_row, log, on_trial_end) -> dict:
        """Relay the worker's messages until the row's record comes, or its stage runs past its limit."""
        partial, t_stage = {}, t_row
        while True:
            left = t_stage + limit - time.perf_counter()
            if left <= 0:
                self._kill()
                return _stopped_record(entry, kwargs, partial, stage, t_stage, t_row, limit, TIMED_OUT)
            try:
                ready = self._conn.poll(min(left, 1.0))
                msg = self._conn.recv() if ready else None
            except (EOFError, OSError):  # the worker is gone
                msg, ready = None, True
            if msg is None:
                if ready or not self._alive():
                    try:
                        code = self._proc.wait(timeout=5)
                    except subprocess.TimeoutExpired:
                        code = None
                    self._kill()
                    return _stopped_record(entry, kwargs, partial, stage, t_stage, t_row, limit, "error", code)
                continue
            kind = msg[0]
            if kind == "stage":
                stage, partial, t_stage = msg[1], msg[2], time.perf_counter()
                limit = base * (CONFIRM_FACTOR if stage == "confirmation" else 1.0)
            elif kind == "log":
                log(msg[1])
            elif kind == "trial":
                if on_trial_end is not None:
                    on_trial_end(msg[1])
            elif kind == "done":
                return msg[1]
            elif kind == "raised":
                raise RowWorkerError(f"{entry.key}: {msg[1]} (in the row's worker process)\n{msg[2]}")


def _stopped_record(entry: Entry, kwargs: dict, partial: dict, stage: str, t_stage: float, t_row: float,
                    limit: float, verdict: str, exitcode: int | None = None) -> dict:
    """The record of a row its worker did not finish: cut by the time limit, or dead."""
    now = time.perf_counter()
    in_stage, whole = round(now - t_stage, 1), round(now - t_row, 1)
    if stage == "reruns":
        message = (f"timed out (stage reruns after {in_stage:.0f} s)" if verdict == TIMED_OUT else
                   f"the reruns' worker process died (exit code {exitcode}) after {in_stage:.0f} s")
        return {"key": entry.key, "k": kwargs["k"], "verdict": verdict, "message": message, "seconds": whole,
                "timed_out" if verdict == TIMED_OUT else "crashed": {"stage": stage, "seconds": in_stage,
                                                                      "limit": round(limit, 1)}}
    seed, samples = entry.budget.seed, kwargs.get("samples") or entry.budget.samples
    if verdict == TIMED_OUT:
        message = f"timed out (stage {stage} after {in_stage:.0f} s)"
        why = {"stage": stage, "seconds": in_stage, "limit": round(limit, 1)}
        first = {"outcome": TIMED_OUT, "exit_code": None}
    else:
        how = (f"was killed by signal {-exitcode}" if exitcode is not None and exitcode < 0
               else f"exited with code {exitcode}")
        message = f"the row's worker process {how} in stage {stage} after {in_stage:.0f} s (the library crashed)"
        why = {"stage": stage, "seconds": in_stage, "exitcode": exitcode}
        first = {"outcome": "error", "exit_code": 2}
    first.update(command=" ".join(entry.command(seed, samples)), seed=seed, samples=samples, seconds=whole,
                 message=message)
    record = {"key": entry.key, "fingerprint": fingerprint(entry), "ran_at": time.strftime("%Y-%m-%d %H:%M")}
    if "budget" in partial:
        record["budget"] = partial["budget"]
    record.update(verdict=verdict, first=first)
    record["timed_out" if verdict == TIMED_OUT else "crashed"] = why
    done = {k: v for k, v in partial.items() if k not in ("key", "fingerprint", "ran_at", "budget")}
    if done:
        record["partial"] = done
    return record
