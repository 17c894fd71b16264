"""What the zoo modules share: the base class with validated parameters, reading records, and
small exact-distribution helpers.

Every check raises :class:`ValueError` naming the mechanism, the parameter and the value given
(the checks themselves are :mod:`dpaudit._validate`'s).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.polynomial.legendre import leggauss

from ..._validate import check_delta, check_epsilon, check_int, check_positive
from ..base import Mechanism

__all__ = [
    "ColumnSumQueries",
    "ZooMechanism",
    "column_sums",
    "hockey_stick_discrete",
    "laplace_cdf",
    "piecewise_quadrature",
    "records",
]


class ZooMechanism(Mechanism):
    """Base of the zoo mechanisms: a name and validated privacy parameters.

    Parameters
    ----------
    epsilon : float
        Claimed privacy parameter in nats, finite and ``> 0``.
    delta : float, default 0.0
        ``0 <= delta < 1`` (ignored by pure-DP mechanisms: accepted so that every zoo factory has
        the signature ``(epsilon, delta)``); ``0 < delta < 1`` when the class sets
        ``needs_delta = True`` (Gaussian noise).
    name : str, optional
        Name used in reports and error messages (default: the class attribute ``name``).

    Raises
    ------
    ValueError
        Naming the mechanism, if epsilon or delta is out of range.
    """

    name = "zoo"
    needs_delta = False

    def __init__(self, epsilon: float, delta: float = 0.0, *, name: str | None = None):
        if name is not None:
            self.name = str(name)
        self.epsilon = check_epsilon(epsilon, f"{self.name}: epsilon", positive=True)
        self.delta = check_delta(delta, f"{self.name}: delta", allow_zero=not self.needs_delta)

    def _positive(self, value, what: str) -> float:
        """``value`` as a finite float ``> 0``; the error names the mechanism and ``what``."""
        return check_positive(value, f"{self.name}: {what}")

    def _int(self, value, what: str, minimum: int = 1) -> int:
        """``value`` as an int ``>= minimum``; the error names the mechanism and ``what``."""
        return check_int(value, f"{self.name}: {what}", minimum)


class ColumnSumQueries(ZooMechanism):
    """Zoo mechanisms over ``k`` counting queries (SVT, report noisy max): query ``i`` is the sum
    of column ``i`` of the records clipped to [0, 1], so each query has sensitivity 1 and, under
    replace-one adjacency, queries may move in opposite directions. Subclasses set
    ``num_queries`` and describe their use of the sums in ``queries_role`` (for error messages).
    """

    sensitivity = 1.0
    num_queries = 1
    queries_role = "answers {k} queries (column sums)"

    def query_values(self, dataset: np.ndarray) -> np.ndarray:
        """The ``k`` query values on ``dataset``: column sums of the records clipped to [0, 1].

        Parameters
        ----------
        dataset : array, shape (n_records, k)

        Returns
        -------
        ndarray of float, shape (k,)

        Raises
        ------
        ValueError
            If the records do not have dimension ``k`` or contain NaN/inf.
        """
        k = self.num_queries
        return column_sums(dataset, k, self.name, self.queries_role.format(k=k))


def records(dataset, k: int, name: str, role: str) -> np.ndarray:
    """A dataset of ``k``-dimensional records as a float array, checked.

    Parameters
    ----------
    dataset : array, shape (n_records, k) (or (n_records,) when ``k == 1``)
    k : int
        Record dimension.
    name : str
        Mechanism name, for error messages.
    role : str
        What the mechanism does with the records, for error messages (e.g. "answers 4 queries").

    Returns
    -------
    ndarray of float, shape (n_records, k)
        Shape ``(0, k)`` for an empty dataset.

    Raises
    ------
    ValueError
        If the records do not have dimension ``k`` or contain NaN/inf.
    """
    arr = np.asarray(dataset, dtype=float)
    if arr.size == 0:
        return np.zeros((0, k))
    if arr.ndim == 1 and k == 1:
        arr = arr.reshape(-1, 1)
    if arr.ndim != 2 or arr.shape[1] != k:
        raise ValueError(
            f"{name} {role} and needs records of dimension {k}, a dataset of shape (n, {k}); got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: dataset contains NaN or infinite values")
    return arr


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
    return np.clip(records(dataset, k, name, role), 0.0, 1.0).sum(axis=0)


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
