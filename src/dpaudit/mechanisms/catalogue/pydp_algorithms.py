"""PyDP's own algorithms (``pydp.algorithms.laplacian``: Google's C++ differential-privacy library),
configured as documented, ready to audit: the PyDP rows of ``benchmarks/library_audit.py``
(``docs/library_audits.md``).

Run one from the command line (exit code 1 when a violation is found)::

    dpaudit test dpaudit.mechanisms.catalogue.pydp_algorithms:bounded_sum --epsilon 1 --tester all --samples 20000 --trials 3 --seed 1

Every algorithm is built as a user would: ``Algorithm(epsilon=1, lower_bound=0, upper_bound=1,
dtype="float")`` (``Count(epsilon=1, dtype="float")``; ``Percentile`` with ``percentile=0.75``),
with PyDP's defaults ``delta=0``, ``l0_sensitivity=1``, ``linf_sensitivity=1``, and one output is
one ``quick_result(records)`` of a fresh object (``quick_result`` resets the budget first and
"consumes 100% of the privacy budget", PyDP's docstring). Records are scalars in [0, 1], 0 to 10
of them. The claim is ``epsilon``-DP (PyDP 1.1.5, python-dp).

The relation is inferred, not documented: PyDP's docstrings name none. The sensitivity parameters
are per *privacy unit*: ``l0_sensitivity`` (partitions a unit contributes to) and
``linf_sensitivity`` (contributions per partition), both 1 by default, so one record is one unit's
one contribution and the calibration is the add/remove one (the C++ algorithms add noise to a
count of the records, so they do not assume a public ``n``): audited under add/remove.

The noise is Google's secure noise (``LaplaceMechanism``: the value rounded to a power-of-two
granularity, a multiple of it added; ``docs/library_audits.md``, the PipelineDP rows use the same
mechanism through PipelineDP). **Runs are not reproducible from** ``--seed``: the C++ library draws
from its own secure generator and cannot be seeded (``reproducible = False``).
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from dataclasses import replace as _replace

from ...datasets import AcceptedInputs, AddRemove, Domain, InputSpace
from ..adapters._common import LibraryMechanism, MissingDependencyError

__all__ = ["EPSILON", "BOUNDS", "PERCENTILE", "TARGETS", "PyDPAlgorithm", "count", "bounded_sum", "bounded_mean",
           "bounded_variance", "bounded_standard_deviation", "max", "min", "median", "percentile"]

EPSILON = 1.0
"""Epsilon every algorithm is built with and claims (nats)."""

BOUNDS = (0.0, 1.0)
"""``lower_bound`` and ``upper_bound`` of the bounded algorithms (public)."""

PERCENTILE = 0.75
"""``percentile`` of the Percentile row (PyDP takes a fraction in [0, 1])."""


def _laplacian():
    try:
        from pydp.algorithms import laplacian  # noqa: PLC0415  (optional dependency)
    except ImportError as exc:  # pragma: no cover - exercised only without PyDP
        raise MissingDependencyError("PyDP is not installed: pip install 'dpaudit[pydp]' (python-dp)") from exc
    return laplacian


class PyDPAlgorithm(LibraryMechanism):
    """One PyDP algorithm (``pydp.algorithms.laplacian``) as a per-call dpaudit mechanism.

    Parameters
    ----------
    algorithm : str
        The class name in ``pydp.algorithms.laplacian`` (``"BoundedSum"``, ``"Count"``, ...).
    name : str
        Name used in reports.
    **kwargs
        Constructor arguments (``epsilon``, ``lower_bound``, ``upper_bound``, ``dtype``, ...).

    Attributes
    ----------
    output_dim : int
        1 (one number per call).
    reproducible : bool
        Always False: the C++ library's noise cannot be seeded.

    Raises
    ------
    ValueError
        If ``algorithm`` is not a non-empty string (an unknown class name fails at the first
        sample with the ``AttributeError`` as a :class:`~dpaudit.errors.MechanismError`).
    MissingDependencyError
        At the first sample, if PyDP is not installed.

    Notes
    -----
    One call builds ``algorithm(**kwargs)`` and returns ``float(quick_result(records))`` with the
    dataset's first column as a list of Python floats (``dtype="float"``). ``rng`` is not used.
    Source: PyDP 1.1.5 (``pydp/algorithms/_algorithm.py``, ``MetaAlgorithm.quick_result``).
    """

    reproducible = False
    output_dim = 1

    def __init__(self, algorithm: str, name: str, **kwargs):
        if not isinstance(algorithm, str) or not algorithm:
            raise ValueError(f"algorithm must be a class name of pydp.algorithms.laplacian, got {algorithm!r}")
        self.algorithm = algorithm
        self.kwargs = dict(kwargs)
        self.name = name

    @contextmanager
    def _calls(self, arr: np.ndarray, rng: np.random.Generator):
        cls = getattr(_laplacian(), self.algorithm)
        kwargs = self.kwargs
        column = np.asarray(arr).reshape(len(arr), -1)[:, 0] if len(arr) else np.zeros(0)
        if kwargs.get("dtype") == "int":  # PyDP's integer algorithms take Python ints
            values = [int(v) for v in column]
        else:
            values = [float(v) for v in column]

        def one_call(_dataset):
            return float(cls(**kwargs).quick_result(values))

        yield one_call


_DOMAIN = Domain((0.0,), (1.0,))
_RELATION = AddRemove(_DOMAIN, min_size=0, max_size=10)
_PAIRS = (([[0.0]], [[0.0], [1.0]]), ([[1.0]] * 9, [[1.0]] * 10), ([], [[1.0]]), ([[0.5]] * 4, [[0.5]] * 4 + [[0.0]]))

ACCEPTS = AcceptedInputs(note="PyDP's algorithms take a list of Python numbers typed by dtype='float' (no type or "
                              "range check in Python beyond the bounds given; the C++ algorithms clamp): every "
                              "adversarial kind is tried")
"""The adversarial inputs the algorithms are tried on (:mod:`dpaudit.search.adversarial`)."""


def _target(algorithm: str, name: str, **extra) -> PyDPAlgorithm:
    kwargs = {"epsilon": EPSILON, "dtype": "float", **extra}
    if algorithm != "Count":
        kwargs.update(lower_bound=BOUNDS[0], upper_bound=BOUNDS[1])
    mech = PyDPAlgorithm(algorithm, f"pydp_algorithms:{name}", **kwargs)
    mech.neighbouring = _RELATION
    mech.witness_pairs = _PAIRS
    mech.accepts = _replace(ACCEPTS, space=_space(algorithm, name, **extra))
    return mech


def _space(algorithm: str, name: str, **extra) -> InputSpace:
    """The input space of an algorithm: PyDP's documented ``dtype`` ("int" or "float") and, for the
    bounded algorithms, the public ``lower_bound``/``upper_bound`` (integers for ``dtype="int"``,
    C++ int), which the search may set near the type limits."""
    bounded = algorithm != "Count"

    def build(bounds=None, dtype="float"):
        kwargs = {"epsilon": EPSILON, "dtype": dtype, **extra}
        if bounded:
            lo, hi = bounds if bounds is not None else BOUNDS
            kwargs.update(lower_bound=lo, upper_bound=hi)
        return PyDPAlgorithm(algorithm, f"pydp_algorithms:{name}(bounds={bounds!r}, dtype={dtype!r})", **kwargs)

    return InputSpace(build=build, bounds="bounds" if bounded else None, default_bounds=BOUNDS if bounded else None,
                      choices=(("dtype", ("float", "int")),), dtypes=("float64", "int64"),
                      note="pydp.algorithms.laplacian: dtype 'int' or 'float', lower_bound/upper_bound of that type")


count = _target("Count", "count")
"""``Count(epsilon=1, dtype="float").quick_result(x)``: the noisy number of records."""
bounded_sum = _target("BoundedSum", "bounded_sum")
"""``BoundedSum(epsilon=1, lower_bound=0, upper_bound=1, dtype="float")``."""
bounded_mean = _target("BoundedMean", "bounded_mean")
"""``BoundedMean(epsilon=1, lower_bound=0, upper_bound=1, dtype="float")``."""
bounded_variance = _target("BoundedVariance", "bounded_variance")
"""``BoundedVariance(epsilon=1, lower_bound=0, upper_bound=1, dtype="float")``."""
bounded_standard_deviation = _target("BoundedStandardDeviation", "bounded_standard_deviation")
"""``BoundedStandardDeviation(epsilon=1, lower_bound=0, upper_bound=1, dtype="float")``."""
max = _target("Max", "max")  # noqa: A001  (the algorithm's name)
"""``Max(epsilon=1, lower_bound=0, upper_bound=1, dtype="float")``."""
min = _target("Min", "min")  # noqa: A001
"""``Min(epsilon=1, lower_bound=0, upper_bound=1, dtype="float")``."""
median = _target("Median", "median")
"""``Median(epsilon=1, lower_bound=0, upper_bound=1, dtype="float")``."""
percentile = _target("Percentile", "percentile", percentile=PERCENTILE)
"""``Percentile(epsilon=1, percentile=0.75, lower_bound=0, upper_bound=1, dtype="float")``."""

TARGETS = {name: globals()[name] for name in __all__[__all__.index("count"):]}
"""The targets of this module by name."""
