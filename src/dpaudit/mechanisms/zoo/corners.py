"""Corner-case mechanisms: correct except on the empty dataset, and Gaussian sums with Rényi claims.

Every mechanism here releases a noisy sum ``S`` of ``n`` scalar records in [0, 1] (a dataset of
shape ``(n, 1)``, sizes 0..10 under add/remove, sensitivity 1); the output has shape
``(num_samples, 1)``.

* ``noisy-sum-empty-shortcut``: ``S + Laplace(1/eps)``, except that an empty dataset returns
  exactly 0 with no noise (an early ``if not data: return 0.0``). Claims eps-DP. On every pair of
  non-empty neighbours it is the Laplace mechanism (eps-DP, Dwork & Roth 2014 Thm 3.6); on
  ``[]`` vs ``[x]`` the output is a point mass at 0 against a continuous law, so
  ``H_{e^eps}([] || [x]) = 1`` at every eps: no finite guarantee. An audit whose datasets start at
  one record never sees it (the pair of issue 15, "the empty dataset").
* ``rdp-gaussian``: ``S + N(0, sigma^2)`` with ``sigma^2 = alpha / (2 eps)``, claims
  (alpha, eps)-RDP: the Gaussian mechanism's Rényi divergence is exactly ``alpha Delta^2 / (2
  sigma^2)`` (Mironov 2017, Prop. 7), so the claim is tight.
* ``rdp-gaussian-conversion-calibrated``: the same sum with the smallest ``sigma`` whose exact
  (eps', delta')-profile stays below the profile the RDP claim converts to
  (:func:`dpaudit.privacy.rdp.rdp_delta`), rounded up by 1 %. Its true RDP at order alpha is
  ``alpha / (2 sigma^2)``, e.g. 1.69 eps at (alpha, eps) = (2, 1) and 2.06 eps at (2, 0.5), so the
  claim is false; but every (eps', delta') guarantee the claim implies through the conversion
  holds, so a tester that checks only those (the hockey-stick tester alone) cannot flag it,
  whatever its sample size. Only a Rényi test can.

References
----------
Dwork & Roth (2014), Thm 3.6 (Laplace mechanism). Mironov (2017), "Rényi Differential Privacy",
Prop. 7 (Gaussian mechanism), Prop. 3 (RDP -> (eps, delta)). Canonne, Kamath, Steinke (2020),
Prop. 12 (the conversion :func:`~dpaudit.privacy.rdp.rdp_delta` uses).
"""

from __future__ import annotations

import math

import numpy as np

from ..._validate import check_alpha
from ...privacy.rdp import rdp_delta
from ._common import ZooMechanism, records

__all__ = ["WITNESS_EMPTY", "WITNESS_SUM_ONE", "NoisySumEmptyShortcut", "RDPGaussianSum", "conversion_hidden_sigma"]

# The empty dataset against one record at the far end of the domain.
WITNESS_EMPTY = ([], [[1.0]])
# The largest change of the sum between non-empty datasets.
WITNESS_SUM_ONE = ([[0.0]], [[0.0], [1.0]])


class _Sum(ZooMechanism):
    """A noisy sum of scalar records in [0, 1] (sensitivity 1 under add/remove)."""

    def _sum(self, dataset) -> tuple[int, float]:
        arr = records(dataset, 1, self.name, "releases a sum of scalar records")
        return arr.shape[0], float(np.clip(arr, 0.0, 1.0).sum())


class NoisySumEmptyShortcut(_Sum):
    """Laplace sum that skips its noise on the empty dataset: ``0`` if ``n = 0``, else ``S + Lap(1/eps)``.

    Claim: eps-DP under add/remove.
    Bug: the empty dataset releases exactly 0, a point mass that no non-empty neighbour can produce.
    True guarantee: none (``H_{e^eps}([] || [x]) = 1`` at every eps); eps-DP on the pairs of
    non-empty neighbours (Laplace mechanism, Dwork & Roth 2014 Thm 3.6).
    Relation: add/remove, records in [0, 1], sizes 0..10.
    Witness pair: ``[]`` vs ``[[1.0]]``.

    Parameters and errors: as :class:`~dpaudit.mechanisms.zoo._common.ZooMechanism` (pure DP:
    delta is ignored; a ValueError if epsilon is not finite and > 0).
    """

    name = "noisy-sum-empty-shortcut"

    def sample(self, dataset: np.ndarray, num_samples: int, rng: np.random.Generator) -> np.ndarray:
        """``num_samples`` releases, shape ``(num_samples, 1)``; all exactly 0 on an empty dataset."""
        n, s = self._sum(dataset)
        if n == 0:
            return np.zeros((num_samples, 1))
        return (s + rng.laplace(0.0, 1.0 / self.epsilon, size=num_samples)).reshape(-1, 1)


def conversion_hidden_sigma(alpha: float, epsilon: float, *, slack: float = 1.01) -> float:
    """The smallest Gaussian noise (sensitivity 1) whose (eps', delta')-profile stays below the
    profile an (alpha, epsilon)-RDP claim converts to, times ``slack``.

    The Gaussian mechanism's profile is ``delta(e) = Phi(1/(2s) - e s) - e^e Phi(-1/(2s) - e s)``;
    the claim's is :func:`~dpaudit.privacy.rdp.rdp_delta`. Found by bisection on ``s`` with the
    profiles compared on a grid of eps' in [0, 60 max(1, epsilon)].

    Parameters
    ----------
    alpha : float
        Rényi order, ``> 1``.
    epsilon : float
        RDP epsilon, ``> 0``.
    slack : float, default 1.01
        Factor (>= 1) applied to the boundary sigma, so the profile is strictly below the claim's.

    Returns
    -------
    float
        sigma, below the correct ``sqrt(alpha / (2 epsilon))``.
    """
    from scipy.stats import norm  # here, not at module level: `dpaudit zoo` starts without scipy.stats

    grid = np.linspace(0.0, 60.0 * max(1.0, epsilon), 20001)
    allowed = np.asarray(rdp_delta(alpha, epsilon, grid), dtype=float)

    def within(s: float) -> bool:
        d = norm.cdf(0.5 / s - grid * s) - np.exp(grid) * norm.cdf(-0.5 / s - grid * s)
        return bool(np.all(d <= allowed + 1e-12))

    hi = math.sqrt(alpha / (2.0 * epsilon))  # the correct sigma: within (the conversion is sound)
    lo = hi / 64.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if within(mid) else (mid, hi)
    return min(hi * slack, math.sqrt(alpha / (2.0 * epsilon)))


class RDPGaussianSum(_Sum):
    """Gaussian sum ``S + N(0, sigma^2)`` claiming (alpha, epsilon)-RDP.

    ``calibration="rdp"`` (entry ``rdp-gaussian``): ``sigma^2 = alpha / (2 epsilon)``, exactly
    (alpha, epsilon)-RDP (Mironov 2017, Prop. 7). ``calibration="conversion"`` (entry
    ``rdp-gaussian-conversion-calibrated``): ``sigma = conversion_hidden_sigma(alpha, epsilon)``,
    too small for the RDP claim (true RDP ``alpha / (2 sigma^2)``) though every (eps', delta')
    guarantee the claim converts to holds.
    Relation: add/remove, records in [0, 1], sizes 0..10.
    Witness pair: ``[[0.0]]`` vs ``[[0.0], [1.0]]`` (the sum moves by 1).

    Parameters
    ----------
    epsilon : float
        RDP epsilon in nats, ``> 0``.
    alpha : float
        Rényi order, ``> 1``.
    name : str, optional
    calibration : {"rdp", "conversion"}

    Raises
    ------
    ValueError
        If epsilon is not > 0, alpha is not > 1, or the calibration is unknown.
    """

    name = "rdp-gaussian"

    def __init__(self, epsilon: float, alpha: float = 2.0, *, name: str | None = None, calibration: str = "rdp"):
        super().__init__(epsilon, 0.0, name=name)
        self.alpha = check_alpha(alpha, f"{self.name}: alpha")
        if calibration not in ("rdp", "conversion"):
            raise ValueError(f"{self.name}: calibration must be 'rdp' or 'conversion', got {calibration!r}")
        self.calibration = calibration
        if calibration == "rdp":
            self.sigma = math.sqrt(self.alpha / (2.0 * self.epsilon))
        else:
            self.sigma = conversion_hidden_sigma(self.alpha, self.epsilon)

    @property
    def true_rdp_epsilon(self) -> float:
        """The mechanism's exact RDP epsilon at its order alpha: ``alpha / (2 sigma^2)``."""
        return self.alpha / (2.0 * self.sigma**2)

    def sample(self, dataset: np.ndarray, num_samples: int, rng: np.random.Generator) -> np.ndarray:
        """``num_samples`` releases ``S + N(0, sigma^2)``, shape ``(num_samples, 1)``."""
        _, s = self._sum(dataset)
        return (s + rng.normal(0.0, self.sigma, size=num_samples)).reshape(-1, 1)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={self.epsilon:g}, alpha={self.alpha:g}, calibration={self.calibration!r})"
