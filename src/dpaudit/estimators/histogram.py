"""Histogram lower confidence bounds on the hockey-stick divergence: of mechanism outputs
(Gilbert & McMillan 2018, paper 000) and of two samples of scores (paper 001).

Both end in region bounds (:mod:`dpaudit.estimators.region`): a set of cells chosen on one part
of the samples, its masses certified with Clopper–Pearson bounds on the other.

Mechanism outputs (:class:`HistogramHockeyStick`)
-------------------------------------------------

Paper 000, §4.2.1, Alg. 3–4 (after Gilbert & McMillan 2018, "Property testing for differential
privacy"): on a finite output universe ``[m]`` (or 1-D outputs cut into ``m`` bins),

    delta_hat(eps) = sum_i max(0, p_hat_i - e^eps q_hat_i)

estimates the hockey-stick divergence ``H_{e^eps}(P || Q)`` of the binned outputs, which is at most
that of the outputs themselves (binning is post-processing). A tolerance turns it into a lower
confidence bound. dpaudit offers five (derivations in ``docs/histogram.md``):

``"split"`` (default)
    The cells are ranked by the likelihood ratio ``p_hat_i / q_hat_i`` seen on a training half;
    the region ``S`` (a set of cells) with the best expected held-out margin is chosen there, and
    ``P(S)``, ``Q(S)`` get exact one-sided Clopper–Pearson bounds on the other half:
    ``H_{e^eps} >= P_lo(S) - e^eps Q_hi(S)`` for every eps at once. The number of cells costs
    nothing in the bound, so fine bins can be used (their number is chosen per direction by
    cross-validation on the training half). ``beta`` is split between the directions (equally,
    or 0.8/0.2 or 0.95/0.05 when the training half points at one), each direction's share
    equally between its two Clopper–Pearson bounds.
``"l1"``
    ``H_{e^eps}(P||Q) >= delta_hat(eps) - TV(p_hat, p) - e^eps TV(q_hat, q)`` for every eps (the
    sup over regions of a difference of masses is a total variation, half the L1 distance), with
    :func:`~dpaudit.bounds.empirical_tv_upper` at ``beta/2`` per distribution: tolerance
    ``(sqrt((m-1)/n)/2 + sqrt(ln(2/beta)/(2n))) (1 + e^eps)`` for equal sizes. One event covers
    both directions and every eps.
``"plug-in"``
    As ``"l1"`` with the data-dependent :func:`~dpaudit.bounds.empirical_tv_upper_plugin`: the
    unknown ``sum_i sqrt(p_i (1 - p_i))`` is replaced by its maximum over the masses allowed by
    simultaneous Clopper–Pearson intervals, still a valid confidence bound (smaller than
    ``"l1"``'s when the mass sits on few cells).
``"original"``
    Paper 000 / Gilbert–McMillan's constants:
    ``2 (1 + e^eps) sqrt(m/n) + 6 (1 + e^eps) sqrt(ln(4/beta) / (2n))`` (valid: it is at least
    ``"l1"``'s tolerance, see the docs).
``"plug-in-heuristic"``
    DP-Auditorium's plug-in: ``(2/sqrt(n)) (sum_i sqrt(p_hat_i) + e^eps sum_i sqrt(q_hat_i)) +
    6 (1 + e^eps) sqrt(ln(4/beta) / (2n))``. **Not a proven confidence bound** (``sqrt(p_hat_i)``
    underestimates ``sqrt(p_i)`` on average): a heuristic kept for comparison, never a default.

The cells must not depend on the samples the bound is computed from: they are a fixed range cut
into equal bins (``value_range``), known categories (``categories``), or quantile bins /
observed categories of a design split that the bound does not use.

Scores (:func:`histogram_audit`, :func:`make_bins`, :class:`Bins`)
----------------------------------------------------------------

Bin both samples on the same ``k`` bins (tails clipped into the end bins), read the frequencies
``p_i, q_i``, and estimate ``H_{e^eps}(P||Q) >= H_{e^eps}(P_k||Q_k) = sum_i (p_i - e^eps q_i)_+``
(data processing, paper 001 §4.2, Lemma 1). Two lower confidence bounds, both valid at every eps
at once (derivations in ``docs/scores.md``):

``"canonne"``
    ``TV(p_hat, p) <= e_P`` and ``TV(q_hat, q) <= e_Q`` with probability ``>= 1 - beta``
    (Canonne's argument, :func:`dpaudit.bounds.canonne_tv_upper`, here with the data-dependent
    mean term of :func:`dpaudit.bounds.empirical_tv_upper_plugin`), hence for every union of
    bins ``S``:
    ``P(S) >= p_hat(S) - e_P`` and ``Q(S) <= q_hat(S) + e_Q`` (paper 001 §4.3, Lemmas 2–3).
``"split"``
    The sets ``S`` (unions of bins ranked by their likelihood ratio) are chosen on a selection
    part of each sample; exact Clopper–Pearson bounds on ``P(S)`` and ``Q(S)`` are computed on the
    remaining part, Bonferroni-corrected over the distinct sets chosen.
``"auto"`` (default)
    Both, at ``beta/2`` each; every reported number comes from whichever is tighter there, and the
    result says which (:meth:`ScoreAudit.epsilon_source`).

Bins chosen by looking at the data (Scott's rule, or a bin count without a range) are chosen on
the selection part only, so every bound is computed on data the choice never saw. Bins fixed in
advance (explicit edges, or a count together with a range) let the Canonne bound use all samples.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import cached_property
from typing import Callable

import numpy as np
from scipy import optimize

from .._validate import as_rng, check_epsilon, check_int, check_probability
from ..bounds import (
    canonne_tv_upper,
    empirical_tv_upper,
    empirical_tv_upper_plugin,
)
from ._projection import PROJECTION_HEAD, informative_columns
from .base import NotApplicable, check_sample_pair, check_scores, profile_targets, register_bound_type
from .region import (
    BothDirections,
    HockeyStickBound,
    ScoreAudit,
    best_case_margin,
    certify_regions,
    DIRECTION_SPLITS,
    epsilon_direction_split,
    RegionTarget,
    projected_mass_bounds,
    predicted_rejection,
    poisson_rows,
    prefers_ratio,
    projected_scores,
    smallest_sufficient_size,
)

__all__ = [
    "METHODS",
    "MODES",
    "OBJECTIVES",
    "TOLERANCES",
    "Bins",
    "HistogramBound",
    "HistogramEvidence",
    "HistogramHockeyStick",
    "histogram_audit",
    "histogram_delta",
    "histogram_hockey_stick",
    "histogram_lower_bound",
    "make_bins",
    "scott_bin_width",
]

MODES = ("auto", "discrete", "binned")
TOLERANCES = ("split", "l1", "plug-in", "original", "plug-in-heuristic")
OBJECTIVES = ("margin", "epsilon", "both")
VERDICT_SHARE = 0.8
"""With ``objective="both"``, the margin (verdict) region's part of a direction's beta when the
epsilon region differs from it; the epsilon region gets the rest. Not when the verdict is close
(:data:`BORDERLINE`): then the margin region keeps the whole share and no separate epsilon
region is certified in that direction."""
BORDERLINE = (0.01, 0.995)
"""Predicted rejection chances (:func:`~.region.predicted_rejection`, selection counts only) of a
direction's margin region between which its verdict counts as close: there every bit of beta
goes to the verdict (measured: 2-3 of 60 more detections on small Gaussian shifts at 50k,
``benchmarks/results/region_power.md``)."""


def verdict_share(in_tr: np.ndarray, out_tr: np.ndarray, mask: np.ndarray, n_in: int, n_out: int,
                  eps_grid, allowed, share: float) -> float:
    """The margin region's part of a direction's ``share`` of beta under ``objective="both"``
    when an epsilon region differs from it: 1 when the verdict is close (the predicted
    rejection chance at that part, from the selection counts ``in_tr``/``out_tr`` of the region
    ``mask``, lies within :data:`BORDERLINE`), else :data:`VERDICT_SHARE`. Selection counts
    only, so the certified bounds keep their level.

    Parameters
    ----------
    in_tr, out_tr : ndarray, shape (num_cells,)
        Selection counts per cell of the distribution whose mass should be large, and the other.
    mask : ndarray of bool, shape (num_cells,)
        The margin region's cells.
    n_in, n_out : int
        Held-out (certifying) sample sizes.
    eps_grid, allowed : ndarray
        The claim's eps' grid and the delta it allows there.
    share : float
        The direction's share of beta.

    Returns
    -------
    float
        1.0 or :data:`VERDICT_SHARE`.
    """
    f_in = float(in_tr[mask].sum()) / max(float(in_tr.sum()), 1.0)
    f_out = float(out_tr[mask].sum()) / max(float(out_tr.sum()), 1.0)
    chance = predicted_rejection(f_in, f_out, n_in, n_out, eps_grid, allowed, share * VERDICT_SHARE / 2)
    return 1.0 if BORDERLINE[0] < chance < BORDERLINE[1] else VERDICT_SHARE
SPLIT_DESIGN = -1.0  # the "split" tolerance's default design rule (HistogramHockeyStick._design_size)

FEW_VALUES_DESIGN = 200_000
"""Design rows per sample, under the ``"split"`` default rule, for outputs with at most
:data:`FEW_VALUES` distinct values, each seen at least :data:`FEW_VALUES_MIN_COUNT` times in the
first ``FEW_VALUES_DESIGN`` design rows of the two samples together, when the rule would give
more: a few heavy cells need few rows to choose a region (their ratios are known to 1-2 % from
them), and every row kept for the bound tightens it. Rare cells (answer patterns of sparse
vector, say) keep the larger design: their ratios need it."""
FEW_VALUES = 64
FEW_VALUES_MIN_COUNT = 10_000


def histogram_delta(p_counts, q_counts, epsilon):
    """Plug-in hockey-stick divergence of two histograms: ``sum_i max(0, p_hat_i - e^eps q_hat_i)``.

    Paper 000, Alg. 3, lines 5–10 (without the tolerance ``eta``).

    Parameters
    ----------
    p_counts, q_counts : array of int, shape (m,)
        Samples of P and of Q in each of the same ``m`` cells (each sums to >= 1).
    epsilon : float or array of float, shape (k,)
        Order(s) in nats.

    Returns
    -------
    float or ndarray of shape (k,)
        ``delta_hat(epsilon)`` in [0, 1].

    Raises
    ------
    ValueError
        On counts of different shapes, negative counts or empty histograms.
    """
    p = np.asarray(p_counts, dtype=float)
    q = np.asarray(q_counts, dtype=float)
    if p.ndim != 1 or p.shape != q.shape:
        raise ValueError(f"p_counts and q_counts must be 1-D of the same length, got shapes {p.shape} and {q.shape}")
    if np.any(p < 0) or np.any(q < 0) or p.sum() <= 0 or q.sum() <= 0:
        raise ValueError("p_counts and q_counts must be non-negative and non-empty")
    p_hat, q_hat = p / p.sum(), q / q.sum()
    keep = p_hat > 0  # cells with p_hat = 0 contribute nothing
    p_hat, q_hat = p_hat[keep], q_hat[keep]
    eps = np.asarray(epsilon, dtype=float)
    out = np.maximum(p_hat[None, :] - np.exp(eps.reshape(-1, 1)) * q_hat[None, :], 0.0).sum(axis=1)
    return float(out[0]) if eps.ndim == 0 else out


@register_bound_type
@dataclass(frozen=True, kw_only=True)
class HistogramBound(HockeyStickBound):
    """Lower confidence bound on the hockey-stick divergence from histograms, for every eps at once.

    With the ``"split"`` tolerance this is a region bound (:class:`HockeyStickBound`: the region
    is a set of cells); the L1 tolerances fill ``p_counts``/``p_deviation`` instead of the region
    fields (left None). In this object "p" is the first distribution of ``direction`` (Q for
    ``"Q||P"``).

    Attributes
    ----------
    divergence, direction, estimate, lower, beta
        See :class:`DivergenceBound`; ``estimate`` and ``lower`` are at order ``epsilon``.
        ``beta``: failure probability of this bound. For the ``"split"`` tolerance each direction
        has its own region and gets a share of the test's beta (the two shares add up to it,
        ``beta/2`` each unless the training half points at one direction); for the L1 tolerances one event
        (``TV(p_hat, p)`` and ``TV(q_hat, q)`` both bounded) makes **both** directions' bounds
        hold together with probability ``>= 1 - beta``, and each bound records that ``beta``.
    epsilon : float
        Order of ``estimate`` and ``lower`` (nats).
    tolerance : str
        Which bound was used: ``"split"``, ``"l1"``, ``"plug-in"``, ``"original"`` or
        ``"plug-in-heuristic"`` (the last is a heuristic, not a proven confidence bound).
    mode : str
        ``"discrete"`` (each distinct output row a cell) or ``"binned"`` (1-D outputs in intervals).
    num_cells : int
        Number of cells ``m`` of the universe the bound is over.
    binning : str
        How the cells were made (and from which samples).
    n_test_p, n_test_q : int
        Samples of p and q the bound is computed from.
    n_train : int
        Samples (both distributions together) used to make the cells and, for ``"split"``, to
        choose the region; none of them enter the bound.
    p_mass_lower, q_mass_upper : float or None
        ``"split"`` only: Clopper–Pearson bounds on ``P(S)`` (lower) and ``Q(S)`` (upper), each at
        ``beta/2`` of this bound.
    p_count, q_count : int or None
        ``"split"`` only: held-out samples of p and q in ``S``.
    region : str
        ``"split"`` only: the cells of ``S``.
    p_counts, q_counts : tuple of int
        L1 tolerances only: the histograms (length ``num_cells``) of the held-out samples.
    p_deviation, q_deviation : float or None
        L1 tolerances only: the upper bounds ``A_p``, ``A_q`` in
        ``lower(eps) = delta_hat(eps) - A_p - e^eps A_q`` (for ``"l1"``/``"plug-in"``: on
        ``TV(p_hat, p)``, ``TV(q_hat, q)``).
    vacuous : bool
        True when the sample size makes the bound say nothing whatever the data
        (``lower = -inf``; :meth:`delta_lower_bound` is ``-inf`` everywhere).
    """

    tolerance: str
    mode: str
    num_cells: int
    binning: str
    p_counts: tuple = ()
    q_counts: tuple = ()
    p_deviation: float | None = None
    q_deviation: float | None = None
    vacuous: bool = False

    def __post_init__(self) -> None:
        # JSON turns tuples into lists; keep the object hashable and comparable after a round trip.
        object.__setattr__(self, "p_counts", tuple(int(c) for c in self.p_counts))
        object.__setattr__(self, "q_counts", tuple(int(c) for c in self.q_counts))

    def delta_lower_bound(self, epsilon) -> np.ndarray | float:
        """Lower bound on ``H_{e^epsilon}(P||Q)`` at any epsilon (nats), valid for all at once.

        ``"split"``: ``p_mass_lower - e^eps q_mass_upper``; L1 tolerances:
        ``delta_hat(eps) - p_deviation - e^eps q_deviation``; ``-inf`` if :attr:`vacuous`.
        """
        eps = np.asarray(epsilon, dtype=float)
        if self.vacuous:
            out = np.full(eps.shape, -math.inf)
        elif self.tolerance == "split":
            return super().delta_lower_bound(epsilon)
        else:
            flat = eps.reshape(-1)
            d = histogram_delta(self.p_counts, self.q_counts, flat)
            out = (d - self.p_deviation - np.exp(flat) * self.q_deviation).reshape(eps.shape)
        return float(out) if out.ndim == 0 else out

    def epsilon_lower_bound(self, delta: float) -> float:
        """Largest epsilon at which the evidence still rejects ``(epsilon, delta)``-DP.

        The eps solving ``delta_lower_bound(eps) = delta`` (a decreasing function of eps); 0.0 when
        the evidence rejects no epsilon >= 0 at this delta, ``inf`` when it rejects every one.
        """
        if self.vacuous or float(self.delta_lower_bound(0.0)) <= delta:
            return 0.0
        if self.tolerance == "split":
            return super().epsilon_lower_bound(delta)
        if self.q_deviation <= 0.0:
            return math.inf
        # f(eps) <= 1 - e^eps q_deviation, negative beyond hi.
        hi = max(1.0, math.log(2.0 / self.q_deviation))
        f = lambda e: float(self.delta_lower_bound(e)) - delta  # noqa: E731
        if f(hi) > 0:  # cannot happen (delta_hat <= 1), kept for safety
            return math.inf
        return float(optimize.brentq(f, 0.0, hi, xtol=1e-12, rtol=1e-12))


@dataclass(frozen=True)
class HistogramEvidence(BothDirections):
    """Both directions' histogram bounds (:class:`HistogramBound`) from one pair of samples.

    Attributes
    ----------
    forward, reverse : HistogramBound
        Bounds on ``H(P || Q)`` and ``H(Q || P)`` (:class:`~dpaudit.estimators.region.BothDirections`).
    mode, tolerance : str
        As in :class:`HistogramBound`.
    num_cells : int
    needed_samples : int or None
        When the bounds are vacuous: samples per dataset at which they would not be (same
        settings, same split); None otherwise.
    seconds : float
        Wall time of the estimate.
    extra : tuple of HistogramBound
        With ``objective="both"``: the epsilon regions' bounds of the directions whose epsilon
        region differs from the margin region (that direction's share of ``beta`` then split 0.8 /
        0.2 between its margin and epsilon bounds).
    """

    mode: str
    tolerance: str
    num_cells: int
    needed_samples: int | None
    seconds: float
    extra: tuple = ()

    @property
    def bounds(self) -> tuple:
        """``(forward, reverse, *extra)``: every certified region's bound."""
        return (self.forward, self.reverse) + tuple(self.extra)

    @property
    def vacuous(self) -> bool:
        """Whether the sample size made the bounds say nothing."""
        return self.forward.vacuous


# --------------------------------------------------------------------------- cells
@dataclass(frozen=True)
class _Cells:
    """A map from output rows to cell indices ``0..m-1``, fixed before the bound's samples are seen."""

    assign: Callable[[np.ndarray], np.ndarray]
    num_cells: int
    mode: str
    description: str
    edges: np.ndarray | None = None  # binned: interior edges, cell j = (e_{j-1}, e_j]
    labels: np.ndarray | None = None  # discrete: the category rows (the last cell may be "other")
    ordered: int = 0  # leading cells in increasing order of a 1-D value (threshold sets over them)


def _row_keys(x: np.ndarray) -> np.ndarray:
    """One opaque key per output row (its bytes), so rows can be sorted and matched as scalars.
    ``+ 0.0`` maps -0.0 to 0.0 so that equal rows have equal bytes (NaN is rejected earlier)."""
    a = np.ascontiguousarray(x, dtype=float) + 0.0
    return a.view(np.dtype((np.void, a.dtype.itemsize * a.shape[1]))).reshape(-1)


def _distinct_rows(x: np.ndarray) -> np.ndarray:
    """The distinct rows of ``x`` (shape (k, d)), sorted (by value for d = 1, by bytes otherwise)."""
    if x.shape[1] == 1:
        return np.unique(x[:, 0]).reshape(-1, 1)
    keys = np.unique(_row_keys(x))
    return np.frombuffer(keys.tobytes(), dtype=float).reshape(-1, x.shape[1])


def _discrete_cells(categories: np.ndarray, *, other: bool, source: str) -> _Cells:
    """Cells = the given category rows (unique), plus one "other" cell if ``other``."""
    cats = _distinct_rows(np.asarray(categories, dtype=float))
    k = len(cats)
    flat = cats[:, 0] if cats.shape[1] == 1 else _row_keys(cats)

    def assign(x: np.ndarray) -> np.ndarray:
        v = x[:, 0] if cats.shape[1] == 1 else _row_keys(x)
        idx = np.searchsorted(flat, v)
        hit = (idx < k) & (flat[np.minimum(idx, k - 1)] == v)
        return _place(np.where(hit, idx, k), other, k)

    m = k + 1 if other else k
    desc = f"{k} categories {source}" + (" + 1 cell for other values" if other else "")
    return _Cells(assign, m, "discrete", desc, labels=cats, ordered=k if cats.shape[1] == 1 else 0)


def _place(idx: np.ndarray, other: bool, k: int) -> np.ndarray:
    if not other and np.any(idx == k):
        raise ValueError("samples contain outputs that are not among the given categories")
    return idx


def _binned_cells(edges: np.ndarray, description: str) -> _Cells:
    edges = np.unique(np.asarray(edges, dtype=float))

    def assign(x: np.ndarray) -> np.ndarray:
        return np.searchsorted(edges, x[:, 0], side="left")

    return _Cells(assign, len(edges) + 1, "binned", description, edges=edges, ordered=len(edges) + 1)


def _quantile_levels(num_bins: int, n_design: int) -> np.ndarray:
    """Quantile levels of the bin edges: ``num_bins`` equal-mass bins, with the outer ones split
    geometrically down to about 10 design samples so that the tails (where the privacy loss of
    mis-scaled noise is largest) are resolved."""
    levels = np.linspace(0.0, 1.0, num_bins + 1)[1:-1]
    lo = 10.0 / max(n_design, 1)
    top = 1.0 / num_bins
    if lo < top:
        tail = np.geomspace(lo, top, max(2, int(math.ceil(math.log2(top / lo))) + 1))
        levels = np.concatenate([levels, tail, 1.0 - tail])
    return np.unique(np.clip(levels, 0.0, 1.0))


# --------------------------------------------------------------------------- regions (split)
INTERVAL_POINTS = 64
"""Cell boundaries (evenly spaced in cell index) that the ``"threshold"`` family's intervals and
pairs of tails may end at when the region is chosen: about 2,000 of each (the half-lines use
every boundary)."""

INTERVAL_POINTS_CV = 16
"""The same grid when the family and cell set are cross-validated (:func:`_cross_validate`): about
100 intervals and 100 pairs of tails, enough to tell a shape from another at a fraction of the
cost (that choice is made hundreds of times per test)."""


def _choose_region(
    a_tr: np.ndarray, b_tr: np.ndarray, n_ev_in: int, n_ev_out: int,
    target: RegionTarget, beta_cp: float, ordered: int = 0, family: str = "level",
    interval_points: int = 0,
) -> np.ndarray:
    """Cells of the region ``S`` for the direction in||out, from training counts only.

    Candidates (``family``): ``"level"``, the upper level sets of the estimated likelihood ratio
    (Neyman–Pearson): the cells sorted by ``(a_i + 1/2)/n_in`` over ``(b_i + 1/2)/n_out``, cut
    between distinct ratios; ``"threshold"``, when the first ``ordered`` cells are intervals or
    values in increasing order, every set ``{x > t}`` and ``{x <= t}`` over them (one sorted
    scan), and, for the margin objective, every interval ``{s < x <= t}`` and pair of tails
    ``{x <= s} U {x > t}`` with ends on a grid of ``interval_points`` cell boundaries (0: none).
    Not for the epsilon objective: its best regions are extreme tails, where the extra candidates
    only add selection noise (DP-Sniper's Laplace at 10M per dataset: certified epsilon 0.0978 /
    0.0985 / 0.0996 without them, 0.0974 / 0.0975 / 0.0977 with them). Thresholds and intervals
    help where the ratio is flat (a shift of Laplace noise at its claimed epsilon, say) or only
    slightly above 1 (noise whose scale leaks the data): noisy per-cell ratios scramble the level
    sets there, and these sets find the whole region the ratio's shape implies. The chosen set maximises
    ``target``'s objective (:class:`~.region.RegionTarget`: the margin over a claim's profile,
    or the certified epsilon) computed from the training counts rescaled to the held-out sizes.
    Returns a boolean mask over cells.
    """
    n_in, n_out = a_tr.sum(), b_tr.sum()
    score = np.log((a_tr + 0.5) / max(n_in, 1)) - np.log((b_tr + 0.5) / max(n_out, 1))
    order = np.argsort(-score, kind="stable")
    s_sorted = score[order]
    cut = np.flatnonzero(np.r_[s_sorted[1:] < s_sorted[:-1], True]) + 1  # prefix lengths
    cum_a = np.cumsum(a_tr[order])[cut - 1]
    cum_b = np.cumsum(b_tr[order])[cut - 1]
    k_in, k_out = ([cum_a], [cum_b]) if family == "level" else ([np.zeros(0)], [np.zeros(0)])
    cut = cut if family == "level" else cut[:0]
    lo = hi = np.zeros(0, dtype=int)
    if family == "threshold" and ordered > 1:
        # {x <= t}: the first j ordered cells; {x > t}: ordered cells j.. (j = 1 .. ordered - 1)
        ca, cb = np.r_[0, np.cumsum(a_tr[:ordered])], np.r_[0, np.cumsum(b_tr[:ordered])]
        lo_a, lo_b, tot_a, tot_b = ca[1:-1], cb[1:-1], ca[-1], cb[-1]
        k_in += [lo_a, tot_a - lo_a]
        k_out += [lo_b, tot_b - lo_b]
        if ordered > 2 and interval_points > 1 and target.kind == "margin":
            # {s < x <= t} and its complement, the two tails: with the half-lines, every upper
            # level set of a ratio that is monotone in |x - c| (a location-scale pair whose scale
            # differs, e.g. noise calibrated to a private n), ends on a grid of interval_points.
            ends = np.unique(np.round(np.linspace(0, ordered, min(ordered, interval_points) + 1)).astype(int))
            lo, hi = np.triu_indices(len(ends), k=1)
            inner = (lo > 0) & (hi < len(ends) - 1)  # both ends inside: not a half-line
            lo, hi = ends[lo[inner]], ends[hi[inner]]
            mid_a, mid_b = ca[hi] - ca[lo], cb[hi] - cb[lo]
            k_in += [mid_a, tot_a - mid_a]
            k_out += [mid_b, tot_b - mid_b]
    values = projected_scores(np.concatenate(k_in), max(n_in, 1), np.concatenate(k_out), max(n_out, 1),
                              n_ev_in, n_ev_out, target, beta_cp)
    best = int(np.argmax(values))
    mask = np.zeros(len(a_tr), dtype=bool)
    if best < len(cut):
        mask[order[: cut[best]]] = True
        return mask
    j = best - len(cut)
    if j < 2 * (ordered - 1):
        below = j < ordered - 1
        j = (j if below else j - (ordered - 1)) + 1
        if below:
            mask[:j] = True
        else:
            mask[j:ordered] = True
        return mask
    j -= 2 * (ordered - 1)
    tails = j >= len(lo)
    j = j - len(lo) if tails else j
    mask[lo[j]:hi[j]] = True
    if tails:
        mask[:ordered] = ~mask[:ordered]
    return mask


def _describe_region(mask: np.ndarray, cells: _Cells, limit: int = 6) -> str:
    if cells.mode == "binned":
        e = np.r_[-np.inf, cells.edges, np.inf]
        idx = np.flatnonzero(mask)
        runs = np.split(idx, np.flatnonzero(np.diff(idx) > 1) + 1) if idx.size else []
        parts = [f"({e[r[0]]:.4g}, {e[r[-1] + 1]:.4g}]" for r in runs]
        more = f" ... ({len(parts)} intervals)" if len(parts) > limit else ""
        return "output in " + " U ".join(parts[:limit]) + more
    idx = np.flatnonzero(mask)
    k = len(cells.labels)
    names = ["other" if i >= k else _row_text(cells.labels[i]) for i in idx[:limit]]
    more = f", ... ({len(idx)} cells)" if len(idx) > limit else ""
    return "output in {" + ", ".join(names) + more + "}"


def _row_text(row: np.ndarray) -> str:
    return f"{row[0]:.6g}" if row.size == 1 else "(" + ", ".join(f"{v:.4g}" for v in row) + ")"


# Candidate bin counts of the "split" tolerance in binned mode (bins=None), chosen per direction by
# two-fold cross-validation on the training samples.
_SPLIT_BIN_COUNTS = (8, 16, 32, 64, 128, 256, 512, 1024)


def _split_counts(cells: _Cells, parts: dict, *, folds: bool) -> dict:
    """Cell counts of the training and held-out samples (and of two training folds).

    ``parts`` maps ``p_tr, q_tr, p_ev, q_ev`` (and ``p_f0, p_f1, q_f0, q_f1``, the training folds;
    ``p_po, q_po``, the first Poisson-many held-out rows of the ratio test, or None) to sample
    arrays; in binned mode they are sorted 1-D arrays, so each count costs
    ``O(m log n)`` instead of ``O(n log m)`` (several bin counts are tried on the same samples).
    """
    m = cells.num_cells
    if cells.mode == "binned":
        def count(x):
            cum = np.searchsorted(x, cells.edges, side="right")  # samples <= each edge
            return np.diff(np.concatenate([[0], cum, [len(x)]]))
    else:
        def count(x):
            return np.bincount(cells.assign(x), minlength=m)
    out = {"a_tr": count(parts["p_tr"]), "b_tr": count(parts["q_tr"]),
           "a_ev": count(parts["p_ev"]), "b_ev": count(parts["q_ev"]), "ordered": cells.ordered}
    if parts.get("p_po") is not None and parts.get("q_po") is not None:  # the ratio test's Poissonised rows
        out["a_po"], out["b_po"] = count(parts["p_po"]), count(parts["q_po"])
    if folds:
        out["folds"] = ((count(parts["p_f0"]), count(parts["q_f0"])), (count(parts["p_f1"]), count(parts["q_f1"])))
    return out


def _cross_validate(folds, swap: bool, n_ev_in: int, n_ev_out: int, target: RegionTarget, beta_cp: float,
                    ordered: int = 0, family: str = "level") -> float:
    """Mean over the two folds of ``target``'s objective expected on the held-out samples for a
    region chosen on the other fold (counts rescaled to the held-out sizes). Training samples only."""
    total = 0.0
    for (a_fit, b_fit), (a_val, b_val) in ((folds[0], folds[1]), (folds[1], folds[0])):
        if swap:
            a_fit, b_fit, a_val, b_val = b_fit, a_fit, b_val, a_val
        mask = _choose_region(a_fit, b_fit, n_ev_in, n_ev_out, target, beta_cp, ordered, family,
                              INTERVAL_POINTS_CV)
        total += float(projected_scores(
            a_val[mask].sum(), max(a_val.sum(), 1), b_val[mask].sum(), max(b_val.sum(), 1),
            n_ev_in, n_ev_out, target, beta_cp,
        ))
    return total / 2.0


# --------------------------------------------------------------------------- tolerances
def _deviations(tolerance: str, counts: np.ndarray, num_cells: int, beta_half: float) -> tuple[float, float]:
    """``(A, B)`` for one distribution: its contribution to the tolerance is ``A + B`` times 1 or
    ``e^eps`` (A: mean term, B: deviation term), at failure probability ``beta_half``."""
    n = int(counts.sum())
    if tolerance == "l1":
        return float(empirical_tv_upper(n, num_cells, beta_half)), 0.0
    if tolerance == "plug-in":
        return float(empirical_tv_upper_plugin(counts, beta_half)), 0.0
    # paper 000 / DP-Auditorium constants; beta_half is beta/2, their ln(4/beta) is ln(2/beta_half)
    dev = 6.0 * math.sqrt(math.log(2.0 / beta_half) / (2.0 * n))
    if tolerance == "original":
        return 2.0 * math.sqrt(num_cells / n), dev
    return 2.0 * float(np.sum(np.sqrt(counts / n))) / math.sqrt(n), dev  # plug-in-heuristic


# --------------------------------------------------------------------------- estimator
def choose_direction_regions(counts: list, n_ev_p: int, n_ev_q: int, eps_grid, allowed, beta: float,
                             target: RegionTarget | None = None):
    """For each direction (``P||Q``, then ``Q||P``), pick a candidate cell set and a region on the
    selection half, and split ``beta`` between the directions (also on the selection half).

    Parameters
    ----------
    counts : list of dict
        Per candidate cell set, the counts of :func:`_split_counts` (``a_tr``/``b_tr`` selection
        counts of P and Q per cell; ``folds`` when there is more than one candidate; ``ordered``:
        how many leading cells are in increasing order of value, so threshold sets are tried).
    n_ev_p, n_ev_q : int
        Held-out sample sizes of P and Q.
    eps_grid, allowed : ndarray
        The claim's eps' grid and the delta it allows there (:func:`~.base.profile_targets`).
    beta : float
        The failure probability of both directions together.
    target : RegionTarget, optional
        What the regions maximise; default the margin over ``(eps_grid, allowed)``.

    Returns
    -------
    chosen : list of 2 tuples ``(pick, mask, n_in, n_out, in_tr, out_tr)``
        The candidate cell set picked, with the family of regions (level sets or thresholds),
        by the cross-validated objective of :func:`_cross_validate` when there are several,
        the region's cell mask and the sizes/selection counts it was
        chosen with, per direction.
    shares : tuple of 2 float
        Each direction's share of ``beta`` (:meth:`HistogramHockeyStick._direction_shares`).

    Source: paper 000, Alg. 3–4 with the region chosen on a selection half (docs/histogram.md);
    nothing here looks at the held-out counts, so certifying on them keeps the bound's level.
    """
    target = RegionTarget.margin(eps_grid, allowed) if target is None else target
    # (cell set, family) candidates; threshold sets where the cells are ordered by value
    options = [(i, f) for i, c in enumerate(counts) for f in (("level", "threshold") if c.get("ordered", 0) > 1 else ("level",))]
    chosen = []
    for swap in (False, True):
        n_in, n_out = (n_ev_q, n_ev_p) if swap else (n_ev_p, n_ev_q)
        if len(options) > 1:
            scores = [_cross_validate(counts[i]["folds"], swap, n_in, n_out, target, beta / 4,
                                      counts[i].get("ordered", 0), f) for i, f in options]
            pick, family = options[int(np.argmax(scores))]
        else:
            pick, family = options[0]
        c = counts[pick]
        in_tr, out_tr = (c["b_tr"], c["a_tr"]) if swap else (c["a_tr"], c["b_tr"])
        mask = _choose_region(in_tr, out_tr, n_in, n_out, target, beta / 4, c.get("ordered", 0), family,
                              INTERVAL_POINTS)
        chosen.append((pick, mask, n_in, n_out, in_tr, out_tr))
    return chosen, HistogramHockeyStick._direction_shares(chosen, eps_grid, allowed, beta, target)


class HistogramHockeyStick:
    """Histogram lower bounds on the hockey-stick divergence (paper 000, Alg. 3, improved).

    Parameters
    ----------
    tolerance : {"split", "l1", "plug-in", "original", "plug-in-heuristic"}, default "split"
        How ``delta_hat`` becomes a lower confidence bound (module docstring,
        ``docs/histogram.md``). ``"split"`` was the most powerful on every example measured;
        ``"plug-in-heuristic"`` is not a proven bound.
    mode : {"auto", "discrete", "binned"}, default "auto"
        ``"discrete"``: each distinct output row is a cell (any output dimension).
        ``"binned"``: 1-D outputs cut into intervals. ``"auto"``: discrete when the design samples
        show at most ``min(max_categories, n_design / 10)`` distinct rows, else binned for 1-D
        outputs; continuous outputs of dimension > 1 raise :class:`NotApplicable`.
    bins : int, optional
        Number of bins in binned mode. Default: 100 (paper 000's universe size) for the L1
        tolerances; for ``"split"``, the number of equal-mass bins (8, 16, ..., 1024, at most
        ``n_design / 20``; outer bins refined geometrically) is chosen per direction by two-fold
        cross-validation on the training half (the bound's cost does not grow with it).
    value_range : (float, float), optional
        Binned mode with ``bins`` equal-width bins on this range, values outside counting in the
        outer bins (as DP-Auditorium). Without it the bin edges are quantiles of the design split.
    categories : array, shape (k,) or (k, output_dim), optional
        Discrete mode with this known universe (outputs outside it raise ValueError). Without it
        the categories are those seen in the design split, plus one cell for other values.
    train_fraction : float, optional
        Fraction of each sample used to make the cells (and, for ``"split"``, choose the region);
        the rest bounds it. Default for ``"split"``: half of each sample up to 400,000 rows, then
        200,000 rows or a fifth, whichever is larger (choosing needs fewer samples than
        certifying), and 200,000 rows when those show at most 64 distinct outputs, each at least
        10,000 times (:data:`FEW_VALUES_DESIGN`); for the L1 tolerances 0.1 when the cells come from data and 0 when
        ``value_range`` or ``categories`` fixes them (then ignored).
    max_categories : int, default 1000
        Most distinct outputs for which ``mode="auto"`` chooses discrete.
    objective : {"margin", "both", "epsilon"}, default "margin"
        ``"split"`` only: what each direction's region maximises on the training half
        (:class:`~dpaudit.estimators.region.RegionTarget`). ``"margin"``: the margin over the
        claim's profile (the verdict). ``"epsilon"``: the certified epsilon lower bound at the
        ``delta`` given to :meth:`estimate` (DP-Sniper's objective, Bichsel et al. 2021).
        ``"both"``: one region of each kind per direction; when the training half picks the same
        cells for both, one bound at the direction's whole share of ``beta``, else the margin
        region gets :data:`VERDICT_SHARE` (0.8) of it and the epsilon region the rest (a violation
        shown by either counts; the epsilon lower bound is the larger of the two), unless the
        direction's verdict is close (:func:`verdict_share`): then only the margin region, at
        the whole share. The bound's ``region`` says which objective chose it.

    Raises
    ------
    ValueError
        On unknown names or invalid values (named in the message).

    References
    ----------
    Gilbert & McMillan (2018), "Property testing for differential privacy", Allerton, Alg. 2;
    paper 000 (DP-Auditorium), §4.2.1, Alg. 3–4.
    """

    def __init__(
        self,
        tolerance: str = "split",
        mode: str = "auto",
        bins: int | None = None,
        value_range: tuple[float, float] | None = None,
        categories=None,
        train_fraction: float | None = None,
        max_categories: int = 1000,
        objective: str = "margin",
        ratio_test: bool = True,
    ):
        if tolerance not in TOLERANCES:
            raise ValueError(f"tolerance must be one of {TOLERANCES}, got {tolerance!r}")
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
        if objective != "margin" and tolerance != "split":
            raise ValueError(f"objective={objective!r} chooses regions: it needs tolerance='split', got {tolerance!r}")
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if bins is not None:
            bins = check_int(bins, "bins", 2)
        if value_range is not None:
            lo, hi = (float(v) for v in value_range)
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise ValueError(f"value_range must be finite (lo, hi) with lo < hi, got {value_range!r}")
            value_range = (lo, hi)
        if categories is not None:
            cats = np.asarray(categories, dtype=float)
            cats = cats.reshape(-1, 1) if cats.ndim == 1 else cats
            if cats.ndim != 2 or len(cats) < 1 or not np.all(np.isfinite(cats)):
                raise ValueError(
                    f"categories must be a non-empty finite array of shape (k,) or (k, d), got {categories!r}"
                )
            categories = cats
        if value_range is not None and categories is not None:
            raise ValueError("give value_range (binned) or categories (discrete), not both")
        if value_range is not None and mode == "discrete":
            raise ValueError("value_range fixes bins: it cannot be used with mode='discrete'")
        if categories is not None and mode == "binned":
            raise ValueError("categories fix a discrete universe: they cannot be used with mode='binned'")
        if train_fraction is not None:
            train_fraction = check_probability(train_fraction, "train_fraction")
        max_categories = check_int(max_categories, "max_categories")
        self.tolerance = tolerance
        self.mode = mode
        self.bins = None if bins is None else int(bins)
        self.value_range = value_range
        self.categories = categories
        self.train_fraction = None if train_fraction is None else float(train_fraction)
        self.max_categories = int(max_categories)
        self.objective = objective
        self.ratio_test = bool(ratio_test)

    # ------------------------------------------------------------------ configuration
    def config(self) -> dict:
        """Hyper-parameters (JSON-friendly)."""
        return {
            "tolerance": self.tolerance,
            "mode": self.mode,
            "bins": self.bins,
            "value_range": None if self.value_range is None else list(self.value_range),
            "categories": None if self.categories is None else self.categories.tolist(),
            "train_fraction": self.train_fraction,
            "max_categories": self.max_categories,
            "objective": self.objective,
            "ratio_test": self.ratio_test,
        }

    def _fixed_cells(self) -> bool:
        return self.value_range is not None or self.categories is not None

    def _design_fraction(self) -> float:
        """The design (selection) fraction; ``-1.0`` stands for the ``"split"`` default rule of
        :meth:`_design_size`."""
        if self.tolerance == "split":
            return SPLIT_DESIGN if self.train_fraction is None else self.train_fraction
        if self._fixed_cells():
            return 0.0
        return 0.1 if self.train_fraction is None else self.train_fraction

    def _make_cells(self, design: np.ndarray, dim: int) -> list[_Cells]:
        """Candidate cells, from the configuration and the design samples only (one candidate
        except for ``"split"`` binning without ``bins``: several bin counts)."""
        if self.categories is not None:
            if self.categories.shape[1] != dim:
                raise ValueError(f"categories have {self.categories.shape[1]} columns but the outputs have {dim}")
            return [_discrete_cells(self.categories, other=False, source="(given)")]
        if self.value_range is not None:
            if dim != 1:
                raise NotApplicable(f"value_range bins 1-D outputs; these have dimension {dim}")
            m = self.bins or 100
            lo, hi = self.value_range
            edges = np.linspace(lo, hi, m + 1)[1:-1]
            return [_binned_cells(edges, f"{m} equal bins on [{lo:g}, {hi:g}] (outer bins take values outside)")]
        n_d = len(design)
        distinct = _distinct_rows(design)
        mode = self.mode
        if mode == "auto":
            if self.few_distinct(len(distinct), n_d):
                mode = "discrete"
            elif dim == 1:
                mode = "binned"
            else:
                raise NotApplicable(
                    f"the histogram tester needs discrete outputs or 1-D outputs to bin; these have dimension "
                    f"{dim} and {len(distinct)} distinct values in {n_d} design samples (more than "
                    f"min(max_categories={self.max_categories}, n/10))"
                )
        if mode == "discrete":
            return [_discrete_cells(distinct, other=True, source=f"(seen in {n_d} design samples)")]
        if dim != 1:
            raise NotApplicable(f"binned mode needs 1-D outputs; these have dimension {dim}")
        if self.tolerance == "split":
            if self.bins is not None:
                sizes = [self.bins]
            else:  # candidates; estimate() picks one per direction by cross-validation
                sizes = [m for m in _SPLIT_BIN_COUNTS if m <= max(_SPLIT_BIN_COUNTS[0], n_d // 20)]
            out = []
            ordered = np.sort(design[:, 0])
            for m in sizes:
                # "lower" empirical quantiles: edges are design values, so ties stay in one cell
                at = np.floor(_quantile_levels(m, n_d) * (n_d - 1)).astype(int)
                edges = np.unique(ordered[at])
                desc = f"{len(edges) + 1} quantile bins ({m} equal-mass, tails refined) of {n_d} design samples"
                out.append(_binned_cells(edges, desc))
            return out
        m = self.bins or 100
        edges = np.unique(np.quantile(design[:, 0], np.linspace(0.0, 1.0, m + 1)[1:-1]))
        return [_binned_cells(edges, f"{len(edges) + 1} quantile bins of {n_d} design samples")]

    # ------------------------------------------------------------------ estimate
    def estimate(
        self, p_samples, q_samples, *, epsilon: float, beta: float,
        delta_profile: Callable[[np.ndarray], np.ndarray] | None = None, rng=None, delta: float = 0.0,
        columns: str = "all",
    ) -> HistogramEvidence:
        """Lower confidence bounds on ``H_{e^eps}(P||Q)`` and ``H_{e^eps}(Q||P)``, for every eps.

        Parameters
        ----------
        p_samples, q_samples : array, shape (n, output_dim)
            Outputs on D0 and D1 (at least 4 rows each).
        epsilon : float
            Order (nats) of the ``estimate``/``lower`` fields; the bounds hold for every order.
        beta : float
            Failure probability, in (0, 1), of both bounds together: ``"split"`` gives the
            directions shares of it chosen on the training half (``beta/2`` each by default; each
            share split equally between the direction's two Clopper–Pearson bounds); the L1
            tolerances spend ``beta/2`` on each distribution's ``TV`` bound, which serves both
            directions.
        delta_profile : callable, optional
            A claim's privacy profile ``eps' -> delta(eps')``: the ``"split"`` region is chosen to
            beat it by the largest margin, and it decides when the bounds are vacuous. Default:
            0 at ``epsilon``.
        rng : Generator or int, optional
            Shuffles the samples before the design split.
        delta : float, default 0.0
            The delta at which ``objective="epsilon"``/``"both"`` maximise the certified epsilon
            lower bound (a claim's delta; 0 for pure DP).
        columns : {"all", "informative"}, default "all"
            ``"informative"`` (``tolerance="split"`` only): regions are chosen on the columns
            whose law differs between the samples, decided on the design rows by
            :func:`~._projection.informative_columns` (regions are cylinders over them, the
            bound keeps its level); raises :class:`NotApplicable` when that rule keeps no or
            every column, or when the projected output is neither 1-D nor discrete with few
            values. The region labels name the kept columns.

        Returns
        -------
        HistogramEvidence

        Raises
        ------
        ValueError
            On invalid samples, epsilon or beta, or outputs outside the given categories, or an
            unknown ``columns``.
        NotApplicable
            For continuous outputs of dimension > 1 (or binned mode on them), and as above for
            ``columns="informative"``.
        """
        t0 = time.perf_counter()
        p, q = check_sample_pair(p_samples, q_samples, min_samples=4)
        epsilon, beta = check_epsilon(epsilon), check_probability(beta, "beta")
        rng = as_rng(rng)
        eps_grid, allowed = profile_targets(epsilon, delta_profile)

        if columns not in ("all", "informative"):
            raise ValueError(f"columns must be 'all' or 'informative', got {columns!r}")
        frac = self._design_fraction()
        n_d_p = self._design_size(len(p), frac)
        n_d_q = self._design_size(len(q), frac)
        projection = ""
        if frac > 0.0 or frac == SPLIT_DESIGN:
            perm_p, perm_q = rng.permutation(len(p)), rng.permutation(len(q))
            if columns == "informative":
                p, q, projection = self._project(p, q, perm_p[:n_d_p], perm_q[:n_d_q])
            p, q = p[perm_p], q[perm_q]
        elif columns == "informative":
            raise NotApplicable("columns='informative' needs design rows (tolerance='split')")
        if (frac == SPLIT_DESIGN and self.tolerance == "split" and self.value_range is None and self.mode != "binned"
                and min(n_d_p, n_d_q) > FEW_VALUES_DESIGN):
            # Decided on the first FEW_VALUES_DESIGN rows, design rows either way: the held-out
            # rows stay independent of every choice.
            head = np.concatenate([p[:FEW_VALUES_DESIGN], q[:FEW_VALUES_DESIGN]], axis=0)
            values, seen = np.unique(_row_keys(head), return_counts=True)
            if len(values) <= FEW_VALUES and seen.min() >= FEW_VALUES_MIN_COUNT:
                n_d_p = n_d_q = FEW_VALUES_DESIGN
        p_tr, p_ev = p[:n_d_p], p[n_d_p:]
        q_tr, q_ev = q[:n_d_q], q[n_d_q:]
        candidates = self._make_cells(np.concatenate([p_tr, q_tr], axis=0), p.shape[1])
        n_train = n_d_p + n_d_q
        n_ev_p, n_ev_q = len(p_ev), len(q_ev)

        if self.tolerance == "split":
            # "both" may give the verdict region only VERDICT_SHARE of a direction's share
            split_beta = beta * VERDICT_SHARE if self.objective == "both" else beta
            needed = self._needed_samples(len(p), len(q), None, None, 0, split_beta, eps_grid, allowed)
            vacuous = needed is not None
            hp, hq = len(p_tr) // 2, len(q_tr) // 2
            parts = {"p_tr": p_tr, "q_tr": q_tr, "p_ev": p_ev, "q_ev": q_ev,
                     "p_f0": p_tr[:hp], "p_f1": p_tr[hp:], "q_f0": q_tr[:hq], "q_f1": q_tr[hq:]}
            poisson = None
            if self.ratio_test:  # the ratio test's rows: the first N ~ Poisson(lam) held-out ones
                poisson = poisson_rows(n_ev_p, n_ev_q, rng)
                big_p, _, big_q, _ = poisson
                parts["p_po"], parts["q_po"] = (None, None) if big_p is None else (p_ev[:big_p], q_ev[:big_q])
            if candidates[0].mode == "binned":
                parts = {k: None if v is None else np.sort(v[:, 0]) for k, v in parts.items()}
            counts = [_split_counts(c, parts, folds=True) for c in candidates]
            regions = self._choose(counts, n_ev_p, n_ev_q, eps_grid, allowed, beta, delta)
            bounds = []
            for label, direction, swap, pick, mask, n_in, n_out, b, use_ratio in regions:
                cells, c = candidates[pick], counts[pick]
                in_ev, out_ev = (c["b_ev"], c["a_ev"]) if swap else (c["a_ev"], c["b_ev"])
                ratio = None
                if use_ratio and poisson is not None:
                    big_p, lam_p, _, lam_q = poisson
                    lam_in, lam_out = (lam_q, lam_p) if swap else (lam_p, lam_q)
                    if big_p is not None:
                        in_po, out_po = (c["b_po"], c["a_po"]) if swap else (c["a_po"], c["b_po"])
                        ratio = (int(in_po[mask].sum()), lam_in, int(out_po[mask].sum()), lam_out)
                    else:
                        ratio = (None, lam_in, None, lam_out)
                bounds.append(HistogramBound.certify(
                    int(in_ev[mask].sum()), n_in, int(out_ev[mask].sum()), n_out, poisson=ratio,
                    epsilon=epsilon, beta=b, direction=direction, n_train=n_train,
                    region=label + projection + _describe_region(mask, cells), tolerance=self.tolerance, mode=cells.mode,
                    num_cells=cells.num_cells, binning=cells.description, vacuous=vacuous,
                ))
            forward, reverse, extra = bounds[0], bounds[1], tuple(bounds[2:])
        else:
            cells = candidates[0]
            m = cells.num_cells
            a_ev = np.bincount(cells.assign(p_ev), minlength=m)
            b_ev = np.bincount(cells.assign(q_ev), minlength=m)
            needed = self._needed_samples(len(p), len(q), a_ev, b_ev, m, beta, eps_grid, allowed)
            vacuous = needed is not None
            dev_p = sum(_deviations(self.tolerance, a_ev, m, beta / 2))
            dev_q = sum(_deviations(self.tolerance, b_ev, m, beta / 2))
            bounds = []
            for direction, (in_ev, out_ev, d_in, d_out) in (
                ("P||Q", (a_ev, b_ev, dev_p, dev_q)), ("Q||P", (b_ev, a_ev, dev_q, dev_p))
            ):
                est = histogram_delta(in_ev, out_ev, epsilon)
                bounds.append(HistogramBound(
                    divergence="hockey-stick", direction=direction, epsilon=epsilon, estimate=est,
                    lower=-math.inf if vacuous else est - d_in - math.exp(epsilon) * d_out,
                    beta=beta, tolerance=self.tolerance, mode=cells.mode, num_cells=m,
                    binning=cells.description, n_test_p=int(in_ev.sum()), n_test_q=int(out_ev.sum()),
                    n_train=n_train, p_mass_lower=None, q_mass_upper=None, p_count=None, q_count=None,
                    p_counts=tuple(in_ev.tolist()), q_counts=tuple(out_ev.tolist()),
                    p_deviation=d_in, q_deviation=d_out, vacuous=vacuous,
                ))
            forward, reverse = bounds
            extra = ()
        return HistogramEvidence(
            forward, reverse, forward.mode, self.tolerance, forward.num_cells, needed, time.perf_counter() - t0,
            extra=extra,
        )

    def few_distinct(self, distinct: int, rows: int) -> bool:
        """The ``mode="auto"`` rule for discrete outputs: ``distinct`` distinct rows among
        ``rows`` rows are few when at most ``min(max_categories, rows // 10)`` (every cell then
        holds 10 rows on average)."""
        return distinct <= min(self.max_categories, rows // 10)

    def _project(self, p: np.ndarray, q: np.ndarray, design_p: np.ndarray, design_q: np.ndarray):
        """``(p[:, kept], q[:, kept], label)`` for ``columns="informative"``: the kept columns
        decided on the design rows ``design_p``/``design_q`` (row indices) alone; raises
        :class:`NotApplicable` when nothing is to be gained (see :meth:`estimate`)."""
        if self.tolerance != "split":
            raise NotApplicable("columns='informative' needs tolerance='split'")
        # Only rows that stay design rows whatever the few-values rule decides next (it may cut
        # the design part to its first FEW_VALUES_DESIGN rows): no held-out row may shape S.
        head = min(PROJECTION_HEAD, FEW_VALUES_DESIGN)
        head_p, head_q = p[design_p[:head]], q[design_q[:head]]
        kept = informative_columns(head_p, head_q)
        if kept is None:
            raise NotApplicable("no proper subset of the output's columns carries the difference")
        if len(kept) > 1:
            look = np.concatenate([head_p[:, kept], head_q[:, kept]], axis=0)
            if not self.few_distinct(len(_distinct_rows(look)), len(look)):
                raise NotApplicable(f"the informative columns {kept} are neither one nor discrete with few values")
        shown = ", ".join(str(j) for j in kept)
        return p[:, kept], q[:, kept], f"columns ({shown}) of {p.shape[1]}: "

    def _choose(self, counts: list, n_ev_p: int, n_ev_q: int, eps_grid, allowed, beta: float, delta: float) -> list:
        """The regions to certify, from training counts only: ``(label, direction, swap, pick,
        mask, n_in, n_out, beta_j, use_ratio)`` per region, the two directions' first regions
        first, their ``beta_j`` adding up to ``beta`` (see ``objective``); ``use_ratio``: certify
        by the ratio test (:func:`~.region.ratio_certification` on the training counts)."""
        ratio = self.ratio_test
        margin = RegionTarget.margin(eps_grid, allowed, ratio=ratio)
        chosen, shares = choose_direction_regions(counts, n_ev_p, n_ev_q, eps_grid, allowed, beta, margin)
        if self.objective != "margin":
            eps_target = RegionTarget.epsilon(delta, ratio=ratio)
            chosen_e, shares_e = choose_direction_regions(counts, n_ev_p, n_ev_q, eps_grid, allowed, beta, eps_target)
            if self.objective == "epsilon":
                chosen, shares = chosen_e, shares_e

        def use_ratio(region, target, b) -> bool:
            _, mask, n_in, n_out, in_tr, out_tr = region
            return prefers_ratio(in_tr[mask].sum(), in_tr.sum(), out_tr[mask].sum(), out_tr.sum(), n_in, n_out, target, b)

        first, second = [], []
        for d, (direction, swap) in enumerate((("P||Q", False), ("Q||P", True))):
            pick, mask, n_in, n_out, in_tr, out_tr = chosen[d]
            share = shares[d] * beta
            if self.objective != "both":
                label = "[max epsilon] " if self.objective == "epsilon" else ""
                target = eps_target if self.objective == "epsilon" else margin
                first.append((label, direction, swap, pick, mask, n_in, n_out, share,
                              use_ratio(chosen[d], target, share)))
                continue
            pick_e, mask_e = chosen_e[d][0], chosen_e[d][1]
            if pick_e == pick and np.array_equal(mask_e, mask):
                first.append(("[margin and max epsilon] ", direction, swap, pick, mask, n_in, n_out, share,
                              use_ratio(chosen[d], margin, share)))
            elif verdict_share(in_tr, out_tr, mask, n_in, n_out, eps_grid, allowed, share) == 1.0:
                first.append(("[margin; close verdict] ", direction, swap, pick, mask, n_in, n_out, share,
                              use_ratio(chosen[d], margin, share)))
            else:
                b_m, b_e = share * VERDICT_SHARE, share * (1.0 - VERDICT_SHARE)
                first.append(("[margin] ", direction, swap, pick, mask, n_in, n_out, b_m,
                              use_ratio(chosen[d], margin, b_m)))
                second.append(("[max epsilon] ", direction, swap, pick_e, mask_e, n_in, n_out, b_e,
                                use_ratio(chosen_e[d], eps_target, b_e)))
        return first + second

    @staticmethod
    def _direction_shares(chosen, eps_grid, allowed, beta: float, target: RegionTarget | None = None) -> tuple[float, float]:
        """Shares of ``beta`` for ``P||Q`` and ``Q||P`` (``"split"``), from training counts only.

        Among (0.5, 0.5), (0.8, 0.2), (0.95, 0.05) and their mirrors:

        - margin target (the default): the split with the largest chance that some direction's
          held-out margin is positive, predicted from the training counts (rescaled to the
          held-out sizes) with a normal approximation of the held-out masses;
        - epsilon target: the split with the largest predicted certified epsilon over the two
          directions, :func:`~.region.projected_scores` of each direction's region at its share
          (choosing counts shrunk toward no effect first, so a direction whose ratio is mostly
          selection noise does not take the share). As the prediction grows with the share,
          this gives 0.95 to the direction with the larger prediction
          (:func:`~.region.epsilon_direction_split`, shared with the classifier path).

        Since only training samples decide it, the held-out bounds stay valid and their failure
        probabilities add up to ``beta``.
        """
        if target is not None and target.kind == "epsilon":
            return epsilon_direction_split(
                [(in_tr[mask].sum(), in_tr.sum(), out_tr[mask].sum(), out_tr.sum(), n_in, n_out)
                 for (pick, mask, n_in, n_out, in_tr, out_tr) in chosen], beta, target)
        best, best_val = (0.5, 0.5), -math.inf
        for s in DIRECTION_SPLITS:
            miss = 1.0
            for (pick, mask, n_in, n_out, in_tr, out_tr), share in zip(chosen, (s, 1.0 - s)):
                f_in = min(in_tr[mask].sum() / max(in_tr.sum(), 1), 1.0)
                f_out = min(out_tr[mask].sum() / max(out_tr.sum(), 1), 1.0)
                miss *= 1.0 - predicted_rejection(f_in, f_out, n_in, n_out, eps_grid, allowed, share * beta / 2)
            if 1.0 - miss > best_val + 1e-9:
                best, best_val = (s, 1.0 - s), 1.0 - miss
        return best

    @staticmethod
    def _design_size(n: int, frac: float) -> int:
        """Design rows of a sample of ``n`` rows at fraction ``frac``; for :data:`SPLIT_DESIGN`
        half of them up to 400,000 rows, then 200,000 or a fifth, whichever is larger: choosing
        a region needs far fewer samples than certifying its masses tightly, so large samples
        keep most rows for the bound. A function of ``n`` alone, never of the data."""
        if frac == SPLIT_DESIGN:
            return min(n - 2, max(2, int(round(min(0.5 * n, max(0.2 * n, 200_000))))))
        if frac <= 0.0:
            return 0
        return min(n - 2, max(2, int(round(frac * n))))

    # ------------------------------------------------------------------ vacuity
    def _needed_samples(self, n_p: int, n_q: int, a_ev, b_ev, m: int, beta: float, eps_grid, allowed) -> int | None:
        """None if the bounds can say something at these sizes (some data would make a margin
        over the claim positive); otherwise the smallest number of samples per dataset (same
        fractions, same cells) at which they could.

        ``"split"``: the best case is every held-out sample of one distribution and none of the
        other in ``S`` (at the equal split of beta). L1 tolerances: the best case is
        ``delta_hat = 1``; their deviation terms scale as ``1/sqrt(n)`` (exactly for a fixed
        histogram shape; approximately for the Clopper–Pearson part of ``"plug-in"``).
        """
        frac = self._design_fraction()
        e = np.exp(eps_grid)
        if self.tolerance == "split":
            def best(n_in_total: int, n_out_total: int) -> float:
                out = -math.inf
                for a, b in ((n_in_total, n_out_total), (n_out_total, n_in_total)):
                    n_in = a - self._design_size(a, frac)
                    n_out = b - self._design_size(b, frac)
                    out = max(out, best_case_margin(n_in, n_out, eps_grid, allowed, beta / 4))
                return out
        else:
            n_ev_p, n_ev_q = int(a_ev.sum()), int(b_ev.sum())
            d_p = sum(_deviations(self.tolerance, a_ev, m, beta / 2)) * math.sqrt(n_ev_p)
            d_q = sum(_deviations(self.tolerance, b_ev, m, beta / 2)) * math.sqrt(n_ev_q)

            def best(n_p_total: int, n_q_total: int) -> float:
                if (n_p_total, n_q_total) == (n_p, n_q):
                    sp, sq = n_ev_p, n_ev_q
                else:
                    sp = n_p_total - self._design_size(n_p_total, frac)
                    sq = n_q_total - self._design_size(n_q_total, frac)
                dp, dq = d_p / math.sqrt(sp), d_q / math.sqrt(sq)
                return max(float(np.max(1.0 - dp - e * dq - allowed)), float(np.max(1.0 - dq - e * dp - allowed)))

        if best(n_p, n_q) > 0.0:
            return None
        # None beyond 10^15: the claim allows everything the bound could show, no size helps
        return smallest_sufficient_size(lambda n: best(n, n) > 0.0, max(n_p, n_q, 4), 10**15)


def histogram_lower_bound(
    p_samples, q_samples, epsilon: float, *, beta: float = 0.05, rng=None, **estimator_kwargs
) -> HistogramBound:
    """Histogram lower confidence bound on ``H_{e^epsilon}(P || Q)`` from two samples (one direction).

    Convenience wrapper around :class:`HistogramHockeyStick` for notebooks.

    Parameters
    ----------
    p_samples, q_samples : array, shape (n, output_dim)
        Discrete outputs of any dimension, or 1-D outputs (binned).
    epsilon : float
        In nats.
    beta : float, default 0.05
        Failure probability of the returned bound (and of the reverse one computed with it).
    rng : Generator or int, optional
    **estimator_kwargs
        Passed to :class:`HistogramHockeyStick` (``tolerance``, ``mode``, ``bins``...).

    Returns
    -------
    HistogramBound
        ``delta_lower_bound(eps) <= H_{e^eps}(P||Q)`` for every eps, with probability ``>= 1 - beta``.

    Raises
    ------
    ValueError, NotApplicable
        As :meth:`HistogramHockeyStick.estimate`.
    """
    ev = HistogramHockeyStick(**estimator_kwargs).estimate(p_samples, q_samples, epsilon=epsilon, beta=beta, rng=rng)
    return ev.forward


# --------------------------------------------------------------------------- scores (paper 001)
METHODS = ("auto", "canonne", "split")

#: Samples at least this large are binned by arithmetic on equal-width edges (:meth:`Bins.assign`).
_ARITHMETIC_BINNING_MIN = 256


@dataclass(frozen=True, eq=False)
class Bins:
    """A partition of the real line into ``k`` bins; values outside the edges go to the end bins.

    Attributes
    ----------
    edges : ndarray, shape (k + 1,)
        Strictly increasing, finite. Bin ``i`` is ``[edges[i], edges[i+1])`` (the last bin is
        closed); values below ``edges[0]`` fall in bin 0 and above ``edges[-1]`` in bin ``k - 1``.
    rule : str
        How the edges were made: ``"scott"``, ``"count"`` or ``"edges"``.
    chosen_on : str
        ``"given"`` (fixed in advance) or ``"selection split"`` (chosen on held-apart samples).
    """

    edges: np.ndarray
    rule: str = "edges"
    chosen_on: str = "given"

    @property
    def k(self) -> int:
        """Number of bins."""
        return int(self.edges.size - 1)

    def assign(self, values) -> np.ndarray:
        """Bin index of each value, shape (n,), in ``0 .. k - 1``.

        Exactly ``clip(searchsorted(edges, values, side="right") - 1, 0, k - 1)``. For equal-width
        edges (Scott's rule, a bin count: :func:`make_bins`) the index is first computed by
        arithmetic, ``(value - edges[0]) k / (edges[-1] - edges[0])``, then checked against the
        edges themselves; the values it misplaces by rounding (or NaN) go through the binary
        search, so the result is identical, in a fraction of the time on large samples.
        """
        v = np.asarray(values, dtype=float)
        if v.size >= _ARITHMETIC_BINNING_MIN and self._equal_width:
            return self._assign_equal_width(v)
        idx = np.searchsorted(self.edges, v, side="right") - 1
        return np.clip(idx, 0, self.k - 1)

    @cached_property
    def _equal_width(self) -> bool:
        """Whether the edges are equally spaced up to rounding (as :func:`numpy.linspace` makes
        them): then :meth:`assign`'s arithmetic guess is almost always right."""
        e = self.edges
        return e.size < 3 or bool(np.ptp(np.diff(e)) <= 1e-9 * float(e[-1] - e[0]))

    def _assign_equal_width(self, v: np.ndarray) -> np.ndarray:
        """:meth:`assign` for equal-width edges: an arithmetic guess, verified against the edges,
        the binary search for the values it misplaced (identical to the binary search)."""
        e, k = self.edges, self.k
        with np.errstate(invalid="ignore", over="ignore"):
            idx = np.clip((v - e[0]) * (k / (e[-1] - e[0])), 0, k - 1).astype(np.intp)
        np.clip(idx, 0, k - 1, out=idx)  # NaN casts to an arbitrary integer: the check below catches it
        # Correct: edges[idx] <= v < edges[idx + 1], except that the end bins also take what lies beyond.
        ok = (e[idx] <= v) | (idx == 0)
        ok &= (v < e[idx + 1]) | (idx == k - 1)
        wrong = np.flatnonzero(~ok)
        if wrong.size:
            idx[wrong] = np.clip(np.searchsorted(e, v[wrong], side="right") - 1, 0, k - 1)
        return idx

    def counts(self, values) -> np.ndarray:
        """Number of values in each bin, shape (k,)."""
        return np.bincount(self.assign(values), minlength=self.k)

    def to_dict(self) -> dict:
        e = self.edges
        return {
            "k": self.k, "rule": self.rule, "chosen_on": self.chosen_on,
            "range": [float(e[0]), float(e[-1])], "width": float((e[-1] - e[0]) / self.k),
        }


def scott_bin_width(p_scores, q_scores=None, num_samples: int | None = None) -> float:
    """Scott's (1979) bin width ``h = 3.49 sigma n^{-1/3}`` (paper 001 §4.4, eq. (4.2)).

    ``sigma`` is the mean of the two samples' standard deviations (the paper's rule of thumb for
    score distributions of similar spread; the pooled standard deviation if both samples are
    constant), ``n`` the number of samples per side the histogram
    will be built from (default: the size of ``p_scores``).

    Parameters
    ----------
    p_scores : array, shape (n,)
    q_scores : array, shape (m,), optional
    num_samples : int, optional

    Returns
    -------
    float
        Bin width (score units); 0 if the samples are constant.

    References
    ----------
    Scott (1979), "On optimal and data-based histograms", Biometrika 66(3); paper 001 Cor. 5.
    """
    x = check_scores(p_scores, "p_scores")
    sds = [np.std(x)]
    y = None
    if q_scores is not None:
        y = check_scores(q_scores, "q_scores")
        sds.append(np.std(y))
    n = x.size if num_samples is None else int(num_samples)
    if n < 1:
        raise ValueError(f"num_samples must be >= 1, got {num_samples!r}")
    sigma = float(np.mean(sds))
    if sigma == 0.0 and y is not None:  # each sample constant: fall back on the pooled spread
        sigma = float(np.std(np.concatenate([x, y])))
    return float(3.49 * sigma * n ** (-1.0 / 3.0))


def make_bins(p_scores, q_scores, bins="scott", bin_range=None, *, num_samples=None, max_bins: int = 10_000) -> Bins:
    """Bins for two samples: Scott's rule, a bin count, or explicit edges.

    Parameters
    ----------
    p_scores, q_scores : array, shape (n,), (m,)
        Samples the rule may look at (in :func:`histogram_audit`, the selection part only).
    bins : "scott", int or array of edges
        ``"scott"``: width :func:`scott_bin_width` over ``bin_range``; int ``k``: ``k`` equal bins;
        array: strictly increasing finite edges (``bin_range`` must then be None).
    bin_range : (float, float), optional
        ``(low, high)``; default: the smallest and largest pooled score.
    num_samples : int, optional
        Per-side sample size the width is tuned for (Scott's rule).
    max_bins : int
        Cap on the number of bins for Scott's rule.

    Returns
    -------
    Bins

    Raises
    ------
    ValueError
        If ``bins < 1``, edges are not strictly increasing and finite, the range is empty or
        not finite, or ``bins`` is neither "scott", an int nor an array.

    References
    ----------
    Paper 001 §4.2 (equal-width bins, tails clipped into the end bins), §4.4 (Scott 1979).
    """
    if isinstance(bins, str):
        if bins != "scott":
            raise ValueError(f"bins must be 'scott', a positive integer or an array of edges, got {bins!r}")
        rule = "scott"
    elif isinstance(bins, (bool, np.bool_)):
        raise ValueError(f"bins must be 'scott', a positive integer or an array of edges, got {bins!r}")
    elif np.ndim(bins) == 0:
        if int(bins) != bins or int(bins) < 1:
            raise ValueError(f"bins must be >= 1, got {bins!r}")
        rule = "count"
    else:
        edges = np.asarray(bins, dtype=float)
        if edges.ndim != 1 or edges.size < 2 or np.any(~np.isfinite(edges)) or np.any(np.diff(edges) <= 0):
            raise ValueError(f"bin edges must be a 1-D, finite, strictly increasing array of >= 2 values, got {bins!r}")
        if bin_range is not None:
            raise ValueError(f"give either bin edges or bin_range, not both (bin_range={bin_range!r})")
        return Bins(edges, "edges", "given")
    if bin_range is None:
        pooled = np.concatenate([check_scores(p_scores, "p_scores"), check_scores(q_scores, "q_scores")])
        lo, hi = float(pooled.min()), float(pooled.max())
    else:
        try:
            lo, hi = (float(v) for v in bin_range)
        except (TypeError, ValueError):
            raise ValueError(f"bin_range must be a pair (low, high), got {bin_range!r}") from None
        if not (math.isfinite(lo) and math.isfinite(hi)) or not hi > lo:
            raise ValueError(f"bin_range must be finite with low < high, got {bin_range!r}")
    if hi <= lo:  # constant samples: one bin around the value
        lo, hi = lo - 0.5, hi + 0.5
    if rule == "count":
        k = int(bins)
    else:
        h = scott_bin_width(p_scores, q_scores, num_samples)
        k = 1 if h <= 0 else int(min(max_bins, max(1, math.ceil((hi - lo) / h))))
    return Bins(np.linspace(lo, hi, k + 1), rule, "given")


def histogram_hockey_stick(p_scores, q_scores, epsilons, bins="scott", bin_range=None):
    """Plug-in histogram estimate ``sum_i (p_i - e^eps q_i)_+`` for a grid of eps (an estimate).

    Paper 001 §4.2 (Alg. 2 without confidence). Not a bound: sampling noise biases it upwards
    for close distributions; use :func:`histogram_audit` for confidence bounds.

    Parameters
    ----------
    p_scores, q_scores : array, shape (n,), (m,)
    epsilons : array, shape (G,)
        Epsilons in nats.
    bins, bin_range
        As in :func:`make_bins` (chosen on the same samples).

    Returns
    -------
    (ndarray, ndarray)
        ``H(P_hat||Q_hat)`` and ``H(Q_hat||P_hat)`` on the grid, each shape (G,).
    """
    x = check_scores(p_scores, "p_scores")
    y = check_scores(q_scores, "q_scores")
    b = make_bins(x, y, bins, bin_range)
    p = b.counts(x) / x.size
    q = b.counts(y) / y.size
    return _plugin(p, q, np.atleast_1d(np.asarray(epsilons, dtype=float)))


def _plugin(p, q, eps):
    a = np.exp(np.minimum(eps, 700.0))[:, None]
    fwd = np.maximum(p[None, :] - a * q[None, :], 0.0).sum(axis=1)
    rev = np.maximum(q[None, :] - a * p[None, :], 0.0).sum(axis=1)
    return fwd, rev


def _ratio_order(kp, n, kq, m, smooth: float = 0.0):
    """Bins sorted by estimated likelihood ratio ``p_i / q_i``, largest first (ties: more P mass)."""
    p = (kp + smooth) / n
    q = (kq + smooth) / m
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(q > 0, p / np.where(q > 0, q, 1.0), np.where(p > 0, np.inf, 1.0))
    return np.lexsort((-p, -r))


def _eps_top(kp, n, kq, m) -> float:
    lr = np.log((kp + 0.5) / n) - np.log((kq + 0.5) / m)
    return float(np.clip(np.max(np.abs(lr)) if lr.size else 1.0, 0.5, 20.0))


def histogram_audit(
    p_scores,
    q_scores,
    *,
    bins="scott",
    bin_range=None,
    method: str = "auto",
    confidence: float = 0.95,
    epsilons=None,
    selection_fraction: float = 0.5,
    max_bins: int = 10_000,
    rng=None,
) -> ScoreAudit:
    """Lower confidence bounds on the privacy profile, trade-off curve and GDP parameter.

    Paper 001 Alg. 2 with confidence: histogram the two samples, bound the binned distributions'
    hockey-stick divergences, simultaneously over all eps (``docs/scores.md`` §1–§2).

    Parameters
    ----------
    p_scores : array, shape (n,)
        Scores under P (e.g. a canary's loss under models trained *with* it). Finite.
    q_scores : array, shape (m,)
        Scores under Q (models trained *without* it). Finite.
    bins : "scott", int or array of edges
        Binning (see :func:`make_bins`). Data-dependent choices (``"scott"``, or an int without
        ``bin_range``) are made on the selection part only.
    bin_range : (float, float), optional
        Range of the equal-width bins; with an int ``bins`` it fixes the bins in advance.
    method : {"auto", "canonne", "split"}
        Which bound(s); ``"auto"`` spends half the failure probability on each and keeps the
        tighter at every point.
    confidence : float
        ``1 - beta`` in (0, 1): all bounds of the result hold together with this probability.
    epsilons : array of float, optional
        Epsilon grid (nats, ``>= 0``) at which the split method selects its sets and the plug-in
        estimate is tabulated; default 48 points from 0 to the largest observed log ratio.
        The bounds themselves hold at every eps, on or off this grid.
    selection_fraction : float
        Fraction of each sample (in (0, 1)) held apart to choose bins and sets.
    max_bins : int
        Cap on Scott's bin count.
    rng : numpy Generator or int, optional
        Randomness of the split (samples are permuted before splitting).

    Returns
    -------
    ScoreAudit

    Raises
    ------
    ValueError
        Empty samples or fewer than 2 scores per side, NaN/inf scores, wrong shapes, bins < 1,
        confidence outside (0, 1), unknown method, selection_fraction outside (0, 1).

    References
    ----------
    Paper 001 §4 (Alg. 2, Lemmas 1–3, Thm 4); Canonne (2020); Clopper & Pearson (1934);
    Scott (1979).
    """
    x = check_scores(p_scores, "p_scores", min_size=2)
    y = check_scores(q_scores, "q_scores", min_size=2)
    conf = check_probability(confidence, "confidence")
    beta = 1.0 - conf
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    sf = check_probability(selection_fraction, "selection_fraction")
    max_bins = check_int(max_bins, "max_bins")
    gen = as_rng(rng)
    fixed = not isinstance(bins, str) and (np.ndim(bins) > 0 or bin_range is not None)
    if isinstance(bins, (bool, np.bool_)):
        raise ValueError(f"bins must be 'scott', a positive integer or an array of edges, got {bins!r}")
    if not isinstance(bins, str) and np.ndim(bins) == 0 and (int(bins) != bins or int(bins) < 1):
        raise ValueError(f"bins must be >= 1, got {bins!r}")

    # Split each sample: A (selection) and B (bounds).
    xs = x[gen.permutation(x.size)]
    ys = y[gen.permutation(y.size)]
    na = min(x.size - 1, max(1, int(round(sf * x.size))))
    ma = min(y.size - 1, max(1, int(round(sf * y.size))))
    xa, xb, ya, yb = xs[:na], xs[na:], ys[:ma], ys[ma:]

    if fixed:
        b = make_bins(x, y, bins, bin_range, max_bins=max_bins)
    else:
        b = make_bins(xa, ya, bins, bin_range, num_samples=min(xb.size, yb.size), max_bins=max_bins)
        b = Bins(b.edges, b.rule, "selection split")
    k = b.k

    beta_c = beta if method == "canonne" else (beta / 2.0 if method == "auto" else 0.0)
    beta_s = beta if method == "split" else (beta / 2.0 if method == "auto" else 0.0)

    kpa, kqa = b.counts(xa), b.counts(ya)
    if epsilons is None:
        grid = np.linspace(0.0, _eps_top(kpa, na, kqa, ma), 48)
    else:
        grid = np.unique(np.atleast_1d(np.asarray(epsilons, dtype=float)))
        if grid.size == 0 or np.any(~np.isfinite(grid)) or np.any(grid < 0):
            raise ValueError(f"epsilons must be a non-empty array of finite values >= 0, got {epsilons!r}")

    p_rows, q_rows, src = [], [], []
    details: dict = {"bins": b.to_dict(), "beta": beta, "selection_fraction": sf}

    if beta_c > 0:
        cx, cy = (x, y) if fixed else (xb, yb)
        kp, kq = b.counts(cx), b.counts(cy)
        # Canonne's argument with data-dependent constants: the mean term sum_i sqrt(p_i(1-p_i)/n)/2
        # is bounded over the masses the counts allow (dpaudit.bounds.empirical_tv_upper_plugin),
        # which is much smaller than sqrt((k-1)/n)/2 when most of Scott's bins are nearly empty.
        e_p = empirical_tv_upper_plugin(kp, beta_c / 2.0)
        e_q = empirical_tv_upper_plugin(kq, beta_c / 2.0)
        order = _ratio_order(kp, cx.size, kq, cy.size)
        ps = np.concatenate([[0.0], np.cumsum(kp[order]) / cx.size])
        qs = np.concatenate([[0.0], np.cumsum(kq[order]) / cy.size])
        p_rows.append(np.clip(ps - e_p, 0.0, 1.0))
        q_rows.append(np.clip(qs + e_q, 0.0, 1.0))
        src += ["canonne"] * ps.size
        details["canonne"] = {
            "beta": beta_c, "tv_radius_p": e_p, "tv_radius_q": e_q,
            "tv_radius_p_from_k_only": canonne_tv_upper(cx.size, k, beta_c / 2.0),
            "tv_radius_q_from_k_only": canonne_tv_upper(cy.size, k, beta_c / 2.0),
            "n_p": int(cx.size), "n_q": int(cy.size), "samples": "all" if fixed else "estimation part",
        }

    if beta_s > 0:
        # Candidate sets, all fixed by the selection part A: prefixes of the bins ranked by their
        # (smoothed) likelihood ratio on A, and the bin-aligned half-lines (thresholds), which
        # are the optimal sets when the likelihood ratio is monotone (paper 001 §6).
        # The ranking uses the first half of A and the choice among candidates the second half,
        # so that a set is not preferred merely because A's own noise ranked it high.
        kpb, kqb = b.counts(xb), b.counts(yb)
        na1, ma1 = max(1, na // 2), max(1, ma // 2)
        if na >= 2 and ma >= 2:
            kp1, kq1 = b.counts(xa[:na1]), b.counts(ya[:ma1])
            kp2, kq2, n2, m2 = b.counts(xa[na1:]), b.counts(ya[ma1:]), na - na1, ma - ma1
        else:
            kp1, kq1, kp2, kq2, n2, m2 = kpa, kqa, kpa, kqa, na, ma
        orders = [_ratio_order(kp1, na1, kq1, ma1, smooth=0.5), np.arange(k)[::-1], np.arange(k)]

        def prefix(counts):
            return np.concatenate([np.concatenate([[0], np.cumsum(counts[o])]) for o in orders])

        cpa, cqa, cpb, cqb = prefix(kp2), prefix(kq2), prefix(kpb), prefix(kqb)
        guess = beta_s / (2.0 * max(1, min(cpa.size, 2 * grid.size)))
        # Score each candidate by the bound it would get on B if B looked like A2 (counts rescaled
        # to B's size), so the finite-sample penalty of small tail sets is judged at B's size.
        pl, qu = projected_mass_bounds(cpa, n2, cqa, m2, xb.size, yb.size, guess)
        alpha = np.exp(np.minimum(grid, 700.0))[:, None]
        fwd = pl[None, :] - alpha * qu[None, :]
        rev = (1.0 - qu)[None, :] - alpha * (1.0 - pl)[None, :]
        chosen = set()
        for score in (fwd, rev):
            j = np.argmax(score, axis=1)
            good = score[np.arange(score.shape[0]), j] > 0
            chosen.update(int(v) for v in j[good])
        # ... and the sets that look best for an epsilon bound at small deltas (pure-DP-like
        # regime, where the best set has tiny masses and may fall between grid points).
        with np.errstate(divide="ignore", invalid="ignore"):
            for dlt in (0.0, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2):
                for num, den in ((pl - dlt, qu), (1.0 - qu - dlt, 1.0 - pl)):
                    val = np.where(num > 0, np.log(np.maximum(num, 1e-300)) - np.log(den), -np.inf)
                    j = int(np.argmax(val))
                    if val[j] > 0:
                        chosen.add(j)
        if not chosen:  # nothing looks promising on A: test the best TV set only
            chosen.add(int(np.argmax(pl - qu)))
        # The same set can appear in several families (e.g. a monotone ratio): count it once.
        pairs = sorted({(int(cpb[j]), int(cqb[j]), int(cpa[j]), int(cqa[j])) for j in chosen})
        d = len(pairs)
        cpb_s = np.array([t[0] for t in pairs])
        cqb_s = np.array([t[1] for t in pairs])
        p_lo, q_hi, level = certify_regions(cpb_s, xb.size, cqb_s, yb.size, beta_s)
        p_rows.append(np.atleast_1d(p_lo))
        q_rows.append(np.atleast_1d(q_hi))
        src += ["split"] * d
        details["split"] = {
            "beta": beta_s, "sets": int(d), "per_bound_beta": level,
            "n_select_p": int(na), "n_select_q": int(ma), "n_p": int(xb.size), "n_q": int(yb.size),
        }

    # Plug-in estimate on all samples (for display; not a bound).
    pf, qf = b.counts(x) / x.size, b.counts(y) / y.size
    fwd, rev = _plugin(pf, qf, grid)
    est = np.maximum(fwd, rev)
    tv_hat = float(0.5 * np.abs(pf - qf).sum())
    return ScoreAudit.from_rows(
        np.concatenate(p_rows), np.concatenate(q_rows), src,
        method=method, confidence=conf, n_p=int(x.size), n_q=int(y.size), tv_estimate=tv_hat,
        estimate_epsilons=grid, estimate_deltas=est, details=details,
    )
