"""Exact hockey-stick divergences of the reference mechanisms the tests use (not a test module).

``H_{e^eps}(P || Q) = int (p(x) - e^eps q(x))_+ dx = sup_S P(S) - e^eps Q(S)`` (paper 000, eq. (11)).
Closed forms are derived in the docstrings; every closed form is also checked against direct
numerical integration (``hockey_stick_numeric``) in the tests that use it.
"""

from __future__ import annotations

import numpy as np
from scipy import stats


def gaussian_hockey_stick(mu: float, eps) -> np.ndarray:
    """``H_{e^eps}(N(0, 1) || N(mu, 1))`` for ``mu > 0``, any real eps (same value for Q||P).

    The likelihood ratio ``p/q = exp(mu^2/2 - mu x)`` is decreasing, so the optimal set is
    ``{x < t}`` with ``mu^2/2 - mu t = eps``, i.e. ``t = mu/2 - eps/mu``, and
    ``H = Phi(t) - e^eps Phi(t - mu) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)``.
    With ``mu = 1/s`` this is Balle & Wang (2018, Thm 8) for ``N(0, s^2)`` vs ``N(1, s^2)``:
    ``Phi(1/(2s) - eps s) - e^eps Phi(-1/(2s) - eps s)``. By the symmetry ``x -> mu - x`` the
    reverse divergence is the same.
    """
    eps = np.asarray(eps, dtype=float)
    # e^eps Phi(z) evaluated in log space so large eps does not overflow.
    second = np.exp(eps + stats.norm.logcdf(-mu / 2.0 - eps / mu))
    return np.maximum(stats.norm.cdf(mu / 2.0 - eps / mu) - second, 0.0)


def gaussian_mechanism_hockey_stick(sigma: float, eps) -> np.ndarray:
    """``H_{e^eps}(N(0, sigma^2) || N(1, sigma^2))`` (Balle & Wang 2018, Thm 8): sensitivity 1."""
    return gaussian_hockey_stick(1.0 / sigma, eps)


def laplace_hockey_stick(b: float, eps) -> np.ndarray:
    """``H_{e^eps}(Lap(0, b) || Lap(1, b))`` for ``eps >= 0`` (same value for Q||P).

    Derivation: ``L(x) = p(x)/q(x) = exp((|x - 1| - |x|)/b)`` equals ``e^{1/b}`` for ``x <= 0``,
    ``e^{(1 - 2x)/b}`` on ``(0, 1)`` and ``e^{-1/b}`` for ``x >= 1``. For ``0 <= eps < 1/b`` the
    set ``{L > e^eps}`` is ``x < x* = (1 - eps b)/2``, with ``P(x < x*) = 1 - e^{-x*/b}/2`` and
    ``Q(x < x*) = e^{(x* - 1)/b}/2``. Writing ``c = (1/b - eps)/2 = x*/b``:
    ``e^eps Q = e^{eps + c - 1/b}/2 = e^{-c}/2``, so ``H = 1 - e^{-c} = 1 - exp((eps - 1/b)/2)``.
    For ``eps >= 1/b`` the set is empty and ``H = 0``. The map ``x -> 1 - x`` swaps P and Q, so
    the reverse divergence is the same.
    """
    eps = np.asarray(eps, dtype=float)
    return np.where(eps < 1.0 / b, -np.expm1((eps - 1.0 / b) / 2.0), 0.0)


def hockey_stick_numeric(logpdf_p, logpdf_q, eps, lo: float, hi: float, num: int = 400_001) -> np.ndarray:
    """``int_lo^hi (p(x) - e^eps q(x))_+ dx`` by the trapezoidal rule on a uniform grid.

    Used only to cross-check the closed forms; the caller chooses ``[lo, hi]`` wide enough that the
    mass outside is negligible.
    """
    x = np.linspace(lo, hi, num)
    p = np.exp(logpdf_p(x))
    q = np.exp(logpdf_q(x))
    eps = np.atleast_1d(np.asarray(eps, dtype=float))
    out = np.array([np.trapezoid(np.maximum(p - np.exp(e) * q, 0.0), x) for e in eps])
    return out
