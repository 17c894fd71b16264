"""One place for every finite-sample confidence bound dpaudit uses.

Each function says in its name whether it is a lower or an upper bound and takes the failure
probability ``beta`` (the bound fails with probability at most ``beta``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from ._validate import check_probability

__all__ = [
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "set_epsilon_lower",
    "LeakSize",
    "certify_set",
    "hoeffding_lower",
    "canonne_tv_upper",
    "empirical_bernstein_lower",
    "empirical_tv_upper",
    "empirical_tv_upper_plugin",
    "bennett_sample_size",
    "bennett_tail_bound",
    "bernoulli_kl",
    "kl_lower_tail_bound",
    "kl_sample_size",
    "POISSON_MISS",
    "poisson_rate",
    "poisson_sample_size",
    "poisson_ratio_lower",
]


def _check_counts(successes, trials):
    k = np.asarray(successes)
    n = np.asarray(trials)
    if np.any(n <= 0):
        raise ValueError(f"trials must be positive, got {trials!r}")
    if np.any(k < 0) or np.any(k > n):
        raise ValueError(f"successes must lie in [0, trials], got successes={successes!r}, trials={trials!r}")
    return k.astype(float), n.astype(float)


def _check_levels(beta):
    """``beta`` as a float, or as an array when it is one (each entry a probability in (0, 1))."""
    if np.ndim(beta) == 0:
        return check_probability(beta, "beta")
    b = np.asarray(beta, dtype=float)
    if not np.all((b > 0) & (b < 1)):
        raise ValueError(f"beta must hold numbers in (0, 1), got {beta!r}")
    return b


def clopper_pearson_lower(successes, trials, beta: float):
    """Exact one-sided lower confidence bound on a binomial proportion.

    Returns ``p_lo`` with ``Pr[p >= p_lo] >= 1 - beta`` for ``successes ~ Binomial(trials, p)``:
    the ``beta`` quantile of ``Beta(k, n - k + 1)``, and 0 when ``k = 0``.

    Parameters
    ----------
    successes : int or array of int
        Number of successes ``k`` (broadcasts with ``trials``).
    trials : int or array of int
        Number of trials ``n > 0``.
    beta : float or array of float
        Failure probability in (0, 1) (an array broadcasts with the counts: one level per bound).

    Returns
    -------
    float or ndarray
        Lower bound(s) in [0, 1].

    Raises
    ------
    ValueError
        If beta is not in (0, 1) or the counts are invalid.

    References
    ----------
    Clopper & Pearson (1934). Replaces the Hoeffding term of paper 000, Prop. 4.11.
    """
    beta = _check_levels(beta)
    k, n = _check_counts(successes, trials)
    lo = _cp_lower(k, n, beta)
    return float(lo) if np.ndim(lo) == 0 else lo


def _cp_lower(k, n, beta):
    """:func:`clopper_pearson_lower` without the argument checks, for callers whose counts are
    valid by construction (``0 <= k <= n``, ``n > 0``, floats; ``beta`` in (0, 1)): always an array."""
    with np.errstate(invalid="ignore", divide="ignore"):
        # The Beta(k, n - k + 1) quantile; special.betaincinv is what scipy.stats.beta.ppf
        # evaluates, without its per-call argument handling (selection calls this thousands of times).
        lo = special.betaincinv(np.where(k > 0, k, 1.0), n - k + 1.0, beta)
    return np.where(k <= 0, 0.0, lo)


def _cp_upper(k, n, beta):
    """:func:`clopper_pearson_upper` without the argument checks (as :func:`_cp_lower`)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        hi = special.betainccinv(k + 1.0, np.where(k < n, n - k, 1.0), beta)  # = stats.beta.isf(beta, k + 1, n - k)
    return np.where(k >= n, 1.0, hi)


def clopper_pearson_upper(successes, trials, beta: float):
    """Exact one-sided upper confidence bound on a binomial proportion.

    Returns ``p_hi`` with ``Pr[p <= p_hi] >= 1 - beta``: the ``1 - beta`` quantile of
    ``Beta(k + 1, n - k)``, and 1 when ``k = n``. Same parameters (``beta`` a float or an array
    of levels) and errors as :func:`clopper_pearson_lower`.

    References
    ----------
    Clopper & Pearson (1934).
    """
    beta = _check_levels(beta)
    k, n = _check_counts(successes, trials)
    hi = _cp_upper(k, n, beta)
    return float(hi) if np.ndim(hi) == 0 else hi



def set_epsilon_lower(p_lower: float, q_upper: float, delta: float) -> float:
    """The epsilon a set certifies: with ``P(S) >= p_lower`` on one dataset and ``Q(S) <= q_upper`` on
    its neighbour (both at the caller's confidence), no ``(epsilon, delta)`` guarantee holds for
    ``epsilon < log((p_lower - delta) / q_upper)``, since ``P(S) - e^epsilon Q(S) > delta`` there
    (Dwork & Roth 2014, Def. 2.4). 0 when ``p_lower <= delta`` (nothing certified at that delta),
    ``inf`` when ``q_upper`` is 0. A lower bound on epsilon: the safe side.

    Parameters
    ----------
    p_lower, q_upper : float
        Probabilities in ``[0, 1]``.
    delta : float
        In ``[0, 1]``.

    Returns
    -------
    float, ``>= 0``.

    Raises
    ------
    ValueError
        If delta, ``p_lower`` or ``q_upper`` is outside ``[0, 1]``.
    """
    if not 0.0 <= delta <= 1.0:
        raise ValueError(f"delta must be in [0, 1], got {delta!r}")
    if not (0.0 <= p_lower <= 1.0 and 0.0 <= q_upper <= 1.0):
        raise ValueError(f"p_lower and q_upper must lie in [0, 1], got {p_lower!r} and {q_upper!r}")
    if p_lower <= delta:
        return 0.0
    if q_upper <= 0:
        return math.inf
    return max(0.0, math.log((p_lower - delta) / q_upper))

@dataclass(frozen=True)
class LeakSize:
    """A certified lower bound on the delta of every (epsilon, delta) guarantee, from one set.

    Attributes
    ----------
    description : str
        The output set ``S`` in words.
    hits_p, n_p : int
        Outputs in ``S`` and outputs drawn on the dataset that reaches ``S`` (``D0`` of the
        direction), counted on samples not used to choose ``S``.
    hits_q, n_q : int
        The same on the other dataset (``D1``); 0 hits for a set that dataset never reached.
    p_lower : float
        Clopper-Pearson lower bound on ``P_D0(S)`` at level ``beta / 2``.
    q_upper : float
        Clopper-Pearson upper bound on ``P_D1(S)`` at level ``beta / 2``.
    beta : float
        The probability that ``p_lower`` or ``q_upper`` is wrong (the bound's failure probability).
    column : int or None
        The output coordinate ``S`` is about (None for a set of whole outputs).
    direction : str
        ``"P||Q"`` (``S`` reached under ``D0``) or ``"Q||P"`` (under ``D1``; the counts are then
        named from the reaching side).
    grid : tuple of (sign, binade, k)
        For a grid set (:func:`dpaudit.audit.leak_size.size_float_leak`): the outputs of that sign in ``[2^binade,
        2^(binade+1))`` that are not multiples of ``2^(k+1)``; empty for other sets.
    """

    description: str
    hits_p: int
    n_p: int
    hits_q: int
    n_q: int
    p_lower: float
    q_upper: float
    beta: float
    column: int | None = None
    direction: str = "P||Q"
    grid: tuple = ()

    def delta_lower(self, epsilon: float) -> float:
        """Certified lower bound on delta at ``epsilon`` (nats): ``max(0, p_lower - e^epsilon q_upper)``.

        Raises
        ------
        ValueError
            If epsilon is negative or NaN.
        """
        if not epsilon >= 0:
            raise ValueError(f"epsilon must be >= 0, got {epsilon!r}")
        if math.isinf(epsilon):
            return 0.0 if self.q_upper > 0 else self.p_lower
        return max(0.0, self.p_lower - math.exp(epsilon) * self.q_upper)

    def epsilon_horizon(self, delta: float) -> float:
        """The largest epsilon below which no (epsilon, ``delta``) guarantee holds (with prob. 1 - beta).

        ``delta_lower(e) > delta`` for every ``e`` below the returned value: ``log((p_lower -
        delta) / q_upper)``; 0 when ``p_lower <= delta`` (nothing certified at that delta).

        Raises
        ------
        ValueError
            If delta is not in [0, 1].
        """
        return set_epsilon_lower(self.p_lower, self.q_upper, delta)

    @property
    def structural_delta(self) -> float | None:
        """For a set the other dataset never reached (:attr:`disjoint`): ``p_lower``, the delta below
        which no epsilon holds *if* the other dataset cannot reach the set at all (a NaN output, an
        exact value only one input produces: ``P[S | D1] = 0`` by construction, read from the code, not
        from the counts); None otherwise. From the counts alone only :meth:`delta_lower` is certified."""
        return self.p_lower if self.disjoint else None

    @property
    def disjoint(self) -> bool:
        """True when the set was never hit under the other dataset (a support the other side misses)."""
        return self.hits_q == 0

    def describe(self, epsilon: float, delta: float = 0.0) -> str:
        """One sentence for a report: the set, both counts, the certified delta at the claim.

        Parameters
        ----------
        epsilon, delta : float
            The claimed guarantee.
        """
        side = "D0" if self.direction == "P||Q" else "D1"
        other = "D1" if side == "D0" else "D0"
        col = f" (output coordinate {self.column})" if self.column is not None else ""
        head = (f"{self.description}{col}: {self.hits_p}/{self.n_p} outputs on {side}, "
                f"{self.hits_q}/{self.n_q} on {other}")
        d = self.delta_lower(epsilon)
        horizon = self.epsilon_horizon(delta)
        conf = f"confidence {1 - self.beta:g}"
        if d <= delta:
            return f"{head}; certifies no delta above the claim at epsilon {epsilon:g} ({conf})"
        horizon_text = "every epsilon" if math.isinf(horizon) else f"every epsilon <= {horizon:.3g}"
        structural = ""
        if self.disjoint and self.p_lower > delta:
            structural = (f"; where {other} cannot reach the set at all, no epsilon holds for any delta < "
                          f"{self.p_lower:.3g}")
        return (f"{head}; delta >= {d:.3g} at the claimed epsilon {epsilon:g}, and the claimed delta "
                f"{delta:g} fails for {horizon_text}{structural} ({conf})")

    def to_dict(self) -> dict:
        """Plain-JSON form (the bound's inputs and outputs)."""
        return {"description": self.description, "hits_p": self.hits_p, "n_p": self.n_p, "hits_q": self.hits_q,
                "n_q": self.n_q, "p_lower": self.p_lower, "q_upper": self.q_upper, "beta": self.beta,
                "column": self.column, "direction": self.direction, "grid": [list(g) for g in self.grid]}

    @classmethod
    def from_dict(cls, d: dict) -> "LeakSize":
        """Rebuild from :meth:`to_dict` output."""
        d = dict(d)
        d["grid"] = tuple(tuple(int(v) for v in g) for g in d.get("grid", ()))
        return cls(**d)


def certify_set(hits_p: int, n_p: int, hits_q: int, n_q: int, *, beta: float, description: str = "S",
                column: int | None = None, direction: str = "P||Q") -> LeakSize:
    """The certified bound ``delta >= P_D0(S) - e^epsilon P_D1(S)`` from the counts of one fixed set.

    Parameters
    ----------
    hits_p, n_p : int
        Outputs in ``S`` out of ``n_p`` independent outputs on ``D0`` (``0 <= hits_p <= n_p``, ``n_p > 0``).
    hits_q, n_q : int
        The same on ``D1``.
    beta : float
        Failure probability in (0, 1), split evenly between the two Clopper-Pearson bounds. ``S``
        must not have been chosen with these counts (choose it on other samples).
    description : str
        ``S`` in words.
    column, direction
        Stored on the result (:class:`LeakSize`).

    Returns
    -------
    LeakSize

    Raises
    ------
    ValueError
        If a count is negative, above its total, a total is not positive, or beta is not in (0, 1).

    References
    ----------
    Clopper & Pearson (1934) for the two bounds; Dwork & Roth (2014), Def. 2.4, for the
    inequality a set gives.
    """
    for name, k, n in (("hits_p", hits_p, n_p), ("hits_q", hits_q, n_q)):
        if int(n) != n or n <= 0:
            raise ValueError(f"the sample size for {name} must be a positive integer, got {n!r}")
        if int(k) != k or not 0 <= k <= n:
            raise ValueError(f"{name} must be an integer in [0, {n}], got {k!r}")
    if not 0.0 < beta < 1.0:
        raise ValueError(f"beta must be in (0, 1), got {beta!r}")
    p_lo = float(clopper_pearson_lower(int(hits_p), int(n_p), beta / 2))
    q_hi = float(clopper_pearson_upper(int(hits_q), int(n_q), beta / 2))
    return LeakSize(description, int(hits_p), int(n_p), int(hits_q), int(n_q), p_lo, q_hi, float(beta),
                    column, direction)


def hoeffding_lower(mean: float, n: int, beta: float, value_range: float = 1.0) -> float:
    """Hoeffding lower confidence bound on the mean of ``n`` i.i.d. variables in a range of width
    ``value_range``: ``mean - value_range * sqrt(ln(1/beta) / (2n))``.

    Kept for comparison with DP-Auditorium (paper 000, Prop. 4.11); dpaudit's testers use the
    exact Clopper–Pearson bound instead.

    Raises
    ------
    ValueError
        If ``n`` is not positive.
    """
    beta = check_probability(beta, "beta")
    if n <= 0:
        raise ValueError(f"n must be positive, got {n!r}")
    return float(mean) - value_range * math.sqrt(math.log(1.0 / beta) / (2.0 * n))


def canonne_tv_upper(num_samples, num_bins, beta: float):
    """Upper confidence bound on the total variation between a k-bin distribution and its
    empirical distribution (learning a discrete distribution; Canonne 2020).

    With ``n`` i.i.d. draws from a distribution ``p`` on ``k`` fixed outcomes and empirical
    frequencies ``p_hat``, ``Pr[TV(p_hat, p) <= e] >= 1 - beta`` for

    ``e = sqrt((k - 1) / n) / 2 + sqrt(ln(1/beta) / (2 n))``.

    Proof (Canonne 2020, Thm 1, with the constants kept): ``E[TV] <= (1/2) sum_i
    sqrt(p_i (1 - p_i) / n) <= (1/2) sqrt((k - 1) / n)`` by Jensen and Cauchy–Schwarz
    (``sum_i p_i (1 - p_i) <= 1 - 1/k``); moving one draw changes ``TV`` by at most ``1/n``, so
    McDiarmid's inequality adds ``sqrt(ln(1/beta) / (2n))``. This is never larger than the
    inverted sample-complexity form ``max(sqrt(k/n), sqrt(2 ln(2/beta) / n))`` quoted in paper 001
    §4.3 (Lemma 2). The bins must not depend on the draws.

    Parameters
    ----------
    num_samples : int or array of int
        Number of draws ``n > 0``.
    num_bins : int or array of int
        Number of outcomes ``k >= 1`` (broadcasts with ``num_samples``).
    beta : float
        Failure probability in (0, 1).

    Returns
    -------
    float or ndarray
        The radius ``e`` (may exceed 1, in which case the bound is vacuous).

    Raises
    ------
    ValueError
        If beta is not in (0, 1), ``n <= 0`` or ``k < 1``.

    References
    ----------
    Canonne (2020), "A short note on learning discrete distributions", arXiv:2002.11457;
    paper 001 §4.3, Lemma 2.
    """
    beta = check_probability(beta, "beta")
    n = np.asarray(num_samples, dtype=float)
    k = np.asarray(num_bins, dtype=float)
    if np.any(~np.isfinite(n)) or np.any(n <= 0):
        raise ValueError(f"num_samples must be positive, got {num_samples!r}")
    if np.any(~np.isfinite(k)) or np.any(k < 1):
        raise ValueError(f"num_bins must be >= 1, got {num_bins!r}")
    e = 0.5 * np.sqrt((k - 1.0) / n) + np.sqrt(math.log(1.0 / beta) / (2.0 * n))
    return float(e) if np.ndim(e) == 0 else e


def empirical_bernstein_lower(mean, variance, n, beta: float, value_range: float = 1.0):
    """Empirical-Bernstein lower confidence bound on the mean of ``n`` i.i.d. bounded variables.

    For ``Z_1..Z_n`` i.i.d. with values in an interval of width ``value_range`` (``R``), with
    probability at least ``1 - beta``::

        E[Z] >= mean - sqrt(2 variance ln(2/beta) / n) - 7 R ln(2/beta) / (3 (n - 1))

    where ``variance`` is the **unbiased** sample variance ``sum (Z_i - mean)^2 / (n - 1)``
    (``V_n`` of the reference). This is Maurer & Pontil's Theorem 4 (stated for ``[0, 1]``)
    applied to ``1 - (Z - a)/R``: the variance term scales by ``R`` through ``sqrt(variance)``,
    the range term by ``R``. The ``2`` in ``ln(2/beta)`` already pays for estimating the variance
    (``beta/2`` for the variance, ``beta/2`` for Bennett's inequality); nothing else is split.

    Parameters
    ----------
    mean : float or array
        Sample mean of the ``Z_i``.
    variance : float or array
        Unbiased sample variance (``ddof=1``), ``>= 0``.
    n : int or array of int
        Number of variables, ``>= 2``.
    beta : float
        Failure probability in (0, 1).
    value_range : float, default 1.0
        Width ``R > 0`` of an interval holding every ``Z_i`` (4 for values in ``[-2, 2]``).

    Returns
    -------
    float or ndarray
        The lower bound (may be below the range: a vacuous bound is not clipped).

    Raises
    ------
    ValueError
        If beta is not in (0, 1), ``n < 2``, ``variance < 0`` or ``value_range <= 0``.

    References
    ----------
    Maurer & Pontil (2009), "Empirical Bernstein bounds and sample variance penalization",
    COLT, Theorem 4; used by paper 000, proof of Theorem 4.15 (with ``R = 4``: ``28/3``).
    """
    beta = check_probability(beta, "beta")
    n_arr = np.asarray(n, dtype=float)
    var = np.asarray(variance, dtype=float)
    if np.any(~np.isfinite(n_arr)) or np.any(n_arr < 2):
        raise ValueError(f"n must be >= 2, got {n!r}")
    if np.any(~(var >= 0)):
        raise ValueError(f"variance must be >= 0, got {variance!r}")
    if not (value_range > 0 and math.isfinite(value_range)):
        raise ValueError(f"value_range must be finite and > 0, got {value_range!r}")
    log_term = math.log(2.0 / beta)
    out = np.asarray(mean, dtype=float) - np.sqrt(2.0 * var * log_term / n_arr) - 7.0 * value_range * log_term / (3.0 * (n_arr - 1.0))
    return float(out) if np.ndim(out) == 0 else out


def empirical_tv_upper(n, num_cells: int, beta: float):
    """Upper confidence bound on the total-variation distance between an empirical distribution
    and the distribution it was drawn from, knowing only the number of cells.

    For ``n`` i.i.d. draws from a distribution ``p`` on ``m = num_cells`` cells with empirical
    distribution ``p_hat``, ``TV(p_hat, p) = ||p_hat - p||_1 / 2 = sup_S (p_hat(S) - p(S))``
    satisfies, with probability at least ``1 - beta``,

        TV(p_hat, p) <= sqrt((m - 1) / n) / 2 + sqrt(ln(1/beta) / (2 n)).

    The first term bounds the mean: ``E|p_hat_i - p_i| <= sqrt(p_i (1 - p_i) / n)`` (Jensen), and
    ``sum_i sqrt(p_i (1 - p_i)) <= sqrt(m (1 - sum_i p_i^2)) <= sqrt(m - 1)`` (Cauchy–Schwarz,
    ``sum_i p_i^2 >= 1/m``). The second is McDiarmid's inequality: moving one draw to another
    cell changes ``TV(p_hat, p)`` by at most ``1/n``. Derivation in ``docs/histogram.md``.

    Parameters
    ----------
    n : int or array of int
        Number of draws, ``>= 1``.
    num_cells : int
        Number of cells ``m >= 1`` of the (known, finite) universe.
    beta : float
        Failure probability in (0, 1).

    Returns
    -------
    float or ndarray
        Upper bound(s) on ``TV(p_hat, p)`` (may exceed 1, where it says nothing).

    Raises
    ------
    ValueError
        If beta is not in (0, 1), ``n < 1`` or ``num_cells < 1``.

    References
    ----------
    McDiarmid (1989), "On the method of bounded differences". The L1 form with twice these
    constants underlies the tolerance of Gilbert & McMillan (2018), paper 000 Alg. 3. This is
    :func:`canonne_tv_upper` with an integer cell count.
    """
    beta = check_probability(beta, "beta")
    n_arr = np.asarray(n, dtype=float)
    if np.any(~np.isfinite(n_arr)) or np.any(n_arr < 1):
        raise ValueError(f"n must be >= 1, got {n!r}")
    if isinstance(num_cells, bool) or int(num_cells) != num_cells or num_cells < 1:
        raise ValueError(f"num_cells must be an integer >= 1, got {num_cells!r}")
    return canonne_tv_upper(n_arr, num_cells, beta)  # the same bound (Canonne 2020, Thm 1)


def empirical_tv_upper_plugin(counts, beta: float) -> float:
    """Data-dependent upper confidence bound on ``TV(p_hat, p)`` from the cell counts themselves.

    Like :func:`empirical_tv_upper`, but the mean term ``sum_i sqrt(p_i (1 - p_i) / n) / 2`` is
    bounded by its largest value over the masses the data allow: exact two-sided Clopper–Pearson
    intervals ``l_i <= p_i <= u_i`` (each side at ``beta / (4m)``, so all ``2m`` hold together with
    probability ``>= 1 - beta/2``) intersected with ``sum_i p_i = 1``. The maximum of the concave
    ``sum_i sqrt(p_i (1 - p_i))`` over that set is found by water-filling (KKT: every
    ``p_i = clip((1 - s)/2, l_i, u_i)`` for one ``s``, found by bisection); it never exceeds
    ``sqrt(m - 1)``, the value at the uniform distribution. McDiarmid's deviation is taken at
    ``beta / 2``. With probability at least ``1 - beta``:

        TV(p_hat, p) <= max_{p feasible} sum_i sqrt(p_i (1 - p_i) / n) / 2 + sqrt(ln(2/beta) / (2n)).

    Much smaller than :func:`empirical_tv_upper` when the mass sits on few of the ``m`` cells.
    Unlike the plug-in tolerance of paper 000 (``sum_i sqrt(p_hat_i)``, which is biased low by
    Jensen's inequality), it is a valid confidence bound.

    Parameters
    ----------
    counts : array of int, shape (m,)
        Draws that fell in each cell of the (known, finite) universe, empty cells included;
        ``n = counts.sum() >= 1``.
    beta : float
        Failure probability in (0, 1).

    Returns
    -------
    float
        Upper bound on ``TV(p_hat, p)``.

    Raises
    ------
    ValueError
        If beta is not in (0, 1), counts is not a non-empty 1-D array of non-negative integers, or
        sums to 0.

    References
    ----------
    Clopper & Pearson (1934); McDiarmid (1989). Derivation in ``docs/histogram.md``.
    """
    beta = check_probability(beta, "beta")
    k = np.asarray(counts)
    if k.ndim != 1 or k.size < 1 or not np.all(np.isfinite(k)) or np.any(k < 0) or np.any(k != np.round(k)):
        raise ValueError(f"counts must be a non-empty 1-D array of non-negative integers, got {counts!r}")
    n = float(k.sum())
    if n < 1:
        raise ValueError("counts must contain at least one draw (they sum to 0)")
    m = k.size
    lo = np.asarray(clopper_pearson_lower(k, n, beta / (4.0 * m)), dtype=float).reshape(-1)
    hi = np.asarray(clopper_pearson_upper(k, n, beta / (4.0 * m)), dtype=float).reshape(-1)
    cap = math.sqrt(m - 1.0)
    if lo.sum() <= 1.0 <= hi.sum():
        # sum_i clip((1 - s)/2, lo_i, hi_i) decreases in s: bisect for the value 1.
        s_lo, s_hi = -1.0, 1.0
        for _ in range(100):
            s = 0.5 * (s_lo + s_hi)
            if np.clip((1.0 - s) / 2.0, lo, hi).sum() > 1.0:
                s_lo = s
            else:
                s_hi = s
        # the lower end of the bracket has total mass >= 1; use the larger objective of the two
        vals = [np.clip((1.0 - t) / 2.0, lo, hi) for t in (s_lo, s_hi)]
        best = max(float(np.sum(np.sqrt(v * (1.0 - v)))) for v in vals)
        cap = min(cap, best)
    mean_term = 0.5 * cap / math.sqrt(n)
    return mean_term + math.sqrt(math.log(2.0 / beta) / (2.0 * n))


def _bennett_h(u: float) -> float:
    """``h(u) = (1 + u) ln(1 + u) - u``, accurate for small u."""
    if u < 1e-4:
        return u * u / 2.0 - u ** 3 / 6.0 + u ** 4 / 12.0
    return (1.0 + u) * math.log1p(u) - u


def bennett_tail_bound(deviation: float, second_moment: float, n: int, b: float = 0.0) -> float:
    """Bennett's inequality for the mean of ``n`` independent variables bounded above.

    If ``X_i <= b`` almost surely (``b >= 0``) and ``(1/n) sum_i E[X_i^2] <= second_moment``
    (``v``), then for ``t = deviation > 0``::

        Pr[mean(X) - E[mean(X)] >= t] <= exp(-(n v / b^2) h(b t / v)),  h(u) = (1+u) ln(1+u) - u,

    and, as ``b -> 0+`` (variables that are never positive), ``exp(-n t^2 / (2 v))``. The bound
    decreases as ``b`` decreases, so ``b = 0`` is the sharpest valid choice for ``X_i <= 0``.
    Upper bound on a tail probability.

    Parameters
    ----------
    deviation : float
        t > 0, in the units of X.
    second_moment : float
        v > 0, an upper bound on the average uncentred second moment.
    n : int
        Number of variables, > 0.
    b : float
        Upper bound on each X_i, >= 0.

    Returns
    -------
    float
        The tail bound in (0, 1].

    Raises
    ------
    ValueError
        If an argument is out of range or NaN.

    References
    ----------
    Boucheron, Lugosi & Massart (2013), Concentration Inequalities, Thm 2.9; paper 004,
    App. D, Lemma 17 (used there with b -> 0+ on ``X_i = -delta_hat_i``).
    """
    t, v, b = float(deviation), float(second_moment), float(b)
    if not (t > 0 and math.isfinite(t)):
        raise ValueError(f"deviation must be a positive finite number, got {deviation!r}")
    if not (v > 0 and math.isfinite(v)):
        raise ValueError(f"second_moment must be a positive finite number, got {second_moment!r}")
    if not (b >= 0 and math.isfinite(b)):
        raise ValueError(f"b must be a finite number >= 0, got {b!r}")
    if n <= 0:
        raise ValueError(f"n must be positive, got {n!r}")
    rate = t * t / (2.0 * v) if b == 0.0 else (v / (b * b)) * _bennett_h(b * t / v)
    return float(math.exp(-n * rate))


def bennett_sample_size(deviation: float, second_moment: float, beta: float, b: float = 0.0) -> int:
    """Smallest n for which :func:`bennett_tail_bound` is at most ``beta``.

    ``n = ceil(ln(1/beta) / ((v / b^2) h(b t / v)))``, which is ``ceil(2 v ln(1/beta) / t^2)`` for
    ``b = 0`` (paper 004, Thm "smcsamplecomp": ``m >= 2 nu ln(tau / delta_est) / Delta^2``).

    Raises
    ------
    ValueError
        If an argument is out of range.
    """
    beta = check_probability(beta, "beta")
    t, v, b = float(deviation), float(second_moment), float(b)
    bennett_tail_bound(t, v, 1, b)  # validates the arguments
    rate = t * t / (2.0 * v) if b == 0.0 else (v / (b * b)) * _bennett_h(b * t / v)
    return int(math.ceil(math.log(1.0 / beta) / rate))


def bernoulli_kl(a, p):
    """Kullback–Leibler divergence ``kl(a || p) = a ln(a/p) + (1-a) ln((1-a)/(1-p))`` (nats) between
    Bernoulli(a) and Bernoulli(p), elementwise; ``0 ln 0 = 0``.

    Raises
    ------
    ValueError
        If a value is outside [0, 1] (``p`` must be in (0, 1) where ``a`` differs from it).
    """
    a = np.asarray(a, dtype=float)
    p = np.asarray(p, dtype=float)
    if np.any(~((a >= 0) & (a <= 1))) or np.any(~((p >= 0) & (p <= 1))):
        raise ValueError(f"a and p must lie in [0, 1], got a={a!r}, p={p!r}")
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = np.where(a > 0, a * (np.log(a) - np.log(p)), 0.0)
        t2 = np.where(a < 1, (1 - a) * (np.log1p(-a) - np.log1p(-p)), 0.0)
    out = t1 + t2
    return float(out) if out.ndim == 0 else out


def kl_lower_tail_bound(threshold: float, mean: float, n: int) -> float:
    """Chernoff–Hoeffding bound on the lower tail of the mean of ``n`` i.i.d. variables in [0, 1].

    For ``0 <= threshold < mean``: ``Pr[mean(X) <= threshold] <= exp(-n kl(threshold || mean))``,
    and the bound only gets smaller for larger true means. Upper bound on a tail probability;
    returns 1 when ``threshold >= mean``.

    References
    ----------
    Hoeffding (1963), Thm 1 (Bernoulli variables are the extreme case among [0, 1] ones).

    Raises
    ------
    ValueError
        If ``threshold`` or ``mean`` is outside ``[0, 1]``, or ``n`` is not positive.
    """
    a, p = float(threshold), float(mean)
    if not (0.0 <= a <= 1.0 and 0.0 <= p <= 1.0):
        raise ValueError(f"threshold and mean must lie in [0, 1], got {threshold!r}, {mean!r}")
    if n <= 0:
        raise ValueError(f"n must be positive, got {n!r}")
    if a >= p:
        return 1.0
    return float(math.exp(-n * bernoulli_kl(a, p)))


def kl_sample_size(threshold: float, mean: float, beta: float) -> int:
    """Smallest n with :func:`kl_lower_tail_bound` at most ``beta``: ``ceil(ln(1/beta) / kl(threshold || mean))``.

    Raises
    ------
    ValueError
        If ``threshold >= mean`` (no n suffices) or an argument is out of range.
    """
    beta = check_probability(beta, "beta")
    a, p = float(threshold), float(mean)
    if not (0.0 <= a < p <= 1.0):
        raise ValueError(f"need 0 <= threshold < mean <= 1, got threshold={threshold!r}, mean={mean!r}")
    return int(math.ceil(math.log(1.0 / beta) / bernoulli_kl(a, p)))


# --------------------------------------------------------------------------- ratio of two masses
POISSON_MISS = 1e-4
"""Chance that a Poissonised sample size exceeds the rows at hand (:func:`poisson_rate`); in that
event the ratio bound is not computed (the trivial bound 0 is kept), which costs power, never
validity."""


@functools.lru_cache(maxsize=4096)
def _poisson_rate(n: int, miss: float) -> float:
    if n <= 0:
        return 0.0
    from scipy import optimize

    f = lambda lam: float(stats.poisson.sf(n, lam)) - miss  # noqa: E731  P(N > n) - miss
    hi = float(n)
    if f(hi) <= 0.0:  # only for tiny n with a large miss
        return hi
    lo = max(1e-9, n - 12.0 * math.sqrt(n) - 12.0)
    while f(lo) > 0.0:
        lo /= 2.0
    return float(optimize.brentq(f, lo, hi, xtol=1e-9 * n, rtol=1e-12))


def poisson_rate(n: int, miss: float = POISSON_MISS) -> float:
    """The largest rate ``lam`` with ``Pr[Poisson(lam) > n] <= miss`` (``n - O(sqrt(n))``).

    A sample size drawn from ``Poisson(lam)`` then exceeds the ``n`` rows available with
    probability at most ``miss`` (:func:`poisson_sample_size`).

    Parameters
    ----------
    n : int
        Rows available (>= 0).
    miss : float, default :data:`POISSON_MISS`
        In (0, 1).

    Returns
    -------
    float
        ``lam`` in ``[0, n]`` (0 for ``n = 0``).

    Raises
    ------
    ValueError
        If ``n`` is negative.
    """
    miss = check_probability(miss, "miss")
    if int(n) < 0:
        raise ValueError(f"n must be >= 0, got {n!r}")
    return _poisson_rate(int(n), float(miss))


def poisson_sample_size(n: int, rng: np.random.Generator, miss: float = POISSON_MISS) -> tuple[int, float]:
    """A Poissonised sample size: ``N ~ Poisson(lam)`` with ``lam = poisson_rate(n, miss)``.

    If the first ``N`` of ``n`` i.i.d. rows are used (``N <= n``, probability ``>= 1 - miss``),
    the number of them in any fixed region ``S`` is ``Poisson(lam P(S))`` and the counts of
    disjoint samples are independent: the premise of :func:`poisson_ratio_lower`. When ``N > n``
    the caller must not compute that bound (the idealised experiment with unlimited rows then
    differs from the real one only in giving no answer, so the level is kept).

    Parameters
    ----------
    n : int
        Rows available.
    rng : numpy.random.Generator
        Draws ``N`` (independently of the rows).
    miss : float, default :data:`POISSON_MISS`

    Returns
    -------
    (N, lam) : (int, float)
    """
    lam = poisson_rate(n, miss)
    return int(rng.poisson(lam)), lam


def poisson_ratio_lower(x, lam_x, y, lam_y, beta: float):
    """Exact lower confidence bound on the ratio ``p / q`` of two masses from Poisson counts.

    With independent ``x ~ Poisson(lam_x p)`` and ``y ~ Poisson(lam_y q)``, given ``x + y = k``
    the count ``x`` is ``Binomial(k, pi)`` with ``pi = lam_x p / (lam_x p + lam_y q)``, an
    increasing function of ``p / q``. The one-sided Clopper–Pearson lower bound ``pi_lo`` on
    ``pi`` (level ``beta`` given every ``k``, hence unconditionally) gives

        ``p / q >= (pi_lo / (1 - pi_lo)) * (lam_y / lam_x)``   with probability ``>= 1 - beta``.

    One test on the ratio instead of two Clopper–Pearson bounds on the masses at ``beta / 2``
    each: for regions of small mass the bound on ``ln(p / q)`` is about
    ``z_beta sqrt(1/x + 1/y)`` below the estimate instead of ``z_{beta/2} (1/sqrt(x) + 1/sqrt(y))``.

    Parameters
    ----------
    x, y : float or array
        Counts (non-integer values are accepted for projections: the Beta quantile is continuous).
    lam_x, lam_y : float
        Poisson rates per unit mass (the Poissonised sample sizes' means), > 0.
    beta : float
        Failure probability in (0, 1).

    Returns
    -------
    float or ndarray
        Lower bound(s) on ``p / q`` in ``[0, inf)``; 0 when ``x = 0``.

    Raises
    ------
    ValueError
        On negative counts, non-positive rates or beta outside (0, 1).

    References
    ----------
    Przyborowski & Wilenski (1940), the conditional test for two Poisson means; Clopper &
    Pearson (1934). Derivation and the Poissonisation in ``docs/hockey_stick.md``.
    """
    beta = check_probability(beta, "beta")
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if np.any(x < 0) or np.any(y < 0):
        raise ValueError(f"counts must be >= 0, got x={x!r}, y={y!r}")
    if not (lam_x > 0 and lam_y > 0):
        raise ValueError(f"rates must be > 0, got lam_x={lam_x!r}, lam_y={lam_y!r}")
    with np.errstate(invalid="ignore", divide="ignore"):
        pi_lo = special.betaincinv(np.maximum(x, 1e-300), y + 1.0, beta)  # the Beta(x, y + 1) beta-quantile
        ratio = np.where(x > 0, pi_lo / (1.0 - pi_lo) * (float(lam_y) / float(lam_x)), 0.0)
    # as np.nan_to_num(ratio, nan=0.0) (NaN to 0, +-inf to the largest finite doubles), in two ufuncs
    big = np.finfo(float).max
    ratio = np.clip(np.where(np.isnan(ratio), 0.0, ratio), -big, big)
    return float(ratio) if np.ndim(ratio) == 0 else ratio
