"""OpenDP's Polars API (``opendp.extras.polars``, ``make_private_lazyframe``), ready to audit: the
OpenDP Polars row of ``benchmarks/library_audit.py`` (``docs/library_audits.md``).

The query is built as OpenDP's documentation builds one, through a ``dp.Context`` over a Polars
``LazyFrame`` with one column ``x`` of floats::

    context = dp.Context.compositor(data=lf, privacy_unit=dp.unit_of(contributions=1),
                                    privacy_loss=dp.loss_of(epsilon=1.0), split_evenly_over=1,
                                    margins=[dp.polars.Margin(by=[], max_length=10)])
    query = context.query().select(pl.col("x").fill_nan(0.0).fill_null(0.0).dp.sum(bounds=(0.0, 1.0)),
                                   dp.len())

and resolved **once** into its measurement (``query.resolve()``: ``make_private_lazyframe`` with the
Laplace scale OpenDP's binary search finds for epsilon 1 over the two statistics), which is then
invoked on each dataset's LazyFrame (one output = one invocation; building takes about 7 s, an
invocation about 10 ms on the project's loaded machine). The release is ``[sum, len]``. The claim is
the measurement's own privacy map at ``d_in = 1`` (``target.claim()``): 1-DP under OpenDP's
documented relation, ``unit_of(contributions=1)``: add/remove of one record. ``max_length=10`` is a
public bound the datasets respect (0 to 10 records).

Needs ``pip install 'dpaudit[opendp-polars]'`` (opendp 0.16.0 pins polars 1.36.1).
"""

from __future__ import annotations

import warnings

import numpy as np

from ...datasets import AcceptedInputs, AddRemove, Domain
from ..adapters.opendp import OpenDPMechanism
from ._hints import with_hints

__all__ = ["EPSILON", "MAX_LENGTH", "TARGETS", "build_sum_len", "sum_len"]

EPSILON = 1.0
"""The context's privacy loss (nats), split evenly over the query's two statistics by OpenDP."""

MAX_LENGTH = 10
"""The public margin ``max_length`` (records per dataset at most)."""


def _frame(values):
    import polars as pl  # noqa: PLC0415  (optional dependency)

    return pl.LazyFrame({"x": [float(v) for v in values]}, schema={"x": pl.Float64})


def build_sum_len(epsilon: float = EPSILON):
    """The measurement of the Polars query ``select(x.fill_nan(0).fill_null(0).dp.sum(bounds=(0, 1)), dp.len())``.

    Parameters
    ----------
    epsilon : float
        The context's ``privacy_loss`` (nats).

    Returns
    -------
    opendp Measurement
        LazyFrame -> OnceFrame, built by ``dp.Context.compositor(...).query()...resolve()``
        (``opendp.measurements.make_private_lazyframe``).

    Raises
    ------
    ImportError
        If OpenDP or Polars is missing.

    Source
    ------
    ``opendp.extras.polars`` (OpenDP 0.16.0): ``Context.compositor``, ``LazyFrameQuery.resolve``.
    """
    import opendp.prelude as dp  # noqa: PLC0415
    import polars as pl  # noqa: PLC0415

    dp.enable_features("contrib")
    context = dp.Context.compositor(data=_frame([0.0]), privacy_unit=dp.unit_of(contributions=1),
                                    privacy_loss=dp.loss_of(epsilon=epsilon), split_evenly_over=1,
                                    margins=[dp.polars.Margin(by=[], max_length=MAX_LENGTH)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # the default of dp.len's 'signed' will change
        query = context.query().select(pl.col("x").fill_nan(0.0).fill_null(0.0).dp.sum(bounds=(0.0, 1.0)), dp.len())
    return query.resolve()


def _preprocess(dataset):
    return _frame(np.asarray(dataset, dtype=float).reshape(-1))


def _postprocess(release):
    frame = release.collect()
    return [float(frame["x"][0]), float(frame["len"][0])]


ACCEPTS = AcceptedInputs(note="the LazyFrame's column x is Float64: every adversarial value is accepted; NaN is "
                              "filled with 0 by the query (fill_nan), infinities and values outside [0, 1] are "
                              "clipped by dp.sum's bounds")
"""The adversarial inputs (:mod:`dpaudit.search.adversarial`)."""

_PAIRS = (([[0.0]], [[0.0], [1.0]]), ([], [[1.0]]), ([[1.0]] * 9, [[1.0]] * 10))


def _target(name: str, epsilon: float) -> OpenDPMechanism:
    def build():
        return build_sum_len(epsilon)

    build.__name__ = build.__qualname__ = name
    mech = OpenDPMechanism(build, name=f"opendp_polars:{name}", preprocess=_preprocess, postprocess=_postprocess)
    return with_hints(mech, AddRemove(Domain((0.0,), (1.0,)), min_size=0, max_size=MAX_LENGTH), _PAIRS, ACCEPTS)


sum_len = _target("sum_len", EPSILON)
"""The Polars query's ``[sum, len]`` under add/remove; claim 1-DP (its privacy map at d_in 1)."""
planted_sum_len = _target("planted_sum_len", EPSILON / 0.7)
"""The planted-leak twin (power column): the same query with ``privacy_loss`` epsilon / 0.7, so every
Laplace scale is times 0.7 (the scale is proportional to 1 / epsilon)."""

TARGETS = {"sum_len": sum_len}
"""The targets of this module by name."""
