"""The one kind of evidence every hockey-stick estimator and score audit produces: region bounds.

A region ``S`` of the output space (a classifier's level set, a set of histogram cells, a
threshold on a score) is **chosen** on one part of the samples and **certified** on the other:
exact one-sided Clopper–Pearson bounds give, on one event of probability ``>= 1 - beta``,

    P(S) >= p_mass_lower   and   Q(S) <= q_mass_upper,

hence ``H_{e^eps}(P || Q) >= p_mass_lower - e^eps q_mass_upper`` for **every** eps at once
(``H_{e^eps}(P || Q) = sup_S P(S) - e^eps Q(S)``, paper 000 eq. (11); paper 001 §4, §6).

This module holds

* :func:`projected_mass_bounds` / :func:`projected_margins` — how a candidate region is judged
  on the choosing part (its counts rescaled to the certifying part's size, so the finite-sample
  penalty of small regions is counted), and :func:`best_case_margin` — the most any data of a
  given size could show (vacuity checks);
* :func:`certify_regions` — the certification of one region or a family of ``d`` regions
  (Bonferroni: each of the ``2 d`` one-sided bounds at ``beta / (2 d)``);
* :class:`HockeyStickBound` — one certified region (the estimators' result);
* :class:`ScoreAudit` — a family of certified regions with both directions, Pareto-pruned (the
  score audits' result);
* :class:`ProfileEvidence` and its one :meth:`~ProfileEvidence.against`, which compares any of
  them with a claim's privacy profile and returns a :class:`ClaimCheck`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from .._validate import check_delta
from ..bounds import (
    _cp_lower,
    _cp_upper,
    clopper_pearson_lower,
    clopper_pearson_upper,
    poisson_rate,
    poisson_ratio_lower,
    poisson_sample_size,
)
from ..privacy.claims import RenyiDP
from .base import DivergenceBound, profile_grid, register_bound_type

__all__ = [
    "BothDirections",
    "ClaimCheck",
    "ClaimComparison",
    "HockeyStickBound",
    "ProfileEvidence",
    "RegionTarget",
    "ScoreAudit",
    "best_case_margin",
    "certify_regions",
    "epsilon_direction_split",
    "lower_convex_hull",
    "pareto_front",
    "predicted_rejection",
    "projected_margins",
    "projected_mass_bounds",
    "projected_choices",
    "projected_scores",
    "RATIO_SHARE",
    "poisson_rows",
    "prefers_ratio",
    "ratio_certification",
    "rdp_epsilon_lower_bound",
    "smallest_sufficient_size",
]

DIRECTIONS = ("both", "P||Q", "Q||P")


# --------------------------------------------------------------------------- choose, certify
def projected_mass_bounds(k_in, n_fit_in, k_out, n_fit_out, n_in: int, n_out: int, beta_cp: float):
    """Clopper–Pearson bounds a region would get on the certifying samples if they looked like
    the choosing ones.

    Parameters
    ----------
    k_in, k_out : array
        Counts of candidate regions among ``n_fit_in`` (resp. ``n_fit_out``) choosing samples of
        the distribution whose mass should be large (resp. small).
    n_in, n_out : int
        Sizes of the certifying samples.
    beta_cp : float
        Failure probability of each one-sided bound.

    Returns
    -------
    (p_lo, q_hi)
        ``CP_lo(k_in n_in / n_fit_in)`` and ``CP_hi(k_out n_out / n_fit_out)`` (rescaled counts
        capped at the sizes).
    """
    k_in_test = np.minimum(k_in * (n_in / n_fit_in), n_in)
    k_out_test = np.minimum(k_out * (n_out / n_fit_out), n_out)
    return clopper_pearson_lower(k_in_test, n_in, beta_cp), clopper_pearson_upper(k_out_test, n_out, beta_cp)


def _projected_mass_bounds(k_in, n_fit_in, k_out, n_fit_out, n_in: int, n_out: int, beta_cp: float):
    """:func:`projected_mass_bounds` without the argument checks, for the selection's inner loop
    (counts of regions among the choosing samples: ``0 <= k <= n_fit``; sizes > 0): the same numbers."""
    if not (n_in > 0 and n_out > 0 and np.all(np.greater(n_fit_in, 0)) and np.all(np.greater(n_fit_out, 0))):
        return projected_mass_bounds(k_in, n_fit_in, k_out, n_fit_out, n_in, n_out, beta_cp)  # its errors
    k_in_test = np.minimum(np.asarray(k_in, dtype=float) * (n_in / n_fit_in), n_in)
    k_out_test = np.minimum(np.asarray(k_out, dtype=float) * (n_out / n_fit_out), n_out)
    return _cp_lower(k_in_test, float(n_in), beta_cp), _cp_upper(k_out_test, float(n_out), beta_cp)


def projected_margins(k_in, n_fit_in, k_out, n_fit_out, n_in: int, n_out: int,
                      eps_grid, allowed, beta_cp: float) -> np.ndarray:
    """Expected held-out margin of each candidate region over a claim's profile.

    ``max_eps [p_lo - e^eps q_hi - allowed(eps)]`` with ``(p_lo, q_hi)`` from
    :func:`projected_mass_bounds`; the region to certify is the argmax (training samples only, so
    the certified bound stays valid).

    Returns
    -------
    ndarray, shape (num_candidates,)
    """
    p_lo, q_hi = projected_mass_bounds(k_in, n_fit_in, k_out, n_fit_out, n_in, n_out, beta_cp)
    margin = p_lo[:, None] - np.exp(eps_grid)[None, :] * q_hi[:, None] - allowed[None, :]
    return margin.max(axis=1)


@dataclass(frozen=True)
class RegionTarget:
    """What a region is chosen to maximise on the selection samples (never what certifies it).

    Two objectives, both computed from the Clopper–Pearson bounds ``(p_lo, q_hi)`` a candidate
    would get on the certifying samples (:func:`projected_mass_bounds`):

    ``"margin"`` (:meth:`margin`)
        ``max_eps' [p_lo - e^eps' q_hi - allowed(eps')]``: the margin over a claim's privacy
        profile, which decides a test's verdict (paper 000, Alg. 6 with the whole profile).
    ``"epsilon"`` (:meth:`epsilon`)
        ``ln((p_lo - delta) / q_hi)``: the certified lower bound on epsilon at ``delta``
        (DP-Sniper's objective, Bichsel et al. 2021 §V, with exact bounds in place of its
        probability floor: a tiny region's ``p_lo`` falls to ``delta`` on its own). Candidates
        with ``p_lo <= delta`` score ``ln(1e-300 / q_hi)``, so they rank below every candidate
        that certifies something and among themselves by ``q_hi``.

    With ``ratio=True`` a candidate may also be certified by the ratio test
    (:meth:`ratio_score`): its objective is then the larger of the two certifications' (each at
    the expected counts), and the certifying code uses the same comparison to pick the
    certification of the chosen region (:func:`ratio_certification`).

    Attributes
    ----------
    kind : {"margin", "epsilon"}
    eps_grid, allowed : ndarray or None
        ``"margin"`` only: the claim's eps' grid (nats) and the delta it allows there.
    delta : float
        ``"epsilon"`` only: the delta of the epsilon lower bound, in [0, 1).
    ratio : bool
        Whether the ratio certification competes (see above).
    """

    kind: str
    eps_grid: np.ndarray | None = None
    allowed: np.ndarray | None = None
    delta: float = 0.0
    ratio: bool = False

    @classmethod
    def margin(cls, eps_grid, allowed, ratio: bool = False) -> "RegionTarget":
        """Maximise the margin over a claim's profile (``eps_grid``, ``allowed``: same shape)."""
        return cls("margin", np.asarray(eps_grid, dtype=float), np.asarray(allowed, dtype=float), ratio=ratio)

    @classmethod
    def epsilon(cls, delta: float = 0.0, ratio: bool = False) -> "RegionTarget":
        """Maximise the certified epsilon lower bound at ``delta`` (ValueError outside [0, 1))."""
        return cls("epsilon", delta=check_delta(delta, allow_zero=True), ratio=ratio)

    def score(self, p_lo, q_hi) -> np.ndarray:
        """The objective of candidate regions with mass bounds ``p_lo``, ``q_hi`` (arrays of one shape)."""
        p_lo, q_hi = np.asarray(p_lo, dtype=float), np.asarray(q_hi, dtype=float)
        if self.kind == "margin":
            # p_lo - e^eps' q_hi - allowed(eps'), maximised over the grid (in place: one array)
            m = q_hi[..., None] * np.exp(self.eps_grid)
            np.subtract(p_lo[..., None], m, out=m)
            np.subtract(m, self.allowed, out=m)
            return m.max(axis=-1)
        return np.log(np.maximum(p_lo - self.delta, 1e-300)) - np.log(np.maximum(q_hi, 1e-300))

    def score_ceiling(self, p, q) -> np.ndarray:
        """An upper bound on :meth:`score` (``p``, ``q``: arrays of one shape, masses in [0, 1]),
        for the pruning of :func:`projected_scores`: :meth:`score` itself for ``"epsilon"``; for
        ``"margin"``, ``p - h(q) + MARGIN_CEILING_SLACK`` with ``h(q) = min_eps' [e^eps' q +
        allowed(eps')]`` read off the lower envelope of those lines (computed once per target),
        ``O(log grid)`` per candidate instead of a pass over the whole eps' grid (a quarter of
        the selection's time on 1-D outputs, issue 37). The slack covers the rounding of both
        forms, so the bound holds for the floating-point :meth:`score`."""
        if self.kind != "margin":
            return self.score(p, q)
        hull = self.__dict__.get("_hull")
        if hull is None:
            hull = _lower_envelope(np.exp(self.eps_grid), self.allowed)
            object.__setattr__(self, "_hull", hull)
        breaks, slopes, intercepts = hull
        p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
        i = np.searchsorted(breaks, q)
        return p - (slopes[i] * q + intercepts[i]) + MARGIN_CEILING_SLACK

    def ratio_score(self, p_lo, ratio_lo) -> np.ndarray:
        """The objective of candidate regions certified by the ratio test, from ``P(S) >= p_lo``
        and ``P(S)/Q(S) >= ratio_lo`` alone (:func:`ratio_delta_lower`,
        :func:`ratio_epsilon_lower`); arrays of one shape."""
        p_lo, ratio_lo = np.asarray(p_lo, dtype=float), np.asarray(ratio_lo, dtype=float)
        if self.kind == "margin":
            m = ratio_delta_lower(p_lo[..., None], ratio_lo[..., None], np.exp(self.eps_grid)) - self.allowed
            return m.max(axis=-1)
        return ratio_epsilon_lower(p_lo, ratio_lo, self.delta)


MARGIN_CEILING_SLACK = 1e-9
"""Added to :meth:`RegionTarget.score_ceiling`'s margin ceiling: far above the rounding of the
envelope and of the grid's maximum (masses <= 1, slopes <= e^grid), far below the margins that
decide a region."""


def _lower_envelope(slopes: np.ndarray, intercepts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The lower envelope ``h(q) = min_j slopes_j q + intercepts_j`` on ``q >= 0``, as
    ``(breaks, s, c)``: for ``q`` in ``(breaks[i-1], breaks[i]]`` (``searchsorted(breaks, q)``
    is ``i``), ``h(q) = s[i] q + c[i]``. Lines in decreasing order of slope, the standard
    convex-hull scan (each line kept only where it is the minimum)."""
    order = np.lexsort((intercepts, -slopes))  # slope descending, then intercept ascending
    s_all, c_all = slopes[order].tolist(), intercepts[order].tolist()
    hull: list[tuple[float, float]] = []
    for s_j, c_j in zip(s_all, c_all):
        if hull and hull[-1][0] == s_j:
            continue  # same slope, larger intercept: never below
        while hull and c_j <= hull[-1][1]:
            hull.pop()  # smaller slope and intercept: below it on q >= 0
        while len(hull) >= 2:
            (s1, c1), (s2, c2) = hull[-2], hull[-1]
            if (c_j - c1) * (s1 - s2) <= (c2 - c1) * (s1 - s_j):  # line 2 never strictly lowest
                hull.pop()
            else:
                break
        hull.append((s_j, c_j))
    s = np.array([h[0] for h in hull])
    c = np.array([h[1] for h in hull])
    breaks = (c[1:] - c[:-1]) / (s[:-1] - s[1:])  # where line i+1 takes over from line i
    return breaks, s, c


RATIO_SHARE = 0.9
"""Share of a region's failure probability spent on the ratio bound when it is certified by the
ratio test; the two mass bounds get half the rest each (:meth:`HockeyStickBound.certify`)."""


def ratio_delta_lower(p_lo, ratio_lo, e_eps):
    """Lower bound on ``P(S) - e^eps Q(S)`` from ``P(S) >= p_lo`` and ``P(S)/Q(S) >= ratio_lo``.

    ``P - e^eps Q = P (1 - e^eps Q/P) >= p_lo f`` with ``f = 1 - e^eps / ratio_lo`` when
    ``f >= 0``; when ``f < 0``, ``P <= 1`` gives ``>= f``. ``-inf`` when ``ratio_lo = 0``.
    Arrays broadcast; ``e_eps`` is ``e^eps`` (eps in nats). Source: ``docs/hockey_stick.md`` §1b.
    """
    p_lo, ratio_lo, e_eps = (np.asarray(v, dtype=float) for v in (p_lo, ratio_lo, e_eps))
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(ratio_lo > 0, 1.0 - e_eps / np.where(ratio_lo > 0, ratio_lo, 1.0), -np.inf)
    return np.where(f >= 0, p_lo * np.where(f >= 0, f, 0.0), f)


def ratio_epsilon_lower(p_lo, ratio_lo, delta: float):
    """Largest eps with ``P(S) - e^eps Q(S) > delta`` guaranteed by ``P(S) >= p_lo`` and
    ``P(S)/Q(S) >= ratio_lo``: ``ln(ratio_lo (1 - delta / p_lo))`` (``ln(1e-300)`` when nothing is
    guaranteed, as :meth:`RegionTarget.score` ranks); delta in [0, 1). Arrays broadcast. Source:
    ``docs/hockey_stick.md`` §1b."""
    p_lo, ratio_lo = np.asarray(p_lo, dtype=float), np.asarray(ratio_lo, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        val = ratio_lo * (1.0 - delta / np.where(p_lo > 0, p_lo, 1.0))
        return np.log(np.maximum(np.where(p_lo > delta, val, 0.0), 1e-300))


EPSILON_SHRINK = 0.1
"""Level of the one-sided bounds the choosing counts are moved to before an epsilon region is
projected (:func:`projected_scores`)."""


PRUNE_BLOCK = 64
"""Candidates evaluated at a time by :func:`projected_scores` (in decreasing order of an upper
bound on their objective, until the bound falls below the best value found): blocks of
:data:`PRUNE_FIRST`, doubling up to this size."""

PRUNE_FIRST = 8
"""The first block of :func:`projected_scores` (fewer calls of the bounds after a block that
already holds the maximum; any block sizes give the same maximum and argmax)."""


def projected_scores(k_in, n_fit_in, k_out, n_fit_out, n_in: int, n_out: int,
                     target: RegionTarget, beta_cp: float, with_choice: bool = False):
    """:meth:`RegionTarget.score` of candidate regions from their choosing counts, projected to
    the certifying sizes (:func:`projected_mass_bounds`). For the ``"epsilon"`` objective the
    choosing counts are first moved to their one-sided :data:`EPSILON_SHRINK` Clopper–Pearson
    bounds (``P`` down, ``Q`` up), so that small regions whose ratio is mostly selection noise
    are not preferred; only the choice is affected, never the certified bound.

    With ``target.ratio`` each candidate gets the better of the two certifications
    (:func:`ratio_certification`).

    Only the maximum and its argmax are needed (the region to certify): the objective at the
    point estimates ``k / n_fit`` bounds every candidate's objective from above (the
    Clopper–Pearson bounds at levels below 1/2 lie on the safe side of them, and every objective
    grows with ``P_lo`` and the ratio bound and falls with ``Q_hi``), so candidates are evaluated
    in blocks of :data:`PRUNE_BLOCK` in decreasing order of that bound until it falls below the
    best value found (:func:`_pruned_scores`). A candidate left out gets its upper bound, which
    is below the maximum: the maximum, its argmax and every value at least as large are exact.

    Returns
    -------
    ndarray, shape (num_candidates,)
        With ``with_choice``, also a boolean array: which candidates the ratio test would certify
        (False for candidates left out).
    """
    k_in, k_out = np.asarray(k_in, dtype=float), np.asarray(k_out, dtype=float)
    shape = np.broadcast_shapes(k_in.shape, k_out.shape)
    size = int(np.prod(shape)) if shape else 1
    if size <= PRUNE_FIRST:
        return _projected_scores_all(k_in, n_fit_in, k_out, n_fit_out, n_in, n_out, target, beta_cp, with_choice)
    values, use = _pruned_scores(np.broadcast_to(k_in, shape).reshape(-1), np.broadcast_to(k_out, shape).reshape(-1),
                                 np.array([0, size]), np.array([n_fit_in]), np.array([n_fit_out]),
                                 n_in, n_out, target, beta_cp)
    values, use = values.reshape(shape), use.reshape(shape)
    return (values, use) if with_choice else values


def projected_choices(problems, n_in: int, n_out: int, target: RegionTarget, beta_cp: float) -> list[int]:
    """The argmax of :func:`projected_scores` for each of several candidate sets that share the
    certifying sizes, the objective and the level: the same indices, from one pruned evaluation
    of them all (:func:`_pruned_scores`: each round evaluates the next block of every set still
    open in one vectorised call, instead of one call per block and set; issue 37, the
    cross-validation's 64 region choices per direction and objective).

    Parameters
    ----------
    problems : sequence of ``(k_in, n_fit_in, k_out, n_fit_out)``
        Per candidate set: choosing counts (1-D arrays of one length, at least 1) and the rows
        they were counted on (ints > 0), as :func:`projected_scores` takes them.
    n_in, n_out, target, beta_cp
        As :func:`projected_scores`.

    Returns
    -------
    list of int
        Per set, ``int(np.argmax(projected_scores(...)))``.

    Raises
    ------
    ValueError
        If a candidate set has no counts, or different numbers of ``k_in`` and ``k_out`` counts.
    """
    k_in = np.concatenate([np.asarray(p[0], dtype=float).reshape(-1) for p in problems])
    k_out = np.concatenate([np.asarray(p[2], dtype=float).reshape(-1) for p in problems])
    sizes = np.array([np.size(p[0]) for p in problems])
    if np.any(sizes < 1) or len(k_in) != len(k_out):
        raise ValueError(f"every candidate set needs as many k_in as k_out counts, at least one, got sizes {sizes}")
    starts = np.r_[0, np.cumsum(sizes)]
    values, _ = _pruned_scores(k_in, k_out, starts, np.array([p[1] for p in problems]),
                               np.array([p[3] for p in problems]), n_in, n_out, target, beta_cp)
    return [int(np.argmax(values[a:b])) for a, b in zip(starts[:-1].tolist(), starts[1:].tolist())]


def _pruned_scores(k_in, k_out, starts, n_fit_in, n_fit_out, n_in: int, n_out: int, target: RegionTarget,
                   beta_cp: float):
    """The pruned evaluation behind :func:`projected_scores` and :func:`projected_choices`.

    ``k_in``, ``k_out`` (shape (N,), floats): the candidates of ``G`` sets laid end to end, set
    ``g`` at ``starts[g]:starts[g + 1]`` (``starts``: shape (G + 1,)); ``n_fit_in``,
    ``n_fit_out`` (shape (G,)): each set's choosing rows. Each set's candidates are taken in
    decreasing order of the point-estimate ceiling (ties in index order), in blocks of
    :data:`PRUNE_FIRST` doubling to :data:`PRUNE_BLOCK`, each block cut to the candidates whose
    ceiling reaches the set's best value so far; a set is done when its next ceiling is below its
    best. Every round evaluates the blocks of all open sets in one call of
    :func:`_projected_scores_all` (elementwise: a candidate's value does not depend on the
    others in the call), with the set's best so far as the ``floor`` below which an epsilon
    candidate may stop at its second ceiling. A candidate never evaluated keeps its ceiling,
    which is below its set's best: every set's maximum, its argmax and every value at least as
    large are exact.

    Returns ``(values, use)``, shape (N,) each (``use``: the ratio test's choice, False where not
    evaluated)."""
    sizes = np.diff(starts)
    group = np.repeat(np.arange(len(sizes)), sizes)
    fit_in, fit_out = n_fit_in[group], n_fit_out[group]  # per candidate: same numbers as the scalars
    upper = _point_ceiling(k_in, fit_in, k_out, fit_out, n_in, n_out, target)
    values, use = upper.copy(), np.zeros(len(upper), dtype=bool)
    order = np.lexsort((-upper, group))  # by set, then ceiling decreasing (lexsort is stable)
    upper_sorted = upper[order]
    pos, ends = starts[:-1].tolist(), starts[1:].tolist()
    best = [-math.inf] * len(pos)
    step = [PRUNE_FIRST] * len(pos)
    open_sets = [g for g in range(len(pos)) if pos[g] < ends[g]]
    while open_sets:
        blocks, members = [], []
        for g in open_sets:
            lo, hi = pos[g], min(pos[g] + step[g], ends[g])
            if best[g] > -math.inf:  # only ceilings that reach the best (sorted: a prefix)
                hi = lo + int(np.count_nonzero(upper_sorted[lo:hi] >= best[g]))
            blocks.append(order[lo:hi])
            members.append((g, hi - lo))
            pos[g], step[g] = hi, min(2 * step[g], PRUNE_BLOCK)
        idx = np.concatenate(blocks)
        floor = np.repeat([best[g] for g, _ in members], [n for _, n in members])
        v, u = _projected_scores_all(k_in[idx], fit_in[idx], k_out[idx], fit_out[idx], n_in, n_out, target,
                                     beta_cp, True, floor)
        values[idx], use[idx] = v, u
        at = 0
        for g, n in members:
            best[g] = max(best[g], float(np.max(v[at:at + n])))
            at += n
        open_sets = [g for g in open_sets if pos[g] < ends[g] and upper_sorted[pos[g]] >= best[g]]
    return values, use


def _point_ceiling(k_in, n_fit_in, k_out, n_fit_out, n_in: int, n_out: int, target: RegionTarget) -> np.ndarray:
    """An upper bound on the projected objective of candidates with counts ``k_in`` of
    ``n_fit_in``, ``k_out`` of ``n_fit_out`` (arrays of one shape, ``0 <= k <= n_fit``;
    :func:`_certified_scores`, and so :func:`_projected_scores_all` too, whose epsilon shrink only
    lowers it): :meth:`RegionTarget.score_ceiling` at the point estimates (rescaled counts over
    the certifying sizes), and for the epsilon objective with the ratio test also
    :meth:`RegionTarget.ratio_score` at the estimated ratio. The Clopper–Pearson bounds at levels
    below 1/2 lie on the safe side of the point estimates, the ratio bound below the estimated
    ratio, and every objective grows with ``P_lo`` and the ratio bound and falls with ``Q_hi``."""
    p_hat = np.minimum(k_in * (n_in / n_fit_in), n_in) / n_in
    q_hat = np.minimum(k_out * (n_out / n_fit_out), n_out) / n_out
    upper = np.asarray(target.score_ceiling(p_hat, q_hat), dtype=float)
    if target.ratio and target.kind == "epsilon":
        with np.errstate(divide="ignore", invalid="ignore"):
            r_hat = np.where(k_in > 0, np.where(k_out > 0, (k_in / n_fit_in) / np.where(
                k_out > 0, k_out / n_fit_out, 1.0), 1e300), 0.0)
        upper = np.maximum(upper, target.ratio_score(p_hat, np.minimum(r_hat, 1e300)))
    return upper


def _projected_scores_all(k_in, n_fit_in, k_out, n_fit_out, n_in: int, n_out: int,
                          target: RegionTarget, beta_cp: float, with_choice: bool = False, floor=None):
    """:func:`projected_scores` evaluated for every candidate.

    ``floor`` (epsilon objective only; shape (num_candidates,), with ``n_fit_in``/``n_fit_out``
    arrays of that shape): a candidate whose ceiling after the epsilon shrink
    (:func:`_point_ceiling` of the shrunk counts: two of a candidate's up to six Clopper–Pearson
    inversions) is below its floor gets that ceiling instead of its value (which is at most the
    ceiling) and ``use`` False; the others get their exact values. :func:`_pruned_scores` passes
    each set's best so far, so a candidate cut this way cannot be its set's argmax (issue 37:
    most of the epsilon objective's candidates near the best fall below it once shrunk)."""
    if target.kind == "epsilon":
        # Guard against selection bias: the largest ratio among many small candidate regions is
        # mostly noise, so the choosing counts are first moved to one-sided 90 % bounds (toward no
        # effect) before the projection; large regions barely move.
        if np.all(np.greater(n_fit_in, 0)) and np.all(np.greater(n_fit_out, 0)):
            # (choosing counts: 0 <= k <= n_fit; the checks' numbers without them)
            k_in = _cp_lower(np.asarray(k_in, dtype=float), np.asarray(n_fit_in, dtype=float), EPSILON_SHRINK) * n_fit_in
            k_out = _cp_upper(np.asarray(k_out, dtype=float), np.asarray(n_fit_out, dtype=float),
                              EPSILON_SHRINK) * n_fit_out
        else:
            k_in = clopper_pearson_lower(k_in, n_fit_in, EPSILON_SHRINK) * n_fit_in
            k_out = clopper_pearson_upper(k_out, n_fit_out, EPSILON_SHRINK) * n_fit_out
        if floor is not None:
            scores = _point_ceiling(k_in, n_fit_in, k_out, n_fit_out, n_in, n_out, target)
            use = np.zeros(scores.shape, dtype=bool)
            keep = ~(scores < floor)
            if np.any(keep):
                scores[keep], use[keep] = _certified_scores(k_in[keep], n_fit_in[keep], k_out[keep], n_fit_out[keep],
                                                            n_in, n_out, target, beta_cp)
            return (scores, use) if with_choice else scores
    scores, use = _certified_scores(k_in, n_fit_in, k_out, n_fit_out, n_in, n_out, target, beta_cp)
    return (scores, use) if with_choice else scores


def _certified_scores(k_in, n_fit_in, k_out, n_fit_out, n_in: int, n_out: int, target: RegionTarget,
                      beta_cp: float):
    """``(scores, use)`` of :func:`_projected_scores_all` from counts already shrunk (epsilon)."""
    if not target.ratio:
        p_lo, q_hi = _projected_mass_bounds(k_in, n_fit_in, k_out, n_fit_out, n_in, n_out, beta_cp)
        scores = target.score(p_lo, q_hi)
        return scores, np.zeros(np.shape(scores), dtype=bool)
    return ratio_certification(k_in, n_fit_in, k_out, n_fit_out, n_in, n_out, target, beta_cp)


def poisson_rows(n_p: int, n_q: int, rng) -> tuple:
    """The ratio test's held-out rows of one estimate: ``(N_p, lam_p, N_q, lam_q)`` with
    ``N ~ Poisson(lam)`` (:func:`~dpaudit.bounds.poisson_sample_size`) for the ``n_p`` and ``n_q``
    held-out rows of P and Q; ``N_p = N_q = None`` when either exceeds its rows (probability
    ``<= 2 POISSON_MISS``: then no ratio bound is computed). Drawn from ``rng`` only."""
    (big_p, lam_p), (big_q, lam_q) = poisson_sample_size(n_p, rng), poisson_sample_size(n_q, rng)
    if big_p > n_p or big_q > n_q:
        return None, lam_p, None, lam_q
    return big_p, lam_p, big_q, lam_q


def ratio_certification(k_in, n_fit_in, k_out, n_fit_out, n_in: int, n_out: int, target: RegionTarget,
                        beta_cp: float):
    """Projected objective of candidate regions with the better of the two certifications, and
    which one it is.

    The two-mass certification spends ``beta_cp`` on each Clopper–Pearson bound; the ratio one
    (:meth:`HockeyStickBound.certify` with Poisson counts) spends ``RATIO_SHARE * 2 beta_cp`` on
    :func:`~dpaudit.bounds.poisson_ratio_lower` (counts rescaled to the Poissonised sizes
    :func:`~dpaudit.bounds.poisson_rate` of ``n_in``, ``n_out``) and ``(1 - RATIO_SHARE) beta_cp``
    on each mass bound. Choosing counts only. Its objective is the larger of the ratio form
    (:meth:`RegionTarget.ratio_score`) and the mass bounds' form, and the latter, at the smaller
    level, never beats the two-mass certification: so a candidate takes the ratio test iff its
    ratio form beats the two-mass objective. (:func:`projected_scores` hands at most
    :data:`PRUNE_BLOCK` candidates at a time.)

    Returns
    -------
    (scores, use_ratio) : (ndarray, ndarray of bool)
        Shape (num_candidates,) each (0-d for scalar counts).
    """
    k_in, k_out = np.asarray(k_in, dtype=float), np.asarray(k_out, dtype=float)
    p_plain, q_plain = _projected_mass_bounds(k_in, n_fit_in, k_out, n_fit_out, n_in, n_out, beta_cp)
    plain = np.asarray(target.score(p_plain, q_plain), dtype=float)
    lam_in, lam_out = poisson_rate(n_in), poisson_rate(n_out)
    if lam_in <= 0 or lam_out <= 0:
        return plain, np.zeros(plain.shape, dtype=bool)
    x = np.minimum(k_in * (lam_in / n_fit_in), lam_in)
    y = np.minimum(k_out * (lam_out / n_fit_out), lam_out)
    # The ratio certification is computed only where it could win: its objective is at most
    # ratio_score(P_lo at beta_cp, x/y * lam_out/lam_in) (a lower level lowers P_lo, and the ratio
    # bound's Clopper-Pearson bound on x / (x + y) is below the point estimate); elsewhere
    # with_ratio <= plain, so the candidate keeps plain, as if it had been computed.
    x_b, y_b = np.broadcast_arrays(x, y)
    with np.errstate(divide="ignore", invalid="ignore"):
        r_hat = np.where(x_b > 0, np.where(y_b > 0, x_b / np.where(y_b > 0, y_b, 1.0) * (lam_out / lam_in), np.inf), 0.0)
        p_b = np.broadcast_to(p_plain, r_hat.shape)
        if target.kind == "margin":
            # p (1 - e^eps'/r) - allowed <= p - (p/r) e^eps' - allowed for every eps' (when the
            # factor is negative, p <= 1 only raises it): the margin ceiling at q = p/r, read off
            # the profile's lower envelope instead of a pass over the eps' grid (issue 37)
            ceiling = np.asarray(target.score_ceiling(p_b, p_b / r_hat), dtype=float)
        else:
            ceiling = np.asarray(target.ratio_score(p_b, r_hat), dtype=float)
    may = ~(np.broadcast_to(ceiling, np.shape(plain)) <= plain)
    with_ratio = np.full(np.shape(plain), -np.inf)
    if np.any(may):
        xs, ys = np.broadcast_to(x_b, np.shape(plain))[may], np.broadcast_to(y_b, np.shape(plain))[may]
        ks = np.broadcast_to(np.minimum(k_in * (n_in / n_fit_in), n_in), np.shape(plain))[may]
        p_lo = _cp_lower(ks, float(n_in), (1.0 - RATIO_SHARE) * beta_cp)
        r_lo = poisson_ratio_lower(xs, lam_in, ys, lam_out, RATIO_SHARE * 2.0 * beta_cp)
        with_ratio[may] = np.asarray(target.ratio_score(p_lo, r_lo), dtype=float)
    use = with_ratio > plain
    return np.where(use, with_ratio, plain), use


def prefers_ratio(k_in: float, n_fit_in: int, k_out: float, n_fit_out: int, n_in: int, n_out: int,
                  target: RegionTarget, beta: float) -> bool:
    """Whether one chosen region, with choosing counts ``k_in`` of ``n_fit_in`` and ``k_out`` of
    ``n_fit_out``, is to be certified by the ratio test at failure probability ``beta`` on
    ``n_in`` / ``n_out`` held-out rows: the comparison :func:`projected_scores` made when choosing
    it (False when ``target.ratio`` is off). Choosing counts only."""
    if not target.ratio:
        return False
    return bool(projected_scores(np.array([float(k_in)]), max(int(n_fit_in), 1), np.array([float(k_out)]),
                                 max(int(n_fit_out), 1), n_in, n_out, target, beta / 2, with_choice=True)[1][0])


DIRECTION_SPLITS = (0.5, 0.8, 0.2, 0.95, 0.05)
"""The candidate shares of beta for ``P||Q`` (``Q||P`` gets the rest), chosen from selection counts."""


def epsilon_direction_split(directions, beta: float, target: RegionTarget) -> tuple[float, float]:
    """The split of ``beta`` (both directions together) between ``P||Q`` and ``Q||P`` with the
    largest predicted certified epsilon: among :data:`DIRECTION_SPLITS`, the one maximising the
    larger of the two directions' :func:`projected_scores` at their share (choosing counts shrunk
    toward no effect first, so a direction whose ratio is mostly selection noise does not take
    the share). As the prediction grows with the share, this gives 0.95 to the direction with the
    larger prediction. Selection counts only, so the certified bounds keep their level.

    Parameters
    ----------
    directions : sequence of 2 tuples ``(k_in, n_fit_in, k_out, n_fit_out, n_in, n_out)``
        Per direction (``P||Q`` first): the epsilon region's choosing counts of the distribution
        whose mass should be large and of the other, the rows they were counted on, and the
        certifying sample sizes.
    beta : float
        Failure probability of both directions together; each Clopper–Pearson bound of a
        direction gets half its share.
    target : RegionTarget
        The epsilon objective.

    Returns
    -------
    (float, float)
        The shares (fractions of ``beta``) of ``P||Q`` and ``Q||P``; they add up to 1.
    """
    best, best_val = (0.5, 0.5), -math.inf
    for s in DIRECTION_SPLITS:
        val = -math.inf
        for (k_in, n_fit_in, k_out, n_fit_out, n_in, n_out), share in zip(directions, (s, 1.0 - s)):
            score = projected_scores(np.array([float(k_in)]), max(int(n_fit_in), 1), np.array([float(k_out)]),
                                     max(int(n_fit_out), 1), n_in, n_out, target, share * beta / 2)
            val = max(val, float(score[0]))
        if val > best_val + 1e-12:
            best, best_val = (s, 1.0 - s), val
    return best


def predicted_rejection(f_in: float, f_out: float, n_in: int, n_out: int, eps_grid, allowed,
                        beta_cp: float) -> float:
    """Predicted chance that a region with true masses ``f_in`` (of the distribution whose mass
    should be large) and ``f_out`` certifies a positive margin over a claim's profile on ``n_in``
    / ``n_out`` held-out samples with two Clopper–Pearson bounds at ``beta_cp`` each.

    The bounds are evaluated at the expected counts and the held-out masses' fluctuation is
    normal: ``max_eps' Phi(margin(eps') / sd(eps'))``, ``sd^2 = f_in(1 - f_in)/n_in +
    e^{2 eps'} f_out(1 - f_out)/n_out``. Used to decide, from selection counts only, how beta is
    shared (never what a bound certifies).

    Returns
    -------
    float in [0, 1]
    """
    e = np.exp(np.asarray(eps_grid, dtype=float))
    f_in, f_out = min(max(f_in, 0.0), 1.0), min(max(f_out, 0.0), 1.0)
    p_lo = clopper_pearson_lower(f_in * n_in, n_in, beta_cp)
    q_hi = clopper_pearson_upper(f_out * n_out, n_out, beta_cp)
    margins = p_lo - e * q_hi - np.asarray(allowed, dtype=float)
    at = int(np.argmax(margins))
    sd = math.sqrt(f_in * (1 - f_in) / n_in + e[at] ** 2 * f_out * (1 - f_out) / n_out)
    return float(special.ndtr(margins[at] / max(sd, 1e-12)))


def best_case_margin(n_in: int, n_out: int, eps_grid, allowed, beta_cp: float) -> float:
    """The largest margin over a claim's profile that any certified region could show.

    Every certifying sample of the first distribution and none of the second in ``S``:
    ``max_eps CP_lo(n_in, n_in) - e^eps CP_hi(0, n_out) - allowed(eps)``. When it is ``<= 0``
    no data of these sizes can reject the claim.
    """
    p_lo = clopper_pearson_lower(n_in, n_in, beta_cp)
    q_hi = clopper_pearson_upper(0, n_out, beta_cp)
    return float(np.max(p_lo - np.exp(eps_grid) * q_hi - allowed))


def smallest_sufficient_size(sufficient, start: int, cap: int) -> int | None:
    """Smallest sample size ``n > start`` with ``sufficient(n)`` (a monotone predicate, e.g.
    :func:`best_case_margin` ``> 0``): doubling from ``2 start``, then bisection.

    Returns None when no size up to ``cap`` is sufficient.
    """
    lo, hi = start, 2 * start
    while not sufficient(hi):
        lo, hi = hi, 2 * hi
        if hi > cap:
            return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if sufficient(mid):
            hi = mid
        else:
            lo = mid
    return int(hi)


def certify_regions(k_in, n_in: int, k_out, n_out: int, beta: float):
    """Exact simultaneous bounds on the masses of ``d`` regions chosen without these samples.

    Parameters
    ----------
    k_in, k_out : int or array of int, shape (d,)
        Certifying samples of the first / second distribution inside each region.
    n_in, n_out : int
        Certifying sample sizes.
    beta : float
        Failure probability of all ``2 d`` bounds together (Bonferroni: ``beta / (2 d)`` each).

    Returns
    -------
    (p_mass_lower, q_mass_upper, level)
        Clopper–Pearson lower bounds on ``P(S_j)`` and upper bounds on ``Q(S_j)`` (float for
        scalar counts, else arrays), and the per-bound level ``beta / (2 d)``.

    References
    ----------
    Clopper & Pearson (1934); paper 000 §4.2.2 (with exact bounds instead of Hoeffding's).
    """
    level = beta / (2.0 * np.size(k_in))
    return clopper_pearson_lower(k_in, n_in, level), clopper_pearson_upper(k_out, n_out, level), level


def rdp_epsilon_lower_bound(bounds, alpha: float, eps_grid) -> float:
    """Largest Rényi epsilon at order ``alpha`` that hockey-stick lower bounds rule out.

    An (alpha, rho)-RDP mechanism has ``H_{e^eps'} <= c exp((alpha - 1)(rho - eps'))`` for every
    real eps', ``c = (1 - 1/alpha)^(alpha - 1) / alpha`` (Canonne, Kamath, Steinke 2020, Prop. 12;
    :meth:`RenyiDP.delta_profile`). So a lower bound ``L(eps') > 0`` on ``H_{e^eps'}`` implies
    ``rho >= eps' + (ln L(eps') - ln c) / (alpha - 1)``; the maximum over eps' and bounds is
    returned (0.0 if no bound is positive). Valid at the confidence of the bounds, since each
    bound holds for every eps' at once.

    Parameters
    ----------
    bounds : sequence of objects with ``delta_lower_bound(eps_array)``
    alpha : float
        Rényi order, > 1.
    eps_grid : array of float, shape (k,)
        Orders eps' (nats) at which the bounds are evaluated.

    Returns
    -------
    float
        Rényi epsilon lower bound (nats), >= 0.
    """
    grid = np.asarray(eps_grid, dtype=float)
    log_c = (alpha - 1.0) * math.log1p(-1.0 / alpha) - math.log(alpha)
    best = 0.0
    for b in bounds:
        low = np.asarray(b.delta_lower_bound(grid), dtype=float)
        ok = low > 0.0
        if np.any(ok):
            rho = grid[ok] + (np.log(low[ok]) - log_c) / (alpha - 1.0)
            best = max(best, float(np.max(rho)))
    return best


# --------------------------------------------------------------------------- claims
@dataclass(frozen=True, kw_only=True)
class ClaimComparison:
    """The numbers of a comparison of evidence with a claim, shared by :class:`ClaimCheck` and
    :class:`~dpaudit.testers.TestOutcome` (keyword-only fields, after each class's own).

    Attributes
    ----------
    margin : float
        ``max_eps delta_lower_bound(eps) - claim.delta_profile(eps)`` (positive = violation).
    threshold : float or None
        What the claim allows at ``witness_epsilon``.
    delta_lower_bound : float or None
        The evidence's lower bound on the hockey-stick divergence at the claimed epsilon.
    claimed_delta : float or None
        What the claim allows at the claimed epsilon.
    epsilon_lower_bound : float or None
        Largest epsilon of the claim's kind the evidence rejects: at the claim's delta for
        (eps, delta) claims, delta = 0 for pure ones, the Rényi epsilon at the claim's alpha.
    """

    margin: float
    threshold: float | None = None
    witness_epsilon: float | None = None
    delta_lower_bound: float | None = None
    claimed_delta: float | None = None
    epsilon_lower_bound: float | None = None


@dataclass(frozen=True)
class ClaimCheck(ClaimComparison):
    """Outcome of comparing evidence with a claimed guarantee (:meth:`ProfileEvidence.against`).

    Attributes
    ----------
    claim : dict
        The claim (``Claim.to_dict()``).
    violated : bool
        True if, at the evidence's confidence, it contradicts the claim: some
        ``delta_lower_bound(eps)`` exceeds the largest divergence the claim allows at that eps.
    confidence : float
        Probability that a reported violation is not a false accusation (at least).
    margin, threshold, witness_epsilon, delta_lower_bound, claimed_delta, epsilon_lower_bound
        See :class:`ClaimComparison` (``witness_epsilon``: the eps, in nats, where the margin is
        attained).
    """

    claim: dict
    violated: bool
    confidence: float

    def to_dict(self) -> dict:
        """Plain-JSON form."""
        out = {
            "claim": self.claim, "violated": bool(self.violated), "margin": float(self.margin),
            "witness_epsilon": float(self.witness_epsilon), "confidence": float(self.confidence),
        }
        for name in ("threshold", "delta_lower_bound", "claimed_delta", "epsilon_lower_bound"):
            value = getattr(self, name)
            out[name] = None if value is None else float(value)
        return out


class ProfileEvidence:
    """Evidence that lower-bounds the hockey-stick divergence at every eps at once.

    Subclasses provide ``delta_lower_bound(eps_array)``, ``epsilon_lower_bound(delta)`` and
    ``confidence``; :meth:`against` is the one comparison with a claim.
    """

    def _claim_epsilon(self, delta: float) -> float:
        """Epsilon lower bound at a claim's delta (0 for pure claims)."""
        return self.epsilon_lower_bound(delta)

    def against(self, claim, grid=None) -> ClaimCheck:
        """Compare the evidence with a claim's whole privacy profile.

        The claim is violated iff ``delta_lower_bound(eps') > claim.delta_profile(eps')`` for some
        eps'; since the evidence holds for every eps' at once this costs no confidence. For an
        (eps, delta) claim the grid includes ``eps' = eps`` (paper 000 Alg. 6's ``tau = delta``).

        Parameters
        ----------
        claim : PureDP, ApproxDP, RenyiDP, ...
            Anything with ``epsilon``, ``delta_profile(eps_array)`` and ``to_dict()``.
        grid : array of float, optional
            The eps' (nats) compared; default :func:`~dpaudit.estimators.profile_grid` of the
            claimed epsilon.

        Returns
        -------
        ClaimCheck
        """
        eps = claim.epsilon
        grid = profile_grid(eps) if grid is None else np.asarray(grid, dtype=float)
        allowed = np.atleast_1d(claim.delta_profile(grid))
        diff = np.atleast_1d(np.asarray(self.delta_lower_bound(grid))) - allowed
        at = int(np.argmax(diff))
        if isinstance(claim, RenyiDP):  # a Rényi epsilon at the claim's alpha
            eps_lb = rdp_epsilon_lower_bound([self], claim.alpha, grid)
        else:
            eps_lb = self._claim_epsilon(claim.delta)
        return ClaimCheck(
            claim=claim.to_dict(),
            violated=bool(diff[at] > 0),
            margin=float(diff[at]),
            witness_epsilon=float(grid[at]),
            confidence=float(self.confidence),
            threshold=float(allowed[at]),
            delta_lower_bound=float(self.delta_lower_bound(eps)),
            claimed_delta=float(claim.delta_profile(np.array([eps]))[0]),
            epsilon_lower_bound=float(eps_lb),
        )


# --------------------------------------------------------------------------- one region
@register_bound_type
@dataclass(frozen=True)
class HockeyStickBound(DivergenceBound, ProfileEvidence):
    """Lower confidence bound on the hockey-stick divergence from one certified region ``S``.

    The region is chosen on training samples; with probability at least ``1 - beta`` over the
    held-out samples, ``P(S) >= p_mass_lower`` and ``Q(S) <= q_mass_upper`` simultaneously, hence
    for **every** eps: ``H_{e^eps}(P || Q) >= p_mass_lower - e^eps q_mass_upper``
    (``H_{e^eps}(P || Q) = sup_S P(S) - e^eps Q(S)``, paper 000 eq. (11)). Built with
    :meth:`certify`.

    Attributes
    ----------
    divergence, direction, estimate, lower, beta
        See :class:`DivergenceBound`; ``estimate`` and ``lower`` are at order ``epsilon``.
    epsilon : float
        Order of the hockey-stick divergence reported in ``estimate``/``lower`` (nats).
    p_mass_lower, q_mass_upper : float
        Clopper–Pearson bounds on ``P(S)`` (lower) and ``Q(S)`` (upper), each at ``beta / 2``.
    p_count, q_count : int
        Held-out samples of P and Q that fell in ``S``.
    n_test_p, n_test_q : int
        Held-out sample sizes.
    n_train : int
        Samples (both distributions together) used to choose ``S``.
    region : str
        Description of ``S`` (e.g. ``score > 1.23``).
    ratio_lower : float or None
        Certified by the ratio test (:meth:`certify` with ``poisson``): a lower bound on
        ``P(S) / Q(S)`` at ``RATIO_SHARE * beta``, the mass bounds then at
        ``(1 - RATIO_SHARE) beta / 2`` each; None otherwise.
    poisson_p_count, poisson_q_count : int or None
        The ratio test's counts: held-out samples in ``S`` among the first ``N_p`` (``N_q``) rows,
        ``N ~ Poisson(rate)``.
    poisson_rate_p, poisson_rate_q : float or None
        The Poisson rates of those sample sizes (:func:`~dpaudit.bounds.poisson_rate`).
    """

    epsilon: float
    p_mass_lower: float
    q_mass_upper: float
    p_count: int
    q_count: int
    n_test_p: int
    n_test_q: int
    n_train: int
    region: str = ""
    ratio_lower: float | None = None
    poisson_p_count: int | None = None
    poisson_q_count: int | None = None
    poisson_rate_p: float | None = None
    poisson_rate_q: float | None = None

    @classmethod
    def certify(cls, k_in: int, n_in: int, k_out: int, n_out: int, *, epsilon: float, beta: float,
                direction: str, n_train: int, region: str, poisson: tuple | None = None, **extra):
        """The bound of a region chosen without the held-out samples, from its held-out counts.

        Parameters
        ----------
        k_in, n_in : int
            Held-out samples of the first distribution of ``direction`` in ``S``, and their number.
        k_out, n_out : int
            The same for the second distribution.
        epsilon : float
            Order (nats) of ``estimate`` and ``lower``.
        beta : float
            Failure probability of this bound (``beta / 2`` per Clopper–Pearson bound; with
            ``poisson``, ``RATIO_SHARE * beta`` on the ratio and the rest halved between them).
        direction, n_train, region
            As the attributes.
        poisson : (x_in, rate_in, x_out, rate_out) or None
            The ratio test (:func:`~dpaudit.bounds.poisson_ratio_lower`): ``x_in`` held-out samples
            of the first distribution in ``S`` among its first ``N_in ~ Poisson(rate_in)`` rows
            (drawn independently of everything), the same for the second. ``x_in = None`` when
            ``N_in`` or ``N_out`` exceeded the rows (:func:`~dpaudit.bounds.poisson_sample_size`):
            the ratio bound is then the trivial 0.
        **extra
            Further fields of a subclass; ``vacuous=True`` makes ``lower = -inf``.

        Returns
        -------
        HockeyStickBound (or the subclass it is called on)
        """
        ratio = {}
        mass_beta = beta
        if poisson is not None:
            x_in, rate_in, x_out, rate_out = poisson
            mass_beta = (1.0 - RATIO_SHARE) * beta
            r_lo = 0.0 if x_in is None else poisson_ratio_lower(x_in, rate_in, x_out, rate_out, RATIO_SHARE * beta)
            ratio = {"ratio_lower": float(r_lo), "poisson_p_count": None if x_in is None else int(x_in),
                     "poisson_q_count": None if x_in is None else int(x_out),
                     "poisson_rate_p": float(rate_in), "poisson_rate_q": float(rate_out)}
        p_lo, q_hi, _ = certify_regions(k_in, n_in, k_out, n_out, mass_beta)
        lower = p_lo - math.exp(epsilon) * q_hi
        if ratio.get("ratio_lower") is not None:
            lower = max(lower, float(ratio_delta_lower(p_lo, ratio["ratio_lower"], math.exp(epsilon))))
        return cls(
            divergence="hockey-stick", direction=direction, epsilon=epsilon,
            estimate=k_in / n_in - math.exp(epsilon) * k_out / n_out,
            lower=-math.inf if extra.get("vacuous") else lower,
            beta=beta, p_mass_lower=p_lo, q_mass_upper=q_hi, p_count=k_in, q_count=k_out,
            n_test_p=n_in, n_test_q=n_out, n_train=n_train, region=region, **ratio, **extra,
        )

    @property
    def confidence(self) -> float:
        """``1 - beta``."""
        return 1.0 - self.beta

    def delta_lower_bound(self, epsilon) -> np.ndarray | float:
        """Lower bound on ``H_{e^epsilon}(P||Q)`` at any epsilon (nats), same confidence.

        Valid simultaneously for all epsilon; returns ``p_mass_lower - e^epsilon q_mass_upper``,
        or with the ratio test the larger of it and :func:`ratio_delta_lower`.
        """
        eps = np.asarray(epsilon, dtype=float)
        out = self.p_mass_lower - np.exp(eps) * self.q_mass_upper
        if self.ratio_lower is not None:
            out = np.maximum(out, ratio_delta_lower(self.p_mass_lower, self.ratio_lower, np.exp(eps)))
        return float(out) if out.ndim == 0 else out

    def epsilon_lower_bound(self, delta: float) -> float:
        """Largest epsilon at which the evidence still rejects ``(epsilon, delta)``-DP.

        Solves ``p_mass_lower - e^eps q_mass_upper = delta``:
        ``eps = ln((p_mass_lower - delta) / q_mass_upper)``; with the ratio test, the larger of it
        and ``ln(ratio_lower (1 - delta / p_mass_lower))`` (:func:`ratio_epsilon_lower`). Returns
        0.0 when the evidence rejects no epsilon >= 0 at this delta, and ``inf`` if
        ``q_mass_upper == 0``.
        """
        if self.p_mass_lower <= delta:
            return 0.0
        if self.q_mass_upper <= 0.0:
            return math.inf
        out = math.log((self.p_mass_lower - delta) / self.q_mass_upper)
        if self.ratio_lower is not None:
            out = max(out, float(ratio_epsilon_lower(self.p_mass_lower, self.ratio_lower, delta)))
        return max(0.0, out)


@dataclass(frozen=True)
class BothDirections:
    """Both directions' region bounds from one pair of samples (what an estimator returns).

    Attributes
    ----------
    forward : HockeyStickBound
        Bound on ``H(P || Q)``.
    reverse : HockeyStickBound
        Bound on ``H(Q || P)``.
    """

    forward: HockeyStickBound
    reverse: HockeyStickBound

    @property
    def bounds(self) -> tuple:
        """``(forward, reverse)``."""
        return (self.forward, self.reverse)


# --------------------------------------------------------------------------- many regions
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


@dataclass(frozen=True, eq=False)
class ScoreAudit(ProfileEvidence):
    """A family of certified regions: lower confidence bounds on the privacy loss two samples show.

    Every score audit (histogram with Canonne TV bounds, histogram with sample splitting,
    threshold membership inference) ends in sets ``S_1, ..., S_D`` of score values with, on one
    event of probability at least ``confidence``, simultaneously ``P(S_j) >= p_lower[j]`` and
    ``Q(S_j) <= q_upper[j]`` for every j. Everything else follows without further confidence
    cost (``docs/scores.md`` §1–§4):

    * ``H_{e^eps}(P||Q) >= max_j p_lower[j] - e^eps q_upper[j]`` and, through the complements,
      ``H_{e^eps}(Q||P) >= max_j (1 - q_upper[j]) - e^eps (1 - p_lower[j])``, for every eps;
    * the trade-off function lies below the lower convex hull of the points
      ``(1 - p_lower, q_upper)``, their mirror images, ``(0, 1)`` and ``(1, 0)``;
    * a ``mu``-GDP mechanism has ``mu >= Phi^{-1}(p_lower[j]) - Phi^{-1}(q_upper[j])`` for every j
      (Nasr et al. 2023, §5, with the rates bounded as here).

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
        Evidence rows (see above), on their Pareto front, sorted by ``q_upper``.
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

    @classmethod
    def from_rows(cls, p_lower, q_upper, sources, **fields):
        """The evidence of certified regions given as rows (any order, dominated rows included).

        Parameters
        ----------
        p_lower, q_upper : array, shape (D,)
            ``P(S_j) >= p_lower[j]`` and ``Q(S_j) <= q_upper[j]``, all on one event.
        sources : sequence of str, length D
        **fields
            The other attributes (``method``, ``confidence``, ``n_p``, ``n_q``, ...).

        Returns
        -------
        ScoreAudit
            With the rows on their Pareto front (:func:`pareto_front`).
        """
        p, q, src = pareto_front(p_lower, q_upper, sources)
        return cls(p_lower=p, q_upper=q, sources=src, **fields)

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

    def _claim_epsilon(self, delta: float) -> float:
        return self._best_epsilon(float(delta), "both")[0]

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

        :meth:`against` on a grid chosen for the claim: for pure and approximate DP the margin is
        affine in ``e^eps`` below the claimed eps and decreasing above it, so eps in
        {0, claimed eps} is exact; other claims are checked on 2001 points from 0 to 30 nats plus
        the claimed eps.

        Parameters
        ----------
        claim : object with ``epsilon``, ``delta_profile(eps)`` and ``to_dict()``

        Returns
        -------
        ClaimCheck
        """
        base = float(getattr(claim, "epsilon", 0.0))
        if claim.to_dict().get("kind") in ("pure-dp", "approx-dp"):
            grid = np.array([0.0, base])
        else:
            grid = np.union1d(np.linspace(0.0, 30.0, 2001), [base])
        return self.against(claim, grid)

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
        return jsonable({
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


def jsonable(obj):
    """``obj`` with numpy scalars/arrays turned into plain JSON values (non-finite floats as
    strings such as ``"inf"``)."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [jsonable(v) for v in obj.tolist()]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        v = float(obj)
        return v if math.isfinite(v) else str(v)
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    return obj
