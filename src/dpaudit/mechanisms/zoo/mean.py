"""Mean mechanisms of paper 000, §6.1: one correct Laplace mean, four buggy ones, a correct Gaussian one.

Every mechanism releases a noisy mean of ``n`` scalar records in [0, 1] (a dataset of shape
``(n, 1)``, sizes 1..10) under add/remove adjacency; the output has shape ``(num_samples, 1)``.
Notation: ``S`` is the sum of the records, ``n`` their number,

* ``tau ~ Laplace(0, 2/eps)`` and ``n_tilde = max(1, n + tau)``, the noisy count;
* ``c(delta) = sqrt(2 ln(1.25/delta))``, the classic Gaussian-mechanism factor
  (Dwork & Roth 2014, Thm A.1): ``sigma = c(delta) * sensitivity / eps'``.

* ``dp-laplace``: ``S/n_tilde + Lap(2/(n_tilde eps))``; eps-DP.
* ``non-dp-laplace-1``: ``S/n + Lap(2/(n eps))``; claims eps-DP, has no finite guarantee.
* ``non-dp-laplace-2``: ``S/n + Lap(2/(n_tilde eps))``; claims eps-DP, violates it for
  eps below about 0.95 (sizes 1..10; its zoo entry has ``violates_for = (0, 0.96)``).
* ``dp-gaussian``: ``S/n_tilde + N(0, sigma^2)``, ``sigma = c(delta) 2/(n_tilde eps)``;
  (eps, delta)-DP for eps <= 2.
* ``non-dp-gaussian-1``: ``S/n + N(0, sigma^2)``, ``sigma = c(delta) 2/(n eps)``; claims
  (eps, delta)-DP, has no such guarantee for small delta.
* ``non-dp-gaussian-2``: ``S/n + N(0, sigma^2)``, ``sigma = c(delta) 2/(n_tilde eps)``; claims
  (eps, delta)-DP, violates it (delta = 1e-5) for eps below about 0.19 (sizes 1..10;
  ``violates_for = (0, 0.2)``).

The noisy count is clamped at 1, where paper 000 (and DP-Auditorium) clamp at 1e-12. The clamp is
post-processing of the (eps/2)-DP noisy count ``n + tau``, so the privacy of every mechanism is
unchanged; it keeps the outputs finite in size (with a clamp at 1e-12 the noise scale is
``2e12/eps`` about half the time at n = 1 and eps = 0.01, which swamps every tester's numerics)
and keeps the correct mechanisms useful.

Witness pair
------------
All entries use ``D0 = [[1.0]]``, ``D1 = [[1.0], [0.0]]`` (means 1 vs 0.5, sizes 1 vs 2). For the
four buggy mechanisms the output depends on the dataset only through ``n`` and the mean shift
``S0/n0 - S1/(n0 + 1)``, which is at most ``1/(n0 + 1)``; this pair has the largest shift at the
smallest size. The hockey-stick divergences ``H_{e^eps}``, computed numerically (fine-grid integration of
``max(0, p - e^eps q)`` over the output, with the noisy count integrated by quadrature in
probability space, 6000 nodes plus the atom at 1; directions D0||D1 and D1||D0):

====================  =======================  =======================
mechanism             eps = 0.01               eps = 1
====================  =======================  =======================
non-dp-laplace-1      0.2475 / 0.2450          0.1037 / 0
non-dp-laplace-2      0.0974 / 0.0995          0 / 0 (no violation)
non-dp-gaussian-1     0.3209 / 0.3176          0.1976 / 0
non-dp-gaussian-2     0.0171 / 0.0193          5.6e-25 / ~0 (below delta = 1e-5)
====================  =======================  =======================

Over all add/remove pairs with the largest shift at sizes ``n0 = 1..9`` (and smaller shifts at
``n0 = 1``) the divergence is largest at this pair, for both eps. The correct mechanisms also
get the pair ``[[0.0]]`` vs ``[[0.0], [1.0]]``, where the sum changes too: there the privacy loss of
``dp-laplace`` reaches eps (0.99987 at eps = 1) with ``H_{e^eps} = 0`` (up to 1e-18), and
``dp-gaussian`` has ``H_{e^eps} = 8e-9`` at eps = 1, below delta = 1e-5. At the first pair both
have ``H_{e^eps} = 0``.

References
----------
Paper 000 (DP-Auditorium), §6.1 "Evaluated mechanisms" and Table 1. Dwork, McSherry, Nissim, Smith
(2006), the Laplace mechanism. Dwork & Roth (2014), "The Algorithmic Foundations of Differential
Privacy": Thm 3.6 (Laplace mechanism), Thm 3.16 and §3.5 (basic composition, also for adaptively
chosen mechanisms), Prop. 2.1 (post-processing), Thm A.1 (Gaussian mechanism, eps < 1).
"""

from __future__ import annotations

import math

import numpy as np

from ._common import ZooMechanism, records

__all__ = [
    "DPGaussian",
    "DPLaplace",
    "NonDPGaussian1",
    "NonDPGaussian2",
    "NonDPLaplace1",
    "NonDPLaplace2",
    "gaussian_sigma_factor",
    "noisy_count",
]

WITNESS = ([[1.0]], [[1.0], [0.0]])
# Where the sum changes as well as the count: the privacy loss of the correct mechanisms reaches
# epsilon here (the first pair only exercises the count).
WITNESS_SUM = ([[0.0]], [[0.0], [1.0]])


def gaussian_sigma_factor(delta: float) -> float:
    """``sqrt(2 ln(1.25/delta))``: the Gaussian-mechanism noise multiplier (Dwork & Roth 2014, Thm A.1).

    ``sigma = gaussian_sigma_factor(delta) * sensitivity / epsilon`` gives (epsilon, delta)-DP for
    ``0 < epsilon < 1`` (the theorem asks for a constant strictly above this factor and epsilon < 1;
    the boundary cases follow because the hockey-stick divergence is continuous in sigma and
    epsilon).
    """
    return math.sqrt(2.0 * math.log(1.25 / delta))


def noisy_count(n: int, epsilon: float, num_samples: int, rng: np.random.Generator) -> np.ndarray:
    """``max(1, n + Laplace(0, 2/epsilon))`` for ``num_samples`` independent runs.

    The count has sensitivity 1 under add/remove, so ``n + Laplace(2/epsilon)`` is
    (epsilon/2)-DP (Dwork & Roth 2014, Thm 3.6); the clamp at 1 is post-processing.

    Returns
    -------
    ndarray of float, shape (num_samples,), every value >= 1.
    """
    return np.maximum(1.0, n + rng.laplace(0.0, 2.0 / epsilon, size=num_samples))


class _MeanMechanism(ZooMechanism):
    """The family: ``S / count + noise``, the noise of scale ``factor * 2 / (count' eps)``.

    A member says which count divides the sum (``divide_by``) and which one calibrates the noise
    (``scale_by``): ``"noisy"`` for ``n_tilde`` (:func:`noisy_count`, half the budget) or
    ``"true"`` for the private ``n`` (the bugs); the noise is Laplace (``factor`` 1) or, for
    :class:`_GaussianMean`, Gaussian (``factor`` ``c(delta)``, standard deviation).
    """

    name = "mean"
    divide_by = "noisy"
    scale_by = "noisy"

    def _noise_factor(self) -> float:
        return 1.0

    def _noise(self, rng: np.random.Generator, scale, num_samples: int) -> np.ndarray:
        return rng.laplace(0.0, scale, size=num_samples)

    def sample(self, dataset: np.ndarray, num_samples: int, rng: np.random.Generator) -> np.ndarray:
        """Release ``num_samples`` noisy means (vectorised).

        Returns
        -------
        ndarray of float, shape (num_samples, 1)

        Raises
        ------
        ValueError
            If the records are not scalars or not finite, or (true count used) the dataset is empty.
        """
        n, s = self._count_and_sum(dataset, needs_records="true" in (self.divide_by, self.scale_by))
        n_tilde = noisy_count(n, self.epsilon, num_samples, rng) if "noisy" in (self.divide_by, self.scale_by) else None
        count = {"noisy": n_tilde, "true": n}
        scale = self._noise_factor() * 2.0 / (count[self.scale_by] * self.epsilon)
        out = s / count[self.divide_by] + self._noise(rng, scale, num_samples)
        return out.reshape(-1, 1)

    def _count_and_sum(self, dataset: np.ndarray, *, needs_records: bool) -> tuple[int, float]:
        arr = records(dataset, 1, self.name, "releases a mean of scalar records")
        n = arr.shape[0]
        if needs_records and n == 0:
            raise ValueError(f"{self.name} divides by the true count and needs at least one record; got 0")
        return n, float(arr.sum())

    def __repr__(self) -> str:
        extra = f", delta={self.delta:g}" if self.needs_delta else ""
        return f"{type(self).__name__}(epsilon={self.epsilon:g}{extra})"


class _GaussianMean(_MeanMechanism):
    """Shared parts of the Gaussian means: delta in (0, 1) is required, default 1e-5."""

    needs_delta = True

    def __init__(self, epsilon: float, delta: float = 1e-5):
        super().__init__(epsilon, delta)

    def _noise_factor(self) -> float:
        return gaussian_sigma_factor(self.delta)

    def _noise(self, rng: np.random.Generator, scale, num_samples: int) -> np.ndarray:
        return rng.normal(0.0, scale, size=num_samples)


class DPLaplace(_MeanMechanism):
    """Correct Laplace mean: ``S/n_tilde + Laplace(0, 2/(n_tilde eps))``, ``n_tilde = max(1, n + Lap(2/eps))``.

    Claim: eps-DP under add/remove (paper 000 §6.1, "DPLaplace").
    Bug: none.
    True guarantee: eps-DP. The noisy count is (eps/2)-DP (count sensitivity 1, Laplace scale
    2/eps; Dwork & Roth 2014, Thm 3.6) and the clamp at 1 is post-processing (Prop. 2.1). For every
    fixed ``n_tilde``, ``S/n_tilde`` has sensitivity ``1/n_tilde`` (one record in [0, 1] added or
    removed), so ``S/n_tilde + Lap(2/(n_tilde eps))`` is (eps/2)-DP; basic composition, which holds
    for the adaptively chosen second step (Dwork & Roth 2014, Thm 3.16, §3.5), gives eps.
    Relation: add/remove, records in [0, 1], sizes 1..10.
    Witness pairs: ``[[1.0]]`` vs ``[[1.0], [0.0]]`` (where the buggy variants fail) and
    ``[[0.0]]`` vs ``[[0.0], [1.0]]`` (privacy loss reaches eps; ``H_{e^eps} = 0``).

    Parameters
    ----------
    epsilon : float
        Total privacy parameter in nats, ``> 0``.
    delta : float, optional
        Ignored (pure DP); accepted so that every zoo factory has the signature ``(epsilon, delta)``.

    Raises
    ------
    ValueError
        If epsilon is not finite and > 0, or delta is outside [0, 1).
    """

    name = "dp-laplace"


class NonDPLaplace1(_MeanMechanism):
    """Buggy Laplace mean that uses the true count everywhere: ``S/n + Laplace(0, 2/(n eps))``.

    Claim: eps-DP under add/remove (paper 000 §6.1, "NonDPLaplace1").
    Bug: the noise scale ``2/(n eps)`` depends on the private count ``n``. On D and D + {x} the
    outputs are Laplace with different scales, so the log density ratio grows linearly in ``|x|``
    and the privacy loss is unbounded in the tails.
    True guarantee: no finite pure-DP guarantee under add/remove (the loss is unbounded). At the
    witness pair the outputs are ``Lap(1, 2/eps)`` vs ``Lap(1/2, 1/eps)``:
    ``H_{e^eps} = 0.2475`` (D0||D1) at eps = 0.01 and ``0.1037`` at eps = 1. (Under replace-one
    adjacency with a public n it would be (eps/2)-DP: sensitivity 1/n, scale 2/(n eps).)
    Relation: add/remove, records in [0, 1], sizes 1..10.
    Witness pair: ``[[1.0]]`` vs ``[[1.0], [0.0]]`` (largest divergence among the pairs checked).

    Parameters and Raises as :class:`DPLaplace`.
    """

    name = "non-dp-laplace-1"
    divide_by = scale_by = "true"


class NonDPLaplace2(_MeanMechanism):
    """Buggy Laplace mean, noisy count for the scale only: ``S/n + Laplace(0, 2/(n_tilde eps))``.

    Claim: eps-DP under add/remove (paper 000 §6.1, "NonDPLaplace2").
    Bug: the mean uses the true count ``n`` while the noise is calibrated to the noisy count. The
    sensitivity of ``S/n`` is up to ``1/(n+1)`` (1/2 at n = 1 -> 2), but ``n_tilde`` is often far
    larger than ``n`` (at eps = 0.01, ``tau`` has scale 200), so the noise is far too small.
    True guarantee: none at the claimed level for small eps. At the witness pair
    ``H_{e^eps} = 0.0974 / 0.0995`` (D0||D1 / D1||D0) at eps = 0.01, and its privacy loss reaches
    about 0.81 nats against the 0.01 claimed. The violation at the witness pair shrinks as eps
    grows and disappears near eps = 0.95 (H = 0.036 at 0.5, 1.9e-7 at 0.95, 0 at 0.97): at
    eps = 1 the privacy loss stays below 0.97 nats at every largest-shift pair of sizes 1..10, so
    the mechanism is not caught there (paper 000, Table 1, reports no tester flagging it at
    eps = 1). Numerical results, from fine-grid integration of the output densities.
    Relation: add/remove, records in [0, 1], sizes 1..10.
    Witness pair: ``[[1.0]]`` vs ``[[1.0], [0.0]]`` (largest divergence among the pairs checked).

    Parameters and Raises as :class:`DPLaplace`.
    """

    name = "non-dp-laplace-2"
    divide_by = "true"


class DPGaussian(_GaussianMean):
    """Correct Gaussian mean: ``S/n_tilde + N(0, sigma^2)``, ``sigma = c(delta) * 2/(n_tilde eps)``.

    ``n_tilde = max(1, n + Laplace(2/eps))`` and ``c(delta) = sqrt(2 ln(1.25/delta))``.

    Claim: (eps, delta)-DP under add/remove, for ``eps <= 2``.
    Bug: none (the Gaussian counterpart of :class:`DPLaplace`, added to the paper's list).
    True guarantee: (eps, delta)-DP for ``0 < eps <= 2``. The noisy count is (eps/2, 0)-DP. For
    fixed ``n_tilde``, ``S/n_tilde`` has sensitivity ``1/n_tilde`` and
    ``sigma = c(delta) (1/n_tilde)/(eps/2)`` is the classic Gaussian mechanism at (eps/2, delta),
    valid for ``eps/2 < 1`` (Dwork & Roth 2014, Thm A.1) and at ``eps/2 = 1`` by continuity of the
    hockey-stick divergence in eps. Basic composition gives (eps, delta). For eps > 2 the
    calibration is not valid and the constructor refuses.
    Relation: add/remove, records in [0, 1], sizes 1..10.
    Witness pairs: as :class:`DPLaplace`; at ``[[0.0]]`` vs ``[[0.0], [1.0]]``,
    ``H_{e^eps} = 8e-9`` at eps = 1 (<< delta = 1e-5).

    Parameters
    ----------
    epsilon : float
        Total privacy parameter in nats, ``0 < epsilon <= 2``.
    delta : float
        ``0 < delta < 1``; default 1e-5.

    Raises
    ------
    ValueError
        If epsilon is not finite and > 0, if epsilon > 2, or if delta is outside (0, 1).
    """

    name = "dp-gaussian"
    MAX_EPSILON = 2.0

    def __init__(self, epsilon: float, delta: float = 1e-5):
        super().__init__(epsilon, delta)
        if self.epsilon > self.MAX_EPSILON:
            raise ValueError(
                f"{self.name}: epsilon must be <= {self.MAX_EPSILON:g}, got {epsilon!r}: the Gaussian "
                f"step runs at epsilon/2 and sigma = sqrt(2 ln(1.25/delta)) * sensitivity / (epsilon/2) "
                f"is (epsilon/2, delta)-DP only for epsilon/2 <= 1 (Dwork & Roth 2014, Thm A.1)"
            )


class NonDPGaussian1(_GaussianMean):
    """Buggy Gaussian mean with the true count everywhere: ``S/n + N(0, (c(delta) 2/(n eps))^2)``.

    Claim: (eps, delta)-DP under add/remove (paper 000 §6.1, "NonDPGaussian1").
    Bug: as :class:`NonDPLaplace1`: the noise scale depends on the private count, so D and D + {x}
    give Gaussians of different variances and the privacy loss is unbounded (quadratic in the
    output) in the tails.
    True guarantee: no (eps, delta)-DP guarantee with a small delta. At the witness pair, outputs
    ``N(1, (2c/eps)^2)`` vs ``N(1/2, (c/eps)^2)`` with ``c = c(1e-5) = 4.84``:
    ``H_{e^eps} = 0.3209`` (D0||D1) at eps = 0.01 and ``0.1976`` at eps = 1, against delta = 1e-5.
    Relation: add/remove, records in [0, 1], sizes 1..10.
    Witness pair: ``[[1.0]]`` vs ``[[1.0], [0.0]]`` (largest divergence among the pairs checked).

    Parameters
    ----------
    epsilon : float
        Privacy parameter in nats, ``> 0``.
    delta : float
        ``0 < delta < 1``; default 1e-5.

    Raises
    ------
    ValueError
        If epsilon is not finite and > 0, or delta is outside (0, 1).
    """

    name = "non-dp-gaussian-1"
    divide_by = scale_by = "true"


class NonDPGaussian2(_GaussianMean):
    """Buggy Gaussian mean, noisy count for the scale only: ``S/n + N(0, (c(delta) 2/(n_tilde eps))^2)``.

    Claim: (eps, delta)-DP under add/remove (paper 000 §6.1, "NonDPGaussian2").
    Bug: as :class:`NonDPLaplace2`: the mean uses the true count while sigma uses the noisy count,
    which is often far larger than ``n`` at small eps.
    True guarantee: none at the claimed level for small eps. At the witness pair
    ``H_{e^eps} = 0.0171 / 0.0193`` (D0||D1 / D1||D0) at eps = 0.01, against delta = 1e-5. The
    violation shrinks with eps (H = 7.8e-3 at 0.1, 4.5e-4 at 0.18, 5.7e-5 at 0.19) and is gone
    by eps = 0.2 (H ~ 1e-25); at eps = 1 it is 5.6e-25 at the witness pair and below 1e-50 at the
    other largest-shift pairs of sizes up to 10, so the mechanism meets its (1, 1e-5) claim there
    (paper 000, Table 1: no tester flags it at eps = 1). Numerical results, from fine-grid
    integration of the output densities.
    Relation: add/remove, records in [0, 1], sizes 1..10.
    Witness pair: ``[[1.0]]`` vs ``[[1.0], [0.0]]`` (largest divergence among the pairs checked).

    Parameters and Raises as :class:`NonDPGaussian1`.
    """

    name = "non-dp-gaussian-2"
    divide_by = "true"
