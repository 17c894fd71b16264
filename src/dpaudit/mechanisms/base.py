"""The mechanism protocol and the single place where mechanism outputs are validated.

A mechanism is a black box ``sample(dataset, num_samples, rng) -> ndarray (num_samples, output_dim)``.
Vectorised mechanisms implement :meth:`Mechanism.sample` directly and draw all outputs at once;
a plain per-call function ``f(dataset) -> output`` is wrapped with :meth:`Mechanism.from_callable`.
Whatever the mechanism returns goes through :func:`draw`, which raises :class:`MechanismError`
on anything dpaudit cannot use rather than dropping or repairing it.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from typing import Any, Callable

import numpy as np

from ..errors import MechanismError

__all__ = ["CallableMechanism", "Mechanism", "describe_dataset", "draw"]


def _is_real_numeric(dtype: np.dtype) -> bool:
    """True for bool, integer and real floating dtypes (complex, object, strings are rejected:
    casting complex to float would silently drop the imaginary part)."""
    return dtype == bool or np.issubdtype(dtype, np.integer) or np.issubdtype(dtype, np.floating)


def _shown(value) -> str:
    """A mechanism's output as a message shows it: plain numbers (``nan``, ``[1.0, inf]``), never
    NumPy's ``np.float64(nan)`` repr; at most 200 characters."""
    try:
        import numpy as np

        if isinstance(value, (np.generic, np.ndarray)):
            value = value.tolist()
        text = repr(value)
    except Exception:  # noqa: BLE001 - a value we cannot show still gets reported
        text = object.__repr__(value)
    return text if len(text) <= 200 else text[:197] + "..."


def describe_dataset(dataset: np.ndarray, max_items: int = 6) -> str:
    """Short human-readable description of a dataset of shape (n_records, record_dim)."""
    arr = np.asarray(dataset)
    flat = arr.reshape(arr.shape[0], -1) if arr.ndim >= 1 and arr.size else arr
    n = arr.shape[0] if arr.ndim >= 1 else 0
    items = [
        (f"{row[0]:g}" if row.size == 1 else "(" + ", ".join(f"{v:g}" for v in row) + ")")
        for row in flat[:max_items]
    ]
    more = f", ... ({n} records)" if n > max_items else ""
    return "[" + ", ".join(items) + more + "]"


class Mechanism(ABC):
    """A randomised algorithm under audit.

    Subclasses implement :meth:`sample`. The attribute ``name`` is used in reports and errors.

    Optional audit hints, used by ``dpaudit test`` when the user gives no option for them:

    ``neighbouring``
        The relation the mechanism claims privacy under (an ``AddRemove`` or ``Replace`` object,
        which also carries the record domain and dataset sizes).
    ``witness_pairs``
        Neighbouring pairs ``(D0, D1)`` (nested lists of records) worth testing first.
    """

    name: str = "mechanism"
    neighbouring = None
    witness_pairs: tuple = ()

    @abstractmethod
    def sample(self, dataset: np.ndarray, num_samples: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``num_samples`` independent outputs of the mechanism on ``dataset``.

        Parameters
        ----------
        dataset : ndarray, shape (n_records, record_dim)
            The input dataset.
        num_samples : int
            Number of independent runs of the mechanism.
        rng : numpy.random.Generator
            Source of randomness; a run must be reproducible from it.

        Returns
        -------
        ndarray, shape (num_samples, output_dim)
            One row per run. ``(num_samples,)`` is accepted for scalar outputs.
        """

    @staticmethod
    def from_callable(
        func: Callable[..., Any], name: str | None = None, *, pass_rng: bool | None = None
    ) -> "CallableMechanism":
        """Wrap a per-call function ``func(dataset) -> output`` (scalar, vector, or integer).

        If ``func`` has a parameter named ``rng`` it receives a :class:`numpy.random.Generator`
        (set ``pass_rng`` to force or forbid this). See :class:`CallableMechanism`.
        """
        return CallableMechanism(func, name=name, pass_rng=pass_rng)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class CallableMechanism(Mechanism):
    """A mechanism made of a plain function called once per output.

    Parameters
    ----------
    func : callable
        ``func(dataset) -> output`` or ``func(dataset, rng=Generator) -> output``; output is a
        scalar or a 1-D vector of fixed length (int, float or bool).
    name : str, optional
        Name used in reports; defaults to the function's qualified name.
    pass_rng : bool, optional
        Pass ``rng=`` to ``func``; by default, if it has a parameter called ``rng``.

    Notes
    -----
    Each call's output is checked as it comes: a NaN or infinite value, a shape different from
    the first call's, a non-numeric value or an exception raises :class:`MechanismError` naming
    the call, the dataset and the value.
    """

    def __init__(self, func: Callable[..., Any], name: str | None = None, *, pass_rng: bool | None = None):
        if not callable(func):
            raise TypeError(f"Mechanism.from_callable needs a callable, got {func!r}")
        self.func = func
        self.name = name or getattr(func, "__qualname__", None) or repr(func)
        if pass_rng is None:
            try:
                pass_rng = "rng" in inspect.signature(func).parameters
            except (TypeError, ValueError):
                pass_rng = False
        self.pass_rng = pass_rng

    def sample(self, dataset: np.ndarray, num_samples: int, rng: np.random.Generator) -> np.ndarray:
        return self._calls(dataset, num_samples, rng, finite=True)

    def sample_raw(self, dataset: np.ndarray, num_samples: int, rng: np.random.Generator) -> np.ndarray:
        """As :meth:`sample`, but NaN and infinite outputs are returned, not refused.

        For the adversarial-input screen (:mod:`dpaudit.audit.adversarial`), where a non-finite
        output on one dataset of a pair is the evidence. Every other check of :meth:`sample` holds.

        Parameters
        ----------
        dataset : ndarray, shape (n_records, record_dim)
        num_samples : int
        rng : numpy.random.Generator

        Returns
        -------
        ndarray of float, shape (num_samples, output_dim)

        Raises
        ------
        MechanismError
            If the function raises (the original exception is the ``__cause__``), or returns a
            non-numeric, ragged, multi-dimensional or varying-length value.
        """
        return self._calls(dataset, num_samples, rng, finite=False)

    def _calls(self, dataset: np.ndarray, num_samples: int, rng: np.random.Generator, *, finite: bool) -> np.ndarray:
        first_shape = None
        out = None
        for i in range(num_samples):
            try:
                value = self.func(dataset, rng=rng) if self.pass_rng else self.func(dataset)
            except MechanismError:
                raise
            except Exception as exc:  # report, never swallow
                raise MechanismError(
                    f"raised {type(exc).__name__}: {exc} (call {i + 1} of {num_samples})",
                    mechanism=self.name,
                    dataset=describe_dataset(dataset),
                ) from exc
            try:
                arr = np.asarray(value)
            except ValueError:  # ragged nested sequence
                arr = np.asarray(None, dtype=object)
            if not _is_real_numeric(arr.dtype):
                raise MechanismError(
                    f"returned a non-numeric, complex or ragged value {_shown(value)} (call {i + 1})",
                    mechanism=self.name,
                    dataset=describe_dataset(dataset),
                )
            if arr.ndim > 1:
                raise MechanismError(
                    f"returned an array of shape {arr.shape}; a per-call mechanism must return a "
                    f"scalar or a 1-D vector (call {i + 1})",
                    mechanism=self.name,
                    dataset=describe_dataset(dataset),
                )
            arr = arr.reshape(-1).astype(float)
            if first_shape is None:
                first_shape = arr.shape
                out = np.empty((num_samples, arr.shape[0]), dtype=float)
            elif arr.shape != first_shape:
                raise MechanismError(
                    f"returned an output of length {arr.shape[0]} at call {i + 1} but length "
                    f"{first_shape[0]} at call 1: outputs must have a fixed shape (value {_shown(value)})",
                    mechanism=self.name,
                    dataset=describe_dataset(dataset),
                )
            if finite and not np.all(np.isfinite(arr)):
                raise MechanismError(
                    f"returned a non-finite value {_shown(value)} at call {i + 1}",
                    mechanism=self.name,
                    dataset=describe_dataset(dataset),
                )
            out[i] = arr
        if out is None:
            return np.empty((0, 1))
        return out


def draw(
    mechanism: Mechanism,
    dataset: np.ndarray,
    num_samples: int,
    rng: np.random.Generator,
    *,
    output_dim: int | None = None,
) -> np.ndarray:
    """Run ``mechanism.sample`` and validate what comes back.

    Parameters
    ----------
    mechanism : Mechanism
        Anything with a ``sample(dataset, num_samples, rng)`` method.
    dataset : ndarray, shape (n_records, record_dim)
    num_samples : int
        Number of outputs requested, ``> 0``.
    rng : numpy.random.Generator
    output_dim : int, optional
        Expected output dimension (e.g. from the other dataset of a pair).

    Returns
    -------
    ndarray of float, shape (num_samples, output_dim)

    Raises
    ------
    MechanismError
        If the mechanism raises, returns the wrong number of rows, a ragged or non-numeric array,
        a NaN or infinite value, or an output dimension different from ``output_dim``.
    """
    name = getattr(mechanism, "name", type(mechanism).__name__)
    if num_samples <= 0:
        raise ValueError(f"num_samples must be positive, got {num_samples!r}")
    desc = describe_dataset(dataset)
    try:
        raw = mechanism.sample(dataset, num_samples, rng)
    except MechanismError:
        raise
    except Exception as exc:
        raise MechanismError(
            f"raised {type(exc).__name__}: {exc}", mechanism=name, dataset=desc
        ) from exc
    try:
        arr = np.asarray(raw)
    except ValueError as exc:  # ragged nested lists
        raise MechanismError(f"returned a ragged output ({exc})", mechanism=name, dataset=desc) from exc
    if not _is_real_numeric(arr.dtype):
        first = repr(arr.flat[0]) if arr.size else "none"
        raise MechanismError(
            f"returned a non-numeric, complex or ragged output of dtype {arr.dtype} (first value {first})",
            mechanism=name,
            dataset=desc,
        )
    if arr.ndim == 1:
        arr = arr.reshape(-1, 1)
    if arr.ndim != 2:
        raise MechanismError(
            f"returned an array of shape {arr.shape}; expected (num_samples, output_dim) = "
            f"({num_samples}, d)",
            mechanism=name,
            dataset=desc,
        )
    if arr.shape[0] != num_samples:
        raise MechanismError(
            f"returned {arr.shape[0]} samples but {num_samples} were requested",
            mechanism=name,
            dataset=desc,
        )
    if output_dim is not None and arr.shape[1] != output_dim:
        raise MechanismError(
            f"returned outputs of dimension {arr.shape[1]} but dimension {output_dim} on the "
            f"neighbouring dataset: output shape must not depend on the dataset",
            mechanism=name,
            dataset=desc,
        )
    arr = arr.astype(float, copy=False)
    bad = ~np.isfinite(arr)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise MechanismError(
            f"returned a non-finite value {_shown(arr[row, col])} at sample {row}, coordinate {col} "
            f"({int(bad.any(axis=1).sum())} of {num_samples} samples affected)",
            mechanism=name,
            dataset=desc,
        )
    return arr
