"""A certified lower bound on the privacy loss of shuffled fixed-size batches (``shuffled-batches``).

Chua et al. (2024) show that DP-SGD with batches drawn from a shuffle (every example in exactly
one of ``b`` steps per epoch) can lose far more privacy than the Poisson accountant it is usually
accounted with says, at small noise. :func:`shuffled_epsilon_lower_bound` lower-bounds the true
epsilon of shuffling for the pair of output laws one example's own coordinate sees (the lower-bound
pair of Chua et al.): per epoch, ``b`` Gaussian observations of standard deviation ``sigma``, one
of them (a uniformly random step) shifted by ``sensitivity`` with the example, none without;
epochs independent. Any test of that pair lower-bounds the mechanism's hockey-stick divergence
(post-processing), so the bound holds for every implementation with that per-epoch structure.

The test is ``S = sum over epochs of the largest observation > tau``. The law of the per-epoch
maximum is known in closed form under both hypotheses (``Phi((x - s) / sigma) Phi(x / sigma)^(b-1)``
and ``Phi(x / sigma)^b``); it is put on a grid rounding *down* under the "with" law and *up*
under the "without" law (mass beyond the grid: dropped, resp. counted as exceeding every
threshold), so the convolved tails are a lower bound on ``P(S > tau)`` and an upper bound on
``Q(S > tau)``; then ``eps >= max_tau ln((P(S > tau) - delta) / Q(S > tau))``. Deterministic
numerics, no sampling: the bound errs low by construction (a slack of ``1e-12`` on ``Q`` covers
floating-point error).

``sensitivity = 1`` is the canary's own coordinate with nothing else in it (the gradient canary
of :mod:`dpaudit.dpsgd.reference`). ``sensitivity = 2`` is the displacement construction: with
fixed-size batches an added example takes a slot, so when every other example is crafted to
oppose its coordinate (gradient ``-C`` there) and the last partial batch is dropped, the step
it lands in moves by ``2C`` (its ``+C`` and the displaced ``-C``); that pair holds with
probability ``N / (N + 1)`` per epoch (the added example itself may be the one dropped), which
the caller accounts for with ``with_probability``.
"""

from __future__ import annotations

import math

import numpy as np

from .._validate import check_delta, check_int, check_positive, check_rate

__all__ = ["shuffled_epsilon_lower_bound"]


def shuffled_epsilon_lower_bound(noise_multiplier: float, batches: int, epochs: int, delta: float = 1e-5, *,
                                 sensitivity: float = 1.0, with_probability: float = 1.0,
                                 grid_step: float | None = None) -> float:
    """Certified lower bound on the epsilon of shuffled batches (Chua et al. 2024's pair).

    Parameters
    ----------
    noise_multiplier : float
        ``sigma > 0`` (noise standard deviation in units of the clipping norm).
    batches : int
        Steps per epoch ``b >= 1`` (the Poisson accountant's ``q`` is ``1 / b``).
    epochs : int
        Number of epochs ``E >= 1`` (``E b`` steps).
    delta : float
        In (0, 1).
    sensitivity : float
        Shift of the one step the example is in, in units of ``C`` (1: a lone canary coordinate;
        2: the displacement construction of the module docstring).
    with_probability : float
        Probability, per epoch, that the shifted step happens at all under the "with" law
        (``N / (N + 1)`` for the displacement construction); the rest of the mass counts as
        the "without" law. 1 for a lone canary.
    grid_step : float, optional
        Grid of the per-epoch maximum (default ``sigma / 25``); finer is tighter and slower.

    Returns
    -------
    float
        ``eps >= 0`` with ``H_{e^eps}(P || Q) > delta`` certified (by exact arithmetic up to
        floating point; no confidence level).

    Raises
    ------
    ValueError
        On non-positive sigma or sensitivity, bad counts, delta or probability.

    References
    ----------
    Chua, Ghazi, Kamath, Kumar, Manurangsi, Sinha, Zhang (2024), *How private are DP-SGD
    implementations?* (ICML), the lower-bound pair for shuffled batches; ``docs/dpsgd.md`` §3.
    """
    from scipy.stats import norm

    sigma = check_positive(noise_multiplier, "noise_multiplier")
    b = check_int(batches, "batches")
    E = check_int(epochs, "epochs")
    delta = check_delta(delta)
    s = check_positive(sensitivity, "sensitivity")
    w = check_rate(with_probability, "with_probability")
    h = sigma / 25.0 if grid_step is None else check_positive(grid_step, "grid_step")
    lo = -2.0 * sigma
    hi = s + sigma * (9.0 + math.sqrt(2.0 * math.log(b + 1.0)))
    x = np.arange(lo, hi + h, h)
    log_q = b * norm.logcdf(x / sigma)
    cdf_p = w * np.exp(norm.logcdf((x - s) / sigma) + (b - 1) * norm.logcdf(x / sigma)) + (1.0 - w) * np.exp(log_q)
    # "with": mass of [x_k, x_k+1) at x_k, above the grid at its top, below it dropped (rounded down).
    p = np.append(np.diff(cdf_p), 1.0 - cdf_p[-1])
    # "without": mass of (x_k-1, x_k] at x_k, below the grid at x_0, above it exceeds everything.
    sf_q = -np.expm1(log_q)
    q = np.empty_like(x)
    q[0], q[1:] = 1.0 - sf_q[0], sf_q[:-1] - sf_q[1:]
    P, Q = np.maximum(p, 0.0), np.maximum(q, 0.0)
    for _ in range(E - 1):
        P, Q = np.convolve(P, np.maximum(p, 0.0)), np.convolve(Q, np.maximum(q, 0.0))
    tail_p = np.cumsum(P[::-1])[::-1]
    tail_q = np.cumsum(Q[::-1])[::-1] + E * sf_q[-1] + 1e-12
    ok = tail_p > delta
    if not ok.any():
        return 0.0
    eps = np.log(tail_p[ok] - delta) - np.log(tail_q[ok])
    return max(0.0, float(eps.max()))
