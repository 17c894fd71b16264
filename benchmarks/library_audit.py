"""Audit the public mechanisms of real DP libraries, one row each, into ``docs/library_audits.md``.

Every entry of :data:`REGISTRY` names a library, a target ``dpaudit test`` can load (a configured
mechanism in ``dpaudit.examples``), the guarantee the library's documentation states for that
configuration (epsilon, delta, neighbouring relation, domain) and an audit budget; or it says why
the entry is not auditable as a black box. Each auditable entry runs as ``dpaudit test TARGET
--epsilon E [--delta D] --tester all --samples N --trials T --seed S --json`` in its own process
(``--jobs`` of them at once), and its outcome is classified (:func:`classify`) as

* ``pass``: no violation at that budget (not a proof of the claim);
* ``violation``: a distributional violation (``violation_kind`` ``"distributional"``);
* ``floating-point leak``: only bit-level features of the outputs reject the claim
  (``violation_kind`` ``"floating-point"``; the claim may hold in exact arithmetic);
* ``inconclusive``: exit code 3 (every trial had too few samples for the tester's bound);
* ``not auditable``: with the reason;
* ``error``: the audit could not run (exit code 2 or 4), with the message.

Every violation is run a second time, with the next seed and twice the samples, before it counts:
a row whose second run does not find the same kind of violation is reported as ``unconfirmed``.
Results are cached in ``benchmarks/results/library_audits.json`` (one record per entry, keyed by
the entry's configuration and the library's version), so a row can be regenerated alone::

    PYTHONPATH=src python benchmarks/library_audit.py                      # every entry not cached
    PYTHONPATH=src python benchmarks/library_audit.py --entries diffprivlib.laplace --force
    PYTHONPATH=src python benchmarks/library_audit.py --list               # the registry
    PYTHONPATH=src python benchmarks/library_audit.py --write-only         # the table from the cache
    PYTHONPATH=src python benchmarks/library_audit.py --entries opendp.geometric --reruns 10   # K seeded reruns
    PYTHONPATH=src python benchmarks/library_audit.py --stages all        # audits, leak sizes, adversarial inputs, power

Besides the audit, three stages fill the table's other columns (``--stages``): ``leak`` sizes each
finding on its witness pair (:func:`size_leak`: the certified delta of an output set one dataset
reaches and the other does not), ``adversarial`` runs the target on the adversarial inputs it
declares (:func:`screen_entry`), ``power`` audits the planted-leak twin of each pass
(:func:`power_entry`, noise x0.7). Each non-pass row has a standalone reproducer in
``reproducers/`` (:func:`reproducer_path`).

diffprivlib, OpenDP and PipelineDP are called once per output, so an entry takes 10 s to a few
minutes on a 2-core machine; ``--jobs`` runs entries side by side, ``--processes`` is passed to
each ``dpaudit test``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import math
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "benchmarks" / "results" / "library_audits.json"
RERUNS = ROOT / "benchmarks" / "results" / "library_reruns.json"
DOC = ROOT / "docs" / "library_audits.md"

OUTCOMES = ("pass", "violation", "floating-point leak", "inconclusive", "not auditable", "error")
"""What an audited entry can come out as (:func:`classify`); ``unconfirmed`` is added when a
violation's second run disagrees."""

PACKAGES = {"diffprivlib": "diffprivlib", "OpenDP": "opendp", "PipelineDP": "pipeline-dp", "PyDP": "python-dp"}
"""Library name in the table -> its distribution name (for the version)."""


@dataclass(frozen=True)
class Guarantee:
    """The privacy guarantee a library's documentation states for one configured mechanism.

    Attributes
    ----------
    epsilon : float
        Claimed epsilon, in nats.
    delta : float
        Claimed delta (0 for pure DP).
    neighbouring : str
        The relation under which the documentation's sensitivity holds: ``"add-remove"``,
        ``"replace"`` (the targets carry it as their ``neighbouring`` hint).
    domain : str
        The records and dataset sizes the guarantee is stated for, in words.
    source : str
        Where the documentation states it (class or function, parameter).
    """

    epsilon: float
    delta: float = 0.0
    neighbouring: str = "add-remove"
    domain: str = "records in [0, 1], 0 to 10 records"
    source: str = ""

    def describe(self) -> str:
        """The claim as the table prints it, e.g. ``"1-DP, add-remove"``."""
        claim = f"({self.epsilon:g}, {self.delta:g})-DP" if self.delta else f"{self.epsilon:g}-DP"
        return f"{claim}, {self.neighbouring}"


@dataclass(frozen=True)
class Budget:
    """The audit budget of an entry: the options of ``dpaudit test`` that set its size.

    Attributes
    ----------
    samples : int
        ``--samples``: outputs per dataset per trial (the last stage).
    trials : int
        ``--trials``: neighbouring pairs tested at most (witness pairs first, then search).
    tester : str
        ``--tester``; ``"all"`` runs every tester that supports the claim, beta split among them.
    seed : int
        ``--seed`` of the first run; a violation's confirmation run uses ``seed + 1``.
    """

    samples: int = 20000
    trials: int = 3
    tester: str = "all"
    seed: int = 1

    def describe(self) -> str:
        """E.g. ``"20,000 x 3, all"``."""
        return f"{self.samples:,} x {self.trials}, {self.tester}"


@dataclass(frozen=True)
class Entry:
    """One row of the table: a library's mechanism in one configuration.

    Attributes
    ----------
    library : str
        ``"diffprivlib"``, ``"OpenDP"`` or ``"PipelineDP"``.
    name : str
        The library's name for it (class or function).
    target : str or None
        What ``dpaudit test`` loads, ``package.module:attribute``; None when not auditable.
    configuration : str
        How it is configured, in words (the query, sensitivity, bounds).
    guarantee : Guarantee or None
        The documented guarantee; None only when not auditable.
    budget : Budget
    not_auditable : str or None
        Why the entry cannot be audited as a black box; None when it can.
    documented : str
        A caveat the library's documentation states about this entry (reported with any finding).
    cause : str
        The cause of a violation or floating-point leak, read from the library's source (library
        bug, documented limitation or misuse), shown only while the entry is not a pass.
    relation_note : str
        Where the row's neighbouring relation comes from: ``"documented: ..."`` with the library's
        words and their source, or ``"inferred: ..."`` with the calibration it is read from (then
        the other relation is audited too where the calibration assumes one). Filled in by
        :func:`relation_note` when empty.
    """

    library: str
    name: str
    target: str | None
    configuration: str
    guarantee: Guarantee | None
    budget: Budget = field(default_factory=Budget)
    not_auditable: str | None = None
    documented: str = ""
    cause: str = ""
    relation_note: str = ""

    @property
    def key(self) -> str:
        """``library.short_name``, the name ``--entries`` takes (e.g. ``diffprivlib.laplace``)."""
        short = self.target.rsplit(":", 1)[1] if self.target else self.name.lower()
        return f"{self.library.lower()}.{short}"

    def command(self, seed: int | None = None, samples: int | None = None) -> list[str]:
        """The ``dpaudit test`` arguments of this entry's audit (without ``--json``)."""
        g, b = self.guarantee, self.budget
        cmd = ["dpaudit", "test", self.target, "--epsilon", f"{g.epsilon:g}"]
        if g.delta:
            cmd += ["--delta", f"{g.delta:g}"]
        cmd += ["--tester", b.tester, "--samples", str(samples or b.samples), "--trials", str(b.trials),
                "--seed", str(b.seed if seed is None else seed)]
        return cmd

    def fingerprint(self) -> dict:
        """What a cached row must match to be reused: the configuration and the library version."""
        return {"target": _cache_name(self.target), "guarantee": asdict(self.guarantee) if self.guarantee else None,
                "budget": asdict(self.budget), "not_auditable": self.not_auditable,
                "version": library_version(self.library)}


def _cache_name(target: str | None) -> str | None:
    """The name a target's cached rows were keyed under: the catalogue modules lived in
    ``dpaudit.examples`` until they moved (same code; the old paths are the same module objects),
    so rows audited before the move stay valid."""
    return target.replace("dpaudit.mechanisms.catalogue.", "dpaudit.examples.") if target else target


# ---------------------------------------------------------------------------------------------
# The registry
# ---------------------------------------------------------------------------------------------

_DPL = "dpaudit.mechanisms.catalogue.diffprivlib_mechanisms"
_SUM = "clipped sum of records in [0, 1] (sensitivity 1)"
_COUNT = "count of records >= 1/2 (sensitivity 1)"
_LOCAL = Guarantee(1.0, neighbouring="replace", domain="one record (any two inputs)")
_DPL_FLOAT_DOC = ("Snapping's docstring: the classic Laplace mechanism and its variants are vulnerable through the "
                  "floating-point representation of reals [Mironov 2012]; the Laplace docstring says its 4-uniform "
                  "sampler [HB21] protects against reconstruction attacks")


_DPL_GAUSS_DOC = ("Gaussian's docstring: its sampler (two normalvariate samples [HB21b]) protects against "
                  "reconstruction attacks due to limited floating-point precision; no caveat about the final addition")
_DPL_UNIFORM_DOC = ("Uniform's docstring: a special case of LaplaceBoundedNoise at epsilon = 0; it states no "
                    "floating-point caveat")


def _dpl(cls: str, attr: str, configuration: str, guarantee: Guarantee | None = None, **kw) -> Entry:
    g = guarantee or Guarantee(1.0, source=f"diffprivlib.mechanisms.{cls}(epsilon=1)")
    if not g.source:
        g = Guarantee(g.epsilon, g.delta, g.neighbouring, g.domain, f"diffprivlib.mechanisms.{cls}")
    return Entry("diffprivlib", f"mechanisms.{cls}", f"{_DPL}:{attr}", configuration, g, **kw)


_DPL_TOOLS = (
    ("mean", "replace", "LaplaceTruncated, sensitivity (upper - lower) / n"),
    ("nanmean", "replace", "LaplaceTruncated, sensitivity (upper - lower) / n"),
    ("var", "replace", "LaplaceBoundedDomain, sensitivity ((upper - lower) / n)^2 (n - 1)"),
    ("nanvar", "replace", "LaplaceBoundedDomain, sensitivity ((upper - lower) / n)^2 (n - 1)"),
    ("std", "replace", "square root of the private variance"),
    ("nanstd", "replace", "square root of the private variance"),
    ("sum", "replace", "LaplaceTruncated to [n lower, n upper], sensitivity upper - lower"),
    ("nansum", "replace", "LaplaceTruncated to [n lower, n upper], sensitivity upper - lower"),
    ("count_nonzero", "replace", "sum of the non-zero indicators, GeometricTruncated to [0, n]"),
    ("histogram", "add-remove", "bins=4, range=(0, 1); GeometricTruncated per bin, sensitivity 1"),
    ("median", "replace", "exponential mechanism over the gaps of the sorted records, then uniform in the gap"),
    ("quantile", "replace", "quant=0.25; exponential mechanism over the gaps, then uniform in the gap"),
    ("percentile", "replace", "percent=75; exponential mechanism over the gaps, then uniform in the gap"),
)
"""diffprivlib.tools entries: name, the relation its calibration assumes, how it is computed."""


def _tool(name: str, relation: str, how: str, attr: str | None = None, **kw) -> Entry:
    sizes = "1 to 10 records (n public)" if relation == "replace" else "0 to 10 records"
    g = Guarantee(1.0, neighbouring=relation, domain=f"records in [0, 1], {sizes}",
                  source=f"diffprivlib.tools.{name}(epsilon=1, bounds=(0, 1))")
    return Entry("diffprivlib", f"tools.{name}", f"dpaudit.mechanisms.catalogue.diffprivlib_tools:{attr or name}",
                 f"epsilon=1, bounds (0, 1) on records in [0, 1] ({how})", g, **kw)


_SUM_ADD_REMOVE_CAUSE = (
    "the configuration's relation, and an undocumented assumption of the library. diffprivlib's sum "
    "(tools/utils.py, _sum) truncates the noisy sum to [n * lower, n * upper] and calibrates the noise to "
    "upper - lower: both need n public, i.e. replace-one adjacency (the tools.sum row, audited under replace). "
    "Under add/remove n is private: D1 = D0 + one record at the upper bound releases values in "
    "(n * upper, (n + 1) * upper] (here the atom at exactly 2.0, probability about 0.18) that D0 never releases, "
    "so the privacy loss is unbounded. diffprivlib's documentation of sum states no neighbouring relation; a sum "
    "or count is often meant under add/remove, where this release is not DP. count_nonzero (sum of indicators, "
    "GeometricTruncated to [0, n]) has the same assumption")


_COUNT_NONZERO_ADD_REMOVE_CAUSE = (
    "the relation: count_nonzero (tools/utils.py) is sum of the non-zero indicators with bounds (0, 1), i.e. "
    "GeometricTruncated to [0, n]; under add/remove n is private and D1 = D0 + a non-zero record reaches n + 1, "
    "which D0 never releases")
_HISTOGRAM_REPLACE_CAUSE = (
    "the relation: histogram (tools/histograms.py) adds GeometricTruncated noise with sensitivity 1 to every bin, "
    "the add/remove sensitivity; replacing a record moves one count down and another up (L1 distance 2), so under "
    "replace-one the release is 2-DP, not 1-DP")


_ODP = "dpaudit.mechanisms.catalogue.opendp_measurements"
_ODP_SUM = "clamp((0, 1)) >> sum on floats"
_ODP_COUNT = "count of records (integer)"
_ODP_SCORES = "quantile_score_candidates(candidates 0, 1/4, ..., 1, alpha 1/2) >>"
_ODP_LOCAL = "one record's category (third of [0, 1]); any two inputs (DiscreteDistance, d_in 1)"
_ODP_ZCDP = ("rho-zCDP converted by OpenDP's make_zCDP_to_approxDP + make_fix_delta(1e-5); "
             "scale by binary_search_chain to map(1) <= (1, 1e-5)")
_ODP_FLOAT_DOC = ("make_laplace's docstring: internally, all sampling is done using the discrete Laplace "
                  "distribution (on a grid of 2^k, then rounded: OpenDP's answer to Mironov 2012)")


def _odp(constructor: str, attr: str, configuration: str, epsilon: float = 1.0, delta: float = 0.0,
         neighbouring: str = "add-remove", domain: str = "records in [0, 1], 0 to 10 records", **kw) -> Entry:
    """An OpenDP row: ``constructor`` of ``opendp.measurements`` as the target ``attr`` of
    :mod:`dpaudit.mechanisms.catalogue.opendp_measurements` builds it; the guarantee is the target's
    ``claim()`` (OpenDP's privacy map), calibrated to at most ``epsilon`` (and ``delta``)."""
    g = Guarantee(epsilon, delta, neighbouring, domain,
                  source=f"opendp.measurements.{constructor}: map(d_in) of the chain (target.claim())")
    return Entry("OpenDP", f"measurements.{constructor} ({attr})", f"{_ODP}:{attr}", configuration, g, **kw)


_OPENDP: tuple[Entry, ...] = (
    _odp("make_laplace", "laplace_sum", f"{_ODP_SUM} >> laplace; scale by binary_search_chain to map(1) <= 1",
         documented=_ODP_FLOAT_DOC),
    _odp("make_laplace", "laplace_mean",
         "clamp((0, 1)) >> mean on 5 floats >> laplace; map(2) <= 1 (replacing a record is distance 2)",
         neighbouring="replace", domain="records in [0, 1], exactly 5 records", documented=_ODP_FLOAT_DOC),
    _odp("make_laplace", "laplace_count", f"{_ODP_COUNT} >> laplace (discrete Laplace); map(1) <= 1"),
    _odp("make_geometric", "geometric", f"{_ODP_COUNT} >> geometric; map(1) <= 1"),
    _odp("make_geometric", "geometric_bounded", f"{_ODP_COUNT} >> geometric(bounds=(0, 10)) (constant time); "
         "map(1) <= 1"),
    _odp("make_gaussian", "gaussian_sum", f"{_ODP_SUM} >> gaussian; {_ODP_ZCDP}", delta=1e-5),
    _odp("make_gaussian", "gaussian_count", f"{_ODP_COUNT} >> gaussian (discrete Gaussian); {_ODP_ZCDP}", delta=1e-5),
    _odp("make_noise", "noise_sum", f"{_ODP_SUM} >> noise(max_divergence()); map(1) <= 1",
         documented=_ODP_FLOAT_DOC),
    _odp("make_laplace_threshold", "laplace_threshold",
         "count_by on the categories (thirds of [0, 1]) >> laplace_threshold(scale 1, threshold 12, the smallest "
         "with delta <= 1e-5); releases the counts of keys 0, 1, 2 (0: not released)",
         delta=4.5e-6, domain="records in [0, 1], 0 to 24 records"),
    _odp("make_noise_threshold", "noise_threshold",
         "as laplace_threshold, through noise_threshold(approximate(max_divergence()))",
         delta=4.5e-6, domain="records in [0, 1], 0 to 24 records"),
    _odp("make_gaussian_threshold", "gaussian_threshold",
         "counts per category as a hashmap (L02InfDistance, d_in (1, 1, 1): no transformation outside Polars "
         f"gives it) >> gaussian_threshold(threshold 20); {_ODP_ZCDP}; releases the counts of keys 0, 1, 2",
         delta=1e-5, domain="records in [0, 1], 0 to 24 records"),
    _odp("make_alp_queryable", "alp_queryable",
         "count_by on the categories >> alp_queryable(total_limit 10, value_limit 10); map(1) <= 1; releases the "
         "queryable's answers for keys 0, 1, 2"),
    _odp("make_canonical_noise", "canonical_noise",
         f"{_ODP_SUM} >> canonical_noise(d_in = the sum's map(1), d_out = (1, 1e-5)) (Tulap noise)", delta=1e-5),
    _odp("make_randomized_response", "randomized_response",
         f"categories 0, 1, 2, prob by binary search to map(1) <= 1, on {_ODP_LOCAL}",
         neighbouring="replace", domain="one record (any two inputs)"),
    _odp("make_randomized_response_bool", "randomized_response_bool",
         "prob by binary search to map(1) <= 1, on record >= 1/2; any two inputs",
         neighbouring="replace", domain="one record (any two inputs)"),
    _odp("make_randomized_response_bitvec", "randomized_response_bitvec",
         f"max_weight 1, f by binary search to map(1) <= 1, on the one-hot 8 bits of {_ODP_LOCAL}; releases 8 bits",
         neighbouring="replace", domain="one record (any two inputs)"),
    _odp("make_noisy_max", "noisy_max", f"{_ODP_SCORES} noisy_max(max_divergence()) (exponential noise); "
         "map(1) <= 1; releases the index"),
    _odp("make_noisy_max", "noisy_max_zcdp", f"{_ODP_SCORES} noisy_max(zero_concentrated_divergence()) (Gumbel "
         f"noise); {_ODP_ZCDP}", delta=1e-5),
    _odp("make_noisy_top_k", "noisy_top_k", f"{_ODP_SCORES} noisy_top_k(max_divergence(), k=2); map(1) <= 1; "
         "releases the two indices in order"),
    _odp("make_report_noisy_max_gumbel", "report_noisy_max_gumbel",
         f"{_ODP_SCORES} report_noisy_max_gumbel (deprecated since 0.14); map(1) <= 1"),
    _odp("make_private_quantile", "private_quantile",
         "median over candidates 0, 1/4, ..., 1, max_divergence(); map(1) <= 1; releases the candidate"),
)
"""The OpenDP rows: every measurement constructor of ``opendp.measurements`` that takes a dataset,
behind the transformations a user puts in front (``dpaudit.mechanisms.catalogue.opendp_measurements``)."""


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


_PYDP = "dpaudit.mechanisms.catalogue.pydp_algorithms"
_PYDP_DOC = ("PyDP 1.1.5 states no floating-point caveat; its noise is Google's LaplaceMechanism (the value rounded "
             "to a power-of-two granularity, a multiple of it added: Google's secure-noise design). PyDP's noise "
             "cannot be seeded: these rows are not reproducible from --seed")


def _pydp_entry(attr: str, cls: str, how: str, extra: str = "") -> Entry:
    """A PyDP row: ``pydp.algorithms.laplacian.cls`` as ``pydp_algorithms:attr``, claim 1-DP, add/remove."""
    args = "epsilon=1, dtype='float'" if cls == "Count" else \
        f"epsilon=1{extra}, lower_bound=0, upper_bound=1, dtype='float'"
    g = Guarantee(1.0, 0.0, "add-remove", "records in [0, 1], 0 to 10 records",
                  f"pydp.algorithms.laplacian.{cls}({args}).quick_result(x)")
    return Entry("PyDP", f"laplacian.{cls}", f"{_PYDP}:{attr}", f"{args}; {how}", g, documented=_PYDP_DOC)


_PYDP_ROWS: tuple[Entry, ...] = (
    _pydp_entry("count", "Count", "the number of records"),
    _pydp_entry("bounded_sum", "BoundedSum", "sum of the records clamped to [0, 1]"),
    _pydp_entry("bounded_mean", "BoundedMean", "noisy count and noisy sum of the records' offsets from the "
                "midpoint, clamped to [0, 1]"),
    _pydp_entry("bounded_variance", "BoundedVariance", "noisy count, sum and sum of squares; output clamped to [0, (upper - lower)^2]"),
    _pydp_entry("bounded_standard_deviation", "BoundedStandardDeviation", "square root of BoundedVariance"),
    _pydp_entry("max", "Max", "order statistic (Google's binary search over noisy counts)"),
    _pydp_entry("min", "Min", "order statistic"),
    _pydp_entry("median", "Median", "order statistic"),
    _pydp_entry("percentile", "Percentile", "order statistic", extra=", percentile=0.75"),
)
"""The PyDP rows (``dpaudit.mechanisms.catalogue.pydp_algorithms``): every algorithm of
``pydp.algorithms.laplacian``."""


REGISTRY: tuple[Entry, ...] = (
    _dpl("Laplace", "laplace", f"sensitivity 1 on the {_SUM}", documented=_DPL_FLOAT_DOC),
    _dpl("LaplaceTruncated", "laplace_truncated", f"sensitivity 1, bounds [0, 10], on the {_SUM}",
         documented=_DPL_FLOAT_DOC),
    _dpl("LaplaceFolded", "laplace_folded", f"sensitivity 1, bounds [0, 10], on the {_SUM}",
         documented=_DPL_FLOAT_DOC),
    _dpl("LaplaceBoundedDomain", "laplace_bounded_domain", f"sensitivity 1, bounds [0, 10], on the {_SUM}",
         documented=_DPL_FLOAT_DOC),
    _dpl("LaplaceBoundedNoise", "laplace_bounded_noise", f"delta 1e-5, sensitivity 1, on the {_SUM}",
         Guarantee(1.0, 1e-5), documented=_DPL_FLOAT_DOC),
    _dpl("Gaussian", "gaussian", f"delta 1e-5, sensitivity 1, on the {_SUM}", Guarantee(1.0, 1e-5),
         documented=_DPL_GAUSS_DOC),
    _dpl("GaussianAnalytic", "gaussian_analytic", f"delta 1e-5, sensitivity 1, on the {_SUM}",
         Guarantee(1.0, 1e-5), documented=_DPL_GAUSS_DOC + " (GaussianAnalytic is a subclass of Gaussian)"),
    _dpl("GaussianDiscrete", "gaussian_discrete", f"delta 1e-5, sensitivity 1, on the {_COUNT}",
         Guarantee(1.0, 1e-5)),
    _dpl("Geometric", "geometric", f"sensitivity 1 on the {_COUNT}"),
    _dpl("GeometricTruncated", "geometric_truncated", f"sensitivity 1, bounds [0, 10], on the {_COUNT}"),
    _dpl("GeometricFolded", "geometric_folded", f"sensitivity 1, bounds [0, 10], on the {_COUNT}"),
    _dpl("Exponential", "exponential",
         "3 candidates, utilities = counts of records in each third of [0, 1] (sensitivity 1, monotonic); "
         "releases the candidate's index"),
    _dpl("PermuteAndFlip", "permute_and_flip",
         "3 candidates, utilities = counts of records in each third of [0, 1] (sensitivity 1, monotonic); "
         "releases the candidate's index"),
    _dpl("ExponentialCategorical", "exponential_categorical",
         "categories A, B, C with utilities A-B 1, A-C 2, B-C 1, on one record's category", _LOCAL),
    _dpl("ExponentialHierarchical", "exponential_hierarchical",
         "hierarchy [[A, B], [C]], on one record's category", _LOCAL),
    _dpl("Binary", "binary", "values 'no'/'yes' (record >= 1/2), randomised response on one record", _LOCAL),
    _dpl("Snapping", "snapping", f"sensitivity 1, bounds [0, 10], on the {_SUM}"),
    _dpl("Staircase", "staircase", f"sensitivity 1 (default gamma), on the {_SUM}",
         documented=_DPL_FLOAT_DOC + " (Staircase is a subclass of Laplace)"),
    _dpl("Uniform", "uniform", f"delta 0.1, sensitivity 1, on the {_SUM}: noise uniform on a window of width 10",
         Guarantee(0.0, 0.1), documented=_DPL_UNIFORM_DOC),
    _dpl("Bingham", "bingham",
         "sensitivity 1 on X^T X of 2-D records of norm <= 1 (diffprivlib's PCA: data_norm**2); "
         "releases the unit vector, sign fixed",
         Guarantee(1.0, domain="2-D records in [-0.707, 0.707]^2, 0 to 10 records")),
    *(_tool(name, relation, how) for name, relation, how in _DPL_TOOLS),
    _tool("sum", "add-remove", "as tools.sum, audited under add/remove", attr="sum_add_remove",
          cause=_SUM_ADD_REMOVE_CAUSE),
    _tool("mean", "add-remove", "as tools.mean, audited under add/remove (1 to 10 records)", attr="mean_add_remove"),
    _tool("count_nonzero", "add-remove", "as tools.count_nonzero, audited under add/remove",
          attr="count_nonzero_add_remove", cause=_COUNT_NONZERO_ADD_REMOVE_CAUSE),
    _tool("histogram", "replace", "as tools.histogram, audited under replace-one: a replaced record moves two bins",
          attr="histogram_replace", cause=_HISTOGRAM_REPLACE_CAUSE),
    *(Entry("diffprivlib", f"tools.{name}", f"dpaudit.mechanisms.catalogue.diffprivlib_tools:{name}",
            f"epsilon=1, bins=2, range=((0, 1), (0, 1)) on 2-D records in [0, 1]^2 ({call}; GeometricTruncated "
            "per cell, sensitivity 1; the 4 cells released flattened)",
            Guarantee(1.0, domain="2-D records in [0, 1]^2, 0 to 10 records",
                      source=f"diffprivlib.tools.{name}(epsilon=1, bins=2, range=((0, 1), (0, 1)))"))
      for name, call in (("histogram2d", "x and y the two columns"), ("histogramdd", "the records as the sample"))),
    Entry("diffprivlib", "mechanisms.Vector", None,
          "objective perturbation (Chaudhuri et al. 2011) of a convex loss", None,
          not_auditable="randomise() returns a perturbed objective function, not a number; its guarantee is for "
                        "the minimiser of that function under the convexity and smoothness conditions of Chaudhuri "
                        "et al. (2011), so it is audited through a model that minimises it "
                        "(diffprivlib.models.LogisticRegression), not alone"),
    *_OPENDP,
    *_PIPELINEDP,
    *_PYDP_ROWS,
)
"""Every entry of the table, in the order it is printed."""

LEFT_OUT = {
    "diffprivlib": {},
    "OpenDP": {
        "measurements.make_private_expr, make_private_lazyframe": "Polars query plans (Polars is not installed "
        "with dpaudit's OpenDP extra); their noise is added by make_noise and make_noise_threshold, audited here",
        "measurements.make_user_measurement": "a measurement from the user's own function and privacy map "
        "(feature honest-but-curious): its guarantee is the user's claim, not OpenDP's",
        "measurements.make_proof_link": "not a measurement: it returns the link to a proof document (a string)",
    },
    "PipelineDP": {
        "DPEngine.calculate_private_contribution_bounds, the PLD accountant, custom combiners, "
        "post-aggregation thresholding, private_beam / private_spark": "not in the registry: the first releases "
        "bounds for a later aggregation (not an aggregation itself), the PLD accountant and thresholding are other "
        "budget/selection options of the same metrics, custom combiners are the user's code, and the Beam and "
        "Spark wrappers run the same DPEngine on other backends (the rows use the local backend)",
        "add_dp_noise, weighted Gaussian thresholding, the PLD accountant's output": "not in the registry yet "
        "(issue 36 item 6)",
    },
    "Not yet audited": {
        "diffprivlib.models (LogisticRegression, LinearRegression, GaussianNB, KMeans, PCA, RandomForestClassifier, "
        "StandardScaler)": "not in the registry yet (issue 36 item 6): to be audited through their fitted parameters",
        "OpenDP's Polars API (make_private_lazyframe)": "Polars is not installed here (issue 36 item 6)",
        "PyDP's other modules (pydp.algorithms.numerical_mechanisms, partition_selection, quantile_tree)": "not in "
        "the registry yet: the Laplace and Gaussian mechanisms and partition selection are audited through "
        "PipelineDP's rows, which call them",
    },
    "Left out (does not install here)": {
        "SmartNoise SQL (smartnoise-sql 1.0.10)": "`pip install --dry-run smartnoise-sql` would install opendp 0.14.2, "
        "a downgrade of the opendp 0.16.0 the OpenDP rows audit (smartnoise-sql pins opendp<0.15), and pandas",
        "SmartNoise Synth (smartnoise-synth 1.0.8)": "`pip install --dry-run smartnoise-synth` would downgrade opendp "
        "0.16.0 to 0.14.2 (through smartnoise-sql) and opacus 1.6.0 to 0.14.0",
        "Tumult Analytics (tmlt.analytics 0.21.0)": "`pip install --dry-run tmlt.analytics` would downgrade numpy "
        "2.4.6 to 1.26.4 and sympy 1.14.0 to 1.12.1 (and would install pandas 1.5.3 and pyspark 3.5.9, which also needs a "
        "Java runtime)",
    },
}
"""Parts of the scope with no entry yet, and why; printed under the tables."""

NOTES = {
    "OpenDP": "`opendp.measurements` 0.16.0 has 20 `make_` constructors: the 16 that take a dataset have rows "
              "(21 rows: several transformations in front of make_laplace, make_geometric, make_gaussian, "
              "make_noisy_max), the other 4 are listed under Left out. Claims are OpenDP's own: each row's guarantee is the privacy map of the chain as built "
              "(`target.claim()` in `dpaudit.mechanisms.catalogue.opendp_measurements`), with scales calibrated by OpenDP's "
              "binary search to epsilon <= 1; zCDP measurements (Gaussian, noisy max with Gumbel noise, Gaussian "
              "threshold) are converted by OpenDP's `make_zCDP_to_approxDP` and `make_fix_delta(1e-5)`. OpenDP "
              "draws its noise from the operating system and cannot be seeded: `--seed` replays the pairs "
              "tested, not the outputs, so a rerun gives another epsilon lower bound (e.g. `make_laplace_threshold` "
              "and `make_noise_threshold`, the same measurement, gave 0.91 and 0 in one run each) and a verdict "
              "near the threshold could flip; the reruns below count how often exact rows are accused.",
    "PyDP": "python-dp 1.1.5 wraps Google's C++ algorithms (compiled into `pydp/_pydp.so`; the C++ source is not "
            "in the wheel, so what is said here about them is measured, the Python wrappers are read): every class of "
            "`pydp.algorithms.laplacian` has a row (`dpaudit.mechanisms.catalogue.pydp_algorithms`), built as "
            "`Class(epsilon=1, lower_bound=0, upper_bound=1, dtype='float')` with PyDP's defaults (delta 0, "
            "l0_sensitivity 1, linf_sensitivity 1), one output = one `quick_result(records)` of a fresh object "
            "(`MetaAlgorithm.quick_result`, pydp/algorithms/_algorithm.py: it resets the budget first). The wrapper "
            "rejects NaN or infinite bounds (`__check_input` raises ValueError), not NaN records: measured on 3,000 "
            "runs each, the bounded algorithms ignore NaN records (BoundedSum, BoundedMean and Median on five NaN "
            "records give the outputs of the empty dataset: means 0.000, 0.504, 0.498 vs 0.007, 0.498, 0.494), clamp "
            "+inf to the upper bound, and Count counts a NaN record as a record; so no adversarial input leaked. "
            "PyDP's noise cannot be seeded: the rows are not reproducible from --seed.",
}
"""A note printed under a library's heading (how its rows are built and read)."""


# ---------------------------------------------------------------------------------------------
# Relations, causes, leak sizes, adversarial inputs, power
# ---------------------------------------------------------------------------------------------

_DPL_NO_RELATION = "no diffprivlib 0.6.6 docstring names a neighbouring relation"
_ODP_CONTRIBUTIONS = ('input metric SymmetricDistance at d_in {d}: "Greatest number of records or identifiers a '
                      'privacy unit may contribute to microdata" (opendp/context.py, unit_of, contributions)')
_PDP_UNIT = ('add/remove of a privacy unit: "max_partitions_contributed: A bound on the number of partitions to which '
             'one unit of privacy (e.g., a user) can contribute" (pipeline_dp/aggregate_params.py, AggregateParams); '
             'no relation is named, and the noise is calibrated to one unit\'s bounded contributions '
             '(l0 * linf), the add/remove sensitivity')


def relation_note(entry: Entry) -> str:
    """Where ``entry``'s relation comes from: ``"documented: <the library's words> (<source>)"`` or
    ``"inferred: <what it is read from>"`` (:attr:`Entry.relation_note` when set)."""
    if entry.relation_note or entry.guarantee is None:
        return entry.relation_note
    rel = entry.guarantee.neighbouring
    if entry.library == "diffprivlib":
        if entry.name.startswith("tools."):
            tool = entry.name.split(".", 1)[1]
            assumed = next((r for n, r, _ in _DPL_TOOLS if n == tool), rel)
            why = " (its sensitivity or truncation uses n, so n is public)" if assumed == "replace" else \
                " (one record moves one bin by one)"
            if assumed != rel:
                return (f"inferred: {_DPL_NO_RELATION}; the calibration assumes {assumed}{why}; this row audits the "
                        f"other relation, {rel}, which a user may mean")
            return (f"inferred: {_DPL_NO_RELATION}; {rel} is what the calibration assumes{why}; "
                    "sum, mean, count_nonzero and histogram are audited under the other relation too")
        if rel == "replace":
            return f"inferred: {_DPL_NO_RELATION}; a local randomiser's guarantee is for any two inputs"
        return (f"inferred: {_DPL_NO_RELATION}; a mechanism is private for inputs at most `sensitivity` apart, so "
                "the relation is the query's (here add/remove, under which the sum or count moves by at most 1)")
    if entry.library == "OpenDP":
        if rel == "replace" and "mean" in entry.target:
            return "documented: " + _ODP_CONTRIBUTIONS.format(d=2) + "; a replaced record is 2 contributions"
        if rel == "replace":
            return "documented: input metric DiscreteDistance at d_in 1 (the measurement's own input metric): any two inputs"
        return "documented: " + _ODP_CONTRIBUTIONS.format(d=1)
    if entry.library == "PipelineDP":
        return "inferred: " + _PDP_UNIT
    if entry.library == "PyDP":
        return ("inferred: no PyDP 1.1.5 docstring names a neighbouring relation; the algorithms take "
                "l0_sensitivity and linf_sensitivity (default 1), bounds on one privacy unit's contributions, and "
                "count the records with noise (no public n): the add/remove calibration, one record = one unit")
    return ""


_MIRONOV = ("the set of doubles the outputs take depends on the input (Mironov 2012): {how}, so the output's low "
            "bits carry the true value (outputs near 0 are on the noise's fine grid for a true value 0, on the "
            "coarser grid of the noise near -1 for a true value 1). The claim may hold in exact arithmetic")
FLOAT_CAUSES = {
    "laplace": "mechanisms/laplace.py: Laplace.randomise returns value - scale * standard_laplace in float64",
    "laplace_truncated": "mechanisms/laplace.py: LaplaceTruncated.randomise truncates Laplace.randomise's value - "
                         "scale * standard_laplace (float64) to the bounds",
    "laplace_folded": "mechanisms/laplace.py: LaplaceFolded.randomise folds Laplace.randomise's float64 value - scale "
                      "* standard_laplace into the bounds",
    "laplace_bounded_domain": "mechanisms/laplace.py: LaplaceBoundedDomain.randomise returns value + scale * "
                              "laplace_sampler(...) in float64 (resampled until inside the domain)",
    "laplace_bounded_noise": "mechanisms/laplace.py: LaplaceBoundedNoise.randomise adds the bounded float64 noise "
                             "to the value",
    "gaussian": "mechanisms/gaussian.py: Gaussian.randomise returns value + standard_normal * scale in float64",
    "gaussian_analytic": "mechanisms/gaussian.py: GaussianAnalytic inherits Gaussian.randomise (value + "
                         "standard_normal * scale, float64)",
    "staircase": "mechanisms/staircase.py: Staircase.randomise returns value + sign * (...) * sensitivity in float64",
    "uniform": "mechanisms/uniform.py: Uniform.randomise returns value + unif_rv in float64",
    "mean": "tools/utils.py: mean releases LaplaceTruncated.randomise(the float mean)",
    "nanmean": "tools/utils.py: nanmean releases LaplaceTruncated.randomise(the float mean)",
    "sum": "tools/utils.py: _sum releases LaplaceTruncated.randomise(the float sum)",
    "nansum": "tools/utils.py: _sum releases LaplaceTruncated.randomise(the float sum)",
    "var": "tools/utils.py: _var releases LaplaceBoundedDomain.randomise(the float variance)",
    "nanvar": "tools/utils.py: _var releases LaplaceBoundedDomain.randomise(the float variance)",
}
"""The library code each diffprivlib floating-point leak comes from (diffprivlib 0.6.6, read in the
installed package)."""

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
    """The cause of ``entry``'s floating-point leak, read from the library's source."""
    attr = entry.target.rsplit(":", 1)[1] if entry.target else ""
    if entry.library == "PipelineDP" and "gaussian" in attr:
        return PYDP_GAUSSIAN_CAUSE
    if attr in FLOAT_CAUSES:
        return _MIRONOV.format(how=FLOAT_CAUSES[attr]) + "; a snapping mechanism or an exact sampler removes the leak"
    return _MIRONOV.format(how="the release is the true value plus noise rounded to float64")


_DPL_FLOAT_KNOWN = ("known: Mironov 2012 (the attack), and IBM/differential-privacy-library#19 'Floating-point privacy "
                    "vulnerabilities' (closed by #47, which secured the samplers with four uniforms; the final "
                    "float64 addition, the leak sized here, is unchanged in 0.6.6; Snapping was added as the fix)")
RECORD = {
    **{f"diffprivlib.{k}": _DPL_FLOAT_KNOWN for k in FLOAT_CAUSES},
    "diffprivlib.mean_add_remove": _DPL_FLOAT_KNOWN,
    "diffprivlib.sum_add_remove": "relation-dependent, not a bug under the replace-one relation diffprivlib's "
                                  "calibration assumes; no diffprivlib docstring states the relation (not found in its "
                                  "tracker as a report)",
    "diffprivlib.count_nonzero_add_remove": "relation-dependent, as tools.sum under add/remove",
    "diffprivlib.histogram_replace": "relation-dependent: 2-DP under replace-one, 1-DP under the add/remove its "
                                     "calibration assumes; no docstring states which",
    "pipelinedp.count_gaussian": "candidate new: not found in the PipelineDP, PyDP or google/differential-privacy "
                                 "trackers searched (the Gaussian's binomial grid finer than the doubles). Jin et al. "
                                 "(S&P 2022) attack floating-point Gaussian samplers in general; whether they cover "
                                 "Google's binomial sampler was not checked, nor the Re:cord-play record",
    "pipelinedp.vector_sum_public": "candidate new (a crash, not a privacy leak): not found in the PipelineDP tracker "
                                    "searched; VectorSumCombiner.create_accumulator clips per contribution since "
                                    "OpenMined/PipelineDP#556 (fixing #551), and its empty public partitions then clip "
                                    "None",
    "pipelinedp.count_bounds_enforced": "a documented misuse, kept as a row on purpose",
}
"""Each finding against the record: known (with the reference), relation-dependent, or a candidate new
finding (searched for in the library's tracker; the published record, Re:cord-play (PoPETs 2026),
was not available to check)."""
for _k in ("privacy_id_count_gaussian", "sum_gaussian", "vector_sum_gaussian"):
    RECORD[f"pipelinedp.{_k}"] = RECORD["pipelinedp.count_gaussian"] + " (same cause as Metrics.COUNT, Gaussian)"
ADVERSARIAL_RECORD = {
    "diffprivlib": "known: IBM/differential-privacy-library#80 'Handling of NaNs' (open): a NaN record makes most "
                   "tools release NaN, a distinguishing event (np.clip keeps NaN, tools/utils.py)",
    "PipelineDP": "candidate new: a unit's NaN value makes SUM, MEAN and VARIANCE release NaN for its partition, "
                  "every time: their combiners' create_accumulator (pipeline_dp/combiners.py: SumCombiner, "
                  "MeanCombiner, VarianceCombiner) clip with np.clip, which keeps NaN, and PyDP adds noise to NaN. Not found in the PipelineDP tracker searched; "
                  "google/differential-privacy#405 (open) reports NaN passing ClampFloat64 in Google's Go library, "
                  "a different code path. Reproducers: reproducers/pipelinedp_sum_laplace_nan.py, pipelinedp_mean_laplace_nan.py, "
                  "pipelinedp_variance_laplace_nan.py, pipelinedp_sum_gaussian_nan.py, pipelinedp_mean_gaussian_nan.py, "
                  "pipelinedp_variance_gaussian_nan.py",
}
"""The record of the adversarial-input findings, per library."""


LEAK_SAMPLES = 20000
"""Outputs per dataset drawn to size a leak (half choose the set, half count it)."""


def _dataset(records) -> "np.ndarray":
    import numpy as np  # noqa: PLC0415

    arr = np.asarray(records if records is not None else [], dtype=float)
    return arr.reshape(len(arr), -1) if arr.size else arr.reshape(0, 1)


def size_leak(entry: Entry, witness: dict, *, samples: int = LEAK_SAMPLES, seed: int = 0, beta: float = 0.01) -> dict:
    """Size the leak of a floating-point or distributional finding on its witness pair.

    Draws ``samples`` outputs of the target on each dataset of ``witness`` (in this process) and
    certifies the largest float grid set (:func:`dpaudit.audit.leak_size.size_float_leak`) or range
    (:func:`~dpaudit.audit.leak_size.size_range_leak`) one side reaches and the other does not
    (confidence ``1 - beta``, split between the two).

    Returns
    -------
    dict
        ``samples``, ``seconds``, and, when a set was found, ``leak`` (the LeakSize fields),
        ``delta_at_claim`` (the certified delta at the claimed epsilon), ``epsilon_horizon`` (every
        epsilon up to it fails at the claimed delta) and ``text`` (one sentence).
    """
    import numpy as np  # noqa: PLC0415

    import dataclasses  # noqa: PLC0415

    from dpaudit.audit.leak_size import size_float_leak, size_range_leak  # noqa: PLC0415
    from dpaudit.audit.targets import load_target  # noqa: PLC0415
    from dpaudit.mechanisms.base import draw  # noqa: PLC0415

    mech, _ = load_target(entry.target)
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    y0 = draw(mech, _dataset(witness.get("d0")), samples, rng)
    y1 = draw(mech, _dataset(witness.get("d1")), samples, rng)
    g = entry.guarantee
    # a float grid or a range one side misses: each at beta / 2, the better one reported
    found = [lk for lk in (size_float_leak(y0, y1, beta=beta / 2, epsilon=g.epsilon),
                           size_range_leak(y0, y1, beta=beta / 2, epsilon=g.epsilon)) if lk is not None]
    leak = max(found, key=lambda lk: lk.delta_lower(g.epsilon), default=None)
    if leak is not None:
        leak = dataclasses.replace(leak, beta=beta)
    out = {"samples": samples, "seed": seed, "seconds": round(time.perf_counter() - t0, 1)}
    if leak is not None:
        out.update(leak=leak.to_dict(), delta_at_claim=leak.delta_lower(g.epsilon),
                   epsilon_horizon=leak.epsilon_horizon(g.delta), text=leak.describe(g.epsilon, g.delta))
    return out


ADVERSARIAL_SAMPLES = 1000
"""Outputs per dataset per adversarial input (:func:`dpaudit.audit.adversarial.screen`)."""


def screen_entry(entry: Entry, *, samples: int = ADVERSARIAL_SAMPLES, float_grids: bool = True) -> dict:
    """Run the adversarial-values stage on ``entry``'s target (in this process).

    Returns
    -------
    dict
        ``samples``, ``seconds``, ``accepts`` (the target's declared note) and ``results`` (one
        :class:`dpaudit.audit.adversarial.ScreenResult` dict per input tried).
    """
    from dpaudit.audit.adversarial import screen  # noqa: PLC0415
    from dpaudit.audit.targets import load_target  # noqa: PLC0415

    mech, _ = load_target(entry.target)
    g = entry.guarantee
    t0 = time.perf_counter()
    results = screen(mech, epsilon=g.epsilon, delta=g.delta, samples=samples, beta=BETA, seed=entry.budget.seed,
                     float_grids=float_grids)
    accepts = getattr(mech, "accepts", None)
    return {"samples": samples, "seconds": round(time.perf_counter() - t0, 1),
            "accepts": getattr(accepts, "note", "") or "every kind (no declaration)",
            "results": [r.to_dict() for r in results]}


_GAUSS_POWER = (
    "missed at 20,000 x 3. Each twin is (1.48, 1e-5)-DP by OpenDP's own map (scale 2.83 = 0.7 x 4.05). Computed "
    "for the continuous Gaussian of that scale (the count's discrete Gaussian has the same scale), not run: an oracle test that knows the best threshold set {y > t} for the pair (sum 0 vs 1) and sees the "
    "expected counts certifies, with Clopper-Pearson bounds at beta 0.01, epsilon >= 0.50 on 10,000 held-out "
    "outputs per dataset (the row's budget; the audit's 0.50 and 0.48 match it), 0.78 on 10^5, 1.01 on 10^6 and "
    "1.10 on 3 x 10^6 (at beta 0.01/15, split over testers and trials: 0.96 on 10^6, 1.06 on 3 x 10^6): catching "
    "this planted leak needs about 2 x 10^6 to 6 x 10^6 samples per dataset, 100 to 300 times the row's budget, "
    "because at delta 1e-5 the certified set must be rare")
POWER_NOTES = {"opendp.gaussian_sum": _GAUSS_POWER, "opendp.gaussian_count": _GAUSS_POWER}
"""Rows whose power was computed beside the run: key -> what budget would catch the planted leak."""

POWER_SKIPPED: dict = {}
"""Rows with a planted twin whose power stage was left out on purpose: key -> why."""


def planted_target(entry: Entry) -> str | None:
    """The planted-leak twin of ``entry``'s target (:mod:`dpaudit.mechanisms.catalogue.planted`), or None."""
    from dpaudit.mechanisms.catalogue import planted  # noqa: PLC0415

    return planted.TARGETS.get(entry.target or "")


def power_entry(entry: Entry, *, processes: str = "1", timeout: float | None = None, samples: int | None = None,
                trials: int | None = None) -> dict | None:
    """Audit the planted-leak twin of ``entry`` at ``entry``'s budget and claim: caught or not.

    Parameters
    ----------
    samples, trials : int, optional
        A smaller twin budget than the row's (where the row's is too expensive for the CPU at hand);
        stored with the record as ``budget`` and stated in the table: a catch at a smaller budget
        is a catch, a miss there is not comparable to the row's budget (:func:`_fmt_power`).

    Returns
    -------
    dict or None
        The :func:`run_audit` summary of the planted target plus ``target``, ``caught`` (a
        violation or floating-point leak was reported) and ``budget`` (``samples``, ``trials``);
        None when the entry has no twin.
    """
    twin = planted_target(entry)
    if twin is None:
        return None
    budget = replace(entry.budget, samples=samples or entry.budget.samples, trials=trials or entry.budget.trials)
    row = run_audit(replace(entry, target=twin, budget=budget), processes=processes, timeout=timeout)
    row["target"] = twin
    row["caught"] = row["outcome"] in ("violation", "floating-point leak")
    row["budget"] = {"samples": budget.samples, "trials": budget.trials}
    return row


def power_budget_note(entry: Entry, power: dict) -> str:
    """The words a power result carries when its twin ran at a smaller budget than the row's ("" otherwise)."""
    b = power.get("budget") or {}
    samples, trials = b.get("samples", entry.budget.samples), b.get("trials", entry.budget.trials)
    if (samples, trials) == (entry.budget.samples, entry.budget.trials):
        return ""
    return f"at {samples:,} x {trials}, a smaller budget than the row's {entry.budget.samples:,} x {entry.budget.trials}"


REPRODUCERS = ROOT / "reproducers"
"""One standalone script per non-pass row (``reproducers/<key>.py``, library and NumPy only)."""


def reproducer_path(entry: Entry) -> Path:
    """Where ``entry``'s reproducer lives (it may not exist)."""
    return REPRODUCERS / (entry.key.replace(".", "_") + ".py")


def adversarial_reproducer_path(entry: Entry, kind: str) -> Path:
    """Where the reproducer of ``entry``'s leak on the adversarial input ``kind`` lives (it may not exist)."""
    word = {"-": "minus_", "+": "plus_"}.get(kind[:1], "") + kind.lstrip("+-")
    return REPRODUCERS / (entry.key.replace(".", "_") + f"_{word.replace('-', '_').replace('^', '')}.py")


# ---------------------------------------------------------------------------------------------
# Running and classifying
# ---------------------------------------------------------------------------------------------


def library_version(library: str) -> str:
    """The installed version of ``library`` (a key of :data:`PACKAGES`), or ``"not installed"``."""
    try:
        return importlib.metadata.version(PACKAGES.get(library, library))
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def classify(exit_code: int | None, result: dict | None, not_auditable: str | None = None) -> str:
    """The outcome of one audit, one of :data:`OUTCOMES`.

    Parameters
    ----------
    exit_code : int or None
        Exit code of ``dpaudit test`` (0 pass, 1 violation, 2 bad input or failing mechanism,
        3 inconclusive, 4 internal error); None when the entry was not run.
    result : dict or None
        Its ``--json`` result; the ``violation_kind`` field (``"floating-point"`` or
        ``"distributional"``) tells the two kinds of violation apart.
    not_auditable : str or None
        The entry's reason for not being auditable; when given the outcome is ``"not auditable"``.

    Returns
    -------
    str

    Raises
    ------
    ValueError
        If the exit code and the result disagree (exit 1 without a violation, or a violation with
        another exit code) or the exit code is unknown.
    """
    if not_auditable:
        return "not auditable"
    if exit_code in (2, 4) or exit_code is None:
        return "error"
    violation = bool(result and result.get("violation"))
    if exit_code == 1 or violation:
        if not (exit_code == 1 and violation):
            raise ValueError(f"exit code {exit_code!r} and result violation={violation!r} disagree")
        kind = result.get("violation_kind")
        if kind == "floating-point":
            return "floating-point leak"
        if kind == "distributional":
            return "violation"
        raise ValueError(f"unknown violation_kind {kind!r}")
    if exit_code == 3:
        return "inconclusive"
    if exit_code == 0:
        return "pass"
    raise ValueError(f"unknown exit code {exit_code!r}")


def run_audit(entry: Entry, *, seed: int | None = None, samples: int | None = None, processes: str = "1",
              timeout: float | None = None) -> dict:
    """Run one ``dpaudit test`` of ``entry`` in a fresh process and summarise it.

    Parameters
    ----------
    entry : Entry
        An auditable entry.
    seed, samples : int, optional
        Override the budget's seed and samples (the confirmation run).
    processes : str
        ``--processes`` of the run.
    timeout : float, optional
        Seconds before the run is killed (then the outcome is ``"error"``).

    Returns
    -------
    dict
        ``outcome`` (:func:`classify`), ``exit_code``, ``command`` (the reproduce command),
        ``seed``, ``samples``, ``seconds`` (wall time of the process), and from the JSON result
        ``epsilon_lower_bound``, ``witness`` (the strongest trial's pair and direction), ``tester``,
        ``note``, ``trials_run``, ``audit_seconds``; ``message`` on an error.
    """
    cmd = entry.command(seed, samples)
    src = str(ROOT / "src")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p))
    argv = [sys.executable, "-m", "dpaudit", *cmd[1:], "--json", "--quiet", "--processes", processes]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout, check=False)
        code, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired:
        code, out, err = None, "", f"killed after {timeout} s"
    seconds = time.perf_counter() - t0
    try:
        result = json.loads(out) if out.strip() else None
    except json.JSONDecodeError:
        result = None
    row = {"outcome": classify(code, result), "exit_code": code, "command": " ".join(cmd),
           "seed": int(cmd[cmd.index("--seed") + 1]), "samples": int(cmd[cmd.index("--samples") + 1]),
           "seconds": round(seconds, 1)}
    if row["outcome"] == "error":
        row["message"] = (err.strip().splitlines() or ["no output"])[-1][:300]
        return row
    ev = result.get("evidence") or {}
    pair = ev.get("pair") or {}
    row.update({
        "epsilon_lower_bound": ev.get("epsilon_lower_bound"),
        "witness": {"d0": pair.get("d0"), "d1": pair.get("d1"), "direction": ev.get("direction")} if pair else None,
        "tester": ev.get("tester"), "note": ev.get("note"), "trials_run": result.get("trials_run"),
        "audit_seconds": round(float(result.get("wall_seconds") or 0.0), 1),
    })
    return row


def audit_entry(entry: Entry, *, processes: str = "1", timeout: float | None = None) -> dict:
    """Audit ``entry`` at its budget; a violation is run again (seed + 1, twice the samples).

    Returns
    -------
    dict
        The cache record: ``key``, ``fingerprint``, ``verdict`` (the outcome, or ``"unconfirmed"``
        when the second run of a violation did not find the same kind), ``first`` and, for a
        violation, ``confirm`` (each a :func:`run_audit` summary), ``ran_at``.
    """
    record = {"key": entry.key, "fingerprint": entry.fingerprint(), "ran_at": time.strftime("%Y-%m-%d %H:%M")}
    if entry.not_auditable:
        record["verdict"] = "not auditable"
        return record
    first = run_audit(entry, processes=processes, timeout=timeout)
    record["first"], record["verdict"] = first, first["outcome"]
    if first["outcome"] in ("violation", "floating-point leak"):
        confirm = run_audit(entry, seed=entry.budget.seed + 1, samples=2 * entry.budget.samples,
                            processes=processes, timeout=timeout)
        record["confirm"] = confirm
        if confirm["outcome"] != first["outcome"]:
            record["verdict"] = "unconfirmed"
    return record


BETA = 0.01
"""False-positive rate of one audit (``dpaudit test``'s default ``--beta``): a correct mechanism is
accused by one run with probability at most BETA."""


def summarise_reruns(outcomes, beta: float = BETA) -> dict:
    """Whether K audits of one entry accuse it more often than their false-positive rate allows.

    Each run of a correct mechanism reports a violation (or floating-point leak) with probability
    at most ``beta``, independently (fresh seeds; OpenDP's noise is fresh anyway), so the number
    of accusations is at most Binomial(K, beta) in distribution. The p-value is
    ``P(Binomial(K, beta) >= accusations)``; the entry is accused *beyond beta* when it is below
    0.01 (e.g. 2 accusations in 10 runs at beta 0.01).

    Parameters
    ----------
    outcomes : sequence of str
        The outcomes of the K runs (:func:`classify`).
    beta : float
        The false-positive rate of one run.

    Returns
    -------
    dict
        ``k``, ``accusations`` (violations and floating-point leaks), ``errors`` (errors and
        inconclusive runs), ``beta``, ``p_value`` and ``verdict``: ``"within beta"``,
        ``"beyond beta"``, or ``"errors"`` when a run could not be classified as pass or accusation.

    Raises
    ------
    ValueError
        If there are no outcomes, an outcome is unknown or beta is not in (0, 1).
    """
    outcomes = list(outcomes)
    if not outcomes:
        raise ValueError("no reruns to summarise")
    if not 0.0 < beta < 1.0:
        raise ValueError(f"beta must be in (0, 1), got {beta!r}")
    unknown = set(outcomes) - set(OUTCOMES)
    if unknown:
        raise ValueError(f"unknown outcomes {sorted(unknown)}")
    k = len(outcomes)
    accused = sum(o in ("violation", "floating-point leak") for o in outcomes)
    errors = sum(o in ("error", "inconclusive", "not auditable") for o in outcomes)
    p_value = sum(math.comb(k, i) * beta ** i * (1 - beta) ** (k - i) for i in range(accused, k + 1))
    verdict = "errors" if errors else ("beyond beta" if p_value < 0.01 else "within beta")
    return {"k": k, "accusations": accused, "errors": errors, "beta": beta, "p_value": min(1.0, p_value),
            "verdict": verdict}


def rerun_entry(entry: Entry, k: int, *, samples: int | None = None, trials: int | None = None,
                processes: str = "1", timeout: float | None = None) -> dict:
    """Audit ``entry`` ``k`` times with seeds ``seed, ..., seed + k - 1`` and count the accusations.

    Parameters
    ----------
    entry : Entry
        An auditable entry (meant for one whose guarantee holds exactly).
    k : int
        Number of runs, >= 1.
    samples, trials : int, optional
        The budget of every run (default: the entry's).
    processes : str
        ``--processes`` of each run.
    timeout : float, optional
        Seconds before one run is killed.

    Returns
    -------
    dict
        The :func:`summarise_reruns` fields, plus ``key``, ``fingerprint`` (the entry's, with the
        rerun budget), ``samples``, ``trials``, ``seeds``, ``outcomes``, ``epsilon_lower_bounds``,
        ``seconds`` (total wall time), ``ran_at``.

    Raises
    ------
    ValueError
        If ``k < 1`` or the entry is not auditable.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k!r}")
    if entry.not_auditable:
        raise ValueError(f"{entry.key} is not auditable")
    budget = replace(entry.budget, samples=samples or entry.budget.samples, trials=trials or entry.budget.trials)
    small = replace(entry, budget=budget)
    runs = [run_audit(small, seed=budget.seed + i, processes=processes, timeout=timeout) for i in range(k)]
    record = {"key": entry.key, "fingerprint": small.fingerprint(), "samples": budget.samples,
              "trials": budget.trials, "seeds": [r["seed"] for r in runs], "outcomes": [r["outcome"] for r in runs],
              "epsilon_lower_bounds": [r.get("epsilon_lower_bound") for r in runs],
              "seconds": round(sum(r["seconds"] for r in runs), 1), "ran_at": time.strftime("%Y-%m-%d %H:%M")}
    record.update(summarise_reruns(record["outcomes"]))
    return record


# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------


def _fmt_eps(value) -> str:
    if value is None:
        return "-"
    value = float(value)
    return "inf" if value == float("inf") else f"{value:.3g}"


def _fmt_data(data) -> str:
    if data is None:
        return "?"
    return "[" + ", ".join(
        "(" + ", ".join(f"{v:.4g}" for v in r) + ")" if isinstance(r, list) and len(r) > 1
        else f"{(r[0] if isinstance(r, list) else r):.4g}" for r in data) + "]"


def _command(entry: Entry, run: dict) -> str:
    """The run's ``dpaudit test`` command with the entry's current target path (the cached one may
    name the module's old place)."""
    if "seed" in run and "samples" in run:
        return " ".join(entry.command(run["seed"], run["samples"]))
    return str(run.get("command"))


def _fmt_leak(rec: dict) -> str:
    leak = rec.get("leak_size")
    if not leak:
        return "not sized" if rec.get("verdict") in ("floating-point leak", "violation") else "-"
    if not leak.get("leak"):
        return "no disjoint grid or range"
    if leak["delta_at_claim"] <= 0.0:
        return "none certified (a finite epsilon)"
    return f"delta >= {leak['delta_at_claim']:.3g} at the claimed epsilon"


def _fmt_power(entry: Entry, rec: dict) -> str:
    if rec.get("verdict") != "pass":
        return "-"
    power = rec.get("power")
    if not power:
        if planted_target(entry):
            secs = (rec.get("first") or {}).get("seconds", 0)
            return (f"not run: {POWER_SKIPPED[entry.key]}" if entry.key in POWER_SKIPPED else
                    f"not run (CPU time: the row's audit took {secs:.0f} s, a twin 1.5 to 5 times that)")
        from dpaudit.mechanisms.catalogue import planted  # noqa: PLC0415

        return f"no planted twin: {planted.NO_TWIN.get(entry.target or '', 'none written yet')}"
    if power.get("outcome") == "error":
        return "error"
    word = "caught" if power.get("caught") else "missed"
    text = f"{word} (eps >= {_fmt_eps(power.get('epsilon_lower_bound'))})"
    if (smaller := power_budget_note(entry, power)):
        text = (f"{word} {smaller} (eps >= {_fmt_eps(power.get('epsilon_lower_bound'))})" if power.get("caught")
                else f"missed {smaller} (eps >= {_fmt_eps(power.get('epsilon_lower_bound'))}): not comparable "
                     "to the row's budget")
    if not power.get("caught") and entry.key in POWER_NOTES:
        text += "; budget to catch it: see the note above the table"
    return text


def _fmt_adversarial(rec: dict) -> str:
    adv = rec.get("adversarial")
    if not adv:
        return "not run"
    res = adv["results"]
    ours = [r["kind"] for r in res if r["status"] == "not reached" or (
        r["status"] == "rejected" and r["detail"].startswith("dpaudit's adapter"))]
    rejected = [r["kind"] for r in res if r["status"] == "rejected" and r["kind"] not in ours]
    leaks = [r["kind"] for r in res if r["status"] == "leak"]
    parts = [f"{len(res) - len(ours)} tried"]
    if ours:
        parts.append(f"not reached (the row's query raised): {', '.join(ours)}")
    if rejected:
        parts.append(f"rejected: {', '.join(rejected)}")
    parts.append(f"**leak**: {', '.join(leaks)}" if leaks else "no leak")
    return "; ".join(parts)


def adversarial_leaks(rec: dict | None) -> list[str]:
    """The adversarial input kinds (``"nan"``, ...) on which ``rec``'s screen certified a leak."""
    adv = (rec or {}).get("adversarial") or {}
    return [r["kind"] for r in adv.get("results", ()) if r["status"] == "leak"]


PASS_ADVERSARIAL = "pass, leak on adversarial input"
"""The summary's column for a row that passed its audit on ordinary records but whose adversarial
screen certified a leak (it is not counted as a pass)."""


def summary_verdict(rec: dict | None) -> str:
    """The verdict a row is counted under in the summary: its audit's, except a pass whose
    adversarial screen found a leak, which is :data:`PASS_ADVERSARIAL`."""
    if rec is None:
        return "not run"
    if rec["verdict"] == "pass" and adversarial_leaks(rec):
        return PASS_ADVERSARIAL
    return rec["verdict"]


_KIND_WORDS = {"nan": "NaN", "inf": "+inf", "-inf": "-inf"}


def _fmt_reproducer(entry: Entry, rec: dict) -> str:
    path = reproducer_path(entry)
    links = [f"[{path.name}](../reproducers/{path.name})"] if path.exists() else []
    for kind in adversarial_leaks(rec):
        extra = adversarial_reproducer_path(entry, kind)
        if extra.exists():
            links.append(f"[{extra.name}](../reproducers/{extra.name})")
    if links:
        return ", ".join(links)
    return "missing" if rec.get("verdict") not in ("pass", "not auditable") else "-"


def render(entries, cache: dict, reruns: dict | None = None) -> str:
    """``docs/library_audits.md`` from the cached records of ``entries``.

    Parameters
    ----------
    entries : sequence of Entry
    cache : dict
        ``key -> record`` (:func:`audit_entry`); a missing or stale record (its fingerprint does
        not match the entry's) is shown as ``not run``.
    reruns : dict, optional
        ``key -> record`` (:func:`rerun_entry`): shown in a section "Reruns of exact mechanisms"
        (records of entries not in ``entries`` are left out).

    Returns
    -------
    str
        Markdown: versions, the counts per library and verdict, one table per library, and for
        every violation its witness pair, both runs' commands and its cause.
    """
    libraries = list(dict.fromkeys(e.library for e in entries))
    columns = (OUTCOMES[0], PASS_ADVERSARIAL, *OUTCOMES[1:], "unconfirmed", "not run")
    fresh = {e.key: cache.get(e.key) for e in entries
             if cache.get(e.key) and cache[e.key].get("fingerprint") == e.fingerprint()}
    lines = [
        "# Audits of real DP libraries",
        "",
        "Generated by `PYTHONPATH=src python benchmarks/library_audit.py` (regenerate one row with "
        "`--entries KEY --force`); do not edit by hand. Each row is `dpaudit test TARGET --epsilon E "
        "[--delta D] --tester all --samples N --trials T --seed S` on the configuration stated, against "
        "the guarantee the library documents for it. Verdicts: **pass** (no violation at that budget: not a "
        "proof), **pass on ordinary inputs; leak on an adversarial input** (the audit passed on records from the "
        "domain, but the adversarial screen certified a leak on an input the API accepts, e.g. a NaN record; "
        "counted apart from the passes in the summary), **violation** (distributional), **floating-point leak** (only the set of doubles the outputs "
        "take rejects the claim, which may hold in exact arithmetic; `docs/floating_point.md`), "
        "**inconclusive** (exit code 3), **not auditable** (with the reason). A violation counts only when a "
        "second run (the next seed, twice the samples) finds the same kind; otherwise it is **unconfirmed**. "
        "beta = 0.01 per audit (the CLI default).",
        "",
        "Further columns (`--stages all` runs them all; each stage writes into the cache, so a row keeps its "
        "last values and the date it was audited): **relation**: *documented* (the library's own words, quoted "
        "under each table) or *inferred* (from the calibration; diffprivlib and PipelineDP name no relation, so "
        "the tools whose calibration assumes one are audited under both). **leak size**: for a finding, an "
        "output set one dataset of the witness pair reaches and the other does not, chosen on half of the "
        "outputs drawn per dataset (stated with each finding) and counted on the other half: with confidence 0.99, delta >= P[S | D] - e^epsilon P[S | D'] "
        "for every epsilon, so no epsilon below the stated horizon holds at the claimed delta "
        "(`dpaudit.audit.leak_size`); the set is described in words with each finding. **power**: the same "
        "mechanism with its noise scaled by 0.7 (`dpaudit.mechanisms.catalogue.planted`: diffprivlib and PyDP "
        "called with epsilon / 0.7, OpenDP's own searched scale times 0.7, PipelineDP's accountant given "
        "total_epsilon / 0.7; the twin's own guarantee is epsilon / 0.7, and where the library's calibration is loose "
        "(exponential mechanisms, order statistics, ratios of noisy counts) the twin may still meet the row's claim, "
        "so a miss there says as much about the twin as about the budget), audited at the row's "
        "budget and claim (where the CPU did not allow it, at a smaller budget stated in the cell: a catch there "
        "is a catch, a miss is not comparable to the row's budget): caught or missed, with its epsilon lower bound (the tightest certified epsilon of the "
        "row itself is the epsilon lower bound column). **adversarial inputs**: the edges the target's API "
        "accepts (`dpaudit.audit.adversarial`; a rejected input is a pass); PipelineDP's rows also try their "
        "declared privacy-unit pairs (`AcceptedInputs.unit_pairs`: a unit over max_partitions_contributed or "
        "max_contributions_per_partition, a unit alone in an otherwise empty partition, the empty dataset vs one "
        "unit) with a distributional check besides (one half-line of an output coordinate, chosen on half of the "
        "outputs and certified on the other half); OpenDP's add/remove rows already try the empty dataset vs one "
        "record, and its only row at d_in > 1 (laplace_mean, d_in 2) is a replace-one pair of sized data, where a "
        "unit over d_in is not a neighbour. **reproducer**: a standalone script "
        "(library and NumPy only) in `reproducers/`.",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}. "
        "Times are the wall time of the first run's process (the confirmation run's in the violations list).",
        "",
        "| library | version | entries | " + " | ".join(columns) + " |",
        "|---|---|---:|" + "---:|" * len(columns),
    ]
    for lib in libraries:
        mine = [e for e in entries if e.library == lib]
        verdicts = [summary_verdict(fresh.get(e.key)) for e in mine]
        counts = [verdicts.count(v) for v in columns]
        lines.append(f"| {lib} | {library_version(lib)} | {len(mine)} | " + " | ".join(map(str, counts)) + " |")
    for lib, parts in LEFT_OUT.items():
        if lib not in libraries and lib in PACKAGES:
            lines.append(f"| {lib} | {library_version(lib)} | 0 | " + " | ".join("0" * len(columns)) + " |")
    violations = []
    for lib in libraries:
        power_notes = sorted({POWER_NOTES[e.key] for e in entries if e.library == lib and e.key in POWER_NOTES})
        power_text = [f"Power of the missed Gaussian rows ({', '.join(e.key for e in entries if e.key in POWER_NOTES and e.library == lib)}): {t}.\n"
                      for t in power_notes]
        lines += ["", f"## {lib} {library_version(lib)}", ""] + ([NOTES[lib], ""] if lib in NOTES else []) + power_text + [
                  "| entry | configuration | documented guarantee | relation | budget | verdict | epsilon lower bound "
                  "| leak size | power (noise x0.7) | adversarial inputs | reproducer | time (audited) |",
                  "|---|---|---|---|---|---|---:|---|---|---|---|---:|"]
        notes = {}
        for e in (e for e in entries if e.library == lib):
            rec = fresh.get(e.key)
            if e.not_auditable:
                lines.append(f"| `{e.name}` | {e.configuration} | - | - | - | not auditable: {e.not_auditable} "
                             "| - | - | - | - | - | - |")
                continue
            note = relation_note(e)
            mark = notes.setdefault(note, len(notes) + 1)
            relation = f"{note.split(':', 1)[0]} [{mark}]" if note else "-"
            if rec is None:
                lines.append(f"| `{e.name}` | {e.configuration} | {e.guarantee.describe()} | {relation} "
                             f"| {e.budget.describe()} | not run | - | - | - | - | - | - |")
                continue
            first = rec["first"]
            verdict = rec["verdict"]
            if verdict in ("violation", "floating-point leak", "unconfirmed"):
                violations.append((e, rec))
                verdict = f"**{verdict}** (see below)"
            elif verdict == "error":
                violations.append((e, rec))
                verdict = f"error: {first.get('message', '')}"
            elif verdict == "pass" and adversarial_leaks(rec):
                kinds = ", ".join(_KIND_WORDS.get(k, k) for k in adversarial_leaks(rec))
                verdict = f"pass on ordinary inputs; **leak** on {kinds} input (see adversarial inputs)"
            lines.append(f"| `{e.name}` | {e.configuration} | {e.guarantee.describe()} | {relation} "
                         f"| {e.budget.describe()} | {verdict} | {_fmt_eps(first.get('epsilon_lower_bound'))} "
                         f"| {_fmt_leak(rec)} | {_fmt_power(e, rec)} | {_fmt_adversarial(rec)} "
                         f"| {_fmt_reproducer(e, rec)} | {first['seconds']:.0f} s ({rec.get('ran_at', '?')[:10]}) |")
        if notes:
            lines += ["", "Relations:", ""] + [f"{i}. {n}" for n, i in notes.items()]
    shown = [(e, r) for e in entries if (r := (reruns or {}).get(e.key)) and r.get("fingerprint") == replace(
        e, budget=replace(e.budget, samples=r["samples"], trials=r["trials"])).fingerprint()]
    if shown:
        lines += ["", "## Reruns of exact mechanisms", "",
                  "Entries whose guarantee holds exactly, audited K times with seeds seed, ..., seed + K - 1 "
                  "(`--reruns K`): each run accuses a correct mechanism with probability at most beta, so the "
                  "accusations are at most Binomial(K, beta); an entry is accused *beyond beta* when "
                  "P(Binomial(K, beta) >= accusations) < 0.01. OpenDP is not seeded: its reruns are independent "
                  "runs, not replayable ones.", "",
                  "| entry | budget | K | seeds | accusations | errors | beta | P(Bin(K, beta) >= accusations) "
                  "| verdict | max epsilon lower bound | time |",
                  "|---|---|---:|---|---:|---:|---:|---:|---|---:|---:|"]
        for e, r in shown:
            lbs = [v for v in r["epsilon_lower_bounds"] if v is not None]
            lines.append(f"| {e.library} `{e.name}` | {r['samples']:,} x {r['trials']}, {e.budget.tester} "
                         f"| {r['k']} | {r['seeds'][0]}..{r['seeds'][-1]} | {r['accusations']} | {r['errors']} "
                         f"| {r['beta']:g} | {r['p_value']:.3g} | {r['verdict']} | {_fmt_eps(max(lbs) if lbs else None)} "
                         f"| {r['seconds']:.0f} s |")
    lines += ["", "## Left out of the registry so far", ""]
    lines += [f"* {lib}: {what}: {why}." for lib, parts in LEFT_OUT.items() for what, why in parts.items()]
    if violations:
        lines += ["", "## Violations", ""]
        for e, rec in violations:
            first, confirm = rec["first"], rec.get("confirm") or {}
            w = first.get("witness") or {}
            lines += [f"### {e.library} `{e.name}`: {rec['verdict']}", ""]
            if w:
                lines.append(f"* witness: D0 = {_fmt_data(w.get('d0'))}, D1 = {_fmt_data(w.get('d1'))}, direction "
                             f"{w.get('direction')}; found by the {first.get('tester')} tester"
                             f" (epsilon lower bound {_fmt_eps(first.get('epsilon_lower_bound'))}).")
            if rec["verdict"] == "error":
                lines.append(f"* message: {first.get('message', '')}")
            lines.append(f"* reproduce: `{_command(e, first)}` "
                         f"(exit {first['exit_code']}, {first['seconds']:.0f} s)")
            if confirm:
                lines.append(f"* second run: `{_command(e, confirm)}`: "
                             f"{confirm.get('outcome')}, epsilon lower bound "
                             f"{_fmt_eps(confirm.get('epsilon_lower_bound'))} (exit {confirm.get('exit_code')}, "
                             f"{confirm.get('seconds', 0):.0f} s)")
            if first.get("note"):
                lines.append(f"* note of the audit: {first['note'][:400]}")
            lines.append(f"* relation: {relation_note(e) or e.guarantee.neighbouring}")
            leak = (rec.get("leak_size") or {})
            if leak.get("text"):
                lines.append(f"* leak size (witness pair, {leak['samples']:,} outputs per dataset, half to choose the "
                             f"set, half to count it): {leak['text']}")
            if rec["verdict"] == "floating-point leak":
                lines.append(f"* cause: {e.cause or float_cause(e)}.")
            elif e.cause:
                lines.append(f"* cause: {e.cause}")
            else:
                lines.append("* cause: not analysed yet.")
            if e.key in RECORD:
                lines.append(f"* against the record: {RECORD[e.key]}.")
            if reproducer_path(e).exists():
                lines.append(f"* reproducer: `python {reproducer_path(e).relative_to(ROOT)}` (the library and NumPy "
                             "only; prints both frequencies and the text to paste into the library's tracker)")
            if e.documented:
                lines.append(f"* documented: {e.documented}.")
            lines.append("")
    new = [e for e in entries if RECORD.get(e.key, "").startswith("candidate new") and fresh.get(e.key)
           and fresh[e.key]["verdict"] not in ("pass", "not auditable")]
    if new:
        lines += ["", "## Candidate new findings", "",
                  "Findings not found in the library's tracker (searched by issue text) nor in the older reports "
                  "(Mironov 2012 on Laplace; the diffprivlib issues cited above); the published record of "
                  "Re:cord-play (PoPETs 2026) was not available to this session, so each is a candidate until "
                  "checked against it.", ""]
        for e in new:
            rec = fresh[e.key]
            leak = (rec.get("leak_size") or {}).get("text", "")
            path = reproducer_path(e)
            repro = f"`python {path.relative_to(ROOT)}`" if path.exists() else "no reproducer"
            lines.append(f"* {e.library} {library_version(e.library)} `{e.name}` ({e.key}): {rec['verdict']}"
                         + (f"; {leak}" if leak else "") + f". Reproducer: {repro}.")
        for lib, text in ADVERSARIAL_RECORD.items():
            if text.startswith("candidate new"):
                lines.append(f"* {lib} {library_version(lib)}, adversarial input: {text}.")
    adversarial = [(e, r) for e in entries if (rec := fresh.get(e.key)) and rec.get("adversarial")
                   for r in rec["adversarial"]["results"] if r["status"] == "leak"]
    tried = [e for e in entries if (rec := fresh.get(e.key)) and rec.get("adversarial")]
    if tried:
        lines += ["", "## Adversarial inputs", "",
                  f"{len(tried)} rows were run on the adversarial inputs their target declares "
                  "(`dpaudit.audit.adversarial.screen`, "
                  f"the outputs per dataset per input stated with each finding, beta {BETA:g} per row over its inputs): NaN, "
                  "+-inf, -0.0, the smallest subnormal, +-the largest double, the bounds plus/minus their width, "
                  "int64 records and 2^53 + 1, the empty dataset. A rejected input (the library raises) is a pass "
                  "for that input. A leak is an output set one dataset reaches and the other does not, certified "
                  "on held-out outputs; rows already leaking through their float grid are screened for non-finite "
                  "outputs and exact atoms only.", ""]
        for lib, known in ADVERSARIAL_RECORD.items():
            if any(e.library == lib for e, _ in adversarial):
                lines.append(f"{lib}: {known}.")
        lines.append("")
        for e, r in adversarial:
            n = fresh[e.key]["adversarial"]["samples"]
            lines.append(f"* {e.library} `{e.name}` ({e.key}), {r['kind']} ({r['description']}; {n:,} outputs per "
                         f"dataset): {r['detail']}")
        if not adversarial:
            lines.append("* no adversarial input certified a leak.")
    return "\n".join(lines).rstrip() + "\n"


def load_cache(path: Path = CACHE) -> dict:
    """The cached records, ``key -> record`` (empty when there is no cache)."""
    return json.loads(path.read_text()) if path.exists() else {}


def _save(cache: dict, key: str) -> None:
    """Write ``cache[key]`` into the cache file, re-read first, so that two runs of this script on
    different entries (e.g. stages side by side) do not overwrite each other's rows."""
    disk = load_cache()
    mine = cache[key]
    if (disk.get(key) or {}).get("fingerprint") == mine.get("fingerprint"):  # same audit: merge the stages' fields
        disk[key] = {**disk[key], **mine}
    else:
        disk[key] = mine
    cache.update(disk)
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    tmp = CACHE.with_suffix(".tmp")
    tmp.write_text(json.dumps(disk, indent=1, sort_keys=True) + "\n")
    tmp.replace(CACHE)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", nargs="*", help="keys to (re)run, e.g. diffprivlib.laplace (default: all)")
    ap.add_argument("--force", action="store_true", help="rerun entries even when their cached row is current")
    ap.add_argument("--jobs", type=int, default=1, help="entries audited side by side (one process each)")
    ap.add_argument("--processes", default="1", help="--processes of each dpaudit test")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds before one dpaudit test is killed")
    ap.add_argument("--list", action="store_true", help="print the registry and exit")
    ap.add_argument("--write-only", action="store_true", help="only write docs/library_audits.md from the cache")
    ap.add_argument("--reruns", type=int, metavar="K",
                    help="audit each of --entries K times (seeds seed..seed+K-1) and count the accusations "
                         "(written to benchmarks/results/library_reruns.json and the doc's reruns section)")
    ap.add_argument("--rerun-samples", type=int, default=5000, help="--samples of each rerun")
    ap.add_argument("--rerun-trials", type=int, default=2, help="--trials of each rerun")
    ap.add_argument("--leak-samples", type=int, default=LEAK_SAMPLES, help="outputs per dataset to size a leak")
    ap.add_argument("--adversarial-samples", type=int, default=ADVERSARIAL_SAMPLES,
                    help="outputs per dataset per adversarial input")
    ap.add_argument("--power-samples", type=int, default=None,
                    help="--samples of the power stage's twin (default: the row's; a smaller budget is stated in "
                         "the table, and a miss there is marked not comparable)")
    ap.add_argument("--power-trials", type=int, default=None, help="--trials of the power stage's twin (default: the row's)")
    ap.add_argument("--stages", default="audit",
                    help="comma-separated stages to run on the chosen entries: audit (dpaudit test, cached by "
                         "fingerprint), leak (size the findings' leaks on their witness pairs), adversarial "
                         "(the adversarial-values screen), power (the planted-leak twin of each pass); "
                         "'all' for every stage. The later stages need a current audit record")
    args = ap.parse_args(argv)
    stages = {"audit", "leak", "adversarial", "power"} if args.stages == "all" else set(args.stages.split(","))
    if stages - {"audit", "leak", "adversarial", "power"}:
        raise SystemExit(f"unknown stages {sorted(stages - {'audit', 'leak', 'adversarial', 'power'})}")

    if args.list:
        for e in REGISTRY:
            print(f"{e.key:40s} {e.guarantee.describe() if e.guarantee else 'not auditable'}")
        return
    keys = {e.key for e in REGISTRY}
    unknown = set(args.entries or ()) - keys
    if unknown:
        raise SystemExit(f"unknown entries {sorted(unknown)}; see --list")
    cache = load_cache()
    reruns = load_cache(RERUNS)
    if args.reruns is not None and not args.write_only:
        if not args.entries or args.reruns < 1:
            raise SystemExit("--reruns K needs K >= 1 and --entries")
        chosen = [e for e in REGISTRY if e.key in args.entries]

        def rerun(e):
            rec = rerun_entry(e, args.reruns, samples=args.rerun_samples, trials=args.rerun_trials,
                              processes=args.processes, timeout=args.timeout)
            print(f"{e.key:40s} {rec['accusations']}/{rec['k']} accused, {rec['errors']} errors: {rec['verdict']} "
                  f"({rec['seconds']:.0f} s)", flush=True)
            return rec

        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            for rec in pool.map(rerun, chosen):
                reruns[rec["key"]] = rec
                RERUNS.parent.mkdir(parents=True, exist_ok=True)
                RERUNS.write_text(json.dumps(reruns, indent=1, sort_keys=True) + "\n")
    elif not args.write_only:
        todo = [e for e in REGISTRY if (not args.entries or e.key in args.entries)
                and (args.force or (cache.get(e.key) or {}).get("fingerprint") != e.fingerprint())]

        def work(e):
            rec = audit_entry(e, processes=args.processes, timeout=args.timeout)
            first = rec.get("first") or {}
            print(f"{e.key:40s} {rec['verdict']:20s} eps_lb {_fmt_eps(first.get('epsilon_lower_bound')):>6s} "
                  f"{first.get('seconds', 0):6.0f} s", flush=True)
            return rec

        if "audit" in stages:
            with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
                for rec in pool.map(work, todo):
                    cache[rec["key"]] = rec
                    _save(cache, rec["key"])
        chosen = [e for e in REGISTRY if (not args.entries or e.key in args.entries) and e.target
                  and (cache.get(e.key) or {}).get("fingerprint") == e.fingerprint()]
        for e in chosen:
            rec = cache[e.key]
            first = rec.get("first") or {}
            if "leak" in stages and rec["verdict"] in ("floating-point leak", "violation") and first.get("witness"):
                rec["leak_size"] = size_leak(e, first["witness"], samples=args.leak_samples, beta=BETA)
                print(f"{e.key:40s} leak: {rec['leak_size'].get('text', 'no disjoint set')[:150]} "
                      f"({rec['leak_size']['seconds']:.0f} s)", flush=True)
                _save(cache, e.key)
            if "adversarial" in stages:
                rec["adversarial"] = screen_entry(e, samples=args.adversarial_samples,
                                                  float_grids=rec["verdict"] != "floating-point leak")
                print(f"{e.key:40s} adversarial: {_fmt_adversarial(rec)} ({rec['adversarial']['seconds']:.0f} s)",
                      flush=True)
                _save(cache, e.key)
            if "power" in stages and rec["verdict"] == "pass" and planted_target(e):
                power = power_entry(e, processes=args.processes, timeout=args.timeout,
                                    samples=args.power_samples, trials=args.power_trials)
                if power["exit_code"] is None:  # killed at --timeout: nothing learnt, the row keeps its last value
                    print(f"{e.key:40s} power: twin killed after {args.timeout} s, not stored", flush=True)
                    continue
                rec["power"] = power
                print(f"{e.key:40s} power: {_fmt_power(e, rec)} ({rec['power']['seconds']:.0f} s)", flush=True)
                _save(cache, e.key)
    DOC.write_text(render(REGISTRY, cache, reruns))
    print(f"wrote {DOC.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
