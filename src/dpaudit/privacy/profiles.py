"""Privacy profiles, trade-off functions and Gaussian-DP conversions.

Vocabulary (all epsilons in nats):

* **privacy profile** ``delta(eps) = H_{e^eps}(P || Q) = sup_S P(S) - e^eps Q(S)`` of a pair of
  output distributions (Balle, Barthe, Gaboardi 2018, Thm 1; paper 001 §2.1, Lemma 2): a mechanism
  is ``(eps, delta)``-DP iff its worst pair's profile is at most ``delta`` at ``eps``;
* **trade-off function** ``T(P, Q)(a) = inf {beta_phi : alpha_phi <= a}`` with type I error
  ``alpha_phi = E_P[phi]`` and type II error ``beta_phi = 1 - E_Q[phi]`` (Dong, Roth, Su 2022,
  Def. 2.1; paper 001 Def. 4): a mechanism is f-DP if ``T >= f`` on every neighbouring pair;
* **Gaussian DP** (GDP): ``mu``-GDP is f-DP with ``f_mu(a) = Phi(Phi^{-1}(1 - a) - mu)``, the
  trade-off function of ``N(0, 1)`` vs ``N(mu, 1)`` (Dong et al. 2022, Def. 2.6; paper 001 Def. 8).

A profile given for ``eps >= 0`` and both directions (``P||Q`` and ``Q||P``, as add/remove or
replace neighbouring implies) converts to the symmetric trade-off function of paper 001 Lemma 7
(Dong et al. 2022, Prop. 2.12)::

    f(a) = sup_{eps >= 0} max(0, 1 - delta(eps) - e^eps a, e^{-eps} (1 - delta(eps) - a)).

Analytic profiles are given for the Gaussian mechanism (Balle & Wang 2018, Thm 8), the Laplace
mechanism (closed form derived in ``docs/scores.md`` §5; trade-off function Dong et al. 2022,
Lemma A.6) and the Poisson-subsampled Gaussian mechanism (one step in closed form, ``T`` steps
numerically through dp_accounting's privacy loss distributions, Koskela et al. 2021 /
Doroshenko et al. 2022).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

from .._validate import check_array, check_delta, check_epsilon, check_int, check_positive, check_rate
from .events import event_from_runs, event_runs, leaf_event, pld_from_event

__all__ = [
    "GaussianProfile",
    "LaplaceProfile",
    "SubsampledGaussianProfile",
    "epsilon_from_profile",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_tradeoff",
    "gdp_mu_for_profile",
    "laplace_delta",
    "laplace_epsilon",
    "laplace_tradeoff",
    "mu_from_rates",
    "mu_from_tv",
    "subsampled_gaussian_delta",
    "subsampled_gaussian_epsilon",
    "tradeoff_from_profile",
    "tv_from_mu",
]


# --------------------------------------------------------------------------- validation helpers


def _check_mu(mu) -> float:
    """A GDP parameter: finite and ``>= 0`` (the same range as an epsilon)."""
    return check_epsilon(mu, "mu")


def _out(x):
    x = np.asarray(x, dtype=float)
    return float(x) if x.ndim == 0 else x


def _exp_times_ndtr(eps, z):
    """``e^eps Phi(z)`` computed in log space (no overflow for large eps)."""
    return np.exp(eps + special.log_ndtr(z))


def _profile_difference(log_a, eps, log_b):
    """``exp(log_a) - exp(eps + log_b)`` without catastrophic overflow, clipped at 0."""
    with np.errstate(over="ignore", invalid="ignore"):
        diff = eps + log_b - log_a
        out = np.where(diff < 0.0, np.exp(log_a) * -np.expm1(np.minimum(diff, 0.0)), 0.0)
    return np.maximum(out, 0.0)


# --------------------------------------------------------------------------- Gaussian DP


def gaussian_delta(epsilon, mu):
    """Privacy profile of ``mu``-GDP: ``H_{e^eps}(N(mu, 1) || N(0, 1))``.

    ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` (Balle & Wang 2018, Thm 8;
    Dong et al. 2022, Cor. 2.13; paper 001 Lemma 3). The Gaussian mechanism with sensitivity
    ``Delta`` and noise standard deviation ``sigma`` has ``mu = Delta / sigma``. The pair is
    symmetric, so the same value holds for ``Q||P``.

    Parameters
    ----------
    epsilon : float or array
        Epsilon(s) in nats, any real value; any shape.
    mu : float
        GDP parameter, ``> 0`` (``mu = 0`` returns ``max(0, 1 - e^eps)``).

    Returns
    -------
    float or ndarray
        ``delta(eps)`` in ``[0, 1]``, same shape as ``epsilon``.

    Raises
    ------
    ValueError
        If mu is negative or not finite, or epsilon contains NaN.
    """
    mu = _check_mu(mu)
    eps = check_array(epsilon, "epsilon")
    if mu == 0.0:
        return _out(np.maximum(0.0, -np.expm1(eps)))
    a = special.log_ndtr(-eps / mu + mu / 2.0)
    b = special.log_ndtr(-eps / mu - mu / 2.0)
    return _out(_profile_difference(a, eps, b))


def gaussian_epsilon(delta, mu) -> float:
    """Smallest ``eps >= 0`` with ``gaussian_delta(eps, mu) <= delta`` (``mu``-GDP at ``delta``).

    Parameters
    ----------
    delta : float
        Target delta in (0, 1).
    mu : float
        GDP parameter ``>= 0``.

    Returns
    -------
    float
        Epsilon in nats (0 if the profile is already below ``delta`` at 0).

    Raises
    ------
    ValueError
        If delta is outside (0, 1) or mu is invalid.

    References
    ----------
    Balle & Wang (2018), Thm 8 (the profile is decreasing in eps, so bisection is exact).
    """
    delta = check_delta(delta)
    mu = _check_mu(mu)
    if gaussian_delta(0.0, mu) <= delta:
        return 0.0
    hi = max(1.0, mu * mu)
    while gaussian_delta(hi, mu) > delta:
        hi *= 2.0
    return float(optimize.brentq(lambda e: gaussian_delta(e, mu) - delta, 0.0, hi, xtol=1e-12, rtol=1e-12))


def gaussian_tradeoff(alpha, mu):
    """Trade-off function of ``mu``-GDP: ``f_mu(a) = Phi(Phi^{-1}(1 - a) - mu)``.

    Parameters
    ----------
    alpha : float or array
        Type I error(s) in [0, 1]; any shape.
    mu : float
        GDP parameter ``>= 0``.

    Returns
    -------
    float or ndarray
        Smallest achievable type II error, same shape as ``alpha``.

    Raises
    ------
    ValueError
        If alpha is outside [0, 1] or mu is invalid.

    References
    ----------
    Dong, Roth, Su (2022), Def. 2.6; paper 001 Def. 8.
    """
    a = check_array(alpha, "alpha (type I error)", low=0.0, high=1.0)
    mu = _check_mu(mu)
    return _out(special.ndtr(special.ndtri(1.0 - a) - mu))


def tv_from_mu(mu):
    """Total variation of ``N(0,1)`` and ``N(mu,1)``: ``2 Phi(mu/2) - 1`` (paper 001 eq. (5.1)).

    Parameters
    ----------
    mu : float or array
        GDP parameter(s) ``>= 0``.

    Returns
    -------
    float or ndarray
        TV distance in [0, 1).

    Raises
    ------
    ValueError
        If ``mu`` is negative or not finite.
    """
    m = np.asarray(mu, dtype=float)
    if np.any(~np.isfinite(m)) or np.any(m < 0):
        raise ValueError(f"mu must be finite and >= 0, got {mu!r}")
    return _out(2.0 * special.ndtr(m / 2.0) - 1.0)


def mu_from_tv(tv):
    """GDP parameter whose total variation equals ``tv``: ``mu = 2 Phi^{-1}((1 + tv)/2)``.

    Inverse of :func:`tv_from_mu`. Because a ``mu'``-GDP mechanism has total variation at most
    ``2 Phi(mu'/2) - 1`` on every neighbouring pair (TV is the hockey-stick divergence at eps = 0),
    a lower confidence bound ``tv_lb`` on the TV of one pair gives a lower bound
    ``mu_from_tv(tv_lb)`` on the GDP parameter of any GDP guarantee the mechanism satisfies, at the
    same confidence (paper 001 §7; derived in ``docs/scores.md`` §4).

    Parameters
    ----------
    tv : float or array
        Total variation(s); values ``<= 0`` give 0, values ``>= 1`` give ``inf``.

    Returns
    -------
    float or ndarray
        ``mu >= 0``.

    Raises
    ------
    ValueError
        If tv contains NaN.
    """
    t = np.asarray(tv, dtype=float)
    if np.any(np.isnan(t)):
        raise ValueError(f"tv must not be NaN, got {tv!r}")
    t = np.clip(t, 0.0, 1.0)
    with np.errstate(divide="ignore"):
        return _out(2.0 * special.ndtri((1.0 + t) / 2.0))


def mu_from_rates(fpr, fnr):
    """GDP parameter implied by one test's error rates: ``Phi^{-1}(1 - fpr) - Phi^{-1}(fnr)``.

    A ``mu``-GDP mechanism has ``fnr >= f_mu(fpr)``, i.e. ``mu >= Phi^{-1}(1 - fpr) -
    Phi^{-1}(fnr)``; with upper confidence bounds on ``fpr`` and ``fnr`` this is the GDP audit of
    Nasr et al. (2023, §5) and paper 001 eq. (2.4). Negative values mean no evidence; they are
    returned as they are (callers clip at 0 — never take an absolute value).

    Parameters
    ----------
    fpr, fnr : float or array
        False positive / false negative rates in [0, 1] (broadcast together).

    Returns
    -------
    float or ndarray
        The implied ``mu`` (may be negative or infinite).

    Raises
    ------
    ValueError
        If ``fpr`` or ``fnr`` is outside ``[0, 1]``.
    """
    f = np.asarray(fpr, dtype=float)
    g = np.asarray(fnr, dtype=float)
    if np.any(~np.isfinite(f)) or np.any(~np.isfinite(g)) or np.any((f < 0) | (f > 1)) or np.any((g < 0) | (g > 1)):
        raise ValueError(f"fpr and fnr must lie in [0, 1], got fpr={fpr!r}, fnr={fnr!r}")
    with np.errstate(divide="ignore", invalid="ignore"):
        return _out(special.ndtri(1.0 - f) - special.ndtri(g))


# --------------------------------------------------------------------------- Laplace


def _laplace_epsilon0(epsilon0, scale) -> float:
    """``epsilon0`` given directly or as ``1 / scale`` (sensitivity 1); exactly one of the two."""
    if (epsilon0 is None) == (scale is None):
        raise ValueError(f"give exactly one of epsilon0 and scale, got epsilon0={epsilon0!r}, scale={scale!r}")
    if scale is not None:
        return 1.0 / check_positive(scale, "scale")
    return check_positive(epsilon0, "epsilon0")


def laplace_delta(epsilon, epsilon0=None, *, scale=None):
    """Privacy profile of the Laplace mechanism with ``epsilon0 = sensitivity / scale``.

    ``delta(eps) = 1 - e^{(eps - eps0)/2}`` for ``|eps| <= eps0``, ``0`` for ``eps > eps0`` and
    ``1 - e^eps`` for ``eps < -eps0`` (derivation in ``docs/scores.md`` §5; same value for both
    directions by symmetry).

    Parameters
    ----------
    epsilon : float or array
        Epsilon(s) in nats, any shape.
    epsilon0 : float
        ``Delta / b > 0``: the mechanism's pure-DP epsilon.
    scale : float, keyword-only
        Instead of ``epsilon0``: the noise scale ``b > 0`` of a sensitivity-1 Laplace mechanism
        (``epsilon0 = 1 / b``; dp_accounting's ``LaplaceDpEvent(noise_multiplier=b)``).

    Returns
    -------
    float or ndarray
        ``delta(eps)``, same shape as ``epsilon``.

    Raises
    ------
    ValueError
        If epsilon0 (or scale) is not finite and positive, or both or neither are given.
    """
    e0 = _laplace_epsilon0(epsilon0, scale)
    eps = check_array(epsilon, "epsilon")
    mid = -np.expm1((np.clip(eps, -e0, e0) - e0) / 2.0)
    out = np.where(eps > e0, 0.0, np.where(eps < -e0, -np.expm1(np.minimum(eps, 0.0)), mid))
    return _out(np.maximum(out, 0.0))


def laplace_epsilon(delta, epsilon0=None, *, scale=None) -> float:
    """Smallest ``eps >= 0`` at which the Laplace mechanism's profile is ``<= delta``.

    Inverts :func:`laplace_delta`: ``eps = max(0, eps0 + 2 ln(1 - delta))``; ``epsilon0`` or
    ``scale`` as there.

    Raises
    ------
    ValueError
        If delta is outside (0, 1) or epsilon0 / scale is invalid.
    """
    delta = check_delta(delta)
    e0 = _laplace_epsilon0(epsilon0, scale)
    return max(0.0, e0 + 2.0 * math.log1p(-delta))


def laplace_tradeoff(alpha, epsilon0=None, *, scale=None):
    """Trade-off function of the Laplace mechanism (Dong et al. 2022, Lemma A.6; paper 001 App. C).

    ``f(a) = 1 - e^{eps0} a`` for ``a < e^{-eps0}/2``; ``e^{-eps0} / (4a)`` for
    ``e^{-eps0}/2 <= a <= 1/2``; ``e^{-eps0} (1 - a)`` for ``a > 1/2``.

    Parameters
    ----------
    alpha : float or array
        Type I error(s) in [0, 1].
    epsilon0 : float
        ``Delta / b > 0``.
    scale : float, keyword-only
        Instead of ``epsilon0``: the scale ``b`` of a sensitivity-1 mechanism (``epsilon0 = 1/b``).

    Returns
    -------
    float or ndarray
        Type II error, same shape as ``alpha``.
    """
    a = check_array(alpha, "alpha (type I error)", low=0.0, high=1.0)
    e0 = _laplace_epsilon0(epsilon0, scale)
    t = math.exp(-e0)
    with np.errstate(divide="ignore"):
        out = np.where(a < t / 2.0, 1.0 - a / t, np.where(a <= 0.5, t / (4.0 * np.maximum(a, 1e-300)), t * (1.0 - a)))
    return _out(np.clip(out, 0.0, 1.0))


# --------------------------------------------------------------------------- subsampled Gaussian


def _subsampled_gaussian_one_step(eps, sigma: float, q: float, direction: str) -> np.ndarray:
    """Exact ``H_{e^eps}`` of ``P = (1-q) N(0, s^2) + q N(1, s^2)`` and ``Q = N(0, s^2)``.

    The likelihood ratio ``L(x) = p(x)/q(x) = (1 - q) + q exp((2x - 1)/(2 s^2))`` is increasing.
    ``P||Q`` at ``a = e^eps``: the set ``{L > a}`` is ``x > x*``,
    ``x* = s^2 ln((a - 1 + q)/q) + 1/2`` (all of R when ``a <= 1 - q``), and
    ``H = (1-q) Phibar(x*/s) + q Phibar((x*-1)/s) - a Phibar(x*/s)``.
    ``Q||P``: the set ``{L < 1/a}`` is ``x < x'`` with ``x' = s^2 ln((1/a - 1 + q)/q) + 1/2``
    (empty when ``1/a <= 1 - q``), and ``H = Phi(x'/s) - a ((1-q) Phi(x'/s) + q Phi((x'-1)/s))``.
    """
    eps = np.asarray(eps, dtype=float)
    a = np.exp(eps)
    s = sigma
    out_pq = np.zeros_like(a)
    out_qp = np.zeros_like(a)
    if direction in ("both", "P||Q"):
        with np.errstate(divide="ignore", invalid="ignore"):
            xs = s * s * np.log((a - 1.0 + q) / q) + 0.5
        whole = a <= 1.0 - q
        xs = np.where(whole, -np.inf, xs)
        tail0 = special.ndtr(-xs / s)
        tail1 = special.ndtr(-(xs - 1.0) / s)
        val = (1.0 - q - a) * tail0 + q * tail1
        out_pq = np.where(whole, 1.0 - a, val)
    if direction in ("both", "Q||P"):
        inv = np.exp(-eps)
        empty = inv <= 1.0 - q
        with np.errstate(divide="ignore", invalid="ignore"):
            xp = s * s * np.log(np.where(empty, 1.0, (inv - 1.0 + q) / q)) + 0.5
        c0 = special.ndtr(xp / s)
        c1 = special.ndtr((xp - 1.0) / s)
        val = c0 - a * ((1.0 - q) * c0 + q * c1)
        out_qp = np.where(empty, 0.0, val)
    return np.clip(np.maximum(out_pq, out_qp), 0.0, 1.0)


def _check_subsampled(sigma, sampling_rate, steps) -> tuple[float, float, int]:
    return (check_positive(sigma, "sigma"), check_rate(sampling_rate, "sampling_rate"),
            check_int(steps, "steps", minimum=1))


def subsampled_gaussian_delta(
    epsilon,
    sigma,
    sampling_rate,
    steps: int = 1,
    *,
    direction: str = "both",
    value_discretization_interval: float = 1e-3,
):
    """Privacy profile of the Poisson-subsampled Gaussian mechanism (sensitivity 1).

    The dominating pair of one step under add/remove neighbouring is
    ``P = (1 - q) N(0, sigma^2) + q N(1, sigma^2)`` and ``Q = N(0, sigma^2)`` (paper 001 §3, §5.2;
    Koskela et al. 2021). One step (``steps = 1``) is computed in closed form (see
    ``_subsampled_gaussian_one_step``); ``steps > 1`` composes the pair numerically with
    dp_accounting's privacy loss distribution (``from_gaussian_mechanism`` with
    ``sampling_prob``, then ``self_compose``), whose pessimistic discretisation makes the value an
    upper estimate of the exact profile (error shrinks with ``value_discretization_interval``).

    Parameters
    ----------
    epsilon : float or array
        Epsilon(s) in nats, ``>= 0`` for ``steps > 1``; any shape.
    sigma : float
        Noise standard deviation (noise multiplier), ``> 0``.
    sampling_rate : float
        Poisson sampling probability ``q`` in (0, 1].
    steps : int
        Number of composed steps ``T >= 1``.
    direction : {"both", "P||Q", "Q||P"}
        Which divergence: ``H(P||Q)`` (remove), ``H(Q||P)`` (add) or their maximum (the
        mechanism's profile under add/remove neighbouring).
    value_discretization_interval : float
        PLD discretisation (nats) for ``steps > 1``.

    Returns
    -------
    float or ndarray
        ``delta(eps)`` (exact for one step, a pessimistic upper estimate for ``steps > 1``), same
        shape as ``epsilon``.

    Raises
    ------
    ValueError
        If sigma is not finite and > 0, sampling_rate is not in (0, 1], steps is not an integer
        >= 1, direction is unknown, or (steps > 1) an epsilon is negative.
    """
    sigma, q, steps = _check_subsampled(sigma, sampling_rate, steps)
    if direction not in ("both", "P||Q", "Q||P"):
        raise ValueError(f"direction must be 'both', 'P||Q' or 'Q||P', got {direction!r}")
    eps = check_array(epsilon, "epsilon")
    if steps == 1:
        return _out(_subsampled_gaussian_one_step(eps, sigma, q, direction))
    if np.any(eps < 0):
        raise ValueError(f"epsilon must be >= 0 for steps > 1, got {epsilon!r}")
    pmf = _subsampled_gaussian_pmfs(sigma, q, steps, float(value_discretization_interval))
    flat = eps.ravel()
    vals = []
    for name in ("P||Q", "Q||P"):
        if direction in ("both", name):
            vals.append(np.asarray(pmf[name].get_delta_for_epsilon(flat), dtype=float))
    return _out(np.clip(np.max(vals, axis=0), 0.0, 1.0).reshape(eps.shape))


_PMF_CACHE: dict = {}


def _subsampled_gaussian_pmfs(sigma: float, q: float, steps: int, interval: float) -> dict:
    """dp_accounting PLD pmfs of the T-fold subsampled Gaussian, per direction (cached)."""
    key = (sigma, q, steps, interval)
    if key in _PMF_CACHE:
        return _PMF_CACHE[key]
    dist = pld_from_event(SubsampledGaussianProfile(sigma, q, steps).to_event(), interval, pessimistic=True)
    # REMOVE adjacency: mu_upper is the mixture (P||Q); ADD: mu_upper is N(0, sigma^2) (Q||P).
    out = {"P||Q": dist._pmf_remove, "Q||P": dist._pmf_add}  # noqa: SLF001 - documented fields
    if len(_PMF_CACHE) > 16:
        _PMF_CACHE.clear()
    _PMF_CACHE[key] = out
    return out


def subsampled_gaussian_epsilon(delta, sigma, sampling_rate, steps: int = 1, **kwargs) -> float:
    """Smallest ``eps >= 0`` with ``subsampled_gaussian_delta(eps, ...) <= delta``.

    Same parameters as :func:`subsampled_gaussian_delta` plus the target ``delta`` in (0, 1).
    One step: bisection on the closed form (the profile is non-increasing in eps); ``steps > 1``:
    dp_accounting's ``get_epsilon_for_delta`` on the composed PLD (an upper estimate).
    """
    delta = check_delta(delta)
    if check_int(steps, "steps", minimum=1) > 1:
        # dp_accounting inverts its own (pessimistic) PLD exactly.
        subsampled_gaussian_delta(0.0, sigma, sampling_rate, steps, **kwargs)  # validates the arguments
        direction = kwargs.get("direction", "both")
        vdi = float(kwargs.get("value_discretization_interval", 1e-3))
        pmf = _subsampled_gaussian_pmfs(float(sigma), float(sampling_rate), int(steps), vdi)
        names = ("P||Q", "Q||P") if direction == "both" else (direction,)
        return float(max(max(0.0, pmf[name].get_epsilon_for_delta(delta)) for name in names))

    def f(e):
        return float(subsampled_gaussian_delta(e, sigma, sampling_rate, steps, **kwargs)) - delta

    if f(0.0) <= 0.0:
        return 0.0
    hi = 1.0
    while f(hi) > 0.0:
        hi *= 2.0
        if hi > 1e4:
            return math.inf
    return float(optimize.brentq(f, 0.0, hi, xtol=1e-10))


# --------------------------------------------------------------------------- conversions


def tradeoff_from_profile(alpha, epsilons, deltas):
    """Trade-off curve from a privacy profile (paper 001 Lemma 7; Dong et al. 2022, Prop. 2.12).

    ``f(a) = max_{eps in grid} max(0, 1 - delta(eps) - e^eps a, e^{-eps} (1 - delta(eps) - a))``.

    With the exact (symmetric) profile and a dense grid this is the mechanism's trade-off function.
    A finite grid can only lower the curve (a sup over fewer lines); with a *lower bound* on the
    profile every line moves up, so the result is an upper bound on the mechanism's trade-off
    function only where the grid is fine enough — :class:`dpaudit.scores.ScoreAudit` therefore
    computes its curve exactly from its evidence instead of through this grid.

    Parameters
    ----------
    alpha : array, shape (n_alpha,)
        Type I errors in [0, 1].
    epsilons : array, shape (n_eps,)
        Epsilon grid (nats), ``>= 0``.
    deltas : array, shape (n_eps,)
        Profile values at ``epsilons``, in [0, 1].

    Returns
    -------
    ndarray, shape (n_alpha,)
        Type II errors.

    Raises
    ------
    ValueError
        On shape mismatch or values out of range.
    """
    a = np.atleast_1d(check_array(alpha, "alpha (type I error)", low=0.0, high=1.0))
    e = np.asarray(epsilons, dtype=float).ravel()
    d = np.asarray(deltas, dtype=float).ravel()
    if e.shape != d.shape or e.size == 0:
        raise ValueError(f"epsilons and deltas must be non-empty with the same shape, got {e.shape} and {d.shape}")
    if np.any(~np.isfinite(e)) or np.any(e < 0):
        raise ValueError("epsilons must be finite and >= 0")
    if np.any(~np.isfinite(d)) or np.any((d < 0) | (d > 1)):
        raise ValueError("deltas must lie in [0, 1]")
    ee = np.exp(np.minimum(e, 700.0))[:, None]
    one = (1.0 - d)[:, None]
    lines = np.maximum(one - ee * a[None, :], (one - a[None, :]) / ee)
    return np.clip(np.max(lines, axis=0), 0.0, 1.0)


def epsilon_from_profile(delta, epsilons, deltas) -> float:
    """Smallest grid epsilon at which a tabulated, non-increasing profile is ``<= delta``.

    Linear interpolation in ``ln(delta)`` between grid points; ``0`` if already below at the first
    point, ``inf`` if never below on the grid.

    Parameters
    ----------
    delta : float
        Target delta in (0, 1).
    epsilons : array, shape (n,)
        Increasing epsilon grid (nats).
    deltas : array, shape (n,)
        Profile values.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If ``epsilons`` and ``deltas`` are empty or differ in shape.
    """
    delta = check_delta(delta)
    e = np.asarray(epsilons, dtype=float).ravel()
    d = np.asarray(deltas, dtype=float).ravel()
    if e.shape != d.shape or e.size == 0:
        raise ValueError(f"epsilons and deltas must be non-empty with the same shape, got {e.shape} and {d.shape}")
    above = d > delta
    if not above[0]:
        return float(max(e[0], 0.0))
    idx = np.nonzero(~above)[0]
    if idx.size == 0:
        return math.inf
    j = idx[0]
    d0, d1 = d[j - 1], max(d[j], 1e-300)
    t = (math.log(d0) - math.log(delta)) / (math.log(d0) - math.log(d1)) if d0 > d1 else 1.0
    return float(e[j - 1] + t * (e[j] - e[j - 1]))


def gdp_mu_for_profile(epsilons, deltas, *, tol: float = 1e-6) -> float:
    """Smallest ``mu`` whose GDP profile dominates a tabulated profile on its grid.

    ``min {mu : gaussian_delta(eps, mu) >= delta(eps) for every grid eps}`` (the GDP parameter
    of paper 001 App. A, found by bisection since the GDP profile increases with ``mu``).

    Parameters
    ----------
    epsilons, deltas : array, shape (n,)
        The profile.
    tol : float
        Absolute tolerance on ``mu``.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If ``epsilons`` and ``deltas`` are empty or differ in shape.
    """
    e = np.asarray(epsilons, dtype=float).ravel()
    d = np.asarray(deltas, dtype=float).ravel()
    if e.shape != d.shape or e.size == 0:
        raise ValueError(f"epsilons and deltas must be non-empty with the same shape, got {e.shape} and {d.shape}")
    if np.all(d <= 0):
        return 0.0

    def ok(mu):
        return bool(np.all(gaussian_delta(e, mu) >= d - 1e-15))

    lo, hi = 0.0, 1.0
    while not ok(hi):
        hi *= 2.0
        if hi > 1e3:
            return math.inf
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


# --------------------------------------------------------------------------- value objects


class _AnalyticProfile:
    """What :class:`GaussianProfile` and :class:`LaplaceProfile` share: one parameter (the field
    named ``param``, checked by ``check``) passed to the module functions ``functions = (delta,
    epsilon, tradeoff)``; ``noise`` names the noise parameter of :meth:`from_noise`; ``kind`` is the
    ``to_dict`` tag and the noise of its dp_accounting event (:func:`~.events.leaf_event`)."""

    def __init_subclass__(cls, *, param: str, noise: str, kind: str, check, functions) -> None:
        super().__init_subclass__()
        cls._param, cls._noise, cls._kind, cls._check = param, noise, kind, staticmethod(check)
        cls._delta, cls._epsilon, cls._tradeoff = (staticmethod(f) for f in functions)

    def __post_init__(self) -> None:
        object.__setattr__(self, self._param, self._check(self._value))

    @classmethod
    def from_noise(cls, noise: float, sensitivity: float = 1.0):
        """The mechanism with noise parameter ``noise`` (Gaussian ``sigma``, Laplace scale ``b``):
        ``parameter = sensitivity / noise``.

        Raises
        ------
        ValueError
            If either is not finite and positive.
        """
        return cls(check_positive(sensitivity, "sensitivity") / check_positive(noise, cls._noise))

    @property
    def _value(self) -> float:
        return getattr(self, self._param)

    def delta(self, epsilon):
        """``delta(eps)`` for epsilon(s) in nats (any shape, same shape back)."""
        return type(self)._delta(epsilon, self._value)

    def epsilon(self, delta: float) -> float:
        """Smallest ``eps >= 0`` with ``delta(eps) <= delta``, for ``delta`` in (0, 1)."""
        return type(self)._epsilon(delta, self._value)

    def tradeoff(self, alpha):
        """Trade-off function at type I error(s) ``alpha`` in [0, 1] (same shape back)."""
        return type(self)._tradeoff(alpha, self._value)

    def to_event(self):
        """The dp_accounting ``DpEvent`` of the sensitivity-1 mechanism with this profile
        (``noise_multiplier = 1 / parameter``)."""
        return leaf_event(self._kind, 1.0 / self._value)

    def to_dict(self) -> dict:
        return {"kind": self._kind, self._param: self._value}


def _leaf_of(event, cls, expected: str):
    """The single run ``(leaf, count)`` of ``event`` whose leaf is a ``cls``, else ValueError."""
    runs = event_runs(event)
    if not runs or not all(isinstance(leaf, cls) for leaf, _ in runs):
        raise ValueError(f"expected {expected}, got {event!r}")
    return runs


@dataclass(frozen=True)
class GaussianProfile(_AnalyticProfile, param="mu", noise="sigma", kind="gaussian",
                      check=_check_mu, functions=(gaussian_delta, gaussian_epsilon, gaussian_tradeoff)):
    """The Gaussian mechanism / ``mu``-GDP: profile, epsilon and trade-off function.

    Parameters
    ----------
    mu : float
        ``sensitivity / sigma >= 0``.

    References
    ----------
    Balle & Wang (2018), Thm 8; Dong, Roth, Su (2022), Def. 2.6.
    """

    mu: float

    @classmethod
    def from_event(cls, event) -> "GaussianProfile":
        """From a ``GaussianDpEvent`` or any composition of them (``SelfComposedDpEvent``,
        ``ComposedDpEvent``): ``mu = sqrt(sum_t 1 / sigma_t^2)``, exact since a composition of
        Gaussian mechanisms is ``mu``-GDP (Dong, Roth, Su 2022, Cor. 3.3).

        Raises
        ------
        ValueError
            For any other event, or a zero noise multiplier.
        """
        import dp_accounting

        runs = _leaf_of(event, dp_accounting.GaussianDpEvent, "a composition of GaussianDpEvents")
        return cls(math.sqrt(sum(c / check_positive(e.noise_multiplier, "noise_multiplier") ** 2 for e, c in runs)))

    def to_event(self):
        """``GaussianDpEvent(1 / mu)``.

        Raises
        ------
        ValueError
            For ``mu = 0`` (no noise multiplier describes it).
        """
        check_positive(self.mu, "mu")
        return super().to_event()

    def describe(self) -> str:
        return f"{self.mu:.4g}-GDP"


@dataclass(frozen=True)
class LaplaceProfile(_AnalyticProfile, param="epsilon0", noise="scale", kind="laplace",
                     check=lambda v: check_positive(v, "epsilon0"),
                     functions=(laplace_delta, laplace_epsilon, laplace_tradeoff)):
    """The Laplace mechanism with ``epsilon0 = sensitivity / scale``.

    References
    ----------
    Dong, Roth, Su (2022), Lemma A.6; paper 001 §5.3, App. C.
    """

    epsilon0: float

    @classmethod
    def from_event(cls, event) -> "LaplaceProfile":
        """From a ``LaplaceDpEvent(b)``: ``epsilon0 = 1 / b``.

        Raises
        ------
        ValueError
            For any other event (compositions of Laplace mechanisms have no profile here).
        """
        import dp_accounting

        runs = _leaf_of(event, dp_accounting.LaplaceDpEvent, "one LaplaceDpEvent")
        if len(runs) != 1 or runs[0][1] != 1:
            raise ValueError(f"expected one LaplaceDpEvent, got {event!r}")
        return cls(1.0 / check_positive(runs[0][0].noise_multiplier, "noise_multiplier"))

    def describe(self) -> str:
        return f"Laplace mechanism, eps0={self.epsilon0:.4g}"


@dataclass(frozen=True)
class SubsampledGaussianProfile:
    """The Poisson-subsampled Gaussian mechanism (DP-SGD's step), ``steps``-fold composed.

    Parameters
    ----------
    sigma : float
        Noise multiplier (noise std / sensitivity), ``> 0``.
    sampling_rate : float
        Poisson sampling probability in (0, 1].
    steps : int
        Number of composed steps.
    value_discretization_interval : float
        PLD discretisation for ``steps > 1`` (nats).

    References
    ----------
    Koskela, Jälkö, Prediger, Honkela (2021); dp_accounting PLD; paper 001 §3, §5.2.
    """

    sigma: float
    sampling_rate: float
    steps: int = 1
    value_discretization_interval: float = 1e-3

    def __post_init__(self) -> None:
        sigma, q, steps = _check_subsampled(self.sigma, self.sampling_rate, self.steps)
        object.__setattr__(self, "sigma", sigma)
        object.__setattr__(self, "sampling_rate", q)
        object.__setattr__(self, "steps", steps)

    @classmethod
    def from_event(cls, event, value_discretization_interval: float = 1e-3) -> "SubsampledGaussianProfile":
        """From ``PoissonSampledDpEvent(q, GaussianDpEvent(sigma))``, self-composed ``T`` times
        (``SelfComposedDpEvent``) or not (``T = 1``); a plain ``GaussianDpEvent`` is ``q = 1``.

        Raises
        ------
        ValueError
            For any other event (e.g. a composition of different steps).
        """
        import dp_accounting as dpa

        runs = _leaf_of(event, (dpa.PoissonSampledDpEvent, dpa.GaussianDpEvent),
                        "a (self-composed) PoissonSampledDpEvent of a GaussianDpEvent")
        if len({leaf for leaf, _ in runs}) != 1:
            raise ValueError(f"expected runs of one subsampled Gaussian step, got {event!r}")
        leaf, steps = runs[0][0], sum(c for _, c in runs)
        if isinstance(leaf, dpa.GaussianDpEvent):
            return cls(leaf.noise_multiplier, 1.0, steps, value_discretization_interval)
        return cls(leaf.event.noise_multiplier, leaf.sampling_probability, steps, value_discretization_interval)

    def to_event(self):
        """``PoissonSampledDpEvent(q, GaussianDpEvent(sigma))``, in a ``SelfComposedDpEvent`` for
        ``steps > 1``."""
        return event_from_runs([(leaf_event("gaussian", self.sigma, self.sampling_rate), self.steps)])

    def delta(self, epsilon, direction: str = "both"):
        """``delta(eps)``, see :func:`subsampled_gaussian_delta`."""
        return subsampled_gaussian_delta(
            epsilon, self.sigma, self.sampling_rate, self.steps, direction=direction,
            value_discretization_interval=self.value_discretization_interval,
        )

    def epsilon(self, delta: float) -> float:
        """Epsilon at ``delta`` (bisection on :meth:`delta`)."""
        return subsampled_gaussian_epsilon(
            delta, self.sigma, self.sampling_rate, self.steps,
            value_discretization_interval=self.value_discretization_interval,
        )

    def tradeoff(self, alpha, *, num_eps: int = 2000):
        """Symmetric trade-off function via Lemma 7 on a dense epsilon grid.

        The grid runs from 0 to the epsilon at which ``delta`` falls to ``1e-12``; ``num_eps``
        points, so the result approaches the exact curve from below as ``num_eps`` grows.
        """
        top = self.epsilon(1e-12)
        grid = np.linspace(0.0, max(top, 1e-3), int(num_eps))
        return tradeoff_from_profile(alpha, grid, np.atleast_1d(self.delta(grid)))

    def gdp_mu(self, *, num_eps: int = 400) -> float:
        """Smallest ``mu`` such that the mechanism is ``mu``-GDP on an epsilon grid (App. A)."""
        top = self.epsilon(1e-10)
        grid = np.linspace(0.0, max(top, 1e-3), int(num_eps))
        return gdp_mu_for_profile(grid, np.atleast_1d(self.delta(grid)))

    def describe(self) -> str:
        return f"subsampled Gaussian (sigma={self.sigma:g}, q={self.sampling_rate:g}, T={self.steps})"

    def to_dict(self) -> dict:
        return {
            "kind": "subsampled-gaussian", "sigma": self.sigma, "sampling_rate": self.sampling_rate,
            "steps": self.steps, "value_discretization_interval": self.value_discretization_interval,
        }
