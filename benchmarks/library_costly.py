"""Benchmark: the library rows left out for their cost, audited with the sequential default (issue 43).

``docs/library_audits.md`` leaves PipelineDP's weighted Gaussian thresholding (25-170 ms per call)
and its PLD accountant as a black box (3.6 s per call) out of the library table. This script audits
the targets of :mod:`dpaudit.mechanisms.catalogue.pipelinedp_costly` as ``dpaudit test`` does by
default (the sequential tester with the float screen), one trial per witness pair, and reports per
target: the time per call (median of a few calls), the verdict, the pairs drawn per trial and why
each trial stopped, the mechanism calls in all, the audit's wall and CPU time, and what a pass could
have detected at that cost.

Run: ``nice python benchmarks/library_costly.py`` (``--targets a,b``, ``--samples N``, ``--trials T``).
Equivalent command for one row::

    dpaudit test dpaudit.mechanisms.catalogue.pipelinedp_costly:select_partitions_weighted \\
        --epsilon 1 --delta 1e-3 --search grid --samples 4000 --trials 3 --processes 1 --seed 0
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

import dpaudit
from dpaudit.audit.executors import time_per_call
from dpaudit.audit.loop import audit
from dpaudit.audit.targets import assemble, load_target, make_finder

RESULTS = Path(__file__).parent / "results"
MODULE = "dpaudit.mechanisms.catalogue.pipelinedp_costly"
PLAN = {  # target: (samples per dataset, trials)
    "select_partitions_weighted": (4000, 3),
    "add_dp_noise_gaussian_pld": (200, 1),
    "add_dp_noise_gaussian_pld_overspent": (200, 1),
}


def run(name: str, samples: int, trials: int, seed: int) -> dict:
    from dpaudit.mechanisms.catalogue.pipelinedp_costly import CLAIMS

    eps, delta = CLAIMS[name]
    obj, kind = load_target(f"{MODULE}:{name}")
    setup = assemble(obj, kind, epsilon=eps, delta=delta)
    per_call = time_per_call(setup.mechanism, setup.known[0], max_calls=8)
    finder = make_finder("grid", setup.known, setup.relation, seed)
    t0, c0 = time.perf_counter(), time.process_time()
    res = audit(setup.mechanism, setup.claim, finder, num_samples=samples, trials=trials, beta=0.01, seed=seed,
                processes=1)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    trials_out = [{"pair": r.pair.description, "pairs_drawn": r.num_samples, "stop": r.stopped_by,
                   "status": r.outcome.status, "note": r.outcome.note} for r in res.trials]
    return {"target": name, "claim": setup.claim.describe(), "seconds_per_call": per_call, "verdict": res.verdict,
            "kind": res.violation_kind, "calls": 2 * sum(r.num_samples for r in res.trials), "wall_seconds": wall,
            "cpu_seconds": cpu, "test_seconds": sum(r.test_seconds for r in res.trials),
            "sample_seconds": sum(r.sample_seconds for r in res.trials), "trials": trials_out,
            "samples": samples, "trial_budget": trials, "tester": res.tester.get("tester")}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", type=lambda s: s.split(","), default=list(PLAN))
    ap.add_argument("--samples", type=int, default=None)
    ap.add_argument("--trials", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache", type=Path, default=RESULTS / "library_costly.json")
    ap.add_argument("--out", type=Path, default=RESULTS / "library_costly.md")
    args = ap.parse_args(argv)
    cache = json.loads(args.cache.read_text()) if args.cache.exists() else {}
    for name in args.targets:
        n, t = PLAN[name]
        n, t = args.samples or n, args.trials or t
        key = f"{name}|{n}|{t}|{args.seed}"
        if key in cache:
            continue
        load0 = " ".join(f"{x:.2f}" for x in os.getloadavg())
        rec = run(name, n, t, args.seed)
        rec["load"] = f"{load0} -> " + " ".join(f"{x:.2f}" for x in os.getloadavg())
        cache[key] = rec
        args.cache.write_text(json.dumps(cache, indent=1))
        print(json.dumps(rec)[:400], flush=True)
    lines = ["# Library rows left out for their cost, audited with the sequential default", "",
             f"Command: `python benchmarks/library_costly.py {' '.join(argv or sys.argv[1:])}`", "",
             f"Machine: dpaudit {dpaudit.__version__}, numpy {np.__version__}, Python {platform.python_version()}, "
             f"{os.cpu_count()} CPU cores shared with other jobs (load averages per row below). Per-call mechanisms "
             "are drawn in batches of 32 pairs growing x1.25; one process (`processes=1`).", "",
             "| target | claim | s per call | verdict | pairs drawn per trial (stop) | calls | wall (s) | CPU (s) | tester CPU (s) | load |",
             "|---|---|---:|---|---|---:|---:|---:|---:|---|"]
    notes = []
    for rec in cache.values():
        per = ", ".join(f"{t['pairs_drawn']:,} ({t['stop']})" for t in rec["trials"])
        lines.append(f"| {rec['target']} | {rec['claim']} | {rec['seconds_per_call']:.3g} | {rec['verdict']}"
                     + (f" ({rec['kind']})" if rec["kind"] else "") + f" | {per} | {rec['calls']:,} | "
                     f"{rec['wall_seconds']:.0f} | {rec['cpu_seconds']:.0f} | {rec['test_seconds']:.1f} | {rec['load']} |")
        for i, t in enumerate(rec["trials"]):
            notes.append(f"* {rec['target']}, trial {i + 1} ({t['pair']}): {t['note']}")
    args.out.write_text("\n".join(lines + ["", "Trial notes (the e-value, and what a pass could have detected):", ""]
                                  + notes) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
