"""The published record of implementation bugs in DP libraries, checked against the rows of the
library-audit table (:mod:`dpaudit.library.registry`): the section "Against the published record" of
``docs/library_audits.md``.

:data:`PUBLISHED_RECORD` lists the 13 privacy violations of Re:cord-play (Cebere, Erb, Desfontaines,
Bellet, Fitzsimons, "Privacy in Theory, Bugs in Practice: Grey-Box Auditing of Differential Privacy
Libraries", PoPETs 2026, arXiv 2602.17454; code: ObliviousAI/dp-recorder) and :data:`OLDER_REPORTS`
the older reports on the libraries this table covers (Mironov 2012; Jin et al. 2022; Haney et al.
2022; Casacuberta et al. 2022). Each item says whether it falls in a covered library and version,
and then either names the registry rows that find it (``found``) or says why none does
(``reason``: fixed in this version, not in the registry, needs inputs the search does not try, ...).

How the 13 were compiled (facts only): the paper's table of violations was not readable here (only
its abstract is stored); the list is rebuilt from the issues its first author filed (IBM diffprivlib
#105, #106; SmartNoise SDK #621, #622; private-PGM #65; dpmm #18), the dp-recorder artifact (its
ARTIFACT_APPENDIX and the docstrings of its minimal reproductions, which name the library each one
maps to) and a third-party summary of the paper's per-library findings. Items rebuilt without an
issue of their own are marked ``reconstructed``.

The module is data plus :func:`render` (Markdown lines); :func:`dpaudit.library.table.render` appends them.
"""

from __future__ import annotations

RECORD_SOURCE = ("Re:cord-play: Cebere, Erb, Desfontaines, Bellet, Fitzsimons, 'Privacy in Theory, Bugs in Practice: "
                 "Grey-Box Auditing of Differential Privacy Libraries', PoPETs 2026 (arXiv 2602.17454), 12 libraries, "
                 "13 violations; code ObliviousAI/dp-recorder")

COVERED = {"diffprivlib": "0.6.6", "OpenDP": "0.16.0", "PipelineDP": "0.3.1", "PyDP": "1.1.5", "Opacus": "1.6.0"}
"""The libraries and versions this table covers (Opacus: its rows are added by the DP-SGD audit work)."""

_RECONSTRUCTED = ("reconstructed from the dp-recorder artifact (a minimal reproduction mapped to this library) and "
                  "a third-party summary of the paper; no issue found in the tracker searched")
_NOT_COVERED = "not a covered library (not installed here; see 'Left out of the registry so far')"

PUBLISHED_RECORD: tuple[dict, ...] = (
    {"id": "R1", "library": "SmartNoise SDK (synth)", "version": "as audited in the paper (before Feb 2026)",
     "function": "snsynth.models.dp_covariance: DPcovariance.release",
     "kind": "sensitivity miscalibration",
     "what": "the data are censored (clipped) and imputed, then the covariance is computed on the raw data, so the "
             "noise calibrated to clipped records does not bound one record's effect",
     "relation": "one record changed (the declared sensitivity assumes clipped records)",
     "evidence": "Re:cord-play's sensitivity check: the distance between the primitive's inputs on neighbours "
                 "exceeds the declared sensitivity",
     "link": "opendp/smartnoise-sdk#622 (closed; fixed by PR #624, merged 2026-02-10)",
     "reason": _NOT_COVERED},
    {"id": "R2", "library": "SmartNoise SDK (sql)", "version": "as audited in the paper (before Feb 2026)",
     "function": "snsql Odometer (advanced composition)",
     "kind": "accounting formula",
     "what": "the advanced-composition term lacks the log: sqrt(2 k (1/tol)) where Dwork-Rothblum-Vadhan's theorem "
             "has sqrt(2 k log(1/tol)); the issue states the accounting overestimates the loss",
     "relation": "any (composition of k mechanisms)",
     "evidence": "read in the accountant against Theorem 3.4 of arXiv 1311.0776",
     "link": "opendp/smartnoise-sdk#621 (closed; fixed by PR #624)",
     "reason": _NOT_COVERED},
    {"id": "R3", "library": "Synthcity", "version": "as audited in the paper",
     "function": "PrivBayes (noisy conditionals)",
     "kind": "noise miscalibration",
     "what": "the sensitivity used for the noise scale evaluates to 0 when the network degree K equals the number "
             "of features, which switches the noise off",
     "relation": "one record changed",
     "evidence": "sensitivity check (declared sensitivity 0 against a positive measured distance)",
     "link": _RECONSTRUCTED, "reason": _NOT_COVERED},
    {"id": "R4", "library": "Synthcity", "version": "as audited in the paper",
     "function": "a DP model's preprocessing (dataset size used as public)",
     "kind": "data-dependent control flow",
     "what": "len(data), private under add/remove, is used as a public scaling factor",
     "relation": "add/remove",
     "evidence": "record/replay: the value that must be data-independent differs between D and D'",
     "link": _RECONSTRUCTED, "reason": _NOT_COVERED},
    {"id": "R5", "library": "diffprivlib", "version": "0.6.6 (open in the tracker)",
     "function": "models.LinearRegression (_construct_regression_obj)",
     "kind": "sensitivity miscalibration",
     "what": "the noise of each diagonal coefficient sum x_i^2 uses the lower bound twice: sensitivity 0 for "
             "bounds_X = (0, u), so that coefficient is released exactly",
     "relation": "one record changed or added",
     "evidence": "sensitivity check (declared 0, measured distance > 0)",
     "link": "IBM/differential-privacy-library#105 (open; fix PR #110 open)",
     "found": ("diffprivlib.linear_regression_diagonal", "diffprivlib.linear_regression", "diffprivlib.linear_regression_replace")},
    {"id": "R6", "library": "diffprivlib", "version": "0.6.6 (open in the tracker)",
     "function": "models.LogisticRegression (fit: classes_ = np.unique(y))",
     "kind": "data-dependent control flow (domain inference)",
     "what": "the label set is read from the private labels: a record with a unique label changes the number of "
             "one-vs-rest models (and the epsilon split)",
     "relation": "add/remove (also replace-one)",
     "evidence": "record/replay: the number of classes differs between D and D'",
     "link": "IBM/differential-privacy-library#106 (open)",
     "found": ("diffprivlib.logistic_regression_labels",)},
    {"id": "R7", "library": "Opacus", "version": "1.6.0 (still present)",
     "function": "PrivacyEngine.make_private: expected_batch_size = int(len(data_loader.dataset) * sample_rate)",
     "kind": "data-dependent control flow (dataset size)",
     "what": "the gradient sum is divided by a batch size computed from the private dataset size, so the "
             "normaliser differs between neighbours under add/remove",
     "relation": "add/remove",
     "evidence": "record/replay: the normaliser differs between D and D' (the artifact's Opacus reproduction)",
     "link": "meta-pytorch/opacus#571 (open, filed 2023 by the paper's first author; see also #819)",
     "found": ("opacus.make_private",)},
    {"id": "R8", "library": "private-PGM (mbi)", "version": "as audited in the paper (before Dec 2025)",
     "function": "JAM mechanism",
     "kind": "sensitivity miscalibration",
     "what": "the sensitivity is declared 2 where it is 4 (noise too small by 2x)",
     "relation": "one record changed",
     "evidence": "sensitivity check",
     "link": "ryan112358/mbi#65 (fixed by PR #66, merged)",
     "reason": _NOT_COVERED},
    {"id": "R9", "library": "dpmm", "version": "as audited in the paper (before Dec 2025)",
     "function": "AIM (core model)",
     "kind": "data-dependent control flow (domain inference)",
     "what": "the data domain is read from the private data when the model is used without its pipeline",
     "relation": "add/remove",
     "evidence": "record/replay: the domain differs between D and D'",
     "link": "sassoftware/dpmm#18 (fixed by PR #19: the domain is now required)",
     "reason": _NOT_COVERED},
    {"id": "R10", "library": "dpmm", "version": "as audited in the paper (before Dec 2025)",
     "function": "PrivBayes (core model)",
     "kind": "data-dependent control flow (domain inference)",
     "what": "as R9, in dpmm's PrivBayes",
     "relation": "add/remove",
     "evidence": "record/replay",
     "link": "sassoftware/dpmm#18 (fixed by PR #19)",
     "reason": _NOT_COVERED},
    {"id": "R11", "library": "dpmm", "version": "as audited in the paper",
     "function": "a sensitivity declared for sanitised data but applied to raw data",
     "kind": "sensitivity miscalibration",
     "what": "the artifact maps its sensitivity reproduction to SmartNoise, dpmm and diffprivlib",
     "relation": "one record changed",
     "evidence": "sensitivity check",
     "link": _RECONSTRUCTED, "reason": _NOT_COVERED},
    {"id": "R12", "library": "MOSTLY AI engine", "version": "as audited in the paper",
     "function": "DP training's budget accounting",
     "kind": "accounting (incorrect budget composition)",
     "what": "two DP steps each spend the budget meant for their sum (the artifact's double-spending reproduction)",
     "relation": "add/remove",
     "evidence": "Re:cord-play-sample: the empirical privacy loss distribution exceeds the target epsilon",
     "link": _RECONSTRUCTED, "reason": _NOT_COVERED},
    {"id": "R13", "library": "MOSTLY AI engine", "version": "as audited in the paper",
     "function": "DP training (control flow)",
     "kind": "data-dependent control flow",
     "what": "a value computed from the private data steers the DP pipeline",
     "relation": "add/remove",
     "evidence": "record/replay",
     "link": _RECONSTRUCTED, "reason": _NOT_COVERED},
)
"""The 13 violations of the published record: library, version, function, kind, what is wrong, the
relation, the paper's evidence, the issue or PR; then ``found`` (registry keys of the rows that find
it) or ``reason`` (why no row does)."""

OLDER_REPORTS: tuple[dict, ...] = (
    {"id": "M1", "report": "Mironov, CCS 2012 (least significant bits of floating-point Laplace)",
     "library": "diffprivlib", "version": "0.6.6",
     "function": "mechanisms.Laplace, LaplaceTruncated, LaplaceFolded, LaplaceBoundedDomain, LaplaceBoundedNoise, "
                 "Staircase; tools mean, sum, var",
     "what": "value + float64 noise: the set of doubles reached depends on the value (present: the final addition "
             "is plain float64)",
     "found": ("diffprivlib.laplace", "diffprivlib.laplace_truncated", "diffprivlib.laplace_folded",
               "diffprivlib.laplace_bounded_domain", "diffprivlib.laplace_bounded_noise", "diffprivlib.staircase",
               "diffprivlib.mean", "diffprivlib.sum", "diffprivlib.var")},
    {"id": "M2", "report": "Mironov, CCS 2012",
     "library": "OpenDP", "version": "0.16.0", "function": "measurements.make_laplace, make_noise",
     "what": "fixed in this version: noise is sampled exactly on a 2^k grid and rounded",
     "reason": "fixed in this version; the rows opendp.laplace_sum and opendp.noise_sum pass",
     "checked": ("opendp.laplace_sum", "opendp.noise_sum")},
    {"id": "M3", "report": "Mironov, CCS 2012",
     "library": "PyDP / PipelineDP", "version": "1.1.5 / 0.3.1", "function": "Laplace noise (Google's C++)",
     "what": "fixed by design: the value is rounded to the noise's power-of-two granularity, a multiple of it added",
     "reason": "fixed in this version; the PyDP rows and PipelineDP's Laplace rows pass",
     "checked": ("pydp.bounded_sum", "pipelinedp.count_laplace", "pipelinedp.sum_laplace")},
    {"id": "J1", "report": "Jin, McMurtry, Rubinstein, Ohrimenko, S&P 2022 (floating-point attacks on Gaussian samplers)",
     "library": "diffprivlib", "version": "0.6.6", "function": "mechanisms.Gaussian, GaussianAnalytic",
     "what": "value + float64 Gaussian noise (present)",
     "found": ("diffprivlib.gaussian", "diffprivlib.gaussian_analytic")},
    {"id": "J2", "report": "Jin et al., S&P 2022",
     "library": "PipelineDP (PyDP's Gaussian)", "version": "0.3.1 / 1.1.5",
     "function": "Metrics COUNT, PRIVACY_ID_COUNT, SUM, VECTOR_SUM with Gaussian noise",
     "what": "a leak of the same class: the binomial-sampled Gaussian on a grid finer than the output's doubles; "
             "whether the paper covers Google's binomial sampler was not checked",
     "found": ("pipelinedp.count_gaussian", "pipelinedp.privacy_id_count_gaussian", "pipelinedp.sum_gaussian",
               "pipelinedp.vector_sum_gaussian")},
    {"id": "J3", "report": "Jin et al., S&P 2022 (timing attacks on discrete samplers)",
     "library": "OpenDP, diffprivlib", "version": "0.16.0, 0.6.6", "function": "discrete Laplace/Gaussian samplers",
     "what": "the running time of rejection sampling depends on the value",
     "reason": "out of scope: dpaudit audits outputs, not running time"},
    {"id": "H1", "report": "Haney, Desfontaines, Hartman, Shrestha, Hay, 2022 (precision-based attacks)",
     "library": "diffprivlib", "version": "0.6.6", "function": "every floating-point noise mechanism "
     "(IBM/differential-privacy-library#94, open)",
     "what": "present: the samplers of HB21 do not protect the final float64 addition",
     "found": ("diffprivlib.laplace", "diffprivlib.gaussian", "diffprivlib.staircase", "diffprivlib.uniform")},
    {"id": "N1", "report": "Re:cord-play, PoPETs 2026 (a robustness issue, not one of its 13: NaN passes np.clip)",
     "library": "diffprivlib", "version": "0.6.6", "function": "tools mean, var, std, sum, median, quantile, "
     "percentile (and their nan variants where NaN is not skipped)",
     "what": "present: a NaN record makes the release NaN every time (also IBM/differential-privacy-library#80, open)",
     "found_adversarial": ("nan", ("diffprivlib.mean", "diffprivlib.var", "diffprivlib.std", "diffprivlib.sum",
                                   "diffprivlib.median", "diffprivlib.quantile", "diffprivlib.percentile"))},
    {"id": "N2", "report": "Re:cord-play, PoPETs 2026 (NaN injection: the dp-recorder artifact's "
                           "tests/test_nan_injection.py maps its reduced example to SmartNoise Synth, dpmm, Synthcity, "
                           "Opacus and diffprivlib issues discussed in the paper)",
     "library": "Opacus", "version": "1.6.0", "function": "DPOptimizer.clip_and_accumulate (per-sample clipping)",
     "what": "present: one example with a NaN (or infinite) feature makes every released parameter NaN; the "
             "paper's own Opacus item was not readable here, so whether it is this code path is not checked",
     "found_adversarial": ("nan", ("opacus.dp_optimizer", "opacus.dp_optimizer_secure", "opacus.per_layer",
                                   "opacus.make_private"))},
    {"id": "C1", "report": "Casacuberta, Shoemate, Vadhan, Wagaman, CCS 2022 (float sums underestimate sensitivity)",
     "library": "diffprivlib", "version": "0.6.6", "function": "tools.sum, tools.mean (np.sum of clipped floats)",
     "what": "present: the sensitivity is upper - lower with no float-summation error term",
     "reason": "needs inputs the search does not try: the attacks need many records (or magnitudes far apart) so "
               "that rounding or the order of summation moves the sum by more than the bound; the rows use at "
               "most 10 records in [0, 1], where the rounding error (~1e-16) is far below the noise"},
    {"id": "C2", "report": "Casacuberta et al., CCS 2022",
     "library": "OpenDP", "version": "0.16.0", "function": "transformations.make_sum on floats",
     "what": "fixed in this version: the float sum's map adds the summation-error term (map(1) = 1 + 9.3e-9 for "
             "clamp((0, 1)) >> sum of unknown size, measured)",
     "reason": "fixed in this version; opendp.laplace_sum passes",
     "checked": ("opendp.laplace_sum",)},
    {"id": "C3", "report": "Casacuberta et al., CCS 2022",
     "library": "PyDP / PipelineDP", "version": "1.1.5 / 0.3.1", "function": "BoundedSum, Metrics.SUM on floats",
     "what": "not checked: Google's C++ sum is compiled into the wheel (no source to read here)",
     "reason": "needs inputs the search does not try (as C1); whether Google's sum adds an error term was not "
               "checked"},
)
"""Older reports on the covered libraries (and the record's NaN robustness issue), with the same
``found`` / ``reason`` fields (``checked``: rows that show a fixed version passing;
``found_adversarial``: (input kind, rows whose adversarial screen certified a leak on it))."""


CANDIDATES: tuple[dict, ...] = (
    {"id": "X1", "library": "diffprivlib", "version": "0.6.6",
     "function": "models.LinearRegression(fit_intercept=False)",
     "what": "X and y are not clipped to bounds_X and bounds_y (models/linear_regression.py: _preprocess_data calls "
             "clip_to_bounds only when fit_intercept=True), so one record outside the bounds moves the sufficient "
             "statistics beyond the sensitivity the noise is calibrated to: with bounds (-1, 1), D0 = [(0.5, 0.5)] "
             "vs D1 = [(100, 100)] (replace-one), coef_ is within 0.01 of 1 on 100/100 runs of D1 and 1/100 of D0",
     "evidence": "found by the adversarial screen of the row diffprivlib.linear_regression_diagonal (leaks on "
                 "max-double, -max-double, 2^53 + 1 in the one-value screen; max-double and a pair the input-space "
                 "search built in the staged one, which certifies the first failing pair per kind of evidence); not in the Re:cord-play record, not found in the diffprivlib "
                 "tracker searched (#104 and #105 are about the sensitivities, #80 about NaN)",
     "reproducer": "reproducers/diffprivlib_linear_regression_unclipped.py",
     "found_adversarial": ("max-double", ("diffprivlib.linear_regression_diagonal",))},
)
"""Findings new to the record, made while checking it (listed under Candidate new findings)."""


def candidate_lines() -> list[str]:
    """The :data:`CANDIDATES` as lines of the doc's "Candidate new findings" section."""
    return [f"* {c['library']} {c['version']} `{c['function']}`: {c['what']}; {c['evidence']}. Reproducer: "
            f"`python {c['reproducer']}`." for c in CANDIDATES]


def items():
    """Every record item, the 13 violations first, then the older reports and the new candidates."""
    return PUBLISHED_RECORD + OLDER_REPORTS + CANDIDATES


def validate(keys) -> list[str]:
    """Problems of the record against the registry ``keys``: an item with neither ``found`` nor
    ``reason``, with both, or naming a row key that is not in the registry.

    Returns
    -------
    list of str
        Empty when the record is consistent.
    """
    keys = set(keys)
    out = []
    for it in items():
        found, reason = it.get("found") or it.get("found_adversarial"), it.get("reason")
        if bool(found) == bool(reason):
            out.append(f"{it['id']}: needs exactly one of found / reason")
        adversarial = tuple((it.get("found_adversarial") or ("", ()))[1])
        for k in tuple(it.get("found") or ()) + adversarial + tuple(it.get("checked") or ()):
            if k not in keys:
                out.append(f"{it['id']}: row {k!r} is not in the registry")
    return out


def _verdicts(rows, fresh) -> str:
    parts = []
    for k in rows:
        rec = fresh.get(k)
        parts.append(f"`{k}` ({rec['verdict'] if rec else 'not run'})")
    return ", ".join(parts)


def render(fresh: dict) -> list[str]:
    """The section "Against the published record": one line per item.

    Parameters
    ----------
    fresh : dict
        ``key -> cached record`` of the registry rows whose record is current (their verdict is shown).

    Returns
    -------
    list of str
        Markdown lines.
    """
    lines = ["", "## Against the published record", "",
             f"{RECORD_SOURCE}. Covered here: " + ", ".join(f"{k} {v}" for k, v in COVERED.items()) + ". "
             "The paper's table of violations was not readable here (only its abstract is stored): the 13 are "
             "rebuilt from the issues its first author filed, the dp-recorder artifact and a third-party summary; "
             "items without an issue of their own are marked reconstructed. Found = a row of this table certifies "
             "it on the installed version (its verdict in brackets).", ""]
    for it in PUBLISHED_RECORD:
        head = f"* {it['id']} {it['library']} ({it['version']}) `{it['function']}`: {it['kind']}; {it['what']} " \
               f"[{it['relation']}; evidence: {it['evidence']}; {it['link']}]"
        if it.get("found"):
            lines.append(f"{head}: **found** by {_verdicts(it['found'], fresh)}.")
        else:
            lines.append(f"{head}: not found: {it['reason']}.")
    lines += ["", "Older reports on the covered libraries, and the record's NaN robustness issue:", ""]
    for it in OLDER_REPORTS:
        head = f"* {it['id']} {it['report']}: {it['library']} {it['version']} `{it['function']}`: {it['what']}"
        if it.get("found"):
            lines.append(f"{head}: **found** by {_verdicts(it['found'], fresh)}.")
        elif it.get("found_adversarial"):
            kind, rows = it["found_adversarial"]
            lines.append(f"{head}: **found** by the adversarial screen ({kind}) on " + ", ".join(f"`{k}`" for k in rows)
                         + ".")
        else:
            checked = f" ({_verdicts(it['checked'], fresh)})" if it.get("checked") else ""
            lines.append(f"{head}: not found: {it['reason']}{checked}.")
    return lines
