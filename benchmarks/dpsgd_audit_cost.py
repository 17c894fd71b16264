"""What one ``audit_run`` costs on typical and blatant runs (issue 35 items 5 and 6), on this CPU.

Runs are built from observations directly (no training): ``m`` canaries, each included with
probability 1/2 and then sampled at rate ``q = 0.05`` per step; an included, sampled canary adds 1
(one clipping norm) to its observation, and every observation gets Gaussian noise ``sigma_true``.
The claim is ``sigma = 1.67`` (accountant epsilon 2.0 at delta 1e-5 for 200 steps). Per setting:

* CPU seconds of the first audit (the accountant computed), of a second one (the accountant
  cached per ``(sigma, q, steps, delta)``), and of one with ``estimates=False`` (the certified
  bounds and the cached accountant only);
* the peak resident memory of the process after the setting (``ru_maxrss``, monotone);
* the certified bound, the accountant's epsilon and both estimates as ``estimate_text`` gives them.

``sigma_true = sigma`` is the correct implementation; ``sigma / 350`` is the blatant bug (noise 350x
too small). Run it niced, with one thread (about 1-2 minutes)::

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/dpsgd_audit_cost.py

It writes ``benchmarks/results/dpsgd_audit_cost.md``. CPU times, not wall times: the machine is
shared. GPU: not measured (no device in these sessions).
"""

from __future__ import annotations

import argparse
import logging
import platform
import resource
import time
from pathlib import Path

import numpy as np

SETTINGS = [  # (label, steps, canaries, noise divisor)
    ("typical", 200, 1000, 1.0),
    ("typical", 200, 10000, 1.0),
    ("typical", 1000, 1000, 1.0),
    ("typical", 1000, 10000, 1.0),
    ("blatant (noise / 350)", 200, 10000, 350.0),
]
SIGMA, Q = 1.6728515625, 0.05


def run_of(steps: int, m: int, divisor: float, seed: int = 0):
    from dpaudit.dpsgd import DPSGDConfig, TrainingRun

    rng = np.random.default_rng(seed)
    mask = rng.random(m) < 0.5
    part = (rng.random((steps, m)) < Q) & mask
    o = part + rng.normal(0.0, SIGMA / divisor, (steps, m))
    cfg = DPSGDConfig(noise_multiplier=SIGMA, sampling_rate=Q, steps=steps)
    return TrainingRun(observations=o, mask=mask, sampled=part.sum(axis=0), participation=part, config=cfg,
                       variant=f"constructed, noise / {divisor:g}", seconds=0.0, train_accuracy=float("nan"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "dpsgd_audit_cost.md"))
    args = ap.parse_args()
    logging.getLogger("absl").setLevel(logging.ERROR)
    from dpaudit.dpsgd import audit_run

    rows = []
    for label, steps, m, div in SETTINGS:
        run = run_of(steps, m, div)
        times = []
        for kw in ({}, {}, {"estimates": False}):
            t = time.process_time()
            a = audit_run(run, **kw)
            times.append(time.process_time() - t)
            if not kw:
                first = a if len(times) == 1 else first
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        rows.append((label, steps, m, *times, peak, first))
        print(label, steps, m, [round(x, 3) for x in times], f"{peak:.0f} MB", flush=True)
    lines = ["# `audit_run`'s cost (CPU seconds) on constructed runs", "",
             f"`OMP_NUM_THREADS=1 nice -n 10 python benchmarks/dpsgd_audit_cost.py` on {platform.processor() or 'CPU'} "
             "(2 cores shared with other jobs: CPU time, not wall time), q = 0.05, claimed sigma 1.67. "
             "GPU: not measured.", "",
             "| run | steps | canaries | first audit (s) | accountant cached (s) | estimates off (s) | peak RSS (MB) | "
             "certified | accountant | estimate (fit) | estimate (PLD) |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for label, steps, m, t1, t2, t3, peak, a in rows:
        lines.append(f"| {label} | {steps:,} | {m:,} | {t1:.2f} | {t2:.2f} | {t3:.2f} | {peak:.0f} | "
                     f"{a.epsilon_lower_bound:.3g}{' (violated)' if a.violated else ''} | {a.accountant_epsilon:.3g} | "
                     f"{a.estimate_text('fit')} | {a.estimate_text('pld')} |")
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
