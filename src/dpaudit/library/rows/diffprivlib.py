"""The diffprivlib rows of the library-audit table (diffprivlib 0.6.6, IBM).

Every class of ``diffprivlib.mechanisms``, every function of ``diffprivlib.tools`` (each tool whose
calibration assumes one neighbouring relation audited under the other too), the models whose fitted
parameters are released (GaussianNB, LinearRegression, StandardScaler) and the two rows at the
published record's diffprivlib bugs; the targets are in ``dpaudit.mechanisms.catalogue``
(``diffprivlib_mechanisms``, ``diffprivlib_tools``, ``diffprivlib_models``, ``diffprivlib_record``).
The causes, relation notes and prior reports are read from diffprivlib's source and tracker.
"""

from __future__ import annotations

from dataclasses import replace

from ..entry import Budget, Cause, Entry, Guarantee, LibraryInfo, StructuralSet
from ..structural import float_addition_set

LIBRARY = LibraryInfo("diffprivlib", "diffprivlib", install="diffprivlib==0.6.6 'scikit-learn<1.6' numpy")
"""diffprivlib 0.6.6 imports ``sklearn.tree._tree.DOUBLE``, which scikit-learn 1.6 removed: a fresh
``pip install diffprivlib==0.6.6`` takes the newest scikit-learn and then fails at import, so the
install line pins scikit-learn below 1.6."""

_DPL = "dpaudit.mechanisms.catalogue.diffprivlib_mechanisms"
_DPL_NO_RELATION = "no diffprivlib 0.6.6 docstring names a neighbouring relation"
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


# --- Rows at the violations of the published record (Re:cord-play, PoPETs 2026): benchmarks/library_record.py
_REC = "dpaudit.mechanisms.catalogue.diffprivlib_record"
_REC_NO_RELATION = _DPL_NO_RELATION
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
    "noiseless (not audited here). The adversarial screen's leak on integer records is this finding (the int64 "
    "dataset rounds x to 0 or 1, so sum x^2 can be 0 and coef_ explodes); its leaks on the largest doubles and "
    "2^53 + 1 are another cause: _preprocess_data clips X and y to the bounds only when fit_intercept=True "
    "(clip_to_bounds, models/linear_regression.py), so with fit_intercept=False a record far outside the bounds "
    "enters the sufficient statistics unclipped (the cause diffprivlib.linreg-unclipped)")
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

_ENTRIES: tuple[Entry, ...] = (
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
    *_MODELS,
)

LEFT_OUT: dict = {}
"""diffprivlib's public functions with no row, and why (every tool and mechanism class has one)."""

NOTE = ""
"""A note printed under the library's heading (none)."""


# ---------------------------------------------------------------------------------------------
# Relations
# ---------------------------------------------------------------------------------------------


def relation_note(entry: Entry) -> str:
    """Where a diffprivlib row's relation comes from (always inferred: no docstring names one)."""
    rel = entry.guarantee.neighbouring
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


# ---------------------------------------------------------------------------------------------
# Floating-point causes, prior reports, adversarial findings
# ---------------------------------------------------------------------------------------------
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
    "standard_scaler": "models/standard_scaler.py: _incremental_mean_and_var releases mean_ = tools.nanmean "
                       "(LaplaceTruncated.randomise of the float mean, tools/utils.py) and var_ = tools.nanvar "
                       "(LaplaceBoundedDomain.randomise)",
}
"""The library code each diffprivlib floating-point leak comes from (diffprivlib 0.6.6, read in the
installed package), by target attribute."""
FLOAT_CAUSES["standard_scaler_add_remove"] = FLOAT_CAUSES["standard_scaler"]

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
    "diffprivlib.linear_regression_diagonal": "known: Re:cord-play (PoPETs 2026), IBM/differential-privacy-library#105 "
                                              "(open; fix PR #110 open); still in diffprivlib 0.6.6",
    "diffprivlib.logistic_regression_labels": "known: Re:cord-play (PoPETs 2026), IBM/differential-privacy-library#106 "
                                              "(open); still in diffprivlib 0.6.6",
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
}
"""Each diffprivlib finding against the record: known (with the reference), relation-dependent, or a
candidate new finding (searched for in the tracker and checked against the published record)."""

ADVERSARIAL_RECORD = (
    "known: IBM/differential-privacy-library#80 'Handling of NaNs' (open): a NaN record makes most "
    "tools release NaN, a distinguishing event (np.clip keeps NaN, tools/utils.py); Re:cord-play "
    "(PoPETs 2026) also reports NaN passing np.clip in diffprivlib, as a robustness issue. The leaks of "
    "models.LinearRegression on values outside the bounds (max-double, 2^53 + 1) are another cause: "
    "with fit_intercept=False it does not clip to bounds_X and bounds_y (candidate new, listed under "
    "Candidate new findings)")
"""The record of diffprivlib's adversarial-input findings."""

_ROW_FINDING = ("row", "the same finding as the row's own: the values enter unclipped or the sensitivity is 0 "
                "whatever the record (the row's cause), so the row's reproducer shows it")
_SAME_AS_ROW = ("row", "the fixed list's pair is the row's own finding on another pair (the class-1 record replaced: "
                "an absent class, for GaussianNB; a new label, for LogisticRegression's label set; a record added "
                "and clipped, under add/remove with n public), so the row's reproducer shows it")
_UNCLIPPED = ("diffprivlib_linear_regression_unclipped.py", "with fit_intercept=False, _preprocess_data does not clip X "
              "and y to the bounds (clip_to_bounds runs only when fit_intercept=True), so a record outside them enters "
              "the sufficient statistics unclipped; the reproducer shows it on one record of 100")
ADVERSARIAL_SAME_CAUSE = {
    "diffprivlib.linear_regression_diagonal": _UNCLIPPED,
    "diffprivlib.linear_regression": _UNCLIPPED,
    "diffprivlib.linear_regression_replace": _UNCLIPPED,
    "diffprivlib.standard_scaler_add_remove": _ROW_FINDING,
    **{f"diffprivlib.{k}": _SAME_AS_ROW for k in ("gaussian_nb", "gaussian_nb_add_remove", "logistic_regression_labels",
                                                   "sum_add_remove", "count_nonzero_add_remove")},
}
"""Rows whose adversarial leaks share one cause and one reproducer (see
:data:`dpaudit.library.findings.ADVERSARIAL_SAME_CAUSE`)."""

POWER_NOTES: dict = {}


# ---------------------------------------------------------------------------------------------
# Structural leak sizes (dpaudit.library.structural)
# ---------------------------------------------------------------------------------------------
_ONE = ([[0.0]], [[0.0], [1.0]])
"""The mechanisms' first witness pair: the clipped sum 0 vs 1."""


def _addition(attr: str, value: float, pair, column: int = 0) -> StructuralSet:
    return float_addition_set(column, value, reaches="D0", d0=pair[0], d1=pair[1],
                              release=FLOAT_CAUSES[attr].replace(" in float64", ""))


STRUCTURAL = {
    **{f"diffprivlib.{a}": _addition(a, 1.0, _ONE) for a in (
        "laplace", "laplace_truncated", "laplace_folded", "laplace_bounded_domain", "laplace_bounded_noise",
        "gaussian", "gaussian_analytic", "staircase")},
    **{f"diffprivlib.{a}": _addition(a, 1.0, ([[0.0]], [[1.0]])) for a in ("mean", "nanmean", "sum", "nansum")},
    **{f"diffprivlib.{a}": _addition(a, 0.25, ([[0.0], [0.0]], [[0.0], [1.0]])) for a in ("var", "nanvar")},
    "diffprivlib.mean_add_remove": float_addition_set(
        0, 0.5, reaches="D0", d0=[[0.0]], d1=[[0.0], [1.0]], release=FLOAT_CAUSES["mean"]),
    "diffprivlib.standard_scaler": _addition("standard_scaler", 1.0, ([[0.0]], [[1.0]])),
    "diffprivlib.sum_add_remove": StructuralSet(
        "y[0] > 1.0", "outputs above 1", "D1",
        "tools/utils.py, _sum truncates the noisy sum to [n * lower, n * upper] = [0, 1] for the one-record D0, so "
        "D0 never releases more than 1", d0=((0.0,),), d1=((0.0,), (1.0,))),
    "diffprivlib.count_nonzero_add_remove": StructuralSet(
        "y[0] > 1.0", "outputs above 1", "D1",
        "tools/utils.py, count_nonzero is GeometricTruncated to [0, n] = [0, 1] for the one-record D0",
        d0=((0.0,),), d1=((0.0,), (1.0,))),
    **{f"diffprivlib.{k}": StructuralSet(
        "y[5] == 0.0", "class_count_[1] released as exactly 0", "D0",
        "models/naive_bayes.py, GaussianNB._partial_fit updates only the labels present in y: on D0 (no record "
        "labelled 1) class_count_[1] stays 0, on D1 (one record labelled 1) _noisy_class_counts gives it a count "
        ">= 1", always=True, d0=d0, d1=d1)
       for k, d0, d1 in (("gaussian_nb", ((0.5, 0.0), (0.5, 0.0)), ((0.5, 0.0), (0.5, 1.0))),
                         ("gaussian_nb_add_remove", ((0.5, 0.0),), ((0.5, 0.0), (0.5, 1.0))))},
    "diffprivlib.logistic_regression_labels": StructuralSet(
        "y[0] == 3.0", "3 coefficient rows (a third class)", "D1",
        "models/logistic_regression.py, fit sets classes_ = np.unique(y): with the public labels 0 and 1, D0's "
        "record (label 0) gives 2 classes and 1 coefficient row, D1's (label 2) gives 3 classes and 3 rows",
        always=True, d0=((0.5, 0.0),), d1=((0.5, 1.0),)),
}
"""Findings whose set one dataset never reaches by construction (:mod:`dpaudit.library.structural`)."""

ENTRIES: tuple[Entry, ...] = tuple(replace(e, structural=STRUCTURAL.get(e.key)) for e in _ENTRIES)
"""The diffprivlib rows, in table order."""


# ---------------------------------------------------------------------------------------------
# Causes: one per issue a maintainer would file (dpaudit.library.findings)
# ---------------------------------------------------------------------------------------------
_DPL_TRACKER = "IBM/differential-privacy-library issues and pull requests"
_FLOAT_ROWS = ("laplace", "laplace_truncated", "laplace_folded", "laplace_bounded_domain", "laplace_bounded_noise",
               "gaussian", "gaussian_analytic", "staircase", "uniform", "mean", "nanmean", "var", "nanvar", "sum",
               "nansum", "mean_add_remove", "standard_scaler")
_NAN_ROWS = ("mean", "nanmean", "var", "nanvar", "std", "nanstd", "sum", "median", "quantile", "percentile",
             "sum_add_remove", "mean_add_remove")
_LINREG = ("linear_regression_diagonal", "linear_regression", "linear_regression_replace")
CAUSES = (
    Cause("diffprivlib.float-addition", "diffprivlib",
          "The final float64 addition of the noise leaks the true value through the output's low bits",
          "floating-point", rows=tuple(f"diffprivlib.{k}" for k in _FLOAT_ROWS),
          prior="Mironov 2012 (the attack); IBM/differential-privacy-library#19 'Floating-point privacy "
                "vulnerabilities' (closed by #47: the samplers now combine four uniforms, the final addition is "
                "unchanged); #94 'Insecure noise primitives should be marked as such and/or removed entirely' (open, "
                "2024: precision-based attacks, Haney et al. 2022, on the same addition)",
          reproducer="reproducers/diffprivlib_laplace.py",
          note="one cause in 17 rows: every mechanism and tool that releases value + float noise; Snapping, the "
               "library's own fix, passes"),
    Cause("diffprivlib.nan-passes-clip", "diffprivlib",
          "A NaN record passes np.clip and the release is NaN, every time", "library bug",
          adversarial=tuple((f"diffprivlib.{k}", "nan") for k in _NAN_ROWS),
          prior="IBM/differential-privacy-library#80 'Handling of NaNs' (open); Re:cord-play (PoPETs 2026) reports "
                "NaN passing np.clip in diffprivlib as a robustness issue",
          reproducer="reproducers/diffprivlib_mean_nan.py"),
    Cause("diffprivlib.n-public", "diffprivlib",
          "sum, count_nonzero and StandardScaler use the record count n as public: not DP under add/remove",
          "relation-dependent",
          rows=("diffprivlib.sum_add_remove", "diffprivlib.count_nonzero_add_remove",
                "diffprivlib.standard_scaler_add_remove"),
          adversarial=tuple(("diffprivlib.standard_scaler_add_remove", k) for k in (
              "-0.0", "subnormal", "max-double", "-max-double", "above-bounds", "below-bounds", "integer-dtype",
              "above-2^53", "search:specials")) + tuple(
              (f"diffprivlib.{k}", kind) for k in ("sum_add_remove", "count_nonzero_add_remove")
              for kind in ("search:specials", "search:limits", "search:dtypes", "+inf", "-inf")),
          searched=f"{_DPL_TRACKER} (queries: sum count_nonzero bounds n truncation add remove; relation): "
                   "#33 asks why not bounded Laplace for counts, none reports the relation",
          reproducer="reproducers/diffprivlib_sum_add_remove.py",
          note="depends on the relation, which the library does not document: correct under replace-one (n "
               "public), which the calibration assumes; the adversarial screen's leaks on "
               "standard_scaler_add_remove are the same one-record pair"),
    Cause("diffprivlib.histogram-replace", "diffprivlib",
          "histogram is 2-DP, not 1-DP, under replace-one", "relation-dependent",
          rows=("diffprivlib.histogram_replace",), searched=_DPL_TRACKER,
          reproducer="reproducers/diffprivlib_histogram_replace.py",
          note="depends on the relation, which the library does not document: the calibration is add/remove's"),
    Cause("diffprivlib.gaussiannb-absent-class", "diffprivlib",
          "GaussianNB releases whether a declared class occurs: class_count_ is exactly 0 for an absent class",
          "library bug", rows=("diffprivlib.gaussian_nb", "diffprivlib.gaussian_nb_add_remove"),
          adversarial=tuple((f"diffprivlib.{k}", kind) for k in ("gaussian_nb", "gaussian_nb_add_remove")
                            for kind in ("search:specials", "-0.0")),
          prior="a variant of IBM/differential-privacy-library#106 'Domain Inference via the label set' (open, "
                "LogisticRegression's classes = np.unique(y)); not reported for GaussianNB, where declaring the "
                "classes does not help",
          searched=f"{_DPL_TRACKER} (GaussianNB classes class_count zero; naive bayes partial_fit); #104's five items",
          reproducer="reproducers/diffprivlib_gaussian_nb.py",
          note="gaussian_nb_add_remove repeats the bug under the other relation (and releases n besides)"),
    Cause("diffprivlib.linreg-diagonal-sensitivity", "diffprivlib",
          "LinearRegression calibrates the diagonal coefficients to the lower bound twice (sensitivity 0)",
          "library bug", rows=tuple(f"diffprivlib.{k}" for k in _LINREG),
          adversarial=(("diffprivlib.linear_regression", "integer-dtype"),
                       ("diffprivlib.linear_regression_replace", "integer-dtype")),
          prior="IBM/differential-privacy-library#105 'Sensitivity Misscalibration for Linear Regression' (open; fix "
                "PR #110 open), Re:cord-play R5; #104 item 1",
          reproducer="reproducers/diffprivlib_linear_regression.py",
          note="linear_regression_replace repeats the bug under the other relation; linear_regression_diagonal is "
               "the record's configuration"),
    Cause("diffprivlib.linreg-unclipped", "diffprivlib",
          "LinearRegression(fit_intercept=False) does not clip X and y to the bounds", "library bug",
          adversarial=tuple((f"diffprivlib.{k}", kind) for k in _LINREG
                            for kind in ("max-double", "-max-double", "above-2^53", "search:specials")),
          searched=f"{_DPL_TRACKER} (LinearRegression fit_intercept=False clip bounds); #104, #105 are about the "
                   "sensitivities, #80 about NaN",
          reproducer="reproducers/diffprivlib_linear_regression_unclipped.py"),
    Cause("diffprivlib.accumulator-overflow", "diffprivlib",
          "tools.sum, nansum, mean and nanmean with public bounds near the type's limit: the sum of the clipped "
          "records overflows before the noise (int64 wraps around, float64 reaches inf)", "library bug",
          adversarial=tuple((f"diffprivlib.{k}", "search:limits") for k in (
              "sum", "nansum", "mean", "nanmean", "var", "nanvar", "std", "nanstd")),
          prior="the class is known (Casacuberta et al., CCS 2022; opendp/opendp#178 'Overflow handling in Sum', "
                "closed by saturating or checked arithmetic; google/differential-privacy#40 for Google's C++ "
                "BoundedMean<int>); not found as a report against diffprivlib",
          searched=f"{_DPL_TRACKER} (sum integer overflow dtype int64 bounds)",
          reproducer="reproducers/diffprivlib_sum_search_int64_bounds.py",
          note="found blind by the input-space search (limits family): no hand-written pair"),
    Cause("diffprivlib.histogram-weights", "diffprivlib",
          "histogram, histogram2d and histogramdd take per-record weights but calibrate the noise to a weight of "
          "1: a record of weight w moves its bin by w", "library bug",
          adversarial=tuple((f"diffprivlib.{k}", "search:columns") for k in ("histogram", "histogram2d",
                                                                             "histogramdd")),
          searched=f"{_DPL_TRACKER} (histogram weights sensitivity): #99 is about epsilon, none about weights",
          reproducer="reproducers/diffprivlib_histogram_search_weights.py",
          note="found blind by the input-space search (columns family: the weights argument carries per-record "
               "data); the weights are NumPy's histogram argument, passed through"),
    Cause("diffprivlib.nan-counted-in-n", "diffprivlib",
          "nanmean, nanvar and nanstd skip NaN records in the statistic but count them in the n the noise is "
          "calibrated to: several NaNs next to one ordinary record get too little noise", "library bug",
          adversarial=tuple((f"diffprivlib.{k}", "search:specials") for k in ("nanmean", "nanvar", "nanstd")),
          prior="IBM/differential-privacy-library#80 'Handling of NaNs' (open) asks how NaNs are handled; not this "
                "calibration",
          searched=f"{_DPL_TRACKER} (nanmean NaN count sensitivity)",
          reproducer="reproducers/diffprivlib_nanmean_search_several_nan.py",
          note="found blind by the input-space search (specials family: several special values in one dataset)"),
    Cause("diffprivlib.logreg-label-set", "diffprivlib",
          "LogisticRegression reads the label set from the private labels", "library bug",
          rows=("diffprivlib.logistic_regression_labels",),
          adversarial=tuple(("diffprivlib.logistic_regression_labels", kind) for kind in (
              "search:specials", "max-double", "-max-double")),
          prior="IBM/differential-privacy-library#106 (open), Re:cord-play R6",
          reproducer="reproducers/diffprivlib_logistic_regression_labels.py"),
)
"""diffprivlib's findings, one per cause."""
