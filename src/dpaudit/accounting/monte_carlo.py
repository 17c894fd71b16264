"""Monte Carlo accountant: privacy accounting as mean estimation of the privacy loss random variable.

For a composition with dominating pair (P, Q) and PRV ``L = sum_t l_t(T_t)``, ``T ~ P``,

    delta(eps) = E_P[(1 - exp(eps - L))_+]            (paper 004, Lemma 2 and §2)

is estimated from ``m`` independent draws (paper 004, §4.2 and §5, Alg. 3). Estimators
(derivations in docs/accounting.md):

* ``'simple'`` — simple Monte Carlo (paper 004, Def. 11): draw T ~ P.
* ``'is'`` — importance sampling with the exponential tilt of the whole PRV: every coordinate from
  ``P_lam,t ∝ P_t^(1+lam) Q_t^(-lam)``, weight ``dP/dP_lam = exp(K(lam) - lam L)`` with ``K`` the PRV's
  cumulant generating function (what RDP accountants compute). The tilt is the saddle point
  ``K'(lam) = eps`` (Siegmund 1976); several tilts are mixed with the balance heuristic
  ``1 / mean_g exp(lam_g L - K(lam_g))`` (Veach & Guibas 1995). Each term is at most
  ``c1(lam) exp(K(lam) - lam eps)``, the RDP bound on delta: the verifier relies on it.
* ``'cmc'`` — conditional Monte Carlo (Asmussen & Kroese 2006): one uniformly chosen coordinate is
  integrated out in closed form and the excess loss is attributed to it when it is the largest;
  the other coordinates are tilted. Bounded relative error when one large step drives delta.
* ``'is-cmc'`` — ``is``, ``cmc`` and plain conditional Monte Carlo computed from the same draws and
  combined with variance-minimising convex weights.
* ``'is-paper'`` — paper 004's estimator (App. C, Def. 16): tilt one uniformly chosen coordinate's
  output with ``theta = t*/sigma^2``, ``t* = 1/2 + sigma^2 ln((e^eps - 1 + q)/q)`` (App. C.2, eq. 8),
  weight ``(mean_i P_theta(t_i)/P(t_i))^-1``.
* ``'auto'`` (default) — ``is-cmc`` for compositions with a subsampled step, ``is`` otherwise.

``eps(delta)`` is found on the same samples (paper 004, Alg. 3): exactly for ``simple``/``is`` (the
estimate is ``(W - e^eps V)/m`` between consecutive sorted losses), by Brent's method otherwise.
Confidence intervals (``ci_low``/``ci_high``) are normal-approximation (Wald) intervals from the
empirical variance of the terms; the eps interval inverts the pointwise delta interval. They
undercover when the weights are heavy-tailed, so every result also carries a one-sided upper
confidence bound (``delta_upper``/``epsilon_upper``) that needs no normal approximation: Maurer's
(2003) lower-tail inequality applied to the importance-sampling terms, which are bounded a priori
by the RDP bound at the sampling tilt, capped by the RDP bound itself. It comes with diagnostics
(effective sample size, largest term's share, ``trusted``), see :class:`MonteCarloAccountant` and
docs/accounting.md §3. Both directions of a subsampled step
are estimated and the larger profile is reported (as dp_accounting does).

Randomness comes from the tile-based PCG64 streams of :mod:`._backend` keyed by ``rng``: a seed
gives the same result whatever the chunking; the NumPy and torch-CPU backends give the same draws,
torch on CUDA draws with its own generator (reproducible per seed, other draws).
"""

from __future__ import annotations

import contextlib
import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
from scipy import optimize, special

from .._validate import as_rng, check_delta, check_epsilon, check_int, check_probability
from . import prv as _prv
from ._backend import (
    SLOT_COLLAPSED,
    TILE_STEPS,
    Cell,
    check_counter_space,
    get_ops,
    key_from_rng,
    sample_uniforms,
    splitmix64,
)
from .prv import (
    ADD,
    REMOVE,
    Composition,
    GaussianStep,
    SubsampledGaussianStep,
    as_composition,
    epsilon_upper_bound,
    feasible_tilt,
    max_supported_tilt,
    saddlepoint_tilt,
)

__all__ = [
    "DeltaEstimate",
    "EpsilonEstimate",
    "ESTIMATORS",
    "MonteCarloAccountant",
    "MonteCarloCrossCheckWarning",
    "OnlineEpsilonEstimate",
    "PrivacyLossSamples",
    "cross_check",
    "estimate_delta",
    "estimate_epsilon",
    "estimate_epsilon_online",
    "nonnegative_upper_bound",
    "sample_privacy_loss",
    "term_diagnostics",
    "term_log_bound",
]

ESTIMATORS = ("auto", "is-cmc", "cmc", "is", "simple", "is-paper")
#: default number of array elements per block (about 16 MB per float64 array)
DEFAULT_CHUNK = 1 << 21

ProgressFn = Callable[[int, int], None]


# --------------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------------
def _check_samples(num_samples, name: str = "num_samples") -> int:
    return check_int(num_samples, name, minimum=2)


def resolve_estimator(estimator: str, comp: Composition) -> str:
    """'auto' -> 'cmc' when the composition has a subsampled step, else 'is' (see the module docstring)."""
    if estimator != "auto":
        return estimator
    tails = all(isinstance(s, (GaussianStep, SubsampledGaussianStep)) for s, _ in comp.segments)
    return "is-cmc" if (tails and not comp.symmetric) else "is"


def _check_estimator_name(estimator: str) -> str:
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {', '.join(ESTIMATORS)}, got {estimator!r}")
    return estimator


def _check_estimator(estimator: str, comp: Composition) -> str:
    estimator = resolve_estimator(_check_estimator_name(estimator), comp)
    if estimator in ("is-paper", "cmc", "is-cmc"):
        for s, _ in comp.segments:
            if not isinstance(s, (GaussianStep, SubsampledGaussianStep)):
                raise ValueError(f"estimator {estimator!r} needs (subsampled) Gaussian steps, got a {s.kind} step")
    return estimator


def _check_chunk(chunk_elements) -> int:
    return check_int(chunk_elements, "chunk_elements", minimum=1024)


# --------------------------------------------------------------------------------------------
# weighted samples of the PRV and the statistics computed from them
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class PrivacyLossSamples:
    """Weighted draws of a privacy loss random variable (one direction of a dominating pair).

    ``E[w * g(L)] = E_P[g(L)]`` for every function g, with ``L = losses`` and ``w = exp(log_weights)``.

    Attributes
    ----------
    losses : ndarray, shape (m,)
        Privacy loss of each draw (nats).
    log_weights : ndarray, shape (m,)
        ln of the importance weight dP/dP' of each draw (0 for simple Monte Carlo).
    direction : str
        'remove' or 'add'.
    estimator : str
        Which proposal drew them.
    tilts : tuple of float
        Tilts of the proposal (empty for the simple and the paper's estimators).
    """

    losses: np.ndarray
    log_weights: np.ndarray
    direction: str = REMOVE
    estimator: str = "simple"
    tilts: tuple = ()
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def num_samples(self) -> int:
        """Number of draws m."""
        return int(self.losses.shape[0])

    def terms(self, epsilon: float) -> np.ndarray:
        """The unbiased terms ``w_i (1 - exp(eps - L_i))_+`` whose mean estimates delta(eps), shape (m,)."""
        eps = check_epsilon(epsilon)
        x = eps - self.losses
        pos = x < 0
        out = np.zeros_like(self.losses)
        out[pos] = -np.expm1(x[pos]) * np.exp(self.log_weights[pos])
        return out

    def delta(self, epsilon: float) -> tuple[float, float]:
        """Estimate of delta(eps) and its standard error ``s / sqrt(m)``."""
        t = self.terms(epsilon)
        m = t.shape[0]
        mean = float(t.mean())
        se = float(t.std(ddof=1) / math.sqrt(m)) if m > 1 else math.inf
        return mean, se

    def _sorted(self) -> dict:
        """Positive losses sorted in decreasing order with cumulative sums of the weighted terms."""
        if "sorted" not in self._cache:
            pos = self.losses > 0.0
            ls, lw = self.losses[pos], self.log_weights[pos]
            order = np.argsort(-ls, kind="stable")
            ls, lw = ls[order], lw[order]
            sa = float(np.max(lw)) if ls.size else 0.0
            sb = float(np.max(lw - ls)) if ls.size else 0.0

            def csum(x):
                return np.concatenate([[0.0], np.cumsum(np.exp(x))])

            # cumulative sums of w, w e^{-L}, w^2, w^2 e^{-L}, w^2 e^{-2L}, scaled by e^{sa}, e^{sb}
            self._cache["sorted"] = {
                "L": ls, "sa": sa, "sb": sb,
                "A": csum(lw - sa), "B": csum(lw - ls - sb),
                "A2": csum(2 * (lw - sa)), "B2": csum(2 * lw - ls - sa - sb), "C2": csum(2 * (lw - ls - sb)),
            }
        return self._cache["sorted"]

    def _stats_at(self, eps: float, r: int) -> tuple[float, float]:
        """(mean, se) of the terms at eps, given that exactly the r largest losses exceed eps."""
        c = self._sorted()
        m = self.num_samples
        if r == 0:
            return 0.0, 0.0

        def ex(logscale: float, s: float) -> float:
            return math.exp(logscale + math.log(s)) if s > 0 else 0.0

        sa, eb = c["sa"], eps + c["sb"]
        s1 = ex(sa, c["A"][r]) - ex(eb, c["B"][r])
        s2 = ex(2 * sa, c["A2"][r]) - 2.0 * ex(sa + eb, c["B2"][r]) + ex(2 * eb, c["C2"][r])
        mean = max(s1, 0.0) / m
        var = max(s2 / m - mean * mean, 0.0) * m / (m - 1)
        return mean, math.sqrt(var / m)

    def _count_above(self, eps: float) -> int:
        ls = self._sorted()["L"]
        return int(np.searchsorted(-ls, -eps, side="left"))

    def delta_curve(self, epsilons) -> tuple[np.ndarray, np.ndarray]:
        """Estimates and standard errors of delta at each eps of ``epsilons`` (1-D array)."""
        e = np.atleast_1d(np.asarray(epsilons, dtype=float))
        if np.any(~np.isfinite(e)) or np.any(e < 0):
            raise ValueError(f"epsilons must be finite and >= 0, got {epsilons!r}")
        out = np.array([self._stats_at(float(x), self._count_above(float(x))) for x in e]).reshape(-1, 2)
        return out[:, 0], out[:, 1]

    def epsilon(self, delta: float, z: float = 0.0) -> float:
        """Smallest eps >= 0 with ``delta_hat(eps) + z * se(eps) <= delta`` (z = 0: the estimate).

        The estimate is continuous and decreasing in eps; between consecutive sorted losses it is
        ``(W - e^eps V) / m`` with fixed sums W, V, so the root is found by a binary search over the
        sorted losses and then in closed form (z = 0) or by bisection (z != 0). A positive z gives
        the upper end of the confidence interval of eps(delta), a negative z the lower end.
        """
        delta = check_delta(delta)
        c = self._sorted()
        ls = c["L"]
        m = self.num_samples
        R = ls.shape[0]

        def g(eps: float, r: int) -> float:
            mean, se = self._stats_at(eps, r)
            return mean + z * se

        if R == 0 or g(0.0, R) <= delta:
            return 0.0
        # breakpoint r is eps = ls[r], where exactly r losses exceed eps; g grows with r
        if g(float(ls[R - 1]), R - 1) < delta:
            a, b, r = 0.0, float(ls[R - 1]), R
        else:
            lo, hi = 0, R - 1  # g(ls[lo]) < delta <= g(ls[hi]); g(ls[0]) = 0
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if g(float(ls[mid]), mid) >= delta:
                    hi = mid
                else:
                    lo = mid
            a, b, r = float(ls[hi]), float(ls[hi - 1]), hi
        if z == 0.0:
            num = math.exp(c["sa"]) * c["A"][r] - m * delta
            if num > 0 and c["B"][r] > 0:
                eps = math.log(num) - math.log(c["B"][r]) - c["sb"]
                return float(min(max(eps, a), b))
        return float(_prv.bisect(lambda e: g(e, r) > delta, a, b, max_iter=100, rtol=1e-13)[1])


def _convex_min_variance(cov: np.ndarray) -> np.ndarray:
    """argmin a' cov a over the simplex {a >= 0, sum a = 1}, by enumerating supports (3 x 3 case)."""
    n = cov.shape[0]
    best, best_v = None, math.inf
    for mask in range(1, 1 << n):
        idx = [i for i in range(n) if mask >> i & 1]
        sub = cov[np.ix_(idx, idx)]
        try:
            w = np.linalg.solve(sub + 1e-12 * np.trace(sub) * np.eye(len(idx)) + 1e-300 * np.eye(len(idx)),
                                np.ones(len(idx)))
        except np.linalg.LinAlgError:
            continue
        if not np.all(np.isfinite(w)) or w.sum() <= 0:
            continue
        w = w / w.sum()
        if np.any(w < 0):
            continue
        a = np.zeros(n)
        a[idx] = w
        v = float(a @ cov @ a)
        if v < best_v:
            best, best_v = a, v
    if best is None:
        best = np.zeros(n)
        best[int(np.argmin(np.diag(cov)))] = 1.0
    return best


def _fit_weights(y: np.ndarray) -> np.ndarray:
    """Convex weights of the (is, cmc, cond) columns of ``y`` (m, 3) minimising the empirical variance.

    'is' and 'cond' miss the mass of draws where another coordinate carries the loss when that is
    rare under the proposal, and then look precise while being off; they are kept only with at
    least 20 nonzero terms and when they agree with 'cmc' (unbiased with bounded relative error in
    that regime) within 4 standard errors.
    """
    m = y.shape[0]
    mean = y.mean(axis=0)
    se = y.std(axis=0, ddof=1) / math.sqrt(m)
    keep = [1]
    for j in (0, 2):
        if np.count_nonzero(y[:, j]) >= 20 and abs(mean[j] - mean[1]) <= 4.0 * math.hypot(se[j], se[1]):
            keep.append(j)
    keep.sort()
    a = np.zeros(3)
    a[keep] = _convex_min_variance(np.cov(y[:, keep], rowvar=False).reshape(len(keep), len(keep)))
    return a


@dataclass(frozen=True, eq=False)
class ConditionalLossSamples:
    """Draws for the conditional Monte Carlo estimators ('cmc', and 'is-cmc' which combines them).

    Every draw tilts all k coordinates (as 'is' does) and picks one coordinate I uniformly; three
    unbiased estimators of delta(eps) are computed from the same draw:

    * ``is``: ``w (1 - e^{eps - L})_+`` with the full loss L (as :class:`PrivacyLossSamples`);
    * ``cmc`` (Asmussen & Kroese 2006): coordinate I is integrated out analytically and the excess
      loss is attributed to it when it is the largest,
      ``k w_{-I} [P_I(l > c) - e^{eps - S} Q_I(l > c)]``, ``c = max(M, eps - S)``,
      because ``delta = sum_i E[(1 - e^{eps - L})_+ 1{l_i = max_j l_j}]``;
    * ``cond`` (plain conditional Monte Carlo): ``w_{-I} [P_I(l > eps - S) - e^{eps - S} Q_I(l > eps - S)]``,

    where S and M are the sum and the maximum of the other k - 1 losses and w_{-I} their likelihood
    ratio. The tails P_I, Q_I are closed forms in Gaussian CDFs. With ``estimator='is-cmc'`` the three
    are combined with the weights ``a`` (summing to 1) that minimise the empirical variance of
    ``sum_j a_j Y_j`` (the classical optimal combination of unbiased estimators; estimating ``a``
    from the same draws costs an O(1/m) bias, negligible next to the standard error). With
    ``estimator='cmc'`` only the second is used.

    Attributes
    ----------
    losses, others_sum, others_max : ndarray, shape (m,)
        L, S and M of each draw (nats).
    log_weights, log_weights_others : ndarray, shape (m,)
        ln w (all k coordinates) and ln w_{-I} (the k - 1 others).
    segment : ndarray of int, shape (m,)
        Composition segment of the integrated coordinate I.
    steps : tuple of Step
        The step of each segment.
    num_steps : int
        k.
    """

    losses: np.ndarray
    others_sum: np.ndarray
    others_max: np.ndarray
    log_weights: np.ndarray
    log_weights_others: np.ndarray
    segment: np.ndarray
    steps: tuple
    num_steps: int
    direction: str = REMOVE
    estimator: str = "is-cmc"
    tilts: tuple = ()
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def num_samples(self) -> int:
        """Number of draws m."""
        return int(self.losses.shape[0])

    def components(self, epsilon: float, columns=(0, 1, 2)) -> np.ndarray:
        """The three unbiased per-draw estimates (is, cmc, cond) of delta(eps), shape (m, 3) (only
        ``columns`` are computed; the others are left at 0)."""
        from ._backend import NumpyOps

        eps = check_epsilon(epsilon)
        ops = NumpyOps()
        out = np.zeros((self.num_samples, 3))
        if 0 in columns:
            x = eps - self.losses
            pos = x < 0
            out[pos, 0] = -np.expm1(x[pos]) * np.exp(self.log_weights[pos])
        e1 = eps - self.others_sum
        c_max = np.maximum(self.others_max, e1)
        w_o = np.exp(self.log_weights_others)
        for si, step in enumerate(self.steps):
            sel = self.segment == si if len(self.steps) > 1 else slice(None)
            if len(self.steps) > 1 and not np.any(sel):
                continue
            for col, c in ((1, c_max[sel]), (2, e1[sel])):
                if col not in columns:
                    continue
                lp, lq = step.log_tails(ops, c, self.direction)
                with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
                    r = np.minimum(e1[sel] + lq - lp, 0.0)
                    h = np.where(np.isfinite(lp), np.exp(lp) * -np.expm1(r), 0.0)
                out[sel, col] = h * w_o[sel]
        out[:, 1] *= self.num_steps
        return out

    def coefficients(self, epsilon: float, rows=None) -> np.ndarray:
        """Weights (summing to 1) of the (is, cmc, cond) estimates at eps: fixed (0, 1, 0) for 'cmc';
        for 'is-cmc' the nonnegative weights minimising ``a' S a`` for the empirical covariance S of
        the draws ``rows`` (all by default). Nonnegativity keeps the combination from extrapolating
        on noisy covariances."""
        if self.estimator == "cmc":
            return np.array([0.0, 1.0, 0.0])
        y = self.components(epsilon)
        return _fit_weights(y if rows is None else y[rows])

    def _coef_pair(self, epsilon: float) -> np.ndarray:
        """Cross-fitted weights, shape (2, 3): row 0 (fitted on the odd draws) weights the even
        draws and row 1 (fitted on the even draws) the odd ones, so that no draw's weight depends
        on the draw itself and the empirical standard error stays honest."""
        if "fixed" in self._cache:
            return self._cache["fixed"]
        key = ("coef", round(float(epsilon), 12))
        if key not in self._cache:
            if self.estimator == "cmc":
                a = np.array([0.0, 1.0, 0.0])
                self._cache[key] = np.stack([a, a])
            else:
                y = self.components(epsilon)
                self._cache[key] = np.stack([_fit_weights(y[1::2]), _fit_weights(y[0::2])])
        return self._cache[key]

    def fix_coefficients(self, epsilon: float) -> np.ndarray:
        """Use the (cross-fitted) weights chosen at ``epsilon`` for every eps from now on (makes
        delta_hat(eps) a monotone function for the eps(delta) search); returns them, shape (2, 3)."""
        self._cache.pop("fixed", None)
        pair = self._coef_pair(epsilon)
        self._cache["fixed"] = pair
        return pair

    def terms(self, epsilon: float) -> np.ndarray:
        """Per-draw terms of the (combined) estimate of delta(eps), shape (m,)."""
        pair = self._coef_pair(epsilon)
        cols = tuple(int(j) for j in np.nonzero(pair.sum(axis=0))[0])
        y = self.components(epsilon, cols)
        t = y @ pair[0]
        t[1::2] = y[1::2] @ pair[1]
        return t

    def delta(self, epsilon: float) -> tuple[float, float]:
        """Estimate of delta(eps) and its standard error."""
        t = self.terms(epsilon)
        return float(t.mean()), float(t.std(ddof=1) / math.sqrt(t.shape[0]))

    def delta_curve(self, epsilons) -> tuple[np.ndarray, np.ndarray]:
        """Estimates and standard errors at each eps of ``epsilons``."""
        e = np.atleast_1d(np.asarray(epsilons, dtype=float))
        out = np.array([self.delta(float(x)) for x in e]).reshape(-1, 2)
        return out[:, 0], out[:, 1]

    def epsilon(self, delta: float, z: float = 0.0) -> float:
        """Smallest eps >= 0 with ``delta_hat(eps) + z se(eps) <= delta`` (Brent's method).

        For 'is-cmc' the combination weights are first fixed at the root of the 'cmc' estimate, so
        that the function searched is monotone.
        """
        delta = check_delta(delta)
        if self.estimator == "is-cmc" and "fixed" not in self._cache:
            cmc = np.array([0.0, 1.0, 0.0])
            self._cache["fixed"] = np.stack([cmc, cmc])
            e0 = self._root(delta, 0.0)
            self.fix_coefficients(e0 if math.isfinite(e0) else 0.0)
        return self._root(delta, z)

    def _root(self, delta: float, z: float) -> float:
        def g(eps):
            mean, se = self.delta(eps)
            return mean + z * se

        if g(0.0) <= delta:
            return 0.0
        lo, hi = 0.0, 1.0
        while g(hi) > delta:
            lo, hi = hi, 2.0 * hi
            if hi > 1e6:
                return math.inf
        return float(optimize.brentq(lambda e: g(e) - delta, lo, hi, xtol=1e-12, rtol=1e-12))


# --------------------------------------------------------------------------------------------
# the sampler
# --------------------------------------------------------------------------------------------
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


class _Sampler:
    """Draws weighted PRV samples of one direction, tile by tile (see :mod:`._backend`).

    Sample i uses tilt ``tilts[i % G]``; a tile holds ``G * ops.tile_rows`` samples, and within a
    tile each tilt group draws from its own block of rows (see :meth:`_groups`). The draws of a
    tile come from the cells of that tile (``TILE_STEPS`` steps of one segment each); ``num_samples`` (set
    by :func:`_run_offline` and :meth:`online`) ends the last tile, so that the draws do not
    depend on how the samples are split into blocks.
    """

    def __init__(self, comp: Composition, direction: str, estimator: str, tilts: Sequence[float],
                 epsilon_paper: float | None, key: int, ops, chunk_elements: int, collapse_gaussian: bool,
                 num_samples: int | None = None):
        self.comp, self.direction, self.estimator = comp, direction, estimator
        self.tilts = tuple(float(x) for x in tilts) if estimator in ("is", "cmc", "is-cmc") else (0.0,)
        self.key, self.ops, self.chunk = key, ops, chunk_elements
        self.collapse = collapse_gaussian and estimator not in ("is-paper", "cmc", "is-cmc")
        self.n_total = comp.num_steps
        self.num_samples = num_samples
        # one tile holds ops.tile_rows samples per tilt group
        self.tile_rows = int(ops.tile_rows) * len(self.tilts)
        self.starts = np.cumsum([0] + [c for _, c in comp.segments])[:-1]
        self.K = [comp.log_mgf(lam, direction) for lam in self.tilts]
        if estimator == "is-paper":
            if direction != REMOVE and not comp.symmetric:
                raise ValueError("estimator 'is-paper' is defined for the 'remove' direction only")
            self.paper = [_paper_theta(s, float(epsilon_paper)) for s, _ in comp.segments]

    # --- layout -------------------------------------------------------------------------------
    @staticmethod
    def _cells(j0: int, count: int) -> list:
        """``(first step, width)`` of the cells of the segment with steps ``j0 .. j0 + count - 1``."""
        out, c, end = [], int(j0), int(j0) + int(count)
        while c < end:
            nxt = min(end, (c // TILE_STEPS + 1) * TILE_STEPS)
            out.append((c, nxt - c))
            c = nxt
        return out

    def _rows(self, tile: int) -> int:
        """Number of samples in sample tile ``tile``."""
        r0 = tile * self.tile_rows
        end = r0 + self.tile_rows
        return end - r0 if self.num_samples is None else min(end, self.num_samples) - r0

    def _groups(self, tile: int, n: int) -> list:
        """``(offset, start, count)`` of each tilt group g of a tile of n samples: sample i uses tilt
        i % G, so the group's samples are the tile's rows ``offset::G``; its random numbers are the
        cell rows ``start .. start + count - 1`` (groups in order, contiguous)."""
        G = len(self.tilts)
        out, start = [], 0
        for g in range(G):
            off = (g - tile * self.tile_rows) % G
            count = len(range(off, n, G))
            out.append((off, start, count))
            start += count
        return out

    # --- offline ------------------------------------------------------------------------------
    def draw(self, lo: int, hi: int):
        """Draws of the samples with global indices lo..hi-1, as NumPy arrays: ``(L, log_w)``, or for
        'cmc'/'is-cmc' ``(L, S, M, log_w, log_w_others, segment)``."""
        TS = self.tile_rows
        parts = []
        for ti in range(lo // TS, (hi - 1) // TS + 1):
            r0 = ti * TS
            if self.estimator == "is-paper":
                out = self._draw_paper(ti)
            elif self.estimator in ("cmc", "is-cmc"):
                out = self._draw_cmc(ti)
            else:
                out = self._draw_is(ti)
            a, b = max(lo - r0, 0), min(hi - r0, out[0].shape[0])
            parts.append(tuple(x[a:b] for x in out))
        if len(parts) == 1:
            return parts[0]
        return tuple(np.concatenate([p[i] for p in parts]) for i in range(len(parts[0])))

    def _draw_is(self, ti: int):
        ops = self.ops
        n = self._rows(ti)
        G = len(self.tilts)
        groups = self._groups(ti, n)
        L = ops.full((n,), 0.0)
        for (step, count), j0 in zip(self.comp.segments, self.starts):
            if self.collapse and isinstance(step, GaussianStep):
                # sum of `count` Gaussian losses under the tilt: N(count (1/2 + lam)/s^2, count/s^2)
                z = Cell(ops, self.key, ti, n, int(j0), 1).normal(SLOT_COLLAPSED)[:, 0]
                for g, (off, a, c) in enumerate(groups):
                    mean = count * (0.5 + self.tilts[g]) / step.sigma ** 2
                    L[off::G] += mean + math.sqrt(count) / step.sigma * z[a:a + c]
                continue
            plans = [step.plan(lam, self.direction) for lam in self.tilts]
            for c0, w in self._cells(j0, count):
                cell = Cell(ops, self.key, ti, n, c0, w)
                for g, (off, a, c) in enumerate(groups):
                    if c:
                        L[off::G] += ops.rowsum(plans[g].draw_loss(ops, cell.group(a, c)))
        if self.estimator == "simple":
            return ops.to_numpy(L), np.zeros(n)
        return ops.to_numpy(L), ops.to_numpy(_balance_log_weights(self.K, self.tilts, L, ops))

    def _pick(self, ti: int, n: int) -> np.ndarray:
        """The coordinate each sample of the tile integrates out (or tilts, for 'is-paper'), uniform."""
        k = self.n_total
        u = self.ops.to_numpy(sample_uniforms(self.ops, self.key, ti, n, 7))
        return np.minimum((u * k).astype(np.int64), k - 1)

    def _draw_cmc(self, ti: int):
        """(L, S, M, log_w, log_w_others, segment of I) with I uniform over the steps, excluded from S and M."""
        ops = self.ops
        n, G = self._rows(ti), len(self.tilts)
        groups = self._groups(ti, n)
        pick = self._pick(ti, n)
        seg = np.searchsorted(self.starts, pick, side="right") - 1
        picks = [pick[off::G] for off, _, _ in groups]
        acc = [[ops.full((len(p),), 0.0), ops.full((len(p),), 0.0), ops.full((len(p),), -math.inf)] for p in picks]
        for (step, count), j0 in zip(self.comp.segments, self.starts):
            plans = [step.plan(lam, self.direction) for lam in self.tilts]
            for c0, w in self._cells(j0, count):
                cell = Cell(ops, self.key, ti, n, c0, w)
                for g, (off, a, c) in enumerate(groups):
                    if not c:
                        continue
                    Sg, Lg, Mg = acc[g]
                    loss = plans[g].draw_loss(ops, cell.group(a, c))
                    s = ops.rowsum(loss)
                    Sg = Sg + s
                    Lg = Lg + s
                    # exclude the integrated coordinate: subtract it from S and hide it from M
                    rows_in = np.nonzero((picks[g] >= c0) & (picks[g] < c0 + w))[0]
                    if rows_in.size:
                        cols_in = picks[g][rows_in] - c0
                        if ops.name != "numpy":
                            rows_in = ops.torch.as_tensor(rows_in, device=ops.dev)
                            cols_in = ops.torch.as_tensor(cols_in, device=ops.dev)
                        Sg[rows_in] = Sg[rows_in] - loss[rows_in, cols_in]
                        loss[rows_in, cols_in] = -math.inf
                    acc[g] = [Sg, Lg, ops.maximum(Mg, ops.rowmax(loss))]
        S = np.zeros(n)
        L = np.zeros(n)
        M = np.full(n, -np.inf)
        for g, (off, _, _) in enumerate(groups):
            S[off::G], L[off::G], M[off::G] = (ops.to_numpy(x) for x in acc[g])
        lam = np.asarray(self.tilts)
        kseg = np.array([[st.log_mgf(x, self.direction) for x in self.tilts] for st, _ in self.comp.segments])
        kminus = np.asarray(self.K)[None, :] - kseg[seg]          # (n, G): K of the other k-1 steps
        logw_o = math.log(G) - special.logsumexp(lam[None, :] * S[:, None] - kminus, axis=1)
        logw = math.log(G) - special.logsumexp(lam[None, :] * L[:, None] - np.asarray(self.K)[None, :], axis=1)
        return L, S, M, logw, logw_o, seg

    def _draw_paper(self, ti: int):
        ops = self.ops
        n = self._rows(ti)
        k = self.n_total
        L = ops.full((n,), 0.0)
        log_s = ops.full((n,), -math.inf)
        pick = self._pick(ti, n)
        for (step, count), j0, (theta, log_m, (comp_logp, means)) in zip(self.comp.segments, self.starts, self.paper):
            plan = step.plan(0.0, REMOVE)
            edges = np.cumsum(np.exp(comp_logp))[:-1]
            for c0, w in self._cells(j0, count):
                cell = Cell(ops, self.key, ti, n, c0, w)
                steps = np.arange(c0, c0 + w)
                t = plan.draw(ops, cell.group(0, n))
                mask_np = pick[:, None] == steps[None, :]
                if mask_np.any():
                    mask = mask_np if ops.name == "numpy" else ops.torch.as_tensor(mask_np, device=ops.dev)
                    comp_i = ops.searchsorted(edges, cell.uniform(3)[mask])
                    tt = ops.take(means, comp_i) + step.sigma * cell.normal(4)[mask]
                    t[mask] = tt
                L = L + ops.sum(plan.loss(ops, t), axis=1)
                log_s = ops.logaddexp(log_s, ops.logsumexp(theta * t - log_m, 1))
        return ops.to_numpy(L), ops.to_numpy(math.log(k) - log_s)

    # --- online -------------------------------------------------------------------------------
    def _cell_losses(self, plans, c0: int, w: int, with_reservoir: bool = False):
        """Losses of every sample at steps c0..c0+w-1, shape (m, w) (backend array), and for
        ``with_reservoir`` also the cells' slot-6 uniforms as a NumPy (m, w) array."""
        ops = self.ops
        m, TS, G = self.num_samples, self.tile_rows, len(self.tilts)
        out = ops.full((m, w), 0.0)
        res = np.empty((m, w)) if with_reservoir else None
        for ti in range(-(-m // TS)):
            r0, n = ti * TS, self._rows(ti)
            cell = Cell(ops, self.key, ti, n, c0, w)
            for g, (off, a, c) in enumerate(self._groups(ti, n)):
                if c:
                    out[r0 + off:r0 + n:G] = plans[g].draw_loss(ops, cell.group(a, c))
            if with_reservoir:
                res[r0:r0 + n] = ops.to_numpy(cell.uniform(6))
        return out, res

    def online(self, num_samples: int, report: Sequence[int] | None = None):
        """Generator: advance all samples one step at a time, yielding ``(i, L, log_w)`` after step i
        (1-based) for each i in ``report`` (default: every step). ``L`` holds the running sums of
        the losses (a backend array, updated in place).
        The draws are those of the offline path with the same ``num_samples`` (cells of
        ``TILE_STEPS`` steps are drawn at once, then consumed column by column)."""
        ops = self.ops
        self.num_samples = num_samples
        report = None if report is None else frozenset(report)
        G = len(self.tilts)
        L = ops.full((num_samples,), 0.0)
        K = np.zeros(G)
        step_no = 0
        for (step, count), j0 in zip(self.comp.segments, self.starts):
            plans = [step.plan(lam, self.direction) for lam in self.tilts]
            kstep = np.array([step.log_mgf(lam, self.direction) for lam in self.tilts])
            for c0, w in self._cells(j0, count):
                losses, _ = self._cell_losses(plans, c0, w)
                for a in range(w):
                    L += losses[:, a]
                    K = K + kstep
                    step_no += 1
                    if report is not None and step_no not in report:
                        continue
                    if self.estimator == "simple":
                        logw = ops.full((num_samples,), 0.0)
                    else:
                        logw = _balance_log_weights(list(K), self.tilts, L, ops)
                    yield step_no, L, logw

    def online_cmc(self, num_samples: int, report: Sequence[int] | None = None):
        """Generator for the conditional estimators: after each step i in ``report`` (default:
        every step) yields ``(i, samples)``, a :class:`ConditionalLossSamples` for the first i steps.
        The integrated coordinate I is kept uniform over the steps so far by reservoir sampling
        (step j replaces it with probability 1/(j+1), uniform of slot 6), so the running sums S and
        M are updated in O(m) per step."""
        self.num_samples = num_samples
        report = None if report is None else frozenset(report)
        m, G = num_samples, len(self.tilts)
        lam = np.asarray(self.tilts)
        L = np.zeros(m)
        l_i = np.zeros(m)
        M = np.full(m, -np.inf)
        seg = np.zeros(m, dtype=np.int64)
        K = np.zeros(G)
        kseg = np.array([[st.log_mgf(x, self.direction) for x in self.tilts] for st, _ in self.comp.segments])
        steps = tuple(st for st, _ in self.comp.segments)
        for si, ((step, count), j0) in enumerate(zip(self.comp.segments, self.starts)):
            plans = [step.plan(x, self.direction) for x in self.tilts]
            for c0, w in self._cells(j0, count):
                losses, res = self._cell_losses(plans, c0, w, with_reservoir=True)
                losses = self.ops.to_numpy(losses)
                for a in range(w):
                    j = c0 + a
                    new = losses[:, a]
                    if j == 0:
                        l_i[:] = new
                        seg[:] = si
                    else:
                        rep = res[:, a] < 1.0 / (j + 1)
                        M = np.where(rep, np.maximum(M, l_i), np.maximum(M, new))
                        l_i = np.where(rep, new, l_i)
                        seg = np.where(rep, si, seg)
                    L += new
                    K = K + kseg[si]
                    if report is not None and j + 1 not in report:
                        continue
                    S = L - l_i
                    logw = math.log(G) - special.logsumexp(lam[None, :] * L[:, None] - K[None, :], axis=1)
                    logw_o = math.log(G) - special.logsumexp(lam[None, :] * S[:, None] - (K[None, :] - kseg[seg]),
                                                             axis=1)
                    yield j + 1, ConditionalLossSamples(L.copy(), S, M.copy(), logw, logw_o, seg.copy(), steps, j + 1,
                                                        self.direction, self.estimator, tuple(self.tilts))


def _check_report_steps(report_steps, k: int) -> tuple:
    """The sorted distinct report steps (default 1..k), each in 1..k."""
    if report_steps is None:
        return tuple(range(1, k + 1))
    try:
        steps = sorted({int(s) for s in report_steps})
    except (TypeError, ValueError):
        raise ValueError(f"report_steps must be a sequence of integers in 1..{k}, got {report_steps!r}") from None
    if not steps or steps[0] < 1 or steps[-1] > k:
        raise ValueError(f"report_steps must be non-empty integers in 1..{k}, got {report_steps!r}")
    return tuple(steps)


def _block_rows(sampler: _Sampler) -> int:
    """Samples per block of :func:`_run_offline`: whole tiles, about ``chunk / steps`` samples."""
    TS = sampler.tile_rows
    return TS * max(1, sampler.chunk // max(1, sampler.n_total) // TS)


_THREADS = {"n": None}


def set_num_threads(n: int | None) -> None:
    """Threads that draw the Monte Carlo blocks of one run in parallel (NumPy backend).

    ``None`` (default): one per CPU core (``os.cpu_count()``). Blocks are keyed by their position
    (:mod:`._backend`), every thread has its own generator, and the blocks are concatenated in
    order, so the result is the same for every thread count; NumPy releases the GIL while it fills
    arrays and evaluates ufuncs, so the threads run on separate cores.

    Raises
    ------
    ValueError
        If ``n`` is not None or a positive integer.
    """
    if n is not None and (isinstance(n, bool) or int(n) != n or n < 1):
        raise ValueError(f"the number of threads must be a positive integer or None, got {n!r}")
    _THREADS["n"] = None if n is None else int(n)


def _num_threads() -> int:
    import os

    return _THREADS["n"] or max(1, os.cpu_count() or 1)


def _run_offline(sampler: _Sampler, num_samples: int, progress: ProgressFn | None):
    sampler.num_samples = num_samples
    per = _block_rows(sampler)
    bounds = [(lo, min(num_samples, lo + per)) for lo in range(0, num_samples, per)]
    threads = min(_num_threads(), len(bounds)) if sampler.ops.name == "numpy" else 1
    parts = []
    if threads > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=threads) as pool:
            for (_, hi), part in zip(bounds, pool.map(lambda b: sampler.draw(*b), bounds)):
                parts.append(part)
                if progress is not None:
                    progress(hi, num_samples)
    else:
        for lo, hi in bounds:
            parts.append(sampler.draw(lo, hi))
            if progress is not None:
                progress(hi, num_samples)
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(len(parts[0])))


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


def _samples_from(sampler: "_Sampler", out, lam: tuple):
    if sampler.estimator in ("cmc", "is-cmc"):
        L, S, M, lw, lwo, seg = out
        return ConditionalLossSamples(L, S, M, lw, lwo, seg, tuple(st for st, _ in sampler.comp.segments),
                                      sampler.n_total, sampler.direction, sampler.estimator, tuple(lam))
    L, lw = out
    return PrivacyLossSamples(L, lw, sampler.direction, sampler.estimator,
                              tuple(lam) if sampler.estimator == "is" else ())


def sample_privacy_loss(composition, num_samples: int, *, direction: str = REMOVE, estimator: str = "auto",
                        target_epsilon: float | Sequence[float] | None = None, tilts: Sequence[float] | None = None,
                        rng=None, backend: str | None = None, device: str | None = None,
                        chunk_elements: int = DEFAULT_CHUNK, progress: ProgressFn | None = None,
                        _key: int | None = None) -> PrivacyLossSamples:
    """Draw ``num_samples`` weighted samples of the composition's privacy loss random variable.

    Parameters
    ----------
    composition : Composition, Step, list or dp_accounting DpEvent
        The mechanism (see :func:`dpaudit.accounting.prv.as_composition`).
    num_samples : int
        m >= 2.
    direction : {'remove', 'add'}
        Which dominating pair.
    estimator : {'is', 'simple', 'is-paper'}
        Proposal (see the module docstring).
    target_epsilon : float or sequence of float, optional
        eps value(s) the estimates are for: sets the saddle-point tilts of 'is' and the theta of
        'is-paper' (required by 'is-paper'; default for 'is': the RDP eps at delta = 1e-5).
    tilts : sequence of float, optional
        Explicit tilts for 'is' (override ``target_epsilon``).
    rng : numpy Generator, int or None
        Source of the 64-bit key of the counter-based generator (None: fresh OS entropy).
    backend, device : str, optional
        'numpy' (default) or 'torch' on ``device`` ('cpu', 'cuda', 'cuda:1', ...).
    chunk_elements : int
        About how many samples x steps make one block of ``progress`` reports (whole tiles of
        samples; memory is bounded by the tile size whatever this is; draws do not depend on it).
    progress : callable, optional
        ``progress(done, total)`` after each block of samples.

    Returns
    -------
    PrivacyLossSamples or ConditionalLossSamples
        Losses and log-weights, shape (m,) each, as NumPy arrays (for 'cmc': the sums, maxima and
        log-weights of the other coordinates).

    Raises
    ------
    ValueError
        For invalid arguments (named in the message).

    References
    ----------
    Paper 004, §4.2 (Def. 11), App. C (Def. 16); Siegmund (1976) for the saddle-point tilt.
    """
    comp = as_composition(composition)
    m = _check_samples(num_samples)
    direction = _prv._check_direction(direction)
    estimator = _check_estimator(estimator, comp)
    chunk = _check_chunk(chunk_elements)
    check_counter_space(m, comp.num_steps)
    ops = get_ops(backend, device)
    key = key_from_rng(rng) if _key is None else _key
    targets = None if target_epsilon is None else [check_epsilon(e) for e in np.atleast_1d(target_epsilon)]
    if estimator in ("is", "cmc", "is-cmc"):
        if tilts is not None:
            lam = tuple(_prv._check_tilt(x) for x in tilts)
            if not lam:
                raise ValueError("tilts must not be empty")
        else:
            if targets is None:
                targets = [epsilon_upper_bound(comp, 1e-5, direction)]
            lam = _tilts_for(estimator, comp, direction, targets)
    else:
        lam = (0.0,)
    if estimator == "is-paper" and targets is None:
        raise ValueError("estimator 'is-paper' needs target_epsilon (its tilt depends on eps)")
    sampler = _Sampler(comp, direction, estimator, lam, targets[0] if targets else None, key, ops, chunk,
                       collapse_gaussian=True)
    return _samples_from(sampler, _run_offline(sampler, m, progress), lam)


# --------------------------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------------------------
def _fields_dict(self) -> dict:
    """JSON-serialisable dict of all fields (the ``to_dict`` of the result dataclasses)."""
    return _jsonable(dict(self.__dict__))


def _jsonable(x):
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return [_jsonable(v) for v in x.tolist()]
    if isinstance(x, (np.floating, float)):
        v = float(x)
        return v if math.isfinite(v) else (None if math.isnan(v) else ("inf" if v > 0 else "-inf"))
    if isinstance(x, np.integer):
        return int(x)
    return x


@dataclass(frozen=True, kw_only=True)
class _MonteCarloRun:
    """The fields every offline Monte Carlo result shares (keyword-only; documented in
    :class:`DeltaEstimate`): the interval, the run's settings and the trust diagnostics."""

    ci_low: float
    ci_high: float
    confidence: float
    num_samples: int
    estimator: str
    direction: str
    per_direction: dict
    composition: dict
    backend: str
    device: str
    seed: int | None
    wall_seconds: float
    upper_method: str = "rdp"
    ess: float = math.nan
    max_term_share: float = math.nan
    trusted: bool = False
    cross_check: dict | None = None

    to_dict = _fields_dict


@dataclass(frozen=True)
class DeltaEstimate(_MonteCarloRun):
    """Monte Carlo estimate of delta(eps) with a confidence interval.

    Attributes
    ----------
    epsilon : float
        The eps queried (nats).
    delta : float
        Estimate of delta(eps): the larger of the directions' estimates.
    ci_low, ci_high : float
        Two-sided normal-approximation confidence interval at level ``confidence`` (for the
        maximum over directions: the maxima of the directions' interval ends).
    confidence : float
        Level of the interval.
    std_error : float
        Standard error of the reported direction's estimate.
    num_samples : int
        Samples per direction.
    estimator : str
        'is', 'simple' or 'is-paper'.
    direction : str
        The direction attaining the maximum.
    per_direction : dict
        For each direction: delta, std_error, ci_low, ci_high, tilts.
    composition : dict
        The composition's description.
    backend, device : str
        Where the sampling ran.
    seed : int or None
        The integer seed, when one was given (the run is reproducible from it).
    wall_seconds : float
        Time spent.
    delta_upper : float
        One-sided upper confidence bound on delta(eps) at level ``confidence`` (max over directions;
        rule in :class:`MonteCarloAccountant`). This is the number to use as a guarantee.
    upper_method : str
        How ``delta_upper`` was obtained: 'maurer' (non-asymptotic bound from bounded terms),
        'rdp' (the deterministic RDP bound was smaller, or the estimate was untrusted) or 'wald'
        (one-sided normal approximation; 'is-paper' only).
    ess : float
        Effective sample size of the estimator's terms (smallest over directions).
    max_term_share : float
        Largest single term's share of the terms' sum (largest over directions).
    trusted : bool
        Whether ``ess >= MIN_ESS`` and ``max_term_share <= MAX_TERM_SHARE`` in every direction:
        whether the point estimate and ``ci_low``/``ci_high`` can be relied on.
    cross_check : dict or None
        The comparison with dp_accounting's PLD accountant, when requested (:func:`cross_check`).
    """

    epsilon: float
    delta: float
    std_error: float
    delta_upper: float = math.inf

    @property
    def relative_std_error(self) -> float:
        """std_error / delta (inf when the estimate is 0)."""
        return self.std_error / self.delta if self.delta > 0 else math.inf

    def to_dict(self) -> dict:
        """JSON-serialisable dict of all fields."""
        d = dict(self.__dict__)
        d["relative_std_error"] = self.relative_std_error
        return _jsonable(d)


@dataclass(frozen=True)
class EpsilonEstimate(_MonteCarloRun):
    """Monte Carlo estimate of eps(delta) with a confidence interval and a one-sided upper
    confidence bound (fields as in :class:`DeltaEstimate`, with ``epsilon`` the estimate and
    ``delta`` the query).

    Attributes
    ----------
    epsilon_upper : float
        One-sided upper confidence bound on eps(delta) (nats) at level ``confidence``: with
        probability at least ``confidence`` the true eps(delta) is at most this (max over
        directions; rule in :class:`MonteCarloAccountant`). Use this as the guarantee.
    upper_method, ess, max_term_share, trusted, cross_check
        As in :class:`DeltaEstimate`.
    per_direction : dict
        Per direction: epsilon, ci_low, ci_high, epsilon_upper, upper_method, rdp_upper_bound,
        tilts, pilot_epsilon, pilot_history (each pilot's eps, tilts and estimate), ess,
        max_term_share, nonzero, trusted.
    """

    delta: float
    epsilon: float
    epsilon_upper: float = math.inf


@dataclass(frozen=True)
class OnlineEpsilonEstimate:
    """eps(delta) after every step 1..k of a composition, from one set of running sums.

    Attributes
    ----------
    delta : float
        The query.
    steps : tuple of int
        1..k.
    epsilon, ci_low, ci_high : tuple of float
        Estimate and confidence interval after each step (max over directions).
    cumulative_seconds : tuple of float
        Wall time from the start until the estimate after each step was available.
    epsilon_upper : tuple of float
        One-sided upper confidence bound on eps(delta) after each step, at level ``confidence``
        (pointwise, not simultaneous). It is computed as in :meth:`MonteCarloAccountant.get_epsilon`
        at the steps ``upper_checkpoints`` (about 24, geometric in k, and k); at a step i between
        them it is the bound of the next checkpoint c >= i (valid because eps(delta) cannot
        decrease when steps are added), capped by the RDP bound of step i.
    upper_checkpoints : tuple of int
        Steps at which ``epsilon_upper`` was computed from the samples.
    ess, max_term_share, trusted : float, float, bool
        Diagnostics at the last step (as in :class:`DeltaEstimate`).
    """

    delta: float
    steps: tuple
    epsilon: tuple
    ci_low: tuple
    ci_high: tuple
    cumulative_seconds: tuple
    confidence: float
    num_samples: int
    estimator: str
    tilts: dict
    composition: dict
    backend: str
    device: str
    seed: int | None
    epsilon_upper: tuple = ()
    upper_checkpoints: tuple = ()
    ess: float = math.nan
    max_term_share: float = math.nan
    trusted: bool = False

    to_dict = _fields_dict


# --------------------------------------------------------------------------------------------
# the accountant
# --------------------------------------------------------------------------------------------
def _z(confidence: float) -> float:
    return float(special.ndtri(1.0 - (1.0 - confidence) / 2.0))


def _seed_of(rng) -> int | None:
    return int(rng) if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool) else None


#: pilot iterations: at most this many runs, stopping when the tilt moves by less than PILOT_RTOL
PILOT_MAX_ITER = 4
PILOT_RTOL = 0.02
#: the estimate is "trusted" when the terms that carry it have an effective sample size of at least
#: MIN_ESS and no single term carries more than MAX_TERM_SHARE of their sum (docs/accounting.md §3)
MIN_ESS = 100.0
MAX_TERM_SHARE = 0.1
#: online accounting: number of steps (geometric in k, plus k) at which the bound is computed
ONLINE_UPPER_POINTS = 24
UNTRUSTED_POLICIES = ("widen", "raise")


def _pilot_epsilon(comp, direction, delta, m, key, ops, chunk) -> tuple[float, list]:
    """Place the tilt by iterated pilot runs: start at the RDP eps, run a small 'is' pilot tilted at
    the current eps, move eps to the pilot's estimate, and repeat until the tilt moves by less than
    PILOT_RTOL (relative) or PILOT_MAX_ITER pilots ran. Each pilot has its own key (independent of
    the main run, so the main run's samples stay i.i.d. given the tilt).

    Returns the final eps and the history ``[(eps_used, tilts, pilot_eps), ...]``.
    """
    e = epsilon_upper_bound(comp, direction=direction, delta=delta)
    history = []
    for it in range(PILOT_MAX_ITER):
        lam = _choose_tilts(comp, direction, [e])
        sampler = _Sampler(comp, direction, "is", lam, None, splitmix64(key ^ (0x5EED + it)), ops, chunk, True)
        L, lw = _run_offline(sampler, m, None)
        e_new = PrivacyLossSamples(L, lw, direction, "is", lam).epsilon(delta)
        history.append((e, list(lam), e_new))
        if not (math.isfinite(e_new) and e_new > 0):
            break
        lam_new = _choose_tilts(comp, direction, [e_new])
        e = e_new
        if abs(lam_new[-1] - lam[-1]) <= PILOT_RTOL * max(abs(lam[-1]), 1e-12):
            break
    return e, history


# --------------------------------------------------------------------------------------------
# one-sided upper confidence bounds and diagnostics
# --------------------------------------------------------------------------------------------
def _z_one_sided(confidence: float) -> float:
    return float(special.ndtri(confidence))


def term_log_bound(comp: Composition, direction: str, tilts: Sequence[float], epsilon: float) -> float:
    """ln of an a-priori bound B on every importance-sampling term ``w (1 - e^(eps - L))_+``.

    With the balance-heuristic weight ``w = G / sum_g exp(lam_g L - K(lam_g))`` over G tilts,
    ``w <= G exp(K(lam_g) - lam_g L)`` for every g, and ``sup_{x >= 0} (1 - e^-x) e^(-lam x) = c1(lam)``,
    so every term is at most ``B = G min_g c1(lam_g) exp(K(lam_g) - lam_g eps)`` (for lam_g = 0 the
    factor is 1: the term of simple Monte Carlo is at most 1). This is the RDP bound on delta(eps)
    at the sampling tilt (docs/accounting.md §3). No tilts (simple Monte Carlo) gives ln 1 = 0.

    Parameters
    ----------
    comp : Composition
    direction : {'remove', 'add'}
    tilts : sequence of float
        The proposal's tilts (empty or (0,) for simple Monte Carlo).
    epsilon : float
        eps >= 0 (nats).

    Returns
    -------
    float
        ln B (<= ln G).
    """
    from .prv import _c1

    lams = [float(x) for x in tilts] or [0.0]
    best = 0.0
    for lam in lams:
        if lam > 0:
            best = min(best, math.log(_c1(lam)) + comp.log_mgf(lam, direction) - lam * epsilon)
    return math.log(len(lams)) + best


def nonnegative_upper_bound(mean: float, bound: float, num_samples: int, confidence: float) -> float:
    """One-sided upper confidence bound on E[Y] from m independent terms ``0 <= Y_i <= bound``.

    Maurer (2003, Thm. 1): for independent non-negative X_i, ``Pr[E S - S >= t] <= exp(-t^2 / (2 sum E X_i^2))``;
    with ``E X^2 <= bound E X`` this gives ``Pr[mean <= delta - t] <= exp(-m t^2 / (2 bound delta))``.
    Inverting at ``alpha = 1 - confidence`` with ``u = ln(1/alpha)/m``:
    ``delta <= (sqrt(bound u / 2) + sqrt(bound u / 2 + mean))^2``. Only the lower tail of the mean is
    used, so no normal approximation and no variance estimate (which heavy-tailed weights make
    unreliable) enter; it is tight when ``bound u`` is small next to delta.

    Parameters
    ----------
    mean : float
        Sample mean of the terms (>= 0).
    bound : float
        A-priori upper bound on each term.
    num_samples : int
        m.
    confidence : float
        In (0, 1).

    Returns
    -------
    float
        The upper confidence bound.
    """
    u = math.log(1.0 / (1.0 - check_probability(confidence, "confidence"))) / int(num_samples)
    h = 0.5 * float(bound) * u
    return (math.sqrt(h) + math.sqrt(h + max(float(mean), 0.0))) ** 2


def _is_terms(samples, epsilon: float) -> np.ndarray:
    """The plain importance-sampling terms (bounded by :func:`term_log_bound`) of a sample set."""
    if isinstance(samples, ConditionalLossSamples):
        return samples.components(epsilon, (0,))[:, 0]
    return samples.terms(epsilon)


def _bounded(samples) -> bool:
    return samples.estimator in ("is", "simple", "cmc", "is-cmc")


def _delta_upper(samples, comp, direction, epsilon, confidence, rdp):
    """(one-sided upper bound on delta(eps), method) for one direction (see MonteCarloAccountant)."""
    m = samples.num_samples
    if _bounded(samples):
        tilts = samples.tilts if samples.estimator != "simple" else ()
        b = math.exp(term_log_bound(comp, direction, tilts, epsilon))
        v = nonnegative_upper_bound(float(_is_terms(samples, epsilon).mean()), b, m, confidence)
        how = "maurer"
    else:
        mean, se = samples.delta(epsilon)
        v, how = mean + _z_one_sided(confidence) * se, "wald"
    return (v, how) if v < rdp else (rdp, "rdp")


def _epsilon_upper(samples, comp, direction, delta, confidence, rdp):
    """(one-sided upper bound on eps(delta), method) for one direction: the largest eps at which the
    upper bound on delta(eps) still exceeds delta (bisection; the bound decreases in eps), at most
    the RDP bound ``rdp``."""
    if _bounded(samples):
        tilts = samples.tilts if samples.estimator != "simple" else ()
        m = samples.num_samples

        def f(e):
            b = math.exp(term_log_bound(comp, direction, tilts, e))
            return nonnegative_upper_bound(float(_is_terms(samples, e).mean()), b, m, confidence) - delta
        how = "maurer"
    else:
        z1 = _z_one_sided(confidence)

        def f(e):
            mean, se = samples.delta(e)
            return mean + z1 * se - delta
        how = "wald"
    if not math.isfinite(rdp):
        rdp = 1e6
    if f(rdp) > 0:
        return rdp, "rdp"
    if f(0.0) <= 0:
        return 0.0, how
    lo, hi = 0.0, rdp
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if f(mid) > 0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-9 * max(1.0, hi):
            break
    return float(hi), how


def term_diagnostics(terms: np.ndarray) -> dict:
    """Effective sample size and concentration of the non-negative terms whose mean is the estimate.

    Returns
    -------
    dict
        ``ess = (sum t)^2 / sum t^2`` (Kong 1992; between 1 and the number of non-zero terms, 0 when
        all are 0), ``max_term_share = max t / sum t`` and ``nonzero`` (count).
    """
    t = np.asarray(terms, dtype=float)
    t = np.where(t > 0, t, 0.0)
    total = float(t.sum())
    if total <= 0:
        return {"ess": 0.0, "max_term_share": 1.0, "nonzero": 0}
    scale = float(t.max())
    r = t / scale
    return {"ess": float(r.sum() ** 2 / np.sum(r * r)), "max_term_share": scale / total,
            "nonzero": int(np.count_nonzero(t))}


def _trusted(diag: dict) -> bool:
    return diag["ess"] >= MIN_ESS and diag["max_term_share"] <= MAX_TERM_SHARE


def _untrusted_message(what: str, diag: dict, num_samples: int) -> str:
    fails = []
    if diag["ess"] < MIN_ESS:
        fails.append(f"effective sample size {diag['ess']:.1f} < {MIN_ESS:g}")
    if diag["max_term_share"] > MAX_TERM_SHARE:
        fails.append(f"largest term {100 * diag['max_term_share']:.1f}% of the sum > {100 * MAX_TERM_SHARE:g}%")
    factor = max(2, int(math.ceil(MIN_ESS / max(diag["ess"], 1.0))))
    return (f"Monte Carlo estimate of {what} cannot be trusted ({'; '.join(fails)}; {num_samples} samples): "
            f"the importance weights are heavy-tailed. Increase num_samples (at least x{factor}; heavy tails "
            f"may need more), or use untrusted='widen' and rely on epsilon_upper/delta_upper, which do not "
            f"depend on these diagnostics")


def _online_point(samples, delta: float, guess: float | None, z: float) -> tuple[float, float, float]:
    """eps(delta) with a confidence interval from one step's samples, warm-started at ``guess``.

    :class:`PrivacyLossSamples` are inverted exactly. For the conditional estimators the point is
    found by the secant method on ``ln delta_hat(eps) - ln delta`` from the previous step's eps
    (falling back to Brent's method), and the interval by the delta method:
    ``eps -/+ z se(eps) / |d delta_hat / d eps|``.
    """
    if isinstance(samples, PrivacyLossSamples):
        return samples.epsilon(delta), samples.epsilon(delta, -z), samples.epsilon(delta, z)
    cache: dict = {}

    def stats(e):
        if e not in cache:
            cache[e] = samples.delta(e)
        return cache[e]

    e = None
    slope_log = None
    if guess is not None and math.isfinite(guess) and guess > 0:
        samples.fix_coefficients(guess)
        f = lambda e: math.log(max(stats(e)[0], 1e-300)) - math.log(delta)  # noqa: E731
        e0, e1 = guess, guess * 1.01 + 1e-3
        f0, f1 = f(e0), f(e1)
        for _ in range(12):
            if f1 == f0:
                break
            e2 = max(e1 - f1 * (e1 - e0) / (f1 - f0), 0.0)
            e0, f0, e1, f1 = e1, f1, e2, f(e2)
            if abs(e1 - e0) <= 1e-9 * max(1.0, e1):
                if abs(f1) <= 1e-6 and f1 != f0:
                    e, slope_log = e1, (f1 - f0) / (e1 - e0) if e1 != e0 else None
                break
    if e is None:
        e = samples.epsilon(delta)
    if e <= 0 or not math.isfinite(e):
        return e, e, e
    d0, se = stats(e)
    if slope_log is None or not slope_log < 0:
        h = 1e-4 * max(1.0, e)
        slope = (stats(e + h)[0] - stats(max(e - h, 0.0))[0]) / (e + h - max(e - h, 0.0))
    else:
        slope = slope_log * d0  # d delta_hat / d eps = delta_hat * d ln(delta_hat) / d eps
    if not slope < 0:
        return e, samples.epsilon(delta, -z), samples.epsilon(delta, z)
    half = z * se / -slope
    return e, max(e - half, 0.0), e + half


@contextlib.contextmanager
def _sampler_errors():
    """Turn a rejection sampler that did not finish (prv._reject's RuntimeError) into a ValueError.

    Tilts are chosen by :func:`~dpaudit.accounting.prv.feasible_tilt` so that every sampler accepts
    at least 10% of its proposals, which makes this practically unreachable."""
    try:
        yield
    except RuntimeError as ex:
        if "rejection sampler" not in str(ex):
            raise
        raise ValueError(f"the tilted sampler could not draw for this composition ({ex}); use estimator="
                         f"'simple' or a smaller tilt") from ex


class MonteCarloAccountant:
    """Monte Carlo accountant (paper 004, §5, Alg. 3): estimates with one-sided upper confidence bounds.

    Hyper-parameters only are stored; each ``get_*`` call draws fresh samples (consuming ``rng``).

    **Upper confidence bounds** (``DeltaEstimate.delta_upper``, ``EpsilonEstimate.epsilon_upper``;
    one-sided at ``confidence``; derivation in docs/accounting.md §3). For 'is', 'cmc', 'is-cmc' and
    'simple' the plain importance-sampling terms ``Y_i = w_i (1 - e^(eps - L_i))_+`` of the same draws
    are non-negative and at most ``B(eps) = G min_g c1(lam_g) e^(K(lam_g) - lam_g eps)``
    (:func:`term_log_bound`); Maurer's (2003) lower-tail inequality for non-negative variables then
    gives ``delta(eps) <= (sqrt(B u/2) + sqrt(B u/2 + mean))^2``, ``u = ln(1/(1-confidence))/m``
    (:func:`nonnegative_upper_bound`) with no normal approximation (``upper_method='maurer'``). The
    eps bound is the largest eps at which that bound still exceeds delta. Both are capped by the
    deterministic RDP bounds (``upper_method='rdp'`` when the cap is active). For 'is-paper' (terms
    not bounded a priori) the bound is the one-sided Wald bound ``mean + z_conf se`` ('wald'),
    replaced by the RDP bound when the diagnostics fail. The maximum over directions is reported
    (a direction not sampled contributes its RDP bound), so it covers the larger direction's truth
    with probability at least ``confidence``.

    **Diagnostics** (``ess``, ``max_term_share``, ``trusted``): at the estimate, the effective sample
    size ``(sum t)^2 / sum t^2`` of the estimator's terms and the largest term's share of their sum.
    The point estimate and the two-sided Wald interval ``ci_low``/``ci_high`` are trusted when
    ``ess >= MIN_ESS`` (100) and ``max_term_share <= MAX_TERM_SHARE`` (0.1). ``untrusted='widen'``
    (default) reports them anyway with ``trusted=False`` (the upper bound does not rely on them);
    ``untrusted='raise'`` refuses with a ``ValueError``.

    Parameters
    ----------
    num_samples : int
        Samples per direction (default 100 000).
    estimator : {'is', 'simple', 'is-paper'}
        Proposal (module docstring).
    confidence : float
        Level of the reported confidence intervals (default 0.95).
    rng : numpy Generator, int or None
        Randomness (an int makes runs reproducible and is recorded in the results).
    backend, device : str, optional
        'numpy' (default) or 'torch' on a device.
    chunk_elements : int
        Array elements per block.
    pilot_fraction : float
        For eps(delta) with a tilted estimator: fraction of ``num_samples`` spent (extra) on each
        pilot run that places the tilt (default 1/16; at most PILOT_MAX_ITER = 4 pilots).
    untrusted : {'widen', 'raise'}
        What to do when the diagnostics fail (see above).

    Raises
    ------
    ValueError
        For an invalid argument (named in the message).

    Examples
    --------
    >>> acc = MonteCarloAccountant(num_samples=20_000, rng=0)
    >>> est = acc.get_epsilon(Composition.dpsgd(1.1, 256 / 60000, 1000), delta=1e-5)  # doctest: +SKIP
    """

    def __init__(self, num_samples: int = 100_000, estimator: str = "auto", confidence: float = 0.95, rng=None,
                 backend: str | None = None, device: str | None = None, chunk_elements: int = DEFAULT_CHUNK,
                 pilot_fraction: float = 1.0 / 16.0, untrusted: str = "widen"):
        self.num_samples = _check_samples(num_samples)
        if untrusted not in UNTRUSTED_POLICIES:
            raise ValueError(f"untrusted must be one of {', '.join(UNTRUSTED_POLICIES)}, got {untrusted!r}")
        self.untrusted = untrusted
        self.estimator = _check_estimator_name(estimator)
        self.confidence = check_probability(confidence, "confidence")
        self.rng = rng
        self.backend, self.device = backend, device
        get_ops(backend, device)  # validate early (CUDA availability, backend name)
        self.chunk_elements = _check_chunk(chunk_elements)
        self.pilot_fraction = check_probability(pilot_fraction, "pilot_fraction")
        self._gen = as_rng(rng)

    def _setup(self, composition):
        comp = as_composition(composition)
        est = _check_estimator(self.estimator, comp)
        check_counter_space(self.num_samples, comp.num_steps)
        return comp, est, get_ops(self.backend, self.device), key_from_rng(self._gen)

    def _summarise(self, per: dict, quantity: str, what: str) -> tuple[str, dict]:
        """The direction reported (largest estimate of ``quantity``) and the fields shared by
        :class:`DeltaEstimate` and :class:`EpsilonEstimate`, maximised (or, for the diagnostics,
        worst-cased) over the sampled directions; raises with ``untrusted='raise'``."""
        done = {d: v for d, v in per.items() if not v.get("skipped")}
        best = max(done, key=lambda d: done[d][quantity])
        upper = f"{quantity}_upper"
        upper_dir = max(per, key=lambda d: per[d][upper])
        trusted = all(v["trusted"] for v in done.values())
        if not trusted and self.untrusted == "raise":
            bad = min((v for v in done.values() if not v["trusted"]), key=lambda v: v["ess"])
            raise ValueError(_untrusted_message(what, bad, self.num_samples))
        return best, {
            "ci_low": max(p["ci_low"] for p in done.values()),
            "ci_high": max(p["ci_high"] for p in done.values()),
            upper: max(p[upper] for p in per.values()),
            "upper_method": per[upper_dir].get("upper_method", "rdp"),
            "ess": min(v["ess"] for v in done.values()),
            "max_term_share": max(v["max_term_share"] for v in done.values()),
            "trusted": trusted,
        }

    def _dirs(self, comp):
        return comp.directions

    @_sampler_errors()
    def get_delta(self, composition, epsilon: float, progress: ProgressFn | None = None, *,
                  cross_check: bool = False) -> DeltaEstimate:
        """Estimate delta(eps) of the composition (max over directions).

        Parameters
        ----------
        composition : Composition, Step, list or DpEvent
            The mechanism.
        epsilon : float
            eps >= 0 (nats).
        progress : callable, optional
            ``progress(done, total)`` over all directions' samples.
        cross_check : bool
            Also compare with dp_accounting's PLD accountant (:func:`cross_check`).

        Returns
        -------
        DeltaEstimate
            With ``delta_upper``, the one-sided upper confidence bound at ``confidence``.

        Raises
        ------
        ValueError
            For a negative or NaN epsilon, an unsupported composition, a sampler that cannot run,
            or (with ``untrusted='raise'``) an estimate whose diagnostics fail.
        """
        t0 = time.perf_counter()
        eps = check_epsilon(epsilon)
        comp, estimator, ops, key = self._setup(composition)
        z = _z(self.confidence)
        per = {}
        dirs = self._dirs(comp)
        for di, d in enumerate(dirs):
            rdp = _prv.delta_upper_bound(comp, eps, d)
            if d == ADD and REMOVE in per:
                if rdp <= per[REMOVE]["ci_low"]:
                    per[d] = {"skipped": True, "rdp_upper_bound": rdp, "delta_upper": rdp,
                              "note": "the RDP bound on this direction is below the other's confidence interval"}
                    continue
            est = estimator if (estimator != "is-paper" or d == REMOVE) else "is-cmc"
            lam = _tilts_for(est, comp, d, [eps])
            sampler = _Sampler(comp, d, est, lam, eps, splitmix64(key ^ di), ops, self.chunk_elements, True)
            prog = None if progress is None else (lambda a, b, di=di: progress(di * b + a, len(dirs) * b))
            s = _samples_from(sampler, _run_offline(sampler, self.num_samples, prog), lam)
            mean, se = s.delta(eps)
            diag = term_diagnostics(s.terms(eps))
            du, how = _delta_upper(s, comp, d, eps, self.confidence, rdp)
            trusted = _trusted(diag)
            if not trusted and how == "wald":
                du, how = rdp, "rdp"
            per[d] = {"delta": mean, "std_error": se, "ci_low": max(0.0, mean - z * se), "ci_high": mean + z * se,
                      "delta_upper": du, "upper_method": how, "rdp_upper_bound": rdp,
                      "estimator": est, "tilts": list(s.tilts), "trusted": trusted, **diag}
        best, summary = self._summarise(per, "delta", f"delta(eps={eps:g})")
        out = DeltaEstimate(
            epsilon=eps, delta=per[best]["delta"], confidence=self.confidence,
            std_error=per[best]["std_error"], num_samples=self.num_samples, estimator=estimator,
            direction=best, per_direction=per, composition=comp.to_dict(), backend=ops.name, device=ops.device,
            seed=_seed_of(self.rng), wall_seconds=time.perf_counter() - t0, **summary,
        )
        return _cross_check(out, comp) if cross_check else out

    @_sampler_errors()
    def get_epsilon(self, composition, delta: float, progress: ProgressFn | None = None, *,
                    cross_check: bool = False) -> EpsilonEstimate:
        """Estimate eps(delta) of the composition (max over directions) by inverting the delta
        estimate on one set of samples (paper 004, Alg. 3), with a one-sided upper confidence bound.

        The tilt is placed by iterated pilot runs (see :func:`_pilot_epsilon`). ``epsilon_upper`` is
        the one-sided upper confidence bound at ``confidence`` (rule in the class docstring);
        ``ess``/``max_term_share`` diagnose the estimate.

        Parameters
        ----------
        composition : Composition, Step, list or DpEvent
            The mechanism.
        delta : float
            In (0, 1).
        progress : callable, optional
            ``progress(done, total)`` over all directions' samples.
        cross_check : bool
            Also run dp_accounting's PLD accountant and compare (:func:`cross_check`); warns when
            PLD's eps lies above ``epsilon_upper`` by more than its half-width.

        Returns
        -------
        EpsilonEstimate

        Raises
        ------
        ValueError
            For delta outside (0, 1), an unsupported composition, a sampler that cannot run, or
            (with ``untrusted='raise'``) an estimate whose diagnostics fail.
        """
        t0 = time.perf_counter()
        delta = check_delta(delta)
        comp, estimator, ops, key = self._setup(composition)
        z = _z(self.confidence)
        per = {}
        dirs = self._dirs(comp)
        m_pilot = max(256, int(self.num_samples * self.pilot_fraction))
        for di, d in enumerate(dirs):
            rdp = epsilon_upper_bound(comp, delta, d)
            if d == ADD and REMOVE in per:
                if rdp <= per[REMOVE]["ci_low"]:
                    per[d] = {"skipped": True, "rdp_upper_bound": rdp, "epsilon_upper": rdp,
                              "note": "the RDP bound on this direction is below the other's confidence interval"}
                    continue
            est = estimator if (estimator != "is-paper" or d == REMOVE) else "is-cmc"
            dkey = splitmix64(key ^ di)
            lam, target, history = (0.0,), None, []
            if est != "simple":
                target, history = _pilot_epsilon(comp, d, delta, m_pilot, dkey, ops, self.chunk_elements)
                lam = _tilts_for(est, comp, d, [target])
            sampler = _Sampler(comp, d, est, lam, target, dkey, ops, self.chunk_elements, True)
            prog = None if progress is None else (lambda a, b, di=di: progress(di * b + a, len(dirs) * b))
            s = _samples_from(sampler, _run_offline(sampler, self.num_samples, prog), lam)
            e = s.epsilon(delta)
            diag = term_diagnostics(s.terms(e if math.isfinite(e) else rdp))
            eu, how = _epsilon_upper(s, comp, d, delta, self.confidence, rdp)
            trusted = _trusted(diag)
            if not trusted and how == "wald":
                eu, how = rdp, "rdp"  # a normal-approximation bound on untrusted terms is widened to RDP
            per[d] = {"epsilon": e, "ci_low": s.epsilon(delta, -z), "ci_high": s.epsilon(delta, z),
                      "epsilon_upper": eu, "upper_method": how, "rdp_upper_bound": rdp,
                      "delta_at_epsilon": s.delta(e)[0], "estimator": est,
                      "tilts": list(s.tilts), "pilot_epsilon": target,
                      "pilot_history": [{"epsilon": h[0], "tilts": h[1], "pilot_epsilon": h[2]} for h in history],
                      "trusted": trusted, **diag}
        best, summary = self._summarise(per, "epsilon", f"eps(delta={delta:g})")
        out = EpsilonEstimate(
            delta=delta, epsilon=per[best]["epsilon"], confidence=self.confidence,
            num_samples=self.num_samples, estimator=estimator, direction=best, per_direction=per,
            composition=comp.to_dict(), backend=ops.name, device=ops.device, seed=_seed_of(self.rng),
            wall_seconds=time.perf_counter() - t0, **summary,
        )
        return _cross_check(out, comp) if cross_check else out

    @_sampler_errors()
    def get_epsilon_online(self, composition, delta, progress: ProgressFn | None = None,
                           report_steps: Sequence[int] | None = None):
        """eps(delta) after each step 1..k from running sums (paper 004, §5 "online accounting").

        One set of m samples per direction is advanced one step at a time, O(m) work per step plus
        the inversion. Tilts are the saddle points at pilot estimates of eps for a few prefixes
        (geometric in k; the pilots cost about ``pilot_fraction * m`` samples of each prefix) and are
        mixed by the balance heuristic. 'is-cmc'/'cmc' keep the integrated coordinate uniform over
        the steps so far by reservoir sampling; 'is-paper' has no online form and runs as 'is-cmc'.
        A direction whose RDP eps bound lies below the other direction's interval is not inverted
        at that step (it cannot be the maximum).

        Parameters
        ----------
        composition : Composition or convertible
            The mechanism.
        delta : float or sequence of float
            Target delta(s); several are answered from the same samples.
        progress : callable, optional
            ``progress(step, k)``, after each reported step.
        report_steps : sequence of int, optional
            The steps (1..k) after which eps(delta) is solved and reported (default: every step).
            The samples are advanced through all k steps either way; the solves, which dominate
            the cost for large m, happen only at these steps. The estimates at a reported step
            do not depend on which other steps are reported (for 'is'/'simple' exactly; for the
            conditional estimators up to the root-finding tolerance, as the solve is warm-started
            at the previous reported step).

        Returns
        -------
        OnlineEpsilonEstimate, or a list of them (one per delta) when ``delta`` is a sequence.
        Its ``steps`` are the reported steps.

        Raises
        ------
        ValueError
            For a delta outside (0, 1), an unsupported composition, or a report step outside 1..k.
        """
        t0 = time.perf_counter()
        many = isinstance(delta, (list, tuple, np.ndarray))
        deltas = [check_delta(d) for d in (delta if many else [delta])]
        comp, estimator, ops, key = self._setup(composition)
        est = {"simple": "simple", "is": "is", "cmc": "cmc"}.get(estimator, "is-cmc")
        if est == "is-cmc" and not all(isinstance(s_, (GaussianStep, SubsampledGaussianStep)) for s_, _ in comp.segments):
            est = "is"
        z = _z(self.confidence)
        k = comp.num_steps
        rsteps = _check_report_steps(report_steps, k)
        dirs = self._dirs(comp)
        nd = len(deltas)
        eps = np.zeros((nd, len(dirs), len(rsteps)))
        lo = np.zeros((nd, len(dirs), len(rsteps)))
        hi = np.zeros((nd, len(dirs), len(rsteps)))
        tilts = {}
        checkpoints = sorted({int(round(x)) for x in np.geomspace(1, k, min(k, 6))})
        m_pilot = max(256, min(2000, int(self.num_samples * self.pilot_fraction)))
        gens = []
        for di, d in enumerate(dirs):
            if est != "simple":
                cap = max_supported_tilt(comp, d)
                lams = set()
                for ci, c in enumerate(checkpoints):
                    # pilot on the prefix: tilts at the RDP eps (and 0), then the saddle points of its estimates
                    pre = comp.prefix(c)
                    rough = {_sampling_tilt(pre, d, epsilon_upper_bound(pre, dd, d), cap)
                             for dd in deltas} | ({0.0} if est != "is" else set())
                    pil = _Sampler(pre, d, est, _merge_tilts(sorted(rough)), None,
                                   splitmix64(key ^ (0x9111 + 7 * ci + di)), ops, self.chunk_elements, True)
                    smp = _samples_from(pil, _run_offline(pil, m_pilot, None), pil.tilts)
                    for dd in deltas:
                        e = smp.epsilon(dd)
                        if math.isfinite(e):
                            lams.add(_sampling_tilt(pre, d, e, cap))
                if est in ("cmc", "is-cmc"):
                    lams.add(0.0)
                lam = _merge_tilts(sorted(lams))
            else:
                lam = (0.0,)
            tilts[d] = list(lam)
            sampler = _Sampler(comp, d, est, lam, None, splitmix64(key ^ di), ops, self.chunk_elements, False)
            if est in ("cmc", "is-cmc"):
                gens.append((di, d, lam, sampler.online_cmc(self.num_samples, rsteps)))
            else:
                gens.append((di, d, lam, ((i, PrivacyLossSamples(ops.to_numpy(L).copy(), ops.to_numpy(lw).copy(), d,
                                                                  est, lam))
                                          for i, L, lw in sampler.online(self.num_samples, rsteps))))
        add_bound = _online_rdp_bounds(comp, deltas, ADD) if len(dirs) > 1 else None
        rdp_all = {d: (add_bound if d == ADD and add_bound is not None else _online_rdp_bounds(comp, deltas, d))
                   for d in dirs}
        # rigorous upper bounds at some reported steps; eps(delta) grows with the number of steps,
        # so a bound at a reported step c also bounds every reported step before c
        nr = len(rsteps)
        upper_idx = sorted({int(round(x)) - 1 for x in np.geomspace(1, nr, min(nr, ONLINE_UPPER_POINTS))} | {nr - 1})
        upper_at = tuple(rsteps[r] for r in upper_idx)
        up = np.full((nd, len(dirs), nr), -math.inf)
        diag_last: dict = {}
        cum = np.zeros(nr)
        skipped = np.zeros((nd, nr), dtype=bool)
        for r, i in enumerate(rsteps):
            check = r in upper_idx
            pre = comp.prefix(i) if check else None
            for di, d, lam, gen in gens:
                _, smp = next(gen)
                for j, dd in enumerate(deltas):
                    if d == ADD and add_bound is not None and add_bound[j, i - 1] <= lo[j, 0, r]:
                        eps[j, di, r] = lo[j, di, r] = hi[j, di, r] = -math.inf
                        up[j, di, r] = add_bound[j, i - 1]
                        skipped[j, r] = True
                        continue
                    guess = eps[j, di, r - 1] if r > 0 else None
                    eps[j, di, r], lo[j, di, r], hi[j, di, r] = _online_point(smp, dd, guess, z)
                    if check:
                        up[j, di, r] = _epsilon_upper(smp, pre, d, dd, self.confidence,
                                                      float(rdp_all[d][j, i - 1]))[0]
                    if r == nr - 1:
                        e = eps[j, di, r]
                        diag_last[(j, di)] = term_diagnostics(smp.terms(e if math.isfinite(e) else 0.0))
            cum[r] = time.perf_counter() - t0
            if progress is not None:
                progress(i, k)
        out = []
        idx = np.asarray(rsteps) - 1
        for j, dd in enumerate(deltas):
            rdp_max = np.max([rdp_all[d][j] for d in dirs], axis=0)[idx]
            upper = np.minimum(up[j].max(axis=0), rdp_max)
            # between checkpoints: the bound at the next checkpoint (and the RDP bound of the step)
            nxt = math.inf
            for r in range(nr - 1, -1, -1):
                if r in upper_idx:
                    nxt = upper[r]
                upper[r] = min(nxt, rdp_max[r])
            dg = [diag_last[(j, di)] for di in range(len(dirs)) if (j, di) in diag_last]
            ess = min((g["ess"] for g in dg), default=math.nan)
            share = max((g["max_term_share"] for g in dg), default=math.nan)
            trusted = bool(dg) and all(_trusted(g) for g in dg)
            if not trusted and self.untrusted == "raise":
                bad = min(dg, key=lambda g: g["ess"]) if dg else {"ess": 0.0, "max_term_share": 1.0}
                raise ValueError(_untrusted_message(f"eps(delta={dd:g}) after {k} steps", bad, self.num_samples))
            out.append(OnlineEpsilonEstimate(
                delta=dd, steps=tuple(rsteps), epsilon=tuple(eps[j].max(axis=0)),
                ci_low=tuple(lo[j].max(axis=0)), ci_high=tuple(hi[j].max(axis=0)), cumulative_seconds=tuple(cum),
                confidence=self.confidence, num_samples=self.num_samples, estimator=est, tilts=tilts,
                composition=comp.to_dict(), backend=ops.name, device=ops.device, seed=_seed_of(self.rng),
                epsilon_upper=tuple(float(x) for x in upper), upper_checkpoints=upper_at,
                ess=ess, max_term_share=share, trusted=trusted,
            ))
        return out if many else out[0]


class MonteCarloCrossCheckWarning(UserWarning):
    """dp_accounting's PLD value lies above the Monte Carlo upper bound by more than its half-width."""


def cross_check(result, composition, *, value_discretization_interval: float = 1e-4):
    """Compare a Monte Carlo result with dp_accounting's PLD accountant and record the comparison.

    PLD (pessimistic, connect-the-dots) is an upper estimate of delta(eps) and eps(delta) up to its
    discretisation. When its value lies above the Monte Carlo upper bound by more than the bound's
    half-width (``upper - estimate``), the Monte Carlo run may under-report, and a
    :class:`MonteCarloCrossCheckWarning` is issued. Where PLD does not answer (it fails at very
    small delta, or raises) the comparison is recorded as unavailable and nothing is warned.

    Parameters
    ----------
    result : EpsilonEstimate or DeltaEstimate
        A Monte Carlo result.
    composition : Composition or convertible
        The composition the result is for.
    value_discretization_interval : float
        PLD grid (nats; default 1e-4).

    Returns
    -------
    EpsilonEstimate or DeltaEstimate
        A copy of ``result`` whose ``cross_check`` field holds ``{"method": "pld", "available",
        "value", "mc_estimate", "mc_upper", "half_width", "excess", "flagged", "seconds"}``
        (``excess = value - mc_upper``; ``flagged`` when ``excess > half_width``) or, when PLD
        does not answer, ``{"method": "pld", "available": False, "error": ...}``.

    Raises
    ------
    ValueError
        If ``result`` is not an EpsilonEstimate or DeltaEstimate.
    """
    import dataclasses

    from . import reference

    comp = as_composition(composition)
    if isinstance(result, EpsilonEstimate):
        what, est, upper = f"eps(delta={result.delta:g})", result.epsilon, result.epsilon_upper
        call = lambda: reference.epsilon("pld", comp, result.delta,  # noqa: E731
                                         value_discretization_interval=value_discretization_interval)
    elif isinstance(result, DeltaEstimate):
        what, est, upper = f"delta(eps={result.epsilon:g})", result.delta, result.delta_upper
        call = lambda: reference.delta("pld", comp, result.epsilon,  # noqa: E731
                                       value_discretization_interval=value_discretization_interval)
    else:
        raise ValueError(f"result must be an EpsilonEstimate or a DeltaEstimate, got {type(result).__name__}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = call()
        value = float(ref["epsilon"] if isinstance(result, EpsilonEstimate) else ref["delta"])
        if not math.isfinite(value):
            raise ValueError(f"PLD returned {value}")
    except Exception as ex:  # PLD fails at tiny delta / large eps; the comparison is then unavailable
        rec = {"method": "pld", "available": False, "error": f"{type(ex).__name__}: {ex}"}
        return dataclasses.replace(result, cross_check=rec)
    half = upper - est
    excess = value - upper
    flagged = bool(excess > half)
    rec = {"method": "pld", "available": True, "value": value, "mc_estimate": est, "mc_upper": upper,
           "half_width": half, "excess": excess, "flagged": flagged, "seconds": ref.get("seconds")}
    if flagged:
        warnings.warn(f"Monte Carlo may under-report {what}: dp_accounting PLD gives {value:.6g}, above the "
                      f"Monte Carlo upper bound {upper:.6g} by {excess:.3g} (more than its half-width "
                      f"{half:.3g}); increase num_samples or use the PLD value", MonteCarloCrossCheckWarning,
                      stacklevel=2)
    return dataclasses.replace(result, cross_check=rec)


_cross_check = cross_check


def _online_rdp_bounds(comp: Composition, deltas, direction: str) -> np.ndarray:
    """RDP upper bounds on eps(delta) of every prefix 1..k (shape (len(deltas), k)), from K on a grid."""
    from .prv import _c1

    lam = np.unique(np.concatenate([np.geomspace(0.01, 0.9, 20), np.arange(1.0, 65.0)]))
    cap = max_supported_tilt(comp, direction)
    lam = lam[lam <= min(cap, 64.0)]
    per_seg = np.array([[st.log_mgf(x, direction) for x in lam] for st, _ in comp.segments])
    counts = [c for _, c in comp.segments]
    k = comp.num_steps
    kk = np.zeros((k, lam.size))
    acc = np.zeros(lam.size)
    i = 0
    for si, c in enumerate(counts):
        for _ in range(c):
            acc = acc + per_seg[si]
            kk[i] = acc
            i += 1
    logc1 = np.array([math.log(_c1(x)) for x in lam])
    out = np.zeros((len(deltas), k))
    for j, d in enumerate(deltas):
        out[j] = np.min((kk + logc1[None, :] - math.log(d)) / lam[None, :], axis=1)
    return np.maximum(out, 0.0)


def estimate_delta(composition, epsilon: float, *, num_samples: int = 100_000, estimator: str = "auto",
                   confidence: float = 0.95, rng=None, backend: str | None = None, device: str | None = None,
                   progress: ProgressFn | None = None) -> DeltaEstimate:
    """Estimate delta(eps) (functional form of :meth:`MonteCarloAccountant.get_delta`)."""
    return MonteCarloAccountant(num_samples, estimator, confidence, rng, backend, device).get_delta(
        composition, epsilon, progress)


def estimate_epsilon(composition, delta: float, *, num_samples: int = 100_000, estimator: str = "auto",
                     confidence: float = 0.95, rng=None, backend: str | None = None, device: str | None = None,
                     progress: ProgressFn | None = None) -> EpsilonEstimate:
    """Estimate eps(delta) (functional form of :meth:`MonteCarloAccountant.get_epsilon`)."""
    return MonteCarloAccountant(num_samples, estimator, confidence, rng, backend, device).get_epsilon(
        composition, delta, progress)


def estimate_epsilon_online(composition, delta, *, num_samples: int = 100_000, estimator: str = "auto",
                            confidence: float = 0.95, rng=None, backend: str | None = None,
                            device: str | None = None, progress: ProgressFn | None = None,
                            report_steps: Sequence[int] | None = None):
    """eps(delta) after every step, or after each of ``report_steps`` (functional form of
    :meth:`MonteCarloAccountant.get_epsilon_online`)."""
    return MonteCarloAccountant(num_samples, estimator, confidence, rng, backend, device).get_epsilon_online(
        composition, delta, progress, report_steps=report_steps)

