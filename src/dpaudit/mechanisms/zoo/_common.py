"""Parameter validation and small exact-distribution helpers shared by the zoo modules.

Every check raises :class:`ValueError` naming the mechanism, the parameter and the value given.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.polynomial.legendre import leggauss

__all__ = [
    "check_epsilon",
    "check_int",
    "check_nonneg_delta",
    "check_positive_delta",
    "check_real",
    "hockey_stick_discrete",
    "laplace_cdf",
    "piecewise_quadrature",
]


def check_real(value, what: str, name: str) -> float:
    """``value`` as a finite float; bools and strings are refused."""
    if isinstance(value, (bool, np.bool_, str, bytes)):
        raise ValueError(f"{name}: {what} must be a number, got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: {what} must be a number, got {value!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"{name}: {what} must be finite, got {value!r}")
    return v


def check_epsilon(epsilon, name: str) -> float:
    """Epsilon (nats) as a float; must be finite and > 0."""
    if isinstance(epsilon, (bool, np.bool_, str, bytes)):
        raise ValueError(f"{name}: epsilon must be a number, got {epsilon!r}")
    try:
        value = float(epsilon)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: epsilon must be a number, got {epsilon!r}") from None
    if not (math.isfinite(value) and value > 0.0):
        raise ValueError(f"{name}: epsilon must be finite and > 0, got {epsilon!r}")
    return value


def _delta(delta, name: str) -> float:
    if isinstance(delta, (bool, np.bool_, str, bytes)):
        raise ValueError(f"{name}: delta must be a number, got {delta!r}")
    try:
        return float(delta)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: delta must be a number, got {delta!r}") from None


def check_nonneg_delta(delta, name: str) -> float:
    """Delta for a pure-DP mechanism (accepted and ignored): ``0 <= delta < 1``."""
    value = _delta(delta, name)
    if not (0.0 <= value < 1.0):
        raise ValueError(f"{name}: delta must satisfy 0 <= delta < 1, got {delta!r}")
    return value


def check_positive_delta(delta, name: str) -> float:
    """Delta for an approximate-DP (Gaussian) mechanism: ``0 < delta < 1``."""
    value = _delta(delta, name)
    if not (0.0 < value < 1.0):
        raise ValueError(f"{name}: delta must satisfy 0 < delta < 1, got {delta!r}")
    return value


def check_int(value, what: str, name: str, minimum: int = 1) -> int:
    """``value`` as an int ``>= minimum`` (bools and non-integral numbers refused)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name}: {what} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def column_sums(dataset, k: int, name: str, role: str) -> np.ndarray:
    """Counting queries of the SVT and noisy-max entries: column sums of records clipped to [0, 1].

    Parameters
    ----------
    dataset : array, shape (n_records, k) (or (n_records,) when ``k == 1``)
    k : int
        Number of queries (record dimension).
    name : str
        Mechanism name, for error messages.
    role : str
        What the mechanism does with the sums, for error messages (e.g. "answers 4 queries").

    Returns
    -------
    ndarray of float, shape (k,)
        Zeros for an empty dataset.

    Raises
    ------
    ValueError
        If the records do not have dimension ``k`` or contain NaN/inf.
    """
    arr = np.asarray(dataset, dtype=float)
    if arr.size == 0:
        return np.zeros(k)
    if arr.ndim == 1 and k == 1:
        arr = arr.reshape(-1, 1)
    if arr.ndim != 2 or arr.shape[1] != k:
        raise ValueError(
            f"{name} {role} and needs records of dimension {k}, a dataset of shape (n, {k}); got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: dataset contains NaN or infinite values")
    return np.clip(arr, 0.0, 1.0).sum(axis=0)


def hockey_stick_discrete(p: dict, q: dict, epsilon: float) -> float:
    """``H_{e^eps}(P || Q) = sum_o max(0, P(o) - e^eps Q(o))`` for two discrete laws.

    Parameters
    ----------
    p, q : dict
        ``{outcome: probability}``; outcomes missing from one dict have probability 0 there.
    epsilon : float
        In nats.

    Returns
    -------
    float
        The divergence, in [0, 1].
    """
    e = math.exp(epsilon)
    return float(sum(max(0.0, p.get(o, 0.0) - e * q.get(o, 0.0)) for o in set(p) | set(q)))


_GL_X, _GL_W = leggauss(32)


def laplace_cdf(x: np.ndarray, scale: float) -> np.ndarray:
    """``P(nu < x)`` for ``nu ~ Laplace(0, scale)``, elementwise.

    Parameters
    ----------
    x : array of float
        Points (same units as the scale).
    scale : float
        Laplace scale ``>= 0``; ``0`` means no noise (``nu = 0``), giving ``1[x > 0]``.

    Returns
    -------
    ndarray of float, shape of ``x``
        Values in [0, 1], computed without overflow for any finite ``x``.
    """
    x = np.asarray(x, dtype=float)
    if scale == 0.0:
        return (x > 0.0).astype(float)
    return np.where(x < 0.0, 0.5 * np.exp(np.minimum(x, 0.0) / scale), 1.0 - 0.5 * np.exp(-np.maximum(x, 0.0) / scale))


def piecewise_quadrature(breaks: np.ndarray, scales: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights to integrate over the real line functions built from Laplace densities
    and CDFs: ``int g(x) dx ~= sum(w * g(x))``.

    Pieces are cut at the ``breaks`` (where the integrand has kinks or jumps), are at most
    ``min(scales)`` wide between the first and last break, and grow geometrically in the tails
    up to 80 times ``max(scales)`` from the outer breaks (a Laplace density of that scale has
    mass ``e^-80`` beyond); each piece gets 32 Gauss-Legendre nodes. For integrands that are
    products of Laplace densities/CDFs with these scales and kinks only at ``breaks`` the
    absolute error is about 1e-12 (checked against ``scipy.integrate.quad`` in the tests).

    Parameters
    ----------
    breaks : array of float, shape (m,), m >= 1
        Kinks and jumps of the integrand.
    scales : list of float
        Laplace scales involved (zeros are ignored; at least one must be > 0).

    Returns
    -------
    x, w : ndarray of float, shape (n_nodes,)
        Nodes and weights.
    """
    positive = [s for s in scales if s > 0]
    s_min, s_max = min(positive), max(positive)
    b = np.unique(np.asarray(breaks, dtype=float))
    pts = [b]
    lo, hi = float(b[0]), float(b[-1])
    if hi > lo:
        pts.append(np.linspace(lo, hi, int(math.ceil((hi - lo) / s_min)) + 1))
    d = s_min / 2.0
    tails = []
    while d < 80.0 * s_max:
        tails += [lo - d, hi + d]
        d *= 2.0
    tails += [lo - 80.0 * s_max, hi + 80.0 * s_max]
    pts.append(np.asarray(tails))
    edges = np.unique(np.concatenate(pts))
    a, c = edges[:-1], edges[1:]
    x = 0.5 * (a + c)[:, None] + 0.5 * (c - a)[:, None] * _GL_X[None, :]
    w = 0.5 * (c - a)[:, None] * _GL_W[None, :]
    return x.ravel(), w.ravel()
