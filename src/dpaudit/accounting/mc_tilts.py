"""The importance-sampling proposals of the Monte Carlo accountant: tilts and their weights.

Part of :mod:`.monte_carlo`. The 'is'/'cmc' proposals tilt every coordinate exponentially; the tilt
of a target eps is the saddle point ``K'(lam) = eps`` (Siegmund 1976), moved to a tilt the rejection
samplers can draw (:func:`~dpaudit.accounting.prv.feasible_tilt`); several tilts are mixed with the
balance heuristic (Veach & Guibas 1995). 'is-paper' tilts one coordinate with paper 004's theta
(App. C.2, eq. 8).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy import special

from .prv import Composition, GaussianStep, feasible_tilt, max_supported_tilt, saddlepoint_tilt


def _balance_log_weights(comp_k: Sequence[float], tilts: Sequence[float], L, ops):
    """ln of the balance-heuristic weight ``1 / mean_g exp(lam_g L - K(lam_g))`` (elementwise)."""
    if len(tilts) == 1:
        return comp_k[0] - tilts[0] * L
    G = len(tilts)
    terms = [tilts[g] * L - comp_k[g] for g in range(G)]
    if ops.name == "numpy":
        stacked = np.stack(terms, axis=0)
    else:
        stacked = ops.torch.stack(terms, dim=0)
    return math.log(G) - ops.logsumexp(stacked, 0)


def _paper_theta(step, epsilon: float) -> tuple[float, float, float]:
    """Paper 004 App. C: shift t* = 1/2 + s^2 ln((e^eps - 1 + q)/q), theta = t*/s^2, and ln M_P(theta)."""
    s2 = step.sigma ** 2
    q = 1.0 if isinstance(step, GaussianStep) else step.sampling_rate
    t_star = 0.5 + s2 * (epsilon + math.log(-math.expm1(-epsilon) + q * math.exp(-epsilon)) - math.log(q))
    theta = t_star / s2
    if q == 1.0:
        log_m = theta + 0.5 * s2 * theta ** 2
        comp_logp = np.array([0.0])
        means = np.array([1.0 + theta * s2])
    else:
        log_m = 0.5 * s2 * theta ** 2 + float(np.logaddexp(math.log1p(-q), math.log(q) + theta))
        logp = np.array([math.log1p(-q), math.log(q) + theta])
        comp_logp = logp - special.logsumexp(logp)
        means = np.array([theta * s2, 1.0 + theta * s2])
    return theta, log_m, (comp_logp, means)


def _sampling_tilt(comp: Composition, direction: str, epsilon: float, cap: float) -> float:
    """Saddle-point tilt of ``epsilon``, moved to the nearest tilt whose rejection samplers accept at
    least 10% of proposals (:func:`~dpaudit.accounting.prv.feasible_tilt`), rounded to 6 digits."""
    lam = saddlepoint_tilt(comp, epsilon, direction, max_tilt=cap)
    return round(feasible_tilt(comp, lam, direction), 6)


def _choose_tilts(comp: Composition, direction: str, epsilons: Sequence[float]) -> tuple:
    """Saddle-point tilts for the target eps values (made feasible for the samplers), merged when
    within 10% of each other."""
    cap = max_supported_tilt(comp, direction)
    return _merge_tilts(sorted({_sampling_tilt(comp, direction, e, cap) for e in epsilons}))


def _merge_tilts(lams: Sequence[float]) -> tuple:
    merged: list[float] = []
    for lam in lams:
        if merged and (lam == 0.0 and merged[-1] == 0.0 or merged[-1] > 0 and lam / merged[-1] < 1.1):
            continue
        merged.append(lam)
    return tuple(merged) or (0.0,)


def _tilts_for(est: str, comp: Composition, direction: str, targets: Sequence[float]) -> tuple:
    """Tilts of the proposal: the saddle points of the targets for 'is' and 'cmc'; none otherwise."""
    if est in ("is", "cmc", "is-cmc"):
        return _choose_tilts(comp, direction, targets)
    return (0.0,)
