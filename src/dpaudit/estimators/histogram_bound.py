"""What the histogram estimator of mechanism outputs returns, and its tolerances.

:func:`histogram_delta` is the plug-in hockey-stick divergence of two histograms,
:class:`HistogramBound` the lower confidence bound of one direction, :class:`HistogramEvidence`
both directions together; :func:`_deviations` gives the tolerances of the ``"l1"``,
``"plug-in"``, ``"original"`` and ``"plug-in-heuristic"`` modes. The estimator itself and the
derivations are in :mod:`dpaudit.estimators.histogram` (and ``docs/histogram.md``), which
re-exports every public name here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from ..bounds import empirical_tv_upper, empirical_tv_upper_plugin
from .base import register_bound_type
from .region import BothDirections, HockeyStickBound

__all__ = ["HistogramBound", "HistogramEvidence", "histogram_delta"]


def histogram_delta(p_counts, q_counts, epsilon):
    """Plug-in hockey-stick divergence of two histograms: ``sum_i max(0, p_hat_i - e^eps q_hat_i)``.

    Paper 000, Alg. 3, lines 5–10 (without the tolerance ``eta``).

    Parameters
    ----------
    p_counts, q_counts : array of int, shape (m,)
        Samples of P and of Q in each of the same ``m`` cells (each sums to >= 1).
    epsilon : float or array of float, shape (k,)
        Order(s) in nats.

    Returns
    -------
    float or ndarray of shape (k,)
        ``delta_hat(epsilon)`` in [0, 1].

    Raises
    ------
    ValueError
        On counts of different shapes, negative counts or empty histograms.
    """
    p = np.asarray(p_counts, dtype=float)
    q = np.asarray(q_counts, dtype=float)
    if p.ndim != 1 or p.shape != q.shape:
        raise ValueError(f"p_counts and q_counts must be 1-D of the same length, got shapes {p.shape} and {q.shape}")
    if np.any(p < 0) or np.any(q < 0) or p.sum() <= 0 or q.sum() <= 0:
        raise ValueError("p_counts and q_counts must be non-negative and non-empty")
    p_hat, q_hat = p / p.sum(), q / q.sum()
    keep = p_hat > 0  # cells with p_hat = 0 contribute nothing
    p_hat, q_hat = p_hat[keep], q_hat[keep]
    eps = np.asarray(epsilon, dtype=float)
    out = np.maximum(p_hat[None, :] - np.exp(eps.reshape(-1, 1)) * q_hat[None, :], 0.0).sum(axis=1)
    return float(out[0]) if eps.ndim == 0 else out


@register_bound_type
@dataclass(frozen=True, kw_only=True)
class HistogramBound(HockeyStickBound):
    """Lower confidence bound on the hockey-stick divergence from histograms, for every eps at once.

    With the ``"split"`` tolerance this is a region bound (:class:`HockeyStickBound`: the region
    is a set of cells); the L1 tolerances fill ``p_counts``/``p_deviation`` instead of the region
    fields (left None). In this object "p" is the first distribution of ``direction`` (Q for
    ``"Q||P"``).

    Attributes
    ----------
    divergence, direction, estimate, lower, beta
        See :class:`DivergenceBound`; ``estimate`` and ``lower`` are at order ``epsilon``.
        ``beta``: failure probability of this bound. For the ``"split"`` tolerance each direction
        has its own region and gets a share of the test's beta (the two shares add up to it,
        ``beta/2`` each unless the training half points at one direction); for the L1 tolerances one event
        (``TV(p_hat, p)`` and ``TV(q_hat, q)`` both bounded) makes **both** directions' bounds
        hold together with probability ``>= 1 - beta``, and each bound records that ``beta``.
    epsilon : float
        Order of ``estimate`` and ``lower`` (nats).
    tolerance : str
        Which bound was used: ``"split"``, ``"l1"``, ``"plug-in"``, ``"original"`` or
        ``"plug-in-heuristic"`` (the last is a heuristic, not a proven confidence bound).
    mode : str
        ``"discrete"`` (each distinct output row a cell) or ``"binned"`` (1-D outputs in intervals).
    num_cells : int
        Number of cells ``m`` of the universe the bound is over.
    binning : str
        How the cells were made (and from which samples).
    n_test_p, n_test_q : int
        Samples of p and q the bound is computed from.
    n_train : int
        Samples (both distributions together) used to make the cells and, for ``"split"``, to
        choose the region; none of them enter the bound.
    p_mass_lower, q_mass_upper : float or None
        ``"split"`` only: Clopper–Pearson bounds on ``P(S)`` (lower) and ``Q(S)`` (upper), each at
        ``beta/2`` of this bound.
    p_count, q_count : int or None
        ``"split"`` only: held-out samples of p and q in ``S``.
    region : str
        ``"split"`` only: the cells of ``S``.
    p_counts, q_counts : tuple of int
        L1 tolerances only: the histograms (length ``num_cells``) of the held-out samples.
    p_deviation, q_deviation : float or None
        L1 tolerances only: the upper bounds ``A_p``, ``A_q`` in
        ``lower(eps) = delta_hat(eps) - A_p - e^eps A_q`` (for ``"l1"``/``"plug-in"``: on
        ``TV(p_hat, p)``, ``TV(q_hat, q)``).
    vacuous : bool
        True when the sample size makes the bound say nothing whatever the data
        (``lower = -inf``; :meth:`delta_lower_bound` is ``-inf`` everywhere).
    """

    tolerance: str
    mode: str
    num_cells: int
    binning: str
    p_counts: tuple = ()
    q_counts: tuple = ()
    p_deviation: float | None = None
    q_deviation: float | None = None
    vacuous: bool = False

    def __post_init__(self) -> None:
        # JSON turns tuples into lists; keep the object hashable and comparable after a round trip.
        object.__setattr__(self, "p_counts", tuple(int(c) for c in self.p_counts))
        object.__setattr__(self, "q_counts", tuple(int(c) for c in self.q_counts))

    def delta_lower_bound(self, epsilon) -> np.ndarray | float:
        """Lower bound on ``H_{e^epsilon}(P||Q)`` at any epsilon (nats), valid for all at once.

        ``"split"``: ``p_mass_lower - e^eps q_mass_upper``; L1 tolerances:
        ``delta_hat(eps) - p_deviation - e^eps q_deviation``; ``-inf`` if :attr:`vacuous`.
        """
        eps = np.asarray(epsilon, dtype=float)
        if self.vacuous:
            out = np.full(eps.shape, -math.inf)
        elif self.tolerance == "split":
            return super().delta_lower_bound(epsilon)
        else:
            flat = eps.reshape(-1)
            d = histogram_delta(self.p_counts, self.q_counts, flat)
            out = (d - self.p_deviation - np.exp(flat) * self.q_deviation).reshape(eps.shape)
        return float(out) if out.ndim == 0 else out

    def epsilon_lower_bound(self, delta: float) -> float:
        """Largest epsilon at which the evidence still rejects ``(epsilon, delta)``-DP.

        The eps solving ``delta_lower_bound(eps) = delta`` (a decreasing function of eps); 0.0 when
        the evidence rejects no epsilon >= 0 at this delta, ``inf`` when it rejects every one.
        """
        if self.vacuous or float(self.delta_lower_bound(0.0)) <= delta:
            return 0.0
        if self.tolerance == "split":
            return super().epsilon_lower_bound(delta)
        if self.q_deviation <= 0.0:
            return math.inf
        # f(eps) <= 1 - e^eps q_deviation, negative beyond hi.
        hi = max(1.0, math.log(2.0 / self.q_deviation))
        f = lambda e: float(self.delta_lower_bound(e)) - delta  # noqa: E731
        if f(hi) > 0:  # cannot happen (delta_hat <= 1), kept for safety
            return math.inf
        return float(optimize.brentq(f, 0.0, hi, xtol=1e-12, rtol=1e-12))


@dataclass(frozen=True)
class HistogramEvidence(BothDirections):
    """Both directions' histogram bounds (:class:`HistogramBound`) from one pair of samples.

    Attributes
    ----------
    forward, reverse : HistogramBound
        Bounds on ``H(P || Q)`` and ``H(Q || P)`` (:class:`~dpaudit.estimators.region.BothDirections`).
    mode, tolerance : str
        As in :class:`HistogramBound`.
    num_cells : int
    needed_samples : int or None
        When the bounds are vacuous: samples per dataset at which they would not be (same
        settings, same split); None otherwise.
    seconds : float
        Wall time of the estimate.
    extra : tuple of HistogramBound
        With ``objective="both"``: the epsilon regions' bounds of the directions whose epsilon
        region differs from the margin region (that direction's share of ``beta`` then split 0.8 /
        0.2 between its margin and epsilon bounds).
    """

    mode: str
    tolerance: str
    num_cells: int
    needed_samples: int | None
    seconds: float
    extra: tuple = ()

    @property
    def bounds(self) -> tuple:
        """``(forward, reverse, *extra)``: every certified region's bound."""
        return (self.forward, self.reverse) + tuple(self.extra)

    @property
    def vacuous(self) -> bool:
        """Whether the sample size made the bounds say nothing."""
        return self.forward.vacuous


# --------------------------------------------------------------------------- tolerances
def _deviations(tolerance: str, counts: np.ndarray, num_cells: int, beta_half: float) -> tuple[float, float]:
    """``(A, B)`` for one distribution: its contribution to the tolerance is ``A + B`` times 1 or
    ``e^eps`` (A: mean term, B: deviation term), at failure probability ``beta_half``."""
    n = int(counts.sum())
    if tolerance == "l1":
        return float(empirical_tv_upper(n, num_cells, beta_half)), 0.0
    if tolerance == "plug-in":
        return float(empirical_tv_upper_plugin(counts, beta_half)), 0.0
    # paper 000 / DP-Auditorium constants; beta_half is beta/2, their ln(4/beta) is ln(2/beta_half)
    dev = 6.0 * math.sqrt(math.log(2.0 / beta_half) / (2.0 * n))
    if tolerance == "original":
        return 2.0 * math.sqrt(num_cells / n), dev
    return 2.0 * float(np.sum(np.sqrt(counts / n))) / math.sqrt(n), dev  # plug-in-heuristic
