"""White-box estimate of the privacy loss distribution and its composition (paper 001 §9.2).

Per-step scores (e.g. the inner product of a step's noisy update with the step's canary gradient)
are histogrammed under both hypotheses, ``p_i`` (canary present) and ``q_i`` (absent). The
discrete pair ``(p, q)`` defines a privacy loss distribution: loss ``ln(p_i / q_i)`` with mass
``p_i`` (bins with ``q_i = 0 < p_i`` go to the mass at infinity), and the reverse for the other
direction. dp_accounting composes it ``T`` times by FFT and reads ``delta(eps)`` (paper 001
eq. (9.1); Koskela et al. 2021; dp_accounting ``from_two_probability_mass_functions``,
``self_compose``).

This is an *estimate* (a heuristic, as paper 001 §10 says): there is no confidence statement, and
sampling noise inflates small divergences while binning deflates them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._validate import check_delta, check_int
from ..estimators.base import check_scores
from ..estimators.histogram import Bins, make_bins

__all__ = ["EmpiricalPLD", "estimate_pld", "merge_sparse_bins"]


def merge_sparse_bins(bins: Bins, p_counts, q_counts, min_count: int) -> Bins:
    """Merge adjacent bins left to right until each holds ``>= min_count`` of both samples.

    Parameters
    ----------
    bins : Bins
        The fine bins.
    p_counts, q_counts : array of int, shape (k,)
        Counts of the two samples in ``bins``.
    min_count : int
        Required count of each sample per merged bin (``>= 1``).

    Returns
    -------
    Bins
        Coarser bins (``rule`` gets ``"+merged"``); one bin if the samples are too small.
    """
    kp = np.asarray(p_counts)
    kq = np.asarray(q_counts)
    edges = [bins.edges[0]]
    cp = cq = 0
    for i in range(bins.k):
        cp += kp[i]
        cq += kq[i]
        if cp >= min_count and cq >= min_count:
            edges.append(bins.edges[i + 1])
            cp = cq = 0
    if len(edges) == 1:
        edges.append(bins.edges[-1])
    else:
        edges[-1] = bins.edges[-1]  # a short remainder joins the last merged bin
    return Bins(np.asarray(edges, dtype=float), bins.rule + "+merged", bins.chosen_on)


@dataclass(frozen=True, eq=False)
class EmpiricalPLD:
    """A privacy loss distribution estimated from two samples of per-step scores.

    Attributes
    ----------
    p_mass, q_mass : ndarray, shape (k,)
        Bin frequencies under P (canary present) and Q (absent).
    bins : Bins
        The bins.
    n_p, n_q : int
        Sample sizes.
    value_discretization_interval : float
        Loss discretisation (nats) of the dp_accounting PLD.
    infinity_mass_p, infinity_mass_q : float
        Mass of bins seen only under P (resp. only under Q): infinite privacy loss.

    References
    ----------
    Paper 001 §9.2, eq. (9.1); dp_accounting ``PrivacyLossDistribution`` (Doroshenko et al. 2022).
    """

    p_mass: np.ndarray
    q_mass: np.ndarray
    bins: Bins
    n_p: int
    n_q: int
    value_discretization_interval: float = 1e-3

    @property
    def infinity_mass_p(self) -> float:
        return float(self.p_mass[self.q_mass == 0].sum())

    @property
    def infinity_mass_q(self) -> float:
        return float(self.q_mass[self.p_mass == 0].sum())

    def _pld(self):
        from dp_accounting.pld import privacy_loss_distribution as pld

        with np.errstate(divide="ignore"):
            lp = np.log(self.p_mass)
            lq = np.log(self.q_mass)
        upper = {i: float(v) for i, v in enumerate(lp) if np.isfinite(v)}
        lower = {i: float(v) for i, v in enumerate(lq) if np.isfinite(v)}
        return pld.from_two_probability_mass_functions(
            lower, upper, pessimistic_estimate=True,
            value_discretization_interval=self.value_discretization_interval, symmetric=False,
        )

    def delta(self, epsilon, steps: int = 1):
        """Estimated ``max(H(P^T||Q^T), H(Q^T||P^T))`` at each eps after ``steps`` compositions.

        Parameters
        ----------
        epsilon : float or array
            Epsilon(s) in nats, ``>= 0``; any shape.
        steps : int
            Number of self-compositions ``T >= 1``.

        Returns
        -------
        float or ndarray
            Estimated ``delta(eps)``, same shape as ``epsilon``.
        """
        steps = check_int(steps, "steps")
        eps = np.asarray(epsilon, dtype=float)
        if np.any(~np.isfinite(eps)) or np.any(eps < 0):
            raise ValueError(f"epsilon must be finite and >= 0, got {epsilon!r}")
        dist = self._pld()
        if int(steps) > 1:
            dist = dist.self_compose(int(steps))
        out = np.asarray(dist.get_delta_for_epsilon(eps.ravel()), dtype=float).reshape(eps.shape)
        out = np.clip(out, 0.0, 1.0)
        return float(out) if out.ndim == 0 else out

    def epsilon_estimate(self, delta: float, steps: int = 1) -> float:
        """Same as :meth:`epsilon`: an estimate, named so."""
        return self.epsilon(delta, steps)

    def epsilon(self, delta: float, steps: int = 1) -> float:
        """Estimated epsilon at ``delta`` after ``steps`` compositions (``inf`` if the mass at
        infinity alone exceeds ``delta``): an estimate, not a bound."""
        delta = check_delta(delta)
        steps = check_int(steps, "steps")
        dist = self._pld()
        if int(steps) > 1:
            dist = dist.self_compose(int(steps))
        return float(dist.get_epsilon_for_delta(delta))

    def to_dict(self) -> dict:
        return {
            "kind": "estimate (no confidence statement; paper 001 §9.2)",
            "bins": self.bins.to_dict(), "n_p": self.n_p, "n_q": self.n_q,
            "value_discretization_interval": self.value_discretization_interval,
            "infinity_mass_p": self.infinity_mass_p, "infinity_mass_q": self.infinity_mass_q,
            "p_mass": [float(v) for v in self.p_mass], "q_mass": [float(v) for v in self.q_mass],
        }


def estimate_pld(
    p_scores,
    q_scores,
    *,
    bins="scott",
    bin_range=None,
    min_count: int = 10,
    value_discretization_interval: float = 1e-3,
    max_bins: int = 10_000,
) -> EmpiricalPLD:
    """Estimate the per-step privacy loss distribution from two samples of scores.

    Parameters
    ----------
    p_scores : array, shape (n,)
        Per-step scores with the canary present (all steps of all runs concatenated).
    q_scores : array, shape (m,)
        Per-step scores without it.
    bins : "scott", int or array of edges
        As in :func:`dpaudit.scores.make_bins` (chosen on all samples: no confidence here).
    bin_range : (float, float), optional
        Range of the equal-width bins (default: pooled minimum to maximum).
    min_count : int
        Adjacent bins are merged, left to right, until each merged bin holds at least
        ``min_count`` scores of *each* sample (a remainder joins the last merged bin). This keeps
        sampling gaps in the sparse tails from becoming infinite privacy loss (which composition
        would multiply) at the price of capping the tails' loss at the merged bins' — an
        underestimate there. ``0`` keeps the equal-width bins (paper 001's choice: bins seen
        under one hypothesis only go to the mass at infinity).
    value_discretization_interval : float
        Loss discretisation of the PLD (nats, ``> 0``); rounding is pessimistic (up).
    max_bins : int
        Cap on Scott's bin count.

    Returns
    -------
    EmpiricalPLD

    Raises
    ------
    ValueError
        If a side has fewer than 2 scores or a non-finite one, ``min_count``/``max_bins`` is not a
        valid integer, or ``value_discretization_interval`` is not finite and > 0.

    References
    ----------
    Paper 001 §9.2, eq. (9.1); Koskela, Jälkö, Honkela (2020); dp_accounting PLD.
    """
    x = check_scores(p_scores, "p_scores", min_size=2)
    y = check_scores(q_scores, "q_scores", min_size=2)
    vdi = float(value_discretization_interval)
    if not (vdi > 0) or not math.isfinite(vdi):
        raise ValueError(f"value_discretization_interval must be finite and > 0, got {value_discretization_interval!r}")
    min_count = check_int(min_count, "min_count", 0)
    b = make_bins(x, y, bins, bin_range, num_samples=min(x.size, y.size), max_bins=max_bins)
    kx, ky = b.counts(x), b.counts(y)
    if min_count > 0:
        merged = merge_sparse_bins(b, kx, ky, int(min_count))
        kx, ky = _regroup(kx, b, merged), _regroup(ky, b, merged)
        b = merged
    return EmpiricalPLD(kx / x.size, ky / y.size, b, int(x.size), int(y.size), vdi)


def _regroup(counts: np.ndarray, fine: Bins, coarse: Bins) -> np.ndarray:
    """Counts in ``coarse`` bins from counts in ``fine`` ones, when every coarse edge is a fine edge
    and the two share their end edges (:func:`merge_sparse_bins`): each coarse bin is a run of
    fine bins, and values beyond the ends fall in the end bins of both, so the sums are exactly
    ``coarse.counts(values)`` without binning the values again."""
    starts = np.searchsorted(fine.edges, coarse.edges[:-1])
    if not (starts[0] == 0 and np.array_equal(fine.edges[starts], coarse.edges[:-1])
            and coarse.edges[-1] == fine.edges[-1]):
        raise ValueError("the coarse bins' edges must be edges of the fine bins, with the same ends")
    return np.add.reduceat(counts, starts)
