"""Which output coordinates carry the difference between two samples: the *informative
columns* of a vector output, chosen on selection rows only.

A mechanism's output often has coordinates whose law is the same on both neighbouring datasets
(the Bloom-filter bits a RAPPOR report does not set for either value, the histogram bins a
record does not touch). When the privacy loss depends on the other coordinates only, every
optimal region is a cylinder over them, so the exact (histogram) regions can be chosen on the
projected output: a discrete projection with a few values, or a single coordinate, instead of a
classifier on the whole vector. Regions chosen this way are regions of the output space like any
other; the choice uses selection rows only, so a certified bound keeps its level whatever the
rule decides (paper 000, eq. (11): any region chosen independently of the held-out samples).
A wrong decision costs power, never validity.
"""

from __future__ import annotations

import numpy as np
from scipy.special import xlogy
from scipy.stats import chi2

from .._validate import check_probability

__all__ = ["PAIR_ROWS", "PROJECTION_ALPHA", "PROJECTION_HEAD", "PROJECTION_MAX_DIM", "informative_columns"]

PROJECTION_ALPHA = 1e-3
"""Level of each decision of :func:`informative_columns` (Bonferroni-corrected over its tests):
a column is informative when its marginal test rejects at ``alpha / d``; the projection is
refused when the dropped columns' marginals together, or any dropped column given another
column, reject at ``alpha`` (over all such tests)."""

PROJECTION_HEAD = 200_000
"""Most selection rows per sample the decision looks at (the histogram estimator passes at most
its ``FEW_VALUES_DESIGN`` first design rows, which stay design rows whatever it decides next)."""

PROJECTION_MAX_DIM = 64
"""Widest output the decision is tried on (its pairwise checks grow as ``d^2``)."""

PAIR_ROWS = 50_000
"""Most selection rows per sample of the pairwise checks (strong joint effects only: their level
is Bonferroni-corrected over ``d_dropped (d - 1)`` tests)."""

_MARGINAL_BINS = 16
_PAIR_BINS = 4
_EDGE_ROWS = 50_000  # bin edges from at most this many pooled rows (any fixed binning is a valid test)


def _coarse_codes(p: np.ndarray, q: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Codes of every column of both samples, shapes (n_p, d) and (n_q, d), and the number of
    codes of each column, shape (d,): a column's values when the pooled rows show at most
    ``bins`` of them, else ``bins`` bins cut at lower quantiles of (a strided subset of) the
    pooled rows; tied cut points leave empty bins, which no test counts."""
    d = p.shape[1]
    sub = np.concatenate([p[:: max(1, 2 * len(p) // _EDGE_ROWS)], q[:: max(1, 2 * len(q) // _EDGE_ROWS)]])
    ordered = np.sort(sub, axis=0)
    edges = ordered[np.floor(np.arange(1, bins) / bins * (len(ordered) - 1)).astype(int)]  # (bins - 1, d)
    codes_p = np.zeros(p.shape, dtype=np.int16)
    codes_q = np.zeros(q.shape, dtype=np.int16)
    for e in edges:  # code = number of cut points <= x, all columns at once
        codes_p += p >= e
        codes_q += q >= e
    m = np.full(d, bins)
    few = 1 + (np.diff(ordered, axis=0) != 0).sum(axis=0) <= bins
    for j in np.flatnonzero(few):  # a cheap look said few values: code them exactly if so
        values = np.unique(np.concatenate([p[:, j], q[:, j]]))
        if len(values) <= bins:
            codes_p[:, j], codes_q[:, j], m[j] = np.searchsorted(values, p[:, j]), np.searchsorted(values, q[:, j]), len(values)
    return codes_p, codes_q, m


def _g_statistics(op: np.ndarray, oq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Likelihood-ratio (G) statistics of homogeneity of the 2 x B tables ``(op[..., i, :],
    oq[..., i, :])`` (counts, shape (..., L, B)), summed over the L levels, and their degrees of
    freedom (per level: non-empty columns - 1, 0 when one sample has no rows at that level)."""
    op = op.astype(float)
    oq = oq.astype(float)
    t = op + oq
    rp, rq = op.sum(axis=-1), oq.sum(axis=-1)
    n = rp + rq
    g = 2.0 * ((xlogy(op, op) + xlogy(oq, oq) - xlogy(t, t)).sum(axis=-1)
               - xlogy(rp, rp) - xlogy(rq, rq) + xlogy(n, n))
    df = np.where((rp > 0) & (rq > 0), np.maximum((t > 0).sum(axis=-1) - 1, 0), 0)
    return np.maximum(g, 0.0).sum(axis=-1), df.sum(axis=-1)


def _one_hot(codes: np.ndarray, width: int) -> np.ndarray:
    """Indicator matrix, shape (n, d * width), of codes of shape (n, d) with values < width."""
    n, d = codes.shape
    return (codes[:, :, None] == np.arange(width)).reshape(n, d * width).astype(np.float32)


def informative_columns(p_design: np.ndarray, q_design: np.ndarray, *, alpha: float = PROJECTION_ALPHA):
    """The columns of a vector output whose law differs between the two samples, or None when
    the output should not be projected.

    1. Each column is coded (its values, or 16 equal-mass bins) and tested for the same marginal
       law in both samples (G-test of homogeneity); the columns rejected at ``alpha / d`` are kept.
    2. None is returned when no column or every column is kept, when the dropped columns'
       marginal statistics together reject at ``alpha`` (chi-square with the summed degrees of
       freedom), or when some dropped column's law given another column (both codes merged into
       at most 4 adjacent groups) differs between the samples at ``alpha`` Bonferroni-corrected over the
       ``d_dropped * (d - 1)`` such tests: a difference that lives only in the joint law of
       dropped coordinates (one bit XOR another) is then left to the classifier.

    Parameters
    ----------
    p_design, q_design : ndarray, shapes (n_p, d) and (n_q, d)
        Selection rows of the two samples (finite; the first :data:`PROJECTION_HEAD` rows of
        each are used, :data:`PAIR_ROWS` of them for the pairwise checks). Never rows that
        certify a bound.
    alpha : float, default :data:`PROJECTION_ALPHA`
        Level of each decision.

    Returns
    -------
    tuple of int or None
        The kept columns, increasing; None for outputs of dimension < 2 or >
        :data:`PROJECTION_MAX_DIM`, or fewer than 100 rows.

    Raises
    ------
    ValueError
        For ``alpha`` outside (0, 1) or samples that are not 2-D with the same number of columns.

    Notes
    -----
    The decision only restricts which regions are tried (cylinders over the kept columns), so
    any outcome keeps the bound valid; it costs power when a dropped column mattered. Under the
    null of identically distributed dropped columns it refuses a projection with probability at
    most about ``2 alpha`` (asymptotic chi-square levels). All pairwise tables come from one
    product of indicator matrices.

    Source: likelihood-ratio (G) tests of homogeneity of contingency tables, chi-square with
    (columns - 1) degrees of freedom per 2 x B table, summed over the levels of a conditioning
    column for the conditional ones (Agresti, *Categorical Data Analysis*, 3rd ed., 2013,
    §3.2 and §6.4); the projection itself is dpaudit's rule.
    """
    alpha = check_probability(alpha, "alpha")
    if p_design.ndim != 2 or q_design.ndim != 2 or p_design.shape[1] != q_design.shape[1]:
        raise ValueError(f"p_design and q_design must be 2-D with the same columns, got shapes "
                         f"{p_design.shape} and {q_design.shape}")
    d = p_design.shape[1]
    if d < 2 or d > PROJECTION_MAX_DIM:
        return None
    p = p_design[:PROJECTION_HEAD]
    q = q_design[:PROJECTION_HEAD]
    if min(len(p), len(q)) < 100:
        return None
    cp, cq, m = _coarse_codes(p, q, _MARGINAL_BINS)
    cp, cq = cp.astype(np.int64), cq.astype(np.int64)
    offset = np.arange(d) * _MARGINAL_BINS
    tp = np.bincount((cp + offset).ravel(), minlength=d * _MARGINAL_BINS).reshape(d, 1, _MARGINAL_BINS)
    tq = np.bincount((cq + offset).ravel(), minlength=d * _MARGINAL_BINS).reshape(d, 1, _MARGINAL_BINS)
    g, df = _g_statistics(tp, tq)
    pvalues = np.where(df > 0, chi2.sf(g, np.maximum(df, 1)), 1.0)
    keep = np.flatnonzero(pvalues < alpha / d)
    dropped = np.setdiff1d(np.arange(d), keep)
    if len(keep) == 0 or len(dropped) == 0:
        return None
    if df[dropped].sum() > 0 and chi2.sf(g[dropped].sum(), df[dropped].sum()) < alpha:
        return None
    # Pairwise: label independent of column j given column k, for dropped j and every k != j;
    # each column's codes merged into at most _PAIR_BINS adjacent groups.
    rows = min(len(p), len(q), PAIR_ROWS)
    hp = _one_hot(cp[:rows] * _PAIR_BINS // m, _PAIR_BINS)
    hq = _one_hot(cq[:rows] * _PAIR_BINS // m, _PAIR_BINS)
    cols = (dropped[:, None] * _PAIR_BINS + np.arange(_PAIR_BINS)).ravel()  # the dropped columns' indicators
    shape = (len(dropped), _PAIR_BINS, d, _PAIR_BINS)
    op = (hp[:, cols].T @ hp).reshape(shape).transpose(2, 0, 3, 1)  # [k, j, level of k, level of j]
    oq = (hq[:, cols].T @ hq).reshape(shape).transpose(2, 0, 3, 1)
    gp, dfp = _g_statistics(op, oq)  # shape (d, d_dropped)
    off = np.arange(d)[:, None] != dropped[None, :]
    tests = len(dropped) * (d - 1)
    pv = np.where(off & (dfp > 0), chi2.sf(gp, np.maximum(dfp, 1)), 1.0)
    if pv.min() < alpha / tests:
        return None
    return tuple(int(j) for j in keep)
