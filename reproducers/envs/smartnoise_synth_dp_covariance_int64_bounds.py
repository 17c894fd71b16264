"""Reproducer: SmartNoise Synth 1.0.8 `models.dp_covariance.DPcovariance` -- integer bounds at the int64 limit (dpaudit row `smartnoise-synth.dp_covariance`, finding `@search:limits`).

Standalone: needs only smartnoise-synth, pandas and NumPy. Install and run in a fresh environment::

    python3.11 -m venv /tmp/sns && /tmp/sns/bin/pip install smartnoise-synth==1.0.8 scikit-learn torch==2.13.0
    /tmp/sns/bin/python reproducers/envs/smartnoise_synth_dp_covariance_int64_bounds.py [N]

(``snsynth.models`` imports scikit-learn, which smartnoise-synth 1.0.8 does not declare; torch is
pinned only to keep pip from pulling another torch through opacus 0.14: take its CPU build, e.g.
``--extra-index-url https://download.pytorch.org/whl/cpu``.)

Found blind by dpaudit's input-space search (limits family, budget 200 pairs per hunt; no
hand-written pair). ``DPcovariance(n, cols, rng, global_eps)`` takes the columns' public bounds as a
DataFrame ``rng``; with integer bounds the frame is int64, and ``covariance_sensitivity`` computes
each range as ``rng[i][1] - rng[i][0]`` in int64. For the whole int64 range (bounds
``(-(2^63 - 1), 2^63 - 1)``, e.g. ``np.iinfo`` limits given as "no bound") the difference
``2^64 - 2`` wraps around to ``-2``: the sensitivity becomes ``2 / n * 4`` while one replaced record
moves a covariance by about ``2^126 / n``. The release is then the exact covariance plus noise of
scale about 5: D0 (five records at the lower bound, covariance 0) never gives an output above 1e30,
D1 (one record moved to the upper bound in column b) always does. Same wrap-around for any integer
bounds whose range exceeds 2^63 - 1.
"""

import math
import sys

import numpy as np
import pandas as pd
from snsynth.models.dp_covariance import DPcovariance

N = int(sys.argv[1]) if len(sys.argv) > 1 else 200
EPSILON, DELTA, n = 1.0, 0.0, 5
HI = 2**63 - 1
LO = -HI
D0 = [[LO, LO]] * 5
D1 = [[LO, HI]] + [[LO, LO]] * 4


def releases(records, seed):
    np.random.seed(seed)
    df = pd.DataFrame(np.asarray(records, dtype=np.int64), columns=["a", "b"])
    out = np.empty((N, 3))
    for i in range(N):
        bounds = pd.DataFrame([[LO, LO], [HI, HI]])  # int64: the public bounds of both columns
        out[i] = DPcovariance(n, ["a", "b"], bounds, EPSILON).release(df.copy())
    return out


def upper(k, total, beta):
    """Clopper-Pearson-style (Chernoff/KL) upper confidence bound on a probability from k of total."""
    def kl(a, b):
        out = a * math.log(a / b) if a > 0 else 0.0
        return out + ((1 - a) * math.log((1 - a) / (1 - b)) if a < 1 else 0.0)
    if k == total:
        return 1.0
    lo, hi = k / total, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if total * kl(k / total, mid) <= math.log(1 / beta) else (lo, mid)
    return hi


def main():
    sens = DPcovariance(n, ["a", "b"], pd.DataFrame([[LO, LO], [HI, HI]]), EPSILON).sens
    print(f"library: SmartNoise Synth 1.0.8; bounds ({LO}, {HI}) for both columns, n = {n}, global_eps = {EPSILON}")
    print(f"sensitivities the library computes: {list(sens)} (the true range is 2^64 - 2: each should be ~1.4e38)")
    y0, y1 = releases(D0, 1), releases(D1, 2)
    in_s = lambda y: y[:, 2] > 1e30  # the set S: var(b) released above 1e30, fixed before any run
    h0, h1 = int(in_s(y0).sum()), int(in_s(y1).sum())
    p1_lo = 1.0 - upper(N - h1, N, 0.005)
    p0_hi = upper(h0, N, 0.005)
    certified = p1_lo - math.exp(EPSILON) * p0_hi
    print(f"D0 = 5 x ({LO}, {LO}): {h0}/{N} releases with var(b) > 1e30; D1 = one record ({LO}, {HI}) instead: {h1}/{N}")
    print(f"certified (confidence 0.99): P[S | D1] >= {p1_lo:.4g}, P[S | D0] <= {p0_hi:.4g}, "
          f"so delta >= {certified:.4g} at epsilon {EPSILON:g}")
    if certified > DELTA:
        print(f"VERDICT: LEAK: P[S | D1] - e^eps P[S | D0] >= {certified:.4g} > delta = {DELTA:g}")
    else:
        print(f"VERDICT: NOT REPRODUCED at N = {N}; try a larger N")


if __name__ == "__main__":
    main()
