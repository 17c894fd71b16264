"""Many-run DP-SGD audits: dpaudit's vectorised training (``dpaudit.dpsgd.many.train_many``: all runs
at once with ``torch.func``) against a Python loop over Opacus runs (``examples/opacus_canary.py``),
on the same task: logistic regression on 200 digits (odd vs even), q = 1, 10 steps, sigma = 3,
C = 1, learning rate 5, half of the runs with the input canary.

Prints the wall time per trained model of both, and the certified bounds each setting gives
(dpaudit: the whole-sample Clopper-Pearson audit of the black-box canary loss and of the
white-box gradient canary; the Opacus loop: its own script's histogram audit).

    python benchmarks/dpsgd_many.py --opacus-runs 100 --runs 2000
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import sys
import time
from pathlib import Path


def main(argv=None) -> int:
    logging.getLogger("absl").setLevel(logging.ERROR)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--opacus-runs", type=int, default=100, help="runs per side of the Opacus loop")
    ap.add_argument("--runs", default="200,2000,20000", help="total runs of dpaudit's vectorised training")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "dpsgd_many.md"))
    args = ap.parse_args(argv)
    from dpaudit.dpsgd import DPSGDConfig
    from dpaudit.dpsgd.many import audit_many, train_many

    spec = importlib.util.spec_from_file_location("opacus_canary", Path(__file__).parents[1] / "examples" / "opacus_canary.py")
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    t = time.perf_counter()
    op = ex.run_experiment(runs=args.opacus_runs, verbose=False)
    op_s = time.perf_counter() - t
    op_models = 2 * args.opacus_runs
    cfg = DPSGDConfig(noise_multiplier=3.0, sampling_rate=1.0, steps=10, learning_rate=5.0)
    lines = ["# Many-run DP-SGD audits: vectorised training vs a Python loop over Opacus runs", "",
             f"`python benchmarks/dpsgd_many.py --opacus-runs {args.opacus_runs} --runs {args.runs}`; logistic regression "
             "on 200 digits, q = 1, 10 steps, sigma = 3, C = 1; delta = 1e-5, confidence 0.95. "
             f"Accountant epsilon {op['accountant']['dp_accounting_pld_epsilon']:.3f}.", "",
             "| training | models | wall s | ms per model | speed-up | black-box eps lb | black-box mu lb | white-box eps lb | white-box mu lb |",
             "|---|---|---|---|---|---|---|---|---|",
             f"| Opacus, Python loop (examples/opacus_canary.py) | {op_models:,} | {op_s:.1f} | {1e3 * op_s / op_models:.1f} | 1 | "
             f"{op['audit']['histogram_epsilon_lower_bound']:.3f} (histogram) | {op['audit']['histogram_mu_lower_bound']:.3f} | - | - |"]
    for runs in [int(v) for v in args.runs.split(",")]:
        r = train_many(cfg, runs=runs, seed=0)
        a = audit_many(r)
        lines.append(f"| dpaudit `train_many` (torch.func, vectorised) | {runs:,} | {r.seconds:.1f} | {1e3 * r.seconds / runs:.2f} | "
                     f"{(op_s / op_models) / (r.seconds / runs):.0f}x | {a['black_box']['epsilon_lower_bound']:.3f} | "
                     f"{a['black_box']['mu_lower_bound']:.3f} | {a['white_box']['epsilon_lower_bound']:.3f} | "
                     f"{a['white_box']['mu_lower_bound']:.3f} |")
        print(lines[-1], file=sys.stderr, flush=True)
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
