"""The OpenDP rows of the library-audit table (OpenDP 0.16.0, the OpenDP project).

Every measurement constructor of ``opendp.measurements`` that takes a dataset, behind the
transformations a user puts in front, and one query of OpenDP's Polars API; the targets are in
``dpaudit.mechanisms.catalogue.opendp_measurements`` and ``opendp_polars``. Each row's claim is
OpenDP's own privacy map of the chain as built (``target.claim()``).
"""

from __future__ import annotations

from ..entry import Budget, Entry, Guarantee, LibraryInfo

LIBRARY = LibraryInfo("OpenDP", "opendp", install="'opendp[polars]==0.16.0' numpy")

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

ENTRIES: tuple[Entry, ...] = _OPENDP + (_ODP_POLARS,)
"""The OpenDP rows, in table order."""

NOTE = ("`opendp.measurements` 0.16.0 has 20 `make_` constructors: the 16 that take a dataset have rows "
              "(21 rows: several transformations in front of make_laplace, make_geometric, make_gaussian, "
              "make_noisy_max), the other 4 are listed under Left out. Claims are OpenDP's own: each row's guarantee is the privacy map of the chain as built "
              "(`target.claim()` in `dpaudit.mechanisms.catalogue.opendp_measurements`), with scales calibrated by OpenDP's "
              "binary search to epsilon <= 1; zCDP measurements (Gaussian, noisy max with Gumbel noise, Gaussian "
              "threshold) are converted by OpenDP's `make_zCDP_to_approxDP` and `make_fix_delta(1e-5)`. OpenDP "
              "draws its noise from the operating system and cannot be seeded: `--seed` replays the pairs "
              "tested, not the outputs, so a rerun gives another epsilon lower bound (e.g. `make_laplace_threshold` "
              "and `make_noise_threshold`, the same measurement, gave 0.91 and 0 in one run each) and a verdict "
              "near the threshold could flip; the reruns below count how often exact rows are accused."
        " The extras.polars row (one more) is OpenDP's Polars API: a dp.Context query over a LazyFrame, "
        "resolved once into its measurement (make_private_lazyframe) and invoked on each dataset.")
"""Printed under the library's heading."""

LEFT_OUT = {
        "measurements.make_private_expr, make_private_lazyframe": "Polars query plans (installed with the "
        "opendp-polars extra): one plan, a private sum and length through dp.Context, has its own row "
        "(extras.polars, below the measurement rows); other plans (grouped counts, quantiles, make_private_expr alone) add their noise by "
        "make_noise and make_noise_threshold, audited here",
        "measurements.make_user_measurement": "a measurement from the user's own function and privacy map "
        "(feature honest-but-curious): its guarantee is the user's claim, not OpenDP's",
        "measurements.make_proof_link": "not a measurement: it returns the link to a proof document (a string)",
    }
"""OpenDP's measurement constructors with no row, and why."""

_ODP_CONTRIBUTIONS = ('input metric SymmetricDistance at d_in {d}: "Greatest number of records or identifiers a '
                      'privacy unit may contribute to microdata" (opendp/context.py, unit_of, contributions)')


def relation_note(entry: Entry) -> str:
    """Where an OpenDP row's relation comes from: the chain's input metric (documented)."""
    rel = entry.guarantee.neighbouring
    if rel == "replace" and "mean" in entry.target:
        return "documented: " + _ODP_CONTRIBUTIONS.format(d=2) + "; a replaced record is 2 contributions"
    if rel == "replace":
        return "documented: input metric DiscreteDistance at d_in 1 (the measurement's own input metric): any two inputs"
    return "documented: " + _ODP_CONTRIBUTIONS.format(d=1)


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

RECORD: dict = {}
ADVERSARIAL_RECORD = ""
ADVERSARIAL_SAME_CAUSE: dict = {}
FLOAT_CAUSES: dict = {}

CAUSES: tuple = ()
"""No finding."""
