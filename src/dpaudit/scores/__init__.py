"""Auditing from two samples of scores (paper 001: histogram-based density estimation).

A user with two 1-D samples — say a canary's loss under models trained *with* it (P) and
*without* it (Q) — gets the tightest honest statement of how much privacy the samples prove lost:

* :func:`histogram_audit` — histogram hockey-stick lower bounds, valid at every epsilon at once,
  from Canonne TV bounds or sample-split Clopper–Pearson bounds (the tighter by default), with
  the binning choice accounted for in the confidence; the result (:class:`ScoreAudit`) gives the
  privacy-profile lower bound, epsilon lower bounds at any delta, an upper bound on the trade-off
  curve, TV and Gaussian-DP ``mu`` lower bounds, and claim checks;
* :func:`threshold_audit` and :func:`gdp_audit` — the threshold membership-inference baseline and
  the Gaussian-DP audit of Nasr et al. (2023);
* :func:`audit_scores` — the histogram audit, both baselines and an optional claim check in one
  call; its :class:`ScoresAuditResult` serialises itself (``to_dict``: what ``dpaudit
  audit-scores --json`` prints) and gives the trade-off curves (``curves``);
* :func:`clopper_pearson_audit` — thresholds at order statistics of the whole sample, exact
  Clopper–Pearson bounds, Bonferroni over a fixed grid of ranks (nothing held out);
* :func:`tpr_at_fpr` and :func:`auc_interval` — certified confidence intervals on the attack's
  TPR at a fixed FPR and on its AUC;
* :func:`one_run_audit` — one training run with many canaries each included with probability
  1/2: Steinke et al. (2023) and the f-DP test of Mahloujifar et al. (2025), certified epsilon and
  GDP ``mu`` lower bounds (``docs/scores.md`` §9);
* :func:`one_shot_audit` — random-canary cosines vs their exact null (Andrew et al. 2024);
* :func:`estimate_pld` — white-box per-step scores to a privacy loss distribution, composed with
  dp_accounting (an estimate, paper 001 §9.2).

The histogram audit and the evidence type live with the other region bounds
(:mod:`dpaudit.estimators.histogram`, :mod:`dpaudit.estimators.region`) and are re-exported here.

Derivations: ``docs/scores.md``.
"""

from .audit import ScoresAuditResult, audit_scores
from .baselines import (
    GDPAudit,
    RateInterval,
    auc_interval,
    clopper_pearson_audit,
    gdp_audit,
    order_statistic_grid,
    threshold_audit,
    tpr_at_fpr,
)
from .canaries import (
    OneShotAudit,
    cosine_scores,
    null_cosines,
    one_shot_audit,
    random_canaries,
    simulate_gaussian_canary_run,
)
from ..estimators.histogram import Bins, histogram_audit, histogram_hockey_stick, make_bins, scott_bin_width
from ..estimators.region import ClaimCheck, ScoreAudit, lower_convex_hull, pareto_front
from .io import load_scores
from .one_run import (
    OneRunAudit,
    OneRunGuess,
    fdp_rejects,
    guess_grid,
    one_run_audit,
    steinke_p_value,
)
from .pld import EmpiricalPLD, estimate_pld, merge_sparse_bins
from .plot import approx_dp_tradeoff, draw_tradeoff, plot_tradeoff

__all__ = [
    "Bins",
    "ClaimCheck",
    "EmpiricalPLD",
    "GDPAudit",
    "OneRunAudit",
    "OneRunGuess",
    "OneShotAudit",
    "ScoreAudit",
    "ScoresAuditResult",
    "approx_dp_tradeoff",
    "RateInterval",
    "auc_interval",
    "audit_scores",
    "clopper_pearson_audit",
    "cosine_scores",
    "draw_tradeoff",
    "estimate_pld",
    "fdp_rejects",
    "gdp_audit",
    "guess_grid",
    "histogram_audit",
    "histogram_hockey_stick",
    "load_scores",
    "lower_convex_hull",
    "make_bins",
    "merge_sparse_bins",
    "null_cosines",
    "one_run_audit",
    "one_shot_audit",
    "order_statistic_grid",
    "pareto_front",
    "plot_tradeoff",
    "random_canaries",
    "scott_bin_width",
    "simulate_gaussian_canary_run",
    "steinke_p_value",
    "threshold_audit",
    "tpr_at_fpr",
]
