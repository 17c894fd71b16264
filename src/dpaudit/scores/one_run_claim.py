"""One-run audits against the *claimed* mechanism: the f-DP test with the claim's own trade-off
function, a nested family of such claims, and guesses chosen from the claim before looking.

:func:`dpaudit.scores.one_run_audit` certifies an epsilon lower bound that holds for *any*
mechanism (the claim ``f_{eps, delta}``) and a lower bound on the parameter of any Gaussian-DP
guarantee. An accountant claims more than ``(eps, delta)``: it claims a whole trade-off function
``f`` (for DP-SGD, that of the Poisson-subsampled Gaussian composed over the steps). This module
tests that claim itself, and the claims of a *family* ``{f_s}`` around it, in one run:

* **The test** is Mahloujifar, Melis, Chaudhuri (2025)'s one-run f-DP test
  (:func:`~dpaudit.scores.one_run.fdp_rejects`), fed ``h_s*(r) = inf{h : f_s(h) <= 1 - r}`` of the
  claimed ``f_s`` instead of ``f_{eps, delta}``'s. Anything that lower-bounds ``f_s`` pointwise
  (a weaker claim) keeps it valid: :func:`profile_inverse_tradeoff` builds such a lower bound from
  an *upper* bound on the claim's privacy profile ``delta(eps)`` (a pessimistic PLD).
* **The family.** ``f_s`` increases with the parameter ``s`` (for DP-SGD, the noise multiplier:
  more noise, a stronger claim). A mechanism that is ``f_s``-DP is ``f_{s'}``-DP for every
  ``s' < s``. The audit refutes every ``s >= s_ub`` and reports ``epsilon(s_ub)``: **no claim of the
  family with parameter >= s_ub holds, so any accountant of the claimed form must report epsilon
  >= epsilon(s_ub)**. Coverage: if the mechanism is ``f_{s*}``-DP, the report exceeds
  ``epsilon(s*)`` only if some ``s <= s*`` was refuted; every lower bound ``f'_s <= f_s <= f_{s*}``
  gives a smaller ``h*``, and the f-DP test refutes nothing a larger ``h*`` does not refute too
  (its rejection is the infeasibility of a set of constraints ``H_{j-1} >= h*(R_j)``, which a
  larger ``h*`` only tightens), so that event implies the refutation of ``f_{s*}`` itself at the
  same guesses and level: probability ``<= beta`` (Bonferroni over the guessing rules).
  This bound is about the family, not about the mechanism's own ``(eps, delta)``: a mechanism
  outside the family (say one whose trade-off curve is ``f_{eps, delta}`` itself) can be refuted
  at an ``s`` whose epsilon exceeds its own. It is the right yardstick for "does the run keep its
  accountant's claim", and ``dpaudit`` labels it so; the any-mechanism bound stays next to it.
* **The guesses, from the claim.** The bound depends on which ``(k+, k-)`` guesses are judged,
  and paying for a grid of them by Bonferroni shrinks every level. The claim says what a correct
  run's scores look like, so :func:`choose_cell` simulates the claimed mechanism (a function of
  the claim, the number of canaries and a fixed seed: nothing from the run) and picks the rule
  with the best bound there. That rule then gets most of ``beta`` (:data:`CLAIM_CELL_WEIGHT`),
  the usual grid the rest, all fixed before looking.

Why a one-run bound cannot reach the accountant (measured in ``docs/scores.md`` §6d): a
mechanism that with probability ``tau`` (a public coin) runs a leakier mechanism ``L`` and
otherwise releases nothing is ``f``-DP as soon as ``tau (1 - f_L(a)) <= 1 - f(tau a)``; a test at
level ``beta`` cannot refute it when ``tau`` is a little above ``beta``, so at each threshold the
certifiable point is the claim's curve read at ``(tau FPR, tau TPR)`` rather than ``(FPR, TPR)``.
For the curved (Gaussian-like) trade-off functions of DP-SGD that costs a constant fraction of
epsilon, shrinking only as ``sqrt(ln(1/FPR) / ln(1/(tau FPR)))`` with the number of canaries.

References: Mahloujifar, Melis, Chaudhuri (2025), *Auditing f-differential privacy in one run*,
ICML; Dong, Roth, Su (2022), Prop. 2.12 (a trade-off function from a privacy profile); Steinke,
Nasr, Jagielski (2023) (the one-run setting).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np

from .one_run import _guess_counts, fdp_population, fdp_rejects, gdp_inverse_tradeoff

__all__ = [
    "CLAIM_CELL_WEIGHT",
    "ClaimBound",
    "GaussianDPFamily",
    "OneRunClaim",
    "ProfileFamily",
    "TradeoffFamily",
    "FINALISTS",
    "SCREEN_RUNS",
    "choose_cell",
    "claim_bound",
    "max_inverse_tradeoff",
    "profile_inverse_tradeoff",
]

#: Share of ``beta`` that the rule chosen from the claim (:func:`choose_cell`) gets; the usual
#: grid (:func:`~dpaudit.scores.one_run.guess_grid`) shares the rest.
CLAIM_CELL_WEIGHT = 0.8


# --------------------------------------------------------------------------- trade-off functions


def _upper_envelope(slopes: np.ndarray, intercepts: np.ndarray):
    """The upper envelope of the lines ``y = a x + b`` on ``x >= 0``: ``(breaks, a, b)`` with
    ``breaks[i]`` the ``x`` where line ``i`` takes over (``breaks[0] = 0``). Lines sorted by slope;
    the classic convex-hull construction, exact up to floating-point rounding of the crossings
    (which moves a break, never the maximum by more than one rounding of ``a x + b``)."""
    order = np.lexsort((intercepts, slopes))
    a_s, b_s = slopes[order], intercepts[order]
    hull_a: list = []
    hull_b: list = []
    starts: list = []
    for a, b in zip(a_s.tolist(), b_s.tolist()):
        if hull_a and a == hull_a[-1]:  # same slope, larger (or equal) intercept: replaces it
            hull_a.pop(), hull_b.pop(), starts.pop()
        while hull_a:
            x = (hull_b[-1] - b) / (a - hull_a[-1])  # where the new line overtakes the last one
            if x <= starts[-1]:
                hull_a.pop(), hull_b.pop(), starts.pop()
                continue
            starts.append(x)
            break
        else:
            starts.append(0.0)
        hull_a.append(a)
        hull_b.append(b)
    return starts, hull_a, hull_b


def profile_inverse_tradeoff(epsilons, deltas) -> Callable[[float], float]:
    """``h*(r) = inf{h : f(h) <= 1 - r}`` for the trade-off function of a privacy profile.

    A mechanism that is ``(eps_j, delta_j)``-DP for every ``j`` (both neighbouring directions) is
    ``f``-DP with ``f = sup_j f_{eps_j, delta_j}`` (Dong, Roth, Su 2022, Prop. 2.12), and
    ``inf{h : sup_j f_j(h) <= 1 - r} = max_j inf{h : f_j(h) <= 1 - r}`` (each ``f_j`` decreases), so

        h*(r) = max(0, max_j (r - delta_j) e^{-eps_j}, max_j 1 - delta_j - e^{eps_j} (1 - r)),

    the upper envelope of ``2 J + 1`` lines in ``r``, evaluated exactly by binary search on its
    breakpoints. Given *upper* bounds on the profile at finitely many ``eps`` this is a *lower*
    bound on the true ``h*`` (a weaker claim), the safe side for :func:`fdp_rejects`.

    Parameters
    ----------
    epsilons : array, shape (J,)
        Epsilons ``>= 0`` (nats).
    deltas : array, shape (J,)
        ``delta(eps_j)`` upper bounds in ``[0, 1]`` (``nan`` is read as 1: no statement).

    Returns
    -------
    callable
        ``r -> h*(r)`` for ``r`` in ``[0, 1]``.

    Raises
    ------
    ValueError
        On shapes that differ, a negative or non-finite epsilon, or a delta outside ``[0, 1]``.
    """
    e = np.asarray(epsilons, dtype=float).ravel()
    d = np.asarray(deltas, dtype=float).ravel()
    if e.shape != d.shape or e.size == 0:
        raise ValueError(f"epsilons and deltas must be non-empty and of one shape, got {e.shape} and {d.shape}")
    if np.any(~np.isfinite(e)) or np.any(e < 0):
        raise ValueError("epsilons must be finite and >= 0")
    d = np.where(np.isnan(d), 1.0, d)
    if np.any(d < 0) or np.any(d > 1):
        raise ValueError("deltas must lie in [0, 1]")
    keep = d < 1.0
    e, d = e[keep], d[keep]
    en, ep = np.exp(-e), np.exp(np.minimum(e, 700.0))
    slopes = np.concatenate([[0.0], en, ep])
    intercepts = np.concatenate([[0.0], -d * en, 1.0 - d - ep])
    starts, ha, hb = _upper_envelope(slopes, intercepts)

    def inverse(r: float) -> float:
        r = min(max(float(r), 0.0), 1.0)
        i = bisect.bisect_right(starts, r) - 1
        return max(0.0, ha[i] * r + hb[i])

    return inverse


def max_inverse_tradeoff(*inverses: Callable[[float], float]) -> Callable[[float], float]:
    """``r -> max_i h_i*(r)``: the inverse of ``max_i f_i``, the claim that all of ``f_i`` hold
    (e.g. an accountant's trade-off function and its certified ``(eps, delta)`` statement).

    Raises
    ------
    ValueError
        If no inverse trade-off function is given.
    """
    if not inverses:
        raise ValueError("need at least one inverse trade-off function")
    return lambda r: max(h(r) for h in inverses)


class TradeoffFamily:
    """A nested family of claimed trade-off functions ``f_s``, ``s > 0``, ``f_s`` non-decreasing in
    ``s`` (a larger ``s``: a stronger claim).

    Subclasses give :meth:`inverse_tradeoff` (a pointwise *lower* bound on ``f_s``'s inverse
    ``h_s*``, the safe side) and :meth:`epsilon` (a *lower* estimate of ``f_s``'s epsilon at a
    delta, the safe side for a reported lower bound), and :attr:`parameter` names ``s``.
    """

    parameter = "s"

    def inverse_tradeoff(self, s: float) -> Callable[[float], float]:  # pragma: no cover - interface
        """``h_s*`` (or a pointwise lower bound on it)."""
        raise NotImplementedError

    def epsilon(self, s: float, delta: float) -> float:  # pragma: no cover - interface
        """Epsilon of ``f_s`` at ``delta`` (or a lower estimate of it)."""
        raise NotImplementedError


class GaussianDPFamily(TradeoffFamily):
    """``f_s = G_{scale / s}``: Gaussian DP with ``mu = scale / s`` (Dong, Roth, Su 2022, Def. 2.6).

    DP-SGD with every example in every step (``q = 1``) for ``T`` steps at noise multiplier ``s``
    is exactly ``sqrt(T) / s``-GDP: ``scale = sqrt(T)``.

    Parameters
    ----------
    scale : float
        ``> 0``.
    """

    parameter = "noise multiplier"

    def __init__(self, scale: float):
        scale = float(scale)
        if not (scale > 0 and math.isfinite(scale)):
            raise ValueError(f"scale must be a positive number, got {scale!r}")
        self.scale = scale

    def mu(self, s: float) -> float:
        """``scale / s``."""
        return self.scale / float(s)

    def inverse_tradeoff(self, s: float) -> Callable[[float], float]:
        """``h*(r) = Phi(Phi^{-1}(r) - mu)`` (exact)."""
        return gdp_inverse_tradeoff(self.mu(s))

    def epsilon(self, s: float, delta: float) -> float:
        """Exact epsilon of ``mu``-GDP at ``delta`` (Balle and Wang 2018, Thm 8)."""
        from ..privacy.profiles import gaussian_epsilon

        return float(gaussian_epsilon(delta, self.mu(s)))


class ProfileFamily(TradeoffFamily):
    """A family given by privacy-profile upper bounds: ``profile(s, epsilons) -> deltas``.

    :meth:`inverse_tradeoff` is :func:`profile_inverse_tradeoff` of those bounds on
    :attr:`epsilons`; :meth:`epsilon` is ``epsilon_fn(s, delta)`` (a lower estimate). Both are
    cached per ``s``.

    Parameters
    ----------
    profile : callable
        ``(s, epsilons array) -> deltas array``, upper bounds on the claim's ``delta(eps)``, the
        larger of the two neighbouring directions.
    epsilon_fn : callable
        ``(s, delta) -> epsilon``, a lower estimate of the claim's epsilon.
    epsilons : array, optional
        The epsilon grid of the profile (default 0 to 30 nats in steps of 0.01).
    parameter : str
        What ``s`` is called.
    """

    def __init__(self, profile: Callable, epsilon_fn: Callable, *, epsilons=None, parameter: str = "s"):
        self._profile = profile
        self._epsilon_fn = epsilon_fn
        self.epsilons = np.linspace(0.0, 30.0, 3001) if epsilons is None else np.asarray(epsilons, dtype=float)
        self.parameter = parameter
        self._inv: dict = {}
        self._eps: dict = {}

    def inverse_tradeoff(self, s: float) -> Callable[[float], float]:
        s = float(s)
        if s not in self._inv:
            self._inv[s] = profile_inverse_tradeoff(self.epsilons, self._profile(s, self.epsilons))
        return self._inv[s]

    def epsilon(self, s: float, delta: float) -> float:
        key = (float(s), float(delta))
        if key not in self._eps:
            self._eps[key] = float(self._epsilon_fn(*key))
        return self._eps[key]


# --------------------------------------------------------------------------- the family test


@dataclass(frozen=True)
class ClaimBound:
    """What one run refutes in a family of claims (:func:`claim_bound`).

    Attributes
    ----------
    epsilon_lower_bound : float
        ``epsilon(parameter_bound)`` at ``delta`` (a lower estimate of it): any accountant of the
        family's form must report at least this (probability ``>= 1 - beta``). 0 when nothing in
        the searched range is refuted.
    parameter_bound : float
        ``s_ub``: every claim ``f_s`` with ``s >= s_ub`` is refuted (``inf`` when none is).
    claim_refuted : bool
        Whether the claim itself (``s = s_claim``) is refuted: the verdict.
    at_range_end : bool
        The search reached its least-private end: the bound is at least this (a gross leak).
    cell : tuple or None
        The guessing rule ``(k_plus, k_minus)`` that gave the bound, with its ``guesses``,
        ``correct`` and ``level``.
    """

    epsilon_lower_bound: float
    parameter_bound: float
    claim_refuted: bool
    at_range_end: bool
    cell: Optional[tuple]
    guesses: int = 0
    correct: int = 0
    level: float = 0.0


#: Grid of the family parameter: ``s_j = s_claim * PARAMETER_RATIO**j`` (1 % steps: the reported
#: epsilon is rounded down by at most about one step).
PARAMETER_RATIO = 1.01
#: The search spans ``s_claim / 64 .. 16 s_claim`` (claims far less and far more private).
PARAMETER_SPAN = (1.0 / 64.0, 16.0)
#: The coarse lattice (every ``LATTICE_STEP``-th grid point, 8 % steps) on which every search
#: starts, from the claim outwards, so that the trade-off functions it needs are shared by all
#: rules, runs and simulations of one claim; :func:`claim_bound` then refines to the grid.
LATTICE_STEP = 8


class _Grid:
    """The parameter grid ``s_j = s_claim * PARAMETER_RATIO**j`` and each point's ``h*`` (cached)."""

    def __init__(self, family: TradeoffFamily, s_claim: float, claim_inverse=None):
        self.family, self.s_claim, self.claim_inverse = family, float(s_claim), claim_inverse
        lr = math.log(PARAMETER_RATIO)
        self.lo = int(math.floor(math.log(PARAMETER_SPAN[0]) / lr))
        self.hi = int(math.ceil(math.log(PARAMETER_SPAN[1]) / lr))
        self._inv: dict = {}

    def s(self, j: int) -> float:
        return self.s_claim * PARAMETER_RATIO ** j

    def inverse(self, j: int):
        if j not in self._inv:
            if j == 0 and self.claim_inverse is not None:
                self._inv[j] = self.claim_inverse
            else:
                self._inv[j] = self.family.inverse_tradeoff(self.s(j))
        return self._inv[j]

    def smallest_refuted(self, m: float, k: int, v: int, level: float, top: int, step: int = LATTICE_STEP):
        """Smallest ``j <= top`` on the lattice ``step * Z`` (within the span) whose claim the rule
        refutes, or ``None``: galloping from ``j = 0`` (the claim) outwards, then bisection.
        Refutation is taken to grow with ``j``; only refuted points are ever returned, so a
        numerical non-monotonicity can cost tightness, not validity. ``m``: the f-DP test's
        population (:func:`~dpaudit.scores.one_run.fdp_population`)."""
        rej = lambda j: fdp_rejects(self.inverse(j), m, k, v, level)  # noqa: E731
        lo_lim = -((-self.lo) // step) * step  # first lattice point >= self.lo
        hi_lim = (min(top, self.hi) // step) * step
        if hi_lim < lo_lim:
            return None
        start = min(max(0, lo_lim), hi_lim)
        if rej(start):
            hi, d = start, step
            while True:  # gallop down: hi refuted
                if hi == lo_lim:
                    return hi
                lo = max(hi - d, lo_lim)
                if not rej(lo):
                    break
                hi, d = lo, 2 * d
        else:
            lo, d = start, step
            while True:  # gallop up: lo not refuted
                if lo == hi_lim:
                    return None
                hi = min(lo + d, hi_lim)
                if rej(hi):
                    break
                lo, d = hi, 2 * d
        while hi - lo > step:  # lo not refuted, hi refuted
            mid = lo + ((hi - lo) // (2 * step)) * step
            if rej(mid):
                hi = mid
            else:
                lo = mid
        return hi

    def refine(self, m: float, k: int, v: int, level: float, j: int, step: int = LATTICE_STEP) -> int:
        """The smallest refuted grid point in ``(j - step, j]`` given that ``j`` is refuted and
        ``j - step`` is not (or is outside the span): bisection on the grid."""
        lo, hi = max(j - step, self.lo - 1), j
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if fdp_rejects(self.inverse(mid), m, k, v, level):
                hi = mid
            else:
                lo = mid
        return hi


def claim_bound(mask_sorted, cells, levels, family: TradeoffFamily, s_claim: float, *, delta: float,
                claim_inverse: Optional[Callable[[float], float]] = None, grid: Optional[_Grid] = None) -> ClaimBound:
    """The smallest refuted parameter of a family of claims, over guessing rules fixed in advance.

    For each rule ``(k+, k-)`` (counts from the scores' order, :func:`~dpaudit.scores.one_run.
    guess_grid`'s encoding) at its level, :func:`~dpaudit.scores.one_run.fdp_rejects` with
    ``family.inverse_tradeoff(s)`` refutes ``f_s``; the parameter is searched on the grid
    ``s_j = s_claim * PARAMETER_RATIO^j`` (:data:`PARAMETER_SPAN` around the claim) by bisection
    (refutation grows with ``s``; a non-monotone numerical approximation cannot make the report
    unsound, see the module docstring: only refuted grid points are reported). The verdict,
    ``f_{s_claim}`` refuted, uses ``claim_inverse`` when given (e.g. the claim's ``h*`` together
    with its accountant's certified ``(eps, delta)``, :func:`max_inverse_tradeoff`; any valid
    lower bound on the claim's ``h*`` may be given).

    Parameters
    ----------
    mask_sorted : array of bool, shape (m,)
        The inclusion mask of the canaries sorted by increasing score.
    cells : sequence of (int, int)
        Guessing rules, fixed before looking.
    levels : sequence of float
        Their levels (summing to the overall ``beta``).
    family : TradeoffFamily
    s_claim : float
        The claimed parameter (``> 0``).
    delta : float
        Delta of the reported epsilon.
    claim_inverse : callable, optional
        ``h*`` used at ``s = s_claim`` (default the family's).
    grid : optional
        A grid already built for this family and claim (its cached ``h*`` are reused).

    Returns
    -------
    ClaimBound

    Raises
    ------
    ValueError
        On a non-positive ``s_claim`` or cells and levels of different lengths.
    """
    s_claim = float(s_claim)
    if not (s_claim > 0 and math.isfinite(s_claim)):
        raise ValueError(f"s_claim must be a positive number, got {s_claim!r}")
    cells, levels = list(cells), [float(x) for x in levels]
    if len(cells) != len(levels):
        raise ValueError(f"{len(cells)} cells but {len(levels)} levels")
    g = grid if grid is not None else _Grid(family, s_claim, claim_inverse)
    ms = np.asarray(mask_sorted, dtype=bool)
    m = ms.size
    counts = []
    for cell, lvl in zip(cells, levels):
        k, v = _guess_counts(ms, cell)
        if k > 0 and 2 * v > k and lvl > 0:
            counts.append((cell, lvl, k, v))
    counts.sort(key=lambda t: -(t[3] / t[2]))  # most precise first: later ones are often ruled out at once
    best_j, best = g.hi + 1, None  # smallest refuted index so far (none yet)
    for cell, lvl, k, v in counts:
        mp = fdp_population(m, cell)
        j = g.smallest_refuted(mp, k, v, lvl, best_j - 1)
        if j is not None:
            best_j, best = j, (cell, k, v, lvl)
    if best is not None:  # from the lattice to the grid, for the rule that won
        best_j = g.refine(fdp_population(m, best[0]), best[1], best[2], best[3], best_j)
    if best is None:
        return ClaimBound(0.0, math.inf, False, False, None)
    s_ub = g.s(best_j)
    eps = family.epsilon(s_ub, delta)
    cell, k, v, lvl = best
    return ClaimBound(float(eps), float(s_ub), bool(best_j <= 0), bool(best_j <= g.lo), tuple(cell), int(k), int(v),
                      float(lvl))


#: :func:`choose_cell` screens every candidate on the first :data:`SCREEN_RUNS` simulated runs
#: (on the coarse lattice), then judges the :data:`FINALISTS` best on all of them on the 1 % grid.
SCREEN_RUNS = 6
FINALISTS = 6


def choose_cell(simulated_masks: Sequence[np.ndarray], cells, family: TradeoffFamily, s_claim: float, *,
                level: float, delta: float, grid: Optional[_Grid] = None, screen: int = SCREEN_RUNS,
                finalists: int = FINALISTS) -> tuple:
    """The guessing rule with the best expected family bound on simulations of the claimed mechanism.

    Two stages, both on simulated runs only. *Screen*: every rule is judged on the first
    ``screen`` simulated runs (its own number of correct guesses on each) by the smallest refuted
    point of :func:`claim_bound`'s coarse lattice (:data:`LATTICE_STEP`), averaged over the runs.
    *Final*: the ``finalists`` best rules of the screen are judged on *every* simulated run by the
    smallest refuted point of the 1 % grid (the lattice refined), averaged; the best mean wins
    (ties: the screen's order). The mean over simulated runs, not the bound at the mean count, is
    what a rule of few guesses is judged by: the precision of the top few scores varies from run
    to run far more than a binomial count would (at ``q < 1`` the top of the likelihood-ratio
    scores is a handful of canaries sampled in unusually many steps); the final stage's many runs
    and fine grid separate rules whose bounds differ by a few percent, which a handful of runs on
    an 8 % lattice cannot. Nothing from the audited run enters, so the choice is fixed before
    looking and costs no confidence.

    Parameters
    ----------
    simulated_masks : sequence of arrays of bool, shape (m,) each
        Inclusion masks of simulated runs of the claimed mechanism, each sorted by its scores.
    cells : sequence of (int, int)
        Candidate rules.
    family, s_claim, delta :
        As for :func:`claim_bound`.
    level : float
        The level the chosen rule will be judged at.
    grid : optional
        As for :func:`claim_bound`.
    screen : int
        Simulated runs of the screen (``>= 1``; all of them when fewer).
    finalists : int
        Rules judged in the final stage (``>= 1``).

    Returns
    -------
    tuple (int, int)
        The chosen rule (the first candidate when none gives a positive bound).

    Raises
    ------
    ValueError
        On no simulated run, runs of different sizes, no candidate, or ``screen`` or
        ``finalists`` below 1.
    """
    sims = [np.asarray(s, dtype=bool) for s in simulated_masks]
    if not sims or len({s.size for s in sims}) != 1:
        raise ValueError("need at least one simulated run, all with the same number of canaries")
    cells = [tuple(c) for c in cells]
    if not cells:
        raise ValueError("need at least one candidate rule")
    if int(screen) < 1 or int(finalists) < 1:
        raise ValueError(f"screen and finalists must be >= 1, got {screen!r} and {finalists!r}")
    g = grid if grid is not None else _Grid(family, s_claim)
    m = sims[0].size

    def index(cell, sim, fine: bool) -> float:
        k, v = _guess_counts(sim, cell)
        if not (k and 2 * v > k):
            return g.hi + LATTICE_STEP  # refutes nothing: one lattice step past the span
        mp = fdp_population(m, cell)
        j = g.smallest_refuted(mp, k, v, level, g.hi)
        if j is None:
            return g.hi + LATTICE_STEP
        return g.refine(mp, k, v, level, j) if fine else j

    screened = [(float(np.mean([index(c, sim, False) for sim in sims[:int(screen)]])), i) for i, c in enumerate(cells)]
    screened.sort()
    best_score, best_cell = math.inf, cells[screened[0][1]]
    for _, i in screened[:int(finalists)]:
        score = float(np.mean([index(cells[i], sim, True) for sim in sims]))
        if score < best_score:
            best_score, best_cell = score, cells[i]
    return best_cell


class OneRunClaim:
    """A claimed family of trade-off functions for :func:`~dpaudit.scores.one_run_audit`
    (``claim=``): the family, the claimed parameter, and optionally a simulator of the claimed
    mechanism's scores (to choose the guessing rule before looking).

    Parameters
    ----------
    family : TradeoffFamily
    parameter : float
        The claimed ``s`` (``> 0``).
    simulate : callable, optional
        ``(rng) -> (scores, mask)`` of one simulated run of the claimed mechanism with the audited
        run's number of canaries and score function (scores oriented as the audited ones). Without
        it the rules are the plain grid's.
    claim_inverse : callable, optional
        ``h*`` used for the verdict at ``s = parameter`` (default the family's; e.g. with the
        accountant's certified ``(eps, delta)`` added by :func:`max_inverse_tradeoff`).
    replicates : int
        Simulated runs averaged by :func:`choose_cell`.
    seed : int
        Seed of the simulations (fixed: the choice is a function of the claim alone).
    weight : float
        Share of ``beta`` of the chosen rule, in (0, 1] (:data:`CLAIM_CELL_WEIGHT`).
    chooser : callable, optional
        ``(m, candidates, level, delta) -> rule``, replacing the simulation (e.g. a cached choice).

    Raises
    ------
    ValueError
        On a parameter that is not positive, ``replicates < 1`` or a weight outside (0, 1].
    """

    def __init__(self, family: TradeoffFamily, parameter: float, *, simulate=None, claim_inverse=None,
                 replicates: int = 4, seed: int = 0, weight: float = CLAIM_CELL_WEIGHT, chooser=None):
        parameter = float(parameter)
        if not (parameter > 0 and math.isfinite(parameter)):
            raise ValueError(f"parameter must be a positive number, got {parameter!r}")
        if int(replicates) < 1:
            raise ValueError(f"replicates must be >= 1, got {replicates!r}")
        if not 0 < float(weight) <= 1:
            raise ValueError(f"weight must be in (0, 1], got {weight!r}")
        self.family, self.parameter = family, parameter
        self.simulate, self.claim_inverse, self.chooser = simulate, claim_inverse, chooser
        self.replicates, self.seed, self.weight = int(replicates), int(seed), float(weight)
        self._grid = _Grid(family, parameter, claim_inverse)
        self._sim_grid = _Grid(family, parameter)

    def choose(self, m: int, candidates, level: float, delta: float):
        """The rule for ``m`` canaries (:func:`choose_cell` on :attr:`replicates` simulated runs), or
        ``None`` without a simulator."""
        if self.chooser is not None:
            return self.chooser(m, candidates, level, delta)
        if self.simulate is None:
            return None
        return choose_cell(self.simulated_masks(m), candidates, self.family, self.parameter, level=level,
                           delta=delta, grid=self._sim_grid)

    def simulated_masks(self, m: int) -> list:
        """The simulated runs' masks, each sorted by its scores (ties at random)."""
        out = []
        for r in range(self.replicates):
            rng = np.random.default_rng([self.seed, r])
            scores, mask = self.simulate(rng)
            scores, mask = np.asarray(scores, dtype=float), np.asarray(mask, dtype=bool)
            if scores.shape != (m,) or mask.shape != (m,):
                raise ValueError(f"the simulator must return scores and mask of shape ({m},), got "
                                 f"{scores.shape} and {mask.shape}")
            out.append(mask[np.lexsort((rng.random(m), scores))])
        return out

    def bound(self, mask_sorted, cells, levels, delta: float) -> ClaimBound:
        """:func:`claim_bound` on these rules and levels."""
        return claim_bound(mask_sorted, cells, levels, self.family, self.parameter, delta=delta, grid=self._grid)
