"""Result objects shared by the divergence estimators."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

__all__ = ["DivergenceBound"]


@dataclass(frozen=True)
class DivergenceBound:
    """A one-sided lower confidence bound on a divergence between two output distributions.

    For the hockey-stick divergence the bound comes from a test region ``S`` chosen on training
    samples: with probability at least ``1 - beta`` over the held-out samples,
    ``P(S) >= p_mass_lower`` and ``Q(S) <= q_mass_upper`` simultaneously, hence for **every**
    ``eps``: ``H_{e^eps}(P || Q) >= p_mass_lower - e^eps q_mass_upper``
    (``H_{e^eps}(P || Q) = sup_S P(S) - e^eps Q(S)``, paper 000 eq. (11)).

    Attributes
    ----------
    divergence : str
        ``"hockey-stick"``.
    direction : str
        ``"P||Q"`` (first dataset's outputs first) or ``"Q||P"``.
    epsilon : float
        Order of the hockey-stick divergence reported in ``estimate``/``lower`` (nats).
    estimate : float
        Plug-in estimate ``P_hat(S) - e^eps Q_hat(S)`` on the held-out samples.
    lower : float
        Lower confidence bound on ``H_{e^eps}`` (may be negative: no evidence).
    beta : float
        Failure probability of the bound.
    p_mass_lower, q_mass_upper : float
        Clopper–Pearson bounds on ``P(S)`` (lower) and ``Q(S)`` (upper), each at ``beta / 2``.
    p_count, q_count : int
        Held-out samples of P and Q that fell in ``S``.
    n_test_p, n_test_q : int
        Held-out sample sizes.
    n_train : int
        Samples (both distributions together) used to train the classifier and choose ``S``.
    region : str
        Description of ``S`` (e.g. ``score > 1.23``).
    """

    divergence: str
    direction: str
    epsilon: float
    estimate: float
    lower: float
    beta: float
    p_mass_lower: float
    q_mass_upper: float
    p_count: int
    q_count: int
    n_test_p: int
    n_test_q: int
    n_train: int
    region: str = ""

    def delta_lower_bound(self, epsilon) -> np.ndarray | float:
        """Lower bound on ``H_{e^epsilon}(P||Q)`` at any epsilon (nats), same confidence.

        Valid simultaneously for all epsilon; returns ``p_mass_lower - e^epsilon q_mass_upper``.
        """
        eps = np.asarray(epsilon, dtype=float)
        out = self.p_mass_lower - np.exp(eps) * self.q_mass_upper
        return float(out) if out.ndim == 0 else out

    def epsilon_lower_bound(self, delta: float) -> float:
        """Largest epsilon at which the evidence still rejects ``(epsilon, delta)``-DP.

        Solves ``p_mass_lower - e^eps q_mass_upper = delta``:
        ``eps = ln((p_mass_lower - delta) / q_mass_upper)``. Returns 0.0 when the evidence
        rejects no epsilon >= 0 at this delta, and ``inf`` if ``q_mass_upper == 0``.
        """
        if self.p_mass_lower <= delta:
            return 0.0
        if self.q_mass_upper <= 0.0:
            return math.inf
        return max(0.0, math.log((self.p_mass_lower - delta) / self.q_mass_upper))

    def to_dict(self) -> dict:
        return asdict(self)
