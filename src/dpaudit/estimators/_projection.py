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

PAIR_ROWS = 100_000
"""Most selection rows per sample of the pairwise checks (strong joint effects only: their level
is Bonferroni-corrected over ``d_dropped (d - 1)`` tests)."""

_MARGINAL_BINS = 16
_PAIR_BINS = 4
_EDGE_ROWS = 50_000  # bin edges from at most this many pooled rows (any fixed binning is a valid test)


def _coarse_codes(p: np.ndarray, q: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Codes ``0..m-1`` of one column of both samples: its values when the pooled rows show at
    most ``bins`` of them, else ``bins`` equal-mass bins at quantiles of (a strided subset of)
    the pooled rows (ties merge bins)."""
    pooled = np.concatenate([p, q])
    sub = pooled[:: max(1, len(pooled) // _EDGE_ROWS)]
    if len(np.unique(sub)) <= bins:  # a cheap look first
        values = np.unique(pooled)
        if len(values) <= bins:
            return np.searchsorted(values, p), np.searchsorted(values, q), len(values)
    edges = np.unique(np.quantile(sub, np.arange(1, bins) / bins))
    return (np.searchsorted(edges, p, side="right"), np.searchsorted(edges, q, side="right"),
            len(edges) + 1)


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

    Notes
    -----
    The decision only restricts which regions are tried (cylinders over the kept columns), so
    any outcome keeps the bound valid; it costs power when a dropped column mattered. Under the
    null of identically distributed dropped columns it refuses a projection with probability at
    most about ``2 alpha`` (asymptotic chi-square levels). All pairwise tables come from one
    product of indicator matrices.
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
    rows = min(len(p), len(q), PAIR_ROWS)
    codes_p = np.empty((rows, d), dtype=np.int64)  # pairwise codes: the marginal codes merged
    codes_q = np.empty((rows, d), dtype=np.int64)  # into at most _PAIR_BINS adjacent groups
    for j in range(d):
        cp, cq, m = _coarse_codes(p[:, j], q[:, j], _MARGINAL_BINS)
        gj, dfj = _g_statistics(np.bincount(cp, minlength=m)[None], np.bincount(cq, minlength=m)[None])
        g[j], df[j] = gj, dfj
        codes_p[:, j] = cp[:rows] * _PAIR_BINS // m
        codes_q[:, j] = cq[:rows] * _PAIR_BINS // m
    pvalues = np.where(df > 0, chi2.sf(g, np.maximum(df, 1)), 1.0)
    keep = np.flatnonzero(pvalues < alpha / d)
    dropped = np.setdiff1d(np.arange(d), keep)
    if len(keep) == 0 or len(dropped) == 0:
        return None
    if df[dropped].sum() > 0 and chi2.sf(g[dropped].sum(), df[dropped].sum()) < alpha:
        return None
    # Pairwise: label independent of column j given column k, for dropped j and every k != j.
    hp, hq = _one_hot(codes_p, _PAIR_BINS), _one_hot(codes_q, _PAIR_BINS)
    shape = (d, _PAIR_BINS, d, _PAIR_BINS)
    op = (hp.T @ hp).reshape(shape).transpose(2, 0, 3, 1)  # [k, j, level of k, level of j]
    oq = (hq.T @ hq).reshape(shape).transpose(2, 0, 3, 1)
    gp, dfp = _g_statistics(op[:, dropped], oq[:, dropped])  # shape (d, d_dropped)
    off = np.arange(d)[:, None] != dropped[None, :]
    tests = len(dropped) * (d - 1)
    pv = np.where(off & (dfp > 0), chi2.sf(gp, np.maximum(dfp, 1)), 1.0)
    if pv.min() < alpha / tests:
        return None
    return tuple(int(j) for j in keep)
