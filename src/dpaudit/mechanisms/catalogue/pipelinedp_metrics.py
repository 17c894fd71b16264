"""Every PipelineDP metric, configured as its documentation says, ready to audit: the PipelineDP rows
of ``benchmarks/library_audit.py`` (``docs/library_audits.md``).

Run one from the command line (exit code 1 when a violation is found)::

    dpaudit test dpaudit.mechanisms.catalogue.pipelinedp_metrics:count_laplace --epsilon 1 --tester all --samples 20000 --trials 3 --seed 1
    dpaudit test dpaudit.mechanisms.catalogue.pipelinedp_metrics:count_gaussian --epsilon 1 --delta 1e-5 --tester all --samples 20000 --trials 3 --seed 1

Each object carries its neighbouring relation and witness pairs as audit hints. All need PipelineDP
(``pip install 'dpaudit[pipelinedp]'``); importing this module does not import it, the first sample
does. **Runs are not reproducible from** ``--seed``: PipelineDP draws its noise in PyDP (Google's
C++ DP library, a secure generator without a seed) and samples contributions with NumPy's global
generator; the adapter touches neither (:class:`~dpaudit.mechanisms.adapters.PipelineDPMechanism`,
``reproducible = False``).

The data: one record is one privacy unit
----------------------------------------
PipelineDP protects a *privacy unit* (a user) with all its rows. Here a dpaudit record **is** one
privacy unit: the row ``(p_1, v_1, ..., p_4, v_4)`` holds the unit's :data:`CONTRIBUTIONS` = 4
contributions, each a partition ``p_j`` (rounded to the nearest of the partitions 0, 1, 2) and a
value ``v_j`` in [-1, 2] (beyond the bounds [0, 1] given to PipelineDP, so that its clipping is
exercised). Record ``i`` of a dataset becomes the PipelineDP rows ``(privacy_id=i, p_j, v_j)``
(:func:`unit_contributions`). Adding or removing a record therefore adds or removes a unit with all
its contributions: dpaudit's record-level :class:`~dpaudit.datasets.AddRemove` on these records is
PipelineDP's privacy-unit adjacency. Datasets hold 1 to 10 units (PipelineDP refuses an empty
collection: "col must be non-empty"). VECTOR_SUM records are ``(p_1, x_1, y_1, ..., p_3, x_3, y_3)``:
3 contributions of a 2-vector each, coordinates in [-1, 2].

A unit of the domain may contribute to all three partitions and up to four times to one, more than
the contribution bounds allow: PipelineDP's contribution bounding (sampling partitions and
contributions per unit) is part of what is audited. The adversarial screen also tries the declared
privacy-unit pairs :data:`UNIT_PAIRS` (a unit over the bounds, a unit alone in an otherwise empty
partition, the empty dataset vs one unit) with a distributional check.

The release and the claim
-------------------------
One output is one run of a whole pipeline: a ``NaiveBudgetAccountant(total_epsilon=EPSILON,
total_delta=delta)``, a ``DPEngine`` on the ``LocalBackend``, one ``aggregate`` (or
``select_partitions``) call, ``compute_budgets()``, the result materialised. The claim is the
accountant's total: the release is ``(EPSILON, delta)``-DP at the privacy-unit level. Each target
computes **one** metric, so the budget is split only as PipelineDP splits it inside that metric
(``NaiveBudgetAccountant`` gives mechanisms of equal weight equal shares of epsilon, and delta to
the mechanisms that use it): COUNT, PRIVACY_ID_COUNT, SUM, VARIANCE, PERCENTILE and VECTOR_SUM
request one mechanism (the whole budget; VARIANCE and PERCENTILE split it internally), MEAN
requests two (count and sum, epsilon / 2 each), and private partition selection adds one more
(selection, epsilon / 2 with one metric; with Laplace noise all of delta goes to the selection).

* **Public partitions** 0, 1, 2 (:data:`PARTITIONS`, always released): the output is the metric of
  each partition, a vector of 3 (VECTOR_SUM: 6). Contribution bounds :data:`BOUNDS`:
  ``max_partitions_contributed=2``, ``max_contributions_per_partition=2``, values clipped to
  [0, 1]. Laplace noise with ``delta = 0`` (claim 1-DP) and Gaussian noise with
  ``delta = DELTA = 1e-5`` (claim (1, 1e-5)-DP).
* **Private partition selection** (no public partitions; ``select_partitions`` and VECTOR_SUM): a
  partition may be missing from the release, so the output holds, per partition, a 0/1 flag
  "released" and then the metric (0 when not released). Bounds :data:`SELECTION_BOUNDS`
  (``max_partitions_contributed=1``) and ``delta = SELECTION_DELTA = 1e-3``, so that a partition
  of a few units is released with a probability between 0 and 1 on datasets of at most 10
  units (with delta = 1e-5 the truncated geometric selection keeps a partition of 10 units with
  probability about 0.08).

VECTOR_SUM is audited with private partitions only: with public partitions PipelineDP 0.3.1 builds
an empty accumulator for every public partition (``DPEngine._add_empty_public_partitions`` calls
``create_accumulator([])``) and ``VectorSumCombiner.create_accumulator`` then clips ``None``
(``TypeError: '>=' not supported between instances of 'NoneType' and 'float'``): every VECTOR_SUM
with public partitions raises (:data:`vector_sum_public`, kept to show it).

Noise and floating point: PyDP 1.1.5's mechanisms (Google's C++ library) round the value to a
power-of-2 granularity ``g`` and add noise that is a multiple of ``g``, Google's secure-noise design
against Mironov's (2012) attack. For ``LaplaceMechanism`` ``g`` is coarse (2^-38 at scale 4,
measured) and the outputs are exact multiples of it. For ``GaussianMechanism`` ``g`` is the next
power of two above ``2 sigma / 2^57`` (binomial sampling; 2^-54 at sigma 3.7), finer than the
spacing of doubles once ``|noise| >= 1/2``: the noise and the sum are rounded to their binade's
spacing, so outputs near 0 are on the 2^-54 grid when the true value is 0 and on a coarser grid
otherwise (``docs/library_audits.md`` sizes the leak).

``count_bounds_enforced`` is a misuse kept as a row: COUNT with
``contribution_bounds_already_enforced=True`` (PipelineDP then trusts the data to respect
``max_partitions_contributed=1``, ``max_contributions_per_partition=1`` and does no bounding) on
units that do not respect them: a unit with 4 rows in a partition moves its count by 4, not 1.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

import numpy as np

from ...datasets import AcceptedInputs, AddRemove, Column, Domain, InputSpace
from ..adapters.pipelinedp import PipelineDPMechanism, UnitRow, import_pipeline_dp
from ._hints import with_hints

__all__ = [
    "EPSILON", "DELTA", "SELECTION_DELTA", "PARTITIONS", "CONTRIBUTIONS", "BOUNDS", "SELECTION_BOUNDS",
    "VECTOR_SIZE", "VECTOR_MAX_NORM", "DOMAIN", "VECTOR_DOMAIN", "TARGETS",
    "unit_contributions", "unit_vector_contributions", "aggregate", "select_partitions",
    "count_laplace", "count_gaussian", "privacy_id_count_laplace", "privacy_id_count_gaussian",
    "sum_laplace", "sum_gaussian", "mean_laplace", "mean_gaussian", "variance_laplace", "variance_gaussian",
    "percentile_laplace", "percentile_gaussian", "percentiles_laplace",
    "vector_sum_laplace", "vector_sum_gaussian", "vector_sum_public",
    "count_private_partitions", "select_partitions_geometric", "select_partitions_laplace",
    "select_partitions_gaussian", "count_bounds_enforced", "count_ids_laplace", "privacy_id_count_ids_laplace",
]

EPSILON = 1.0
"""Total epsilon of every pipeline's ``NaiveBudgetAccountant`` and the claimed epsilon (nats)."""

DELTA = 1e-5
"""Total delta of the Gaussian pipelines with public partitions."""

SELECTION_DELTA = 1e-3
"""Total delta of the pipelines with private partition selection."""

PARTITIONS = (0, 1, 2)
"""The candidate partitions, in output order (public ones where partitions are public)."""

CONTRIBUTIONS = 4
"""Contributions ``(partition, value)`` per privacy unit (per record) in the scalar metrics."""

VECTOR_CONTRIBUTIONS = 3
"""Contributions ``(partition, x, y)`` per privacy unit in the VECTOR_SUM targets."""

VECTOR_SIZE = 2
"""Length of the VECTOR_SUM values."""

VECTOR_MAX_NORM = 1.0
"""``vector_max_norm``: L1 norm with Laplace noise, L2 norm with Gaussian noise."""

BOUNDS = {"max_partitions_contributed": 2, "max_contributions_per_partition": 2, "min_value": 0.0, "max_value": 1.0}
"""Contribution bounds of the public-partition aggregations."""

SELECTION_BOUNDS = {"max_partitions_contributed": 1, "max_contributions_per_partition": 2}
"""Contribution bounds of the private-partition-selection targets."""

DOMAIN = Domain((0.0, -1.0) * CONTRIBUTIONS, (2.0, 2.0) * CONTRIBUTIONS)
"""One record = one unit: ``(p_1, v_1, ..., p_4, v_4)``, partitions in [0, 2] (rounded), values in [-1, 2]."""

VECTOR_DOMAIN = Domain((0.0, -1.0, -1.0) * VECTOR_CONTRIBUTIONS, (2.0, 2.0, 2.0) * VECTOR_CONTRIBUTIONS)
"""One record = one unit: ``(p_1, x_1, y_1, ..., p_3, x_3, y_3)``, coordinates in [-1, 2]."""


def unit_contributions(dataset, width: int = 2) -> list:
    """PipelineDP rows of a dataset whose records are privacy units of contributions
    ``(p_1, v_1, ..., p_k, v_k)`` (``width = 2``: scalar values) or
    ``(p_1, x_1, y_1, ..., p_k, x_k, y_k)`` (``width = 1 + VECTOR_SIZE = 3``: vector values).

    Parameters
    ----------
    dataset : array_like, shape (n_units, width k)
    width : int
        Numbers per contribution: its partition, then its value's coordinates.

    Returns
    -------
    list of UnitRow, length n_units * k
        ``UnitRow(privacy_id=i, partition=PARTITIONS[round(p_j)], value=v_j)`` for record ``i``
        and contribution ``j`` (partitions rounded to the nearest integer, clipped to 0..2; the
        value a float, or the tuple ``(x_j, y_j)`` when ``width > 2``).

    Raises
    ------
    ValueError
        If a record's length is not a multiple of ``width``.
    """
    arr = np.asarray(dataset, dtype=float)
    arr = arr.reshape(len(arr), -1) if arr.size else arr.reshape(0, width)
    if arr.shape[1] % width:
        raise ValueError(f"a record must hold contributions of {width} numbers each, got {arr.shape[1]} numbers")
    last = len(PARTITIONS) - 1
    rows = []
    for unit, record in enumerate(arr):
        for j in range(0, arr.shape[1], width):
            partition = PARTITIONS[int(np.clip(np.rint(record[j]), 0, last))]
            value = float(record[j + 1]) if width == 2 else tuple(float(v) for v in record[j + 1:j + width])
            rows.append(UnitRow(unit, partition, value))
    return rows


def unit_contributions_raw(dataset) -> list:
    """PipelineDP rows of scalar-valued units as the input-space search builds them: like
    :func:`unit_contributions`, but the partition key is passed as it is (an integer when it is one,
    else the float, NaN included: PipelineDP keeps rows whose key is public) and the value keeps the
    dataset's number type (Python ``int`` for an integer dataset, so integer bounds and sums are
    PipelineDP's integer arithmetic).

    Parameters
    ----------
    dataset : array_like, shape (n_units, 2 k)

    Returns
    -------
    list of UnitRow
    """
    arr = np.asarray(dataset)
    arr = arr.reshape(len(arr), -1) if arr.size else arr.reshape(0, 2)
    integer = arr.dtype.kind in "iu"
    rows = []
    for unit, record in enumerate(arr):
        for j in range(0, arr.shape[1], 2):
            key = record[j].item()
            if isinstance(key, float) and key.is_integer():
                key = int(key)
            value = int(record[j + 1]) if integer else float(record[j + 1])
            rows.append(UnitRow(unit, key, value))
    return rows


_UNIT_COLUMNS = (Column("partition", 0.0, 2.0, integer=True, name="partition"),
                 Column("value", -1.0, 2.0, name="value")) * CONTRIBUTIONS
"""The layout of a scalar unit for the input-space search: four ``(partition key, value)`` contributions."""


def _space(name: str, pipeline_for, fields, bounded: bool, max_bound: float = 1e300) -> InputSpace:
    """The input space of a scalar metric: the partition key of every contribution is per-record data
    (PipelineDP's ``partition_extractor``), the values may be integers, and the public
    ``(min_value, max_value)`` bounds may be set (for the metrics that take them) as integers or floats."""

    def build(bounds=None):
        pipeline = pipeline_for(bounds)
        pipeline.__name__ = pipeline.__qualname__ = name
        return PipelineDPMechanism(pipeline, partitions=PARTITIONS, metrics=tuple(fields),
                                   name=f"pipelinedp_metrics:{name}(bounds={bounds!r})", to_rows=unit_contributions_raw)

    return InputSpace(columns=_UNIT_COLUMNS, build=build, bounds="bounds" if bounded else None,
                      default_bounds=(BOUNDS["min_value"], BOUNDS["max_value"]) if bounded else None,
                      dtypes=("float64", "int64"), max_size=8, max_bound=max_bound,
                      note="PipelineDP's extractors take any Python value: partition keys as given, values as numbers "
                           f"(min_value/max_value: int or float); bounds up to {max_bound:g}: PyDP 1.1.5's "
                           "GaussianMechanism(epsilon=1, delta=1e-5, sensitivity=8.9e307) does not return (measured: "
                           "no result in 10 s, against 50 us at 1e300; an infinite sensitivity loops in "
                           "CalculateGaussianStddev, C++ code the per-pair time limit cannot interrupt), and VARIANCE's "
                           "sum of squares has sensitivity bound^2, so its bounds stop at 1e150")


def unit_vector_contributions(dataset) -> list:
    """``unit_contributions(dataset, width=1 + VECTOR_SIZE)``: the rows of VECTOR_SUM units, as
    :func:`unit_contributions` documents (``to_rows`` of the vector targets)."""
    return unit_contributions(dataset, 1 + VECTOR_SIZE)


def _extractors(pdp):
    return pdp.DataExtractors(privacy_id_extractor=lambda row: row.privacy_id,
                              partition_extractor=lambda row: row.partition,
                              value_extractor=lambda row: row.value)


def aggregate(rows: list, metrics: Sequence[Any], *, noise: str = "laplace", epsilon: float = EPSILON,
              delta: float = 0.0, public: bool = True, **params) -> list:
    """One PipelineDP pipeline: ``DPEngine.aggregate`` on the local backend, budgeted by a fresh
    ``NaiveBudgetAccountant(total_epsilon=epsilon, total_delta=delta)``.

    Parameters
    ----------
    rows : list of UnitRow
    metrics : sequence
        ``pipeline_dp.Metrics`` members, or their names (``"COUNT"``, ...; ``("PERCENTILE", 50)``).
    noise : {"laplace", "gaussian"}
    epsilon, delta : float
        The accountant's total budget.
    public : bool, default True
        Pass :data:`PARTITIONS` as public partitions; if False, partitions are selected privately.
    **params
        Further ``pipeline_dp.AggregateParams`` fields (contribution bounds, ...).

    Returns
    -------
    list of (partition, dict)
        The released partitions and their metrics (``MetricsTuple`` fields as a dict; a VECTOR_SUM
        becomes ``vector_sum_0``, ``vector_sum_1``).

    Raises
    ------
    ValueError, TypeError
        From PipelineDP (bad parameters, an empty collection; VECTOR_SUM with public partitions).

    Source
    ------
    ``pipeline_dp.DPEngine.aggregate``, ``pipeline_dp.NaiveBudgetAccountant`` (PipelineDP 0.3.1).
    """
    pdp = import_pipeline_dp()
    resolved = []
    for m in metrics:
        if isinstance(m, str):
            m = getattr(pdp.Metrics, m.upper())
        elif isinstance(m, tuple):
            m = getattr(pdp.Metrics, m[0].upper())(m[1])
        resolved.append(m)
    accountant = pdp.NaiveBudgetAccountant(total_epsilon=epsilon, total_delta=delta)
    engine = pdp.DPEngine(accountant, pdp.LocalBackend())
    agg = pdp.AggregateParams(metrics=resolved, noise_kind=getattr(pdp.NoiseKind, noise.upper()), **params)
    result = engine.aggregate(rows, agg, _extractors(pdp), public_partitions=list(PARTITIONS) if public else None)
    accountant.compute_budgets()
    released = []
    for key, values in result:
        fields = values._asdict() if hasattr(values, "_asdict") else dict(values)
        if "vector_sum" in fields:
            vec = np.asarray(fields.pop("vector_sum"), dtype=float).reshape(-1)
            fields.update({f"vector_sum_{i}": float(v) for i, v in enumerate(vec)})
        released.append((key, fields))
    return released


def select_partitions(rows: list, *, strategy: str = "truncated_geometric", epsilon: float = EPSILON,
                      delta: float = SELECTION_DELTA, max_partitions_contributed: int = 1) -> list:
    """One ``DPEngine.select_partitions`` pipeline on the local backend.

    Parameters
    ----------
    rows : list of UnitRow
    strategy : str
        A ``pipeline_dp.PartitionSelectionStrategy`` name: ``"truncated_geometric"``,
        ``"laplace_thresholding"`` or ``"gaussian_thresholding"``.
    epsilon, delta : float
        Total budget of the ``NaiveBudgetAccountant`` (all of it goes to the selection).
    max_partitions_contributed : int

    Returns
    -------
    list
        The released partition keys.

    Raises
    ------
    ValueError
        From PipelineDP (``delta = 0``, an empty collection).

    Source
    ------
    ``pipeline_dp.DPEngine.select_partitions``, ``pipeline_dp.SelectPartitionsParams`` (0.3.1).
    """
    pdp = import_pipeline_dp()
    accountant = pdp.NaiveBudgetAccountant(total_epsilon=epsilon, total_delta=delta)
    engine = pdp.DPEngine(accountant, pdp.LocalBackend())
    params = pdp.SelectPartitionsParams(
        max_partitions_contributed=max_partitions_contributed,
        partition_selection_strategy=getattr(pdp.PartitionSelectionStrategy, strategy.upper()))
    result = engine.select_partitions(rows, params, _extractors(pdp))
    accountant.compute_budgets()
    return list(result)


# ---------------------------------------------------------------- witness pairs (records = units)

_LOW = [0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0]   # 2 rows of value 0 in partitions 0 and 1
_HIGH = [0.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0]  # 2 rows of value 1 in partitions 0 and 1: the bounds
_OVER = [0.0, 2.0, 1.0, 2.0, 2.0, 2.0, 0.0, -1.0]  # 3 partitions, values outside [0, 1]: bounded, clipped
_PAIRS = (([_LOW], [_LOW, _HIGH]), ([_LOW] * 9, [_LOW] * 9 + [_HIGH]), ([_LOW], [_LOW, _OVER]))
"""One unit at the lower bound, plus a unit at the upper bound (2 rows in each of 2 partitions:
every metric's sensitivity is reached); at 9 + 1 units; plus a unit beyond the bounds."""

_IN0 = [0.0, 1.0] * CONTRIBUTIONS  # all 4 rows in partition 0
_SELECTION_PAIRS = (([_IN0] * 4, [_IN0] * 5), ([_IN0] * 6, [_IN0] * 7), ([_IN0] * 8, [_IN0] * 9))
"""k vs k + 1 units in partition 0, where ``select_partitions`` (the whole epsilon = 1 for the
selection) keeps it with probability about 0.03 to 0.9: the steps of the truncated geometric."""
_HALF_PAIRS = (([_IN0] * 9, [_IN0] * 10), ([_IN0] * 12, [_IN0] * 13), ([_IN0] * 14, [_IN0] * 15))
"""The same where the selection gets epsilon / 2 (COUNT with private partitions): 9 to 15 units."""

_V0 = [0.0, 1.0, 0.0] * VECTOR_CONTRIBUTIONS
_V1 = [0.0, 0.0, 1.0] * VECTOR_CONTRIBUTIONS
_VECTOR_PAIRS = (([_V0] * 12, [_V0] * 12 + [_V1]), ([_V0] * 9, [_V0] * 10), ([_V0] * 14, [_V0] * 15))

_RELATION = AddRemove(DOMAIN, min_size=1, max_size=10)
_SELECTION_RELATION = AddRemove(DOMAIN, min_size=1, max_size=16)
_VECTOR_RELATION = AddRemove(VECTOR_DOMAIN, min_size=1, max_size=16)


def _target(name: str, pipeline, fields: Sequence[str], *, presence: bool = False, vector: bool = False,
            pairs=_PAIRS, relation=_RELATION) -> PipelineDPMechanism:
    pipeline.__name__ = pipeline.__qualname__ = name
    mech = PipelineDPMechanism(pipeline, partitions=PARTITIONS, metrics=tuple(fields), presence=presence,
                               name=f"pipelinedp_metrics:{name}",
                               to_rows=unit_vector_contributions if vector else unit_contributions)
    return with_hints(mech, relation, pairs, VECTOR_ACCEPTS if vector else ACCEPTS)


_ACCEPTS_NOTE = ("values are Python floats taken by PipelineDP's value_extractor (no type check); the adversarial "
                 "value goes into every value of the unit, its partitions stay 0 (the partition key is the row's, "
                 "not a number PipelineDP reads); the empty dataset is left out (PipelineDP refuses an empty "
                 "collection)")
ACCEPTS = AcceptedInputs(record=lambda v: (0.0, v) * CONTRIBUTIONS, note=_ACCEPTS_NOTE)
"""The adversarial inputs of the scalar metrics (:mod:`dpaudit.search.adversarial`): a unit whose
contributions all hold the value, in partition 0."""
VECTOR_ACCEPTS = AcceptedInputs(record=lambda v: (0.0, v, v) * VECTOR_CONTRIBUTIONS, note=_ACCEPTS_NOTE)
"""The same for VECTOR_SUM units (both coordinates hold the value)."""

# ---------------------------------------------------------------- privacy-unit adversarial pairs
_SPREAD = [0.0, 1.0, 1.0, 1.0, 2.0, 1.0, 2.0, 1.0]  # rows in all 3 partitions, values 1
_ALONE2 = [2.0, 1.0] * CONTRIBUTIONS  # all 4 rows in partition 2, values 1
UNIT_PAIRS = (
    ("over-partitions", [_LOW], [_LOW, _SPREAD],
     "add a unit with rows of value 1 in all 3 partitions (max_partitions_contributed is 2, 1 with private "
     "selection): the library must drop its rows in the extra partitions"),
    ("over-contributions", [_LOW], [_LOW, _IN0],
     "add a unit with 4 rows of value 1 in partition 0 (max_contributions_per_partition is 2, 1 in "
     "count_bounds_enforced): the library must drop the extra rows"),
    ("lone-partition", [_IN0] * 3, [_IN0] * 3 + [_ALONE2],
     "add a unit whose rows are alone in partition 2, empty in D0 (an empty public partition; a partition only "
     "that unit can make private selection release)"),
    ("empty-vs-unit", [], [_IN0], "the empty dataset vs one unit (4 rows of value 1 in partition 0)"),
)
"""The declared privacy-unit pairs of the scalar metrics (:attr:`AcceptedInputs.unit_pairs`): D1 is
D0 plus one unit that breaks the contribution bounds, or is alone in its partition, or is the only
unit; PipelineDP must bound or hide it (a certified distributional leak on one of them is a leak)."""
_VSPREAD = [0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 2.0, 1.0, 0.0]  # rows in all 3 partitions
VECTOR_UNIT_PAIRS = (
    ("over-partitions", [_V0], [_V0, _VSPREAD],
     "add a unit with one row (1, 0) in each of the 3 partitions (max_partitions_contributed is 1)"),
    ("over-contributions", [_V1], [_V1, _V0],
     "add a unit with 3 rows (1, 0) in partition 0 (max_contributions_per_partition is 2)"),
    ("lone-partition", [_V0] * 3, [_V0] * 3 + [[2.0, 1.0, 0.0] * VECTOR_CONTRIBUTIONS],
     "add a unit whose rows are alone in partition 2, empty in D0 (private selection must hide it)"),
    ("empty-vs-unit", [], [_V0], "the empty dataset vs one unit (3 rows (1, 0) in partition 0)"),
)
"""The same for the VECTOR_SUM units."""
_UNIT_NOTE = ("; privacy-unit pairs declared: units over the contribution bounds, a unit alone in an empty "
              "partition, the empty dataset vs one unit")
ACCEPTS = replace(ACCEPTS, unit_pairs=UNIT_PAIRS, note=_ACCEPTS_NOTE + _UNIT_NOTE)
VECTOR_ACCEPTS = replace(VECTOR_ACCEPTS, unit_pairs=VECTOR_UNIT_PAIRS, note=_ACCEPTS_NOTE + _UNIT_NOTE)
# ---------------------------------------------------------------- end of the privacy-unit pairs


def _public(name: str, metric, field: str | Sequence[str], noise: str, **extra) -> PipelineDPMechanism:
    delta = DELTA if noise == "gaussian" else 0.0
    params = {**BOUNDS, **extra}
    bounded = not (metric == "PRIVACY_ID_COUNT" or metric == "COUNT")
    if not bounded:
        params.pop("min_value"), params.pop("max_value")
    metrics = metric if isinstance(metric, list) else [metric]
    fields = [field] if isinstance(field, str) else field

    def pipeline(rows):
        return aggregate(rows, metrics, noise=noise, delta=delta, **params)

    def pipeline_for(bounds):
        p = dict(params)
        if bounds is not None:
            p.update(min_value=bounds[0], max_value=bounds[1])

        def run(rows):
            return aggregate(rows, metrics, noise=noise, delta=delta, **p)
        return run

    mech = _target(name, pipeline, fields)
    squares = "VARIANCE" in (metric if isinstance(metric, list) else [metric])
    mech.accepts = replace(mech.accepts, space=_space(name, pipeline_for, fields, bounded,
                                                      max_bound=1e150 if squares else 1e300))
    return mech


count_laplace = _public("count_laplace", "COUNT", "count", "laplace")
"""COUNT per public partition, Laplace noise, claim 1-DP (L1 sensitivity 2 x 2 = 4)."""
count_gaussian = _public("count_gaussian", "COUNT", "count", "gaussian")
"""COUNT per public partition, Gaussian noise, claim (1, 1e-5)-DP."""
privacy_id_count_laplace = _public("privacy_id_count_laplace", "PRIVACY_ID_COUNT", "privacy_id_count", "laplace")
"""PRIVACY_ID_COUNT per public partition, Laplace noise, claim 1-DP."""
privacy_id_count_gaussian = _public("privacy_id_count_gaussian", "PRIVACY_ID_COUNT", "privacy_id_count",
                                    "gaussian")
"""PRIVACY_ID_COUNT per public partition, Gaussian noise, claim (1, 1e-5)-DP."""
sum_laplace = _public("sum_laplace", "SUM", "sum", "laplace")  # noqa: A001
"""SUM per public partition (values clipped to [0, 1]), Laplace noise, claim 1-DP."""
sum_gaussian = _public("sum_gaussian", "SUM", "sum", "gaussian")
"""SUM per public partition, Gaussian noise, claim (1, 1e-5)-DP."""
mean_laplace = _public("mean_laplace", "MEAN", "mean", "laplace")
"""MEAN per public partition (noisy count and noisy normalised sum, epsilon / 2 each), Laplace, 1-DP."""
mean_gaussian = _public("mean_gaussian", "MEAN", "mean", "gaussian")
"""MEAN per public partition, Gaussian noise, claim (1, 1e-5)-DP."""
variance_laplace = _public("variance_laplace", "VARIANCE", "variance", "laplace")
"""VARIANCE per public partition (count, normalised sum and sum of squares), Laplace, 1-DP."""
variance_gaussian = _public("variance_gaussian", "VARIANCE", "variance", "gaussian")
"""VARIANCE per public partition, Gaussian noise, claim (1, 1e-5)-DP."""
percentile_laplace = _public("percentile_laplace", ("PERCENTILE", 50), "percentile_50", "laplace")
"""PERCENTILE(50) per public partition (PyDP's quantile tree), Laplace noise, claim 1-DP."""
percentile_gaussian = _public("percentile_gaussian", ("PERCENTILE", 50), "percentile_50", "gaussian")
"""PERCENTILE(50) per public partition, Gaussian noise, claim (1, 1e-5)-DP."""
percentiles_laplace = _public("percentiles_laplace", [("PERCENTILE", 25), ("PERCENTILE", 75)],
                              ("percentile_25", "percentile_75"), "laplace")
"""PERCENTILE(25) and PERCENTILE(75) in one aggregation (one quantile tree, one budget), Laplace, 1-DP."""


def _vector(name: str, noise: str, norm: str, public: bool = False) -> PipelineDPMechanism:
    def pipeline(rows):
        pdp = import_pipeline_dp()
        return aggregate(rows, ["VECTOR_SUM"], noise=noise, delta=SELECTION_DELTA, public=public,
                         vector_size=VECTOR_SIZE, vector_max_norm=VECTOR_MAX_NORM,
                         vector_norm_kind=getattr(pdp.aggregate_params.NormKind, norm), **SELECTION_BOUNDS)

    return _target(name, pipeline, [f"vector_sum_{i}" for i in range(VECTOR_SIZE)], presence=not public,
                   vector=True, pairs=_VECTOR_PAIRS, relation=_VECTOR_RELATION)


vector_sum_laplace = _vector("vector_sum_laplace", "laplace", "L1")
"""VECTOR_SUM (L1 norm <= 1 per unit and partition) with private selection, Laplace, claim (1, 1e-3)-DP."""
vector_sum_gaussian = _vector("vector_sum_gaussian", "gaussian", "L2")
"""VECTOR_SUM (L2 norm <= 1) with private selection, Gaussian noise, claim (1, 1e-3)-DP."""
vector_sum_public = _vector("vector_sum_public", "laplace", "L1", public=True)
"""VECTOR_SUM with public partitions: raises in PipelineDP 0.3.1 (see the module notes)."""


def _count_private(rows):
    return aggregate(rows, ["COUNT"], noise="laplace", delta=SELECTION_DELTA, public=False, **SELECTION_BOUNDS)


count_private_partitions = _target("count_private_partitions", _count_private, ["count"], presence=True,
                                   pairs=_HALF_PAIRS, relation=_SELECTION_RELATION)
"""COUNT with private partition selection (truncated geometric), Laplace noise, claim (1, 1e-3)-DP."""


def _selection(name: str, strategy: str) -> PipelineDPMechanism:
    def pipeline(rows):
        return select_partitions(rows, strategy=strategy, **{"max_partitions_contributed": 1})

    return _target(name, pipeline, (), presence=True, pairs=_SELECTION_PAIRS, relation=_SELECTION_RELATION)


select_partitions_geometric = _selection("select_partitions_geometric", "truncated_geometric")
"""``DPEngine.select_partitions``, truncated geometric strategy: presence flags, claim (1, 1e-3)-DP."""
select_partitions_laplace = _selection("select_partitions_laplace", "laplace_thresholding")
"""``DPEngine.select_partitions``, Laplace thresholding: presence flags, claim (1, 1e-3)-DP."""
select_partitions_gaussian = _selection("select_partitions_gaussian", "gaussian_thresholding")
"""``DPEngine.select_partitions``, Gaussian thresholding: presence flags, claim (1, 1e-3)-DP."""


def _count_enforced(rows):
    return aggregate(rows, ["COUNT"], noise="laplace", max_partitions_contributed=1,
                     max_contributions_per_partition=1, contribution_bounds_already_enforced=True)


count_bounds_enforced = _target("count_bounds_enforced", _count_enforced, ["count"],
                                pairs=(([_LOW], [_LOW, _IN0]), ([_IN0] * 3, [_IN0] * 4)))
"""MISUSE, kept as a row: COUNT with ``contribution_bounds_already_enforced=True`` on units that
break the bounds (4 rows in one partition): not 1-DP."""


# ---------------------------------------------------------------- privacy ids as data

ID_BOUNDS = {"max_partitions_contributed": 1, "max_contributions_per_partition": 1}
"""Contribution bounds of the targets whose privacy ids are data (:func:`id_rows`)."""

ID_DOMAIN = Domain((0.0,) + (0.0, -1.0) * CONTRIBUTIONS, (1e6,) + (2.0, 2.0) * CONTRIBUTIONS)
"""One record = one unit: ``(privacy_id, p_1, v_1, ..., p_4, v_4)``; ids in [0, 1e6], one per record."""

_ID_COLUMNS = (Column("unit", 0.0, 1e6, integer=True, name="privacy_id"),) + _UNIT_COLUMNS
"""The layout of a unit whose privacy id is data: the id (per-record data, role ``"unit"``), then four
``(partition key, value)`` contributions."""


def id_rows(dataset) -> list:
    """PipelineDP rows of a dataset whose records are privacy units ``(privacy_id, p_1, v_1, ..., p_4, v_4)``,
    as a user's table reaches PipelineDP: one row per contribution (``privacy_id``, ``partition``,
    ``value``; the unit's id repeated on each of its rows), read from a NumPy table with ``tolist()`` as
    from a CSV file or a DataFrame (each cell its own Python float; a missing id a float NaN).

    Parameters
    ----------
    dataset : array_like, shape (n_units, 1 + 2 * CONTRIBUTIONS)

    Returns
    -------
    list of UnitRow
        ``4 * n_units`` rows; partition keys pass as given (PipelineDP keeps the public ones: 0, 1, 2
        compare equal to 0.0, 1.0, 2.0).

    Raises
    ------
    ValueError
        If a record does not hold ``1 + 2 * CONTRIBUTIONS`` numbers.
    """
    arr = np.asarray(dataset, dtype=float)
    width = 1 + 2 * CONTRIBUTIONS
    arr = arr.reshape(len(arr), -1) if arr.size else arr.reshape(0, width)
    if arr.shape[1] != width:
        raise ValueError(f"a record must hold a privacy id and {CONTRIBUTIONS} (partition, value) pairs: "
                         f"{width} numbers, got {arr.shape[1]}")
    table = np.array([(rec[0], rec[j], rec[j + 1]) for rec in arr for j in range(1, width, 2)]).reshape(-1, 3)
    return [UnitRow(*row) for row in table.tolist()]


_ID_LOW = [0.0] + [0.0, 0.0] * CONTRIBUTIONS      # unit 0: 4 rows in partition 0
_ID_HIGH = [1.0] + [0.0, 1.0] * CONTRIBUTIONS     # unit 1: 4 rows in partition 0
_ID_SPREAD = [1.0, 0.0, 1.0, 1.0, 1.0, 2.0, 1.0, 2.0, 1.0]  # unit 1: rows in all 3 partitions
_ID_PAIRS = (([_ID_LOW], [_ID_LOW, _ID_HIGH]), ([_ID_LOW], [_ID_LOW, _ID_SPREAD]),
             ([[float(i)] + [0.0, 0.0] * CONTRIBUTIONS for i in range(9)],
              [[float(i)] + [0.0, 0.0] * CONTRIBUTIONS for i in range(9)] + [[9.0] + [1.0, 1.0] * CONTRIBUTIONS]))
"""Units over the bounds (4 rows in one partition, or rows in all 3) added next to one unit, and a
tenth unit added to nine."""
_ID_RELATION = AddRemove(ID_DOMAIN, min_size=1, max_size=10)
_ID_NOTE = ("one record = one privacy unit whose id is its first number (records whose ids compare equal are one "
            "unit; the search keeps the added unit's id distinct from the others'), its 4 contributions the rows of "
            "a table read cell by cell (tolist(), as from a CSV file), privacy_id_extractor=lambda r: r.privacy_id")
ID_ACCEPTS = AcceptedInputs(record=lambda v: (1.0,) + (0.0, v) * CONTRIBUTIONS, note=_ID_NOTE)


def _ids(name: str, metric: str, field: str) -> PipelineDPMechanism:
    def pipeline(rows):
        return aggregate(rows, [metric], noise="laplace", **ID_BOUNDS)

    pipeline.__name__ = pipeline.__qualname__ = name
    mech = PipelineDPMechanism(pipeline, partitions=PARTITIONS, metrics=(field,), name=f"pipelinedp_metrics:{name}",
                               to_rows=id_rows)
    mech = with_hints(mech, _ID_RELATION, _ID_PAIRS, ID_ACCEPTS)
    mech.accepts = replace(mech.accepts, space=InputSpace(
        columns=_ID_COLUMNS, max_size=8,
        note="the privacy id is per-record data (privacy_id_extractor): any hashable Python value PipelineDP takes, "
             "a missing id a float NaN as pandas or a CSV reader gives it"))
    return mech


count_ids_laplace = _ids("count_ids_laplace", "COUNT", "count")
"""COUNT per public partition, privacy ids as data, bounds 1 and 1, Laplace noise, claim 1-DP (sensitivity 1)."""
privacy_id_count_ids_laplace = _ids("privacy_id_count_ids_laplace", "PRIVACY_ID_COUNT", "privacy_id_count")
"""PRIVACY_ID_COUNT per public partition, privacy ids as data, bounds 1 and 1, Laplace, claim 1-DP."""

TARGETS = {name: globals()[name] for name in __all__[__all__.index("count_laplace"):]}
"""The targets of this module by name."""
