"""Benchmark: false accusations of the sequential tester on mechanisms tuned exactly at their claim.

Each mechanism below satisfies its claim with no slack (its privacy profile touches the claim's at
some eps'), the hardest case for a test's level. Per seed ``s`` the sequential tester
(:class:`dpaudit.testers.sequential.SequentialTester`, alone: the float screen is a separate
component with its own share) bets on fresh pairs drawn with ``numpy.random.default_rng(s)`` until
it stops by its own rule -- a violation, futility, or the budget -- at ``beta``; the count of
violations over the seeds must be consistent with a rate ``<= beta`` (exact one-sided binomial
test, p-value printed). ``--no-futility`` runs every seed to the budget (the supremum over the
whole path, Ville's worst case).

Mechanisms (P = M(D0), Q = M(D1) at the pair where the claim is tight):

* ``rr``: randomized response keeping the bit with probability e^eps / (1 + e^eps), pure eps-DP
  (tight at every eps');
* ``laplace``: 0 vs 1 plus Laplace(1/eps), pure eps-DP (tight at eps' < eps);
* ``geometric``: 0 vs 1 plus two-sided geometric noise (P(k) proportional to e^{-eps |k|}),
  pure eps-DP, integer outputs;
* ``gaussian``: 0 vs 1 plus N(0, sigma^2), sigma the analytic Gaussian mechanism's for (eps, 1e-5)
  (Balle & Wang 2018, Thm 8; delta(eps) = 1e-5 exactly);
* ``gaussian-2d``: the same shift on the first of two coordinates (the classifier path);
* ``rr-3bits``: three bits, each randomized response at eps/3 (pure eps-DP, tight at the all-bits
  pattern; a discrete vector);
* ``rdp-gaussian``: 0 vs 1 plus N(0, alpha / (2 rho)), exactly (alpha, rho)-RDP (Mironov 2017,
  Prop. 7), tested as a Rényi claim (the profile and the Rényi e-process).

Run: ``nice python benchmarks/sequential_tight.py --seeds 100 --beta 0.1`` (``--mechanisms``,
``--budget``, ``--no-futility``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from scipy import optimize, stats

import dpaudit
from dpaudit.privacy.claims import ApproxDP, PureDP, RenyiDP
from dpaudit.audit.beta_split import trial_betas
from dpaudit.testers.sequential import SequentialTester

RESULTS = Path(__file__).parent / "results"
EPS = 1.0
DELTA = 1e-5


def analytic_gaussian_sigma(eps: float, delta: float, sensitivity: float = 1.0) -> float:
    """The smallest sigma with delta(eps) <= delta for the Gaussian mechanism (Balle & Wang 2018, Thm 8)."""
    def excess(sigma):
        a = sensitivity / (2 * sigma)
        b = eps * sigma / sensitivity
        return stats.norm.cdf(a - b) - math.exp(eps) * stats.norm.cdf(-a - b) - delta
    return optimize.brentq(excess, 1e-3, 100.0, xtol=1e-14)


def _geometric(rng, n, eps):
    p = 1.0 - math.exp(-eps)
    return (rng.geometric(p, n) - rng.geometric(p, n)).astype(float)


def mechanisms():
    sig = analytic_gaussian_sigma(EPS, DELTA)
    keep = math.exp(EPS) / (1 + math.exp(EPS))
    keep3 = math.exp(EPS / 3) / (1 + math.exp(EPS / 3))
    alpha, rho = 2.0, 1.0
    return {
        "rr": (lambda r, n: ((r.random(n) < keep).astype(float), (r.random(n) >= keep).astype(float)), PureDP(EPS)),
        "laplace": (lambda r, n: (r.laplace(0, 1 / EPS, n), 1 + r.laplace(0, 1 / EPS, n)), PureDP(EPS)),
        "geometric": (lambda r, n: (_geometric(r, n, EPS), 1 + _geometric(r, n, EPS)), PureDP(EPS)),
        "gaussian": (lambda r, n: (r.normal(0, sig, n), 1 + r.normal(0, sig, n)), ApproxDP(EPS, DELTA)),
        "gaussian-2d": (lambda r, n: (r.normal(0, sig, (n, 2)), r.normal(0, sig, (n, 2)) + np.array([1.0, 0.0])),
                        ApproxDP(EPS, DELTA)),
        "rr-3bits": (lambda r, n: ((r.random((n, 3)) < keep3).astype(float), (r.random((n, 3)) >= keep3).astype(float)),
                     PureDP(EPS)),
        "rdp-gaussian": (lambda r, n: (r.normal(0, math.sqrt(alpha / (2 * rho)), n),
                                       1 + r.normal(0, math.sqrt(alpha / (2 * rho)), n)), RenyiDP(alpha, rho)),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--beta", type=float, default=0.1)
    ap.add_argument("--budget", type=int, default=50_000)
    ap.add_argument("--mechanisms", type=lambda s: s.split(","), default=None)
    ap.add_argument("--no-futility", action="store_true")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--trials", type=int, default=1,
                    help="trials per audit (default 1: one test at --beta); with T > 1 every seed runs T trials, "
                         "each on fresh draws at its share of --beta (--beta-split), all of them (no stop at a "
                         "violation: a superset of the accusations of an audit that stops), and counts the audit "
                         "as accused when any trial accuses")
    ap.add_argument("--beta-split", choices=("even", "front"), default="front")
    args = ap.parse_args(argv)
    betas = trial_betas(args.beta, args.trials, args.beta_split)
    mechs = mechanisms()
    names = args.mechanisms or list(mechs)
    load0 = " ".join(f"{x:.2f}" for x in os.getloadavg())
    tester = SequentialTester(futility=not args.no_futility)
    rows = []
    for name in names:
        sampler, claim = mechs[name]
        accused, drawn, max_log, cpu = 0, [], [], 0.0
        for s in range(args.seeds):
            hit = False
            for t, beta_t in enumerate(betas):
                # trial 0 of a one-trial run keeps the draws of before (seed s); later trials: fresh streams
                rng = np.random.default_rng(s if t == 0 else [s, t])
                p, q = sampler(rng, args.budget)
                t0 = time.process_time()
                o = tester.test(p, q, claim, beta=beta_t, rng=s if t == 0 else [s, t])
                cpu += time.process_time() - t0
                hit |= bool(o.violation)
                drawn.append(o.bounds[0].samples_drawn)
                max_log.append(o.bounds[0].log_e_value)
            accused += hit
        pval = float(stats.binomtest(accused, args.seeds, args.beta, alternative="greater").pvalue)
        row = {"mechanism": name, "claim": claim.describe(), "seeds": args.seeds, "accused": accused,
               "rate": accused / args.seeds, "pvalue": pval, "median_pairs": float(np.median(drawn)),
               "median_final_log_e": float(np.median(max_log)), "cpu_per_run": cpu / args.seeds}
        rows.append(row)
        print(json.dumps(row), flush=True)
    meta = (f"dpaudit {dpaudit.__version__}, numpy {np.__version__}, Python {platform.python_version()}, "
            f"{os.cpu_count()} CPU cores shared with other jobs; load averages {load0} -> "
            + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    lines = [f"# False accusations at the exact claim (beta = {args.beta:g}, {args.seeds} seeds, budget "
             f"{args.budget:,} pairs, futility {'off' if args.no_futility else 'on'}"
             + (f", audits of {args.trials} trials, {args.beta_split} split: {betas[0]:g} then {betas[-1]:g}"
                if args.trials > 1 else "") + ")", "",
             f"Command: `python benchmarks/sequential_tight.py {' '.join(argv or sys.argv[1:])}`", "", f"Machine: {meta}.", "",
             "| mechanism | claim | accused | rate | p-value (rate <= beta) | median pairs drawn | median final ln K | CPU s per run |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['mechanism']} | {r['claim']} | {r['accused']}/{r['seeds']} | {r['rate']:.3f} | "
                     f"{r['pvalue']:.3g} | {r['median_pairs']:,.0f} | {r['median_final_log_e']:.2f} | {r['cpu_per_run']:.2f} |")
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
