"""diffprivlib's statistics (``diffprivlib.tools``), configured as documented, ready to audit: the
diffprivlib tool rows of ``benchmarks/library_audit.py`` (``docs/library_audits.md``).

Run one from the command line (exit code 1 when a violation is found)::

    dpaudit test dpaudit.mechanisms.catalogue.diffprivlib_tools:median --epsilon 1 --tester all --samples 20000 --trials 3 --seed 1

Every tool gets ``epsilon=1`` and the public ``bounds=(0, 1)`` (``range=(0, 1)`` for the histogram);
records are scalars in [0, 1]. The relation is the one each tool's calibration assumes
(``diffprivlib/tools/utils.py``, ``quantiles.py``, ``histograms.py``, diffprivlib 0.6.6):

* **replace-one** (1 to 10 records, ``n`` public) for ``mean``/``nanmean`` (LaplaceTruncated,
  sensitivity ``(upper - lower) / n``), ``var``/``nanvar`` (LaplaceBoundedDomain, sensitivity
  ``((upper - lower) / n) ** 2 * (n - 1)``), ``std``/``nanstd`` (the square root of the private
  variance) and ``quantile``/``median``/``percentile`` (the exponential mechanism over the ``n + 1``
  gaps between the sorted records, utility ``-|i - q n|``, then a uniform draw in the gap); the
  sensitivity of each depends on ``n``, so under add/remove they are not calibrated (see
  ``dpaudit.mechanisms.catalogue.diffprivlib_mean``);
  ``sum``/``nansum`` (LaplaceTruncated with sensitivity ``upper - lower``, the replace-one
  sensitivity, and truncation to ``[n * lower, n * upper]``, which needs ``n`` public) and
  ``count_nonzero`` (``sum`` of the non-zero indicators with bounds (0, 1), as an integer:
  GeometricTruncated on ``[0, n]``);
* **add/remove** (0 to 10 records) for ``histogram`` (GeometricTruncated, sensitivity 1 per bin,
  truncated to ``[0, sys.maxsize]``, 4 bins over [0, 1]), whose one record moves one bin by one;
  and for ``histogram2d`` and ``histogramdd`` on 2-D records in [0, 1]^2 (``bins=2`` per axis,
  ``range=((0, 1), (0, 1))``: 4 cells, released flattened in row-major order), the same
  GeometricTruncated per cell.

``sum_add_remove`` is ``sum`` audited under add/remove, the adjacency a sum is often meant under: its
truncation to ``[n * lower, n * upper]`` reveals ``n`` (``[0]`` outputs at most 1, ``[0, 1]``
outputs exactly 2 with probability about 0.18), so it is not DP there; see ``docs/library_audits.md``.
"""

from __future__ import annotations

import numpy as np

from dataclasses import replace as _replace

from ...datasets import AcceptedInputs, AddRemove, Column, Domain, InputSpace, Replace
from ..adapters.diffprivlib import DiffprivlibMechanism
from ._hints import with_hints

__all__ = ["EPSILON", "BOUNDS", "TARGETS", "mean", "nanmean", "var", "nanvar", "std", "nanstd", "sum", "nansum",
           "count_nonzero", "histogram", "histogram2d", "histogramdd", "median", "quantile", "percentile", "sum_add_remove",
           "histogram_replace", "mean_add_remove", "count_nonzero_add_remove"]

EPSILON = 1.0
"""Epsilon every tool is called with and claims (nats)."""

BOUNDS = (0.0, 1.0)
"""Public bounds of the records."""

_REPLACE = Replace(Domain((0.0,), (1.0,)), min_size=1, max_size=10)
_ADD_REMOVE = AddRemove(Domain((0.0,), (1.0,)), min_size=0, max_size=10)
_REPLACE_PAIRS = (([[0.0]], [[1.0]]), ([[0.0], [0.0]], [[0.0], [1.0]]), ([[0.0]] * 5, [[0.0]] * 4 + [[1.0]]))
_ADD_REMOVE_PAIRS = (([[0.0]], [[0.0], [1.0]]), ([[1.0]] * 9, [[1.0]] * 10))
_ADD_REMOVE_2D = AddRemove(Domain((0.0, 0.0), (1.0, 1.0)), min_size=0, max_size=10)
_ADD_REMOVE_2D_PAIRS = (([[0.0, 0.0]], [[0.0, 0.0], [1.0, 1.0]]), ([[1.0, 0.0]] * 9, [[1.0, 0.0]] * 10),
                        ([], [[0.0, 1.0]]))
RANGE_2D = ((0.0, 1.0), (0.0, 1.0))
"""Public range of the 2-D histograms (records in [0, 1]^2)."""


def _tools():
    from diffprivlib import tools  # noqa: PLC0415  (optional dependency)

    return tools


def _bounded(name: str, **extra):
    def call(x, random_state=None, accountant=None, epsilon=EPSILON):
        return getattr(_tools(), name)(x, epsilon=epsilon, bounds=BOUNDS, random_state=random_state,
                                       accountant=accountant, **extra)
    call.__name__ = call.__qualname__ = name
    return call


def _count_nonzero(x, random_state=None, accountant=None, epsilon=EPSILON):
    return _tools().count_nonzero(x, epsilon=epsilon, random_state=random_state, accountant=accountant)


def _histogram(x, random_state=None, accountant=None, epsilon=EPSILON):
    hist, _edges = _tools().histogram(x, epsilon=epsilon, bins=4, range=BOUNDS, random_state=random_state,
                                      accountant=accountant)
    return hist


def _histogram2d(x, random_state=None, accountant=None, epsilon=EPSILON):
    x = np.asarray(x, dtype=float).reshape(-1, 2)
    hist, _xedges, _yedges = _tools().histogram2d(x[:, 0], x[:, 1], epsilon=epsilon, bins=2, range=RANGE_2D,
                                                  random_state=random_state, accountant=accountant)
    return np.asarray(hist).reshape(-1)


def _histogramdd(x, random_state=None, accountant=None, epsilon=EPSILON):
    x = np.asarray(x, dtype=float).reshape(-1, 2)
    hist, _edges = _tools().histogramdd(x, epsilon=epsilon, bins=2, range=RANGE_2D, random_state=random_state,
                                        accountant=accountant)
    return np.asarray(hist).reshape(-1)


def _target(func, name: str, relation, pairs, space=None) -> DiffprivlibMechanism:
    accepts = ACCEPTS if space is None else _replace(ACCEPTS, space=space)
    return with_hints(DiffprivlibMechanism(func, name=f"diffprivlib_tools:{name}"), relation, pairs, accepts)


ACCEPTS = AcceptedInputs(note="diffprivlib.tools take an array_like of numbers with NumPy's semantics (no type or "
                              "range check beyond clipping to bounds): every adversarial kind is tried")
"""The adversarial inputs the tools are tried on (:mod:`dpaudit.search.adversarial`)."""

_DTYPES = ("float64", "float32", "int64", "int32", "bool")
"""Dtypes of ``array`` the tools take (an array_like of numbers, NumPy's semantics)."""


def _bounded_space(name: str, **extra) -> InputSpace:
    """The input space of a tool with ``bounds`` and ``dtype`` parameters (sum, mean, var, std and
    their nan- forms; the quantiles take bounds only): the search may set the public bounds (float
    or integer, up to the type limits) and the documented ``dtype`` argument ("the type of the
    accumulator in which the elements are summed"), and pass the array in every numeric dtype."""
    takes_dtype = name in ("mean", "nanmean", "var", "nanvar", "std", "nanstd", "sum", "nansum")

    def build(bounds=BOUNDS, dtype=None):
        kw = dict(extra)
        if dtype is not None:
            kw["dtype"] = np.dtype(dtype).type

        def call(x, random_state=None, accountant=None):
            return getattr(_tools(), name)(x, epsilon=EPSILON, bounds=tuple(bounds), random_state=random_state,
                                           accountant=accountant, **kw)
        call.__name__ = call.__qualname__ = name
        return DiffprivlibMechanism(call, name=f"diffprivlib_tools:{name}(bounds={bounds!r}, dtype={dtype!r})")

    return InputSpace(build=build, bounds="bounds", default_bounds=BOUNDS,
                      choices=((("dtype", (None, "int64", "float32")),) if takes_dtype else ()), dtypes=_DTYPES,
                      note=f"diffprivlib.tools.{name}(array, epsilon, bounds{', dtype' if takes_dtype else ''}): "
                           "documented as an array_like of numbers, public bounds (min, max)"
                           + (", the accumulator's dtype" if takes_dtype else ""))


def _weighted_space(kind: str) -> InputSpace:
    """The input space of a histogram with ``weights`` ("An array of weights, of the same shape as
    `a`. Each value in `a` only contributes its associated weight towards the bin count (instead of
    1)", diffprivlib.tools.histogram's docstring): records ``(value, weight)`` (``(x, y, weight)``
    for the 2-D ones), the ordinary weight 1 (the unweighted histogram)."""
    if kind == "histogram":
        cols = (Column("value", 0.0, 1.0, name="sample"), Column("weight", 1.0, 1.0, name="weights"))

        def build():
            def call(x, random_state=None, accountant=None):
                x = np.asarray(x).reshape(-1, 2)
                hist, _ = _tools().histogram(x[:, 0], epsilon=EPSILON, bins=4, range=BOUNDS, weights=x[:, 1],
                                             random_state=random_state, accountant=accountant)
                return hist
            return DiffprivlibMechanism(call, name="diffprivlib_tools:histogram(weights)")
    else:
        cols = (Column("value", 0.0, 1.0, name="x"), Column("value", 0.0, 1.0, name="y"),
                Column("weight", 1.0, 1.0, name="weights"))

        def build():
            def call(x, random_state=None, accountant=None):
                x = np.asarray(x).reshape(-1, 3)
                if kind == "histogram2d":
                    hist = _tools().histogram2d(x[:, 0], x[:, 1], epsilon=EPSILON, bins=2, range=RANGE_2D,
                                                weights=x[:, 2], random_state=random_state, accountant=accountant)[0]
                else:
                    hist = _tools().histogramdd(x[:, :2], epsilon=EPSILON, bins=2, range=RANGE_2D, weights=x[:, 2],
                                                random_state=random_state, accountant=accountant)[0]
                return np.asarray(hist).reshape(-1)
            return DiffprivlibMechanism(call, name=f"diffprivlib_tools:{kind}(weights)")
    return InputSpace(columns=cols, build=build, dtypes=("float64",),
                      note=f"diffprivlib.tools.{kind}(..., weights=None): per-record weights of the sample")


mean = _target(_bounded("mean"), "mean", _REPLACE, _REPLACE_PAIRS, _bounded_space("mean"))
"""``diffprivlib.tools.mean(x, epsilon=1, bounds=(0, 1))`` under replace-one."""
nanmean = _target(_bounded("nanmean"), "nanmean", _REPLACE, _REPLACE_PAIRS, _bounded_space("nanmean"))
"""``diffprivlib.tools.nanmean(x, epsilon=1, bounds=(0, 1))`` under replace-one."""
var = _target(_bounded("var"), "var", _REPLACE, _REPLACE_PAIRS, _bounded_space("var"))
"""``diffprivlib.tools.var(x, epsilon=1, bounds=(0, 1))`` under replace-one."""
nanvar = _target(_bounded("nanvar"), "nanvar", _REPLACE, _REPLACE_PAIRS, _bounded_space("nanvar"))
"""``diffprivlib.tools.nanvar(x, epsilon=1, bounds=(0, 1))`` under replace-one."""
std = _target(_bounded("std"), "std", _REPLACE, _REPLACE_PAIRS, _bounded_space("std"))
"""``diffprivlib.tools.std(x, epsilon=1, bounds=(0, 1))`` under replace-one."""
nanstd = _target(_bounded("nanstd"), "nanstd", _REPLACE, _REPLACE_PAIRS, _bounded_space("nanstd"))
"""``diffprivlib.tools.nanstd(x, epsilon=1, bounds=(0, 1))`` under replace-one."""
sum = _target(_bounded("sum"), "sum", _REPLACE, _REPLACE_PAIRS, _bounded_space("sum"))  # noqa: A001  (the tool's name)
"""``diffprivlib.tools.sum(x, epsilon=1, bounds=(0, 1))`` under replace-one."""
nansum = _target(_bounded("nansum"), "nansum", _REPLACE, _REPLACE_PAIRS, _bounded_space("nansum"))
"""``diffprivlib.tools.nansum(x, epsilon=1, bounds=(0, 1))`` under replace-one."""
count_nonzero = _target(_count_nonzero, "count_nonzero", _REPLACE, _REPLACE_PAIRS)
"""``diffprivlib.tools.count_nonzero(x, epsilon=1)`` under replace-one."""
sum_add_remove = _target(_bounded("sum"), "sum_add_remove", _ADD_REMOVE, _ADD_REMOVE_PAIRS, _bounded_space("sum"))
"""``diffprivlib.tools.sum(x, epsilon=1, bounds=(0, 1))`` under add/remove: not DP (reveals ``n``)."""
histogram = _target(_histogram, "histogram", _ADD_REMOVE, _ADD_REMOVE_PAIRS, _weighted_space("histogram"))
"""``diffprivlib.tools.histogram(x, epsilon=1, bins=4, range=(0, 1))[0]`` under add/remove."""
histogram2d = _target(_histogram2d, "histogram2d", _ADD_REMOVE_2D, _ADD_REMOVE_2D_PAIRS, _weighted_space("histogram2d"))
"""``diffprivlib.tools.histogram2d(x, y, epsilon=1, bins=2, range=((0, 1), (0, 1)))[0]``, flattened,
on 2-D records under add/remove."""
histogramdd = _target(_histogramdd, "histogramdd", _ADD_REMOVE_2D, _ADD_REMOVE_2D_PAIRS, _weighted_space("histogramdd"))
"""``diffprivlib.tools.histogramdd(x, epsilon=1, bins=2, range=((0, 1), (0, 1)))[0]``, flattened,
on 2-D records under add/remove."""
median = _target(_bounded("median"), "median", _REPLACE, _REPLACE_PAIRS, _bounded_space("median"))
"""``diffprivlib.tools.median(x, epsilon=1, bounds=(0, 1))`` under replace-one."""
quantile = _target(_bounded("quantile", quant=0.25), "quantile", _REPLACE, _REPLACE_PAIRS,
                   _bounded_space("quantile", quant=0.25))
"""``diffprivlib.tools.quantile(x, 0.25, epsilon=1, bounds=(0, 1))`` under replace-one."""
percentile = _target(_bounded("percentile", percent=75), "percentile", _REPLACE, _REPLACE_PAIRS,
                     _bounded_space("percentile", percent=75))
"""``diffprivlib.tools.percentile(x, 75, epsilon=1, bounds=(0, 1))`` under replace-one."""

# The other relation of the tools whose calibration assumes one (diffprivlib states none):
histogram_replace = _target(_histogram, "histogram_replace", _REPLACE, (([[0.0]], [[1.0]]), ([[0.0]] * 3, [[0.0]] * 2 + [[1.0]])))
"""``histogram`` under replace-one: a replaced record moves two bins by one each (L1 sensitivity 2 against the
calibration's 1), so it is 2-DP there, not 1-DP."""
mean_add_remove = _target(_bounded("mean"), "mean_add_remove", AddRemove(Domain((0.0,), (1.0,)), min_size=1, max_size=10),
                          (([[0.0]], [[0.0], [1.0]]), ([[1.0]], [[1.0], [0.0]])))
"""``mean`` under add/remove (1 to 10 records): its sensitivity ``(upper - lower) / n`` uses the private ``n``."""
count_nonzero_add_remove = _target(_count_nonzero, "count_nonzero_add_remove", _ADD_REMOVE, _ADD_REMOVE_PAIRS)
"""``count_nonzero`` under add/remove: its truncation to ``[0, n]`` uses the private ``n``."""

TARGETS = {name: globals()[name] for name in __all__[3:]}
"""The tools of this module by name."""
