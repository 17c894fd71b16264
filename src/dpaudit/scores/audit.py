"""One audit of two samples of scores, serialised: the histogram audit (paper 001), the
threshold-MIA and GDP baselines and the optional claim check, with the trade-off curves that
``dpaudit audit-scores`` plots and reports (:func:`audit_scores`, :class:`ScoresAuditResult`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

__all__ = ["DEFAULT_DELTA", "ScoresAuditResult", "audit_scores", "tradeoff_alpha_grid"]

DEFAULT_DELTA = 1e-5  # the delta of the reported epsilon lower bound when none is given
ATTACK_FPRS = (0.001, 0.01, 0.1)  # the FPRs at which audit_scores reports the attack's TPR


def tradeoff_alpha_grid() -> np.ndarray:
    """The FPR grid of the trade-off curves: ``[0, 1]``, dense near 0 (for the log-log view)."""
    return np.unique(np.concatenate([[0.0], np.geomspace(1e-6, 1.0, 241), np.linspace(0.0, 1.0, 201)]))


@dataclass(frozen=True)
class ScoresAuditResult:
    """What two samples of scores prove: the histogram audit next to its baselines.

    Attributes
    ----------
    histogram : ScoreAudit
        The histogram audit (:func:`dpaudit.scores.histogram_audit`).
    threshold : ScoreAudit
        The threshold membership-inference baseline (:func:`dpaudit.scores.threshold_audit`).
    gdp : GDPAudit
        The Gaussian-DP audit (:func:`dpaudit.scores.gdp_audit`).
    delta : float
        The delta at which epsilon lower bounds are reported.
    beta, confidence : float
        Failure probability of each method's bounds and ``1 - beta`` (both recorded as given).
    seed : int or None
        Seed of the sample splits (``numpy.random.SeedSequence(seed).spawn(3)``).
    n_in, n_out : int
        Sizes of the two samples.
    attack : dict or None
        The attack's ``"auc"`` and ``"tpr_at_fpr"`` (FPR -> :class:`RateInterval`), certified
        confidence intervals at the same beta each (:func:`auc_interval`, :func:`tpr_at_fpr`).
    clopper_pearson : ScoreAudit or None
        Thresholds at order statistics of the whole sample with Clopper–Pearson bounds
        (:func:`dpaudit.scores.clopper_pearson_audit`), certified at the same beta.
    claim : Claim or None
        The claim checked, if any; ``check`` its :class:`ClaimCheck` against the histogram audit.
    in_path, out_path : str or None
        Where the samples came from (recorded in ``inputs``).
    plot : str or None
        Path of the trade-off plot written, if any.
    """

    histogram: Any
    threshold: Any
    gdp: Any
    delta: float
    beta: float
    confidence: float
    seed: Optional[int]
    n_in: int
    n_out: int
    claim: Any = None
    check: Any = None
    clopper_pearson: Any = None
    attack: Any = None
    in_path: Optional[str] = None
    out_path: Optional[str] = None
    plot: Optional[str] = None

    @property
    def violated(self) -> bool:
        """True when a claim was given and the histogram audit refutes it."""
        return self.check is not None and bool(self.check.violated)

    def curves(self) -> dict:
        """Trade-off curves on :func:`tradeoff_alpha_grid`: ``alpha``, the histogram audit's
        certified ``upper`` bound, ``others`` (threshold MIA and GDP, ``[label, values]``) and,
        with a claim, ``claim`` (``[label, values]``); JSON-ready lists. What the report draws and
        :func:`dpaudit.report.plots.tradeoff_png` takes."""
        from .plot import approx_dp_tradeoff

        a = tradeoff_alpha_grid()
        hist, thr, gdp, claim = self.histogram, self.threshold, self.gdp, self.claim
        curves = {
            "alpha": a.tolist(),
            "upper": np.asarray(hist.tradeoff_upper_bound(a), dtype=float).tolist(),
            "others": [["threshold MIA: upper bound", np.asarray(thr.tradeoff_upper_bound(a), dtype=float).tolist()],
                       [f"GDP audit: mu={gdp.mu_lower_bound:.3g}", np.asarray(gdp.tradeoff(a), dtype=float).tolist()]],
        }
        if claim is not None:
            curves["claim"] = [f"claim: {claim.describe()}", approx_dp_tradeoff(a, claim.epsilon, claim.delta).tolist()]
        return curves

    def to_dict(self) -> dict:
        """JSON-ready dict (numpy values converted, non-finite floats as strings): what
        ``dpaudit audit-scores --json`` prints and ``--report x.json`` records."""
        from ..estimators.region import jsonable

        hist, thr, gdp, delta = self.histogram, self.threshold, self.gdp, self.delta
        out = json.loads(json.dumps(jsonable({
            "inputs": {"in": self.in_path, "out": self.out_path, "n_in": int(self.n_in), "n_out": int(self.n_out),
                       "seed": self.seed},
            "delta": delta,
            "beta": self.beta,
            "confidence": self.confidence,
            "epsilon_lower_bound": hist.epsilon_lower_bound(delta),
            "epsilon_source": hist.epsilon_source(delta),
            "tv_lower_bound": hist.tv_lower_bound,
            "tv_estimate": hist.tv_estimate,
            "mu_lower_bound": hist.mu_lower_bound,
            "mu_from_tv": hist.mu_from_tv,
            "baselines": {
                "threshold": {
                    "epsilon_lower_bound": thr.epsilon_lower_bound(delta), "tv_lower_bound": thr.tv_lower_bound,
                    "mu_lower_bound": thr.mu_lower_bound,
                },
                "gdp": {**gdp.to_dict(), "epsilon_of_mu_estimate": gdp.epsilon_estimate(delta)},
                "clopper_pearson": None if self.clopper_pearson is None else {
                    "epsilon_lower_bound": self.clopper_pearson.epsilon_lower_bound(delta),
                    "tv_lower_bound": self.clopper_pearson.tv_lower_bound,
                    "mu_lower_bound": self.clopper_pearson.mu_lower_bound,
                    "details": self.clopper_pearson.details,
                },
            },
            "histogram": hist.to_dict(),
            "attack": None if self.attack is None else {
                "auc": self.attack["auc"].to_dict(),
                "tpr_at_fpr": {f"{k:g}": v.to_dict() for k, v in self.attack["tpr_at_fpr"].items()},
            },
            "claim": None if self.check is None else self.check.to_dict(),
            "plot": self.plot,
        })))
        out["epsilon_note"] = epsilon_headline_note(out)
        return out


def audit_scores(p_scores, q_scores, *, delta: float = DEFAULT_DELTA, beta: float = 0.05,
                 confidence: float | None = None, bins="scott", method: str = "auto", thresholds: int = 64,
                 claim=None, seed: int | None = None, in_path=None, out_path=None,
                 alternative: str = "two-sided") -> ScoresAuditResult:
    """Run the histogram audit and both baselines on two samples of scores, each with failure
    probability ``beta``, and check ``claim`` if given.

    Parameters
    ----------
    p_scores, q_scores : array
        Scores WITH the canary (P) and WITHOUT it (Q).
    delta : float
        Delta of the reported epsilon lower bounds.
    beta : float
        Failure probability per method; ``confidence`` (default ``1 - beta``) is what the audits take.
    bins : 'scott' or int
    method : {'auto', 'canonne', 'split'}
    thresholds : int
        Candidate thresholds of the baselines.
    claim : Claim, optional
    seed : int, optional
        Seeds the three audits' sample splits (``SeedSequence(seed).spawn(3)``); drawn fresh
        (and recorded) when None.
    in_path, out_path : str or Path, optional
        Recorded in the result's ``inputs``.
    alternative : {"two-sided", "greater", "less"}
        Orientation of the whole-sample Clopper–Pearson audit (:func:`clopper_pearson_audit`).

    Returns
    -------
    ScoresAuditResult
    """
    from ..estimators.histogram import histogram_audit
    from .baselines import auc_interval, clopper_pearson_audit, gdp_audit, threshold_audit, tpr_at_fpr

    x = np.asarray(p_scores, dtype=float).ravel()
    y = np.asarray(q_scores, dtype=float).ravel()
    if confidence is None:
        confidence = 1.0 - beta
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % (2**31))
    ss = np.random.SeedSequence(seed).spawn(3)
    hist = histogram_audit(x, y, bins=bins, method=method, confidence=confidence, rng=np.random.default_rng(ss[0]))
    thr = threshold_audit(x, y, thresholds=thresholds, confidence=confidence, rng=np.random.default_rng(ss[1]))
    gdp = gdp_audit(x, y, thresholds=thresholds, confidence=confidence, rng=np.random.default_rng(ss[2]))
    cp = clopper_pearson_audit(x, y, confidence=confidence, alternative=alternative)
    side = "less" if alternative == "less" else "greater"
    attack = {"auc": auc_interval(x, y, confidence=confidence, alternative=side),
              "tpr_at_fpr": {f: tpr_at_fpr(x, y, f, confidence=confidence, alternative=side) for f in ATTACK_FPRS}}
    return ScoresAuditResult(
        histogram=hist, threshold=thr, gdp=gdp, delta=delta, beta=beta, confidence=confidence, seed=seed,
        n_in=int(x.size), n_out=int(y.size), claim=claim, check=None if claim is None else hist.check_claim(claim),
        in_path=None if in_path is None else str(in_path), out_path=None if out_path is None else str(out_path),
        clopper_pearson=cp, attack=attack)


def epsilon_headline_note(result: dict) -> str | None:
    """Why the headline epsilon lower bound of a two-sample score audit may be below another row
    of the side-by-side table (issue 44), or None when no certified row is above it.

    The headline is the histogram audit's (paper 001), the method chosen before the data. Each
    certified row (the histogram, the threshold membership-inference attack with Clopper–Pearson
    bounds, the whole-sample Clopper–Pearson audit) holds on its own at confidence ``1 - beta``;
    the largest of ``k`` rows picked after seeing them holds only at ``1 - k beta`` (union bound),
    so a larger row is not promoted to the headline. The GDP row is an estimate and never counts.

    Parameters
    ----------
    result : dict
        :meth:`ScoreAudit.to_dict` output (``epsilon_lower_bound``, ``beta``, ``baselines``).

    Returns
    -------
    str or None
    """
    head = result.get("epsilon_lower_bound")
    base = result.get("baselines") or {}
    rows = {"the threshold attack (Clopper-Pearson)": (base.get("threshold") or {}).get("epsilon_lower_bound"),
            "the whole-sample Clopper-Pearson audit": (base.get("clopper_pearson") or {}).get("epsilon_lower_bound")}
    rows = {k: float(v) for k, v in rows.items() if isinstance(v, (int, float))}
    if not isinstance(head, (int, float)) or not rows:
        return None
    name, best = max(rows.items(), key=lambda kv: kv[1])
    if best <= float(head):
        return None
    beta, k = float(result.get("beta", 0.05)), 1 + len(rows)
    return (f"{name} gives more ({best:.4g}); each row holds at confidence {1 - beta:g} on its own, and the headline "
            f"is the histogram audit's, fixed before the data. The largest of the {k} certified rows is a lower bound "
            f"at confidence {max(0.0, 1 - k * beta):g} (union bound), or run that method alone.")

