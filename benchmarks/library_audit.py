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

PACKAGES = {"diffprivlib": "diffprivlib", "OpenDP": "opendp", "PipelineDP": "pipeline-dp", "PyDP": "python-dp", "Opacus": "opacus"}
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


# --- Rows at the violations of the published record (Re:cord-play, PoPETs 2026): benchmarks/library_record.py
_REC = "dpaudit.mechanisms.catalogue.diffprivlib_record"
_REC_NO_RELATION = "no diffprivlib 0.6.6 docstring names a neighbouring relation"
_REC_LINEAR_CAUSE = (
    "a library bug, IBM/differential-privacy-library#105 (Re:cord-play): models/linear_regression.py, "
    "_construct_regression_obj, calibrates the noise of each 2nd-degree diagonal coefficient sum x_i^2 to "
    "max(|bounds_X[0][i]|, |bounds_X[0][i]|) ** 2, the lower bound twice (the other terms use both bounds): "
    "with bounds_X = (0, 1) that is LaplaceFolded with sensitivity 0, so sum x^2 enters the objective exactly "
    "and coef_ = (sum x y + Laplace noise) / sum x^2. D0 and D1 differ in one x (0 vs 1): the released "
    "coefficient's noise is divided by the exact sum x^2, 0.01 vs 1.01 with the public record (0.1, 0), so "
    "|coef_| is about 100 times wider on D0 and the privacy loss grows with |coef_| without bound")
_REC_LOGISTIC_CAUSE = (
    "a library bug, IBM/differential-privacy-library#106 (Re:cord-play): models/logistic_regression.py, fit, "
    "sets classes_ = np.unique(y) from the private labels; a record whose label no other record has adds a "
    "class, so the fitted model has 3 one-vs-rest coefficient rows (and epsilon / 3 each) instead of 1: the "
    "number of rows is a distinguishing event of probability 1. The label set should be a public parameter")
_RECORD_ROWS: tuple[Entry, ...] = (
    Entry("diffprivlib", "models.LinearRegression", f"{_REC}:linear_regression_diagonal",
          "epsilon=1, bounds_X=(0, 1), bounds_y=(0, 1), fit_intercept=False, on 2-D records (x, y) plus one "
          "public record (0.1, 0); releases coef_ (the record's IBM/differential-privacy-library#105)",
          Guarantee(1.0, neighbouring="replace",
                    domain="2-D records (x, y) in [0, 1]^2, 1 to 4 records plus the public record (0.1, 0)",
                    source="diffprivlib.models.LinearRegression(epsilon=1, bounds_X=(0, 1), bounds_y=(0, 1), "
                           "fit_intercept=False).fit(X, y).coef_"),
          Budget(samples=4000, trials=2), cause=_REC_LINEAR_CAUSE,
          relation_note=f"inferred: {_REC_NO_RELATION}; the cross terms are calibrated to max - min of the "
                        "products (one record replaced) and the squares to max |bound|^2, which covers both "
                        "relations; the bug breaks both, audited under replace (n public)"),
    Entry("diffprivlib", "models.LogisticRegression", f"{_REC}:logistic_regression_labels",
          "epsilon=1, data_norm=1, on records (x, c) with label min(2, floor(3 c)) plus public records (0, label 0) "
          "and (1, label 1); releases the number of coefficient rows and coef_[0, 0] (the record's "
          "IBM/differential-privacy-library#106)",
          Guarantee(1.0, neighbouring="replace",
                    domain="records (x, c) in [0, 1]^2, 1 to 4 records plus the two public records",
                    source="diffprivlib.models.LogisticRegression(epsilon=1, data_norm=1).fit(X, y)"),
          Budget(samples=1000, trials=2), cause=_REC_LOGISTIC_CAUSE,
          relation_note=f"inferred: {_REC_NO_RELATION}; the objective perturbation (mechanisms.Vector with n = the "
                        "number of samples, Chaudhuri et al. 2011) assumes replace-one (n public); the bug breaks "
                        "add/remove too, where a removed record takes its label with it"),
)
"""Rows targeted at the covered-library violations of the published record (library_record.py)."""


# --- Opacus (issue 36: the fifth library) ------------------------------------------------------
_OPC = "dpaudit.mechanisms.catalogue.opacus_optimizers"
_OPC_MODEL = ("one full-batch step of a Linear(2, 2) model from parameters 0 (cross-entropy, loss_reduction='mean', "
              "expected_batch_size=10, SGD lr 1), noise_multiplier 4.06 = get_noise_multiplier(target_epsilon=1, "
              "target_delta=1e-5, sample_rate=1.0, steps=1) (RDP accountant); releases the 6 trained parameters")
_OPC_DOMAIN = "labelled examples (x_1, x_2 in [-1, 1], label 0 or 1), 1 to 10 examples"
_OPC_RELATION = (
    "inferred: no Opacus 1.6.0 docstring names a neighbouring relation; its accountants analyse the sampled "
    "Gaussian mechanism ('Functionality for computing Renyi Differential Privacy (RDP) of an additive Sampled "
    "Gaussian Mechanism (SGM)', opacus/accountants/analysis/rdp.py, module docstring) under Poisson sampling "
    "('poisson_sampling: True if you want to use standard sampling required for DP guarantees', "
    "opacus/privacy_engine.py, PrivacyEngine.make_private), whose analysis (Mironov, Talwar, Zhang 2019) is for "
    "adding or removing one example; these rows take one full-batch step (sample_rate 1), a Gaussian mechanism "
    "on the clipped gradient sum under add/remove of one labelled example")
_OPC_FLOAT_DOC = (
    "_generate_noise's docstring (opacus/optimizers/optimizer.py): 'If `secure_mode` is enabled, the generated "
    "noise is also secure against the floating point representation attacks' (2107.10138, 2112.05307); the "
    "default (secure_mode=False) draws torch.normal in the gradient's dtype (float32 here)")


_OPC_FLOAT_CAUSE = (
    "a float32 granularity signal, not confirmed: the first run's float-bits tester certified epsilon >= 1.55 from "
    "the lowest set bits of a bias coordinate on a searched pair (5 vs 6 examples), the confirmation run (next seed, "
    "twice the samples) certified 0.93 and passed. Read in Opacus 1.6.0, the release is float32 "
    "arithmetic on the clipped sum: opacus/optimizers/optimizer.py, _generate_noise draws torch.normal(..., "
    "dtype=reference.dtype) (float32 for a float32 model; secure_mode sums four draws and halves them, same dtype), "
    "DPOptimizer.add_noise sets p.grad = p.summed_grad + noise and scale_grad divides by expected_batch_size, each "
    "rounded to float32 (24-bit significand), so the set of float32 values an output takes depends on the clipped "
    "sum (Mironov 2012, in single precision); secure_mode's docstring addresses the sampler's attacks "
    "(2107.10138, 2112.05307), not this final rounding. The leak-size stage on the same pair (20,000 outputs per "
    "dataset, half to choose a set, half to count it) certified no float grid or range above the claim, and "
    "neither did 10,000 per dataset of the flat and secure_mode rows on that pair: no reproducer, the signal is not "
    "claimed as a leak")


def _opacus_entry(attr: str, name: str, how: str, samples: int = 10000, cause: str = "") -> Entry:
    """An Opacus row: ``opacus_optimizers:attr``, claim (1, 1e-5)-DP from Opacus's own calibration."""
    g = Guarantee(1.0, 1e-5, "add-remove", _OPC_DOMAIN,
                  "get_noise_multiplier(target_epsilon=1, target_delta=1e-5, sample_rate=1.0, steps=1, "
                  "accountant='rdp'), as PrivacyEngine.make_private_with_epsilon calibrates")
    return Entry("Opacus", name, f"{_OPC}:{attr}", f"{how}; {_OPC_MODEL}", g, budget=Budget(samples=samples, trials=2),
                 documented=_OPC_FLOAT_DOC, relation_note=_OPC_RELATION, cause=cause)


# --- Opacus make_private (issue 36, record R7: meta-pytorch/opacus#571) -------------------------
_OPC_MP_GUARANTEE = Guarantee(
    1.0, 1e-5, "add-remove", "labelled examples (x_1, x_2 in [-1, 1], label 0 or 1), 1 to 6 examples",
    "get_noise_multiplier(target_epsilon=1, target_delta=1e-5, sample_rate=1.0, steps=1, accountant='rdp') = 4.06; "
    "make_private's own accountant hook records sample_rate = 1 / len(data_loader) = 1 for these datasets")
_OPC_MP_CAUSE = (
    "known (Re:cord-play, meta-pytorch/opacus#571, open): opacus/privacy_engine.py, PrivacyEngine.make_private sets "
    "'sample_rate = 1 / len(data_loader)' and 'expected_batch_size = int(len(data_loader.dataset) * sample_rate)', "
    "the divisor DPOptimizer.scale_grad applies to the noisy clipped sum; with the whole dataset in one batch it "
    "is len(dataset), so under add/remove the update and its noise are scaled by 1/N vs 1/(N+1) (noise std 4.06 "
    "vs 2.03 per parameter on 1 vs 2 examples): two Gaussians of different scales, whose privacy loss is "
    "unbounded. The leak-size stage's set (float32 lattice of a bias coordinate) is the same divisor seen in "
    "float32 (dividing by 2 halves the lattice spacing); the scale itself: reproducers/"
    "opacus_make_private.py (set: squared norm of the 6 parameters > 74.3; 1250/2000 on 1 example, "
    "13/2000 on 2, delta >= 0.551 at epsilon 1, confidence 0.99)")
_OPACUS_MAKE_PRIVATE_ROWS: tuple[Entry, ...] = (
    Entry("Opacus", "PrivacyEngine.make_private", f"{_OPC}:make_private",
          "PrivacyEngine().make_private(module, SGD(lr=1), DataLoader(dataset, batch_size=10), noise_multiplier=4.06, "
          "max_grad_norm=1, poisson_sampling=True (Opacus's default; sample rate 1 at these sizes), seeded "
          "noise_generator), one step of a Linear(2, 2) model from parameters 0 (cross-entropy, mean); releases the 6 "
          "trained parameters; Opacus sets expected_batch_size = len(dataset)",
          _OPC_MP_GUARANTEE, budget=Budget(samples=4000, trials=2), documented=_OPC_FLOAT_DOC,
          relation_note=_OPC_RELATION, cause=_OPC_MP_CAUSE),
)
"""R7 of the published record: ``make_private`` divides by ``int(len(dataset) * sample_rate)``."""


_OPACUS_ROWS: tuple[Entry, ...] = (
    _opacus_entry("dp_optimizer", "optimizers.DPOptimizer", "flat clipping, max_grad_norm=1, secure_mode=False"),
    _opacus_entry("dp_optimizer_secure", "optimizers.DPOptimizer (secure_mode)",
                  "flat clipping, max_grad_norm=1, secure_mode=True (noise: four torch.normal draws summed, halved)"),
    _opacus_entry("per_layer", "optimizers.DPPerLayerOptimizer",
                  "clipping='per_layer', max_grad_norm=[1.0, 0.5] (weight, bias; noise scale sigma * sqrt(1.25))",
                  cause=_OPC_FLOAT_CAUSE),
    *_OPACUS_MAKE_PRIVATE_ROWS,
)
"""The Opacus rows (``dpaudit.mechanisms.catalogue.opacus_optimizers``): Opacus's DP-SGD optimizers,
one step each."""

OPACUS_ACCOUNTANT_GRID = tuple((sigma, q, steps, 1e-5) for sigma in (0.6, 1.0, 2.0) for q in (0.01, 0.1, 1.0)
                               for steps in (1, 10, 100, 1000))
"""(noise multiplier sigma, sample rate q, steps, delta) at which Opacus's accountants are checked."""

OPACUS_ACCOUNTANTS = ("rdp", "prv", "gdp")
"""Opacus's accountants (``opacus.accountants.create_accountant``): RDPAccountant, PRVAccountant,
GaussianAccountant."""

OPACUS_PLD_INTERVAL = 1e-3
"""Loss grid (nats) of the optimistic PLD that lower-bounds the true delta(epsilon), up to 10 steps;
10 times coarser beyond (a coarser optimistic grid is still a lower bound, only looser; the fine
grid of 1,000 steps at sigma 0.6 took gigabytes)."""


def opacus_true_delta_lower(sigma: float, q: float, steps: int, *, interval: float = OPACUS_PLD_INTERVAL):
    """A function ``eps -> lower bound on the true delta(eps)`` of DP-SGD (Poisson-subsampled Gaussian).

    ``steps`` compositions of the Poisson-subsampled Gaussian mechanism with noise multiplier
    ``sigma`` and sample rate ``q`` under add/remove of one example (the mechanism Opacus
    accounts). For ``q = 1`` the composition is the Gaussian mechanism with ``mu = sqrt(steps) /
    sigma`` and the profile is exact (:func:`dpaudit.privacy.profiles.gaussian_delta`, Balle & Wang
    2018, Thm 8). Otherwise: dp_accounting's *optimistic* PLD on loss grid ``interval`` (losses
    rounded down, truncated tails dropped: its hockey-stick divergence is at most the true one),
    both directions, minus the FFT's floating-point charge (:func:`dpaudit.accounting._pld.pmf_delta`).

    Returns
    -------
    callable
        ``f(eps) -> float``: a lower bound on the true delta at ``eps`` (errs low).
    """
    import warnings  # noqa: PLC0415

    from dpaudit.accounting._pld import build_pld, pmf_delta, pmf_parts  # noqa: PLC0415
    from dpaudit.accounting.prv import Composition, SubsampledGaussianStep  # noqa: PLC0415
    from dpaudit.privacy.profiles import gaussian_delta  # noqa: PLC0415

    if q == 1.0:
        mu = math.sqrt(steps) / sigma
        return lambda eps: max(0.0, float(gaussian_delta(eps, mu)) - 1e-12)  # 1e-12: the normal cdf's rounding
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import logging  # noqa: PLC0415

        logging.disable(logging.WARNING)  # dp_accounting: 'Using Privacy Buckets algorithm instead'
        try:
            parts = pmf_parts(build_pld(Composition(((SubsampledGaussianStep(sigma, q), steps),)), interval,
                                        pessimistic=False))
        finally:
            logging.disable(logging.NOTSET)

    def lower(eps: float) -> float:
        return max([0.0] + [d - charge for d, charge in (pmf_delta(ls, ps, inf, eps) for ls, ps, inf in parts)])

    return lower


def opacus_accountant_check(grid=OPACUS_ACCOUNTANT_GRID) -> dict:
    """Check Opacus's accountants against a certified lower bound on the true epsilon.

    For each ``(sigma, q, steps, delta)``: Opacus's ``get_epsilon(delta)`` of each accountant of
    :data:`OPACUS_ACCOUNTANTS` after ``steps`` calls of ``step(noise_multiplier=sigma,
    sample_rate=q)`` (one history entry), and :func:`opacus_true_delta_lower` at that epsilon. An
    accountant whose reported epsilon has a lower-bounded true delta above ``delta`` under-states
    the privacy loss: the mechanism is *not* (epsilon, delta)-DP at the epsilon it reports (a
    violation, certified up to the PLD's floating-point control). ``eps_lower`` is the largest
    epsilon on a 1e-4 bisection whose lower-bounded delta still exceeds ``delta``: the true epsilon is
    above it.

    Returns
    -------
    dict
        ``version`` (Opacus), ``grid``, ``fingerprint`` (what a cached record must match), ``seconds``
        and ``rows``: one dict per grid point with ``sigma``,
        ``q``, ``steps``, ``delta``, ``eps_lower`` and per accountant ``{name: {"epsilon",
        "true_delta_lower", "under"}}`` (``under``: the certified violation).
    """
    import warnings  # noqa: PLC0415

    from opacus.accountants import create_accountant  # noqa: PLC0415

    t0 = time.perf_counter()
    rows = []
    for sigma, q, steps, delta in grid:
        interval = OPACUS_PLD_INTERVAL * (1 if steps <= 10 else 10)
        lower = opacus_true_delta_lower(sigma, q, steps, interval=interval)
        row = {"sigma": sigma, "q": q, "steps": steps, "delta": delta, "interval": interval}
        for name in OPACUS_ACCOUNTANTS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # GaussianAccountant's 'experimental' warning (quoted in the doc)
                acc = create_accountant(name)
                acc.history = [(sigma, q, steps)]
                try:
                    eps = float(acc.get_epsilon(delta=delta))
                except Exception as exc:  # an accountant that cannot answer: recorded, not a violation
                    row[name] = {"error": f"{type(exc).__name__}: {exc}"[:200]}
                    continue
            d_low = lower(eps) if math.isfinite(eps) else 0.0
            row[name] = {"epsilon": eps, "true_delta_lower": d_low, "under": d_low > delta}
        lo, hi = 0.0, max([row[n]["epsilon"] for n in OPACUS_ACCOUNTANTS if "epsilon" in row[n]
                           and math.isfinite(row[n]["epsilon"])] + [1.0]) * 2 + 1.0
        if lower(lo) <= delta:
            row["eps_lower"] = 0.0
        else:
            while hi - lo > 1e-4:
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if lower(mid) > delta else (lo, mid)
            row["eps_lower"] = lo
        rows.append(row)
    version, grid = library_version("Opacus"), [list(g) for g in grid]
    return {"version": version, "grid": grid, "rows": rows, "seconds": round(time.perf_counter() - t0, 1),
            "fingerprint": {"version": version, "grid": grid, "interval": OPACUS_PLD_INTERVAL}}


def render_opacus_accountants(rec: dict | None) -> list[str]:
    """The doc's section on Opacus's accountants from the cached :func:`opacus_accountant_check` record."""
    if not rec or rec.get("version") != library_version("Opacus") or \
            rec.get("grid") != [list(g) for g in OPACUS_ACCOUNTANT_GRID]:
        return []
    under = {n: [r for r in rec["rows"] if (r.get(n) or {}).get("under")] for n in OPACUS_ACCOUNTANTS}
    lines = ["", f"## Opacus {rec['version']} accountants against a certified lower bound", "",
             "Opacus's accountants are releases too: each `get_epsilon(delta)` states an epsilon at which DP-SGD "
             "(the Poisson-subsampled Gaussian mechanism, noise multiplier sigma, sample rate q, `steps` steps, "
             "add/remove of one example) is claimed to be (epsilon, delta)-DP. Each epsilon is checked against a "
             "lower bound on the true delta at that epsilon: exact for q = 1 (a Gaussian mechanism with mu = "
             "sqrt(steps) / sigma), else dp_accounting's optimistic PLD (grid 1e-3 nats up to 10 steps, both directions, FFT "
             "round-off charged downwards; grid 1e-2 beyond 10 steps; `opacus_true_delta_lower` in `benchmarks/library_audit.py`). An epsilon "
             "whose lower-bounded true delta exceeds delta is **under**: the mechanism is not (epsilon, delta)-DP "
             "at the epsilon Opacus reports. `eps_lower`: the true epsilon at delta is above it. Regenerate with "
             "`--stages accountants` "
             f"({len(rec['rows'])} grid points, {rec['seconds']:.0f} s). The lower bound is sound but loose where the "
             "optimistic PLD's truncation and coarse grid lose mass (at 1,000 steps and small q it can fall to 0): a "
             "row that is not under is not certified exact. `error`: Opacus's get_epsilon raised (the message is in "
             "the cache; GaussianAccountant's eps_from_mu root search fails at large mu).", ""]
    for n, cls in (("rdp", "RDPAccountant"), ("prv", "PRVAccountant"), ("gdp", "GaussianAccountant")):
        lines.append(f"* {cls} (`{n}`): {len(under[n])} of {len(rec['rows'])} grid points under the true epsilon"
                     + (f"; worst: sigma {max(under[n], key=lambda r: r[n]['true_delta_lower'])['sigma']:g}, "
                        f"q {max(under[n], key=lambda r: r[n]['true_delta_lower'])['q']:g}, "
                        f"{max(under[n], key=lambda r: r[n]['true_delta_lower'])['steps']} steps "
                        f"(true delta >= {max(r[n]['true_delta_lower'] for r in under[n]):.3g} at its epsilon)."
                        if under[n] else "."))
    lines += ["", OPACUS_ACCOUNTANT_CAUSE, "",
              "| sigma | q | steps | delta | eps_lower (certified) | RDP eps | PRV eps | GDP eps | true delta >= at GDP eps |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def cell(r, n):
        a = r.get(n) or {}
        if "error" in a:
            return "error"
        return f"**{a['epsilon']:.4g}** (under)" if a["under"] else f"{a['epsilon']:.4g}"

    for r in rec["rows"]:
        lines.append(f"| {r['sigma']:g} | {r['q']:g} | {r['steps']} | {r['delta']:g} | {r['eps_lower']:.4g} "
                     f"| {cell(r, 'rdp')} | {cell(r, 'prv')} | {cell(r, 'gdp')} "
                     f"| {(r.get('gdp') or {}).get('true_delta_lower', 0.0):.3g} |")
    return lines


OPACUS_ACCOUNTANT_CAUSE = (
    "Cause of the GDP rows, read in Opacus 1.6.0: opacus/accountants/analysis/gdp.py, compute_mu_poisson returns "
    "`sqrt(exp(sigma^-2) - 1) * sqrt(steps) * sample_rate`, the central-limit approximation of Bu, Dong, Long, "
    "Su (2020): mu-GDP of the subsampled composition holds only as steps grows with q sqrt(steps) fixed, "
    "and for few steps or small q it is below the true privacy loss; eps_from_mu then converts mu exactly. "
    "Documented: GaussianAccountant.__init__ warns 'GDP accounting is experimental and can underestimate privacy "
    "expenditure. Proceed with caution.' (opacus/accountants/gdp.py). A user who calls "
    "`PrivacyEngine(accountant='gdp')` and `make_private_with_epsilon` gets a noise multiplier calibrated by this "
    "approximation (opacus/accountants/utils.py, get_noise_multiplier)")
"""Why GaussianAccountant under-states epsilon (read from Opacus's source)."""


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
    *_RECORD_ROWS,
    *_OPENDP,
    *_PIPELINEDP,
    *_PYDP_ROWS,
    *_OPACUS_ROWS,
)
"""Every entry of the table, in the order it is printed."""

LEFT_OUT = {
    "diffprivlib": {},
    "OpenDP": {
        "measurements.make_private_expr, make_private_lazyframe": "Polars query plans (installed with the "
        "opendp-polars extra): one plan, a private sum and length through dp.Context, has its own row "
        "(extras.polars, below the measurement rows); other plans (grouped counts, quantiles, make_private_expr alone) add their noise by "
        "make_noise and make_noise_threshold, audited here",
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
    },
    "Not yet audited": {
        "diffprivlib.models LogisticRegression, PCA, KMeans, RandomForestClassifier, DecisionTreeClassifier": "not in "
        "the registry yet: GaussianNB, LinearRegression and StandardScaler have rows (audited through their fitted "
        "parameters), LogisticRegression one only at the published record's bug (IBM#106); one fit of these took 5 ms (PCA), 5-8 ms (the trees), 13 ms (KMeans) and 125 ms "
        "(LogisticRegression, objective perturbation then L-BFGS) on this loaded machine, 2 to 40 times a "
        "GaussianNB fit, so a row needs 10 minutes to hours of CPU. IBM/differential-privacy-library#104 (open) also "
        "reports k-means and vector-mechanism (LogisticRegression) calibration issues: not checked here",
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
                                 "Google's binomial sampler was not checked. Not in the Re:cord-play record (none of "
                                 "its 13 violations concerns PipelineDP or PyDP; see Against the published record)",
    "pipelinedp.vector_sum_public": "candidate new (a crash, not a privacy leak): not found in the PipelineDP tracker "
                                    "searched; VectorSumCombiner.create_accumulator clips per contribution since "
                                    "OpenMined/PipelineDP#556 (fixing #551), and its empty public partitions then clip "
                                    "None",
    "pipelinedp.count_bounds_enforced": "a documented misuse, kept as a row on purpose",
    "diffprivlib.linear_regression_diagonal": "known: Re:cord-play (PoPETs 2026), IBM/differential-privacy-library#105 "
                                              "(open; fix PR #110 open); still in diffprivlib 0.6.6",
    "diffprivlib.logistic_regression_labels": "known: Re:cord-play (PoPETs 2026), IBM/differential-privacy-library#106 "
                                              "(open); still in diffprivlib 0.6.6",
}
"""Each finding against the record: known (with the reference), relation-dependent, or a candidate new
finding (searched for in the library's tracker and checked against the published record,
``benchmarks/library_record.py``)."""
for _k in ("privacy_id_count_gaussian", "sum_gaussian", "vector_sum_gaussian"):
    RECORD[f"pipelinedp.{_k}"] = RECORD["pipelinedp.count_gaussian"] + " (same cause as Metrics.COUNT, Gaussian)"
ADVERSARIAL_RECORD = {
    "diffprivlib": "known: IBM/differential-privacy-library#80 'Handling of NaNs' (open): a NaN record makes most "
                   "tools release NaN, a distinguishing event (np.clip keeps NaN, tools/utils.py); Re:cord-play "
                   "(PoPETs 2026) also reports NaN passing np.clip in diffprivlib, as a robustness issue. The leaks of "
                   "models.LinearRegression on values outside the bounds (max-double, 2^53 + 1) are another cause: "
                   "with fit_intercept=False it does not clip to bounds_X and bounds_y (candidate new, listed under "
                   "Candidate new findings)",
    "PipelineDP": "candidate new: a unit's NaN value makes SUM, MEAN and VARIANCE release NaN for its partition, "
                  "every time: their combiners' create_accumulator (pipeline_dp/combiners.py: SumCombiner, "
                  "MeanCombiner, VarianceCombiner) clip with np.clip, which keeps NaN, and PyDP adds noise to NaN. Not found in the PipelineDP tracker searched; "
                  "google/differential-privacy#405 (open) reports NaN passing ClampFloat64 in Google's Go library, "
                  "a different code path. Reproducers: reproducers/pipelinedp_sum_laplace_nan.py, pipelinedp_mean_laplace_nan.py, "
                  "pipelinedp_variance_laplace_nan.py, pipelinedp_sum_gaussian_nan.py, pipelinedp_mean_gaussian_nan.py, "
                  "pipelinedp_variance_gaussian_nan.py",
}
"""The record of the adversarial-input findings, per library."""

# --- Opacus: notes, record, left out (issue 36: the fifth library) -------------------------------
OPACUS_ACCOUNTANTS_KEY = "opacus.accountants"
"""Cache key of the Opacus accountant check (:func:`opacus_accountant_check`, ``--stages accountants``)."""

NOTES["Opacus"] = (
    "opacus 1.6.0 (PyTorch DP-SGD). Each row is one full-batch step of Opacus's own optimizer on a Linear(2, 2) "
    "model through `opacus.GradSampleModule` (`dpaudit.mechanisms.adapters.opacus.OpacusMechanism`, targets in "
    "`dpaudit.mechanisms.catalogue.opacus_optimizers`), with the noise multiplier Opacus calibrates for the claim "
    "(`get_noise_multiplier`, RDP accountant, sample_rate 1, one step): a Gaussian mechanism with mu = 1 / sigma "
    "whose exact delta at epsilon 1 is 2.2e-6, so the claim (1, 1e-5) holds in exact arithmetic. The RDP calibration "
    "is what `PrivacyEngine(accountant='rdp').make_private_with_epsilon` uses; PrivacyEngine's default accountant "
    "is 'prv' (opacus/privacy_engine.py, PrivacyEngine.__init__), whose tighter epsilon at q = 1 is checked against "
    "the exact Gaussian profile in the accountant section (not under at any grid point). The noise comes "
    "from a seeded `torch.Generator` (reproducible from --seed). Poisson sampling (the accountants' assumption) "
    "is not run here: at sample_rate 1 it is the full batch; Opacus's accounting of the subsampled mechanism is "
    "checked in the accountant section below instead. Re:cord-play (Cebere et al., PoPETs 2026) reports violations "
    "in Opacus; the excerpts of its paper available to this session do not name them, so these rows are not matched "
    "against it.")
_OPC_POWER = (
    "each twin is Opacus's optimizer with noise multiplier 2.84 = 0.7 x 4.06, a Gaussian mechanism with mu = 0.352: "
    "exactly (1.35, 1e-5)-DP, delta 3.8e-4 at epsilon 1 (dpaudit.privacy.profiles.gaussian_delta). At the claim's "
    "delta 1e-5 the certifying output set must be rare, so 10,000 outputs per dataset per trial certify epsilon "
    "about 0.9 and miss it, as OpenDP's Gaussian twins (computed in OpenDP's note: 2 x 10^6 to 6 x 10^6 outputs per "
    "dataset, 100 to 300 times the budget, for a (1.48, 1e-5)-DP twin); at 1 to 2 ms per Opacus step that budget "
    "is hours of CPU, not run. The secure_mode row's twin was reported caught (epsilon >= 1.12) by the float-bits "
    "tester on a searched pair, not by the planted Gaussian shift: a float32 granularity signal like the "
    "per-layer row's (see its entry below), so it says nothing of the budget's power for the planted leak")
LEFT_OUT["Opacus"] = {
    "ghost clipping (make_private(grad_sample_mode='ghost'): GradSampleModuleFastGradientClipping, "
    "DPOptimizerFastGradientClipping, DPLossFastGradientClipping)": "not in the registry yet: it needs Opacus's "
    "DPLoss wrapper around the loss (a different call sequence than the adapter's), left for a later session",
    "adaptive clipping (clipping='adaptive', AdaClipDPOptimizer)": "not in the registry yet: its clipping bound is "
    "itself released with noise across steps, so one step audits only part of it",
    "PrivacyEngine.make_private with Poisson sampling (DPDataLoader)": "the rows drive the optimizer directly at "
    "sample_rate 1 (full batch); the subsampled mechanism's accounting is checked in the accountant section",
}
ADVERSARIAL_RECORD["Opacus"] = (
    "candidate new as a report (the behaviour is plain IEEE arithmetic): one example whose features are NaN, "
    "+-inf or beyond float32's range (the largest doubles, cast to inf) makes every released parameter NaN, every "
    "time, so a NaN output tells whether that example was in the batch. Cause, read in Opacus 1.6.0: "
    "opacus/optimizers/optimizer.py, DPOptimizer.clip_and_accumulate computes per_sample_clip_factor = "
    "(max_grad_norm / (per_sample_norms + 1e-6)).clamp(max=1.0): a NaN norm gives a NaN factor (clamp keeps "
    "NaN) and an infinite norm a factor 0, and torch.einsum('i,i...', factor, grad_sample) then gives NaN "
    "(NaN * g, 0 * inf), so the clipped sum is NaN before the noise is added (DPPerLayerOptimizer."
    "clip_and_accumulate, opacus/optimizers/perlayeroptimizer.py, the same per layer). Nothing in "
    "GradSampleModule or DPOptimizer checks for non-finite per-sample gradients; not found in the Opacus tracker "
    "searched (meta-pytorch/opacus, two searches of NaN and clipping issues); whether Re:cord-play's Opacus "
    "findings include it was not checked (the excerpts of arXiv 2602.17454 available here do not name them). "
    "Reproducers: reproducers/opacus_dp_optimizer_nan.py, opacus_dp_optimizer_secure_nan.py, opacus_per_layer_nan.py")
RECORD["opacus.per_layer"] = (
    "unconfirmed, so not claimed. Floating-point attacks on Opacus's noise are known (arXiv 2112.05307, cited in "
    "_generate_noise's docstring, fixed for the sampler by secure_mode); a leak through the final float32 rounding "
    "of the noisy sum was not found reported (Opacus tracker searched for NaN/clipping only)")


# ---------------------------------------------------------------------------------------------
# Issue 36 item 6: deployed APIs added to the registry (diffprivlib models; PipelineDP add_dp_noise;
# OpenDP's Polars API). One block: the rows are appended to REGISTRY here, with their causes and record.
# ---------------------------------------------------------------------------------------------

_MOD = "dpaudit.mechanisms.catalogue.diffprivlib_models"
_MOD_BUDGET = Budget(samples=5000, trials=2)
"""The model rows' budget: one output is one fit (2-5 ms, 20-40 times a tools call)."""
_MOD_NB_CALIB = ("GaussianNB's calibration assumes replace-one: models/naive_bayes.py, _noisy_class_counts forces "
                 "the noisy class counts to sum to n = y.shape[0], and _update_mean_variance truncates each class sum "
                 "to [lower * n_i, upper * n_i] (n public)")
_MOD_LR_CALIB = ("LinearRegression(fit_intercept=False)'s calibration assumes add/remove: models/linear_regression.py, "
                 "_construct_regression_obj adds Laplace noise to each coefficient of the quadratic objective with one "
                 "record's largest contribution (corners of the bounds) as sensitivity, and uses no n (that bound also "
                 "covers replacing a record inside the bounds)")
_MOD_SS_CALIB = ("StandardScaler's calibration assumes replace-one: models/standard_scaler.py, "
                 "_incremental_mean_and_var calls tools.nanmean and tools.nanvar with bounds, whose sensitivities "
                 "((upper - lower) / n and ((upper - lower) / n)^2 (n - 1), tools/utils.py) use n")


def _model_entry(attr: str, cls: str, call: str, releases: str, relation: str, calib: str, assumed: str,
                 domain: str, **kw) -> Entry:
    """A diffprivlib model row: one fit of ``diffprivlib.models.cls`` per output, the fitted parameters released."""
    other = "add-remove" if assumed == "replace" else "replace"
    note = (f"inferred: {_DPL_NO_RELATION}; {calib}; " +
            (f"this row audits that relation; the other one, {other}, has its own row" if relation == assumed else
             f"this row audits the other relation, {relation}, which a user may mean"))
    g = Guarantee(1.0, 0.0, relation, domain, source=f"diffprivlib.models.{cls}(epsilon=1, ...)")
    return Entry("diffprivlib", f"models.{cls}", f"{_MOD}:{attr}", f"{call}; releases {releases}", g,
                 budget=_MOD_BUDGET, relation_note=note, **kw)


_MOD_NB_CAUSE = (
    "a library bug: models/naive_bayes.py, GaussianNB._partial_fit updates only the labels present in the data "
    "(for _i, y_i in enumerate(unique_y), unique_y = np.unique(y)), not the declared classes: a declared class with no "
    "record keeps theta_ 0, var_ 0 + var_smoothing and class_count_ exactly 0, while _noisy_class_counts gives every "
    "present class a count >= 1 (GeometricTruncated with lower=1, then the fix-up loop clips to [1, n]). Whether a "
    "label occurs is released without noise: a dataset with no record labelled 1 releases class_count_[1] = 0 every "
    "time, its neighbour with one such record never does (no epsilon holds at delta < 1). The same holds when classes "
    "are left to fit() (classes_ = np.unique(y) is then released)")
_MOD_NB_ADD_REMOVE_CAUSE = _MOD_NB_CAUSE + ("; under add/remove, in addition, class_count_ sums to n exactly "
                                            "(_noisy_class_counts), so n is released")
_MOD_LR_CAUSE = (
    "a library bug: models/linear_regression.py, _construct_regression_obj: the sensitivity of each diagonal "
    "second-degree coefficient sum x_i^2 is np.max(np.abs([bounds_X[0][i], bounds_X[0][i]])) ** 2, the lower bound "
    "twice; with bounds_X = (0, 1) and fit_intercept=False (no centring) it is 0, so LaplaceFolded adds no noise and "
    "sum x^2 enters the objective exactly. coef_ = (sum x y + Laplace noise) / sum x^2 then has a noise scale that "
    "depends on the data: D0 = [(0.5, 0)] releases Laplace(3) / 0.25, D1 = D0 + (1, 0) releases Laplace(3) / 1.25, "
    "whose tails differ without bound. With fit_intercept=True (the default) the bounds are first centred by the noisy "
    "mean X_offset and the sensitivity is X_offset^2 instead of max(X_offset, 1 - X_offset)^2: under-noised, not "
    "noiseless (not audited here). The adversarial screen's leaks on these rows (the largest doubles, integer "
    "records, 2^53 + 1) are the same finding: LinearRegression clips those values into the bounds (to 0 or 1), and "
    "the pair's datasets then differ in their noiseless sum x^2")
_MOD_SS_ADD_REMOVE_CAUSE = (
    "the relation: StandardScaler's mean_ and var_ are tools.nanmean and tools.nanvar (models/standard_scaler.py, "
    "_incremental_mean_and_var), calibrated with the record count n: tools/utils.py, _var builds "
    "LaplaceBoundedDomain(sensitivity=((upper - lower) / array.size) ** 2 * (array.size - 1)), which is 0 for one "
    "record, so a one-record dataset releases var_ = 0 exactly while its neighbour with a second record releases a "
    "noisy, almost never zero, variance (the mean's sensitivity (upper - lower) / n likewise assumes n fixed). "
    "Under replace-one, where n is public, a one-record variance is 0 on both sides and this is not a leak. The "
    "adversarial screen's leaks on this row are the same finding: its pairs add a record to a one-record dataset")

_MODELS: tuple[Entry, ...] = (
    _model_entry("gaussian_nb", "GaussianNB", "GaussianNB(epsilon=1, bounds=(0, 1)).partial_fit(X, y, classes=[0, 1]) "
                 "on records (x, label), label = second coordinate >= 1/2", "theta_, var_, class_count_ (6 numbers)",
                 "replace", _MOD_NB_CALIB, "replace", "records in [0, 1]^2 (feature, label), 1 to 10 records (n public)",
                 cause=_MOD_NB_CAUSE),
    _model_entry("gaussian_nb_add_remove", "GaussianNB", "as models.GaussianNB, audited under add/remove",
                 "theta_, var_, class_count_ (6 numbers)", "add-remove", _MOD_NB_CALIB, "replace",
                 "records in [0, 1]^2 (feature, label), 1 to 10 records", cause=_MOD_NB_ADD_REMOVE_CAUSE),
    _model_entry("linear_regression", "LinearRegression", "LinearRegression(epsilon=1, bounds_X=(0, 1), "
                 "bounds_y=(0, 1), fit_intercept=False).fit(X, y) on records (x, y), x in [1/2, 1] (all-zero x make "
                 "SciPy's minimiser run 0.5 s per fit)", "coef_", "add-remove", _MOD_LR_CALIB, "add-remove",
                 "records in [1/2, 1] x [0, 1], 1 to 10 records", cause=_MOD_LR_CAUSE),
    _model_entry("linear_regression_replace", "LinearRegression", "as models.LinearRegression, audited under "
                 "replace-one", "coef_", "replace", _MOD_LR_CALIB, "add-remove",
                 "records in [1/2, 1] x [0, 1], 1 to 10 records (n public)", cause=_MOD_LR_CAUSE),
    _model_entry("standard_scaler", "StandardScaler", "StandardScaler(epsilon=1, bounds=(0, 1)).fit(X) on 1-D records "
                 "(nanmean and nanvar, epsilon/2 each)", "mean_, var_", "replace", _MOD_SS_CALIB, "replace",
                 "records in [0, 1], 1 to 10 records (n public)"),
    _model_entry("standard_scaler_add_remove", "StandardScaler", "as models.StandardScaler, audited under add/remove",
                 "mean_, var_", "add-remove", _MOD_SS_CALIB, "replace", "records in [0, 1], 1 to 10 records",
                 cause=_MOD_SS_ADD_REMOVE_CAUSE),
)
"""The diffprivlib model rows (``dpaudit.mechanisms.catalogue.diffprivlib_models``): each model under the
relation its calibration assumes and under the other."""

FLOAT_CAUSES["standard_scaler"] = ("models/standard_scaler.py: _incremental_mean_and_var releases mean_ = "
                                   "tools.nanmean (LaplaceTruncated.randomise of the float mean, tools/utils.py) "
                                   "and var_ = tools.nanvar (LaplaceBoundedDomain.randomise)")
FLOAT_CAUSES["standard_scaler_add_remove"] = FLOAT_CAUSES["standard_scaler"]
RECORD.update({
    "diffprivlib.gaussian_nb": "candidate new for GaussianNB with declared classes, a variant of "
                               "IBM/differential-privacy-library#106 'Domain Inference via the label set' (open, "
                               "filed by a Re:cord-play author: LogisticRegression's classes = np.unique(y)); here "
                               "the leak remains when the user declares classes=[0, 1], because the update loop "
                               "runs over np.unique(y). Not found for GaussianNB in the tracker searched (two "
                               "queries), nor among the five issues of #104",
    "diffprivlib.gaussian_nb_add_remove": "as models.GaussianNB (candidate new), plus the relation (n released)",
    "diffprivlib.linear_regression": "known: IBM/differential-privacy-library#105 'Sensitivity Misscalibration for "
                                     "Linear Regression' (open, filed by a Re:cord-play author; fix in PR #110, open) "
                                     "and #104 item 1; found here from the fitted coef_ alone",
    "diffprivlib.linear_regression_replace": "known: as models.LinearRegression (#105)",
    "diffprivlib.standard_scaler": _DPL_FLOAT_KNOWN,
    "diffprivlib.standard_scaler_add_remove": "relation-dependent, as tools.mean under add/remove",
})

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
for _k in ("add_dp_noise_gaussian", "add_dp_noise_gaussian_pld"):
    RECORD[f"pipelinedp.{_k}"] = RECORD["pipelinedp.count_gaussian"] + " (same cause as Metrics.COUNT, Gaussian)"

_ODP_POLARS = Entry(
    "OpenDP", "extras.polars: make_private_lazyframe (polars_sum_len)", "dpaudit.mechanisms.catalogue.opendp_polars:sum_len",
    "dp.Context.compositor(LazyFrame of one Float64 column x, unit_of(contributions=1), loss_of(epsilon=1), "
    "margins=[Margin(by=[], max_length=10)]).query().select(x.fill_nan(0).fill_null(0).dp.sum(bounds=(0, 1)), "
    "dp.len()), resolved once (make_private_lazyframe, Laplace scales by OpenDP's binary search) and invoked per "
    "dataset; releases [sum, len]",
    Guarantee(1.0, 0.0, "add-remove", "records in [0, 1], 0 to 10 records (max_length 10)",
              "opendp.extras.polars: the query's privacy map at d_in 1 (target.claim())"),
    budget=Budget(samples=10000, trials=2), documented=_ODP_FLOAT_DOC)
"""OpenDP's Polars API row (``dpaudit.mechanisms.catalogue.opendp_polars``)."""

NOTES["OpenDP"] += (" The extras.polars row (one more) is OpenDP's Polars API: a dp.Context query over a LazyFrame, "
                    "resolved once into its measurement (make_private_lazyframe) and invoked on each dataset.")
_DEPLOYED: tuple[Entry, ...] = _MODELS + _PIPELINEDP_NOISE + (_ODP_POLARS,)
"""The rows of this block (issue 36 item 6), appended to the registry after the PyDP rows."""
REGISTRY = REGISTRY + _DEPLOYED
ADVERSARIAL_RECORD["PipelineDP"] += (
    "; DPEngine.add_dp_noise likewise releases NaN for a NaN value (pipeline_dp/dp_engine.py, _add_dp_noise adds "
    "noise to whatever value it is given; its docstring leaves bounding to the caller, and np.clip, the caller's "
    "usual bound and PipelineDP's own, keeps NaN): reproducers/pipelinedp_add_dp_noise_laplace_nan.py")


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
POWER_NOTES.update({"opacus.dp_optimizer": _OPC_POWER})
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


_OPC_NONFINITE = ("nan", "every non-finite or float32-overflowing feature takes the same path as NaN "
                  "(DPOptimizer.clip_and_accumulate: an infinite norm gives factor 0 and 0 * inf = NaN)")
_ROW_FINDING = ("row", "the same finding as the row's own: the values enter unclipped or the sensitivity is 0 "
                "whatever the record (the row's cause), so the row's reproducer shows it")
ADVERSARIAL_SAME_CAUSE: dict[str, tuple[str, str]] = {
    "opacus.dp_optimizer": _OPC_NONFINITE,
    "opacus.dp_optimizer_secure": _OPC_NONFINITE,
    "opacus.per_layer": _OPC_NONFINITE,
    "opacus.make_private": ("opacus_dp_optimizer_nan.py", "make_private wraps the optimizer in the same DPOptimizer, "
                            "whose clip_and_accumulate turns a non-finite feature into NaN parameters"),
    "diffprivlib.linear_regression_diagonal": _ROW_FINDING,
    "diffprivlib.linear_regression": _ROW_FINDING,
    "diffprivlib.linear_regression_replace": _ROW_FINDING,
    "diffprivlib.standard_scaler_add_remove": _ROW_FINDING,
}
"""Rows whose adversarial leaks share one cause and one reproducer: ``key -> (kind, why)``, where
``kind`` names the adversarial input whose reproducer shows them all, ``"row"`` for the row's
own reproducer, or a script of ``reproducers/`` (a name ending in ``.py``) that shows the same
code path on another row (:func:`adversarial_reproducer_for`)."""


def adversarial_reproducer_for(entry: Entry, kind: str) -> Path:
    """The reproducer that shows ``entry``'s leak on the adversarial input ``kind``: its own script
    when there is one, else the script of the input (or the row) named in
    :data:`ADVERSARIAL_SAME_CAUSE` (the path may not exist)."""
    own = adversarial_reproducer_path(entry, kind)
    if own.exists() or entry.key not in ADVERSARIAL_SAME_CAUSE:
        return own
    shared = ADVERSARIAL_SAME_CAUSE[entry.key][0]
    if shared.endswith(".py"):
        return REPRODUCERS / shared
    return reproducer_path(entry) if shared == "row" else adversarial_reproducer_path(entry, shared)


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
        3 inconclusive, 4 internal error, 5 floating-point leak alone; cached rows written before
        issue 44 have 1 for it); None when the entry was not run.
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
    if exit_code in (1, 5) or violation:  # 5: a floating-point leak alone (issue 44); 1 before that too
        if not (exit_code in (1, 5) and violation):
            raise ValueError(f"exit code {exit_code!r} and result violation={violation!r} disagree")
        kind = result.get("violation_kind")
        if kind == "floating-point":
            return "floating-point leak"
        if kind == "distributional" and exit_code == 1:
            return "violation"
        raise ValueError(f"violation_kind {kind!r} with exit code {exit_code!r}")
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
        extra = adversarial_reproducer_for(entry, kind)
        link = f"[{extra.name}](../reproducers/{extra.name})"
        if extra.exists() and link not in links:
            links.append(link)
    if links:
        return ", ".join(links)
    return "missing" if rec.get("verdict") not in ("pass", "not auditable", "unconfirmed") else "-"


def _recorded_seconds(record) -> float:
    """The sum of every ``seconds`` field in a cached record (audit, confirmation, leak, power,
    adversarial and accountant stages)."""
    if isinstance(record, dict):
        return sum(v if k == "seconds" and isinstance(v, (int, float)) else _recorded_seconds(v)
                   for k, v in record.items())
    if isinstance(record, list):
        return sum(_recorded_seconds(v) for v in record)
    return 0.0


def _time_budget(fresh: dict) -> str:
    """The table's time budget, summed from the cached rows' recorded wall times."""
    rows = [r for r in fresh.values() if r]
    audits = sum((r.get("first") or {}).get("seconds", 0) + (r.get("second") or {}).get("seconds", 0) for r in rows)
    total = sum(_recorded_seconds(r) for r in rows)
    return (f"Time budget: regenerating every stage of these {len(rows)} rows took {total / 3600:.1f} h of recorded "
            f"wall time ({audits / 3600:.1f} h for the audits and their confirmation runs), measured on the shared "
            "2-core machine under load, so an upper figure; `--write-only` rebuilds this page from the cache in "
            "seconds, and CI runs none of the audits, only the deterministic checks of tests/test_library_audit*.py "
            "and the reproducers.")


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
        "Times are the wall time of the first run's process (the confirmation run's in the violations list). "
        + _time_budget(fresh),
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
    lines += _record_lines(fresh)
    new = [e for e in entries if RECORD.get(e.key, "").startswith("candidate new") and fresh.get(e.key)
           and fresh[e.key]["verdict"] not in ("pass", "not auditable")]
    if new:
        lines += ["", "## Candidate new findings", "",
                  "Findings not found in the library's tracker (searched by issue text) nor in the older reports "
                  "(Mironov 2012, Jin et al. 2022, Haney et al. 2022, Casacuberta et al. 2022; the diffprivlib "
                  "issues cited above), and checked against the published record of Re:cord-play (PoPETs 2026, "
                  "section above): none of its 13 violations concerns PipelineDP or PyDP; its diffprivlib ones are R5 "
                  "and R6 (LinearRegression's diagonal sensitivity, LogisticRegression's label set: GaussianNB's "
                  "below is R6's kind in another model, where declaring the classes does not help), its Opacus one "
                  "is R7 (make_private's divisor), and its NaN robustness issues name other libraries, so each "
                  "candidate below stays new.", ""]
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
        lines += _record_module().candidate_lines()
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
    if any(e.library == "Opacus" for e in entries):
        lines += render_opacus_accountants(cache.get(OPACUS_ACCOUNTANTS_KEY))
    return "\n".join(lines).rstrip() + "\n"


def _record_module():
    """``benchmarks/library_record.py`` (the published record), imported as a sibling module."""
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    import library_record  # noqa: PLC0415  (a sibling script module)

    return library_record


def _record_lines(fresh: dict) -> list[str]:
    """The section "Against the published record" (``benchmarks/library_record.py``)."""
    return _record_module().render(fresh)


def load_cache(path: Path = CACHE) -> dict:
    """The cached records, ``key -> record`` (empty when there is no cache)."""
    return json.loads(path.read_text()) if path.exists() else {}


def _save(cache: dict, key: str) -> None:
    """Write ``cache[key]`` into the cache file, re-read first, so that two runs of this script on
    different entries (e.g. stages side by side) do not overwrite each other's rows."""
    disk = load_cache()
    mine = cache[key]
    if (disk.get(key) or {}).get("fingerprint") == mine.get("fingerprint"):  # same audit: merge the stages' fields
        merged = {**disk[key], **mine}
        mine.clear()
        mine.update(merged)  # the same object: a caller holding cache[key] keeps adding its next stage to it
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
                         "accountants (Opacus's accountants against a certified lower bound on the true epsilon); "
                    "'all' for every stage. The later stages need a current audit record")
    args = ap.parse_args(argv)
    known = {"audit", "leak", "adversarial", "power", "accountants"}
    stages = set(known) if args.stages == "all" else set(args.stages.split(","))
    if args.stages == "all" and args.entries and not any(k.startswith("opacus.") for k in args.entries):
        stages.discard("accountants")  # 'all' checks Opacus's accountants only with Opacus rows (or every row)
    if stages - known:
        raise SystemExit(f"unknown stages {sorted(stages - known)}")

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
                rec = cache[e.key]  # _save replaced the record by the merged one: later stages write there
            if "adversarial" in stages:
                rec["adversarial"] = screen_entry(e, samples=args.adversarial_samples,
                                                  float_grids=rec["verdict"] != "floating-point leak")
                print(f"{e.key:40s} adversarial: {_fmt_adversarial(rec)} ({rec['adversarial']['seconds']:.0f} s)",
                      flush=True)
                _save(cache, e.key)
                rec = cache[e.key]
            if "power" in stages and rec["verdict"] == "pass" and planted_target(e):
                power = power_entry(e, processes=args.processes, timeout=args.timeout,
                                    samples=args.power_samples, trials=args.power_trials)
                if power["exit_code"] is None:  # killed at --timeout: nothing learnt, the row keeps its last value
                    print(f"{e.key:40s} power: twin killed after {args.timeout} s, not stored", flush=True)
                    continue
                rec["power"] = power
                print(f"{e.key:40s} power: {_fmt_power(e, rec)} ({rec['power']['seconds']:.0f} s)", flush=True)
                _save(cache, e.key)
    if "accountants" in stages and not args.write_only and args.reruns is None:
        cache[OPACUS_ACCOUNTANTS_KEY] = opacus_accountant_check()
        _save(cache, OPACUS_ACCOUNTANTS_KEY)
        print(f"{OPACUS_ACCOUNTANTS_KEY:40s} {cache[OPACUS_ACCOUNTANTS_KEY]['seconds']:.0f} s", flush=True)
    DOC.write_text(render(REGISTRY, cache, reruns))
    print(f"wrote {DOC.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
