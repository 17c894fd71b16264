"""Exact regions vs the classifier's regions on the same samples: detections over many runs for
the detection-table cells where the two disagreed (issue 12: "no cell got worse").

The detection table (``benchmarks/detection_table.py``) runs 10 seeds per cell, too few to tell a
power of 0.9 from 1.0 or a false-positive rate of 0.1 from 0.2. This script re-runs chosen cells
with many more seeds and, per run, gives **the same two samples** to ``HockeyStickTester(regions=
"exact")`` (the default for these 1-D / discrete outputs) and ``HockeyStickTester(regions=
"classifier")`` (the old default), so the comparison is paired: it counts the runs that only one
of them flagged (McNemar's discordant pairs) and gives the exact two-sided sign-test p-value of
the difference.

Cells: ``NAME:EPS:N`` (zoo entry, claimed eps, samples per dataset) on the entry's first witness
pair, beta and delta as the detection table's (1/3; delta = 0.01 for approximate-DP entries).

``--compare marginal`` compares instead, on vector outputs (the classifier path), the default
classifier estimator (the MLP's score and the product-of-marginals scores compete for each
region) with ``ClassifierHockeyStick(objective="both", marginal_bins=None)`` (the MLP alone, as
before the product-of-marginals scores), both with ``regions="classifier"``.

Run::

    python benchmarks/region_power.py --runs 40 \\
        --cells wrong-sensitivity-sgd:0.01:50000 scaled-gd:0.01:50000 randomized-response:1:50000 ...
"""

from __future__ import annotations

import argparse
import time
import zlib

import numpy as np
from scipy import stats

from dpaudit.estimators import ClassifierHockeyStick
from dpaudit.mechanisms import zoo
from dpaudit.testers import HockeyStickTester

DEFAULT_CELLS = (
    "wrong-sensitivity-sgd:0.01:50000",
    "scaled-gd:0.01:50000",
    "non-dp-gaussian-2:0.01:50000",
    "randomized-response:1:50000",
    "randomized-response:1:100000",
    "randomized-response:0.01:100000",
    "noisy-max-laplace:0.01:500000",
)


def draw(mechanism, dataset, n, rng):
    out = np.asarray(mechanism.sample(np.asarray(dataset, dtype=float), n, rng), dtype=float)
    return out.reshape(n, -1)


COMPARISONS = {
    # name: (label A, tester A factory, label B, tester B factory)
    "regions": ("exact", lambda: HockeyStickTester(regions="exact"),
                "classifier", lambda: HockeyStickTester(regions="classifier")),
    "marginal": ("with marginals", lambda: HockeyStickTester(regions="classifier"),
                 "MLP only", lambda: HockeyStickTester(ClassifierHockeyStick(objective="both", marginal_bins=None),
                                                       regions="classifier")),
}


def run_cell(spec: str, runs: int, beta: float, delta: float, compare: str = "regions") -> dict:
    name, eps, n = spec.split(":")
    eps, n = float(eps), int(n)
    entry = zoo.get(name)
    claim_delta = delta if entry.claim_kind == "approx" else None
    claim, mechanism = entry.claim(eps, claim_delta), entry.mechanism(eps, claim_delta)
    pair = entry.witnesses()[0]
    la, fa, lb, fb = COMPARISONS[compare]
    testers = {"exact": fa(), "classifier": fb()}  # keys: A, B (the labels are printed)
    flags = {k: [] for k in testers}
    secs = {k: 0.0 for k in testers}
    for r in range(runs):
        ss = np.random.SeedSequence([zlib.crc32(spec.encode()), r])
        sample_rng, *test_seeds = ss.spawn(3)
        sample_rng = np.random.default_rng(sample_rng)
        x0, x1 = draw(mechanism, pair.d0, n, sample_rng), draw(mechanism, pair.d1, n, sample_rng)
        for (k, tester), seed in zip(testers.items(), test_seeds):
            t0 = time.perf_counter()
            out = tester.test(x0, x1, claim, beta=beta, rng=np.random.default_rng(seed))
            secs[k] += time.perf_counter() - t0
            flags[k].append(bool(out.violation))
    e, c = np.array(flags["exact"]), np.array(flags["classifier"])
    only_e, only_c = int(np.sum(e & ~c)), int(np.sum(c & ~e))
    p = stats.binomtest(only_e, only_e + only_c, 0.5).pvalue if only_e + only_c else 1.0
    return {"cell": spec, "violates": entry.violates(eps), "exact": int(e.sum()), "classifier": int(c.sum()),
            "only_exact": only_e, "only_classifier": only_c, "p_value": p, "runs": runs,
            "seconds_exact": secs["exact"], "seconds_classifier": secs["classifier"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", nargs="+", default=list(DEFAULT_CELLS))
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--beta", type=float, default=1.0 / 3.0)
    ap.add_argument("--delta", type=float, default=0.01)
    ap.add_argument("--compare", choices=sorted(COMPARISONS), default="regions",
                    help="regions: exact regions vs the classifier; marginal: the classifier with and "
                         "without the product-of-marginals scores")
    args = ap.parse_args(argv)
    la, _, lb, _ = COMPARISONS[args.compare]
    print(f"runs per cell: {args.runs}, beta = {args.beta:.4g}, delta = {args.delta:g} (approximate-DP entries), "
          "same samples for both testers\n")
    print(f"| cell (mechanism:eps:n) | claim violated? | {la} | {lb} | only {la} | "
          f"only {lb} | sign-test p | seconds {la} / {lb} |")
    print("|---|---|---|---|---|---|---|---|")
    for spec in args.cells:
        rec = run_cell(spec, args.runs, args.beta, args.delta, args.compare)
        print(f"| {spec} | {'yes' if rec['violates'] else 'no'} | {rec['exact']}/{rec['runs']} | "
              f"{rec['classifier']}/{rec['runs']} | {rec['only_exact']} | {rec['only_classifier']} | "
              f"{rec['p_value']:.2g} | {rec['seconds_exact']:.0f} / {rec['seconds_classifier']:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
