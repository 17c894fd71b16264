"""Adapter for OpenDP measurements (``opendp.prelude``, built with the ``"contrib"`` features).

OpenDP is an optional dependency (``pip install 'dpaudit[opendp]'``); this module does not import
it until a mechanism is used, so ``import dpaudit`` works without it.

An OpenDP ``Measurement`` is a function from a dataset to one noisy release; invoking it once gives
one output, so :class:`OpenDPMechanism` is a per-call mechanism (OpenDP measurements cannot draw
several outputs in one call). Measured on this project's 2-core machine (OpenDP 0.16.0), a
clamp-sum-Laplace chain on 1-3 float records costs about 90 µs per call through this adapter
on an idle machine (0.3-0.4 ms with other jobs running): a ten-trial audit at the default 50,000
samples per dataset (10^6 calls) samples for about 1.5 minutes (7 minutes under load).

Randomness: OpenDP draws its noise from the operating system's cryptographically secure generator
(through OpenSSL) and has no seed, on purpose. The ``rng`` given to :meth:`OpenDPMechanism.sample`
is therefore not used, and an audit of an OpenDP measurement is **not** reproducible from its
seed: the same seed gives the same neighbouring pairs but different outputs, so verdicts near the
threshold may change from run to run. ``OpenDPMechanism.reproducible`` is False to say so.

The dataset, an array of shape ``(n_records, record_dim)``, is turned into the measurement's input
by ``preprocess``: by default a list of Python floats, ints or bools (one per record, for
``record_dim == 1``) matching a ``VectorDomain`` input; anything else needs a ``preprocess``
function, which is also where the part of a user's pipeline that runs *outside* OpenDP belongs
(e.g. a statistic computed in NumPy and then passed to a scalar OpenDP measurement). A release that
is not a number or a list of numbers (a hashmap of counts, a packed bit vector) needs a
``postprocess`` function that turns it into one; post-processing cannot weaken the guarantee.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable

import numpy as np

from ...privacy.claims import ApproxDP, PureDP
from ...datasets import AddRemove, Domain, Replace
from ._common import LibraryMechanism, import_optional

__all__ = ["OpenDPMechanism", "import_opendp"]

#: Input metrics whose distance 1 is one record added or removed / one record replaced.
_ADD_REMOVE_METRICS = ("SymmetricDistance", "InsertDeleteDistance")
_REPLACE_METRICS = ("ChangeOneDistance", "HammingDistance")


def import_opendp():
    """Import and return ``opendp.prelude``, or raise an error that says how to install it.

    Returns
    -------
    module
        ``opendp.prelude`` (conventionally imported as ``dp``).

    Raises
    ------
    MissingDependencyError
        (a :class:`~dpaudit.errors.DPAuditError` and an :class:`ImportError`) if OpenDP is not
        installed or does not import.
    """
    return import_optional("opendp.prelude", "OpenDP", "opendp")


def _is_measurement(obj: Any) -> bool:
    """True for an ``opendp.mod.Measurement`` (checked without importing OpenDP)."""
    cls = type(obj)
    return cls.__name__ == "Measurement" and cls.__module__.startswith("opendp")


def vector_input(dataset: np.ndarray, carrier_type: str) -> list:
    """Turn a dataset of scalar records into the list an OpenDP ``VectorDomain`` takes.

    Parameters
    ----------
    dataset : ndarray, shape (n_records, 1)
        Scalar records.
    carrier_type : str
        The measurement's input carrier type as OpenDP names it, e.g. ``"Vec<f64>"``,
        ``"Vec<i32>"``, ``"Vec<bool>"``.

    Returns
    -------
    list of float, int or bool, length n_records

    Raises
    ------
    ValueError
        If the records are not scalars, the carrier is not a vector of numbers or bools, or a
        record is not an integer (for integer atoms) or not 0/1 (for bool atoms).
    """
    arr = np.asarray(dataset, dtype=float)
    if arr.ndim != 2 or arr.shape[1] != 1:
        raise ValueError(
            f"records of shape {arr.shape[1:]} have no default OpenDP input; the default handles scalar "
            "records (record_dim 1): pass preprocess= to build the measurement's input"
        )
    if not (carrier_type.startswith("Vec<") and carrier_type.endswith(">")):
        raise ValueError(
            f"the measurement's input domain carries {carrier_type}, not a vector of records; pass "
            "preprocess= to compute its input from the dataset"
        )
    atom = carrier_type[4:-1]
    values = arr[:, 0]
    if atom in ("f64", "f32"):
        return [float(v) for v in values]
    if atom[:1] in ("i", "u") and (atom[1:].isdigit() or atom[1:] == "size"):
        if np.any(values != np.round(values)):
            bad = values[values != np.round(values)][0]
            raise ValueError(f"record {bad!r} is not an integer, but the measurement takes {carrier_type}")
        return [int(v) for v in values]
    if atom == "bool":
        if np.any((values != 0) & (values != 1)):
            bad = values[(values != 0) & (values != 1)][0]
            raise ValueError(f"record {bad!r} is not 0 or 1, but the measurement takes {carrier_type}")
        return [bool(v) for v in values]
    raise ValueError(f"no default conversion of numeric records to {carrier_type}; pass preprocess=")


class OpenDPMechanism(LibraryMechanism):
    """An OpenDP ``Measurement`` as a per-call dpaudit mechanism.

    Parameters
    ----------
    measurement : opendp Measurement or callable
        The measurement, or a function of no arguments that builds it (called once, on first
        use, so that a module defining mechanisms need not import OpenDP). Build it with
        ``opendp.prelude.enable_features("contrib")`` as OpenDP requires for most constructors.
    name : str, optional
        Name used in reports; default ``"opendp:<builder name>"`` or ``"opendp measurement"``.
    preprocess : callable, optional
        ``preprocess(dataset) -> input``: computes the measurement's input from the dataset, an
        array of shape (n_records, record_dim) (read-only). Called once per output, so it may
        itself be random. Default: :func:`vector_input`, one Python scalar per record.
    d_in : float or tuple of float, default 1
        Input distance between neighbouring datasets under the measurement's input metric, used
        by :meth:`claim` (1 for add/remove under ``symmetric_distance``; when ``preprocess``
        computes a statistic, its sensitivity; a tuple for OpenDP's composite metrics, e.g.
        ``(l0, l2, linf)`` for ``L02InfDistance`` on a hashmap of counts).
    postprocess : callable, optional
        ``postprocess(release) -> output``: turns one release of the measurement into a number or
        a fixed-length list of numbers (e.g. a hashmap of counts into the counts of fixed keys).
        Default: the release itself.

    Attributes
    ----------
    reproducible : bool
        Always False: OpenDP's noise cannot be seeded (see the module notes).

    Raises
    ------
    TypeError
        If ``measurement`` is neither an OpenDP Measurement nor callable, or ``preprocess`` or
        ``postprocess`` is not callable.
    ValueError
        If ``d_in`` is not a positive finite number or a tuple of them.

    Notes
    -----
    Each output goes through the checks of :class:`~dpaudit.mechanisms.base.CallableMechanism`:
    an exception (e.g. ``OpenDPException``), a NaN or infinite value, a non-numeric value or a
    change of shape raises :class:`~dpaudit.errors.MechanismError` naming the call. Scalar
    outputs (float, int, bool) and vectors (lists, e.g. from ``then_count_by_categories``)
    are accepted.

    Examples
    --------
    >>> def build():                                                      # doctest: +SKIP
    ...     import opendp.prelude as dp
    ...     dp.enable_features("contrib")
    ...     space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()
    ...     return space >> dp.t.then_clamp((0.0, 1.0)) >> dp.t.then_sum() >> dp.m.then_laplace(1.0)
    >>> mech = OpenDPMechanism(build)                                     # doctest: +SKIP
    >>> mech.claim()                                                      # doctest: +SKIP
    PureDP(epsilon=1.0000000093...)
    """

    reproducible = False

    def __init__(
        self,
        measurement: Any,
        name: str | None = None,
        *,
        preprocess: Callable[[np.ndarray], Any] | None = None,
        d_in: float | tuple = 1,
        postprocess: Callable[[Any], Any] | None = None,
    ):
        if _is_measurement(measurement):
            self._measurement, self._builder = measurement, None
        elif callable(measurement):
            self._measurement, self._builder = None, measurement
        else:
            raise TypeError(
                f"OpenDPMechanism needs an OpenDP Measurement or a function that builds one, got {measurement!r}"
            )
        if preprocess is not None and not callable(preprocess):
            raise TypeError(f"preprocess must be callable, got {preprocess!r}")
        if postprocess is not None and not callable(postprocess):
            raise TypeError(f"postprocess must be callable, got {postprocess!r}")
        parts = d_in if isinstance(d_in, tuple) and d_in else (d_in,)
        if any(isinstance(d, bool) or not isinstance(d, (int, float)) or not (0 < d < float("inf")) for d in parts):
            raise ValueError(f"d_in must be a positive finite number or a tuple of them, got {d_in!r}")
        self.preprocess = preprocess
        self.postprocess = postprocess
        self.d_in = d_in
        if name is None:
            qual = getattr(self._builder, "__qualname__", None)
            name = f"opendp:{qual}" if qual else "opendp measurement"
        self.name = name

    @property
    def measurement(self):
        """The OpenDP Measurement, built on first access.

        Raises
        ------
        MissingDependencyError
            If OpenDP is not installed.
        TypeError
            If the builder does not return an OpenDP Measurement.
        """
        if self._measurement is None:
            import_opendp()
            built = self._builder()
            if not _is_measurement(built):
                raise TypeError(
                    f"the builder {getattr(self._builder, '__qualname__', self._builder)!r} returned "
                    f"{built!r}, not an OpenDP Measurement"
                )
            self._measurement = built
        return self._measurement

    def claim(self, d_in: float | tuple | None = None, *, delta: float | None = None):
        """The guarantee OpenDP's privacy map states for inputs at distance ``d_in``.

        Parameters
        ----------
        d_in : float or tuple of float, optional
            Input distance; default the ``d_in`` given at construction.
        delta : float, optional
            For measurements whose output measure is ``SmoothedMaxDivergence`` (a privacy
            profile): the delta at which to read epsilon.

        Returns
        -------
        PureDP or ApproxDP
            ``PureDP(map(d_in))`` for ``MaxDivergence``; ``ApproxDP(eps, delta)`` for
            ``Approximate(MaxDivergence)`` or a profile read at ``delta``. Epsilon in nats.

        Raises
        ------
        ValueError
            For other output measures (e.g. zero-concentrated DP: convert the measurement with
            ``dp.c.make_zCDP_to_approxDP`` and ``dp.c.make_fix_delta`` first), a profile without
            ``delta``, or a fractional ``d_in`` for a metric that counts records.
        """
        meas = self.measurement
        d = self.d_in if d_in is None else d_in
        if str(meas.input_metric.distance_type)[:1] in ("u", "i"):  # an integer distance (u32)
            if float(d) != int(d):
                raise ValueError(f"d_in={d!r}: the input metric {meas.input_metric} counts records (an integer)")
            d = int(d)
        measure = str(meas.output_measure)
        value = meas.map(d)
        if measure == "MaxDivergence":
            return PureDP(float(value))
        if measure == "Approximate(MaxDivergence)":
            eps, dlt = value
            return ApproxDP(float(eps), float(dlt))
        if measure == "SmoothedMaxDivergence":
            if delta is None:
                raise ValueError("the measurement's privacy map is a profile (SmoothedMaxDivergence): pass delta=")
            return ApproxDP(float(value.epsilon(delta)), float(delta))
        raise ValueError(
            f"no dpaudit claim for output measure {measure!r}; convert the measurement to (epsilon, delta)-DP "
            "first, e.g. dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(m), delta)"
        )

    def relation(self, domain: Domain | None = None, min_size: int | None = None, max_size: int = 10):
        """The dpaudit relation matching the measurement's input metric at distance 1.

        Parameters
        ----------
        domain : Domain, optional
            Record domain for the relation (default [0, 1]).
        min_size, max_size : int
            Dataset size range (default: the relation's, 0 for add/remove so the empty dataset
            is audited, 1 for replace; and 10). For a sized input domain
            (``vector_domain(..., size=n)``) both are set to ``n``.

        Returns
        -------
        AddRemove or Replace
            ``AddRemove`` for ``SymmetricDistance`` / ``InsertDeleteDistance`` on an unsized
            domain; ``Replace`` for ``ChangeOneDistance`` / ``HammingDistance``, and for
            ``SymmetricDistance`` on a sized domain, where no record can be added and a
            replacement is at distance **2** (read its guarantee with ``claim(2)``).

        Raises
        ------
        ValueError
            For another input metric (e.g. ``AbsoluteDistance`` on a scalar input, whose
            neighbours depend on the preprocessing).
        """
        meas = self.measurement
        metric = str(meas.input_metric.type)
        size = getattr(meas.input_domain, "size", None)
        if metric in _ADD_REMOVE_METRICS:
            if size is not None:
                return Replace(domain, int(size), int(size))
            return AddRemove(domain, min_size, max_size)
        if metric in _REPLACE_METRICS:
            if size is not None:
                min_size = max_size = int(size)
            return Replace(domain, min_size, max_size)
        raise ValueError(
            f"input metric {metric!r} does not say which datasets are neighbours; set the mechanism's "
            "neighbouring relation yourself"
        )

    quiet = False

    @contextmanager
    def _calls(self, arr: np.ndarray, rng: np.random.Generator):
        """One call invokes the measurement once on ``arr`` (through ``preprocess`` if given).
        ``rng`` is not used: OpenDP's noise cannot be seeded (see the module notes)."""
        meas = self.measurement
        if self.preprocess is None:
            carrier = str(meas.input_domain.carrier_type)

            def release(_dataset):
                return meas(vector_input(arr, carrier))

        else:
            preprocess = self.preprocess

            def release(_dataset):
                return meas(preprocess(arr))

        if self.postprocess is None:
            yield release
            return
        postprocess = self.postprocess

        def one_call(dataset):
            return postprocess(release(dataset))

        yield one_call

    def __getstate__(self) -> dict:
        """Pickle support (e.g. to ship the mechanism to Dask workers): a measurement made by a
        builder is dropped and rebuilt on first use; a Measurement given directly cannot be
        pickled (it lives in OpenDP's Rust library) and raises ``TypeError``."""
        state = dict(self.__dict__)
        if self._builder is not None:
            state["_measurement"] = None
        elif state.get("_measurement") is not None:
            raise TypeError(
                f"{self.name!r} holds an OpenDP Measurement, which cannot be pickled; give OpenDPMechanism "
                "a function that builds the measurement instead"
            )
        return state
