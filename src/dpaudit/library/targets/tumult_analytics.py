"""Tumult Analytics / Tumult Core targets, run in the ``tmlt-analytics`` environment.

* ``session_count``: Tumult Analytics' public API end to end: ``Session.from_dataframe(
  privacy_budget, source_id, dataframe, protected_change=AddOneRow())`` on a Spark DataFrame of the
  records, then ``session.evaluate(QueryBuilder(source_id).count(), budget)``; the release is the
  noisy count. One Spark session per worker (local[1], no UI, bound to 127.0.0.1); one Tumult
  Session per output (each evaluates once, at the row's budget), as a user would run it.
* ``core_geometric_count``, ``core_laplace_sum``, ``core_discrete_gaussian_count``: the Tumult
  Core noise measurements Session.evaluate adds (``tmlt.analytics._noise_info``: AddGeometricNoise
  for integer aggregates under PureDP, AddLaplaceNoise for floating-point ones, AddDiscreteGaussianNoise
  under rho-zCDP), each called as a measurement on the aggregate of the records.

Randomness: Tumult Core samples from RDRAND or ``os.urandom`` (``tmlt.core.random.rng``), which
cannot be seeded: these rows are not reproducible from ``rng`` (the audit's guarantee does not
need them to be).
"""

import os
import sys

import numpy as np

_SPARK = {}


def _spark():
    if "s" not in _SPARK:
        os.environ["PYSPARK_PYTHON"] = sys.executable
        os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
        from pyspark.sql import SparkSession

        _SPARK["s"] = (SparkSession.builder.master("local[1]").appName("dpaudit-worker")
                       .config("spark.ui.enabled", "false").config("spark.driver.bindAddress", "127.0.0.1")
                       .config("spark.driver.host", "127.0.0.1").config("spark.sql.shuffle.partitions", "1")
                       .config("spark.default.parallelism", "1").getOrCreate())
        _SPARK["s"].sparkContext.setLogLevel("ERROR")
    return _SPARK["s"]


class _SessionCount:
    def __init__(self, epsilon):
        self.epsilon = float(epsilon)
        self.describe = (f"tmlt.analytics Session.from_dataframe(PureDPBudget({epsilon}), AddOneRow()) then "
                         f"evaluate(QueryBuilder('t').count(), PureDPBudget({epsilon}))")

    def sample(self, dataset, num_samples, rng):
        import warnings

        import pandas as pd
        from pyspark.sql.types import DoubleType, StructField, StructType
        from tmlt.analytics import AddOneRow, PureDPBudget, QueryBuilder, Session

        warnings.simplefilter("ignore")
        spark = _spark()
        values = [(float(v),) for v in np.asarray(dataset, dtype=float).reshape(-1)]
        df = spark.createDataFrame(values, StructType([StructField("x", DoubleType(), False)]))
        out = np.empty((num_samples, 1))
        for i in range(num_samples):
            session = Session.from_dataframe(privacy_budget=PureDPBudget(self.epsilon), source_id="t",
                                             dataframe=df, protected_change=AddOneRow())
            result = session.evaluate(QueryBuilder("t").count(), PureDPBudget(self.epsilon))
            out[i, 0] = float(result.toPandas().iloc[0, 0])
        return out


def session_count(epsilon=1.0):
    """Tumult Analytics' count through a Session (see the module docstring)."""
    return _SessionCount(epsilon)


def core_geometric_count(epsilon=1.0):
    """``AddGeometricNoise(alpha=1/epsilon)`` on the number of records (sensitivity 1)."""
    from tmlt.core.measurements.noise_mechanisms import AddGeometricNoise

    meas = AddGeometricNoise(alpha=_exact(1 / float(epsilon)))
    claim = float(meas.privacy_function(1).to_float(round_up=True))

    def one(dataset, rng):
        return [float(meas(np.int64(np.asarray(dataset).shape[0])))]

    one.describe = f"AddGeometricNoise(alpha={meas.alpha}); privacy_function(1) = {claim}"
    return one


def _exact(value):
    """A JSON number as Tumult Core's exact number: an int, or a fraction string ("1/3")."""
    if isinstance(value, str) or float(value).is_integer():
        return value if isinstance(value, str) else int(value)
    from fractions import Fraction

    f = Fraction(value).limit_denominator(10**6)
    return f"{f.numerator}/{f.denominator}"


def core_laplace_sum(scale=1):
    """``AddLaplaceNoise(NumpyFloatDomain(), scale)`` on the sum of the records clipped to [0, 1]
    (sensitivity 1 under add/remove); privacy_function(1) = 1/scale."""
    from tmlt.core.domains.numpy_domains import NumpyFloatDomain
    from tmlt.core.measurements.noise_mechanisms import AddLaplaceNoise

    meas = AddLaplaceNoise(input_domain=NumpyFloatDomain(), scale=_exact(scale))

    def one(dataset, rng):
        total = float(np.clip(np.asarray(dataset, dtype=float), 0.0, 1.0).sum())
        return [float(meas(np.float64(total)))]

    return one


def core_discrete_gaussian_count(sigma_squared=1):
    """``AddDiscreteGaussianNoise(sigma_squared)`` on the number of records; privacy_function(1) =
    1 / (2 sigma^2) (rho-zCDP)."""
    from tmlt.core.measurements.noise_mechanisms import AddDiscreteGaussianNoise

    meas = AddDiscreteGaussianNoise(sigma_squared=_exact(sigma_squared))

    def one(dataset, rng):
        return [float(meas(np.int64(np.asarray(dataset).shape[0])))]

    return one


def privacy_functions():
    """Not a target: the measurements' own privacy functions at d_in = 1 (for the rows' claims)."""
    from tmlt.core.domains.numpy_domains import NumpyFloatDomain
    from tmlt.core.measurements.noise_mechanisms import (AddDiscreteGaussianNoise, AddGeometricNoise,
                                                         AddLaplaceNoise)

    return {"geometric(alpha=1)": str(AddGeometricNoise(alpha=1).privacy_function(1)),
            "laplace(scale=1)": str(AddLaplaceNoise(NumpyFloatDomain(), scale=1).privacy_function(1)),
            "discrete_gaussian(sigma^2=1)": str(AddDiscreteGaussianNoise(sigma_squared=1).privacy_function(1))}
