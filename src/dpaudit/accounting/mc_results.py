"""Result objects of the Monte Carlo accountant (frozen dataclasses that serialise to JSON).

Part of :mod:`.monte_carlo`: :class:`DeltaEstimate`, :class:`EpsilonEstimate` and
:class:`OnlineEpsilonEstimate` carry the estimate, its interval, the one-sided upper confidence
bound, the run's settings and the trust diagnostics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["DeltaEstimate", "EpsilonEstimate", "OnlineEpsilonEstimate"]


def _fields_dict(self) -> dict:
    """JSON-serialisable dict of all fields (the ``to_dict`` of the result dataclasses)."""
    return _jsonable(dict(self.__dict__))


def _jsonable(x):
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return [_jsonable(v) for v in x.tolist()]
    if isinstance(x, (np.floating, float)):
        v = float(x)
        return v if math.isfinite(v) else (None if math.isnan(v) else ("inf" if v > 0 else "-inf"))
    if isinstance(x, np.integer):
        return int(x)
    return x


@dataclass(frozen=True, kw_only=True)
class _MonteCarloRun:
    """The fields every offline Monte Carlo result shares (keyword-only; documented in
    :class:`DeltaEstimate`): the interval, the run's settings and the trust diagnostics."""

    ci_low: float
    ci_high: float
    confidence: float
    num_samples: int
    estimator: str
    direction: str
    per_direction: dict
    composition: dict
    backend: str
    device: str
    seed: int | None
    wall_seconds: float
    upper_method: str = "rdp"
    ess: float = math.nan
    max_term_share: float = math.nan
    trusted: bool = False
    cross_check: dict | None = None

    to_dict = _fields_dict


@dataclass(frozen=True)
class DeltaEstimate(_MonteCarloRun):
    """Monte Carlo estimate of delta(eps) with a confidence interval.

    Attributes
    ----------
    epsilon : float
        The eps queried (nats).
    delta : float
        Estimate of delta(eps): the larger of the directions' estimates.
    ci_low, ci_high : float
        Two-sided normal-approximation confidence interval at level ``confidence`` (for the
        maximum over directions: the maxima of the directions' interval ends).
    confidence : float
        Level of the interval.
    std_error : float
        Standard error of the reported direction's estimate.
    num_samples : int
        Samples per direction.
    estimator : str
        'is', 'simple' or 'is-paper'.
    direction : str
        The direction attaining the maximum.
    per_direction : dict
        For each direction: delta, std_error, ci_low, ci_high, tilts.
    composition : dict
        The composition's description.
    backend, device : str
        Where the sampling ran.
    seed : int or None
        The integer seed, when one was given (the run is reproducible from it).
    wall_seconds : float
        Time spent.
    delta_upper : float
        One-sided upper confidence bound on delta(eps) at level ``confidence`` (max over directions;
        rule in :class:`MonteCarloAccountant`). This is the number to use as a guarantee.
    upper_method : str
        How ``delta_upper`` was obtained: 'maurer' (non-asymptotic bound from bounded terms),
        'rdp' (the deterministic RDP bound was smaller, or the estimate was untrusted) or 'wald'
        (one-sided normal approximation; 'is-paper' only).
    ess : float
        Effective sample size of the estimator's terms (smallest over directions).
    max_term_share : float
        Largest single term's share of the terms' sum (largest over directions).
    trusted : bool
        Whether ``ess >= MIN_ESS`` and ``max_term_share <= MAX_TERM_SHARE`` in every direction:
        whether the point estimate and ``ci_low``/``ci_high`` can be relied on.
    cross_check : dict or None
        The comparison with dp_accounting's PLD accountant, when requested (:func:`cross_check`).
    """

    epsilon: float
    delta: float
    std_error: float
    delta_upper: float = math.inf

    @property
    def relative_std_error(self) -> float:
        """std_error / delta (inf when the estimate is 0)."""
        return self.std_error / self.delta if self.delta > 0 else math.inf

    def to_dict(self) -> dict:
        """JSON-serialisable dict of all fields."""
        d = dict(self.__dict__)
        d["relative_std_error"] = self.relative_std_error
        return _jsonable(d)


@dataclass(frozen=True)
class EpsilonEstimate(_MonteCarloRun):
    """Monte Carlo estimate of eps(delta) with a confidence interval and a one-sided upper
    confidence bound (fields as in :class:`DeltaEstimate`, with ``epsilon`` the estimate and
    ``delta`` the query).

    Attributes
    ----------
    epsilon_upper : float
        One-sided upper confidence bound on eps(delta) (nats) at level ``confidence``: with
        probability at least ``confidence`` the true eps(delta) is at most this (max over
        directions; rule in :class:`MonteCarloAccountant`). Use this as the guarantee.
    upper_method, ess, max_term_share, trusted, cross_check
        As in :class:`DeltaEstimate`.
    per_direction : dict
        Per direction: epsilon, ci_low, ci_high, epsilon_upper, upper_method, rdp_upper_bound,
        tilts, pilot_epsilon, pilot_history (each pilot's eps, tilts and estimate), ess,
        max_term_share, nonzero, trusted.
    """

    delta: float
    epsilon: float
    epsilon_upper: float = math.inf


@dataclass(frozen=True)
class OnlineEpsilonEstimate:
    """eps(delta) after every step 1..k of a composition, from one set of running sums.

    Attributes
    ----------
    delta : float
        The query.
    steps : tuple of int
        1..k.
    epsilon, ci_low, ci_high : tuple of float
        Estimate and confidence interval after each step (max over directions).
    cumulative_seconds : tuple of float
        Wall time from the start until the estimate after each step was available.
    epsilon_upper : tuple of float
        One-sided upper confidence bound on eps(delta) after each step, at level ``confidence``
        (pointwise, not simultaneous). It is computed as in :meth:`MonteCarloAccountant.get_epsilon`
        at the steps ``upper_checkpoints`` (about 24, geometric in k, and k); at a step i between
        them it is the bound of the next checkpoint c >= i (valid because eps(delta) cannot
        decrease when steps are added), capped by the RDP bound of step i.
    upper_checkpoints : tuple of int
        Steps at which ``epsilon_upper`` was computed from the samples.
    ess, max_term_share, trusted : float, float, bool
        Diagnostics at the last step (as in :class:`DeltaEstimate`).
    """

    delta: float
    steps: tuple
    epsilon: tuple
    ci_low: tuple
    ci_high: tuple
    cumulative_seconds: tuple
    confidence: float
    num_samples: int
    estimator: str
    tilts: dict
    composition: dict
    backend: str
    device: str
    seed: int | None
    epsilon_upper: tuple = ()
    upper_checkpoints: tuple = ()
    ess: float = math.nan
    max_term_share: float = math.nan
    trusted: bool = False

    to_dict = _fields_dict
