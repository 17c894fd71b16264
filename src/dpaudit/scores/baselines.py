"""Baselines: threshold membership inference and the Gaussian-DP audit of Nasr et al. (2023).

A threshold ``t`` on the score is a two-bin histogram (paper 001 §6, Lemma 1): the set
``S_t = {score > t}`` (or its complement, whichever favours P) has true positive rate
``TPR = P(S_t)`` and false positive rate ``FPR = Q(S_t)``. With exact Clopper–Pearson bounds
``TPR >= TPR_lo`` and ``FPR <= FPR_hi`` (Bonferroni over every threshold tried):

* ``eps >= ln((TPR_lo - delta) / FPR_hi)`` and the complement form ``ln((1 - FPR_hi - delta) /
  (1 - TPR_lo))`` (Kairouz, Oh, Viswanath 2015; paper 001 eq. (6.2)) — a valid lower bound;
* a ``mu``-GDP mechanism has ``mu >= Phi^{-1}(1 - FPR_hi) - Phi^{-1}(FNR_hi)`` with
  ``FNR_hi = 1 - TPR_lo`` (Nasr et al. 2023, §5; paper 001 eq. (2.4)). The epsilon of that
  ``mu`` is a lower bound on the epsilon of any GDP guarantee, but **not** on the mechanism's
  epsilon unless its trade-off function is Gaussian (e.g. it over-reports for Laplace noise, and
  is threshold-dependent for the subsampled Gaussian, paper 001 §3).

Candidate thresholds are quantiles of the pooled selection part of the samples (geometrically
denser towards both tails); the bounds are computed on the other part, so choosing the
thresholds costs no confidence beyond the Bonferroni factor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._validate import as_rng, check_delta, check_probability
from ..estimators.base import check_scores
from ..estimators.region import ScoreAudit, certify_regions
from ..privacy.profiles import gaussian_epsilon, gaussian_tradeoff

__all__ = ["GDPAudit", "RateInterval", "auc_interval", "clopper_pearson_audit", "gdp_audit", "order_statistic_grid",
           "threshold_audit", "tpr_at_fpr"]


def _quantile_levels(num: int, n_select: int) -> np.ndarray:
    """``num`` quantile levels in (0, 1), symmetric, geometrically spaced towards both tails."""
    half = max(1, num // 2)
    smallest = min(0.5, max(1.0 / max(n_select, 1), 1e-9))
    low = np.geomspace(smallest, 0.5, half)
    levels = np.unique(np.concatenate([low, 1.0 - low]))
    return levels[(levels > 0) & (levels < 1)]


def _threshold_evidence(p_scores, q_scores, thresholds, selection_fraction, rng, confidence):
    """The thresholds' certified rates, shared by :func:`threshold_audit` and :func:`gdp_audit`.

    Returns ``(x, y, conf, tpr_lo, fpr_hi, desc, tpr, fpr, info)``: the checked scores, the
    confidence, per set ``S`` the Clopper–Pearson bounds on ``P(S)``/``Q(S)`` (Bonferroni over the
    sets, :func:`~dpaudit.estimators.region.certify_regions`), its description and observed rates.
    """
    x = check_scores(p_scores, "p_scores", min_size=2)
    y = check_scores(q_scores, "q_scores", min_size=2)
    conf = check_probability(confidence, "confidence")
    beta = 1.0 - conf
    gen = as_rng(rng)
    sf = check_probability(selection_fraction, "selection_fraction")
    xs = x[gen.permutation(x.size)]
    ys = y[gen.permutation(y.size)]
    if thresholds is None or np.ndim(thresholds) == 0:
        num = 64 if thresholds is None else thresholds
        if isinstance(num, (bool, np.bool_)) or int(num) != num or int(num) < 1:
            raise ValueError(f"the number of thresholds must be an integer >= 1, got {thresholds!r}")
        na = min(x.size - 1, max(1, int(round(sf * x.size))))
        ma = min(y.size - 1, max(1, int(round(sf * y.size))))
        xa, xb, ya, yb = xs[:na], xs[na:], ys[:ma], ys[ma:]
        pooled = np.concatenate([xa, ya])
        ts = np.unique(np.quantile(pooled, _quantile_levels(int(num), pooled.size)))
        chosen_on = "selection split"
    else:
        ts = np.unique(np.asarray(thresholds, dtype=float).ravel())
        if ts.size == 0 or np.any(~np.isfinite(ts)):
            raise ValueError(f"thresholds must be finite numbers, got {thresholds!r}")
        xa, ya, xb, yb = xs, ys, xs, ys  # fixed thresholds: every sample bounds, orientation below
        chosen_on = "given"
    # Orientation of each threshold (S = {> t} or {<= t}) chosen on the selection part (for given
    # thresholds both orientations are kept and paid for).
    if chosen_on != "given":
        above_p = 1.0 - np.searchsorted(np.sort(xa), ts, side="right") / xa.size
        above_q = 1.0 - np.searchsorted(np.sort(ya), ts, side="right") / ya.size
    kp_gt = np.searchsorted(np.sort(xb), ts, side="right")
    kq_gt = np.searchsorted(np.sort(yb), ts, side="right")
    kp_gt = xb.size - kp_gt  # counts of {> t}
    kq_gt = yb.size - kq_gt
    if chosen_on == "given":
        kp_s = np.concatenate([kp_gt, xb.size - kp_gt])
        kq_s = np.concatenate([kq_gt, yb.size - kq_gt])
        desc = [f"score > {t:.6g}" for t in ts] + [f"score <= {t:.6g}" for t in ts]
    else:
        up = above_p >= above_q
        kp_s = np.where(up, kp_gt, xb.size - kp_gt)
        kq_s = np.where(up, kq_gt, yb.size - kq_gt)
        desc = [(f"score > {t:.6g}" if u else f"score <= {t:.6g}") for t, u in zip(ts, up)]
    d = kp_s.size
    tpr_lo, fpr_hi, level = certify_regions(kp_s, xb.size, kq_s, yb.size, beta)
    tpr_lo, fpr_hi = np.atleast_1d(tpr_lo), np.atleast_1d(fpr_hi)
    info = {
        "beta": beta, "thresholds": int(ts.size), "sets": int(d), "per_bound_beta": level,
        "chosen_on": chosen_on, "n_p": int(xb.size), "n_q": int(yb.size),
    }
    return x, y, conf, tpr_lo, fpr_hi, desc, kp_s / xb.size, kq_s / yb.size, info


def threshold_audit(
    p_scores,
    q_scores,
    *,
    thresholds=None,
    confidence: float = 0.95,
    selection_fraction: float = 0.5,
    rng=None,
) -> ScoreAudit:
    """Threshold membership-inference audit with Clopper–Pearson bounds (the classic baseline).

    Parameters
    ----------
    p_scores, q_scores : array, shape (n,), (m,)
        Scores under P (with the canary) and Q (without). Finite, at least 2 each.
    thresholds : int or array of float, optional
        An int ``K``: ``K`` candidate thresholds at quantiles of the selection part (default 64);
        an array: thresholds fixed in advance (all samples bound them; both orientations paid).
    confidence : float
        In (0, 1); all thresholds' bounds hold together with this probability.
    selection_fraction : float
        Fraction of each sample used to place the thresholds and pick orientations.
    rng : numpy Generator or int, optional
        Randomness of the split.

    Returns
    -------
    ScoreAudit
        With ``method="threshold"``: its :meth:`~ScoreAudit.epsilon_lower_bound` is the
        Kairouz-et-al. bound of the best threshold, :attr:`~ScoreAudit.mu_lower_bound` the
        Nasr-et-al. GDP bound.

    Raises
    ------
    ValueError
        If a side has fewer than 2 scores or a non-finite one, ``confidence`` or
        ``selection_fraction`` is not in (0, 1), or ``thresholds`` is neither an integer >= 1 nor
        an array of finite numbers.

    References
    ----------
    Kairouz, Oh, Viswanath (2015); Jagielski et al. (2020); Nasr et al. (2023); paper 001 §6.
    """
    x, y, conf, tpr_lo, fpr_hi, desc, tpr, fpr, info = _threshold_evidence(
        p_scores, q_scores, thresholds, selection_fraction, rng, confidence
    )
    tv_hat = float(np.max(np.abs(tpr - fpr))) if tpr.size else 0.0
    return ScoreAudit.from_rows(
        tpr_lo, fpr_hi, ["threshold"] * tpr_lo.size,
        method="threshold", confidence=conf, n_p=int(x.size), n_q=int(y.size), tv_estimate=tv_hat,
        details={"threshold": info},
    )


@dataclass(frozen=True)
class GDPAudit:
    """Result of the Gaussian-DP audit of Nasr et al. (2023).

    Attributes
    ----------
    mu_lower_bound : float
        ``max(0, max_t Phi^{-1}(1 - FPR_hi(t)) - Phi^{-1}(FNR_hi(t)))``: a lower confidence bound
        on the parameter of any GDP guarantee of the mechanism (never an absolute value).
    confidence : float
        Confidence of the bound (Bonferroni over thresholds and both rates).
    threshold : str
        The test that attains the bound (e.g. ``"score > 1.23"``).
    fpr_upper, fnr_upper : float
        Its bounded error rates.
    fpr_estimate, fnr_estimate : float
        Its observed error rates on the bounding samples.
    n_p, n_q : int
        Sample sizes.
    details : dict
        Thresholds tried, failure-probability split.

    References
    ----------
    Nasr et al. (2023), §5; paper 001 §2.3, eq. (2.4).
    """

    mu_lower_bound: float
    confidence: float
    threshold: str
    fpr_upper: float
    fnr_upper: float
    fpr_estimate: float
    fnr_estimate: float
    n_p: int
    n_q: int
    details: dict

    def epsilon_estimate(self, delta: float) -> float:
        """Epsilon of ``mu_lower_bound``-GDP at ``delta`` (Balle & Wang 2018, Thm 8): an
        **estimate** of the mechanism's epsilon.

        A lower bound on the epsilon of any GDP guarantee; for the mechanism's own epsilon only if
        its trade-off function is Gaussian (see the module docstring), so reported as an estimate.
        """
        delta = check_delta(delta)
        return gaussian_epsilon(delta, self.mu_lower_bound)

    def epsilon(self, delta: float) -> float:
        """Same as :meth:`epsilon_estimate` (kept for existing callers; the name says less)."""
        return self.epsilon_estimate(delta)

    def tradeoff(self, alpha):
        """The trade-off function ``f_mu`` at the lower bound (type II error at type I ``alpha``)."""
        return gaussian_tradeoff(alpha, self.mu_lower_bound)

    def to_dict(self) -> dict:
        out = {
            "method": "gdp-threshold", "mu_lower_bound": self.mu_lower_bound, "confidence": self.confidence,
            "threshold": self.threshold, "fpr_upper": self.fpr_upper, "fnr_upper": self.fnr_upper,
            "fpr_estimate": self.fpr_estimate, "fnr_estimate": self.fnr_estimate,
            "n_p": self.n_p, "n_q": self.n_q, "details": self.details,
        }
        return {k: (v if not isinstance(v, float) or math.isfinite(v) else str(v)) for k, v in out.items()}


def gdp_audit(p_scores, q_scores, *, thresholds=None, confidence: float = 0.95, selection_fraction: float = 0.5,
              rng=None) -> GDPAudit:
    """Gaussian-DP audit from threshold tests (Nasr et al. 2023, §5; paper 001 §2.3 eq. (2.4)).

    Clopper–Pearson upper bounds on FPR and FNR of every candidate threshold (Bonferroni over the
    thresholds and the two rates), ``mu = Phi^{-1}(1 - FPR_hi) - Phi^{-1}(FNR_hi)``, maximised
    over thresholds and clipped at 0 (identical distributions never yield a positive mu).

    Parameters
    ----------
    p_scores, q_scores, thresholds, confidence, selection_fraction, rng
        As in :func:`threshold_audit`.

    Returns
    -------
    GDPAudit

    Raises
    ------
    ValueError
        On bad input (see :func:`threshold_audit`).

    References
    ----------
    Nasr, Hayes, Steinke, Balle, Tramèr, Jagielski, Carlini, Terzis (2023), Tight auditing of
    differentially private machine learning, USENIX Security, §5; Dong, Roth, Su (2022), Def. 2.6.
    """
    from scipy import special

    x, y, conf, tpr_lo, fpr_hi, desc, tpr, fpr, info = _threshold_evidence(
        p_scores, q_scores, thresholds, selection_fraction, rng, confidence
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        mus = special.ndtri(1.0 - fpr_hi) - special.ndtri(1.0 - tpr_lo)
    mus = np.where(np.isnan(mus), -np.inf, mus)
    j = int(np.argmax(mus))
    mu = float(max(0.0, mus[j]))
    return GDPAudit(
        mu_lower_bound=mu, confidence=conf, threshold=desc[j], fpr_upper=float(fpr_hi[j]),
        fnr_upper=float(1.0 - tpr_lo[j]), fpr_estimate=float(fpr[j]), fnr_estimate=float(1.0 - tpr[j]),
        n_p=int(x.size), n_q=int(y.size), details=info,
    )


def order_statistic_grid(size: int, *, ratio: float = 4.0) -> np.ndarray:
    """Ranks ``0, 1, 4, 16, ...`` (geometric, factor ``ratio``) below ``size / 2``: which order
    statistics :func:`clopper_pearson_audit` uses as thresholds. Data-independent.

    Raises
    ------
    ValueError
        If ``ratio <= 1``.
    """
    if not ratio > 1:
        raise ValueError(f"ratio must be > 1, got {ratio!r}")
    ks, k = [0], 1.0
    while k < size / 2:
        ks.append(int(round(k)))
        k *= ratio
    return np.unique(np.asarray(ks, dtype=int))


def _order_statistic_rows(x, y, ks, level, weight=0.5):
    level = np.asarray(level, dtype=float)
    weight = np.broadcast_to(np.asarray(weight, dtype=float), ks.shape)
    """Rows ``(P(S) >= p_lo, Q(S) <= q_hi)`` for thresholds at order statistics, in-scores ``x``
    leaning high: family A at the ``(k+1)``-th largest of ``y`` (``S = {s > t}``, ``Q(S)`` bounded
    by the order statistic's exact law, ``P(S)`` by Clopper–Pearson given ``t``), family B at the
    ``(k+1)``-th smallest of ``x`` (``S = {s >= t}``, ``P(S^c)`` by the order statistic, ``Q(S)``
    given ``t``)."""
    from ..bounds import clopper_pearson_lower, clopper_pearson_upper  # one level per row

    n, m = x.size, y.size
    xs, ys = np.sort(x), np.sort(y)
    ka = ks[ks < m]
    la, wa = level[ks < m], weight[ks < m]
    ta = ys[m - 1 - ka]  # (k+1)-th largest out-score
    cnt_x = n - np.searchsorted(xs, ta, side="right")  # in-scores > t
    p_a = clopper_pearson_lower(cnt_x, n, 2.0 * la * (1.0 - wa))
    q_a = clopper_pearson_upper(ka, m, 2.0 * la * wa)
    kb = ks[ks < n]
    lb, wb = level[ks < n], weight[ks < n]
    tb = xs[kb]  # (k+1)-th smallest in-score
    cnt_y = m - np.searchsorted(ys, tb, side="left")  # out-scores >= t
    p_b = 1.0 - clopper_pearson_upper(kb, n, 2.0 * lb * wb)
    q_b = clopper_pearson_upper(cnt_y, m, 2.0 * lb * (1.0 - wb))
    desc = [f"score > {t:.6g} (out-score rank {k + 1} from the top)" for t, k in zip(ta, ka)]
    desc += [f"score >= {t:.6g} (in-score rank {k + 1} from the bottom)" for t, k in zip(tb, kb)]
    return np.concatenate([p_a, p_b]), np.concatenate([q_a, q_b]), desc


def clopper_pearson_audit(
    p_scores,
    q_scores,
    *,
    confidence: float = 0.95,
    alternative: str = "two-sided",
    grid_ratio: float = 4.0,
    weight: float | None = None,
    taper: float = 0.0,
) -> ScoreAudit:
    """Threshold audit on the whole sample: Clopper–Pearson bounds at order-statistic thresholds,
    the multiplicity paid by Bonferroni over a data-independent grid of ranks.

    The thresholds are the ``(k+1)``-th largest "out" score and the ``(k+1)``-th smallest "in"
    score for every rank ``k`` of :func:`order_statistic_grid` (``0, 1, 4, 16, ...``). At the
    ``(k+1)``-th largest of ``m`` out-scores, ``Q(score > t)`` is at most the ``k``-success
    Clopper–Pearson upper bound with the stated probability *exactly* (the law of a uniform order
    statistic; conservative with ties), and given ``t`` the in-scores above it are binomial, so
    every sample bounds every threshold: nothing is held out, and no threshold is chosen by
    looking at the counts it is judged on. Every row gets ``beta / rows`` (``taper`` > 0 moves
    it towards small ranks, ``(k + 1)^-taper``), split between its order-statistic bound (a
    fraction ``weight``, default ``0.5 + 0.3 / (1 + k / 8)``: most where that count is small) and
    its Clopper–Pearson bound; the epsilon bound then uses both the ``TPR/FPR`` form and the
    complement ``TNR/FNR`` form of each row (:class:`~dpaudit.estimators.region.ScoreAudit`).
    The split is fixed before the scores are seen (``benchmarks/canary_scores.py`` measured it).

    Parameters
    ----------
    p_scores, q_scores : array, shape (n,), (m,)
        Scores under P (with the canary, "in") and Q (without, "out"); finite, at least 2 each.
    confidence : float
        All bounds hold together with this probability, in (0, 1).
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: in-scores lean high (a logit, an inner product with the update);
        ``"less"``: they lean low (a loss); ``"two-sided"`` pays for both orientations.
    grid_ratio : float
        Factor between successive ranks of the grid.
    weight : float, optional
        Fraction of a row's level on its order-statistic bound (default: the rank rule above).
    taper : float
        ``>= 0``; rows' levels proportional to ``(k + 1)^-taper``.

    Returns
    -------
    ScoreAudit
        ``method="clopper-pearson"``; its epsilon, delta, trade-off and GDP ``mu`` bounds are
        certified at ``confidence``.

    Raises
    ------
    ValueError
        On bad scores, confidence, alternative or grid ratio.

    References
    ----------
    Clopper & Pearson (1934); order statistics of the uniform law (David & Nagaraja 2003, §2.1);
    Kairouz, Oh, Viswanath (2015) and paper 001 eq. (6.2) for the epsilon bound; Jagielski et al.
    (2020) and jax_privacy's ``CanaryScoreAuditor.epsilon_clopper_pearson`` for the threshold
    audit this improves (``benchmarks/canary_scores.py``).
    """
    x = check_scores(p_scores, "p_scores", min_size=2)
    y = check_scores(q_scores, "q_scores", min_size=2)
    conf = check_probability(confidence, "confidence")
    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(f"alternative must be 'two-sided', 'greater' or 'less', got {alternative!r}")
    if not (taper >= 0 and math.isfinite(taper)):
        raise ValueError(f"taper must be a finite number >= 0, got {taper!r}")
    if weight is not None and not (0.0 < weight < 1.0):
        raise ValueError(f"weight must be in (0, 1), got {weight!r}")
    ks = order_statistic_grid(max(x.size, y.size), ratio=grid_ratio)
    signs = {"greater": (1.0,), "less": (-1.0,), "two-sided": (1.0, -1.0)}[alternative]
    rows = sum(int(np.sum(ks < y.size)) + int(np.sum(ks < x.size)) for _ in signs)
    w = (ks + 1.0) ** (-taper)
    total = sum(float(np.sum(w[ks < y.size]) + np.sum(w[ks < x.size])) for _ in signs)
    level = (1.0 - conf) / 2.0 * w / total  # per bound; sums to beta over all rows' two bounds
    p_lo, q_hi, desc = [], [], []
    for sgn in signs:
        w = weight if weight is not None else 0.5 + 0.3 / (1.0 + ks / 8.0)
        p, q, d = _order_statistic_rows(sgn * x, sgn * y, ks, level, w)
        p_lo.append(p)
        q_hi.append(q)
        desc += d if sgn > 0 else [t.replace("score", "-score") for t in d]
    p_lo, q_hi = np.concatenate(p_lo), np.concatenate(q_hi)
    info = {"beta": 1.0 - conf, "alternative": alternative, "ranks": ks.tolist(), "rows": rows,
            "per_bound_beta": level.tolist(), "taper": taper, "weight": "0.5 + 0.3 / (1 + rank / 8)" if weight is None else weight, "chosen_on": "order statistics of the whole sample"}
    xs, ys = np.sort(x), np.sort(y)
    return ScoreAudit.from_rows(
        p_lo, q_hi, ["clopper-pearson"] * p_lo.size, method="clopper-pearson", confidence=conf,
        n_p=int(x.size), n_q=int(y.size),
        tv_estimate=_ks_statistic(xs, ys), details={"clopper-pearson": info},
    )


def _ks_statistic(xs, ys) -> float:
    """Largest gap between the two empirical CDFs (plug-in TV of threshold sets; an estimate)."""
    pts = np.concatenate([xs, ys])
    return float(np.max(np.abs(np.searchsorted(xs, pts, side="right") / xs.size
                               - np.searchsorted(ys, pts, side="right") / ys.size)))


@dataclass(frozen=True)
class RateInterval:
    """A confidence interval ``[lower, upper]`` on a detection rate (TPR at a fixed FPR, or AUC),
    with its point ``estimate``, the ``confidence`` both ends hold at together, and ``method``."""

    estimate: float
    lower: float
    upper: float
    confidence: float
    method: str
    details: dict

    def to_dict(self) -> dict:
        return {"estimate": self.estimate, "lower": self.lower, "upper": self.upper, "confidence": self.confidence,
                "method": self.method, "details": self.details}


def _oriented(p_scores, q_scores, alternative):
    x = check_scores(p_scores, "p_scores", min_size=1)
    y = check_scores(q_scores, "q_scores", min_size=1)
    if alternative not in ("greater", "less"):
        raise ValueError(f"alternative must be 'greater' or 'less', got {alternative!r}")
    return (x, y) if alternative == "greater" else (-x, -y)


def tpr_at_fpr(p_scores, q_scores, fpr: float, *, confidence: float = 0.95, alternative: str = "greater") -> RateInterval:
    """Confidence interval on the true positive rate of the score-threshold test at false positive
    rate ``fpr`` (one point of its ROC curve), certified at ``confidence``.

    Lower end: the threshold at the ``(k+1)``-th largest out-score with the largest ``k`` whose
    Clopper–Pearson upper bound on the FPR (the order statistic's exact law) is ``<= fpr``; with
    probability ``>= 1 - beta/4`` its FPR is at most ``fpr``, so the ROC at ``fpr`` is at least its
    TPR, bounded below by Clopper–Pearson at ``beta/4``. Upper end: the smallest ``k'`` whose
    FPR lower bound is ``>= fpr``, and the TPR upper bound there (the threshold family's ROC is
    non-decreasing). The estimate is the empirical TPR at ``k = floor(fpr m)``.

    Parameters
    ----------
    p_scores, q_scores : array, shape (n,), (m,)
        In-scores (P) and out-scores (Q), finite.
    fpr : float
        Target false positive rate in (0, 1).
    confidence : float
        Both ends hold together with this probability.
    alternative : {"greater", "less"}
        Whether in-scores lean high or low.

    Returns
    -------
    RateInterval
        ``lower`` is 0 when no threshold certifies ``fpr`` (too few out-scores), ``upper`` 1 when
        none certifies reaching it.

    Raises
    ------
    ValueError
        On bad scores, ``fpr`` outside (0, 1), bad confidence or alternative.

    References
    ----------
    Clopper & Pearson (1934); uniform order statistics (David & Nagaraja 2003, §2.1).
    """
    from ..bounds import clopper_pearson_lower, clopper_pearson_upper

    x, y = _oriented(p_scores, q_scores, alternative)
    conf = check_probability(confidence, "confidence")
    if not (0.0 < float(fpr) < 1.0):
        raise ValueError(f"fpr must be in (0, 1), got {fpr!r}")
    b4 = (1.0 - conf) / 4.0
    n, m = x.size, y.size
    xs, ys = np.sort(x), np.sort(y)
    ks = np.arange(m)
    fpr_hi = clopper_pearson_upper(ks, m, b4)
    fpr_lo = clopper_pearson_lower(ks + 1, m, b4)  # Q(score >= t) for t the (k+1)-th largest
    ok = np.flatnonzero(fpr_hi <= fpr)
    lower, upper = 0.0, 1.0
    k_lo = k_hi = None
    if ok.size:
        k_lo = int(ok[-1])
        t = ys[m - 1 - k_lo]
        lower = float(clopper_pearson_lower(int(n - np.searchsorted(xs, t, side="right")), n, b4))
    reach = np.flatnonzero(fpr_lo >= fpr)
    if reach.size:
        k_hi = int(reach[0])
        t = ys[m - 1 - k_hi]
        upper = float(clopper_pearson_upper(int(n - np.searchsorted(xs, t, side="left")), n, b4))
    k = min(m - 1, int(math.floor(fpr * m)))
    est = float((n - np.searchsorted(xs, ys[m - 1 - k], side="right")) / n)
    return RateInterval(estimate=est, lower=lower, upper=upper, confidence=conf, method="order statistics + Clopper-Pearson",
                        details={"fpr": float(fpr), "k_lower": k_lo, "k_upper": k_hi, "per_bound_beta": b4})


def auc_interval(p_scores, q_scores, *, confidence: float = 0.95, alternative: str = "greater") -> RateInterval:
    """Confidence interval on the AUC ``P(X > Y) + P(X = Y)/2`` of the scores (X in, Y out).

    The estimate is the two-sample U-statistic (Mann–Whitney); the interval is Hoeffding's bound
    for two-sample U-statistics with a kernel in [0, 1]: ``|U - AUC| <= sqrt(ln(2/beta) /
    (2 min(n, m)))`` with probability ``>= 1 - beta``. Distribution-free and valid at every
    sample size (wider than DeLong's asymptotic interval, which is not certified).

    Parameters
    ----------
    p_scores, q_scores : array, shape (n,), (m,)
        In-scores and out-scores, finite.
    confidence : float
        In (0, 1).
    alternative : {"greater", "less"}
        Whether in-scores lean high ("less": the AUC of the negated scores).

    Returns
    -------
    RateInterval

    Raises
    ------
    ValueError
        If a score array is empty or holds a non-finite value, ``confidence`` is not in (0, 1),
        or ``alternative`` is neither ``"greater"`` nor ``"less"``.

    References
    ----------
    Hoeffding (1963), *Probability inequalities for sums of bounded random variables*, JASA, §5
    (U-statistics); Mann & Whitney (1947).
    """
    from scipy import stats as sstats

    x, y = _oriented(p_scores, q_scores, alternative)
    conf = check_probability(confidence, "confidence")
    u = sstats.mannwhitneyu(x, y, alternative="two-sided").statistic / (x.size * y.size)
    rad = math.sqrt(math.log(2.0 / (1.0 - conf)) / (2.0 * min(x.size, y.size)))
    return RateInterval(estimate=float(u), lower=max(0.0, float(u) - rad), upper=min(1.0, float(u) + rad),
                        confidence=conf, method="Hoeffding (two-sample U-statistic)", details={"radius": rad})
