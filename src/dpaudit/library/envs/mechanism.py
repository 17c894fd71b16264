"""A mechanism whose outputs are drawn in a library's own environment (the proxy).

:class:`EnvMechanism` is a :class:`~dpaudit.mechanisms.base.Mechanism`: ``sample(dataset,
num_samples, rng)`` sends the dataset and ``num_samples`` to the environment's worker in one
request and gets the ``(num_samples, d)`` outputs back in one answer, so the pipe costs one round
trip per batch, not per output (``benchmarks/library_envs_overhead.py`` measures it). dpaudit's
testers, finders, the adversarial screen (:meth:`EnvMechanism.sample_raw`) and ``dpaudit test``
use it as they use any mechanism.

Reproducibility: each request carries four 63-bit integers drawn from ``rng``; the worker seeds
``numpy.random.default_rng(SeedSequence(those))`` and the target draws from it (a target seeds its
library's own generator from it where the library allows; the targets say which do not), so a
sample is a function of ``rng``'s state as for an in-process mechanism.

Pickling: the proxy pickles as its environment's specification, target and arguments; a process
that unpickles it (a sampling pool, a Dask worker) starts its own worker on first use.
"""

from __future__ import annotations

import numpy as np

from ...errors import MechanismError
from ...mechanisms.base import Mechanism, describe_dataset
from .client import LibraryCallError, WorkerError, describe_remote_error, json_kwargs

__all__ = ["EnvMechanism"]


class EnvMechanism(Mechanism):
    """``target(**kwargs)`` in environment ``env``, sampled over a pipe.

    Parameters
    ----------
    env : LibraryEnv
    target : str
        ``"module:factory"`` importable in the environment.
    name : str, optional
        Name in reports.
    **kwargs
        JSON values passed to the factory once, when the worker loads the target.

    Attributes
    ----------
    vectorised : bool
        False: every output is one run of the library, so dpaudit chunks the draws (one request
        per chunk) and may spread chunks over processes, each with its own worker.
    versions : dict
        ``{distribution: version}`` reported by the worker when it loaded the target (empty before).
    neighbouring, witness_pairs, accepts
        The audit hints (:class:`~dpaudit.mechanisms.base.Mechanism`), set by the row that
        declares the target.

    Raises
    ------
    ValueError
        If ``target`` is not ``"module:factory"``.
    TypeError
        If a keyword argument is not a JSON value.
    """

    vectorised = False

    def __init__(self, env, target: str, *, name: str | None = None, **kwargs):
        if not isinstance(target, str) or target.count(":") != 1 or not all(target.split(":")):
            raise ValueError(f"target must be 'module:factory', got {target!r}")
        self.env = env
        self.target = target
        self.kwargs = dict(kwargs)
        self._kwargs_json = json_kwargs(self.kwargs)
        args = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        self.name = name or f"{env.name}:{target}({args})"
        self.versions: dict = {}
        self.describe = ""

    def __getstate__(self):
        state = dict(self.__dict__)
        state["versions"] = dict(self.versions)
        return state

    def _handle(self):
        client = self.env.client()
        key = (self.target, self._kwargs_json)
        handle = client.handles.get(key)
        if handle is None:
            reply, _ = client.request(
                {"op": "load", "target": self.target, "kwargs": self.kwargs,
                 "distributions": list(self.env.distributions)},
                timeout=self.env.setup_timeout, what=f"loading {self.target}")
            if not reply.get("ok"):
                raise LibraryCallError(
                    f"loading the target in environment {self.env.name!r} raised {describe_remote_error(reply)}",
                    remote=reply.get("error") or {}, mechanism=self.name, dataset="(none: loading)")
            handle = reply["handle"]
            client.handles[key] = handle
            self.versions = dict(reply.get("versions") or {})
            self.describe = reply.get("describe") or ""
        return client, handle

    def load(self) -> "EnvMechanism":
        """Start the worker (building the environment if needed) and load the target now, so that
        a failure shows before an audit starts. Returns ``self``.

        Raises
        ------
        EnvCreationError, WorkerError, LibraryCallError
        """
        self._handle()
        return self

    def _draw(self, dataset, num_samples: int, rng: np.random.Generator) -> np.ndarray:
        arr = np.asarray(dataset)
        if arr.dtype.kind not in "biuf":
            arr = arr.astype(float)
        n = int(num_samples)
        if n < 0:
            raise ValueError(f"num_samples must be >= 0, got {num_samples!r}")
        seed = [int(s) for s in rng.integers(0, 2**63 - 1, size=4)]
        try:
            client, handle = self._handle()
            reply, out = client.request({"op": "sample", "handle": handle, "num_samples": n, "seed": seed}, [arr],
                                        timeout=self.env.call_timeout,
                                        what=f"sampling {self.target} ({n} outputs)")
        except WorkerError as exc:
            raise MechanismError(str(exc), mechanism=self.name, dataset=describe_dataset(arr)) from exc
        if not reply.get("ok"):
            raise LibraryCallError(f"raised {describe_remote_error(reply)} (in environment {self.env.name!r})",
                                   remote=reply.get("error") or {}, mechanism=self.name,
                                   dataset=describe_dataset(arr))
        (result,) = out
        return result

    def sample(self, dataset, num_samples: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``num_samples`` outputs in the environment (one request).

        Parameters
        ----------
        dataset : ndarray, shape (n_records, record_dim)
            Numeric (bool, int, float); sent as raw bytes with its dtype and shape.
        num_samples : int
        rng : numpy.random.Generator
            Four integers drawn from it seed the worker's generator.

        Returns
        -------
        ndarray of float, shape (num_samples, output_dim)

        Raises
        ------
        MechanismError
            If an output is NaN or infinite (as :func:`~dpaudit.mechanisms.base.draw` would).
        LibraryCallError
            (a MechanismError) if the library raised; type, message and traceback tail attached.
        MechanismError
            If the worker crashed or timed out (the cause is the :class:`WorkerError`), or the
            environment could not be built (:class:`EnvCreationError` raised as is).
        """
        out = self._draw(dataset, num_samples, rng)
        bad = ~np.isfinite(out)
        if bad.any():
            row, col = np.argwhere(bad)[0]
            raise MechanismError(f"returned a non-finite value {out[row, col]!r} at sample {row}, coordinate {col}",
                                 mechanism=self.name, dataset=describe_dataset(np.asarray(dataset)))
        return out

    def sample_raw(self, dataset, num_samples: int, rng: np.random.Generator) -> np.ndarray:
        """As :meth:`sample`, but NaN and infinite outputs are returned, not refused (the
        adversarial-input screen, :mod:`dpaudit.audit.adversarial`)."""
        return self._draw(dataset, num_samples, rng)
