"""Benchmark: which label the default tester gives the zoo's float-output mechanisms, before and after
a floating-point-only finding stopped stopping the audit (issue 37).

For every zoo entry (``dpsniper-*`` only with ``--dpsniper``) that is buggy (``not entry.private``)
or private only in exact arithmetic (``entry.exact_arithmetic_only``), at eps = 1 where the zoo says
it violates its claim there, else at eps = 0.01 where it does (correct entries at eps = 1), the
script runs the default audit as ``benchmarks/first_detection.py`` does::

    dpaudit.audit(entry.mechanism(eps), entry.claim(eps), GridFinder(witnesses replayed to 10),
                  num_samples=50_000, trials=10, beta=0.01, seed=s, processes=1)   # tester=None

and records the label (``violation_kind``), every finding's kind (``AuditResult.findings``, derived
from the trials' outcomes, so it reads the same from the code before the change), the mechanism calls
(2 x the trials' ``num_samples``) and ``wall_seconds``. ``--label`` names the run in the cache (run
it once with ``PYTHONPATH`` on the old sources, ``--label before``, and once on the new ones,
``--label after``); ``--render`` prints the comparison. The label is right by construction when a
buggy entry (``not private and not exact_arithmetic_only``: its output distribution violates the
claim) is a VIOLATION (distributional) and an entry private in exact arithmetic is a
FLOATING-POINT LEAK or passes.

Integer-output entries are left out (``--all-outputs`` keeps them): without float outputs the
default tester has no screen, so nothing changed for them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import dpaudit
from dpaudit import GridFinder
from dpaudit.mechanisms import zoo

RESULTS = Path(__file__).parent / "results"


def _kinds(result) -> list:
    """Finding kinds of every violating tester of every violating trial (works on old results too)."""
    out = []

    def leaves(o):
        if not o.parts:
            return [o] if o.violation else []
        return [x for p in o.parts for x in leaves(p)]

    for t in result.trials:
        if t.outcome.violation:
            out += [(t.index + 1, p.tester, p.violation_kind) for p in leaves(t.outcome)]
    return out


def float_outputs(entry, eps) -> bool:
    from dpaudit.testers.screened import has_noninteger_floats

    mech = entry.mechanism(eps)
    pair = entry.witnesses()[0]
    rng = np.random.default_rng(0)
    from dpaudit.mechanisms.base import draw

    return has_noninteger_floats(np.concatenate([draw(mech, pair.d0, 16, rng), draw(mech, pair.d1, 16, rng)]))


def plan(args):
    rows = []
    for e in zoo.entries():
        if not e.witness_pairs or (e.name.startswith("dpsniper-") and not args.dpsniper):
            continue
        if args.mechanisms and e.name not in args.mechanisms:
            continue
        if e.private and not e.exact_arithmetic_only:
            continue
        eps = 1.0 if (e.private or e.violates(1.0)) else 0.01
        if not args.all_outputs and not float_outputs(e, eps):
            continue
        rows.append((e, eps))
    return rows


def run_one(entry, eps, seed, args) -> dict:
    pairs = entry.witnesses()
    finder = GridFinder([pairs[i % len(pairs)] for i in range(args.trials)])
    t0 = time.perf_counter()
    res = dpaudit.audit(entry.mechanism(eps), entry.claim(eps), finder, num_samples=args.num_samples,
                        trials=args.trials, beta=args.beta, seed=seed, processes=1)
    return {"label": res.violation_kind, "findings": _kinds(res), "calls": 2 * sum(t.num_samples for t in res.trials),
            "trials_run": len(res.trials), "wall_seconds": res.wall_seconds, "outer_seconds": time.perf_counter() - t0,
            "load": os.getloadavg()[0]}


def expected(entry) -> str:
    return "floating-point or none" if entry.exact_arithmetic_only else "distributional"


def render(cache, rows, args) -> str:
    med = statistics.median
    out = ["# Labels of the default tester on float-output zoo entries, before and after (issue 37)", "",
           f"Command: `python benchmarks/float_label.py --seeds {args.seeds}` (once per source tree, `--label before|after`), "
           f"default tester, GridFinder over the witness pairs, {args.num_samples:,} samples, {args.trials} trials, "
           f"beta {args.beta:g}, stages auto, processes=1. Calls: 2 x the trials' samples; time: wall_seconds "
           "(on the shared, loaded 2-core machine: compare the ratios).", "",
           "| mechanism | eps | right label | labels before | labels after | findings after (kinds) | calls before | after | time before (s) | after |",
           "|---|---:|---|---|---|---|---:|---:|---:|---:|"]
    for e, eps in rows:
        rec = {lab: [cache[k] for k in (f"{lab}|{e.name}|{eps:g}|{s}" for s in range(args.seeds)) if k in cache]
               for lab in ("before", "after")}
        if not all(rec.values()):
            continue

        def labels(v):
            return ", ".join((r["label"] or "none").replace("floating-point", "FP").replace("distributional", "VIOLATION")
                             for r in v)

        kinds = ", ".join("+".join(sorted({k for _, _, k in r["findings"]})) or "-" for r in rec["after"])
        out.append(f"| {e.name} | {eps:g} | {expected(e)} | {labels(rec['before'])} | {labels(rec['after'])} | "
                   f"{kinds.replace('floating-point', 'FP').replace('distributional', 'dist')} | "
                   f"{med(r['calls'] for r in rec['before']):,.0f} | {med(r['calls'] for r in rec['after']):,.0f} | "
                   f"{med(r['wall_seconds'] for r in rec['before']):.1f} | {med(r['wall_seconds'] for r in rec['after']):.1f} |")
    out += ["", "FP: FLOATING-POINT LEAK; VIOLATION: distributional; none: no violation found. One label per seed run "
            "(seed 0 first); medians over the seeds run.", ""]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--label", choices=("before", "after"), default="after")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--num-samples", type=int, default=50_000)
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--beta", type=float, default=0.01)
    ap.add_argument("--mechanisms", nargs="*", default=None)
    ap.add_argument("--dpsniper", action="store_true")
    ap.add_argument("--all-outputs", action="store_true", help="also the integer-output entries")
    ap.add_argument("--render", action="store_true", help="only print the table from the cache")
    ap.add_argument("--cache", type=Path, default=RESULTS / "float_label.json")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    rows = plan(args)
    cache = json.loads(args.cache.read_text()) if args.cache.exists() else {}
    if not args.render:
        for e, eps in rows:
            for seed in range(args.seeds):
                k = f"{args.label}|{e.name}|{eps:g}|{seed}"
                if k in cache:
                    continue
                cache[k] = run_one(e, eps, seed, args)
                args.cache.write_text(json.dumps(cache, indent=1, sort_keys=True))
                r = cache[k]
                print(f"{args.label} {e.name:28s} eps={eps:<5g} seed={seed} label={r['label']!s:15s} calls={r['calls']:>9,} "
                      f"wall={r['wall_seconds']:6.1f}s", file=sys.stderr, flush=True)
    text = render(cache, rows, args)
    if args.out:
        args.out.write_text(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
