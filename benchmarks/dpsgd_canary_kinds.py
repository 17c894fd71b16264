"""Bug classes a one-run audit with dpaudit.dpsgd.Canaries catches in a user's own DP-SGD step
(NumPy, ``tests/_dpsgd_user_loops.py``), and correct steps over many seeds.

For each bug class: the canary kinds, the verdict, the certified one-run bound, the accountant's
epsilon (delta 1e-5) and the true epsilon where it can be computed; then the correct NumPy step
and Opacus's own DPOptimizer (``OpacusCanaries(kinds="default")``) over ``--seeds`` seeds at
beta = 0.05: how many were accused and the largest bound.

    OMP_NUM_THREADS=1 python benchmarks/dpsgd_canary_kinds.py --seeds 20
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

SIGMA_Q1_T5 = 6.30859375 * math.sqrt(0.5)  # accountant epsilon 2.0 at q = 1, 5 steps (exactly GDP)
SIGMA_Q01_T30 = 1.5048828125  # noise_for_epsilon(2, 1e-5, 0.1, 30)
DEEP = (64, 32, 32, 32, 32, 32, 32, 10)


def _eps(sigma, q, steps):
    from dpaudit.accounting import Composition, get_epsilon

    return float(get_epsilon(Composition.dpsgd(sigma, q, steps), 1e-5).epsilon)


def bug_rows():
    from _dpsgd_user_loops import run_user_loop

    from dpaudit.dpsgd import shuffled_epsilon_lower_bound

    q1 = dict(sigma=SIGMA_Q1_T5, steps=5, n=50)
    data = dict(sigma=SIGMA_Q01_T30, q=0.1, steps=30, n=100, canaries=600, kinds=("dirac", "data"), data_canaries=400)
    cases = [
        ("correct (control)", "correct", dict(q1), "default", lambda: None),
        ("per-layer clipping, noise for one norm", "per-layer", dict(q1, widths=DEEP, canaries=2000, kinds=("spread",)),
         "spread", lambda: _eps(SIGMA_Q1_T5 / math.sqrt(14), 1.0, 5)),
        ("correct, deep MLP (control)", "correct", dict(q1, widths=DEEP, canaries=2000, kinds=("spread",)), "spread",
         lambda: None),
        ("per-layer clipping, default kinds", "per-layer", dict(q1, widths=DEEP, canaries=3000), "default",
         lambda: _eps(SIGMA_Q1_T5 / math.sqrt(14), 1.0, 5)),
        ("last row of each batch unclipped", "unclipped-last", dict(q1), "default", lambda: math.inf),
        ("clipping ignores max_grad_norm (C = 0.25)", "fast-clip", dict(q1, C=0.25), "default",
         lambda: _eps(SIGMA_Q1_T5 / 4, 1.0, 5)),
        ("noise re-seeded every step", "noise-reused", dict(q1), "default", lambda: math.inf),
        ("divided by the realised batch (q 0.1, n 30)", "realised-batch",
         dict(sigma=SIGMA_Q01_T30, q=0.1, steps=30, n=30), "default", lambda: None),
        ("shuffled fixed-size batches as Poisson", "correct", dict(data, sampler="shuffle"), "dirac+data",
         lambda: shuffled_epsilon_lower_bound(SIGMA_Q01_T30, 10, 3, 1e-5)),
        ("shuffled, last batch dropped, as Poisson", "correct", dict(data, sampler="shuffle-drop-last"), "dirac+data",
         lambda: None),
        ("weighted sampler (with replacement) as uniform", "correct", dict(data, sampler="weighted"), "dirac+data",
         lambda: None),
        ("Poisson sampler (control)", "correct", dict(data, sampler="poisson"), "dirac+data", lambda: None),
    ]
    print("| bug class | canary kinds | verdict | certified bound | accountant | true epsilon | found by | time |")
    print("|---|---|---|---|---|---|---|---|")
    for label, bug, kw, kinds, true in cases:
        t0 = time.perf_counter()
        a = run_user_loop(bug, **kw).audit(delta=1e-5, beta=0.05)
        t = true()
        found = "; ".join(a.findings) if a.findings else "-"
        print(f"| {label} | {kinds} | {'VIOLATION' if a.violated else 'no violation'} | {a.epsilon_lower_bound:.2f} "
              f"({a.best_kind}) | {a.accountant_epsilon:.2f} | {'-' if t is None else f'{t:.2f}'} | {found} | "
              f"{time.perf_counter() - t0:.1f} s |", flush=True)


def controls(seeds: int):
    from _dpsgd_user_loops import run_user_loop

    rows = []
    for s in range(seeds):
        a = run_user_loop("correct", sigma=SIGMA_Q1_T5, steps=5, n=50, seed=s).audit()
        rows.append(a)
    print(f"\ncorrect NumPy step, default kinds, q 1, 5 steps, 1,500 canaries: {sum(a.violated for a in rows)} of "
          f"{seeds} accused; largest bound {max(a.epsilon_lower_bound for a in rows):.3f} "
          f"(accountant {rows[0].accountant_epsilon:.2f}); smallest clipping-check p "
          f"{min(a.clipping['p_value'] for a in rows):.3g}", flush=True)
    rows = []
    for s in range(seeds):
        a = run_user_loop(sigma=SIGMA_Q01_T30, q=0.1, steps=30, n=100, canaries=600, kinds=("dirac", "data"),
                          data_canaries=400, sampler="poisson", seed=s).audit()
        rows.append(a)
    print(f"correct NumPy step, Poisson loader, dirac + data canaries, q 0.1, 30 steps: "
          f"{sum(a.violated for a in rows)} of {seeds} accused; largest bound "
          f"{max(a.epsilon_lower_bound for a in rows):.3f}; smallest sampler-check p "
          f"{min(a.sampler['p_value'] for a in rows):.3g}", flush=True)
    try:
        import test_dpsgd_opacus as t
    except Exception as exc:  # noqa: BLE001 - Opacus missing
        print(f"Opacus controls skipped: {exc}")
        return
    rows = [t._opacus_kinds_loop("default", canaries=1500, seed=s, widths=(64, 32, 10)).audit() for s in range(seeds)]
    print(f"Opacus DPOptimizer, default kinds, q 1, 5 steps, 1,500 canaries: {sum(a.violated for a in rows)} of "
          f"{seeds} accused; largest bound {max(a.epsilon_lower_bound for a in rows):.3f}", flush=True)


def readme_controls(seeds: int):
    """The README's three DP-SGD examples (correct steps) run ``seeds`` times, seeds substituted
    into their text (torch's, NumPy's and JAX's generators and the canaries' own seed)."""
    import contextlib
    import io
    import re

    sys.path.insert(0, str(ROOT / "tests"))
    from test_readme import readme_blocks

    for line, code in readme_blocks():
        if "canaries.audit" not in code:
            continue
        bounds, accused = [], 0
        for s in range(seeds):
            c = code.replace("manual_seed(0)", f"manual_seed({s})").replace("default_rng(0)", f"default_rng({s})")
            c = c.replace("PRNGKey(t)", f"PRNGKey({s} * 1000 + t)")
            c = re.sub(r'(kinds="default"|batch_divisor=q \* n)\)', rf"\1, seed={s})", c)
            ns = {"__name__": "__main__"}
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(c, f"README.md:{line}", "exec"), ns)  # noqa: S102 - our own README
            a = ns["canaries"].audit(delta=1e-5)
            bounds.append(a.epsilon_lower_bound)
            accused += a.violated
        print(f"README.md:{line} example: {accused} of {seeds} accused; largest bound {max(bounds):.3f} "
              f"(accountant {a.accountant_epsilon:.2f})", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--skip-bugs", action="store_true")
    ap.add_argument("--readme-only", action="store_true", help="only the README examples over --seeds seeds")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    logging.getLogger("absl").setLevel(logging.ERROR)
    if args.readme_only:
        readme_controls(args.seeds)
        return
    if not args.skip_bugs:
        bug_rows()
    controls(args.seeds)
    readme_controls(args.seeds)


if __name__ == "__main__":
    main()
