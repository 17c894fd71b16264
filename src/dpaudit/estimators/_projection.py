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

__all__ = ["PROJECTION_ALPHA", "PROJECTION_HEAD", "PROJECTION_MAX_DIM", "informative_columns"]

PROJECTION_ALPHA = 1e-3
"""Level of each decision of :func:`informative_columns` (Bonferroni-corrected over its tests):
a column is informative when its marginal test rejects at ``alpha / d``; the projection is
refused when the dropped columns' marginals together, or any dropped column given another
column, reject at ``alpha`` (over all such tests)."""

PROJECTION_HEAD = 500_000
"""Most selection rows per sample the decision looks at."""

PROJECTION_MAX_DIM = 64
"""Widest output the decision is tried on (its pairwise checks grow as ``d^2``)."""

_MARGINAL_BINS = 16
_PAIR_BINS = 4


def _coarse_codes(p: np.ndarray, q: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Codes ``0..m-1`` of one column of both samples: its values when the pooled rows show at
    most ``bins`` of them, else ``bins`` equal-mass bins at pooled quantiles (ties merge bins)."""
    pooled = np.concatenate([p, q])
    if len(np.unique(pooled[:: max(1, len(pooled) // 20_000)])) <= bins:  # cheap look first
        values = np.unique(pooled)
        if len(values) <= bins:
            return np.searchsorted(values, p), np.searchsorted(values, q), len(values)
    edges = np.unique(np.quantile(pooled, np.arange(1, bins) / bins))
    return (np.searchsorted(edges, p, side="right"), np.searchsorted(edges, q, side="right"),
            len(edges) + 1)


def _g_statistics(op: np.ndarray, oq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Likelihood-ratio (G) statistics of homogeneity of the 2 x B tables ``(op[i], oq[i])``
    (counts, shape (L, B)) and their degrees of freedom (non-empty columns - 1, 0 when one
    sample has no rows at that level)."""
    op = op.astype(float)
    oq = oq.astype(float)
    t = op + oq
    rp, rq = op.sum(axis=1), oq.sum(axis=1)
    n = rp + rq
    g = 2.0 * ((xlogy(op, op) + xlogy(oq, oq) - xlogy(t, t)).sum(axis=1)
               - xlogy(rp, rp) - xlogy(rq, rq) + xlogy(n, n))
    df = np.where((rp > 0) & (rq > 0), np.maximum((t > 0).sum(axis=1) - 1, 0), 0)
    return np.maximum(g, 0.0), df


def informative_columns(p_design: np.ndarray, q_design: np.ndarray, *, alpha: float = PROJECTION_ALPHA):
    """The columns of a vector output whose law differs between the two samples, or None when
    the output should not be projected.

    1. Each column is coded (its values, or 16 equal-mass bins) and tested for the same marginal
       law in both samples (G-test of homogeneity); the columns rejected at ``alpha / d`` are kept.
    2. None is returned when no column or every column is kept, when the dropped columns'
       marginal statistics together reject at ``alpha`` (chi-square with the summed degrees of
       freedom), or when some dropped column's law given another column (both coded into at most
       4 bins) differs between the samples at ``alpha`` Bonferroni-corrected over the
       ``d_dropped * (d - 1)`` such tests: a difference that lives only in the joint law of
       dropped coordinates (one bit XOR another) is then left to the classifier.

    Parameters
    ----------
    p_design, q_design : ndarray, shapes (n_p, d) and (n_q, d)
        Selection rows of the two samples (finite; only the first :data:`PROJECTION_HEAD` rows
        of each are used). Never rows that certify a bound.
    alpha : float, default :data:`PROJECTION_ALPHA`
        Level of each decision.

    Returns
    -------
    tuple of int or None
        The kept columns, increasing; None for outputs of dimension < 2 or >
        :data:`PROJECTION_MAX_DIM`.

    Notes
    -----
    The decision only restricts which regions are tried (cylinders over the kept columns), so
    any outcome keeps the bound valid; it costs power when a dropped column mattered. Under the
    null of identically distributed dropped columns it refuses a projection with probability at
    most about ``2 alpha`` (asymptotic chi-square levels).
    """
    d = p_design.shape[1]
    if d < 2 or d > PROJECTION_MAX_DIM:
        return None
    p = p_design[:PROJECTION_HEAD]
    q = q_design[:PROJECTION_HEAD]
    if min(len(p), len(q)) < 100:
        return None
    g = np.empty(d)
    df = np.empty(d)
    coarse = []
    for j in range(d):
        cp, cq, m = _coarse_codes(p[:, j], q[:, j], _MARGINAL_BINS)
        gj, dfj = _g_statistics(np.bincount(cp, minlength=m)[None], np.bincount(cq, minlength=m)[None])
        g[j], df[j] = gj[0], dfj[0]
        coarse.append(_coarse_codes(p[:, j], q[:, j], _PAIR_BINS) if m > _PAIR_BINS else (cp, cq, m))
    pvalues = np.where(df > 0, chi2.sf(g, np.maximum(df, 1)), 1.0)
    keep = np.flatnonzero(pvalues < alpha / d)
    dropped = np.setdiff1d(np.arange(d), keep)
    if len(keep) == 0 or len(dropped) == 0:
        return None
    if df[dropped].sum() > 0 and chi2.sf(g[dropped].sum(), df[dropped].sum()) < alpha:
        return None
    tests = len(dropped) * (d - 1)
    for j in dropped:
        cpj, cqj, mj = coarse[j]
        for k in range(d):
            if k == j:
                continue
            cpk, cqk, mk = coarse[k]
            op = np.bincount(cpk * mj + cpj, minlength=mk * mj).reshape(mk, mj)
            oq = np.bincount(cqk * mj + cqj, minlength=mk * mj).reshape(mk, mj)
            gjk, dfjk = _g_statistics(op, oq)
            if dfjk.sum() > 0 and chi2.sf(gjk.sum(), dfjk.sum()) < alpha / tests:
                return None
    return tuple(int(j) for j in keep)
