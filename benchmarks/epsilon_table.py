"""Epsilon lower bounds on DP-Sniper's suite: dpaudit's default tester against DP-Sniper's published table.

DP-Sniper (Bichsel et al., S&P 2021) reports, for twenty mechanisms claimed 0.1-DP, a certified
empirical lower bound on epsilon at 90 % confidence from 10.7M training samples and 200M samples
for the final estimate (about 2e8 in all). This script runs dpaudit's default tester (the one
``dpaudit test`` uses for a pure-DP claim, ``default_tester_name``: hockey-stick) on the same
mechanisms (zoo entries ``dpsniper-*``, module ``dpaudit.mechanisms.zoo.dpsniper``) at the same
claimed eps = 0.1, on each entry's first witness pair (the input pair DP-Sniper's search chose),
once per repeat, and reports ``outcome.epsilon_lower_bound``:

* at beta = 0.1 (90 % confidence, as DP-Sniper) with the total sample budgets of ``--budgets``
  (split evenly over the two datasets of the pair);
* at dpaudit's defaults: 50,000 samples per dataset, beta = 0.01 (``--no-defaults`` skips it).

Columns: mechanism, DP-Sniper's published lower bound, dpaudit's lower bound (min and median over
``--repeats``), the true epsilon (``inf``: not DP for any epsilon; ``<=``: a derived upper bound),
samples per dataset and in total, wall time (sampling + test, median over repeats).

DP-Sniper's own budget is too large for a small machine; the default budgets are 1M and 2M
samples. The "same order" comparison needs ``--budgets 20000000`` (or 200000000 for the exact
order; memory grows with the budget).

Results are cached per (mechanism, budget, beta, repeat, dpaudit version and git commit) in
``benchmarks/results/epsilon.json``; the Markdown table (``--out``, default
``benchmarks/results/epsilon.md``) is rewritten from the cache entries of the current version
at the end of every run, so interrupted runs resume. ``--force`` recomputes.

Examples::

    python benchmarks/epsilon_table.py                                  # 1M and 2M, 3 repeats
    python benchmarks/epsilon_table.py --budgets 200000 --repeats 1     # smoke run (minutes)
    python benchmarks/epsilon_table.py --budgets 20000000 --repeats 3   # DP-Sniper's order
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np

import dpaudit
from dpaudit.mechanisms import draw
from dpaudit.mechanisms import zoo
from dpaudit.mechanisms.zoo import dpsniper as dps
from dpaudit.estimators.histogram import HistogramHockeyStick
from dpaudit.estimators.hockey_stick import ESTIMATE_TRAINING, ClassifierHockeyStick
from dpaudit.testers import HockeyStickTester, default_tester_name, make_tester

MODE = {"estimate": True}

RESULTS = Path(__file__).parent / "results"
EPS = dps.DPSNIPER_EPSILON
DEFAULT_N, DEFAULT_BETA = 50_000, 0.01
DPSNIPER_BUDGET = "10.7M training + 200M final samples, beta = 0.1"


def code_version() -> str:
    """``dpaudit <version>+<git commit>`` (``+unknown`` outside a git checkout; ``.dirty`` with
    uncommitted changes under src/)."""
    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "src"], cwd=root, capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit, dirty = "unknown", ""
    return f"{dpaudit.__version__}+{commit}{'.dirty' if dirty else ''}"


def cell_key(mech: str, n_per: int, beta: float, repeat: int, version: str) -> str:
    mode = "" if MODE["estimate"] else "|test"
    return f"{mech}|{n_per}|{beta:g}|{repeat}|{version}{mode}"


def run_cell(entry, n_per: int, beta: float, repeat: int) -> dict:
    """Sample ``n_per`` outputs on each dataset of the entry's first witness pair and run the
    default tester once; return the cache record."""
    claim = entry.claim(EPS)
    mechanism = entry.mechanism(EPS)
    if MODE["estimate"]:  # what `dpaudit test --estimate` runs: all of beta on epsilon regions
        tester_name = "hockey-stick --estimate"
        tester = HockeyStickTester(ClassifierHockeyStick(objective="epsilon", **ESTIMATE_TRAINING),
                                   region_estimator=HistogramHockeyStick(objective="epsilon"))
    else:
        tester_name = default_tester_name(claim)
        tester = make_tester(tester_name)
    pair = entry.witnesses()[0]
    seed = np.random.SeedSequence([zlib.crc32(f"{entry.name}|{n_per}|{beta:g}".encode()), repeat])
    sample_rng, test_rng = (np.random.default_rng(s) for s in seed.spawn(2))
    t0 = time.perf_counter()
    x0 = draw(mechanism, pair.d0, n_per, sample_rng)
    x1 = draw(mechanism, pair.d1, n_per, sample_rng, output_dim=x0.shape[1])
    t_sample = time.perf_counter() - t0
    out = tester.test(x0, x1, claim, beta=beta, rng=test_rng)
    lb = out.epsilon_lower_bound
    return {
        "epsilon_lower_bound": None if lb is None or not math.isfinite(lb) else float(lb),
        "violation": bool(out.violation),
        "status": out.status,
        "tester": tester_name,
        "samples_per_dataset": n_per,
        "samples_total": 2 * n_per,
        "beta": beta,
        "seconds": time.perf_counter() - t0,
        "seconds_sampling": t_sample,
    }


def fmt_eps(x: float | None) -> str:
    if x is None:
        return "-"
    return "inf" if math.isinf(x) else f"{x:.3f}"


def true_eps_cell(name: str) -> str:
    t = dps.DPSNIPER_TRUE_EPSILON[name]
    return ("<= " if name in dps.TRUE_EPSILON_IS_BOUND else "") + fmt_eps(t)


def fmt_n(n: int) -> str:
    return f"{n / 1e6:g}M" if n >= 1_000_000 else f"{n / 1e3:g}k"


def render(cache: dict, names: list, settings: list, repeats: int, version: str, meta: dict) -> str:
    lines = [
        "# Epsilon lower bounds on DP-Sniper's suite (claimed eps = 0.1)",
        "",
        meta.get("banner", ""),
        "",
        "dpaudit: the default tester (`dpaudit test`'s, `default_tester_name`: hockey-stick) run once per repeat "
        "on each mechanism's first witness pair (the input pair DP-Sniper's search selected), its certified "
        "`epsilon_lower_bound` (min / median over repeats; `-`: no bound above 0). DP-Sniper: `eps_lcb` of its "
        f"reference run with logistic regression ({DPSNIPER_BUDGET}; "
        "eth-sri/dp-sniper `eval_sp2021/reference-results/dd_search_reg_data.log`). True eps: exact where known "
        "(`inf`: not DP for any eps), `<=`: a derived upper bound (see the zoo entries' `true_guarantee`).",
        "",
        f"Regenerate: `{meta['command']}`",
        "",
        f"Machine: {meta['machine']}; {version}; repeats: {repeats}.",
        "",
    ]
    for n_per, beta in settings:
        title = f"{fmt_n(2 * n_per)} samples in total ({fmt_n(n_per)} per dataset), beta = {beta:g}"
        if (n_per, beta) == (DEFAULT_N, DEFAULT_BETA):
            title += " (dpaudit's defaults)"
        lines += [f"## {title}", ""]
        lines.append("| mechanism | DP-Sniper eps LB | dpaudit eps LB (min / median) | true eps | samples per dataset | samples total | wall time (median) |")
        lines.append("|---|---|---|---|---|---|---|")
        for name in names:
            recs = [cache.get(cell_key(name, n_per, beta, r, version)) for r in range(repeats)]
            recs = [r for r in recs if r is not None]
            if not recs:
                cell, secs = "not run", "-"
            else:
                lbs = [r["epsilon_lower_bound"] or 0.0 for r in recs]
                lo, med = min(lbs), float(np.median(lbs))
                cell = f"{fmt_eps(lo or None)} / {fmt_eps(med or None)}" + ("" if len(recs) == repeats else f" ({len(recs)} of {repeats})")
                secs = f"{float(np.median([r['seconds'] for r in recs])):.1f}s"
            lines.append(
                f"| {name} | {dps.DPSNIPER_REFERENCE[name]:.3f} | {cell} | {true_eps_cell(name)} | "
                f"{n_per:,} | {2 * n_per:,} | {secs} |"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mechanisms", nargs="*", default=None, help="dpsniper-* zoo names (default: all twenty)")
    ap.add_argument(
        "--budgets", default="1000000,2000000",
        help="comma-separated total sample budgets (both datasets together) at beta = 0.1; DP-Sniper's "
        "order needs 20000000 (default: 1000000,2000000)",
    )
    ap.add_argument("--beta", type=float, default=0.1, help="failure probability for the --budgets runs (DP-Sniper: 0.1)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-defaults", action="store_true", help="skip the run at dpaudit's defaults (50k per dataset, beta 0.01)")
    ap.add_argument("--cache", type=Path, default=RESULTS / "epsilon.json")
    ap.add_argument("--out", type=Path, default=RESULTS / "epsilon.md")
    ap.add_argument("--banner", default="", help="a line written under the title (e.g. 'Smoke run: ...')")
    ap.add_argument("--force", action="store_true", help="recompute cells already in the cache")
    ap.add_argument("--mode", choices=("estimate", "test"), default="estimate",
                    help="estimate (default): the tester of `dpaudit test --estimate`, all of beta on regions that "
                    "maximise the certified epsilon; test: the default tester of `dpaudit test` (verdict and epsilon regions)")
    args = ap.parse_args(argv)
    MODE["estimate"] = args.mode == "estimate"

    names = args.mechanisms or sorted(dps.DPSNIPER_REFERENCE)
    for m in names:
        if m not in dps.DPSNIPER_REFERENCE:
            ap.error(f"{m!r} is not in DP-Sniper's suite; choose from {', '.join(sorted(dps.DPSNIPER_REFERENCE))}")
    try:
        budgets = [int(float(b)) for b in args.budgets.split(",") if b.strip()]
    except ValueError:
        ap.error(f"--budgets must be comma-separated integers, got {args.budgets!r}")
    if any(b < 2 for b in budgets) or args.repeats < 1 or not (0 < args.beta < 1):
        ap.error("budgets must be >= 2, --repeats >= 1 and 0 < --beta < 1")
    settings = [(b // 2, args.beta) for b in budgets]
    if not args.no_defaults:
        settings.append((DEFAULT_N, DEFAULT_BETA))

    version = code_version()
    cache = json.loads(args.cache.read_text()) if args.cache.exists() else {}
    todo = [
        (m, n, beta, r)
        for (n, beta) in settings for m in names for r in range(args.repeats)
        if args.force or cell_key(m, n, beta, r, version) not in cache
    ]
    print(f"{len(todo)} cells to run ({version})", file=sys.stderr)
    for i, (m, n, beta, r) in enumerate(todo, 1):
        rec = run_cell(zoo.get(m), n, beta, r)
        cache[cell_key(m, n, beta, r, version)] = rec
        args.cache.parent.mkdir(parents=True, exist_ok=True)
        args.cache.write_text(json.dumps(cache, indent=1, sort_keys=True))
        print(
            f"[{i}/{len(todo)}] {m:26s} n={n:<9d} beta={beta:<5g} rep={r} eps_lb={fmt_eps(rec['epsilon_lower_bound'])} "
            f"(DP-Sniper {dps.DPSNIPER_REFERENCE[m]:.3f}) {rec['seconds']:.1f}s",
            file=sys.stderr, flush=True,
        )
    meta = {
        "command": "python benchmarks/epsilon_table.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": f"{platform.processor() or platform.machine()}, {platform.system()}, CPU only",
        "banner": args.banner,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(cache, names, settings, args.repeats, version, meta))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
