"""Benchmark: ``dpaudit.hockey_stick_lower_bound``'s two paths side by side on 1-D samples.

The notebook function takes the region choice of ``dpaudit test`` (``regions="auto"``: exact
regions for 1-D and discrete outputs, no training) and ``regions="classifier"`` forces the old
path (a trained MLP's regions). For each law below and each repeat, the script draws ``--samples``
outputs per side with numpy (timed: the reference cost), then runs both paths on the same samples
(order alternated between repeats, so that a busy machine does not favour one), and prints, per
path, the median time, its ratio to the median drawing time, and the median lower bound on
``H_{e^eps}(P || Q)`` next to the true value (closed forms: Balle & Wang 2018, Thm 8, for the
Gaussians; ``1 - exp((eps - 1/b) / 2)`` for the Laplace pair, tests/exact_divergences.py).

Laws (shift 1, scale 1): ``P = Lap(0, 1)``, ``Q = Lap(1, 1)`` and ``P = N(0, 1)``, ``Q = N(1, 1)``.

Run: ``python benchmarks/notebook_paths.py`` (defaults: ``--samples 500000 --repeats 3
--epsilon 0.5 --beta 0.05``); ``benchmarks/results/notebook_paths.md`` holds a run's output.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import time

import numpy as np
from scipy import stats

import dpaudit
from dpaudit import hockey_stick_lower_bound


def laplace_truth(eps: float) -> float:
    """``H_{e^eps}(Lap(0, 1) || Lap(1, 1))``."""
    return max(0.0, 1.0 - math.exp((eps - 1.0) / 2.0))


def gaussian_truth(eps: float) -> float:
    """``H_{e^eps}(N(0, 1) || N(1, 1))``."""
    return float(stats.norm.cdf(0.5 - eps) - math.exp(eps) * stats.norm.cdf(-0.5 - eps))


LAWS = {
    "Laplace": (lambda rng, n: (rng.laplace(0.0, 1.0, n), rng.laplace(1.0, 1.0, n)), laplace_truth),
    "Gaussian": (lambda rng, n: (rng.normal(0.0, 1.0, n), rng.normal(1.0, 1.0, n)), gaussian_truth),
}
PATHS = ("auto", "classifier")


def run(samples: int, repeats: int, eps: float, beta: float) -> list[dict]:
    """Time both paths on ``repeats`` pairs of samples per law; one row per (law, path)."""
    rows = []
    for law, (sampler, truth) in LAWS.items():
        draws, times, lowers, kinds = [], {p: [] for p in PATHS}, {p: [] for p in PATHS}, {p: set() for p in PATHS}
        for rep in range(repeats):
            t0 = time.perf_counter()
            p, q = sampler(np.random.default_rng([rep, 11]), samples)
            draws.append(time.perf_counter() - t0)
            for path in (PATHS if rep % 2 == 0 else PATHS[::-1]):
                t0 = time.perf_counter()
                bound = hockey_stick_lower_bound(p, q, eps, beta=beta, rng=[rep, 12], regions=path)
                times[path].append(time.perf_counter() - t0)
                lowers[path].append(bound.lower)
                kinds[path].add(f"{type(bound).__name__}({getattr(bound, 'mode', 'classifier')}, beta={bound.beta:g})")
        draw = statistics.median(draws)
        for path in PATHS:
            t = statistics.median(times[path])
            rows.append({
                "law": law, "path": path, "draw": draw, "time": t, "ratio": t / draw,
                "lower": statistics.median(lowers[path]), "lowers": lowers[path], "truth": truth(eps),
                "bound": ", ".join(sorted(kinds[path])),
            })
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=500_000, help="outputs per side")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--epsilon", type=float, default=0.5, help="order of the divergence (nats)")
    ap.add_argument("--beta", type=float, default=0.05, help="failure probability of the bound")
    args = ap.parse_args()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"dpaudit {dpaudit.__version__}, numpy {np.__version__}, Python {platform.python_version()}, "
          f"{os.cpu_count()} cores; load average before: {load}")
    print(f"{args.samples:,} samples per side, eps = {args.epsilon:g}, beta = {args.beta:g}, "
          f"median of {args.repeats} repeats (same samples for both paths)\n")
    rows = run(args.samples, args.repeats, args.epsilon, args.beta)
    print("| law | path | draw both (s) | call (s) | call / draw | lower bound (median) | per repeat | true H | bound |")
    print("|---|---|---:|---:|---:|---:|---|---:|---|")
    for r in rows:
        per = " / ".join(f"{x:.4f}" for x in r["lowers"])
        name = "`regions=\"auto\"` (default)" if r["path"] == "auto" else "`regions=\"classifier\"` (old path)"
        print(f"| {r['law']} | {name} | {r['draw']:.4f} | {r['time']:.3f} | {r['ratio']:.1f}x | {r['lower']:.4f} | "
              f"{per} | {r['truth']:.4f} | {r['bound']} |")
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
