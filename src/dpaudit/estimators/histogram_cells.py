"""Cells and regions of the histogram estimator of mechanism outputs.

Cells (:class:`_Cells`) map output rows to indices fixed before the bound's samples are seen:
observed categories, known categories, or bins. Regions are sets of cells chosen on the
selection counts only (:func:`_choose_region`, :func:`_cross_validate` between cell sets and
region families), and :func:`verdict_share` splits a direction's beta between its margin and
epsilon regions. Used by :class:`~dpaudit.estimators.histogram.HistogramHockeyStick`; nothing here
reads the held-out counts, so the bounds certified on them keep their level.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .region import RegionTarget, _projected_scores_all, predicted_rejection, projected_choices, projected_scores

__all__ = ["BORDERLINE", "INTERVAL_POINTS", "INTERVAL_POINTS_CV", "VERDICT_SHARE", "verdict_share"]

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


def _merge_sorted(*runs: np.ndarray) -> np.ndarray:
    """The values of a few sorted 1-D float arrays together, sorted (shape (total length,)): a
    stable sort of their concatenation, which numpy runs as a timsort, merging the sorted runs.
    The same array as sorting the values from scratch, up to the order of -0.0 and 0.0 (equal
    values, which every count by comparison treats alike)."""
    return np.sort(np.concatenate(runs), kind="stable")


REGION_COMPARE_MAX = 8
"""Boundaries up to which :class:`_HeldOut` counts a region by comparisons (one pass over the
rows per boundary); beyond, by one bisection per row among the region's boundaries."""


class _HeldOut:
    """Held-out 1-D values (shape (n,), unsorted) and the length ``prefix`` of the ratio test's
    rows among them (or None), counted in chosen binned regions only (issue 37: the counts of the
    regions certified are all the certification needs, and sorting the held-out rows of every
    candidate cell set cost more than the comparisons).

    :meth:`count` gives the same integers as the cell counts of :func:`_split_counts` summed over
    the region's cells: cell ``j`` is ``(e_{j-1}, e_j]``, so a value lies in the region iff the
    number of region boundaries below it (edges where the mask changes) has the parity that
    leaves cell 0's membership flipped or not. That number is counted by comparisons for up to
    :data:`REGION_COMPARE_MAX` boundaries, else by ``searchsorted`` among the boundaries (the
    rows are never sorted: a sort of the held-out rows cost ~4x a region's count on 1-D outputs
    at 500,000 per dataset, issue 37)."""

    def __init__(self, values: np.ndarray, prefix: int | None):
        self.values, self.prefix = values, prefix

    def count(self, edges: np.ndarray, mask: np.ndarray) -> tuple[int, int | None]:
        """(values in the region, values of the prefix in it); ``edges``: the cells' interior
        edges (shape (m - 1,), increasing), ``mask``: the region's cells (shape (m,), bool)."""
        bounds = edges[np.flatnonzero(mask[1:] != mask[:-1])]
        if len(bounds) <= REGION_COMPARE_MAX:
            below = np.zeros(len(self.values), dtype=bool)
            for b in bounds.tolist():
                below ^= self.values > b
        else:  # boundaries strictly below each value: searchsorted(side="left") counts b < x
            below = (np.searchsorted(bounds, self.values, side="left") & 1).astype(bool)
        inside = ~below if mask[0] else below
        pre = None if self.prefix is None else int(np.count_nonzero(inside[:self.prefix]))
        return int(np.count_nonzero(inside)), pre


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
    Returns a boolean mask over cells. (:func:`_region_candidates`, the argmax of
    :func:`~.region.projected_scores`, :func:`_region_mask`.)
    """
    k_in, k_out, layout = _region_candidates(a_tr, b_tr, target, ordered, family, interval_points)
    n_in, n_out = a_tr.sum(), b_tr.sum()
    values = projected_scores(k_in, max(n_in, 1), k_out, max(n_out, 1), n_ev_in, n_ev_out, target, beta_cp)
    return _region_mask(int(np.argmax(values)), layout, len(a_tr), ordered)


def _region_candidates(a_tr: np.ndarray, b_tr: np.ndarray, target: RegionTarget, ordered: int, family: str,
                       interval_points: int):
    """The candidate regions of :func:`_choose_region`: ``(k_in, k_out, layout)``, their choosing
    counts (shape (num_candidates,) each) in the order level sets, half-lines ``{x <= t}``, ``{x >
    t}``, intervals, pairs of tails, and what :func:`_region_mask` needs to rebuild a candidate's
    cells."""
    order = cut = lo = hi = np.zeros(0, dtype=int)
    k_in, k_out = [np.zeros(0)], [np.zeros(0)]
    if family == "level":
        n_in, n_out = a_tr.sum(), b_tr.sum()
        score = np.log((a_tr + 0.5) / max(n_in, 1)) - np.log((b_tr + 0.5) / max(n_out, 1))
        order = np.argsort(-score, kind="stable")
        s_sorted = score[order]
        cut = np.append(np.flatnonzero(s_sorted[1:] < s_sorted[:-1]) + 1, len(s_sorted))  # prefix lengths
        k_in, k_out = [np.cumsum(a_tr[order])[cut - 1]], [np.cumsum(b_tr[order])[cut - 1]]
    if family == "threshold" and ordered > 1:
        # {x <= t}: the first j ordered cells; {x > t}: ordered cells j.. (j = 1 .. ordered - 1)
        ca, cb = np.concatenate(([0], np.cumsum(a_tr[:ordered]))), np.concatenate(([0], np.cumsum(b_tr[:ordered])))
        lo_a, lo_b, tot_a, tot_b = ca[1:-1], cb[1:-1], ca[-1], cb[-1]
        k_in += [lo_a, tot_a - lo_a]
        k_out += [lo_b, tot_b - lo_b]
        if ordered > 2 and interval_points > 1 and target.kind == "margin":
            # {s < x <= t} and its complement, the two tails: with the half-lines, every upper
            # level set of a ratio that is monotone in |x - c| (a location-scale pair whose scale
            # differs, e.g. noise calibrated to a private n), ends on a grid of interval_points.
            lo, hi = _interval_ends(ordered, interval_points)
            mid_a, mid_b = ca[hi] - ca[lo], cb[hi] - cb[lo]
            k_in += [mid_a, tot_a - mid_a]
            k_out += [mid_b, tot_b - mid_b]
    return np.concatenate(k_in), np.concatenate(k_out), (order, cut, lo, hi)


@functools.lru_cache(maxsize=64)
def _interval_ends(ordered: int, interval_points: int) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)`` (shape (k,) each, read-only): the intervals ``{s < x <= t}`` of
    :func:`_region_candidates`, cells ``lo[i]:hi[i]``, both ends inside on a grid of
    ``interval_points`` of the ``ordered`` cells' boundaries (a function of the two sizes only,
    computed once for each)."""
    ends = np.unique(np.round(np.linspace(0, ordered, min(ordered, interval_points) + 1)).astype(int))
    lo, hi = np.triu_indices(len(ends), k=1)
    inner = (lo > 0) & (hi < len(ends) - 1)  # both ends inside: not a half-line
    lo, hi = ends[lo[inner]], ends[hi[inner]]
    lo.flags.writeable = hi.flags.writeable = False
    return lo, hi


def _region_mask(best: int, layout, num_cells: int, ordered: int) -> np.ndarray:
    """The cells (boolean mask, shape (num_cells,)) of candidate ``best`` of
    :func:`_region_candidates` (``layout``: its last item)."""
    order, cut, lo, hi = layout
    mask = np.zeros(num_cells, dtype=bool)
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
    arrays (``p_tr``/``q_tr`` None: the folds' counts summed; ``p_ev``/``q_ev`` None: no held-out
    counts); in binned mode they are sorted 1-D arrays, so each count costs
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
    if parts.get("p_tr") is None:  # (the folds' counts add up to the design half's, integers)
        f0, f1 = (count(parts["p_f0"]), count(parts["q_f0"])), (count(parts["p_f1"]), count(parts["q_f1"]))
        out = {"a_tr": f0[0] + f1[0], "b_tr": f0[1] + f1[1], "ordered": cells.ordered}
    else:
        f0 = f1 = None
        out = {"a_tr": count(parts["p_tr"]), "b_tr": count(parts["q_tr"]), "ordered": cells.ordered}
    if parts.get("p_ev") is not None:  # (absent: the held-out rows are counted in the chosen regions only)
        out["a_ev"], out["b_ev"] = count(parts["p_ev"]), count(parts["q_ev"])
    if parts.get("p_po") is not None and parts.get("q_po") is not None:  # the ratio test's Poissonised rows
        out["a_po"], out["b_po"] = count(parts["p_po"]), count(parts["q_po"])
    if folds:
        out["folds"] = (f0, f1) if f0 is not None else (
            (count(parts["p_f0"]), count(parts["q_f0"])), (count(parts["p_f1"]), count(parts["q_f1"])))
    return out


def _cross_validate_all(options, swap: bool, n_ev_in: int, n_ev_out: int, target: RegionTarget,
                        beta_cp: float) -> list[float]:
    """:func:`_cross_validate` of several options at once, the same numbers bit for bit.

    ``options``: a sequence of ``(folds, ordered, family)``. The regions are those
    :func:`_choose_region` picks fold by fold, all chosen in one pruned evaluation
    (:func:`~.region.projected_choices`: a round of blocks of every option and fold per call
    instead of ~2 calls per region); the validation folds' objectives, which share the sizes, the target and the level,
    are then computed in one vectorised call of the exact (unpruned) projection per pair of fold
    sizes instead of one call per region (issue 37: 128 small calls per test were a fifth of
    the selection's time). Returns one mean objective per option."""
    fits, problems = [], []  # the regions of every option and fold, chosen in one pruned evaluation
    for j, (folds, ordered, family) in enumerate(options):
        for (a_fit, b_fit), (a_val, b_val) in ((folds[0], folds[1]), (folds[1], folds[0])):
            if swap:
                a_fit, b_fit, a_val, b_val = b_fit, a_fit, b_val, a_val
            k_in, k_out, layout = _region_candidates(a_fit, b_fit, target, ordered, family, INTERVAL_POINTS_CV)
            problems.append((k_in, max(a_fit.sum(), 1), k_out, max(b_fit.sum(), 1)))
            fits.append((j, a_val, b_val, layout, len(a_fit), ordered))
    rows = []  # (option, k_in, n_fit_in, k_out, n_fit_out)
    for (j, a_val, b_val, layout, m, ordered), best in zip(fits, projected_choices(problems, n_ev_in, n_ev_out,
                                                                                     target, beta_cp)):
        mask = _region_mask(best, layout, m, ordered)
        rows.append((j, a_val[mask].sum(), max(a_val.sum(), 1), b_val[mask].sum(), max(b_val.sum(), 1)))
    values = [0.0] * len(rows)
    groups: dict = {}
    for r, (_, _, n_fit_in, _, n_fit_out) in enumerate(rows):
        groups.setdefault((int(n_fit_in), int(n_fit_out)), []).append(r)
    for (n_fit_in, n_fit_out), members in groups.items():
        k_in = np.array([float(rows[r][1]) for r in members])
        k_out = np.array([float(rows[r][3]) for r in members])
        v = _projected_scores_all(k_in, n_fit_in, k_out, n_fit_out, n_ev_in, n_ev_out, target, beta_cp)
        for r, x in zip(members, np.asarray(v, dtype=float).tolist()):
            values[r] = x
    totals = [0.0] * len(options)
    for r, (j, *_) in enumerate(rows):
        totals[j] += values[r]
    return [t / 2.0 for t in totals]


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
