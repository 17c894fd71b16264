"""Benchmark: the sequential tester's sizing step on leaks of known size (issue 43; docs/sequential.md §10).

Each mechanism leaks ``k`` times its claim (``k`` = 2, 3): its true epsilon at the claimed delta is
known in closed form. Per seed ``s`` (``numpy.random.default_rng(s)``) the default
:class:`dpaudit.testers.sequential.SequentialTester` tests the claim at ``beta`` on fresh pairs
until it stops, then sizes the leak on ``max(1000, 4 x pairs drawn)`` fresh pairs. Printed per
mechanism: detections, median pairs to detection, the median first-evidence bound (the
e-process's own step-down epsilon bound, docs/sequential.md §4), the median sizing bound, the
true epsilon, and how many sizing bounds lie above the truth (coverage: at most ``beta`` of them).

Mechanisms (claim eps = 1, pure unless said):

* ``laplace-kx``: 0 vs 1 plus Laplace(1 / k): true eps = k;
* ``rr-kx``: randomized response keeping the bit with probability e^k / (1 + e^k): true eps = k;
* ``gaussian-kx``: 0 vs 1 plus N(0, sigma_k^2) with sigma_k the analytic Gaussian mechanism's for
  (k, 1e-5), claimed (1, 1e-5)-DP: true eps at delta 1e-5 = k (Balle & Wang 2018, Thm 8).

Run: ``nice python benchmarks/sequential_sizing.py --seeds 50 --beta 0.01``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from dpaudit.privacy.claims import ApproxDP, PureDP
from dpaudit.testers.sequential import SequentialTester

from sequential_tight import analytic_gaussian_sigma

DELTA = 1e-5


def mechanisms(k: float):
    keep = math.exp(k) / (1 + math.exp(k))
    sig = analytic_gaussian_sigma(k, DELTA)
    return {
        f"laplace-{k:g}x": (lambda r, n: (r.laplace(0, 1 / k, n), 1 + r.laplace(0, 1 / k, n)), PureDP(1.0), k),
        f"rr-{k:g}x": (lambda r, n: ((r.random(n) < keep).astype(float), (r.random(n) >= keep).astype(float)),
                       PureDP(1.0), k),
        f"gaussian-{k:g}x": (lambda r, n: (r.normal(0, sig, n), 1 + r.normal(0, sig, n)), ApproxDP(1.0, DELTA), k),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--beta", type=float, default=0.01)
    ap.add_argument("--budget", type=int, default=50_000)
    args = ap.parse_args(argv)
    load0 = " ".join(f"{x:.2f}" for x in os.getloadavg())
    tester = SequentialTester()
    print(f"load {load0}; beta {args.beta:g}, {args.seeds} seeds, budget {args.budget:,} pairs")
    print("| mechanism | claim | true eps | detected | median pairs to detect | median first-evidence eps bound | "
          "median sizing bound [min-max] | median sizing pairs | sizing bounds above the truth |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for k in (2.0, 3.0):
        for name, (sampler, claim, truth) in mechanisms(k).items():
            det, drawn, first, sized, fresh, above = 0, [], [], [], [], 0
            for s in range(args.seeds):
                p, q = sampler(np.random.default_rng(s), args.budget)
                o = tester.test(p, q, claim, beta=args.beta, rng=s)
                b = o.bounds[0]
                if not o.violation:
                    continue
                det += 1
                drawn.append(b.samples_drawn)
                first.append(o.epsilon_lower_bound or 0.0)
                if b.sized_epsilon is not None:
                    sized.append(b.sized_epsilon)
                    fresh.append(b.sizing_samples)
                    above += b.sized_epsilon > truth
            med = lambda xs: float(np.median(xs)) if xs else float("nan")  # noqa: E731
            rng_txt = f"[{min(sized):.3g}-{max(sized):.3g}]" if sized else ""
            print(f"| {name} | {claim.describe()} | {truth:g} | {det}/{args.seeds} | {med(drawn):,.0f} | "
                  f"{med(first):.3g} | {med(sized):.3g} {rng_txt} | {med(fresh):,.0f} | {above}/{len(sized)} |", flush=True)
    print(f"load at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
