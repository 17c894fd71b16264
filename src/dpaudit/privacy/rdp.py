"""Rényi DP to (epsilon, delta)-DP, written once.

An ``(alpha, rho)``-RDP mechanism (Rényi divergence ``D_alpha <= rho`` nats) has privacy profile

    delta(eps) <= c1(alpha - 1) * exp((alpha - 1)(rho - eps)),
    c1(lam) = sup_{x >= 0} (1 - e^{-x}) e^{-lam x} = (1/(1+lam)) (lam/(1+lam))^lam

(Canonne, Kamath & Steinke 2020, Prop. 12; the u = 1 case of paper 004's moment bound, App. E.2).
In terms of the privacy loss random variable's cumulant generating function ``K(lam) = lam
D_{lam+1}`` the bound reads ``delta(eps) <= c1(lam) exp(K(lam) - lam eps)``: the claims
(:class:`dpaudit.privacy.claims.RenyiDP`) and the accountants' RDP bounds
(:mod:`dpaudit.accounting.prv`) both use :func:`log_c1`.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["log_c1", "rdp_delta"]


def log_c1(lam: float) -> float:
    """``ln c1(lam) = -ln(1+lam) + lam (ln lam - ln(1+lam))`` for a tilt ``lam = alpha - 1 >= 0``
    (0 at ``lam = 0``): the log of the RDP -> DP conversion factor (module docstring)."""
    if lam <= 0:
        return 0.0
    return -math.log1p(lam) + lam * (math.log(lam) - math.log1p(lam))


def rdp_delta(alpha: float, rho: float, epsilon):
    """Upper bound on the privacy profile of an ``(alpha, rho)``-RDP mechanism.

    ``min(1, exp((alpha - 1)(rho - eps) + ln c1(alpha - 1)))`` for every real ``eps``
    (Canonne, Kamath & Steinke 2020, Prop. 12).

    Parameters
    ----------
    alpha : float
        Rényi order ``> 1`` (not checked here).
    rho : float
        Rényi divergence bound in nats.
    epsilon : float or array
        Epsilon(s) in nats, any shape.

    Returns
    -------
    ndarray
        ``delta(eps)`` in ``(0, 1]``, same shape as ``epsilon``.
    """
    eps = np.asarray(epsilon, dtype=float)
    lam = alpha - 1.0
    return np.exp(np.minimum(lam * (rho - eps) + log_c1(lam), 0.0))
