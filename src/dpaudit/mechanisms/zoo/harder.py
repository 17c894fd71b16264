"""Harder bugs (issue 15, item 4): mechanisms that are correct on the pairs a search tries first.

Each mechanism here is a textbook mechanism with one bug that shows only on some neighbouring
pairs: large datasets, a rare random event, records off a grid, records past a position. They
measure how far a dataset search has to look, not how sharp a tester is: at the witness pairs
the divergences are large (at eps = 1).

Noisy sums (:class:`LaplaceSum`): ``n`` scalar records in [0, 2] (a dataset of shape ``(n, 1)``,
sizes 0..10, add/remove adjacency), clipped to [0, 1] so that the sum ``S`` has sensitivity 1,
released as ``S + Laplace(1/eps)``; output shape ``(num_samples, 1)``. The domain is wider than
the clipping range so that clipping matters.

* ``laplace-sum``: the correct mechanism, eps-DP (Dwork & Roth 2014 Thm 3.6; clipping is a
  per-record map).
* ``laplace-sum-fast-path``: for ``n >= 8`` records a "fast path" reuses the noise scale of the
  *mean* query, sensitivity ``1/n``: ``S + Laplace(1/(n eps))``. Below 8 records it is the correct
  mechanism. On every pair whose larger dataset has 8 records or more the two Laplace scales
  differ, so the privacy loss grows linearly in the tails: no finite pure-DP guarantee.
* ``laplace-sum-rare-exact``: with probability ``p = 0.05`` per release (a fallback that skips
  the noise, e.g. after a failed noise draw) it returns ``S`` exactly. For neighbours with
  ``S0 != S1`` the point mass at ``S0`` has no counterpart, and the continuous parts obey the
  Laplace bound, so ``H_{e^eps}(D0 || D1) = p`` exactly, at every eps: ``(eps, delta)``-DP iff
  ``delta >= p``; no finite eps with ``delta < p``. Neighbours with ``S0 = S1`` (a record 0
  added) show nothing.
* ``laplace-sum-partial-clip``: clips only the first ``k = 5`` records (a loop over the first
  chunk that forgets the rest); records at positions ``>= 5`` enter the sum unclipped, up to 2.
  Adding a record changes the sum by ``Delta in [0, 2]`` (at a position ``>= 5``: the record
  itself; before it: its clipped value plus the excess ``r - clip(r)`` of the record pushed to
  position 5), so the true guarantee is exactly ``2 eps``-DP (Laplace mechanism with sensitivity
  2; tight at ``Delta = 2``). Datasets of at most 4 (+1) records, or with all records in [0, 1],
  show nothing.

A quantile (:class:`ExponentialQuantileCandidates`): scalar records in [0, 1], the exponential
mechanism for the median with the rank-distance utility of :class:`~.median.ExponentialQuantile`.

* ``dp-median-data-candidates``: the candidate outputs are the 21 grid points *and the records'
  own values* ("to be exact when the median is a record"). The output's support then depends on
  the data: a record value off the grid is a possible output only on the datasets that hold it,
  so no finite eps (and no delta below that output's probability) holds. Datasets whose records
  are grid points (e.g. only 0s and 1s, where extreme-first searches start) give exactly the law
  of the correct ``dp-median``. The correct counterpart is the zoo's ``dp-median``.

Exact divergences
-----------------
:func:`laplace_hockey_stick` integrates ``max(0, p - e^eps q)`` for two Laplace laws with the
Gauss-Legendre rule of :func:`~._common.piecewise_quadrature` (breaks at both centres and at the
crossing points, absolute error about 1e-12); the quantile's laws are discrete
(:meth:`ExponentialQuantileCandidates.probabilities`, :func:`~._common.hockey_stick_discrete`).
The numbers quoted in the catalogue are from these functions (see ``tests/test_zoo_harder.py``).

References
----------
Dwork & Roth (2014), "The Algorithmic Foundations of Differential Privacy", Thm 3.6 (Laplace
mechanism), Thm 3.10 (exponential mechanism, which needs a data-independent range). McSherry &
Talwar (2007), FOCS. Issue 15 of dpaudit, item 4 ("bugs the first trials of a search do not
reveal").
"""

from __future__ import annotations

import math

import numpy as np

from ..._validate import check_probability
from ._common import ZooMechanism, hockey_stick_discrete, piecewise_quadrature, records

__all__ = [
    "CLIP_FIRST",
    "EXACT_PROBABILITY",
    "FAST_PATH_FROM",
    "RECORD_MAX",
    "WITNESS_CLIP",
    "WITNESS_EXACT",
    "WITNESS_FAST",
    "WITNESS_FAST_BOTH",
    "WITNESS_OFF_GRID",
    "WITNESS_OFF_GRID_EMPTY",
    "ExponentialQuantileCandidates",
    "LaplaceSum",
    "laplace_hockey_stick",
    "quantile_hockey_stick",
]

RECORD_MAX = 2.0
"""Upper end of the record domain [0, RECORD_MAX] of the noisy sums (clipped to [0, 1])."""
FAST_PATH_FROM = 8
"""Dataset size from which ``laplace-sum-fast-path`` takes its buggy path."""
EXACT_PROBABILITY = 0.05
"""Probability with which ``laplace-sum-rare-exact`` releases the exact sum."""
CLIP_FIRST = 5
"""Number of leading records ``laplace-sum-partial-clip`` clips."""

# 7 zeros vs 7 zeros and a 1: the correct path (7 records) against the fast path (8 records).
WITNESS_FAST = ([[0.0]] * 7, [[0.0]] * 7 + [[1.0]])
# 8 vs 9 records: both on the fast path, scales 1/(8 eps) and 1/(9 eps).
WITNESS_FAST_BOTH = ([[0.0]] * 8, [[0.0]] * 8 + [[1.0]])
# The smallest pair whose sums differ.
WITNESS_EXACT = ([], [[1.0]])
# 5 records, then a sixth at position 5, unclipped: the sum moves by 2.
WITNESS_CLIP = ([[0.0]] * 5, [[0.0]] * 5 + [[2.0]])
# A record off the grid (multiples of 0.05) between two records on adjacent grid points: the largest
# exact divergence over D0 = two grid points, x in {0.31, 0.33, 0.37, 0.42, 0.51} (0.167 at eps = 1).
WITNESS_OFF_GRID = ([[0.35], [0.4]], [[0.35], [0.37], [0.4]])
WITNESS_OFF_GRID_EMPTY = ([], [[0.37]])


def laplace_hockey_stick(m0: float, b0: float, m1: float, b1: float, epsilon: float) -> float:
    """``H_{e^eps}(P || Q)`` for ``P = Laplace(m0, b0)`` and ``Q = Laplace(m1, b1)``, by quadrature.

    Parameters
    ----------
    m0, b0 : float
        Centre and scale (``> 0``) of P.
    m1, b1 : float
        Centre and scale (``> 0``) of Q.
    epsilon : float
        In nats, ``>= 0``.

    Returns
    -------
    float
        ``int max(0, p(x) - e^eps q(x)) dx`` in [0, 1]; absolute error about 1e-12 (the
        integrand's kinks, the centres and the points where ``p = e^eps q``, are breaks of
        :func:`~._common.piecewise_quadrature`).

    Raises
    ------
    ValueError
        If a scale is not > 0.
    """
    if not (b0 > 0 and b1 > 0):
        raise ValueError(f"laplace_hockey_stick: scales must be > 0, got {b0!r} and {b1!r}")
    e = math.exp(epsilon)
    breaks = [m0, m1]
    # p = e q  <=>  -|x - m0|/b0 - ln(2 b0) = eps - |x - m1|/b1 - ln(2 b1): linear on each side of
    # both centres, so solve on each of the four sign patterns and keep the consistent roots.
    c = epsilon + math.log(b0 / b1)
    for s0 in (-1.0, 1.0):
        for s1 in (-1.0, 1.0):
            # -s0 (x - m0)/b0 + s1 (x - m1)/b1 = c
            a = -s0 / b0 + s1 / b1
            if a != 0.0:
                x = (c - s0 * m0 / b0 + s1 * m1 / b1) / a
                breaks.append(x)
    x, w = piecewise_quadrature(np.asarray(breaks), [b0, b1])
    p = np.exp(-np.abs(x - m0) / b0) / (2.0 * b0)
    q = np.exp(-np.abs(x - m1) / b1) / (2.0 * b1)
    return float(np.clip(np.sum(w * np.maximum(0.0, p - e * q)), 0.0, 1.0))


class LaplaceSum(ZooMechanism):
    """Noisy sum ``S + Laplace(1/eps)`` of scalar records in [0, 2] clipped to [0, 1], with an optional bug.

    Claim: eps-DP under add/remove (records in [0, 2], sizes 0..10).
    Bugs (each off by default; the entries of the module docstring turn one on):
    ``fast_path_from`` (noise ``Laplace(1/(n eps))`` from that size on), ``exact_probability``
    (the exact sum with that probability), ``clip_first`` (only the first records clipped).
    True guarantee: eps-DP without a bug; see the module docstring for each bug.

    Parameters
    ----------
    epsilon, delta, name
        As :class:`~dpaudit.mechanisms.zoo._common.ZooMechanism` (pure DP: delta is ignored; the
        name defaults to ``"laplace-sum"``).
    fast_path_from : int, optional
        Size ``m >= 1`` from which the noise scale is ``1/(n eps)`` instead of ``1/eps``.
    exact_probability : float, default 0.0
        Probability in [0, 1) of releasing ``S`` without noise.
    clip_first : int, optional
        Clip only the first ``k >= 0`` records to [0, 1]; the others enter the sum as they are.

    Raises
    ------
    ValueError
        Naming the mechanism, if epsilon is not finite and > 0, ``fast_path_from`` is not an
        integer >= 1, ``exact_probability`` is not in [0, 1), or ``clip_first`` is not an
        integer >= 0.
    """

    name = "laplace-sum"

    def __init__(self, epsilon: float, delta: float = 0.0, *, name: str | None = None,
                 fast_path_from: int | None = None, exact_probability: float = 0.0,
                 clip_first: int | None = None):
        super().__init__(epsilon, delta, name=name)
        self.fast_path_from = None if fast_path_from is None else self._int(fast_path_from, "fast_path_from", 1)
        p = float(exact_probability)
        if p != 0.0:
            p = check_probability(p, f"{self.name}: exact_probability")
        self.exact_probability = p
        self.clip_first = None if clip_first is None else self._int(clip_first, "clip_first", 0)

    def _records(self, dataset) -> np.ndarray:
        return records(dataset, 1, self.name, "releases a sum of scalar records")[:, 0]

    def computed_sum(self, dataset) -> float:
        """The sum (a float) the mechanism adds noise to: the records of ``dataset`` (an array of
        shape ``(n_records, 1)``) clipped to [0, 1], only the first ``clip_first`` of them when
        that bug is on. A ValueError if the records are not scalars or contain NaN/inf."""
        x = self._records(dataset)
        k = x.size if self.clip_first is None else min(self.clip_first, x.size)
        return float(np.clip(x[:k], 0.0, 1.0).sum() + x[k:].sum())

    def noise_scale(self, n: int) -> float:
        """Laplace scale used on a dataset of ``n`` records: ``1/eps``, or ``1/(n eps)`` on the
        buggy fast path (``n >= fast_path_from``)."""
        if self.fast_path_from is not None and n >= self.fast_path_from:
            return 1.0 / (n * self.epsilon)
        return 1.0 / self.epsilon

    def sample(self, dataset: np.ndarray, num_samples: int, rng: np.random.Generator) -> np.ndarray:
        """``num_samples`` releases, shape ``(num_samples, 1)``, float64.

        Raises
        ------
        ValueError
            If the records are not scalars or contain NaN/inf.
        """
        x = self._records(dataset)
        s = self.computed_sum(x.reshape(-1, 1))
        m = int(num_samples)
        noise = rng.laplace(0.0, self.noise_scale(x.size), size=m)
        if self.exact_probability > 0.0:
            noise[rng.random(m) < self.exact_probability] = 0.0
        return (s + noise).reshape(-1, 1)

    def __repr__(self) -> str:
        return (f"LaplaceSum(epsilon={self.epsilon:g}, fast_path_from={self.fast_path_from}, "
                f"exact_probability={self.exact_probability:g}, clip_first={self.clip_first})")


class ExponentialQuantileCandidates(ZooMechanism):
    """The exponential mechanism for the median over 21 grid points, plus (bug) the records' own values.

    ``P(y) ∝ exp(eps u(D, y) / 2)`` over the candidates ``y``, ``u(D, y) = -|#{x < y} - #{x > y}|``
    (records clipped to [0, 1]); candidates are the grid ``{0, 0.05, ..., 1}``, and with
    ``data_candidates=True`` also every record value (duplicates counted once).

    Claim: eps-DP under add/remove (records in [0, 1], sizes 0..10).
    Bug (``data_candidates=True``): the range depends on the data; a record value off the grid is
    an output only of the datasets that hold it.
    True guarantee: with the bug none (``H_{e^eps}(D1 || D0) >= P_D1(x)`` for a record ``x`` off the
    grid and absent from D0); without it eps-DP (McSherry & Talwar 2007, Thm 6), the zoo's
    ``dp-median``.

    Parameters
    ----------
    epsilon, delta, name
        As :class:`~dpaudit.mechanisms.zoo.median.ExponentialQuantile` (the name defaults to
        ``"dp-median-data-candidates"``).
    data_candidates : bool, default True
        Whether the records' own values join the grid as candidates (the bug).
    grid_size : int, default 21
        Grid points ``m >= 2`` evenly spaced on [0, 1].

    Raises
    ------
    ValueError
        Naming the mechanism, if epsilon is not finite and > 0 or grid_size is not an integer >= 2.
    """

    name = "dp-median-data-candidates"

    def __init__(self, epsilon: float, delta: float = 0.0, *, name: str | None = None,
                 data_candidates: bool = True, grid_size: int = 21):
        super().__init__(epsilon, delta, name=name)
        self.data_candidates = bool(data_candidates)
        self.grid_size = self._int(grid_size, "grid_size", minimum=2)
        # j / (m - 1), not linspace: the grid values must equal the literals a record can hold
        # (linspace gives 0.30000000000000004 for 0.3, which would make 0.3 an extra candidate).
        self.grid = np.arange(self.grid_size) / (self.grid_size - 1)

    def candidates(self, dataset) -> tuple[np.ndarray, np.ndarray]:
        """Candidate outputs and their utilities.

        Parameters
        ----------
        dataset : array, shape (n_records, 1)

        Returns
        -------
        y : ndarray of float, shape (m,)
            Sorted candidates: the grid, plus the distinct record values with the bug.
        u : ndarray of float, shape (m,)
            ``-|#{x < y} - #{x > y}|``, all ``<= 0``.

        Raises
        ------
        ValueError
            If the records are not scalars or contain NaN/inf.
        """
        x = np.clip(records(dataset, 1, self.name, "takes a median of scalar records")[:, 0], 0.0, 1.0)
        y = np.unique(np.concatenate([self.grid, x])) if self.data_candidates else self.grid
        below = (x[None, :] < y[:, None]).sum(axis=1)
        above = (x[None, :] > y[:, None]).sum(axis=1)
        return y, -np.abs(below - above).astype(float)

    def probabilities(self, dataset) -> dict:
        """Exact output law ``{candidate: probability}`` (sums to 1)."""
        y, u = self.candidates(dataset)
        z = 0.5 * self.epsilon * u
        w = np.exp(z - z.max())
        return dict(zip(y.tolist(), (w / w.sum()).tolist()))

    def sample(self, dataset: np.ndarray, num_samples: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``num_samples`` candidates (vectorised Gumbel-max), shape ``(num_samples, 1)``, float64.

        Raises
        ------
        ValueError
            If the records are not scalars or contain NaN/inf.
        """
        y, u = self.candidates(dataset)
        g = rng.gumbel(size=(int(num_samples), y.size))
        return y[np.argmax(0.5 * self.epsilon * u[None, :] + g, axis=1)].reshape(-1, 1)

    def __repr__(self) -> str:
        return (f"ExponentialQuantileCandidates(epsilon={self.epsilon:g}, data_candidates={self.data_candidates}, "
                f"grid_size={self.grid_size})")


def quantile_hockey_stick(d0, d1, epsilon: float) -> float:
    """``max(H_{e^eps}(D0 || D1), H_{e^eps}(D1 || D0))`` of ``dp-median-data-candidates``, exact.

    Parameters
    ----------
    d0, d1 : array, shape (n_records, 1)
    epsilon : float
        In nats, ``> 0``.

    Returns
    -------
    float
    """
    m = ExponentialQuantileCandidates(epsilon)
    p, q = m.probabilities(d0), m.probabilities(d1)
    return max(hockey_stick_discrete(p, q, epsilon), hockey_stick_discrete(q, p, epsilon))
