"""The histogram tester (Gilbert & McMillan 2018; paper 000, Alg. 3–4), sound and tightened."""

from __future__ import annotations

from ..estimators.histogram import HistogramHockeyStick
from ._common import EstimatorTester
from .base import ProfileTester, rdp_epsilon_lower_bound

__all__ = ["HistogramTester", "rdp_epsilon_lower_bound"]


class HistogramTester(EstimatorTester, ProfileTester):
    """Tests a claim with histogram lower bounds on the hockey-stick divergence, both directions.

    Paper 000, Alg. 3–4 (HistogramTester, after Gilbert & McMillan 2018), with the estimator
    :class:`~dpaudit.estimators.HistogramHockeyStick`. Discrete outputs (each distinct output row
    a cell, any dimension: noisy-max indices, SVT answer vectors) or 1-D outputs cut into bins;
    continuous outputs of dimension > 1 raise :class:`NotApplicable`. The bounds hold for every
    eps' at once, so the verdict compares them with the claim's whole privacy profile
    (:func:`profile_outcome`); every claim is supported (Rényi claims through the RDP-to-DP
    conversion of :meth:`RenyiDP.delta_profile`).

    Failure probability ``beta``: with the default ``"split"`` tolerance each direction has its
    own region and a share of ``beta`` (``beta/2`` each, or 0.8/0.2 or 0.95/0.05 when the training
    half predicts more power that way; each share split equally between the direction's two
    Clopper–Pearson bounds); with the L1 tolerances one event (each distribution's empirical total
    variation bounded at ``beta/2``) covers both directions and every eps'. Either way a mechanism
    satisfying the claim gets ``violation=True`` with probability at most ``beta`` (not proven
    for ``tolerance="plug-in-heuristic"``).

    ``epsilon_lower_bound``: at the claim's delta for (eps, delta) claims, at delta = 0 for pure
    claims, and the Rényi epsilon at the claim's alpha for Rényi claims
    (:func:`rdp_epsilon_lower_bound`).

    Parameters
    ----------
    estimator : HistogramHockeyStick, optional
        The estimator; default ``HistogramHockeyStick(**kwargs)``.
    **kwargs
        Passed to :class:`HistogramHockeyStick` (``tolerance``, ``mode``, ``bins``, ``value_range``,
        ``categories``, ``train_fraction``, ``max_categories``) when no estimator is given.

    Raises
    ------
    ValueError
        If both an estimator and keyword arguments are given, or on invalid keyword arguments.
    """

    name = "histogram"

    estimator_class = HistogramHockeyStick
