"""The PipelineDP rows of the library-audit table (PipelineDP 0.3.1, OpenMined; noise from PyDP 1.1.5).

One metric of ``DPEngine.aggregate`` per row (COUNT, PRIVACY_ID_COUNT, SUM, MEAN, VARIANCE,
PERCENTILE, VECTOR_SUM), private partition selection, ``DPEngine.add_dp_noise`` and one documented
misuse kept on purpose; the targets are in ``dpaudit.mechanisms.catalogue.pipelinedp_metrics`` and
``pipelinedp_noise``. Claims are the ``NaiveBudgetAccountant``'s total budget at the privacy-unit level.
"""

from __future__ import annotations

from dataclasses import replace

from ..entry import Budget, Cause, Entry, Guarantee, LibraryInfo
from ..structural import float_addition_set

LIBRARY = LibraryInfo("PipelineDP", "pipeline-dp", install="pipeline-dp==0.3.1 python-dp==1.1.5 numpy")

_PDP = "dpaudit.mechanisms.catalogue.pipelinedp_metrics"
_PDP_UNITS = ("1 to {n} privacy units; one record = one unit with {k} contributions (partition 0..2, value in "
              "[-1, 2]); add/remove of a record = of a unit with all its contributions")
_PDP_BOUNDS = "max_partitions_contributed=2, max_contributions_per_partition=2, min_value=0, max_value=1"
_PDP_SELECTION_BOUNDS = "max_partitions_contributed=1, max_contributions_per_partition=2"
_PDP_ACCOUNTANT = "NaiveBudgetAccountant(total_epsilon=1, total_delta={delta})"
_PDP_NOISE_DOC = ("PipelineDP 0.3.1 and PyDP 1.1.5 (its noise, Google's C++ library) state no floating-point caveat. "
                  "Both of PyDP's mechanisms round the value to the noise's granularity g and add a multiple of g "
                  "(Google's secure-noise design): measured here, the Laplace's g (2^-38 at scale 4) is on the "
                  "doubles' grid at every output size these rows reach, the Gaussian's (2^-54 at sigma 3.7) is not. "
                  "PyDP's noise cannot be seeded: these rows are not reproducible from --seed")


def _pdp_entry(attr: str, name: str, how: str, *, noise: str = "laplace", public: bool = True, n: int = 10,
               k: int = 4, delta: float | None = None, call: str = "DPEngine.aggregate", bounds: str | None = None,
               **kw) -> Entry:
    """A PipelineDP row: target ``pipelinedp_metrics:attr``, claim (1, delta)-DP under add/remove of a unit."""
    if delta is None:
        delta = 1e-5 if noise == "gaussian" else 0.0
    bounds = bounds or (_PDP_BOUNDS if public else _PDP_SELECTION_BOUNDS)
    partitions = "public partitions 0, 1, 2" if public else "private partition selection over 0, 1, 2 (presence flag per partition)"
    g = Guarantee(1.0, delta, "add-remove", _PDP_UNITS.format(n=n, k=k),
                  f"pipeline_dp.{call} under {_PDP_ACCOUNTANT.format(delta=f'{delta:g}')}")
    noise_text = f"{noise.capitalize()} noise; " if call == "DPEngine.aggregate" else ""
    configuration = f"{how}; {noise_text}{partitions}; {bounds}"
    return Entry("PipelineDP", name, f"{_PDP}:{attr}", configuration, g, documented=kw.pop("documented", _PDP_NOISE_DOC),
                 **kw)


_PDP_VECTOR_PUBLIC_CAUSE = (
    "a library bug in PipelineDP 0.3.1: with public partitions DPEngine._add_empty_public_partitions calls "
    "create_accumulator([]) for every public partition, and VectorSumCombiner.create_accumulator then clips None "
    "(np.clip or np.linalg.norm of None raises), so every VECTOR_SUM with public partitions fails")
_PDP_ENFORCED_DOC = ("AggregateParams docstring: contribution_bounds_already_enforced: assume that the input dataset "
                     "complies with the bounds provided in max_partitions_contributed and "
                     "max_contributions_per_partition. This option can be used if the dataset does not contain any "
                     "identifiers that can be used to enforce contribution bounds automatically")
_PDP_ENFORCED_CAUSE = (
    "a misuse of the configuration, kept as a row on purpose: contribution_bounds_already_enforced=True tells "
    "PipelineDP that every unit already respects max_partitions_contributed=1 and max_contributions_per_partition=1, "
    "so it bounds nothing and calibrates the Laplace noise to sensitivity 1; the added unit has 4 rows in partition "
    "0 and moves its count by 4, so the release is 4-DP, not 1-DP. The documentation states the assumption; the "
    "library cannot check it (there are no privacy ids in that mode)")

_PIPELINEDP: tuple[Entry, ...] = (
    _pdp_entry("count_laplace", "Metrics.COUNT", "COUNT per partition (L1 sensitivity 4)"),
    _pdp_entry("count_gaussian", "Metrics.COUNT", "COUNT per partition (L2 sensitivity 2 sqrt 2)", noise="gaussian"),
    _pdp_entry("privacy_id_count_laplace", "Metrics.PRIVACY_ID_COUNT", "PRIVACY_ID_COUNT per partition"),
    _pdp_entry("privacy_id_count_gaussian", "Metrics.PRIVACY_ID_COUNT", "PRIVACY_ID_COUNT per partition",
               noise="gaussian"),
    _pdp_entry("sum_laplace", "Metrics.SUM", "SUM per partition, values clipped to [0, 1]"),
    _pdp_entry("sum_gaussian", "Metrics.SUM", "SUM per partition, values clipped to [0, 1]", noise="gaussian"),
    _pdp_entry("mean_laplace", "Metrics.MEAN", "MEAN per partition: noisy count and noisy normalised sum, epsilon/2 "
               "each"),
    _pdp_entry("mean_gaussian", "Metrics.MEAN", "MEAN per partition: noisy count and noisy normalised sum, "
               "(epsilon/2, delta/2) each", noise="gaussian"),
    _pdp_entry("variance_laplace", "Metrics.VARIANCE", "VARIANCE per partition (count, normalised sum and sum of "
               "squares, one budget split inside)"),
    _pdp_entry("variance_gaussian", "Metrics.VARIANCE", "VARIANCE per partition (count, normalised sum and sum of "
               "squares, one budget split inside)", noise="gaussian"),
    _pdp_entry("percentile_laplace", "Metrics.PERCENTILE", "PERCENTILE(50) per partition (PyDP's quantile tree)"),
    _pdp_entry("percentile_gaussian", "Metrics.PERCENTILE", "PERCENTILE(50) per partition (PyDP's quantile tree)",
               noise="gaussian"),
    _pdp_entry("percentiles_laplace", "Metrics.PERCENTILE", "PERCENTILE(25) and PERCENTILE(75) in one aggregation "
               "(one quantile tree, one budget)"),
    _pdp_entry("vector_sum_laplace", "Metrics.VECTOR_SUM", "VECTOR_SUM of 2-vectors, L1 norm <= 1 per unit and "
               "partition; vector and selection epsilon/2 each, all of delta to the selection", public=False, n=16,
               k=3, delta=1e-3),
    _pdp_entry("vector_sum_gaussian", "Metrics.VECTOR_SUM", "VECTOR_SUM of 2-vectors, L2 norm <= 1 per unit and "
               "partition; vector and selection (epsilon/2, delta/2) each", noise="gaussian", public=False, n=16,
               k=3, delta=1e-3),
    _pdp_entry("vector_sum_public", "Metrics.VECTOR_SUM", "VECTOR_SUM of 2-vectors, L1 norm <= 1 per unit and "
               "partition (PipelineDP 0.3.1 raises on every call: " + _PDP_VECTOR_PUBLIC_CAUSE.split(": ", 1)[1] + ")",
               n=16, k=3, delta=1e-3, bounds=_PDP_SELECTION_BOUNDS),
    _pdp_entry("count_private_partitions", "Metrics.COUNT", "COUNT per partition with private partition selection "
               "(truncated geometric); count and selection epsilon/2 each, all of delta to the selection",
               public=False, n=16, delta=1e-3),
    _pdp_entry("select_partitions_geometric", "DPEngine.select_partitions", "released partitions only "
               "(PartitionSelectionStrategy.TRUNCATED_GEOMETRIC)", public=False, n=16, delta=1e-3,
               call="DPEngine.select_partitions", bounds="max_partitions_contributed=1"),
    _pdp_entry("select_partitions_laplace", "DPEngine.select_partitions", "released partitions only "
               "(PartitionSelectionStrategy.LAPLACE_THRESHOLDING)", public=False, n=16, delta=1e-3,
               call="DPEngine.select_partitions", bounds="max_partitions_contributed=1"),
    _pdp_entry("select_partitions_gaussian", "DPEngine.select_partitions", "released partitions only "
               "(PartitionSelectionStrategy.GAUSSIAN_THRESHOLDING)", public=False, n=16, delta=1e-3,
               call="DPEngine.select_partitions", bounds="max_partitions_contributed=1"),
    _pdp_entry("count_bounds_enforced", "Metrics.COUNT", "MISUSE: COUNT per partition with "
               "contribution_bounds_already_enforced=True on units with up to 4 rows in a partition",
               bounds="max_partitions_contributed=1, max_contributions_per_partition=1 (not enforced)",
               documented=_PDP_ENFORCED_DOC, cause=_PDP_ENFORCED_CAUSE),
)
"""The PipelineDP rows (``dpaudit.mechanisms.catalogue.pipelinedp_metrics``): one metric per entry, claim = the
``NaiveBudgetAccountant``'s total budget, at the privacy-unit level."""


_PDN = "dpaudit.mechanisms.catalogue.pipelinedp_noise"
_PDN_RELATION = ('documented: add/remove of a privacy unit: "linf_sensitivity: the maximum difference of values in one '
                 'partition which can achieved by adding or removing one privacy unit from the dataset" '
                 '(pipeline_dp/aggregate_params.py, AddDPNoiseParams)')
_PDN_DOC = ("DPEngine.add_dp_noise's docstring: it does not enforce the sensitivity by contribution bounding and relies "
            "on the caller to ensure the provided data satisfies the provided bound. " + _PDP_NOISE_DOC)


def _pdn_entry(attr: str, noise: str, accountant: str, **kw) -> Entry:
    """A PipelineDP add_dp_noise row (``pipelinedp_noise:attr``)."""
    delta = 1e-5 if (noise == "gaussian" or accountant == "pld") else 0.0
    acc = (f"NaiveBudgetAccountant(total_epsilon=1, total_delta={delta:g})" if accountant == "naive" else
           "PLDBudgetAccountant(total_epsilon=1, total_delta=1e-05) (its docstring: experimental, 'not yet "
           "compatible with DPEngine'; add_dp_noise runs with it)")
    g = Guarantee(1.0, delta, "add-remove", "1 to 10 privacy units of one contribution (partition 0..2, value in "
                  "[0, 1]), or none", f"pipeline_dp.DPEngine.add_dp_noise under {acc.split(' (')[0]}")
    configuration = (f"the caller's per-partition sum of np.clip(value, 0, 1) (public partitions 0, 1, 2), then "
                     f"add_dp_noise(AddDPNoiseParams(noise_kind={noise.upper()}, l0_sensitivity=1, "
                     f"linf_sensitivity=1)); {acc}")
    return Entry("PipelineDP", "DPEngine.add_dp_noise", f"{_PDN}:{attr}", configuration, g,
                 budget=Budget(samples=10000, trials=2), documented=_PDN_DOC, relation_note=_PDN_RELATION, **kw)


_PIPELINEDP_NOISE: tuple[Entry, ...] = (
    _pdn_entry("add_dp_noise_laplace", "laplace", "naive"),
    _pdn_entry("add_dp_noise_gaussian", "gaussian", "naive"),
)
"""PipelineDP's add_dp_noise rows (``dpaudit.mechanisms.catalogue.pipelinedp_noise``)."""

_PDP_ID_UNITS = ("1 to 10 privacy units; one record = one unit: its privacy id (a number, the value of the table's "
                 "privacy_id column on each of its rows) and 4 contributions (partition 0..2, value in [-1, 2]); "
                 "add/remove of a record = of a unit with all its rows")
_PDP_ID_RELATION = (
    "inferred: add/remove of a privacy unit (AggregateParams: 'max_partitions_contributed: A bound on the number of "
    "partitions to which one unit of privacy (e.g., a user) can contribute'), the unit being the rows that carry "
    "its id. Relation-dependent where an id is NaN: this relation counts the rows of one record (one person whose "
    "id is missing, NaN on each of their rows) as one unit; read literally, NaN != NaN makes each such row a unit "
    "of its own. Ids that compare equal are one unit either way")


def _pdp_id_entry(attr: str, name: str, how: str) -> Entry:
    """A PipelineDP row whose privacy ids are data (``pipelinedp_metrics:attr``), claim 1-DP under add/remove of a unit."""
    g = Guarantee(1.0, 0.0, "add-remove", _PDP_ID_UNITS,
                  f"pipeline_dp.DPEngine.aggregate under {_PDP_ACCOUNTANT.format(delta='0')}")
    configuration = (f"{how}; privacy_id_extractor=lambda row: row.privacy_id on rows read cell by cell from a table "
                     f"(tolist(), as from a CSV file or a DataFrame); Laplace noise; public partitions 0, 1, 2; "
                     f"max_partitions_contributed=1, max_contributions_per_partition=1")
    return Entry("PipelineDP", name, f"{_PDP}:{attr}", configuration, g, documented=_PDP_NOISE_DOC,
                 relation_note=_PDP_ID_RELATION)


_PIPELINEDP_IDS: tuple[Entry, ...] = (
    _pdp_id_entry("count_ids_laplace", "Metrics.COUNT", "COUNT per partition, privacy ids as data (sensitivity 1)"),
    _pdp_id_entry("privacy_id_count_ids_laplace", "Metrics.PRIVACY_ID_COUNT",
                  "PRIVACY_ID_COUNT per partition, privacy ids as data (sensitivity 1)"),
)
"""PipelineDP rows whose privacy ids are per-record data (the privacy_id column a user's table carries)."""

_ENTRIES: tuple[Entry, ...] = _PIPELINEDP + _PIPELINEDP_IDS + _PIPELINEDP_NOISE  # the add_dp_noise block stays last (tests/test_library_audit_models.py)

NOTE = ""

LEFT_OUT = {
        "DPEngine.calculate_private_contribution_bounds, the PLD accountant, custom combiners, "
        "post-aggregation thresholding, private_beam / private_spark": "not in the registry: the first releases "
        "bounds for a later aggregation (not an aggregation itself), the PLD accountant and thresholding are other "
        "budget/selection options of the same metrics, custom combiners are the user's code, and the Beam and "
        "Spark wrappers run the same DPEngine on other backends (the rows use the local backend)",
        "weighted Gaussian thresholding (PartitionSelectionStrategy.WEIGHTED_GAUSSIAN_THRESHOLDING)": "present in "
        "0.3.1 (DPEngine._select_partitions_weighted_gaussian: each unit's partitions weigh 1/sqrt(k), the weights "
        "summed per partition and passed to PyDP's Gaussian partition selection) but not audited: one "
        "select_partitions run took 25-170 ms on this loaded 2-core machine, and a unit in two partitions needs 12 to 16 "
        "units before the keep rate leaves 0 (measured: 0.1 at 12, 0.21 at 16), so a row needs several CPU-hours",
        "the PLD accountant's output (PLDBudgetAccountant)": "present in 0.3.1 (docstring: experimental, 'not yet "
        "compatible with DPEngine'; add_dp_noise does run with it) but not audited as a black box: every release "
        "runs dp_accounting's PLD search in compute_budgets (3.6 s per release here). Its output checked instead, "
        "one mechanism at total (1, 1e-5): Gaussian sigma 3.7307 for L2 sensitivity 1, whose exact "
        "(Balle-Wang analytic) delta at epsilon 1 is 9.9991e-6 <= 1e-5; Laplace scale 1.0000227 >= 1/epsilon. "
        "Both sound, and tight",
    }
"""PipelineDP's APIs with no row, and why."""

_PDP_UNIT = ('add/remove of a privacy unit: "max_partitions_contributed: A bound on the number of partitions to which '
             'one unit of privacy (e.g., a user) can contribute" (pipeline_dp/aggregate_params.py, AggregateParams); '
             'no relation is named, and the noise is calibrated to one unit\'s bounded contributions '
             '(l0 * linf), the add/remove sensitivity')


def relation_note(entry: Entry) -> str:
    """Where a PipelineDP row's relation comes from (inferred from the contribution bounds)."""
    return "inferred: " + _PDP_UNIT


PYDP_GAUSSIAN_CAUSE = (
    "not plain float64 noise. PipelineDP adds Gaussian noise through PyDP (pipeline_dp/dp_computations.py: "
    "GaussianMechanism wraps pydp's dp_mechanisms.GaussianMechanism, whose add_noise is Google's C++ "
    "GaussianMechanism::AddDoubleNoise): RoundToNearestMultiple(value, g) + sample, with sample = "
    "SampleBinomial(2 sigma / g) * g and g = GetNextPowerOfTwo(2 sigma / 2^57) (algorithms/distributions.cc), "
    "Google's secure-noise design. g is 2^-54 at sigma 3.73 (epsilon 1, delta 1e-5, L2 sensitivity 1, measured) "
    "and 2^-52 at sigma 10.6 (L2 sensitivity 2 sqrt 2, the COUNT and SUM rows), finer than the spacing of "
    "doubles wherever |sample| >= 2^52 g: the sample is itself rounded to its binade's spacing, and so is the sum. A true value 0 releases the sample as drawn "
    "(outputs near 0 on the 2^-54 grid); a true value c != 0 releases c + sample with sample near -c, on the "
    "coarser grid of |c|'s binade, so outputs near 0 miss the finer grid entirely. The Laplace mechanism of the "
    "same library does not leak (its granularity is coarse enough for the output's binade)")




def float_cause(entry: Entry) -> str:
    """The cause of a PipelineDP floating-point leak ("" when the generic one applies)."""
    return PYDP_GAUSSIAN_CAUSE if "gaussian" in (entry.target or "") else ""


FLOAT_CAUSES: dict = {}

_GRID_PRIOR = (
    "known as a concern, not as a report against PipelineDP: opendp/opendp#414 'Floating-point issue in noise "
    "samplers' (closed, 2022) discusses Google's secure-noise design (round to a power-of-two granularity, add a "
    "multiple of it), and an OpenDP maintainer notes there that as the granularity falls below the ulp of the "
    "computation the approach suffers from the same floating-point issue: the leak sized here, PyDP's Gaussian "
    "granularity 2^-52 below the doubles' spacing of the output. Jin et al. (S&P 2022) attack floating-point "
    "Gaussian samplers in general. Not found in the PipelineDP, PyDP or google/differential-privacy trackers "
    "searched; not in the Re:cord-play record (none of its 13 violations concerns PipelineDP or PyDP)")
RECORD = {
    "pipelinedp.count_gaussian": _GRID_PRIOR,
    "pipelinedp.vector_sum_public": "candidate new (a crash, not a privacy leak): not found in the PipelineDP tracker "
                                    "searched; VectorSumCombiner.create_accumulator clips per contribution since "
                                    "OpenMined/PipelineDP#556 (fixing #551), and its empty public partitions then clip "
                                    "None",
    "pipelinedp.count_bounds_enforced": "a documented misuse, kept as a row on purpose",
}
"""Each PipelineDP finding against the record and the trackers."""
for _k in ("privacy_id_count_gaussian", "sum_gaussian", "vector_sum_gaussian", "add_dp_noise_gaussian"):
    RECORD[f"pipelinedp.{_k}"] = RECORD["pipelinedp.count_gaussian"] + " (same cause as Metrics.COUNT, Gaussian)"

ADVERSARIAL_RECORD = ("candidate new: a unit's NaN value makes SUM, MEAN and VARIANCE release NaN for its partition, "
                  "every time: their combiners' create_accumulator (pipeline_dp/combiners.py: SumCombiner, "
                  "MeanCombiner, VarianceCombiner) clip with np.clip, which keeps NaN, and PyDP adds noise to NaN. Not found in the PipelineDP tracker searched; "
                  "google/differential-privacy#405 (open) reports NaN passing ClampFloat64 in Google's Go library, "
                  "a different code path. Reproducers: reproducers/pipelinedp_sum_laplace_nan.py, pipelinedp_mean_laplace_nan.py, "
                  "pipelinedp_variance_laplace_nan.py, pipelinedp_sum_gaussian_nan.py, pipelinedp_mean_gaussian_nan.py, "
                  "pipelinedp_variance_gaussian_nan.py" + (
    "; DPEngine.add_dp_noise likewise releases NaN for a NaN value (pipeline_dp/dp_engine.py, _add_dp_noise adds "
    "noise to whatever value it is given; its docstring leaves bounding to the caller, and np.clip, the caller's "
    "usual bound and PipelineDP's own, keeps NaN): reproducers/pipelinedp_add_dp_noise_laplace_nan.py"))
"""The record of PipelineDP's adversarial-input findings."""

ADVERSARIAL_SAME_CAUSE: dict = {
    "pipelinedp.count_bounds_enforced": (
        "pipelinedp_count_bounds_enforced_over_contributions.py",
        "the NaN pair adds a unit of four rows in one partition; COUNT ignores the values, so it is the "
        "over-contribution misuse that script shows"),
}
POWER_NOTES: dict = {}

# ---------------------------------------------------------------------------------------------
# Structural leak sizes: PyDP's Gaussian releases fl(c + sample) (PYDP_GAUSSIAN_CAUSE)
# ---------------------------------------------------------------------------------------------
_UNIT0 = [0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0]
"""A unit with two rows of value 0 in partitions 0 and 1 each."""
_UNIT1 = [0.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0]
"""A unit with two rows of value 1 in partitions 0 and 1 each."""
_PYDP_ADD = ("PyDP's GaussianMechanism.AddNoise (Google's C++ AddDoubleNoise: RoundToNearestMultiple(value, g) + "
             "sample, an integer value unchanged by the rounding)")
STRUCTURAL = {
    "pipelinedp.count_gaussian": float_addition_set(
        1, 4.0, reaches="D0", d0=[_UNIT0], d1=[_UNIT0, _UNIT1],
        release="partition 1's COUNT: 2 on D0, 4 on D1; " + _PYDP_ADD),
    "pipelinedp.privacy_id_count_gaussian": float_addition_set(
        1, 2.0, reaches="D0", d0=[_UNIT0], d1=[_UNIT0, _UNIT1],
        release="partition 1's PRIVACY_ID_COUNT: 1 on D0, 2 on D1; " + _PYDP_ADD),
    "pipelinedp.sum_gaussian": float_addition_set(
        1, 2.0, reaches="D0", d0=[_UNIT0], d1=[_UNIT0, _UNIT1],
        release="partition 1's SUM: 0 on D0, 2 on D1; " + _PYDP_ADD),
    "pipelinedp.add_dp_noise_gaussian": float_addition_set(
        0, 1.0, reaches="D0", d0=[[0.0, 0.0]], d1=[[0.0, 0.0], [0.0, 1.0]],
        release="partition 0's sum: 0 on D0, 1 on D1; DPEngine.add_dp_noise through " + _PYDP_ADD),
}
"""Findings whose set one dataset never reaches by construction (:mod:`dpaudit.library.structural`)."""

ENTRIES: tuple[Entry, ...] = tuple(replace(e, structural=STRUCTURAL.get(e.key)) for e in _ENTRIES)
"""The PipelineDP rows, in table order."""


# ---------------------------------------------------------------------------------------------
# Causes: one per issue a maintainer would file (dpaudit.library.findings)
# ---------------------------------------------------------------------------------------------
_PDP_TRACKER = "OpenMined/PipelineDP and OpenMined/PyDP issues, google/differential-privacy issues"
_NAN = ("sum_laplace", "sum_gaussian", "mean_laplace", "mean_gaussian", "variance_laplace", "variance_gaussian",
        "add_dp_noise_laplace", "add_dp_noise_gaussian")
CAUSES = (
    Cause("pipelinedp.gaussian-grid", "PipelineDP",
          "Gaussian noise (PyDP) has a granularity finer than the doubles of the output: the low bits carry the "
          "true value", "floating-point",
          rows=tuple(f"pipelinedp.{k}" for k in ("count_gaussian", "privacy_id_count_gaussian", "sum_gaussian",
                                                 "vector_sum_gaussian", "add_dp_noise_gaussian")),
          prior="raised for Google's design in opendp/opendp#414 'Floating-point issue in noise samplers' (closed, "
                "2022): a granularity below the ulp of the computation defeats the rounding; Jin et al. (S&P 2022) "
                "for floating-point Gaussian samplers in general",
          searched=_PDP_TRACKER + " (Gaussian granularity, binomial sampler, floating point)",
          reproducer="reproducers/pipelinedp_count_gaussian.py",
          note="one cause in 5 rows: every Gaussian metric whose release is a sum; the Laplace rows pass"),
    Cause("pipelinedp.nan-passes-clip", "PipelineDP",
          "A unit's NaN value passes np.clip and SUM, MEAN, VARIANCE and add_dp_noise release NaN, every time",
          "library bug", adversarial=tuple((f"pipelinedp.{k}", "nan") for k in _NAN),
          prior="google/differential-privacy#405 (open) reports NaN passing ClampFloat64 in Google's Go library, a "
                "different code path",
          searched=_PDP_TRACKER + " (NaN value sum mean clip)",
          reproducer="reproducers/pipelinedp_sum_laplace_nan.py"),
    Cause("pipelinedp.int-sum-wraps", "PipelineDP",
          "SUM with integer min_value/max_value near the int64 limit: the per-partition sum of clipped values wraps "
          "around before the noise", "library bug",
          adversarial=tuple((f"pipelinedp.{k}", "search:limits") for k in (
              "sum_laplace", "sum_gaussian", "mean_laplace", "mean_gaussian", "variance_laplace",
              "variance_gaussian")),
          prior="the class is known (Casacuberta et al., CCS 2022; opendp/opendp#178 'Overflow handling in Sum', "
                "closed by saturating or checked arithmetic; google/differential-privacy#40 for Google's C++ "
                "BoundedMean<int>); not found as a report against PipelineDP",
          searched=_PDP_TRACKER + " (SUM integer overflow int64 min_value max_value)",
          reproducer="reproducers/pipelinedp_sum_search_int64_bounds.py",
          note="found blind by the input-space search (limits family): no hand-written pair"),
    Cause("pipelinedp.nan-privacy-id", "PipelineDP",
          "A unit whose privacy id is NaN escapes contribution bounding on the local backend: each of its rows "
          "becomes a unit of its own (LocalBackend groups by Python dict keys, and distinct float NaN objects are "
          "distinct keys), so COUNT and PRIVACY_ID_COUNT move by the unit's number of rows, not by the bounds",
          "relation-dependent",
          adversarial=tuple((f"pipelinedp.{k}", "search:columns") for k in ("count_ids_laplace",
                                                                          "privacy_id_count_ids_laplace")),
          prior="not found as a report against PipelineDP; the Python behaviour behind it (each float NaN object a "
                "distinct dict key, so a group-by puts every NaN row in a group of its own) is reported for other "
                "group-bys, e.g. data-8/datascience#416 'group with nan values is strange' (closed by treating NaNs "
                "as one value), and pandas drops NaN keys by default (pandas-dev/pandas#30584 added dropna)",
          searched=_PDP_TRACKER + " (privacy id NaN None missing; contribution bounding privacy_id_extractor)",
          reproducer="reproducers/pipelinedp_count_ids_laplace_search_nan_id.py",
          note="found blind by the input-space search (columns family: the privacy id is per-record data; the "
               "search's seed adds a unit whose id is NaN next to one ordinary unit). It needs several NaN ids at "
               "once: a unit of one row with a NaN id is bounded like any other, one of 4 rows moves COUNT by 4. "
               "Depends on the relation: counting a NaN-id person's rows as one unit (this row's relation); a "
               "maintainer may instead call NaN ids invalid input, which PipelineDP neither rejects nor documents"),
    Cause("pipelinedp.vector-sum-public-crash", "PipelineDP",
          "VECTOR_SUM with public partitions raises on every call (empty partitions clip None)", "crash",
          rows=("pipelinedp.vector_sum_public",),
          searched=_PDP_TRACKER + " (VECTOR_SUM public partitions create_accumulator); the per-contribution "
                   "clipping came with OpenMined/PipelineDP#556 (fixing #551)",
          reproducer="reproducers/pipelinedp_vector_sum_public.py"),
    Cause("pipelinedp.bounds-already-enforced", "PipelineDP",
          "contribution_bounds_already_enforced=True on data that breaks the bounds (a misuse kept as a row)",
          "documented misuse", rows=("pipelinedp.count_bounds_enforced",),
          adversarial=(("pipelinedp.count_bounds_enforced", "over-contributions"),
                       ("pipelinedp.count_bounds_enforced", "nan")),
          prior="documented: AggregateParams' docstring states the assumption; the library cannot check it",
          reproducer="reproducers/pipelinedp_count_bounds_enforced.py"),
)
"""PipelineDP's findings, one per cause."""
