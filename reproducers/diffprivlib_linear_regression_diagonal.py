"""Reproducer: diffprivlib 0.6.6 `models.LinearRegression` -- violation (dpaudit row `diffprivlib.linear_regression_diagonal`).

The published record's IBM/differential-privacy-library#105 (Re:cord-play, PoPETs 2026), on the installed
version: the noise of the sum x^2 coefficient is calibrated to the lower bound twice (0 here).

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
D0 = [[0.0, 0.0]]
D1 = [[1.0, 0.0]]
REACHES = "D0"  # the dataset expected to reach the set more often
SET_IN_WORDS = '|coef_| > 30 (the coefficient is (sum x y + Laplace noise) / sum x^2 with an exact sum x^2: 0.01 on D0, 1.01 on D1)'


PUBLIC = [[0.1, 0.0]]  # a public (x, y) record always in the data (keeps sum x^2 > 0)


def release(records, seed):
    """coef_ of LinearRegression on the public record and ``records`` (rows (x, y)), as the row fits it."""
    data = np.asarray(PUBLIC + list(records), dtype=float)
    model = models.LinearRegression(epsilon=1.0, bounds_X=(0.0, 1.0), bounds_y=(0.0, 1.0), fit_intercept=False,
                                    random_state=seed, accountant=BudgetAccountant())
    return model.fit(data[:, :1], data[:, 1]).coef_


def in_set(y):
    """Whether the output ``y`` (1-D array) falls in the witness set."""
    return bool(abs(y[0]) > 30.0)


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
    print(f"library: diffprivlib 0.6.6; relation: inferred: no diffprivlib 0.6.6 docstring names a neighbouring relation; the bug breaks replace-one and add/remove, audited under replace-one; claim: ({EPSILON:g}, {DELTA:g})-DP")
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
    print("diffprivlib 0.6.6, models.LinearRegression: epsilon=1, bounds_X=(0, 1), bounds_y=(0, 1), fit_intercept=False, on records (x, y) plus the public record (0.1, 0), releasing coef_.")
    print(f"Relation: inferred: no diffprivlib 0.6.6 docstring names a neighbouring relation; the bug breaks replace-one and add/remove, audited under replace-one. Claim: ({EPSILON:g}, {DELTA:g})-DP.")
    print(f"Neighbouring pair: D0 = {D0}, D1 = {D1}.")
    print(f"Expected: for every output set S, P[S | D0] <= e^eps P[S | D1] + delta and vice versa.")
    print(f"Observed: S = {SET_IN_WORDS}: {h0}/{N} on D0, {h1}/{N} on D1 "
          f"(P[S | {REACHES}] - e^eps P[S | {other}] >= {certified:.4g} with confidence 0.99).")
    print("Cause: models/linear_regression.py, _construct_regression_obj: the noise of the diagonal coefficient sum x_i^2 is calibrated to max(|bounds_X[0][i]|, |bounds_X[0][i]|) ** 2, the lower bound twice, which is 0 for bounds_X = (0, 1): sum x^2 is released exactly inside the objective (IBM/differential-privacy-library#105, reported by Re:cord-play, PoPETs 2026)")
    print("Reproduce: python " + sys.argv[0] + " " + str(N))


if __name__ == "__main__":
    main()
