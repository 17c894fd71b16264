"""The worker that runs a library's targets inside the library's own virtual environment.

This file is run as a script by the environment's own Python (``ENV/bin/python _worker.py
TARGETS_DIR``) and is also imported by dpaudit for the message framing it shares with the
client (:mod:`dpaudit.library.envs.client`). It imports only the standard library and NumPy: the
environment has the library under audit, not dpaudit.

Protocol (one request, one response, over the worker's stdin and stdout; no pickle)
------------------------------------------------------------------------------------
Every message is one line of UTF-8 JSON (the header) followed by the raw bytes of the arrays the
header lists under ``"arrays"``, in order: each entry is ``{"dtype": "<f8", "shape": [n, d]}`` and
its bytes are the C-ordered buffer, ``prod(shape) * itemsize`` of them. Only bool, integer,
unsigned and floating dtypes travel (no object arrays, so nothing is ever unpickled).

Requests (``"op"``):

``hello``
    Response ``{"ok": true, "python": "3.11.7", "numpy": "2.1.0", "pid": 123}``.
``load``
    ``{"target": "module:factory", "kwargs": {...}, "distributions": [...]}``: imports ``module``
    (the targets directory first on ``sys.path``), calls ``factory(**kwargs)`` once and keeps
    what it returns under a new handle. The factory returns either an object with
    ``sample(dataset, num_samples, rng) -> array (num_samples, d)`` (a batch sampler) or a
    function ``f(dataset, rng) -> scalar or 1-D`` called once per output. Response ``{"ok": true,
    "handle": 1, "versions": {"dist": "1.2.3"}, "describe": "..."}``.
``sample``
    ``{"handle": 1, "num_samples": n, "seed": [ints]}`` and one array, the dataset. The worker
    builds ``numpy.random.default_rng(numpy.random.SeedSequence(seed))`` and draws ``n`` outputs;
    the response carries one float64 array of shape ``(n, d)``.
``call``
    ``{"target": "module:function", "kwargs": {...}}``: calls the function once and answers
    ``{"ok": true, "value": ...}`` with its JSON-serialisable result (a library's accountant, the
    claim a library states for a configuration); NumPy scalars and arrays become numbers and lists.
``shutdown``
    The worker answers ``{"ok": true}`` and exits.

A failure answers ``{"ok": false, "error": {"type": "ValueError", "message": "...",
"traceback": "..."}}`` and the worker keeps serving; only a broken pipe or a malformed message
ends it.

The worker writes its protocol to a private copy of the original stdout file descriptor and points
file descriptor 1 at stderr, so whatever the library prints (Spark, TensorFlow and JAX log
freely, some from C code) cannot corrupt the stream.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback

import numpy as np

PROTOCOL_VERSION = 1
"""Bumped when a message changes; the client refuses a worker of another version."""

_KINDS = "biuf"  # bool, signed, unsigned, floating: the only dtypes that travel

TRACEBACK_CHARS = 4000
"""Characters of a library exception's traceback sent back (its end)."""


class ProtocolError(Exception):
    """A malformed message (bad JSON, a dtype that may not travel, a truncated buffer)."""


def array_header(arr: np.ndarray) -> dict:
    """The header entry of one array: ``{"dtype": arr.dtype.str, "shape": [...]}``.

    Raises
    ------
    ProtocolError
        For a dtype that is not bool, integer, unsigned or floating (e.g. object or complex).
    """
    if arr.dtype.kind not in _KINDS:
        raise ProtocolError(f"arrays of dtype {arr.dtype} cannot travel (only bool, int, uint, float)")
    return {"dtype": arr.dtype.str, "shape": list(arr.shape)}


def encode(header: dict, arrays=()) -> bytes:
    """One message: ``header`` as a JSON line, then each array's raw C-ordered bytes.

    Parameters
    ----------
    header : dict
        JSON-serialisable; its ``"arrays"`` entry is set here.
    arrays : sequence of ndarray
        Numeric arrays (bool, int, uint, float).

    Returns
    -------
    bytes
    """
    arrays = [np.ascontiguousarray(a) for a in arrays]
    header = dict(header, arrays=[array_header(a) for a in arrays])
    parts = [json.dumps(header, allow_nan=True, separators=(",", ":")).encode() + b"\n"]
    parts.extend(a.tobytes() for a in arrays)
    return b"".join(parts)


def parse_header(line: bytes) -> tuple[dict, list]:
    """Decode a header line; return ``(header, [(dtype, shape, nbytes), ...])`` for its arrays.

    Raises
    ------
    ProtocolError
        For invalid JSON or an array entry whose dtype may not travel or whose shape is invalid.
    """
    try:
        header = json.loads(line.decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError(f"malformed header line {line[:200]!r}: {exc}") from None
    if not isinstance(header, dict):
        raise ProtocolError(f"header is not a JSON object: {line[:200]!r}")
    specs = []
    for entry in header.get("arrays", []):
        try:
            dtype = np.dtype(entry["dtype"])
            shape = tuple(int(s) for s in entry["shape"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"bad array entry {entry!r}: {exc}") from None
        if dtype.kind not in _KINDS or any(s < 0 for s in shape):
            raise ProtocolError(f"bad array entry {entry!r}")
        specs.append((dtype, shape, int(np.prod(shape, dtype=np.int64)) * dtype.itemsize))
    return header, specs


def build_arrays(specs, buffers) -> list:
    """The arrays of a message from their specs and raw byte buffers (copies, writable)."""
    return [np.frombuffer(buf, dtype=dtype).reshape(shape).copy() for (dtype, shape, _), buf in zip(specs, buffers)]


def _read_exact(stream, n: int) -> bytes:
    data = stream.read(n)
    if data is None or len(data) != n:
        raise EOFError(f"stream ended after {0 if data is None else len(data)} of {n} bytes")
    return data


def _error(exc: BaseException) -> dict:
    tb = traceback.format_exc()
    return {"ok": False, "error": {"type": type(exc).__name__, "module": type(exc).__module__,
                                    "message": str(exc)[:4000], "traceback": tb[-TRACEBACK_CHARS:]}}


def _versions(distributions) -> dict:
    from importlib import metadata

    out = {}
    for dist in distributions or ():
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def _plain(value):
    """``value`` with NumPy scalars and arrays (and tuples) turned into JSON numbers and lists."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    return value


class _Worker:
    """The worker's state: loaded targets by handle."""

    def __init__(self):
        self.handles = {}

    def hello(self, header, arrays):
        return {"ok": True, "protocol": PROTOCOL_VERSION, "python": sys.version.split()[0],
                "numpy": np.__version__, "pid": os.getpid(), "executable": sys.executable}, []

    @staticmethod
    def _resolve(target):
        if not isinstance(target, str) or target.count(":") != 1:
            raise ValueError(f"target must be 'module:factory', got {target!r}")
        module_name, attr = target.split(":")
        obj = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
        return obj

    def call(self, header, arrays):
        value = self._resolve(header["target"])(**(header.get("kwargs") or {}))
        return {"ok": True, "value": _plain(value)}, []

    def load(self, header, arrays):
        target = header["target"]
        obj = self._resolve(target)
        kwargs = header.get("kwargs") or {}
        made = obj(**kwargs)
        batch = callable(getattr(made, "sample", None))
        if not batch and not callable(made):
            raise TypeError(f"{target}(**kwargs) returned {type(made).__name__}, neither a sampler "
                            "(with .sample) nor a per-call function f(dataset, rng)")
        handle = len(self.handles) + 1
        self.handles[handle] = (made, batch)
        describe = getattr(made, "describe", "")
        return {"ok": True, "handle": handle, "batch": batch, "describe": describe if isinstance(describe, str) else "",
                "versions": _versions(header.get("distributions"))}, []

    def sample(self, header, arrays):
        made, batch = self.handles[int(header["handle"])]
        n = int(header["num_samples"])
        if n < 0:
            raise ValueError(f"num_samples must be >= 0, got {n}")
        (dataset,) = arrays
        dataset.setflags(write=False)
        rng = np.random.default_rng(np.random.SeedSequence([int(s) for s in header["seed"]]))
        if batch:
            out = np.asarray(made.sample(dataset, n, rng))
        else:
            rows = [np.asarray(made(dataset, rng)).reshape(-1) for _ in range(n)]
            out = np.stack(rows) if rows else np.empty((0, 1))
        if out.ndim == 1:
            out = out.reshape(-1, 1)
        if out.dtype.kind not in _KINDS:
            raise TypeError(f"the target returned outputs of dtype {out.dtype}; expected numbers")
        return {"ok": True}, [out.astype(np.float64, copy=False)]


def serve(stdin, stdout) -> None:
    """Answer requests from ``stdin`` on ``stdout`` (binary streams) until ``shutdown`` or EOF."""
    worker = _Worker()
    ops = {"hello": worker.hello, "load": worker.load, "sample": worker.sample, "call": worker.call}
    while True:
        line = stdin.readline()
        if not line:
            return
        header, specs = parse_header(line)
        arrays = build_arrays(specs, [_read_exact(stdin, nbytes) for _, _, nbytes in specs])
        op = header.get("op")
        if op == "shutdown":
            stdout.write(encode({"ok": True}))
            stdout.flush()
            return
        try:
            if op not in ops:
                raise ValueError(f"unknown op {op!r}")
            reply, out = ops[op](header, arrays)
            message = encode(reply, out)
        except Exception as exc:  # noqa: BLE001 - reported to the client, the worker keeps serving
            message = encode(_error(exc))
        stdout.write(message)
        stdout.flush()


def main(argv=None) -> int:
    """Entry point: ``python _worker.py [TARGETS_DIR ...]``."""
    argv = sys.argv[1:] if argv is None else argv
    for path in reversed(argv):
        if path not in sys.path:
            sys.path.insert(0, path)
    protocol_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever the library prints goes to stderr, never into the protocol
    sys.stdout = sys.stderr
    try:
        serve(sys.stdin.buffer, protocol_out)
    except (EOFError, BrokenPipeError):
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
