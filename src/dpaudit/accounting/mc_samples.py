"""Weighted samples of a privacy loss random variable and the estimates computed from them.

Part of the Monte Carlo accountant (:mod:`.monte_carlo`, paper 004 §4-5): :class:`PrivacyLossSamples`
holds importance-weighted draws of the PRV ('simple', 'is', 'is-paper') and inverts
``delta_hat(eps)`` exactly on the sorted losses; :class:`ConditionalLossSamples` holds the draws of
the conditional estimators ('cmc', 'is-cmc') with the variance-minimising combination of the three
unbiased per-draw estimates. Derivations in docs/accounting.md §3.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize

from .._validate import check_delta, check_epsilon
from . import prv as _prv
from .prv import REMOVE

__all__ = ["ConditionalLossSamples", "PrivacyLossSamples"]


class _Draws:
    """What both kinds of draws share: ``losses``, an array of shape (m,), one entry per draw."""

    losses: np.ndarray

    @property
    def num_samples(self) -> int:
        """Number of draws m."""
        return int(self.losses.shape[0])


@dataclass(frozen=True, eq=False)
class PrivacyLossSamples(_Draws):
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
class ConditionalLossSamples(_Draws):
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

    def components(self, epsilon: float, columns=(0, 1, 2)) -> np.ndarray:
        """The three unbiased per-draw estimates (is, cmc, cond) of delta(eps), shape (m, 3) (only
        ``columns`` are computed; the others are left at 0).

        The tails of 'cmc' (at ``max(M, eps - S)``) and 'cond' (at ``eps - S``) coincide on the draws
        with ``M <= eps - S``, so they are evaluated once there. Draws taken on a torch device
        (:meth:`use_device`) are evaluated there, as one (m, 3) array copied back per call.
        """
        from ._backend import NumpyOps

        eps = check_epsilon(epsilon)
        dev = self._cache.get("device_ops")
        if dev is not None:
            return self._components_on(dev, eps, columns)
        ops = NumpyOps()
        out = np.zeros((self.num_samples, 3))
        if 0 in columns:
            x = eps - self.losses
            pos = x < 0
            out[pos, 0] = -np.expm1(x[pos]) * np.exp(self.log_weights[pos])
        e1 = eps - self.others_sum
        c_max = np.maximum(self.others_max, e1)
        w_o = np.exp(self.log_weights_others)
        both = 1 in columns and 2 in columns
        for si, step in enumerate(self.steps):
            sel = self.segment == si if len(self.steps) > 1 else slice(None)
            if len(self.steps) > 1 and not np.any(sel):
                continue
            e1s = e1[sel]
            tails = {}
            if both:
                tails[2] = step.log_tails(ops, e1s, self.direction)
                differ = np.nonzero(c_max[sel] != e1s)[0]
                lp, lq = (tails[2][0].copy(), tails[2][1].copy())
                if differ.size:
                    lp[differ], lq[differ] = step.log_tails(ops, c_max[sel][differ], self.direction)
                tails[1] = (lp, lq)
            for col, c in ((1, c_max[sel]), (2, e1s)):
                if col not in columns:
                    continue
                lp, lq = tails[col] if col in tails else step.log_tails(ops, c, self.direction)
                with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
                    r = np.minimum(e1s + lq - lp, 0.0)
                    h = np.where(np.isfinite(lp), np.exp(lp) * -np.expm1(r), 0.0)
                out[sel, col] = h * w_o[sel]
        out[:, 1] *= self.num_steps
        return out

    def use_device(self, ops) -> "ConditionalLossSamples":
        """Evaluate :meth:`components` with the torch backend ``ops`` (a ``TorchOps``; its device
        holds a copy of the draws) or, for None, with NumPy. Returns self.

        On a GPU this moves the estimator's only O(m) work per root-finding step (two
        ``log_ndtr`` per draw and column) off the host; the values agree with NumPy's to rounding.
        """
        self._cache.pop("device_arrays", None)
        if ops is None:
            self._cache.pop("device_ops", None)
        else:
            self._cache["device_ops"] = ops
        return self

    def _components_on(self, ops, eps: float, columns) -> np.ndarray:
        """:meth:`components` evaluated with the torch backend ``ops`` (its device), float64."""
        t = ops.torch
        a = self._cache.get("device_arrays")
        if a is None:
            a = self._cache["device_arrays"] = {
                n: t.as_tensor(np.asarray(getattr(self, n)), device=ops.dev)
                for n in ("losses", "others_sum", "others_max", "log_weights", "log_weights_others", "segment")}
        out = t.zeros((self.num_samples, 3), dtype=t.float64, device=ops.dev)
        if 0 in columns:
            x = eps - a["losses"]
            out[:, 0] = t.where(x < 0, -t.expm1(x) * t.exp(a["log_weights"]), 0.0)
        e1 = eps - a["others_sum"]
        c_max = t.maximum(a["others_max"], e1)
        w_o = t.exp(a["log_weights_others"])
        for si, step in enumerate(self.steps):
            sel = a["segment"] == si
            for col, c in ((1, c_max), (2, e1)):
                if col not in columns:
                    continue
                lp, lq = step.log_tails(ops, c, self.direction)
                r = t.clamp(e1 + lq - lp, max=0.0)
                h = t.where(t.isfinite(lp), t.exp(lp) * -t.expm1(r), 0.0)
                out[:, col] = t.where(sel, h * w_o, out[:, col])
        out[:, 1] *= self.num_steps
        return out.cpu().numpy()

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
