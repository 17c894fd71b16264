"""dpaudit's side of the pipe: start a worker in a library's environment and talk to it.

:class:`WorkerClient` starts ``ENV_PYTHON _worker.py TARGETS_DIR`` (:mod:`._worker`) with pipes
for stdin and stdout, keeps the last lines of its stderr (a reader thread, bounded), and sends one
request at a time (a lock), waiting for each answer with a deadline. Four things can go wrong and
each has its own error, all :class:`~dpaudit.errors.DPAuditError`:

* the library raised: :class:`LibraryCallError` (a :class:`~dpaudit.errors.MechanismError` when it
  happened while sampling) with the library's exception type, message and traceback tail; the
  worker keeps serving;
* the worker died: :class:`WorkerCrashedError` with its exit code and stderr tail;
* no answer within the deadline: :class:`WorkerTimeoutError` (the worker is killed);
* a malformed message: :class:`WorkerProtocolError` (the worker is killed).
"""

from __future__ import annotations

import collections
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from ...errors import DPAuditError, MechanismError
from . import _worker

__all__ = [
    "LibraryCallError", "WorkerClient", "WorkerCrashedError", "WorkerError", "WorkerProtocolError",
    "WorkerTimeoutError", "WORKER_SCRIPT",
]

WORKER_SCRIPT = Path(_worker.__file__).resolve()
"""The standalone worker script the environment's Python runs."""

STDERR_LINES = 60
"""Lines of a worker's stderr kept for error messages."""


class WorkerError(DPAuditError):
    """A worker could not answer: it crashed, timed out or broke the protocol."""


class WorkerCrashedError(WorkerError):
    """The worker process exited (or could not start); the message has its exit code and stderr tail."""


class WorkerTimeoutError(WorkerError):
    """The worker did not answer within the deadline; it has been killed."""


class WorkerProtocolError(WorkerError):
    """The worker sent something that is not a protocol message; it has been killed."""


class LibraryCallError(MechanismError):
    """The library raised inside the worker.

    A :class:`~dpaudit.errors.MechanismError`, so an audit reports it like any mechanism's
    exception (and the adversarial-input screen counts it as a rejected input).

    Attributes
    ----------
    remote_type : str
        The exception's class name in the worker (e.g. ``"ValueError"``).
    remote_module : str
        Its module (e.g. ``"builtins"``, ``"pyspark.errors.exceptions"``).
    remote_message : str
    remote_traceback : str
        The end of the worker-side traceback.
    """

    def __init__(self, message: str, *, remote: dict, mechanism: str = "?", dataset: str = "?"):
        self.remote_type = remote.get("type", "?")
        self.remote_module = remote.get("module", "?")
        self.remote_message = remote.get("message", "")
        self.remote_traceback = remote.get("traceback", "")
        super().__init__(message, mechanism=mechanism, dataset=dataset)


class WorkerClient:
    """One worker process in one environment, and the requests sent to it.

    Parameters
    ----------
    python : str or Path
        The environment's interpreter.
    name : str
        The environment's name, for messages.
    targets_dirs : sequence of str
        Directories put first on the worker's ``sys.path`` (the worker-side target modules).
    env : dict, optional
        Extra environment variables for the worker (e.g. ``JAVA_HOME``).
    start_timeout : float
        Seconds to wait for the worker's ``hello`` (interpreter start-up, importing NumPy).

    Raises
    ------
    WorkerCrashedError
        If the interpreter cannot be started or exits before answering ``hello``.
    WorkerTimeoutError
        If it does not answer ``hello`` within ``start_timeout``.
    """

    def __init__(self, python, name: str, targets_dirs=(), env: dict | None = None, start_timeout: float = 60.0):
        self.name = name
        self.python = str(python)
        self._lock = threading.Lock()
        self._stderr = collections.deque(maxlen=STDERR_LINES)
        self._buffer = bytearray()
        self.pid_owner = os.getpid()
        child_env = dict(os.environ)
        child_env.pop("PYTHONPATH", None)  # the env's own packages, never this process's
        child_env.pop("PYTHONHOME", None)
        child_env.update({"PYTHONUNBUFFERED": "1", "PYTHONNOUSERSITE": "1"})
        child_env.update(env or {})
        cmd = [self.python, "-u", str(WORKER_SCRIPT), *[str(d) for d in targets_dirs]]
        # a scratch working directory, removed on close: what a library writes to its cwd (Spark's
        # warehouse, TensorFlow's caches) never lands in the source tree or the user's directory
        self.scratch = tempfile.mkdtemp(prefix=f"dpaudit-env-{name}-")
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         env=child_env, cwd=self.scratch, start_new_session=True)
        except OSError as exc:
            shutil.rmtree(self.scratch, ignore_errors=True)
            raise WorkerCrashedError(f"environment {name!r}: cannot start its Python {self.python!r}: {exc}") from None
        self._reader = threading.Thread(target=self._drain_stderr, name=f"dpaudit-env-{name}-stderr", daemon=True)
        self._reader.start()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.proc.stdout, selectors.EVENT_READ)
        self.hello = self.request({"op": "hello"}, timeout=start_timeout, what="starting")[0]
        if self.hello.get("protocol") != _worker.PROTOCOL_VERSION:
            self.close(kill=True)
            raise WorkerProtocolError(f"environment {name!r}: worker speaks protocol {self.hello.get('protocol')!r}, "
                                      f"this dpaudit {_worker.PROTOCOL_VERSION}")

    # -- process ---------------------------------------------------------------------------
    def _drain_stderr(self) -> None:
        for raw in iter(self.proc.stderr.readline, b""):
            self._stderr.append(raw.decode(errors="replace").rstrip("\n"))

    def stderr_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines the worker wrote to stderr (its library's logs included)."""
        tail = list(self._stderr)[-lines:]
        return "\n".join(tail) if tail else "(nothing on stderr)"

    @property
    def alive(self) -> bool:
        """Whether the worker process is still running."""
        return self.proc.poll() is None

    def _crashed(self, what: str) -> WorkerCrashedError:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        self._reader.join(timeout=2)
        how = (f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}")
        return WorkerCrashedError(f"environment {self.name!r}: the worker {how} while {what}; "
                                  f"its stderr ends with:\n{self.stderr_tail()}")

    def close(self, kill: bool = False, timeout: float = 5.0) -> None:
        """Stop the worker: ask it to shut down (or kill it), then reap it. Idempotent."""
        if self.proc.poll() is None and not kill:
            try:
                with self._lock:
                    self.proc.stdin.write(_worker.encode({"op": "shutdown"}))
                    self.proc.stdin.flush()
                self.proc.wait(timeout=timeout)
            except (OSError, subprocess.TimeoutExpired, ValueError):
                pass
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # its own session: Spark's JVM goes too
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:  # pragma: no cover
                pass
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except (OSError, ValueError):
                pass
        try:
            self._selector.close()
        except (OSError, ValueError, AttributeError):
            pass
        shutil.rmtree(self.scratch, ignore_errors=True)

    # -- framing ----------------------------------------------------------------------------
    def _fill(self, deadline: float, what: str) -> None:
        """Read what the worker has sent into the buffer, waiting until ``deadline`` at most."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                tail = self.stderr_tail()
                self.close(kill=True)
                raise WorkerTimeoutError(f"environment {self.name!r}: no answer from the worker within the deadline "
                                         f"while {what}; it was killed. Its stderr ends with:\n{tail}")
            if self._selector.select(timeout=min(left, 1.0)):
                chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
                if not chunk:
                    raise self._crashed(what)
                self._buffer += chunk
                return
            if self.proc.poll() is not None:
                raise self._crashed(what)

    def _read_line(self, deadline: float, what: str) -> bytes:
        while True:
            i = self._buffer.find(b"\n")
            if i >= 0:
                line = bytes(self._buffer[: i + 1])
                del self._buffer[: i + 1]
                return line
            self._fill(deadline, what)

    def _read_bytes(self, n: int, deadline: float, what: str) -> bytes:
        while len(self._buffer) < n:
            self._fill(deadline, what)
        data = bytes(self._buffer[:n])
        del self._buffer[:n]
        return data

    def request(self, header: dict, arrays=(), *, timeout: float, what: str) -> tuple[dict, list]:
        """Send one request and return ``(reply header, arrays)``.

        Parameters
        ----------
        header : dict
            The request (``{"op": ...}``), JSON-serialisable.
        arrays : sequence of ndarray
            Numeric arrays sent after the header.
        timeout : float
            Seconds to wait for the whole answer.
        what : str
            What is being done, for error messages (e.g. ``"sampling 'mod:f'"``).

        Returns
        -------
        (dict, list of ndarray)
            The reply's header (``"ok": false`` replies included: the caller decides) and arrays.

        Raises
        ------
        WorkerCrashedError, WorkerTimeoutError, WorkerProtocolError
        """
        if os.getpid() != self.pid_owner:
            raise WorkerError(f"environment {self.name!r}: this worker belongs to process {self.pid_owner}")
        message = _worker.encode(header, arrays)
        with self._lock:
            if self.proc.poll() is not None:
                raise self._crashed(what)
            deadline = time.monotonic() + float(timeout)
            try:
                self.proc.stdin.write(message)
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                raise self._crashed(what) from None
            try:
                line = self._read_line(deadline, what)
                try:
                    reply, specs = _worker.parse_header(line)
                except _worker.ProtocolError as exc:
                    tail = self.stderr_tail()
                    self.close(kill=True)
                    raise WorkerProtocolError(f"environment {self.name!r}: {exc} while {what}; stderr:\n{tail}") from None
                buffers = [self._read_bytes(nbytes, deadline, what) for _, _, nbytes in specs]
            except (WorkerError, _worker.ProtocolError):
                raise
            except BaseException:
                # interrupted between the request and the end of its answer (a caller's time limit,
                # SIGALRM or KeyboardInterrupt): the answer would be read as the next request's, so
                # the worker is stopped; the environment starts a fresh one on the next call
                self.close(kill=True)
                raise
        return reply, _worker.build_arrays(specs, buffers)


def describe_remote_error(reply: dict) -> str:
    """``"ValueError: message"`` from a failed reply's ``error`` entry."""
    err = reply.get("error") or {}
    return f"{err.get('type', '?')}: {err.get('message', '')}"


def json_kwargs(kwargs: dict) -> str:
    """``kwargs`` as canonical JSON (sorted keys); a value JSON cannot carry raises TypeError
    naming it (targets take JSON arguments only: the pipe never pickles)."""
    try:
        return json.dumps(kwargs, sort_keys=True, allow_nan=True)
    except TypeError as exc:
        bad = {k: type(v).__name__ for k, v in kwargs.items() if not _jsonable(v)}
        raise TypeError(f"target arguments must be JSON values (numbers, strings, lists, dicts); "
                        f"not JSON: {bad or exc}") from None


def _jsonable(value) -> bool:
    try:
        json.dumps(value)
    except TypeError:
        return False
    return True


def _as_dataset(dataset) -> np.ndarray:
    arr = np.asarray(dataset)
    if arr.dtype.kind not in "biuf":
        arr = arr.astype(float)
    return arr


if sys.platform == "win32":  # pragma: no cover
    raise ImportError("dpaudit.library.envs needs a POSIX system (pipes with select)")
