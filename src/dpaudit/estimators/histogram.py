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

The histogram bounds of two samples of scores (paper 001) live in
:mod:`dpaudit.estimators.histogram_scores`. This module is the estimator of mechanism outputs;
its result types and tolerances are in :mod:`dpaudit.estimators.histogram_bound`, its cells and
regions in :mod:`dpaudit.estimators.histogram_cells`. Every name of those three is importable
from here as before.
"""

from __future__ import annotations

import math
import time
from typing import Callable

import numpy as np

from .._validate import as_rng, check_epsilon, check_int, check_probability
from ._projection import PROJECTION_HEAD, informative_columns
from .base import NotApplicable, check_sample_pair, profile_targets
from .histogram_bound import HistogramBound, HistogramEvidence, _deviations, histogram_delta
from .histogram_cells import (  # noqa: F401  (BORDERLINE and the region helpers: importable from here)
    BORDERLINE,
    INTERVAL_POINTS,
    INTERVAL_POINTS_CV,
    VERDICT_SHARE,
    _binned_cells,
    _Cells,
    _choose_region,
    _cross_validate_all,
    _describe_region,
    _discrete_cells,
    _HeldOut,
    _distinct_rows,
    _merge_sorted,
    _quantile_levels,
    _row_keys,
    _split_counts,
    _SPLIT_BIN_COUNTS,
    verdict_share,
)
from .histogram_scores import (  # noqa: F401  (re-exported: the scores' histogram bounds)
    METHODS,
    Bins,
    histogram_audit,
    histogram_hockey_stick,
    make_bins,
    scott_bin_width,
)
from .region import (
    DIRECTION_SPLITS,
    RegionTarget,
    best_case_margin,
    epsilon_direction_split,
    poisson_rows,
    predicted_rejection,
    prefers_ratio,
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

SPLIT_DESIGN = -1.0  # the "split" tolerance's default design rule (HistogramHockeyStick._design_size)

PRESORT = True
"""1-D ``"split"`` estimates sort each training fold once (the design for the quantile edges is
merged from the sorted folds, :func:`~.histogram_cells._merge_sorted`; the design halves' counts
are their folds' sums) and count the held-out rows only in the chosen regions
(:class:`~.histogram_cells._HeldOut`) instead of sorting every part from scratch; the counts,
regions and bounds are the same (``False``: the former computation, kept for the test that
compares the two)."""

FEW_VALUES_DESIGN = 200_000
"""Design rows per sample, under the ``"split"`` default rule, for outputs with at most
:data:`FEW_VALUES` distinct values, each seen at least :data:`FEW_VALUES_MIN_COUNT` times in the
first ``FEW_VALUES_DESIGN`` design rows of the two samples together, when the rule would give
more: a few heavy cells need few rows to choose a region (their ratios are known to 1-2 % from
them), and every row kept for the bound tightens it. Rare cells (answer patterns of sparse
vector, say) keep the larger design: their ratios need it."""
FEW_VALUES = 64
FEW_VALUES_MIN_COUNT = 10_000


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
        by the cross-validated objective of :func:`_cross_validate_all` when there are several,
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
            scores = _cross_validate_all([(counts[i]["folds"], counts[i].get("ordered", 0), f) for i, f in options],
                                         swap, n_in, n_out, target, beta / 4)
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

    def _make_cells(self, design: np.ndarray, dim: int, ordered: np.ndarray | None = None) -> list[_Cells]:
        """Candidate cells, from the configuration and the design samples only (one candidate
        except for ``"split"`` binning without ``bins``: several bin counts). ``ordered``: for
        1-D outputs, the design values already sorted (shape (n,)), so they are not sorted again."""
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
        if ordered is not None:  # 1-D and sorted: the distinct values are the starts of runs
            distinct = ordered[np.r_[True, ordered[1:] != ordered[:-1]]].reshape(-1, 1)
        else:
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
            ordered = np.sort(design[:, 0]) if ordered is None else ordered
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
            # (np.take: the rows of p[perm_p], ~3x faster than fancy indexing on (n, 1) arrays)
            p, q = np.take(p, perm_p, axis=0), np.take(q, perm_q, axis=0)
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
        hp, hq = len(p_tr) // 2, len(q_tr) // 2
        presorted = None
        if (PRESORT and self.tolerance == "split" and p.shape[1] == 1 and self.categories is None
                and self.value_range is None and self.mode != "discrete"):
            # 1-D outputs: each fold sorted once, the whole design merged from them (linear on
            # sorted runs) instead of sorted again; the design halves' cell counts are the sums
            # of their folds' (issue 37)
            presorted = {"p_f0": np.sort(p_tr[:hp, 0]), "p_f1": np.sort(p_tr[hp:, 0]),
                         "q_f0": np.sort(q_tr[:hq, 0]), "q_f1": np.sort(q_tr[hq:, 0])}
        candidates = self._make_cells(
            np.concatenate([p_tr, q_tr], axis=0), p.shape[1],
            None if presorted is None else _merge_sorted(*(presorted[k] for k in ("p_f0", "p_f1", "q_f0", "q_f1"))),
        )
        n_train = n_d_p + n_d_q
        n_ev_p, n_ev_q = len(p_ev), len(q_ev)

        if self.tolerance == "split":
            # "both" may give the verdict region only VERDICT_SHARE of a direction's share
            split_beta = beta * VERDICT_SHARE if self.objective == "both" else beta
            needed = self._needed_samples(len(p), len(q), None, None, 0, split_beta, eps_grid, allowed)
            vacuous = needed is not None
            parts = {"p_tr": p_tr, "q_tr": q_tr, "p_ev": p_ev, "q_ev": q_ev,
                     "p_f0": p_tr[:hp], "p_f1": p_tr[hp:], "q_f0": q_tr[:hq], "q_f1": q_tr[hq:]}
            poisson = None
            if self.ratio_test:  # the ratio test's rows: the first N ~ Poisson(lam) held-out ones
                poisson = poisson_rows(n_ev_p, n_ev_q, rng)
                big_p, _, big_q, _ = poisson
                parts["p_po"], parts["q_po"] = (None, None) if big_p is None else (p_ev[:big_p], q_ev[:big_q])
            held = None
            if candidates[0].mode == "binned" and presorted is not None:
                # the held-out rows are counted only in the chosen regions, after the choice
                # (_HeldOut: a few comparisons per row for regions with few boundaries), not sorted
                big_p, big_q = (poisson[0], poisson[2]) if poisson else (None, None)
                held = {"p": _HeldOut(p_ev[:, 0], big_p), "q": _HeldOut(q_ev[:, 0], big_q)}
                parts = {k: presorted.get(k) for k in parts if k not in ("p_ev", "q_ev", "p_po", "q_po")}
            elif candidates[0].mode == "binned":
                parts = {k: None if v is None else np.sort(v[:, 0]) for k, v in parts.items()}
            counts = [_split_counts(c, parts, folds=True) for c in candidates]
            regions = self._choose(counts, n_ev_p, n_ev_q, eps_grid, allowed, beta, delta)
            bounds = []
            for label, direction, swap, pick, mask, n_in, n_out, b, use_ratio in regions:
                cells, c = candidates[pick], counts[pick]
                if held is not None:
                    (k_in, k_in_po), (k_out, k_out_po) = (held["q" if swap else "p"].count(cells.edges, mask),
                                                          held["p" if swap else "q"].count(cells.edges, mask))
                else:
                    in_ev, out_ev = (c["b_ev"], c["a_ev"]) if swap else (c["a_ev"], c["b_ev"])
                    k_in, k_out = int(in_ev[mask].sum()), int(out_ev[mask].sum())
                ratio = None
                if use_ratio and poisson is not None:
                    big_p, lam_p, _, lam_q = poisson
                    lam_in, lam_out = (lam_q, lam_p) if swap else (lam_p, lam_q)
                    if big_p is not None and held is not None:
                        ratio = (k_in_po, lam_in, k_out_po, lam_out)
                    elif big_p is not None:
                        in_po, out_po = (c["b_po"], c["a_po"]) if swap else (c["a_po"], c["b_po"])
                        ratio = (int(in_po[mask].sum()), lam_in, int(out_po[mask].sum()), lam_out)
                    else:
                        ratio = (None, lam_in, None, lam_out)
                bounds.append(HistogramBound.certify(
                    k_in, n_in, k_out, n_out, poisson=ratio,
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
