"""Privacy claims: the guarantee a mechanism promises, as validated value objects.

A claim is tested through the *privacy profile* it implies: the largest hockey-stick divergence
``H_{e^eps}(M(D) || M(D'))`` it allows between outputs on neighbouring datasets, as a function of
``eps``. Every black-box tester compares a lower confidence bound on a divergence with what the
claim allows; the profile lets one lower bound on ``P(S)`` and one upper bound on ``Q(S)`` be
compared against the claim at every ``eps`` at once.

All epsilons are in nats (natural logarithm), as everywhere in dpaudit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import numpy as np

from .._validate import check_alpha, check_delta, check_epsilon
from ..errors import InvalidClaimError
from .rdp import rdp_delta

__all__ = ["ApproxDP", "Claim", "PureDP", "RenyiDP", "make_claim"]


def _approx_dp_profile(epsilon: float, delta: float, eps_prime: np.ndarray) -> np.ndarray:
    """Tight privacy profile of an (epsilon, delta)-DP mechanism (symmetric neighbouring relation).

    ``delta(eps') = delta + (1 - delta) (e^eps - e^eps') / (1 + e^eps)`` for ``eps' < eps`` and
    ``delta`` for ``eps' >= eps`` (Kairouz, Oh, Viswanath 2015, Thm 2.1; the f-DP curve
    f_{eps,delta} of Dong, Roth, Su 2022, Prop. 2.5). It follows from ``P(S) <= e^eps Q(S) + delta``
    together with the same inequality for the complement and the swapped pair.
    """
    eps_prime = np.asarray(eps_prime, dtype=float)
    below = delta + (1.0 - delta) * (np.exp(epsilon) - np.exp(eps_prime)) / (1.0 + np.exp(epsilon))
    return np.where(eps_prime < epsilon, below, delta)


@dataclass(frozen=True)
class PureDP:
    """Pure epsilon-differential privacy: ``P(M(D) in S) <= e^epsilon P(M(D') in S)``.

    Parameters
    ----------
    epsilon : float
        Privacy parameter in nats, ``>= 0``.

    Raises
    ------
    InvalidClaimError
        If epsilon is negative, NaN or infinite.

    References
    ----------
    Dwork, McSherry, Nissim, Smith (2006); paper 000, Definition 2.3 with delta = 0.
    """

    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, error=InvalidClaimError))

    @property
    def delta(self) -> float:
        """Always 0 for pure DP."""
        return 0.0

    def delta_profile(self, eps_prime) -> np.ndarray:
        """Largest ``H_{e^eps'}`` the claim allows, for an array of ``eps'`` (nats); same shape."""
        return _approx_dp_profile(self.epsilon, 0.0, eps_prime)

    def describe(self) -> str:
        return f"{self.epsilon:g}-DP (pure)"

    def to_dict(self) -> dict:
        return {"kind": "pure-dp", "epsilon": self.epsilon}


@dataclass(frozen=True)
class ApproxDP:
    """Approximate (epsilon, delta)-differential privacy: ``H_{e^epsilon}(M(D) || M(D')) <= delta``.

    Parameters
    ----------
    epsilon, delta : float
        The privacy parameters: epsilon in nats, ``>= 0``; delta, the hockey-stick divergence
        allowed at ``e^epsilon``, with ``0 <= delta < 1``.

    Raises
    ------
    InvalidClaimError
        If epsilon is negative or not finite, or delta is outside ``[0, 1)``.

    References
    ----------
    Paper 000, Definition 2.3.
    """

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, error=InvalidClaimError))
        object.__setattr__(self, "delta", check_delta(self.delta, allow_zero=True, error=InvalidClaimError))

    def delta_profile(self, eps_prime) -> np.ndarray:
        """Largest ``H_{e^eps'}`` the claim allows, for an array of ``eps'`` (nats); same shape.

        Uses the tight profile of (epsilon, delta)-DP (Kairouz, Oh, Viswanath 2015, Thm 2.1).
        """
        return _approx_dp_profile(self.epsilon, self.delta, eps_prime)

    def describe(self) -> str:
        return f"({self.epsilon:g}, {self.delta:g})-DP"

    def to_dict(self) -> dict:
        return {"kind": "approx-dp", "epsilon": self.epsilon, "delta": self.delta}


@dataclass(frozen=True)
class RenyiDP:
    """(alpha, epsilon)-Rényi differential privacy: ``R_alpha(M(D) || M(D')) <= epsilon``.

    Parameters
    ----------
    alpha : float
        Rényi order, ``> 1`` (finite).
    epsilon : float
        Bound on the Rényi divergence in nats, ``>= 0``.

    Raises
    ------
    InvalidClaimError
        If alpha <= 1 or not finite, or epsilon is negative or not finite.

    References
    ----------
    Mironov (2017), Definition 4; paper 000, Definition 2.5.
    """

    alpha: float
    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "alpha", check_alpha(self.alpha, error=InvalidClaimError))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, error=InvalidClaimError))

    def delta_profile(self, eps_prime) -> np.ndarray:
        """Largest ``H_{e^eps'}`` an (alpha, epsilon)-RDP mechanism can have, for an array of eps'.

        ``delta(eps') = min(1, exp((alpha - 1)(epsilon - eps')) (1 - 1/alpha)^(alpha - 1) / alpha)``
        (Canonne, Kamath, Steinke 2020, Prop. 12; derivation in ``docs/hockey_stick.md`` §3). Valid for every
        real eps'; tighter than Mironov's ``exp((alpha - 1)(epsilon - eps'))`` by the factor
        ``(1 - 1/alpha)^(alpha - 1) / alpha``.
        """
        return rdp_delta(self.alpha, self.epsilon, eps_prime)

    @property
    def delta(self) -> float:
        """An RDP claim has no single delta; 0 is used when reporting an epsilon lower bound."""
        return 0.0

    def describe(self) -> str:
        return f"({self.alpha:g}, {self.epsilon:g})-RDP"

    def to_dict(self) -> dict:
        return {"kind": "renyi-dp", "alpha": self.alpha, "epsilon": self.epsilon}


Claim = Union[PureDP, ApproxDP, RenyiDP]


def make_claim(epsilon: float, delta: float | None = None, alpha: float | None = None) -> Claim:
    """Build the claim the CLI options describe.

    Parameters
    ----------
    epsilon : float
        Epsilon in nats.
    delta : float, optional
        If given and > 0, an :class:`ApproxDP` claim.
    alpha : float, optional
        If given, a :class:`RenyiDP` claim of order alpha (delta must then be absent).

    Returns
    -------
    PureDP, ApproxDP or RenyiDP

    Raises
    ------
    InvalidClaimError
        On invalid parameters, or if both delta and alpha are given.
    """
    if alpha is not None:
        if delta not in (None, 0.0):
            raise InvalidClaimError(
                f"give either --delta (approximate DP) or --alpha (Rényi DP), not both "
                f"(got delta={delta!r}, alpha={alpha!r})"
            )
        return RenyiDP(alpha=alpha, epsilon=epsilon)
    if delta is None or delta == 0.0:
        return PureDP(epsilon)
    return ApproxDP(epsilon, delta)


def claim_from_dict(data: dict) -> Claim:
    """Inverse of ``Claim.to_dict`` (for reading JSON reports).

    Raises
    ------
    InvalidClaimError
        If the dictionary's ``kind`` is not a known claim kind.
    """
    kind = data.get("kind")
    if kind == "pure-dp":
        return PureDP(data["epsilon"])
    if kind == "approx-dp":
        return ApproxDP(data["epsilon"], data["delta"])
    if kind == "renyi-dp":
        return RenyiDP(data["alpha"], data["epsilon"])
    raise InvalidClaimError(f"unknown claim kind {kind!r}")
