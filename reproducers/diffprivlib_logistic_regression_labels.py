"""Reproducer: diffprivlib 0.6.6 `models.LogisticRegression` -- violation (dpaudit row `diffprivlib.logistic_regression_labels`).

The published record's IBM/differential-privacy-library#106 (Re:cord-play, PoPETs 2026), on the installed
version: the label set is read from the private labels.

Standalone: needs only diffprivlib and NumPy, without dpaudit; in a fresh environment::

    pip install diffprivlib==0.6.6 'scikit-learn<1.6' numpy

Run ``python reproducers/diffprivlib_logistic_regression_labels.py [N]`` (N runs per dataset, default
20000). Written for dpaudit's docs/library_audits.md (section "Against the published record").
"""

import math
import sys
import warnings

import numpy as np
from diffprivlib import BudgetAccountant, models

N = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
EPSILON, DELTA = 1.0, 0.0
D0 = [[0.5, 0.0]]
D1 = [[0.5, 1.0]]
REACHES = "D1"  # the dataset expected to reach the set more often
SET_IN_WORDS = "3 coefficient rows (one-vs-rest over 3 classes: the replaced record's label 2 is in no other record)"


PUBLIC = [[0.0, 0], [1.0, 1]]  # public (x, label) records always in the data (classes 0 and 1)


def release(records, seed):
    """(coefficient rows, coef_[0, 0]) of LogisticRegression on the public records and ``records`` (rows
    (x, c), label min(2, floor(3 c))), as the row fits it."""
    rec = np.asarray(records, dtype=float).reshape(-1, 2)
    x = np.concatenate([[p[0] for p in PUBLIC], rec[:, 0]]).reshape(-1, 1)
    y = np.concatenate([[p[1] for p in PUBLIC], np.minimum(2, np.floor(3 * rec[:, 1])).astype(int)])
    model = models.LogisticRegression(epsilon=1.0, data_norm=1.0, random_state=seed, accountant=BudgetAccountant())
    model.fit(x, y)
    return np.array([model.coef_.shape[0], model.coef_[0, 0]])


def in_set(y):
    """Whether the output ``y`` (1-D array) falls in the witness set."""
    return bool(y[0] == 3)


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
    print(f"library: diffprivlib 0.6.6; relation: inferred: no diffprivlib 0.6.6 docstring names a neighbouring relation; objective perturbation with n public assumes replace-one; the bug breaks add/remove too; claim: ({EPSILON:g}, {DELTA:g})-DP")
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
    print("diffprivlib 0.6.6, models.LogisticRegression: epsilon=1, data_norm=1, on records (x, c) with label min(2, floor(3 c)) plus public records (0, label 0) and (1, label 1), releasing the number of coefficient rows and coef_[0, 0].")
    print(f"Relation: inferred: no diffprivlib 0.6.6 docstring names a neighbouring relation; objective perturbation with n public assumes replace-one; the bug breaks add/remove too. Claim: ({EPSILON:g}, {DELTA:g})-DP.")
    print(f"Neighbouring pair: D0 = {D0}, D1 = {D1}.")
    print(f"Expected: for every output set S, P[S | D0] <= e^eps P[S | D1] + delta and vice versa.")
    print(f"Observed: S = {SET_IN_WORDS}: {h0}/{N} on D0, {h1}/{N} on D1 "
          f"(P[S | {REACHES}] - e^eps P[S | {other}] >= {certified:.4g} with confidence 0.99).")
    print("Cause: models/logistic_regression.py, fit: classes_ = np.unique(y) of the private labels, so a record whose label no other record has adds a class and a one-vs-rest model (IBM/differential-privacy-library#106, reported by Re:cord-play, PoPETs 2026)")
    print("Reproduce: python " + sys.argv[0] + " " + str(N))


if __name__ == "__main__":
    main()
