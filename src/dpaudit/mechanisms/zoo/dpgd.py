"""DP-GD on a small model: one correct version and the two DP-SGD bugs of papers 000 and 002.

Model: least squares / mean estimation, ``loss(theta; x) = ||theta - x||^2 / 2`` with parameters
``theta`` in ``R^d`` (``d`` = record dimension, default 1), public start ``theta_0 = 0``; the
per-example gradient is ``theta - x``. Records lie in ``[-2, 2]^d`` (dataset shape ``(n, d)``,
sizes 1..10, add/remove adjacency), so at ``theta_0`` the gradients are ``-x`` in ``[-2, 2]``
as in paper 002 §5. ``T`` full-batch steps (default ``T = 1``):

    ``theta_{t+1} = theta_t - lr * ( sum_b clip_G( sum_{i in b} (theta_t - x_i) ) + N(0, (s sigma G)^2 I_d) )``

where the batch is cut, in record order, into microbatches ``b`` of ``microbatch_size``
consecutive records (size 1 = per-example clipping), ``clip_G(v) = v min(1, G/||v||_2)`` and
``G`` is the clip norm. The output is ``theta_T``, shape ``(num_samples, d)``; sampling is
vectorised over the runs (numpy).

Accounting (what every entry claims)
------------------------------------
With per-example clipping one record changes the clipped sum by at most ``G`` (l2), so each step
is a Gaussian mechanism of noise multiplier ``sigma``, i.e. ``(1/sigma)``-GDP, and ``T`` adaptive
steps are ``mu = sqrt(T)/sigma``-GDP (Dong, Roth, Su 2022, Cor. 3.3); releasing only ``theta_T``
is post-processing. ``mu``-GDP is exactly ``(eps, delta_mu(eps))``-DP for all eps with

    ``delta_mu(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``

(Balle & Wang 2018, Thm 8, the analytic Gaussian mechanism; Dong, Roth, Su 2022, Cor. 2.13).
Each mechanism is built for a target ``(eps, delta)``: :func:`analytic_gaussian_mu` solves
``delta_mu(eps) = delta`` for ``mu`` (scipy ``brentq``) and ``sigma = sqrt(T)/mu``. The claim is
:class:`~dpaudit.privacy.claims.ApproxDP` ``(eps, delta)``: exact, not rounded up, so for the correct
mechanism the hockey-stick divergence at a worst-case pair **equals** delta.

Entries
-------
* ``dp-gd``: per-example clipping, noise ``sigma G``. Private (tight).
* ``scaled-gd``: noise ``s sigma G`` with ``s = 1/2`` while the accounting uses ``sigma`` (paper
  000 §6.5 "ScaledGD"; paper 002 §5 "ScaledSGD"). True guarantee ``(mu/s)``-GDP.
* ``wrong-sensitivity-sgd``: microbatches of 2 records clipped as a whole, noise ``sigma G``,
  accounted as if per-example (paper 002 §5 "WrongSensitivitySGD"). One record can flip its
  microbatch's clipped gradient from ``-G`` to ``+G``: sensitivity ``2G``, true guarantee
  ``(2 mu)``-GDP.

Witness pairs (``d = 1``, records ``x``; gradients at ``theta_0`` are ``-x``)
---------------------------------------------------------------------------------
* ``[[1.0]]`` vs ``[[1.0], [-2.0]]``: gradients ``{-1}`` vs ``{-1, +2}`` (paper 002 §5's
  ``D = {-1}``, ``D' = {-1, 2}``): the microbatch gradient goes from ``-1`` to ``clip(+1) = +1``,
  a change of ``2G``; with per-example clipping the change is ``clip(+2) = G``.
* ``[[2.0]]`` vs ``[[2.0], [-2.0]]``: gradients at the opposite clip bounds ``{-2}`` vs
  ``{-2, +2}``; the microbatch gradient goes from ``-1`` to ``0`` (change ``G``), so the
  microbatch bug does **not** show at this extremal pair (paper 002 §5), while ScaledGD does.

At the first pair with ``T = 1``, ``delta = 1e-5`` (exact, Gaussian outputs): ``dp-gd`` has
``H_{e^eps} = 1e-5``; ``scaled-gd`` and ``wrong-sensitivity-sgd`` have ``H_{e^eps} =
delta_{2 mu}(eps) = 0.0104`` at eps = 1 and ``4.4e-4`` at eps = 0.01 (``mu = 0.268`` and
``0.0041``).

References
----------
Abadi et al. (2016), "Deep learning with differential privacy" (DP-SGD). Balle & Wang (2018),
"Improving the Gaussian mechanism for differential privacy", Thm 8. Dong, Roth, Su (2022),
"Gaussian differential privacy", Cor. 2.13, Cor. 3.3. Paper 000 (DP-Auditorium) §6.5; paper 002
(RényiTester) §5.
"""

from __future__ import annotations

import math

import numpy as np

from ..._validate import check_delta, check_epsilon, check_positive, check_real
from ._common import ZooMechanism, records

__all__ = [
    "DPGD",
    "ScaledGD",
    "WrongSensitivitySGD",
    "analytic_gaussian_mu",
    "gaussian_dp_delta",
]

RECORD_BOUND = 2.0
WITNESS_OPPOSITE = ([[1.0]], [[1.0], [-2.0]])
WITNESS_EXTREMAL = ([[2.0]], [[2.0], [-2.0]])


def gaussian_dp_delta(epsilon: float, mu: float) -> float:
    """``delta`` of ``mu``-GDP at ``epsilon``: ``Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``.

    The exact privacy profile of the Gaussian mechanism with sensitivity / noise ratio ``mu``
    (Balle & Wang 2018, Thm 8; Dong, Roth, Su 2022, Cor. 2.13). The second term is computed in
    log space.

    Parameters
    ----------
    epsilon : float
        In nats (any real; ``>= 0`` in use).
    mu : float
        ``> 0``.

    Returns
    -------
    float
        ``H_{e^eps}`` between ``N(0, 1)`` and ``N(mu, 1)``, in [0, 1].

    Raises
    ------
    ValueError
        If mu is not finite and > 0, or epsilon is not finite.
    """
    mu = check_positive(mu, "gaussian_dp_delta: mu")
    eps = check_real(epsilon, "gaussian_dp_delta: epsilon")
    from ...privacy.profiles import gaussian_delta

    return float(gaussian_delta(eps, mu))


def analytic_gaussian_mu(epsilon: float, delta: float) -> float:
    """The ``mu`` with ``gaussian_dp_delta(epsilon, mu) = delta`` (analytic Gaussian mechanism).

    ``delta_mu(eps)`` increases continuously from 0 to 1 in ``mu``, so the root is unique; it is
    found by ``scipy.optimize.brentq`` on ``log mu`` to relative precision about 1e-12. A Gaussian
    mechanism with noise ``sensitivity / mu`` is then exactly ``(epsilon, delta)``-DP (Balle & Wang
    2018, Alg. 1 / Thm 8).

    Parameters
    ----------
    epsilon : float
        ``> 0`` (nats).
    delta : float
        ``0 < delta < 1``.

    Returns
    -------
    float
        ``mu > 0``.

    Raises
    ------
    ValueError
        If epsilon is not finite and > 0 or delta is not in (0, 1).
    """
    eps = check_epsilon(epsilon, "analytic_gaussian_mu: epsilon", positive=True)
    d = check_delta(delta, "analytic_gaussian_mu: delta")
    lo, hi = math.log(1e-9), math.log(1e3)
    f = lambda lm: gaussian_dp_delta(eps, math.exp(lm)) - d  # noqa: E731
    if f(lo) > 0:  # delta below what even mu = 1e-9 gives (not reachable for eps > 0, delta > 0)
        return 1e-9
    from scipy.optimize import brentq  # here, not at module level: `dpaudit zoo` starts without scipy

    return math.exp(brentq(f, lo, hi, xtol=1e-13, rtol=1e-13, maxiter=200))


class DPGD(ZooMechanism):
    """Full-batch DP-GD on least squares (module docstring), per-example clipping: correct.

    Claim: ``(eps, delta)``-DP under add/remove (records in ``[-2, 2]^d``, sizes 1..10), with
    ``sigma = sqrt(T) / analytic_gaussian_mu(eps, delta)``.
    Bug: none.
    True guarantee: ``(sqrt(T)/sigma)``-GDP = ``mu``-GDP, hence exactly ``(eps, delta)``-DP
    (Dong, Roth, Su 2022, Cor. 3.3 and 2.13; Balle & Wang 2018, Thm 8). Tight: at the witness
    pairs with ``T = 1``, ``H_{e^eps} = delta``.
    Witness pairs: ``[[1.0]]`` vs ``[[1.0], [-2.0]]`` and ``[[2.0]]`` vs ``[[2.0], [-2.0]]``.

    Parameters
    ----------
    epsilon : float
        ``> 0`` (nats).
    delta : float, default 1e-5
        ``0 < delta < 1``.
    steps : int, default 1
        Number ``T`` of full-batch steps.
    clip_norm : float, default 1.0
        Clip norm ``G > 0`` (l2).
    learning_rate : float, default 1.0
        Step size ``lr > 0``.
    dim : int, default 1
        Parameter / record dimension ``d``.
    microbatch_size : int, default 1
        Consecutive records clipped together (1 = per-example clipping).
    noise_scale : float, default 1.0
        Factor ``s > 0`` applied to the accounted noise multiplier.
    name : str, optional
        Name used in reports.

    Attributes
    ----------
    mu : float
        ``analytic_gaussian_mu(eps, delta)``: the GDP parameter the accounting assumes.
    noise_multiplier : float
        ``sigma = sqrt(T)/mu``, as accounted.
    effective_noise_multiplier : float
        ``s * sigma``, as used.

    Raises
    ------
    ValueError
        On epsilon not finite and > 0, delta not in (0, 1), or a non-positive / non-integer
        steps, clip_norm, learning_rate, dim, microbatch_size or noise_scale.
    """

    name = "dp-gd"
    needs_delta = True
    _default_microbatch_size = 1
    _default_noise_scale = 1.0

    def __init__(
        self,
        epsilon: float,
        delta: float = 1e-5,
        *,
        steps: int = 1,
        clip_norm: float = 1.0,
        learning_rate: float = 1.0,
        dim: int = 1,
        microbatch_size: int | None = None,
        noise_scale: float | None = None,
        name: str | None = None,
    ):
        super().__init__(epsilon, delta, name=name)
        self.steps = self._int(steps, "steps")
        self.dim = self._int(dim, "dim")
        mb = self._default_microbatch_size if microbatch_size is None else microbatch_size
        self.microbatch_size = self._int(mb, "microbatch_size")
        self.clip_norm = self._positive(clip_norm, "clip_norm")
        self.learning_rate = self._positive(learning_rate, "learning_rate")
        self.noise_scale = self._positive(self._default_noise_scale if noise_scale is None else noise_scale, "noise_scale")
        self.mu = analytic_gaussian_mu(self.epsilon, self.delta)
        self.noise_multiplier = math.sqrt(self.steps) / self.mu
        self.effective_noise_multiplier = self.noise_scale * self.noise_multiplier

    def _records(self, dataset: np.ndarray) -> np.ndarray:
        return records(dataset, self.dim, self.name, f"fits a {self.dim}-dimensional model")

    def true_mu(self, sensitivity_factor: float = 1.0) -> float:
        """GDP parameter actually achieved when one record moves a step's clipped sum by up to
        ``sensitivity_factor * G``: ``sensitivity_factor * sqrt(T) / (s * sigma)``."""
        return sensitivity_factor * math.sqrt(self.steps) / self.effective_noise_multiplier

    def sample(self, dataset: np.ndarray, num_samples: int, rng: np.random.Generator) -> np.ndarray:
        """Run DP-GD ``num_samples`` times (vectorised over the runs; a loop over the T steps).

        Returns
        -------
        ndarray of float, shape (num_samples, d)
            The final parameters ``theta_T``.
        """
        x = self._records(dataset)
        n, d, m = int(num_samples), self.dim, x.shape[0]
        theta = np.zeros((n, d))
        starts = np.arange(0, m, self.microbatch_size)
        std = self.effective_noise_multiplier * self.clip_norm
        for _ in range(self.steps):
            if m:
                grads = theta[:, None, :] - x[None, :, :]  # (n, m, d)
                micro = np.add.reduceat(grads, starts, axis=1)  # (n, batches, d)
                norms = np.linalg.norm(micro, axis=2, keepdims=True)
                factor = np.minimum(1.0, self.clip_norm / np.maximum(norms, 1e-300))
                total = (micro * factor).sum(axis=1)
            else:
                total = np.zeros((n, d))
            theta = theta - self.learning_rate * (total + rng.normal(0.0, std, size=(n, d)))
        return theta

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(epsilon={self.epsilon:g}, delta={self.delta:g}, steps={self.steps}, "
            f"clip_norm={self.clip_norm:g}, microbatch_size={self.microbatch_size}, noise_scale={self.noise_scale:g}; "
            f"sigma={self.noise_multiplier:.6g})"
        )


class ScaledGD(DPGD):
    """DP-GD whose noise multiplier is ``s * sigma`` (``s = 1/2``) while the accounting uses ``sigma``.

    Claim: ``(eps, delta)``-DP under add/remove, accounted with ``sigma = sqrt(T)/mu``.
    Bug: the noise actually added is ``s sigma G`` (paper 000 §6.5: a developer assumes
    ``sigma_theory`` and uses ``sigma_effective = s sigma_theory``; ``s = 1/2`` is the accounting
    error of microbatch clipping).
    True guarantee: ``(mu/s)``-GDP = ``2 mu``-GDP, i.e. ``(eps, delta_{2mu}(eps))``-DP
    (Dong, Roth, Su 2022, Cor. 2.13): at the witness pairs (``T = 1``, ``delta = 1e-5``)
    ``H_{e^eps} = 0.0104`` at eps = 1 and ``4.4e-4`` at eps = 0.01.
    Witness pairs: as :class:`DPGD` (both have sensitivity ``G``).

    Parameters, Attributes, Raises: as :class:`DPGD` (default ``noise_scale = 0.5``).
    """

    name = "scaled-gd"
    _default_noise_scale = 0.5


class WrongSensitivitySGD(DPGD):
    """DP-GD with microbatch clipping (2 records per microbatch) accounted as per-example clipping.

    Claim: ``(eps, delta)``-DP under add/remove, accounted with ``sigma = sqrt(T)/mu`` as if the
    sensitivity were ``G``.
    Bug: a microbatch's summed gradient is clipped as a whole; adding one record can flip it from
    ``-G`` to ``+G``, so the sensitivity is ``2G`` (paper 002 §5, paper 000 §6.5).
    True guarantee: ``2 mu``-GDP: at ``[[1.0]]`` vs ``[[1.0], [-2.0]]`` (``T = 1``,
    ``delta = 1e-5``) ``H_{e^eps} = 0.0104`` at eps = 1 and ``4.4e-4`` at eps = 0.01; at the
    extremal pair ``[[2.0]]`` vs ``[[2.0], [-2.0]]`` the change is only ``G`` and ``H = delta``
    (no violation there).
    Witness pairs: ``[[1.0]]`` vs ``[[1.0], [-2.0]]`` (gradients -1 vs -1, +2).

    Parameters, Attributes, Raises: as :class:`DPGD` (default ``microbatch_size = 2``).
    """

    name = "wrong-sensitivity-sgd"
    _default_microbatch_size = 2
