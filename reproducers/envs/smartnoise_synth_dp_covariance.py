"""Reproducer: SmartNoise Synth 1.0.8 `models.dp_covariance.DPcovariance.release` -- floating-point leak (dpaudit row `smartnoise-synth.dp_covariance`).

Standalone: needs only smartnoise-synth and NumPy. Install and run in a fresh environment::

    python3.11 -m venv /tmp/sns && /tmp/sns/bin/pip install smartnoise-synth==1.0.8 scikit-learn torch==2.13.0
    /tmp/sns/bin/python reproducers/envs/smartnoise_synth_dp_covariance.py [N]

(``snsynth.models`` imports scikit-learn, which smartnoise-synth 1.0.8 does not declare; torch is
pinned only to keep pip from pulling another torch through opacus 0.14: take its CPU build, e.g.
``--extra-index-url https://download.pytorch.org/whl/cpu`` on PyPI, or CUDA wheels come with it.)
Measured here (2026-11-29, 2 cores, load average 6 to 21): install 88 s; run with N = 20000 674 s
wall, 86 s CPU: 225/20000 outputs of D0 in S, 0/20000 of D1; FLOATING-POINT LEAK, no epsilon holds
for delta < 0.008992 (delta >= 0.008272 at epsilon 1).

DPcovariance(n=5, ['a', 'b'], bounds [0, 1] x [0, 1], global_eps=1).release(df) adds Laplace noise
drawn by inversion in float64 (``q_lap``: ``b * log(2 u)`` with ``u = np.random.uniform()``) to each
exact covariance and returns the float64 sum: Mironov's (CCS 2012) attack applies. With every record
at (0, 0) the covariances are exactly 0 and the release is the noise itself, any double; replacing
one record by (1, 1) makes var(a) = 0.2, and 0.2 + noise, rounded to a double, is a multiple of
2^-55 (the spacing of doubles near 0.2) whatever the noise. The set S = {releases of var(a) in
(-2^-6, 2^-6), non-zero, not a multiple of 2^-55} is fixed before any run: D0 reaches it with
probability about 2^-6 / b (b = 1.2 here, the noise scale of each of the 3 entries), D1 never, so no
epsilon holds at delta 0.
"""

import math
import sys

import numpy as np
import pandas as pd
from snsynth.models.dp_covariance import DPcovariance

N = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
EPSILON, DELTA = 1.0, 0.0
D0 = [[0.0, 0.0]] * 5
D1 = [[0.0, 0.0]] * 4 + [[1.0, 1.0]]
GRID = 2.0 ** -55


def releases(records, seed):
    np.random.seed(seed)
    df = pd.DataFrame(np.asarray(records, dtype=float), columns=["a", "b"])
    out = np.empty(N)
    for i in range(N):
        bounds = pd.DataFrame([[0.0, 0.0], [1.0, 1.0]])
        out[i] = DPcovariance(5, ["a", "b"], bounds, 1.0).release(df.copy())[0]  # var(a)
    return out


def in_set(y):
    return (np.abs(y) < 2.0 ** -6) & (y != 0) & (np.mod(y, GRID) != 0)


def kl(a, b):
    out = 0.0
    if a > 0:
        out += a * math.log(a / b)
    if a < 1:
        out += (1 - a) * math.log((1 - a) / (1 - b))
    return out


def upper(k, n, beta):
    if k == n:
        return 1.0
    lo, hi = k / n, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if n * kl(k / n, mid) <= math.log(1 / beta) else (lo, mid)
    return hi


def lower(k, n, beta):
    return 1.0 - upper(n - k, n, beta)


def main():
    y0, y1 = releases(D0, 1), releases(D1, 2)
    h0, h1 = int(in_set(y0).sum()), int(in_set(y1).sum())
    lo, hi = lower(h0, N, 0.005), upper(h1, N, 0.005)
    certified = lo - math.exp(EPSILON) * hi
    print(f"library: SmartNoise Synth 1.0.8; claim: ({EPSILON:g}, {DELTA:g})-DP (global_eps), one record replaced among n = 5")
    print("set S: releases of var(a) in (-2^-6, 2^-6), non-zero, not a multiple of 2^-55")
    print(f"D0 = {D0}: {h0}/{N} outputs in S; D1 = {D1}: {h1}/{N} outputs in S")
    print(f"certified (confidence 0.99): P[S | D0] >= {lo:.4g}, P[S | D1] <= {hi:.4g}, "
          f"so delta >= {certified:.4g} at epsilon {EPSILON:g}")
    if h1 == 0:
        print(f"D1 never reaches S (by construction, see the docstring): no epsilon holds for delta < {lo:.4g}")
    if certified > DELTA:
        print(f"VERDICT: FLOATING-POINT LEAK: P[S | D0] - e^eps P[S | D1] >= {certified:.4g} > delta = {DELTA:g}")
    else:
        print(f"VERDICT: NOT REPRODUCED at N = {N}; try a larger N")


if __name__ == "__main__":
    main()
