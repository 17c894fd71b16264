"""Adapter for IBM diffprivlib tools (``diffprivlib.tools.mean``, ``var``, ``sum``, ...).

diffprivlib is an optional dependency (``pip install 'dpaudit[diffprivlib]'``); this module does not
import it until a mechanism draws its first sample, so ``import dpaudit`` works without it.

A diffprivlib tool releases one noisy value per call, so :class:`DiffprivlibMechanism` is a per-call
mechanism: it calls ``func(array, **kwargs)`` once per output and validates every output the way
:class:`~dpaudit.mechanisms.base.CallableMechanism` does (it runs one). Three things are added:

* **Reproducibility.** diffprivlib draws from ``secrets.SystemRandom`` when ``random_state`` is
  None, so runs cannot be repeated. The adapter builds one ``numpy.random.RandomState`` per
  :meth:`~DiffprivlibMechanism.sample` call, seeded from the ``rng`` it is given, and passes that
  same object to every call; its state advances from call to call, so the outputs are independent
  and the whole sample is reproducible from ``rng``. Seeding a new RandomState for every call
  (``random_state=<int>``) would cost more than the call itself: measured on this project's 2-core
  machine (diffprivlib 0.6.6, 20,000 calls), ``diffprivlib.tools.mean`` on 3 records takes about
  90 µs per call through this adapter and about 225 µs when each call gets its own integer seed
  (MT19937 seeding dominates); diffprivlib's default ``random_state=None`` takes about 92 µs but
  is not reproducible. (Absolute costs vary with the machine: on 2026-11-26/27 the same kind of
  machine took 200-290 µs for diffprivlib's mean alone, no dpaudit code involved, with numpy 2.0
  and 2.4 alike; ``benchmarks/diffprivlib_audit.py`` measures it next to each audit.)
* **No budget bookkeeping.** Every diffprivlib tool records its spend in an accountant, by default
  a global one that keeps a list entry per call forever (millions of entries in an audit). When
  ``func`` takes an ``accountant`` parameter and none is given, the adapter passes one that checks
  but does not record.
* **Quiet.** diffprivlib turns its ``PrivacyLeakWarning`` to "always" at import time and would
  print one per call. The adapter silences warnings during the calls; the distinct messages of
  the first call of each :meth:`~DiffprivlibMechanism.sample` are kept in
  :attr:`~DiffprivlibMechanism.library_warnings` so a report can show them.
"""

from __future__ import annotations

import inspect
import warnings
from contextlib import contextmanager
from typing import Any, Callable

import numpy as np

from ._common import LibraryMechanism, import_optional

__all__ = ["DiffprivlibMechanism", "import_diffprivlib"]

def import_diffprivlib():
    """Import and return the ``diffprivlib`` module, or raise an error that says how to install it.

    Raises
    ------
    MissingDependencyError
        (a :class:`~dpaudit.errors.DPAuditError` and an :class:`ImportError`) if diffprivlib is
        not installed or does not import (diffprivlib 0.6.6 fails to import with scikit-learn
        >= 1.6; the ``diffprivlib`` extra pins scikit-learn < 1.6).
    """
    return import_optional(
        "diffprivlib", "IBM diffprivlib", "diffprivlib", note=" (diffprivlib 0.6.6 needs scikit-learn < 1.6)"
    )


_NULL_ACCOUNTANT_CLASS = None


def _null_accountant():
    """A diffprivlib BudgetAccountant with an infinite budget that does not record spends."""
    global _NULL_ACCOUNTANT_CLASS
    if _NULL_ACCOUNTANT_CLASS is None:
        from diffprivlib.accountant import BudgetAccountant  # noqa: PLC0415

        class _NonRecordingAccountant(BudgetAccountant):
            """Checks each spend against an infinite budget and forgets it."""

            def spend(self, epsilon, delta):
                self.check(epsilon, delta)
                return self

        _NULL_ACCOUNTANT_CLASS = _NonRecordingAccountant
    return _NULL_ACCOUNTANT_CLASS()


def _accepts(func: Callable[..., Any], parameter: str) -> bool:
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    return parameter in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _describe_kwargs(kwargs: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in kwargs.items())


class DiffprivlibMechanism(LibraryMechanism):
    """A diffprivlib tool ``func(array, **kwargs)`` as a per-call mechanism.

    Parameters
    ----------
    func : callable
        A diffprivlib tool such as ``diffprivlib.tools.mean``, or any function with the same
        calling convention: ``func(array, random_state=RandomState, **kwargs) -> scalar or 1-D``.
        It must accept ``random_state`` (so runs are reproducible).
    name : str, optional
        Name used in reports; default ``"<module>.<qualname>(kwargs)"``.
    **kwargs
        Passed to every call, e.g. ``epsilon=1.0, bounds=(0, 1)``. ``random_state`` is set by the
        adapter and may not be given; ``accountant`` may be (it will then record every call).

    Attributes
    ----------
    library_warnings : tuple of str
        Distinct warnings (``"Category: message"``) raised by the first call of the latest
        :meth:`sample`, e.g. diffprivlib's PrivacyLeakWarning about missing bounds.

    Raises
    ------
    TypeError
        If ``func`` is not callable or does not accept ``random_state``.
    ValueError
        If ``random_state`` is given in ``kwargs``.

    Notes
    -----
    The dataset, of shape ``(n_records, record_dim)``, is passed flattened to shape
    ``(n_records,)`` when ``record_dim == 1`` (diffprivlib's tools reduce over all axes by
    default) and unchanged otherwise, as a read-only copy: a function that modifies its input
    would change the data of later calls, so it raises instead. Outputs are validated call by call as in
    :class:`~dpaudit.mechanisms.base.CallableMechanism`: an exception, a NaN or infinite value or a
    change of shape raises :class:`~dpaudit.errors.MechanismError`.

    Examples
    --------
    >>> from diffprivlib.tools import mean                      # doctest: +SKIP
    >>> mech = DiffprivlibMechanism(mean, epsilon=1.0, bounds=(0, 1))  # doctest: +SKIP
    >>> draw(mech, np.array([[0.2], [0.9]]), 1000, np.random.default_rng(0)).shape  # doctest: +SKIP
    (1000, 1)
    """

    def __init__(self, func: Callable[..., Any], name: str | None = None, **kwargs: Any):
        if not callable(func):
            raise TypeError(f"DiffprivlibMechanism needs a callable diffprivlib tool, got {func!r}")
        if "random_state" in kwargs:
            raise ValueError(
                f"do not pass random_state (got {kwargs['random_state']!r}): DiffprivlibMechanism "
                "derives it from the rng given to sample() so that runs are reproducible"
            )
        if not _accepts(func, "random_state"):
            raise TypeError(
                f"{getattr(func, '__qualname__', func)!r} takes no random_state parameter, so its runs "
                "cannot be made reproducible; wrap it with Mechanism.from_callable instead"
            )
        self.func = func
        self.kwargs = dict(kwargs)
        self._pass_accountant = "accountant" not in kwargs and _accepts(func, "accountant")
        if name is None:
            qual = getattr(func, "__qualname__", None) or repr(func)
            module = getattr(func, "__module__", None)
            name = f"{module}.{qual}" if module else qual
            if kwargs:
                name = f"{name}({_describe_kwargs(kwargs)})"
        self.name = name
        self.library_warnings: tuple[str, ...] = ()

    @contextmanager
    def _calls(self, arr: np.ndarray, rng: np.random.Generator):
        """One call is one call of ``func`` on ``arr`` (scalar records as a 1-D array); one
        RandomState, seeded from ``rng``, serves all the calls of a :meth:`sample`. The warnings
        of the first call are kept in ``library_warnings``."""
        import_diffprivlib()
        if arr.ndim == 2 and arr.shape[1] == 1:
            arr = arr[:, 0]
        # 128 bits of seed from the Generator; MT19937 is seeded once per sample() call.
        random_state = np.random.RandomState(rng.integers(0, 2**32, size=4, dtype=np.uint32))
        kwargs = dict(self.kwargs, random_state=random_state)
        if self._pass_accountant:
            kwargs["accountant"] = _null_accountant()
        func = self.func
        first_call_warnings: list = []
        pending = [True]

        def one_call(_dataset):
            if pending[0]:  # record the warnings of the first call only
                pending[0] = False
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    value = func(arr, **kwargs)
                first_call_warnings.extend(caught)
                return value
            return func(arr, **kwargs)

        try:
            yield one_call
        finally:
            self.library_warnings = tuple(
                dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in first_call_warnings)
            )
