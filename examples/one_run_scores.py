"""Write one training run's canary scores and inclusion mask for ``dpaudit audit-scores --mask``.

A stand-in for a real run: ``m`` canaries, each included independently with probability 1/2; an
included canary's score is ``N(mu, 1)``, an excluded one's ``N(0, 1)`` (the white-box view of a
Gaussian mechanism that is ``mu``-GDP for each canary). Replace the two arrays with your own
run's scores (e.g. each canary's inner product with the noisy update, or minus its loss) and the
mask you drew before training.

    python examples/one_run_scores.py --canaries 10000 --mu 2 --seed 0
    dpaudit audit-scores scores.npy --mask mask.npy --delta 1e-5
"""

import argparse

import numpy as np

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("--canaries", type=int, default=10_000)
ap.add_argument("--mu", type=float, default=2.0)
ap.add_argument("--seed", type=int, default=0)
ap.add_argument("--prefix", default="")
args = ap.parse_args()
rng = np.random.default_rng(args.seed)
mask = rng.random(args.canaries) < 0.5  # drawn before training, independently per canary
scores = rng.normal(0.0, 1.0, args.canaries) + args.mu * mask
np.save(f"{args.prefix}scores.npy", scores)
np.save(f"{args.prefix}mask.npy", mask.astype(np.int8))
print(f"wrote {args.prefix}scores.npy and {args.prefix}mask.npy: {args.canaries} canaries, {int(mask.sum())} included")
