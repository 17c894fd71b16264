"""Coverage of the Monte Carlo accountant's one-sided upper confidence bound on eps(delta).

For each setting the script runs ``MonteCarloAccountant(m, rng=seed).get_epsilon(comp, delta)``
for seeds 0..runs-1 and counts how often ``epsilon_upper`` (one-sided, confidence 0.95) is at least
the truth. The count is checked with a one-sided binomial test of H0: coverage >= 0.95 (p-value
printed; "ok" when p > 1e-3). For comparison it also counts how often the two-sided Wald interval's
upper end ``ci_high`` (a one-sided 97.5% bound if the normal approximation held) covers.

Truths (conservative: the largest credible value, so that covering it is harder):

* sigma=1, q=1e-3, k=1e4, delta=1e-9: prv_accountant's upper end 0.76726 (its estimate 0.76623;
  dp_accounting PLD at grid 1e-4 gives 0.76652), computed here with
  ``reference.epsilon('prv', ...)``;
* sigma=0.5, q=1e-3, delta=1e-13, k=2 and k=30: prv_accountant's upper end, computed here;
* sigma=0.5, q=1e-3, delta=1e-13, k=1000: PLD and prv_accountant fail there; the truth is the
  upper end of a two-sided 99.9% Wald interval of an independent high-precision run (estimator
  'cmc', m = 200 000, seed 10**6, not one of the coverage seeds), whose diagnostics are printed.

The Wald column counts ``ci_high >= central truth`` (prv_accountant's estimate, or the reference
run's estimate), which is easier to cover than the conservative truth.

Run: ``python benchmarks/mc_coverage.py`` (writes benchmarks/results/mc_coverage.md);
``--quick`` for a smoke run; ``--only 0 2`` runs some settings (and prints, without writing the
file). Expect about 25 minutes on one core.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings

import numpy as np
from scipy import stats

from dpaudit.accounting import Composition, MonteCarloAccountant, reference

SETTINGS = [
    # name, sigma, q, k, delta, m, runs
    ("sigma=1, q=1e-3, k=1e4, delta=1e-9", 1.0, 1e-3, 10_000, 1e-9, 4000, 100),
    ("sigma=1, q=1e-3, k=1e4, delta=1e-9", 1.0, 1e-3, 10_000, 1e-9, 20_000, 20),  # ~20 s per run
    ("sigma=0.5, q=1e-3, k=2, delta=1e-13", 0.5, 1e-3, 2, 1e-13, 4000, 300),
    ("sigma=0.5, q=1e-3, k=30, delta=1e-13", 0.5, 1e-3, 30, 1e-13, 4000, 300),
    ("sigma=0.5, q=1e-3, k=1000, delta=1e-13", 0.5, 1e-3, 1000, 1e-13, 4000, 200),
]


def truth_of(comp, delta, k):
    """(truth, central value, description) for a setting (see the module docstring)."""
    if k <= 10_000 and k != 1000:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = reference.epsilon("prv", comp, delta)
        return r["upper"], r["epsilon"], f"prv_accountant upper ({r['lower']:.5f}, {r['epsilon']:.5f}, {r['upper']:.5f})"
    acc = MonteCarloAccountant(200_000, estimator="cmc", confidence=0.999, rng=10 ** 6)
    r = acc.get_epsilon(comp, delta)
    return r.ci_high, r.epsilon, (f"MC cmc m=2e5 99.9% Wald upper (estimate {r.epsilon:.5f}, interval "
                       f"[{r.ci_low:.5f}, {r.ci_high:.5f}], ESS {r.ess:.0f}, max share {r.max_term_share:.3g})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10 runs per setting, no results file")
    ap.add_argument("--only", type=int, nargs="*", help="indices of SETTINGS to run")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "mc_coverage.md"))
    args = ap.parse_args(argv)
    rows = []
    notes = []
    for idx, (name, sigma, q, k, delta, m, runs) in enumerate(SETTINGS):
        if args.only is not None and idx not in args.only:
            continue
        runs = 10 if args.quick else runs
        comp = Composition.dpsgd(sigma, q, k)
        t0 = time.perf_counter()
        truth, central, how = truth_of(comp, delta, k)
        t_truth = time.perf_counter() - t0
        notes.append(f"* {name}: truth {truth:.5f} = {how} ({t_truth:.0f} s)")
        cov = wald = trusted = 0
        ratios, ess, methods = [], [], {}
        t0 = time.perf_counter()
        for seed in range(runs):
            r = MonteCarloAccountant(m, rng=seed).get_epsilon(comp, delta)
            cov += r.epsilon_upper >= truth
            wald += r.ci_high >= central
            trusted += r.trusted
            ratios.append(r.epsilon_upper / truth)
            ess.append(r.ess)
            methods[r.upper_method] = methods.get(r.upper_method, 0) + 1
        dt = time.perf_counter() - t0
        p = stats.binomtest(int(cov), runs, 0.95, alternative="less").pvalue
        pw = stats.binomtest(int(wald), runs, 0.95, alternative="less").pvalue
        rows.append(f"| {name} | {m} | {runs} | {cov} ({cov / runs:.3f}) | 0.95 | {p:.3g} {'ok' if p > 1e-3 else 'FAIL'} "
                    f"| {wald} ({wald / runs:.3f}), p={pw:.2g} | {np.median(ratios):.4f} [{min(ratios):.4f}, "
                    f"{max(ratios):.4f}] | {np.median(ess):.0f} | {trusted}/{runs} | "
                    f"{', '.join(f'{k_}:{v}' for k_, v in sorted(methods.items()))} | {dt / runs:.2f} | {dt:.0f} |")
        print(rows[-1], flush=True)
    header = ("| setting | m | runs | covered by epsilon_upper | nominal | binomial p (H0: >= 0.95) | Wald ci_high >= central "
              "truth | epsilon_upper / truth: median [min, max] | median ESS | trusted | upper_method | "
              "s/run | total s |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    text = "\n".join(["# Coverage of the Monte Carlo accountant's one-sided upper bound on eps(delta)", "",
                      f"`python benchmarks/mc_coverage.py` on {platform.processor() or platform.machine()}, "
                      f"Python {sys.version.split()[0]}; estimator 'auto' (is-cmc), confidence 0.95, seeds "
                      f"0..runs-1. Times are wall seconds on a shared 2-core machine.", "", header, *rows, "",
                      "Truths:", "", *notes, ""])
    print(text)
    if not args.quick:
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        if args.only is None:
            with open(args.out, "w") as f:
                f.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
