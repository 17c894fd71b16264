"""A/B harness: calls to first detection of the sequential default under variants, on the buggy zoo
cells near the median ratio (issue 43; the session-3 section of benchmarks/results/sequential_detection.md).

Per cell and seed it runs exactly the audit of ``sequential_detection.py`` (50,000 samples, beta 0.01,
witness pairs replayed, ``--trials`` trials) with ``make_tester("sequential+float-screen")``, its
sequential part replaced by ``SequentialTester(**KWARGS)`` when ``--kwargs`` is given, and prints per
cell the median calls and the ratio to the staged default's median calls cached in
``benchmarks/results/sequential_detection.json``; at the end the median and geometric mean of the
ratios over the cells. ``--set NAME=VALUE`` overrides a module constant of
``dpaudit.testers.sequential`` / ``dpaudit.estimators.betting`` (e.g. ``KELLY_WEIGHT=0.75``) for
exploration only.

Run: ``OMP_NUM_THREADS=1 nice python benchmarks/sequential_ab.py --seeds 16 --kwargs '{"growth": 1.5, "draw_fraction": 1}'``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import dpaudit.estimators.betting as betting
import dpaudit.testers.sequential as sequential
import sequential_detection as sd
from dpaudit.mechanisms import zoo
from dpaudit.testers import make_tester

CELLS = [("non-dp-gaussian-1", 1.0), ("dpsniper-rnm4", 1.0), ("laplace-sum-rare-exact", 0.01), ("noisy-max-value", 1.0),
         ("scaled-gd", 1.0), ("svt5", 0.01), ("dp-median-data-candidates", 1.0), ("noisy-max-half-noise", 1.0),
         ("dpsniper-svt6", 1.0), ("non-dp-laplace-1", 1.0), ("dp-median-data-candidates", 0.01), ("svt4", 1.0)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=16)
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--kwargs", type=json.loads, default=None, help="SequentialTester keyword arguments (JSON)")
    ap.add_argument("--set", action="append", default=[], help="NAME=VALUE: a module constant (exploration)")
    args = ap.parse_args(argv)
    for item in args.set:
        name, value = item.split("=", 1)
        for mod in (sequential, betting):
            if hasattr(mod, name):
                setattr(mod, name, float(value))

    def tester_for(mode, claim):
        t = make_tester("sequential+float-screen")
        if args.kwargs is not None:
            t.primary = sequential.SequentialTester(**args.kwargs)
        return t

    sd.tester_for = tester_for
    staged = json.loads((sd.RESULTS / "sequential_detection.json").read_text())
    ratios, c0 = [], time.process_time()
    for name, eps in CELLS:
        entry = zoo.get(name)
        calls = []
        for s in range(args.seeds):
            r = sd.run_one(entry, eps, s, "sequential", 50_000, args.trials, 0.01)
            calls.append(r["calls"] if r["detected"] else float("nan"))
        st = statistics.median(staged[sd.key_of(name, eps, s, "staged", 50_000, 10, 0.01)]["calls"] for s in range(3))
        ratios.append(statistics.median(calls) / st)
        print(f"{name:28s} eps {eps:<5g} median calls {statistics.median(calls):8,.0f}  ratio {ratios[-1]:.3f}", flush=True)
    print(f"kwargs {args.kwargs} set {args.set} trials {args.trials}: median ratio {statistics.median(ratios):.4g}, "
          f"geometric mean {float(np.exp(np.mean(np.log(ratios)))):.4g}, CPU {time.process_time() - c0:.1f} s")


if __name__ == "__main__":
    main()
