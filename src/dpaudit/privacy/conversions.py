"""Claim-level conversions the testers need, each written once.

* total variation: :func:`tv_cap` (the largest ``TV(M(D), M(D'))`` a claim allows),
  :func:`tv_of_approx_dp` (that of ``(eps, delta)``-DP), and the inverses a TV lower bound needs:
  :func:`delta_from_tv`, :func:`epsilon_from_tv` and :func:`renyi_epsilon_from_tv`;
* Rényi divergence: :func:`pure_dp_renyi_bound` (the largest ``R_alpha`` an eps-DP mechanism can
  have), its inverse :func:`pure_dp_epsilon_from_renyi`, and :func:`renyi_threshold` (what a
  claim allows for ``R_alpha``).

All epsilons are in nats. Derivations: ``docs/mmd.md`` (TV) and ``docs/renyi.md`` §4 (Rényi).
This module belongs to the privacy layer: it imports only numpy/scipy and other privacy modules.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from scipy.optimize import brentq

from .claims import ApproxDP, Claim, PureDP, RenyiDP

__all__ = [
    "delta_from_tv",
    "epsilon_from_tv",
    "pure_dp_epsilon_from_renyi",
    "pure_dp_renyi_bound",
    "renyi_epsilon_from_tv",
    "renyi_threshold",
    "tv_cap",
    "tv_of_approx_dp",
]


# ==========================================================================  inversion helper
def _largest_below(f: Callable[[float], float], value: float, hi: float, *, cap: float = math.inf) -> float:
    """A point ``x >= 0`` with ``f(x) < value``, within a relative ~1e-15 of the largest such x.

    ``f`` must be non-decreasing with ``f(0) < value``. The bracket ``[lo, hi]`` starts at
    ``[0, hi]`` and doubles (``lo`` following ``hi``) until ``f(hi) >= value``; returns ``inf`` once ``hi`` exceeds ``cap``. The crossing is found by
    :func:`scipy.optimize.brentq`, whose answer may lie on either side of it; it is then moved
    down until ``f < value`` holds, so the returned point is always on the safe side: ``f`` is
    below ``value`` there and (``f`` being monotone) everywhere below it, i.e. every smaller
    parameter is rejected too.
    """
    lo = 0.0
    while not f(hi) >= value:
        lo, hi = hi, 2.0 * hi
        if hi > cap:
            return math.inf
    root = brentq(lambda x: f(x) - value, lo, hi, xtol=1e-15, rtol=4.0 * np.finfo(float).eps)
    step = 1e-15 + 4.0 * np.finfo(float).eps * abs(root)
    while root > lo and not f(root) < value:  # the safe end of the bracket
        root = max(lo, root - step)
        step *= 2.0
    return root


# ==========================================================================  total variation
def tv_of_approx_dp(epsilon, delta):
    """Largest total variation ``(e^eps - 1 + 2 delta)/(e^eps + 1)`` allowed by ``(eps, delta)``-DP.

    Kairouz, Oh, Viswanath (2015), Thm 2.1 (the tight privacy profile at eps' = 0, ``H_1 = TV``);
    ``docs/mmd.md`` §3. Not clipped to 1.

    Parameters
    ----------
    epsilon : float or array
        In nats, ``>= 0`` (finite).
    delta : float or array
        In ``[0, 1]``.

    Returns
    -------
    float or ndarray (broadcast shape)
    """
    e = np.exp(epsilon)
    return (e - 1.0 + 2.0 * delta) / (e + 1.0)


def _profile_tv_cap(delta_profile, epsilon: float) -> float:
    """``min over eps' >= 0 of (e^eps' - 1 + 2 delta(eps')) / (e^eps' + 1)`` on a fine grid.

    Each grid point alone is a valid bound (``docs/mmd.md`` §3), so a grid minimum is valid.
    """
    top = max(20.0, 4.0 * epsilon)
    grid = np.unique(np.concatenate([[0.0, epsilon], np.linspace(0.0, top, 2001), np.geomspace(1e-6, top, 1000)]))
    caps = tv_of_approx_dp(grid, np.asarray(delta_profile(grid), dtype=float))
    return float(min(1.0, caps.min()))


def tv_cap(claim: Claim) -> float:
    """Largest total variation ``TV(M(D), M(D'))`` the claim allows between neighbours.

    * ``PureDP(eps)``: ``tanh(eps/2) = (e^eps - 1)/(e^eps + 1)``;
    * ``ApproxDP(eps, delta)``: ``(e^eps - 1 + 2 delta)/(e^eps + 1)`` (Kairouz, Oh, Viswanath
      2015, Thm 2.1: the claim's privacy profile at eps' = 0, ``H_1 = TV``); both tight;
    * ``RenyiDP(alpha, eps)``: the smallest of Pinsker's ``sqrt(eps/2)`` and Bretagnolle–Huber's
      ``sqrt(1 - e^-eps)`` (since ``KL <= D_alpha <= eps``) and of
      ``(e^x - 1 + 2 delta(x))/(e^x + 1)`` over ``x >= 0`` for the claim's profile ``delta(x)``
      (Canonne, Kamath, Steinke 2020, Prop. 12).

    Returns
    -------
    float in [0, 1]

    Raises
    ------
    TypeError
        For an unknown claim type.
    """
    if isinstance(claim, PureDP):
        return math.tanh(claim.epsilon / 2.0)
    if isinstance(claim, ApproxDP):
        if claim.epsilon >= 700:  # e^eps overflows: the claim allows everything
            return 1.0
        e = math.exp(claim.epsilon)
        return min(1.0, (e - 1.0 + 2.0 * claim.delta) / (e + 1.0))
    if isinstance(claim, RenyiDP):
        eps = claim.epsilon
        pinsker = math.sqrt(eps / 2.0)
        bretagnolle_huber = math.sqrt(-math.expm1(-eps))
        return min(1.0, pinsker, bretagnolle_huber, _profile_tv_cap(claim.delta_profile, eps))
    raise TypeError(f"unknown claim type {type(claim).__name__}")


def delta_from_tv(tv: float, epsilon):
    """Lower bound on ``max(H_{e^eps}(P||Q), H_{e^eps}(Q||P))`` from ``TV(P, Q) >= tv``.

    If both directions had ``H_{e^eps} <= d`` then ``TV <= (e^eps - 1 + 2 d)/(e^eps + 1)``
    (``docs/mmd.md`` §3), so ``d >= (tv (e^eps + 1) - (e^eps - 1)) / 2``; clipped at 0, and 0 where
    ``e^eps`` overflows.

    Parameters
    ----------
    tv : float
        In ``[0, 1]``.
    epsilon : float or array
        In nats, ``>= 0``.

    Returns
    -------
    float or ndarray (shape of ``epsilon``)

    Raises
    ------
    ValueError
        If some epsilon is negative or NaN.
    """
    eps = np.asarray(epsilon, dtype=float)
    if np.any(~(eps >= 0)):
        raise ValueError(f"epsilon must be >= 0, got {epsilon!r}")
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(eps)
        out = np.maximum(0.0, 0.5 * (tv * (e + 1.0) - (e - 1.0)))
    out = np.where(np.isfinite(e), out, 0.0)
    return float(out) if out.ndim == 0 else out


def epsilon_from_tv(tv: float, delta: float) -> float:
    """Largest epsilon whose ``(epsilon, delta)``-DP a lower bound ``tv`` on the total variation rejects.

    ``(eps, delta)``-DP allows ``TV <= (e^eps - 1 + 2 delta)/(e^eps + 1)``; solving for the eps
    where this equals ``tv`` gives ``eps = ln((1 + tv - 2 delta) / (1 - tv))`` (nats). Returns 0.0
    when ``tv <= delta`` (nothing rejected) and ``inf`` when ``tv >= 1``.

    Raises
    ------
    ValueError
        If not ``0 <= delta < 1``.
    """
    if not (0.0 <= delta < 1.0):
        raise ValueError(f"delta must satisfy 0 <= delta < 1, got {delta!r}")
    if tv <= delta:
        return 0.0
    if tv >= 1.0:
        return math.inf
    return max(0.0, math.log((1.0 + tv - 2.0 * delta) / (1.0 - tv)))


def renyi_epsilon_from_tv(tv: float, alpha: float) -> float:
    """Largest Rényi epsilon at order alpha that a total variation ``tv`` rejects.

    ``sup {eps : tv_cap(RenyiDP(alpha, eps)) < tv}`` (``tv_cap`` is non-decreasing in eps), found
    by :func:`scipy.optimize.brentq` and returned on the safe side (``tv_cap`` of the returned eps
    is below ``tv``, so it and every smaller eps are rejected); 0.0 for ``tv <= 0``, ``inf`` for
    ``tv >= 1`` or beyond eps = 1e6.
    """
    if tv <= 0.0:
        return 0.0
    if tv >= 1.0:
        return math.inf
    return _largest_below(lambda e: tv_cap(RenyiDP(alpha, e)), tv, 1.0, cap=1e6)


# ==========================================================================  Rényi divergence
def _log_cosh(x):
    """``ln cosh x``, accurate for tiny and huge ``|x|``."""
    x = np.abs(np.asarray(x, dtype=float))
    small = np.log1p(2.0 * np.sinh(np.minimum(x, 20.0) / 2.0) ** 2)
    large = x - math.log(2.0) + np.log1p(np.exp(-2.0 * x))
    return np.where(x < 20.0, small, large)


def pure_dp_renyi_bound(epsilon, alpha):
    """Largest ``R_alpha(M(D) || M(D'))`` an epsilon-DP mechanism can have (tight).

    ``[ln cosh((alpha - 1/2) eps) - ln cosh(eps / 2)] / (alpha - 1)``, the Rényi divergence of
    randomized response ``(e^eps, 1)/(1 + e^eps)`` vs ``(1, e^eps)/(1 + e^eps)``. For eps-DP the
    likelihood ratio ``L = dP/dQ`` lies in ``[e^-eps, e^eps]`` with ``E_Q[L] = 1``; ``L^alpha`` is
    convex, so ``E_Q[L^alpha]`` is largest when ``L`` sits on the two end points (randomized
    response). It is at most ``min(eps, alpha eps^2 / 2)`` (Bun & Steinke 2016, Prop. 3.3) and
    equals ``alpha eps^2 / 2 + O(eps^4)`` for small eps.

    Parameters
    ----------
    epsilon : float or array
        Pure-DP parameter in nats, ``>= 0``.
    alpha : float or array
        Rényi order, ``> 1``.

    Returns
    -------
    float or ndarray
        The bound in nats (broadcast shape).

    Raises
    ------
    ValueError
        If epsilon < 0 or alpha <= 1 (or non-finite).

    References
    ----------
    Derivation: ``docs/renyi.md`` §4. Bun & Steinke (2016), "Concentrated differential privacy",
    Prop. 3.3 (eps-DP implies (eps^2/2)-zCDP); Mironov (2017), Prop. 3 (pure DP as alpha -> inf).
    """
    eps = np.asarray(epsilon, dtype=float)
    a = np.asarray(alpha, dtype=float)
    if np.any(~np.isfinite(eps)) or np.any(eps < 0):
        raise ValueError(f"epsilon must be finite and >= 0, got {epsilon!r}")
    if np.any(~np.isfinite(a)) or np.any(a <= 1):
        raise ValueError(f"alpha must be finite and > 1, got {alpha!r}")
    out = (_log_cosh((a - 0.5) * eps) - _log_cosh(0.5 * eps)) / (a - 1.0)
    out = np.maximum(out, 0.0)
    return float(out) if out.ndim == 0 else out


def pure_dp_epsilon_from_renyi(alpha: float, value: float) -> float:
    """Largest epsilon whose pure-DP claim a lower bound ``value`` on ``R_alpha`` rejects.

    Inverts :func:`pure_dp_renyi_bound` in epsilon (it increases from 0 to infinity) with
    :func:`scipy.optimize.brentq`: returns eps* with ``pure_dp_renyi_bound(eps*, alpha)`` just
    below ``value`` (the safe side, to a relative ~1e-15), so eps* and every eps below it are
    rejected; 0.0 for ``value <= 0`` (or NaN), ``inf`` for ``value = inf``.
    """
    if not (value > 0.0):
        return 0.0
    if math.isinf(value):
        return math.inf
    return _largest_below(lambda e: pure_dp_renyi_bound(e, alpha), value, max(1.0, value))


def renyi_threshold(claim: Claim, alpha: float) -> float:
    """What ``claim`` allows for ``R_alpha`` between neighbouring outputs (tau of paper 000 Alg. 2).

    ``RenyiDP(alpha_c, eps)``: ``eps`` for every ``alpha <= alpha_c`` (the claim's definition,
    and ``R_alpha`` is non-decreasing in alpha: van Erven & Harremoës 2014, Thm 3; paper 000
    Lemma 4.5). ``PureDP(eps)``: :func:`pure_dp_renyi_bound`.

    Raises
    ------
    ValueError
        For other claims or ``alpha > alpha_c``.
    """
    if isinstance(claim, RenyiDP):
        if float(alpha) > claim.alpha * (1.0 + 1e-12):
            raise ValueError(f"a {claim.describe()} claim bounds R_alpha only for alpha <= {claim.alpha:g}, got alpha={alpha!r}")
        return claim.epsilon
    if isinstance(claim, PureDP):
        return pure_dp_renyi_bound(claim.epsilon, alpha)
    raise ValueError(f"the Rényi tester cannot test {claim.describe()}")
