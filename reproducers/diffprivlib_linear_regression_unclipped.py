"""Reproducer: diffprivlib 0.6.6 `models.LinearRegression` -- leak on an input outside the bounds (found by the
adversarial screen of dpaudit row `diffprivlib.linear_regression_diagonal`; candidate new).

With fit_intercept=False, LinearRegression does not clip X and y to bounds_X and bounds_y, so a record outside
the bounds moves the sufficient statistics beyond the sensitivity the noise is calibrated to. Bounds (-1, 1)
here, where the lower-bound sensitivity bug (IBM/differential-privacy-library#105) does not bite.

Standalone: needs only diffprivlib and NumPy, without dpaudit; in a fresh environment::

    pip install diffprivlib==0.6.6 'scikit-learn<1.6' numpy

Run ``python reproducers/diffprivlib_linear_regression_diagonal.py [N]`` (N runs per dataset, default
20000). Written for dpaudit's docs/library_audits.md (section "Against the published record").
"""

import math
import sys
import warnings

import numpy as np
from diffprivlib import BudgetAccountant, models

N = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
EPSILON, DELTA = 1.0, 0.0
D0 = [[0.5, 0.5]]
D1 = [[100.0, 100.0]]
REACHES = "D1"  # the dataset expected to reach the set more often
SET_IN_WORDS = '|coef_ - 1| < 0.01 (on D1 the unclipped record (100, 100) dominates sum x y and sum x^2, so coef_ is about 1)'


def release(records, seed):
    """coef_ of LinearRegression(bounds_X=(-1, 1), bounds_y=(-1, 1), fit_intercept=False) on ``records`` (rows (x, y))."""
    data = np.asarray(records, dtype=float)
    model = models.LinearRegression(epsilon=1.0, bounds_X=(-1.0, 1.0), bounds_y=(-1.0, 1.0), fit_intercept=False,
                                    random_state=seed, accountant=BudgetAccountant())
    return model.fit(data[:, :1], data[:, 1]).coef_


def in_set(y):
    """Whether the output ``y`` (1-D array) falls in the witness set."""
    return bool(abs(y[0] - 1.0) < 0.01)


def kl(a, b):
    a = min(max(a, 0.0), 1.0)
    out = 0.0
    if a > 0:
        out += a * math.log(a / b)
    if a < 1:
        out += (1 - a) * math.log((1 - a) / (1 - b))
    return out


def upper(k, n, beta):
    """Chernoff-KL upper confidence bound on a binomial proportion (holds with prob. >= 1 - beta)."""
    if k == n:
        return 1.0
    lo, hi = k / n, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if n * kl(k / n, mid) <= math.log(1 / beta) else (lo, mid)
    return hi


def lower(k, n, beta):
    """Chernoff-KL lower confidence bound on a binomial proportion."""
    return 1.0 - upper(n - k, n, beta)


def count(data, first_seed):
    hits = 0
    for i in range(N):
        y = np.atleast_1d(np.asarray(release(data, first_seed + i), dtype=float)).ravel()
        hits += bool(in_set(y))
    return hits


def main():
    warnings.simplefilter("ignore")  # diffprivlib's PrivacyLeakWarning / convergence warnings
    h0, h1 = count(D0, 0), count(D1, 10**6)
    hr, ho = (h0, h1) if REACHES == "D0" else (h1, h0)
    other = "D1" if REACHES == "D0" else "D0"
    beta = 0.01
    lo, hi = lower(hr, N, beta / 2), upper(ho, N, beta / 2)
    certified = lo - math.exp(EPSILON) * hi
    print(f"library: diffprivlib 0.6.6; relation: inferred: no diffprivlib 0.6.6 docstring names a neighbouring relation; replace-one, the replaced record holding values outside the bounds (an input the API accepts); claim: ({EPSILON:g}, {DELTA:g})-DP")
    print(f"set S: {SET_IN_WORDS}")
    print(f"D0 = {D0}: {h0}/{N} outputs in S (frequency {h0 / N:.4g})")
    print(f"D1 = {D1}: {h1}/{N} outputs in S (frequency {h1 / N:.4g})")
    print(f"certified (confidence 0.99): P[S | {REACHES}] >= {lo:.4g}, P[S | {other}] <= {hi:.4g}, "
          f"so delta >= {certified:.4g} at epsilon {EPSILON:g}")
    if certified > DELTA:
        print(f"VERDICT: VIOLATION: P[S | {REACHES}] - e^eps P[S | {other}] >= {certified:.4g} > delta = {DELTA:g}")
    else:
        print(f"VERDICT: NOT REPRODUCED at N = {N} (certified {certified:.4g} <= delta = {DELTA:g}); try a larger N")
    print()
    print("--- text for the tracker ---")
    print("diffprivlib 0.6.6, models.LinearRegression: epsilon=1, bounds_X=(-1, 1), bounds_y=(-1, 1), fit_intercept=False, on records (x, y), releasing coef_; one record outside the bounds.")
    print(f"Relation: inferred: no diffprivlib 0.6.6 docstring names a neighbouring relation; replace-one, the replaced record holding values outside the bounds (an input the API accepts). Claim: ({EPSILON:g}, {DELTA:g})-DP.")
    print(f"Neighbouring pair: D0 = {D0}, D1 = {D1}.")
    print(f"Expected: for every output set S, P[S | D0] <= e^eps P[S | D1] + delta and vice versa.")
    print(f"Observed: S = {SET_IN_WORDS}: {h0}/{N} on D0, {h1}/{N} on D1 "
          f"(P[S | {REACHES}] - e^eps P[S | {other}] >= {certified:.4g} with confidence 0.99).")
    print("Cause: models/linear_regression.py, _preprocess_data clips X and y to bounds_X and bounds_y (clip_to_bounds) only when fit_intercept=True; with fit_intercept=False the raw records enter the sufficient statistics (sum y^2, sum x y, sum x^2), whose Laplace noise is calibrated to the bounds (candidate new: not found in the diffprivlib tracker searched)")
    print("Reproduce: python " + sys.argv[0] + " " + str(N))


if __name__ == "__main__":
    main()
