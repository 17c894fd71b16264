"""Dominating pairs and privacy loss random variables (PRVs) of the mechanisms DP-SGD is made of.

A *dominating pair* ``(P, Q)`` of a mechanism M bounds every hockey-stick divergence of M on
neighbouring datasets: ``sup_{D ~ D'} E_{e^eps}(M(D) || M(D')) <= E_{e^eps}(P || Q)`` for all eps
(paper 004, Def. 4). Its *privacy loss random variable* is ``L = ln(P(T) / Q(T))`` with ``T ~ P``,
and the *privacy profile* is ``delta(eps) = E[(1 - exp(eps - L))_+]``. Under composition the
product pairs dominate and the PRVs add (paper 004, Lemma 5).

Every mechanism here has sensitivity 1 and is parametrised like dp_accounting's ``DpEvent``s:

=========================  ====================================  ==============================
step                       P (the "remove" direction)            Q
=========================  ====================================  ==============================
``GaussianStep(s)``        N(1, s^2)                             N(0, s^2)
``LaplaceStep(b)``         Lap(1, b)                             Lap(0, b)
``SubsampledGaussianStep`` (1 - q) N(0, s^2) + q N(1, s^2)       N(0, s^2)
=========================  ====================================  ==============================

Poisson subsampling (paper 004, Lemma 14; Zhu, Dong & Wang 2022) under add/remove adjacency has
two dominating pairs: the "remove" pair above and the "add" pair, which swaps P and Q. The
privacy profile of the mechanism is the larger of the two, as in dp_accounting
(``privacy_loss_mechanism.AdjacencyType``: REMOVE has the mixture as ``mu_upper``). Gaussian and
Laplace pairs are symmetric: both directions have the same profile.

The module also gives what the Monte Carlo estimators need from each step: the cumulant
generating function of the PRV, ``K(lam) = ln E_P[exp(lam L)] = lam * D_{lam+1}(P || Q)`` (the
Rényi divergence, i.e. what an RDP accountant computes), and samplers for the exponentially
tilted distribution ``P_lam ∝ P^(1+lam) Q^(-lam)``, under which ``dP/dP_lam = exp(K(lam) - lam L)``.
"""

from __future__ import annotations

import functools
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np
from scipy import optimize, special

from .._validate import check_delta, check_epsilon, check_int, check_positive, check_rate
from ..privacy.events import UnsupportedEventError, event_from_runs, event_runs, is_event, leaf_event, leaf_parameters
from ..privacy.profiles import gaussian_delta, gaussian_epsilon
from ..privacy.rdp import log_c1

__all__ = [
    "ADD",
    "DIRECTIONS",
    "REMOVE",
    "Composition",
    "GaussianStep",
    "LaplaceStep",
    "Step",
    "SubsampledGaussianStep",
    "UnsupportedEventError",
    "as_composition",
    "as_dp_event",
    "convert",
    "delta_upper_bound",
    "epsilon_upper_bound",
    "feasible_tilt",
    "sampler_acceptance",
    "gaussian_delta",
    "gaussian_epsilon",
    "saddlepoint_tilt",
]

REMOVE = "remove"
ADD = "add"
DIRECTIONS = (REMOVE, ADD)

#: largest non-integer tilt whose K(lam) is computed by quadrature; integer orders have closed forms
_MAX_REAL_TILT = 256.0


# --------------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------------
def _check_direction(direction: str) -> str:
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be 'remove' or 'add', got {direction!r}")
    return direction


def _check_tilt(lam) -> float:
    v = float(lam)
    if not math.isfinite(v) or v < 0.0:
        raise ValueError(f"tilt lam must be a finite number >= 0, got {lam!r}")
    return v


# --------------------------------------------------------------------------------------------
# numerical helpers
# --------------------------------------------------------------------------------------------
def bisect(below, lo: float, hi: float, *, max_iter: int, rtol: float) -> tuple[float, float]:
    """Bisection for the boundary of a monotone predicate: ``below(x)`` true left of it, false right.

    Halves ``[lo, hi]`` (``below(lo)`` true, ``below(hi)`` false, not evaluated) at most
    ``max_iter`` times, stopping once ``hi - lo <= rtol * max(1, hi)``.

    Returns
    -------
    (lo, hi) : tuple of float
        The final bracket.
    """
    for _ in range(max_iter):
        mid = 0.5 * (lo + hi)
        if below(mid):
            lo = mid
        else:
            hi = mid
        if hi - lo <= rtol * max(1.0, hi):
            break
    return lo, hi


def _log_gauss_integral(log_f, sigma: float, lo: float, hi: float, n_max: int = 400_001) -> float:
    """``ln ∫ phi_sigma(t) f(t) dt`` on [lo, hi] by the trapezoid rule in log space.

    The integrands used here are smooth and decay like Gaussians at both ends, so the rule is
    accurate to double precision once the step is a small fraction of sigma.
    """
    n = int(min(n_max, max(2001, math.ceil((hi - lo) / (sigma / 60.0)))))
    t = np.linspace(lo, hi, n)
    h = t[1] - t[0]
    logphi = -0.5 * (t / sigma) ** 2 - math.log(sigma * math.sqrt(2.0 * math.pi))
    lf = log_f(t)
    out = float(special.logsumexp(logphi + lf) + math.log(h))
    if abs(out) < 0.1:
        # small result: ln(1 + ∫ phi (f - 1)) keeps relative precision (∫ phi = 1 up to 1e-16)
        # (where f overflows, phi * f is taken whole: phi * expm1(lf) would be 0 * inf = nan)
        big = lf > 700.0
        terms = np.where(big, np.exp(np.where(big, logphi + lf, 0.0)),
                         np.exp(logphi) * np.expm1(np.minimum(lf, 700.0)))
        out = math.log1p(float(np.sum(terms)) * h)
    if not math.isfinite(out) and not out == math.inf:
        raise FloatingPointError(f"the Gaussian integral of the tilt is not a number ({out!r})")
    return out


def _c1(lam: float) -> float:
    """``sup_{x >= 0} (1 - e^-x) e^(-lam x) = (1/(1+lam)) (lam/(1+lam))^lam`` (1 at lam = 0)."""
    return math.exp(log_c1(lam))


def _c2(lam: float) -> float:
    """``sup_{x >= 0} (1 - e^-x)^2 e^(-lam x) = 4 lam^lam / (lam+2)^(lam+2)`` (1 at lam = 0)."""
    if lam <= 0:
        return 1.0
    return math.exp(math.log(4.0) + lam * math.log(lam) - (lam + 2.0) * math.log(lam + 2.0))


# --------------------------------------------------------------------------------------------
# tilted samplers (used by monte_carlo; written against the backend ops of _backend)
# --------------------------------------------------------------------------------------------
class _Plan(ABC):
    """Sampler of one step's tilted distribution P_lam and its privacy loss, for one direction.

    Draws come from ``rs``, a :class:`._backend.CellGroup` (or a retry :class:`._backend.Stream`):
    ``rs.normal(slot)`` / ``rs.uniform(slot)`` give arrays of shape ``rs.shape``, one value per
    sample and step (slot 0: mixture component, 1: normal, 2: acceptance uniform); they are
    shared views and must not be modified.
    """

    #: whether draw() may need rejection rounds
    rejection: bool = False

    @abstractmethod
    def draw(self, ops, rs):
        """Outputs t of shape ``rs.shape``."""

    @abstractmethod
    def loss(self, ops, t):
        """Privacy loss l(t) = ln(P(t)/Q(t)) of each output."""

    def draw_loss(self, ops, rs):
        """Privacy losses of draws from P_lam (same draws as :meth:`draw`), shape ``rs.shape``."""
        return self.loss(ops, self.draw(ops, rs))


#: beyond this exponent ``ln(1 - q + q e^x)`` is ``x + ln q`` to double precision
_EXP_MAX = 700.0


def _log_mix(ops, x, q: float, logq: float):
    """``ln(1 - q + q e^x)`` elementwise, computed in place in ``x`` (which is returned).

    Evaluated as ``log(q e^x + (1 - q))`` with NumPy's vectorised ``exp``/``log`` (about 20x
    cheaper than ``logaddexp``). The rounding of the argument costs at most ~2e-16 in *absolute*
    error of the loss (its relative error grows for losses near 0, but only absolute errors of the
    summed loss matter: over 10^4 steps they stay below 1e-11, far below Monte Carlo error). Above
    ``x = 700``, where ``e^x`` overflows, the value is ``x + ln q + ln(1 + (1-q) e^{-x}/q) = x + ln q``
    to double precision.
    """
    big = ops.any(x > _EXP_MAX)
    if big:
        orig = x.clone() if ops.name == "torch" else x.copy()
        x = ops.clip(x, -math.inf, _EXP_MAX)
    ops.exp(x, out=x)
    x *= q
    x += 1.0 - q
    ops.log(x, out=x)
    if big:
        x = ops.where(orig > _EXP_MAX, orig + logq, x)
    return x


class _GaussianPlan(_Plan):
    def __init__(self, sigma: float, lam: float):
        self.sigma, self.lam = sigma, lam

    def draw(self, ops, rs):
        t = rs.normal(1) * self.sigma
        t += 1.0 + self.lam
        return t

    def loss(self, ops, t):
        return (t - 0.5) / self.sigma ** 2

    def draw_loss(self, ops, rs):
        # l = (t - 1/2)/s^2 with t = 1 + lam + s z
        out = rs.normal(1) * (1.0 / self.sigma)
        out += (0.5 + self.lam) / self.sigma ** 2
        return out


class _LaplacePlan(_Plan):
    """P_lam ∝ Lap(1,b)^(1+lam) Lap(0,b)^(-lam): three exponential pieces (t<0, 0<=t<=1, t>1)."""

    def __init__(self, b: float, lam: float):
        self.b, self.lam = b, lam
        log_a = -(1.0 + lam) / b - math.log(2.0)
        log_c = lam / b - math.log(2.0)
        # (e^{lam/b} - e^{-(1+lam)/b}) / (2 (1 + 2 lam))
        log_b = lam / b + math.log(-math.expm1(-(1.0 + 2.0 * lam) / b)) - math.log(2.0 * (1.0 + 2.0 * lam))
        logs = np.array([log_a, log_b, log_c])
        p = np.exp(logs - special.logsumexp(logs))
        self.edges = np.cumsum(p)[:-1]
        self.rate = (1.0 + 2.0 * lam) / b

    def draw(self, ops, rs):
        u0 = rs.uniform(0)
        u1 = rs.uniform(1)
        b, c = self.b, self.rate
        lg = ops.log(u1)
        left = b * lg                                           # density ∝ e^{t/b} on t < 0
        right = 1.0 - left                                      # density ∝ e^{-t/b} on t > 1
        mid = 1.0 + ops.log(u1 + (1.0 - u1) * math.exp(-c)) / c  # density ∝ e^{c t} on [0, 1]
        return ops.where(u0 < self.edges[0], left, ops.where(u0 < self.edges[1], mid, right))

    def loss(self, ops, t):
        return ops.clip(2.0 * t - 1.0, -1.0, 1.0) / self.b

    def draw_loss(self, ops, rs):
        # same draws as draw(): the loss is -1/b on the left piece, 1/b on the right one, and
        # (2t - 1)/b = (1 + 2y/c)/b with y = ln(u1 + (1 - u1) e^{-c}) in the middle
        u0 = rs.uniform(0)
        b, c = self.b, self.rate
        ec = math.exp(-c)
        y = rs.uniform(1) * (1.0 - ec)
        y += ec
        ops.log(y, out=y)
        y *= 2.0 / (c * b)
        y += 1.0 / b
        return ops.where(u0 < self.edges[0], -1.0 / b, ops.where(u0 < self.edges[1], y, 1.0 / b))


class _RejectionPlan(_Plan):
    """A plan that draws a proposal (``_propose``) and, when ``rejection``, keeps each draw with
    probability ``exp(_log_accept(t))`` (equivalently ``exp(_log_accept_loss(loss))`` on losses)."""

    def draw(self, ops, rs):
        t = self._propose(ops, rs)
        if not self.rejection:
            return t
        return _reject(ops, rs, t, self._propose, self._log_accept)

    def draw_loss(self, ops, rs):
        loss = self._proposal_loss(ops, self._propose(ops, rs))
        if not self.rejection:
            return loss
        return _reject(ops, rs, loss, lambda o, src: self._proposal_loss(o, self._propose(o, src)),
                       self._log_accept_loss)


class _SubsampledRemovePlan(_RejectionPlan):
    """P_lam ∝ Q a^(1+lam), a(t) = 1 - q + q exp((2t-1)/(2 s^2)).

    For an integer ``n = 1 + lam`` this is the Gaussian mixture sum_j w_j N(j, s^2), j = 0..n, with
    ``w_j ∝ C(n, j) (1-q)^(n-j) q^j exp(j (j-1) / (2 s^2))`` (binomial expansion of a^n and
    ``Q(t) e^{j x(t)} = N(t; j, s^2) e^{j(j-1)/(2s^2)}``). For a non-integer exponent we draw from the
    mixture of ``n = ceil(1 + lam)`` and accept with probability ``(a / (1-q))^(1 + lam - n)`` <= 1.
    """

    def __init__(self, sigma: float, q: float, lam: float):
        self.sigma, self.q, self.lam = sigma, q, lam
        expo = 1.0 + lam
        n = int(math.ceil(expo - 1e-12))
        self.frac = expo - n  # in (-1, 0]
        self.rejection = self.frac < -1e-12
        j = np.arange(n + 1)
        logw = _log_binom(n, j) + (n - j) * math.log1p(-q) + j * math.log(q) + j * (j - 1) / (2 * sigma ** 2)
        if q == 1.0:
            logw = np.where(j == n, 0.0, -np.inf)
        p = np.exp(logw - special.logsumexp(logw))
        keep = p > 1e-300
        self.means = j[keep].astype(float)
        self.edges = np.cumsum(p[keep])[:-1]
        self.consecutive = bool(np.array_equal(self.means, np.arange(self.means.size)))
        # the component is found by comparisons with a window of at most 8 edges holding all but
        # ~2% of the mass, and by a binary search for the few uniforms outside the window
        self.win_lo = int(np.count_nonzero(self.edges < 0.01))
        self.win_hi = int(min(self.win_lo + 8, max(self.win_lo, np.count_nonzero(self.edges < 0.99))))
        self.log1mq = math.log1p(-q) if q < 1.0 else -math.inf
        self.logq = math.log(q)

    def _loss_inplace(self, ops, t):
        """l(t), computed in place in ``t``."""
        s2 = self.sigma ** 2
        t *= 1.0 / s2
        t -= 0.5 / s2  # x(t) = (2t - 1)/(2 s^2)
        if self.q == 1.0:
            return t
        return _log_mix(ops, t, self.q, self.logq)

    def loss(self, ops, t):
        return self._loss_inplace(ops, t * 1.0)

    def _draw_mixture(self, ops, rs):
        u0 = rs.uniform(0)
        t = rs.normal(1) * self.sigma
        if self.consecutive:
            # component j = number of edges <= u0, and its mean is j
            a, b = self.win_lo, self.win_hi
            if a:
                t += float(a)
            for e in self.edges[a:b]:
                t += u0 >= e
            if a:
                low = u0 < self.edges[a - 1]
                if ops.any(low):
                    t[low] += ops.searchsorted(self.edges[:a], u0[low]) - a
            if b < len(self.edges):
                high = u0 >= self.edges[b]
                if ops.any(high):
                    t[high] += ops.searchsorted(self.edges[b:], u0[high])
            return t
        comp = ops.searchsorted(self.edges, u0)
        return t + ops.take(self.means, comp)

    _propose = _draw_mixture
    _proposal_loss = _loss_inplace

    def _log_accept_loss(self, ops, l):
        # accept with probability (a/(1-q))^frac = exp(frac (l - ln(1-q)))
        return self.frac * (l - self.log1mq)

    def _log_accept(self, ops, t):
        return self._log_accept_loss(ops, self.loss(ops, t))


class _SubsampledAddPlan(_RejectionPlan):
    """P_lam ∝ N(0, s^2) a^(-lam): draw N(0, s^2) and accept with probability ((1-q)/a)^lam <= 1."""

    def __init__(self, sigma: float, q: float, lam: float):
        self.sigma, self.q, self.lam = sigma, q, lam
        self.rejection = lam > 0
        self.log1mq = math.log1p(-q)
        self.logq = math.log(q)

    def _loss_remove(self, ops, t):
        s2 = self.sigma ** 2
        x = t * (1.0 / s2)
        x -= 0.5 / s2
        return _log_mix(ops, x, self.q, self.logq)

    def loss(self, ops, t):
        out = self._loss_remove(ops, t)
        out *= -1.0
        return out

    def _draw_base(self, ops, rs):
        return rs.normal(1) * self.sigma

    _propose = _draw_base

    def _proposal_loss(self, ops, t):
        return self.loss(ops, t)

    def _log_accept_loss(self, ops, l):
        # the add-direction loss is -ln a(t); accept with probability exp(lam (ln(1-q) + loss))
        return self.lam * (self.log1mq + l)

    def _log_accept(self, ops, t):
        return self.lam * (self.log1mq - self._loss_remove(ops, t))


def _reject(ops, rs, t, draw, log_accept):
    """Rejection sampling with retry rounds (slot 2 holds the acceptance uniform of round 0).

    ``t`` holds the first-round candidates (modified in place); rejected entries are redrawn from
    the group's retry stream (``rs.retry(n)``: candidates, then acceptance uniforms, for the ``n``
    pending entries in row-major order) until accepted. Works on flat index arrays of the pending
    entries, so a round costs O(#pending).
    """
    from ._backend import ROUNDS

    flat_t = t.reshape(-1)
    rej = ops.log(rs.uniform(2)) >= log_accept(ops, t)
    idx = rej.reshape(-1).nonzero()[0] if ops.name == "numpy" else rej.reshape(-1).nonzero(as_tuple=True)[0]
    rnd = 0
    while idx.shape[0] > 0:
        rnd += 1
        if rnd >= ROUNDS:
            raise RuntimeError("rejection sampler did not finish; the tilt is too large for this step")
        src = rs.retry(idx.shape[0])
        cand = draw(ops, src)
        ok = ops.log(src.uniform(2)) < log_accept(ops, cand)
        flat_t[idx[ok]] = cand[ok]
        idx = idx[~ok]
    return t


def _log_binom(n: int, j: np.ndarray) -> np.ndarray:
    return special.gammaln(n + 1) - special.gammaln(j + 1) - special.gammaln(n - j + 1)


# --------------------------------------------------------------------------------------------
# steps
# --------------------------------------------------------------------------------------------
class Step(ABC):
    """One mechanism of a composition, described by its dominating pair(s) (sensitivity 1)."""

    kind: str = "step"
    #: True when both directions have the same privacy profile
    symmetric: bool = True

    def log_mgf(self, lam: float, direction: str = REMOVE) -> float:
        """Cumulant generating function ``K(lam) = ln E_{T~P}[exp(lam L(T))]`` of the PRV.

        Parameters
        ----------
        lam : float
            Tilt (order minus one), ``lam >= 0``.
        direction : {'remove', 'add'}
            Which dominating pair (see the module docstring).

        Returns
        -------
        float
            ``K(lam) = lam * D_{lam+1}(P || Q)`` in nats (the RDP of order ``lam + 1`` times ``lam``).

        Raises
        ------
        ValueError
            For a negative or non-finite tilt or an unknown direction.
        """
        lam = _check_tilt(lam)
        return self._log_mgf(lam, _check_direction(direction))

    @abstractmethod
    def _log_mgf(self, lam: float, direction: str) -> float:
        """``K(lam)`` for a checked tilt and direction."""

    def privacy_loss(self, t, direction: str = REMOVE) -> np.ndarray:
        """Privacy loss ``ln(P(t)/Q(t))`` (nats) at outputs ``t`` (any shape).

        Raises
        ------
        ValueError
            For an unknown direction.
        """
        return self._privacy_loss(np.asarray(t, dtype=float), _check_direction(direction))

    @abstractmethod
    def _privacy_loss(self, t: np.ndarray, direction: str) -> np.ndarray:
        """Privacy loss at float outputs ``t`` for a checked direction."""

    @abstractmethod
    def _plan(self, lam: float, direction: str) -> _Plan:
        """Sampler of the tilted distribution (internal)."""

    def log_tails(self, ops, c, direction: str = REMOVE):
        """``(ln P(l(T) > c), ln Q(l(T) > c))`` elementwise for thresholds ``c`` (backend arrays).

        Used by the conditional Monte Carlo estimator. Raises NotImplementedError for steps whose
        privacy loss is not a continuous monotone function of a Gaussian output.
        """
        raise NotImplementedError(f"{self.kind} steps have no closed-form loss tails")

    def plan(self, lam: float, direction: str) -> _Plan:
        """Cached sampler of ``P_lam`` for this step (internal to the Monte Carlo estimators)."""
        return _cached_plan(self, float(lam), direction)

    def to_event(self):
        """The dp_accounting ``DpEvent`` of this step (the value object every family shares):
        ``convert(self, "event")`` (:func:`convert`)."""
        return convert(self, "event")

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable description."""
        return {"kind": self.kind, **{k: v for k, v in self.__dict__.items()}}


@functools.lru_cache(maxsize=256)
def _cached_plan(step: "Step", lam: float, direction: str) -> _Plan:
    return step._plan(lam, direction)


class _NoiseStep(Step):
    """A step with one noise parameter: the dataclass field ``param`` (checked finite and > 0,
    named ``label`` in errors) is the ``noise_multiplier`` of its dp_accounting event (:func:`convert`)."""

    def __init_subclass__(cls, *, param: str, label: str, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls._param, cls._label = param, label

    def __post_init__(self):
        object.__setattr__(self, self._param, check_positive(getattr(self, self._param), self._label))


@dataclass(frozen=True)
class GaussianStep(_NoiseStep, param="sigma", label="sigma (noise multiplier)"):
    """Gaussian mechanism with noise multiplier ``sigma`` (noise std / L2 sensitivity).

    Dominating pair ``P = N(1, sigma^2)``, ``Q = N(0, sigma^2)`` (tight, symmetric); the PRV is
    ``N(mu^2/2, mu^2)`` with ``mu = 1/sigma`` (Dong, Roth & Su 2022, mu-GDP).

    Raises ValueError if the parameter is not a positive finite number (:class:`_NoiseStep`).
    """

    sigma: float
    kind = "gaussian"
    symmetric = True

    def _log_mgf(self, lam, direction):
        return lam * (lam + 1.0) / (2.0 * self.sigma ** 2)

    def _privacy_loss(self, t, direction):
        return (t - 0.5) / self.sigma ** 2

    def _plan(self, lam, direction):
        return _GaussianPlan(self.sigma, lam)

    def log_tails(self, ops, c, direction: str = REMOVE):
        # l(t) = (t - 1/2)/s^2 > c  <=>  t > 1/2 + s^2 c;  P = N(1, s^2), Q = N(0, s^2)
        tc = 0.5 + self.sigma ** 2 * c
        return ops.log_ndtr((1.0 - tc) / self.sigma), ops.log_ndtr(-tc / self.sigma)


@dataclass(frozen=True)
class LaplaceStep(_NoiseStep, param="scale", label="scale (Laplace noise multiplier)"):
    """Laplace mechanism with scale ``scale`` = b (noise scale / L1 sensitivity).

    Dominating pair ``P = Lap(1, b)``, ``Q = Lap(0, b)`` (tight, symmetric); the PRV lies in
    ``[-1/b, 1/b]``. ``K(lam) = ln((lam+1)/(2lam+1) e^{lam/b} + lam/(2lam+1) e^{-(lam+1)/b})``
    (Mironov 2017, Table II).

    Raises ValueError if the parameter is not a positive finite number (:class:`_NoiseStep`).
    """

    scale: float
    kind = "laplace"
    symmetric = True

    def _log_mgf(self, lam, direction):
        b = self.scale
        return lam / b + math.log((lam + 1.0) / (2.0 * lam + 1.0) + lam / (2.0 * lam + 1.0) * math.exp(-(2.0 * lam + 1.0) / b))

    def _privacy_loss(self, t, direction):
        return np.clip(2.0 * t - 1.0, -1.0, 1.0) / self.scale

    def _plan(self, lam, direction):
        return _LaplacePlan(self.scale, lam)


@dataclass(frozen=True)
class SubsampledGaussianStep(Step):
    """Poisson-subsampled Gaussian mechanism (one step of DP-SGD).

    Each record is included with probability ``sampling_rate`` = q, then the Gaussian mechanism
    with noise multiplier ``sigma`` runs on the sample. Dominating pairs under add/remove
    adjacency (paper 004, Lemma 14; Zhu, Dong & Wang 2022, Thm 11):

    * ``'remove'``: ``P = (1-q) N(0, s^2) + q N(1, s^2)``, ``Q = N(0, s^2)``, loss
      ``l(t) = ln(1 - q + q exp((2t - 1)/(2 s^2)))``;
    * ``'add'``: ``P = N(0, s^2)``, ``Q = (1-q) N(0, s^2) + q N(1, s^2)``, loss ``-l(t)``.

    ``K(lam)`` has a closed form for integer ``lam`` (binomial expansion, as in RDP accountants)
    and is computed by quadrature otherwise.

    Raises
    ------
    ValueError
        If ``sigma <= 0`` or ``sampling_rate`` is outside (0, 1].
    """

    sigma: float
    sampling_rate: float
    kind = "subsampled_gaussian"
    symmetric = False

    def __post_init__(self):
        object.__setattr__(self, "sigma", check_positive(self.sigma, "sigma (noise multiplier)"))
        object.__setattr__(self, "sampling_rate", check_rate(self.sampling_rate, "sampling_rate q"))

    def _log_mgf(self, lam, direction):
        return _subsampled_log_mgf(self.sigma, self.sampling_rate, lam, direction)

    def _privacy_loss(self, t, direction):
        q, s = self.sampling_rate, self.sigma
        x = (2.0 * t - 1.0) / (2.0 * s ** 2)
        l = x if q == 1.0 else np.logaddexp(math.log1p(-q), math.log(q) + x)
        return l if direction == REMOVE else -l

    def log_tails(self, ops, c, direction: str = REMOVE):
        q, s = self.sampling_rate, self.sigma
        if q == 1.0:
            return GaussianStep(s).log_tails(ops, c, direction)
        log1mq, logq = math.log1p(-q), math.log(q)
        if direction == REMOVE:
            # l > c  <=>  q e^x > e^c - (1 - q)  <=>  x > ln((expm1(c) + q)/q)  (all t when expm1(c) + q <= 0)
            y = ops.expm1(c) + q
            ok = y > 0
            tc = 0.5 + s ** 2 * (ops.log(ops.where(ok, y, 1.0)) - logq)
            log_q = ops.log_ndtr(-tc / s)
            log_p = ops.logaddexp(log1mq + log_q, logq + ops.log_ndtr((1.0 - tc) / s))
            return ops.where(ok, log_p, 0.0), ops.where(ok, log_q, 0.0)
        # add: l = -ln a(t) > c  <=>  x < ln((expm1(-c) + q)/q)  (no t when expm1(-c) + q <= 0)
        y = ops.expm1(-c) + q
        ok = y > 0
        tc = 0.5 + s ** 2 * (ops.log(ops.where(ok, y, 1.0)) - logq)
        log_p = ops.log_ndtr(tc / s)
        log_q = ops.logaddexp(log1mq + log_p, logq + ops.log_ndtr((tc - 1.0) / s))
        return ops.where(ok, log_p, -math.inf), ops.where(ok, log_q, -math.inf)

    def _plan(self, lam, direction):
        if self.sampling_rate == 1.0:  # a plain Gaussian; both directions have the same PRV law
            return _GaussianPlan(self.sigma, lam)
        if direction == REMOVE:
            return _SubsampledRemovePlan(self.sigma, self.sampling_rate, lam)
        return _SubsampledAddPlan(self.sigma, self.sampling_rate, lam)


@functools.lru_cache(maxsize=4096)
def _subsampled_log_mgf(sigma: float, q: float, lam: float, direction: str) -> float:
    if lam == 0.0:
        return 0.0
    s2 = sigma ** 2
    if q == 1.0:
        return lam * (lam + 1.0) / (2.0 * s2)
    log1mq, logq = math.log1p(-q), math.log(q)

    def l_remove(t):
        return np.logaddexp(log1mq, logq + (2.0 * t - 1.0) / (2.0 * s2))

    if direction == REMOVE:
        expo = 1.0 + lam
        if abs(expo - round(expo)) < 1e-12:
            n = int(round(expo))
            j = np.arange(n + 1)
            terms = _log_binom(n, j) + (n - j) * log1mq + j * logq + j * (j - 1) / (2.0 * s2)
            return float(special.logsumexp(terms))
        if lam > _MAX_REAL_TILT:
            raise ValueError(f"non-integer tilt lam={lam} above {_MAX_REAL_TILT}: use an integer")
        return _log_gauss_integral(lambda t: expo * l_remove(t), sigma, -14.0 * sigma, expo + 14.0 * sigma)
    if lam > _MAX_REAL_TILT:
        raise ValueError(f"tilt lam={lam} above {_MAX_REAL_TILT} for the 'add' direction")
    return _log_gauss_integral(lambda t: -lam * l_remove(t), sigma, -14.0 * sigma - 1.0, 14.0 * sigma)


# --------------------------------------------------------------------------------------------
# compositions
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Composition:
    """A sequence of steps composed (adaptively), stored as runs ``((step, count), ...)``.

    The dominating pair of the composition is the product of the steps' pairs and its PRV is the
    sum of theirs (paper 004, Lemma 5), separately for each direction; the reported profile is
    the larger direction's.

    Parameters
    ----------
    segments : tuple of (Step, int)
        Runs of identical steps, in order. Build with :meth:`from_steps`, :meth:`dpsgd`,
        :meth:`from_dp_event` or :func:`as_composition`.

    Raises
    ------
    ValueError
        If a segment is not ``(Step, count >= 1)`` or the composition is empty.
    """

    segments: tuple

    def __post_init__(self):
        segs = []
        for seg in self.segments:
            if not (isinstance(seg, tuple) and len(seg) == 2 and isinstance(seg[0], Step)):
                raise ValueError(f"segments must be (Step, count) pairs, got {seg!r}")
            step, count = seg
            count = check_int(count, "count of a step")
            if segs and segs[-1][0] == step:
                segs[-1] = (step, segs[-1][1] + count)
            else:
                segs.append((step, count))
        if not segs:
            raise ValueError("a composition needs at least one step")
        object.__setattr__(self, "segments", tuple(segs))

    # --- constructors ---------------------------------------------------------------------------
    @classmethod
    def from_steps(cls, steps: Iterable) -> "Composition":
        """From a list of steps or ``(step, count)`` pairs, e.g. ``[(SubsampledGaussianStep(1, .01), 900),
        (GaussianStep(2.0), 1)]``."""
        segs = []
        for item in steps:
            if isinstance(item, Step):
                segs.append((item, 1))
            elif isinstance(item, tuple) and len(item) == 2:
                segs.append((item[0], item[1]))
            else:
                raise ValueError(f"expected a Step or a (Step, count) pair, got {item!r}")
        return cls(tuple(segs))

    @classmethod
    def dpsgd(cls, noise_multiplier: float, sampling_rate: float, steps: int) -> "Composition":
        """``steps`` steps of DP-SGD: Poisson-subsampled Gaussian (a plain Gaussian when q = 1).

        Raises
        ------
        ValueError
            If ``noise_multiplier <= 0``, ``sampling_rate`` outside (0, 1] or ``steps < 1``.
        """
        steps = check_int(steps, "steps")
        q = check_rate(sampling_rate, "sampling_rate q")
        step = GaussianStep(noise_multiplier) if q == 1.0 else SubsampledGaussianStep(noise_multiplier, q)
        return cls(((step, steps),))

    @classmethod
    def from_dp_event(cls, event) -> "Composition":
        """Convert a dp_accounting ``DpEvent``.

        Supported: ``GaussianDpEvent``, ``LaplaceDpEvent``, ``PoissonSampledDpEvent`` of a
        ``GaussianDpEvent``, ``SelfComposedDpEvent``, ``ComposedDpEvent`` (and ``NoOpDpEvent``
        inside a composition).

        Raises
        ------
        UnsupportedEventError
            For any other event (the message names it).
        ValueError
            For invalid parameters (e.g. a zero noise multiplier) or an empty composition.
        """
        return _composition_of_event(event)

    # --- properties -----------------------------------------------------------------------------
    @property
    def num_steps(self) -> int:
        """Total number of steps k."""
        return sum(c for _, c in self.segments)

    @property
    def symmetric(self) -> bool:
        """True when both directions have the same profile (no subsampled step)."""
        return all(s.symmetric for s, _ in self.segments)

    @property
    def directions(self) -> tuple:
        """The directions to evaluate: ``('remove',)`` if symmetric, else ``('remove', 'add')``."""
        return (REMOVE,) if self.symmetric else DIRECTIONS

    @property
    def is_gaussian(self) -> bool:
        """True when every step is a plain Gaussian (the composition is mu-GDP exactly)."""
        return all(isinstance(s, GaussianStep) for s, _ in self.segments)

    @property
    def gaussian_mu(self) -> float:
        """``mu = sqrt(sum_t 1/sigma_t^2)`` of an all-Gaussian composition.

        Raises
        ------
        ValueError
            If a step is not a plain Gaussian.
        """
        if not self.is_gaussian:
            raise ValueError("gaussian_mu needs a composition of plain Gaussian steps")
        return math.sqrt(sum(c / s.sigma ** 2 for s, c in self.segments))

    def log_mgf(self, lam: float, direction: str = REMOVE) -> float:
        """``K(lam)`` of the composed PRV: the sum of the steps' (paper 004, Lemma 5)."""
        return float(sum(c * s.log_mgf(lam, direction) for s, c in self.segments))

    def prefix(self, n: int) -> "Composition":
        """The composition of the first ``n`` steps."""
        n = check_int(n, "n")
        if n > self.num_steps:
            raise ValueError(f"n={n} exceeds the number of steps {self.num_steps}")
        segs, left = [], n
        for s, c in self.segments:
            if left <= 0:
                break
            segs.append((s, min(c, left)))
            left -= c
        return Composition(tuple(segs))

    def to_event(self):
        """The dp_accounting ``DpEvent``: a ``ComposedDpEvent`` of the runs (``SelfComposedDpEvent``
        for a run longer than one; a single run on its own); ``convert(self, "event")``."""
        return convert(self, "event")

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable description: ``{"num_steps", "segments": [{..., "count"}]}``."""
        return {"num_steps": self.num_steps, "segments": [{**s.to_dict(), "count": c} for s, c in self.segments]}

    def describe(self) -> str:
        """One-line human description."""
        parts = []
        for s, c in self.segments:
            if isinstance(s, SubsampledGaussianStep):
                parts.append(f"{c} x subsampled Gaussian(sigma={s.sigma:g}, q={s.sampling_rate:g})")
            elif isinstance(s, GaussianStep):
                parts.append(f"{c} x Gaussian(sigma={s.sigma:g})")
            else:
                parts.append(f"{c} x {s.kind}({', '.join(f'{k}={v:g}' for k, v in s.__dict__.items())})")
        return " + ".join(parts)


# --------------------------------------------------------------------------------------------
# the one conversion between Composition and dp_accounting's DpEvent
# --------------------------------------------------------------------------------------------
CONVERSION_TARGETS = ("composition", "event")


def convert(obj, to: str):
    """The one conversion between dpaudit's compositions and dp_accounting's ``DpEvent``: every
    conversion in either direction goes through here (:func:`as_composition`,
    :func:`as_dp_event`, :meth:`Composition.from_dp_event`, :meth:`Composition.to_event`,
    :meth:`Step.to_event`, the accountants' PLD and RDP calls).

    A composition's event is built once and kept (a small cache keyed by the composition, a
    frozen value): a DP-SGD audit that asks several accountants and grids about one composition
    converts it once. The leaves are built and read by
    :func:`dpaudit.privacy.events.leaf_event` / :func:`~dpaudit.privacy.events.leaf_parameters`.

    Parameters
    ----------
    obj : Composition, Step, list, DpEvent or privacy profile
        A :class:`Composition`; a :class:`Step`; a list of steps or ``(step, count)`` pairs; a
        dp_accounting ``DpEvent`` (``GaussianDpEvent``, ``LaplaceDpEvent``,
        ``PoissonSampledDpEvent(GaussianDpEvent)``, ``SelfComposedDpEvent``, ``ComposedDpEvent``,
        ``NoOpDpEvent`` inside a composition); or a profile of :mod:`dpaudit.privacy.profiles`
        (through its ``to_event()``).
    to : {"composition", "event"}
        What to return.

    Returns
    -------
    Composition or DpEvent
        The composition, or its event: a ``ComposedDpEvent`` of the runs (``SelfComposedDpEvent``
        for a run longer than one, a single run on its own). An event given in comes back
        normalised the same way (read as a composition first, so it is checked).

    Raises
    ------
    UnsupportedEventError, ValueError
        If the object cannot be converted (the message names it), or ``to`` is not one of
        :data:`CONVERSION_TARGETS`.

    References
    ----------
    dp_accounting's ``DpEvent`` (Doroshenko et al. 2022); paper 004, Lemma 5 (composition).
    """
    if to not in CONVERSION_TARGETS:
        raise ValueError(f"to must be one of {CONVERSION_TARGETS}, got {to!r}")
    if isinstance(obj, Composition):
        comp = obj
    elif isinstance(obj, Step):
        comp = Composition(((obj, 1),))
    elif isinstance(obj, (list, tuple)):
        comp = Composition.from_steps(obj)
    elif is_event(obj):
        comp = _composition_of_event(obj)
    elif callable(getattr(obj, "to_event", None)):  # a privacy profile (dpaudit.privacy.profiles)
        comp = _composition_of_event(obj.to_event())
    else:
        raise ValueError(
            f"cannot build a composition from {type(obj).__name__}: give a Composition, a Step, a list of "
            "steps, a dp_accounting DpEvent or a privacy profile with to_event()"
        )
    return comp if to == "composition" else _event_of(comp)


def _step_of(leaf) -> "Step":
    """The step of one leaf event of :func:`dpaudit.privacy.events.event_runs` (rate checked there)."""
    noise, multiplier, rate = leaf_parameters(leaf)
    if noise == "laplace":
        return LaplaceStep(multiplier)
    return GaussianStep(multiplier) if rate is None or rate == 1.0 else SubsampledGaussianStep(multiplier, rate)


def _leaf_of(step: "Step"):
    """The leaf event of one step (the inverse of :func:`_step_of`)."""
    if isinstance(step, SubsampledGaussianStep):
        return leaf_event("gaussian", step.sigma, step.sampling_rate)
    if isinstance(step, GaussianStep):
        return leaf_event("gaussian", step.sigma)
    if isinstance(step, LaplaceStep):
        return leaf_event("laplace", step.scale)
    raise UnsupportedEventError(f"{type(step).__name__} has no dp_accounting event")


def _composition_of_event(event) -> "Composition":
    segs = [(_step_of(leaf), count) for leaf, count in event_runs(event)]
    if not segs:
        raise ValueError(f"the event {event!r} composes no mechanism")
    return Composition(tuple(segs))


@functools.lru_cache(maxsize=64)
def _event_of(comp: "Composition"):
    return event_from_runs([(_leaf_of(step), count) for step, count in comp.segments])


def as_composition(obj) -> Composition:
    """``convert(obj, "composition")``: accept a :class:`Composition`, a :class:`Step`, a list of
    steps / ``(step, count)`` pairs, a dp_accounting ``DpEvent`` (``GaussianDpEvent``,
    ``LaplaceDpEvent``, ``PoissonSampledDpEvent(GaussianDpEvent)``, ``SelfComposedDpEvent``,
    ``ComposedDpEvent``) or a profile of :mod:`dpaudit.privacy.profiles` (through its
    ``to_event()``).

    Raises
    ------
    UnsupportedEventError, ValueError
        If the object cannot be converted.
    """
    return convert(obj, "composition")


def as_dp_event(obj):
    """``convert(obj, "event")``: the dp_accounting ``DpEvent`` of anything :func:`as_composition`
    accepts (see :func:`convert`).

    Raises
    ------
    UnsupportedEventError, ValueError
        If the object cannot be converted.
    """
    return convert(obj, "event")


# --------------------------------------------------------------------------------------------
# bounds from the cumulant generating function (RDP)
# --------------------------------------------------------------------------------------------
def _tilt_grid(comp: Composition, direction: str) -> np.ndarray:
    lam = np.unique(np.concatenate([np.geomspace(1e-3, 0.9, 30), np.arange(1.0, 65.0), np.geomspace(65.0, 250.0, 20)]))
    return lam


def _min_over_tilts(comp: Composition, direction: str, objective) -> tuple[float, float]:
    """Minimise ``objective(lam, K(lam))`` over a grid of tilts refined by golden section."""
    grid = _tilt_grid(comp, direction)
    vals = []
    for lam in grid:
        try:
            vals.append(objective(lam, comp.log_mgf(lam, direction)))
        except (OverflowError, ValueError, FloatingPointError):
            vals.append(math.inf)
    vals = np.asarray(vals, dtype=float)
    vals[np.isnan(vals)] = math.inf  # a failed evaluation must never win the minimum
    if not np.any(np.isfinite(vals)):
        raise FloatingPointError("no tilt gave a finite bound")
    i = int(np.argmin(vals))
    best_lam, best = float(grid[i]), float(vals[i])
    if 0 < i < len(grid) - 1 and grid[i + 1] <= _MAX_REAL_TILT:
        f = lambda lam: objective(lam, comp.log_mgf(lam, direction))  # noqa: E731
        res = optimize.minimize_scalar(f, bounds=(grid[i - 1], grid[i + 1]), method="bounded",
                                       options={"xatol": 1e-6 * grid[i]})
        if res.success and math.isfinite(res.fun) and res.fun < best:
            best_lam, best = float(res.x), float(res.fun)
    return best_lam, best


def delta_upper_bound(composition, epsilon: float, direction: str | None = None) -> float:
    """Upper bound on delta(eps) from the PRV's moment generating function (RDP).

    ``delta(eps) <= min_{lam>0} c1(lam) exp(K(lam) - lam eps)`` with
    ``c1(lam) = (1/(1+lam)) (lam/(1+lam))^lam`` — the u = 1 case of paper 004's moment bound
    (App. E.2, Thm "variancebound"), i.e. the RDP-to-DP conversion of Canonne, Kamath & Steinke
    (2020). Rigorous (up to the double-precision quadrature of K for non-integer tilts).

    Parameters
    ----------
    composition : Composition or convertible
        The mechanism.
    epsilon : float
        eps >= 0.
    direction : {'remove', 'add'} or None
        One direction, or None for the larger of the composition's directions.

    Returns
    -------
    float
        An upper bound on delta(eps), at most 1.
    """
    comp = as_composition(composition)
    eps = check_epsilon(epsilon)
    dirs = comp.directions if direction is None else (_check_direction(direction),)
    out = 0.0
    for d in dirs:
        _, v = _min_over_tilts(comp, d, lambda lam, k: math.log(_c1(lam)) + k - lam * eps)
        out = max(out, min(1.0, math.exp(v)))
    return out


def epsilon_upper_bound(composition, delta: float, direction: str | None = None) -> float:
    """Upper bound on eps(delta): ``min_lam (K(lam) + ln(c1(lam)/delta)) / lam`` (same conversion as
    :func:`delta_upper_bound`), floored at 0.

    Raises
    ------
    ValueError
        If ``delta`` is outside (0, 1).
    """
    comp = as_composition(composition)
    delta = check_delta(delta)
    dirs = comp.directions if direction is None else (_check_direction(direction),)
    out = 0.0
    for d in dirs:
        _, v = _min_over_tilts(comp, d, lambda lam, k: (k + math.log(_c1(lam)) - math.log(delta)) / lam)
        out = max(out, v)
    return max(out, 0.0)


def log_mgf_derivative(comp: Composition, lam: float, direction: str) -> float:
    """``K'(lam)``: the mean of the PRV under the tilted distribution P_lam (central difference)."""
    h = 1e-4 * max(1.0, lam)
    if lam < h:
        return (comp.log_mgf(lam + h, direction) - comp.log_mgf(lam, direction)) / h
    if lam + h > _MAX_REAL_TILT:
        return (comp.log_mgf(lam, direction) - comp.log_mgf(lam - h, direction)) / h
    return (comp.log_mgf(lam + h, direction) - comp.log_mgf(lam - h, direction)) / (2 * h)


def saddlepoint_tilt(composition, epsilon: float, direction: str = REMOVE, max_tilt: float | None = None) -> float:
    """The tilt ``lam >= 0`` with ``K'(lam) = eps``: under P_lam the PRV has mean eps.

    This is the classical choice of exponential tilt for estimating ``Pr[L > eps]`` of a sum
    (Siegmund 1976; Bucklew 2004, Ch. 5). Returns 0 when the untilted mean ``K'(0)`` (the KL
    divergence) already exceeds eps, and at most ``max_tilt`` (default: the largest tilt the
    direction's sampler supports efficiently).
    """
    comp = as_composition(composition)
    eps = check_epsilon(epsilon)
    direction = _check_direction(direction)
    cap = max_tilt if max_tilt is not None else max_supported_tilt(comp, direction)
    f = lambda lam: log_mgf_derivative(comp, lam, direction) - eps  # noqa: E731
    if f(0.0) >= 0:
        return 0.0
    hi = 1.0
    while hi < cap and f(hi) < 0:
        hi *= 2.0
    hi = min(hi, cap)
    if f(hi) < 0:
        return float(hi)
    return float(optimize.brentq(f, 0.0, hi, xtol=1e-6))


def max_supported_tilt(comp: Composition, direction: str) -> float:
    """Largest tilt whose sampler accepts at least 10% of proposals (``(1-q)^lam >= 0.1`` for the
    'add' direction of a subsampled step) and whose K is available."""
    cap = _MAX_REAL_TILT
    if direction == ADD:
        for s, _ in comp.segments:
            if isinstance(s, SubsampledGaussianStep) and s.sampling_rate < 1.0:
                cap = min(cap, math.log(0.1) / math.log1p(-s.sampling_rate))
    return cap



#: smallest acceptance rate allowed for a rejection-sampled tilted step (see :func:`feasible_tilt`)
MIN_ACCEPTANCE = 0.1


def sampler_acceptance(step: "Step", lam: float, direction: str) -> float:
    """Acceptance rate of the rejection sampler of ``step``'s tilted distribution ``P_lam`` (1 when
    the sampler draws exactly).

    * remove direction of a subsampled Gaussian: the proposal is the tilt at the integer
      ``n = ceil(1 + lam)`` (a Gaussian mixture) and a draw is kept with probability
      ``(a/(1-q))^(1 + lam - n)``, so the rate is ``E_Q[a^(1+lam)] / E_Q[a^n] (1-q)^(n-1-lam)
      = exp(K(lam) - K(n-1) + (n-1-lam) ln(1-q))``;
    * add direction: proposal N(0, s^2), kept with probability ``((1-q)/a)^lam``, rate
      ``exp(lam ln(1-q) + K_add(lam))``.

    Parameters
    ----------
    step : Step
        One step of a composition.
    lam : float
        Tilt >= 0.
    direction : {'remove', 'add'}

    Returns
    -------
    float
        The expected fraction of proposals accepted, in (0, 1].
    """
    lam = _check_tilt(lam)
    direction = _check_direction(direction)
    if not isinstance(step, SubsampledGaussianStep) or step.sampling_rate == 1.0:
        return 1.0
    log1mq = math.log1p(-step.sampling_rate)
    if direction == REMOVE:
        n = int(math.ceil(1.0 + lam - 1e-12))
        if n - 1.0 - lam > -1e-12 and (n - 1.0 - lam) < 1e-12:
            return 1.0
        out = step.log_mgf(lam, REMOVE) - step.log_mgf(float(n - 1), REMOVE) + (n - 1.0 - lam) * log1mq
    else:
        if lam == 0.0:
            return 1.0
        out = lam * log1mq + step.log_mgf(lam, ADD)
    return float(min(1.0, math.exp(out)))


def feasible_tilt(composition, lam: float, direction: str, min_acceptance: float = MIN_ACCEPTANCE) -> float:
    """The tilt actually used for sampling: ``lam`` itself when every step's sampler accepts at
    least ``min_acceptance`` of its proposals, otherwise the nearest tilt that does.

    For the remove direction of a subsampled Gaussian an integer tilt is sampled exactly (no
    rejection), so ``lam`` is rounded to the nearest integer; for the add direction the tilt is
    lowered (bisection) until the rate is reached. Any tilt gives an unbiased importance sampling
    estimator; this only trades some variance for a sampler that always finishes (a sampler that
    accepts ``r`` of its proposals leaves an entry pending after the 1024 rounds of
    :func:`_reject` with probability ``(1 - r)^1024``, about 1e-47 at r = 0.1).

    Parameters
    ----------
    composition : Composition or convertible
    lam : float
        Requested tilt >= 0.
    direction : {'remove', 'add'}
    min_acceptance : float
        Smallest acceptable rate, in (0, 1].

    Returns
    -------
    float
        A tilt in [0, max(lam, 1)] whose samplers accept at least ``min_acceptance``.

    Raises
    ------
    ValueError
        If ``min_acceptance`` is outside ``(0, 1]``.
    """
    comp = as_composition(composition)
    lam = _check_tilt(lam)
    direction = _check_direction(direction)
    if not (0.0 < min_acceptance <= 1.0):
        raise ValueError(f"min_acceptance must be in (0, 1], got {min_acceptance!r}")

    def ok(x: float) -> bool:
        return all(sampler_acceptance(s, x, direction) >= min_acceptance for s, _ in comp.segments)

    if ok(lam):
        return float(lam)
    if direction == REMOVE:
        r = float(round(lam))
        return min(r, _MAX_REAL_TILT)
    return float(bisect(ok, 0.0, float(lam), max_iter=60, rtol=1e-6)[0])
