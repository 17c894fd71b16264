"""Variational lower confidence bounds on the Rényi divergence.

For ``alpha > 1`` and any bounded measurable ``h`` (Birrell, Dupuis, Katsoulakis, Rey-Bellet,
Wang 2021, Thm 3.1; paper 000 Thm 4.1; paper 002 Thm 4.1)::

    R_alpha(P || Q) >= R^h_alpha(P || Q)
                     = alpha/(alpha-1) ln E_P[e^{(alpha-1) h}] - ln E_Q[e^{alpha h}],

with equality at ``h = ln dP/dQ``. ``R^h`` does not change when a constant is added to ``h``, so
only the *width* of the range of ``h`` matters. dpaudit (paper 000 Alg. 2, paper 002 Alg. 1,
tightened; derivation in ``docs/renyi.md``):

1. fits a function ``g`` on the first part of both samples by maximising the empirical objective
   of both directions, ``R^g(P||Q) + R^{-g}(Q||P)``, over a bounded class: an MLP with output
   ``C_train tanh(.)`` or, for 1-D outputs, a Chebyshev polynomial squashed the same way;
2. chooses, again on the training samples only, a window ``[lo, hi]`` and the test function
   ``h = clip(g, lo, hi)`` (and, for pure-DP claims, the order alpha) that maximise the bound the
   held-out samples are expected to give;
3. on the held-out samples bounds ``mu_P = E_P[e^{(alpha-1)(h-hi)}]`` from below and
   ``mu_Q = E_Q[e^{alpha(h-hi)}]`` from above, each at half the direction's failure probability,
   with the empirical-Bernstein inequality (Maurer & Pontil 2009, Thm 4) for variables in the
   known ranges ``[e^{-(alpha-1)W}, 1]`` and ``[e^{-alpha W}, 1]`` (``W = hi - lo``), and reports
   ``lower = alpha/(alpha-1) ln mu_P_lower - ln mu_Q_upper``;
4. reports a bound as vacuous (``lower = -inf``, with the sample size that would be needed) when
   no function of the class could, whatever the data, give a bound above the threshold.

The bound of paper 002 Thm 4.3 (multiplicative Chernoff with the worst-case means, corrected as
derived in ``docs/renyi.md``) is available as ``concentration="chernoff"`` for comparison.
"""

from __future__ import annotations

import itertools
import math
import time

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from .._validate import check_alpha, check_int, check_positive, check_probability
from .._torch import check_training, mlp, predict, torch_threads, train
from ..bounds import empirical_bernstein_lower
from ._common import SCORE_CHUNK, robust_standardiser, smallest_int, zoom_features
from .base import DivergenceBound, check_sample_pair, register_bound_type

__all__ = [
    "RenyiBound",
    "RenyiEvidence",
    "VariationalRenyi",
    "best_case_lower",
    "needed_test_samples",
    "renyi_bound_from_values",
    "renyi_lower_bound",
]

_CONCENTRATIONS = ("bernstein", "chernoff")
_MAX_EXPONENT = 300.0  # largest alpha * (hi - lo) handled: e^{-2 * 300} is still a normal float64
_FUNCTION_CLASSES = ("mlp", "chebyshev")


# =====================================================================================  result
@register_bound_type
@dataclass(frozen=True)
class RenyiBound(DivergenceBound):
    """Lower confidence bound on ``R_alpha(P || Q)`` from one bounded test function.

    With probability at least ``1 - beta`` over the held-out samples (``h`` fixed beforehand),
    ``mu_p >= mu_p_lower`` and ``mu_q <= mu_q_upper`` hold together, hence
    ``R_alpha(P||Q) >= R^h_alpha(P||Q) >= lower``.

    Attributes
    ----------
    divergence, direction, estimate, lower, beta
        See :class:`DivergenceBound`. ``estimate`` is the held-out plug-in value
        ``alpha/(alpha-1) ln mean_p - ln mean_q`` (nats); ``lower`` is ``-inf`` when the bound
        is vacuous.
    alpha : float
        Rényi order.
    width : float
        ``W = hi - lo``, the width of the range of ``h`` (``2 C`` for ``|h - (lo+hi)/2| <= C``).
    lo, hi : float
        The window: ``h = clip(g, lo, hi)`` for the fitted function ``g``.
    mean_p, mean_q : float
        Held-out means of ``e^{(alpha-1)(h-hi)}`` under P and of ``e^{alpha(h-hi)}`` under Q.
    mean_p_lower, mean_q_upper : float
        Their confidence bounds, each at ``beta / 2`` (clipped to the a-priori ranges
        ``[e^{-(alpha-1)W}, 1]`` and ``[e^{-alpha W}, 1]``).
    n_test_p, n_test_q : int
        Held-out sample sizes.
    n_train : int
        Samples (both distributions together) used to fit ``g`` and choose the window.
    concentration : str
        ``"bernstein"`` (empirical Bernstein) or ``"chernoff"`` (paper 002 Thm 4.3, corrected).
    function_class : str
        ``"mlp"``, ``"chebyshev"`` or ``"given"`` (values supplied by the caller).
    vacuous : bool
        True when the sample sizes alone make the bound useless: no function of the class
        (range width up to ``max_width``), whatever the data, could give a bound above the
        threshold it was computed for (then ``lower = -inf``). See :func:`best_case_lower`.
    needed_samples : int or None
        For a vacuous bound: held-out samples per distribution from which the same formula could
        exceed the threshold (:func:`needed_test_samples`); None otherwise, or if no size could.
    """

    alpha: float
    width: float
    lo: float
    hi: float
    mean_p: float
    mean_q: float
    mean_p_lower: float
    mean_q_upper: float
    n_test_p: int
    n_test_q: int
    n_train: int
    concentration: str = "bernstein"
    function_class: str = "mlp"
    vacuous: bool = False
    needed_samples: int | None = None

    @property
    def function_bound(self) -> float:
        """``C = W / 2``: ``h`` minus the window's midpoint is bounded by ``C`` (paper 000 eq. (7))."""
        return 0.5 * self.width


@dataclass(frozen=True)
class RenyiEvidence:
    """The bounds one fitted function gives for both directions.

    Attributes
    ----------
    forward : RenyiBound
        Bound on ``R_alpha(P || Q)`` (at the order chosen for this direction).
    reverse : RenyiBound
        Bound on ``R_alpha(Q || P)``.
    train_seconds, total_seconds : float
        Wall time of the fit and of the whole estimate.
    """

    forward: RenyiBound
    reverse: RenyiBound
    train_seconds: float
    total_seconds: float

    @property
    def bounds(self) -> tuple:
        """``(forward, reverse)``."""
        return (self.forward, self.reverse)


# =====================================================================  concentration bounds
def _mean_bounds(m_u, var_u, n_p, m_v, var_v, n_q, u_min, v_min, alpha, width, beta_each, concentration):
    """Lower bound on ``E[U]`` and upper bound on ``E[V]``, each failing with prob. <= ``beta_each``.

    ``U = e^{(alpha-1)(h-hi)}`` takes values in ``[u_min, 1]``, ``V = e^{alpha(h-hi)}`` in
    ``[v_min, 1]`` (``u_min = e^{-(alpha-1)W}``, ``v_min = e^{-alpha W}``). Works elementwise on
    arrays (window search) and on floats (the bound itself). The results are clipped to the
    a-priori ranges, which the means always lie in, so clipping never breaks validity.

    ``"bernstein"``: Maurer & Pontil (2009) Thm 4 through
    :func:`dpaudit.bounds.empirical_bernstein_lower`; the upper bound on ``E[V]`` is the lower
    bound on ``E[-V]`` (same variance and range) negated. ``"chernoff"``: see :func:`_chernoff_etas`.
    """
    if concentration == "bernstein":
        if np.ndim(m_u) == 0:
            # ranges 1 - e^{-(alpha-1)W} and 1 - e^{-alpha W}, accurate for tiny W
            range_u, range_v = -math.expm1(-(alpha - 1.0) * width), -math.expm1(-alpha * width)
            u_lo = empirical_bernstein_lower(m_u, var_u, n_p, beta_each, value_range=range_u)
            v_hi = -empirical_bernstein_lower(-m_v, var_v, n_q, beta_each, value_range=range_v)
        else:  # same formula, vectorised over windows of different widths (used only to choose)
            log_term = math.log(2.0 / beta_each)
            u_lo = m_u - np.sqrt(2 * var_u * log_term / n_p) - 7 * (1 - u_min) * log_term / (3 * (n_p - 1))
            v_hi = m_v + np.sqrt(2 * var_v * log_term / n_q) + 7 * (1 - v_min) * log_term / (3 * (n_q - 1))
    else:
        eta1, eta2 = _chernoff_etas(alpha, width, n_p, n_q, beta_each)
        u_lo = m_u / (1.0 + eta1)
        with np.errstate(divide="ignore"):
            v_hi = np.where(eta2 < 1.0, m_v / np.maximum(1.0 - eta2, 0.0), np.inf)
    return np.clip(u_lo, u_min, 1.0), np.clip(v_hi, v_min, 1.0)


def _chernoff_etas(alpha, width, n_p: int, n_q: int, beta_each: float):
    """Relative errors of the multiplicative Chernoff bounds (paper 002 Thm 4.3, corrected).

    ``U = e^{(alpha-1)(h-hi)}`` lies in ``[0, 1]`` with mean ``mu1 >= e^{-(alpha-1)W}``; the
    upper tail ``P(U_bar >= (1+eta) mu1) <= exp(-n mu1 eta^2 / (2+eta))`` (every eta > 0) gives
    ``eta1`` solving ``n eta^2 / ((2 + eta) e^{(alpha-1)W}) = ln(1/beta_each)``.
    ``V = e^{alpha(h-hi)}`` in ``[0, 1]``, mean ``mu2 >= e^{-alpha W}``; the lower tail
    ``P(V_bar <= (1-eta) mu2) <= exp(-n mu2 eta^2 / 2)`` gives
    ``eta2 = sqrt(2 e^{alpha W} ln(1/beta_each) / n)`` (vacuous when >= 1). Derivation:
    ``docs/renyi.md`` §3.
    """
    w = np.asarray(width, dtype=float)
    log_term = math.log(1.0 / beta_each)
    c = log_term * np.exp((alpha - 1.0) * w) / n_p
    eta1 = 0.5 * (c + np.sqrt(c * c + 8.0 * c))
    eta2 = np.sqrt(2.0 * np.exp(alpha * w) * log_term / n_q)
    return eta1, eta2


def _bound_value(u_lo, v_hi, alpha):
    """``alpha/(alpha-1) ln u_lo - ln v_hi`` (elementwise)."""
    return alpha / (alpha - 1.0) * np.log(u_lo) - np.log(v_hi)


def best_case_lower(alpha: float, widths, n_p: int, n_q: int, beta: float, concentration: str = "bernstein"):
    """Largest lower bound held-out samples could possibly give for functions of range width ``W``.

    The best case is perfectly separated data: every ``h(X_i) = hi`` and every ``h(Y_j) = lo``
    (zero sample variance), where ``R^h = alpha W``. Since the bound increases with ``mean_p``,
    decreases with ``mean_q`` and decreases with the sample variances, no data give more; when
    this does not exceed a threshold, the test cannot reject at these sample sizes.

    Parameters
    ----------
    alpha : float
        Rényi order, > 1.
    widths : float or array
        ``W = hi - lo`` (> 0).
    n_p, n_q : int
        Held-out sample sizes (>= 2).
    beta : float
        Failure probability of the bound (each mean gets ``beta / 2``).
    concentration : {"bernstein", "chernoff"}

    Returns
    -------
    float or ndarray
        Same shape as ``widths``; ``-inf`` where even the best case says nothing.
    """
    w = np.asarray(widths, dtype=float)
    u_min, v_min = np.exp(-(alpha - 1.0) * w), np.exp(-alpha * w)
    ones = np.ones_like(w)
    u_lo, v_hi = _mean_bounds(ones, 0.0 * w, n_p, v_min, 0.0 * w, n_q, u_min, v_min, alpha, w, beta / 2, concentration)
    ok = (u_lo > u_min) & (v_hi < 1.0)
    out = np.where(ok, _bound_value(u_lo, v_hi, alpha), -np.inf)
    return float(out) if out.ndim == 0 else out


def _width_grid(max_width: float, alpha: float) -> np.ndarray:
    """64 widths up to ``max_width`` (and up to the float64 limit on ``alpha W``)."""
    top = min(max_width, _MAX_EXPONENT / alpha)
    return np.linspace(top / 64.0, top, 64)


def needed_test_samples(
    alpha: float, threshold: float, beta: float, max_width: float, concentration: str = "bernstein"
) -> int | None:
    """Smallest held-out size ``n`` (per distribution) at which some function with range width at
    most ``max_width`` could give a lower bound above ``threshold`` (:func:`best_case_lower`).

    Parameters
    ----------
    alpha : float
        Rényi order, > 1.
    threshold : float
        What the bound must exceed (nats).
    beta : float
        Failure probability of the bound.
    max_width : float
        Widest range ``hi - lo`` of the function class.
    concentration : {"bernstein", "chernoff"}

    Returns
    -------
    int or None
        The size (same for both samples, found by bisection on the best-case formula), or None
        when no size can (``threshold >= alpha * max_width``, the largest ``R^h`` such
        functions can show).
    """
    if threshold >= alpha * min(max_width, _MAX_EXPONENT / alpha):
        return None
    widths = _width_grid(max_width, alpha)

    def ok(n: int) -> bool:
        return bool(np.max(best_case_lower(alpha, widths, n, n, beta, concentration)) > threshold)

    return smallest_int(ok, 2, 4, limit=10**15)


def renyi_bound_from_values(
    h_p,
    h_q,
    alpha: float,
    lo: float,
    hi: float,
    *,
    beta: float,
    direction: str = "P||Q",
    concentration: str = "bernstein",
    threshold: float = 0.0,
    max_width: float | None = None,
    n_train: int = 0,
    function_class: str = "given",
) -> RenyiBound:
    """Lower confidence bound on ``R_alpha(P||Q)`` from a fixed function's held-out values.

    With ``U = e^{(alpha-1)(h-hi)}`` on the P-sample and ``V = e^{alpha(h-hi)}`` on the Q-sample,
    ``R_alpha(P||Q) >= alpha/(alpha-1) ln E[U] - ln E[V]`` (the variational bound, shifted by
    ``-hi``, which leaves it unchanged); ``E[U]`` is bounded below and ``E[V]`` above, each at
    ``beta / 2``.

    Parameters
    ----------
    h_p : array, shape (n_p,)
        ``h(X_i)`` for held-out ``X_i ~ P``; ``h`` must not depend on these samples.
    h_q : array, shape (n_q,)
        ``h(Y_j)`` for held-out ``Y_j ~ Q``.
    alpha : float
        Rényi order, ``> 1``.
    lo, hi : float
        A-priori range of ``h`` (``lo <= h(x) <= hi`` for **every** x, not only the samples);
        values outside are clipped into it, i.e. the bound is for ``clip(h, lo, hi)``.
    beta : float
        Failure probability of the bound, in (0, 1).
    direction : str, default "P||Q"
    concentration : {"bernstein", "chernoff"}, default "bernstein"
        Empirical-Bernstein bounds on the two means (Maurer & Pontil 2009, Thm 4), or the
        multiplicative Chernoff bounds of paper 002 Thm 4.3 with the constants derived in
        ``docs/renyi.md`` §3.
    threshold : float, default 0.0
        What the bound must exceed to matter (what a claim allows); decides only whether the
        sample sizes make the bound vacuous.
    max_width : float, optional
        Widest range of the function class ``h`` was chosen from (default ``hi - lo``). The
        bound is vacuous (``lower = -inf``) when no function of that class could give a bound
        above ``threshold`` with these sample sizes, whatever the data.
    n_train : int, default 0
        Recorded in the result.
    function_class : str, default "given"
        Recorded in the result.

    Returns
    -------
    RenyiBound
        ``lower <= R_alpha(P||Q)`` with probability ``>= 1 - beta``.

    Raises
    ------
    ValueError
        On fewer than 2 values per sample, non-finite values, ``hi <= lo``,
        ``alpha (hi - lo) > 300`` (beyond float64), ``max_width < hi - lo``, invalid alpha,
        beta or concentration.

    References
    ----------
    Paper 002 (RényiTester), Thm 4.3 and Cor. 4.5; paper 000 Thm 4.3; Birrell et al. (2021),
    Thm 3.1; Maurer & Pontil (2009), Thm 4. Derivation: ``docs/renyi.md``.
    """
    alpha = check_alpha(alpha)
    beta = check_probability(beta)
    if concentration not in _CONCENTRATIONS:
        raise ValueError(f"concentration must be one of {_CONCENTRATIONS}, got {concentration!r}")
    lo, hi = float(lo), float(hi)
    if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
        raise ValueError(f"need finite lo < hi, got lo={lo!r}, hi={hi!r}")
    width = hi - lo
    if alpha * width > _MAX_EXPONENT:
        raise ValueError(f"alpha * (hi - lo) = {alpha * width:.4g} exceeds {_MAX_EXPONENT:g} (beyond float64)")
    class_width = width if max_width is None else float(max_width)
    if not (class_width >= width * (1.0 - 1e-12)):
        raise ValueError(f"max_width must be >= hi - lo = {width!r}, got {max_width!r}")
    threshold = float(threshold)
    if not math.isfinite(threshold):
        raise ValueError(f"threshold must be finite, got {threshold!r}")
    hp = np.asarray(h_p, dtype=float).ravel()
    hq = np.asarray(h_q, dtype=float).ravel()
    for name, arr in (("h_p", hp), ("h_q", hq)):
        if arr.size < 2:
            raise ValueError(f"{name} needs at least 2 values, got {arr.size}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} contains NaN or infinite values")

    u = np.exp((alpha - 1.0) * (np.clip(hp, lo, hi) - hi))  # in [u_min, 1]
    v = np.exp(alpha * (np.clip(hq, lo, hi) - hi))  # in [v_min, 1]
    u_min, v_min = math.exp(-(alpha - 1.0) * width), math.exp(-alpha * width)
    m_u, m_v = float(u.mean()), float(v.mean())
    n_p, n_q = hp.size, hq.size
    u_lo, v_hi = _mean_bounds(
        m_u, float(u.var(ddof=1)), n_p, m_v, float(v.var(ddof=1)), n_q, u_min, v_min, alpha, width, beta / 2, concentration
    )
    u_lo, v_hi = float(u_lo), float(v_hi)
    best = np.max(best_case_lower(alpha, _width_grid(class_width, alpha), n_p, n_q, beta, concentration))
    vacuous = not bool(best > threshold)
    needed = needed_test_samples(alpha, threshold, beta, class_width, concentration) if vacuous else None
    return RenyiBound(
        divergence="renyi",
        direction=direction,
        estimate=float(_bound_value(m_u, m_v, alpha)),
        lower=-math.inf if vacuous else float(_bound_value(u_lo, v_hi, alpha)),
        beta=beta,
        alpha=alpha,
        width=width,
        lo=lo,
        hi=hi,
        mean_p=m_u,
        mean_q=m_v,
        mean_p_lower=u_lo,
        mean_q_upper=v_hi,
        n_test_p=int(n_p),
        n_test_q=int(n_q),
        n_train=int(n_train),
        concentration=concentration,
        function_class=function_class,
        vacuous=bool(vacuous),
        needed_samples=needed,
    )


# ======================================================================  window / order choice
class _SortedExp:
    """Means and variances of ``exp(k (clip(g, lo, hi) - hi))`` for many windows at once.

    Prefix sums over the sorted values make each window O(log n) (no loop over samples).
    Windows whose exponents leave float64 get NaN.
    """

    def __init__(self, s_sorted: np.ndarray, k: float):
        self.s, self.n, self.k = s_sorted, s_sorted.size, k
        self.top = float(s_sorted[-1])
        e1 = np.exp(k * (s_sorted - self.top))  # in (0, 1]
        self.c1 = np.concatenate([[0.0], np.cumsum(e1)])
        self.c2 = np.concatenate([[0.0], np.cumsum(e1 * e1)])

    def moments(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k, s, n = self.k, self.s, self.n
        i_lo = np.searchsorted(s, lo, side="right")  # values <= lo are clipped to lo
        i_hi = np.maximum(np.searchsorted(s, hi, side="left"), i_lo)  # values >= hi clipped to hi
        bad = k * np.maximum(self.top - lo, hi - lo) > _MAX_EXPONENT
        with np.errstate(over="ignore", invalid="ignore"):
            scale = np.exp(np.where(bad, 0.0, k * (self.top - hi)))  # e^{k(s-top)} -> e^{k(s-hi)}
            bottom = np.exp(-k * (hi - lo))
            s1 = i_lo * bottom + (self.c1[i_hi] - self.c1[i_lo]) * scale + (n - i_hi)
            s2 = i_lo * bottom * bottom + (self.c2[i_hi] - self.c2[i_lo]) * scale * scale + (n - i_hi)
            mean = s1 / n
            var = np.maximum(s2 / n - mean * mean, 0.0) * n / max(n - 1, 1)
        return np.where(bad, np.nan, mean), np.where(bad, np.nan, var)


def _candidate_windows(g_pooled: np.ndarray, limit: float) -> tuple[np.ndarray, np.ndarray]:
    """Windows ``[lo, hi]`` with ends at quantiles of the fitted values and at the class limits."""
    qs = np.array([0.0, 0.001, 0.003, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5,
                   0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.997, 0.999, 1.0])
    pts = np.unique(np.concatenate([np.quantile(g_pooled, qs), [-limit, limit]]))
    lo, hi = np.meshgrid(pts, pts, indexing="ij")
    keep = hi > lo + 1e-6
    return lo[keep], hi[keep]


def _choose(g_in, g_out, alphas, thresholds, n_in, n_out, beta, concentration, limit, feasible):
    """Choose ``(alpha, lo, hi)`` maximising the expected held-out ``lower - threshold(alpha)``.

    ``g_in`` are the training values of the fitted function on the numerator distribution (P for
    P||Q), ``g_out`` on the denominator; the expected bound is the bound formula evaluated with
    the training means and variances at the held-out sizes. Only training samples are used, so
    the held-out bound stays valid whatever is chosen. Orders not ``feasible`` (vacuous at these
    sample sizes) are skipped unless all are.

    Returns
    -------
    (value, index of alpha, lo, hi)
    """
    s_in, s_out = np.sort(g_in), np.sort(g_out)
    lo, hi = _candidate_windows(np.concatenate([s_in, s_out]), limit)
    width = hi - lo
    idx = [i for i, f in enumerate(feasible) if f] or list(range(len(alphas)))
    best = None
    for i in idx:
        a = alphas[i]
        mu, vu = _SortedExp(s_in, a - 1.0).moments(lo, hi)
        mv, vv = _SortedExp(s_out, a).moments(lo, hi)
        u_min, v_min = np.exp(-(a - 1.0) * width), np.exp(-a * width)
        with np.errstate(invalid="ignore", divide="ignore"):
            u_lo, v_hi = _mean_bounds(mu, vu, n_in, mv, vv, n_out, u_min, v_min, a, width, beta / 2, concentration)
            val = _bound_value(u_lo, v_hi, a) - thresholds[i]
        val = np.where(np.isfinite(val), val, -np.inf)
        j = int(np.argmax(val))
        if best is None or val[j] > best[0]:
            best = (float(val[j]), i, float(lo[j]), float(hi[j]))
    return best


# ==============================================================================  estimator
class VariationalRenyi:
    """Rényi divergence lower bounds from a fitted bounded function (paper 000 Alg. 2, paper 002 Alg. 1).

    Parameters
    ----------
    function_class : {"mlp", "chebyshev"}, default "mlp"
        ``"mlp"``: ``g = C_train tanh(MLP(features) / C_train)``, trained with Adam on
        mini-batches; ``"chebyshev"``: ``g = C_train tanh(sum_{k<=degree} c_k T_k(t) / C_train)``
        with ``t = (2/pi) arctan(z)`` of the standardised output (1-D outputs only), fitted by
        full-batch Adam (learning rate 0.05, ``min(max_steps, 500)`` steps).
    hidden_sizes : tuple of int, default (32, 32)
        MLP hidden layers (SiLU).
    degree : int, default 16
        Chebyshev degree.
    train_bound : float, default 4.0
        ``C_train``: the fitted function takes values in ``(-C_train, C_train)``; test windows are
        chosen inside it.
    train_alpha : float or None, default None
        Order of the training objective; None uses the (smallest) order under test.
    epochs : int, default 30
        Passes over the training samples (at least 200 steps, at most ``max_steps``).
    batch_size : int, default 2048
        Samples of each distribution per step.
    learning_rate : float, default 3e-3
        Adam learning rate (cosine-decayed to 0).
    max_steps : int, default 1500
        Cap on optimiser steps, so that large samples cost a bounded fitting time
        (measured, one CPU thread: about 1.2 s per 50k-sample test, 6 s at 500k).
    train_fraction : float, default 0.5
        Fraction of each sample used to fit and choose; the rest bounds.
    concentration : {"bernstein", "chernoff"}, default "bernstein"
        See :func:`renyi_bound_from_values`.
    device : str, default "cpu"
    num_threads : int or None, default 1
        Torch CPU threads while fitting (restored afterwards).
    """

    def __init__(
        self,
        function_class: str = "mlp",
        hidden_sizes: tuple[int, ...] = (32, 32),
        degree: int = 16,
        train_bound: float = 4.0,
        train_alpha: float | None = None,
        epochs: int = 30,
        batch_size: int = 2048,
        learning_rate: float = 3e-3,
        max_steps: int = 1500,
        train_fraction: float = 0.5,
        concentration: str = "bernstein",
        device: str = "cpu",
        num_threads: int | None = 1,
    ):
        if function_class not in _FUNCTION_CLASSES:
            raise ValueError(f"function_class must be one of {_FUNCTION_CLASSES}, got {function_class!r}")
        if concentration not in _CONCENTRATIONS:
            raise ValueError(f"concentration must be one of {_CONCENTRATIONS}, got {concentration!r}")
        train_bound = check_positive(train_bound, "train_bound")
        degree = check_int(degree, "degree")
        if train_alpha is not None:
            train_alpha = check_alpha(train_alpha, "train_alpha")
        self.function_class = function_class
        self.hidden_sizes = tuple(int(h) for h in hidden_sizes)
        self.degree = degree
        self.train_bound = train_bound
        self.train_alpha = train_alpha
        self.concentration = concentration
        vars(self).update(check_training(
            epochs=epochs, batch_size=batch_size, max_steps=max_steps, learning_rate=learning_rate,
            train_fraction=train_fraction, device=device, num_threads=num_threads,
        ))

    def config(self) -> dict:
        """Hyper-parameters (for reports)."""
        return {
            "function_class": self.function_class,
            "hidden_sizes": list(self.hidden_sizes),
            "degree": self.degree,
            "train_bound": self.train_bound,
            "train_alpha": self.train_alpha,
            "epochs": self.epochs,
            "batch_size": self.batch_size,
            "learning_rate": self.learning_rate,
            "max_steps": self.max_steps,
            "train_fraction": self.train_fraction,
            "concentration": self.concentration,
            "device": str(self.device),
            "num_threads": self.num_threads,
        }

    # ------------------------------------------------------------------ features
    def _features(self, x: np.ndarray, center: np.ndarray, scale: np.ndarray) -> np.ndarray:
        z = (x - center) / scale
        if self.function_class == "chebyshev":
            t = (2.0 / np.pi) * np.arctan(z[:, 0])
            return np.polynomial.chebyshev.chebvander(t, self.degree)[:, 1:].astype(np.float32)
        return zoom_features(z)

    # ------------------------------------------------------------------ fit
    def fit_function(
        self, p_train: np.ndarray, q_train: np.ndarray, alpha: float, seed: int, bound: float | None = None
    ) -> Callable[[np.ndarray], np.ndarray]:
        """Fit ``g`` (values in ``(-train_bound, train_bound)``) by maximising the empirical
        ``R^g_alpha(P||Q) + R^{-g}_alpha(Q||P)`` on the training samples. The MLP function
        class trains on at most ``max_steps * batch_size`` rows of each sample (a random subset
        seeded by ``seed``: what its mini-batches can touch), so memory stays bounded; ``g``
        scores in chunks of :data:`~dpaudit.estimators._common.SCORE_CHUNK` rows.

        Parameters
        ----------
        p_train, q_train : ndarray, shape (n, output_dim)
        alpha : float
            Order of the objective.
        seed : int
        bound : float, optional
            ``C_train`` (default ``train_bound``).

        Returns
        -------
        callable
            ``g(samples of shape (m, output_dim)) -> ndarray (m,)``.
        """
        import torch

        if self.function_class == "chebyshev" and p_train.shape[1] != 1:
            raise ValueError(f"the Chebyshev function class needs 1-D outputs, got output_dim {p_train.shape[1]}")
        if self.function_class != "chebyshev":
            # Mini-batch training touches at most max_steps * batch_size rows of each sample, so
            # larger training parts are cut to a seeded random subset of that many rows: the
            # features of 10M rows would not fit in memory, and the subset is what training
            # could see anyway.
            cap = self.max_steps * self.batch_size
            sub = np.random.default_rng([seed, 1])
            if len(p_train) > cap:
                p_train = p_train[np.sort(sub.choice(len(p_train), size=cap, replace=False))]
            if len(q_train) > cap:
                q_train = q_train[np.sort(sub.choice(len(q_train), size=cap, replace=False))]
        center, scale = robust_standardiser(np.vstack([p_train, q_train]))
        fp = torch.from_numpy(self._features(p_train, center, scale))
        fq = torch.from_numpy(self._features(q_train, center, scale))
        device = torch.device(self.device)
        fp, fq = fp.to(device), fq.to(device)
        bound = self.train_bound if bound is None else float(bound)
        a = float(alpha)
        n_p, n_q = len(fp), len(fq)

        def loss_of(model, fp_batch, fq_batch):
            rp, rq = model(fp_batch).squeeze(1), model(fq_batch).squeeze(1)
            gp, gq = bound * torch.tanh(rp / bound), bound * torch.tanh(rq / bound)
            lmp, lmq = math.log(len(gp)), math.log(len(gq))
            fwd = a / (a - 1) * (torch.logsumexp((a - 1) * gp, 0) - lmp) - (torch.logsumexp(a * gq, 0) - lmq)
            rev = a / (a - 1) * (torch.logsumexp(-(a - 1) * gq, 0) - lmq) - (torch.logsumexp(-a * gp, 0) - lmp)
            # R^g is unchanged by adding a constant to g; keep the raw output centred so the
            # tanh does not saturate on one side (the penalty does not move the optimum of
            # the unsquashed objective).
            centre = 0.5 * (rp.mean() + rq.mean())
            return -(fwd + rev) + 0.1 * centre * centre

        if self.function_class == "chebyshev":

            def build():
                model = torch.nn.Linear(fp.shape[1], 1)
                torch.nn.init.zeros_(model.weight)
                torch.nn.init.zeros_(model.bias)
                return model

            # Few coefficients: full-batch Adam on the whole training objective (L-BFGS's
            # first long steps saturate the tanh and stall).
            model = train(build, loss_of, lambda gen: itertools.repeat((fp, fq)),
                          seed=seed, steps=min(self.max_steps, 500), learning_rate=0.05, device=device)
        else:
            n = max(n_p, n_q)
            steps_per_epoch = max(1, math.ceil(n / self.batch_size))
            bs = min(self.batch_size, n_p, n_q)

            def batches(gen):  # independent mini-batches of each sample, drawn with replacement
                while True:
                    ip = torch.randint(n_p, (bs,), generator=gen).to(device)
                    iq = torch.randint(n_q, (bs,), generator=gen).to(device)
                    yield fp[ip], fq[iq]

            # at least 200 steps, so small samples are not under-fitted
            model = train(lambda: mlp(fp.shape[1], self.hidden_sizes, torch.nn.SiLU), loss_of, batches, seed=seed,
                          steps=min(self.max_steps, max(200, self.epochs * steps_per_epoch)),
                          learning_rate=self.learning_rate, device=device)

        def g(samples: np.ndarray) -> np.ndarray:
            if len(samples) == 0:
                return np.zeros(0)
            return np.concatenate([  # in chunks: the features are 5 times wider than the outputs
                predict(lambda f: bound * torch.tanh(model(f).squeeze(1) / bound),
                        self._features(samples[i:i + SCORE_CHUNK], center, scale), device)
                for i in range(0, len(samples), SCORE_CHUNK)
            ])

        return g

    # ------------------------------------------------------------------ split
    def _n_train(self, n: int) -> int:
        """Training rows out of ``n`` (at least 4 on each side of the split)."""
        return min(n - 4, max(4, int(round(self.train_fraction * n))))

    def samples_for_test_size(self, n_test: int) -> int:
        """Smallest sample size per dataset whose held-out part has at least ``n_test`` rows."""
        if n_test <= 4:  # every accepted sample (>= 8 rows) holds out at least 4
            return 8
        n = max(8, int(math.floor(n_test / (1.0 - self.train_fraction))) - 10)
        while n - self._n_train(n) < n_test:
            n += 1
        return n

    # ------------------------------------------------------------------ estimate
    def estimate(
        self,
        p_samples,
        q_samples,
        *,
        alphas: float | Sequence[float],
        beta: float,
        thresholds: Sequence[float] | None = None,
        rng=None,
    ) -> RenyiEvidence:
        """Lower confidence bounds on ``R_alpha(P||Q)`` and ``R_alpha(Q||P)``.

        Parameters
        ----------
        p_samples : array, shape (n_p, output_dim)
            Outputs on the first dataset (P).
        q_samples : array, shape (n_q, output_dim)
            Outputs on the second dataset (Q).
        alphas : float or sequence of float
            Candidate orders (each > 1). With several, each direction tests the **one** order
            chosen on the training samples (largest expected ``lower - threshold``), so no
            confidence is spent on the choice.
        beta : float
            Failure probability of **each** direction's bound, in (0, 1).
        thresholds : sequence of float, optional
            What the claim allows at each order (same length as ``alphas``); used to choose the
            order and to decide whether the sample sizes make a bound vacuous (no function of
            the class could exceed it, whatever the data). Default zeros.
        rng : Generator or int, optional
            Seeds the split and the fit.

        Returns
        -------
        RenyiEvidence
            One forward and one reverse :class:`RenyiBound`, each valid with probability
            ``>= 1 - beta``.

        Raises
        ------
        ValueError
            On samples with fewer than 8 rows, NaN/inf values, mismatched dimensions, invalid
            alphas, thresholds or beta, or multi-dimensional outputs with the Chebyshev class.
        """
        t0 = time.perf_counter()
        p, q = check_sample_pair(p_samples, q_samples, min_samples=8)
        alpha_list = [check_alpha(alphas)] if np.ndim(alphas) == 0 else [check_alpha(a) for a in alphas]
        if not alpha_list:
            raise ValueError("alphas must not be empty")
        if thresholds is None:
            thr = [0.0] * len(alpha_list)
        else:
            thr = [float(t) for t in thresholds]
            if len(thr) != len(alpha_list) or not all(math.isfinite(t) for t in thr):
                raise ValueError(f"thresholds must be finite, one per alpha; got {thresholds!r}")
        beta = check_probability(beta)
        if self.function_class == "chebyshev" and p.shape[1] != 1:
            raise ValueError(f"the Chebyshev function class needs 1-D outputs, got output_dim {p.shape[1]}")
        rng = np.random.default_rng(rng)

        p = p[rng.permutation(len(p))]
        q = q[rng.permutation(len(q))]
        n_tr_p, n_tr_q = self._n_train(len(p)), self._n_train(len(q))
        p_tr, p_te = p[:n_tr_p], p[n_tr_p:]
        q_tr, q_te = q[:n_tr_q], q[n_tr_q:]
        train_alpha = self.train_alpha if self.train_alpha is not None else min(alpha_list)
        # The class must be able to show the thresholds: R^h <= alpha W with W <= 2 C_train.
        limit = max(self.train_bound, min(t / a for a, t in zip(alpha_list, thr)))
        max_width = 2.0 * limit

        with torch_threads(self.num_threads):
            t_fit = time.perf_counter()
            g = self.fit_function(p_tr, q_tr, train_alpha, seed=int(rng.integers(2**31 - 1)), bound=limit)
            train_seconds = time.perf_counter() - t_fit
            gp_tr, gq_tr = g(p_tr), g(q_tr)
            gp_te, gq_te = g(p_te), g(q_te)

        n_train = n_tr_p + n_tr_q
        out = []
        for direction, (in_tr, out_tr, in_te, out_te) in (
            ("P||Q", (gp_tr, gq_tr, gp_te, gq_te)),
            ("Q||P", (-gq_tr, -gp_tr, -gq_te, -gp_te)),
        ):
            n_in, n_out = len(in_te), len(out_te)
            feasible = [
                bool(np.max(best_case_lower(a, _width_grid(max_width, a), n_in, n_out, beta, self.concentration)) > t)
                for a, t in zip(alpha_list, thr)
            ]
            if not any(feasible):  # vacuous whatever is chosen: report the order needing fewest samples
                need = [needed_test_samples(a, t, beta, max_width, self.concentration) for a, t in zip(alpha_list, thr)]
                cost = [math.inf if k is None else k for k in need]
                feasible = [c == min(cost) for c in cost]
            _, i, lo, hi = _choose(in_tr, out_tr, alpha_list, thr, n_in, n_out, beta, self.concentration, limit, feasible)
            out.append(
                renyi_bound_from_values(
                    in_te, out_te, alpha_list[i], lo, hi, beta=beta, direction=direction,
                    concentration=self.concentration, n_train=n_train, function_class=self.function_class,
                    threshold=thr[i], max_width=max_width,
                )
            )
        return RenyiEvidence(out[0], out[1], train_seconds, time.perf_counter() - t0)


def renyi_lower_bound(p_samples, q_samples, alpha: float, *, beta: float = 0.05, rng=None, **estimator_kwargs) -> RenyiBound:
    """Lower confidence bound on ``R_alpha(P || Q)`` from two samples (one direction).

    Convenience wrapper around :class:`VariationalRenyi` for notebooks.

    Parameters
    ----------
    p_samples, q_samples : array, shape (n, output_dim)
    alpha : float
        Rényi order, ``> 1``.
    beta : float, default 0.05
        Failure probability of the returned bound.
    rng : Generator or int, optional
    **estimator_kwargs
        Passed to :class:`VariationalRenyi`.

    Returns
    -------
    RenyiBound
        ``lower <= R_alpha(P||Q)`` with probability ``>= 1 - beta``.

    References
    ----------
    Paper 000 Alg. 2 and Thm 4.3; paper 002 Alg. 1, Thm 4.3, Cor. 4.5.
    """
    ev = VariationalRenyi(**estimator_kwargs).estimate(p_samples, q_samples, alphas=alpha, beta=beta, rng=rng)
    return ev.forward
