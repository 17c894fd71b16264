"""Histogram lower confidence bounds on the hockey-stick divergence of two samples of scores
(paper 001): :func:`histogram_audit`, :func:`make_bins`, :class:`Bins`.

Bin both samples on the same ``k`` bins (tails clipped into the end bins), read the frequencies
``p_i, q_i``, and estimate ``H_{e^eps}(P||Q) >= H_{e^eps}(P_k||Q_k) = sum_i (p_i - e^eps q_i)_+``
(data processing, paper 001 §4.2, Lemma 1). Two lower confidence bounds, both valid at every eps
at once (derivations in ``docs/scores.md``):

``"canonne"``
    ``TV(p_hat, p) <= e_P`` and ``TV(q_hat, q) <= e_Q`` with probability ``>= 1 - beta``
    (Canonne's argument, :func:`dpaudit.bounds.canonne_tv_upper`, here with the data-dependent
    mean term of :func:`dpaudit.bounds.empirical_tv_upper_plugin`), hence for every union of
    bins ``S``:
    ``P(S) >= p_hat(S) - e_P`` and ``Q(S) <= q_hat(S) + e_Q`` (paper 001 §4.3, Lemmas 2–3).
``"split"``
    The sets ``S`` (unions of bins ranked by their likelihood ratio) are chosen on a selection
    part of each sample; exact Clopper–Pearson bounds on ``P(S)`` and ``Q(S)`` are computed on the
    remaining part, Bonferroni-corrected over the distinct sets chosen.
``"auto"`` (default)
    Both, at ``beta/2`` each; every reported number comes from whichever is tighter there, and the
    result says which (:meth:`ScoreAudit.epsilon_source`).

Bins chosen by looking at the data (Scott's rule, or a bin count without a range) are chosen on
the selection part only, so every bound is computed on data the choice never saw. Bins fixed in
advance (explicit edges, or a count together with a range) let the Canonne bound use all samples.

The histogram of mechanism outputs (:class:`~dpaudit.estimators.histogram.HistogramHockeyStick`)
is the other half of :mod:`dpaudit.estimators.histogram`, which re-exports every name here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .._validate import as_rng, check_int, check_probability
from ..bounds import canonne_tv_upper, empirical_tv_upper_plugin
from .base import check_scores
from .region import ScoreAudit, certify_regions, projected_mass_bounds

__all__ = ["METHODS", "Bins", "histogram_audit", "histogram_hockey_stick", "make_bins", "scott_bin_width"]

METHODS = ("auto", "canonne", "split")

#: Samples at least this large are binned by arithmetic on equal-width edges (:meth:`Bins.assign`).
_ARITHMETIC_BINNING_MIN = 256


@dataclass(frozen=True, eq=False)
class Bins:
    """A partition of the real line into ``k`` bins; values outside the edges go to the end bins.

    Attributes
    ----------
    edges : ndarray, shape (k + 1,)
        Strictly increasing, finite. Bin ``i`` is ``[edges[i], edges[i+1])`` (the last bin is
        closed); values below ``edges[0]`` fall in bin 0 and above ``edges[-1]`` in bin ``k - 1``.
    rule : str
        How the edges were made: ``"scott"``, ``"count"`` or ``"edges"``.
    chosen_on : str
        ``"given"`` (fixed in advance) or ``"selection split"`` (chosen on held-apart samples).
    """

    edges: np.ndarray
    rule: str = "edges"
    chosen_on: str = "given"

    @property
    def k(self) -> int:
        """Number of bins."""
        return int(self.edges.size - 1)

    def assign(self, values) -> np.ndarray:
        """Bin index of each value, shape (n,), in ``0 .. k - 1``.

        Exactly ``clip(searchsorted(edges, values, side="right") - 1, 0, k - 1)``. For equal-width
        edges (Scott's rule, a bin count: :func:`make_bins`) the index is first computed by
        arithmetic, ``(value - edges[0]) k / (edges[-1] - edges[0])``, then checked against the
        edges themselves; the values it misplaces by rounding (or NaN) go through the binary
        search, so the result is identical, in a fraction of the time on large samples.
        """
        v = np.asarray(values, dtype=float)
        if v.size >= _ARITHMETIC_BINNING_MIN and self._equal_width:
            return self._assign_equal_width(v)
        idx = np.searchsorted(self.edges, v, side="right") - 1
        return np.clip(idx, 0, self.k - 1)

    @cached_property
    def _equal_width(self) -> bool:
        """Whether the edges are equally spaced up to rounding (as :func:`numpy.linspace` makes
        them): then :meth:`assign`'s arithmetic guess is almost always right."""
        e = self.edges
        return e.size < 3 or bool(np.ptp(np.diff(e)) <= 1e-9 * float(e[-1] - e[0]))

    def _assign_equal_width(self, v: np.ndarray) -> np.ndarray:
        """:meth:`assign` for equal-width edges: an arithmetic guess, verified against the edges,
        the binary search for the values it misplaced (identical to the binary search)."""
        e, k = self.edges, self.k
        with np.errstate(invalid="ignore", over="ignore"):
            idx = np.clip((v - e[0]) * (k / (e[-1] - e[0])), 0, k - 1).astype(np.intp)
        np.clip(idx, 0, k - 1, out=idx)  # NaN casts to an arbitrary integer: the check below catches it
        # Correct: edges[idx] <= v < edges[idx + 1], except that the end bins also take what lies beyond.
        ok = (e[idx] <= v) | (idx == 0)
        ok &= (v < e[idx + 1]) | (idx == k - 1)
        wrong = np.flatnonzero(~ok)
        if wrong.size:
            idx[wrong] = np.clip(np.searchsorted(e, v[wrong], side="right") - 1, 0, k - 1)
        return idx

    def counts(self, values) -> np.ndarray:
        """Number of values in each bin, shape (k,)."""
        return np.bincount(self.assign(values), minlength=self.k)

    def to_dict(self) -> dict:
        e = self.edges
        return {
            "k": self.k, "rule": self.rule, "chosen_on": self.chosen_on,
            "range": [float(e[0]), float(e[-1])], "width": float((e[-1] - e[0]) / self.k),
        }


def scott_bin_width(p_scores, q_scores=None, num_samples: int | None = None) -> float:
    """Scott's (1979) bin width ``h = 3.49 sigma n^{-1/3}`` (paper 001 §4.4, eq. (4.2)).

    ``sigma`` is the mean of the two samples' standard deviations (the paper's rule of thumb for
    score distributions of similar spread; the pooled standard deviation if both samples are
    constant), ``n`` the number of samples per side the histogram
    will be built from (default: the size of ``p_scores``).

    Parameters
    ----------
    p_scores : array, shape (n,)
    q_scores : array, shape (m,), optional
    num_samples : int, optional

    Returns
    -------
    float
        Bin width (score units); 0 if the samples are constant.

    References
    ----------
    Scott (1979), "On optimal and data-based histograms", Biometrika 66(3); paper 001 Cor. 5.

    Raises
    ------
    ValueError
        If ``num_samples < 1``.
    """
    x = check_scores(p_scores, "p_scores")
    sds = [np.std(x)]
    y = None
    if q_scores is not None:
        y = check_scores(q_scores, "q_scores")
        sds.append(np.std(y))
    n = x.size if num_samples is None else int(num_samples)
    if n < 1:
        raise ValueError(f"num_samples must be >= 1, got {num_samples!r}")
    sigma = float(np.mean(sds))
    if sigma == 0.0 and y is not None:  # each sample constant: fall back on the pooled spread
        sigma = float(np.std(np.concatenate([x, y])))
    return float(3.49 * sigma * n ** (-1.0 / 3.0))


def make_bins(p_scores, q_scores, bins="scott", bin_range=None, *, num_samples=None, max_bins: int = 10_000) -> Bins:
    """Bins for two samples: Scott's rule, a bin count, or explicit edges.

    Parameters
    ----------
    p_scores, q_scores : array, shape (n,), (m,)
        Samples the rule may look at (in :func:`histogram_audit`, the selection part only).
    bins : "scott", int or array of edges
        ``"scott"``: width :func:`scott_bin_width` over ``bin_range``; int ``k``: ``k`` equal bins;
        array: strictly increasing finite edges (``bin_range`` must then be None).
    bin_range : (float, float), optional
        ``(low, high)``; default: the smallest and largest pooled score.
    num_samples : int, optional
        Per-side sample size the width is tuned for (Scott's rule).
    max_bins : int
        Cap on the number of bins for Scott's rule.

    Returns
    -------
    Bins

    Raises
    ------
    ValueError
        If ``bins < 1``, edges are not strictly increasing and finite, the range is empty or
        not finite, or ``bins`` is neither "scott", an int nor an array.

    References
    ----------
    Paper 001 §4.2 (equal-width bins, tails clipped into the end bins), §4.4 (Scott 1979).
    """
    if isinstance(bins, str):
        if bins != "scott":
            raise ValueError(f"bins must be 'scott', a positive integer or an array of edges, got {bins!r}")
        rule = "scott"
    elif isinstance(bins, (bool, np.bool_)):
        raise ValueError(f"bins must be 'scott', a positive integer or an array of edges, got {bins!r}")
    elif np.ndim(bins) == 0:
        if int(bins) != bins or int(bins) < 1:
            raise ValueError(f"bins must be >= 1, got {bins!r}")
        rule = "count"
    else:
        edges = np.asarray(bins, dtype=float)
        if edges.ndim != 1 or edges.size < 2 or np.any(~np.isfinite(edges)) or np.any(np.diff(edges) <= 0):
            raise ValueError(f"bin edges must be a 1-D, finite, strictly increasing array of >= 2 values, got {bins!r}")
        if bin_range is not None:
            raise ValueError(f"give either bin edges or bin_range, not both (bin_range={bin_range!r})")
        return Bins(edges, "edges", "given")
    if bin_range is None:
        pooled = np.concatenate([check_scores(p_scores, "p_scores"), check_scores(q_scores, "q_scores")])
        lo, hi = float(pooled.min()), float(pooled.max())
    else:
        try:
            lo, hi = (float(v) for v in bin_range)
        except (TypeError, ValueError):
            raise ValueError(f"bin_range must be a pair (low, high), got {bin_range!r}") from None
        if not (math.isfinite(lo) and math.isfinite(hi)) or not hi > lo:
            raise ValueError(f"bin_range must be finite with low < high, got {bin_range!r}")
    if hi <= lo:  # constant samples: one bin around the value
        lo, hi = lo - 0.5, hi + 0.5
    if rule == "count":
        k = int(bins)
    else:
        h = scott_bin_width(p_scores, q_scores, num_samples)
        k = 1 if h <= 0 else int(min(max_bins, max(1, math.ceil((hi - lo) / h))))
    return Bins(np.linspace(lo, hi, k + 1), rule, "given")


def histogram_hockey_stick(p_scores, q_scores, epsilons, bins="scott", bin_range=None):
    """Plug-in histogram estimate ``sum_i (p_i - e^eps q_i)_+`` for a grid of eps (an estimate).

    Paper 001 §4.2 (Alg. 2 without confidence). Not a bound: sampling noise biases it upwards
    for close distributions; use :func:`histogram_audit` for confidence bounds.

    Parameters
    ----------
    p_scores, q_scores : array, shape (n,), (m,)
    epsilons : array, shape (G,)
        Epsilons in nats.
    bins, bin_range
        As in :func:`make_bins` (chosen on the same samples).

    Returns
    -------
    (ndarray, ndarray)
        ``H(P_hat||Q_hat)`` and ``H(Q_hat||P_hat)`` on the grid, each shape (G,).
    """
    x = check_scores(p_scores, "p_scores")
    y = check_scores(q_scores, "q_scores")
    b = make_bins(x, y, bins, bin_range)
    p = b.counts(x) / x.size
    q = b.counts(y) / y.size
    return _plugin(p, q, np.atleast_1d(np.asarray(epsilons, dtype=float)))


def _plugin(p, q, eps):
    a = np.exp(np.minimum(eps, 700.0))[:, None]
    fwd = np.maximum(p[None, :] - a * q[None, :], 0.0).sum(axis=1)
    rev = np.maximum(q[None, :] - a * p[None, :], 0.0).sum(axis=1)
    return fwd, rev


def _ratio_order(kp, n, kq, m, smooth: float = 0.0):
    """Bins sorted by estimated likelihood ratio ``p_i / q_i``, largest first (ties: more P mass)."""
    p = (kp + smooth) / n
    q = (kq + smooth) / m
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(q > 0, p / np.where(q > 0, q, 1.0), np.where(p > 0, np.inf, 1.0))
    return np.lexsort((-p, -r))


def _eps_top(kp, n, kq, m) -> float:
    lr = np.log((kp + 0.5) / n) - np.log((kq + 0.5) / m)
    return float(np.clip(np.max(np.abs(lr)) if lr.size else 1.0, 0.5, 20.0))


def histogram_audit(
    p_scores,
    q_scores,
    *,
    bins="scott",
    bin_range=None,
    method: str = "auto",
    confidence: float = 0.95,
    epsilons=None,
    selection_fraction: float = 0.5,
    max_bins: int = 10_000,
    rng=None,
) -> ScoreAudit:
    """Lower confidence bounds on the privacy profile, trade-off curve and GDP parameter.

    Paper 001 Alg. 2 with confidence: histogram the two samples, bound the binned distributions'
    hockey-stick divergences, simultaneously over all eps (``docs/scores.md`` §1–§2).

    Parameters
    ----------
    p_scores : array, shape (n,)
        Scores under P (e.g. a canary's loss under models trained *with* it). Finite.
    q_scores : array, shape (m,)
        Scores under Q (models trained *without* it). Finite.
    bins : "scott", int or array of edges
        Binning (see :func:`make_bins`). Data-dependent choices (``"scott"``, or an int without
        ``bin_range``) are made on the selection part only.
    bin_range : (float, float), optional
        Range of the equal-width bins; with an int ``bins`` it fixes the bins in advance.
    method : {"auto", "canonne", "split"}
        Which bound(s); ``"auto"`` spends half the failure probability on each and keeps the
        tighter at every point.
    confidence : float
        ``1 - beta`` in (0, 1): all bounds of the result hold together with this probability.
    epsilons : array of float, optional
        Epsilon grid (nats, ``>= 0``) at which the split method selects its sets and the plug-in
        estimate is tabulated; default 48 points from 0 to the largest observed log ratio.
        The bounds themselves hold at every eps, on or off this grid.
    selection_fraction : float
        Fraction of each sample (in (0, 1)) held apart to choose bins and sets.
    max_bins : int
        Cap on Scott's bin count.
    rng : numpy Generator or int, optional
        Randomness of the split (samples are permuted before splitting).

    Returns
    -------
    ScoreAudit

    Raises
    ------
    ValueError
        Empty samples or fewer than 2 scores per side, NaN/inf scores, wrong shapes, bins < 1,
        confidence outside (0, 1), unknown method, selection_fraction outside (0, 1).

    References
    ----------
    Paper 001 §4 (Alg. 2, Lemmas 1–3, Thm 4); Canonne (2020); Clopper & Pearson (1934);
    Scott (1979).
    """
    x = check_scores(p_scores, "p_scores", min_size=2)
    y = check_scores(q_scores, "q_scores", min_size=2)
    conf = check_probability(confidence, "confidence")
    beta = 1.0 - conf
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    sf = check_probability(selection_fraction, "selection_fraction")
    max_bins = check_int(max_bins, "max_bins")
    gen = as_rng(rng)
    fixed = not isinstance(bins, str) and (np.ndim(bins) > 0 or bin_range is not None)
    if isinstance(bins, (bool, np.bool_)):
        raise ValueError(f"bins must be 'scott', a positive integer or an array of edges, got {bins!r}")
    if not isinstance(bins, str) and np.ndim(bins) == 0 and (int(bins) != bins or int(bins) < 1):
        raise ValueError(f"bins must be >= 1, got {bins!r}")

    # Split each sample: A (selection) and B (bounds).
    xs = x[gen.permutation(x.size)]
    ys = y[gen.permutation(y.size)]
    na = min(x.size - 1, max(1, int(round(sf * x.size))))
    ma = min(y.size - 1, max(1, int(round(sf * y.size))))
    xa, xb, ya, yb = xs[:na], xs[na:], ys[:ma], ys[ma:]

    if fixed:
        b = make_bins(x, y, bins, bin_range, max_bins=max_bins)
    else:
        b = make_bins(xa, ya, bins, bin_range, num_samples=min(xb.size, yb.size), max_bins=max_bins)
        b = Bins(b.edges, b.rule, "selection split")
    k = b.k

    beta_c = beta if method == "canonne" else (beta / 2.0 if method == "auto" else 0.0)
    beta_s = beta if method == "split" else (beta / 2.0 if method == "auto" else 0.0)

    kpa, kqa = b.counts(xa), b.counts(ya)
    if epsilons is None:
        grid = np.linspace(0.0, _eps_top(kpa, na, kqa, ma), 48)
    else:
        grid = np.unique(np.atleast_1d(np.asarray(epsilons, dtype=float)))
        if grid.size == 0 or np.any(~np.isfinite(grid)) or np.any(grid < 0):
            raise ValueError(f"epsilons must be a non-empty array of finite values >= 0, got {epsilons!r}")

    p_rows, q_rows, src = [], [], []
    details: dict = {"bins": b.to_dict(), "beta": beta, "selection_fraction": sf}

    if beta_c > 0:
        cx, cy = (x, y) if fixed else (xb, yb)
        kp, kq = b.counts(cx), b.counts(cy)
        # Canonne's argument with data-dependent constants: the mean term sum_i sqrt(p_i(1-p_i)/n)/2
        # is bounded over the masses the counts allow (dpaudit.bounds.empirical_tv_upper_plugin),
        # which is much smaller than sqrt((k-1)/n)/2 when most of Scott's bins are nearly empty.
        e_p = empirical_tv_upper_plugin(kp, beta_c / 2.0)
        e_q = empirical_tv_upper_plugin(kq, beta_c / 2.0)
        order = _ratio_order(kp, cx.size, kq, cy.size)
        ps = np.concatenate([[0.0], np.cumsum(kp[order]) / cx.size])
        qs = np.concatenate([[0.0], np.cumsum(kq[order]) / cy.size])
        p_rows.append(np.clip(ps - e_p, 0.0, 1.0))
        q_rows.append(np.clip(qs + e_q, 0.0, 1.0))
        src += ["canonne"] * ps.size
        details["canonne"] = {
            "beta": beta_c, "tv_radius_p": e_p, "tv_radius_q": e_q,
            "tv_radius_p_from_k_only": canonne_tv_upper(cx.size, k, beta_c / 2.0),
            "tv_radius_q_from_k_only": canonne_tv_upper(cy.size, k, beta_c / 2.0),
            "n_p": int(cx.size), "n_q": int(cy.size), "samples": "all" if fixed else "estimation part",
        }

    if beta_s > 0:
        # Candidate sets, all fixed by the selection part A: prefixes of the bins ranked by their
        # (smoothed) likelihood ratio on A, and the bin-aligned half-lines (thresholds), which
        # are the optimal sets when the likelihood ratio is monotone (paper 001 §6).
        # The ranking uses the first half of A and the choice among candidates the second half,
        # so that a set is not preferred merely because A's own noise ranked it high.
        kpb, kqb = b.counts(xb), b.counts(yb)
        na1, ma1 = max(1, na // 2), max(1, ma // 2)
        if na >= 2 and ma >= 2:
            kp1, kq1 = b.counts(xa[:na1]), b.counts(ya[:ma1])
            kp2, kq2, n2, m2 = b.counts(xa[na1:]), b.counts(ya[ma1:]), na - na1, ma - ma1
        else:
            kp1, kq1, kp2, kq2, n2, m2 = kpa, kqa, kpa, kqa, na, ma
        orders = [_ratio_order(kp1, na1, kq1, ma1, smooth=0.5), np.arange(k)[::-1], np.arange(k)]

        def prefix(counts):
            return np.concatenate([np.concatenate([[0], np.cumsum(counts[o])]) for o in orders])

        cpa, cqa, cpb, cqb = prefix(kp2), prefix(kq2), prefix(kpb), prefix(kqb)
        guess = beta_s / (2.0 * max(1, min(cpa.size, 2 * grid.size)))
        # Score each candidate by the bound it would get on B if B looked like A2 (counts rescaled
        # to B's size), so the finite-sample penalty of small tail sets is judged at B's size.
        pl, qu = projected_mass_bounds(cpa, n2, cqa, m2, xb.size, yb.size, guess)
        alpha = np.exp(np.minimum(grid, 700.0))[:, None]
        fwd = pl[None, :] - alpha * qu[None, :]
        rev = (1.0 - qu)[None, :] - alpha * (1.0 - pl)[None, :]
        chosen = set()
        for score in (fwd, rev):
            j = np.argmax(score, axis=1)
            good = score[np.arange(score.shape[0]), j] > 0
            chosen.update(int(v) for v in j[good])
        # ... and the sets that look best for an epsilon bound at small deltas (pure-DP-like
        # regime, where the best set has tiny masses and may fall between grid points).
        with np.errstate(divide="ignore", invalid="ignore"):
            for dlt in (0.0, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2):
                for num, den in ((pl - dlt, qu), (1.0 - qu - dlt, 1.0 - pl)):
                    val = np.where(num > 0, np.log(np.maximum(num, 1e-300)) - np.log(den), -np.inf)
                    j = int(np.argmax(val))
                    if val[j] > 0:
                        chosen.add(j)
        if not chosen:  # nothing looks promising on A: test the best TV set only
            chosen.add(int(np.argmax(pl - qu)))
        # The same set can appear in several families (e.g. a monotone ratio): count it once.
        pairs = sorted({(int(cpb[j]), int(cqb[j]), int(cpa[j]), int(cqa[j])) for j in chosen})
        d = len(pairs)
        cpb_s = np.array([t[0] for t in pairs])
        cqb_s = np.array([t[1] for t in pairs])
        p_lo, q_hi, level = certify_regions(cpb_s, xb.size, cqb_s, yb.size, beta_s)
        p_rows.append(np.atleast_1d(p_lo))
        q_rows.append(np.atleast_1d(q_hi))
        src += ["split"] * d
        details["split"] = {
            "beta": beta_s, "sets": int(d), "per_bound_beta": level,
            "n_select_p": int(na), "n_select_q": int(ma), "n_p": int(xb.size), "n_q": int(yb.size),
        }

    # Plug-in estimate on all samples (for display; not a bound).
    pf, qf = b.counts(x) / x.size, b.counts(y) / y.size
    fwd, rev = _plugin(pf, qf, grid)
    est = np.maximum(fwd, rev)
    tv_hat = float(0.5 * np.abs(pf - qf).sum())
    return ScoreAudit.from_rows(
        np.concatenate(p_rows), np.concatenate(q_rows), src,
        method=method, confidence=conf, n_p=int(x.size), n_q=int(y.size), tv_estimate=tv_hat,
        estimate_epsilons=grid, estimate_deltas=est, details=details,
    )
