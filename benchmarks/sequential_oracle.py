"""Where the sequential tester's pairs go: the real run against an oracle that knows the region.

Per cell (zoo entry at eps, first witness pair) and seed ``s``: ``L + 60,000`` pairs are drawn once
(``sample_pair`` with ``SeedSequence(s)``); the *oracle* is the default
:class:`~dpaudit.testers.sequential.SequentialTester` run with the schedule ``(L, L + 60,000)`` -- it
learns its plan on the first ``L`` pairs (nothing is bet on them) and then bets on the rest with
that plan -- and reports the pairs it bet on until ``1/beta``; the *real* run is the default
schedule on the same pairs. beta = 0.0009 (a trial's share in a 10-trial audit at beta 0.01).
The ratio real / oracle is the cost of learning the region (plus batch boundaries).

Run: ``OMP_NUM_THREADS=1 nice python benchmarks/sequential_oracle.py --learn 30000 --seeds 6``.
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

from dpaudit.audit.executors import sample_pair
from dpaudit.mechanisms import zoo
from dpaudit.testers.sequential import SequentialTester

CELLS = [("non-dp-gaussian-1", 1.0), ("dpsniper-rnm4", 1.0), ("laplace-sum-rare-exact", 0.01), ("noisy-max-value", 1.0),
         ("svt5", 0.01), ("noisy-max-half-noise", 1.0), ("dpsniper-svt6", 1.0), ("non-dp-laplace-1", 1.0),
         ("dp-median-data-candidates", 0.01), ("scaled-gd", 1.0)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--learn", type=int, default=30_000)
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--beta", type=float, default=0.0009)
    args = ap.parse_args(argv)
    L, bet = args.learn, 60_000
    for name, eps in CELLS:
        e = zoo.get(name)
        mech, claim, pair = e.mechanism(eps), e.claim(eps), e.witnesses()[0]
        oracle, real = [], []
        for s in range(args.seeds):
            y0, y1 = sample_pair(mech, pair, L + bet, np.random.SeedSequence(s), None)
            y0 = np.asarray(y0, float).reshape(len(y0), -1)
            y1 = np.asarray(y1, float).reshape(len(y1), -1)

            def draw(start, m):
                return y0[start:start + m], y1[start:start + m]

            tester = SequentialTester(size=False)
            r = tester.run(draw, claim, beta=args.beta, rng=s, budget=L + bet, schedule=(L, L + bet))
            oracle.append(r.samples_used - L if r.stop_reason == "violation" else float("nan"))
            r = tester.run(draw, claim, beta=args.beta, rng=s, budget=L + bet)
            real.append(r.samples_used if r.stop_reason == "violation" else float("nan"))
        print(f"{name:28s} eps {eps:<5g} oracle median {statistics.median(oracle):7,.0f} {oracle}  "
              f"real median {statistics.median(real):7,.0f}", flush=True)


if __name__ == "__main__":
    main()
