"""Write two samples of a canary's scores for ``dpaudit audit-scores IN OUT``.

A stand-in for real runs: ``n`` scores from runs trained WITH the canary, ``N(mu, 1)``, and ``n``
from runs WITHOUT it, ``N(0, 1)`` (a Gaussian mechanism that is ``mu``-GDP for the canary). Replace
the two arrays with your own, e.g. the canary's loss (or minus it) after each training run.

    python examples/two_sample_scores.py --runs 2000 --mu 3 --seed 0
    dpaudit audit-scores with_canary.npy without_canary.npy --epsilon 2 --delta 1e-5
"""

import argparse

import numpy as np

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("--runs", type=int, default=2000, help="scores per sample (training runs with, and without)")
ap.add_argument("--mu", type=float, default=3.0, help="how far the canary moves its score, in standard deviations")
ap.add_argument("--seed", type=int, default=0)
args = ap.parse_args()
rng = np.random.default_rng(args.seed)
np.save("with_canary.npy", rng.normal(args.mu, 1.0, args.runs))
np.save("without_canary.npy", rng.normal(0.0, 1.0, args.runs))
print(f"wrote with_canary.npy and without_canary.npy: {args.runs} scores each, mu = {args.mu:g}")
