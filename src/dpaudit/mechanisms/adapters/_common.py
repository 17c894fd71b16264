"""What the library adapters share: the missing-dependency error, importing an optional library,
and sampling by calling the library once per output.

Every adapter's output is one call of a library (a diffprivlib tool, an OpenDP measurement, a
PipelineDP pipeline, a short Opacus training run). :class:`LibraryMechanism` runs those calls on a
read-only copy of the dataset through :class:`~dpaudit.mechanisms.base.CallableMechanism`, which
checks every output (finite, numeric, one shape); an adapter only says how to make one call
(:meth:`LibraryMechanism._calls`).
"""

from __future__ import annotations

import importlib
import warnings
from contextlib import contextmanager
from typing import Callable, Iterator

import numpy as np

from ...errors import DPAuditError
from ..base import CallableMechanism, Mechanism

__all__ = ["LibraryMechanism", "MissingDependencyError", "import_optional", "read_only"]


class MissingDependencyError(DPAuditError, ImportError):
    """An optional library an adapter needs is not installed; the message names the extra.

    Subclasses both :class:`~dpaudit.errors.DPAuditError` and :class:`ImportError`, so
    ``except ImportError`` keeps working.
    """


def import_optional(module: str, library: str, extra: str, *, also: tuple[str, ...] = (), note: str = ""):
    """Import and return ``module`` (and the submodules ``also``), or raise an error that says how
    to install it.

    Parameters
    ----------
    module : str
        Module to import and return (e.g. ``"opendp.prelude"``).
    library : str
        The library's name, for the message (e.g. ``"OpenDP"``).
    extra : str
        dpaudit's extra that installs it: the message says ``pip install 'dpaudit[extra]'``.
    also : tuple of str
        Further modules that must import (e.g. ``("opacus.optimizers",)``).
    note : str
        Appended to the message (e.g. a known version conflict).

    Raises
    ------
    MissingDependencyError
        (a :class:`~dpaudit.errors.DPAuditError` and an :class:`ImportError`) if a module does
        not import.
    """
    try:
        found = importlib.import_module(module)
        for name in also:
            importlib.import_module(name)
    except ImportError as exc:
        raise MissingDependencyError(
            f"this needs {library}, which could not be imported ({exc}); install it with "
            f"pip install 'dpaudit[{extra}]'{note}"
        ) from exc
    return found


def read_only(dataset) -> np.ndarray:
    """A private copy of ``dataset`` that cannot be written to, shared by all the calls of
    one :meth:`~LibraryMechanism.sample` (a call that writes to its input fails loudly). A numeric
    dataset keeps its dtype (bool, integer or float of any width: the input-space search passes the
    dtypes an API documents on purpose, :mod:`dpaudit.search.input_space`); anything else becomes float."""
    src = np.asarray(dataset)
    arr = np.array(src, dtype=src.dtype if src.dtype.kind in "biuf" else float)
    arr.setflags(write=False)
    return arr


class LibraryMechanism(Mechanism):
    """Base of the adapters: one output is one call of a DP library.

    Subclasses set ``name`` and implement :meth:`_calls`. ``quiet`` (default True) silences the
    library's warnings while sampling (they would repeat once per call).
    """

    quiet = True

    @contextmanager
    def _calls(self, arr: np.ndarray, rng: np.random.Generator) -> Iterator[Callable]:
        """Set up the calls on the read-only dataset ``arr``; yield ``one_call(dataset) -> output``
        and clean up afterwards."""
        raise NotImplementedError

    def sample(self, dataset: np.ndarray, num_samples: int, rng: np.random.Generator) -> np.ndarray:
        """Call the library ``num_samples`` times on ``dataset`` (see the adapter's notes on how
        ``rng`` is used).

        Returns
        -------
        ndarray of float, shape (num_samples, output_dim)

        Raises
        ------
        MissingDependencyError
            If the library is not installed.
        MechanismError
            If a call raises or returns a non-finite, non-numeric or wrongly shaped value.
        """
        with self._calls(read_only(dataset), rng) as one_call:
            runner = CallableMechanism(one_call, name=self.name, pass_rng=False)
            if not self.quiet:
                return runner.sample(dataset, num_samples, rng)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return runner.sample(dataset, num_samples, rng)

    def sample_raw(self, dataset: np.ndarray, num_samples: int, rng: np.random.Generator) -> np.ndarray:
        """As :meth:`sample`, but NaN and infinite outputs are returned, not refused: what the
        library releases on adversarial inputs (:func:`dpaudit.audit.adversarial.screen`).

        Returns
        -------
        ndarray of float, shape (num_samples, output_dim)

        Raises
        ------
        MissingDependencyError
            If the library is not installed.
        MechanismError
            If a call raises (the library's exception is the ``__cause__``; the screen records it
            as a rejected input) or returns a non-numeric or wrongly shaped value.
        """
        with self._calls(read_only(dataset), rng) as one_call, warnings.catch_warnings():
            if self.quiet:
                warnings.simplefilter("ignore")
            return CallableMechanism(one_call, name=self.name, pass_rng=False).sample_raw(dataset, num_samples, rng)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
