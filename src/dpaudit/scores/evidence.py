"""The result of an audit from scores: a finite family of confidence bounds on set masses.

Every score audit in dpaudit (histogram with Canonne TV bounds, histogram with sample splitting,
threshold membership inference) ends in the same kind of evidence: sets ``S_1, ..., S_D`` of score
values with, on one event of probability at least ``confidence``, simultaneously

    P(S_j) >= p_lower[j]   and   Q(S_j) <= q_upper[j]      for every j.

Everything else follows without further confidence cost (``docs/scores.md`` §1–§4):

* ``H_{e^eps}(P||Q) >= max_j p_lower[j] - e^eps q_upper[j]`` and, through the complements,
  ``H_{e^eps}(Q||P) >= max_j (1 - q_upper[j]) - e^eps (1 - p_lower[j])``, for every eps at once;
* the trade-off function of the pair (and of any mechanism whose neighbouring outputs
  post-process to P and Q) lies below the lower convex hull of the points
  ``(1 - p_lower, q_upper)``, their mirror images, ``(0, 1)`` and ``(1, 0)``;
* a ``mu``-GDP mechanism has ``mu >= Phi^{-1}(p_lower[j]) - Phi^{-1}(q_upper[j])`` for every j
  (Nasr et al. 2023, §5, with the rates bounded as here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from ._common import check_delta

__all__ = ["ClaimCheck", "ScoreAudit", "pareto_front", "lower_convex_hull"]

DIRECTIONS = ("both", "P||Q", "Q||P")


def pareto_front(p_lower, q_upper, sources):
    """Keep the rows not dominated by another (larger ``p_lower`` and smaller ``q_upper``).

    Dominated rows can never give the best bound at any eps, in the trade-off curve or for mu,
    since every derived quantity increases with ``p_lower`` and decreases with ``q_upper``.

    Parameters
    ----------
    p_lower, q_upper : array, shape (D,)
        Mass bounds.
    sources : sequence of str, length D
        Label of each row.

    Returns
    -------
    (ndarray, ndarray, tuple of str)
        The surviving rows, sorted by ``q_upper`` increasing.
    """
    p = np.asarray(p_lower, dtype=float)
    q = np.asarray(q_upper, dtype=float)
    src = np.asarray(list(sources), dtype=object)
    order = np.lexsort((-p, q))
    p, q, src = p[order], q[order], src[order]
    best = np.maximum.accumulate(p)
    keep = np.ones(p.size, dtype=bool)
    keep[1:] = p[1:] > best[:-1]
    return p[keep], q[keep], tuple(str(s) for s in src[keep])


def lower_convex_hull(x, y):
    """Vertices of the lower convex hull of points (Andrew's monotone chain), sorted by x.

    Parameters
    ----------
    x, y : array, shape (n,)

    Returns
    -------
    (ndarray, ndarray)
        Hull vertices.
    """
    lowest: dict = {}
    for px, py in zip(np.asarray(x, float).tolist(), np.asarray(y, float).tolist()):
        if px not in lowest or py < lowest[px]:
            lowest[px] = py  # at equal x only the lowest point can be on the lower hull
    pts = sorted(lowest.items())
    hull: list = []
    for px, py in pts:
        while len(hull) >= 2:
            (ax, ay), (bx, by) = hull[-2], hull[-1]
            if (bx - ax) * (py - ay) - (by - ay) * (px - ax) <= 0.0:
                hull.pop()
            else:
                break
        hull.append((px, py))
    hx = np.array([h[0] for h in hull])
    hy = np.array([h[1] for h in hull])
    return hx, hy


@dataclass(frozen=True)
class ClaimCheck:
    """Outcome of comparing audit evidence with a claimed guarantee.

    Attributes
    ----------
    claim : dict
        The claim (``Claim.to_dict()``).
    violated : bool
        True if, at the audit's confidence, the evidence contradicts the claim: some
        ``delta_lower_bound(eps)`` exceeds the largest divergence the claim allows at that eps.
    margin : float
        ``max_eps delta_lower_bound(eps) - claim.delta_profile(eps)`` (positive = violation).
    witness_epsilon : float
        The eps at which the margin is attained.
    confidence : float
        Probability that a reported violation is not a false accusation (at least).
    """

    claim: dict
    violated: bool
    margin: float
    witness_epsilon: float
    confidence: float

    def to_dict(self) -> dict:
        return {
            "claim": self.claim, "violated": bool(self.violated), "margin": float(self.margin),
            "witness_epsilon": float(self.witness_epsilon), "confidence": float(self.confidence),
        }


@dataclass(frozen=True, eq=False)
class ScoreAudit:
    """Lower confidence bounds on the privacy loss shown by two samples of scores.

    Construct with :func:`dpaudit.scores.histogram_audit` or :func:`dpaudit.scores.threshold_audit`.

    Attributes
    ----------
    method : str
        ``"auto"`` (union of Canonne and split evidence), ``"canonne"``, ``"split"`` or
        ``"threshold"``.
    confidence : float
        All bounds hold simultaneously with at least this probability.
    n_p, n_q : int
        Sizes of the two samples (P: with the canary / dataset D, Q: without / D').
    p_lower, q_upper : ndarray, shape (D,)
        Evidence rows (see module docstring), on their Pareto front, sorted by ``q_upper``.
    sources : tuple of str, length D
        Which bound produced each row (``"canonne"``, ``"split"``, ``"threshold"``).
    tv_estimate : float
        Plug-in total variation of the binned samples (an estimate, not a bound).
    estimate_epsilons, estimate_deltas : ndarray, shape (G,)
        Plug-in histogram estimate ``max(H(P_hat||Q_hat), H(Q_hat||P_hat))`` on a grid (estimate).
    details : dict
        Method-specific, JSON-serialisable: bins, TV radii, failure-probability split, sets used.

    References
    ----------
    Paper 001 §4 (histogram bounds), Lemma 7 and Dong, Roth, Su (2022) Prop. 2.12 (profile to
    trade-off curve); Nasr et al. (2023) §5 (GDP bound); derivations in ``docs/scores.md`` §1–§4.
    """

    method: str
    confidence: float
    n_p: int
    n_q: int
    p_lower: np.ndarray
    q_upper: np.ndarray
    sources: tuple
    tv_estimate: float = float("nan")
    estimate_epsilons: np.ndarray = field(default_factory=lambda: np.zeros(0))
    estimate_deltas: np.ndarray = field(default_factory=lambda: np.zeros(0))
    details: dict = field(default_factory=dict)

    # ------------------------------------------------------------------ privacy profile

    def _rows(self, direction: str):
        if direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
        p, q = self.p_lower, self.q_upper
        rows = []
        if direction in ("both", "P||Q"):
            rows.append((p, q, "P||Q"))
        if direction in ("both", "Q||P"):
            rows.append((1.0 - q, 1.0 - p, "Q||P"))
        return rows

    def delta_lower_bound(self, epsilon, direction: str = "both"):
        """Lower confidence bound on the privacy profile at every eps (simultaneously).

        ``max_j p_lower[j] - e^eps q_upper[j]`` for ``P||Q``, the complement form for ``Q||P``,
        and their maximum for ``"both"`` (a lower bound on the mechanism's profile when the
        neighbouring relation is symmetric, as add/remove and replace-one are).

        Parameters
        ----------
        epsilon : float or array
            Epsilon(s) in nats; any shape.
        direction : {"both", "P||Q", "Q||P"}

        Returns
        -------
        float or ndarray
            Bounds in [0, 1], same shape as ``epsilon``.
        """
        eps = np.asarray(epsilon, dtype=float)
        if np.any(np.isnan(eps)):
            raise ValueError(f"epsilon must not contain NaN, got {epsilon!r}")
        if self.p_lower.size == 0:
            out = np.zeros_like(eps)
        else:
            a = np.exp(np.minimum(eps, 700.0))[..., None]
            out = np.zeros_like(eps)
            for p, q, _ in self._rows(direction):
                out = np.maximum(out, np.max(p - a * q, axis=-1))
        out = np.clip(out, 0.0, 1.0)
        return float(out) if out.ndim == 0 else out

    def _best_epsilon(self, delta: float, direction: str):
        best = (0.0, -1, "")
        for p, q, name in self._rows(direction):
            ok = p > delta
            if not ok.any():
                continue
            with np.errstate(divide="ignore"):
                vals = np.where(ok, np.log(np.where(ok, p - delta, 1.0)) - np.log(q), -np.inf)
            j = int(np.argmax(vals))
            if vals[j] > best[0]:
                best = (float(vals[j]), j, name)
        return best

    def epsilon_lower_bound(self, delta: float, direction: str = "both") -> float:
        """Largest eps at which the evidence still rejects ``(eps, delta)``-DP, at least 0.

        ``max_j ln((p_lower[j] - delta) / q_upper[j])`` (and the complement form), i.e. the eps
        where :meth:`delta_lower_bound` falls to ``delta``. Valid for every delta at once.

        Parameters
        ----------
        delta : float
            Target delta in (0, 1).
        direction : {"both", "P||Q", "Q||P"}

        Returns
        -------
        float
            Epsilon lower bound in nats (0 means no evidence at this delta; ``inf`` is possible
            only if an upper mass bound is 0).
        """
        delta = check_delta(delta)
        return self._best_epsilon(delta, direction)[0]

    def epsilon_source(self, delta: float) -> str:
        """Which evidence (``"canonne"``, ``"split"``, ``"threshold"``) gives
        :meth:`epsilon_lower_bound` at ``delta``, with its direction; ``"none"`` if it is 0."""
        delta = check_delta(delta)
        eps, j, name = self._best_epsilon(delta, "both")
        if j < 0:
            return "none"
        return f"{self.sources[j]} ({name})"

    # ------------------------------------------------------------------ TV and Gaussian DP

    @property
    def tv_lower_bound(self) -> float:
        """Lower confidence bound on the total variation (the profile at eps = 0)."""
        if self.p_lower.size == 0:
            return 0.0
        return float(max(0.0, np.max(self.p_lower - self.q_upper)))

    @property
    def mu_from_tv(self) -> float:
        """GDP lower bound from the TV bound alone: ``2 Phi^{-1}((1 + TV_lb)/2)`` (paper 001 §7)."""
        return float(2.0 * special.ndtri((1.0 + self.tv_lower_bound) / 2.0))

    @property
    def mu_lower_bound(self) -> float:
        """Lower confidence bound on the parameter of any GDP guarantee of the mechanism.

        ``max(0, max_j Phi^{-1}(p_lower[j]) - Phi^{-1}(q_upper[j]))``: each evidence row is a
        test whose error rates a ``mu``-GDP mechanism must respect (Nasr et al. 2023, §5;
        paper 001 eq. (2.4)). At least :attr:`mu_from_tv`. Never an absolute value: null scores
        give 0.
        """
        if self.p_lower.size == 0:
            return 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            vals = special.ndtri(self.p_lower) - special.ndtri(self.q_upper)
        vals = vals[~np.isnan(vals)]
        return float(max(0.0, np.max(vals))) if vals.size else 0.0

    # ------------------------------------------------------------------ trade-off function

    def tradeoff_upper_bound(self, alpha):
        """Upper confidence bound on the trade-off function, at every type I error at once.

        The lower convex hull of ``(1 - p_lower, q_upper)``, the mirrored points
        ``(q_upper, 1 - p_lower)``, ``(0, 1)`` and ``(1, 0)``: every f-DP guarantee ``f`` of the
        mechanism satisfies ``f(alpha) <= tradeoff_upper_bound(alpha)`` (docs/scores.md §3; the
        hull is exact, no epsilon grid, which answers the caveat of paper 001 §4.3).

        Parameters
        ----------
        alpha : float or array
            Type I error(s) in [0, 1].

        Returns
        -------
        float or ndarray
            Type II error bound, same shape as ``alpha``.
        """
        a = np.asarray(alpha, dtype=float)
        if np.any(~np.isfinite(a)) or np.any((a < 0) | (a > 1)):
            raise ValueError(f"alpha must lie in [0, 1], got {alpha!r}")
        xs = np.concatenate([1.0 - self.p_lower, self.q_upper, [0.0, 1.0]])
        ys = np.concatenate([self.q_upper, 1.0 - self.p_lower, [1.0, 0.0]])
        hx, hy = lower_convex_hull(np.clip(xs, 0, 1), np.clip(ys, 0, 1))
        out = np.interp(a, hx, hy)
        return float(out) if out.ndim == 0 else out

    # ------------------------------------------------------------------ claims

    def check_claim(self, claim) -> ClaimCheck:
        """Compare the evidence with a claim (``PureDP``, ``ApproxDP``, ``RenyiDP``, ...).

        The claim is violated iff ``delta_lower_bound(eps) > claim.delta_profile(eps)`` for some
        eps. For pure and approximate DP the difference is affine in ``e^eps`` below the claimed
        eps and decreasing above it, so checking eps in {0, claimed eps} is exact; other claims
        are checked on a grid of 2001 points from 0 to 30 nats plus the claimed eps.

        Parameters
        ----------
        claim : object with ``delta_profile(eps)`` and ``to_dict()``

        Returns
        -------
        ClaimCheck
        """
        base = float(getattr(claim, "epsilon", 0.0))
        kind = claim.to_dict().get("kind")
        if kind in ("pure-dp", "approx-dp"):
            grid = np.array([0.0, base])
        else:
            grid = np.union1d(np.linspace(0.0, 30.0, 2001), [base])
        diff = np.atleast_1d(self.delta_lower_bound(grid)) - np.atleast_1d(claim.delta_profile(grid))
        j = int(np.argmax(diff))
        return ClaimCheck(claim.to_dict(), bool(diff[j] > 0), float(diff[j]), float(grid[j]), self.confidence)

    # ------------------------------------------------------------------ serialisation

    def summary(self, deltas=(1e-5,)) -> dict:
        """Headline numbers: TV, mu and epsilon lower bounds at the given deltas."""
        return {
            "tv_lower_bound": self.tv_lower_bound,
            "tv_estimate": self.tv_estimate,
            "mu_lower_bound": self.mu_lower_bound,
            "mu_from_tv": self.mu_from_tv,
            "epsilon_lower_bounds": {
                f"{d:g}": {"epsilon": self.epsilon_lower_bound(d), "source": self.epsilon_source(d)} for d in deltas
            },
        }

    def to_dict(self) -> dict:
        """JSON-serialisable dictionary of every field plus :meth:`summary`."""
        return _jsonable({
            "method": self.method,
            "confidence": self.confidence,
            "n_p": int(self.n_p),
            "n_q": int(self.n_q),
            "summary": self.summary(),
            "evidence": {
                "p_lower": [float(v) for v in self.p_lower],
                "q_upper": [float(v) for v in self.q_upper],
                "sources": list(self.sources),
            },
            "estimate": {
                "epsilons": [float(v) for v in self.estimate_epsilons],
                "deltas": [float(v) for v in self.estimate_deltas],
            },
            "details": self.details,
        })


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        v = float(obj)
        return v if math.isfinite(v) else str(v)
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    return obj
