"""How the many-run harness's beta split over its looks changes runs to a verdict, on ideal scores.

The crowd's rank test (``dpaudit.dpsgd.many.rank_p_value`` at the out-runs' median against the
accountant's delta(0)) at q = 0.5, 16 steps, sigma 8 (delta(0) = 0.0995), on the claim's white-box
likelihood-ratio score of runs whose canary moves its coordinate by ``shift`` C in each step it is
sampled (1: the claim; 1.4: index groups of 4; 2: batch clipping), noise sqrt(sigma^2 + 2) (the
crowd's partners). The crowd's two thirds of each look's runs (500, 1,000, ..., 16,000), and
beta 0.05 over 6 looks x 5 views split three ways: equal per look (the default), proportional to
the look's runs, proportional to their square root. Prints, per split, the share of repetitions
caught within 16,000 runs and the mean runs to a verdict when caught.

Run (CPU, about 2 CPU minutes)::

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/dpsgd_harness_looks.py --shifts 1.4,2.0 --reps 25
"""

from __future__ import annotations

import argparse

import numpy as np


def main() -> None:
    from dpaudit.accounting import get_delta
    from dpaudit.dpsgd import DPSGDConfig
    from dpaudit.dpsgd.audit import canary_scores
    from dpaudit.dpsgd.many import rank_p_value

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shifts", default="1.4,2.0")
    p.add_argument("--reps", type=int, default=25)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    cfg = DPSGDConfig(noise_multiplier=8.0, sampling_rate=0.5, steps=16)
    acc = float(get_delta(cfg.composition(), 0.0).delta)
    looks = [500, 1000, 2000, 4000, 8000, 16000]
    splits = {"equal": [1.0] * 6, "runs": [float(r) for r in looks], "sqrt-runs": [float(np.sqrt(r)) for r in looks]}
    rng = np.random.default_rng(args.seed)
    noise = np.sqrt(64.0 + 2.0)

    def scores(n, shift):
        o = rng.normal(0.0, noise, (16, n)) + shift * (rng.random((16, n)) < 0.5)
        return canary_scores(o, noise, 0.5, "lr")

    for shift in (float(s) for s in args.shifts.split(",")):
        stops = {k: [] for k in splits}
        for _ in range(args.reps):
            half = looks[-1] * 2 // 3 // 2
            a, b = scores(half, shift), scores(half, 0.0)
            for name, w in splits.items():
                stop = None
                for runs, wk in zip(looks, w):
                    level = 0.05 * wk / sum(w) / 5
                    h = runs * 2 // 3 // 2
                    k = h // 2
                    x = int(np.sum(a[:h] > np.sort(b[:h])[::-1][k]))
                    if rank_p_value(x, h, k, h, delta0=acc) <= level:
                        stop = runs
                        break
                stops[name].append(stop)
        for name, s in stops.items():
            caught = [r for r in s if r is not None]
            print(f"shift {shift:g} split {name:9s}: caught {len(caught)}/{len(s)} within 16,000 runs; mean runs when "
                  f"caught {np.mean(caught) if caught else float('nan'):,.0f}", flush=True)


if __name__ == "__main__":
    main()
