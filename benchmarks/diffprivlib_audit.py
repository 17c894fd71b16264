"""End-to-end audits of IBM diffprivlib's mean: new defaults vs the old path, in one run.

Runs ``dpaudit test dpaudit.mechanisms.catalogue.diffprivlib_mean:{broken_mean,dpl_mean} --epsilon 1 --json``
(10 trials, 50,000 samples per dataset, the mechanism's witness pairs then Bayesian search) in
three modes, interleaved, each as a fresh process:

* ``new``: the defaults (sequential stages ``auto``, sampling on ``--processes auto``);
* ``stages-serial``: stages, but sampled in the main process (``--processes 1``);
* ``old``: fixed-size trials sampled in the main process (``--stages off --processes 1``).

Before and after, it measures diffprivlib's own cost per call in this process (``mean`` on one
record with a fixed ``RandomState``, no dpaudit code), so that audit times can be compared across
machines and library versions: the audit cannot be faster than calls x cost / cores.

    python benchmarks/diffprivlib_audit.py --seed 1 [--skip-old] [--out benchmarks/results/diffprivlib_audit.md]

Needs diffprivlib (``pip install 'dpaudit[diffprivlib]'``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

MODES = {
    "new": [],
    "stages-serial": ["--processes", "1"],
    "old": ["--stages", "off", "--processes", "1"],
}
TARGETS = {
    "broken_mean": "dpaudit.mechanisms.catalogue.diffprivlib_mean:broken_mean",
    "dpl_mean": "dpaudit.mechanisms.catalogue.diffprivlib_mean:dpl_mean",
}


def raw_call_seconds(calls: int = 5000) -> float:
    """Seconds per call of ``diffprivlib.tools.mean`` alone (one record, bounds (0, 1), eps 1)."""
    import warnings

    from diffprivlib.accountant import BudgetAccountant
    from diffprivlib.tools import mean

    x, rs, acc = np.array([0.0]), np.random.RandomState(0), BudgetAccountant()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(200):
            mean(x, epsilon=1.0, bounds=(0.0, 1.0), random_state=rs, accountant=acc)
        acc = BudgetAccountant()
        t = time.perf_counter()
        for _ in range(calls):
            mean(x, epsilon=1.0, bounds=(0.0, 1.0), random_state=rs, accountant=acc)
        return (time.perf_counter() - t) / calls


def run(target: str, mode: str, seed: int) -> dict:
    """One ``dpaudit test`` process; its JSON result plus the process's wall time."""
    exe = Path(sys.executable).with_name("dpaudit")
    cmd = [str(exe), "test", TARGETS[target], "--epsilon", "1", "--json", "--seed", str(seed), *MODES[mode]]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t
    try:
        res = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    trials = res["trials"]
    calls = sum(2 * int(t["num_samples"]) for t in trials)
    sample_s = sum(float(t["sample_seconds"]) for t in trials)
    stops = {}
    for t in trials:
        key = f"{t.get('stop_reason') or 'budget'} at {int(t['num_samples']):,}"
        stops[key] = stops.get(key, 0) + 1
    return {
        "target": target, "mode": mode, "exit": proc.returncode, "verdict": res["verdict"],
        "trials": len(trials), "calls": calls, "audit_s": float(res["wall_seconds"]), "wall_s": wall,
        "sample_s": sample_s, "calls_per_s": calls / sample_s if sample_s else float("nan"),
        "processes": res["execution"].get("processes"), "stops": stops,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--skip-old", action="store_true", help="leave out the old path for dpl_mean (about 1M calls)")
    ap.add_argument("--out", type=Path, default=None, help="also write the table (markdown) here")
    args = ap.parse_args()

    before = raw_call_seconds()
    print(f"diffprivlib.tools.mean alone: {before * 1e6:.0f} us/call (before)", flush=True)
    plan = [("broken_mean", "new"), ("broken_mean", "old"), ("dpl_mean", "new"), ("dpl_mean", "stages-serial")]
    if not args.skip_old:
        plan.append(("dpl_mean", "old"))
    plan += [("dpl_mean", "new"), ("broken_mean", "new")]
    rows = []
    for target, mode in plan:
        row = run(target, mode, args.seed)
        rows.append(row)
        print(f"{target:12s} {mode:14s} exit {row['exit']}  calls {row['calls']:>9,}  audit {row['audit_s']:7.2f} s"
              f"  process {row['wall_s']:7.2f} s  {row['calls_per_s']:8.0f} calls/s while sampling  {row['stops']}",
              flush=True)
    after = raw_call_seconds()
    print(f"diffprivlib.tools.mean alone: {after * 1e6:.0f} us/call (after)")

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    lines = [
        f"`python benchmarks/diffprivlib_audit.py --seed {args.seed}{' --skip-old' if args.skip_old else ''}`"
        f" — {platform.machine()}, {cores} usable cores, Python {platform.python_version()}, numpy {np.__version__},"
        f" load average before {os.getloadavg()[0]:.2f}.",
        "",
        f"diffprivlib's own cost per call in this run: {before * 1e6:.0f} us (before), {after * 1e6:.0f} us (after).",
        "",
        "Floor: the audit's calls x diffprivlib's own cost per call (mean of before and after) / the processes "
        "that sampled -- what the calls alone cost, without dpaudit.",
        "",
        "| mechanism | mode | exit | verdict | trials (stop at samples/dataset) | calls | audit s (JSON wall_seconds) "
        "| floor s | process s | calls/s while sampling | processes |",
        "|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    cost = (before + after) / 2
    for r in rows:
        stops = ", ".join(f"{v} {k}" for k, v in r["stops"].items())
        lines.append(f"| {r['target']} | {r['mode']} | {r['exit']} | {r['verdict']} | {r['trials']} ({stops}) "
                     f"| {r['calls']:,} | {r['audit_s']:.2f} | {r['calls'] * cost / (r['processes'] or 1):.2f} "
                     f"| {r['wall_s']:.2f} | {r['calls_per_s']:,.0f} "
                     f"| {r['processes']} |")
    text = "\n".join(lines) + "\n"
    print()
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
