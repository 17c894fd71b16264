"""Testing by betting: e-processes for differential-privacy claims (anytime-valid, sequential).

The pieces :class:`~dpaudit.testers.sequential.SequentialTester` is made of; the validity
argument is in ``docs/sequential.md`` (§1-§4) and summarised here.

**The e-process.** Let ``P = M(D0)``, ``Q = M(D1)`` and a claim with privacy profile
``delta(eps')`` (``H_{e^eps'}(P||Q) <= delta(eps')`` and the same for ``Q||P``, for every eps';
``docs/hockey_stick.md`` §3). Pairs ``(X_i, Y_i)``, ``X_i ~ P``, ``Y_i ~ Q`` are drawn i.i.d. Before
pair ``i`` a *plan* is fixed from the pairs before it only (predictable): a region ``S_i``, a
direction, an ``eps'_i`` and betting fractions. For direction ``P||Q``

    Z_i = 1{X_i in S_i} - e^{eps'_i} 1{Y_i in S_i},     E[Z_i | past] = P(S_i) - e^{eps'_i} Q(S_i) <= delta(eps'_i)

under the claim (for ``Q||P`` the roles swap). Each strategy ``s`` bets
``lambda_{s,i} = c_{s,i} / (e^{eps'_i} + delta(eps'_i))`` with ``c_{s,i} in [0, 0.9]`` fixed by the
past, so ``1 + lambda_{s,i} (Z_i - delta(eps'_i)) >= 1 - c_{s,i} >= 0.1 > 0`` and

    K_{s,n} = prod_{i <= n} (1 + lambda_{s,i} (Z_i - delta(eps'_i)))

is a non-negative supermartingale with ``K_{s,0} = 1`` (its conditional expected factor is
``1 + lambda (E[Z_i | past] - delta) <= 1``). A mixture ``K_n = sum_s w_s K_{s,n}`` with weights
fixed in advance (``sum w_s = 1``) is one too, and Ville's inequality gives
``P(exists n: K_n >= 1/beta) <= beta``: a violation reported at *any* sample size, whatever the
stopping rule, is wrong with probability at most beta (Ramdas, Grünwald, Vovk, Shafer 2023,
"Game-theoretic statistics and safe anytime-valid inference", §3; Waudby-Smith & Ramdas 2024,
JRSS-B, "Estimating means of bounded random variables by betting", §4).

**Which regions.** :class:`OrderedCells` cut a 1-D view of the outputs (the value, a classifier
score) into cells at quantiles of the past draws (repeated values, atoms, get their own cells);
:func:`candidate_masses` lists threshold, interval / two-tail, level-set and atom regions over
them, and :func:`choose_plan` picks the region, direction and eps' with the largest predicted
growth rate ``E log(1 + lambda (Z - delta))`` under conservative (Wilson, one standard error)
estimates of ``P(S)``, ``Q(S)``; the region family is picked by two-fold cross-validation on the
past draws. All of it reads past draws only, so it costs power when wrong, never validity.

**Betting fractions.** The strategies are a fixed grid of fractions of the cap
(:data:`CAP_FRACTIONS`, half the prior weight) and the plug-in Kelly fraction of the chosen plan
(the growth-optimal ``c`` under the conservative estimates, the other half): a mixture of
constant bets (Cover's universal portfolio, discretised) that loses at most ``ln(1/w_s)`` against
its best member, with the plug-in bet carrying most of the weight when the estimates are good.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import logsumexp

from .base import DivergenceBound, register_bound_type

__all__ = [
    "CAP_FRACTIONS",
    "CHOICE_Z",
    "EProcessBound",
    "FINE_FRACTIONS",
    "KELLY_WEIGHT",
    "BettingMixture",
    "OrderedCells",
    "Plan",
    "candidate_masses",
    "choose_plan",
    "growth_tables",
    "outcome_steps",
    "region_mask",
    "wilson_interval",
]

MAX_FRACTION = 0.9
"""Largest fraction of the cap ``1 / (e^eps' + delta')`` any strategy bets: a strategy's wealth can
fall by at most a factor ``1 - MAX_FRACTION`` on one pair, so it never reaches 0."""

CAP_FRACTIONS = np.geomspace(MAX_FRACTION, MAX_FRACTION / 64.0, 13)
"""The constant-fraction strategies (fractions of the cap, spaced by a factor sqrt(2))."""

FINE_FRACTIONS = np.geomspace(MAX_FRACTION, MAX_FRACTION * 2.0**-12, 49)
"""Fractions over which a plan's predicted growth is maximised (its Kelly fraction)."""

COARSE_STEP = 4
"""Candidates are compared on every ``COARSE_STEP``-th of :data:`FINE_FRACTIONS` (factor 2 apart); the
chosen one's Kelly fraction is then refined on all of them."""

KELLY_WEIGHT = 0.5
"""Prior weight of the plug-in Kelly strategy; the rest is shared equally by :data:`CAP_FRACTIONS`."""

CHOICE_Z = 1.0
"""Standard errors by which the choice moves ``P(S)`` down and ``Q(S)`` up (Wilson interval):
regions with few draws are not preferred for their noise."""

OUTCOMES = 4
"""Outcome kinds of one pair for a region: ``k = in + 2 out`` (0: neither, 1: only the first
distribution's draw in ``S``, 2: only the second's, 3: both)."""


# --------------------------------------------------------------------------- wealth
def outcome_steps(fractions, e: float, d: float) -> np.ndarray:
    """Log payoffs of each strategy for each outcome kind of one pair.

    Parameters
    ----------
    fractions : array, shape (S,)
        Fractions of the cap in ``[0, MAX_FRACTION]``.
    e : float
        ``e^eps'`` (>= 1).
    d : float
        ``delta(eps')`` in ``[0, 1)``.

    Returns
    -------
    ndarray, shape (S, 4)
        ``log(1 + lambda_s (z_k - d))`` with ``lambda_s = fraction_s / (e + d)`` and
        ``z = (0, 1, -e, 1 - e)`` for the outcome kinds ``k = in + 2 out``.
    """
    lam = np.asarray(fractions, dtype=float)[:, None] / (e + d)
    z = np.array([0.0, 1.0, -e, 1.0 - e])[None, :] - d
    return np.log1p(lam * z)


class BettingMixture:
    """Log wealth of a fixed set of betting strategies and of their mixture.

    Parameters
    ----------
    weights : array, shape (S,)
        Prior weights (positive, any scale: normalised to sum to 1).

    Attributes
    ----------
    log_wealth : ndarray, shape (S,)
        ``log(w_s K_s)`` after the pairs seen so far.
    """

    def __init__(self, weights):
        w = np.asarray(weights, dtype=float)
        if w.ndim != 1 or not np.all(w > 0) or not np.all(np.isfinite(w)):
            raise ValueError(f"weights must be a 1-D array of positive finite numbers, got {weights!r}")
        self.log_wealth = np.log(w / w.sum())

    @property
    def log_value(self) -> float:
        """``log K``, the log of the mixture's wealth (``log sum_s w_s K_s``)."""
        return float(logsumexp(self.log_wealth))

    def advance(self, steps: np.ndarray, kinds: np.ndarray) -> np.ndarray:
        """Bet on a run of pairs with fixed log payoffs per outcome kind.

        Parameters
        ----------
        steps : ndarray, shape (S, 4)
            :func:`outcome_steps` of this run's plan, one row per strategy.
        kinds : ndarray of int, shape (m,)
            Outcome kind of each pair, in order.

        Returns
        -------
        ndarray, shape (m,)
            ``log K`` after each pair (the path, for the first crossing of a threshold).
        """
        if len(kinds) == 0:
            return np.zeros(0)
        cum = self.log_wealth[:, None] + np.cumsum(steps[:, kinds], axis=1)
        self.log_wealth = cum[:, -1].copy()
        return logsumexp(cum, axis=0)

    def advance_values(self, payoffs: np.ndarray) -> np.ndarray:
        """Bet on a run of pairs with per-pair log payoffs ``payoffs`` (shape (S, m)); returns
        the path of ``log K`` (shape (m,))."""
        if payoffs.shape[1] == 0:
            return np.zeros(0)
        cum = self.log_wealth[:, None] + np.cumsum(payoffs, axis=1)
        self.log_wealth = cum[:, -1].copy()
        return logsumexp(cum, axis=0)

    def advance_counts(self, steps: np.ndarray, counts) -> None:
        """Bet on a run of pairs given only how many fell in each outcome kind (the order does not
        matter for the wealth at the end of the run)."""
        self.log_wealth = self.log_wealth + steps @ np.asarray(counts, dtype=float)


def wilson_interval(k, n, z: float = CHOICE_Z):
    """Wilson score interval of a binomial proportion: ``(low, high)`` arrays for counts ``k`` of
    ``n`` at ``z`` standard errors (Wilson 1927). Used to *choose* regions, never to certify."""
    k = np.asarray(k, dtype=float)
    n = np.maximum(np.asarray(n, dtype=float), 1.0)
    p = k / n
    den = 1.0 + z * z / n
    centre = (p + z * z / (2.0 * n)) / den
    half = z * np.sqrt(np.maximum(p * (1.0 - p), 0.0) / n + z * z / (4.0 * n * n)) / den
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)


def growth_tables(eps_grid, allowed, fractions=FINE_FRACTIONS) -> np.ndarray:
    """Log payoffs per outcome kind, eps' and fraction: shape (4, K, F), for the predicted growth
    ``sum_k prob_k * table[k, j, f]`` of betting fraction ``f`` at ``eps_grid[j]``."""
    eps_grid = np.asarray(eps_grid, dtype=float)
    allowed = np.asarray(allowed, dtype=float)
    out = np.empty((OUTCOMES, len(eps_grid), len(fractions)))
    for j, (eps, d) in enumerate(zip(eps_grid, allowed)):
        out[:, j, :] = outcome_steps(fractions, math.exp(eps), float(d)).T
    return out


# --------------------------------------------------------------------------- cells
@dataclass(frozen=True)
class OrderedCells:
    """An ordered partition of the real line, fixed from past draws: the open intervals between
    consecutive ``points`` and the single ``points`` themselves (``2 len(points) + 1`` cells, in
    order). Points are the values repeated among the past draws (atoms: an exactly released
    value, a discrete output) and quantiles of the others (at most ``max_edges``, refined
    geometrically towards both tails, where small regions of large privacy loss live).

    Attributes
    ----------
    points : ndarray, shape (k,)
        Sorted, distinct.
    atoms : ndarray of bool, shape (k,)
        Which points are atoms (their single-point cells hold past draws).
    """

    points: np.ndarray
    atoms: np.ndarray

    @property
    def num_cells(self) -> int:
        return 2 * len(self.points) + 1

    @classmethod
    def from_sorted(cls, values: np.ndarray, max_edges: int = 128) -> "OrderedCells":
        """Cells for sorted past values (shape (n,), finite): see the class docstring."""
        v = np.asarray(values, dtype=float)
        if len(v) == 0:
            return cls(np.zeros(0), np.zeros(0, dtype=bool))
        new = np.empty(len(v), dtype=bool)
        new[0] = True
        np.not_equal(v[1:], v[:-1], out=new[1:])
        starts = np.flatnonzero(new)
        counts = np.diff(np.append(starts, len(v)))
        uniq = v[starts]
        atoms = uniq[counts >= 2]
        rest = uniq[counts < 2]
        edges = np.zeros(0)
        if len(rest) >= 16:
            m = min(int(max_edges), len(rest) // 8)
            body = np.linspace(0.0, 1.0, max(m // 2, 2) + 1)[1:-1]
            tail = np.geomspace(4.0 / len(rest), 0.05, max(m // 4, 1)) if 4.0 / len(rest) < 0.05 else np.zeros(0)
            levels = np.unique(np.clip(np.concatenate([body, tail, 1.0 - tail]), 0.0, 1.0))
            idx = np.unique(np.clip((levels * (len(rest) - 1)).round().astype(int), 0, len(rest) - 1))
            edges = rest[idx]
        points = np.union1d(atoms, edges)
        return cls(points, np.isin(points, atoms))

    def assign(self, x: np.ndarray) -> np.ndarray:
        """Cell index of each value of ``x`` (shape (m,)): ``2 i`` for the interval below
        ``points[i]``, ``2 i + 1`` for ``points[i]`` itself."""
        lo = np.searchsorted(self.points, x, side="left")
        hi = np.searchsorted(self.points, x, side="right")
        return 2 * lo + (hi > lo)

    def counts(self, sorted_values: np.ndarray) -> np.ndarray:
        """Draws per cell of sorted values (shape (n,)): an int array of shape (num_cells,), from
        ``2 k + 2`` bisections (no pass over the values)."""
        lo = np.searchsorted(sorted_values, self.points, side="left")
        hi = np.searchsorted(sorted_values, self.points, side="right")
        bounds = np.empty(2 * len(self.points) + 2, dtype=np.int64)
        bounds[0] = 0
        bounds[1:-1:2] = lo
        bounds[2:-1:2] = hi
        bounds[-1] = len(sorted_values)
        return np.diff(bounds)

    def describe(self, mask: np.ndarray, limit: int = 4) -> str:
        """The region ``mask`` (shape (num_cells,)) in words: unions of intervals and points."""
        parts = []
        k = len(self.points)
        i = 0
        while i < len(mask):
            if not mask[i]:
                i += 1
                continue
            j = i
            while j + 1 < len(mask) and mask[j + 1]:
                j += 1
            parts.append(_cells_text(self.points, i, j, k))
            i = j + 1
        if not parts:
            return "the empty set"
        more = f", ... ({len(parts)} pieces)" if len(parts) > limit else ""
        return "output in " + " U ".join(parts[:limit]) + more


def _cells_text(points: np.ndarray, i: int, j: int, k: int) -> str:
    """Cells ``i..j`` (consecutive) as one interval or point."""
    if i == j and i % 2 == 1:
        return f"{{{points[i // 2]:.6g}}}"
    lo = "-inf" if i == 0 else f"{points[(i - 1) // 2]:.6g}"
    hi = "inf" if j == 2 * k else f"{points[j // 2]:.6g}"
    left = "[" if i % 2 == 1 else "("
    right = "]" if j % 2 == 1 else ")"
    if i == 0:
        left = "("
    if j == 2 * k:
        right = ")"
    return f"{left}{lo}, {hi}{right}"


# --------------------------------------------------------------------------- candidate regions
FAMILIES = ("threshold", "interval", "level", "atoms")
"""Region families over ordered cells; unordered cells (the distinct rows of a discrete vector
output) use ``level`` only."""

INTERVAL_POINTS = 24
"""Cell boundaries (equal steps of the past draws' mass) at which intervals and pairs of tails end."""


@dataclass(frozen=True)
class _Candidates:
    """Candidate regions of one family: their counts under each distribution and how to rebuild
    each one's cell mask (:func:`region_mask`)."""

    family: str
    a: np.ndarray  # draws of the first distribution per candidate
    b: np.ndarray  # of the second
    spec: np.ndarray  # (N, 3) int: kind, i, j


_KIND = {"prefix": 0, "suffix": 1, "level+": 2, "level-": 3, "interval": 4, "tails": 5, "atoms+": 6, "atoms-": 7}


def _log_ratio(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.log((a + 0.5) / (a.sum() + 1.0)) - np.log((b + 0.5) / (b.sum() + 1.0))


def candidate_masses(a: np.ndarray, b: np.ndarray, family: str, *, atoms: np.ndarray | None = None,
                     interval_points: int = INTERVAL_POINTS) -> _Candidates:
    """Candidate regions of a family over cells with counts ``a`` (first distribution) and ``b``.

    Parameters
    ----------
    a, b : ndarray, shape (C,)
        Draws per cell.
    family : {"threshold", "interval", "level", "atoms"}
        ``threshold``: every prefix and suffix of the ordered cells; ``interval``: every interval
        and every pair of tails with ends on ``interval_points`` cell boundaries at equal steps
        of the draws' mass; ``level``: the cells sorted by their smoothed log ratio, every prefix,
        in both orders; ``atoms``: the same over the atom cells only (``atoms``: mask of shape (C,)).
    atoms : ndarray of bool, shape (C,), optional
        Required for ``atoms``.

    Returns
    -------
    _Candidates

    Raises
    ------
    ValueError
        If ``family`` is not one of :data:`FAMILIES`.
    """
    C = len(a)
    ca, cb = np.cumsum(a), np.cumsum(b)
    na, nb = ca[-1], cb[-1]
    if family == "threshold":
        k = np.arange(1, C)
        A = np.concatenate([ca[k - 1], na - ca[k - 1]])
        B = np.concatenate([cb[k - 1], nb - cb[k - 1]])
        spec = np.stack([np.repeat([_KIND["prefix"], _KIND["suffix"]], len(k)), np.tile(k, 2), np.zeros(2 * len(k), int)], 1)
        return _Candidates(family, A, B, spec)
    if family in ("level", "atoms"):
        sel = np.arange(C) if family == "level" else np.flatnonzero(atoms)
        r = _log_ratio(a, b)[sel]
        As, Bs, specs = [], [], []
        for sign, kind in ((1.0, "level+"), (-1.0, "level-")):
            order = sel[np.argsort(-sign * r, kind="stable")]
            k = np.arange(1, len(order) + 1)
            As.append(np.cumsum(a[order]))
            Bs.append(np.cumsum(b[order]))
            kk = _KIND[kind] if family == "level" else _KIND["atoms" + kind[-1]]
            specs.append(np.stack([np.full(len(k), kk), k, np.zeros(len(k), int)], 1))
        return _Candidates(family, np.concatenate(As), np.concatenate(Bs), np.concatenate(specs))
    if family == "interval":
        mass = (ca + cb) / max(na + nb, 1.0)
        pts = np.unique(np.concatenate([[0], np.searchsorted(mass, np.linspace(0, 1, interval_points + 1)[1:-1]) + 1, [C]]))
        pts = pts[(pts >= 0) & (pts <= C)]
        c0a, c0b = np.concatenate([[0.0], ca]), np.concatenate([[0.0], cb])
        s, t = np.triu_indices(len(pts), k=1)
        s, t = pts[s], pts[t]
        ia, ib = c0a[t] - c0a[s], c0b[t] - c0b[s]
        A = np.concatenate([ia, na - ia])
        B = np.concatenate([ib, nb - ib])
        spec = np.stack([np.repeat([_KIND["interval"], _KIND["tails"]], len(s)), np.tile(s, 2), np.tile(t, 2)], 1)
        return _Candidates(family, A, B, spec)
    raise ValueError(f"unknown region family {family!r}; choose from {FAMILIES}")


def region_mask(spec, a: np.ndarray, b: np.ndarray, atoms: np.ndarray | None = None) -> np.ndarray:
    """The cell mask (shape (C,), bool) of candidate ``spec`` (a row of :class:`_Candidates`)
    built on counts ``a``, ``b`` (the same counts its candidates were listed from)."""
    kind, i, j = (int(x) for x in spec)
    C = len(a)
    m = np.zeros(C, dtype=bool)
    if kind == _KIND["prefix"]:
        m[:i] = True
    elif kind == _KIND["suffix"]:
        m[i:] = True
    elif kind == _KIND["interval"]:
        m[i:j] = True
    elif kind == _KIND["tails"]:
        m[:] = True
        m[i:j] = False
    else:
        sel = np.arange(C) if kind in (_KIND["level+"], _KIND["level-"]) else np.flatnonzero(atoms)
        sign = 1.0 if kind in (_KIND["level+"], _KIND["atoms+"]) else -1.0
        order = sel[np.argsort(-sign * _log_ratio(a, b)[sel], kind="stable")]
        m[order[:i]] = True
    return m


# --------------------------------------------------------------------------- plans
@dataclass
class Plan:
    """What to bet on for the next run of pairs, fixed from past draws only.

    Attributes
    ----------
    mask : ndarray of bool, shape (C,)
        The region's cells.
    direction : int
        0: ``P||Q`` (``Z = 1{X in S} - e 1{Y in S}``), 1: ``Q||P``.
    eps_index : int
        Index of eps' in the tester's grid.
    kelly : float
        Fraction of the cap of the plug-in Kelly strategy.
    growth : float
        Predicted growth per pair (conservative estimates, Kelly fraction), nats.
    family : str
        Region family chosen.
    p, q : float
        Past frequencies of the region under the distribution it should be large under and the other.
    description : str
        The region in words (filled in by the tester, which knows the view).
    """

    mask: np.ndarray
    direction: int
    eps_index: int
    kelly: float
    growth: float
    family: str
    p: float = 0.0
    q: float = 0.0
    description: str = ""
    cells: object = field(default=None, repr=False)


def _best(cands: _Candidates, n_a: int, n_b: int, tables: np.ndarray, z: float):
    """Largest predicted growth over candidates, both directions, eps' and fractions:
    ``(growth, index, direction, eps_index, fraction_index)`` (candidates compared on every
    :data:`COARSE_STEP`-th fraction, the winner's fraction refined on all)."""
    best = (-math.inf, 0, 0, 0, 0)
    if len(cands.a) == 0:
        return best
    a_lo, a_hi = wilson_interval(cands.a, n_a, z)
    b_lo, b_hi = wilson_interval(cands.b, n_b, z)
    coarse = tables[:, :, ::COARSE_STEP]
    for direction, (p, q) in enumerate(((a_lo, b_hi), (b_lo, a_hi))):
        probs = np.stack([(1 - p) * (1 - q), p * (1 - q), (1 - p) * q, p * q], 1)  # kinds 0..3
        g = (probs @ coarse.reshape(OUTCOMES, -1)).reshape(len(p), coarse.shape[1], coarse.shape[2])  # (N, K, F/4)
        i, k, _ = np.unravel_index(int(np.argmax(g)), g.shape)
        fine = probs[i] @ tables[:, k, :]
        f = int(np.argmax(fine))
        if fine[f] > best[0]:
            best = (float(fine[f]), int(i), direction, int(k), f)
    return best


def _plugin_growth(a: float, b: float, n_a: int, n_b: int, direction: int, k: int, f: int, tables) -> float:
    """Growth of a fixed bet (eps' index ``k``, fraction index ``f``) at plug-in frequencies."""
    p, q = (a / max(n_a, 1), b / max(n_b, 1)) if direction == 0 else (b / max(n_b, 1), a / max(n_a, 1))
    probs = np.array([(1 - p) * (1 - q), p * (1 - q), (1 - p) * q, p * q])
    return float(probs @ tables[:, k, f])


def choose_plan(folds: list, tables: np.ndarray, families, *, atoms: np.ndarray | None = None,
                z: float = CHOICE_Z) -> Plan | None:
    """The plan with the largest predicted growth, its family chosen by two-fold cross-validation.

    Parameters
    ----------
    folds : list of two (a, b, n_a, n_b)
        Per-cell draws of the two distributions in each fold of the past pairs, and the fold sizes.
    tables : ndarray, shape (4, K, F)
        :func:`growth_tables` of the tester's eps' grid.
    families : sequence of str
        Families to consider (:data:`FAMILIES`).
    atoms : ndarray of bool, optional
        Atom cells (for the ``atoms`` family).
    z : float
        Standard errors of the conservative estimates (:data:`CHOICE_Z`).

    Returns
    -------
    Plan or None
        None when no candidate predicts a positive growth (then nothing is bet).

    Notes
    -----
    Cross-validation: for each family, the best candidate on one fold is scored by its plug-in
    growth on the other (both ways); the family with the larger sum wins and its candidate is
    then chosen on both folds together. Everything here reads past draws only.
    """
    families = [f for f in families if f != "atoms" or (atoms is not None and atoms.any())]
    (a0, b0, na0, nb0), (a1, b1, na1, nb1) = folds
    if len(families) > 1:
        scores = []
        for fam in families:
            s = 0.0
            for (ta, tb, tna, tnb), (va, vb, vna, vnb) in (((a0, b0, na0, nb0), (a1, b1, na1, nb1)),
                                                             ((a1, b1, na1, nb1), (a0, b0, na0, nb0))):
                c = candidate_masses(ta, tb, fam, atoms=atoms)
                g, i, d, k, f = _best(c, tna, tnb, tables, z)
                if not math.isfinite(g):
                    continue
                m = region_mask(c.spec[i], ta, tb, atoms)
                s += _plugin_growth(va[m].sum(), vb[m].sum(), vna, vnb, d, k, f, tables)
            scores.append(s)
        family = families[int(np.argmax(scores))]
    else:
        family = families[0]
    a, b, na, nb = a0 + a1, b0 + b1, na0 + na1, nb0 + nb1
    c = candidate_masses(a, b, family, atoms=atoms)
    g, i, d, k, f = _best(c, na, nb, tables, z)
    if not (g > 0.0):
        return None
    m = region_mask(c.spec[i], a, b, atoms)
    pa, pb = a[m].sum() / max(na, 1), b[m].sum() / max(nb, 1)
    p, q = (pa, pb) if d == 0 else (pb, pa)
    return Plan(mask=m, direction=d, eps_index=k, kelly=float(FINE_FRACTIONS[f]), growth=g, family=family,
                p=float(p), q=float(q))


# --------------------------------------------------------------------------- the bound
@register_bound_type
@dataclass(frozen=True)
class EProcessBound(DivergenceBound):
    """The evidence of a sequential test by betting (:class:`~dpaudit.testers.sequential.SequentialTester`).

    Attributes
    ----------
    divergence, direction, estimate, lower, beta
        See :class:`~dpaudit.estimators.base.DivergenceBound`. ``divergence`` is
        ``"hockey-stick"`` or ``"renyi"`` (the component that holds most of the wealth);
        ``direction`` the last plan's; ``estimate`` the plug-in ``P(S) - e^eps Q(S)`` (Rényi:
        the plug-in variational value) of the last plan's region on every draw; ``lower`` the
        anytime-valid lower bound on ``H_{e^eps}`` at the claimed eps from the delta family
        (``-inf`` when it rejects no delta, and for a Rényi claim).
    epsilon : float
        The claimed eps (nats), the order of ``estimate`` and ``lower``.
    e_value : float
        The mixture's wealth ``K`` when the test stopped (``inf`` if it overflowed).
    log_e_value : float
        ``ln K``.
    threshold : float
        ``1 / beta``: a violation is reported when ``K`` reaches it.
    samples_used : int
        Pairs after which ``K`` first reached the threshold, or every pair bet on.
    samples_drawn : int
        Pairs drawn (the last batch is drawn whole).
    batches : int
        Batches drawn (the regions were refit after each).
    region : str
        The last plan's region.
    detectable_margin : float or None
        At the budget without a violation: the smallest ``P(S) - e^eps Q(S) - delta`` of a region
        with the best region's masses that would have made the expected log wealth reach
        ``ln(1/beta)`` over the pairs bet on (a planning figure, docs/sequential.md §6).
    sized_epsilon : float or None
        After a violation, the sizing step's lower bound on epsilon at the claimed delta from
        ``sizing_samples`` fresh pairs (:class:`~dpaudit.testers.sequential.Sizing`; valid with
        probability ``>= 1 - beta`` given the detection, docs/sequential.md §10); None when not sized.
    sizing_samples : int
        Fresh pairs of the sizing step (0: none).
    sizing_region : str
        The region the sizing step certified.
    """

    epsilon: float = 0.0
    e_value: float = 1.0
    log_e_value: float = 0.0
    threshold: float = math.inf
    samples_used: int = 0
    samples_drawn: int = 0
    batches: int = 0
    region: str = ""
    detectable_margin: float | None = None
    sized_epsilon: float | None = None
    sizing_samples: int = 0
    sizing_region: str = ""

    def delta_lower_bound(self, epsilon) -> np.ndarray | float:
        """Lower bound on ``H_{e^eps'}`` of the bound's direction at any eps' (nats), at the bound's
        confidence: ``lower`` for ``eps' <= epsilon`` (``H_{e^eps'}`` does not increase with eps'),
        else 0 (every hockey-stick divergence is >= 0). ``-inf`` where ``lower`` is (no delta rejected)
        is shown as 0 too."""
        eps = np.asarray(epsilon, dtype=float)
        low = self.lower if (self.divergence == "hockey-stick" and math.isfinite(self.lower)) else 0.0
        out = np.where(eps <= self.epsilon, max(low, 0.0), 0.0)
        return float(out) if out.ndim == 0 else out
