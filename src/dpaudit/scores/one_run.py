"""One-run audits: many canaries, each included with probability 1/2, one training run.

``m`` canaries are each put into the training set independently with probability 1/2 (the
*inclusion mask* ``S``); after one run every canary has a score (a loss, a logit, an inner
product with the noisy update). The auditor guesses "in" for the ``k_plus`` highest scores,
"out" for the ``k_minus`` lowest, and abstains on the rest: ``k = k_plus + k_minus`` guesses,
``v`` of them correct. Under a privacy claim ``v`` cannot be large; two certified tests:

* **Steinke, Nasr, Jagielski (2023)**, Thm 3.1 and its approximate-DP form (§5): under
  ``(eps, delta)``-DP, ``P[V >= v] <= F(v) + 2 m delta max_{1 <= i <= v} (F(v - i) - F(v)) / i``
  with ``F(v) = P[Binomial(k, e^eps / (1 + e^eps)) >= v]`` (exact binomial tails).
* **Mahloujifar, Melis, Chaudhuri (2025)**, the f-DP analysis: under ``f``-DP with respect to
  every canary, the tail masses ``R_j = E[V 1{V >= j}] / m`` and
  ``H_j = E[(k - V) 1{V >= j}] / m`` obey ``R_j <= 1 - f(H_{j-1})`` for every ``j``
  (``docs/scores.md`` §9 derives it: the f-DP test "guess i and the other guesses reach
  ``j - 1``" on canary ``i``, averaged over the others by the concavity of ``1 - f``). If
  ``P[V >= v] >= tau``, the least probability mass consistent with these inequalities is built
  level by level below ``v``; when it exceeds 1 the claim is refuted at level ``tau``
  (:func:`fdp_rejects`). With ``f = f_{eps, delta}`` (the trade-off function of
  ``(eps, delta)``-DP) this certifies an epsilon lower bound for any mechanism; with
  ``f = G_mu`` it certifies a lower bound on the parameter of any Gaussian-DP guarantee
  (its epsilon at ``delta`` is a lower bound for *Gaussian-dominated* mechanisms only, and is
  labelled so).

Choosing the guesses. The number of guesses must not be chosen by looking at the inclusion
mask it is then judged on. :func:`one_run_audit` offers (``selection=``):

* ``"grid"`` (default): every guess count of a fixed grid (``guess_grid``: geometric sizes,
  three shapes: top only, bottom only, half and half), with a union bound over the grid
  (a weighted Bonferroni split of ``beta``, :func:`cell_levels`). Data-independent, so the
  bound is valid as is.
* ``"split"``: the canaries are split at random; the best grid cell on the first part (judged
  with the mask there) is applied, scaled, to the second part alone. Valid because the mask of
  the second part is independent of the first part's and the choice reads no label of it.
* ``(k_plus, k_minus)``: fixed in advance, no multiplicity.

``benchmarks/one_run.py`` measures both selections: on Gaussian scores the grid's union bound is
tighter (it keeps every canary for the bound; the split halves ``m``).

Assumptions (what makes the numbers valid): the mask is drawn independently per canary with
probability 1/2 and independently of everything else in the run, and the claim holds for
adding/removing one canary. A balanced assignment (exactly m/2 in) is not independent per canary
and is not covered.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
from scipy import optimize, special, stats

from .._validate import as_rng, check_delta, check_int, check_probability
from ..estimators.base import check_scores

__all__ = [
    "OneRunAudit",
    "OneRunGuess",
    "fdp_population",
    "fdp_rejects",
    "gdp_inverse_tradeoff",
    "approx_dp_inverse_tradeoff",
    "cell_levels",
    "guess_grid",
    "one_run_audit",
    "steinke_p_value",
]


# --------------------------------------------------------------------------- the two tests


def steinke_p_value(m: int, k: int, v: int, epsilon: float, delta: float = 0.0) -> float:
    """P-value of ``v`` correct guesses out of ``k`` under ``(epsilon, delta)``-DP (one run).

    Parameters
    ----------
    m : int
        Number of canaries (each included independently with probability 1/2).
    k : int
        Number of guesses (fixed before the mask is seen), ``0 <= k <= m``.
    v : int
        Correct guesses, ``0 <= v <= k``.
    epsilon : float
        Epsilon of the null hypothesis, nats, ``>= 0``.
    delta : float
        Delta of the null hypothesis in ``[0, 1]``.

    Returns
    -------
    float
        ``min(1, F(v) + 2 m delta max_{1<=i<=v} (F(v-i) - F(v)) / i)`` with
        ``F(u) = P[Binomial(k, e^eps/(1+e^eps)) >= u]``: an upper bound on ``P[V >= v]`` under the
        null, so rejecting when it is ``<= beta`` errs with probability at most ``beta``.

    Raises
    ------
    ValueError
        On counts out of range or invalid epsilon/delta.

    References
    ----------
    Steinke, Nasr, Jagielski (2023), *Privacy auditing with one (1) training run*, NeurIPS,
    Thm 3.1 (pure DP) and §5 (approximate DP).
    """
    m, k, v = int(m), int(k), int(v)
    if not (0 <= k <= m and 0 <= v <= k):
        raise ValueError(f"need 0 <= v <= k <= m, got m={m}, k={k}, v={v}")
    if not (epsilon >= 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be finite and >= 0, got {epsilon!r}")
    if not (0.0 <= delta <= 1.0):
        raise ValueError(f"delta must be in [0, 1], got {delta!r}")
    return _steinke_p(m, k, v, epsilon, delta)


#: First block of binomial tails :func:`_steinke_p` evaluates (then doubling).
_STEINKE_BLOCK = 256


def _steinke_p(m: int, k: int, v: int, epsilon: float, delta: float, stop_above: float = math.inf) -> float:
    """:func:`steinke_p_value` on checked arguments, bit for bit, with two shortcuts.

    The tails ``F(v - i)``, ``i = 0, 1, ..., v``, are evaluated in blocks (one vectorised
    ``binom.sf`` call each, the first one holding ``F(v)`` too), and the evaluation stops

    * when no later gain can beat the largest so far: ``F(v - i) <= 1`` (up to ``1e-9``), so
      ``(F(v - i) - F(v)) / i <= (1 + 1e-9 - F(v)) / i``, decreasing in ``i``, and floating-point
      subtraction and division are monotone: the maximum, hence the p-value, is the same float;
    * when ``F(v) > stop_above`` (then the p-value, ``min(1, F(v) + a non-negative term)``, is
      above ``stop_above`` too when ``stop_above < 1``): ``min(1, F(v))`` is returned, which is
      *not* the p-value but lies on the same side of ``stop_above`` (the rejection test of
      :func:`steinke_epsilon_lower_bound` needs only that side).

    The gains are non-negative: the last one, ``(F(0) - F(v)) / v = (1 - F(v)) / v``, is.
    """
    p = special.expit(epsilon)
    if delta == 0.0 or v == 0:
        return min(1.0, float(stats.binom.sf(v - 1, k, p)))  # P[Bin >= v]
    tail, best = math.nan, -math.inf
    lo, block = 0, _STEINKE_BLOCK
    while lo <= v:  # block j = lo .. hi - 1 holds F(v - j), i.e. binom.sf(v - j - 1)
        hi = min(v + 1, lo + block)
        sf = stats.binom.sf(np.arange(v - 1 - lo, v - 1 - hi, -1), k, p)
        if lo == 0:
            tail = float(sf[0])
            if tail > stop_above:
                return min(1.0, tail)
            sf, i = sf[1:], np.arange(1, hi)
        else:
            i = np.arange(lo, hi)
        if sf.size:
            best = max(best, float(np.max((sf - tail) / i)))
        lo, block = hi, 2 * block
        if lo <= v and (1.0 + 1e-9 - tail) / lo < best:
            break
    return float(min(1.0, tail + 2.0 * m * delta * best))


def gdp_inverse_tradeoff(mu: float) -> Callable[[float], float]:
    """``h*(r) = inf{h : G_mu(h) <= 1 - r} = Phi(Phi^{-1}(r) - mu)`` for the Gaussian trade-off
    function ``G_mu`` (Dong, Roth, Su 2022, Def. 2.6); the step of :func:`fdp_rejects`."""
    mu = float(mu)
    return lambda r: float(special.ndtr(special.ndtri(min(max(r, 0.0), 1.0)) - mu))


def approx_dp_inverse_tradeoff(epsilon: float, delta: float) -> Callable[[float], float]:
    """``h*(r) = inf{h : f_{eps,delta}(h) <= 1 - r} = max(0, (r - delta) e^-eps,
    1 - delta - e^eps (1 - r))`` for ``f_{eps,delta}(a) = max(0, 1 - delta - e^eps a,
    e^-eps (1 - delta - a))`` (Dong, Roth, Su 2022, Prop. 2.5); the step of :func:`fdp_rejects`."""
    e_pos, e_neg = math.exp(min(epsilon, 700.0)), math.exp(-epsilon)
    return lambda r: max(0.0, (r - delta) * e_neg, 1.0 - delta - e_pos * (1.0 - r))


def fdp_rejects(inverse_tradeoff: Callable[[float], float], m: int, k: int, v: int, tau: float) -> bool:
    """Whether ``v`` correct out of ``k`` guesses refutes an f-DP claim at level ``tau`` (one run).

    Suppose ``P[V >= v] >= tau``. The least mass the distribution of ``V`` must then carry is
    built level by level: all of ``tau`` at ``V = v`` (``R = tau v / m``, ``H = tau (k - v) / m``),
    then, for ``i = v-1, ..., 0``, the least mass ``p_i`` at ``V = i`` with
    ``H_i >= h*(R_{i+1})`` (``H_i = H_{i+1} + (k - i) p_i / m``, ``R_i = R_{i+1} + i p_i / m``).
    The claim is refuted when ``R_0 + H_0 = k (total mass) / m`` exceeds ``k / m``.

    Parameters
    ----------
    inverse_tradeoff : callable
        ``h*(r) = inf{h : f(h) <= 1 - r}`` of the claimed symmetric trade-off function ``f``
        (:func:`approx_dp_inverse_tradeoff`, :func:`gdp_inverse_tradeoff`).
    m, k, v : int
        Canaries, guesses (fixed in advance), correct guesses.
    tau : float
        Level in (0, 1].

    Returns
    -------
    bool
        True when ``P[V >= v] >= tau`` is impossible under the claim (reject at level ``tau``).

    References
    ----------
    Mahloujifar, Melis, Chaudhuri (2025), *Auditing f-differential privacy in one run*, ICML
    (the reconstruction bound with abstentions); derivation in ``docs/scores.md`` §9.
    """
    if v <= 0 or k <= 0:
        return False
    r = tau * v / m
    h = tau * (k - v) / m
    limit = k / m * (1.0 + 1e-12)  # refute only past rounding: errs towards not refuting
    for i in range(v - 1, -1, -1):
        need = inverse_tradeoff(r)
        if need <= h:
            break  # no mass needed here; R and H stay, so no level below needs any
        r = r + i / (k - i) * (need - h)
        h = need
        if r + h > limit:
            return True
    return r + h > limit


def _largest_rejected(rejects: Callable[[float], bool], lo: float = 0.0, hi: float = 64.0,
                      tol: float = 1e-4) -> float:
    """Largest ``x >= lo`` with ``rejects(x)`` for a predicate monotone in ``x`` (True then False);
    ``lo`` itself when ``rejects(lo)`` is False. Bisection to ``tol``, rounded down (the safe side)."""
    if not rejects(lo):
        return lo
    hi = max(hi, 2.0 * lo + tol)
    while rejects(hi):
        lo, hi = hi, 2.0 * hi
        if hi > 1e4:
            return lo
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if rejects(mid):
            lo = mid
        else:
            hi = mid
    return lo


def steinke_epsilon_lower_bound(m: int, k: int, v: int, delta: float, beta: float, at_least: float = 0.0) -> float:
    """Largest epsilon whose ``(epsilon, delta)``-DP claim :func:`steinke_p_value` rejects at
    ``beta`` (``at_least`` if it rejects none above it): a lower confidence bound on epsilon.

    Raises
    ------
    ValueError
        If the counts do not satisfy ``0 <= v <= k <= m`` or ``delta`` is outside ``[0, 1]``.
    """
    m, k, v = int(m), int(k), int(v)
    if not (0 <= k <= m and 0 <= v <= k):
        raise ValueError(f"need 0 <= v <= k <= m, got m={m}, k={k}, v={v}")
    if not (0.0 <= delta <= 1.0):
        raise ValueError(f"delta must be in [0, 1], got {delta!r}")
    if not beta < 1.0:  # the shortcut of _steinke_p needs it; every p-value is <= 1
        return _largest_rejected(lambda e: steinke_p_value(m, k, v, e, delta) <= beta, lo=at_least)
    return _largest_rejected(lambda e: _steinke_p(m, k, v, e, delta, stop_above=beta) <= beta, lo=at_least)


def fdp_epsilon_lower_bound(m: int, k: int, v: int, delta: float, beta: float, at_least: float = 0.0) -> float:
    """Largest epsilon whose ``(epsilon, delta)``-DP claim (as the trade-off function
    ``f_{eps,delta}``) :func:`fdp_rejects` refutes at ``beta`` (``at_least`` if none above it)."""
    return _largest_rejected(lambda e: fdp_rejects(approx_dp_inverse_tradeoff(e, delta), m, k, v, beta),
                             lo=at_least)


def fdp_mu_lower_bound(m: int, k: int, v: int, beta: float, at_least: float = 0.0) -> float:
    """Largest ``mu`` whose ``mu``-GDP claim :func:`fdp_rejects` refutes at ``beta`` (``at_least``
    if none above it): a lower confidence bound on the parameter of any Gaussian-DP guarantee."""
    return _largest_rejected(lambda mu: fdp_rejects(gdp_inverse_tradeoff(mu), m, k, v, beta), lo=at_least, hi=8.0)


# --------------------------------------------------------------------------- guesses


def guess_grid(m: int, *, ratio: float = 2.0, smallest: int = 10, alternative: str = "greater") -> list:
    """The fixed grid of ``(k_plus, k_minus)`` guess counts of ``selection="grid"``.

    Sizes ``k`` geometric from ``min(smallest, m)`` to ``m`` (factor ``ratio``); for each, three
    shapes: ``(k, 0)`` (only the highest scores guessed "in"), ``(0, k)`` (only the lowest
    guessed "out") and ``(ceil(k/2), floor(k/2))``. With ``alternative="two-sided"`` the same
    with the scores' orientation reversed (encoded as negative counts: ``(-k_plus, -k_minus)``
    means "in" for the *lowest* ``k_plus`` and "out" for the highest ``k_minus``).

    Parameters
    ----------
    m : int
        Number of canaries.
    ratio : float
        Geometric factor between sizes, ``> 1``.
    smallest : int
        Smallest size.
    alternative : {"greater", "less", "two-sided"}
        Which way the scores of included canaries lean ("greater": higher).

    Returns
    -------
    list of tuple (int, int)
        Distinct cells, data-independent (a function of ``m`` and the arguments only).

    Raises
    ------
    ValueError
        If ``ratio <= 1`` or ``alternative`` is not 'greater', 'less' or 'two-sided'.
    """
    m = check_int(m, "m", 1)
    if not ratio > 1:
        raise ValueError(f"ratio must be > 1, got {ratio!r}")
    if alternative not in ("greater", "less", "two-sided"):
        raise ValueError(f"alternative must be 'greater', 'less' or 'two-sided', got {alternative!r}")
    sizes = []
    s = float(min(check_int(smallest, "smallest", 1), m))
    while True:
        sizes.append(int(round(s)))
        if s >= m:
            break
        s = min(float(m), s * ratio)
    cells = []
    for k in dict.fromkeys(sizes):
        for c in ((k, 0), (0, k), ((k + 1) // 2, k // 2)):
            if c not in cells:
                cells.append(c)
    if alternative == "less":
        return [(-a, -b) for a, b in cells]
    if alternative == "two-sided":
        return cells + [(-a, -b) for a, b in cells]
    return cells


def _guess_counts(mask_sorted: np.ndarray, cell) -> tuple[int, int]:
    """``(k, v)`` for one cell on canaries sorted by score (``mask_sorted``: the mask in that
    order)."""
    a, b = cell
    m = mask_sorted.size
    if a < 0 or b < 0:  # reversed orientation: "in" for the lowest, "out" for the highest
        kp, km = -a, -b
        ins = mask_sorted[:kp]
        outs = mask_sorted[m - km:] if km else mask_sorted[:0]
    else:
        kp, km = a, b
        ins = mask_sorted[m - kp:] if kp else mask_sorted[:0]
        outs = mask_sorted[:km]
    if kp + km > m:
        return 0, 0
    return kp + km, int(ins.sum() + (outs.size - outs.sum()))


@dataclass(frozen=True)
class OneRunGuess:
    """One guessing rule's outcome: ``k_plus`` "in" and ``k_minus`` "out" guesses (negative:
    orientation reversed, see :func:`guess_grid`), ``guesses = |k_plus| + |k_minus|``,
    ``correct`` of them right."""

    k_plus: int
    k_minus: int
    guesses: int
    correct: int

    @property
    def precision(self) -> float:
        """``correct / guesses`` (0 when no guess)."""
        return self.correct / self.guesses if self.guesses else 0.0


@dataclass(frozen=True)
class OneRunAudit:
    """What one training run with many canaries proves (:func:`one_run_audit`).

    Attributes
    ----------
    epsilon_lower_bound : float
        Certified: the largest epsilon whose ``(epsilon, delta)``-DP claim the f-DP test
        (``f = f_{eps,delta}``) refutes at the audit's level, over the guessing rules paid for.
        A lower bound on the mechanism's epsilon at ``delta`` with probability ``>= 1 - beta``.
    epsilon_lower_bound_steinke : float
        Certified, the same with Steinke et al.'s binomial test (reported for comparison; the
        f-DP test is the headline, chosen before looking).
    mu_lower_bound : float
        Certified: no ``mu'``-GDP guarantee with ``mu' < mu_lower_bound`` holds.
    epsilon_of_mu_estimate : float
        Epsilon at ``delta`` of ``mu_lower_bound``-GDP: a lower bound on epsilon **only for
        Gaussian-dominated mechanisms** (an estimate otherwise; what jax_privacy's
        ``epsilon_one_run_fdp`` reports).
    delta, beta : float
        The delta of the epsilon bounds; the failure probability of every bound.
    m : int
        Canaries judged (all of them for ``"grid"``; the second part for ``"split"``).
    guess : OneRunGuess
        The rule that gives ``epsilon_lower_bound``.
    guess_steinke, guess_mu : OneRunGuess
        The rules that give the other two bounds.
    p_value : float
        Steinke et al.'s p-value of ``guess_steinke``'s outcome at ``epsilon_claim`` (when a
        claim epsilon is given), else at epsilon 0 (the p-value of "no privacy loss at all").
    selection : str
        ``"grid"``, ``"split"`` or ``"fixed"``; ``rules`` rules paid for (a weighted Bonferroni
        split of ``beta``, :func:`cell_levels`), the smallest level ``level``
        (``details["levels"]``: smallest and largest).
    details : dict
        JSON-ready extras (grid size, split sizes, the claim).
    """

    epsilon_lower_bound: float
    epsilon_lower_bound_steinke: float
    mu_lower_bound: float
    epsilon_of_mu_estimate: float
    delta: float
    beta: float
    m: int
    n_included: int
    guess: OneRunGuess
    guess_steinke: OneRunGuess
    guess_mu: OneRunGuess
    p_value: float
    selection: str
    rules: int
    level: float
    details: dict = field(default_factory=dict)
    claim: Optional[object] = None
    """With ``one_run_audit(..., claim=...)``: the :class:`~dpaudit.scores.one_run_claim.ClaimBound`
    of the claimed family on the same rules and levels (``None`` otherwise)."""

    @property
    def epsilon_lower_bound_claim(self) -> float:
        """The claimed family's bound (:attr:`claim`), ``nan`` without a claim: certified against
        the claim's family, not for any mechanism (``docs/scores.md`` §6d)."""
        return float(self.claim.epsilon_lower_bound) if self.claim is not None else math.nan

    def to_dict(self) -> dict:
        """JSON-ready dict (what ``dpaudit audit-scores --one-run --json`` prints)."""
        from ..estimators.region import jsonable

        def g(x: OneRunGuess):
            return {"k_plus": x.k_plus, "k_minus": x.k_minus, "guesses": x.guesses, "correct": x.correct}

        return jsonable({
            "method": "one-run",
            "epsilon_lower_bound": self.epsilon_lower_bound,
            "epsilon_lower_bound_steinke": self.epsilon_lower_bound_steinke,
            "mu_lower_bound": self.mu_lower_bound,
            "epsilon_of_mu_estimate": self.epsilon_of_mu_estimate,
            "delta": self.delta, "beta": self.beta, "m": self.m, "n_included": self.n_included,
            "guess": g(self.guess), "guess_steinke": g(self.guess_steinke), "guess_mu": g(self.guess_mu),
            "p_value": self.p_value, "selection": self.selection, "rules": self.rules, "level": self.level,
            "details": self.details,
            "claim": None if self.claim is None else {
                "epsilon_lower_bound": self.claim.epsilon_lower_bound, "parameter_bound": self.claim.parameter_bound,
                "claim_refuted": self.claim.claim_refuted, "at_range_end": self.claim.at_range_end,
                "cell": None if self.claim.cell is None else list(self.claim.cell), "guesses": self.claim.guesses,
                "correct": self.claim.correct, "level": self.claim.level},
        })


def _check_mask(mask, m: int) -> np.ndarray:
    arr = np.asarray(mask)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1 or arr.size != m:
        raise ValueError(f"mask must have shape ({m},) like the scores, got shape {arr.shape}")
    if arr.dtype != bool:
        vals = np.unique(arr)
        if not np.all(np.isin(vals, [0, 1])):
            raise ValueError(f"mask must hold 0/1 or booleans (1 = canary included), got values {vals[:5]!r}")
        arr = arr.astype(bool)
    return arr


def _shape(cell) -> str:
    a, b = abs(cell[0]), abs(cell[1])
    return "top" if b == 0 else ("bottom" if a == 0 else "both")


def cell_levels(cells, beta: float, shape_weights=None) -> list:
    """Per-rule test levels summing to ``beta`` (a weighted Bonferroni split, fixed in advance):
    rule ``c`` gets ``beta w(c) / sum w`` with ``w`` from its shape (``"both"``: guesses at both
    ends; ``"top"``/``"bottom"``: at one end). Default weights ``both 4, top 1, bottom 1``: a
    location shift shows at both ends; one end alone serves mixtures (subsampling).

    Raises
    ------
    ValueError
        If a shape weight is negative or they sum to 0.
    """
    w = dict(SHAPE_WEIGHTS if shape_weights is None else shape_weights)
    ws = np.array([float(w[_shape(c)]) for c in cells])
    if np.any(ws < 0) or ws.sum() <= 0:
        raise ValueError(f"shape weights must be >= 0 with a positive sum, got {w!r}")
    return list(beta * ws / ws.sum())


SHAPE_WEIGHTS = {"both": 4.0, "top": 1.0, "bottom": 1.0}


def fdp_population(m: int, cell) -> float:
    """The ``m`` that :func:`fdp_rejects` normalises by for a guessing rule: ``m / 2`` when every
    guess is on one side (only "in" guesses, or only "out"), ``m`` otherwise.

    The f-DP test averages, by concavity of ``1 - f``, one f-DP inequality per *possible* test. A
    rule with guesses on both sides needs the ``m`` "in" tests and the ``m`` "out" tests (``2m``
    tests, each canary's probability 1/2 of being in: Mahloujifar et al.'s ``R_j = E[V 1{V >=
    j}] / m``). A one-sided rule needs only the ``m`` tests of its side: for "in" guesses,
    ``a_i = P[guess i "in", W_{-i} >= j - 1 | S_i = 1] <= 1 - f(P[... | S_i = 0])`` for each ``i``;
    their mean over the ``m`` canaries is ``E[V 1{V >= j}] / (m / 2)`` (each canary is in with
    probability 1/2), so the same inequalities hold with ``m / 2``, a stronger statement (``1 - f``
    is concave with ``1 - f(0) = 0``, so ``(1 - f(2x)) / 2 <= 1 - f(x)``). ``docs/scores.md`` §6d."""
    a, b = cell
    return m / 2.0 if (a == 0 or b == 0) else float(m)


def _best(cells, mask_sorted, m, levels, bound, one_sided_halving: bool = False):
    """The largest bound over the cells and the cell giving it (cells that cannot beat the best
    so far are skipped by starting each search at it). ``one_sided_halving``: pass the f-DP
    test's population :func:`fdp_population` (``m / 2`` for one-sided rules) instead of ``m``."""
    best_val, best_guess = 0.0, None
    if np.ndim(levels) == 0:
        levels = [float(levels)] * len(cells)
    counts = [(cell, lvl, *_guess_counts(mask_sorted, cell)) for cell, lvl in zip(cells, levels)]
    counts.sort(key=lambda t: -(t[3] / t[2]) if t[2] else 0.0)  # most precise first
    for cell, level, k, v in counts:
        if k == 0 or 2 * v <= k or level <= 0:
            continue
        val = bound(fdp_population(m, cell) if one_sided_halving else m, k, v, level, best_val)
        if val > best_val or best_guess is None:
            best_val, best_guess = max(val, best_val), OneRunGuess(cell[0], cell[1], k, v)
    return best_val, best_guess


def one_run_audit(scores, mask, *, delta: float = 1e-5, beta: float = 0.05, selection="grid",
                  alternative: str = "greater", grid_ratio: float = 2.0, split_fraction: float = 0.5,
                  epsilon_claim: Optional[float] = None, shape_weights=None, rng=None, claim=None) -> OneRunAudit:
    """Certified privacy lower bounds from one run with ``m`` canaries (scores and inclusion mask).

    Parameters
    ----------
    scores : array, shape (m,)
        One score per canary, finite; by default higher means "more likely included"
        (``alternative``).
    mask : array of bool or 0/1, shape (m,)
        Which canaries were included; each must have been included independently with
        probability 1/2.
    delta : float
        Delta of the epsilon lower bounds, in (0, 1).
    beta : float
        Failure probability of each reported bound, in (0, 1).
    selection : {"grid", "split"} or (int, int)
        How the guess counts are chosen (module docstring): a union bound over
        :func:`guess_grid`, a random split, or ``(k_plus, k_minus)`` fixed in advance.
    shape_weights : dict, optional
        Weights of the grid's shapes in the Bonferroni split (:func:`cell_levels`).
    alternative : {"greater", "less", "two-sided"}
        Orientation of the scores (``"two-sided"`` pays for both).
    grid_ratio : float
        Geometric factor of the grid's sizes.
    split_fraction : float
        For ``"split"``: fraction of the canaries that chooses the rule.
    epsilon_claim : float, optional
        A claimed epsilon; ``p_value`` is then Steinke et al.'s p-value at it.
    rng : numpy Generator or int, optional
        The split's randomness (and the order of tied scores).
    claim : OneRunClaim, optional
        A claimed family of trade-off functions (:class:`~dpaudit.scores.one_run_claim.OneRunClaim`).
        With ``selection="grid"`` and a simulator of the claim, the rule the claim's simulations
        favour gets ``claim.weight`` of ``beta`` and the grid the rest (all fixed before looking);
        every bound is computed on those rules and levels, and :attr:`OneRunAudit.claim` holds
        the family's bound (``docs/scores.md`` §6d).

    Returns
    -------
    OneRunAudit

    Raises
    ------
    ValueError
        On non-finite or empty scores, a mask of another shape or with values other than 0/1,
        invalid delta/beta/selection/alternative.

    References
    ----------
    Steinke, Nasr, Jagielski (2023), Thm 3.1, §5; Mahloujifar, Melis, Chaudhuri (2025);
    ``docs/scores.md`` §9.
    """
    x = check_scores(scores, "scores", min_size=2)
    s = _check_mask(mask, x.size)
    delta = check_delta(delta, allow_zero=True)
    beta = check_probability(beta, "beta")
    gen = as_rng(rng)
    if alternative not in ("greater", "less", "two-sided"):
        raise ValueError(f"alternative must be 'greater', 'less' or 'two-sided', got {alternative!r}")
    # Ties broken at random (independently of the mask), then canaries sorted by score.
    tiebreak = gen.random(x.size)
    order = np.lexsort((tiebreak, x))
    if isinstance(selection, str) and selection == "grid":
        idx, cells = order, guess_grid(x.size, ratio=grid_ratio, alternative=alternative)
        details = {"grid_ratio": grid_ratio, "alternative": alternative}
    elif isinstance(selection, str) and selection == "split":
        sf = check_probability(split_fraction, "split_fraction")
        part = gen.random(x.size) < sf
        first = order[part[order]]
        idx = order[~part[order]]
        if first.size < 2 or idx.size < 2:
            raise ValueError(f"split_fraction={split_fraction} leaves fewer than 2 canaries in a part")
        m1 = first.size
        lvl = beta
        val, g = _best(guess_grid(m1, ratio=grid_ratio, alternative=alternative), s[first], m1, lvl,
                       lambda m_, k_, v_, l_, a_: fdp_epsilon_lower_bound(m_, k_, v_, delta, l_, a_), True)
        scale = idx.size / m1
        if g is None:
            cells = [(1, 0)]
        else:
            cells = [(int(math.copysign(round(abs(g.k_plus) * scale), g.k_plus or 1)),
                      int(math.copysign(round(abs(g.k_minus) * scale), g.k_minus or 1)))]
        details = {"split_fraction": sf, "choosing_canaries": int(m1), "chosen_on_first_part": cells[0],
                   "alternative": alternative}
    else:
        try:
            kp, km = (int(t) for t in selection)
        except (TypeError, ValueError):
            raise ValueError(f"selection must be 'grid', 'split' or (k_plus, k_minus), got {selection!r}") from None
        if kp < 0 or km < 0 or kp + km < 1 or kp + km > x.size:
            raise ValueError(f"selection (k_plus, k_minus) must be >= 0 with 1 <= k_plus + k_minus <= {x.size}, "
                             f"got {selection!r}")
        idx = order
        cells = [(kp, km)] if alternative != "less" else [(-kp, -km)]
        details = {"alternative": alternative}
    m = idx.size
    ms = s[idx]
    levels = cell_levels(cells, beta, shape_weights)
    if claim is not None and isinstance(selection, str) and selection == "grid":
        # the rule the claim's own simulations favour, fixed before looking (nothing of this run)
        w = float(claim.weight)
        main = claim.choose(m, guess_grid(m, ratio=2 ** 0.25, alternative=alternative), w * beta, delta)
        if main is not None:
            cells = [tuple(main)] + list(cells)
            levels = [w * beta] + cell_levels(cells[1:], (1.0 - w) * beta, shape_weights)
            details["claim_rule"] = list(main)
            details["claim_rule_weight"] = w
    level = min(levels)
    details["levels"] = [float(min(levels)), float(max(levels))]
    eps_f, g_f = _best(cells, ms, m, levels, lambda *a: fdp_epsilon_lower_bound(*a[:3], delta, *a[3:]), True)
    eps_s, g_s = _best(cells, ms, m, levels, lambda *a: steinke_epsilon_lower_bound(*a[:3], delta, *a[3:]))
    mu, g_mu = _best(cells, ms, m, levels, fdp_mu_lower_bound, True)
    empty = OneRunGuess(0, 0, 0, 0)
    g_f, g_s, g_mu = g_f or empty, g_s or empty, g_mu or empty
    from ..privacy.profiles import gaussian_epsilon

    eps_mu = float(gaussian_epsilon(delta, mu)) if mu > 0 else 0.0
    claim_eps = 0.0 if epsilon_claim is None else float(epsilon_claim)
    p = steinke_p_value(m, g_s.guesses, g_s.correct, claim_eps, delta) if g_s.guesses else 1.0
    details.update({"epsilon_claim": epsilon_claim})
    claim_res = claim.bound(ms, cells, levels, delta) if claim is not None else None
    return OneRunAudit(
        epsilon_lower_bound=eps_f, epsilon_lower_bound_steinke=eps_s, mu_lower_bound=mu, epsilon_of_mu_estimate=eps_mu,
        delta=delta, beta=beta, m=int(m), n_included=int(ms.sum()), guess=g_f, guess_steinke=g_s, guess_mu=g_mu,
        p_value=p, selection=selection if isinstance(selection, str) else "fixed", rules=len(cells), level=level,
        details=details, claim=claim_res)
