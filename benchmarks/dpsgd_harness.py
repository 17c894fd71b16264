"""Runs the many-run harness needs to catch two bugs in a user's plain-PyTorch DP-SGD step.

The steps are those of ``tests/test_dpsgd_harness.py`` (``make_step``): Poisson sampling at ``q``,
per-example clipping to C = 1, noise sigma C, division by the public expected batch; the bugs clip
the batch's summed gradient as a whole, or divide by the realised batch size. Settings:

* batch clipping: q = 1, 4 steps, sigma 4 (accountant epsilon 2.0 at delta 1e-5), the default
  task (8 real rows, 1 opposing row); views white_box and scale, beta 0.05 split;
* realised batch: Poisson q = 0.5, 16 steps, sigma 8 (accountant epsilon 0.96), one other example.

For each number of runs (doubling), the bug and the correct step (seed 1) are run and audited
(``audit_user_code``, profile grid (0, eps/4, eps/2)); the table gives whether each is caught and the
largest certified epsilon, and the certified delta against the accountant's at the grid point of
largest margin. Run::

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/dpsgd_harness.py

(about a minute); writes ``benchmarks/results/dpsgd_harness.md``.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import numpy as np


def main() -> None:
    logging.getLogger("absl").setLevel(logging.ERROR)
    sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))
    from test_dpsgd_harness import make_step

    from dpaudit.accounting import Composition, get_epsilon
    from dpaudit.dpsgd import DPSGDConfig, audit_user_code, make_task, run_step_many

    cases = [("batch clipping", 1.0, 4.0, 4, {}, "batch-clipping", (250, 500, 1000, 2000, 4000)),
             ("realised batch size", 0.5, 8.0, 16, {"data": np.full((1, 4), 0.1), "opposing": 0}, "realised-batch",
              (10, 20, 50, 100))]
    lines = ["# Many-run harness: runs needed to catch a user's bug", "",
             "`OMP_NUM_THREADS=1 nice -n 10 python benchmarks/dpsgd_harness.py` (CPU). delta 1e-5, beta 0.05 "
             "split over the views white_box and scale; caught = an epsilon bound above the accountant's or a "
             "certified delta above the accountant's at a grid point (0, eps/4, eps/2).", "",
             "| bug | runs | bug caught | bug: best eps bound | bug: certified delta vs accountant's (best grid point) | correct accused | correct: best eps "
             "bound | accountant eps | true eps |", "|---|---|---|---|---|---|---|---|---|"]
    for name, q, sigma, steps, task_args, bug, grid in cases:
        cfg = DPSGDConfig(noise_multiplier=sigma, sampling_rate=q, steps=steps)
        task = make_task(cfg, seed=0, **task_args)
        n_public = task.data_out.shape[0] + 1
        true = (f"{get_epsilon(Composition.dpsgd(sigma / 1.886, 1.0, steps), 1e-5).epsilon:.3g} (sensitivity 1.89 C)"
                if bug == "batch-clipping" else "not computed (grows with the dimension)")
        for runs in grid:
            b = audit_user_code(run_step_many(make_step(q, sigma, n_public, bug), cfg, runs=runs, task=task))
            c = audit_user_code(run_step_many(make_step(q, sigma, n_public), cfg, runs=runs, task=task, seed=1))

            def best(a):
                return max(a[v]["epsilon_lower_bound"] for v in a["views"])

            def tv(a):
                p = max((a[v]["profile"] for v in a["views"]), key=lambda p: p["margin"])
                return f"{p['delta_lower_bound']:.3g} vs {p['accountant_delta']:.3g} at eps' {p['witness_epsilon']:.2g}"

            lines.append(f"| {name} | {runs:,} | {'yes' if b['caught'] else 'no'} | {best(b):.3g} | {tv(b)} | "
                         f"{'YES' if c['caught'] else 'no'} | {best(c):.3g} | {b['accountant_epsilon']:.3g} | {true} |")
            print(lines[-1], flush=True)
    out = Path(__file__).parent / "results" / "dpsgd_harness.md"
    out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
