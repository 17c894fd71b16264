"""One place for every finite-sample confidence bound dpaudit uses.

Each function says in its name whether it is a lower or an upper bound and takes the failure
probability ``beta`` (the bound fails with probability at most ``beta``).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

__all__ = [
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "hoeffding_lower",
]


def _check_beta(beta: float) -> float:
    beta = float(beta)
    if not (0.0 < beta < 1.0):
        raise ValueError(f"beta (failure probability) must be in (0, 1), got {beta!r}")
    return beta


def _check_counts(successes, trials):
    k = np.asarray(successes)
    n = np.asarray(trials)
    if np.any(n <= 0):
        raise ValueError(f"trials must be positive, got {trials!r}")
    if np.any(k < 0) or np.any(k > n):
        raise ValueError(f"successes must lie in [0, trials], got successes={successes!r}, trials={trials!r}")
    return k.astype(float), n.astype(float)


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
    beta : float
        Failure probability in (0, 1).

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
    beta = _check_beta(beta)
    k, n = _check_counts(successes, trials)
    with np.errstate(invalid="ignore"):
        lo = stats.beta.ppf(beta, k, n - k + 1.0)
    lo = np.where(k <= 0, 0.0, lo)
    return float(lo) if np.ndim(lo) == 0 else lo


def clopper_pearson_upper(successes, trials, beta: float):
    """Exact one-sided upper confidence bound on a binomial proportion.

    Returns ``p_hi`` with ``Pr[p <= p_hi] >= 1 - beta``: the ``1 - beta`` quantile of
    ``Beta(k + 1, n - k)``, and 1 when ``k = n``. Same parameters and errors as
    :func:`clopper_pearson_lower`.

    References
    ----------
    Clopper & Pearson (1934).
    """
    beta = _check_beta(beta)
    k, n = _check_counts(successes, trials)
    with np.errstate(invalid="ignore"):
        hi = stats.beta.isf(beta, k + 1.0, n - k)
    hi = np.where(k >= n, 1.0, hi)
    return float(hi) if np.ndim(hi) == 0 else hi


def hoeffding_lower(mean: float, n: int, beta: float, value_range: float = 1.0) -> float:
    """Hoeffding lower confidence bound on the mean of ``n`` i.i.d. variables in a range of width
    ``value_range``: ``mean - value_range * sqrt(ln(1/beta) / (2n))``.

    Kept for comparison with DP-Auditorium (paper 000, Prop. 4.11); dpaudit's testers use the
    exact Clopper–Pearson bound instead.
    """
    beta = _check_beta(beta)
    if n <= 0:
        raise ValueError(f"n must be positive, got {n!r}")
    return float(mean) - value_range * math.sqrt(math.log(1.0 / beta) / (2.0 * n))
