"""Floating-point noise: textbook Laplace and Gaussian in float64 (not DP) and Mironov's snapping fix.

Every mechanism releases a noisy **sum** ``S`` of ``n`` scalar records in [0, 1] (sensitivity 1
under add/remove; datasets of shape ``(n, 1)``, sizes 1..10); the output has shape
``(num_samples, 1)``.

* ``float-laplace``: ``S - b sign(u) ln(1 - 2|u|)``, ``b = 1/eps``, ``u`` uniform on the doubles
  ``k 2^-53 - 1/2`` (inverse-CDF sampling as in textbooks, all in float64). Claims eps-DP; is
  **not DP at all** (Mironov 2012, §3): the set of doubles ``fl(S + noise)`` can take depends on
  ``S``. At ``S = 0`` the output is the noise itself, whose small values have full precision
  (lowest set bit = ulp of their binade); at ``S = 1`` (or 1/3) an output ``y`` with ``|y| < S``
  is ``S + noise`` computed exactly (Sterbenz), on the grid of ``S``'s binade, so it never has
  the fine lowest bits. The set "small outputs with fine lowest bits" has probability about
  ``P(|noise| < S) ~ 1 - e^{-S eps}`` under ``S = 0`` and 0 under ``S``: the privacy loss is
  infinite on it.
* ``float-gaussian``: ``S + sigma sqrt(-2 ln u1) cos(2 pi u2)`` (Box–Muller in float64),
  ``sigma = sqrt(2 ln(1.25/delta))/eps``; claims (eps, delta)-DP, same flaw (the set above has
  probability about ``2 S / (sqrt(2 pi) sigma)`` >> delta).
* ``snapping-laplace``: Mironov's snapping mechanism (2012, §5.2):
  ``clamp_B(round_Lambda(clamp_B(S) + lambda ln(U*) sign))``, ``Lambda`` the smallest power of two
  ``>= lambda``, ``U*`` uniform on (0, 1) sampled as Mironov asks (geometric exponent, 52 uniform
  mantissa bits), ``B = max(10, 2 lambda)`` (the sum lies in [0, 10]). Mironov's Theorem 1 gives
  ``(1/lambda + 2^-49 B/lambda)``-DP for ``lambda < B < 2^46 lambda``; this implementation takes
  ``lambda = (1 + 2^-49 B)/eps``, so it is eps-DP as claimed. (Mironov assumes a correctly rounded
  ``ln``; numpy's is within 1 ulp, which changes nothing a test can see.)

Witness pairs: ``D0 = [[0.0]]`` vs ``D1 = [[0.0], [1.0]]`` (sums 0 vs 1) and ``[[0.0]]`` vs
``[[0.0], [1/3]]`` (a sum that is not a dyadic number).
"""

from __future__ import annotations

import math

import numpy as np

from ._common import ZooMechanism, records
from .mean import gaussian_sigma_factor

__all__ = ["WITNESS_FLOAT", "FloatGaussian", "FloatLaplace", "SnappingLaplace", "uniform_open", "mironov_uniform"]

WITNESS_FLOAT = (([[0.0]], [[0.0], [1.0]]), ([[0.0]], [[0.0], [1.0 / 3.0]]))


def uniform_open(rng: np.random.Generator, size: int) -> np.ndarray:
    """Uniform doubles ``k 2^-53`` with ``k`` in ``1..2^53 - 1`` (the textbook generator, never 0).

    Returns
    -------
    ndarray of float, shape (size,), in (0, 1).
    """
    return rng.integers(1, 1 << 53, size=size).astype(np.float64) * 2.0**-53


def mironov_uniform(rng: np.random.Generator, size: int) -> np.ndarray:
    """Uniform on (0, 1) over all doubles, as the snapping mechanism needs (Mironov 2012, §5.2).

    The exponent is geometric (``2^-k`` with probability ``2^-k``, k >= 1) and the 52 mantissa
    bits are uniform, so each double ``d`` has probability proportional to its spacing.

    Returns
    -------
    ndarray of float, shape (size,), in (0, 1).
    """
    k = np.minimum(rng.geometric(0.5, size=size), 1022)
    mant = rng.integers(0, 1 << 52, size=size).astype(np.float64)
    return np.ldexp(1.0 + mant * 2.0**-52, -k)


class _FloatSum(ZooMechanism):
    """Shared: the sum of scalar records in [0, 1] plus a subclass's noise, in float64."""

    name = "float-sum"

    def _sum(self, dataset) -> float:
        return float(records(dataset, 1, self.name, "releases a sum of scalar records").sum())

    def sample(self, dataset: np.ndarray, num_samples: int, rng: np.random.Generator) -> np.ndarray:
        """Release ``num_samples`` noisy sums (vectorised), shape ``(num_samples, 1)``; ValueError if
        the records are not finite scalars (:meth:`Mechanism.sample`'s contract)."""
        return self._release(self._sum(dataset), int(num_samples), rng).reshape(-1, 1)

    def __repr__(self) -> str:
        extra = f", delta={self.delta:g}" if self.needs_delta else ""
        return f"{type(self).__name__}(epsilon={self.epsilon:g}{extra})"


class FloatLaplace(_FloatSum):
    """Textbook inverse-CDF Laplace noise in float64: ``S - (1/eps) sign(u) ln(1 - 2|u|)``.

    Claims eps-DP; not DP (module docstring; Mironov 2012, §3).
    """

    name = "float-laplace"

    def _release(self, s: float, n: int, rng: np.random.Generator) -> np.ndarray:
        u = uniform_open(rng, n) - 0.5
        return s - (1.0 / self.epsilon) * np.sign(u) * np.log(1.0 - 2.0 * np.abs(u))


class FloatGaussian(_FloatSum):
    """Textbook Box–Muller Gaussian noise in float64, ``sigma = sqrt(2 ln(1.25/delta))/eps``.

    Claims (eps, delta)-DP; not DP (module docstring).
    """

    name = "float-gaussian"
    needs_delta = True

    def _release(self, s: float, n: int, rng: np.random.Generator) -> np.ndarray:
        sigma = gaussian_sigma_factor(self.delta) / self.epsilon
        u1, u2 = uniform_open(rng, n), uniform_open(rng, n)
        return s + sigma * (np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * math.pi * u2))


class SnappingLaplace(_FloatSum):
    """Mironov's snapping mechanism (2012, §5.2), eps-DP at the stated eps (module docstring)."""

    name = "snapping-laplace"

    @property
    def bound(self) -> float:
        """The clamp ``B = max(10, 2/eps)`` (sums of up to 10 records lie in [0, 10])."""
        return max(10.0, 2.0 / self.epsilon)

    @property
    def scale(self) -> float:
        """``lambda = (1 + 2^-49 B)/eps``: Mironov's Thm 1 then gives exactly eps."""
        return (1.0 + 2.0**-49 * self.bound) / self.epsilon

    @property
    def grid(self) -> float:
        """``Lambda``: the smallest power of two ``>= lambda``."""
        return 2.0 ** math.ceil(math.log2(self.scale))

    def _release(self, s: float, n: int, rng: np.random.Generator) -> np.ndarray:
        b, lam, grid = self.bound, self.scale, self.grid
        sign = np.where(rng.integers(0, 2, size=n) == 1, 1.0, -1.0)
        noisy = min(max(s, -b), b) + sign * lam * np.log(mironov_uniform(rng, n))
        return np.clip(grid * np.round(noisy / grid), -b, b)
